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

#define MAD_TO_SIGMA   1.4826 /* the MAD of a normal sample times this estimates sigma */
#define MAD_EFFICIENCY 0.3675 /* of the MAD relative to the standard deviation, normal data */
#define UNKNOWN_NOISE  0.01   /* assumed when nothing measures the noise */
#define MAX_CP         32
#define REF_MIN_RUNS   8   /* baseline runs a reference must be measured beside to be used */
#define LEVEL_MIN_RUNS 2   /* runs of a latent level, at least */
#define REF_LEVEL_RUNS 3   /* runs of each cluster of a reference that splits the levels */

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

/* 1.4826 x the MAD of v[0..n) about `centre`; NAN for n < 2. */
static double spread_about(const double *v, size_t n, double centre, double *scratch)
{
	if (n < 2)
		return NAN;
	for (size_t i = 0; i < n; i++)
		scratch[i] = fabs(v[i] - centre);
	aw_sort_doubles(scratch, n);
	return MAD_TO_SIGMA * aw_quantile_sorted(scratch, n, 0.5);
}

/* P(X <= m) for X ~ Binomial(n, w). */
static double binom_cdf(size_t m, size_t n, double w)
{
	double sum = 0;

	for (size_t k = 0; k <= m && k <= n; k++) {
		double lc = lgamma((double)n + 1) - lgamma((double)k + 1) - lgamma((double)(n - k) + 1);

		sum += exp(lc + (double)k * log(w) + (double)(n - k) * log1p(-w));
	}
	return sum < 1 ? sum : 1;
}

/* ---- one metric of one cell ---- */

struct cell {
	double *y;  /* log values: the baseline's, then the head's */
	double *x[AW_DETECT_REFS]; /* log reference values, likewise (NAN: none) */
	size_t nb, nh;             /* baseline and head runs (y[nb .. nb + nh) the head) */
	double raw_base, raw_head; /* ns medians as measured */
	bool zero_base;            /* every baseline run below resolution */
	int level_of[256];         /* level of each baseline run */
	double s_own;              /* the runs' own precision (median se / value), NAN unknown */
	double s_cell, f_cell;     /* own noise about the levels and its degrees of freedom */
	double noise, df;          /* moderated */
	double p_up, p_down;       /* candidates for the correction (1: none) */
	double up_size, down_size; /* of the deciding test, log */
	int up_level, down_level;  /* the level behind each, -1 the share test */
	size_t head_level_n[AW_DETECT_LEVELS];
	double head_med[AW_DETECT_LEVELS];
	double centre[AW_DETECT_LEVELS];
	double ref_centre[AW_DETECT_LEVELS]; /* of the level reference's clusters */
	double delta_left;                    /* the share test's move (log), NAN */
	int head_lev[256];                    /* the level of each head run */
};

#define MAX_BASE 256 /* baseline runs judged at most (window and base commits) */

static double log_value(double v, double floor_ns)
{
	return log(v > floor_ns ? v : floor_ns);
}

/* The baseline runs (the window after the last change point, or the base commit's) and the
 * head's, as log values and log references; NULL output when n == 0. Returns 0 or -ENOMEM. */
static int gather(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                  struct aw_detect_result *r, struct cell *c)
{
	const double *bv = in->base ? in->base : in->history;
	const double *const *bx = in->base ? in->base_ref : in->history_ref;
	size_t n = in->base ? in->n_base : in->n_history, from = 0, total;
	double *tmp = NULL, *scratch;
	size_t *at = NULL, k = 0;
	int rc = -ENOMEM;

	tmp = malloc(2 * (n + in->n_head + 1) * sizeof(*tmp));
	at = malloc((n + 1) * sizeof(*at));
	if (!tmp || !at)
		goto out;
	scratch = tmp + n + in->n_head + 1;
	for (size_t i = 0; i < n; i++)
		if (isfinite(bv[i]) && bv[i] >= 0) {
			tmp[k] = bv[i] > o->min_abs_ns ? bv[i] : o->min_abs_ns;
			at[k++] = i;
		}
	if (!in->base && k >= 2 * o->cp.min_segment) {
		struct aw_changepoint cps[MAX_CP];
		int m = aw_changepoints(tmp, k, &o->cp, cps, MAX_CP);

		if (m > 0)
			from = cps[m - 1].index;
	}
	if (k - from > o->window && !in->base)
		from = k - o->window;
	if (k - from > MAX_BASE)
		from = k - MAX_BASE;
	c->nb = k - from;
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
	for (size_t j = 0; j < in->n_head; j++) {
		if (!(isfinite(in->head[j]) && in->head[j] >= 0))
			continue;
		c->y[k] = log_value(in->head[j], o->min_abs_ns);
		for (int q = 0; q < AW_DETECT_REFS; q++)
			c->x[q][k] = in->head_ref[q] && in->head_ref[q][j] > 0 ? log(in->head_ref[q][j])
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
	return rc;
}

/* Theil-Sen slope of y on x over the first n pairs with both finite, clamped to [0, 2]; NAN
 * when fewer than REF_MIN_RUNS pairs. */
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
	return fmin(2, fmax(0, aw_quantile_sorted(scratch, pairs, 0.5)));
}

