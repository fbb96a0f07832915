/* The gate's and compare's replies read into the model of ci.h, checked field by field so that
 * a reply of another shape is an error naming the field (exit status 3) rather than a wrong
 * verdict; and the exit status a report maps to. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aw/util.h"
#include "ci.h"
#include "verdict_doc.h"

#define PATH_MAX_LEN 96

/* A cell's or a metric's verdict; a word that is no cell verdict (a newer collector's) is
 * unknown. */
static enum aw_verdict verdict_of(const char *name)
{
	enum aw_verdict v = aw_verdict_parse(name);

	return aw_verdict_is_cell(v) ? v : AW_VERDICT_UNKNOWN;
}

static int bad(char **err, const char *path, const char *what)
{
	return aw_errorf(err, -EINVAL, "bad reply from the collector: '%s' %s", path, what);
}

/* An optional (or, with `required`, mandatory) string member copied into *out (NULL when absent
 * or null). */
static int get_str(const json_t *obj, const char *name, bool required, char **out, const char *path,
                   char **err)
{
	const json_t *v = json_object_get(obj, name);
	char where[PATH_MAX_LEN];

	*out = NULL;
	snprintf(where, sizeof(where), "%.48s%.32s", path, name);
	if (!v || json_is_null(v))
		return required ? bad(err, where, "is missing") : 0;
	if (!json_is_string(v))
		return bad(err, where, "is not a string");
	*out = strdup(json_string_value(v));
	return *out ? 0 : -ENOMEM;
}

/* A number member, NAN when absent or null. */
static int get_num(const json_t *obj, const char *name, double *out, const char *path, char **err)
{
	const json_t *v = json_object_get(obj, name);
	char where[PATH_MAX_LEN];

	*out = NAN;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v)) {
		snprintf(where, sizeof(where), "%.48s%.32s", path, name);
		return bad(err, where, "is not a number");
	}
	*out = json_number_value(v);
	return 0;
}

static int parse_status(const json_t *obj, const char *path, enum aw_verdict *out, char **err)
{
	const json_t *v = json_object_get(obj, "status");
	char where[PATH_MAX_LEN];

	snprintf(where, sizeof(where), "%.48sstatus", path);
	if (!json_is_string(v))
		return bad(err, where, "is missing or not a string");
	*out = aw_verdict_parse(json_string_value(v));
	if (aw_verdict_is_status(*out))
		return 0;
	return bad(err, where, "is none of pass, fail, incomplete, unconfirmed, inconclusive");
}

