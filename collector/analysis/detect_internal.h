/* The model's parts shared by detect.c (the phases, the host's cells) and detect_levels.c (the
 * references and levels of one metric): the state of one metric of one cell, the small
 * statistics both use. Private to collector/analysis/. */
#ifndef AW_ANALYSIS_DETECT_INTERNAL_H
#define AW_ANALYSIS_DETECT_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "aw/stats.h"
#include "detect.h"

/* The noise of a set of runs is the spread that covers four runs in five about their level:
 * the 80th percentile of the absolute deviations over 1.2816, sigma for normal data, wider
 * than the MAD's for the heavy tails a VM's runs have (a p99 a few runs in ten of which are
 * half again as high). */
#define COVER_Q          0.8
#define COVER_TO_SIGMA   (1 / 1.2816)
#define COVER_EFFICIENCY 0.4  /* of that estimate relative to the standard deviation */
#define TAIL_Q           0.95 /* the quantile of |deviation| tail_spread() takes */
#define UNKNOWN_NOISE    0.01 /* assumed when nothing measures the noise */
#define MAX_CP           32
#define REF_MIN_RUNS     8  /* baseline runs a reference must be measured beside to be used */
#define STATE_MIN_RUNS   16 /* ... and a memory state, or the kernels together */
#define DETECT_SLOTS     (AW_DETECT_REFS + 1) /* the inputs' and the combination's */
#define LEVEL_MIN_RUNS   2                    /* runs of a latent level, at least */
#define REF_LEVEL_RUNS   3    /* runs of each cluster of a reference that splits the levels */
#define REF_BAND_Q       0.1  /* the correcting reference's band: its baseline's 10th-90th pct */
#define REF_BAND_RUNS    9    /* a compare's base commit with fewer borrows the history's */
#define ODD_NEAR         2    /* a reading fewer of a level's runs came near is odd */
#define ODD_MARGIN       0.03 /* ... within this (log), or their middle half's width */
#define MAX_BASE         256  /* baseline runs judged at most (window and base commits) */

/* A memory state of ratio s explains a cell's slowdown up to s^STATE_EXPLAINS (in log, a
 * multiple of the state's): over the sixteen amd26 recordings' base runs in a state 1.5x their
 * window's or more (2,556 uncontended cell readings) the most was s^2.6, a hash lookup's; only
 * contended cells, whose threads other tenants also preempt, went further (s^7.4), and replays
 * of -22, -31, -52, -54 read the same with 3 as with 8 */
#define STATE_EXPLAINS 3.0

struct cell {
	double *y;                   /* log values: the baseline's, then the head's */
	double *x[DETECT_SLOTS];     /* log reference values, likewise (NAN: none); the
	                                combination's (AW_DETECT_COMBINED) last */
	size_t nb, nh;               /* baseline and head runs (y[nb .. nb + nh) the head) */
	double raw_base, raw_head;   /* ns medians as measured */
	bool zero_base;              /* every baseline run below resolution */
	int level_of[256];           /* level of each baseline run */
	double s_own;                /* the runs' own precision (median se / value), NAN unknown */
	double s_up, s_down, f_cell; /* own one-sided noises about the levels, their degrees of
	                                freedom */
	double up, down;             /* moderated: `noise` of a slowdown and of a speed-up */
	double df_up, df_down;       /* the degrees of freedom of each (each side its own: a cell
	                                floored at the resolution has no noise below) */
	double tq_up, tq_down;       /* the t quantile of each at 0.05 (judge_levels()) */
	double p_up, p_down;         /* candidates for the correction (1: none) */
	int up_level, down_level;    /* the level behind each, -1 the share test */
	double head_med[AW_DETECT_LEVELS];
	double centre[AW_DETECT_LEVELS];
	double ref_centre[AW_DETECT_LEVELS]; /* of the level reference's clusters */
	bool base_commit;      /* the baseline is a base commit's runs (a compare), not a window */
	double ref_lo, ref_hi; /* the band of the correcting reference's central baseline runs
	                          (REF_BAND_Q), log; NAN when no reference corrects */
	double ref_min, ref_max, ref_mid; /* the range the correction clamps the reference to,
	                                     and its centre (detect_adjust()), log */
	double term_lo[AW_DETECT_KERNELS], term_hi[AW_DETECT_KERNELS]; /* of the kernels together:
	                                                                  each one's band */
	int head_lev[256]; /* the level of each head run */
	bool unseen[256];  /* head run i's memory state was beyond the
	                      baseline's (opts.state_margin) */
	/* the history before the baseline: its runs' values and references, and the segment
	 * (between change points) each lies in; they measure the noise, not the centre */
	double *ey, *ex[DETECT_SLOTS];
	int *eseg;
	size_t ne;
	double *res; /* the history's deviations from their levels (find_levels()) */
	size_t n_res;
	bool *confirming; /* head runs that re-measured the cell (NULL: each counts) */
	double *cg;       /* log gather beside the cell, baseline then head (NULL: none) */
};

