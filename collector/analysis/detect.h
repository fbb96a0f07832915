/* Regression detection for one host's cells: each cell's head value(s) against a baseline
 * window of earlier runs on the baseline ref (cut at the last change point), judged against the
 * cell's threshold and the baseline's own run-to-run noise, with Benjamini-Hochberg control of
 * false discoveries across the host's cells. Pure computation: no database, no I/O. The method
 * and its measured quality are in docs/detection.md. */
#ifndef AW_DETECT_H
#define AW_DETECT_H

#include <stdbool.h>
#include <stddef.h>

#include "aw/verdict.h"
#include "changepoint.h"

struct aw_detect_opts {
	size_t window;        /* baseline runs at most (default 10) */
	double fdr;           /* Benjamini-Hochberg level over a host's cells (default 0.05) */
	double power_z;       /* a change "reaches" the threshold when change + power_z * se does */
	double min_abs_ns;    /* a change smaller than this many ns is never a regression or an
	                         improvement (default 0.1: half a cycle at 5 GHz) */
	double noise_floor;   /* smallest relative run-to-run noise assumed (default 0.001) */
	double bimodal_ratio; /* p99 >= ratio * p50 within a run: tails in two modes (default 3) */
	double bimodal_gap;   /* ratio between two clusters of baseline values (default 1.25) */
	double prior_df_max;  /* most weight the pooled noise of a cell's group may get, in degrees
	                         of freedom (default 30); the weight itself is estimated */
	double mw_alpha;      /* with >= 3 head runs the rank test must also reject at this level */
	double excursion;     /* an earlier run this far from the baseline (x or 1/x) is an
	                         excursion; a head within the excursions seen is noisy (default 1.5) */
	double disturb_min;   /* a head run whose run factor moved by more than this (log units)
	                         and by more than disturb_k of its history's spread is disturbed
	                         (default 0.03) */
	double disturb_k;     /* (default 4) */
	double disturb_max;   /* a disturbance explains a change only up to this factor (x or 1/x,
	                         default 2.5): whole runs of the VMs we measured moved by up to
	                         2.2x; every cell of a run 3x slower is a change of everything */
	double tail_disturb_max; /* the same for a tail (aw_detect_input.tail; default 20): a
	                            VM's reader tails swing tenfold between runs, every cell's
	                            of a run together */
	struct aw_cp_opts cp;    /* change points of the baseline history */
};

#define AW_DETECT_OPTS_DEFAULT                                                                     \
	{                                                                                          \
		.window = 10, .fdr = 0.05, .power_z = 1.645, .min_abs_ns = 0.1,                    \
		.noise_floor = 0.001, .bimodal_ratio = 3, .bimodal_gap = 1.25, .prior_df_max = 30, \
		.mw_alpha = 0.05, .excursion = 1.5, .disturb_min = 0.03, .disturb_k = 4,           \
		.disturb_max = 2.5, .tail_disturb_max = 20, .cp = AW_CP_OPTS_DEFAULT               \
	}

/* The run factors a cell can be judged relative to (aw_detect_input.factor). */
enum aw_factor {
	AW_FACTOR_REFERENCE, /* the reference kernel measured beside the cell */
	AW_FACTOR_COMMON,    /* the run's common mode over its uncontended matrix cells */
	AW_FACTOR_COUNT,
	AW_FACTOR_NONE = -1
};

/* One cell and one metric (p50 or p99) on one host. Values are the metric of each run, in ns.
 * `history` is every earlier run on the baseline ref in commit order, oldest first; the window
 * is taken from its end. `*_se` (optional, may be NULL) hold each run's own standard error of
 * the metric (from its confidence interval), a floor for the noise when the baseline has too
 * few runs to measure it. */
struct aw_detect_input {
	const double *history;
	const double *history_se;
	size_t n_history;
	const double *head;
	const double *head_se;
	size_t n_head;
	const double *reference; /* optional, the runs of a base commit (compare): when given,
	                            the baseline is their median and the history only measures
	                            the noise */
	size_t n_reference;
	/* Run factors, in natural-log units, aligned with history[] and head[]; NULL or NAN where
	 * unknown (a run without a reference series; a confirmation run, whose few cells give no
	 * common mode). Only their differences matter. They say when a head run was disturbed
	 * (moved beyond the spread its history shows), and which earlier runs were measured in
	 * the head's regime. Unused in a compare (`reference` given). */
	const double *history_factor[AW_FACTOR_COUNT];
	const double *head_factor[AW_FACTOR_COUNT];
	bool strict_resolution; /* uncontended and duty-free: a 0-ns baseline means the op cost
	                           nothing, so any head that clears the resolution in every head
	                           run is an unbounded regression; otherwise a cell at resolution is
	                           judged on its change in ns against its own noise */
	double threshold;       /* relative, e.g. 0.05 */
	int group;              /* cells of one group share a pooled noise (e.g. uncontended ops,
	                           readers, contended cells); any int */
	int family;             /* cells of one family share one false discovery correction
	                           (e.g. the re-measured suspects apart); any int */
	bool tail_bimodal;      /* some run's p99 >= bimodal_ratio * p50: a head in either of
	                           two baseline clusters is one the history has shown */
	bool tail;              /* the series is a tail (p99): its run factors are the runs'
	                           tails, a disturbance explains up to tail_disturb_max */
	/* Optional (NULL: unknown), of a p50 series: each run's fastest batch, aligned with
	 * history[] and head[]. A change of the code slows every batch, the fastest too; a
	 * spell of the host's that slows only part of a run leaves it where it was (step 9d). */
	const double *history_min;
	const double *head_min;
};