/* The control variate: the reference whose removal cuts the baseline's spread by ref_gain or
 * more, measured beside every head run too. Returns the spread it leaves (the values' own
 * when none does), with r->reference, r->ref_slope and *centre set; adjust() applies it. */
static double pick_reference(const struct aw_detect_opts *o, struct cell *c,
                             struct aw_detect_result *r, double *centre, double *a, double *b)
{
	double s0, best = INFINITY, slope = NAN;
	size_t total = c->nb + c->nh;

	r->reference = -1;
	s0 = c->nb >= 3 ? spread_about(c->y, c->nb, median_of(c->y, c->nb, a), a) : NAN;
	if (c->nb < REF_MIN_RUNS || !(s0 > 0))
		return s0;
	for (int q = 0; q < AW_DETECT_REFS; q++) {
		double bq, xc, s;
		size_t m = 0;
		bool head_has = true;

		for (size_t i = c->nb; i < total; i++)
			head_has = head_has && isfinite(c->x[q][i]);
		for (size_t i = 0; i < c->nb; i++)
			if (isfinite(c->x[q][i]))
				b[m++] = c->x[q][i];
		if (!head_has || m < c->nb || m < REF_MIN_RUNS)
			continue;
		xc = median_of(b, m, a);
		bq = theil_sen(c->y, c->x[q], c->nb, a);
		if (!isfinite(bq) || !(bq > 0))
			continue;
		for (size_t i = 0; i < c->nb; i++)
			b[i] = c->y[i] - bq * (c->x[q][i] - xc);
		s = spread_about(b, c->nb, median_of(b, c->nb, a), a);
		if (s < best) {
			best = s;
			r->reference = q;
			slope = bq;
			*centre = xc;
		}
	}
	if (r->reference < 0 || !(best <= (1 - o->ref_gain) * s0)) {
		r->reference = -1;
		return s0;
	}
	r->ref_slope = slope;
	r->ref_gain = 1 - best / s0;
	return best;
}

/* Applies the control variate pick_reference() chose to every value, baseline and head. */
static void adjust(struct cell *c, const struct aw_detect_result *r, double centre)
{
	for (size_t i = 0; r->reference >= 0 && i < c->nb + c->nh; i++)
		c->y[i] -= r->ref_slope * (c->x[r->reference][i] - centre);
}

/* Splits sorted[lo, hi) at its widest gap when the two sides' centres lie level_gap noises
 * apart (and the gap itself half that) with LEVEL_MIN_RUNS on each side; recursively. Writes
 * the first index of each level after the first into cuts. */
static void split_levels(const double *sorted, size_t lo, size_t hi, double floor_noise,
                         const struct aw_detect_opts *o, size_t *cuts, size_t *n_cuts,
                         double *scratch)
{
	size_t at = 0;
	double gap = 0, s, sl, sr, cl, cr;

	if (hi - lo < 2 * LEVEL_MIN_RUNS || *n_cuts + 1 >= AW_DETECT_LEVELS)
		return;
	for (size_t i = lo + LEVEL_MIN_RUNS; i + LEVEL_MIN_RUNS <= hi; i++)
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
	split_levels(sorted, lo, at, floor_noise, o, cuts, n_cuts, scratch);
	split_levels(sorted, at, hi, floor_noise, o, cuts, n_cuts, scratch);
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return (x > y) - (x < y);
}

/* Clusters of v[0..n) (copied and sorted into `sorted`): returns how many, with the upper
 * bound of each but the last in bounds[] (a value v is in cluster j when it is above
 * bounds[j - 1] and at most bounds[j]). */
