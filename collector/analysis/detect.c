/* Regression verdicts; see detect.h and docs/detection.md. */
#include "detect.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/stats.h"
#include "stattest.h"

#define MAD_TO_SIGMA      1.4826 /* MAD of a normal sample times this estimates sigma */
#define MEDIAN_VAR        1.5708 /* var(median) / var(mean) for normal data: pi / 2 */
#define MAD_EFFICIENCY    0.3675 /* of the MAD relative to the standard deviation, normal data */
#define UNKNOWN_NOISE     0.01   /* assumed when nothing measures the noise */
#define MAX_CHANGE_POINTS 32

double aw_threshold_for(const struct aw_threshold_rule *rules, size_t n, const char *op,
                        const char *reader, const char *key, double fallback)
{
	for (size_t i = 0; i < n; i++) {
		const struct aw_threshold_rule *r = &rules[i];

		if (r->op && fnmatch(r->op, op ? op : "", 0))
			continue;
		if (r->reader && fnmatch(r->reader, reader ? reader : "", 0))
			continue;
		if (r->key && fnmatch(r->key, key ? key : "", 0))
			continue;
		return r->threshold;
	}
	return fallback;
}

/* Median of n values (copied; the input is left alone). NAN when n == 0. */
static double median_copy(const double *v, size_t n, double *scratch)
{
	if (!n)
		return NAN;
	memcpy(scratch, v, n * sizeof(*v));
	aw_sort_doubles(scratch, n);
	return aw_quantile_sorted(scratch, n, 0.5);
}

/* Median of se[i] / v[i] over the runs that have both, or NAN. */
static double within_noise(const double *v, const double *se, size_t n, double *scratch)
{
	size_t k = 0;

	if (!se)
		return NAN;
	for (size_t i = 0; i < n; i++)
		if (isfinite(se[i]) && se[i] >= 0 && v[i] > 0)
			scratch[k++] = se[i] / v[i];
	if (!k)
		return NAN;
	aw_sort_doubles(scratch, k);
	return aw_quantile_sorted(scratch, k, 0.5);
}

/* Two clusters among sorted values: the widest ratio gap with at least two runs on each side.
 * Returns the index of the first value of the upper cluster, or 0. */
static size_t cluster_split(const double *sorted, size_t n, double min_gap)
{
	double best = min_gap;
	size_t at = 0;

	for (size_t i = 2; i + 2 <= n; i++) {
		if (sorted[i - 1] <= 0)
			continue;
		if (sorted[i] / sorted[i - 1] >= best) {
			best = sorted[i] / sorted[i - 1];
			at = i;
		}
	}
	return at;
}

struct work {
	double *a, *b; /* scratch of the largest history or head */
};

/* What phase 1 learns of a cell before the host's noise is pooled. */
struct cell_state {
	double between; /* own relative run-to-run noise (MAD), NAN with < 3 baseline runs */
	double within;  /* the runs' own relative precision, NAN when unknown */
	int zero_base;  /* the baseline was below resolution */
	int pooled;     /* its group's prior is estimated and the cell tested */
};

