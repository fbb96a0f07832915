/* What the importers share: line cleaning, the run/cell containers that split a paste into
 * documents, and the documents themselves (host, matrix identity, meta, validation). The
 * format parsers are import_percpu.c and refscale.c. */
#include "import.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/sha256.h"
#include "aw/stats.h"
#include "aw/strmap.h"
#include "aw/util.h"

#define KEYS_MAX (1u << 20)

void aw_import_init(struct aw_import *imp, const char *format)
{
	memset(imp, 0, sizeof(*imp));
	imp->format = format;
}

void aw_import_release(struct aw_import *imp)
{
	for (size_t i = 0; i < imp->n_runs; i++) {
		struct aw_import_run *r = &imp->runs[i];

		for (size_t j = 0; j < r->n_cells; j++)
			free(r->cells[j].samples);
		free(r->cells);
		aw_strmap_free(&r->keys);
	}
	free(imp->runs);
	memset(imp, 0, sizeof(*imp));
}

char *aw_import_clean_line(char *line)
{
	size_t n = strlen(line);
	char *s = line;

	while (n &&
	       (line[n - 1] == '\r' || line[n - 1] == '\n' || isspace((unsigned char)line[n - 1])))
		line[--n] = '\0';
	while (*s == '>' || *s == ' ' || *s == '\t' || *s == '|')
		s++;
	if (*s == '[') {
		/* "[  123.456789]" (dmesg) */
		char *p = s + 1;

		while (*p == ' ')
			p++;
		if (isdigit((unsigned char)*p)) {
			while (isdigit((unsigned char)*p))
				p++;
			if (*p == '.')
				p++;
			while (isdigit((unsigned char)*p))
				p++;
			if (*p == ']') {
				s = p + 1;
				while (*s == ' ' || *s == '\t')
					s++;
			}
		}
	}
	return s;
}

struct aw_import_run *aw_import_new_run(struct aw_import *imp)
{
	struct aw_import_run *r;

	if (aw_array_reserve(&imp->runs, imp->n_runs, &imp->cap_runs, sizeof(*imp->runs), 4))
		return NULL;
	r = &imp->runs[imp->n_runs];
	memset(r, 0, sizeof(*r));
	r->keys = aw_strmap_new(KEYS_MAX);
	if (!r->keys)
		return NULL;
	r->iterations = -1;
	r->detected_cpus = -1;
	imp->n_runs++;
	return r;
}

static void identity(const struct aw_import_cell *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s|%s|%d|%lld|%lld", c->op, c->kernel, c->cpu, (long long)c->c,
	         (long long)c->d);
}

struct aw_import_cell *aw_import_add(struct aw_import *imp, const struct aw_import_cell *id)
{
	struct aw_import_run *r = imp->n_runs ? &imp->runs[imp->n_runs - 1] : NULL;
	struct aw_import_cell *c;
	char key[160];
	int64_t v;

	identity(id, key, sizeof(key));
	if (!r || !aw_strmap_get(r->keys, key, &v)) {
		r = aw_import_new_run(imp);
		if (!r)
			return NULL;
	}
	if (aw_array_reserve(&r->cells, r->n_cells, &r->cap_cells, sizeof(*r->cells), 64))
		return NULL;
	if (aw_strmap_put(r->keys, key, (int64_t)r->n_cells))
		return NULL;
	c = &r->cells[r->n_cells++];
	*c = *id;
	c->samples = NULL;
	c->n_samples = c->cap_samples = 0;
	return c;
}

int aw_import_add_sample(struct aw_import_cell *c, double v)
{
	if (c->n_samples == c->cap_samples && c->cap_samples * 2 > 1000000)
		return -E2BIG;
	if (aw_array_reserve(&c->samples, c->n_samples, &c->cap_samples, sizeof(*c->samples), 32))
		return -ENOMEM;
	c->samples[c->n_samples++] = v;
	return 0;
}

int aw_import_fill_cell(const struct aw_import_cell *ic, struct aw_cell *cell)
{
	cell->cpu = ic->cpu;
	cell->contender_cpu = AW_NONE; /* a paste never says where the contender ran */
	cell->c = ic->c;
	cell->d = ic->d;
	if (aw_set_str(&cell->op, ic->op) ||
	    aw_set_str(&cell->kernel, ic->kernel[0] ? ic->kernel : NULL))
		return -ENOMEM;
	if (ic->kernel[0]) {
		struct aw_summary sum;
		double *copy;

		if (ic->loops > 0)
			cell->batch = (uint64_t)ic->loops;
		if (!ic->n_samples) {
			cell->status = AW_CELL_FAILED;
			if (aw_set_str(&cell->reason, "refscale printed no results"))
				return -ENOMEM;
			return aw_cell_make_key(cell);
		}
		copy = malloc(ic->n_samples * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, ic->samples, ic->n_samples * sizeof(*copy));
		aw_summarize(copy, ic->n_samples, &sum);
		free(copy);
		cell->n = sum.n;
		cell->min = sum.min;
		cell->p50 = sum.p50;
		cell->p95 = sum.p95;
		cell->p99 = sum.p99;
		cell->max = sum.max;
		cell->mean = sum.mean;
		cell->stddev = sum.stddev;
		cell->ci_lo = sum.ci_lo;
		cell->ci_hi = sum.ci_hi;
	} else {
		cell->n = 100; /* percpu_bench: 100 batches per line */
		cell->p50 = ic->p50;
		cell->p95 = ic->p95;
		cell->p99 = ic->p99;
	}
	return aw_cell_make_key(cell);
}

