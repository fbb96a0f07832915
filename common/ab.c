/* Validation of the A/B document; see aw/ab.h. */
#include "aw/ab.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "aw/util.h"

struct abv {
	const struct aw_result_limits *lim;
	struct aw_verr *e;
};

static int bad(struct abv *v, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int bad(struct abv *v, const char *code, const char *field, const char *fmt, ...)
{
	va_list ap;

	snprintf(v->e->code, sizeof(v->e->code), "%s", code);
	snprintf(v->e->field, sizeof(v->e->field), "%s", field);
	va_start(ap, fmt);
	vsnprintf(v->e->message, sizeof(v->e->message), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

bool aw_ab_is_ab(const json_t *doc)
{
	const char *s = json_string_value(json_object_get(doc, "schema"));

	return s && !strncmp(s, AW_AB_SCHEMA_PREFIX, strlen(AW_AB_SCHEMA_PREFIX));
}

static int only_keys(struct abv *v, const json_t *o, const char *const *keys, const char *at)
{
	const char *k;
	json_t *val;
	char field[128];

	json_object_foreach ((json_t *)o, k, val) {
		size_t i;

		for (i = 0; keys[i] && strcmp(keys[i], k); i++)
			;
		if (!keys[i]) {
			snprintf(field, sizeof(field), "%s%.64s", at, k);
			return bad(v, "unknown_field", field, "unknown field '%.64s'", k);
		}
	}
	return 0;
}

enum rule {
	R_ANY,
	R_NAME,
	R_COMMIT,
	R_REF,
	R_UUID,
	R_TIME
};

static int str(struct abv *v, const json_t *o, const char *k, const char *at, bool required,
               enum rule rule)
{
	json_t *j = json_object_get(o, k);
	char field[128];
	const char *s;
	int64_t t;
	bool good = true;

	snprintf(field, sizeof(field), "%s%s", at, k);
	if (!j || json_is_null(j))
		return required ? bad(v, "required", field, "'%s' is required", k) : 0;
	if (!json_is_string(j))
		return bad(v, "type", field, "'%s' must be a string", k);
	s = json_string_value(j);
	if (json_string_length(j) > v->lim->max_string || strlen(s) != json_string_length(j))
		return bad(v, "invalid", field, "'%s' is too long or holds a NUL", k);
	switch (rule) {
	case R_ANY:
		good = *s != '\0';
		break;
	case R_NAME:
		good = aw_valid_name(s);
		break;
	case R_COMMIT:
		good = aw_valid_commit(s);
		break;
	case R_REF:
		good = aw_valid_ref(s);
		break;
	case R_UUID:
		good = aw_valid_uuid(s);
		break;
	case R_TIME:
		good = aw_time_parse(s, &t) == 0;
		break;
	}
	if (!good)
		return bad(v, "invalid", field, "bad %s '%.64s'", k, s);
	return 0;
}

static int count(struct abv *v, const json_t *o, const char *k, const char *at, int64_t lo,
                 int64_t hi, bool nullable)
{
	json_t *j = json_object_get(o, k);
	char field[128];

	snprintf(field, sizeof(field), "%s%s", at, k);
	if (nullable && (!j || json_is_null(j)))
		return 0;
	if (!json_is_integer(j) || json_integer_value(j) < lo || json_integer_value(j) > hi)
		return bad(v, j ? "invalid" : "required", field,
		           "'%s' must be an integer from %lld to %lld", k, (long long)lo,
		           (long long)hi);
	return 0;
}

static int side(struct abv *v, const json_t *doc, const char *k)
{
	static const char *const keys[] = {"commit",  "library_name",    "build_log",
	                                   "build_s", "distinct_builds", NULL};
	json_t *o = json_object_get(doc, k), *b;
	char at[16];
	int rc;

	snprintf(at, sizeof(at), "%s.", k);
	if (!json_is_object(o))
		return bad(v, o ? "type" : "required", k, "'%s' must be an object", k);
	rc = only_keys(v, o, keys, at);
	if (!rc)
		rc = str(v, o, "commit", at, true, R_COMMIT);
	if (!rc && json_object_get(o, "library_name") &&
	    !json_is_string(json_object_get(o, "library_name")))
		rc = bad(v, "type", k, "'%s.library_name' must be a string", k);
	if (!rc)
		rc = str(v, o, "build_log", at, false, R_ANY);
	b = json_object_get(o, "build_s");
	if (!rc && b &&
	    (!json_is_number(b) || !(json_number_value(b) >= 0) ||
	     !isfinite(json_number_value(b)))) {
		snprintf(at, sizeof(at), "%s.build_s", k);
		rc = bad(v, "invalid", at, "'build_s' must be a number >= 0");
	}
	if (!rc) {
		snprintf(at, sizeof(at), "%s.", k);
		rc = count(v, o, "distinct_builds", at, 0, AW_AB_MAX_BUILDS, true);
	}
	return rc;
}

static int positive(struct abv *v, const json_t *o, const char *k, const char *at, bool nullable)
{
	json_t *j = json_object_get(o, k);
	char field[128];

	if (nullable && (!j || json_is_null(j)))
		return 0;
	snprintf(field, sizeof(field), "%s%s", at, k);
	if (!json_is_number(j) || !isfinite(json_number_value(j)) || !(json_number_value(j) > 0))
		return bad(v, j ? "invalid" : "required", field, "'%s' must be a finite number > 0",
		           k);
	return 0;
}

/* An optional number in [lo, hi] (`integer`: an integer). */
static int bounded(struct abv *v, const json_t *o, const char *k, const char *at, double lo,
                   double hi, bool integer)
{
	json_t *j = json_object_get(o, k);
	char field[128];
	double x;

	if (!j)
		return 0;
	snprintf(field, sizeof(field), "%s%s", at, k);
	x = json_number_value(j);
	if (!(integer ? json_is_integer(j) : json_is_number(j)) || !isfinite(x) || x < lo || x > hi)
		return bad(v, "invalid", field, "'%s' must be %s from %g to %g", k,
		           integer ? "an integer" : "a number", lo, hi);
	return 0;
}

/* An optional string that must be one of `words`. */
static int one_of(struct abv *v, const json_t *o, const char *k, const char *at,
                  const char *const *words)
{
	json_t *j = json_object_get(o, k);
	const char *s = json_string_value(j);
	char field[128];

	if (!j || json_is_null(j))
		return 0;
	for (size_t i = 0; s && words[i]; i++)
		if (!strcmp(s, words[i]))
			return 0;
	snprintf(field, sizeof(field), "%s%s", at, k);
	return bad(v, "invalid", field, "bad '%s'", k);
}

static int rounds(struct abv *v, const json_t *cell, const char *k, const char *at)
{
	static const char *const keys[] = {"first", "base",   "head",  "base_ref", "head_ref",
	                                   "level", "layout", "build", "slices",   NULL};
	static const char *const levels[] = {"alone", "shared", NULL};
	json_t *a = json_object_get(cell, k), *r;
	char field[128];
	size_t i;
	int rc = 0;

	snprintf(field, sizeof(field), "%s%s", at, k);
	if (!json_is_array(a))
		return bad(v, a ? "type" : "required", field, "'%s' must be an array", k);
	if (json_array_size(a) > AW_AB_MAX_ROUNDS)
		return bad(v, "too_many", field, "more than %d rounds", AW_AB_MAX_ROUNDS);
	json_array_foreach (a, i, r) {
		const char *first;

		snprintf(field, sizeof(field), "%s%s[%zu].", at, k, i);
		if (!json_is_object(r))
			return bad(v, "type", field, "a round must be an object");
		rc = only_keys(v, r, keys, field);
		first = json_string_value(json_object_get(r, "first"));
		if (!rc && (!first || (strcmp(first, "base") && strcmp(first, "head")))) {
			snprintf(field, sizeof(field), "%s%s[%zu].first", at, k, i);
			rc = bad(v, "invalid", field, "'first' must be \"base\" or \"head\"");
		}
		if (!rc)
			rc = positive(v, r, "base", field, false);
		if (!rc)
			rc = positive(v, r, "head", field, false);
		if (!rc)
			rc = positive(v, r, "base_ref", field, true);
		if (!rc)
			rc = positive(v, r, "head_ref", field, true);
		if (!rc)
			rc = one_of(v, r, "level", field, levels);
		if (!rc)
			rc = bounded(v, r, "layout", field, 0, AW_AB_MAX_LOADS - 1, true);
		if (!rc)
			rc = bounded(v, r, "build", field, 0, AW_AB_MAX_BUILDS - 1, true);
		if (!rc)
			rc = bounded(v, r, "slices", field, 1, 1e9, true);
		if (rc)
			return rc;
	}
	return 0;
}

static int cell(struct abv *v, const json_t *c, size_t i)
{
	static const char *const keys[] = {"key",       "op",     "reader",    "cpu",     "status",
	                                   "reason",    "rounds", "aa_rounds", "seconds", "slices",
	                                   "set_aside", "stop",   "loads",     NULL};
	static const char *const stops[] = {"decided", "rounds", "seconds", NULL};
	const char *status;
	char at[64];
	int rc;

	snprintf(at, sizeof(at), "cells[%zu].", i);
	if (!json_is_object(c))
		return bad(v, "type", at, "a cell must be an object");
	rc = only_keys(v, c, keys, at);
	if (!rc)
		rc = str(v, c, "key", at, true, R_ANY);
	if (!rc)
		rc = str(v, c, "op", at, true, R_NAME);
	if (!rc)
		rc = str(v, c, "reader", at, false, R_NAME);
	if (!rc)
		rc = count(v, c, "cpu", at, 0, 1 << 20, true);
	if (rc)
		return rc;
	status = json_string_value(json_object_get(c, "status"));
	snprintf(at, sizeof(at), "cells[%zu].status", i);
	if (!status || (strcmp(status, "ok") && strcmp(status, "failed") && strcmp(status, "new") &&
	                strcmp(status, "missing")))
		return bad(v, "invalid", at, "'status' must be ok, failed, new or missing");
	snprintf(at, sizeof(at), "cells[%zu].", i);
	if (!strcmp(status, "failed"))
		return str(v, c, "reason", at, true, R_ANY);
	if (strcmp(status, "ok")) {
		if (json_object_get(c, "rounds") || json_object_get(c, "aa_rounds"))
			return bad(v, "invalid", at,
			           "a cell only on one side (new, missing) has no rounds");
		return 0;
	}
	rc = rounds(v, c, "rounds", at);
	if (!rc)
		rc = rounds(v, c, "aa_rounds", at);
	if (!rc &&
	    json_array_size(json_object_get(c, "rounds")) !=
	        json_array_size(json_object_get(c, "aa_rounds")) &&
	    json_object_get(c, "stop"))
		rc = bad(v, "invalid", at, "a measured cell has as many A/A rounds as A/B rounds");
	if (!rc)
		rc = bounded(v, c, "seconds", at, 0, 1e6, false);
	if (!rc)
		rc = bounded(v, c, "slices", at, 0, 1e12, true);
	if (!rc)
		rc = bounded(v, c, "set_aside", at, 0, 1e12, true);
	if (!rc)
		rc = bounded(v, c, "loads", at, 1, AW_AB_MAX_LOADS, true);
	if (!rc)
		rc = one_of(v, c, "stop", at, stops);
	return rc;
}

/* measure.code_shifts: one offset in bytes (0 to 63) per code layout, as many as `builds`. */
static int code_shifts(struct abv *v, const json_t *m)
{
	const json_t *a = json_object_get(m, "code_shifts"), *e;
	const json_t *builds = json_object_get(m, "builds");
	char field[64];
	size_t i;

	if (!a)
		return 0;
	if (!json_is_array(a) || json_array_size(a) > AW_AB_MAX_BUILDS)
		return bad(v, "type", "measure.code_shifts",
		           "'code_shifts' must be an array of at most %d offsets",
		           AW_AB_MAX_BUILDS);
	if (builds && (json_int_t)json_array_size(a) != json_integer_value(builds))
		return bad(v, "invalid", "measure.code_shifts",
		           "'code_shifts' must hold one offset per build (%zu, builds %lld)",
		           json_array_size(a), (long long)json_integer_value(builds));
	json_array_foreach (a, i, e) {
		if (json_is_integer(e) && json_integer_value(e) >= 0 && json_integer_value(e) < 64)
			continue;
		snprintf(field, sizeof(field), "measure.code_shifts[%zu]", i);
		return bad(v, "invalid", field, "a code shift must be a whole number from 0 to 63");
	}
	return 0;
}

/* How the document was measured (optional): every key optional, none unknown. */
static int measure(struct abv *v, const json_t *doc)
{
	static const char *const keys[] = {
	    "layouts",     "budget_s",    "seconds",     "rounds", "slices_per_round",
	    "piece_ns",    "level_ratio", "threshold",   "alpha",  "looks",
	    "fresh_loads", "builds",      "code_shifts", NULL};
	const json_t *m = json_object_get(doc, "measure");
	int rc;

	if (!m)
		return 0;
	if (!json_is_object(m))
		return bad(v, "type", "measure", "'measure' must be an object");
	rc = only_keys(v, m, keys, "measure.");
	if (!rc)
		rc = bounded(v, m, "layouts", "measure.", 1, AW_AB_MAX_LAYOUTS, true);
	if (!rc)
		rc = bounded(v, m, "budget_s", "measure.", 0, 1e6, false);
	if (!rc)
		rc = bounded(v, m, "seconds", "measure.", 0, 1e6, false);
	if (!rc)
		rc = bounded(v, m, "rounds", "measure.", 0, 1e9, true);
	if (!rc)
		rc = bounded(v, m, "slices_per_round", "measure.", 1, 1e6, true);
	if (!rc)
		rc = bounded(v, m, "piece_ns", "measure.", 1, 1e12, true);
	if (!rc)
		rc = bounded(v, m, "level_ratio", "measure.", 1, 100, false);
	if (!rc)
		rc = bounded(v, m, "threshold", "measure.", 0, 10, false);
	if (!rc)
		rc = bounded(v, m, "alpha", "measure.", 1e-9, 0.5, false);
	if (!rc)
		rc = bounded(v, m, "looks", "measure.", 1, 1000, true);
	if (!rc && json_object_get(m, "fresh_loads") &&
	    !json_is_boolean(json_object_get(m, "fresh_loads")))
		rc = bad(v, "type", "measure.fresh_loads", "'fresh_loads' must be true or false");
	if (!rc)
		rc = bounded(v, m, "builds", "measure.", 1, AW_AB_MAX_BUILDS, true);
	if (!rc)
		rc = code_shifts(v, m);
	return rc;
}

int aw_ab_validate(const json_t *doc, const struct aw_result_limits *lim, struct aw_verr *e)
{
	static const char *const keys[] = {
	    "schema",    "ab_id", "project",          "ref",         "subject", "aa",
	    "base",      "head",  "started_at",       "finished_at", "host",    "rounds",
	    "aa_rounds", "agent", "reference_kernel", "cells",       "measure", NULL};
	struct abv v = {lim, e};
	const char *schema;
	json_t *cells, *c, *host;
	size_t i, j;
	int rc;

	memset(e, 0, sizeof(*e));
	if (!json_is_object(doc))
		return bad(&v, "type", "", "the document must be a JSON object");
	schema = json_string_value(json_object_get(doc, "schema"));
	if (!schema || strcmp(schema, AW_AB_SCHEMA))
		return bad(&v, "unsupported_schema", "schema",
		           "schema version '%.40s' is not supported (this side speaks %s)",
		           schema ? schema : "", AW_AB_SCHEMA);
	rc = only_keys(&v, doc, keys, "");
	if (!rc)
		rc = str(&v, doc, "ab_id", "", true, R_UUID);
	if (!rc)
		rc = str(&v, doc, "project", "", true, R_NAME);
	if (!rc)
		rc = str(&v, doc, "ref", "", false, R_REF);
	if (!rc)
		rc = str(&v, doc, "subject", "", true, R_NAME);
	if (!rc && !json_is_boolean(json_object_get(doc, "aa")))
		rc = bad(&v, json_object_get(doc, "aa") ? "type" : "required", "aa",
		         "'aa' must be true or false");
	if (!rc)
		rc = side(&v, doc, "base");
	if (!rc)
		rc = side(&v, doc, "head");
	if (!rc)
		rc = str(&v, doc, "started_at", "", true, R_TIME);
	if (!rc)
		rc = str(&v, doc, "finished_at", "", true, R_TIME);
	if (!rc)
		rc = str(&v, doc, "agent", "", false, R_ANY);
	if (!rc)
		rc = str(&v, doc, "reference_kernel", "", false, R_NAME);
	if (!rc)
		rc = count(&v, doc, "rounds", "", 1, AW_AB_MAX_ROUNDS, false);
	if (!rc)
		rc = count(&v, doc, "aa_rounds", "", 0, AW_AB_MAX_ROUNDS, false);
	if (!rc)
		rc = measure(&v, doc);
	if (rc)
		return rc;
	host = json_object_get(doc, "host");
	if (!json_is_object(host))
		return bad(&v, host ? "type" : "required", "host", "'host' must be an object");
	rc = str(&v, host, "name", "host.", true, R_NAME);
	if (!rc && !json_equal(json_object_get(doc, "base"), json_object_get(doc, "head")) &&
	    !json_is_true(json_object_get(doc, "aa")) &&
	    !strcmp(json_string_value(json_object_get(json_object_get(doc, "base"), "commit")),
	            json_string_value(json_object_get(json_object_get(doc, "head"), "commit"))))
		rc = bad(&v, "invalid", "head.commit",
		         "base and head are the same commit but 'aa' is false");
	if (rc)
		return rc;
	cells = json_object_get(doc, "cells");
	if (!json_is_array(cells))
		return bad(&v, cells ? "type" : "required", "cells", "'cells' must be an array");
	/* few cells (a subject's ops per CPU): the key check below is quadratic */
	if (json_array_size(cells) > AW_AB_MAX_CELLS || json_array_size(cells) > lim->max_cells)
		return bad(&v, "too_many", "cells", "more than %zu cells",
		           lim->max_cells < AW_AB_MAX_CELLS ? lim->max_cells : AW_AB_MAX_CELLS);
	json_array_foreach (cells, i, c) {
		rc = cell(&v, c, i);
		if (rc)
			return rc;
		for (j = 0; j < i; j++)
			if (!strcmp(json_string_value(json_object_get(c, "key")),
			            json_string_value(
			                json_object_get(json_array_get(cells, j), "key")))) {
				char at[64];

				snprintf(at, sizeof(at), "cells[%zu].key", i);
				return bad(&v, "duplicate", at, "cell key '%.64s' appears twice",
				           json_string_value(json_object_get(c, "key")));
			}
	}
	return 0;
}
