/* Regression verdicts by one model: references, levels, a noise floor; see detect.h and
 * docs/detection.md ("The model"). */
#include "detect.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/stats.h"
#include "stattest.h"

/* The noise of a set of runs is the spread that covers four runs in five about their level:
 * the 80th percentile of the absolute deviations over 1.2816, sigma for normal data, wider
 * than the MAD's for the heavy tails a VM's runs have (a p99 a few runs in ten of which are
 * half again as high). */
#define COVER_Q          0.8
#define COVER_TO_SIGMA   (1 / 1.2816)
#define COVER_EFFICIENCY 0.4
#ifndef TAIL_Q
#define TAIL_Q 0.95
#endif                      /* of that estimate relative to the standard deviation */
#define UNKNOWN_NOISE  0.01 /* assumed when nothing measures the noise */
#define MAX_CP         32
#define REF_MIN_RUNS   8 /* baseline runs a reference must be measured beside to be used */
#define LEVEL_MIN_RUNS 2 /* runs of a latent level, at least */
#define REF_LEVEL_RUNS 3 /* runs of each cluster of a reference that splits the levels */

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

/* ---- small statistics ---- */

/* Median of v[0..n) (copied into scratch). NAN when n == 0. */
static double median_of(const double *v, size_t n, double *scratch)
{
	if (!n)
		return NAN;
	memcpy(scratch, v, n * sizeof(*v));
	aw_sort_doubles(scratch, n);
	return aw_quantile_sorted(scratch, n, 0.5);
}

/* The spread of v[0..n) about `centre`: 1.4826 x the MAD, for clustering and slopes; NAN for
 * n < 2. */
static double spread_about(const double *v, size_t n, double centre, double *scratch)
{
	if (n < 2)
		return NAN;
	for (size_t i = 0; i < n; i++)
		scratch[i] = fabs(v[i] - centre);
	aw_sort_doubles(scratch, n);
	return 1.4826 * aw_quantile_sorted(scratch, n, 0.5);
}

/* The 90th percentile of |v - median(v)| over v[0..n): a spread that sees a minority of runs
 * moving apart (a reference that leaves the cell one run in five), where the MAD does not. */
static double tail_spread(const double *v, size_t n, double *scratch)
{
	double m = median_of(v, n, scratch);

	for (size_t i = 0; i < n; i++)
		scratch[i] = fabs(v[i] - m);
	aw_sort_doubles(scratch, n);
	return aw_quantile_sorted(scratch, n, TAIL_Q);
}

/* The one-sided noises of deviations d[0..n) from their level (COVER_Q above): *up of a
 * slowdown, *down of a speed-up. Sorts d. */
static void one_sided(double *d, size_t n, double *up, double *down)
{
	aw_sort_doubles(d, n);
	*up = COVER_TO_SIGMA * fmax(0, aw_quantile_sorted(d, n, COVER_Q));
	*down = COVER_TO_SIGMA * fmax(0, -aw_quantile_sorted(d, n, 1 - COVER_Q));
}

/* P(X >= k) for X ~ Binomial(m, e). */
static double binom_sf(size_t k, size_t m, double e)
{
	double sum = 0;

	for (size_t x = k; x <= m; x++)
		sum += exp(lgamma((double)m + 1) - lgamma((double)x + 1) -
		           lgamma((double)(m - x) + 1) + (double)x * log(e) +
		           (double)(m - x) * log1p(-e));
	return k == 0 ? 1 : fmin(1, sum);
}

/* ---- one metric of one cell ---- */

struct cell {
	double *y;                   /* log values: the baseline's, then the head's */
	double *x[AW_DETECT_REFS];   /* log reference values, likewise (NAN: none) */
	size_t nb, nh;               /* baseline and head runs (y[nb .. nb + nh) the head) */
	double raw_base, raw_head;   /* ns medians as measured */
	bool zero_base;              /* every baseline run below resolution */
	int level_of[256];           /* level of each baseline run */
	double s_own;                /* the runs' own precision (median se / value), NAN unknown */
	double s_up, s_down, f_cell; /* own one-sided noises about the levels, their degrees of
	                                freedom */
	double up, down, df;         /* moderated: `noise` of a slowdown and of a speed-up */
	double p_up, p_down;         /* candidates for the correction (1: none) */
	double up_size, down_size;   /* of the deciding test, log */
	int up_level, down_level;    /* the level behind each, -1 the share test */
	size_t head_level_n[AW_DETECT_LEVELS];
	double head_med[AW_DETECT_LEVELS];
	double centre[AW_DETECT_LEVELS];
	double ref_centre[AW_DETECT_LEVELS]; /* of the level reference's clusters */
	int head_lev[256];                   /* the level of each head run */
	/* the history before the baseline: its runs' values and references, and the segment
	 * (between change points) each lies in; they measure the noise, not the centre */
	double *ey, *ex[AW_DETECT_REFS];
	int *eseg;
	size_t ne;
	double *res; /* the history's deviations from their levels (find_levels()) */
	size_t n_res;
	bool *confirming; /* head runs that re-measured the cell (NULL: each counts) */
};

#define MAX_BASE 256 /* baseline runs judged at most (window and base commits) */

static double log_value(double v, double floor_ns)
{
	return log(v > floor_ns ? v : floor_ns);
}

/* Keeps the change points that are steps: the runs after one (up to the next) sit outside the
 * band the runs before it (since the last kept one) spanned, their 10th to 90th percentile.
 * Runs back inside that band are a machine that alternates between levels returning to one of
 * them, a split Welch's test finds in a bimodal history, which the levels judge instead.
 * Returns how many are kept, in place. */
