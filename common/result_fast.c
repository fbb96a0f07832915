/* The fast path of reading an uploaded result document: one pass over the text straight into
 * the model, with no JSON tree. It accepts only documents it can prove valid and fills the model
 * aw_result_from_json() would; anything else (an error, an unknown or repeated field, a string
 * with an escape or a byte outside printable ASCII, a number it cannot convert as jansson does)
 * makes it give up, and the caller's slow path (jansson, then aw_result_from_json()) decides and
 * words the error. tests/unit/test_common_result_fast.c and fuzz/fuzz_result_fast.c hold the two
 * paths to that. */
#include <errno.h>
#include <float.h>
#include <langinfo.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aw/result.h"
#include "result_internal.h"

#define NEST_MAX      32 /* deepest host or meta skipped over (jansson's own limit is 2048) */
#define NUM_TOKEN_MAX 64 /* longest number token handed to strtod */
#define META_MAX      65536

struct scan {
	const char *p, *end;
	const struct aw_result_limits *lim;
};

/* A string token as the text holds it. */
struct span {
	const char *s;
	size_t n;
};

static void skip_ws(struct scan *sc)
{
	while (sc->p < sc->end &&
	       (*sc->p == ' ' || *sc->p == '\n' || *sc->p == '\r' || *sc->p == '\t'))
		sc->p++;
}

/* The next byte after white space, not consumed; 0 at the end (a NUL byte is no token). */
static char peek(struct scan *sc)
{
	skip_ws(sc);
	return sc->p < sc->end ? *sc->p : '\0';
}

static bool eat(struct scan *sc, char ch)
{
	if (peek(sc) != ch)
		return false;
	sc->p++;
	return true;
}

/* Consumes the literal `w` (null, true, false); what follows is checked by the caller's next
 * token, as jansson's lexer does. */
static bool eat_word(struct scan *sc, const char *w)
{
	size_t n = strlen(w);

	skip_ws(sc);
	if ((size_t)(sc->end - sc->p) < n || memcmp(sc->p, w, n))
		return false;
	sc->p += n;
	return true;
}

/* A string token of printable ASCII without escapes. jansson would decode an escape and check
 * UTF-8; giving up on both spares this side from having to match it byte for byte. */
static bool read_token(struct scan *sc, struct span *out)
{
	const char *q;

	if (!eat(sc, '"'))
		return false;
	for (q = sc->p; q < sc->end && *q != '"'; q++)
		if ((unsigned char)*q < 0x20 || (unsigned char)*q > 0x7e || *q == '\\')
			return false;
	if (q == sc->end)
		return false;
	out->s = sc->p;
	out->n = (size_t)(q - sc->p);
	sc->p = q + 1;
	return true;
}

/* A string value: a token no longer than the limit (the slow path checks that of every string
 * field before its shape). */
static bool read_string(struct scan *sc, struct span *out)
{
	return read_token(sc, out) && out->n <= sc->lim->max_string;
}

static bool span_is(const struct span *t, const char *s)
{
	return t->n == strlen(s) && !memcmp(t->s, s, t->n);
}

/* A string field under `rule`, or null (left NULL): a copy in *out, which must be NULL. */
static bool take_str(struct scan *sc, enum aw_str_rule rule, char **out)
{
	struct span t;
	char *s;

	if (eat_word(sc, "null"))
		return true;
	if (!read_string(sc, &t))
		return false;
	s = malloc(t.n + 1);
	if (!s)
		return false;
	memcpy(s, t.s, t.n);
	s[t.n] = '\0';
	if (!aw_result_str_valid(s, rule)) {
		free(s);
		return false;
	}
	*out = s;
	return true;
}

/* A string field copied into buf[size] (run_id, times, trigger); null is refused, these are
 * all required. */
static bool take_fixed(struct scan *sc, enum aw_str_rule rule, char *buf, size_t size)
{
	struct span t;

	if (!read_string(sc, &t) || t.n >= size)
		return false;
	memcpy(buf, t.s, t.n);
	buf[t.n] = '\0';
	return aw_result_str_valid(buf, rule);
}

