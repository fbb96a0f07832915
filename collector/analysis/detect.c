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
#define MATCH_MIN         6     /* baseline runs chosen by their factor, at least */
#define PART_MIN_RUNS     2     /* head runs judged before step 9d looks at the fastest batches */
#define PART_GAP_K        3     /* ... and the gap it needs, in the history gap's spreads */
#define SEEN_SHARE        0.075 /* lone runs of the history as far out: seen before */
#define SEEN_LONE_MIN     3     /* ... and never fewer than this many (3 of the 40 runs) */
#define SEEN_RUNS         2     /* baseline runs at least as far out as the head: seen before */
#define LEVEL_MIN_RUNS    3     /* baseline runs on each side of two levels (`bimodal`) */
#define LEVEL_GAP_K       4     /* ... and their gap, in the runs' spreads about their level */

/* a p50 history whose spread about its reference (the MAD of its log less the factor) is under
 * this share of its spread about its runs' common mode is matched by the reference */
#define REF_FOLLOW 0.2
/* a p50 history whose mean absolute deviation about its reference is under this share of both
 * its own and its spread about the common mode is judged in steps of the reference (step 9e) */
#define REF_SCALE     0.1 /* (a fifth or a half: +5% heads lost on AMD VMs) */
#define REF_SCALE_MIN 10  /* ... over this many history runs at least */

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

/* Whether sorted values fall into two levels, the rule of the `bimodal` flag (docs/detection.md,
 * step 8): some split leaves at least LEVEL_MIN_RUNS values on each side, its two neighbours are
 * at least min_gap apart (a ratio) and their gap, in log, exceeds LEVEL_GAP_K times the values'
 * spread about their own side's median (1.4826 x the median absolute deviation of the logs,
 * pooled over both sides). `scratch` holds 2 n values. */
static bool levels_split(const double *sorted, size_t n, double min_gap, double *scratch)
{
	double *lg = scratch, *dev = scratch + n;

	if (n < 2 * LEVEL_MIN_RUNS || !(sorted[0] > 0))
		return false;
	for (size_t i = 0; i < n; i++)
		lg[i] = log(sorted[i]);
	for (size_t at = LEVEL_MIN_RUNS; at + LEVEL_MIN_RUNS <= n; at++) {
		double lo, hi, spread;

		if (sorted[at] < min_gap * sorted[at - 1])
			continue;
		lo = aw_quantile_sorted(lg, at, 0.5);
		hi = aw_quantile_sorted(lg + at, n - at, 0.5);
		for (size_t i = 0; i < n; i++)
			dev[i] = fabs(lg[i] - (i < at ? lo : hi));
		aw_sort_doubles(dev, n);
		spread = MAD_TO_SIGMA * aw_quantile_sorted(dev, n, 0.5);
		if (lg[at] - lg[at - 1] > LEVEL_GAP_K * spread)
			return true;
	}
	return false;
}

struct work {
	double *a, *b; /* scratch of the largest history or head */
};

/* What phase 1 learns of a cell before the host's noise is pooled. */
struct cell_state {
	double between;   /* own relative run-to-run noise (MAD), NAN with < 3 baseline runs */
	size_t between_n; /* the runs it was measured on */
	double within;    /* the runs' own relative precision, NAN when unknown */
	int zero_base;    /* the baseline was below resolution: an unbounded regression if the
	                     head clears it */
	int pooled;       /* its group's prior is estimated and the cell tested */
	double *base;     /* the baseline values judged: the window (or the base commit's runs),
	                     normalised to a factor or cut to one regime */
	size_t n_base;
	double *head;     /* the head values judged */
	double *head_min; /* their runs' fastest batches (NAN: unknown) */
	size_t n_head;
	double gap;       /* log(p50 / min), median over the history since its last change point */
	double gap_noise; /* ... and its 1.4826 MAD (NAN: unknown) */
	double slow[64];  /* per head run (all of them): how much slower its factors say it was
	                     (log, >= 0) */
	double ref_moved; /* the reference kernel's move in the head runs (log, their median)
	                     when it moved beyond its history in every one, else NAN */
	double noise_ns;  /* absolute: the noise in ns */
	double level;     /* absolute: the ns a relative change is expressed against */
	/* each factor of the head runs judged (log, their median), NAN when unknown */
	double regime[AW_FACTOR_COUNT];
	/* a tail's level over its history (step 9f), the median of its runs' tails factor and
	 * the runs measured */
	double tail_level, tail_fm;
	size_t tail_runs;
};

const char *aw_factor_name(enum aw_factor f)
{
	switch (f) {
	case AW_FACTOR_REFERENCE:
		return "reference";
	case AW_FACTOR_COMMON:
		return "common";
	default:
		break;
	}
	return NULL;
}

const char *aw_result_factor_name(const struct aw_detect_result *r, enum aw_factor f)
{
	return r->tail && f == AW_FACTOR_COMMON ? "tails" : aw_factor_name(f);
}

/* Median and robust spread (1.4826 MAD) of the finite values of v[0..n); the count in *k. */
static double finite_center(const double *v, size_t n, double *spread, size_t *k, double *scratch,
                            double *scratch2)
{
	size_t m = 0;

	for (size_t i = 0; v && i < n; i++)
		if (isfinite(v[i]))
			scratch[m++] = v[i];
	*k = m;
	*spread = NAN;
	if (!m)
		return NAN;
	aw_sort_doubles(scratch, m);
	*spread = MAD_TO_SIGMA * aw_mad_sorted(scratch, m, scratch2);
	return aw_quantile_sorted(scratch, m, 0.5);
}

struct by_distance {
	double d;
	size_t i;
};

static int cmp_distance(const void *a, const void *b)
{
	const struct by_distance *x = a, *y = b;

	if (x->d != y->d)
		return x->d < y->d ? -1 : 1;
	return x->i < y->i ? 1 : x->i > y->i ? -1 : 0; /* the newer first */
}

/* log(v[i]) - f[i] (f NULL: log(v[i])) for i in [from, n) with every figure finite and v[i] > 0,
 * into out; returns how many. */
static size_t log_less(const double *v, const double *f, size_t from, size_t n, double *out)
{
	size_t m = 0;

	for (size_t i = from; i < n; i++)
		if (v[i] > 0 && isfinite(v[i]) && (!f || isfinite(f[i])))
			out[m++] = log(v[i]) - (f ? f[i] : 0);
	return m;
}

/* How closely a cell's history since `from` followed one run factor: the robust spread of
 * log(value) less the factor (NAN with fewer than MATCH_MIN runs that have both). */
static double follow_spread(const struct aw_detect_input *in, size_t from, enum aw_factor f,
                            struct work *w)
{
	const double *hf = in->history_factor[f];
	size_t m = hf ? log_less(in->history, hf, from, in->n_history, w->a) : 0;