static size_t steps_only(const double *y, size_t n, struct aw_changepoint *cps, size_t n_cps,
                         double *scratch)
{
	size_t kept = 0, start = 0;

	for (size_t j = 0; j < n_cps; j++) {
		size_t at = cps[j].index, end = j + 1 < n_cps ? cps[j + 1].index : n,
		       nb = at - start;
		double lo, hi, mid;

		memcpy(scratch, y + start, nb * sizeof(*y));
		aw_sort_doubles(scratch, nb);
		lo = aw_quantile_sorted(scratch, nb, 0.1);
		hi = aw_quantile_sorted(scratch, nb, 0.9);
		mid = median_of(y + at, end - at, scratch);
		if (mid >= lo && mid <= hi)
			continue;
		cps[kept++] = cps[j];
		start = at;
	}
	return kept;
}

/* The baseline runs (the window after the last change point, or the base commit's) and the
 * head's, as log values and log references; NULL output when n == 0. Returns 0 or -ENOMEM. */
static int gather(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                  struct aw_detect_result *r, struct cell *c)
{
	const double *bv = in->base ? in->base : in->history;
	const double *const *bx = in->base ? in->base_ref : in->history_ref;
	size_t n = in->base ? in->n_base : in->n_history, from = 0, total, n_cps = 0, nh = 0;
	struct aw_changepoint cps[MAX_CP];
	double *tmp = NULL, *scratch;
	size_t *at = NULL, *hat = NULL, k = 0;
	int rc = -ENOMEM;

	tmp = malloc(2 * (n + in->n_history + in->n_head + 1) * sizeof(*tmp));
	at = malloc((n + 1) * sizeof(*at));
	hat = malloc((in->n_history + 1) * sizeof(*hat));
	if (!tmp || !at || !hat)
		goto out;
	scratch = tmp + n + in->n_history + in->n_head + 1;
	for (size_t i = 0; i < n; i++)
		if (isfinite(bv[i]) && bv[i] >= 0)
			at[k++] = i;
	/* the history's change points, on log values: the baseline is the runs after the last
	 * (a base commit's runs instead, in a compare), the runs before measure the noise */
	for (size_t i = 0; i < in->n_history; i++)
		if (isfinite(in->history[i]) && in->history[i] >= 0) {
			tmp[nh] = log_value(in->history[i], o->min_abs_ns);
			hat[nh++] = i;
		}
	if (nh >= 2 * o->cp.min_segment) {
		int m = aw_changepoints(tmp, nh, &o->cp, cps, MAX_CP);

		n_cps = m > 0 ? (size_t)m : 0;
		n_cps = steps_only(tmp, nh, cps, n_cps, scratch);
	}
	if (!in->base) {
		if (n_cps)
			from = cps[n_cps - 1].index;
		if (k - from > o->window)
			from = k - o->window;
		if (k - from > MAX_BASE)
			from = k - MAX_BASE;
	} else if (k > MAX_BASE) {
		from = k - MAX_BASE;
	}
	c->nb = k - from;
	c->ne = in->base ? nh : from;
	if (c->ne) {
		size_t seg = 0;

		c->ey = malloc(c->ne * (1 + AW_DETECT_REFS) * sizeof(double));
		c->eseg = malloc(c->ne * sizeof(int));
		if (!c->ey || !c->eseg)
			goto out;
		for (int q = 0; q < AW_DETECT_REFS; q++)
			c->ex[q] = c->ey + (size_t)(q + 1) * c->ne;
		for (size_t i = 0; i < c->ne; i++) {
			size_t src = hat[i];

			while (seg < n_cps && cps[seg].index <= i)
				seg++;
			c->eseg[i] = (int)seg;
			c->ey[i] = tmp[i];
			for (int q = 0; q < AW_DETECT_REFS; q++)
				c->ex[q][i] = in->history_ref[q] && in->history_ref[q][src] > 0
				                  ? log(in->history_ref[q][src])
				                  : NAN;
		}
	}
	c->nh = 0;
	for (size_t j = 0; j < in->n_head; j++)
		c->nh += isfinite(in->head[j]) && in->head[j] >= 0;
	total = c->nb + c->nh;
	c->y = malloc((total + 1) * (1 + AW_DETECT_REFS) * sizeof(double));
	if (!c->y)
		goto out;
	for (int q = 0; q < AW_DETECT_REFS; q++)
		c->x[q] = c->y + (size_t)(q + 1) * (total + 1);
	for (size_t i = 0; i < c->nb; i++) {
		size_t src = at[from + i];

		c->y[i] = log_value(bv[src], o->min_abs_ns);
		for (int q = 0; q < AW_DETECT_REFS; q++)
			c->x[q][i] = bx[q] && bx[q][src] > 0 ? log(bx[q][src]) : NAN;
	}
	k = c->nb;
	if (in->head_confirmation && c->nh) {
		size_t h = 0;

		c->confirming = calloc(c->nh, sizeof(bool));
		if (!c->confirming)
			goto out;
		for (size_t j = 0; j < in->n_head; j++)
			if (isfinite(in->head[j]) && in->head[j] >= 0)
				c->confirming[h++] = in->head_confirmation[j];
	}
	for (size_t j = 0; j < in->n_head; j++) {
		if (!(isfinite(in->head[j]) && in->head[j] >= 0))
			continue;
		c->y[k] = log_value(in->head[j], o->min_abs_ns);
		for (int q = 0; q < AW_DETECT_REFS; q++)
			c->x[q][k] = in->head_ref[q] && in->head_ref[q][j] > 0
			                 ? log(in->head_ref[q][j])
			                 : NAN;
		k++;
	}
	/* as measured, in ns */
	for (size_t i = 0; i < c->nb; i++)
		tmp[i] = bv[at[from + i]];
	c->raw_base = median_of(tmp, c->nb, scratch);
	c->zero_base = c->nb > 0;
	for (size_t i = 0; i < c->nb; i++)
		c->zero_base = c->zero_base && tmp[i] < o->min_abs_ns;
	k = 0;
	for (size_t j = 0; j < in->n_head; j++)
		if (isfinite(in->head[j]) && in->head[j] >= 0)
			tmp[k++] = in->head[j];
	c->raw_head = median_of(tmp, k, scratch);
	/* the runs' own precision: a floor for the noise */
	c->s_own = NAN;
	if (in->history_se || (in->base && in->head_se)) {
		const double *se = in->history_se;
		size_t m = 0;

		for (size_t i = 0; se && i < in->n_history; i++)
			if (isfinite(se[i]) && se[i] >= 0 && in->history[i] > 0)
				tmp[m++] = se[i] / in->history[i];
		if (m)
			c->s_own = median_of(tmp, m, scratch);
	}
	r->window_n = c->nb;
	r->head_n = c->nh;
	rc = 0;
out:
	free(tmp);
	free(at);
	free(hat);
	return rc;
}