/* "charts": {name: href, ...}; entries that are not strings are skipped. */
static int parse_links(const json_t *obj, struct aw_ci_link **out, size_t *n, const char *path,
                       char **err)
{
	const json_t *charts = json_object_get(obj, "charts"), *v;
	const char *name;
	char where[PATH_MAX_LEN];

	*out = NULL;
	*n = 0;
	if (!charts || json_is_null(charts))
		return 0;
	if (!json_is_object(charts)) {
		snprintf(where, sizeof(where), "%.48scharts", path);
		return bad(err, where, "is not an object");
	}
	*out = calloc(json_object_size(charts) + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	json_object_foreach ((json_t *)charts, name, v) {
		struct aw_ci_link *l = &(*out)[*n];

		if (!json_is_string(v))
			continue;
		l->name = strdup(name);
		l->href = strdup(json_string_value(v));
		(*n)++;
		if (!l->name || !l->href)
			return -ENOMEM;
	}
	return 0;
}

static int parse_metric(const json_t *cell, const char *name, struct aw_ci_metric *m,
                        const char *cell_path, char **err)
{
	const json_t *obj = json_object_get(cell, name), *v;
	char path[PATH_MAX_LEN];
	char *verdict = NULL;
	int rc;

	m->present = false;
	m->verdict = AW_VERDICT_UNKNOWN;
	m->baseline = m->head = m->change = m->change_lo = m->change_hi = m->change_ns = NAN;
	m->noise = m->pvalue = m->qvalue = m->threshold = NAN;
	m->window = -1;
	snprintf(path, sizeof(path), "%.48s%.8s.", cell_path, name);
	if (!obj || json_is_null(obj))
		return 0;
	if (!json_is_object(obj)) {
		snprintf(path, sizeof(path), "%.48s%.8s", cell_path, name);
		return bad(err, path, "is not an object");
	}
	m->present = true;
	rc = get_str(obj, "verdict", true, &verdict, path, err);
	if (rc)
		return rc;
	m->verdict = verdict_of(verdict);
	free(verdict);
	if ((rc = get_num(obj, "baseline", &m->baseline, path, err)) ||
	    (rc = get_num(obj, "head", &m->head, path, err)) ||
	    (rc = get_num(obj, "change", &m->change, path, err)) ||
	    (rc = get_num(obj, "change_lo", &m->change_lo, path, err)) ||
	    (rc = get_num(obj, "change_hi", &m->change_hi, path, err)) ||
	    (rc = get_num(obj, "noise", &m->noise, path, err)) ||
	    (rc = get_num(obj, "pvalue", &m->pvalue, path, err)) ||
	    (rc = get_num(obj, "qvalue", &m->qvalue, path, err)) ||
	    (rc = get_num(obj, "threshold", &m->threshold, path, err)) ||
	    (rc = get_num(obj, "change_ns", &m->change_ns, path, err)))
		return rc;
	m->absolute = json_is_true(json_object_get(obj, "absolute"));
	v = json_object_get(obj, "window");
	if (json_is_integer(v))
		m->window = (long)json_integer_value(v);
	m->bimodal = json_is_true(json_object_get(obj, "bimodal"));
	rc = get_str(obj, "note", false, &m->note, path, err);
	if (!rc && m->note && !*m->note)
		aw_freep(&m->note);
	return rc;
}

static int parse_cell(const json_t *obj, struct aw_ci_cell *c, const char *path, char **err)
{
	const json_t *cpu, *gate;
	int rc;

	c->cpu = -1;
	if (!json_is_object(obj))
		return bad(err, path, "is not an object");
	if ((rc = get_str(obj, "key", true, &c->key, path, err)) ||
	    (rc = get_str(obj, "op", false, &c->op, path, err)) ||
	    (rc = get_str(obj, "reader", false, &c->reader, path, err)) ||
	    (rc = get_str(obj, "subject", false, &c->subject, path, err)) ||
	    (rc = get_str(obj, "verdict", true, &c->verdict_name, path, err)))
		return rc;
	c->verdict = verdict_of(c->verdict_name);
	gate = json_object_get(obj, "gate");
	c->gate = AW_GATE_FAIL;
	if (gate && !json_is_null(gate) &&
	    (!json_is_string(gate) || aw_gate_parse(json_string_value(gate), &c->gate))) {
		char where[PATH_MAX_LEN];

		snprintf(where, sizeof(where), "%.48sgate", path);
		return bad(err, where, "is none of fail, warn, off");
	}
	cpu = json_object_get(obj, "cpu");
	if (json_is_integer(cpu) && json_integer_value(cpu) >= 0 &&
	    json_integer_value(cpu) < 1 << 20)
		c->cpu = (int)json_integer_value(cpu);
	if ((rc = parse_metric(obj, "p50", &c->p50, path, err)) ||
	    (rc = parse_metric(obj, "p99", &c->p99, path, err)))
		return rc;
	return 0;
}

/* The host read by the verdict document's one parser into h->doc, once the fields this file
 * checks passed: the levels, notes and head runs of its cells, its confirmation budget, its
 * most disturbed head run. The cells are the same array in the same order; each of h->cells
 * is linked to its twin. Returns 0, -EINVAL with *err (the parser's message under `path`) or
 * -ENOMEM. */
static int parse_doc(const json_t *obj, struct aw_ci_host *h, const char *path, char **err)
{
	const struct aw_run_state *r;
	const char *kernel = NULL;
	char *msg = NULL;
	int rc;

	h->disturbed_ratio = NAN;
	rc = aw_host_verdict_parse(obj, &h->doc, &msg);
	if (rc == -EINVAL) /* path ends with '.' */
		rc = aw_errorf(err, rc, "bad reply from the collector: in '%.*s': %s",
		               (int)(strlen(path) > 1 ? strlen(path) - 1 : 0), path,
		               msg ? msg : "no host verdict");
	free(msg);
	if (rc)
		return rc;
	for (size_t i = 0; i < h->n_cells && i < h->doc.n_cells; i++) {
		struct aw_ci_cell *c = &h->cells[i];

		if (!c->key || !h->doc.cells[i].key || strcmp(c->key, h->doc.cells[i].key))
			continue;
		c->doc = &h->doc.cells[i];
		c->p50.doc = c->p50.present ? &c->doc->p50 : NULL;
		c->p99.doc = c->p99.present ? &c->doc->p99 : NULL;
	}
	r = aw_host_verdict_most_disturbed(&h->doc, &kernel, &h->disturbed_ratio);
	if (r && r - h->doc.runs < (long)h->doc.n_head_runs) {
		h->disturbed_run = strdup(h->doc.head_runs[r - h->doc.runs]);
		h->disturbed_kernel = strdup(kernel);
		if (!h->disturbed_run || !h->disturbed_kernel)
			rc = -ENOMEM;
	}
	return rc;
}

static int parse_host(const json_t *obj, struct aw_ci_host *h, const char *path, char **err)
{
	const json_t *cells, *runs, *counts, *v;
	char where[PATH_MAX_LEN];
	size_t i;
	int rc;

	h->baseline_runs = -1;
	for (i = 0; i < AW_VERDICT_COUNT; i++)
		h->counts[i] = -1;
	if (!json_is_object(obj))
		return bad(err, path, "is not an object");
	if ((rc = get_str(obj, "host", true, &h->name, path, err)) ||
	    (rc = parse_status(obj, path, &h->status, err)) ||
	    (rc = get_str(obj, "reason", false, &h->reason, path, err)) ||
	    (rc = parse_links(obj, &h->charts, &h->n_charts, path, err)))
		return rc;
	runs = json_object_get(obj, "head_runs");
	if (json_is_array(runs))
		h->n_head_runs = json_array_size(runs);
	v = json_object_get(obj, "baseline_runs");
	if (json_is_integer(v))
		h->baseline_runs = (long)json_integer_value(v);
	counts = json_object_get(obj, "counts");
	if (json_is_object(counts)) {
		for (i = AW_VERDICT_CELL_FIRST; i <= AW_VERDICT_CELL_LAST; i++) {
			v = json_object_get(counts, aw_verdict_name((enum aw_verdict)i));
			h->counts[i] = json_is_integer(v) ? (long)json_integer_value(v) : 0;
		}
	}
	cells = json_object_get(obj, "cells");
	if (!cells || json_is_null(cells))
		return parse_doc(obj, h, path, err);
	if (!json_is_array(cells)) {
		snprintf(where, sizeof(where), "%.48scells", path);
		return bad(err, where, "is not an array");
	}
	h->cells = calloc(json_array_size(cells) + 1, sizeof(*h->cells));
	if (!h->cells)
		return -ENOMEM;
	for (i = 0; i < json_array_size(cells); i++) {
		snprintf(where, sizeof(where), "%.48scells[%zu].", path, i);
		h->n_cells = i + 1;
		rc = parse_cell(json_array_get(cells, i), &h->cells[i], where, err);
		if (rc)
			return rc;
	}
	return parse_doc(obj, h, path, err);
}

int aw_ci_report_parse(const char *text, size_t len, bool compare, struct aw_ci_report *out,
                       char **err)
{
	json_error_t jerr;
	json_t *doc;
	const json_t *hosts;
	char where[PATH_MAX_LEN];
	int rc;

	memset(out, 0, sizeof(*out));
	out->compare = compare;
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return aw_errorf(err, -EINVAL,
		                 "bad reply from the collector: not JSON (%s at %d:%d)", jerr.text,
		                 jerr.line, jerr.column);
	if (!json_is_object(doc)) {
		rc = bad(err, "(top)", "is not an object");
		goto out;
	}
	if ((rc = get_str(doc, "project", !compare, &out->project, "", err)) ||
	    (rc = get_str(doc, compare ? "head" : "commit", true, &out->commit, "", err)) ||
	    (rc = get_str(doc, compare ? "base" : "baseline_ref", true, &out->baseline, "", err)) ||
	    (rc = parse_status(doc, "", &out->status, err)) ||
	    (rc = get_str(doc, "report", false, &out->report, "", err)) ||
	    (rc = parse_links(doc, &out->charts, &out->n_charts, "", err)))
		goto out;
	hosts = json_object_get(doc, "hosts");
	if (!json_is_array(hosts)) {
		rc = bad(err, "hosts", "is missing or not an array");
		goto out;
	}
	out->hosts = calloc(json_array_size(hosts) + 1, sizeof(*out->hosts));
	if (!out->hosts) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < json_array_size(hosts); i++) {
		snprintf(where, sizeof(where), "hosts[%zu].", i);
		out->n_hosts = i + 1;
		rc = parse_host(json_array_get(hosts, i), &out->hosts[i], where, err);
		if (rc)
			goto out;
	}
out:
	if (rc == -ENOMEM)
		aw_errorf(err, rc, "cannot read the collector's reply: out of memory");
	if (rc)
		aw_ci_report_release(out);
	json_decref(doc);
	return rc;
}

