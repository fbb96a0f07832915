/* Regression analysis over the store; see analysis.h. One host at a time: read the head runs
 * and up to `history` earlier runs with their cells and the reference kernels beside them, line
 * the cells up by key, hand p50 and p99 of every cell to aw_detect() as one family, turn what
 * it could not decide into suspects (re-measure) or, once the confirmation budget is spent,
 * inconclusive cells, and rank the answers. */
#include "analysis_internal.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/log.h"
#include "aw/stats.h"
#include "aw/strmap.h"
#include "aw/util.h"
#include "control.h"
#include "stattest.h"

void aw_analysis_opts_default(struct aw_analysis_opts *o)
{
	const struct aw_detect_opts d = AW_DETECT_OPTS_DEFAULT;

	memset(o, 0, sizeof(*o));
	o->baseline_ref = "main";
	o->history = 40;
	o->detect = d;
	o->thresholds = NULL;
	o->confirm_runs = 2;
	o->confirm_budget = 10;
}
/* ---- verdicts ---- */

static double threshold_for(const struct aw_thresholds *th, int p99, const struct series *s)
{
	if (!th)
		return p99 ? 0.25 : 0.05;
	if (p99)
		return aw_threshold_for(th->p99_rules, th->n_p99_rules, s->op, s->reader, s->key,
		                        th->p99);
	return aw_threshold_for(th->p50_rules, th->n_p50_rules, s->op, s->reader, s->key, th->p50);
}

/* The gate level of a cell: the first rule with `gate:` that matches, else its default. */
static enum aw_gate gate_for(const struct aw_thresholds *th, const struct aw_cell_verdict *c,
                             bool warn_only)
{
	enum aw_gate def = warn_only ? AW_GATE_WARN : AW_GATE_FAIL;

	if (!th)
		return def;
	return (enum aw_gate)aw_threshold_for(th->gate_rules, th->n_gate_rules, c->op, c->reader,
	                                      c->key, (double)def);
}

/* Whether a cell's p99 weighs in its verdict: its gate is fail and so is thresholds.yaml's
 * p99_gate (warn by default: a VM's tails drift too far to gate a merge). */
static bool p99_gates(const struct aw_analysis_opts *o, const struct aw_cell_verdict *c)
{
	return c->gate == AW_GATE_FAIL &&
	       (!o->thresholds || o->thresholds->p99_gate == AW_GATE_FAIL);
}

/* How bad a verdict is, for ranking: regressed first. */
static int severity(enum aw_verdict v)
{
	switch (v) {
	case AW_VERDICT_REGRESSED:
		return 7;
	case AW_VERDICT_INCONCLUSIVE:
		return 6;
	case AW_VERDICT_SUSPECT:
		return 5;
	case AW_VERDICT_IMPROVED:
		return 4;
	case AW_VERDICT_NOISY:
		return 3;
	case AW_VERDICT_NEW:
		return 2;
	case AW_VERDICT_MISSING:
		return 1;
	default:
		break;
	}
	return 0;
}

/* The size of the change behind a cell's verdict (the metric that gave it). */
static double magnitude(const struct aw_cell_verdict *c)
{
	double m = c->p50.verdict == c->verdict ? c->p50.change : c->p99.change;

	return isnan(m) ? 0 : fabs(m);
}

/* Regressed first, then inconclusive, suspect, improved, noisy, new, missing, unchanged; the
 * largest change first within a verdict, then by key. */
static int cmp_cells(const void *a, const void *b)
{
	const struct aw_cell_verdict *x = a, *y = b;
	int d = severity(y->verdict) - severity(x->verdict);
	double mx = magnitude(x), my = magnitude(y);

	if (d)
		return d;
	if (mx != my)
		return mx < my ? 1 : -1;
	return strcmp(x->key, y->key);
}

/* The verdict of a metric once confirmation is weighed: a move shown by fewer head runs than
 * confirm_runs (runs measured in a memory state the baseline never saw do not count) is
 * suspect, and inconclusive once the budget is spent if such runs are why; an undecided metric is
 * suspect while its budget lasts, then inconclusive when its estimate reaches the threshold; one
 * whose estimate stays under it and that even the whole budget could not bound is noisy, at once
 * when its noise says so: the bound the whole budget would give, about the estimate as it stands,
 * would still cross the threshold. Re-measurements are spent on a move whose estimate reaches the
 * threshold (to confirm it) and on a cell they could clear; a 10 ns lookup with a 7% noise and a
 * 5% threshold that read 1% slower is neither, and is said to be noisy after one run instead of
 * ten (on the recordings, going on to ten caught 1-4 more heads of a shape and passed up to 7
 * more silently: runs that agree by chance bound a move the first run hid). */
