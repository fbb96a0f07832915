/* The host's own changes in a verdict; see control.h. The head run is the commit's newest
 * first run; the baseline, the newest runs of the baseline ref before it on the same platform.
 * The control's series are the control cell's p50 and each reference kernel's median over the
 * run's cells; a shift is the head's value over the baseline runs' median. */
#include "control.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "aw/stats.h"
#include "aw/util.h"

#define BASELINE_RUNS 10
#define HEAD_RUNS     16
#define N_SERIES      (1 + AW_REF_COUNT) /* the control cell, then each reference kernel */
#define TEXT_MAX      400

static double median_of(double *v, size_t n)
{
	aw_sort_doubles(v, n);
	return aw_quantile_sorted(v, n, 0.5);
}

struct run_pick {
	int64_t seq, order_us;
	char run_id[AW_UUID_LEN + 1];
	char platform[AW_SHA256_HEX_LEN + 1];
	bool has_reference;
	double value[N_SERIES]; /* NAN: none */
};

struct runs {
	struct run_pick r[HEAD_RUNS]; /* (HEAD_RUNS >= BASELINE_RUNS) */
	size_t n, max;
	const char *skip_commit;
	const char *platform; /* keep runs of this platform only (NULL: any) */
	bool confirmations;   /* keep re-measurements too (the head's newest state) */
};

/* The median of each reference kernel's values over the run's cells (the run's parsed
 * references, analysis_run_references()). 0 or a negative errno. */
static int reference_medians(struct store_conn *c, const struct run_pick *p, double *out)
{
	struct run_ref x = {0};
	int rc = p->has_reference ? analysis_run_references(c, p->seq, &x) : 0;

	for (int k = 0; k < AW_REF_COUNT; k++)
		out[k] = NAN;
	for (size_t i = 0; !rc && i < x.n_kernels; i++) {
		int k = aw_ref_lookup(x.kernel[i]);
		double buf[256];
		size_t n = 0;

		/* the memory counts once, as the walk: the gather feels the same caches, and a
		 * median of the series must not hear one cause twice */
		if (k < 0 || k == AW_REF_MEMGATHER)
			continue;
		for (size_t j = 0; j < x.n_ref[i] && n < 256; j++)
			if (x.ref[i][j] > 0)
				buf[n++] = x.ref[i][j];
		out[k] = n ? median_of(buf, n) : NAN;
	}
	analysis_references_release(&x);
	return rc;
}

static int on_run(const struct store_run *r, void *cls)
{
	struct runs *l = cls;
	struct run_pick *p;

	if (l->n >= l->max || (r->confirmation_of && !l->confirmations) || !r->commit ||
	    (l->skip_commit && !strcmp(r->commit, l->skip_commit)) ||
	    (l->platform && r->platform_hash && strcmp(r->platform_hash, l->platform)))
		return 0;
	p = &l->r[l->n++];
	p->seq = r->seq;
	p->order_us = r->order_us;
	snprintf(p->run_id, sizeof(p->run_id), "%s", r->run_id);
	snprintf(p->platform, sizeof(p->platform), "%s", r->platform_hash ? r->platform_hash : "");
	p->has_reference = r->has_reference;
	for (int k = 0; k < N_SERIES; k++)
		p->value[k] = NAN;
	return 0;
}

static int on_cell(const struct aw_cell *cell, void *cls)
{
	struct run_pick *p = cls;

	if (cell->subject && !strcmp(cell->subject, AW_CONTROL_SUBJECT) &&
	    cell->status == AW_CELL_OK && cell->p50 > 0)
		p->value[0] = cell->p50;
	return 0;
}

/* The changing part of a host object (platform and changing fields, timer_hz left out). */
static int on_fingerprint(const char *doc, void *cls)
{
	json_t **out = cls, *host = json_loads(doc, 0, NULL);

	*out = json_object();
	if (*out && json_is_object(json_object_get(host, "changing")))
		json_object_update(*out, json_object_get(host, "changing"));
	if (*out)
		json_object_del(*out, "timer_hz");
	json_decref(host);
	return *out ? 0 : -ENOMEM;
}

/* "kernel 6.1.0-57 -> 6.1.0-58, microcode 0xa -> 0xb" into buf, or "" when nothing differs. */
static void fingerprint_change(const json_t *before, const json_t *after, char *buf, size_t size)
{
	const char *k;
	json_t *v;
	size_t n = 0;

	buf[0] = '\0';
	json_object_foreach ((json_t *)after, k, v) {
		const json_t *was = json_object_get(before, k);
		char from[64], to[64];

		if (json_equal(was, v) || n + 8 >= size)
			continue;
		snprintf(from, sizeof(from), "%s",
		         json_is_string(was) ? json_string_value(was) : "none");
		snprintf(to, sizeof(to), "%s", json_is_string(v) ? json_string_value(v) : "none");
		n += (size_t)snprintf(buf + n, size - n, "%s%s %s -> %s", n ? ", " : "", k, from,
		                      to);
		if (n >= size)
			n = size - 1;
	}
}

