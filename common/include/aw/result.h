/* The result document (schema "atomwatch.result/1"): the in-memory model, its JSON form and the
 * validation rules that the runner, the agent and the collector all share. docs/result-schema.md
 * describes the document; docs/result-schema.json is its JSON Schema. */
#ifndef AW_RESULT_H
#define AW_RESULT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aw/util.h"

#define AW_RESULT_SCHEMA        "atomwatch.result/1"
#define AW_RESULT_SCHEMA_PREFIX "atomwatch.result/"
#define AW_NONE                 (-1) /* an absent cpu, contender_cpu or c (JSON null) */

enum aw_cell_status {
	AW_CELL_OK,
	AW_CELL_SKIPPED,
	AW_CELL_FAILED
};
enum aw_trigger {
	AW_TRIGGER_CI,
	AW_TRIGGER_SCHEDULE,
	AW_TRIGGER_MANUAL,
	AW_TRIGGER_IMPORT,
	AW_TRIGGER_BISECT /* a commit measured by a bisection (atomwatch-agent bisect) */
};

/* The reference kernels a run may carry beside its cells (docs/result-schema.md, "references"),
 * in the order of the model's arrays. Their names are the only ones a document may use: a new
 * kernel, or a new meaning of a step, is a new name here, which older collectors refuse. */
enum aw_ref {
	AW_REF_MULCHAIN,  /* "mulchain-v1": a chain of dependent multiplies (latency-bound) */
	AW_REF_MULINDEP,  /* "mulindep-v1": twelve independent multiply chains (throughput-bound) */
	AW_REF_ATOMICADD, /* "atomicadd-v1": an atomic add to a private line */
	AW_REF_MEMCHASE,  /* "memchase-v1": a dependent pointer chase over 4 MiB */
	AW_REF_MEMGATHER, /* "memgather-v1": independent loads of random lines of those 4 MiB */
	AW_REF_COUNT
};

#define AW_REF_MULCHAIN_NAME  "mulchain-v1"
#define AW_REF_MULINDEP_NAME  "mulindep-v1"
#define AW_REF_ATOMICADD_NAME "atomicadd-v1"
#define AW_REF_MEMCHASE_NAME  "memchase-v1"
#define AW_REF_MEMGATHER_NAME "memgather-v1"
#define AW_REF_ALL            ((1u << AW_REF_COUNT) - 1) /* a mask of every kernel */

/* The name of reference kernel k (static). */
const char *aw_ref_name(enum aw_ref k);

/* The kernel called `name`, or -1 when it is not one of enum aw_ref. */
int aw_ref_lookup(const char *name);

/* Whether kernel k keeps to registers and a line of its own, so that nothing the cell beside it
 * does moves it (mulchain, mulindep, atomicadd): the analysis may judge a cell in its units. The
 * memory kernels (the walk and the gather) share the caches with the cell beside it (a cell that
 * touches megabytes slows them), so they tell the run's memory state and never explain a cell's
 * change. */
bool aw_ref_independent(enum aw_ref k);

/* One measured configuration. Strings are owned by the cell; statistics are net ns per op (per
 * lock+unlock pair for readers), NAN when unknown (JSON null). */
struct aw_cell {
	char *key;         /* stable identity, see aw_cell_make_key() */
	char *op;          /* primitive, e.g. "ldadd"; never NULL */
	char *reader;      /* "srcu", "srcu_fast", ...; NULL for a plain op */
	char *subject;     /* subject library name; NULL otherwise */
	char *kernel;      /* in-kernel refscale scale_type; NULL otherwise */
	char *placement;   /* "near" or "far" for contended cells; NULL otherwise */
	int cpu;           /* measured CPU, AW_NONE when unknown */
	int contender_cpu; /* AW_NONE when uncontended */
	int64_t c;         /* contender's nops between its ops; AW_NONE when uncontended */
	int64_t d;         /* nops of duty between timed ops, >= 0 */
	uint64_t n;        /* samples; 0 when not measured */
	uint64_t batch;    /* ops per sample; 0 when unknown */
	double min, p50, p95, p99, max, mean, stddev, ci_lo, ci_hi;
	double baseline_ns; /* the empty loop's ns per op that was subtracted */
	/* The run's reference kernels measured beside this cell, ns per step, indexed by enum
	 * aw_ref (aw_result.references says which the run carries); NAN where none was.
	 * reference_ns is ref_ns[AW_REF_MULCHAIN] under the name older readers use (see
	 * aw_result.reference_kernel). Not part of the cell's JSON: they travel as the run-level
	 * "references" series (or, in older documents, "reference"). */
	union {
		double reference_ns;
		double ref_ns[AW_REF_COUNT];
	};
	bool below_resolution;
	enum aw_cell_status status;
	char *reason; /* why skipped or failed; NULL when ok */
};