/* Median of v[0..n) (copied into scratch). NAN when n == 0. */
static inline double detect_median(const double *v, size_t n, double *scratch)
{
	if (!n)
		return NAN;
	memcpy(scratch, v, n * sizeof(*v));
	aw_sort_doubles(scratch, n);
	return aw_quantile_sorted(scratch, n, 0.5);
}

/* The spread of v[0..n) about `centre`: 1.4826 x the MAD, for clustering and slopes; NAN for
 * n < 2. */
static inline double detect_spread_about(const double *v, size_t n, double centre, double *scratch)
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
static inline double detect_tail_spread(const double *v, size_t n, double *scratch)
{
	double m = detect_median(v, n, scratch);

	for (size_t i = 0; i < n; i++)
		scratch[i] = fabs(v[i] - m);
	aw_sort_doubles(scratch, n);
	return aw_quantile_sorted(scratch, n, TAIL_Q);
}

/* The one-sided noises of deviations d[0..n) from their level (COVER_Q above): *up of a
 * slowdown, *down of a speed-up. Sorts d. */
static inline void detect_one_sided(double *d, size_t n, double *up, double *down)
{
	aw_sort_doubles(d, n);
	*up = COVER_TO_SIGMA * fmax(0, aw_quantile_sorted(d, n, COVER_Q));
	*down = COVER_TO_SIGMA * fmax(0, -aw_quantile_sorted(d, n, 1 - COVER_Q));
}

/* ---- references and levels (detect_levels.c) ---- */

/* The control variate: the reference whose line through the history (log value on log
 * reference, Theil-Sen) leaves its runs steadiest, measured by detect_tail_spread(), when that
 * cuts their spread by ref_gain or more and it was measured beside every head run too. Returns
 * the spread it leaves (the values' own when none does), with r->reference, r->ref_slope and
 * *centre set; detect_adjust() applies it. a, b, s: scratch of the history's length. */
double detect_pick_reference(const struct aw_detect_opts *o, struct cell *c,
                             struct aw_detect_result *r, double *centre, double *a, double *b,
                             double *s);
void detect_adjust(struct cell *c, const struct aw_detect_result *r, double centre, double *a);
double detect_pick_level_reference(const struct aw_detect_opts *o, struct cell *c,
                                   struct aw_detect_result *r, double *bounds, double *a, double *b,
                                   double *s);
void detect_take_levels(struct cell *c, const struct aw_detect_result *r, const double *bounds,
                        double *a, double *b);
void detect_find_levels(const struct aw_detect_opts *o, struct cell *c, struct aw_detect_result *r,
                        double thr, double *a, double *b, double *s);
int detect_head_level(const struct cell *c, const struct aw_detect_result *r, size_t i);
/* Whether run i (index into y) was measured with the correcting reference (or one of the kernels
 * together) beyond the band of the baseline's central runs by more than the cell's noise once
 * corrected: it decides nothing (detect_levels.c). *reach: the most the line (or the plane's
 * kernels, summed) could still owe the run beyond the band, log. */
bool detect_off_band(const struct cell *c, const struct aw_detect_result *r, size_t i,
                     double *reach);
/* Whether head run i of level j decides nothing: the threshold or more above its level beside a
 * kernel of the core that read slower than the level's baseline runs ever did (detect_levels.c). */
bool detect_odd_state(const struct cell *c, int j, size_t i, double thr, double *a);
/* The highest of level j's baseline runs (log), NAN when it has none (detect_levels.c). */
double detect_level_top(const struct cell *c, int j);
/* Whether level j's head runs split between the level's centre and three thresholds beyond it
 * (sign +1: slower), counting each side (detect_levels.c). thr: log1p(threshold). */
bool detect_head_split(const struct cell *c, int j, int sign, double thr, size_t *at_n,
                       size_t *far_n);
/* The head's move in ns against the clock's resolution (opts.min_abs_ns), detect_levels.c: the
 * larger of the move as measured and as corrected in each level with head runs. */
double detect_move_ns(const struct cell *c, const struct aw_detect_result *r);
double detect_reach_ns(const struct aw_detect_result *r);
/* Head runs in memory states the baseline never saw (c->unseen[]), detect_levels.c: clears the
 * flag of each run the head runs in seen states vouch for; and the upper bound of the cell's
 * log slope on the log state (by[]: each head run's) over the unseen runs, NAN where they
 * cannot say. thr: log1p(threshold); a: the bridge's scratch of the head's length. */
void detect_bridge_unseen(struct cell *c, double thr, double *a);
double detect_state_slope(const struct cell *c, const double *by);

/* The median of a memory state x over the baseline's runs that have it, NAN under three
 * (detect_levels.c). a: scratch of the baseline's length. */
double detect_baseline_state(const struct cell *c, const double *x, double *a);

/* c->cg: the gather beside the cell, the baseline's runs (at[]: their history indices) then
 * the head's (detect_levels.c). Returns 0 or -ENOMEM. */
int detect_cell_gather(const struct aw_detect_input *in, struct cell *c, const size_t *at,
                       size_t total);

#endif