/* Phase 1: window, medians, the cell's own noise, bimodality and excursions. */
static void observe(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                    struct aw_detect_result *r, struct cell_state *st, struct work *w)
{
	struct aw_changepoint cps[MAX_CHANGE_POINTS];
	const double *win;
	double head_within, exc_lo = INFINITY, exc_hi = 0, center;
	size_t n_win, split, n_exc = 0;
	int k;

	memset(r, 0, sizeof(*r));
	r->verdict = AW_VERDICT_UNCHANGED;
	r->mw_pvalue = NAN;
	r->pvalue = 1;
	r->qvalue = 1;
	r->change = r->change_lo = r->change_hi = NAN;
	r->baseline = r->head = r->noise = NAN;
	r->bimodal = in->tail_bimodal;
	st->between = st->within = NAN;
	st->zero_base = 0;
	if (in->n_head)
		r->head = median_copy(in->head, in->n_head, w->b);
	if (!in->n_head) {
		r->verdict = AW_VERDICT_MISSING;
		snprintf(r->note, sizeof(r->note), "no run of the head on this host has the cell");
	}
	if (!in->n_history && !in->n_reference) {
		if (in->n_head) {
			r->verdict = AW_VERDICT_NEW;
			snprintf(r->note, sizeof(r->note), "no baseline run has the cell");
		}
		return;
	}
	if (in->n_history) {
		k = aw_changepoints(in->history, in->n_history, &o->cp, cps, MAX_CHANGE_POINTS);
		if (k > 0)
			r->last_change = cps[k - 1].index;
		r->window_start = r->last_change;
		if (in->n_history - r->window_start > o->window)
			r->window_start = in->n_history - o->window;
	}
	r->window_n = n_win = in->n_history - r->window_start;
	win = in->history + r->window_start;
	center = n_win ? median_copy(win, n_win, w->a) : NAN;
	r->baseline = in->n_reference ? median_copy(in->reference, in->n_reference, w->a) : center;
	if (r->verdict == AW_VERDICT_MISSING)
		return;
	if (r->baseline <= 0) {
		st->zero_base = 1;
		return;
	}
	if (n_win >= 3 && center > 0) {
		memcpy(w->a, win, n_win * sizeof(*win));
		aw_sort_doubles(w->a, n_win);
		st->between = MAD_TO_SIGMA * aw_mad_sorted(w->a, n_win, w->b) / center;
		split = cluster_split(w->a, n_win, o->bimodal_gap);
		if (split) {
			r->bimodal = true;
			/* a head inside either cluster is a mode the baseline has seen */
			bool in_low = r->head >= w->a[0] * (1 - st->between) &&
			              r->head <= w->a[split - 1] * (1 + st->between);
			bool in_high = r->head >= w->a[split] * (1 - st->between) &&
			               r->head <= w->a[n_win - 1] * (1 + st->between);

			if (!in->n_reference && (in_low || in_high)) {
				r->seen_before = true;
				snprintf(
				    r->note, sizeof(r->note),
				    "bimodal baseline (%.4g..%.4g and %.4g..%.4g ns); the head "
				    "falls in one of its modes",
				    w->a[0], w->a[split - 1], w->a[split], w->a[n_win - 1]);
			}
		}
	}
	/* Excursions: earlier runs far from the baseline, over the whole history. A head that
	 * lands among them is something this cell has done before, not news. */
	for (size_t i = 0; i < in->n_history; i++) {
		double v = in->history[i];

		if (v > r->baseline * o->excursion || v < r->baseline / o->excursion) {
			n_exc++;
			exc_lo = fmin(exc_lo, v);
			exc_hi = fmax(exc_hi, v);
		}
	}
	/* (not in a compare: there the history only measures the noise, and a level it shows
	 * may be the very change between the two commits) */
	if (n_exc && !in->n_reference &&
	    (r->head > r->baseline * o->excursion || r->head < r->baseline / o->excursion) &&
	    r->head >= exc_lo / 1.25 && r->head <= exc_hi * 1.25) {
		r->bimodal = true;
		r->seen_before = true;
		snprintf(r->note, sizeof(r->note),
		         "%zu of %zu earlier runs were excursions like this (%.4g..%.4g ns)", n_exc,
		         in->n_history, exc_lo, exc_hi);
	}
	st->within = within_noise(win, in->history_se ? in->history_se + r->window_start : NULL,
	                          n_win, w->b);
	head_within = within_noise(in->head, in->head_se, in->n_head, w->b);
	if (isnan(st->within) || (!isnan(head_within) && head_within > st->within))
		st->within = head_within;
}

/* Phase 2: the test. A cell's noise is moderated towards its group's pooled noise s0 with the
 * empirical-Bayes variance of limma: s^2 = (f s_cell^2 + d0 s0^2) / (f + d0) on f + d0 degrees
 * of freedom (f: the MAD's equivalent degrees of freedom), so that ten baseline runs do not
 * carry the whole uncertainty of the noise on their own. d0 is estimated from how much the
 * cells' own noises disagree beyond what sampling explains (estimate_prior). */