static enum aw_verdict confirmed(const struct aw_detect_result *r, double threshold,
                                 const struct aw_analysis_opts *o)
{
	unsigned need = o->confirm_runs > 1 ? o->confirm_runs : 1;
	double reach;

	switch (r->verdict) {
	case AW_VERDICT_REGRESSED:
	case AW_VERDICT_IMPROVED:
		if (r->agree_n >= need)
			return r->verdict;
		if (aw_analysis_budget_left(o, r->head_n))
			return AW_VERDICT_SUSPECT;
		/* the budget is spent: a move that only runs in a memory state the baseline
		 * never saw showed cannot be vouched for either way */
		return r->unseen_n ? AW_VERDICT_INCONCLUSIVE : r->verdict;
	case AW_VERDICT_UNKNOWN:
		break;
	default:
		return r->verdict;
	}
	/* head runs that each decided nothing (measured with a reference beyond anything usual in
	 * the history: off_band(), detect_odd_state()) showed no noise to call: re-measured while
	 * the budget lasts, then inconclusive */
	if (r->head_n && r->off_n + r->odd_n >= r->head_n)
		return o->confirm_runs > 1 && aw_analysis_budget_left(o, r->head_n)
		           ? AW_VERDICT_SUSPECT
		           : AW_VERDICT_INCONCLUSIVE;
	/* the bound the head's change would have after the whole budget: about the estimate as it
	 * stands, it would still cross the threshold */
	reach = aw_t_quantile(0.05, 30) * r->noise *
	        sqrt(1.0 / (1 + o->confirm_budget) + 1.0 / (r->window_n ? r->window_n : 1));
	if (fabs(log1p(r->change)) + reach >= log1p(threshold) &&
	    !(log1p(r->change) >= log1p(threshold)))
		return AW_VERDICT_NOISY;
	if (o->confirm_runs > 1 && aw_analysis_budget_left(o, r->head_n))
		return AW_VERDICT_SUSPECT;
	/* the budget is spent: bounded under the threshold (only faster than it could tell) is a
	 * pass; a change whose estimate reaches the threshold, but that the runs could not
	 * confirm, is inconclusive; one whose estimate stays under it is noise the runs could not
	 * bound */
	if (log1p(r->change_hi) < log1p(threshold))
		return AW_VERDICT_UNCHANGED;
	return log1p(r->change) >= log1p(threshold) ? AW_VERDICT_INCONCLUSIVE : AW_VERDICT_NOISY;
}

/* The name of reference slot q: a kernel's, or the memory state's. */
static const char *slot_name(const struct table *t, int q)
{
	return q == MEMORY ? MEMORY_NAME : q == GATHER ? GATHER_NAME : t->kernel[q];
}

/* The kernels together (AW_DETECT_COMBINED) into m: their names joined by '+' in buf (size
 * bytes) and each one's slope in m->ref_terms, both in slot order. Returns buf. */
static const char *combination(const struct table *t, const struct aw_detect_result *r,
                               struct aw_metric_verdict *m, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = 0;
	for (int q = 0; q < KERNELS && (size_t)q < t->n_kernels; q++) {
		if (!isfinite(r->ref_terms[q]) || m->n_ref_terms >= AW_VERDICT_REFS)
			continue;
		m->ref_terms[m->n_ref_terms++] = r->ref_terms[q];
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "+" : "",
			                        t->kernel[q]);
	}
	return buf;
}

