/* The verdict document's one writer and one parser; see verdict_doc.h and docs/api.md. */
#include "verdict_doc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/util.h"

/* ---- writing ---- */

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* Sets key to a new value, which is consumed; a NULL value (out of memory) fails. */
static int put(json_t *o, const char *key, json_t *value)
{
	return value ? json_object_set_new(o, key, value) : -1;
}

static json_t *level_json(const struct aw_level *l)
{
	json_t *o = json_object();

	if (!o || put(o, "share", num(l->share)) || put(o, "base", num(l->base)) ||
	    put(o, "head", num(l->head)) || put(o, "change", num(l->change)) ||
	    put(o, "change_lo", num(l->change_lo)) || put(o, "change_hi", num(l->change_hi)) ||
	    put(o, "noise", num(l->noise)) || put(o, "pvalue", num(l->pvalue)) ||
	    put(o, "n_base", json_integer((json_int_t)l->n_base)) ||
	    put(o, "n_head", json_integer((json_int_t)l->n_head)) ||
	    put(o, "verdict", json_string(aw_verdict_name(l->verdict)))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *metric_json(const struct aw_metric_verdict *m)
{
	json_t *o = json_object(), *levels = json_array(), *ref;

	if (!o || !levels)
		goto fail;
	for (size_t j = 0; j < m->n_levels && j < AW_VERDICT_LEVELS; j++)
		if (json_array_append_new(levels, level_json(&m->levels[j])))
			goto fail;
	if (put(o, "levels", levels))
		goto fail_levels_owned; /* (consumed either way) */
	ref = m->reference ? json_pack("{s:s, s:o, s:o}", "kernel", m->reference, "slope",
	                               num(m->ref_slope), "gain", num(m->ref_gain))
	                   : json_null();
	if (ref && m->reference && m->n_ref_terms) {
		json_t *terms = json_array();

		for (size_t k = 0; terms && k < m->n_ref_terms; k++)
			if (json_array_append_new(terms, num(m->ref_terms[k]))) {
				json_decref(terms);
				terms = NULL;
			}
		if (put(ref, "terms", terms)) {
			json_decref(ref);
			ref = NULL;
		}
	}
	if (put(o, "verdict", json_string(aw_verdict_name(m->verdict))) ||
	    put(o, "baseline", num(m->baseline)) || put(o, "head", num(m->head)) ||
	    put(o, "change", num(m->change)) || put(o, "change_lo", num(m->change_lo)) ||
	    put(o, "change_hi", num(m->change_hi)) || put(o, "change_ns", num(m->change_ns)) ||
	    put(o, "absolute", json_boolean(m->absolute)) || put(o, "noise", num(m->noise)) ||
	    put(o, "pvalue", num(m->pvalue)) || put(o, "qvalue", num(m->qvalue)) ||
	    put(o, "threshold", num(m->threshold)) ||
	    put(o, "window", json_integer((json_int_t)m->window)) ||
	    put(o, "head_n", json_integer((json_int_t)m->head_n)) ||
	    put(o, "agree_n", json_integer((json_int_t)m->agree_n)) ||
	    put(o, "bimodal", json_boolean(m->bimodal)) || put(o, "reference", ref) ||
	    put(o, "level_by", str_or_null(m->level_by)) ||
	    put(o, "dominant", json_integer((json_int_t)m->dominant)) ||
	    put(o, "decided_by", m->decided_by >= 0 ? json_integer(m->decided_by) : json_null()) ||
	    put(o, "note", str_or_null(m->note)))
		goto fail_levels_owned;
	return o;
fail:
	json_decref(levels);
fail_levels_owned:
	json_decref(o);
	return NULL;
}

static json_t *cell_json(const struct aw_cell_verdict *c)
{
	json_t *o = json_object();

	if (!o || put(o, "key", json_string(c->key)) || put(o, "op", str_or_null(c->op)) ||
	    put(o, "reader", str_or_null(c->reader)) ||
	    put(o, "subject", str_or_null(c->subject)) ||
	    put(o, "cpu", c->cpu >= 0 ? json_integer(c->cpu) : json_null()) ||
	    put(o, "verdict", json_string(aw_verdict_name(c->verdict))) ||
	    put(o, "gate", json_string(aw_gate_name(c->gate))) ||
	    put(o, "head_runs", json_integer((json_int_t)c->n_head)) ||
	    put(o, "p50", metric_json(&c->p50)) || put(o, "p99", metric_json(&c->p99))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *run_json(const char *run_id, const struct aw_run_state *r)
{
	json_t *o = json_object(), *refs = json_object();

	if (!o || !refs)
		goto fail;
	for (size_t k = 0; k < r->n && k < AW_VERDICT_REFS; k++)
		if (put(refs, r->kernel[k], num(r->ratio[k])))
			goto fail;
	if (put(o, "run_id", json_string(run_id)) ||
	    put(o, "disturbed", json_boolean(r->disturbed)))
		goto fail;
	if (put(o, "references", refs)) {
		json_decref(o);
		return NULL;
	}
	return o;
fail:
	json_decref(refs);
	json_decref(o);
	return NULL;
}

json_t *aw_host_verdict_json(const struct aw_host_verdict *v, bool all_cells)
{
	json_t *o = json_object(), *cells = json_array(), *runs = json_array(),
	       *heads = json_array(), *counts = json_object();

	if (!o || !cells || !runs || !heads || !counts)
		goto fail;
	for (size_t i = 0; i < v->n_head_runs; i++)
		if (json_array_append_new(heads, json_string(v->head_runs[i])))
			goto fail;
	for (size_t i = 0; i < v->n_runs && i < v->n_head_runs; i++)
		if (json_array_append_new(runs, run_json(v->head_runs[i], &v->runs[i])))
			goto fail;
	for (int k = 0; k < AW_VERDICT_COUNT; k++)
		if (aw_verdict_is_cell((enum aw_verdict)k) &&
		    put(counts, aw_verdict_name((enum aw_verdict)k),
		        json_integer((json_int_t)v->counts[k])))
			goto fail;
	for (size_t i = 0; i < v->n_cells; i++)
		if ((all_cells || v->cells[i].verdict != AW_VERDICT_UNCHANGED ||
		     v->cells[i].p99.verdict == AW_VERDICT_REGRESSED) &&
		    json_array_append_new(cells, cell_json(&v->cells[i])))
			goto fail;
	if (put(o, "host", json_string(v->host ? v->host : "")) ||
	    put(o, "status", json_string(aw_verdict_name(v->status))) ||
	    put(o, "reason", str_or_null(v->reason)) ||
	    put(o, "baseline_runs", json_integer((json_int_t)v->n_baseline_runs)) ||
	    put(o, "warnings", json_integer((json_int_t)v->warnings)) ||
	    put(o, "confirm_budget", json_integer((json_int_t)v->confirm_budget)) ||
	    put(o, "disturbed", json_boolean(v->disturbed)) ||
	    put(o, "host_changed", str_or_null(v->host_changed)))
		goto fail;
	/* (each consumed by the object once set) */
	if (put(o, "head_runs", heads)) {
		heads = NULL;
		goto fail;
	}
	heads = NULL;
	if (put(o, "counts", counts)) {
		counts = NULL;
		goto fail;
	}
	counts = NULL;
	if (put(o, "runs", runs)) {
		runs = NULL;
		goto fail;
	}
	runs = NULL;
	if (put(o, "cells", cells)) {
		cells = NULL;
		goto fail;
	}
	return o;
fail:
	json_decref(cells);
	json_decref(runs);
	json_decref(heads);
	json_decref(counts);
	json_decref(o);
	return NULL;
}

/* ---- reading ---- */

struct reader {
	char **err;
	const char *where; /* "cells[3].p50" */
	int rc;
};

static double get_num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static size_t get_size(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) && json_integer_value(v) > 0 ? (size_t)json_integer_value(v) : 0;
}

/* A copy of an optional string field; a field of another type is an error. */
static char *get_str(struct reader *rd, const json_t *o, const char *key, bool required)
{
	const json_t *v = json_object_get(o, key);
	char *s;

	if (rd->rc)
		return NULL;
	if (!v || json_is_null(v)) {
		if (required)
			rd->rc = aw_errorf(rd->err, -EINVAL, "%s%s%s is missing", rd->where,
			                   *rd->where ? "." : "", key);
		return NULL;
	}
	if (!json_is_string(v)) {
		rd->rc = aw_errorf(rd->err, -EINVAL, "%s%s%s is not a string", rd->where,
		                   *rd->where ? "." : "", key);
		return NULL;
	}
	s = strdup(json_string_value(v));
	if (!s)
		rd->rc = -ENOMEM;
	return s;
}

static enum aw_verdict get_verdict(const json_t *o, const char *key)
{
	return aw_verdict_parse(json_string_value(json_object_get(o, key)));
}

static void read_metric(struct reader *rd, const json_t *o, struct aw_metric_verdict *m)
{
	const json_t *levels = json_object_get(o, "levels"), *ref = json_object_get(o, "reference");
	const json_t *d = json_object_get(o, "decided_by");
	size_t j;
	json_t *l;

	memset(m, 0, sizeof(*m));
	m->decided_by = -1;
	m->ref_slope = m->ref_gain = NAN;
	if (!json_is_object(o))
		return; /* (a cell judged before the metric was) */
	m->verdict = get_verdict(o, "verdict");
	m->baseline = get_num(o, "baseline");
	m->head = get_num(o, "head");
	m->change = get_num(o, "change");
	m->change_lo = get_num(o, "change_lo");
	m->change_hi = get_num(o, "change_hi");
	m->change_ns = get_num(o, "change_ns");
	m->absolute = json_is_true(json_object_get(o, "absolute"));
	m->noise = get_num(o, "noise");
	m->pvalue = get_num(o, "pvalue");
	m->qvalue = get_num(o, "qvalue");
	m->threshold = get_num(o, "threshold");
	m->window = get_size(o, "window");
	m->head_n = get_size(o, "head_n");
	m->agree_n = get_size(o, "agree_n");
	m->bimodal = json_is_true(json_object_get(o, "bimodal"));
	m->dominant = get_size(o, "dominant");
	if (json_is_integer(d) && json_integer_value(d) >= 0 &&
	    json_integer_value(d) < AW_VERDICT_LEVELS)
		m->decided_by = (int)json_integer_value(d);
	m->note = get_str(rd, o, "note", false);
	m->level_by = get_str(rd, o, "level_by", false);
	if (json_is_object(ref)) {
		m->reference = get_str(rd, ref, "kernel", false);
		m->ref_slope = get_num(ref, "slope");
		m->ref_gain = get_num(ref, "gain");
		json_array_foreach (json_object_get(ref, "terms"), j, l)
			if (m->n_ref_terms < AW_VERDICT_REFS)
				m->ref_terms[m->n_ref_terms++] =
				    json_is_number(l) ? json_number_value(l) : NAN;
	}
	json_array_foreach (levels, j, l) {
		struct aw_level *x = &m->levels[j];

		if (j >= AW_VERDICT_LEVELS)
			break;
		x->share = get_num(l, "share");
		x->base = get_num(l, "base");
		x->head = get_num(l, "head");
		x->change = get_num(l, "change");
		x->change_lo = get_num(l, "change_lo");
		x->change_hi = get_num(l, "change_hi");
		x->noise = get_num(l, "noise");
		x->pvalue = get_num(l, "pvalue");
		x->n_base = get_size(l, "n_base");
		x->n_head = get_size(l, "n_head");
		x->verdict = get_verdict(l, "verdict");
		m->n_levels = j + 1;
	}
	if (m->dominant >= m->n_levels)
		m->dominant = 0;
}

static void read_cell(struct reader *rd, const json_t *o, struct aw_cell_verdict *c)
{
	const json_t *cpu = json_object_get(o, "cpu"), *gate = json_object_get(o, "gate");

	c->key = get_str(rd, o, "key", true);
	c->op = get_str(rd, o, "op", false);
	c->reader = get_str(rd, o, "reader", false);
	c->subject = get_str(rd, o, "subject", false);
	c->cpu = json_is_integer(cpu) ? (int)json_integer_value(cpu) : -1;
	c->verdict = get_verdict(o, "verdict");
	c->n_head = get_size(o, "head_runs");
	c->gate = AW_GATE_FAIL; /* a collector before gate levels */
	if (json_is_string(gate) && aw_gate_parse(json_string_value(gate), &c->gate) && !rd->rc)
		rd->rc = aw_errorf(rd->err, -EINVAL, "%s.gate is no gate level", rd->where);
	read_metric(rd, json_object_get(o, "p50"), &c->p50);
	read_metric(rd, json_object_get(o, "p99"), &c->p99);
}

static void read_run(struct reader *rd, const json_t *o, struct aw_run_state *r)
{
	const json_t *refs = json_object_get(o, "references"), *v;
	const char *k;

	r->disturbed = json_is_true(json_object_get(o, "disturbed"));
	json_object_foreach ((json_t *)refs, k, v) {
		if (r->n >= AW_VERDICT_REFS)
			break;
		r->kernel[r->n] = strdup(k);
		if (!r->kernel[r->n]) {
			rd->rc = -ENOMEM;
			return;
		}
		r->ratio[r->n++] = json_is_number(v) ? json_number_value(v) : NAN;
	}
}

int aw_host_verdict_parse(const json_t *doc, struct aw_host_verdict *out, char **err)
{
	struct reader rd = {err, "", 0};
	const json_t *cells, *heads, *runs, *counts, *v;
	char where[48];
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(doc))
		return aw_errorf(err, -EINVAL, "a host verdict is an object");
	out->host = get_str(&rd, doc, "host", true);
	out->status = get_verdict(doc, "status");
	if (!rd.rc && !aw_verdict_is_status(out->status))
		rd.rc = aw_errorf(err, -EINVAL, "status is no host status");
	out->reason = get_str(&rd, doc, "reason", false);
	out->host_changed = get_str(&rd, doc, "host_changed", false);
	out->n_baseline_runs = get_size(doc, "baseline_runs");
	out->warnings = get_size(doc, "warnings");
	out->confirm_budget = (unsigned)get_size(doc, "confirm_budget");
	out->disturbed = json_is_true(json_object_get(doc, "disturbed"));
	heads = json_object_get(doc, "head_runs");
	runs = json_object_get(doc, "runs");
	cells = json_object_get(doc, "cells");
	counts = json_object_get(doc, "counts");
	if (!rd.rc && heads && !json_is_array(heads))
		rd.rc = aw_errorf(err, -EINVAL, "head_runs is not an array");
	if (!rd.rc && cells && !json_is_array(cells))
		rd.rc = aw_errorf(err, -EINVAL, "cells is not an array");
	if (!rd.rc && json_array_size(heads)) {
		out->head_runs = calloc(json_array_size(heads), sizeof(char *));
		rd.rc = out->head_runs ? 0 : -ENOMEM;
		json_array_foreach (heads, i, v) {
			if (rd.rc)
				break;
			if (!json_is_string(v)) {
				rd.rc =
				    aw_errorf(err, -EINVAL, "head_runs[%zu] is not a string", i);
				break;
			}
			out->head_runs[i] = strdup(json_string_value(v));
			rd.rc = out->head_runs[i] ? 0 : -ENOMEM;
			out->n_head_runs = i + 1;
		}
	}
	if (!rd.rc && json_array_size(runs)) {
		out->runs = calloc(json_array_size(runs), sizeof(*out->runs));
		rd.rc = out->runs ? 0 : -ENOMEM;
		json_array_foreach (runs, i, v) {
			if (rd.rc)
				break;
			read_run(&rd, v, &out->runs[i]);
			out->n_runs = i + 1;
			out->disturbed = out->disturbed || out->runs[i].disturbed;
		}
	}
	for (int k = 0; !rd.rc && k < AW_VERDICT_COUNT; k++) {
		const json_t *c = json_object_get(counts, aw_verdict_name((enum aw_verdict)k));

		if (aw_verdict_is_cell((enum aw_verdict)k) && json_is_integer(c))
			out->counts[k] = (size_t)json_integer_value(c);
	}
	if (!rd.rc && json_array_size(cells)) {
		out->cells = calloc(json_array_size(cells), sizeof(*out->cells));
		rd.rc = out->cells ? 0 : -ENOMEM;
		json_array_foreach (cells, i, v) {
			if (rd.rc)
				break;
			snprintf(where, sizeof(where), "cells[%zu]", i);
			rd.where = where;
			out->n_cells = i + 1;
			if (!json_is_object(v)) {
				rd.rc = aw_errorf(err, -EINVAL, "%s is not an object", where);
				break;
			}
			read_cell(&rd, v, &out->cells[i]);
		}
	}
	if (rd.rc == -ENOMEM)
		aw_errorf(err, -ENOMEM, "out of memory reading a verdict");
	if (rd.rc)
		aw_host_verdict_release(out);
	return rd.rc;
}

/* ---- the rest ---- */

static void metric_release(struct aw_metric_verdict *m)
{
	free(m->reference);
	free(m->level_by);
	free(m->note);
}

void aw_host_verdict_release(struct aw_host_verdict *v)
{
	for (size_t i = 0; i < v->n_cells; i++) {
		struct aw_cell_verdict *c = &v->cells[i];

		free(c->key);
		free(c->op);
		free(c->reader);
		free(c->subject);
		metric_release(&c->p50);
		metric_release(&c->p99);
	}
	free(v->cells);
	for (size_t i = 0; i < v->n_head_runs; i++)
		free(v->head_runs[i]);
	free(v->head_runs);
	for (size_t i = 0; i < v->n_runs; i++)
		for (size_t k = 0; k < v->runs[i].n; k++)
			free(v->runs[i].kernel[k]);
	free(v->runs);
	free(v->host);
	free(v->reason);
	free(v->host_changed);
	memset(v, 0, sizeof(*v));
}

const struct aw_run_state *aw_host_verdict_most_disturbed(const struct aw_host_verdict *v,
                                                          const char **kernel, double *ratio)
{
	const struct aw_run_state *best = NULL;
	double far = -1;

	for (size_t i = 0; i < v->n_runs; i++) {
		const struct aw_run_state *r = &v->runs[i];

		for (size_t k = 0; r->disturbed && k < r->n; k++) {
			double d = fabs(log(r->ratio[k]));

			if (isfinite(d) && d > far) {
				far = d;
				best = r;
				if (kernel)
					*kernel = r->kernel[k];
				if (ratio)
					*ratio = r->ratio[k];
			}
		}
	}
	return best;
}

const struct aw_metric_verdict *aw_cell_verdict_deciding(const struct aw_cell_verdict *c)
{
	if (c->p99.verdict == c->verdict && c->p50.verdict != c->verdict)
		return &c->p99;
	return &c->p50;
}

const char *aw_metric_verdict_levels_text(const struct aw_metric_verdict *m, char *buf, size_t size)
{
	size_t used;

	if (!size)
		return NULL;
	buf[0] = '\0';
	if (m->n_levels < 2)
		return NULL;
	used = (size_t)snprintf(buf, size, "levels%s%s:", m->level_by ? " by " : "",
	                        m->level_by ? m->level_by : "");
	for (size_t j = 0; j < m->n_levels && j < AW_VERDICT_LEVELS && used < size; j++) {
		const struct aw_level *l = &m->levels[j];
		char share[16] = "", change[32] = "";
		const char *word = aw_verdict_name(l->verdict);

		if (isfinite(l->share))
			snprintf(share, sizeof(share), " (%.0f%%)", 100 * l->share);
		if (isfinite(l->change))
			snprintf(change, sizeof(change), " %+.1f%%", 100 * l->change);
		else if (!l->n_head)
			word = "no head run";
		if (isfinite(l->change) && l->verdict == AW_VERDICT_UNKNOWN)
			word = "undecided";
		used += (size_t)snprintf(buf + used, size - used, "%s L%zu%s%s %s%s", j ? "," : "",
		                         j + 1, share, change, word,
		                         (int)j == m->decided_by ? " (deciding)" : "");
	}
	return buf;
}