static void test_cell(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                      struct aw_detect_result *r, const struct cell_state *st, double s0, double d0,
                      double *p_two)
{
	const double *win = in->history + r->window_start;
	double df = INFINITY, noise, se_rel, z, p_up, p_down;
	size_t n_win = r->window_n, n_base;

	*p_two = 1;
	if (r->verdict == AW_VERDICT_MISSING || r->verdict == AW_VERDICT_NEW)
		return;
	if (st->zero_base) {
		/* The baseline could not be told from the empty loop: any measurable head is a
		 * regression of unbounded relative size. */
		double head_se = in->head_se && isfinite(in->head_se[0]) ? in->head_se[0] : 0;

		if (r->head < o->min_abs_ns) {
			/* still at the timer's resolution: a few picoseconds are no news */
			r->change = r->change_lo = r->change_hi = r->head > 0 ? INFINITY : 0;
			snprintf(r->note, sizeof(r->note),
			         "the baseline was below resolution and the head is under %.2g ns",
			         o->min_abs_ns);
			return;
		}
		r->change = r->change_lo = r->change_hi = INFINITY;
		*p_two = head_se > 0 ? fmin(1, 2 * aw_norm_sf(r->head / head_se)) : 0;
		r->pvalue = *p_two;
		snprintf(r->note, sizeof(r->note), "the baseline was below resolution (0 ns)");
		return;
	}
	if (!isnan(st->between)) {
		/* A MAD from w runs estimates sigma as well as a standard deviation from about
		 * 0.37 (w - 1) degrees of freedom would. */
		double dfc = MAD_EFFICIENCY * (double)(n_win - 1);

		noise = st->between;
		df = dfc;
		if (!isnan(s0) && d0 > 0) {
			noise = sqrt((dfc * st->between * st->between + d0 * s0 * s0) / (dfc + d0));
			df = dfc + d0;
		}
	} else if (!isnan(s0)) {
		noise = s0;
		df = d0 > 0 ? d0 : 1;
	} else {
		noise = UNKNOWN_NOISE;
		snprintf(r->note, sizeof(r->note),
		         "noise unknown (fewer than 3 baseline runs on every cell): assumed 1%%");
	}
	if (!isnan(st->within) && st->within > noise) {
		noise = st->within;
		df = INFINITY;
	}
	if (noise < o->noise_floor) {
		noise = o->noise_floor;
		df = INFINITY;
	}
	r->noise = noise;
	r->change = r->head / r->baseline - 1;
	n_base = in->n_reference ? in->n_reference : n_win;
	se_rel = noise * sqrt((in->n_head == 1 ? 1.0 : MEDIAN_VAR / (double)in->n_head) +
	                      (n_base == 1 ? 1.0 : MEDIAN_VAR / (double)n_base));
	z = r->change / se_rel;
	p_up = isinf(df) ? aw_norm_sf(z) : aw_t_sf(z, df);
	p_down = isinf(df) ? aw_norm_sf(-z) : aw_t_sf(-z, df);
	r->pvalue = fmin(1, 2 * fmin(p_up, p_down));
	/* A head in a mode or excursion seen before is judged noisy whatever its p-value; left in
	 * the family it would only lend its tiny p-value to the Benjamini-Hochberg thresholds of
	 * the other cells. */
	*p_two = r->seen_before ? 1 : r->pvalue;
	if (in->n_head >= 3)
		r->mw_pvalue =
		    aw_mann_whitney_p(in->head, in->n_head, in->n_reference ? in->reference : win,
		                      n_base, r->change > 0 ? AW_GREATER : AW_LESS);
	r->change_lo = r->change - o->power_z * se_rel;
	r->change_hi = r->change + o->power_z * se_rel;
}

static void decide(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                   struct aw_detect_result *r)
{
	bool significant = r->qvalue <= o->fdr;

	if (r->verdict == AW_VERDICT_MISSING || r->verdict == AW_VERDICT_NEW)
		return;
	/* with several head runs the rank test must agree */
	if (!isnan(r->mw_pvalue) && r->mw_pvalue > o->mw_alpha)
		significant = false;
	r->verdict = AW_VERDICT_UNCHANGED;
	/* sub-cycle differences are below what any run can resolve */
	if (fabs(r->head - r->baseline) < o->min_abs_ns)
		significant = false;
	if (significant && r->change > 0 && r->change_hi >= in->threshold)
		r->verdict = AW_VERDICT_REGRESSED;
	else if (significant && r->change < 0 && -r->change_lo >= in->threshold)
		r->verdict = AW_VERDICT_IMPROVED;
	/* a threshold-sized move into a mode or excursion the history has shown */
	if (r->seen_before && fabs(r->change) >= in->threshold)
		r->verdict = AW_VERDICT_NOISY;
	else if (r->verdict == AW_VERDICT_UNCHANGED && fabs(r->change) >= in->threshold &&
	         r->noise * o->power_z >= in->threshold) {
		/* A threshold-sized change, but the baseline's own noise is as large. */
		r->verdict = AW_VERDICT_NOISY;
		snprintf(r->note, sizeof(r->note),
		         "baseline noise %.2g%% is too large for a %.2g%% threshold",
		         100 * r->noise, 100 * in->threshold);
	}
}