static void links_free(struct aw_ci_link **links, size_t n)
{
	for (size_t i = 0; *links && i < n; i++) {
		free((*links)[i].name);
		free((*links)[i].href);
	}
	aw_freep(links);
}

static void cell_release(struct aw_ci_cell *c)
{
	free(c->key);
	free(c->op);
	free(c->reader);
	free(c->subject);
	free(c->verdict_name);
	free(c->p50.note);
	free(c->p99.note);
}

void aw_ci_report_release(struct aw_ci_report *r)
{
	for (size_t i = 0; r->hosts && i < r->n_hosts; i++) {
		struct aw_ci_host *h = &r->hosts[i];

		free(h->name);
		free(h->reason);
		free(h->disturbed_run);
		free(h->disturbed_kernel);
		aw_host_verdict_release(&h->doc);
		for (size_t j = 0; h->cells && j < h->n_cells; j++)
			cell_release(&h->cells[j]);
		free(h->cells);
		links_free(&h->charts, h->n_charts);
	}
	free(r->hosts);
	free(r->project);
	free(r->commit);
	free(r->baseline);
	free(r->report);
	links_free(&r->charts, r->n_charts);
	memset(r, 0, sizeof(*r));
}

int aw_ci_report_add_missing(struct aw_ci_report *r, const char *host, const char *reason)
{
	struct aw_ci_host *hosts, *h;

	hosts = realloc(r->hosts, (r->n_hosts + 1) * sizeof(*hosts));
	if (!hosts)
		return -ENOMEM;
	r->hosts = hosts;
	h = &hosts[r->n_hosts];
	memset(h, 0, sizeof(*h));
	h->name = strdup(host);
	h->reason = strdup(reason);
	if (!h->name || !h->reason) {
		free(h->name);
		free(h->reason);
		return -ENOMEM;
	}
	h->status = AW_VERDICT_INCOMPLETE;
	h->baseline_runs = -1;
	for (size_t i = 0; i < AW_VERDICT_COUNT; i++)
		h->counts[i] = -1;
	r->n_hosts++;
	if (r->status == AW_VERDICT_PASS)
		r->status = AW_VERDICT_INCOMPLETE;
	return 0;
}