/* The control variate: the reference whose line through the history (log value on log
 * reference, Theil-Sen) leaves its runs steadiest, measured by a spread that sees a minority of
 * runs (tail_spread()), when that cuts their spread by ref_gain or more and it was measured
 * beside every head run too. Returns the spread it leaves (the values' own when none does),
 * with r->reference, r->ref_slope and *centre set; adjust() applies it. */
/* Theil-Sen slope of y on x over the n pairs with both finite (the median of the pairwise
 * slopes), clamped to [0, 1.5]; NAN when fewer than REF_MIN_RUNS pairs. */
static double theil_sen(const double *y, const double *x, size_t n, double *scratch)
{
	size_t m = 0, pairs = 0;

	for (size_t i = 0; i < n; i++)
		m += isfinite(x[i]);
	if (m < REF_MIN_RUNS)
		return NAN;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (isfinite(x[i]) && isfinite(x[j]) && fabs(x[j] - x[i]) > 1e-9)
				scratch[pairs++] = (y[j] - y[i]) / (x[j] - x[i]);
	if (!pairs)
		return NAN;
	aw_sort_doubles(scratch, pairs);
	return fmin(1.5, fmax(0, aw_quantile_sorted(scratch, pairs, 0.5)));
}

static double pick_reference(const struct aw_detect_opts *o, struct cell *c,
                             struct aw_detect_result *r, double *centre, double *a, double *b,
                             double *s)
{
	double s0, best = INFINITY, slope = NAN;
	size_t total = c->nb + c->nh, nall = c->ne + c->nb;

	/* the slope and the spread it leaves are the whole history's (the baseline alone may
	 * have run at one clock the head did not) */
	r->reference = -1;
	for (size_t i = 0; i < nall; i++)
		b[i] = i < c->ne ? c->ey[i] : c->y[i - c->ne];
	s0 = nall >= 3 ? tail_spread(b, nall, a) : NAN;
	if (nall < REF_MIN_RUNS || !(s0 > 0))
		return s0;
	for (int q = 0; q < AW_DETECT_REFS; q++) {
		double bq, xc, sq;
		size_t m = 0;
		bool has = true;

		for (size_t i = c->nb; i < total; i++)
			has = has && isfinite(c->x[q][i]);
		for (size_t i = 0; i < nall; i++) {
			s[i] = i < c->ne ? c->ex[q][i] : c->x[q][i - c->ne];
			m += isfinite(s[i]);
		}
		for (size_t i = 0; i < c->nb; i++)
			has = has && isfinite(c->x[q][i]);
		if (!has || m < REF_MIN_RUNS)
			continue;
		xc = median_of(c->x[q], c->nb, a);
		bq = theil_sen(b, s, nall, a);
		if (!(bq > 0))
			continue;
		m = 0;
		for (size_t i = 0; i < nall; i++)
			if (isfinite(s[i]))
				a[m++] = b[i] - bq * (s[i] - xc);
		memcpy(s, a, m * sizeof(*a));
		sq = tail_spread(s, m, a);
		if (sq < best) {
			best = sq;
			r->reference = q;
			slope = bq;
			*centre = xc;
		}
		for (size_t i = 0; i < nall; i++) /* (b was kept) */
			b[i] = i < c->ne ? c->ey[i] : c->y[i - c->ne];
	}
	if (r->reference < 0 || !(best <= (1 - o->ref_gain) * s0)) {
		r->reference = -1;
		return s0;
	}
	r->ref_slope = slope;
	r->ref_gain = 1 - best / s0;
	return best;
}

/* Applies the control variate pick_reference() chose to every value, baseline and head, each
 * run's reference clamped to the range the history's runs show: a run is adjusted by no more
 * than the history showed the reference moving (one reading of 8 batches can stray where the
 * cell did not). */
static void adjust(struct cell *c, const struct aw_detect_result *r, double centre)
{
	double lo = INFINITY, hi = -INFINITY;
	int q = r->reference;

	if (q < 0)
		return;
	for (size_t i = 0; i < c->nb; i++)
		if (isfinite(c->x[q][i])) {
			lo = fmin(lo, c->x[q][i]);
			hi = fmax(hi, c->x[q][i]);
		}
	for (size_t i = 0; i < c->ne; i++)
		if (isfinite(c->ex[q][i])) {
			lo = fmin(lo, c->ex[q][i]);
			hi = fmax(hi, c->ex[q][i]);
		}
	for (size_t i = 0; i < c->nb + c->nh; i++)
		c->y[i] -= r->ref_slope * (fmin(hi, fmax(lo, c->x[q][i])) - centre);
	/* (an earlier run without that reference measures the noise as it is) */
	for (size_t i = 0; i < c->ne; i++)
		if (isfinite(c->ex[q][i]))
			c->ey[i] -= r->ref_slope * (c->ex[q][i] - centre);
}

