/* Regression verdicts by one model: references, levels, a noise floor; see detect.h and
 * docs/detection.md ("The model"). */
#include "detect_internal.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/stats.h"
#include "stattest.h"

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

static double log_value(double v, double floor_ns)
{
	return log(v > floor_ns ? v : floor_ns);
}

/* Keeps the change points that are steps: the runs after one (up to the next) sit outside the
 * band the runs before it (since the last kept one) spanned, their 10th to 90th percentile, and
 * outside the band of every earlier kept segment. Runs back inside such a band are a machine
 * that alternates between levels returning to one of them, a split Welch's test finds in a
 * bimodal history, which the levels judge instead (a liburcu reader at 4.2 ns and 7.0 ns in
 * spells of ten to twenty runs: each spell would be a window of its own, and a head measured in
 * the other spell a regression). A step back to an old level is still a step until the commit
 * that made it is in the history: it is judged against the window before it. Returns how many
 * are kept, in place. */
static size_t steps_only(const double *y, size_t n, struct aw_changepoint *cps, size_t n_cps,
                         double *scratch)
{
	size_t kept = 0, start = 0;
	double lo[MAX_CP + 1], hi[MAX_CP + 1];

	for (size_t j = 0; j < n_cps; j++) {
		size_t at = cps[j].index, end = j + 1 < n_cps ? cps[j + 1].index : n,
		       nb = at - start;
		double mid;
		bool back = false;

		memcpy(scratch, y + start, nb * sizeof(*y));
		aw_sort_doubles(scratch, nb);
		lo[kept] = aw_quantile_sorted(scratch, nb, 0.1);
		hi[kept] = aw_quantile_sorted(scratch, nb, 0.9);
		mid = detect_median(y + at, end - at, scratch);
		for (size_t k = 0; k <= kept && !back; k++)
			back = mid >= lo[k] && mid <= hi[k];
		if (back)
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
	c->base_commit = in->base != NULL;
	if (c->ne) {
		size_t seg = 0;

		c->ey = malloc(c->ne * (1 + DETECT_SLOTS) * sizeof(double));
		c->eseg = malloc(c->ne * sizeof(int));
		if (!c->ey || !c->eseg)
			goto out;
		for (int q = 0; q < DETECT_SLOTS; q++)
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
			c->ex[AW_DETECT_COMBINED][i] = NAN;
		}
	}
	c->nh = 0;
	for (size_t j = 0; j < in->n_head; j++)
		c->nh += isfinite(in->head[j]) && in->head[j] >= 0;
	total = c->nb + c->nh;
	c->y = malloc((total + 1) * (1 + DETECT_SLOTS) * sizeof(double));
	if (!c->y)
		goto out;
	for (int q = 0; q < DETECT_SLOTS; q++)
		c->x[q] = c->y + (size_t)(q + 1) * (total + 1);
	for (size_t i = 0; i <= total; i++)
		c->x[AW_DETECT_COMBINED][i] = NAN;
	for (size_t i = 0; i < c->nb; i++) {
		size_t src = at[from + i];

		c->y[i] = log_value(bv[src], o->min_abs_ns);
		for (int q = 0; q < AW_DETECT_REFS; q++)
			c->x[q][i] = bx[q] && bx[q][src] > 0 ? log(bx[q][src]) : NAN;
	}
	if (detect_cell_gather(in, c, at + from, total))
		goto out;
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
	c->raw_base = detect_median(tmp, c->nb, scratch);
	c->zero_base = c->nb > 0;
	for (size_t i = 0; i < c->nb; i++)
		c->zero_base = c->zero_base && tmp[i] < o->min_abs_ns;
	k = 0;
	for (size_t j = 0; j < in->n_head; j++)
		if (isfinite(in->head[j]) && in->head[j] >= 0)
			tmp[k++] = in->head[j];
	c->raw_head = detect_median(tmp, k, scratch);
	/* the runs' own precision: a floor for the noise */
	c->s_own = NAN;
	if (in->history_se || (in->base && in->head_se)) {
		const double *se = in->history_se;
		size_t m = 0;

		for (size_t i = 0; se && i < in->n_history; i++)
			if (isfinite(se[i]) && se[i] >= 0 && in->history[i] > 0)
				tmp[m++] = se[i] / in->history[i];
		if (m)
			c->s_own = detect_median(tmp, m, scratch);
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

/* The 5% quantile of chi-square with df degrees of freedom (df 1-10 exact, Wilson-Hilferty's
 * approximation beyond, within 1% there). */
static double chi2_low5(size_t df)
{
	static const double q[] = {0,     0.00393, 0.103, 0.352, 0.711, 1.145,
	                           1.635, 2.167,   2.733, 3.325, 3.940};
	double k = (double)df, z = -1.6448536269514722;

	if (df < sizeof(q) / sizeof(q[0]))
		return q[df];
	return k * pow(1 - 2 / (9 * k) + z * sqrt(2 / (9 * k)), 3);
}

/* How often runs like the history's lie `by` (log; negative: below) or further from their
 * level: the share of its residuals that far, by the rule of succession ((beyond + 1) / (n + 2):
 * one in n + 2 at least, however far), or, where smaller, Chebyshev's bound on any distribution
 * with the history's mean square about the level, taken at its upper 95% bound for a sample of
 * that size: E[r^2] / by^2. A tail the history showed is in its mean square, so a cell whose runs
 * double now and then keeps the rate it showed; a run hundreds of times the history's spread away
 * is as rare as it looks, which the rank alone, from a short history, can never say (a 28 ns lock
 * on a 0.1 ns increment against fifteen runs read one in twelve). For m runs judged together: one
 * alone is judged by its rank (a second run that far is what tells a move from a state of the
 * machine the history never met). */
static double tail_rate(const struct cell *c, double by, size_t m)
{
	size_t beyond = 0;
	double ss = 0, rank, cheb = INFINITY;

	for (size_t i = 0; i < c->n_res; i++) {
		beyond += by > 0 ? c->res[i] >= by : c->res[i] <= by;
		ss += c->res[i] * c->res[i];
	}
	rank = ((double)beyond + 1) / ((double)c->n_res + 2);
	/* (a median leaves one residual 0: a degree of freedom less) */
	if (c->n_res >= 3 && by != 0 && m >= 2)
		cheb = ss / chi2_low5(c->n_res - 1) / (by * by);
	return fmin(rank, cheb);
}

/* How unlikely the head runs of level j are to lie as far from their level as they do, were
 * they runs like the history's: the binomial tail of those at least as far as the nearest of
 * them less one noise (and `by` at least, log; a negative one: below) at the history's own rate of
 * runs that far (tail_rate()); 0 for a head of one run and no re-measurement. A suspicion
 * is confirmed by the runs re-measured because of it, not by the run that raised it: when some head
 * runs are confirmations, only they count. Distribution-free, so that a tail that doubles in one
 * run in eight, or a level a subject visits now and then, confirms nothing by itself (such a cell
 * needs as many re-measurements as its tail's rate asks: four, for one run in eight among forty
 * cells), while runs that all sit far beyond anything the history did are as unlikely as they look.
 */
static double exceedance(const struct cell *c, size_t j, double by)
{
	size_t k = 0, m = 0;
	double near = by > 0 ? INFINITY : -INFINITY;
	bool any = false;

	for (size_t i = 0; c->confirming && i < c->nh && i < 256; i++)
		any = any || (c->head_lev[i] == (int)j && c->confirming[i]);
	for (size_t i = 0; i < c->nh && i < 256; i++) {
		double d = c->y[c->nb + i] - c->centre[j];

		if (c->head_lev[i] != (int)j || (any && !c->confirming[i]))
			continue;
		m++;
		near = by > 0 ? fmin(near, d) : fmax(near, d);
	}
	/* (one run alone: the parametric test decides, as when one run is all a project
	 * measures) */
	if (!any && m < 2)
		return 0;
	/* (less one noise: a run a hair beyond the history's furthest is no rarer than it) */
	near = by > 0 ? near - c->up : near + c->down;
	if (m && (by > 0 ? near > by : near < by))
		by = near;
	for (size_t i = 0; i < c->nh && i < 256; i++) {
		double d = c->y[c->nb + i] - c->centre[j];

		if (c->head_lev[i] != (int)j || (any && !c->confirming[i]))
			continue;
		k += by > 0 ? d >= by : d <= by;
	}
	return binom_sf(k, m, tail_rate(c, by, m));
}

/* The level of the bounds' distribution-free side (the t bound's too: judge_levels()). */
#define TAIL_ALPHA 0.05

/* Whether the m head runs b[] of a level (log) lie too far from a change of `by` (log; negative: a
 * speed-up) for it: each at least as far short of it as the nearest of them is, at the history's
 * own rate of runs that far from their centre (one in n + 2 at least), has a chance of alpha or
 * less. The distribution-free side of a bound, as exceedance() is of the test: a history whose runs
 * now and then read 7% low (a fast spell no reference feels) does not bound a head that read 2% low
 * within a 5% change, however tight the rest of its runs sit. A history too short to show a tail
 * that rare (n + 2 < 1 / alpha) leaves the bound to the t distribution. */
static bool tail_bounds(const struct cell *c, double centre, const double *b, size_t m, double by,
                        double alpha)
{
	double near = by > 0 ? -INFINITY : INFINITY;
	size_t beyond = 0;

	if ((double)(c->n_res + 2) * alpha < 1)
		return true; /* (the history cannot show a tail that rare) */
	for (size_t i = 0; i < m; i++)
		near = by > 0 ? fmax(near, b[i] - centre) : fmin(near, b[i] - centre);
	near -= by; /* how far short of the change the nearest run read */
	for (size_t i = 0; i < c->n_res; i++)
		beyond += by > 0 ? c->res[i] <= near : c->res[i] >= near;
	return pow(((double)beyond + 1) / ((double)c->n_res + 2), (double)m) <= alpha;
}

/* The move of m head runs b[] of a level against its base runs: their median's distance d from
 * the level's centre (log) and its standard errors up and down, the head's own spread counted
 * once two runs can show it (a run alone gets screen_noise at least): two re-measurements 3%
 * apart are no bound of 0.2%, whatever the history's noise. su is how far above
 * the truth the head may read, which tests a slowdown and bounds the change from below; sd how
 * far below, which tests a speed-up and bounds the change from above: a cell whose runs now
 * and then read low (a fast spell, a reference that overcorrects) has a wide upper bound,
 * however tight its runs sit above their centre. a: scratch of m. */
static void head_move(const struct aw_detect_opts *o, const struct cell *c, double centre,
                      size_t n_base, double *b, size_t m, double *a, double *med, double *su,
                      double *sd)
{
	double tu = c->up, td = c->down;

	*med = detect_median(b, m, a);
	if (m == 1) { /* one run cannot show its own spread */
		tu = fmax(tu, o->screen_noise);
		td = fmax(td, o->screen_noise);
	} else if (m == 2) { /* two runs show a spread, not its sides: |difference| / sqrt 2 */
		double h = fabs(b[1] - b[0]) / sqrt(2);

		tu = fmax(tu, h);
		td = fmax(td, h);
	} else {
		double hu, hd;

		for (size_t i = 0; i < m; i++)
			a[i] = b[i] - *med;
		detect_one_sided(a, m, &hu, &hd);
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
 * change is bounded within the threshold both ways; once it was re-measured twice or more, by
 * its re-measurements alone: the run that raised a suspicion was picked for being far off, and
 * keeps no cell from clearing when the runs measured because of it agree with the history. */
static void judge_levels(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                         struct cell *c, struct aw_detect_result *r, struct aw_t_memo *tm,
                         double *a, double *b)
{
	double tu = c->tq_up = aw_t_quantile_memo(tm, 0.05, c->df_up),
	       td = c->tq_down = aw_t_quantile_memo(tm, 0.05, c->df_down),
	       thr = log1p(in->threshold);
	size_t counted = 0;

	c->p_up = c->p_down = 1;
	c->up_level = c->down_level = -1;
	r->off_n = r->odd_n = 0;
	for (size_t i = 0; i < c->nh && i < 256; i++) {
		double reach;

		c->head_lev[i] = detect_head_level(c, r, c->nb + i);
		/* (a run three thresholds off its level after all the band could owe it shows a
		 * move whatever the reference meant, as a run beyond a memory state's s^3 does) */
		if (detect_off_band(c, r, c->nb + i, &reach) &&
		    !(c->head_lev[i] >= 0 &&
		      fabs(c->y[c->nb + i] - c->centre[c->head_lev[i]]) - reach >= 3 * thr)) {
			c->head_lev[i] = -1; /* in no level: it decides nothing */
			r->off_n++;
		} else if (detect_odd_state(c, c->head_lev[i], c->nb + i, thr, a)) {
			c->head_lev[i] = -1; /* (likewise) */
			r->odd_n++;
		}
	}
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
		l->change_lo = expm1(d - tu * su);
		l->change_hi = expm1(d + td * sd);
		l->pvalue = aw_t_sf(d >= 0 ? t : -t, d >= 0 ? c->df_up : c->df_down);
		/* bounded within the threshold both ways (a run far faster than the level is no
		 * pass either: a faster machine state may hide a slower build), by the
		 * re-measurements once there are two or more (one alone cannot outweigh the
		 * run that raised the suspicion) */
		for (size_t i = 0; c->confirming && i < c->nh && i < 256; i++)
			mc += c->head_lev[i] == (int)j && c->confirming[i];
		if (mc >= 2) {
			mc = 0;
			for (size_t i = 0; i < c->nh && i < 256; i++)
				if (c->head_lev[i] == (int)j && c->confirming[i])
					b[mc++] = c->y[c->nb + i];
			head_move(o, c, c->centre[j], l->n_base, b, mc, a, &med, &cu, &cd);
			med -= c->centre[j];
		} else {
			mc = m; /* (b[] holds the level's head runs still) */
			med = d, cu = su, cd = sd;
		}
		if (med + td * cd < thr && med - tu * cu > -thr &&
		    tail_bounds(c, c->centre[j], b, mc, thr, TAIL_ALPHA) &&
		    tail_bounds(c, c->centre[j], b, mc, -thr, TAIL_ALPHA))
			l->verdict = AW_VERDICT_UNCHANGED;
		if (!(j == r->dominant || l->share >= o->level_share))
			continue;
		if (d > 0 && d + td * sd >= thr) {
			double p = fmax(l->pvalue * (double)counted, exceedance(c, j, thr / 2));

			if (p < c->p_up) {
				c->p_up = p;
				c->up_level = (int)j;
			}
		}
		if (d < 0 && d - tu * su <= -thr) {
			double p = fmax(l->pvalue * (double)counted, exceedance(c, j, -thr / 2));

			if (p < c->p_down) {
				c->p_down = p;
				c->down_level = (int)j;
			}
		}
	}
}

/* Whether every head run was measured off the correcting reference's band (detect_off_band()) and
 * the head reads within `res` ns of the baseline once corrected as far as the history vouches: the
 * true effect lies between none (the move as measured, which the caller bounds too) and that.
 * (e2e.ci.demo under ASan: a srcu_fast reader, 0.36 -> 0.28 ns in ten runs while the memory ran
 * 0.71x the history's, was left suspect.) a: scratch of the head's length. */
static bool off_within(const struct cell *c, const struct aw_detect_result *r, double res,
                       double *a)
{
	if (!r->off_n || r->off_n < c->nh)
		return false;
	return fabs(exp(detect_median(c->y + c->nb, c->nh, a)) - exp(c->centre[r->dominant])) < res;
}

/* Whether every head run (three at least) was measured off the correcting reference's band
 * (detect_off_band(): the line cannot say how much of the reference's move the cell felt) and the
 * head reads within half the threshold of the baseline both ways the moment can be read: as
 * measured (the cell felt none of it) and corrected in full (all of it, the line carried past
 * the history's range). The true effect lies between the two, so a cell bounded at both ends
 * moved less than the threshold. (e2e.ci.demo on a busy machine: a srcu reader +7.4% at a 50%
 * threshold, all ten head runs beside a reference that had left its four-run window's band,
 * held the tip of main unconfirmed.) a: scratch of the head's length. */
static bool off_bounded(const struct cell *c, const struct aw_detect_result *r, double thr,
                        double *a)
{
	int q = r->reference;
	double raw, full;

	if (q < 0 || c->nh < 3 || r->off_n < c->nh || !isfinite(c->ref_mid))
		return false;
	for (size_t i = 0; i < c->nh; i++) {
		size_t k = c->nb + i;
		double x = c->x[q][k], cl = fmin(c->ref_max, fmax(c->ref_min, x));

		a[i] = c->y[k] + r->ref_slope * (cl - c->ref_mid);
	}
	raw = detect_median(a, c->nh, a + c->nh) - log(c->raw_base);
	for (size_t i = 0; i < c->nh; i++) {
		size_t k = c->nb + i;
		double x = c->x[q][k], cl = fmin(c->ref_max, fmax(c->ref_min, x));

		a[i] = c->y[k] + r->ref_slope * (cl - x);
	}
	full = detect_median(a, c->nh, a + c->nh) - c->centre[r->dominant];
	return fabs(raw) < thr / 2 && fabs(full) < thr / 2;
}

/* Phase 5: the verdict from the corrected p-values (c->tq_up and tq_down: judge_levels()'s). a:
 * scratch of the baseline's length. */
static void decide(const struct aw_detect_input *in, const struct aw_detect_opts *o, struct cell *c,
                   struct aw_detect_result *r, double q_up, double q_down, double *a)
{
	double thr = log1p(in->threshold);
	size_t dom = r->dominant;
	bool bounded = true, judged = false, split;
	double move_ns, res;
	int lvl = -1;

	r->noise = c->up;
	for (size_t j = 0; j < r->n_levels; j++) {
		const struct aw_level *l = &r->levels[j];

		if (!(j == dom || l->share >= o->level_share))
			continue;
		/* (a state of the machine the head was not measured in; but a cell's dominant own
		 * level is its code's: it may have left it) */
		if (!l->n_head) {
			bounded = bounded && !(r->own_levels && j == dom);
			continue;
		}
		judged = true;
		if (l->verdict != AW_VERDICT_UNCHANGED)
			bounded = false;
		else if (lvl < 0 || l->n_head > r->levels[lvl].n_head)
			lvl = (int)j; /* (the level judged on most runs tells the change) */
	}
	r->change_ns = c->raw_head - c->raw_base;
	move_ns = detect_move_ns(c, r);
	/* the resolution: the clock's, never coarser than the threshold above the clock's (a 1.5
	 * ns call's 5% is 0.075 ns: a +6.5% of it, 0.097 ns, is no move to clear) */
	res = c->zero_base ? o->min_abs_ns : fmin(o->min_abs_ns, in->threshold * c->raw_base);
	r->absolute = c->zero_base;
	split = (c->up_level >= 0 && q_up <= o->fdr &&
	         detect_head_split(c, c->up_level, 1, thr, &r->split_at, &r->split_far)) ||
	        (c->down_level >= 0 && q_down <= o->fdr &&
	         detect_head_split(c, c->down_level, -1, thr, &r->split_at, &r->split_far));
	if (!split)
		r->split_at = r->split_far = 0;
	if (split) {
		r->verdict = AW_VERDICT_UNKNOWN; /* (the runs disagree) */
	} else if (c->up_level >= 0 && q_up <= o->fdr &&
	           (move_ns >= o->min_abs_ns || !c->zero_base)) {
		r->verdict = AW_VERDICT_REGRESSED;
		lvl = c->up_level;
		r->pvalue = c->p_up;
		r->qvalue = q_up;
	} else if (c->down_level >= 0 && q_down <= o->fdr &&
	           (move_ns >= o->min_abs_ns || !c->zero_base)) {
		r->verdict = AW_VERDICT_IMPROVED;
		lvl = c->down_level;
		r->pvalue = c->p_down;
		r->qvalue = q_down;
	} else if ((judged && bounded) || (!judged && off_bounded(c, r, thr, a))) {
		r->verdict = AW_VERDICT_UNCHANGED;
	} else if ((judged || off_within(c, r, res, a)) && move_ns < res &&
	           ((fmax(c->up, c->down) * c->raw_base < res && detect_reach_ns(r) < res) ||
	            (double)(c->n_res + 2) * TAIL_ALPHA < 1)) {
		/* a cell whose runs scatter less than the resolution (0.1 ns, or the threshold's
		 * ns where that is less) moved less than it (detect_move_ns()), and its bounds say
		 * so too (detect_reach_ns()): below what a nanosecond clock resolves and below the
		 * threshold. (A 10 ns lookup with a 7% noise 0.09 ns slower shows nothing: it stays
		 * undecided.) A history too short to show its scatter (tail_bounds()) keeps the
		 * resolution's word: its noise is the group's, moderated, and would hold every head
		 * of a new host. Head runs all off the reference's band: within it as measured and
		 * corrected (off_within()). */
		r->verdict = AW_VERDICT_UNCHANGED;
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
	/* the head runs measured in a memory state far from the baseline's usual one (its median,
	 * by state_margin): a cell that leans on memory (a hash table's lookups) moves with it
	 * whatever the code did, and nothing in the baseline says by how much, so such runs
	 * confirm no move (the analysis keeps the cell a suspect, then inconclusive). Up to a
	 * point: a state of ratio s (the walk's or the gather's, the larger) explains a slowdown
	 * of s^3 at most, and a run that reads slower than the baseline by that and surely (by the
	 * t bound, or beyond its highest run) by the threshold more shows a move no state made: it
	 * counts. (e2e.ci.demo on a loaded CI: an injected 0.03 -> 21.9 ns regression, two of its
	 * three head runs in a memory state 1.6x the baseline's, was held unconfirmed.) */
	r->unseen_n = 0;
	r->unseen_by = NAN;
	{
		const double *x = c->x[AW_DETECT_MEMORY], *g = c->x[AW_DETECT_GATHER];
		double top = detect_baseline_state(c, x, a), gtop = detect_baseline_state(c, g, a),
		       ctop = c->cg ? detect_baseline_state(c, c->cg, a) : NAN;
		bool any = false;
		int at = lvl >= 0 ? lvl : (int)dom;
		double one = fmax(c->down, o->screen_noise) * sqrt(1 + 1.0 / (double)c->nb),
		       sure = fmin(c->tq_down * one, detect_level_top(c, at) - c->centre[at]);
		double state[256], far[256], slope;
		bool have = isfinite(top) || isfinite(ctop);

		for (size_t i = 0; have && i < c->nh && i < 256; i++) {
			double by = x[c->nb + i] - top, gby = g[c->nb + i] - gtop,
			       cby = isfinite(ctop) ? c->cg[c->nb + i] - ctop : NAN;

			/* (far: the walk's state, or the gather's beside the cell, whichever is
			 * further out, either where the run has one alone; state: the gather's
			 * beside the anchors too. fmax() takes the number of a number and a NaN) */
			far[i] = fmax(by, cby);
			state[i] = fmax(far[i], gby);
			c->unseen[i] =
			    far[i] > log(o->state_margin) &&
			    c->y[c->nb + i] - c->centre[at] - state[i] * STATE_EXPLAINS - sure <
			        thr;
			any |= c->unseen[i];
		}
		if (any)
			detect_bridge_unseen(c, thr, a);
		/* the state explains no more than the cell showed it feels across the head's states
		 */
		slope = any ? detect_state_slope(c, state) : NAN;
		for (size_t i = 0; isfinite(slope) && i < c->nh && i < 256; i++)
			if (c->unseen[i] &&
			    c->y[c->nb + i] - c->centre[at] - state[i] * slope - sure >= thr)
				c->unseen[i] = false;
		for (size_t i = 0; have && i < c->nh && i < 256; i++)
			if (c->unseen[i]) {
				double by = exp(far[i]);

				r->unseen_n++;
				if (!(by <= r->unseen_by))
					r->unseen_by = by;
			}
	}
	/* the head runs that could each show the move alone against their own level's centre, in
	 * every level that moved so (e2e.ci.demo's compare: +1969% in both levels, one run in
	 * one and two in the other, was left suspect for want of two in the deciding one) */
	r->agree_n = 0;
	if (r->verdict == AW_VERDICT_REGRESSED || r->verdict == AW_VERDICT_IMPROVED) {
		int sign = r->verdict == AW_VERDICT_REGRESSED ? 1 : -1;
		double one = fmax(sign > 0 ? c->down : c->up, o->screen_noise) *
		             sqrt(1 + 1.0 / (double)c->nb),
		       tq = sign > 0 ? c->tq_down : c->tq_up;

		for (size_t i = 0; i < c->nh && i < 256; i++) {
			int j = c->head_lev[i];
			double d = j >= 0 ? c->y[c->nb + i] - c->centre[j] : 0;

			if (j >= 0 && (j == lvl || r->levels[j].verdict == r->verdict) &&
			    !c->unseen[i] && sign * d > 0 && sign * d + tq * one >= thr)
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
	if (r->absolute) /* the values were floored at min_abs_ns: say what was measured */
		r->baseline = c->raw_base;
}

/* The sentence behind a verdict. */
static void explain(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                    struct aw_detect_result *r)
{
	const struct aw_level *dom = &r->levels[r->dominant];

	r->note[0] = 0;
	if ((r->verdict == AW_VERDICT_REGRESSED || r->verdict == AW_VERDICT_IMPROVED) &&
	    r->unseen_n) {
		snprintf(r->note, sizeof(r->note),
		         "%zu of %zu head runs measured in a memory state %.1fx the baseline's "
		         "median: they confirm no move",
		         r->unseen_n, r->head_n, r->unseen_by);
		return;
	}
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
	if (r->split_far) {
		snprintf(
		    r->note, sizeof(r->note),
		    "%zu of %zu head runs read as the baseline, %zu lie three thresholds or more "
		    "away: a state the cell visits, or a change only some runs show",
		    r->split_at, r->head_n, r->split_far);
		return;
	}
	if (!dom->n_head && r->off_n + r->odd_n) { /* (detect_off_band(), detect_odd_state()) */
		snprintf(r->note, sizeof(r->note),
		         "%zu of %zu head runs measured with a reference beyond anything usual in "
		         "the history: they decide nothing",
		         r->off_n + r->odd_n, r->head_n);
		return;
	}
	if (!dom->n_head) {
		snprintf(r->note, sizeof(r->note),
		         "no head run in the level of %.0f%% of the history (%s)", 100 * dom->share,
		         r->own_levels ? "the cell's own: the code or the machine left it"
		                       : "the machine was in another state");
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

/* The host's cells. The prior of one group's noises (Smyth 2004, the moment estimates of limma's
 * fitFDist): with e_i = log(s_i^2) - digamma(f_i / 2) + log(f_i / 2), the spread of e beyond the
 * sampling part mean(trigamma(f_i / 2)) is trigamma(d0 / 2); s0^2 = exp(mean(e) + digamma(d0/2) -
 * log(d0/2)). Cells that agree give a large d0 (capped at max_d0), cells that differ a small one.
 */
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
			double own = down ? c->s_down : c->s_up, fo, v,
			       *df = down ? &c->df_down : &c->df_up;

			if (in[j].group != in[i].group)
				continue;
			fo = own > 0 ? c->f_cell : 0;
			own = own > 0 ? own : 0;
			if (isfinite(s0) && fo + d0 > 0) {
				/* the group's noise can raise a cell's own, never lower it: a noisy
				 * cell among steady ones is no steadier for it */
				v = fmax(own, sqrt((fo * own * own + d0 * s0 * s0) / (fo + d0)));
				*df = fo + d0;
			} else if (fo > 0) {
				v = own;
				*df = fo;
			} else {
				v = UNKNOWN_NOISE;
				*df = 1;
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
	struct aw_t_memo tm = {0};
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
		for (int q = 0; q < AW_DETECT_KERNELS; q++)
			r->ref_terms[q] = NAN;
		r->baseline = r->head = r->change = r->change_lo = r->change_hi = NAN;
		r->pvalue = r->qvalue = 1;
		if (gather(&in[i], &o, r, c))
			goto out;
		c->ref_lo = c->ref_hi = c->ref_mid = NAN;
		if (!c->nb) {
			r->verdict = AW_VERDICT_NEW;
			r->head = c->raw_head;
			continue;
		}
		{
			double bounds[AW_DETECT_LEVELS], centre = 0;
			double by_levels = detect_pick_level_reference(&o, c, r, bounds, a, b, s);
			double by_line = detect_pick_reference(&o, c, r, &centre, a, b, s);

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
				for (int q = 0; q < AW_DETECT_KERNELS; q++)
					r->ref_terms[q] = NAN;
				detect_take_levels(c, r, bounds, a, b);
			} else {
				detect_adjust(c, r, centre, a);
			}
		}
		detect_find_levels(&o, c, r, log1p(in[i].threshold), a, b, s);
	}
	moderate(in, n, &o, cells, false, qa, qb);
	moderate(in, n, &o, cells, true, qa, qb);
	for (size_t i = 0; i < n; i++) {
		qu[i] = qd[i] = 1;
		if (!cells[i].nb || !cells[i].nh)
			continue;
		judge_levels(&in[i], &o, &cells[i], &out[i], &tm, a, b);
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
		decide(&in[i], &o, &cells[i], &out[i], qu[i], qd[i], a);
		explain(&in[i], &o, &out[i]);
	}
	rc = 0;
out:
	for (size_t i = 0; i < n; i++) {
		free(cells[i].y);
		free(cells[i].res);
		free(cells[i].confirming);
		free(cells[i].cg);
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