/* The document's form of one metric (names of the table's kernels copied). */
static int to_metric(const struct aw_detect_result *r, enum aw_verdict verdict, double threshold,
                     const struct table *t, struct aw_metric_verdict *m)
{
	char name[160];

	memset(m, 0, sizeof(*m));
	m->verdict = verdict;
	m->baseline = r->baseline;
	m->head = r->head;
	m->change = r->change;
	m->change_lo = r->change_lo;
	m->change_hi = r->change_hi;
	m->change_ns = r->change_ns;
	m->absolute = r->absolute;
	m->noise = r->noise;
	m->pvalue = r->pvalue;
	m->qvalue = r->qvalue;
	m->threshold = threshold;
	m->window = r->window_n;
	m->head_n = r->head_n;
	m->agree_n = r->agree_n;
	m->bimodal = r->bimodal;
	m->ref_slope = r->ref_slope;
	m->ref_gain = r->ref_gain;
	memcpy(m->levels, r->levels, sizeof(m->levels));
	m->n_levels = r->n_levels;
	m->dominant = r->dominant;
	m->decided_by = r->decided_by;
	if ((r->reference == AW_DETECT_COMBINED &&
	     aw_set_str(&m->reference, combination(t, r, m, name, sizeof(name)))) ||
	    (r->reference >= 0 && r->reference != AW_DETECT_COMBINED &&
	     aw_set_str(&m->reference, slot_name(t, r->reference))) ||
	    (r->level_ref >= 0 && aw_set_str(&m->level_by, slot_name(t, r->level_ref))) ||
	    (r->own_levels && aw_set_str(&m->level_by, "its own runs")) ||
	    (r->note[0] && aw_set_str(&m->note, r->note)))
		return -ENOMEM;
	return 0;
}

/* A side's values of one metric, dense (runs lacking the cell dropped), with each kernel's
 * values aligned; returns how many. */
static size_t dense(const struct side *d, bool p99, double *v, double *se, double **ref)
{
	size_t k = 0;

	for (size_t i = 0; i < d->n; i++) {
		double x = p99 ? d->p99[i] : d->p50[i];

		if (!isfinite(x))
			continue;
		v[k] = x;
		if (se)
			se[k] = d->se[i];
		for (int q = 0; q < REFS; q++)
			ref[q][k] = d->ref[q][i];
		k++;
	}
	return k;
}

/* Judges every series of the table (p50 and p99 as one family, or two: the cells re-measured
 * apart). */
