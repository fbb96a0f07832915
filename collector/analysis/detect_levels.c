/* The references and levels of one metric of one cell (docs/detection.md, "The model"): the
 * control variate a reference gives, the machine's states a reference's clusters tell apart, and
 * what the head runs measured in a memory state the baseline never saw can still say. */
#include "detect_internal.h"

#include <errno.h>
#include <stdlib.h>

#include "aw/stats.h"
#include "stattest.h"

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

/* Solves the n x n system m z = v (row-major, n <= COMBO_MAX) by Gaussian elimination with
 * partial pivoting, in place (z in v); false when it is singular. */
#define COMBO_MAX (AW_DETECT_KERNELS + 1)
static bool solve(double m[COMBO_MAX][COMBO_MAX], double *v, int n)
{
	for (int k = 0; k < n; k++) {
		int p = k;

		for (int i = k + 1; i < n; i++)
			if (fabs(m[i][k]) > fabs(m[p][k]))
				p = i;
		if (!(fabs(m[p][k]) > 1e-12))
			return false;
		for (int j = 0; j < n; j++) {
			double t = m[k][j];

			m[k][j] = m[p][j];
			m[p][j] = t;
		}
		{
			double t = v[k];

			v[k] = v[p];
			v[p] = t;
		}
		for (int i = k + 1; i < n; i++) {
			double f = m[i][k] / m[k][k];

			for (int j = k; j < n; j++)
				m[i][j] -= f * m[k][j];
			v[i] -= f * v[k];
		}
	}
	for (int k = n - 1; k >= 0; k--) {
		for (int j = k + 1; j < n; j++)
			v[k] -= m[k][j] * v[j];
		v[k] /= m[k][k];
	}
	return true;
}

/* The weighted normal equations of the rows x (n_rows x (1 + nk), a leading 1) on y with
 * weights w: their matrix into m, the coefficients into beta; false when singular. */
static bool fit_rows(const double *x, const double *y, const double *w, size_t n_rows, int nk,
                     double m[COMBO_MAX][COMBO_MAX], double *beta)
{
	int d = nk + 1;

	memset(m, 0, sizeof(double) * COMBO_MAX * COMBO_MAX);
	memset(beta, 0, sizeof(double) * COMBO_MAX);
	for (size_t i = 0; i < n_rows; i++)
		for (int j = 0; j < d; j++) {
			beta[j] += w[i] * x[i * d + j] * y[i];
			for (int k = 0; k < d; k++)
				m[j][k] += w[i] * x[i * d + j] * x[i * d + k];
		}
	{
		double mm[COMBO_MAX][COMBO_MAX];

		memcpy(mm, m, sizeof(mm));
		return solve(mm, beta, d);
	}
}

/* One plane of the kernels together: the cell's log values over the history on the kernel slots
 * slot[0..nk) (centred on mu), Huber's weights iterated (a run the plane leaves far off weighs
 * less). Returns the tail spread of its leave-one-out residuals (each run's distance from the
 * plane fitted without it), INFINITY when singular or when a slope leaves [0, 1.5] (the clamp
 * of a single line: a kernel slower never makes the cell faster, and a kernel that barely moves
 * takes any slope the noise gives it), with the slopes in beta[1..nk]. a: scratch. */