/* A series' own noise in the baseline runs: the robust spread (1.4826 x MAD) of the logs of its
 * values around their median `median`; 0 with fewer than 3 runs. */
static double series_noise(const double *vals, size_t n, double median)
{
	double logs[BASELINE_RUNS], scratch[BASELINE_RUNS];

	if (n < 3)
		return 0;
	for (size_t i = 0; i < n; i++)
		logs[i] = log(vals[i] / median);
	aw_sort_doubles(logs, n);
	return 1.4826 * aw_mad_sorted(logs, n, scratch);
}

static const char *series_name(int i)
{
	return i ? aw_ref_name((enum aw_ref)(i - 1)) : AW_CONTROL_SUBJECT " chain";
}

/* A metric that would be a regression but for the host: regressed, suspect or inconclusive
 * (a slowdown the runs measured but could not confirm). */
static bool metric_would_regress(const struct aw_metric_verdict *m)
{
	return (m->verdict == AW_VERDICT_REGRESSED || m->verdict == AW_VERDICT_SUSPECT ||
	        m->verdict == AW_VERDICT_INCONCLUSIVE) &&
	       !(m->change < 0);
}

static bool is_regression(const struct aw_cell_verdict *c)
{
	return metric_would_regress(&c->p50) || metric_would_regress(&c->p99);
}

/* The log change of such a cell: its p50's when that metric would regress, else its p99's. */
static double cell_change(const struct aw_cell_verdict *c)
{
	const struct aw_metric_verdict *m = metric_would_regress(&c->p50) ? &c->p50 : &c->p99;

	return isfinite(m->change) && m->change > -1 ? log1p(m->change) : INFINITY;
}

/* Whether a re-measurement may still come to the cell: confirmation is on, the cell gates (the
 * agent re-measures fail-level suspects) and its budget is not spent. */
static bool may_confirm(const struct aw_analysis_opts *o, const struct aw_cell_verdict *c)
{
	const struct aw_metric_verdict *m = metric_would_regress(&c->p50) ? &c->p50 : &c->p99;

	return o->confirm_runs > 1 && c->gate == AW_GATE_FAIL &&
	       aw_analysis_budget_left(o, m->head_n);
}

/* Gives the would-be regressions of `cv` (the cell and those of its metrics) the verdict `to`,
 * moving the counts; with `note`, each such metric's note becomes a copy of it. Returns 0 or
 * -ENOMEM. */
static int retag(struct aw_host_verdict *v, struct aw_cell_verdict *cv, enum aw_verdict to,
                 const char *note)
{
	struct aw_metric_verdict *m[2] = {&cv->p50, &cv->p99};

	v->counts[cv->verdict]--;
	v->counts[to]++;
	cv->verdict = to;
	for (int i = 0; i < 2; i++) {
		if (!metric_would_regress(m[i]))
			continue;
		m[i]->verdict = to;
		if (note && aw_set_str(&m[i]->note, note))
			return -ENOMEM;
	}
	return 0;
}

/* The control's shift in one head run `h` (log): each series' move, its value over the
 * baseline runs' median (none within the series' own noise there), and their median; *most
 * and *shifted the series that moved most, *n_moves how many series were measured. */
static double run_shift(const struct runs *base, const struct run_pick *h, double *most,
                        int *shifted, size_t *n_moves)
{
	double moves[N_SERIES];

	*most = 0;
	*shifted = -1;
	*n_moves = 0;
	for (int s = 0; s < N_SERIES; s++) {
		double vals[BASELINE_RUNS], b, moved;
		size_t n = 0;

		for (size_t i = 0; i < base->n; i++)
			if (isfinite(base->r[i].value[s]) && base->r[i].value[s] > 0)
				vals[n++] = base->r[i].value[s];
		if (!n || !isfinite(h->value[s]) || !(h->value[s] > 0))
			continue;
		b = median_of(vals, n);
		moved = log(h->value[s] / b);
		/* a series that swings this far in the baseline itself says nothing (a memory
		 * chase beside another tenant's cache traffic) */
		if (moved <= series_noise(vals, n, b) * AW_CONTROL_NOISE_K)
			moved = 0;
		moves[(*n_moves)++] = moved;
		if (moved > *most) {
			*most = moved;
			*shifted = s;
		}
	}
	/* one series alone is no shift of the host: a memory chase 25% slower beside another
	 * tenant's traffic while the chains and the atomics held explains no chain's +40% */
	return *n_moves ? median_of(moves, *n_moves) : 0;
}