/* Splits sorted[lo, hi) at its widest gap when the two sides' centres lie level_gap noises
 * apart (and the gap itself half that) with LEVEL_MIN_RUNS on each side; recursively. Writes
 * the first index of each level after the first into cuts. */
static void split_levels(const double *sorted, size_t lo, size_t hi, double floor_noise,
                         const struct aw_detect_opts *o, size_t min_runs, size_t *cuts,
                         size_t *n_cuts, double *scratch)
{
	size_t at = 0;
	double gap = 0, s, sl, sr, cl, cr;

	if (hi - lo < 2 * min_runs || *n_cuts + 1 >= AW_DETECT_LEVELS)
		return;
	for (size_t i = lo + min_runs; i + min_runs <= hi; i++)
		if (sorted[i] - sorted[i - 1] > gap) {
			gap = sorted[i] - sorted[i - 1];
			at = i;
		}
	if (!at)
		return;
	cl = aw_quantile_sorted(sorted + lo, at - lo, 0.5);
	cr = aw_quantile_sorted(sorted + at, hi - at, 0.5);
	sl = spread_about(sorted + lo, at - lo, cl, scratch);
	sr = spread_about(sorted + at, hi - at, cr, scratch);
	s = sqrt((sl * sl * (double)(at - lo - 1) + sr * sr * (double)(hi - at - 1)) /
	         (double)(hi - lo - 2));
	if (!(s >= floor_noise))
		s = floor_noise;
	if (cr - cl < o->level_gap * s || cr - cl < o->level_gap_min || gap < o->level_gap / 2 * s)
		return;
	cuts[(*n_cuts)++] = at;
	split_levels(sorted, lo, at, floor_noise, o, min_runs, cuts, n_cuts, scratch);
	split_levels(sorted, at, hi, floor_noise, o, min_runs, cuts, n_cuts, scratch);
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return (x > y) - (x < y);
}

/* Clusters of v[0..n) (copied and sorted into `sorted`): returns how many, with the upper
 * bound of each but the last in bounds[] (a value v is in cluster j when it is above
 * bounds[j - 1] and at most bounds[j]). */
static size_t clusters(const double *v, size_t n, double floor_noise,
                       const struct aw_detect_opts *o, double *sorted, double *scratch,
                       double *bounds, size_t min_runs)
{
	size_t cuts[AW_DETECT_LEVELS], n_cuts = 0;

	memcpy(sorted, v, n * sizeof(*v));
	aw_sort_doubles(sorted, n);
	split_levels(sorted, 0, n, floor_noise, o, min_runs, cuts, &n_cuts, scratch);
	qsort(cuts, n_cuts, sizeof(*cuts), cmp_size);
	for (size_t j = 0; j < n_cuts; j++)
		bounds[j] = (sorted[cuts[j] - 1] + sorted[cuts[j]]) / 2;
	return n_cuts + 1;
}

static int cluster_of(double v, const double *bounds, size_t n_levels)
{
	size_t j = 0;

	while (j + 1 < n_levels && v > bounds[j])
		j++;
	return (int)j;
}

/* A reference whose own clusters split the cell's unadjusted values into levels that lie
 * level_gap noises apart: the machine's states. Returns the cell's spread within those levels
 * as pick_reference() measures the line's (tail_spread() of the runs' deviations from their
 * level's median; INFINITY when no reference splits it), with r->level_ref and r->n_levels
 * set; take_levels() makes them the levels. */
static double pick_level_reference(const struct aw_detect_opts *o, struct cell *c,
                                   struct aw_detect_result *r, double *bounds, double *a, double *b,
                                   double *s)
{
	double best = 0, spread = INFINITY;
	size_t total = c->nb + c->nh;

	r->level_ref = -1;
	for (int q = 0; q < AW_DETECT_REFS; q++) {
		double bq[AW_DETECT_LEVELS], med[AW_DETECT_LEVELS], pooled = 0, sep = 0;
		size_t k, dof = 0, n_dev = 0;
		bool ok = true;

		for (size_t i = 0; i < total && ok; i++)
			ok = isfinite(c->x[q][i]);
		if (!ok || c->nb < 2 * REF_LEVEL_RUNS)
			continue;
		k = clusters(c->x[q], c->nb, 1e-4, o, a, s, bq, REF_LEVEL_RUNS);
		if (k < 2)
			continue;
		for (size_t j = 0; j < k && ok; j++) {
			size_t m = 0;

			for (size_t i = 0; i < c->nb; i++)
				if (cluster_of(c->x[q][i], bq, k) == (int)j)
					b[m++] = c->y[i];
			ok = m >= REF_LEVEL_RUNS && (double)m >= o->level_share * (double)c->nb;
			if (!ok)
				break;
			med[j] = median_of(b, m, a);
			for (size_t i = 0; i < m; i++) /* (s is free once clusters() returned) */
				s[n_dev++] = b[i] - med[j];
			{
				double sj = spread_about(b, m, med[j], a);

				pooled += sj * sj * (double)(m - 1);
				dof += m - 1;
			}
		}
		if (!ok || !dof)
			continue;
		pooled = sqrt(pooled / (double)dof);
		if (!(pooled >= o->noise_floor))
			pooled = o->noise_floor;
		for (size_t j = 1; j < k; j++)
			sep = fmax(sep, fabs(med[j] - med[j - 1]));
		if (sep < o->level_gap * pooled || sep < o->level_gap_min || sep / pooled <= best)
			continue;
		best = sep / pooled;
		spread = tail_spread(s, n_dev, a);
		r->level_ref = q;
		r->n_levels = k;
		memcpy(bounds, bq, k * sizeof(*bq));
	}
	return spread;
}