static double plane(const struct cell *c, const int *slot, int nk, const double *mu, double *beta,
                    double *a)
{
	size_t nall = c->ne + c->nb, n = 0;
	int d = nk + 1;
	double m[COMBO_MAX][COMBO_MAX], *x = a, *y, *w, *e, *t;

	y = x + nall * (size_t)d;
	w = y + nall;
	e = w + nall;
	t = e + nall;
	for (size_t i = 0; i < nall; i++) {
		bool ok = true;

		x[n * d] = 1;
		for (int k = 0; k < nk; k++) {
			double v = i < c->ne ? c->ex[slot[k]][i] : c->x[slot[k]][i - c->ne];

			ok = ok && isfinite(v);
			x[n * d + 1 + k] = v - mu[k];
		}
		y[n] = i < c->ne ? c->ey[i] : c->y[i - c->ne];
		w[n] = 1;
		n += ok;
	}
	if (n < STATE_MIN_RUNS)
		return INFINITY;
	for (int round = 0; round < 8; round++) {
		double scale;

		if (!fit_rows(x, y, w, n, nk, m, beta))
			return INFINITY;
		for (size_t i = 0; i < n; i++) {
			e[i] = y[i];
			for (int j = 0; j < d; j++)
				e[i] -= beta[j] * x[i * d + j];
		}
		scale = detect_spread_about(e, n, 0, t);
		for (size_t i = 0; i < n; i++)
			w[i] = scale > 0 && fabs(e[i]) > 1.345 * scale ? 1.345 * scale / fabs(e[i])
			                                               : 1;
	}
	if (!fit_rows(x, y, w, n, nk, m, beta))
		return INFINITY;
	for (int k = 0; k < nk; k++)
		if (!(beta[1 + k] >= 0 && beta[1 + k] <= 1.5))
			return INFINITY;
	/* leave one out: e_i / (1 - h_i), h_i = w_i x_i' M^-1 x_i */
	for (size_t i = 0; i < n; i++) {
		double mm[COMBO_MAX][COMBO_MAX], v[COMBO_MAX], h = 0, fit = 0;

		memcpy(mm, m, sizeof(mm));
		memcpy(v, x + i * d, sizeof(double) * (size_t)d);
		if (!solve(mm, v, d))
			return INFINITY;
		for (int j = 0; j < d; j++) {
			h += x[i * d + j] * v[j];
			fit += beta[j] * x[i * d + j];
		}
		e[i] = (y[i] - fit) / fmax(1 - w[i] * h, 0.05);
	}
	return detect_tail_spread(e, n, t);
}

/* The kernels together (AW_DETECT_COMBINED): of every set of two or more kernel slots measured
 * beside all the cell's runs, the plane() whose leave-one-out spread is least (the extra slopes
 * are paid for, not fitted to the noise). Where a core shares its ports now and then, an atomic
 * reads the sharing through the atomic add and the clock through the chain, neither alone.
 * Fills the slot with each run's predicted log value (so its slope is 1) and r->ref_terms;
 * returns that spread, INFINITY when no plane qualifies. a: scratch of the history's length
 * squared. */
static double combine(struct cell *c, struct aw_detect_result *r, double *a)
{
	size_t total = c->nb + c->nh;
	int avail[AW_DETECT_KERNELS], n_avail = 0, best_set = 0;
	double mu[AW_DETECT_KERNELS], best = INFINITY, best_beta[COMBO_MAX];

	for (int q = 0; q < AW_DETECT_KERNELS; q++) {
		bool all = true;

		for (size_t i = 0; i < total && all; i++)
			all = isfinite(c->x[q][i]);
		if (all) {
			mu[n_avail] = detect_median(c->x[q], c->nb, a);
			avail[n_avail++] = q;
		}
	}
	if (n_avail < 2 || c->ne + c->nb < STATE_MIN_RUNS)
		return INFINITY;
	for (int set = 1; set < 1 << n_avail; set++) {
		int slot[AW_DETECT_KERNELS], nk = 0;
		double m[AW_DETECT_KERNELS], beta[COMBO_MAX], sp;

		for (int k = 0; k < n_avail; k++)
			if (set & 1 << k) {
				m[nk] = mu[k];
				slot[nk++] = avail[k];
			}
		if (nk < 2)
			continue;
		sp = plane(c, slot, nk, m, beta, a);
		if (sp < best) {
			best = sp;
			best_set = set;
			memcpy(best_beta, beta, sizeof(beta));
		}
	}
	if (!best_set)
		return INFINITY;
	for (size_t i = 0; i < total; i++)
		c->x[AW_DETECT_COMBINED][i] = best_beta[0];
	for (size_t i = 0; i < c->ne; i++)
		c->ex[AW_DETECT_COMBINED][i] = best_beta[0];
	for (int k = 0, j = 1; k < n_avail; k++) {
		int q = avail[k];

		if (!(best_set & 1 << k))
			continue;
		for (size_t i = 0; i < total; i++)
			c->x[AW_DETECT_COMBINED][i] += best_beta[j] * (c->x[q][i] - mu[k]);
		for (size_t i = 0; i < c->ne; i++) /* (NAN where a kernel was not measured) */
			c->ex[AW_DETECT_COMBINED][i] += best_beta[j] * (c->ex[q][i] - mu[k]);
		r->ref_terms[q] = best_beta[j++];
	}
	return best;
}