int aw_control_check(struct store_conn *c, const struct aw_analysis_opts *o, const char *project,
                     const char *commit, const char *host, struct aw_host_verdict *v, char **err)
{
	struct store_run_filter f = {
	    .project = project, .host = host, .commit = commit, .limit = HEAD_RUNS};
	struct runs head = {.max = HEAD_RUNS, .confirmations = true},
	            base = {.max = BASELINE_RUNS, .skip_commit = commit};
	const struct run_pick *first;
	json_t *fp_head = NULL, *fp_base = NULL;
	char what[TEXT_MAX] = "";
	double shift = 0, most = 0, move;
	size_t n_moves = 0;
	int shifted = -1, rc;

	for (size_t i = 0; i < v->n_cells; i++)
		if (v->cells[i].subject && !strcmp(v->cells[i].subject, AW_CONTROL_SUBJECT))
			v->cells[i].gate =
			    AW_GATE_OFF; /* the control is the host's, never a commit's */
	rc = store_list_runs(c, &f, on_run, &head);
	if (rc || !head.n)
		goto out;
	first = &head.r[head.n - 1]; /* (newest first) */
	base.platform = first->platform[0] ? first->platform : NULL;
	/* (at the head's own position, those measured before it: analysis.c's history) */
	rc = store_ref_history(c, project, host, o->baseline_ref, first->order_us, first->seq,
	                       BASELINE_RUNS * 2, on_run, &base);
	if (rc || !base.n)
		goto out;
	/* the fingerprint: the newest head run's against the newest baseline run's */
	rc = store_run_fingerprint(c, head.r[0].run_id, on_fingerprint, &fp_head);
	if (!rc)
		rc = store_run_fingerprint(c, base.r[0].run_id, on_fingerprint, &fp_base);
	if (rc == -ENOENT)
		rc = 0;
	if (rc)
		goto out;
	if (fp_head && fp_base)
		fingerprint_change(fp_base, fp_head, what, sizeof(what));
	/* the control in each head run (a re-measurement measures the reference kernels beside its
	 * cells, not the control cell) and the baseline runs */
	for (size_t i = 0; !rc && i < head.n; i++)
		rc = store_run_subject_cells(c, head.r[i].seq, AW_CONTROL_SUBJECT, on_cell,
		                             &head.r[i]);
	for (size_t i = 0; !rc && i < base.n; i++)
		rc = store_run_subject_cells(c, base.r[i].seq, AW_CONTROL_SUBJECT, on_cell,
		                             &base.r[i]);
	for (size_t i = 0; !rc && i < head.n; i++)
		rc = reference_medians(c, &head.r[i], head.r[i].value + 1);
	for (size_t i = 0; !rc && i < base.n; i++)
		rc = reference_medians(c, &base.r[i], base.r[i].value + 1);
	if (rc)
		goto out;
	/* the host moved only where it moved in every head run: the least shifted one speaks
	 * (a head run whose control held is judged by the detection like any other) */
	for (size_t i = 0; i < head.n; i++) {
		double m, sh;
		int which;
		size_t nm;

		sh = run_shift(&base, &head.r[i], &m, &which, &nm);
		if (!i || sh < shift) {
			shift = sh;
			most = m;
			shifted = which;
			n_moves = nm;
		}
	}
	for (size_t i = 0; i < v->n_cells; i++) {
		struct aw_cell_verdict *cv = &v->cells[i];

		if (!is_regression(cv))
			continue;
		move = shift;
		if (!what[0] &&
		    !(shifted >= 0 && move >= AW_CONTROL_SHIFT_MIN && move >= cell_change(cv) / 2))
			continue;
		/* with the fingerprint unchanged the shift is a moment of the host, not a change of
		 * it: the cell is measured again while it may be, and the host is blamed only
		 * when the budget ends with every head run still shifted */
		if (!what[0] && may_confirm(o, cv)) {
			char note[TEXT_MAX];

			snprintf(note, sizeof(note),
			         "the control moved %+.1f%% or more in every head run: measured "
			         "again before the move is the host's",
			         100 * expm1(shift));
			rc = retag(v, cv, AW_VERDICT_SUSPECT, note);
			if (rc)
				goto out;
			continue;
		}
		rc = retag(v, cv, AW_VERDICT_HOST_CHANGED, NULL);
		if (rc)
			goto out;
		if (v->host_changed)
			continue;
		if (what[0])
			v->host_changed = aw_asprintf("the host changed: %s", what);
		else
			v->host_changed = aw_asprintf(
			    "the control moved %+.1f%% (the median of its "
			    "%zu series; the most, %s %+.1f%%)",
			    100 * expm1(shift), n_moves, series_name(shifted), 100 * expm1(most));
		if (!v->host_changed) {
			rc = -ENOMEM; /* said once, by the caller */
			goto out;
		}
	}
out:
	if (rc && rc != -ENOMEM)
		aw_errorf(err, rc, "cannot read the control of %s on %s: %s", commit, host,
		          strerror(-rc));
	json_decref(fp_head);
	json_decref(fp_base);
	return rc;
}