/* Makes the level reference's clusters the levels (each baseline run's, each one's centre). */
static void take_levels(struct cell *c, const struct aw_detect_result *r, const double *bounds,
                        double *a, double *b)
{
	for (size_t i = 0; i < c->nb; i++)
		c->level_of[i] = cluster_of(c->x[r->level_ref][i], bounds, r->n_levels);
	for (size_t j = 0; j < r->n_levels; j++) {
		size_t m = 0;

		for (size_t i = 0; i < c->nb; i++)
			if (c->level_of[i] == (int)j)
				b[m++] = c->x[r->level_ref][i];
		c->ref_centre[j] = median_of(b, m, a);
	}
}

/* The levels of the baseline: the level reference's clusters (take_levels() placed each run),
 * else one. Fills each level's share, centre and count and the dominant level; the cell's own
 * noise about its levels, with the runs before the baseline about the median of their own
 * segment (the noise is the whole history's, the centre the baseline's); and the bimodal flag
 * (the baseline splits into two clusters of 3 runs or more, bimodal_gap apart). */
static void find_levels(const struct aw_detect_opts *o, struct cell *c, struct aw_detect_result *r,
                        double *a, double *b, double *s)
{
	double floor_noise = fmax(o->noise_floor, isfinite(c->s_own) ? c->s_own : 0);
	size_t dof = 0, segs = 0, i = 0;

	if (r->level_ref < 0) {
		r->n_levels = 1;
		for (size_t k = 0; k < c->nb; k++)
			c->level_of[k] = 0;
	}
	r->dominant = 0;
	for (size_t j = 0; j < r->n_levels; j++) {
		struct aw_level *l = &r->levels[j];
		size_t m = 0;

		for (size_t k = 0; k < c->nb; k++)
			if (c->level_of[k] == (int)j)
				b[m++] = c->y[k];
		l->n_base = m;
		l->share = (double)m / (double)c->nb;
		c->centre[j] = median_of(b, m, a);
		for (size_t k = 0; k < m; k++)
			s[dof++] = b[k] - c->centre[j];
		if (m > r->levels[r->dominant].n_base)
			r->dominant = j;
	}
	while (i < c->ne) {
		size_t j = i, m = 0;
		double centre;

		while (j < c->ne && c->eseg[j] == c->eseg[i])
			b[m++] = c->ey[j++];
		centre = median_of(b, m, a);
		for (size_t q = i; q < j && m >= 3; q++)
			s[dof++] = c->ey[q] - centre;
		segs += m >= 3;
		i = j;
	}
	c->s_up = c->s_down = NAN;
	c->f_cell = 0;
	c->res = malloc((dof ? dof : 1) * sizeof(double));
	if (c->res) {
		memcpy(c->res, s, dof * sizeof(double));
		c->n_res = dof;
	}
	if (dof >= 3) {
		one_sided(s, dof, &c->s_up, &c->s_down);
		c->f_cell = COVER_EFFICIENCY * (double)(dof - r->n_levels - segs);
		if (!(c->f_cell > 0.5))
			c->f_cell = 0.5;
	}
	/* the flag a reader sees: two clusters in the baseline runs, however they were judged */
	{
		double bounds[AW_DETECT_LEVELS];
		struct aw_detect_opts flag = *o;

		flag.level_gap_min = log(o->bimodal_gap);
		r->bimodal = clusters(c->y, c->nb, floor_noise, &flag, a, s, bounds, 3) > 1;
	}
}

/* The level of head run i (index into y): the level reference's cluster nearest its value of
 * that reference, else the one level. */
static int head_level(const struct cell *c, const struct aw_detect_result *r, size_t i)
{
	double x, d = INFINITY;
	int best = 0;

	if (r->level_ref < 0)
		return 0;
	x = c->x[r->level_ref][i];
	for (size_t j = 0; j < r->n_levels; j++)
		if (fabs(x - c->ref_centre[j]) < d) {
			d = fabs(x - c->ref_centre[j]);
			best = (int)j;
		}
	return best;
}

/* How unlikely the head runs of level j are to lie `by` (log; a negative one: below) or further
 * from their level as often as they do, were they runs like the history's: a binomial tail
 * over the history's own rate of such runs (one in n + 2 at least); 0 for a head of one run and
 * no re-measurement. A suspicion is confirmed by the runs re-measured because of it, not by
 * the run that raised it: when some head runs are confirmations, only they count.
 * Distribution-free, so that a tail that doubles in one run in eight, or a level a subject
 * visits now and then, confirms nothing by itself: such a cell needs as many re-measurements
 * as its tail's rate asks (four, for one run in eight among forty cells). */
static double exceedance(const struct cell *c, size_t j, double by)
{
	size_t beyond = 0, k = 0, m = 0;
	bool any = false;

	for (size_t i = 0; i < c->n_res; i++)
		beyond += by > 0 ? c->res[i] >= by : c->res[i] <= by;
	for (size_t i = 0; c->confirming && i < c->nh && i < 256; i++)
		any = any || (c->head_lev[i] == (int)j && c->confirming[i]);
	for (size_t i = 0; i < c->nh && i < 256; i++) {
		double d = c->y[c->nb + i] - c->centre[j];

		if (c->head_lev[i] != (int)j || (any && !c->confirming[i]))
			continue;
		m++;
		k += by > 0 ? d >= by : d <= by;
	}
	/* (one run alone: the parametric test decides, as when one run is all a project
	 * measures) */
	return !any && m < 2 ? 0 : binom_sf(k, m, ((double)beyond + 1) / ((double)c->n_res + 2));
}

