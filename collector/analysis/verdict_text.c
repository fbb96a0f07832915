/* The verdict document read straight from its text (verdict_doc.h, aw_host_verdict_parse_text):
 * what json_loads() and aw_host_verdict_parse() give, without building a jansson tree first;
 * a page that shows a 300-cell verdict spent half its time in that tree. The text is checked
 * once against JSON's grammar as jansson 2.14 reads it (its strings, numbers, depth and
 * trailing text), then read with helpers that may assume it is valid. */
#include "verdict_doc.h"

#include "aw/util.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH_MAX 2048 /* jansson's JSON_PARSER_DEFAULT_MAX_DEPTH */
#define KEY_MAX   32   /* a field name longer than this is none this reader looks for */

/* ---- checking the text ---- */

/* Where each array and object of the text ends, in the order they open: reading then steps
 * over one without scanning it again (a cell's bytes would be scanned once per level it is
 * nested in). */
struct span {
	uint32_t open, close; /* offsets of its '{' or '[' and of its '}' or ']' */
};

struct spans {
	const char *text;
	struct span *v;
	size_t n, cap;
	int rc; /* -ENOMEM once a span could not be kept */
};

static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static int hex4(const char *p)
{
	int v = 0;

	for (int i = 0; i < 4; i++) {
		int c = p[i], d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/* The text after the string at p ('"'), or NULL when it is not one jansson takes: no control
 * character, known escapes, \u pairs for surrogates, no \u0000, valid UTF-8. */
static const char *check_string(const char *p)
{
	const unsigned char *u = (const unsigned char *)p + 1;

	for (;;) {
		int v;

		if (*u == '"')
			return (const char *)u + 1;
		if (*u < 0x20) /* the terminator too */
			return NULL;
		if (*u >= 0x80) {
			size_t n = aw_utf8_len(u);

			if (!n)
				return NULL;
			u += n;
			continue;
		}
		if (*u != '\\') {
			u++;
			continue;
		}
		u++;
		if (*u != 'u') {
			if (!*u || !strchr("\"\\/bfnrt", *u))
				return NULL;
			u++;
			continue;
		}
		v = hex4((const char *)u + 1);
		u += 5;
		if (v == 0 || (v >= 0xDC00 && v <= 0xDFFF) || v < 0)
			return NULL;
		if (v >= 0xD800 && v <= 0xDBFF) {
			int low = u[0] == '\\' && u[1] == 'u' ? hex4((const char *)u + 2) : -1;

			if (low < 0xDC00 || low > 0xDFFF)
				return NULL;
			u += 6;
		}
	}
}

static const char *digits(const char *p)
{
	while (*p >= '0' && *p <= '9')
		p++;
	return p;
}

/* The text after the number at p, or NULL when jansson refuses it (its grammar; an integer
 * outside long long; a real that overflows). */
static const char *check_number(const char *p)
{
	const char *s = p, *end;
	bool real = false;

	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		p = digits(p);
	else
		return NULL;
	if (*p >= '0' && *p <= '9')
		return NULL; /* a leading zero */
	if (*p == '.') {
		real = true;
		if (*++p < '0' || *p > '9')
			return NULL;
		p = digits(p);
	}
	if (*p == 'e' || *p == 'E') {
		real = true;
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (*p < '0' || *p > '9')
			return NULL;
		p = digits(p);
	}
	/* only a number this long or with an exponent can overflow: strtod() is slow */
	if ((size_t)(p - s) < 19 && !memchr(s, 'e', (size_t)(p - s)) &&
	    !memchr(s, 'E', (size_t)(p - s)))
		return p;
	errno = 0;
	if (real) {
		double d = strtod(s, (char **)&end);

		if (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL))
			return NULL;
	} else {
		(void)strtoll(s, (char **)&end, 10);
		if (errno == ERANGE)
			return NULL;
	}
	return p;
}

/* The text after the value at p (whitespace before it skipped), or NULL when it is not valid. */
static const char *check_value(struct spans *sp, const char *p, int depth)
{
	if (depth >= DEPTH_MAX)
		return NULL; /* jansson counts every value, not only arrays and objects */
	p = ws(p);
	switch (*p) {
	case '"':
		return check_string(p);
	case '{':
	case '[': {
		const char close = *p == '{' ? '}' : ']';
		size_t at = sp->n;

		if (sp->n == sp->cap) {
			size_t cap = sp->cap ? 2 * sp->cap : 256;
			struct span *v = realloc(sp->v, cap * sizeof(*v));

			if (!v) {
				sp->rc = -ENOMEM;
				return NULL;
			}
			sp->v = v;
			sp->cap = cap;
		}
		sp->v[sp->n++].open = (uint32_t)(p - sp->text);
		p = ws(p + 1);
		while (*p != close) {
			if (close == '}') {
				if (*p != '"' || !(p = check_string(p)))
					return NULL;
				p = ws(p);
				if (*p++ != ':')
					return NULL;
			}
			if (!(p = check_value(sp, p, depth + 1)))
				return NULL;
			p = ws(p);
			if (*p == close)
				break;
			if (*p != ',')
				return NULL;
			p = ws(p + 1);
			if (*p == close)
				return NULL;
		}
		sp->v[at].close = (uint32_t)(p - sp->text);
		return p + 1;
	}
	case 't':
		return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f':
		return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n':
		return strncmp(p, "null", 4) ? NULL : p + 4;
	default:
		return *p == '-' || (*p >= '0' && *p <= '9') ? check_number(p) : NULL;
	}
}

/* Whether json_loads(text, 0) takes the text: an object or array and nothing after it; its
 * spans into *sp. Returns 0, -EINVAL or -ENOMEM. */
static int check_text(const char *text, struct spans *sp)
{
	const char *p = ws(text);

	if (strlen(text) >= UINT32_MAX)
		return -EINVAL; /* (no verdict is 4 GB) */
	sp->text = text;
	if (*p != '{' && *p != '[')
		return -EINVAL;
	p = check_value(sp, p, 0);
	if (sp->rc)
		return sp->rc;
	return p && !*ws(p) ? 0 : -EINVAL;
}

/* ---- reading checked text ---- */

/* What skip() stops at: a string's quote or backslash, a bracket; a number's or literal's end. */
enum {
	PLAIN,
	QUOTE,
	ESCAPE,
	OPEN,
	CLOSE
};
static const unsigned char stop[256] = {
    ['"'] = QUOTE, ['\\'] = ESCAPE, ['{'] = OPEN, ['['] = OPEN, ['}'] = CLOSE, [']'] = CLOSE};

static bool ends_scalar(char c)
{
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' ||
	       c == '\r' || !c;
}

/* The text after the checked string at p ('"'). */
static const char *skip_string(const char *p)
{
	p++;
	for (;;) {
		while (stop[(unsigned char)*p] != QUOTE && stop[(unsigned char)*p] != ESCAPE)
			p++;
		if (*p == '"')
			return p + 1;
		p += 2; /* the backslash and the character it escapes */
	}
}

/* The text after the checked value at p. */
static const char *skip(const struct spans *sp, const char *p)
{
	size_t lo = 0, hi;
	uint32_t at;

	p = ws(p);
	if (*p == '"')
		return skip_string(p);
	if (*p != '{' && *p != '[') { /* a number or a literal */
		while (!ends_scalar(*p))
			p++;
		return p;
	}
	at = (uint32_t)(p - sp->text);
	hi = sp->n;
	while (lo + 1 < hi) { /* the spans are in the order of their opening */
		size_t mid = lo + (hi - lo) / 2;

		if (sp->v[mid].open <= at)
			lo = mid;
		else
			hi = mid;
	}
	return sp->text + sp->v[lo].close + 1;
}

/* The character at *p (checked text, in a string) as UTF-8 into seq; moves *p past it.
 * Returns its bytes (1-4). */
static size_t one_char(const char **p, char seq[4])
{
	const char *q = *p;
	unsigned v;

	if (*q != '\\') {
		seq[0] = *q;
		*p = q + 1;
		return 1;
	}
	*p = q + 2;
	switch (q[1]) {
	case 'b':
		seq[0] = '\b';
		return 1;
	case 'f':
		seq[0] = '\f';
		return 1;
	case 'n':
		seq[0] = '\n';
		return 1;
	case 'r':
		seq[0] = '\r';
		return 1;
	case 't':
		seq[0] = '\t';
		return 1;
	case 'u':
		break;
	default: /* '"', '\\', '/' */
		seq[0] = q[1];
		return 1;
	}
	v = (unsigned)hex4(q + 2);
	*p = q + 6;
	if (v >= 0xD800 && v <= 0xDBFF) { /* a checked pair */
		v = 0x10000 + ((v - 0xD800) << 10) + ((unsigned)hex4(q + 8) - 0xDC00);
		*p = q + 12;
	}
	if (v < 0x80) {
		seq[0] = (char)v;
		return 1;
	}
	if (v < 0x800) {
		seq[0] = (char)(0xC0 | (v >> 6));
		seq[1] = (char)(0x80 | (v & 0x3F));
		return 2;
	}
	if (v < 0x10000) {
		seq[0] = (char)(0xE0 | (v >> 12));
		seq[1] = (char)(0x80 | ((v >> 6) & 0x3F));
		seq[2] = (char)(0x80 | (v & 0x3F));
		return 3;
	}
	seq[0] = (char)(0xF0 | (v >> 18));
	seq[1] = (char)(0x80 | ((v >> 12) & 0x3F));
	seq[2] = (char)(0x80 | ((v >> 6) & 0x3F));
	seq[3] = (char)(0x80 | (v & 0x3F));
	return 4;
}

/* Decodes the checked string at p ('"') into out: at most size - 1 bytes and a terminator
 * (size 0: only measures). Returns its whole length. */
static size_t decode(const char *p, char *out, size_t size)
{
	size_t n = 0;

	for (p++; *p != '"';) {
		char seq[4];
		size_t k = one_char(&p, seq);

		for (size_t i = 0; i < k; i++, n++)
			if (n + 1 < size)
				out[n] = seq[i];
	}
	if (size)
		out[n < size ? n : size - 1] = '\0';
	return n;
}

/* A malloc'd copy of the checked string at p; NULL when out of memory. */
static char *string_dup(const char *p)
{
	size_t n = decode(p, NULL, 0);
	char *s = malloc(n + 1);

	if (s)
		decode(p, s, n + 1);
	return s;
}

/* The members of one checked object, in their order: each name (decoded when short enough to
 * be one looked for) and where its value starts. */
struct member {
	char key[KEY_MAX + 1]; /* "" when longer than KEY_MAX */
	const char *name;      /* the name as written ('"') */
	const char *value;
};

struct members {
	struct member *v;
	size_t n, cap;
};

/* Fills m with the members of the checked object at p ('{', whitespace before it skipped);
 * m's memory is reused. Returns 0 or -ENOMEM. */
static int members_read(const struct spans *sp, const char *p, struct members *m)
{
	m->n = 0;
	p = ws(p) + 1;
	for (p = ws(p); *p == '"';) {
		struct member *x;

		if (m->n == m->cap) {
			size_t cap = m->cap ? 2 * m->cap : 32;
			struct member *v = realloc(m->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			m->v = v;
			m->cap = cap;
		}
		x = &m->v[m->n++];
		x->name = p;
		if (decode(p, x->key, sizeof(x->key)) > KEY_MAX)
			x->key[0] = '\0';
		p = ws(skip(sp, p)) + 1; /* ':' */
		x->value = ws(p);
		p = ws(skip(sp, x->value));
		if (*p == ',')
			p = ws(p + 1);
	}
	return 0;
}

/* The value of `key` (the last one of that name, as jansson keeps it), or NULL. */
static const char *get(const struct members *m, const char *key)
{
	for (size_t i = m->n; i-- > 0;)
		if (!strcmp(m->v[i].key, key))
			return m->v[i].value;
	return NULL;
}

static bool is_number(const char *v)
{
	return v && (*v == '-' || (*v >= '0' && *v <= '9'));
}

static bool is_integer(const char *v)
{
	const char *end;

	if (!is_number(v))
		return false;
	for (end = v; !ends_scalar(*end); end++)
		;
	for (const char *p = v; p < end; p++)
		if (*p == '.' || *p == 'e' || *p == 'E')
			return false;
	return true;
}

static double num(const char *v)
{
	if (!is_number(v))
		return NAN;
	return is_integer(v) ? (double)strtoll(v, NULL, 10) : strtod(v, NULL);
}

/* get_size() of verdict_doc.c: a positive integer, else 0. */
static size_t size_of(const char *v)
{
	long long i = is_integer(v) ? strtoll(v, NULL, 10) : 0;

	return i > 0 ? (size_t)i : 0;
}

static bool is_true(const char *v)
{
	return v && *v == 't';
}

/* A string's verdict word, unknown for anything else. */
static enum aw_verdict verdict_of(const char *v)
{
	char word[KEY_MAX + 1];

	if (!v || *v != '"' || decode(v, word, sizeof(word)) > KEY_MAX)
		return aw_verdict_parse(NULL);
	return aw_verdict_parse(word);
}

struct reader {
	struct spans sp;
	struct members m[4]; /* one per level of the document: top, cell, metric, level */
	int rc;
};

/* get_str() of verdict_doc.c: a copy of an optional string field; another type is an error. */
static char *str_field(struct reader *rd, const char *v, bool required)
{
	char *s;

	if (rd->rc)
		return NULL;
	if (!v || *v == 'n') {
		if (required)
			rd->rc = -EINVAL;
		return NULL;
	}
	if (*v != '"') {
		rd->rc = -EINVAL;
		return NULL;
	}
	s = string_dup(v);
	if (!s)
		rd->rc = -ENOMEM;
	return s;
}

/* For each element e (its text) of the array at v, counting i; none when v is no array. */
#define EACH_ELEMENT(sp, v, i, e)                                                    \
	for (const char *e = (v) && *(v) == '[' ? ws((v) + 1) : "", *e##_end = NULL; \
	     *e && *e != ']' && (e##_end = ws(skip(sp, e)), true);                   \
	     e = *e##_end == ',' ? ws(e##_end + 1) : e##_end, (i)++)

static size_t array_size(const struct spans *sp, const char *v)
{
	size_t n = 0;

	EACH_ELEMENT(sp, v, n, e)
	{
		(void)e;
	}
	return n;
}

static void read_metric(struct reader *rd, const char *o, struct aw_metric_verdict *m)
{
	struct members *f = &rd->m[2], *lf = &rd->m[3];
	const char *levels, *ref, *d;
	size_t j = 0;

	memset(m, 0, sizeof(*m));
	m->decided_by = -1;
	m->ref_slope = m->ref_gain = NAN;
	if (!o || *o != '{' || rd->rc)
		return;
	if (members_read(&rd->sp, o, f)) {
		rd->rc = -ENOMEM;
		return;
	}
	levels = get(f, "levels");
	ref = get(f, "reference");
	d = get(f, "decided_by");
	m->verdict = verdict_of(get(f, "verdict"));
	m->baseline = num(get(f, "baseline"));
	m->head = num(get(f, "head"));
	m->change = num(get(f, "change"));
	m->change_lo = num(get(f, "change_lo"));
	m->change_hi = num(get(f, "change_hi"));
	m->change_ns = num(get(f, "change_ns"));
	m->absolute = is_true(get(f, "absolute"));
	m->noise = num(get(f, "noise"));
	m->pvalue = num(get(f, "pvalue"));
	m->qvalue = num(get(f, "qvalue"));
	m->threshold = num(get(f, "threshold"));
	m->window = size_of(get(f, "window"));
	m->head_n = size_of(get(f, "head_n"));
	m->agree_n = size_of(get(f, "agree_n"));
	m->bimodal = is_true(get(f, "bimodal"));
	m->dominant = size_of(get(f, "dominant"));
	if (is_integer(d)) {
		long long i = strtoll(d, NULL, 10);

		if (i >= 0 && i < AW_VERDICT_LEVELS)
			m->decided_by = (int)i;
	}
	m->note = str_field(rd, get(f, "note"), false);
	m->level_by = str_field(rd, get(f, "level_by"), false);
	if (ref && *ref == '{') {
		struct members *rf = lf; /* (free until the levels) */

		if (members_read(&rd->sp, ref, rf)) {
			rd->rc = -ENOMEM;
			return;
		}
		m->reference = str_field(rd, get(rf, "kernel"), false);
		m->ref_slope = num(get(rf, "slope"));
		m->ref_gain = num(get(rf, "gain"));
		EACH_ELEMENT(&rd->sp, get(rf, "terms"), m->n_ref_terms, t)
		{
			if (m->n_ref_terms >= AW_VERDICT_REFS)
				break;
			m->ref_terms[m->n_ref_terms] = num(t);
		}
	}
	EACH_ELEMENT(&rd->sp, levels, j, l)
	{
		struct aw_level *x = &m->levels[j];
		bool obj = *l == '{';

		if (j >= AW_VERDICT_LEVELS)
			break;
		lf->n = 0;
		if (obj && members_read(&rd->sp, l, lf)) {
			rd->rc = -ENOMEM;
			return;
		}
		x->share = num(get(lf, "share"));
		x->base = num(get(lf, "base"));
		x->head = num(get(lf, "head"));
		x->change = num(get(lf, "change"));
		x->change_lo = num(get(lf, "change_lo"));
		x->change_hi = num(get(lf, "change_hi"));
		x->noise = num(get(lf, "noise"));
		x->pvalue = num(get(lf, "pvalue"));
		x->n_base = size_of(get(lf, "n_base"));
		x->n_head = size_of(get(lf, "n_head"));
		x->verdict = verdict_of(get(lf, "verdict"));
		m->n_levels = j + 1;
	}
	if (m->dominant >= m->n_levels)
		m->dominant = 0;
}

static void read_cell(struct reader *rd, const char *o, struct aw_cell_verdict *c)
{
	struct members *f = &rd->m[1];
	const char *cpu, *gate, *p50, *p99;

	if (members_read(&rd->sp, o, f)) {
		rd->rc = -ENOMEM;
		return;
	}
	cpu = get(f, "cpu");
	gate = get(f, "gate");
	p50 = get(f, "p50");
	p99 = get(f, "p99");
	c->key = str_field(rd, get(f, "key"), true);
	c->op = str_field(rd, get(f, "op"), false);
	c->reader = str_field(rd, get(f, "reader"), false);
	c->subject = str_field(rd, get(f, "subject"), false);
	c->cpu = is_integer(cpu) ? (int)strtoll(cpu, NULL, 10) : -1;
	c->verdict = verdict_of(get(f, "verdict"));
	c->n_head = size_of(get(f, "head_runs"));
	c->gate = AW_GATE_FAIL; /* a collector before gate levels */
	if (gate && *gate == '"') {
		char word[KEY_MAX + 1];

		if ((decode(gate, word, sizeof(word)) > KEY_MAX || aw_gate_parse(word, &c->gate)) &&
		    !rd->rc)
			rd->rc = -EINVAL;
	}
	read_metric(rd, p50, &c->p50);
	read_metric(rd, p99, &c->p99);
}

/* read_run() of verdict_doc.c; a name given twice keeps its first place and its last value,
 * as a jansson object does. */
static void read_run(struct reader *rd, const char *o, struct aw_run_state *r)
{
	struct members *f = &rd->m[1], *refs = &rd->m[2];
	const char *v;

	if (!o || *o != '{')
		return;
	if (members_read(&rd->sp, o, f)) {
		rd->rc = -ENOMEM;
		return;
	}
	r->disturbed = is_true(get(f, "disturbed"));
	v = get(f, "references");
	if (!v || *v != '{')
		return;
	if (members_read(&rd->sp, v, refs)) {
		rd->rc = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < refs->n && !rd->rc; i++) {
		char *name = string_dup(refs->v[i].name);
		double ratio = num(refs->v[i].value);
		size_t k = 0;

		if (!name) {
			rd->rc = -ENOMEM;
			break;
		}
		while (k < r->n && strcmp(r->kernel[k], name))
			k++;
		if (k < r->n) {
			r->ratio[k] = ratio;
			free(name);
		} else if (r->n < AW_VERDICT_REFS) {
			r->kernel[r->n] = name;
			r->ratio[r->n++] = ratio;
		} else {
			free(name); /* past the ones kept */
		}
	}
}

static void read_doc(struct reader *rd, const char *doc, struct aw_host_verdict *out)
{
	struct members *f = &rd->m[0];
	const char *cells, *heads, *runs, *counts;
	size_t i = 0, n;

	if (members_read(&rd->sp, doc, f)) {
		rd->rc = -ENOMEM;
		return;
	}
	out->host = str_field(rd, get(f, "host"), true);
	out->status = verdict_of(get(f, "status"));
	if (!rd->rc && !aw_verdict_is_status(out->status))
		rd->rc = -EINVAL;
	out->reason = str_field(rd, get(f, "reason"), false);
	out->host_changed = str_field(rd, get(f, "host_changed"), false);
	out->n_baseline_runs = size_of(get(f, "baseline_runs"));
	out->warnings = size_of(get(f, "warnings"));
	out->confirm_budget = (unsigned)size_of(get(f, "confirm_budget"));
	out->disturbed = is_true(get(f, "disturbed"));
	heads = get(f, "head_runs");
	runs = get(f, "runs");
	cells = get(f, "cells");
	counts = get(f, "counts");
	if ((heads && *heads != '[') || (cells && *cells != '[')) {
		rd->rc = rd->rc ? rd->rc : -EINVAL;
		return;
	}
	if (!rd->rc && counts && *counts == '{') {
		struct members *cf = &rd->m[1];

		if (members_read(&rd->sp, counts, cf)) {
			rd->rc = -ENOMEM;
			return;
		}
		for (int k = 0; k < AW_VERDICT_COUNT; k++) {
			const char *c = get(cf, aw_verdict_name((enum aw_verdict)k));

			if (aw_verdict_is_cell((enum aw_verdict)k) && is_integer(c))
				out->counts[k] = (size_t)strtoll(c, NULL, 10);
		}
	}
	n = array_size(&rd->sp, heads);
	if (!rd->rc && n) {
		out->head_runs = calloc(n, sizeof(char *));
		rd->rc = out->head_runs ? 0 : -ENOMEM;
		EACH_ELEMENT(&rd->sp, heads, i, v)
		{
			if (rd->rc)
				break;
			if (*v != '"') {
				rd->rc = -EINVAL;
				break;
			}
			out->head_runs[i] = string_dup(v);
			rd->rc = out->head_runs[i] ? 0 : -ENOMEM;
			out->n_head_runs = i + 1;
		}
	}
	n = array_size(&rd->sp, runs);
	if (!rd->rc && n) {
		out->runs = calloc(n, sizeof(*out->runs));
		rd->rc = out->runs ? 0 : -ENOMEM;
		i = 0;
		EACH_ELEMENT(&rd->sp, runs, i, v)
		{
			if (rd->rc)
				break;
			read_run(rd, v, &out->runs[i]);
			out->n_runs = i + 1;
			out->disturbed = out->disturbed || out->runs[i].disturbed;
		}
	}
	n = array_size(&rd->sp, cells);
	if (!rd->rc && n) {
		out->cells = calloc(n, sizeof(*out->cells));
		rd->rc = out->cells ? 0 : -ENOMEM;
		i = 0;
		EACH_ELEMENT(&rd->sp, cells, i, v)
		{
			if (rd->rc)
				break;
			out->n_cells = i + 1;
			if (*v != '{') {
				rd->rc = -EINVAL;
				break;
			}
			read_cell(rd, v, &out->cells[i]);
		}
	}
}

int aw_host_verdict_parse_text(const char *text, struct aw_host_verdict *out)
{
	struct reader rd = {0};
	const char *doc;

	memset(out, 0, sizeof(*out));
	rd.rc = text ? check_text(text, &rd.sp) : -EINVAL;
	doc = text ? ws(text) : NULL;
	if (!rd.rc && *doc != '{')
		rd.rc = -EINVAL; /* an array: no verdict */
	if (!rd.rc)
		read_doc(&rd, doc, out);
	for (size_t i = 0; i < sizeof(rd.m) / sizeof(rd.m[0]); i++)
		free(rd.m[i].v);
	free(rd.sp.v);
	if (rd.rc)
		aw_host_verdict_release(out);
	return rd.rc;
}