/* Whether cell c is an anchor: an uncontended, duty-free op of the matrix (no reader, subject
 * or kernel cell), whose memory walk beside it tells the run's memory state, since the op
 * itself touches one line. Confirmation runs re-measure a few of them beside the suspects
 * (AW_ANCHORS), so that they carry that state too. */
bool aw_cell_is_anchor(const struct aw_cell *c);
#define AW_ANCHORS 3

struct aw_result {
	char run_id[AW_UUID_LEN + 1];
	char *project;
	char *commit; /* NULL: not tied to a commit (a local run) */
	char *ref;
	char *commit_time; /* optional, RFC 3339 */
	enum aw_trigger trigger;
	char started_at[AW_TIME_LEN];
	char finished_at[AW_TIME_LEN];
	json_t *host; /* fingerprint object (owned reference) */
	char *matrix_name;
	int64_t matrix_version;
	char *matrix_hash;
	char *matrix_profile; /* optional */
	json_t *meta; /* optional free-form object (owned), e.g. what changed, importer notes */
	/* "mulchain-v1" when the run carries that kernel's series (each cell's reference_ns), NULL
	 * when it does not: what readers from before the family look at. */
	char *reference_kernel;
	/* The reference kernels the run carries, bit k for enum aw_ref k (the mulchain bit goes
	 * with reference_kernel; set both with aw_result_set_references()). 0 with
	 * reference_kernel set: only mulchain-v1, written as an older document's "reference"
	 * object; otherwise the document carries "references": [{kernel, unit, values}], one
	 * entry per kernel in enum order, each with one value per cell (ref_ns, null where NAN). */
	unsigned references;
	/* Optional confirmation fields (absent in older documents). confirmation_of: the run_id of
	 * the run whose suspect cells this run re-measures (same project, commit, ref, host);
	 * NULL for a first run. confirm: how many confirmation runs the agent measures itself
	 * after this run (atomwatch-agent run --confirm N), so that the collector queues none;
	 * 0 when absent. */
	char *confirmation_of;
	int64_t confirm;
	struct aw_cell *cells;
	size_t n_cells, cap_cells;
};

/* The most confirmation runs one first run asks for ("confirm"). */
#define AW_RESULT_MAX_CONFIRM 16

/* The keys of r's first `max` measured anchor cells (aw_cell_is_anchor(), status ok), in the
 * run's order, into keys[] (borrowed from r: valid while r is). Returns how many. */
size_t aw_result_anchors(const struct aw_result *r, const char **keys, size_t max);

/* Where and why a document was rejected: code (e.g. "type", "range", "required"), a JSON path
 * such as "cells[3].p50" ("" for the whole document) and a human message. */
struct aw_verr {
	char code[32];
	char field[128];
	char message[256];
};

struct aw_result_limits {
	size_t max_cells;  /* most cells in one document */
	size_t max_string; /* longest string value */
	size_t max_labels; /* most host labels */
};

#define AW_RESULT_LIMITS_DEFAULT                                        \
	{                                                               \
		.max_cells = 50000, .max_string = 512, .max_labels = 64 \
	}

/* A new empty result: run_id set to a fresh UUID, trigger manual, every time "". NULL on
 * allocation failure. Free with aw_result_free(). */
struct aw_result *aw_result_new(void);

/* Frees the result and everything it owns; sets *r to NULL. */
void aw_result_free(struct aw_result **r);

/* Sets the reference kernels r carries to `mask` (bits of enum aw_ref; 0: none), and
 * r->reference_kernel to "mulchain-v1" or NULL with it. The cells' values are the caller's to
 * fill. Returns 0 or -ENOMEM. */
int aw_result_set_references(struct aw_result *r, unsigned mask);

