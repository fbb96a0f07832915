/* The percpu_bench importer: Breno Leitao's 2- and 5-variant tables and Palmer Dabbelt's
 * contention/duty extension (both "(c N, d N)" and the older "(N)"), read line by line from a
 * paste; every line that is not a preamble, a CPU header, a separator or a result is counted as
 * skipped. Labels map to ops as tests/fixtures/import/samples/percpu_bench/README.md says. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "import.h"

#define LINE_MAX_LEN 4096

static const struct {
	const char *label; /* normalised: upper case, no blanks or decorations */
	const char *op;
	unsigned format;
} labels[] = {
    {"LL/SC", "llsc", 0},
    {"LLSC", "llsc", 0},
    {"LSE", "stadd", AW_PCB_2VARIANT},
    {"LSE(STADD)", "stadd", 0},
    {"STADD", "stadd", AW_PCB_5VARIANT},
    {"LDADD", "ldadd", AW_PCB_5VARIANT},
    {"PRFM_KEEP+STADD", "prfm_keep_stadd", AW_PCB_5VARIANT},
    {"PFRM_KEEP+STADD", "prfm_keep_stadd", 0},
    {"PRFM_STRM+STADD", "prfm_strm_stadd", AW_PCB_5VARIANT},
    {"PFRM_STRM+STADD", "prfm_strm_stadd", 0},
};

/* `tok` (lower case) in `s`, case-insensitively, not inside a longer word. */
static const char *find_token(const char *s, const char *tok)
{
	size_t n = strlen(tok);

	for (const char *p = s; *p; p++) {
		if (strncasecmp(p, tok, n))
			continue;
		if (p > s && isalnum((unsigned char)p[-1]))
			continue;
		if (isalnum((unsigned char)p[n]))
			continue;
		return p;
	}
	return NULL;
}

/* A decimal number after a label such as "p50": ": 005.66", "= 5.7", ": *45.53*". */
static bool parse_value(const char **pp, double *out)
{
	const char *p = *pp, *start;
	char num[64];
	size_t n;
	int skipped = 0;

	while (*p && !isdigit((unsigned char)*p) && strchr(" \t:=~*_`'\"<>", *p) && skipped < 12) {
		p++;
		skipped++;
	}
	if (!isdigit((unsigned char)*p))
		return false;
	start = p;
	while (isdigit((unsigned char)*p))
		p++;
	if (*p == '.' && isdigit((unsigned char)p[1])) {
		p++;
		while (isdigit((unsigned char)*p))
			p++;
	}
	n = (size_t)(p - start);
	if (n >= sizeof(num))
		return false;
	memcpy(num, start, n);
	num[n] = '\0';
	*out = strtod(num, NULL);
	*pp = p;
	return isfinite(*out);
}

static bool parse_int(const char **pp, int64_t *out)
{
	const char *p = *pp;
	int64_t v = 0;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!isdigit((unsigned char)*p))
		return false;
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (INT64_C(1) << 40))
			return false;
		v = v * 10 + (*p - '0');
	}
	while (*p == ' ' || *p == '\t')
		p++;
	*pp = p;
	*out = v;
	return true;
}

/* "(c N, d N)" or "(N)" at the end of a label, inner text given without the parentheses. */
static unsigned parse_contention(const char *inner, int64_t *c, int64_t *d)
{
	const char *p = inner;

	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == 'c' || *p == 'C') {
		p++;
		if (!parse_int(&p, c) || *p++ != ',')
			return 0;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p != 'd' && *p != 'D')
			return 0;
		p++;
		if (!parse_int(&p, d) || *p)
			return 0;
		return AW_PCB_CONTENTION;
	}
	*d = 0;
	if (!parse_int(&p, c) || *p)
		return 0;
	return AW_PCB_CONT_OLD;
}

/* Parses "LABEL [(c N, d N)] : p50: X ns p95: Y ns p99: Z ns". Returns false when the line is
 * not one (or its numbers are inconsistent). */