double detect_pick_reference(const struct aw_detect_opts *o, struct cell *c,
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
	s0 = nall >= 3 ? detect_tail_spread(b, nall, a) : NAN;
	if (nall < REF_MIN_RUNS || !(s0 > 0))
		return s0;
	for (int q = 0; q < DETECT_SLOTS; q++) {
		double bq, xc, sq;
		size_t m = 0;
		bool has = true;

		if (q == AW_DETECT_COMBINED) {
			sq = combine(c, r, a);
			if (sq < best) {
				best = sq;
				r->reference = q;
				slope = 1;
				*centre = detect_median(c->x[q], c->nb, a);
			}
			continue;
		}

		for (size_t i = c->nb; i < total; i++)
			has = has && isfinite(c->x[q][i]);
		for (size_t i = 0; i < nall; i++) {
			s[i] = i < c->ne ? c->ex[q][i] : c->x[q][i - c->ne];
			m += isfinite(s[i]);
		}
		for (size_t i = 0; i < c->nb; i++)
			has = has && isfinite(c->x[q][i]);
		/* the memory states swing with other tenants' traffic by far more than the
		 * compute kernels (their spread over one run's cells is 50-180%), so a line on
		 * one needs more runs to be told from a coincidence: in e2e.ci.demo a history of
		 * twelve runs made the gather's state the line of a 13 ns srcu reader, and ten
		 * head runs in a quieter memory state (0.61x) then decided nothing */
		if (!has || m < (q >= AW_DETECT_MEMORY ? STATE_MIN_RUNS : REF_MIN_RUNS))
			continue;
		xc = detect_median(c->x[q], c->nb, a);
		bq = theil_sen(b, s, nall, a);
		if (!(bq > 0))
			continue;
		m = 0;
		for (size_t i = 0; i < nall; i++)
			if (isfinite(s[i]))
				a[m++] = b[i] - bq * (s[i] - xc);
		memcpy(s, a, m * sizeof(*a));
		sq = detect_tail_spread(s, m, a);
		if (sq < best) {
			best = sq;
			r->reference = q;
			slope = bq;
			*centre = xc;
		}
		for (size_t i = 0; i < nall; i++) /* (b was kept) */
			b[i] = i < c->ne ? c->ey[i] : c->y[i - c->ne];
	}
	if (r->reference != AW_DETECT_COMBINED)
		for (int q = 0; q < AW_DETECT_KERNELS; q++)
			r->ref_terms[q] = NAN;
	if (r->reference < 0 || !(best <= (1 - o->ref_gain) * s0)) {
		r->reference = -1;
		return s0;
	}
	r->ref_slope = slope;
	r->ref_gain = 1 - best / s0;
	return best;
}

/* Applies the control variate detect_pick_reference() chose to every value, baseline and head, each
 * run's reference clamped to the range the history's runs show: a run is adjusted by no more
 * than the history showed the reference moving (one reading of 8 batches can stray where the
 * cell did not). Keeps the band of the reference's usual readings (ref_lo, ref_hi): the
 * baseline's 10th-90th percentile. A new reading from the same distribution falls beyond the k-th
 * smallest or largest of n with probability 2k / (n + 1): fewer than 9 readings bound no 80% band,
 * and three leave a new one beyond them half the time. A compare's base commit with fewer than
 * REF_BAND_RUNS runs is a sample of the host's recent runs, not a regime of its own: its band is
 * that of its runs and the history's together. A gate's window after a change point is a regime,
 * and the runs before it another: a short window keeps its own band (pooled, a loaded run whose
 * reference read like the earlier regime's was corrected from +26% to +8% and failed an unchanged
 * build, docs/detection.md). a: scratch of the baseline's and the earlier history's length. */
/* The band of slot k's baseline runs (with the earlier history's when `pool`): their REF_BAND_Q
 * to 1 - REF_BAND_Q quantiles; *lo and *hi are left as they are when none has it. */