/* The move of m head runs b[] of a level against its base runs: their median's distance d from
 * the level's centre (log) and its standard errors up and down, the head's own spread counted
 * once three runs can show it (a run alone gets screen_noise at least). a: scratch of m. */
static void head_move(const struct aw_detect_opts *o, const struct cell *c, double centre,
                      size_t n_base, double *b, size_t m, double *a, double *med, double *su,
                      double *sd)
{
	double tu = c->up, td = c->down;

	*med = median_of(b, m, a);
	if (m == 1) { /* one run cannot show its own spread */
		tu = fmax(tu, o->screen_noise);
		td = fmax(td, o->screen_noise);
	} else if (m >= 3) {
		double hu, hd;

		for (size_t i = 0; i < m; i++)
			a[i] = b[i] - *med;
		one_sided(a, m, &hu, &hd);
		tu = fmax(tu, hu);
		td = fmax(td, hd);
	}
	*su = sqrt(tu * tu / (double)m + c->up * c->up / (double)n_base);
	*sd = sqrt(td * td / (double)m + c->down * c->down / (double)n_base);
	(void)centre;
}

/* Phase 3: each level's change (its head runs against its base runs), and the candidates for
 * the false discovery correction: the levels that count (the dominant one, and every one the
 * host spends level_share of its runs in), Bonferroni over them. A level is unchanged when its
 * change is bounded within the threshold both ways; once it was re-measured, by its
 * re-measurements alone: the run that raised a suspicion was picked for being far off, and
 * keeps no cell from clearing when the runs measured because of it agree with the history. */
static void judge_levels(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                         struct cell *c, struct aw_detect_result *r, double *a, double *b)
{
	double tq = aw_t_quantile(0.05, c->df), thr = log1p(in->threshold);
	size_t counted = 0;

	c->p_up = c->p_down = 1;
	c->up_level = c->down_level = -1;
	for (size_t i = 0; i < c->nh && i < 256; i++)
		c->head_lev[i] = head_level(c, r, c->nb + i);
	for (size_t j = 0; j < r->n_levels; j++)
		counted += j == r->dominant || r->levels[j].share >= o->level_share;
	for (size_t j = 0; j < r->n_levels; j++) {
		struct aw_level *l = &r->levels[j];
		double su, sd, d, t, med, cu, cd;
		size_t m = 0, mc = 0;

		for (size_t i = 0; i < c->nh && i < 256; i++)
			if (c->head_lev[i] == (int)j)
				b[m++] = c->y[c->nb + i];
		l->n_head = m;
		l->base = exp(c->centre[j]);
		l->noise = c->up;
		l->verdict = AW_VERDICT_UNKNOWN;
		l->head = l->change = l->change_lo = l->change_hi = l->pvalue = NAN;
		if (!m)
			continue;
		head_move(o, c, c->centre[j], l->n_base, b, m, a, &med, &su, &sd);
		c->head_med[j] = med;
		d = med - c->centre[j];
		t = d >= 0 ? (su > 0  ? d / su
		              : d > 0 ? INFINITY
		                      : 0)
		           : (sd > 0 ? d / sd : -INFINITY);
		l->head = exp(med);
		l->change = expm1(d);
		l->change_lo = expm1(d - tq * sd);
		l->change_hi = expm1(d + tq * su);
		l->pvalue = aw_t_sf(d >= 0 ? t : -t, c->df);
		/* bounded within the threshold both ways (a run far faster than the level is no
		 * pass either: a faster machine state may hide a slower build), by the
		 * re-measurements when there are some */
		for (size_t i = 0; c->confirming && i < c->nh && i < 256; i++)
			if (c->head_lev[i] == (int)j && c->confirming[i])
				b[mc++] = c->y[c->nb + i];
		if (mc) {
			head_move(o, c, c->centre[j], l->n_base, b, mc, a, &med, &cu, &cd);
			med -= c->centre[j];
		} else {
			med = d, cu = su, cd = sd;
		}
		if (med + tq * cu < thr && med - tq * cd > -thr)
			l->verdict = AW_VERDICT_UNCHANGED;
		if (!(j == r->dominant || l->share >= o->level_share))
			continue;
		if (d > 0 && d + tq * su >= thr) {
			double p = fmax(l->pvalue * (double)counted, exceedance(c, j, thr / 2));

			if (p < c->p_up) {
				c->p_up = p;
				c->up_level = (int)j;
			}
		}
		if (d < 0 && d - tq * sd <= -thr) {
			double p = fmax(l->pvalue * (double)counted, exceedance(c, j, -thr / 2));

			if (p < c->p_down) {
				c->p_down = p;
				c->down_level = (int)j;
			}
		}
	}
}

/* Phase 5: the verdict from the corrected p-values. */
static void decide(const struct aw_detect_input *in, const struct aw_detect_opts *o, struct cell *c,
                   struct aw_detect_result *r, double q_up, double q_down)
{
	double thr = log1p(in->threshold), tq = aw_t_quantile(0.05, c->df);
	size_t dom = r->dominant;
	bool bounded = true, judged = false;
	int lvl = -1;