static int judge(struct table *t, const struct aw_analysis_opts *o, bool compare,
                 struct aw_host_verdict *v)
{
	struct aw_detect_input *in = NULL;
	struct aw_detect_result *out = NULL;
	double *buf = NULL;
	bool *conf = NULL;
	size_t n = t->n, wh = 1, wx = 1, wb = 1, per;
	int rc = -ENOMEM;

	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		wh = t->s[i].hist.n > wh ? t->s[i].hist.n : wh;
		wx = t->s[i].head.n > wx ? t->s[i].head.n : wx;
		wb = t->s[i].base.n > wb ? t->s[i].base.n : wb;
	}
	/* per metric: history, its se, head, its se, base, each with REFS kernels, each side as
	 * long as its own longest (a head of one run in as much room as the history's 40 had
	 * this buffer at 6 MB for 300 cells, every page of it written, and faulted in, anew) */
	per = (2 + REFS) * wh + (2 + REFS) * wx + (1 + REFS) * wb;
	in = calloc(2 * n, sizeof(*in));
	out = calloc(2 * n, sizeof(*out));
	conf = calloc(2 * n * MAX_HEAD_RUNS, sizeof(*conf));
	buf = malloc(2 * n * per * sizeof(double));
	v->cells = calloc(n, sizeof(*v->cells));
	if (!in || !out || !buf || !conf || !v->cells)
		goto out;
	for (size_t i = 0; i < 2 * n; i++) {
		const struct series *s = &t->s[i / 2];
		bool p99 = i % 2;
		double *b = buf + i * per, *hr[REFS], *xr[REFS], *br[REFS];
		double *hv = b, *hse = hv + wh, *xv = hse + (1 + REFS) * wh, *xse = xv + wx;
		double *bv = xse + (1 + REFS) * wx;
		size_t nh, nx, nb;

		for (int q = 0; q < REFS; q++) {
			hr[q] = hse + (1 + (size_t)q) * wh;
			xr[q] = xse + (1 + (size_t)q) * wx;
			br[q] = bv + (1 + (size_t)q) * wb;
		}
		nh = dense(&s->hist, p99, hv, p99 ? NULL : hse, hr);
		nx = dense(&s->head, p99, xv, p99 ? NULL : xse, xr);
		for (size_t h = 0, k = 0; h < s->head.n; h++)
			if (isfinite(p99 ? s->head.p99[h] : s->head.p50[h]))
				conf[i * MAX_HEAD_RUNS + k++] = s->head_conf[h];
		nb = dense(&s->base, p99, bv, NULL, br);
		in[i] = (struct aw_detect_input){
		    .history = hv,
		    .history_se = p99 ? NULL : hse,
		    .n_history = nh,
		    .head = xv,
		    .head_se = p99 ? NULL : xse,
		    .head_confirmation = conf + i * MAX_HEAD_RUNS,
		    /* heads without a p99 (imports) leave that metric out */
		    .n_head = p99 && nx != s->head.n ? 0 : nx,
		    .base = compare ? bv : NULL,
		    .n_base = nb,
		    .threshold = threshold_for(o->thresholds, p99, s),
		    .group = 2 * s->kind + p99,
		    /* the cells re-measured (as many head runs as a confirmation needs, where the
		     * others have one) are a family of their own: the first run selected them,
		     * their confirmation tests them, and the cells one run cleared do not dilute
		     * it */
		    .family = o->confirm_runs > 1 && s->head.n >= o->confirm_runs};
		/* only the kernels a cell cannot move itself (aw_ref_independent()), and the run's
		 * memory states */
		for (int q = 0; q < REFS; q++) {
			int k = (size_t)q < t->n_kernels ? aw_ref_lookup(t->kernel[q]) : -1;
			bool use = q >= KERNELS || (k >= 0 && aw_ref_independent((enum aw_ref)k));

			in[i].history_ref[q] = use ? hr[q] : NULL;
			in[i].head_ref[q] = use ? xr[q] : NULL;
			in[i].base_ref[q] = use ? br[q] : NULL;
		}
		if (t->state_kernel[1] >= 0) {
			in[i].history_cell_gather = hr[t->state_kernel[1]];
			in[i].head_cell_gather = xr[t->state_kernel[1]];
		}
	}
	rc = aw_detect(in, 2 * n, &o->detect, out);
	if (rc)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct series *s = &t->s[i];
		struct aw_cell_verdict *c = &v->cells[i];
		enum aw_verdict v50 = confirmed(&out[2 * i], in[2 * i].threshold, o);
		enum aw_verdict v99 = confirmed(&out[2 * i + 1], in[2 * i + 1].threshold, o);

		c->key = s->key;
		c->op = s->op;
		c->reader = s->reader;
		c->subject = s->subject;
		s->key = s->op = s->reader = s->subject = NULL;
		c->cpu = s->cpu == AW_NONE ? -1 : s->cpu;
		c->gate = gate_for(o->thresholds, c, s->warn_only);
		c->n_head = s->head.n;
		v->n_cells++;
		if (s->failed && !s->in_head)
			v50 = AW_VERDICT_MISSING;
		else if (!s->in_head && v50 == AW_VERDICT_UNKNOWN)
			v50 = AW_VERDICT_MISSING;
		if (!s->in_head && (v99 == AW_VERDICT_UNKNOWN || v99 == AW_VERDICT_SUSPECT ||
		                    v99 == AW_VERDICT_INCONCLUSIVE))
			v99 = AW_VERDICT_MISSING;
		rc = to_metric(&out[2 * i], v50, in[2 * i].threshold, t, &c->p50);
		if (!rc)
			rc = to_metric(&out[2 * i + 1], v99, in[2 * i + 1].threshold, t, &c->p99);
		if (!rc && s->failed && !s->in_head) {
			free(c->p50.note);
			c->p50.note = aw_asprintf("the head's cell failed: %.100s", s->failed);
			rc = c->p50.note ? 0 : -ENOMEM;
		}
		if (rc)
			goto out;
		/* p99 alone cannot make a cell new or missing when p50 is judged, and weighs only
		 * as far as thresholds.yaml's p99_gate lets it (a tail that must not fail a gate
		 * is a warning) */
		if (v99 == AW_VERDICT_MISSING || v99 == AW_VERDICT_NEW || !p99_gates(o, c))
			c->verdict = v50;
		else
			c->verdict = severity(v99) > severity(v50) ? v99 : v50;
		v->counts[c->verdict]++;
		if ((c->verdict == AW_VERDICT_REGRESSED || c->verdict == AW_VERDICT_SUSPECT) &&
		    c->gate == AW_GATE_WARN)
			v->warnings++;
		else if (v99 == AW_VERDICT_REGRESSED && !p99_gates(o, c) && c->gate != AW_GATE_OFF)
			v->warnings++;
	}
	qsort(v->cells, v->n_cells, sizeof(*v->cells), cmp_cells);
	rc = 0;