static void slot_band(const struct cell *c, int k, bool pool, double *a, double *lo, double *hi)
{
	size_t m = 0;

	for (size_t i = 0; i < c->nb; i++)
		if (isfinite(c->x[k][i]))
			a[m++] = c->x[k][i];
	for (size_t i = 0; pool && i < c->ne; i++)
		if (isfinite(c->ex[k][i]))
			a[m++] = c->ex[k][i];
	if (!m)
		return;
	aw_sort_doubles(a, m);
	*lo = aw_quantile_sorted(a, m, REF_BAND_Q);
	*hi = aw_quantile_sorted(a, m, 1 - REF_BAND_Q);
}

void detect_adjust(struct cell *c, const struct aw_detect_result *r, double centre, double *a)
{
	double lo = INFINITY, hi = -INFINITY;
	int q = r->reference;
	size_t m = 0;
	bool pool;

	if (q < 0)
		return;
	for (size_t i = 0; i < c->nb; i++)
		if (isfinite(c->x[q][i])) {
			lo = fmin(lo, c->x[q][i]);
			hi = fmax(hi, c->x[q][i]);
			m++;
		}
	pool = c->base_commit && m < REF_BAND_RUNS;
	for (size_t i = 0; i < c->ne; i++)
		if (isfinite(c->ex[q][i])) {
			lo = fmin(lo, c->ex[q][i]);
			hi = fmax(hi, c->ex[q][i]);
		}
	/* (pick_reference asked every baseline run for it) */
	slot_band(c, q, pool, a, &c->ref_lo, &c->ref_hi);
	for (int k = 0; k < AW_DETECT_KERNELS; k++) {
		c->term_lo[k] = c->term_hi[k] = NAN;
		if (q == AW_DETECT_COMBINED && isfinite(r->ref_terms[k]))
			slot_band(c, k, pool, a, &c->term_lo[k], &c->term_hi[k]);
	}
	c->ref_min = lo;
	c->ref_max = hi;
	c->ref_mid = centre;
	for (size_t i = 0; i < c->nb + c->nh; i++)
		c->y[i] -= r->ref_slope * (fmin(hi, fmax(lo, c->x[q][i])) - centre);
	/* (an earlier run without that reference measures the noise as it is) */
	for (size_t i = 0; i < c->ne; i++)
		if (isfinite(c->ex[q][i]))
			c->ey[i] -= r->ref_slope * (c->ex[q][i] - centre);
}

/* Whether run i (index into y) was measured with the correcting reference beyond the band of
 * the baseline's central runs (ref_lo, ref_hi) by more than the cell's noise once corrected: the
 * history says little about the correction of such a run (one reading of the reference can
 * stray where the cell did not, and the correction then makes a +10% build read -3%), so like
 * a run in a state the baseline hardly visits it neither clears the cell nor confirms a move.
 * Re-measurements at other moments decide. */
/* How far beyond its band [lo, hi] a reading x lies, times |slope|: what a line could still owe
 * such a run (0 within the band or unknown). */
static double band_excess(double x, double lo, double hi, double slope)
{
	double beyond = x > hi ? x - hi : x < lo ? lo - x : 0;

	return isfinite(x) && isfinite(lo) && isfinite(hi) ? fabs(slope) * beyond : 0;
}

