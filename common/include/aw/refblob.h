/* The packed form of a run's reference series, as the collector stores them beside the cells
 * (runs.reference_bin, store schema 11: collector/store/schema.c). The JSON text of
 * aw_result_reference_to_json() cost the writer 14% of its time to print (a 300-cell run
 * carries 1,800 doubles, each "%.17g") and every reader as long again to parse; packed, writing
 * is a copy and reading a look-up.
 *
 *     bytes 0-3   "AWR1"  (the form and its version)
 *     bytes 4-7   the run's family of kernels, bit k for enum aw_ref k; 0: mulchain-v1 alone,
 *                 as a document from before the family carries it (aw_result.references)
 *     bytes 8-11  n, the run's cells
 *     then, for mulchain-v1 and each other kernel of the family in enum order, n IEEE-754
 *     doubles, one per cell in cell order (NaN: none measured beside that cell)
 *
 * All integers and doubles little-endian. A packed series is the same numbers as the JSON it
 * replaces, bit for bit (the JSON printed each with 17 digits). */
#ifndef AW_REFBLOB_H
#define AW_REFBLOB_H

#include <stddef.h>
#include <stdint.h>

#include "aw/result.h"

#define AW_REFBLOB_MAGIC  "AWR1"
#define AW_REFBLOB_HEADER 12

/* A packed series, opened in place (aw_refblob_open()). */
struct aw_refblob {
	unsigned family;     /* aw_result.references as stored (0: mulchain-v1 alone) */
	unsigned carried;    /* the kernels it holds: family, and mulchain-v1 always */
	size_t n_cells;      /* values per kernel */
	const uint8_t *data; /* the values: kernel after kernel, in enum order */
};

/* r's reference series packed into a new buffer (*out, *len; the caller frees it), or *out NULL
 * when r carries none (r->reference_kernel NULL). 0 or -ENOMEM. */
int aw_refblob_pack(const struct aw_result *r, uint8_t **out, size_t *len);

/* The packed form of a series stored as JSON text, as aw_result_reference_to_json() made it
 * (runs stored before schema 11): *out NULL when the text holds no series of mulchain-v1 (a
 * kernel this side does not know is left out, as aw_result_reference_from_json() leaves it).
 * 0, -EINVAL (no JSON, or series of unequal lengths) or -ENOMEM. */
int aw_refblob_from_json(const char *text, uint8_t **out, size_t *len);

/* Opens a packed series of `len` bytes at p. 0, or -EINVAL when it is not one (another magic,
 * a family with a kernel this side does not know or without mulchain-v1's, a length that is
 * not its cells' values). */
int aw_refblob_open(const void *p, size_t len, struct aw_refblob *b);

/* Kernel k's value beside cell i of an opened series; NAN when b carries no k or has no cell i. */
double aw_refblob_value(const struct aw_refblob *b, enum aw_ref k, size_t i);

/* Puts the packed series p into r's cells (which must be in place, in order) and r's family, as
 * aw_result_reference_from_json() does for the JSON: 0, -EINVAL when p is no packed series or
 * holds another number of cells than r, -ENOMEM. */
int aw_refblob_to_result(struct aw_result *r, const void *p, size_t len);

#endif