static const char *format_name(unsigned bit)
{
	switch (bit) {
	case AW_PCB_2VARIANT:
		return "2-variant";
	case AW_PCB_5VARIANT:
		return "5-variant";
	case AW_PCB_CONTENTION:
		return "contention-duty";
	default:
		return "contention";
	}
}

static json_t *run_meta(const struct aw_import *imp, const struct aw_import_run *run, size_t part,
                        size_t parts, const struct aw_import_opts *o)
{
	json_t *m = json_pack("{s:s, s:I, s:I}", "importer", imp->format, "skipped_lines",
	                      (json_int_t)imp->skipped, "lines", (json_int_t)imp->lines);
	json_t *formats;
	int bad = !m;

	if (!bad && o->source)
		bad |= json_object_set_new(m, "source", json_string(o->source));
	if (!bad && parts > 1)
		bad |= json_object_set_new(m, "part", json_integer((json_int_t)part)) ||
		       json_object_set_new(m, "parts", json_integer((json_int_t)parts));
	if (!bad && run->iterations >= 0)
		bad |= json_object_set_new(m, "iterations", json_integer(run->iterations));
	if (!bad && run->detected_cpus >= 0)
		bad |= json_object_set_new(m, "detected_cpus", json_integer(run->detected_cpus));
	if (!bad && run->formats) {
		formats = json_array();
		bad |= !formats || json_object_set_new(m, "formats", formats);
		for (unsigned bit = 1; !bad && bit <= AW_PCB_CONT_OLD; bit <<= 1)
			if (run->formats & bit)
				bad |=
				    json_array_append_new(formats, json_string(format_name(bit)));
	}
	if (bad) {
		json_decref(m);
		return NULL;
	}
	return m;
}

/* One document from one run. Returns NULL with *err. */
static struct aw_result *build_doc(const struct aw_import *imp, const struct aw_import_run *run,
                                   size_t part, size_t parts, const struct aw_import_opts *o,
                                   char **err)
{
	const struct aw_result_limits lim = AW_RESULT_LIMITS_DEFAULT;
	char hash[AW_SHA256_HEX_LEN + 1];
	struct aw_result *r = aw_result_new(), *checked = NULL;
	struct aw_verr verr;
	json_t *doc = NULL;

	if (!r)
		goto nomem;
	r->trigger = AW_TRIGGER_IMPORT;
	aw_time_now(r->started_at);
	memcpy(r->finished_at, r->started_at, sizeof(r->finished_at));
	if (aw_set_str(&r->project, o->project) || aw_set_str(&r->commit, o->commit) ||
	    aw_set_str(&r->ref, o->ref) || aw_set_str(&r->matrix_name, imp->format))
		goto nomem;
	r->matrix_version = 1;
	if (aw_sha256_hex(imp->format, strlen(imp->format), hash)) {
		aw_errorf(err, -EIO, "cannot hash the format name");
		goto fail;
	}
	if (aw_set_str(&r->matrix_hash, hash))
		goto nomem;
	r->host = json_pack("{s:s, s:s, s:s, s:o}", "name", o->host, "arch", o->arch, "cpu_model",
	                    o->cpu_model, "labels",
	                    o->labels ? json_deep_copy(o->labels) : json_object());
	r->meta = run_meta(imp, run, part, parts, o);
	if (!r->host || !r->meta)
		goto nomem;
	for (size_t i = 0; i < run->n_cells; i++) {
		struct aw_cell *c = aw_result_add_cell(r);

		if (!c || aw_import_fill_cell(&run->cells[i], c))
			goto nomem;
	}
	/* Never hand out a document that the collector would refuse. */
	doc = aw_result_to_json(r);
	if (!doc)
		goto nomem;
	checked = aw_result_from_json(doc, &lim, &verr);
	json_decref(doc);
	if (!checked) {
		aw_errorf(err, -EINVAL, "the imported document is invalid at '%s': %s", verr.field,
		          verr.message);
		goto fail;
	}
	aw_result_free(&checked);
	return r;
nomem:
	aw_errorf(err, -ENOMEM, "out of memory");
fail:
	aw_result_free(&r);
	return NULL;
}

int aw_import_documents(const struct aw_import *imp, const struct aw_import_opts *o,
                        struct aw_result ***docs, size_t *n, char **err)
{
	size_t parts = 0, k = 0;
	int rc = 0;

	*docs = NULL;
	*n = 0;
	for (size_t i = 0; i < imp->n_runs; i++)
		parts += imp->runs[i].n_cells > 0;
	if (!parts)
		return aw_errorf(err, -ENOENT, "no %s results found", imp->format);
	*docs = calloc(parts, sizeof(**docs));
	if (!*docs)
		return aw_errorf(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < imp->n_runs && !rc; i++) {
		if (!imp->runs[i].n_cells)
			continue;
		(*docs)[k] = build_doc(imp, &imp->runs[i], k + 1, parts, o, err);
		if (!(*docs)[k])
			rc = -EINVAL;
		else
			k++;
	}
	if (rc) {
		for (size_t i = 0; i < k; i++)
			aw_result_free(&(*docs)[i]);
		aw_freep(docs);
		return rc;
	}
	*n = k;
	return 0;
}