static size_t clusters(const double *v, size_t n, double floor_noise, const struct aw_detect_opts *o,
                       double *sorted, double *scratch, double *bounds)
{
	size_t cuts[AW_DETECT_LEVELS], n_cuts = 0;

	memcpy(sorted, v, n * sizeof(*v));
	aw_sort_doubles(sorted, n);
	split_levels(sorted, 0, n, floor_noise, o, cuts, &n_cuts, scratch);
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
 * (INFINITY when no reference splits it), with r->level_ref and r->n_levels set; take_levels()
 * makes them the levels. */
static double pick_level_reference(const struct aw_detect_opts *o, struct cell *c,
                                   struct aw_detect_result *r, double *bounds, double *a,
                                   double *b, double *s)
{
	double best = 0, spread = INFINITY;
	size_t total = c->nb + c->nh;

	r->level_ref = -1;
	for (int q = 0; q < AW_DETECT_REFS; q++) {
		double bq[AW_DETECT_LEVELS], med[AW_DETECT_LEVELS], pooled = 0, sep = 0;
		size_t cnt[AW_DETECT_LEVELS] = {0}, k, dof = 0;
		bool ok = true;

		for (size_t i = 0; i < total && ok; i++)
			ok = isfinite(c->x[q][i]);
		if (!ok || c->nb < 2 * REF_LEVEL_RUNS)
			continue;
		k = clusters(c->x[q], c->nb, 1e-4, o, a, s, bq);
		if (k < 2)
			continue;
		for (size_t j = 0; j < k && ok; j++) {
			size_t m = 0;

			for (size_t i = 0; i < c->nb; i++)
				if (cluster_of(c->x[q][i], bq, k) == (int)j)
					b[m++] = c->y[i];
			cnt[j] = m;
			ok = m >= REF_LEVEL_RUNS;
			if (!ok)
				break;
			med[j] = median_of(b, m, a);
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
		spread = pooled;
		r->level_ref = q;
		r->n_levels = k;
		memcpy(bounds, bq, k * sizeof(*bq));
		(void)cnt;
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

/* The levels of the baseline: the level reference's clusters, else the clusters of the
 * (adjusted) values. Fills each level's share, centre and count, the dominant level, and the
 * cell's own noise about its levels. */
static void find_levels(const struct aw_detect_opts *o, struct cell *c, struct aw_detect_result *r,
                        double *a, double *b, double *s)
{
	double floor_noise = fmax(o->noise_floor, isfinite(c->s_own) ? c->s_own : 0);
	size_t dof = 0;
	double ss = 0;

	if (r->level_ref < 0) {
		double bounds[AW_DETECT_LEVELS];

		r->n_levels = clusters(c->y, c->nb, floor_noise, o, a, s, bounds);
		for (size_t i = 0; i < c->nb; i++)
			c->level_of[i] = cluster_of(c->y[i], bounds, r->n_levels);
	}
	r->dominant = 0;
	for (size_t j = 0; j < r->n_levels; j++) {
		struct aw_level *l = &r->levels[j];
		size_t m = 0;

		for (size_t i = 0; i < c->nb; i++)
			if (c->level_of[i] == (int)j)
				b[m++] = c->y[i];
		l->n_base = m;
		l->share = (double)m / (double)c->nb;
		c->centre[j] = median_of(b, m, a);
		for (size_t i = 0; i < m; i++)
			s[dof + i] = b[i] - c->centre[j];
		dof += m;
		if (m > r->levels[r->dominant].n_base)
			r->dominant = j;
	}
	/* the noise about the levels, one for the cell (a minority level's few runs measure
	 * its own spread poorly) */
	c->s_cell = NAN;
	c->f_cell = 0;
	if (c->nb >= 3) {
		c->s_cell = spread_about(s, dof, 0, a);
		c->f_cell = MAD_EFFICIENCY * (double)(c->nb - r->n_levels);
		if (!(c->f_cell > 0.5))
			c->f_cell = 0.5;
	}
	(void)ss;
}

/* The level of head run i (index into y): by the level reference, else a minority level whose
 * band it lies in and which is nearer than the dominant, else the dominant one. */
static int head_level(const struct aw_detect_opts *o, const struct cell *c,
                      const struct aw_detect_result *r, size_t i)
{
	size_t dom = r->dominant;
	int best = (int)dom;

	if (r->level_ref >= 0) {
		double x = c->x[r->level_ref][i], d = INFINITY;

		for (size_t j = 0; j < r->n_levels; j++)
			if (fabs(x - c->ref_centre[j]) < d) {
				d = fabs(x - c->ref_centre[j]);
				best = (int)j;
			}
		return best;
	}
	for (size_t j = 0; j < r->n_levels; j++) {
		double d = fabs(c->y[i] - c->centre[j]);

		if (j != dom && d <= o->level_band * c->noise && d < fabs(c->y[i] - c->centre[dom]))
			best = (int)j;
	}
	return best;
}

/* Phase 3: each level's change, and the candidates for the false discovery correction. */
static void judge_levels(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                         struct cell *c, struct aw_detect_result *r, double *a, double *b)
{
	double tq = aw_t_quantile(0.05, c->df), thr = log1p(in->threshold);
	int lev[256];
	size_t eligible_n = 0, in_dom = 0;

	c->p_up = c->p_down = 1;
	c->up_level = c->down_level = -1;
	c->delta_left = NAN;
	for (size_t i = 0; i < c->nh && i < 256; i++)
		lev[i] = c->head_lev[i] = head_level(o, c, r, c->nb + i);
	for (size_t j = 0; j < r->n_levels; j++)
		eligible_n += j == r->dominant || r->levels[j].share >= o->level_share;
	for (size_t j = 0; j < r->n_levels; j++) {
		struct aw_level *l = &r->levels[j];
		double tau, se, d, t;
		size_t m = 0;

		for (size_t i = 0; i < c->nh && i < 256; i++)
			if (lev[i] == (int)j)
				b[m++] = c->y[c->nb + i];
		l->n_head = m;
		l->base = exp(c->centre[j]);
		l->noise = c->noise;
		l->verdict = AW_VERDICT_UNKNOWN;
		l->head = l->change = l->change_lo = l->change_hi = l->pvalue = NAN;
		if (j == r->dominant)
			in_dom = m;
		if (!m)
			continue;
		c->head_med[j] = median_of(b, m, a);
		tau = c->noise;
		if (m == 1)
			tau = fmax(tau, o->screen_noise); /* one run cannot show its own spread */
		else if (m >= 3)
			tau = fmax(tau, spread_about(b, m, c->head_med[j], a));
		se = sqrt(tau * tau / (double)m + c->noise * c->noise / (double)l->n_base);
		d = c->head_med[j] - c->centre[j];
		t = se > 0 ? d / se : (d > 0 ? INFINITY : d < 0 ? -INFINITY : 0);
		l->head = exp(c->head_med[j]);
		l->change = expm1(d);
		l->change_lo = expm1(d - tq * se);
		l->change_hi = expm1(d + tq * se);
		l->pvalue = aw_t_sf(d >= 0 ? t : -t, c->df);
		l->verdict = d + tq * se < thr ? AW_VERDICT_UNCHANGED : AW_VERDICT_UNKNOWN;
		if (!(j == r->dominant || l->share >= o->level_share))
			continue;
		/* Bonferroni over the levels judged, then the correction over the host's cells */
		if (d > 0 && d + tq * se >= thr && l->pvalue * (double)eligible_n < c->p_up) {
			c->p_up = l->pvalue * (double)eligible_n;
			c->up_size = d;
			c->up_level = (int)j;
		}
		if (d < 0 && d - tq * se <= -thr && l->pvalue * (double)eligible_n < c->p_down) {
			c->p_down = l->pvalue * (double)eligible_n;
			c->down_size = d;
			c->down_level = (int)j;
		}
	}
	/* Latent levels: runs that keep leaving the dominant level moved, whatever each looks
	 * like (the dominant level slowed onto a slower level the history knew). */
	r->left_dominant = false;
	if (r->level_ref < 0 && r->n_levels > 1 && c->nh >= 2) {
		double w = r->levels[r->dominant].share, p = binom_cdf(in_dom, c->nh, w);

		if (p < o->share_alpha) {
			size_t m = 0;

			for (size_t i = 0; i < c->nh && i < 256; i++)
				if (lev[i] != (int)r->dominant)
					b[m++] = c->y[c->nb + i];
			c->delta_left = median_of(b, m, a) - c->centre[r->dominant];
			r->left_dominant = true;
			if (c->delta_left > 0 && c->delta_left + tq * c->noise >= thr && p < c->p_up) {
				c->p_up = p;
				c->up_size = c->delta_left;
				c->up_level = -1;
			} else if (c->delta_left < 0 && c->delta_left - tq * c->noise <= -thr &&
			           p < c->p_down) {
				c->p_down = p;
				c->down_size = c->delta_left;
				c->down_level = -1;
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
	bool bounded = r->levels[dom].n_head > 0, covered = true;
	int lvl = -1;

	r->noise = c->noise;
	r->decided_by = -1;
	r->bimodal = in->tail_bimodal;
	{
		size_t big = 0;

		for (size_t j = 0; j < r->n_levels; j++)
			big += r->levels[j].share >= o->level_share;
		r->bimodal = r->bimodal || big >= 2;
	}
	for (size_t j = 0; j < r->n_levels; j++) {
		const struct aw_level *l = &r->levels[j];

		if (!(j == dom || l->share >= o->level_share))
			continue;
		if (!l->n_head)
			covered = false;
		else if (l->verdict != AW_VERDICT_UNCHANGED)
			bounded = false;
	}
	r->change_ns = c->raw_head - c->raw_base;
	r->absolute = c->zero_base;
	if (c->p_up < 1 && q_up <= o->fdr && fabs(r->change_ns) >= o->min_abs_ns) {
		r->verdict = AW_VERDICT_REGRESSED;
		lvl = c->up_level;
		r->pvalue = c->p_up;
		r->qvalue = q_up;
	} else if (c->p_down < 1 && q_down <= o->fdr && fabs(r->change_ns) >= o->min_abs_ns) {
		r->verdict = AW_VERDICT_IMPROVED;
		lvl = c->down_level;
		r->pvalue = c->p_down;
		r->qvalue = q_down;
	} else if (bounded && !r->left_dominant && (covered || r->level_ref < 0)) {
		r->verdict = AW_VERDICT_UNCHANGED;
		lvl = (int)dom;
	} else if (bounded && !r->left_dominant && fabs(r->change_ns) < o->min_abs_ns) {
		r->verdict = AW_VERDICT_UNCHANGED; /* whatever the levels, below resolution */
		lvl = (int)dom;
	} else {
		r->verdict = AW_VERDICT_UNKNOWN;
	}
	r->decided_by = lvl;
	/* each level on its own, for the reader: "unchanged alone, +7% shared" */
	for (size_t j = 0; j < r->n_levels; j++) {
		struct aw_level *l = &r->levels[j];
		double d = log1p(l->change), lo = log1p(l->change_lo), hi = log1p(l->change_hi);

		if (!l->n_head)
			continue;
		if (l->pvalue <= o->fdr && d > 0 && hi >= thr)
			l->verdict = AW_VERDICT_REGRESSED;
		else if (l->pvalue <= o->fdr && d < 0 && lo <= -thr)
			l->verdict = AW_VERDICT_IMPROVED;
	}
	/* the head runs that could each show the move alone */
	r->agree_n = 0;
	if (r->verdict == AW_VERDICT_REGRESSED || r->verdict == AW_VERDICT_IMPROVED) {
		int sign = r->verdict == AW_VERDICT_REGRESSED ? 1 : -1;

		for (size_t i = 0; i < c->nh && i < 256; i++) {
			int j = c->head_lev[i];
			double one = fmax(c->noise, o->screen_noise);
			double d = c->y[c->nb + i] - c->centre[lvl >= 0 ? lvl : (int)dom];

			if (lvl >= 0 ? j != lvl : j == (int)dom)
				continue;
			if (sign * d > 0 && sign * d + tq * one * sqrt(1 + 1.0 / (double)c->nb) >= thr)
				r->agree_n++;
		}
	}
	if (lvl >= 0) {
		const struct aw_level *l = &r->levels[lvl];

		r->baseline = l->base;
		r->head = l->head;
		r->change = l->change;
		r->change_lo = l->change_lo;
		r->change_hi = l->change_hi;
		if (r->verdict == AW_VERDICT_UNCHANGED)
			r->pvalue = l->pvalue;
	} else {
		double d = r->verdict == AW_VERDICT_IMPROVED ? c->down_size : c->up_size;

		r->baseline = r->levels[dom].base;
		r->head = exp(c->raw_head > 0 ? log(c->raw_head) : log(o->min_abs_ns));
		if (r->verdict == AW_VERDICT_REGRESSED || r->verdict == AW_VERDICT_IMPROVED) {
			r->change = expm1(d);
			r->change_lo = expm1(d - tq * c->noise);
			r->change_hi = expm1(d + tq * c->noise);
		} else if (r->levels[dom].n_head) {
			r->head = r->levels[dom].head;
			r->change = r->levels[dom].change;
			r->change_lo = r->levels[dom].change_lo;
			r->change_hi = r->levels[dom].change_hi;
			r->pvalue = r->levels[dom].pvalue;
		} else {
			r->change = r->head / r->baseline - 1;
		}
	}
	(void)thr;
}

/* The sentence behind a verdict. */
static void explain(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                    const struct cell *c, struct aw_detect_result *r)
{
	const struct aw_level *dom = &r->levels[r->dominant];
	char where[96] = "";

	if (r->n_levels > 1 && r->decided_by >= 0)
		snprintf(where, sizeof(where), " in level %d of %zu (%.0f%% of the history)",
		         r->decided_by + 1, r->n_levels, 100 * r->levels[r->decided_by].share);
	r->note[0] = 0;
	switch (r->verdict) {
	case AW_VERDICT_REGRESSED:
	case AW_VERDICT_IMPROVED:
		if (r->decided_by < 0)
			snprintf(r->note, sizeof(r->note),
			         "%zu of %zu head runs left the level of %.0f%% of the history for one "
			         "%+.1f%% away",
			         c->nh - dom->n_head, c->nh, 100 * dom->share, 100 * expm1(c->delta_left));
		else if (where[0])
			snprintf(r->note, sizeof(r->note), "%+.1f%%%s", 100 * r->change, where);
		break;
	case AW_VERDICT_UNCHANGED:
		break;
	default:
		if (r->left_dominant)
			snprintf(r->note, sizeof(r->note),
			         "%zu of %zu head runs outside the level of %.0f%% of the history",
			         c->nh - dom->n_head, c->nh, 100 * dom->share);
		else if (!dom->n_head)
			snprintf(r->note, sizeof(r->note),
			         "no head run in the level of %.0f%% of the history (the head ran in "
			         "another level)",
			         100 * dom->share);
		else {
			for (size_t j = 0; j < r->n_levels; j++)
				if (r->levels[j].share >= o->level_share && !r->levels[j].n_head) {
					snprintf(r->note, sizeof(r->note),
					         "no head run yet in level %zu (%.0f%% of the history)",
					         j + 1, 100 * r->levels[j].share);
					return;
				}
			snprintf(r->note, sizeof(r->note),
			         "%+.1f%% could still reach the %.3g%% threshold (bound %+.1f%%)",
			         100 * r->change, 100 * in->threshold, 100 * r->change_hi);
		}
	}
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

/* Phase 2: each cell's noise moderated towards its group's. */
static void moderate(const struct aw_detect_input *in, size_t n, const struct aw_detect_opts *o,
                     struct cell *cells, double *s, double *f)
{
	for (size_t i = 0; i < n; i++) {
		double s0, d0;
		size_t k = 0;
		bool first = true;

		for (size_t j = 0; j < i && first; j++)
			first = in[j].group != in[i].group;
		if (!first)
			continue;
		for (size_t j = i; j < n; j++)
			if (in[j].group == in[i].group && cells[j].s_cell > 0 && cells[j].f_cell > 0) {
				s[k] = cells[j].s_cell;
				f[k++] = cells[j].f_cell;
			}
		estimate_prior(s, f, k, o->prior_df_max, &s0, &d0);
		for (size_t j = i; j < n; j++) {
			struct cell *c = &cells[j];
			double own = c->s_cell > 0 ? c->s_cell : 0, fo = c->s_cell > 0 ? c->f_cell : 0;

			if (in[j].group != in[i].group)
				continue;
			if (isfinite(s0) && fo + d0 > 0) {
				c->noise = sqrt((fo * own * own + d0 * s0 * s0) / (fo + d0));
				c->df = fo + d0;
			} else if (fo > 0) {
				c->noise = own;
				c->df = fo;
			} else {
				c->noise = UNKNOWN_NOISE;
				c->df = 1;
			}
			if (!(c->noise >= o->noise_floor))
				c->noise = o->noise_floor;
			if (isfinite(c->s_own) && c->noise < c->s_own)
				c->noise = c->s_own;
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
		size_t len = (in[i].base ? in[i].n_base : in[i].n_history) + in[i].n_head + 1;

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
			double by_line = pick_reference(&o, c, r, &centre, a, b);

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
	moderate(in, n, &o, cells, qa, qb);
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
			out[i].noise = cells[i].noise;
			continue;
		}
		decide(&in[i], &o, &cells[i], &out[i], qu[i], qd[i]);
		explain(&in[i], &o, &cells[i], &out[i]);
	}
	rc = 0;
out:
	for (size_t i = 0; i < n; i++)
		free(cells[i].y);
	free(cells);
	free(a);
	free(b);
	free(s);
	free(qu);
	return rc;
}