out:
	free(in);
	free(out);
	free(buf);
	free(conf);
	return rc;
}

/* fail when a cell of gate level fail regressed (confirmed), else inconclusive when one's
 * evidence stayed split (its change reaches the threshold, unconfirmed), else unconfirmed when
 * one is suspect, else pass; warn and off cells never change it. A noisy cell (its change
 * under the threshold, its bound beyond it: the cell's own noise, not this commit) is listed
 * and changes no status. */
static enum aw_verdict host_status(const struct aw_host_verdict *v)
{
	enum aw_verdict st = AW_VERDICT_PASS;

	for (size_t i = 0; i < v->n_cells; i++) {
		if (v->cells[i].gate != AW_GATE_FAIL)
			continue;
		if (v->cells[i].verdict == AW_VERDICT_REGRESSED)
			return AW_VERDICT_FAIL;
		if (v->cells[i].verdict == AW_VERDICT_INCONCLUSIVE)
			st = AW_VERDICT_INCONCLUSIVE;
		else if (v->cells[i].verdict == AW_VERDICT_SUSPECT && st == AW_VERDICT_PASS)
			st = AW_VERDICT_UNCONFIRMED;
	}
	return st;
}

/* A run's reference kernel `k`: the median log of its values beside its first 64 cells. */
static double run_kernel(const struct run_ref *r, size_t k)
{
	double buf[64];
	size_t m = 0;

	for (size_t i = 0; i < r->n_ref[k] && m < 64; i++)
		if (isfinite(r->ref[k][i]))
			buf[m++] = log(r->ref[k][i]);
	if (!m)
		return NAN;
	aw_sort_doubles(buf, m);
	return aw_quantile_sorted(buf, m, 0.5);
}

/* Each head run's reference kernels over the baseline runs' median, and whether one moved by
 * more than DISTURB_MIN and DISTURB_K of the spread those runs show: what the reader sees of
 * the machine while the head was measured (the verdicts weigh the kernels cell by cell). */
static int run_states(const struct run_list *base, const struct run_list *head,
                      struct aw_host_verdict *v)
{
	v->runs = calloc(head->n ? head->n : 1, sizeof(*v->runs));
	if (!v->runs)
		return -ENOMEM;
	v->n_runs = head->n;
	for (size_t h = 0; h < head->n; h++) {
		const struct run_ref *x = &head->r[h];
		struct aw_run_state *st = &v->runs[h];

		for (size_t k = 0; k < x->n_kernels && k < AW_VERDICT_REFS; k++) {
			double f[64], g[64], centre, spread, d;
			size_t n = 0;

			for (size_t j = base->n > 64 ? base->n - 64 : 0; j < base->n; j++)
				for (size_t q = 0; q < base->r[j].n_kernels; q++)
					if (!strcmp(base->r[j].kernel[q], x->kernel[k]) &&
					    isfinite(run_kernel(&base->r[j], q)))
						f[n++] = run_kernel(&base->r[j], q);
			if (aw_set_str(&st->kernel[st->n], x->kernel[k]))
				return -ENOMEM;
			st->ratio[st->n++] = NAN;
			if (n < 3)
				continue;
			aw_sort_doubles(f, n);
			centre = aw_quantile_sorted(f, n, 0.5);
			spread = 1.4826 * aw_mad_sorted(f, n, g);
			d = run_kernel(x, k) - centre;
			st->ratio[st->n - 1] = exp(d);
			if (fabs(d) > DISTURB_MIN && fabs(d) > DISTURB_K * spread)
				st->disturbed = true;
		}
		v->disturbed = v->disturbed || st->disturbed;
	}
	return 0;
}

int aw_analysis_host(struct store_conn *c, const struct aw_analysis_opts *o, const char *project,
                     const char *commit, const char *base_commit, const char *host,
                     struct aw_host_verdict *out, char **err)
{
	struct run_list head = {.max = MAX_HEAD_RUNS},
	                base = {.max = o->history, .firsts_only = true};
	struct run_list ref = {.max = MAX_HEAD_RUNS};
	struct table t = {.detect = &o->detect,
	                  .state_kernel = {-1, -1},
	                  .globs = o->globs,
	                  .n_globs = o->n_globs < AW_ANALYSIS_MAX_GLOBS ? o->n_globs
	                                                                : AW_ANALYSIS_MAX_GLOBS};
	struct store_run_filter f = {
	    .project = project, .host = host, .commit = commit, .limit = MAX_HEAD_RUNS};
	int rc;