	if (m < MATCH_MIN)
		return NAN;
	aw_sort_doubles(w->a, m);
	return aw_mad_sorted(w->a, m, w->b);
}

/* The run factors: which head runs were disturbed (set aside while others are not), and the
 * baseline: the window, or, when the runs carry a factor, the `window` runs since the last
 * change point whose factor is nearest the head's, so that a head from a fast run is compared
 * with fast runs and one from a slow run with slow runs (a host's regimes, told apart by the
 * run as a whole rather than by the cell). A head whose factor lies beyond every such run by
 * more than the history's spread is disturbed. Fills st->base and st->head. */
static void factors(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                    struct aw_detect_result *r, struct cell_state *st, struct work *w)
{
	const double *win = in->history + r->window_start;
	double center[AW_FACTOR_COUNT], spread[AW_FACTOR_COUNT], dev[64][AW_FACTOR_COUNT] = {{0}};
	unsigned char disturbed[64] = {0}; /* per head run, which factors (bit f) */
	size_t n_win = r->window_n, k, kept = 0, from = r->last_change;
	enum aw_factor use = AW_FACTOR_NONE;

	if (n_win)
		memcpy(st->base, win, n_win * sizeof(*win));
	st->n_base = n_win;
	if (in->n_head) /* (a missing cell has no head array at all) */
		memcpy(st->head, in->head, in->n_head * sizeof(*in->head));
	for (size_t h = 0; h < in->n_head; h++)
		st->head_min[h] = in->head_min ? in->head_min[h] : NAN;
	st->n_head = in->n_head;
	for (int f = 0; f < AW_FACTOR_COUNT; f++) {
		const double *hf = in->history_factor[f];

		center[f] = finite_center(hf ? hf + from : NULL, in->n_history - from, &spread[f],
		                          &k, w->a, w->b);
		if (k < 3 || !in->head_factor[f]) {
			center[f] = NAN;
			continue;
		}
		if (use == AW_FACTOR_NONE || f == AW_FACTOR_COMMON)
			use = (enum aw_factor)f; /* the common mode, where there is one */
		for (size_t h = 0; h < in->n_head && h < 64; h++) {
			double d = in->head_factor[f][h] - center[f];

			dev[h][f] = d;
			if (isfinite(d) && fabs(d) > o->disturb_min &&
			    fabs(d) > o->disturb_k * spread[f])
				disturbed[h] |= 1u << f;
		}
	}
	k = 0;
	for (size_t h = 0; h < in->n_head && h < 64; h++) {
		st->slow[h] = 0;
		for (int f = 0; f < AW_FACTOR_COUNT; f++)
			if (isfinite(center[f]) && isfinite(dev[h][f]) && dev[h][f] > st->slow[h])
				st->slow[h] = dev[h][f];
		if (disturbed[h] & (1u << AW_FACTOR_REFERENCE))
			w->a[k++] = dev[h][AW_FACTOR_REFERENCE];
	}
	if (k && k == in->n_head) {
		aw_sort_doubles(w->a, k);
		st->ref_moved = aw_quantile_sorted(w->a, k, 0.5);
	}
	/* Disturbed head runs are set aside while others are not. */
	for (size_t h = 0; h < st->n_head; h++)
		if (h >= 64 || !disturbed[h]) {
			st->head_min[kept] = st->head_min[h];
			st->head[kept++] = st->head[h];
		}
	if (kept) {
		st->n_head = kept;
		for (size_t h = 0, j = 0; h < in->n_head && h < 64; h++)
			if (!disturbed[h])
				memmove(dev[j++], dev[h], sizeof(dev[h]));
	}
	r->head_n = st->n_head;
	for (int f = 0; f < AW_FACTOR_COUNT; f++) {
		size_t m = 0;

		if (!isfinite(center[f]))
			continue;
		for (size_t h = 0; h < st->n_head && h < 64; h++)
			if (isfinite(dev[h][f]))
				w->a[m++] = dev[h][f] + center[f];
		if (!m)
			continue;
		aw_sort_doubles(w->a, m);
		st->regime[f] = aw_quantile_sorted(w->a, m, 0.5);
	}
	/* a p50 whose history follows the reference kernel beside it much more closely than
	 * its runs' common mode is matched by its reference: a chain of dependent operations
	 * keeps time with the machine's clock, whatever the lock ops beside it do, and so does
	 * each of its head runs, the confirmations too (which have no common mode) */
	if (!in->tail && use == AW_FACTOR_COMMON && isfinite(st->regime[AW_FACTOR_REFERENCE])) {
		double by_ref = follow_spread(in, from, AW_FACTOR_REFERENCE, w),
		       by_cm = follow_spread(in, from, AW_FACTOR_COMMON, w);

		if (by_ref < REF_FOLLOW * by_cm)
			use = AW_FACTOR_REFERENCE;
	}
	/* head runs judged without a common mode (confirmation runs carry only the suspect
	 * cells) are matched by the factor they have: their reference */
	if (use == AW_FACTOR_COMMON && !isfinite(st->regime[use]) &&
	    isfinite(st->regime[AW_FACTOR_REFERENCE]))
		use = AW_FACTOR_REFERENCE;
	if (use != AW_FACTOR_NONE) {
		const double *hf = in->history_factor[use];
		struct by_distance *near = malloc((in->n_history - from + 1) * sizeof(*near));
		double fh = st->regime[use], nearest;
		size_t m = 0;

		if (near && isfinite(fh)) {
			m = 0;
			for (size_t j = from; j < in->n_history; j++)
				if (isfinite(hf[j]))
					near[m++] = (struct by_distance){fabs(hf[j] - fh), j};
			qsort(near, m, sizeof(*near), cmp_distance);
			/* the runs within half the disturbance threshold of the nearest one, at
			 * least MATCH_MIN (fewer leave the noise itself unknown) */
			for (size_t i = MATCH_MIN; i < m; i++)
				if (near[i].d > near[0].d + o->disturb_min / 2) {
					m = i;
					break;
				}
			if (m > o->window)
				m = o->window;
			if (m >= 3) {
				for (size_t i = 0; i < m; i++)
					st->base[i] = in->history[near[i].i];
				st->n_base = r->window_n = m;
				r->matched = use;
				nearest = near[0].d;
				/* beyond every run of the history: the head is disturbed (and was
				 * not set aside, since all head runs are) */
				if (nearest > o->disturb_min &&
				    nearest > o->disturb_k * spread[use])
					kept = 0;
			}
		}
		free(near);
	}
	if (!kept && st->n_head) {
		/* every head run was disturbed: say by how much (the median over head runs of the
		 * factor that moved most) */
		double most = 0;

		r->disturbed = true;
		r->disturbed_by = AW_FACTOR_NONE;
		for (int f = 0; f < AW_FACTOR_COUNT; f++) {
			size_t m = 0;
			double med;

			for (size_t h = 0; h < in->n_head && h < 64; h++)
				if (isfinite(dev[h][f]) && dev[h][f] != 0)
					w->a[m++] = dev[h][f];
			if (!m)
				continue;
			aw_sort_doubles(w->a, m);
			med = aw_quantile_sorted(w->a, m, 0.5);
			if (fabs(med) > fabs(most)) {
				most = med;
				r->disturbed_by = (enum aw_factor)f;
			}
		}
		r->disturb = exp(most);
	}
}