struct aw_detect_result {
	enum aw_verdict verdict; /* a cell's: unchanged ... missing (aw/verdict.h) */
	double baseline;         /* median of the window */
	double head;             /* median of the head runs */
	double change;           /* head / baseline - 1; INFINITY when the baseline was 0 */
	double change_lo;        /* one-sided 95% bounds of the change */
	double change_hi;
	double noise;           /* relative run-to-run noise used: 1.4826 MAD / median, moderated
	                           towards the host's pooled value, floored by the runs' precision */
	double pvalue;          /* two-sided, before the false discovery correction */
	double qvalue;          /* Benjamini-Hochberg adjusted */
	double mw_pvalue;       /* Mann-Whitney p-value (>= 3 head runs), else NAN */
	size_t window_n;        /* baseline runs used */
	size_t window_start;    /* index into history where the window starts */
	size_t last_change;     /* index of the last change point in history, or 0 */
	bool bimodal;           /* the baseline runs fall into two levels (docs/detection.md,
	                           step 8): what a page's "bimodal" says; a flag only */
	bool seen_before;       /* the head lies in a mode or excursion the history has shown */
	bool regimes;           /* the window's runs fell into two regimes; the head was compared
	                           with the one nearest it (baseline, noise and window_n are its) */
	bool absolute;          /* judged in ns (a cell at or flipping through the resolution):
	                           change is change_ns over the cell's level above resolution */
	double change_ns;       /* head - baseline */
	enum aw_factor matched; /* the factor by which the baseline runs were chosen: those
	                           since the last change point nearest the head's factor (the
	                           head's regime), or AW_FACTOR_NONE (the last `window` runs) */
	bool on_reference;      /* judged in steps of the reference kernel beside it (step 9e):
	                           every run scaled to the head's reference, baseline and head in
	                           ns as measured beside it; no run factor matched or disturbed */
	bool disturbed;         /* every head run judged was disturbed (see factor/disturb) */
	enum aw_factor disturbed_by; /* which factor said so, or AW_FACTOR_NONE */
	double disturb;              /* the head's factor over the window's usual one (1 = none) */
	bool explained;    /* the change lies within what the disturbance explains, so it is
	                      never regressed or improved (verdict noisy) */
	bool by_reference; /* explained, and the reference kernel itself moved as far in every
	                      head run: the machine, since nothing under test moves it (with no
	                      confirmation to come, even one such run is noisy) */
	bool tail;         /* of a tail input: its common factor is the runs' tails */
	bool hidden;       /* unchanged, but every head run judged was disturbed and the change
	                      reaches the threshold: the disturbed regime's own spread hid it, so
	                      one such run clears nothing (the analysis holds it suspect) */
	size_t head_n;     /* head runs judged (disturbed ones are set aside when others are
	                      not) */
	size_t agree_n;    /* of a regression: head runs, set aside or not, that each show it beyond
	                      their own slowdown (>= head_n); confirmation counts these */
	char note[160];    /* the reason behind noisy / new / bimodal, "" otherwise */
};

/* The word of a factor: "reference", "common", or NULL for AW_FACTOR_NONE. */
const char *aw_factor_name(enum aw_factor f);

/* The word of a factor as result `r` used it: "tails" for the common factor of a tail input,
 * else aw_factor_name(). */
const char *aw_result_factor_name(const struct aw_detect_result *r, enum aw_factor f);

/* Judges n cells of one host (one family for the false discovery correction). Returns 0 or
 * -ENOMEM; out[i] answers in[i]. */
int aw_detect(const struct aw_detect_input *in, size_t n, const struct aw_detect_opts *opts,
              struct aw_detect_result *out);

/* A threshold rule: glob patterns (fnmatch) on a cell's op, reader and key; NULL matches all. */
struct aw_threshold_rule {
	const char *op;
	const char *reader;
	const char *key;
	double threshold;
};

/* The threshold of the first rule matching the cell, else `fallback`. */
double aw_threshold_for(const struct aw_threshold_rule *rules, size_t n, const char *op,
                        const char *reader, const char *key, double fallback);

#endif