	memset(out, 0, sizeof(*out));
	out->confirm_budget = o->confirm_budget;
	if (aw_set_str(&out->host, host)) {
		rc = -ENOMEM;
		goto out;
	}
	rc = store_list_runs(c, &f, analysis_collect_run, &head);
	if (!rc)
		rc = analysis_list_references(c, &head);
	if (rc)
		goto fail;
	if (!head.n) {
		out->status = AW_VERDICT_INCOMPLETE;
		out->reason = aw_asprintf("no run of commit %s on host %s", commit, host);
		rc = out->reason ? 0 : -ENOMEM;
		goto out;
	}
	out->head_runs = calloc(head.n, sizeof(char *));
	if (!out->head_runs) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < head.n; i++) {
		out->head_runs[i] = head.r[i].run_id;
		head.r[i].run_id = NULL;
	}
	out->n_head_runs = head.n;
	if (base_commit) {
		struct store_run_filter bf = {.project = project,
		                              .host = host,
		                              .commit = base_commit,
		                              .limit = MAX_HEAD_RUNS};

		rc = store_list_runs(c, &bf, analysis_collect_run, &ref);
		if (rc)
			goto fail;
		analysis_keep_comparable(&ref, &head.r[0]);
		rc = analysis_list_references(c, &ref);
		if (rc)
			goto fail;
	}
	/* earlier commits on the baseline ref: before the head's position, and at that position
	 * (commits whose times tie: git's are whole seconds, and a rebase gives a series one)
	 * those measured before the head's first run; skip_commit leaves out the head's runs
	 * wherever they are. With a base commit the history only measures the noise. */
	base.skip_commit = commit;
	rc = store_ref_history(c, project, host, o->baseline_ref, head.r[0].order_us,
	                       head.r[head.n - 1].seq, o->history, analysis_collect_run, &base);
	if (rc)
		goto fail;
	analysis_keep_comparable(&base, &head.r[0]);
	rc = analysis_list_references(c, &base);
	if (rc)
		goto fail;
	out->n_baseline_runs = base_commit ? ref.n : base.n;
	t.index = aw_strmap_new(MAX_CELLS);
	if (!t.index) {
		rc = -ENOMEM;
		goto out;
	}
	rc = analysis_read_runs(c, &t, &base, READ_HISTORY);
	if (!rc)
		rc = analysis_read_runs(c, &t, &ref, READ_BASE);
	if (!rc)
		rc = analysis_read_runs(c, &t, &head, READ_HEAD);
	if (rc)
		goto fail;
	analysis_fill_memory(&t);
	out->globs_matched = t.globs_matched;
	rc = run_states(base_commit ? &ref : &base, &head, out);
	if (!rc)
		rc = judge(&t, o, base_commit != NULL, out);
	if (!rc && !base_commit) /* the host's own changes (control.c) */
		rc = aw_control_check(c, o, project, commit, host, out, err);
	if (rc)
		goto out;
	out->status = host_status(out);
	goto out;
fail:
	aw_errorf(err, rc, "cannot read the runs of %s on %s: %s", commit, host, strerror(-rc));
out:
	if (rc == -ENOMEM)
		aw_errorf(err, rc, "out of memory judging %s on %s", commit, host);
	if (rc)
		aw_host_verdict_release(out);
	analysis_table_release(&t);
	analysis_run_list_release(&head);
	analysis_run_list_release(&base);
	analysis_run_list_release(&ref);
	return rc;
}

/* ---- the cached verdict ---- */

struct cached {
	const char *baseline_ref;
	json_t *doc; /* the cached JSON, when of that baseline ref */
};

static int take_cached(const struct store_verdict *sv, void *cls)
{
	struct cached *x = cls;

	if (sv->json && sv->baseline_ref && !strcmp(sv->baseline_ref, x->baseline_ref))
		x->doc = json_loads(sv->json, 0, NULL);
	return 1;
}

struct run_ids {
	char **id;
	size_t n;
	bool differ; /* a run of the commit the cached verdict did not see */
};