/* Whether the values flip between the resolution and clearly above it. */
static bool flips(const double *v, size_t n, double res)
{
	bool low = false, high = false;

	for (size_t i = 0; i < n; i++) {
		low = low || v[i] < res;
		high = high || v[i] >= 2 * res;
	}
	return low && high;
}

/* Two regimes in the (sorted) baseline: keep the one nearest the head. Whole runs that land in
 * one of two levels (a host's fast and slow regimes) are each steady, so the head is compared
 * with the level of its own regime. A cell whose runs' tails are bimodal (some run's p99 is a
 * multiple of its p50) is different: which mode a run's p99 lands in is chance, so a head in
 * either mode is one the history has shown. */
static void regimes(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                    struct aw_detect_result *r, struct cell_state *st, double *scratch)
{
	double *v = st->base, lo_med, hi_med;
	size_t n = st->n_base, split = cluster_split(v, n, o->bimodal_gap);
	bool low;

	if (!split)
		return;
	if (in->n_reference) /* a compare: the history only measures the noise */
		return;
	if (in->tail_bimodal || split < 3 || n - split < 3) {
		double spread =
		    MAD_TO_SIGMA * aw_mad_sorted(v, n, scratch) / aw_quantile_sorted(v, n, 0.5);
		bool in_low =
		    r->head >= v[0] * (1 - spread) && r->head <= v[split - 1] * (1 + spread);
		bool in_high =
		    r->head >= v[split] * (1 - spread) && r->head <= v[n - 1] * (1 + spread);

		if (in_low || in_high) {
			r->seen_before = true;
			snprintf(
			    r->note, sizeof(r->note),
			    "bimodal baseline (%.4g..%.4g and %.4g..%.4g ns); the head falls in "
			    "one of its modes",
			    v[0], v[split - 1], v[split], v[n - 1]);
		}
		return;
	}
	lo_med = aw_quantile_sorted(v, split, 0.5);
	hi_med = aw_quantile_sorted(v + split, n - split, 0.5);
	low = fabs(log(r->head / lo_med)) <= fabs(log(r->head / hi_med));
	r->regimes = true;
	snprintf(r->note, sizeof(r->note),
	         "two regimes (%.4g..%.4g and %.4g..%.4g ns): judged against the %zu runs of the "
	         "%s one",
	         v[0], v[split - 1], v[split], v[n - 1], low ? split : n - split,
	         low ? "lower" : "upper");
	if (low) {
		st->n_base = split;
	} else {
		memmove(v, v + split, (n - split) * sizeof(*v));
		st->n_base = n - split;
	}
	if (r->head >= st->base[0] && r->head <= st->base[st->n_base - 1])
		r->seen_before = true; /* inside a regime the history has shown */
	r->window_n = st->n_base;
}

/* The history as it compares with the head: a run whose reference kernel, beside the cell, ran
 * more than disturb_min slower than beside the head's is taken as it would have measured beside
 * the head's reference (in `out`, n_history values); the others as measured. The machine slowed
 * that run, so a lone slow value of it is nothing the cell does (seen_stretches), nor is it the
 * noise of a cell that follows its reference (history_noise). Never the other way round: a
 * head whose own reference ran slow is the disturbance rules' business (explained,
 * by_reference), which hold it suspect until re-measured rather than call it seen before. */
static const double *like_head(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                               const struct cell_state *st, double *out)
{
	const double *hf = in->history_factor[AW_FACTOR_REFERENCE];
	double fh = st->regime[AW_FACTOR_REFERENCE];

	if (!hf || !isfinite(fh))
		return in->history;
	for (size_t i = 0; i < in->n_history; i++)
		out[i] = isfinite(hf[i]) && hf[i] - fh > o->disturb_min
		             ? in->history[i] * exp(fh - hf[i])
		             : in->history[i];
	return out;
}

/* The noise of a cell without regimes: the MAD of every run since the last change point
 * when there are more of them than baseline runs. The baseline runs (the window, or those
 * matched by their factor) give the level; six or ten runs' MAD is worth only two or three
 * degrees of freedom, so the test would ask a steady cell for a huge z, and the six runs
 * matched to a disturbed head are as disturbed as it is. The runs since the change measure
 * the cell's spread on more of them; what they leave out (a host's slow spells, a tail) is
 * the stretches' business (seen_stretches), and a suspect's confirmation's. */
static void history_noise(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                          const struct aw_detect_result *r, struct cell_state *st, struct work *w)
{
	size_t from = r->last_change, m = 0;
	/* (a cell matched by its reference follows it; any other cell's MAD is not moved by the
	 * few runs the machine slowed) */
	const double *v =
	    r->matched == AW_FACTOR_REFERENCE ? like_head(in, o, st, w->b) : in->history;
	double med, mad;

	for (size_t i = from; i < in->n_history; i++)
		if (isfinite(v[i]) && v[i] > 0)
			w->a[m++] = v[i];
	if (m <= st->n_base || m < 3)
		return;
	aw_sort_doubles(w->a, m);
	med = aw_quantile_sorted(w->a, m, 0.5);
	mad = MAD_TO_SIGMA * aw_mad_sorted(w->a, m, w->b) / med;
	/* (never under the spread of runs matched to the head by their factor: those are the
	 * head's own regime) */
	st->between =
	    r->matched != AW_FACTOR_NONE && !isnan(st->between) ? fmax(mad, st->between) : mad;
	st->between_n = m;
}

/* A head no further from the baseline than SEEN_RUNS stretches of the history is something
 * the history has done: real hosts' runs are a tight mode with a tail (or a floor with a
 * tail), whose MAD sees only the mode, and a host's slow spells last several runs. A stretch
 * is as many consecutive runs as the head has judged runs, and its median is compared with
 * the head's, so that one slow run in the history does not hide a change that several head
 * runs all show. The whole history, not only the runs since the last change point: a cell
 * that flips between two levels for spells of runs gets a change point at every flip, and
 * the level before it is one the host goes back to. (The price: a regression fixed and
 * brought back within the history's runs is noisy, with this note, not regressed.) Or, whatever
 * the stretches, when 3 runs in 40 of the history (SEEN_SHARE, and SEEN_LONE_MIN at least)
 * lies as far out on its own: a head and its re-measurements are taken seconds apart and share one
 * spell of the host's, while a CI's history runs are minutes or hours apart, so that its spells
 * show there as lone runs, not stretches (bench_detect_replay --spaced). */