/* The prior of one group's noises (Smyth 2004, the moment estimates of limma's fitFDist): with
 * e_i = log(s_i^2) - digamma(f_i / 2) + log(f_i / 2), the spread of e beyond the sampling part
 * mean(trigamma(f_i / 2)) is trigamma(d0 / 2); s0^2 = exp(mean(e) + digamma(d0/2) - log(d0/2)).
 * Cells that agree give a large d0 (capped at max_d0), cells that differ a small one. */
static void estimate_prior(const double *s, const double *f, size_t k, double max_d0, double *s0,
                           double *d0)
{
	double mean = 0, var = 0, tri = 0;

	*s0 = NAN;
	*d0 = 0;
	if (!k)
		return;
	for (size_t i = 0; i < k; i++)
		mean += log(s[i] * s[i]) - aw_digamma(f[i] / 2) + log(f[i] / 2);
	mean /= (double)k;
	if (k < 3) {
		*s0 = sqrt(exp(mean));
		return;
	}
	for (size_t i = 0; i < k; i++) {
		double e = log(s[i] * s[i]) - aw_digamma(f[i] / 2) + log(f[i] / 2);

		var += (e - mean) * (e - mean);
		tri += aw_trigamma(f[i] / 2);
	}
	var = var / (double)(k - 1) - tri / (double)k;
	*d0 = var > 0 ? 2 * aw_trigamma_inverse(var) : max_d0;
	if (*d0 > max_d0)
		*d0 = max_d0;
	*s0 = sqrt(exp(mean + aw_digamma(*d0 / 2) - log(*d0 / 2)));
}

int aw_detect(const struct aw_detect_input *in, size_t n, const struct aw_detect_opts *opts,
              struct aw_detect_result *out)
{
	const struct aw_detect_opts defaults = AW_DETECT_OPTS_DEFAULT;
	const struct aw_detect_opts *o = opts ? opts : &defaults;
	struct cell_state *st = NULL;
	struct work w = {0};
	double *p = NULL, *fdf = NULL;
	size_t most = 1;
	int rc = -ENOMEM;

	for (size_t i = 0; i < n; i++) {
		if (in[i].n_history > most)
			most = in[i].n_history;
		if (in[i].n_head > most)
			most = in[i].n_head;
		if (in[i].n_reference > most)
			most = in[i].n_reference;
	}
	w.a = malloc(most * sizeof(double));
	w.b = malloc((most > n ? most : n) * sizeof(double));
	p = calloc(n ? n : 1, sizeof(double));
	st = calloc(n ? n : 1, sizeof(*st));
	fdf = calloc(n ? n : 1, sizeof(*fdf));
	if (!w.a || !w.b || !p || !st || !fdf)
		goto out;
	for (size_t i = 0; i < n; i++)
		observe(&in[i], o, &out[i], &st[i], &w);
	/* each group's pooled noise */
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		double s0, d0;

		if (st[i].pooled)
			continue;
		for (size_t j = i; j < n; j++) {
			if (in[j].group != in[i].group || isnan(st[j].between))
				continue;
			w.b[k] = fmax(st[j].between, o->noise_floor);
			fdf[k++] = MAD_EFFICIENCY * (double)(out[j].window_n - 1);
		}
		estimate_prior(w.b, fdf, k, o->prior_df_max, &s0, &d0);
		for (size_t j = i; j < n; j++) {
			if (in[j].group != in[i].group)
				continue;
			st[j].pooled = 1;
			test_cell(&in[j], o, &out[j], &st[j], s0, d0, &p[j]);
		}
	}
	if (aw_bh_adjust(p, n, p))
		goto out;
	for (size_t i = 0; i < n; i++) {
		out[i].qvalue = p[i];
		decide(&in[i], o, &out[i]);
	}
	rc = 0;
out:
	free(w.a);
	free(w.b);
	free(p);
	free(st);
	free(fdf);
	return rc;
}