	r->noise = c->up;
	for (size_t j = 0; j < r->n_levels; j++) {
		const struct aw_level *l = &r->levels[j];

		if (!(j == dom || l->share >= o->level_share) || !l->n_head)
			continue;
		judged = true;
		if (l->verdict != AW_VERDICT_UNCHANGED)
			bounded = false;
		else if (lvl < 0 || l->n_head > r->levels[lvl].n_head)
			lvl = (int)j; /* (the level judged on most runs tells the change) */
	}
	r->change_ns = c->raw_head - c->raw_base;
	r->absolute = c->zero_base;
	if (c->up_level >= 0 && q_up <= o->fdr && fabs(r->change_ns) >= o->min_abs_ns) {
		r->verdict = AW_VERDICT_REGRESSED;
		lvl = c->up_level;
		r->pvalue = c->p_up;
		r->qvalue = q_up;
	} else if (c->down_level >= 0 && q_down <= o->fdr && fabs(r->change_ns) >= o->min_abs_ns) {
		r->verdict = AW_VERDICT_IMPROVED;
		lvl = c->down_level;
		r->pvalue = c->p_down;
		r->qvalue = q_down;
	} else if (judged && bounded) {
		r->verdict = AW_VERDICT_UNCHANGED;
	} else if (judged && fabs(r->change_ns) < o->min_abs_ns) {
		r->verdict = AW_VERDICT_UNCHANGED; /* whatever else, below resolution */
	} else {
		r->verdict = AW_VERDICT_UNKNOWN;
	}
	if (r->verdict == AW_VERDICT_UNCHANGED || r->verdict == AW_VERDICT_UNKNOWN) {
		/* the level judged on most head runs tells the change */
		lvl = -1;
		for (size_t j = 0; j < r->n_levels; j++)
			if (r->levels[j].n_head &&
			    (lvl < 0 || r->levels[j].n_head > r->levels[lvl].n_head))
				lvl = (int)j;
	}
	r->decided_by = r->verdict == AW_VERDICT_UNKNOWN ? -1 : lvl;
	if (lvl < 0)
		lvl = -1;
	/* each level on its own, for the reader: "unchanged alone, +7% shared" */
	for (size_t j = 0; j < r->n_levels; j++) {
		struct aw_level *l = &r->levels[j];

		if (!l->n_head)
			continue;
		if (l->pvalue <= o->fdr && l->change > 0 && log1p(l->change_hi) >= thr)
			l->verdict = AW_VERDICT_REGRESSED;
		else if (l->pvalue <= o->fdr && l->change < 0 && log1p(l->change_lo) <= -thr)
			l->verdict = AW_VERDICT_IMPROVED;
	}
	/* the head runs that could each show the move alone */
	r->agree_n = 0;
	if (r->verdict == AW_VERDICT_REGRESSED || r->verdict == AW_VERDICT_IMPROVED) {
		int sign = r->verdict == AW_VERDICT_REGRESSED ? 1 : -1;
		double one = fmax(sign > 0 ? c->up : c->down, o->screen_noise) *
		             sqrt(1 + 1.0 / (double)c->nb);

		for (size_t i = 0; i < c->nh && i < 256; i++) {
			double d = c->y[c->nb + i] - c->centre[lvl];

			if (c->head_lev[i] == lvl && sign * d > 0 && sign * d + tq * one >= thr)
				r->agree_n++;
		}
	}
	r->baseline = r->levels[lvl >= 0 ? lvl : (int)dom].base;
	if (lvl >= 0) {
		const struct aw_level *l = &r->levels[lvl];

		r->head = l->head;
		r->change = l->change;
		r->change_lo = l->change_lo;
		r->change_hi = l->change_hi;
		if (r->verdict == AW_VERDICT_UNCHANGED || r->verdict == AW_VERDICT_UNKNOWN)
			r->pvalue = l->pvalue;
	} else {
		r->head = c->raw_head;
		r->change = r->head / r->baseline - 1;
	}
}

/* The sentence behind a verdict. */
static void explain(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                    struct aw_detect_result *r)
{
	const struct aw_level *dom = &r->levels[r->dominant];

	r->note[0] = 0;
	if (r->n_levels > 1 && r->decided_by >= 0 &&
	    (r->verdict == AW_VERDICT_REGRESSED || r->verdict == AW_VERDICT_IMPROVED)) {
		snprintf(r->note, sizeof(r->note),
		         "%+.1f%% in level %d of %zu (%.0f%% of the history's runs)",
		         100 * r->change, r->decided_by + 1, r->n_levels,
		         100 * r->levels[r->decided_by].share);
		return;
	}
	if (r->verdict != AW_VERDICT_UNKNOWN)
		return;
	if (!dom->n_head) {
		snprintf(r->note, sizeof(r->note),
		         "no head run in the level of %.0f%% of the history (the machine was in "
		         "another state)",
		         100 * dom->share);
		return;
	}
	for (size_t j = 0; j < r->n_levels; j++)
		if (r->levels[j].share >= o->level_share && !r->levels[j].n_head) {
			snprintf(r->note, sizeof(r->note),
			         "no head run yet in level %zu (%.0f%% of the history's runs)",
			         j + 1, 100 * r->levels[j].share);
			return;
		}
	snprintf(r->note, sizeof(r->note),
	         "%+.1f%% [%+.1f%%, %+.1f%%] could still be a %.3g%% change either way",
	         100 * r->change, 100 * r->change_lo, 100 * r->change_hi, 100 * in->threshold);
}

/* ---- the host's cells ---- */

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

/* Phase 2: each cell's noises moderated towards its group's (raised, never lowered), the
 * slowdowns' (`down` false) and the speed-ups' apart. */
