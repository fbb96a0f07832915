/* The result document model, its JSON form and its validation; see result.h. */
#include "aw/result.h"
#include "result_internal.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const status_names[] = {"ok", "skipped", "failed"};
static const char *const ref_names[AW_REF_COUNT] = {AW_REF_MULCHAIN_NAME, AW_REF_MULINDEP_NAME,
                                                    AW_REF_ATOMICADD_NAME, AW_REF_MEMCHASE_NAME,
                                                    AW_REF_MEMGATHER_NAME};

const char *aw_ref_name(enum aw_ref k)
{
	assert(k < AW_REF_COUNT);
	return ref_names[k];
}

bool aw_ref_independent(enum aw_ref k)
{
	return k == AW_REF_MULCHAIN || k == AW_REF_MULINDEP || k == AW_REF_ATOMICADD;
}

bool aw_cell_is_anchor(const struct aw_cell *c)
{
	return c->op && !c->reader && !c->subject && !c->kernel && c->contender_cpu == AW_NONE &&
	       (c->c == AW_NONE || c->c == 0) && c->d == 0;
}

size_t aw_result_anchors(const struct aw_result *r, const char **keys, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n_cells && n < max; i++)
		if (r->cells[i].status == AW_CELL_OK && aw_cell_is_anchor(&r->cells[i]))
			keys[n++] = r->cells[i].key;
	return n;
}

int aw_ref_lookup(const char *name)
{
	for (int k = 0; k < AW_REF_COUNT; k++)
		if (!strcmp(name, ref_names[k]))
			return k;
	return -1;
}
static const char *const trigger_names[] = {"ci", "schedule", "manual", "import", "bisect"};

const char *aw_cell_status_name(enum aw_cell_status s)
{
	return status_names[s];
}

const char *aw_trigger_name(enum aw_trigger t)
{
	return trigger_names[t];
}

int aw_trigger_parse(const char *s, enum aw_trigger *out)
{
	for (size_t i = 0; i < sizeof(trigger_names) / sizeof(trigger_names[0]); i++) {
		if (!strcmp(s, trigger_names[i])) {
			*out = (enum aw_trigger)i;
			return 0;
		}
	}
	return -EINVAL;
}

int aw_set_str(char **field, const char *s)
{
	char *copy = NULL;

	if (s) {
		copy = strdup(s);
		if (!copy)
			return -ENOMEM;
	}
	free(*field);
	*field = copy;
	return 0;
}

struct aw_result *aw_result_new(void)
{
	struct aw_result *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	if (aw_uuid4(r->run_id)) {
		free(r);
		return NULL;
	}
	r->trigger = AW_TRIGGER_MANUAL;
	return r;
}

void aw_cell_release(struct aw_cell *c)
{
	free(c->key);
	free(c->op);
	free(c->reader);
	free(c->subject);
	free(c->kernel);
	free(c->placement);
	free(c->reason);
	memset(c, 0, sizeof(*c));
}

void aw_result_free(struct aw_result **rp)
{
	struct aw_result *r = *rp;

	if (!r)
		return;
	for (size_t i = 0; i < r->n_cells; i++)
		aw_cell_release(&r->cells[i]);
	free(r->cells);
	free(r->project);
	free(r->commit);
	free(r->ref);
	free(r->commit_time);
	free(r->matrix_name);
	free(r->matrix_hash);
	free(r->matrix_profile);
	free(r->confirmation_of);
	json_decref(r->host);
	json_decref(r->meta);
	free(r->reference_kernel);
	free(r);
	*rp = NULL;
}

int aw_result_set_references(struct aw_result *r, unsigned mask)
{
	assert(!(mask & ~AW_REF_ALL));
	if (aw_set_str(&r->reference_kernel,
	               mask & (1u << AW_REF_MULCHAIN) ? AW_REF_MULCHAIN_NAME : NULL))
		return -ENOMEM;
	r->references = mask;
	return 0;
}

struct aw_cell *aw_result_add_cell(struct aw_result *r)
{
	struct aw_cell *c;

	if (aw_array_reserve(&r->cells, r->n_cells, &r->cap_cells, sizeof(*r->cells), 64))
		return NULL;
	c = &r->cells[r->n_cells++];
	memset(c, 0, sizeof(*c));
	c->cpu = AW_NONE;
	c->contender_cpu = AW_NONE;
	c->c = AW_NONE;
	c->min = c->p50 = c->p95 = c->p99 = c->max = NAN;
	c->mean = c->stddev = c->ci_lo = c->ci_hi = c->baseline_ns = NAN;
	for (int k = 0; k < AW_REF_COUNT; k++)
		c->ref_ns[k] = NAN;
	c->status = AW_CELL_OK;
	return c;
}