/* What a status word weighs in the exit status (ci.h: regression, inconclusive, incomplete,
 * unconfirmed with --strict). */
struct weights {
	bool regression, inconclusive, incomplete, unconfirmed;
};

static void weigh(struct weights *w, enum aw_verdict status)
{
	w->regression = w->regression || status == AW_VERDICT_FAIL;
	w->inconclusive = w->inconclusive || status == AW_VERDICT_INCONCLUSIVE;
	w->incomplete = w->incomplete || status == AW_VERDICT_INCOMPLETE;
	w->unconfirmed = w->unconfirmed || status == AW_VERDICT_UNCONFIRMED;
}

enum aw_ci_exit aw_ci_exit_for(const struct aw_ci_report *r)
{
	struct weights w = {.incomplete = !r->n_hosts};

	weigh(&w, r->status);
	for (size_t i = 0; i < r->n_hosts; i++) {
		const struct aw_ci_host *h = &r->hosts[i];

		weigh(&w, h->status);
		/* a cell of level fail under a host said to pass counts as its word says: the
		 * gate errs on the safe side */
		for (size_t j = 0; j < h->n_cells; j++) {
			const struct aw_ci_cell *c = &h->cells[j];

			if (c->gate != AW_GATE_FAIL)
				continue;
			w.regression = w.regression || c->verdict == AW_VERDICT_REGRESSED;
			w.inconclusive = w.inconclusive || c->verdict == AW_VERDICT_INCONCLUSIVE;
			w.unconfirmed = w.unconfirmed || c->verdict == AW_VERDICT_SUSPECT;
		}
	}
	if (w.regression)
		return AW_CI_EXIT_REGRESSION;
	if (w.inconclusive)
		return AW_CI_EXIT_INCONCLUSIVE;
	if (w.incomplete)
		return AW_CI_EXIT_INCOMPLETE;
	return r->strict && w.unconfirmed ? AW_CI_EXIT_REGRESSION : AW_CI_EXIT_PASS;
}