static int check_run(const struct store_run *run, void *cls)
{
	struct run_ids *x = cls;
	bool seen = false;

	for (size_t i = 0; i < x->n && !seen; i++)
		seen = !strcmp(x->id[i], run->run_id);
	x->differ = x->differ || !seen;
	return 0;
}

int aw_analysis_host_cached(struct store_conn *c, const struct aw_analysis_opts *o,
                            const char *project, const char *commit, const char *host,
                            struct aw_host_verdict *out, bool *cached, char **err)
{
	struct cached x = {o->baseline_ref, NULL};
	struct store_run_filter f = {
	    .project = project, .host = host, .commit = commit, .limit = MAX_HEAD_RUNS + 1};
	struct run_ids ids = {0};
	int rc;

	*cached = false;
	if (o->n_globs)
		return aw_analysis_host(c, o, project, commit, NULL, host, out, err);
	rc = store_verdict_list(c, project, commit, host, 1, take_cached, &x);
	if (rc < 0)
		return aw_errorf(err, rc, "cannot read the cached verdict of %s on %s: %s", commit,
		                 host, strerror(-rc));
	if (x.doc && !aw_host_verdict_parse(x.doc, out, NULL)) {
		ids.id = out->head_runs;
		ids.n = out->n_head_runs;
		rc = store_list_runs(c, &f, check_run, &ids);
		if (!rc && !ids.differ && out->n_head_runs &&
		    out->status != AW_VERDICT_INCOMPLETE) {
			*cached = true;
			json_decref(x.doc);
			return 0;
		}
		aw_host_verdict_release(out);
	}
	json_decref(x.doc);
	return aw_analysis_host(c, o, project, commit, NULL, host, out, err);
}

/* ---- change points ---- */

struct cp_set {
	struct store_changepoint *p;
	size_t n, cap;
};

static int cp_add(struct cp_set *s, const struct store_changepoint *p)
{
	if (aw_array_reserve(&s->p, s->n, &s->cap, sizeof(*s->p), 64))
		return -ENOMEM;
	s->p[s->n++] = *p;
	return 0;
}

int aw_analysis_changepoints(struct store_conn *c, const struct aw_analysis_opts *o,
                             const char *project, const char *host, const char *ref, char **err)
{
	struct run_list runs = {.max = o->history, .firsts_only = true};
	struct table t = {.detect = &o->detect, .state_kernel = {-1, -1}};
	struct cp_set set = {0};
	struct aw_changepoint cps[MAX_CP];
	char now[AW_TIME_LEN];
	double *x = NULL;
	size_t *at = NULL;
	int rc;

	aw_time_now(now);
	rc = store_ref_history(c, project, host, ref, INT64_MAX, INT64_MAX, o->history,
	                       analysis_collect_run, &runs);
	if (rc)
		goto fail;
	analysis_keep_comparable(&runs, runs.n ? &runs.r[0] : NULL);
	rc = analysis_list_references(c, &runs);
	if (rc)
		goto fail;
	if (runs.n < 2 * o->detect.cp.min_segment)
		goto store; /* too short for any change: clear what was there */
	t.index = aw_strmap_new(MAX_CELLS);
	x = malloc(runs.n * sizeof(*x));
	at = malloc(runs.n * sizeof(*at));
	if (!t.index || !x || !at) {
		rc = -ENOMEM;
		goto out;
	}
	rc = analysis_read_runs(c, &t, &runs, READ_HISTORY);
	if (rc)
		goto fail;
	for (size_t i = 0; !rc && i < t.n; i++) {
		for (int m = 0; !rc && m < 2; m++) {
			const double *v = m ? t.s[i].hist.p99 : t.s[i].hist.p50;
			double threshold = threshold_for(o->thresholds, m, &t.s[i]);
			size_t n = 0;
			int k;

			for (size_t r = 0; r < t.s[i].hist.n; r++) {
				if (!isfinite(v[r]))
					continue;
				x[n] = v[r];
				at[n++] = r;
			}
			k = aw_changepoints(x, n, &o->detect.cp, cps, MAX_CP);
			for (int j = 0; !rc && j < k; j++) {
				const struct run_ref *run = &runs.r[at[cps[j].index]];
				double move = fabs(cps[j].after - cps[j].before);

				/* A move the verdict would never call a change (under the cell's
				 * threshold, or under min_abs_ns from a level below it) is no news
				 * on a chart either. */
				if (!(move >= threshold * fabs(cps[j].before)) ||
				    (move < o->detect.min_abs_ns &&
				     fabs(cps[j].before) < o->detect.min_abs_ns))
					continue;
				struct store_changepoint p = {.cell_key = t.s[i].key,
				                              .metric = m ? "p99" : "p50",
				                              .commit = run->commit,
				                              .run_id = run->run_id,
				                              .order_us = run->order_us,
				                              .before = cps[j].before,
				                              .after = cps[j].after,
				                              .pvalue = cps[j].pvalue,
				                              .computed_at = now};

				rc = cp_add(&set, &p);
			}
			if (k < 0)
				rc = k;
		}
	}
	if (rc)
		goto out;
store:
	rc = store_changepoints_replace(c, project, host, ref, set.p, set.n);
	if (rc)
		goto fail;
	goto out;
fail:
	aw_errorf(err, rc, "cannot compute the change points of %s on %s: %s", host, ref,
	          strerror(-rc));
out:
	if (rc == -ENOMEM)
		aw_errorf(err, rc, "out of memory computing change points of %s", host);
	free(set.p);
	free(x);
	free(at);
	analysis_table_release(&t);
	analysis_run_list_release(&runs);
	return rc;
}