static void moderate(const struct aw_detect_input *in, size_t n, const struct aw_detect_opts *o,
                     struct cell *cells, bool down, double *s, double *f)
{
	for (size_t i = 0; i < n; i++) {
		double s0, d0;
		size_t k = 0;
		bool first = true;

		for (size_t j = 0; j < i && first; j++)
			first = in[j].group != in[i].group;
		if (!first)
			continue;
		for (size_t j = i; j < n; j++) {
			double own = down ? cells[j].s_down : cells[j].s_up;

			if (in[j].group == in[i].group && own > 0 && cells[j].f_cell > 0) {
				s[k] = own;
				f[k++] = cells[j].f_cell;
			}
		}
		estimate_prior(s, f, k, o->prior_df_max, &s0, &d0);
		for (size_t j = i; j < n; j++) {
			struct cell *c = &cells[j];
			double own = down ? c->s_down : c->s_up, fo, v;

			if (in[j].group != in[i].group)
				continue;
			fo = own > 0 ? c->f_cell : 0;
			own = own > 0 ? own : 0;
			if (isfinite(s0) && fo + d0 > 0) {
				/* the group's noise can raise a cell's own, never lower it: a noisy
				 * cell among steady ones is no steadier for it */
				v = fmax(own, sqrt((fo * own * own + d0 * s0 * s0) / (fo + d0)));
				c->df = fo + d0;
			} else if (fo > 0) {
				v = own;
				c->df = fo;
			} else {
				v = UNKNOWN_NOISE;
				c->df = 1;
			}
			if (!(v >= o->noise_floor))
				v = o->noise_floor;
			if (isfinite(c->s_own) && v < c->s_own)
				v = c->s_own;
			*(down ? &c->down : &c->up) = v;
		}
	}
}

/* Benjamini-Hochberg per family, in place. */
static int bh_by_family(const struct aw_detect_input *in, size_t n, double *p, double *qa,
                        double *qb)
{
	for (size_t i = 0; i < n; i++) {
		size_t k = 0, at = 0;
		bool first = true;

		for (size_t j = 0; j < i && first; j++)
			first = in[j].family != in[i].family;
		if (!first)
			continue;
		for (size_t j = i; j < n; j++)
			if (in[j].family == in[i].family)
				qa[k++] = p[j];
		if (aw_bh_adjust(qa, k, qb))
			return -ENOMEM;
		for (size_t j = i; j < n; j++)
			if (in[j].family == in[i].family)
				p[j] = qb[at++];
	}
	return 0;
}

int aw_detect(const struct aw_detect_input *in, size_t n, const struct aw_detect_opts *opts,
              struct aw_detect_result *out)
{
	struct aw_detect_opts o = opts ? *opts : (struct aw_detect_opts)AW_DETECT_OPTS_DEFAULT;
	struct cell *cells = calloc(n ? n : 1, sizeof(*cells));
	size_t longest = 1;
	double *a = NULL, *b = NULL, *s = NULL, *qu = NULL, *qd = NULL, *qa = NULL, *qb = NULL;
	int rc = -ENOMEM;

	for (size_t i = 0; i < n; i++) {
		/* (a compare reads the base's runs and the whole history) */
		size_t len = (in[i].base ? in[i].n_base : 0) + in[i].n_history + in[i].n_head + 1;

		if (len > longest)
			longest = len;
	}
	a = malloc((longest * longest + 1) * sizeof(*a)); /* Theil-Sen's pairs */
	b = malloc(longest * sizeof(*b));
	s = malloc(longest * sizeof(*s));
	qu = malloc((n + 1) * 5 * sizeof(*qu));
	if (!cells || !a || !b || !s || !qu)
		goto out;
	qd = qu + n + 1;
	qa = qd + n + 1;
	qb = qa + n + 1;
	for (size_t i = 0; i < n; i++) {
		struct aw_detect_result *r = &out[i];
		struct cell *c = &cells[i];

		memset(r, 0, sizeof(*r));
		r->reference = r->level_ref = r->decided_by = -1;
		r->ref_slope = r->ref_gain = NAN;
		r->baseline = r->head = r->change = r->change_lo = r->change_hi = NAN;
		r->pvalue = r->qvalue = 1;
		if (gather(&in[i], &o, r, c))
			goto out;
		if (!c->nb) {
			r->verdict = AW_VERDICT_NEW;
			r->head = c->raw_head;
			continue;
		}
		{
			double bounds[AW_DETECT_LEVELS], centre = 0;
			double by_levels = pick_level_reference(&o, c, r, bounds, a, b, s);
			double by_line = pick_reference(&o, c, r, &centre, a, b, s);

			/* the machine's states when they explain the cell clearly better than a
			 * line through the reference does (a core alone or sharing its ports moves
			 * a subject by steps, not in proportion) */
			if (r->level_ref >= 0 && !(by_levels < (1 - o.ref_gain) * by_line)) {
				r->level_ref = -1;
				r->n_levels = 0;
			}
			if (r->level_ref >= 0) {
				r->reference = -1;
				r->ref_slope = r->ref_gain = NAN;
				take_levels(c, r, bounds, a, b);
			} else {
				adjust(c, r, centre);
			}
		}
		find_levels(&o, c, r, a, b, s);
	}
	moderate(in, n, &o, cells, false, qa, qb);
	moderate(in, n, &o, cells, true, qa, qb);
	for (size_t i = 0; i < n; i++) {
		qu[i] = qd[i] = 1;
		if (!cells[i].nb || !cells[i].nh)
			continue;
		judge_levels(&in[i], &o, &cells[i], &out[i], a, b);
		qu[i] = cells[i].p_up;
		qd[i] = cells[i].p_down;
	}
	if (bh_by_family(in, n, qu, qa, qb) || bh_by_family(in, n, qd, qa, qb))
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (!cells[i].nb)
			continue;
		if (!cells[i].nh) {
			out[i].verdict = AW_VERDICT_UNKNOWN;
			out[i].baseline = out[i].levels[out[i].dominant].base;
			out[i].noise = cells[i].up;
			continue;
		}
		decide(&in[i], &o, &cells[i], &out[i], qu[i], qd[i]);
		explain(&in[i], &o, &out[i]);
	}
	rc = 0;
out:
	for (size_t i = 0; i < n; i++) {
		free(cells[i].y);
		free(cells[i].res);
		free(cells[i].confirming);
		free(cells[i].ey);
		free(cells[i].eseg);
	}
	free(cells);
	free(a);
	free(b);
	free(s);
	free(qu);
	return rc;
}