/* Appends a cell with every statistic (every reference value too) NAN, cpu/contender_cpu/c
 * AW_NONE, d 0, status ok. The cell is owned by the result; the pointer is valid until the next
 * add. NULL on allocation failure. */
struct aw_cell *aw_result_add_cell(struct aw_result *r);

/* Frees the strings a cell owns and zeroes it. */
void aw_cell_release(struct aw_cell *c);

/* Sets one of a cell's (or result's) owned strings to a copy of `s` (NULL allowed), freeing
 * the old one. Returns 0 or -ENOMEM. */
int aw_set_str(char **field, const char *s);

/* Builds the canonical key of a cell from its fields, e.g.
 *   "op=ldadd cpu=3", "reader=srcu_fast op=stadd cpu=0",
 *   "op=llsc cpu=0 contender=1 c=10 d=100", "subject=mylib op=inc cpu=0", "kernel=srcu-fast",
 *   and for a contended cell skipped because the host has no such contender CPU
 *   "op=llsc cpu=0 contender=far c=10"
 * and stores it in c->key. Returns 0 or -ENOMEM. */
int aw_cell_make_key(struct aw_cell *c);

const char *aw_cell_status_name(enum aw_cell_status s);
const char *aw_trigger_name(enum aw_trigger t);
int aw_trigger_parse(const char *s, enum aw_trigger *out);

/* A string field of a host fingerprint object (a document's "host": "name", "arch",
 * "cpu_model", "platform_hash", ...): its value, borrowed from `host`, or NULL when `host` is
 * NULL or the field is absent or not a string. aw_host_name() is its "name". */
const char *aw_host_field(const json_t *host, const char *field);
const char *aw_host_name(const json_t *host);

/* The JSON form of a result or a cell; NULL on allocation failure. Caller owns the reference. */
json_t *aw_result_to_json(const struct aw_result *r);
json_t *aw_cell_to_json(const struct aw_cell *c);

/* Validates `doc` against every rule of the schema (types, required fields, finite
 * non-negative times, min <= p50 <= p95 <= p99 <= max, names, commit ids, limits, reference
 * series of known kernels, each of one finite positive value or null per cell) and builds
 * the model. Returns a new result (caller frees) or NULL with *e naming the first problem;
 * an allocation failure is reported as code "internal". */
struct aw_result *aw_result_from_json(const json_t *doc, const struct aw_result_limits *lim,
                                      struct aw_verr *e);

/* The fast path of reading a document from its text (an upload's body, `len` bytes, as
 * json_loadb(text, len, JSON_REJECT_DUPLICATES) would read it) under `lim` (NULL: the
 * defaults), without a JSON tree. It accepts only documents it can prove valid: the result it
 * returns (caller frees) is the one aw_result_from_json() builds from the parsed text, field for
 * field and bit for bit. NULL says only that it gave up: the document may be invalid, hold
 * something it leaves to the slow path (an unknown field, an escape in a string, a byte outside
 * printable ASCII, a number it cannot convert as jansson does), or memory ran out; the caller
 * then parses the text with jansson and aw_result_from_json(), which decides and words any
 * error. */
struct aw_result *aw_result_parse_fast(const char *text, size_t len,
                                       const struct aw_result_limits *lim);

/* The reference series of r as a store keeps them beside the cells, or NULL when r carries no
 * mulchain-v1 series (r->reference_kernel NULL) or on allocation failure. Caller owns the
 * reference. It is mulchain-v1's {kernel, unit, values} (one value per cell), what readers
 * from before the family parse, and, when r carries the family, also "references": the whole
 * family as a document's "references" array (mulchain-v1 included). */
json_t *aw_result_reference_to_json(const struct aw_result *r);

/* Validates `ref`, a "reference" object as in an older document or as
 * aw_result_reference_to_json() makes it, against r's cells (which must be in place, in
 * document order) and sets r->reference_kernel, r->references and each cell's reference
 * values. Returns 0, or -EINVAL with *e naming the problem ("reference.values" for a series
 * of the wrong length, "reference.references[1].kernel" for a kernel this side does not
 * know); on failure r is left without reference series. A series of a kernel this side does
 * not know at the top (stored before kernel names were checked) leaves r without reference
 * series and returns 0. */
int aw_result_reference_from_json(struct aw_result *r, const json_t *ref, struct aw_verr *e);

#endif