/* ---- after ingest ---- */

struct order_of {
	int64_t order_us, seq;
};

static int take_order(const struct store_run *run, void *cls)
{
	((struct order_of *)cls)->order_us = run->order_us;
	((struct order_of *)cls)->seq = run->seq;
	return 1;
}

int aw_analysis_after_ingest(struct store_conn *c, const struct aw_analysis_opts *o,
                             const char *project, const char *commit, const char *host,
                             const char *ref, char **err)
{
	return aw_analysis_after_ingest_verdict(c, o, project, commit, host, ref, NULL, err);
}

int aw_analysis_after_ingest_verdict(struct store_conn *c, const struct aw_analysis_opts *o,
                                     const char *project, const char *commit, const char *host,
                                     const char *ref, struct aw_host_verdict *keep, char **err)
{
	struct aw_host_verdict v;
	struct store_run_filter f = {
	    .project = project, .host = host, .commit = commit, .limit = 1};
	struct order_of ord = {0, INT64_MAX};
	int64_t newest = 0;
	struct store_verdict sv;
	char now[AW_TIME_LEN], *text = NULL;
	json_t *doc = NULL;
	int rc;

	if (keep)
		memset(keep, 0, sizeof(*keep));
	/* The change points, unless a later run of the host on the ref is stored: its own task
	 * (queued, or done over a window that holds this run) computes them. A backlog of
	 * uploads then reads each host's newest window once, not once for each of its runs,
	 * and a task that ends after a later one's leaves the newer change points in place. */
	rc = commit ? store_list_runs(c, &f, take_order, &ord) : 0;
	if (rc >= 0)
		rc = store_ref_newest_seq(c, project, host, ref, &newest);
	if (rc < 0)
		return aw_errorf(err, rc, "cannot read the runs of %s on %s: %s", host, ref,
		                 strerror(-rc));
	rc = commit && newest > ord.seq ? 0
	                                : aw_analysis_changepoints(c, o, project, host, ref, err);
	if (rc)
		return rc;
	if (!commit)
		return 0;
	rc = aw_analysis_host(c, o, project, commit, NULL, host, &v, err);
	if (rc)
		return rc;
	doc = aw_host_verdict_json(&v, false);
	text = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
	if (!text) {
		rc = aw_errorf(err, -ENOMEM, "out of memory caching the verdict of %s", commit);
		goto out;
	}
	aw_time_now(now);
	sv = (struct store_verdict){.project = project,
	                            .commit = commit,
	                            .host = host,
	                            .baseline_ref = o->baseline_ref,
	                            .status = aw_verdict_name(v.status),
	                            .json = text,
	                            .computed_at = now,
	                            .order_us = ord.order_us};
	rc = store_verdict_put(c, &sv);
	if (rc)
		aw_errorf(err, rc, "cannot cache the verdict of %s on %s: %s", commit, host,
		          strerror(-rc));
out:
	free(text);
	json_decref(doc);
	if (keep && !rc)
		*keep = v; /* handed over */
	else
		aw_host_verdict_release(&v);
	return rc;
}