static void seen_stretches(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                           struct aw_detect_result *r, const struct cell_state *st, struct work *w)
{
	size_t k = st->n_head, n = in->n_history, beyond = 0, total = 0;
	bool up = r->head > r->baseline;
	const double *v = like_head(in, o, st, w->b);

	if (r->regimes) {
		/* the runs of the head's own regime, one by one */
		v = st->base;
		n = st->n_base;
		k = 1;
	}
	if (!k || n < k)
		return;
	for (size_t i = 0; i + k <= n; i++) {
		double m = median_copy(v + i, k, w->a);

		if (isnan(m))
			continue;
		total++;
		beyond += up ? m >= r->head : m <= r->head;
	}
	if (beyond < SEEN_RUNS && k > 1) {
		/* the head's runs, seconds apart, share one spell of the host's; a level the
		 * history shows in 3 runs in 40 or more, alone, is one such spell */
		size_t lone = 0, need = (size_t)ceil(SEEN_SHARE * (double)n);

		if (need < SEEN_LONE_MIN)
			need = SEEN_LONE_MIN;

		for (size_t i = 0; i < n; i++)
			lone += up ? v[i] >= r->head : v[i] <= r->head;
		if (lone >= need) {
			r->seen_before = true;
			snprintf(r->note, sizeof(r->note),
			         "%zu of the %zu runs of the history were as far from the baseline "
			         "(%.4g ns), each alone",
			         lone, n, r->baseline);
			return;
		}
	}
	if (beyond < SEEN_RUNS)
		return;
	r->seen_before = true;
	if (k == 1)
		snprintf(r->note, sizeof(r->note),
		         "%zu of the %zu runs of the history were as far from the baseline "
		         "(%.4g ns)",
		         beyond, total, r->baseline);
	else
		snprintf(r->note, sizeof(r->note),
		         "%zu of the %zu stretches of %zu runs of the history were as far from "
		         "the baseline (%.4g ns)",
		         beyond, total, k, r->baseline);
}

/* How far each run's median lies above its fastest batch, log(p50 / min), over the history's
 * runs since the last change point: its median and spread (step 9d). */
static void run_gaps(const struct aw_detect_input *in, const struct aw_detect_result *r,
                     struct cell_state *st, struct work *w)
{
	size_t k = 0;

	st->gap = st->gap_noise = NAN;
	if (!in->history_min || in->tail)
		return;
	for (size_t i = r->last_change; i < in->n_history; i++)
		if (in->history[i] > 0 && in->history_min[i] > 0)
			w->a[k++] = log(in->history[i] / in->history_min[i]);
	if (k < 3)
		return;
	aw_sort_doubles(w->a, k);
	st->gap = aw_quantile_sorted(w->a, k, 0.5);
	st->gap_noise = MAD_TO_SIGMA * aw_mad_sorted(w->a, k, w->b);
}

/* Phase 1: window, run factors, medians, the cell's own noise, regimes and excursions. */
static void observe(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                    struct aw_detect_result *r, struct cell_state *st, struct work *w)
{
	struct aw_changepoint cps[MAX_CHANGE_POINTS];
	double head_within, exc_lo = INFINITY, exc_hi = 0, center;
	size_t n_win, n_exc = 0;
	int k;

	memset(r, 0, sizeof(*r));
	r->verdict = AW_VERDICT_UNCHANGED;
	r->mw_pvalue = NAN;
	r->pvalue = 1;
	r->qvalue = 1;
	r->change = r->change_lo = r->change_hi = r->change_ns = NAN;
	r->baseline = r->head = r->noise = NAN;
	r->tail = in->tail;
	r->matched = r->disturbed_by = AW_FACTOR_NONE;
	r->disturb = 1;
	r->head_n = r->agree_n = in->n_head;
	st->between = st->within = st->noise_ns = st->level = NAN;
	st->between_n = 0;
	st->ref_moved = NAN;
	for (int f = 0; f < AW_FACTOR_COUNT; f++)
		st->regime[f] = NAN;
	st->zero_base = 0;
	st->n_head = st->n_base = 0;
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
	if (in->n_reference) {
		/* a compare: the base commit's runs are the baseline, the window the noise */
		memcpy(st->base, in->reference, in->n_reference * sizeof(double));
		st->n_base = in->n_reference;
		if (in->n_head)
			memcpy(st->head, in->head, in->n_head * sizeof(double));
		for (size_t h = 0; h < in->n_head; h++)
			st->head_min[h] = NAN;
		st->n_head = in->n_head;
	} else {
		factors(in, o, r, st, w);
	}
	if (st->n_head)
		r->head = median_copy(st->head, st->n_head, w->b);
	r->baseline = st->n_base ? median_copy(st->base, st->n_base, w->a) : NAN;
	if (r->verdict == AW_VERDICT_MISSING)
		return;
	if (!(r->baseline > 0) || flips(st->base, st->n_base, o->min_abs_ns)) {
		bool clears = true;

		for (size_t h = 0; h < st->n_head; h++)
			clears = clears && st->head[h] >= o->min_abs_ns;
		if (!(r->baseline > 0) && in->strict_resolution &&
		    (clears || r->head < o->min_abs_ns)) {
			st->zero_base = 1;
			return;
		}
		r->absolute = true;
	}
	center = r->baseline;
	if (!r->absolute && st->n_base >= 3) {
		aw_sort_doubles(st->base, st->n_base);
		/* before regimes() keeps only the head's side */
		r->bimodal = levels_split(st->base, st->n_base, o->bimodal_gap, w->a);
		regimes(in, o, r, st, w->b);
		r->baseline = aw_quantile_sorted(st->base, st->n_base, 0.5);
		if (st->n_base >= 3) {
			st->between =
			    MAD_TO_SIGMA * aw_mad_sorted(st->base, st->n_base, w->b) / r->baseline;
			st->between_n = st->n_base;
		}
		if (!r->regimes && !in->n_reference)
			history_noise(in, o, r, st, w);
		center = r->baseline;
		if (!in->n_reference && r->head != r->baseline && !r->seen_before)
			seen_stretches(in, o, r, st, w);
	}
	if (r->absolute) {
		/* In ns: the MAD of a cell that sits at 0 in most runs is 0 whatever it does in
		 * the others, so a flipping cell's noise is its standard deviation. */
		double sd = 0, mean = 0;
		size_t n_lvl = 0;

		memcpy(w->a, st->base, st->n_base * sizeof(double));
		aw_sort_doubles(w->a, st->n_base);
		st->noise_ns =
		    st->n_base >= 3 ? MAD_TO_SIGMA * aw_mad_sorted(w->a, st->n_base, w->b) : 0;
		for (size_t i = 0; i < st->n_base; i++)
			mean += st->base[i] / (double)st->n_base;
		for (size_t i = 0; st->n_base > 1 && i < st->n_base; i++)
			sd +=
			    (st->base[i] - mean) * (st->base[i] - mean) / (double)(st->n_base - 1);
		sd = sqrt(sd);
		if (flips(st->base, st->n_base, o->min_abs_ns) && sd > st->noise_ns)
			st->noise_ns = sd;
		if (st->noise_ns < o->min_abs_ns)
			st->noise_ns = o->min_abs_ns;
		for (size_t i = 0; i < st->n_base; i++)
			if (st->base[i] >= o->min_abs_ns)
				w->a[n_lvl++] = st->base[i];
		for (size_t h = 0; h < st->n_head; h++)
			if (st->head[h] >= o->min_abs_ns)
				w->a[n_lvl++] = st->head[h];
		if (n_lvl) {
			aw_sort_doubles(w->a, n_lvl);
			st->level = aw_quantile_sorted(w->a, n_lvl, 0.5);
		}
		if (!(st->level >= o->min_abs_ns))
			st->level = o->min_abs_ns;
		center = st->level;
	}
	/* Excursions: earlier runs far from the baseline, over the whole history. A head that
	 * lands among them is something this cell has done before, not news. */
	for (size_t i = 0; i < in->n_history; i++) {
		double v = in->history[i];

		if (v > center * o->excursion || v < center / o->excursion) {
			n_exc++;
			exc_lo = fmin(exc_lo, v);
			exc_hi = fmax(exc_hi, v);
		}
	}
	/* (not in a compare: there the history only measures the noise, and a level it shows
	 * may be the very change between the two commits) */
	if (n_exc && !in->n_reference &&
	    (r->head > center * o->excursion || r->head < center / o->excursion) &&
	    r->head >= exc_lo / 1.25 && r->head <= exc_hi * 1.25) {
		r->seen_before = true;
		snprintf(r->note, sizeof(r->note),
		         "%zu of %zu earlier runs were excursions like this (%.4g..%.4g ns)", n_exc,
		         in->n_history, exc_lo, exc_hi);
	}
	if (in->n_reference) {
		/* the window's own noise, as before */
		const double *win = in->history ? in->history + r->window_start : NULL;

		if (n_win >= 3 && center > 0 && !r->absolute) {
			memcpy(w->a, win, n_win * sizeof(*win));
			aw_sort_doubles(w->a, n_win);
			st->between = MAD_TO_SIGMA * aw_mad_sorted(w->a, n_win, w->b) /
			              aw_quantile_sorted(w->a, n_win, 0.5);
			st->between_n = n_win;
		}
	}
	st->within =
	    within_noise(in->history + r->window_start,
	                 in->history_se ? in->history_se + r->window_start : NULL, n_win, w->b);
	head_within = within_noise(in->head, in->head_se, in->n_head, w->b);
	if (isnan(st->within) || (!isnan(head_within) && head_within > st->within))
		st->within = head_within;
	run_gaps(in, r, st, w);
}

