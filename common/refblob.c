/* The packed form of a run's reference series; see aw/refblob.h. */
#include "aw/refblob.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static void put_double(uint8_t *p, double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static double get_double(const uint8_t *p)
{
	uint64_t v = 0;
	double d;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	memcpy(&d, &v, sizeof(d));
	return d;
}

static size_t kernels_in(unsigned mask)
{
	size_t n = 0;

	for (int k = 0; k < AW_REF_COUNT; k++)
		n += (mask >> k) & 1u;
	return n;
}

int aw_refblob_pack(const struct aw_result *r, uint8_t **out, size_t *len)
{
	unsigned carried = r->references | 1u << AW_REF_MULCHAIN;
	size_t n = r->n_cells, at = AW_REFBLOB_HEADER;
	uint8_t *p;

	*out = NULL;
	*len = 0;
	if (!r->reference_kernel)
		return 0;
	if (n > (SIZE_MAX - AW_REFBLOB_HEADER) / 8 / AW_REF_COUNT || n > UINT32_MAX)
		return -ENOMEM;
	p = malloc(AW_REFBLOB_HEADER + kernels_in(carried) * n * 8);
	if (!p)
		return -ENOMEM;
	memcpy(p, AW_REFBLOB_MAGIC, 4);
	put_u32(p + 4, r->references);
	put_u32(p + 8, (uint32_t)n);
	for (int k = 0; k < AW_REF_COUNT; k++)
		for (size_t i = 0; carried >> k & 1u && i < n; i++, at += 8)
			put_double(p + at, r->cells[i].ref_ns[k]);
	*out = p;
	*len = at;
	return 0;
}

int aw_refblob_open(const void *p, size_t len, struct aw_refblob *b)
{
	const uint8_t *u = p;

	memset(b, 0, sizeof(*b));
	if (!p || len < AW_REFBLOB_HEADER || memcmp(u, AW_REFBLOB_MAGIC, 4))
		return -EINVAL;
	b->family = get_u32(u + 4);
	b->n_cells = get_u32(u + 8);
	if (b->family & ~AW_REF_ALL || (b->family && !(b->family & 1u << AW_REF_MULCHAIN)))
		return -EINVAL;
	b->carried = b->family | 1u << AW_REF_MULCHAIN;
	if ((len - AW_REFBLOB_HEADER) / 8 / kernels_in(b->carried) != b->n_cells ||
	    (len - AW_REFBLOB_HEADER) % (8 * kernels_in(b->carried)))
		return -EINVAL;
	b->data = u + AW_REFBLOB_HEADER;
	return 0;
}

double aw_refblob_value(const struct aw_refblob *b, enum aw_ref k, size_t i)
{
	size_t before;

	if ((unsigned)k >= AW_REF_COUNT || !(b->carried >> k & 1u) || i >= b->n_cells)
		return NAN;
	before = kernels_in(b->carried & ((1u << k) - 1));
	return get_double(b->data + (before * b->n_cells + i) * 8);
}

int aw_refblob_to_result(struct aw_result *r, const void *p, size_t len)
{
	struct aw_refblob b;
	int rc = aw_refblob_open(p, len, &b);

	if (rc)
		return rc;
	if (b.n_cells != r->n_cells)
		return -EINVAL;
	if (aw_result_set_references(r, b.carried))
		return -ENOMEM;
	for (size_t i = 0; i < r->n_cells; i++)
		for (int k = 0; k < AW_REF_COUNT; k++)
			r->cells[i].ref_ns[k] = aw_refblob_value(&b, (enum aw_ref)k, i);
	r->references = b.family; /* 0: mulchain-v1 alone, as the document had it */
	return 0;
}

/* One JSON series {kernel, values} into kernel k's values of r's cells (null or a non-number:
 * NaN): 0, or -EINVAL when it holds another number of values than r has cells. */
static int series_from_json(const json_t *one, struct aw_result *r, int k)
{
	const json_t *values = json_object_get(one, "values"), *v;
	size_t i;

	if (!json_is_array(values) || json_array_size(values) != r->n_cells)
		return -EINVAL;
	json_array_foreach (values, i, v)
		r->cells[i].ref_ns[k] = json_is_number(v) ? json_number_value(v) : NAN;
	return 0;
}

/* The kernel a JSON series names, or -1 (none, or one this side does not know). */
static int kernel_of(const json_t *one)
{
	const char *name = json_string_value(json_object_get(one, "kernel"));

	return name ? aw_ref_lookup(name) : -1;
}

int aw_refblob_from_json(const char *text, uint8_t **out, size_t *len)
{
	json_t *doc = json_loads(text, 0, NULL), *family, *one;
	const json_t *chain = NULL;
	char chain_name[] = AW_REF_MULCHAIN_NAME;
	struct aw_result r = {.reference_kernel = chain_name};
	size_t i;
	int rc = 0;

	*out = NULL;
	*len = 0;
	if (!json_is_object(doc)) {
		json_decref(doc);
		return -EINVAL;
	}
	family = json_object_get(doc, "references");
	if (!json_is_array(family)) {
		family = NULL;
		if (kernel_of(doc) == AW_REF_MULCHAIN)
			chain = doc; /* from before the family: mulchain-v1 alone */
	}
	json_array_foreach (family, i, one) {
		int k = kernel_of(one);

		if (k >= 0)
			r.references |= 1u << k;
		if (k == AW_REF_MULCHAIN)
			chain = one;
	}
	if (!chain) {
		json_decref(doc);
		return 0;
	}
	/* a result of bare cells, each kernel's values in place, packed as a stored run is */
	r.n_cells = json_array_size(json_object_get(chain, "values"));
	r.cells = calloc(r.n_cells ? r.n_cells : 1, sizeof(*r.cells));
	if (!r.cells)
		rc = -ENOMEM;
	for (i = 0; !rc && i < r.n_cells; i++)
		for (int k = 0; k < AW_REF_COUNT; k++)
			r.cells[i].ref_ns[k] = NAN;
	if (!rc && !family)
		rc = series_from_json(chain, &r, AW_REF_MULCHAIN);
	json_array_foreach (family, i, one)
		if (!rc && kernel_of(one) >= 0)
			rc = series_from_json(one, &r, kernel_of(one));
	if (!rc)
		rc = aw_refblob_pack(&r, out, len);
	free(r.cells);
	json_decref(doc);
	return rc;
}