int aw_cell_make_key(struct aw_cell *c)
{
	char key[512];
	size_t n = 0;

#define KEY_ADD(...)                                                      \
	do {                                                              \
		int m_ = snprintf(key + n, sizeof(key) - n, __VA_ARGS__); \
		if (m_ < 0 || (size_t)m_ >= sizeof(key) - n)              \
			return -ENAMETOOLONG;                             \
		n += (size_t)m_;                                          \
	} while (0)

	if (c->subject)
		KEY_ADD("subject=%s ", c->subject);
	if (c->kernel)
		KEY_ADD("kernel=%s ", c->kernel);
	if (c->reader)
		KEY_ADD("reader=%s ", c->reader);
	if (!c->kernel)
		KEY_ADD("op=%s ", c->op ? c->op : "?");
	if (c->cpu != AW_NONE)
		KEY_ADD("cpu=%d ", c->cpu);
	if (c->contender_cpu != AW_NONE)
		KEY_ADD("contender=%d ", c->contender_cpu);
	else if (c->c != AW_NONE && c->placement)
		KEY_ADD("contender=%s ", c->placement); /* skipped: no such CPU on this host */
	if (c->c != AW_NONE)
		KEY_ADD("c=%lld ", (long long)c->c);
	if (c->d > 0)
		KEY_ADD("d=%lld ", (long long)c->d);
#undef KEY_ADD
	if (n)
		key[--n] = '\0';
	return aw_set_str(&c->key, key);
}

/* ---- to JSON ---- */

static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *int_or_null(int64_t v)
{
	return v == AW_NONE ? json_null() : json_integer(v);
}

/* json_object_set_new() that remembers the first failure in *ok. */
static void put(json_t *o, const char *k, json_t *v, int *ok)
{
	if (!v || json_object_set_new(o, k, v))
		*ok = 0;
}