/* ---- numbers ---- */

struct num {
	bool is_int; /* jansson's JSON_INTEGER: no fraction, no exponent */
	int64_t i;
	double d;
};

#if FLT_EVAL_METHOD == 0
/* Every power of ten a double holds exactly. */
static const double exact_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
#define CLINGER_DIGITS 15
#define CLINGER_POW    22
#endif

static bool is_digit(const char *p, const char *end)
{
	return p < end && *p >= '0' && *p <= '9';
}

/* The token [start, end) as strtod reads it, what jansson does with a real: gives up where
 * jansson refuses the number (an overflow) or where this locale's decimal point is not '.'
 * (jansson would swap it in; nothing in atomwatch calls setlocale, but a library might). */
static bool strtod_token(const char *start, const char *end, double *out)
{
	char buf[NUM_TOKEN_MAX + 1], *stop;
	size_t n = (size_t)(end - start);
	double d;

	if (n > NUM_TOKEN_MAX || strcmp(nl_langinfo(RADIXCHAR), "."))
		return false;
	memcpy(buf, start, n);
	buf[n] = '\0';
	errno = 0;
	d = strtod(buf, &stop);
	if (stop != buf + n || ((d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE))
		return false;
	*out = d;
	return true;
}

/* A number token, with jansson's grammar and values: an integer as strtoll reads it (up to 18
 * digits: more could overflow, which jansson refuses), a real correctly rounded as strtod reads
 * it. Most reals (10 significant digits, as agents write them) take Clinger's exact path: a
 * mantissa of at most 15 digits and a power of ten of at most 22 are both exact doubles, so one
 * multiply or divide rounds once, correctly; the rest go to strtod. */
static bool read_number(struct scan *sc, struct num *out)
{
	const char *p, *start, *end = sc->end;
	bool neg = false, exp_neg = false;
	uint64_t mant = 0;
	int digits = 0, frac = 0, exp = 0;

	skip_ws(sc);
	p = start = sc->p;
	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	if (!is_digit(p, end))
		return false;
		/* significant digits: leading zeros are not, and past 19 the mantissa is not exact
		 * (strtod reads those) */
#define DIGIT(ch)                                                          \
	do {                                                               \
		if (digits || (ch) != '0') {                               \
			if (digits < 19)                                   \
				mant = mant * 10 + (uint64_t)((ch) - '0'); \
			digits++;                                          \
		}                                                          \
	} while (0)
	if (*p == '0') {
		p++;
		if (is_digit(p, end))
			return false; /* a leading zero */
	} else {
		for (; is_digit(p, end); p++)
			DIGIT(*p);
	}
	out->is_int = true;
	if (p < end && *p == '.') {
		out->is_int = false;
		if (!is_digit(++p, end))
			return false;
		for (; is_digit(p, end); p++, frac++)
			DIGIT(*p);
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		out->is_int = false;
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			exp_neg = *p++ == '-';
		if (!is_digit(p, end))
			return false;
		for (; is_digit(p, end); p++)
			if (exp < 100000) /* far past any double; only strtod sees such a token */
				exp = exp * 10 + (*p - '0');
	}
#undef DIGIT
	sc->p = p;
	if (out->is_int) {
		if (digits > 18)
			return false;
		out->i = neg ? -(int64_t)mant : (int64_t)mant;
		return true;
	}
	if (!digits) {
		out->d = neg ? -0.0 : 0.0;
		return true;
	}
#if FLT_EVAL_METHOD == 0
	if (frac <= 100000) {
		int e10 = (exp_neg ? -exp : exp) - frac;

		if (digits <= CLINGER_DIGITS && e10 >= -CLINGER_POW && e10 <= CLINGER_POW) {
			double d = (double)mant;

			d = e10 >= 0 ? d * exact_pow10[e10] : d / exact_pow10[-e10];
			out->d = neg ? -d : d;
			return true;
		}
	}
#endif
	return strtod_token(start, p, &out->d);
}

/* A statistic: a finite non-negative number, or null (*out untouched: NAN). */
static bool read_stat(struct scan *sc, double *out)
{
	struct num x;
	double d;

	if (eat_word(sc, "null"))
		return true;
	if (!read_number(sc, &x))
		return false;
	d = x.is_int ? (double)x.i : x.d; /* as json_number_value() */
	if (!isfinite(d) || d < 0)
		return false;
	*out = d;
	return true;
}

/* An integer in [lo, hi], or null (*present false, *out untouched). */
static bool read_int(struct scan *sc, int64_t lo, int64_t hi, int64_t *out, bool *present)
{
	struct num x;

	*present = false;
	if (eat_word(sc, "null"))
		return true;
	if (!read_number(sc, &x) || !x.is_int || x.i < lo || x.i > hi)
		return false;
	*out = x.i;
	*present = true;
	return true;
}

/* ---- objects ---- */

/* The index of key `k` in keys[n], or -1. Writers put the keys in one order, so the one after
 * the last found (*hint) is tried first. */
static int key_index(const struct span *k, const char *const *keys, int n, int *hint)
{
	if (*hint < n && span_is(k, keys[*hint]))
		return (*hint)++;
	for (int i = 0; i < n; i++) {
		if (span_is(k, keys[i])) {
			*hint = i + 1;
			return i;
		}
	}
	return -1;
}

/* The next member's key of an object whose '{' is read: its index in keys[n], not seen before
 * (jansson's JSON_REJECT_DUPLICATES; an unknown key is the slow path's to word). -1: give up. */
static int next_key(struct scan *sc, const char *const *keys, int n, unsigned *seen, int *hint)
{
	struct span k;
	int i;

	if (!read_token(sc, &k) || !eat(sc, ':'))
		return -1;
	i = key_index(&k, keys, n, hint);
	if (i < 0 || *seen & (1u << i))
		return -1;
	*seen |= 1u << i;
	return i;
}

/* After a member: true with *more when a ',' follows, true without it at the '}'. */
static bool member_end(struct scan *sc, bool *more)
{
	*more = eat(sc, ',');
	return *more || eat(sc, '}');
}

/* The object or array at sc->p as jansson parses it alone (host, meta): the span is found with
 * strings skipped as whole tokens, so a bracket in one does not count; what the span holds is
 * jansson's to judge. A value jansson accepts from the span is the one it reads in place, since
 * no JSON value is the prefix of another. */
static json_t *load_span(struct scan *sc)
{
	const char *p = sc->p, *start = sc->p;
	int depth = 0;

	for (; p < sc->end; p++) {
		if (*p == '"') {
			for (p++; p < sc->end && *p != '"'; p++)
				if (*p == '\\')
					p++;
			if (p >= sc->end)
				return NULL;
		} else if (*p == '{' || *p == '[') {
			if (++depth > NEST_MAX)
				return NULL;
		} else if (*p == '}' || *p == ']') {
			if (--depth == 0) {
				sc->p = p + 1;
				return json_loadb(start, (size_t)(p + 1 - start),
				                  JSON_REJECT_DUPLICATES, NULL);
			}
		}
	}
	return NULL;
}

/* ---- cells ---- */

enum cell_field {
	CF_KEY,
	CF_OP,
	CF_READER,
	CF_SUBJECT,
	CF_KERNEL,
	CF_PLACEMENT,
	CF_CPU,
	CF_CONTENDER_CPU,
	CF_C,
	CF_D,
	CF_UNIT,
	CF_N,
	CF_BATCH,
	CF_MIN,
	CF_P50,
	CF_P95,
	CF_P99,
	CF_MAX,
	CF_MEAN,
	CF_STDDEV,
	CF_CI_LO,
	CF_CI_HI,
	CF_BASELINE_NS,
	CF_BELOW_RESOLUTION,
	CF_STATUS,
	CF_REASON,
	CF_COUNT
};

/* In the order aw_cell_to_json() writes them. */
static const char *const cell_fields[CF_COUNT] = {
    "key",    "op",        "reader",      "subject",
    "kernel", "placement", "cpu",         "contender_cpu",
    "c",      "d",         "unit",        "n",
    "batch",  "min",       "p50",         "p95",
    "p99",    "max",       "mean",        "stddev",
    "ci_lo",  "ci_hi",     "baseline_ns", "below_resolution",
    "status", "reason"};

static double *cell_stat(struct aw_cell *c, int f)
{
	double *const stats[] = {&c->min,  &c->p50,    &c->p95,   &c->p99,   &c->max,
	                         &c->mean, &c->stddev, &c->ci_lo, &c->ci_hi, &c->baseline_ns};

	return stats[f - CF_MIN];
}

/* The rules validate_cell() in result.c applies once every field is read. */
static bool cell_valid(const struct aw_cell *c, unsigned seen, bool has_n)
{
	const double order[] = {c->min, c->p50, c->p95, c->p99, c->max};
	int last = -1;

	if (!c->key || !c->op || !(seen & (1u << CF_UNIT)) || !(seen & (1u << CF_STATUS)))
		return false;
	if (c->status != AW_CELL_OK && !c->reason)
		return false;
	if (c->status == AW_CELL_OK && (!has_n || c->n < 1 || isnan(c->p50)))
		return false;
	for (int i = 0; i < 5; i++) {
		if (isnan(order[i]))
			continue;
		if (last >= 0 && order[i] < order[last])
			return false;
		last = i;
	}
	if (!isnan(c->ci_lo) && !isnan(c->p50) && c->ci_lo > c->p50)
		return false;
	if (!isnan(c->ci_hi) && !isnan(c->p50) && c->ci_hi < c->p50)
		return false;
	return true;
}

/* One cell object into c (fresh from aw_result_add_cell()). */
static bool read_cell(struct scan *sc, struct aw_cell *c)
{
	unsigned seen = 0;
	int hint = 0;
	bool has_n = false, present, more;
	struct span t;
	int64_t x;

	if (!eat(sc, '{'))
		return false;
	if (eat(sc, '}'))
		return false; /* key, op, unit and status are required */
	do {
		int f = next_key(sc, cell_fields, CF_COUNT, &seen, &hint);
		bool ok;

		switch (f) {
		case CF_KEY:
			ok = take_str(sc, AW_STR_ANY, &c->key);
			break;
		case CF_OP:
			ok = take_str(sc, AW_STR_NAME, &c->op);
			break;
		case CF_READER:
			ok = take_str(sc, AW_STR_NAME, &c->reader);
			break;
		case CF_SUBJECT:
			ok = take_str(sc, AW_STR_NAME, &c->subject);
			break;
		case CF_KERNEL:
			ok = take_str(sc, AW_STR_NAME, &c->kernel);
			break;
		case CF_PLACEMENT:
			ok = take_str(sc, AW_STR_NAME, &c->placement) &&
			     (!c->placement || !strcmp(c->placement, "near") ||
			      !strcmp(c->placement, "far"));
			break;
		case CF_CPU:
		case CF_CONTENDER_CPU:
			ok = read_int(sc, 0, 65535, &x, &present);
			if (ok && present)
				*(f == CF_CPU ? &c->cpu : &c->contender_cpu) = (int)x;
			break;
		case CF_C:
			ok = read_int(sc, 0, INT64_C(1) << 40, &c->c, &present);
			break;
		case CF_D:
			ok = read_int(sc, 0, INT64_C(1) << 40, &c->d, &present);
			break;
		case CF_UNIT:
			ok = read_string(sc, &t) && span_is(&t, "ns");
			break;
		case CF_N:
			ok = read_int(sc, 0, INT64_C(1) << 40, &x, &has_n);
			if (ok && has_n)
				c->n = (uint64_t)x;
			break;
		case CF_BATCH:
			ok = read_int(sc, 0, INT64_C(1) << 50, &x, &present);
			if (ok && present)
				c->batch = (uint64_t)x;
			break;
		case CF_MIN:
		case CF_P50:
		case CF_P95:
		case CF_P99:
		case CF_MAX:
		case CF_MEAN:
		case CF_STDDEV:
		case CF_CI_LO:
		case CF_CI_HI:
		case CF_BASELINE_NS:
			ok = read_stat(sc, cell_stat(c, f));
			break;
		case CF_BELOW_RESOLUTION:
			c->below_resolution = eat_word(sc, "true");
			ok = c->below_resolution || eat_word(sc, "false") || eat_word(sc, "null");
			break;
		case CF_STATUS:
			ok = read_string(sc, &t);
			if (ok && span_is(&t, "ok"))
				c->status = AW_CELL_OK;
			else if (ok && span_is(&t, "skipped"))
				c->status = AW_CELL_SKIPPED;
			else if (ok && span_is(&t, "failed"))
				c->status = AW_CELL_FAILED;
			else
				ok = false;
			break;
		case CF_REASON:
			ok = take_str(sc, AW_STR_ANY, &c->reason);
			break;
		default:
			ok = false;
		}
		if (!ok || !member_end(sc, &more))
			return false;
	} while (more);
	return cell_valid(c, seen, has_n);
}

static int compare_keys(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether every cell's key differs from the others' (the slow path keeps a set of them). */
static bool keys_unique(const struct aw_result *r)
{
	const char **keys;
	bool unique = true;

	if (r->n_cells < 2)
		return true;
	keys = malloc(r->n_cells * sizeof(*keys));
	if (!keys)
		return false;
	for (size_t i = 0; i < r->n_cells; i++)
		keys[i] = r->cells[i].key;
	qsort(keys, r->n_cells, sizeof(*keys), compare_keys);
	for (size_t i = 1; unique && i < r->n_cells; i++)
		unique = strcmp(keys[i - 1], keys[i]) != 0;
	free(keys);
	return unique;
}

static bool read_cells(struct scan *sc, struct aw_result *r)
{
	if (!eat(sc, '['))
		return false;
	if (eat(sc, ']'))
		return true;
	do {
		struct aw_cell *c;

		if (r->n_cells >= sc->lim->max_cells)
			return false;
		c = aw_result_add_cell(r);
		if (!c || !read_cell(sc, c))
			return false;
	} while (eat(sc, ','));
	return eat(sc, ']');
}

/* ---- reference series ---- */

/* One series as read: its values wait for the cells, which may come later in the text. */
struct series {
	int kernel; /* enum aw_ref; -1 until read */
	double *values;
	size_t n, cap;
};

static const char *const series_fields[] = {"kernel", "unit", "values"};

static bool read_values(struct scan *sc, struct series *s)
{
	if (!eat(sc, '['))
		return false;
	if (eat(sc, ']'))
		return true;
	do {
		struct num x;
		double d = NAN;

		if (!eat_word(sc, "null")) {
			if (!read_number(sc, &x))
				return false;
			d = x.is_int ? (double)x.i : x.d;
			if (!isfinite(d) || d <= 0)
				return false;
		}
		/* more values than cells allowed can match no document's cells */
		if (s->n >= sc->lim->max_cells ||
		    aw_array_reserve(&s->values, s->n, &s->cap, sizeof(*s->values), 64))
			return false;
		s->values[s->n++] = d;
	} while (eat(sc, ','));
	return eat(sc, ']');
}

/* A series object {kernel, unit, values}, its kernel one this side knows and not in *kernels
 * yet (added to it). */
static bool read_series(struct scan *sc, struct series *s, unsigned *kernels)
{
	unsigned seen = 0;
	int hint = 0;
	bool more;
	struct span t;

	s->kernel = -1;
	if (!eat(sc, '{') || eat(sc, '}'))
		return false;
	do {
		bool ok;

		switch (next_key(sc, series_fields, 3, &seen, &hint)) {
		case 0:
			ok = read_string(sc, &t);
			for (int k = 0; ok && k < AW_REF_COUNT && s->kernel < 0; k++)
				if (span_is(&t, aw_ref_name((enum aw_ref)k)))
					s->kernel = k;
			ok = ok && s->kernel >= 0 && !(*kernels & (1u << s->kernel));
			if (ok)
				*kernels |= 1u << s->kernel;
			break;
		case 1:
			ok = read_string(sc, &t) && span_is(&t, "ns");
			break;
		case 2:
			ok = read_values(sc, s);
			break;
		default:
			ok = false;
		}
		if (!ok || !member_end(sc, &more))
			return false;
	} while (more);
	return seen == 7;
}

/* ---- the document ---- */

enum top_field {
	TF_SCHEMA,
	TF_RUN_ID,
	TF_PROJECT,
	TF_COMMIT,
	TF_REF,
	TF_COMMIT_TIME,
	TF_TRIGGER,
	TF_STARTED_AT,
	TF_FINISHED_AT,
	TF_HOST,
	TF_MATRIX,
	TF_META,
	TF_REFERENCE,
	TF_REFERENCES,
	TF_CONFIRMATION_OF,
	TF_CONFIRM,
	TF_CELLS,
	TF_COUNT
};

/* In the order aw_result_to_json() writes them. */
static const char *const top_fields[TF_COUNT] = {
    "schema",    "run_id",     "project",         "commit",  "ref",    "commit_time",
    "trigger",   "started_at", "finished_at",     "host",    "matrix", "meta",
    "reference", "references", "confirmation_of", "confirm", "cells"};

static const char *const matrix_fields[] = {"name", "version", "hash", "profile"};

static bool read_matrix(struct scan *sc, struct aw_result *r)
{
	unsigned seen = 0;
	int hint = 0;
	bool has_version = false, more;

	if (!eat(sc, '{') || eat(sc, '}'))
		return false;
	do {
		bool ok;

		switch (next_key(sc, matrix_fields, 4, &seen, &hint)) {
		case 0:
			ok = take_str(sc, AW_STR_NAME, &r->matrix_name);
			break;
		case 1:
			ok = read_int(sc, 1, INT32_MAX, &r->matrix_version, &has_version);
			break;
		case 2:
			ok = take_str(sc, AW_STR_HEX, &r->matrix_hash);
			break;
		case 3:
			ok = take_str(sc, AW_STR_NAME, &r->matrix_profile);
			break;
		default:
			ok = false;
		}
		if (!ok || !member_end(sc, &more))
			return false;
	} while (more);
	return r->matrix_name && has_version && r->matrix_hash;
}

static bool read_meta(struct scan *sc, struct aw_result *r)
{
	if (eat_word(sc, "null"))
		return true;
	if (peek(sc) != '{')
		return false;
	r->meta = load_span(sc);
	return r->meta && json_dumpb(r->meta, NULL, 0, JSON_COMPACT) <= META_MAX;
}

static bool read_host(struct scan *sc, struct aw_result *r)
{
	if (peek(sc) != '{')
		return false;
	r->host = load_span(sc);
	return r->host && aw_result_host_valid(r->host, sc->lim);
}

/* What the members of the document leave for the checks across them. */
struct doc {
	unsigned seen;
	bool has_schema, has_trigger, has_confirm;
	int64_t started, finished;
	struct series series[AW_REF_COUNT];
	size_t n_series;
	unsigned kernels;
	bool reference; /* the older "reference" object (not null), not "references" */
};

static bool read_member(struct scan *sc, struct aw_result *r, struct doc *d, int f)
{
	char buf[16];
	struct span t;
	bool present;

	switch (f) {
	case TF_SCHEMA:
		return read_string(sc, &t) && span_is(&t, AW_RESULT_SCHEMA);
	case TF_RUN_ID:
		return take_fixed(sc, AW_STR_UUID, r->run_id, sizeof(r->run_id));
	case TF_PROJECT:
		return take_str(sc, AW_STR_NAME, &r->project);
	case TF_COMMIT:
		return take_str(sc, AW_STR_COMMIT, &r->commit);
	case TF_REF:
		return take_str(sc, AW_STR_REF, &r->ref);
	case TF_COMMIT_TIME:
		return take_str(sc, AW_STR_TIME, &r->commit_time);
	case TF_TRIGGER:
		return take_fixed(sc, AW_STR_ANY, buf, sizeof(buf)) &&
		       !aw_trigger_parse(buf, &r->trigger);
	case TF_STARTED_AT:
		/* the slow path refuses a time of AW_TIME_LEN - 1 characters or more */
		return take_fixed(sc, AW_STR_TIME, r->started_at, AW_TIME_LEN - 1) &&
		       !aw_time_parse(r->started_at, &d->started);
	case TF_FINISHED_AT:
		return take_fixed(sc, AW_STR_TIME, r->finished_at, AW_TIME_LEN - 1) &&
		       !aw_time_parse(r->finished_at, &d->finished);
	case TF_HOST:
		return read_host(sc, r);
	case TF_MATRIX:
		return read_matrix(sc, r);
	case TF_META:
		return read_meta(sc, r);
	case TF_REFERENCE:
		if (eat_word(sc, "null"))
			return true;
		if (d->n_series)
			return false; /* beside a "references" that is not null */
		d->reference = true;
		d->n_series = 1;
		return read_series(sc, &d->series[0], &d->kernels) &&
		       d->series[0].kernel == AW_REF_MULCHAIN;
	case TF_REFERENCES:
		if (eat_word(sc, "null"))
			return true;
		if (d->reference || !eat(sc, '[') || eat(sc, ']'))
			return false; /* an empty family is refused */
		do {
			/* a fifth series repeats a kernel */
			if (d->n_series == AW_REF_COUNT ||
			    !read_series(sc, &d->series[d->n_series++], &d->kernels))
				return false;
		} while (eat(sc, ','));
		return eat(sc, ']');
	case TF_CONFIRMATION_OF:
		return take_str(sc, AW_STR_UUID, &r->confirmation_of);
	case TF_CONFIRM:
		return read_int(sc, 1, AW_RESULT_MAX_CONFIRM, &r->confirm, &present);
	case TF_CELLS:
		return read_cells(sc, r);
	}
	return false;
}

/* The checks across members, and the reference values into the cells. */
static bool finish(struct aw_result *r, struct doc *d)
{
	const unsigned required = 1u << TF_SCHEMA | 1u << TF_RUN_ID | 1u << TF_TRIGGER |
	                          1u << TF_STARTED_AT | 1u << TF_FINISHED_AT | 1u << TF_HOST |
	                          1u << TF_MATRIX | 1u << TF_CELLS;

	if ((d->seen & required) != required || !r->project || !r->ref)
		return false;
	if (d->finished < d->started)
		return false;
	if (r->confirmation_of && (!strcmp(r->confirmation_of, r->run_id) || r->confirm))
		return false;
	if (!keys_unique(r))
		return false;
	for (size_t s = 0; s < d->n_series; s++) {
		const struct series *se = &d->series[s];

		if (se->n != r->n_cells)
			return false;
		for (size_t i = 0; i < se->n; i++)
			r->cells[i].ref_ns[se->kernel] = se->values[i];
	}
	if (d->n_series && aw_result_set_references(r, d->kernels))
		return false;
	if (d->reference)
		r->references = 0; /* mulchain-v1 alone, as written before the family */
	return true;
}

struct aw_result *aw_result_parse_fast(const char *text, size_t len,
                                       const struct aw_result_limits *lim)
{
	const struct aw_result_limits deflim = AW_RESULT_LIMITS_DEFAULT;
	struct scan sc = {.p = text, .end = text + len, .lim = lim ? lim : &deflim};
	struct aw_result *r = calloc(1, sizeof(*r));
	struct doc d = {0};
	int hint = 0;
	bool ok = r && eat(&sc, '{') && !eat(&sc, '}'), more = false;

	while (ok) {
		int f = next_key(&sc, top_fields, TF_COUNT, &d.seen, &hint);

		ok = f >= 0 && read_member(&sc, r, &d, f) && member_end(&sc, &more);
		if (!more)
			break;
	}
	if (ok) {
		skip_ws(&sc);
		ok = sc.p == sc.end && finish(r, &d);
	}
	for (size_t s = 0; s < AW_REF_COUNT; s++)
		free(d.series[s].values);
	if (!ok)
		aw_result_free(&r);
	return r;
}