static bool parse_result(const char *s, struct aw_import_cell *out, unsigned *format)
{
	const char *p50 = find_token(s, "p50"), *p;
	char label[256], name[64];
	size_t len, n = 0;
	int64_t c = 0, d = 0;
	unsigned fmt = 0;

	if (!p50)
		return false;
	while (s < p50 && !isalnum((unsigned char)*s))
		s++;
	len = (size_t)(p50 - s);
	if (!len || len >= sizeof(label))
		return false;
	memcpy(label, s, len);
	while (len && strchr(" \t:*`|=-", label[len - 1]))
		len--;
	label[len] = '\0';
	if (len && label[len - 1] == ')') {
		char *open = strrchr(label, '(');

		if (open) {
			label[len - 1] = '\0';
			fmt = parse_contention(open + 1, &c, &d);
			if (fmt)
				*open = '\0';
			else
				label[len - 1] = ')';
		}
	}
	for (const char *q = label; *q && n < sizeof(name) - 1; q++)
		if (isalnum((unsigned char)*q) || strchr("/+_()", *q))
			name[n++] = (char)toupper((unsigned char)*q);
	name[n] = '\0';
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		if (!strcmp(name, labels[i].label)) {
			snprintf(out->op, sizeof(out->op), "%s", labels[i].op);
			if (!fmt)
				fmt = labels[i].format;
			break;
		}
	}
	if (!out->op[0])
		return false;
	p = p50 + 3;
	if (!parse_value(&p, &out->p50))
		return false;
	p = find_token(p, "p95");
	if (!p || (p += 3, !parse_value(&p, &out->p95)))
		return false;
	p = find_token(p, "p99");
	if (!p || (p += 3, !parse_value(&p, &out->p99)))
		return false;
	if (out->p50 > out->p95 || out->p95 > out->p99)
		return false;
	out->c = c > 0 ? c : AW_NONE; /* c 0: no contender */
	out->d = d;
	out->loops = out->nruns = -1;
	*format = fmt;
	return true;
}

/* " CPU: 47 - Latency Percentiles:" (not prose that happens to start with "CPU 47"). */
static bool parse_cpu_header(const char *s, int *cpu)
{
	int64_t v;

	while (*s && !isalnum((unsigned char)*s))
		s++;
	if (strncasecmp(s, "cpu", 3))
		return false;
	s += 3;
	while (*s == ':' || *s == ' ' || *s == '\t' || *s == '#')
		s++;
	if (!parse_int(&s, &v) || v > 65535)
		return false;
	while (*s && !isalnum((unsigned char)*s) && *s != '-')
		s++;
	if (*s && *s != '-' && strncasecmp(s, "latency", 7))
		return false;
	*cpu = (int)v;
	return true;
}

/* An integer after `prefix` somewhere in s. */
static bool number_after(const char *s, const char *prefix, int64_t *out)
{
	const char *p = strstr(s, prefix);

	if (!p)
		return false;
	p += strlen(prefix);
	return parse_int(&p, out);
}

static bool only_of(const char *s, const char *set)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!strchr(set, *s))
			return false;
	return true;
}

static struct aw_import_run *last_run(struct aw_import *imp)
{
	if (imp->n_runs)
		return &imp->runs[imp->n_runs - 1];
	return aw_import_new_run(imp);
}

/* One cleaned, non-empty line. Returns 0, or -ENOMEM. */
static int feed(struct aw_import *imp, const char *s, unsigned line, int *cpu)
{
	struct aw_import_cell id, *c;
	struct aw_import_run *run;
	unsigned fmt;
	int64_t v;

	if (strstr(s, "Per-CPU Atomic Add Benchmark")) {
		*cpu = AW_NONE;
		run = imp->n_runs ? &imp->runs[imp->n_runs - 1] : NULL;
		if (!run || run->n_cells)
			run = aw_import_new_run(imp);
		return run ? 0 : -ENOMEM;
	}
	if (strstr(s, "percentile measurements") && number_after(s, "(", &v)) {
		run = last_run(imp);
		if (!run)
			return -ENOMEM;
		run->iterations = v;
		return 0;
	}
	if (!strncmp(s, "Detected ", 9) && number_after(s, "Detected", &v) && strstr(s, "CPU")) {
		run = last_run(imp);
		if (!run)
			return -ENOMEM;
		run->detected_cpus = v;
		return 0;
	}
	if (only_of(s, "=") || strstr(s, "=== Benchmark Complete ==="))
		return 0;
	if (parse_cpu_header(s, cpu))
		return 0;
	if (parse_result(s, &id, &fmt)) {
		id.cpu = *cpu;
		id.line = line;
		c = aw_import_add(imp, &id);
		if (!c)
			return -ENOMEM;
		imp->runs[imp->n_runs - 1].formats |= fmt;
		return 0;
	}
	imp->skipped++;
	return 0;
}

int aw_percpu_bench_parse(const char *text, size_t len, struct aw_import *imp)
{
	char line[LINE_MAX_LEN];
	size_t pos = 0;
	int cpu = AW_NONE, rc = 0;

	while (pos < len && !rc) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		char *s;

		imp->lines++;
		if (n >= sizeof(line)) {
			imp->skipped++;
		} else {
			memcpy(line, text + pos, n);
			line[n] = '\0';
			s = aw_import_clean_line(line);
			if (*s)
				rc = feed(imp, s, (unsigned)imp->lines, &cpu);
		}
		pos += n + 1;
	}
	return rc;
}