json_t *aw_cell_to_json(const struct aw_cell *c)
{
	json_t *o = json_object();
	int ok = 1;

	if (!o)
		return NULL;
	put(o, "key", str_or_null(c->key), &ok);
	put(o, "op", str_or_null(c->op), &ok);
	put(o, "reader", str_or_null(c->reader), &ok);
	if (c->subject)
		put(o, "subject", json_string(c->subject), &ok);
	if (c->kernel)
		put(o, "kernel", json_string(c->kernel), &ok);
	if (c->placement)
		put(o, "placement", json_string(c->placement), &ok);
	put(o, "cpu", int_or_null(c->cpu), &ok);
	put(o, "contender_cpu", int_or_null(c->contender_cpu), &ok);
	put(o, "c", int_or_null(c->c), &ok);
	put(o, "d", json_integer(c->d), &ok);
	put(o, "unit", json_string("ns"), &ok);
	put(o, "n", json_integer((json_int_t)c->n), &ok);
	put(o, "batch", c->batch ? json_integer((json_int_t)c->batch) : json_null(), &ok);
	put(o, "min", num_or_null(c->min), &ok);
	put(o, "p50", num_or_null(c->p50), &ok);
	put(o, "p95", num_or_null(c->p95), &ok);
	put(o, "p99", num_or_null(c->p99), &ok);
	put(o, "max", num_or_null(c->max), &ok);
	put(o, "mean", num_or_null(c->mean), &ok);
	put(o, "stddev", num_or_null(c->stddev), &ok);
	put(o, "ci_lo", num_or_null(c->ci_lo), &ok);
	put(o, "ci_hi", num_or_null(c->ci_hi), &ok);
	put(o, "baseline_ns", num_or_null(c->baseline_ns), &ok);
	put(o, "below_resolution", json_boolean(c->below_resolution), &ok);
	put(o, "status", json_string(aw_cell_status_name(c->status)), &ok);
	put(o, "reason", str_or_null(c->reason), &ok);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The reference kernels r carries: its mask, and mulchain-v1 with reference_kernel (a writer
 * from before the family sets only that). */
static unsigned carried_references(const struct aw_result *r)
{
	return r->references | (r->reference_kernel ? 1u << AW_REF_MULCHAIN : 0);
}

/* One reference series: {kernel, unit, values}, one value per cell in cell order. */
static json_t *series_to_json(const struct aw_result *r, enum aw_ref k)
{
	json_t *o = json_object(), *values = json_array();
	int ok = o && values;

	for (size_t i = 0; ok && i < r->n_cells; i++)
		if (json_array_append_new(values, num_or_null(r->cells[i].ref_ns[k])))
			ok = 0;
	if (!ok) {
		json_decref(o);
		json_decref(values);
		return NULL;
	}
	put(o, "kernel", json_string(aw_ref_name(k)), &ok);
	put(o, "unit", json_string("ns"), &ok);
	put(o, "values", values, &ok);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The "references" array: one series per kernel r carries, in enum order. */
static json_t *references_to_json(const struct aw_result *r)
{
	unsigned mask = carried_references(r);
	json_t *a = json_array();

	for (int k = 0; a && k < AW_REF_COUNT; k++) {
		if (mask & (1u << k) &&
		    json_array_append_new(a, series_to_json(r, (enum aw_ref)k))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

json_t *aw_result_reference_to_json(const struct aw_result *r)
{
	json_t *o;
	int ok = 1;

	if (!r->reference_kernel)
		return NULL;
	o = series_to_json(r, AW_REF_MULCHAIN);
	if (o && r->references)
		put(o, "references", references_to_json(r), &ok);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *aw_result_to_json(const struct aw_result *r)
{
	json_t *o = json_object(), *m = json_object(), *cells = json_array();
	int ok = o && m && cells;

	if (!ok)
		goto fail;
	put(o, "schema", json_string(AW_RESULT_SCHEMA), &ok);
	put(o, "run_id", json_string(r->run_id), &ok);
	put(o, "project", str_or_null(r->project), &ok);
	put(o, "commit", str_or_null(r->commit), &ok);
	put(o, "ref", str_or_null(r->ref), &ok);
	if (r->commit_time)
		put(o, "commit_time", json_string(r->commit_time), &ok);
	put(o, "trigger", json_string(aw_trigger_name(r->trigger)), &ok);
	put(o, "started_at", json_string(r->started_at), &ok);
	put(o, "finished_at", json_string(r->finished_at), &ok);
	put(o, "host", r->host ? json_incref(r->host) : json_object(), &ok);
	put(m, "name", str_or_null(r->matrix_name), &ok);
	put(m, "version", json_integer(r->matrix_version), &ok);
	put(m, "hash", str_or_null(r->matrix_hash), &ok);
	if (r->matrix_profile)
		put(m, "profile", json_string(r->matrix_profile), &ok);
	put(o, "matrix", m, &ok);
	m = NULL;
	if (r->meta)
		put(o, "meta", json_incref(r->meta), &ok);
	if (r->references)
		put(o, "references", references_to_json(r), &ok);
	else if (r->reference_kernel)
		put(o, "reference", series_to_json(r, AW_REF_MULCHAIN), &ok);
	if (r->confirmation_of)
		put(o, "confirmation_of", json_string(r->confirmation_of), &ok);
	if (r->confirm > 0)
		put(o, "confirm", json_integer(r->confirm), &ok);
	for (size_t i = 0; ok && i < r->n_cells; i++) {
		json_t *c = aw_cell_to_json(&r->cells[i]);

		if (!c || json_array_append_new(cells, c))
			ok = 0;
	}
	put(o, "cells", cells, &ok);
	cells = NULL;
	if (ok)
		return o;
fail:
	json_decref(o);
	json_decref(m);
	json_decref(cells);
	return NULL;
}

/* ---- validation ---- */

struct vctx {
	const struct aw_result_limits *lim;
	struct aw_verr *e;
	long cell; /* the cell being validated (fields are then "cells[N].field"), or -1 */
};

static int verr(struct vctx *v, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int verr(struct vctx *v, const char *code, const char *field, const char *fmt, ...)
{
	va_list ap;

	/* Paths are built here, on the error path only: formatting "cells[N].field" for every
	 * field of every cell would be most of the cost of validating a good document. */
	snprintf(v->e->code, sizeof(v->e->code), "%s", code);
	if (v->cell >= 0)
		snprintf(v->e->field, sizeof(v->e->field), "cells[%ld].%s", v->cell, field);
	else
		snprintf(v->e->field, sizeof(v->e->field), "%s", field);
	va_start(ap, fmt);
	vsnprintf(v->e->message, sizeof(v->e->message), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static const char *json_type_name(const json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	case JSON_NULL:
		return "null";
	}
	return "value";
}

static int check_keys(struct vctx *v, const json_t *o, const char *const *allowed,
                      const char *prefix)
{
	const char *k;
	json_t *val;

	json_object_foreach ((json_t *)o, k, val) {
		size_t i;
		char field[128];

		for (i = 0; allowed[i]; i++)
			if (allowed[i][0] == k[0] && !strcmp(k, allowed[i]))
				break;
		if (!allowed[i]) {
			snprintf(field, sizeof(field), "%s%.64s", prefix, k);
			return verr(v, "unknown_field", field, "unknown field '%.64s'", k);
		}
	}
	return 0;
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

bool aw_result_str_valid(const char *s, enum aw_str_rule rule)
{
	int64_t t;

	switch (rule) {
	case AW_STR_ANY:
		return *s != '\0';
	case AW_STR_NAME:
		return aw_valid_name(s);
	case AW_STR_COMMIT:
		return aw_valid_commit(s);
	case AW_STR_REF:
		return aw_valid_ref(s);
	case AW_STR_UUID:
		return aw_valid_uuid(s);
	case AW_STR_TIME:
		return aw_time_parse(s, &t) == 0;
	case AW_STR_HEX:
		return strlen(s) >= 8 && strlen(s) <= 64 &&
		       strspn(s, "0123456789abcdef") == strlen(s);
	}
	return false;
}

/* Reads field `k` of `o` as a string under `rule`; *out is NULL when the field is absent or
 * null and that is allowed. */
static int get_str(struct vctx *v, const json_t *o, const char *k, const char *path, bool required,
                   enum aw_str_rule rule, const char **out)
{
	json_t *j = json_object_get(o, k);
	const char *s;

	*out = NULL;
	if (!j || json_is_null(j)) {
		if (required)
			return verr(v, "required", path, "'%s' is required", k);
		return 0;
	}
	if (!json_is_string(j))
		return verr(v, "type", path, "'%s' must be a string, not %s", k, json_type_name(j));
	s = json_string_value(j);
	if (json_string_length(j) > v->lim->max_string)
		return verr(v, "too_long", path, "'%s' is longer than %zu bytes", k,
		            v->lim->max_string);
	if (strlen(s) != json_string_length(j) || !printable(s))
		return verr(v, "invalid", path, "'%s' holds control characters", k);
	if (!aw_result_str_valid(s, rule)) {
		static const char *const what[] = {
		    "a non-empty string",
		    "a name of 1 to 64 characters from [A-Za-z0-9._-]",
		    "a commit id of 7 to 64 hex digits",
		    "a valid git ref name",
		    "a lowercase UUID",
		    "an RFC 3339 date-time",
		    "8 to 64 lowercase hex digits"};
		return verr(v, "invalid", path, "'%s' must be %s, got '%.48s'", k, what[rule], s);
	}
	*out = s;
	return 0;
}

/* Reads an integer field in [lo, hi]; absent or null gives `absent`. */
static int get_int(struct vctx *v, const json_t *o, const char *k, const char *path, bool required,
                   int64_t lo, int64_t hi, int64_t absent, int64_t *out)
{
	json_t *j = json_object_get(o, k);
	int64_t x;

	*out = absent;
	if (!j || json_is_null(j)) {
		if (required)
			return verr(v, "required", path, "'%s' is required", k);
		return 0;
	}
	if (!json_is_integer(j))
		return verr(v, "type", path, "'%s' must be an integer, not %s", k,
		            json_is_real(j) ? "a fraction" : json_type_name(j));
	x = json_integer_value(j);
	if (x < lo || x > hi)
		return verr(v, "range", path, "'%s' must be between %lld and %lld, got %lld", k,
		            (long long)lo, (long long)hi, (long long)x);
	*out = x;
	return 0;
}

/* Reads a finite non-negative number; absent or null gives NAN. */
static int get_num(struct vctx *v, const json_t *o, const char *k, const char *path, double *out)
{
	json_t *j = json_object_get(o, k);
	double x;

	*out = NAN;
	if (!j || json_is_null(j))
		return 0;
	if (!json_is_number(j))
		return verr(v, "type", path, "'%s' must be a number, not %s", k, json_type_name(j));
	x = json_number_value(j);
	if (!isfinite(x))
		return verr(v, "range", path, "'%s' must be finite", k);
	if (x < 0)
		return verr(v, "range", path, "'%s' must not be negative, got %g", k, x);
	*out = x;
	return 0;
}

static int dup_into(struct vctx *v, char **dst, const char *s)
{
	if (aw_set_str(dst, s))
		return verr(v, "internal", "", "out of memory");
	return 0;
}

static int validate_labels(struct vctx *v, const json_t *labels)
{
	const char *k;
	json_t *val;
	char path[128];

	if (!json_is_object(labels))
		return verr(v, "type", "host.labels", "'labels' must be an object of strings");
	if (json_object_size(labels) > v->lim->max_labels)
		return verr(v, "too_many", "host.labels", "more than %zu labels",
		            v->lim->max_labels);
	json_object_foreach ((json_t *)labels, k, val) {
		const char *s;

		snprintf(path, sizeof(path), "host.labels.%.64s", k);
		if (!aw_valid_name(k))
			return verr(v, "invalid", path,
			            "label names must be 1 to 64 characters from [A-Za-z0-9._-]");
		if (!json_is_string(val))
			return verr(v, "type", path, "label values must be strings, not %s",
			            json_type_name(val));
		s = json_string_value(val);
		if (json_string_length(val) > v->lim->max_string)
			return verr(v, "too_long", path, "label value longer than %zu bytes",
			            v->lim->max_string);
		if (strlen(s) != json_string_length(val) || !printable(s))
			return verr(v, "invalid", path, "label value holds control characters");
	}
	return 0;
}

static int validate_host(struct vctx *v, const json_t *host)
{
	const char *s;
	size_t size;
	int rc;

	if (!host)
		return verr(v, "required", "host", "'host' is required");
	if (!json_is_object(host))
		return verr(v, "type", "host", "'host' must be an object, not %s",
		            json_type_name(host));
	if ((rc = get_str(v, host, "name", "host.name", true, AW_STR_NAME, &s)) ||
	    (rc = get_str(v, host, "arch", "host.arch", true, AW_STR_NAME, &s)) ||
	    (rc = get_str(v, host, "cpu_model", "host.cpu_model", true, AW_STR_ANY, &s)) ||
	    (rc = get_str(v, host, "platform_hash", "host.platform_hash", false, AW_STR_HEX, &s)))
		return rc;
	if (!json_object_get(host, "labels"))
		return verr(v, "required", "host.labels", "'labels' is required");
	if ((rc = validate_labels(v, json_object_get(host, "labels"))))
		return rc;
	size = json_dumpb(host, NULL, 0, JSON_COMPACT);
	if (size > 65536)
		return verr(v, "too_large", "host", "the host fingerprint is larger than 64 KiB");
	return 0;
}

bool aw_result_host_valid(const json_t *host, const struct aw_result_limits *lim)
{
	struct aw_verr e;
	struct vctx v = {.lim = lim, .e = &e, .cell = -1};

	return validate_host(&v, host) == 0;
}

static const char *const cell_keys[] = {"key",    "op",        "reader",      "subject",
                                        "kernel", "placement", "cpu",         "contender_cpu",
                                        "c",      "d",         "unit",        "n",
                                        "batch",  "min",       "p50",         "p95",
                                        "p99",    "max",       "mean",        "stddev",
                                        "ci_lo",  "ci_hi",     "baseline_ns", "below_resolution",
                                        "status", "reason",    NULL};

static int validate_cell(struct vctx *v, const json_t *j, size_t idx, struct aw_cell *c,
                         json_t *seen)
{
	const char *s;
	int64_t x;
	json_t *b;
	int rc;

#define P(name) (name)
	if (!json_is_object(j)) {
		char field[40];

		snprintf(field, sizeof(field), "cells[%zu]", idx);
		return verr(v, "type", field, "a cell must be an object, not %s",
		            json_type_name(j));
	}
	v->cell = (long)idx;
	if ((rc = check_keys(v, j, cell_keys, "")))
		return rc;
	if ((rc = get_str(v, j, "key", P("key"), true, AW_STR_ANY, &s)))
		return rc;
	if (json_object_get(seen, s))
		return verr(v, "duplicate", P("key"), "cell key '%.64s' appears twice", s);
	if (json_object_set_new(seen, s, json_true()) || dup_into(v, &c->key, s))
		return verr(v, "internal", "", "out of memory");
	if ((rc = get_str(v, j, "op", P("op"), true, AW_STR_NAME, &s)) ||
	    (rc = dup_into(v, &c->op, s)))
		return rc;
	if ((rc = get_str(v, j, "reader", P("reader"), false, AW_STR_NAME, &s)) ||
	    (rc = dup_into(v, &c->reader, s)))
		return rc;
	if ((rc = get_str(v, j, "subject", P("subject"), false, AW_STR_NAME, &s)) ||
	    (rc = dup_into(v, &c->subject, s)))
		return rc;
	if ((rc = get_str(v, j, "kernel", P("kernel"), false, AW_STR_NAME, &s)) ||
	    (rc = dup_into(v, &c->kernel, s)))
		return rc;
	if ((rc = get_str(v, j, "placement", P("placement"), false, AW_STR_NAME, &s)))
		return rc;
	if (s && strcmp(s, "near") && strcmp(s, "far"))
		return verr(v, "invalid", "placement", "'placement' must be \"near\" or \"far\"");
	if ((rc = dup_into(v, &c->placement, s)))
		return rc;
	if ((rc = get_int(v, j, "cpu", P("cpu"), false, 0, 65535, AW_NONE, &x)))
		return rc;
	c->cpu = (int)x;
	if ((rc = get_int(v, j, "contender_cpu", P("contender_cpu"), false, 0, 65535, AW_NONE, &x)))
		return rc;
	c->contender_cpu = (int)x;
	if ((rc = get_int(v, j, "c", P("c"), false, 0, INT64_C(1) << 40, AW_NONE, &c->c)) ||
	    (rc = get_int(v, j, "d", P("d"), false, 0, INT64_C(1) << 40, 0, &c->d)))
		return rc;
	if ((rc = get_str(v, j, "unit", P("unit"), true, AW_STR_ANY, &s)))
		return rc;
	if (strcmp(s, "ns"))
		return verr(v, "invalid", "unit", "'unit' must be \"ns\", got '%.16s'", s);
	if ((rc = get_str(v, j, "status", P("status"), true, AW_STR_ANY, &s)))
		return rc;
	for (c->status = AW_CELL_OK; c->status <= AW_CELL_FAILED; c->status++)
		if (!strcmp(s, status_names[c->status]))
			break;
	if (c->status > AW_CELL_FAILED)
		return verr(v, "invalid", "status",
		            "'status' must be ok, skipped or failed, got '%.16s'", s);
	if ((rc = get_str(v, j, "reason", P("reason"), c->status != AW_CELL_OK, AW_STR_ANY, &s)) ||
	    (rc = dup_into(v, &c->reason, s)))
		return rc;
	if ((rc = get_int(v, j, "n", P("n"), c->status == AW_CELL_OK, c->status == AW_CELL_OK,
	                  INT64_C(1) << 40, 0, &x)))
		return rc;
	c->n = (uint64_t)x;
	if ((rc = get_int(v, j, "batch", P("batch"), false, 0, INT64_C(1) << 50, 0, &x)))
		return rc;
	c->batch = (uint64_t)x;
	if ((rc = get_num(v, j, "min", P("min"), &c->min)) ||
	    (rc = get_num(v, j, "p50", P("p50"), &c->p50)) ||
	    (rc = get_num(v, j, "p95", P("p95"), &c->p95)) ||
	    (rc = get_num(v, j, "p99", P("p99"), &c->p99)) ||
	    (rc = get_num(v, j, "max", P("max"), &c->max)) ||
	    (rc = get_num(v, j, "mean", P("mean"), &c->mean)) ||
	    (rc = get_num(v, j, "stddev", P("stddev"), &c->stddev)) ||
	    (rc = get_num(v, j, "ci_lo", P("ci_lo"), &c->ci_lo)) ||
	    (rc = get_num(v, j, "ci_hi", P("ci_hi"), &c->ci_hi)) ||
	    (rc = get_num(v, j, "baseline_ns", P("baseline_ns"), &c->baseline_ns)))
		return rc;
	if (c->status == AW_CELL_OK && isnan(c->p50))
		return verr(v, "required", P("p50"), "'p50' is required when status is ok");
	{
		/* min <= p50 <= p95 <= p99 <= max over the values present. */
		const double order[] = {c->min, c->p50, c->p95, c->p99, c->max};
		const char *const names[] = {"min", "p50", "p95", "p99", "max"};
		int last = -1;

		for (int i = 0; i < 5; i++) {
			if (isnan(order[i]))
				continue;
			if (last >= 0 && order[i] < order[last])
				return verr(v, "order", P(names[i]),
				            "'%s' (%g) is less than '%s' (%g)", names[i], order[i],
				            names[last], order[last]);
			last = i;
		}
	}
	if (!isnan(c->ci_lo) && !isnan(c->p50) && c->ci_lo > c->p50)
		return verr(v, "order", P("ci_lo"), "'ci_lo' (%g) is greater than 'p50' (%g)",
		            c->ci_lo, c->p50);
	if (!isnan(c->ci_hi) && !isnan(c->p50) && c->ci_hi < c->p50)
		return verr(v, "order", P("ci_hi"), "'ci_hi' (%g) is less than 'p50' (%g)",
		            c->ci_hi, c->p50);
	b = json_object_get(j, "below_resolution");
	if (b && !json_is_boolean(b) && !json_is_null(b))
		return verr(v, "type", P("below_resolution"),
		            "'below_resolution' must be a boolean, not %s", json_type_name(b));
	c->below_resolution = json_is_true(b);
#undef P
	return 0;
}

static const char *const series_keys[] = {"kernel", "unit", "values", NULL};
static const char *const stored_reference_keys[] = {"kernel", "unit", "values", "references", NULL};

/* One reference series {kernel, unit, values} at `path` ("reference", "references[2]"), read
 * after the cells: a kernel this side knows (with `only` >= 0, that one), not in *seen yet,
 * and one value per cell, which goes to the cells' ref_ns. Adds the kernel to *seen. */
static int validate_series(struct vctx *v, const json_t *o, const char *path,
                           const char *const *keys, int only, unsigned *seen, struct aw_result *r)
{
	const json_t *values, *x;
	const char *s;
	char field[96], prefix[80];
	size_t i;
	int k, rc;

#define FIELD(name) (snprintf(field, sizeof(field), "%s.%s", path, name), field)
	if (!json_is_object(o))
		return verr(v, "type", path, "a reference series must be an object, not %s",
		            json_type_name(o));
	snprintf(prefix, sizeof(prefix), "%s.", path);
	if ((rc = check_keys(v, o, keys, prefix)) ||
	    (rc = get_str(v, o, "kernel", FIELD("kernel"), true, AW_STR_NAME, &s)))
		return rc;
	k = aw_ref_lookup(s);
	_Static_assert(AW_REF_COUNT == 5, "the message names every kernel");
	if (k < 0)
		return verr(
		    v, "unknown_kernel", FIELD("kernel"),
		    "unknown reference kernel '%.64s' (this side knows %s, %s, %s, %s and %s)", s,
		    ref_names[0], ref_names[1], ref_names[2], ref_names[3], ref_names[4]);
	if (only >= 0 && k != only)
		return verr(v, "invalid", FIELD("kernel"),
		            "'%s' holds only %s; %s goes in 'references'", path, ref_names[only],
		            ref_names[k]);
	if (*seen & (1u << k))
		return verr(v, "duplicate", FIELD("kernel"), "reference kernel '%s' appears twice",
		            ref_names[k]);
	*seen |= 1u << k;
	if ((rc = get_str(v, o, "unit", FIELD("unit"), true, AW_STR_ANY, &s)))
		return rc;
	if (strcmp(s, "ns"))
		return verr(v, "invalid", FIELD("unit"), "'unit' must be \"ns\", got '%.16s'", s);
	values = json_object_get(o, "values");
	if (!values)
		return verr(v, "required", FIELD("values"), "'values' is required");
	if (!json_is_array(values))
		return verr(v, "type", FIELD("values"), "'values' must be an array, not %s",
		            json_type_name(values));
	if (json_array_size(values) != r->n_cells)
		return verr(v, "length", FIELD("values"),
		            "'values' holds %zu values, one per cell is %zu",
		            json_array_size(values), r->n_cells);
	json_array_foreach (values, i, x) {
		double d;

		if (json_is_null(x))
			continue;
		snprintf(field, sizeof(field), "%s.values[%zu]", path, i);
		if (!json_is_number(x))
			return verr(v, "type", field, "reference values must be numbers, not %s",
			            json_type_name(x));
		d = json_number_value(x);
		if (!isfinite(d) || d <= 0)
			return verr(v, "range", field,
			            "reference values must be finite and positive, got %g", d);
		r->cells[i].ref_ns[k] = d;
	}
#undef FIELD
	return 0;
}

/* A "references" array at `path`: one series per kernel, at least one, each kernel once. */
static int validate_references(struct vctx *v, const json_t *a, const char *path,
                               struct aw_result *r)
{
	const json_t *o;
	unsigned seen = 0;
	char field[64];
	size_t i;
	int rc;

	if (!json_is_array(a))
		return verr(v, "type", path, "'references' must be an array, not %s",
		            json_type_name(a));
	if (!json_array_size(a))
		return verr(v, "length", path, "'references' holds no series (leave it out)");
	json_array_foreach (a, i, o) {
		snprintf(field, sizeof(field), "%s[%zu]", path, i);
		if ((rc = validate_series(v, o, field, series_keys, -1, &seen, r)))
			return rc;
	}
	if ((rc = aw_result_set_references(r, seen)))
		return verr(v, "internal", "", "out of memory");
	return 0;
}

/* The optional "reference" object of an older document (mulchain-v1 only), or as a store
 * keeps it (`stored`: with the whole family in "references" beside). */
static int validate_reference(struct vctx *v, const json_t *ref, bool stored, struct aw_result *r)
{
	const json_t *family = stored ? json_object_get(ref, "references") : NULL;
	unsigned seen = 0;
	int rc;

	if (!json_is_object(ref))
		return verr(v, "type", "reference", "'reference' must be an object, not %s",
		            json_type_name(ref));
	rc = validate_series(v, ref, "reference", stored ? stored_reference_keys : series_keys,
	                     AW_REF_MULCHAIN, &seen, r);
	if (!rc && family)
		rc = validate_references(v, family, "reference.references", r);
	if (rc)
		return rc;
	if (aw_result_set_references(r, r->references | seen))
		return verr(v, "internal", "", "out of memory");
	if (!family)
		r->references = 0; /* mulchain-v1 alone, as written before the family */
	return 0;
}

static void clear_references(struct aw_result *r)
{
	free(r->reference_kernel);
	r->reference_kernel = NULL;
	r->references = 0;
	for (size_t i = 0; i < r->n_cells; i++)
		for (int k = 0; k < AW_REF_COUNT; k++)
			r->cells[i].ref_ns[k] = NAN;
}

int aw_result_reference_from_json(struct aw_result *r, const json_t *ref, struct aw_verr *e)
{
	const struct aw_result_limits lim = AW_RESULT_LIMITS_DEFAULT;
	struct vctx v = {.lim = &lim, .e = e, .cell = -1};
	const char *kernel;
	int rc;

	memset(e, 0, sizeof(*e));
	clear_references(r);
	/* a series stored before kernel names were checked, of a kernel this side does not know:
	 * the run reads back without it rather than not at all */
	kernel = json_string_value(json_object_get(ref, "kernel"));
	if (kernel && aw_valid_name(kernel) && aw_ref_lookup(kernel) < 0)
		return 0;
	rc = validate_reference(&v, ref, true, r);
	if (rc)
		clear_references(r);
	return rc;
}

static const char *const top_keys[] = {
    "schema",     "run_id",          "project", "commit", "ref",  "commit_time", "trigger",
    "started_at", "finished_at",     "host",    "matrix", "meta", "reference",   "references",
    "cells",      "confirmation_of", "confirm", NULL};
static const char *const matrix_keys[] = {"name", "version", "hash", "profile", NULL};

struct aw_result *aw_result_from_json(const json_t *doc, const struct aw_result_limits *lim,
                                      struct aw_verr *e)
{
	const struct aw_result_limits deflim = AW_RESULT_LIMITS_DEFAULT;
	struct vctx v = {.lim = lim ? lim : &deflim, .e = e, .cell = -1};
	struct aw_result *r = NULL;
	json_t *seen = NULL, *cells, *m, *family;
	const char *s;
	int64_t started, finished;
	size_t i;

	memset(e, 0, sizeof(*e));
	if (!json_is_object(doc)) {
		verr(&v, "type", "", "the document must be a JSON object, not %s",
		     json_type_name(doc));
		goto fail;
	}
	if (check_keys(&v, doc, top_keys, ""))
		goto fail;
	if (get_str(&v, doc, "schema", "schema", true, AW_STR_ANY, &s))
		goto fail;
	if (strcmp(s, AW_RESULT_SCHEMA)) {
		if (!strncmp(s, AW_RESULT_SCHEMA_PREFIX, strlen(AW_RESULT_SCHEMA_PREFIX)))
			verr(&v, "unsupported_schema", "schema",
			     "schema version '%.40s' is not supported (this side speaks %s)", s,
			     AW_RESULT_SCHEMA);
		else
			verr(&v, "invalid", "schema", "'schema' must be \"%s\", got '%.40s'",
			     AW_RESULT_SCHEMA, s);
		goto fail;
	}
	r = calloc(1, sizeof(*r));
	seen = json_object();
	if (!r || !seen) {
		verr(&v, "internal", "", "out of memory");
		goto fail;
	}
	if (get_str(&v, doc, "run_id", "run_id", true, AW_STR_UUID, &s))
		goto fail;
	memcpy(r->run_id, s, AW_UUID_LEN + 1);
	if (get_str(&v, doc, "project", "project", true, AW_STR_NAME, &s) ||
	    dup_into(&v, &r->project, s) ||
	    get_str(&v, doc, "commit", "commit", false, AW_STR_COMMIT, &s) ||
	    dup_into(&v, &r->commit, s) || get_str(&v, doc, "ref", "ref", true, AW_STR_REF, &s) ||
	    dup_into(&v, &r->ref, s) ||
	    get_str(&v, doc, "commit_time", "commit_time", false, AW_STR_TIME, &s) ||
	    dup_into(&v, &r->commit_time, s))
		goto fail;
	if (get_str(&v, doc, "trigger", "trigger", true, AW_STR_ANY, &s))
		goto fail;
	if (aw_trigger_parse(s, &r->trigger)) {
		verr(&v, "invalid", "trigger",
		     "'trigger' must be ci, schedule, manual, import or bisect, got '%.16s'", s);
		goto fail;
	}
	if (get_str(&v, doc, "started_at", "started_at", true, AW_STR_TIME, &s))
		goto fail;
	snprintf(r->started_at, sizeof(r->started_at), "%s", s);
	aw_time_parse(s, &started);
	if (get_str(&v, doc, "finished_at", "finished_at", true, AW_STR_TIME, &s))
		goto fail;
	snprintf(r->finished_at, sizeof(r->finished_at), "%s", s);
	aw_time_parse(s, &finished);
	if (strlen(r->started_at) >= AW_TIME_LEN - 1 || strlen(r->finished_at) >= AW_TIME_LEN - 1) {
		verr(&v, "too_long", "started_at", "times must be shorter than %d characters",
		     AW_TIME_LEN - 1);
		goto fail;
	}
	if (finished < started) {
		verr(&v, "order", "finished_at", "'finished_at' is before 'started_at'");
		goto fail;
	}
	if (validate_host(&v, json_object_get(doc, "host")))
		goto fail;
	r->host = json_deep_copy(json_object_get(doc, "host"));
	m = json_object_get(doc, "matrix");
	if (!m) {
		verr(&v, "required", "matrix", "'matrix' is required");
		goto fail;
	}
	if (!json_is_object(m)) {
		verr(&v, "type", "matrix", "'matrix' must be an object, not %s", json_type_name(m));
		goto fail;
	}
	if (check_keys(&v, m, matrix_keys, "matrix.") ||
	    get_str(&v, m, "name", "matrix.name", true, AW_STR_NAME, &s) ||
	    dup_into(&v, &r->matrix_name, s) ||
	    get_int(&v, m, "version", "matrix.version", true, 1, INT32_MAX, 0,
	            &r->matrix_version) ||
	    get_str(&v, m, "hash", "matrix.hash", true, AW_STR_HEX, &s) ||
	    dup_into(&v, &r->matrix_hash, s) ||
	    get_str(&v, m, "profile", "matrix.profile", false, AW_STR_NAME, &s) ||
	    dup_into(&v, &r->matrix_profile, s))
		goto fail;
	if (get_str(&v, doc, "confirmation_of", "confirmation_of", false, AW_STR_UUID, &s) ||
	    dup_into(&v, &r->confirmation_of, s) ||
	    get_int(&v, doc, "confirm", "confirm", false, 1, AW_RESULT_MAX_CONFIRM, 0, &r->confirm))
		goto fail;
	if (r->confirmation_of && !strcmp(r->confirmation_of, r->run_id)) {
		verr(&v, "invalid", "confirmation_of", "'confirmation_of' names the run itself");
		goto fail;
	}
	if (r->confirmation_of && r->confirm) {
		verr(&v, "invalid", "confirm",
		     "'confirm' is for a first run, not for a confirmation ('confirmation_of')");
		goto fail;
	}
	m = json_object_get(doc, "meta");
	if (m && !json_is_null(m)) {
		if (!json_is_object(m)) {
			verr(&v, "type", "meta", "'meta' must be an object, not %s",
			     json_type_name(m));
			goto fail;
		}
		if (json_dumpb(m, NULL, 0, JSON_COMPACT) > 65536) {
			verr(&v, "too_large", "meta", "'meta' is larger than 64 KiB");
			goto fail;
		}
		r->meta = json_deep_copy(m);
	}
	cells = json_object_get(doc, "cells");
	if (!cells) {
		verr(&v, "required", "cells", "'cells' is required");
		goto fail;
	}
	if (!json_is_array(cells)) {
		verr(&v, "type", "cells", "'cells' must be an array, not %s",
		     json_type_name(cells));
		goto fail;
	}
	if (json_array_size(cells) > v.lim->max_cells) {
		verr(&v, "too_many", "cells", "more than %zu cells", v.lim->max_cells);
		goto fail;
	}
	for (i = 0; i < json_array_size(cells); i++) {
		struct aw_cell *c = aw_result_add_cell(r);

		if (!c) {
			verr(&v, "internal", "", "out of memory");
			goto fail;
		}
		if (validate_cell(&v, json_array_get(cells, i), i, c, seen))
			goto fail;
	}
	v.cell = -1;
	m = json_object_get(doc, "reference");
	if (m && json_is_null(m))
		m = NULL;
	family = json_object_get(doc, "references");
	if (family && json_is_null(family))
		family = NULL;
	if (m && family) {
		verr(&v, "invalid", "reference",
		     "'reference' and 'references' exclude each other (mulchain-v1 goes in "
		     "'references')");
		goto fail;
	}
	if (m && validate_reference(&v, m, false, r))
		goto fail;
	if (family && validate_references(&v, family, "references", r))
		goto fail;
	if (!r->host || (json_object_get(doc, "meta") &&
	                 !json_is_null(json_object_get(doc, "meta")) && !r->meta)) {
		verr(&v, "internal", "", "out of memory");
		goto fail;
	}
	json_decref(seen);
	return r;
fail:
	json_decref(seen);
	aw_result_free(&r);
	return NULL;
}

const char *aw_host_field(const json_t *host, const char *field)
{
	return json_string_value(json_object_get(host, field));
}

const char *aw_host_name(const json_t *host)
{
	return aw_host_field(host, "name");
}