/* History run t of a tail as step 9f sees it: log(p99) less the run's tails factor about
 * that factor's median st->tail_fm (as measured where either is unknown); NAN: not measured. */
static double tail_log(const struct aw_detect_input *in, const struct cell_state *st, size_t t)
{
	const double *f = in->history_factor[AW_FACTOR_COMMON];

	if (!(in->history[t] > 0))
		return NAN;
	return log(in->history[t]) -
	       (f && isfinite(f[t]) && isfinite(st->tail_fm) ? f[t] - st->tail_fm : 0);
}

/* Step 9f's level of a tail: the median of tail_log() over its history (NAN without runs), and
 * the runs it has. */
static void tail_level(const struct aw_detect_input *in, struct cell_state *st, struct work *w)
{
	const double *f = in->history_factor[AW_FACTOR_COMMON];
	size_t k = 0, m = 0;

	for (size_t t = 0; f && t < in->n_history; t++)
		if (isfinite(f[t]))
			w->b[k++] = f[t];
	st->tail_fm = median_copy(w->b, k, w->b + k);
	for (size_t t = 0; t < in->n_history; t++) {
		double x = tail_log(in, st, t);

		if (!isnan(x))
			w->a[m++] = x;
	}
	st->tail_runs = m;
	st->tail_level = median_copy(w->a, m, w->b);
}

/* Step 9f: a tail as high as the tails of its group reach on this host. A run's p99 is the
 * slowest batches of thousands of calls each, so it rises when something stalls the core for a
 * good part of a batch: on the VMs recorded, 16-31% of the uncontended cells' p99s are 1.5
 * times their level or more and 3-19% twice, a few cells at a time, in spells of seconds that
 * a head and its re-measurements share, so no run's tails factor moves and, over 23 cells,
 * some cell's tail stays high over all four runs in a head or two in a hundred. Which cell the
 * spell strikes is chance, so the history of the whole group says what this host's tails do:
 * when its cells' runs (each against its own level, less its run's tails factor) were as far
 * above their levels as this head at least as often as step 9b's lone-run rule asks of one
 * cell (3 in 40), the rise is one the host's tails make, seen before. A tail that rises beyond
 * what the group's tails did still regresses. */
static void group_tails(const struct aw_detect_input *in, size_t n, size_t i,
                        struct aw_detect_result *r, const struct cell_state *st)
{
	const struct aw_detect_input *c = &in[i];
	double rise;
	size_t hits = 0, need = (size_t)ceil(SEEN_SHARE * (double)c->n_history);

	if (!c->tail || c->n_reference || !c->n_head || r->seen_before ||
	    r->verdict == AW_VERDICT_MISSING || r->verdict == AW_VERDICT_NEW || !(r->head > 0) ||
	    st[i].tail_runs < SEEN_LONE_MIN)
		return;
	rise = log(r->head) - st[i].tail_level;
	if (!(rise >= log1p(c->threshold)))
		return;
	if (need < SEEN_LONE_MIN)
		need = SEEN_LONE_MIN;
	for (size_t j = 0; j < n && hits < need; j++) {
		if (!in[j].tail || in[j].group != c->group || in[j].n_reference)
			continue;
		for (size_t t = 0; t < in[j].n_history; t++)
			hits += tail_log(&in[j], &st[j], t) - st[j].tail_level >= rise;
	}
	if (hits < need)
		return;
	r->seen_before = true;
	snprintf(r->note, sizeof(r->note),
	         "the tails of its group rose as far (x%.3g of their level) %zu times or more in "
	         "the history's runs: a stall of the host's, not this cell's",
	         exp(rise), hits);
}