bool detect_off_band(const struct cell *c, const struct aw_detect_result *r, size_t i,
                     double *reach)
{
	double noise = fmax(c->up, c->down), most, sum = 0;

	*reach = 0;
	if (r->reference < 0)
		return false;
	most = band_excess(c->x[r->reference][i], c->ref_lo, c->ref_hi, r->ref_slope);
	for (int q = 0; q < AW_DETECT_KERNELS && r->reference == AW_DETECT_COMBINED; q++)
		if (isfinite(r->ref_terms[q])) {
			double e =
			    band_excess(c->x[q][i], c->term_lo[q], c->term_hi[q], r->ref_terms[q]);

			most = fmax(most, e);
			sum += e;
		}
	*reach = fmax(most, sum);
	return most > noise;
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
	sl = detect_spread_about(sorted + lo, at - lo, cl, scratch);
	sr = detect_spread_about(sorted + at, hi - at, cr, scratch);
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
 * as detect_pick_reference() measures the line's (detect_tail_spread() of the runs' deviations from
 * their level's median; INFINITY when no reference splits it), with r->level_ref and r->n_levels
 * set; detect_take_levels() makes them the levels. */
double detect_pick_level_reference(const struct aw_detect_opts *o, struct cell *c,
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
			med[j] = detect_median(b, m, a);
			for (size_t i = 0; i < m; i++) /* (s is free once clusters() returned) */
				s[n_dev++] = b[i] - med[j];
			{
				double sj = detect_spread_about(b, m, med[j], a);

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
		spread = detect_tail_spread(s, n_dev, a);
		r->level_ref = q;
		r->n_levels = k;
		memcpy(bounds, bq, k * sizeof(*bq));
	}
	return spread;
}

/* Makes the level reference's clusters the levels (each baseline run's, each one's centre). */
void detect_take_levels(struct cell *c, const struct aw_detect_result *r, const double *bounds,
                        double *a, double *b)
{
	for (size_t i = 0; i < c->nb; i++)
		c->level_of[i] = cluster_of(c->x[r->level_ref][i], bounds, r->n_levels);
	for (size_t j = 0; j < r->n_levels; j++) {
		size_t m = 0;

		for (size_t i = 0; i < c->nb; i++)
			if (c->level_of[i] == (int)j)
				b[m++] = c->x[r->level_ref][i];
		c->ref_centre[j] = detect_median(b, m, a);
	}
}

/* Latent levels, where no reference splits the cell: its own baseline runs, when they fall in
 * clusters of REF_LEVEL_RUNS runs and level_share of the baseline each whose centres lie
 * level_gap noises, bimodal_gap and three thresholds apart, all above the resolution. (The
 * machine's plain incq on a Zen core: 0.29 ns while the store is renamed, 1.9-2.2 ns while it is
 * not, in spells of tens of seconds that no reference kernel feels; e2e.ci.demo's tip of main
 * stayed unconfirmed 2 stories in 8 when its head's runs sat in the slow spell 7 times in 10 and
 * the baseline's 3 in 12.) A head run is judged against the level it reads nearest: three
 * thresholds apart, a change of one cannot carry a run nearer another level; a head with no run in
 * the dominant level (decide()) is no pass: the code may have left it. */
static void own_levels(const struct aw_detect_opts *o, struct cell *c, struct aw_detect_result *r,
                       double floor_noise, double thr, double *a, double *s)
{
	struct aw_detect_opts flag = *o;
	double bounds[AW_DETECT_LEVELS];
	size_t k, count[AW_DETECT_LEVELS] = {0};

	if (c->nb < 2 * REF_LEVEL_RUNS)
		return;
	flag.level_gap_min = fmax(log(o->bimodal_gap), 3 * thr);
	k = clusters(c->y, c->nb, floor_noise, &flag, a, s, bounds, REF_LEVEL_RUNS);
	if (k < 2)
		return;
	for (size_t i = 0; i < c->nb; i++)
		count[cluster_of(c->y[i], bounds, k)]++;
	for (size_t j = 0; j < k; j++)
		if (count[j] < REF_LEVEL_RUNS || (double)count[j] < o->level_share * (double)c->nb)
			return;
	/* (a level at the floor is the clock's resolution, not a state of the machine) */
	if (!(aw_quantile_sorted(a, count[0], 0.5) > log(o->min_abs_ns)))
		return;
	r->own_levels = true;
	r->n_levels = k;
	for (size_t i = 0; i < c->nb; i++)
		c->level_of[i] = cluster_of(c->y[i], bounds, k);
}

/* The levels of the baseline: the level reference's clusters (detect_take_levels() placed each
 * run), else the cell's own (own_levels()), else one. Fills each level's share, centre and count
 * and the dominant level; the cell's own noise about its levels, with the runs before the baseline
 * about the median of their own segment (the noise is the whole history's, the centre the
 * baseline's); and the bimodal flag (the baseline splits into two clusters of 3 runs or more,
 * bimodal_gap apart). */
void detect_find_levels(const struct aw_detect_opts *o, struct cell *c, struct aw_detect_result *r,
                        double thr, double *a, double *b, double *s)
{
	double floor_noise = fmax(o->noise_floor, isfinite(c->s_own) ? c->s_own : 0);
	size_t dof = 0, segs = 0, i = 0;

	if (r->level_ref < 0) {
		r->n_levels = 1;
		for (size_t k = 0; k < c->nb; k++)
			c->level_of[k] = 0;
		own_levels(o, c, r, floor_noise, thr, a, s);
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
		c->centre[j] = detect_median(b, m, a);
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
		centre = detect_median(b, m, a);
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
		detect_one_sided(s, dof, &c->s_up, &c->s_down);
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
 * that reference, the cell's own level nearest its value, else the one level. */
int detect_head_level(const struct cell *c, const struct aw_detect_result *r, size_t i)
{
	const double *centre = r->own_levels ? c->centre : c->ref_centre;
	double x, d = INFINITY;
	int best = 0;

	if (!r->own_levels && r->level_ref < 0)
		return 0;
	x = r->own_levels ? c->y[i] : c->x[r->level_ref][i];
	for (size_t j = 0; j < r->n_levels; j++)
		if (fabs(x - centre[j]) < d) {
			d = fabs(x - centre[j]);
			best = (int)j;
		}
	return best;
}

/* Whether the head runs of level j split in two: two or more within the threshold of the
 * level's centre, two or more three thresholds or more beyond it (sign: +1 slower, -1 faster),
 * and none between. The code moves every run it slows; runs that split between the baseline's
 * place and a far one show a state the cell visits (a plain incq whose store renaming stops for
 * a spell, 0.3 -> 2 ns; a liburcu reader between 4.2 and 7.0 ns), or a change only some runs
 * show: which, the runs cannot say. (e2e.ci.demo: the tip of main failed on the plain incq, 3 of
 * its 10 runs at the baseline's 0.29 ns and 7 at 1.6-2.3 ns, the slow state seen once in the
 * baseline's 12.) */
bool detect_head_split(const struct cell *c, int j, int sign, double thr, size_t *at_n,
                       size_t *far_n)
{
	size_t at = 0, far = 0, between = 0;

	for (size_t i = 0; i < c->nh && i < 256; i++) {
		double d;

		if (c->head_lev[i] != j)
			continue;
		d = sign * (c->y[c->nb + i] - c->centre[j]);
		if (fabs(d) < thr)
			at++;
		else if (d >= 3 * thr)
			far++;
		else
			between++;
	}
	*at_n = at;
	*far_n = far;
	return at >= 2 && far >= 2 && !between;
}

/* The highest of level j's baseline runs (log), NAN when it has none. */
double detect_level_top(const struct cell *c, int j)
{
	double top = NAN;

	for (size_t k = 0; k < c->nb && k < 256; k++)
		if (c->level_of[k] == j && !(c->y[k] <= top))
			top = c->y[k];
	return top;
}

/* ---- head runs beside a kernel that read unlike their level ---- */

/* Whether head run i (index into y), of level j, decides nothing: it was measured while a kernel
 * of the core (the dependent chain, the independent chains, the atomic) read as fewer than
 * ODD_NEAR of the level's baseline runs did (within ODD_MARGIN of it, or the width of their
 * middle half where wider; REF_MIN_RUNS of them at least show how a kernel reads), and that
 * moment may be why the run reads as it does. One kernel places a run in a level; a neighbour
 * that shares the core in a way that kernel does not feel, or for part of the run only, leaves
 * the cell in a state the level's history does not describe (amd25-quick-none-71, the core shared
 * half the time: srcu's lock_inc at 12.3 ns, not its level's 9.2, in runs whose independent
 * chains read as alone while the atomic read 3.6 ns, not 2.4). A slower moment only slows a
 * cell: a run that reads the threshold or more above its level beside a kernel that read slower
 * than the level's runs decides nothing; any other run is judged as ever (a faster moment cannot
 * make a slowdown, and keeping the runs that read as their level keeps a split head split:
 * e2e.ci.demo's plain incq, 0.29 ns or 2 ns by its own state, failed the gate when its runs at
 * 0.29 beside a fast kernel were set aside). Such a run may only keep a cell from failing. thr:
 * log1p(threshold). a: scratch of the baseline's length. */
bool detect_odd_state(const struct cell *c, int j, size_t i, double thr, double *a)
{
	/* (only a run the threshold above its level can be set aside: the others need no kernel
	 * read) */
	if (j < 0 || !(c->y[i] - c->centre[j] >= thr))
		return false;
	for (int q = 0; q < AW_REF_MEMCHASE; q++) {
		double x = c->x[q][i], w;
		size_t m = 0, near = 0;

		for (size_t k = 0; isfinite(x) && k < c->nb; k++)
			if (c->level_of[k] == j && isfinite(c->x[q][k]))
				a[m++] = c->x[q][k];
		if (m < REF_MIN_RUNS)
			continue;
		aw_sort_doubles(a, m);
		w = fmax(aw_quantile_sorted(a, m, 0.75) - aw_quantile_sorted(a, m, 0.25),
		         ODD_MARGIN);
		for (size_t k = 0; k < m; k++)
			near += fabs(a[k] - x) <= w;
		if (near < ODD_NEAR && x > aw_quantile_sorted(a, m, 0.5))
			return true; /* a kernel read slower than the level's runs */
	}
	return false;
}

/* ---- head runs in unseen memory states ---- */

/* The head runs in a memory state the baseline never saw cannot be compared with the baseline,
 * but they can be compared with the head runs in a state it saw: the same build, so a cell that
 * reads no higher in the unseen state than in those (within its noise, one-sided: slower memory
 * only slows) does not feel the difference, and such a run is judged like any other. The bridge
 * vouches only where it could have told a lift the size of the threshold: a cell whose noise
 * would hide one (a hash lookup, 5-15% from run to run: -44 had an unchanged one read +11% in
 * eleven head runs, nine of them in unseen states, which its two seen ones bridged) keeps the
 * unseen runs out. A compute-bound loop re-measured beside a neighbour's cache traffic confirms
 * its +42% this way; no seen head run, no bridge. Clears the flag of each run it bridges. thr:
 * log1p(threshold); a: scratch of the head's length at least. */
void detect_bridge_unseen(struct cell *c, double thr, double *a)
{
	size_t m = 0;
	double seen, tol;

	for (size_t i = 0; i < c->nh && i < 256; i++)
		if (!c->unseen[i])
			a[m++] = c->y[c->nb + i];
	if (!m)
		return;
	aw_sort_doubles(a, m);
	seen = aw_quantile_sorted(a, m, 0.5);
	tol = c->tq_up * fmax(c->up, UNKNOWN_NOISE) * sqrt(1 + 1.0 / (double)m);
	if (!(tol < thr))
		return;
	for (size_t i = 0; i < c->nh && i < 256; i++)
		if (c->unseen[i] && c->y[c->nb + i] <= seen + tol)
			c->unseen[i] = false;
}

/* What the memory state can explain of the cell, as the head runs themselves measure it: over
 * the m >= 4 head runs in unseen states (by[]: each one's state, log, over the baseline's),
 * the cell's log value against the state by least squares, and the slope's one-sided upper
 * bound (t at 5%, the residuals' spread and the cell's noise the larger); a state of distance b
 * then explains at most that slope times b. NAN where the runs cannot say: fewer than four, or
 * states spread over less than half the distance to the baseline's nearest (a line carried
 * further than it was measured). (e2e.bisect.daemon on a loaded machine: a chain of multiplies
 * +39% in eleven head runs, all in memory states 2.1-4.0x the baseline's and reading flat
 * across them, was held inconclusive by the state's s^3.) */
double detect_state_slope(const struct cell *c, const double *by)
{
	size_t m = 0, nh = c->nh < 256 ? c->nh : 256;
	double sb = 0, sy = 0, sxx = 0, sxy = 0, ss = 0, lo = INFINITY, hi = -INFINITY, b, sd;

	for (size_t i = 0; i < nh; i++)
		if (c->unseen[i]) {
			m++;
			sb += by[i];
			sy += c->y[c->nb + i];
			lo = fmin(lo, by[i]);
			hi = fmax(hi, by[i]);
		}
	if (m < 4 || !(hi - lo >= lo / 2))
		return NAN;
	sb /= (double)m;
	sy /= (double)m;
	for (size_t i = 0; i < nh; i++)
		if (c->unseen[i]) {
			sxx += (by[i] - sb) * (by[i] - sb);
			sxy += (by[i] - sb) * (c->y[c->nb + i] - sy);
		}
	b = sxy / sxx;
	for (size_t i = 0; i < nh; i++)
		if (c->unseen[i]) {
			double r = c->y[c->nb + i] - sy - b * (by[i] - sb);

			ss += r * r;
		}
	sd = fmax(sqrt(ss / (double)(m - 2)), c->up);
	return fmax(0, b + aw_t_quantile(0.05, (double)(m - 2)) * sd / sqrt(sxx));
}

/* A move is under the resolution only when it is so both ways: a reference that read the head's
 * moment fast can leave a corrected +5% as +1% measured, 0.05 ns of a 5 ns call, and the clock's
 * resolution then cleared a move the analysis itself measured past the threshold (the `overlap`
 * shape's +5% and +10% builds on amd26-quick-compilers-49: 9 of its 11 silent passes). */
double detect_move_ns(const struct cell *c, const struct aw_detect_result *r)
{
	double move = fabs(c->raw_head - c->raw_base);

	for (size_t j = 0; j < r->n_levels; j++) {
		const struct aw_level *l = &r->levels[j];

		if (l->n_head && isfinite(l->head - l->base))
			move = fmax(move, fabs(l->head - l->base));
	}
	return move;
}

/* How far the evidence lets the move reach, in ns: over the levels with head runs, the farther
 * end of each one's bounds on its change, times its base; 0 where none has bounds. A move under
 * the resolution is cleared only where this is under it too: a head whose runs split between the
 * base's level and one 20% above it can read a median 0.05 ns off a 1.7 ns base while its bounds
 * reach 0.12 ns (the `overlap` shape on amd25-quick-none-65 and -compilers-66, whose base runs
 * moved between 1.5 and 2.0 ns: twelve builds +6-38% slower passed as unchanged so). */
double detect_reach_ns(const struct aw_detect_result *r)
{
	double reach = 0;

	for (size_t j = 0; j < r->n_levels; j++) {
		const struct aw_level *l = &r->levels[j];

		if (!l->n_head || !(l->base > 0))
			continue;
		if (isfinite(l->change_hi))
			reach = fmax(reach, fabs(l->change_hi) * l->base);
		if (isfinite(l->change_lo))
			reach = fmax(reach, fabs(l->change_lo) * l->base);
	}
	return reach;
}

/* The median of a memory state x over the baseline's runs that have it, NAN under three. a:
 * scratch of the baseline's length. */
double detect_baseline_state(const struct cell *c, const double *x, double *a)
{
	size_t m = 0;

	for (size_t i = 0; i < c->nb; i++)
		if (isfinite(x[i]))
			a[m++] = x[i];
	if (m < 3)
		return NAN;
	aw_sort_doubles(a, m);
	return aw_quantile_sorted(a, m, 0.5);
}

/* The gather measured beside the cell itself (in->history_cell_gather, head_cell_gather) as
 * c->cg, log, the baseline's runs (at[0 .. nb): their indices in the history) then the head's:
 * the memory state of the very moment the cell was measured in. A hash table's lookups slow
 * with memory moments shorter than a run, which the state read beside the run's first cells
 * misses (under two compiler jobs: 0.97-1.00x for the lookup's usual runs, 1.04-1.10x for its
 * runs 30% slow; beside it, 0.88-0.91x and 1.28x). The cell's own traffic moves it too, so it
 * is a state that withholds a confirmation, never a reference that corrects. None for a
 * compare (a base commit's runs). Returns 0 or -ENOMEM. */
int detect_cell_gather(const struct aw_detect_input *in, struct cell *c, const size_t *at,
                       size_t total)
{
	size_t h = c->nb;

	if (in->base || !in->history_cell_gather || !in->head_cell_gather)
		return 0;
	c->cg = malloc((total + 1) * sizeof(double));
	if (!c->cg)
		return -ENOMEM;
	for (size_t i = 0; i < c->nb; i++) {
		double v = in->history_cell_gather[at[i]];

		c->cg[i] = v > 0 ? log(v) : NAN;
	}
	for (size_t j = 0; j < in->n_head; j++)
		if (isfinite(in->head[j]) && in->head[j] >= 0)
			c->cg[h++] =
			    in->head_cell_gather[j] > 0 ? log(in->head_cell_gather[j]) : NAN;
	return 0;
}