/* The test of a cell judged in ns (at or flipping through the resolution). */
static void test_absolute(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                          struct aw_detect_result *r, const struct cell_state *st, double *p_two)
{
	size_t nb = st->n_base, nh = st->n_head;
	double se = st->noise_ns * sqrt((nh == 1 ? 1.0 : MEDIAN_VAR / (double)nh) +
	                                (nb == 1 ? 1.0 : MEDIAN_VAR / (double)nb));
	double z;

	r->change_ns = r->head - r->baseline;
	r->change = r->change_ns / st->level;
	r->noise = st->noise_ns / st->level;
	z = r->change_ns / se;
	r->pvalue = fmin(1, 2 * aw_norm_sf(fabs(z)));
	*p_two = r->seen_before ? 1 : r->pvalue;
	if (nh >= 3)
		r->mw_pvalue = aw_mann_whitney_p(st->head, nh, st->base, nb,
		                                 r->change > 0 ? AW_GREATER : AW_LESS);
	r->change_lo = (r->change_ns - o->power_z * se) / st->level;
	r->change_hi = (r->change_ns + o->power_z * se) / st->level;
	if (!r->note[0])
		snprintf(r->note, sizeof(r->note),
		         "at or through the resolution: judged in ns (%+.3g ns against a noise of "
		         "%.3g ns, over a level of %.3g ns)",
		         r->change_ns, st->noise_ns, st->level);
	(void)in;
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
	double df = INFINITY, noise, se_rel, z, p_up, p_down;
	size_t n_base = st->n_base, n_head = st->n_head;

	*p_two = 1;
	if (r->verdict == AW_VERDICT_MISSING || r->verdict == AW_VERDICT_NEW)
		return;
	if (st->zero_base) {
		/* The baseline could not be told from the empty loop on a cell where that means the
		 * op cost nothing: any head measurable in every run is a regression of unbounded
		 * relative size. */
		double head_se = in->head_se && isfinite(in->head_se[0]) ? in->head_se[0] : 0;

		r->change_ns = r->head - r->baseline;
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
	if (r->absolute) {
		test_absolute(in, o, r, st, p_two);
		return;
	}
	if (!isnan(st->between)) {
		/* A MAD from w runs estimates sigma as well as a standard deviation from about
		 * 0.37 (w - 1) degrees of freedom would. */
		double dfc = MAD_EFFICIENCY * (double)(st->between_n > 1 ? st->between_n - 1 : 1);

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
	r->change_ns = r->head - r->baseline;
	se_rel = noise * sqrt((n_head == 1 ? 1.0 : MEDIAN_VAR / (double)n_head) +
	                      (n_base == 1 ? 1.0 : MEDIAN_VAR / (double)n_base));
	z = r->change / se_rel;
	p_up = isinf(df) ? aw_norm_sf(z) : aw_t_sf(z, df);
	p_down = isinf(df) ? aw_norm_sf(-z) : aw_t_sf(-z, df);
	r->pvalue = fmin(1, 2 * fmin(p_up, p_down));
	/* A head in a mode or excursion seen before is judged noisy whatever its p-value; left in
	 * the family it would only lend its tiny p-value to the Benjamini-Hochberg thresholds of
	 * the other cells. */
	*p_two = r->seen_before ? 1 : r->pvalue;
	if (n_head >= 3)
		r->mw_pvalue = aw_mann_whitney_p(st->head, n_head, st->base, n_base,
		                                 r->change > 0 ? AW_GREATER : AW_LESS);
	r->change_lo = r->change - o->power_z * se_rel;
	r->change_hi = r->change + o->power_z * se_rel;
}

/* How near the baseline (log) a head run stays "at the baseline": within the cell's noise, or
 * half the threshold if that is less (mixed_levels()). */
static double base_band(const struct aw_detect_input *in, const struct aw_detect_result *r)
{
	double level = log1p(in->threshold) / 2;

	return isfinite(r->noise) && r->noise < level ? r->noise : level;
}

/* Judges r noisy: `at_base` of its `n` head runs stayed at the baseline (within base_band()),
 * so the cell flips between levels (steps 9c and 9a). */
static void flips_levels(const struct aw_detect_input *in, struct aw_detect_result *r,
                         size_t at_base, size_t n)
{
	r->verdict = AW_VERDICT_NOISY;
	snprintf(r->note, sizeof(r->note),
	         "%zu of the %zu head runs stayed at the baseline (%.4g ns, within %.2g%%): a "
	         "cell that flips between levels",
	         at_base, n, r->baseline, 100 * base_band(in, r));
}

/* The head runs that each show a regression beyond their own slowdown: a disturbed run set
 * aside for the level still confirms a change far larger than its disturbance. *at_base counts
 * the head runs, judged or set aside, that stayed at the baseline beyond their own slowdown
 * (within base_band()). */
static size_t agreeing_runs(const struct aw_detect_input *in, const struct aw_detect_result *r,
                            const struct cell_state *st, size_t *at_base)
{
	double level = base_band(in, r);
	size_t agree = 0;

	*at_base = 0;
	if (r->head_n >= in->n_head || !(r->baseline > 0) || r->absolute)
		return r->head_n;
	for (size_t h = 0; h < in->n_head && h < 64; h++) {
		double x =
		    in->head[h] > 0 ? log(in->head[h] / r->baseline) - st->slow[h] : -INFINITY;

		agree += x >= log1p(in->threshold);
		*at_base += x < level;
	}
	return agree > r->head_n ? agree : r->head_n;
}

/* A change that several head runs make only between them: one of them is still at the
 * baseline's level (within the cell's noise, or half the threshold if that is less). A change of
 * the code moves every run of the cell; runs that land some at the baseline and some above it
 * are a cell that flips between levels in a spell of the host's, which the re-measurements
 * taken right after the head share, whatever their median says. Noisy, never regressed or
 * improved. (The noise and not the half threshold alone: a real change of a cell whose
 * run-to-run noise is 1% puts a run below half of a 5% threshold often enough to cost
 * detection, bench_detect_quality's typical class.) */
static void mixed_levels(const struct aw_detect_input *in, struct aw_detect_result *r,
                         const struct cell_state *st)
{
	double level = base_band(in, r), sign = r->change > 0 ? 1 : -1;
	size_t at_base = 0;

	if (st->n_head < 2 || r->absolute || !(r->baseline > 0))
		return;
	for (size_t h = 0; h < st->n_head; h++)
		at_base += !(st->head[h] > 0) || sign * log(st->head[h] / r->baseline) < level;
	if (at_base)
		flips_levels(in, r, at_base, st->n_head);
}

/* A slowdown of the runs' medians that their fastest batches do not share (step 9d). Each batch
 * averages thousands of calls, so a change of the code, even one that costs only some calls,
 * moves every batch and the fastest with it; a spell of the host's that slows part of each run
 * (another tenant on the core, this VM's lock ops 10-30% slower for some milliseconds at a
 * time) raises the median and leaves the fastest batch where it was. So when the runs' median
 * rose over their fastest batch, log(p50 / min), by more than half the change and by more than
 * PART_GAP_K times that gap's own spread in the history, the change is part of the runs: noisy.
 * (Twice the spread cost 0.7 points of +5% detection in bench_detect_quality's typical class,
 * whose batches spread 5%; three times costs nothing there and as little on the recordings.) */
static void part_of_runs(const struct aw_detect_input *in, struct aw_detect_result *r,
                         const struct cell_state *st)
{
	double g[64], c, excess;
	size_t k = 0;

	if (st->n_head < PART_MIN_RUNS || in->tail || r->absolute || !isfinite(st->gap) ||
	    !(r->baseline > 0) || !(r->head > r->baseline))
		return;
	for (size_t h = 0; h < st->n_head && k < 64; h++) {
		if (!(st->head[h] > 0) || !(st->head_min[h] > 0))
			return;
		g[k++] = log(st->head[h] / st->head_min[h]);
	}
	aw_sort_doubles(g, k);
	excess = aw_quantile_sorted(g, k, 0.5) - st->gap;
	c = log(r->head / r->baseline);
	if (!(excess > c / 2) || !(excess > PART_GAP_K * st->gap_noise))
		return;
	r->verdict = AW_VERDICT_NOISY;
	snprintf(r->note, sizeof(r->note),
	         "the head runs' fastest batches stayed near the baseline's (median %+.3g%%, "
	         "fastest batch %+.3g%%): part of each run was slowed, not every call",
	         100 * expm1(c), 100 * expm1(c - excess));
}

static void decide(const struct aw_detect_input *in, const struct aw_detect_opts *o,
                   struct aw_detect_result *r, const struct cell_state *st)
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
	if (r->seen_before && fabs(r->change) >= in->threshold) {
		r->verdict = AW_VERDICT_NOISY;
	} else if (r->verdict == AW_VERDICT_UNCHANGED && fabs(r->change) >= in->threshold &&
	           r->noise * o->power_z >= in->threshold) {
		/* A threshold-sized change, but the baseline's own noise is as large. */
		r->verdict = AW_VERDICT_NOISY;
		snprintf(r->note, sizeof(r->note),
		         "baseline noise %.2g%% is too large for a %.2g%% threshold",
		         100 * r->noise, 100 * in->threshold);
	}
	/* A change that the head runs' disturbance explains (same direction, no larger than it
	 * plus the noise) is never a regression or an improvement once several head runs all
	 * show the disturbance. From one head run it stays what the test said, marked
	 * `explained`: the analysis holds such a cell as suspect until re-measured, since a real
	 * change of every cell (a kernel's) looks the same in one run. */
	if (r->disturbed && isfinite(r->change) &&
	    (r->verdict == AW_VERDICT_REGRESSED || r->verdict == AW_VERDICT_IMPROVED)) {
		double moved = log(r->disturb), c = log1p(r->change);
		double slack = 2 * (isfinite(r->noise) ? r->noise : 0);
		double room = 1.25 * fabs(moved) + slack;
		double most = log(in->tail ? o->tail_disturb_max : o->disturb_max);

		if (c * moved > 0 && fabs(c) <= room && fabs(moved) <= most) {
			double ref = st->ref_moved;

			r->explained = true;
			r->by_reference = isfinite(ref) && c * ref > 0 &&
			                  fabs(c) <= 1.25 * fabs(ref) + slack && fabs(ref) <= most;
			if (r->head_n >= 2)
				r->verdict = AW_VERDICT_NOISY;
			snprintf(r->note, sizeof(r->note),
			         "%s head run%s disturbed (%s factor x%.3f): the change is within "
			         "what that explains",
			         r->head_n >= 2 ? "every" : "the",
			         r->head_n >= 2 ? "s were" : " was",
			         aw_result_factor_name(r, r->disturbed_by), r->disturb);
		}
	}
	if (r->verdict == AW_VERDICT_REGRESSED || r->verdict == AW_VERDICT_IMPROVED)
		mixed_levels(in, r, st);
	if (r->verdict == AW_VERDICT_REGRESSED)
		part_of_runs(in, r, st);
	r->agree_n = r->head_n;
	if (r->verdict == AW_VERDICT_REGRESSED) {
		size_t at_base;

		r->agree_n = agreeing_runs(in, r, st, &at_base);
		/* A tail confirmed only by runs set aside, while another head run stayed at the
		 * baseline: step 9c's mixed levels, over every head run (a tail at 2.5x in the head
		 * run and at 1.7x in one of three re-measurements, the other two at the baseline).
		 * Not a p50: real +10% heads re-measured on a faster clock read near the baseline
		 * there, and were lost. */
		if (in->tail && r->agree_n > r->head_n && at_base) {
			flips_levels(in, r, at_base, in->n_head);
			r->agree_n = r->head_n;
		}
	}
	/* Nor does a disturbed head clear a threshold-sized slowdown: the runs of its disturbed
	 * regime that it was compared with are spread so wide that they hide it, which says
	 * nothing either way (the analysis holds such a cell suspect until re-measured). */
	r->hidden = r->disturbed && r->verdict == AW_VERDICT_UNCHANGED && !r->seen_before &&
	            isfinite(r->change) && r->change >= in->threshold &&
	            r->head - r->baseline >= o->min_abs_ns;
}

/* Benjamini-Hochberg over each family of inputs apart, p[] in place (qa, qb: n scratch each). */
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

/* The mean absolute deviation about their median of log(v[i]) - f[i] (f NULL: of log(v[i])),
 * over the i with every figure finite. Unlike the MAD it sees a minority regime: a cell whose
 * runs sit 2.8% apart in two clocks, two thirds at one, has a MAD of nearly nothing. */
static double log_spread(const double *v, const double *f, size_t n, double *a, double *b)
{
	size_t m = log_less(v, f, 0, n, a);
	double med, sum = 0;

	if (m < REF_SCALE_MIN)
		return NAN;
	med = median_copy(a, m, b);
	for (size_t i = 0; i < m; i++)
		sum += fabs(a[i] - med);
	return sum / (double)m;
}

/* Step 9e: a p50 that keeps time with the reference kernel beside it (its history spreads
 * about the reference under REF_SCALE of its own spread and of its spread about the common
 * mode) is judged in steps of it. Every run's value, history and head alike, is scaled by
 * exp(c - reference), c the head runs' median reference: what it would have measured beside
 * the head's reference. The machine's clock, whichever regime a run landed in, is then in no
 * value, and the run factors, applied, are dropped. A chain of dependent operations on a VM
 * whose runs switch between two clocks 2.8% apart is so steady to 0.02-0.06%, where its raw runs
 * spread 1-2%. *x is the input, scaled or as it was: when scaled, its arrays are *mem's, which
 * the caller frees (*mem NULL: as it was). */
static int scale_by_reference(const struct aw_detect_input *in, struct aw_detect_input *x,
                              double **mem, struct work *w)
{
	const double *hf = in->history_factor[AW_FACTOR_REFERENCE],
	             *xf = in->head_factor[AW_FACTOR_REFERENCE],
	             *cm = in->history_factor[AW_FACTOR_COMMON];
	size_t nh = in->n_history, nx = in->n_head;
	double by_ref, by_self, by_cm = INFINITY, c, *buf;

	*mem = NULL;
	*x = *in;
	if (in->tail || in->n_reference || !hf || !xf || !nx || nh < REF_SCALE_MIN)
		return 0;
	for (size_t h = 0; h < nx; h++)
		if (!isfinite(xf[h]) || !(in->head[h] > 0))
			return 0;
	by_ref = log_spread(in->history, hf, nh, w->a, w->b);
	by_self = log_spread(in->history, NULL, nh, w->a, w->b);
	if (cm)
		by_cm = log_spread(in->history, cm, nh, w->a, w->b);
	if (isnan(by_cm))
		by_cm = INFINITY;
	if (!(by_ref < REF_SCALE * by_self) || !(by_ref < REF_SCALE * by_cm))
		return 0;
	c = median_copy(xf, nx, w->a);
	buf = malloc((3 * nh + 3 * nx) * sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	for (size_t j = 0; j < nh; j++) {
		double k = isfinite(hf[j]) ? exp(c - hf[j]) : 1; /* (none: as measured) */

		buf[j] = in->history[j] * k;
		buf[nh + j] = in->history_se ? in->history_se[j] * k : NAN;
		buf[2 * nh + j] = in->history_min ? in->history_min[j] * k : NAN;
	}
	for (size_t h = 0; h < nx; h++) {
		double k = exp(c - xf[h]);

		buf[3 * nh + h] = in->head[h] * k;
		buf[3 * nh + nx + h] = in->head_min ? in->head_min[h] * k : NAN;
		buf[3 * nh + 2 * nx + h] = in->head_se ? in->head_se[h] * k : NAN;
	}
	x->history = buf;
	x->history_se = in->history_se ? buf + nh : NULL;
	x->history_min = in->history_min ? buf + 2 * nh : NULL;
	x->head = buf + 3 * nh;
	x->head_min = in->head_min ? buf + 3 * nh + nx : NULL;
	x->head_se = in->head_se ? buf + 3 * nh + 2 * nx : NULL;
	for (int f = 0; f < AW_FACTOR_COUNT; f++)
		x->history_factor[f] = x->head_factor[f] = NULL;
	*mem = buf;
	return 0;
}

/* Cells i and j share a pooled noise: one group, and both judged in steps of the reference or
 * neither (a chain so steady in them would pull the lock ops' prior down with it). */
static bool same_group(const struct aw_detect_input *in, double *const *mem, size_t i, size_t j)
{
	return in[i].group == in[j].group && !mem[i] == !mem[j];
}

int aw_detect(const struct aw_detect_input *in, size_t n, const struct aw_detect_opts *opts,
              struct aw_detect_result *out)
{
	const struct aw_detect_opts defaults = AW_DETECT_OPTS_DEFAULT;
	const struct aw_detect_opts *o = opts ? opts : &defaults;
	struct cell_state *st = NULL;
	struct work w = {0};
	double *p = NULL, *fdf = NULL, **mem = NULL;
	struct aw_detect_input *scaled = NULL;
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
	/* (a regime's level looks at the baseline and the head together) */
	w.a = malloc(2 * most * sizeof(double));
	w.b = malloc(2 * (most > n ? most : n) * sizeof(double));
	p = calloc(n ? n : 1, sizeof(double));
	st = calloc(n ? n : 1, sizeof(*st));
	fdf = calloc(n ? n : 1, sizeof(*fdf));
	scaled = calloc(n ? n : 1, sizeof(*scaled));
	mem = calloc(n ? n : 1, sizeof(*mem));
	if (!w.a || !w.b || !p || !st || !fdf || !scaled || !mem)
		goto out;
	/* step 9e: the cells that keep time with their reference, in steps of it */
	for (size_t i = 0; i < n; i++)
		if (scale_by_reference(&in[i], &scaled[i], &mem[i], &w))
			goto out;
	in = scaled;
	for (size_t i = 0; i < n; i++) {
		size_t nb =
		    in[i].n_history > in[i].n_reference ? in[i].n_history : in[i].n_reference;

		st[i].base = malloc((nb ? nb : 1) * sizeof(double));
		st[i].head = malloc((in[i].n_head ? in[i].n_head : 1) * sizeof(double));
		st[i].head_min = malloc((in[i].n_head ? in[i].n_head : 1) * sizeof(double));
		if (!st[i].base || !st[i].head || !st[i].head_min)
			goto out;
		observe(&in[i], o, &out[i], &st[i], &w);
		out[i].on_reference = mem[i] != NULL;
	}
	/* step 9f, once every tail's level is known */
	for (size_t i = 0; i < n; i++)
		if (in[i].tail)
			tail_level(&in[i], &st[i], &w);
	for (size_t i = 0; i < n; i++)
		group_tails(in, n, i, &out[i], st);
	/* each group's pooled noise */
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		double s0, d0;

		if (st[i].pooled)
			continue;
		for (size_t j = i; j < n; j++) {
			if (!same_group(in, mem, i, j) || isnan(st[j].between))
				continue;
			w.b[k] = fmax(st[j].between, o->noise_floor);
			fdf[k++] = MAD_EFFICIENCY *
			           (double)(st[j].between_n > 1 ? st[j].between_n - 1 : 1);
		}
		estimate_prior(w.b, fdf, k, o->prior_df_max, &s0, &d0);
		for (size_t j = i; j < n; j++) {
			if (!same_group(in, mem, i, j))
				continue;
			st[j].pooled = 1;
			test_cell(&in[j], o, &out[j], &st[j], s0, d0, &p[j]);
		}
	}
	if (bh_by_family(in, n, p, w.b, w.b + n))
		goto out;
	for (size_t i = 0; i < n; i++) {
		out[i].qvalue = p[i];
		decide(&in[i], o, &out[i], &st[i]);
	}
	rc = 0;
out:
	free(w.a);
	free(w.b);
	free(p);
	for (size_t i = 0; st && i < n; i++) {
		free(st[i].base);
		free(st[i].head);
		free(st[i].head_min);
	}
	free(st);
	free(fdf);
	for (size_t i = 0; mem && i < n; i++)
		free(mem[i]);
	free(mem);
	free(scaled);
	return rc;
}
