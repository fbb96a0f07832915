/* Regression verdicts for one host's cells, by one model (docs/detection.md, "The model"):
 *
 * A cell's runs are compared in log space. The baseline is its runs since the last step of its
 * history (a change point the runs after do not come back from); the runs before measure the
 * noise. The runs are first made comparable by the reference that tracks the cell best in
 * this history (a kernel nothing under test moves, or the run's memory state), used only when
 * it cuts the cell's spread by a quarter or more (a control variate), or they fall into the
 * levels of a reference whose clusters the cell follows (the machine's own states, e.g. a core
 * alone or sharing its ports): each level has a share of the history, a centre and a noise,
 * and each head run is judged against the baseline runs of its level. A metric is regressed
 * when a level the host spends a real share of its time in is significantly slower (false
 * discovery rate over the host's cells) and its bound reaches the threshold; unchanged once
 * every level with head runs is bounded within the threshold both ways; anything else is
 * undecided, which the analysis turns into a suspect (re-measure) or, once the confirmation
 * budget is spent, inconclusive or noisy. Head runs measured in a memory state far from the
 * baseline's confirm no move, unless the head's runs in a state it saw show the cell does not
 * feel the difference.
 *
 * Pure computation: no database, no I/O. */
#ifndef AW_DETECT_H
#define AW_DETECT_H

#include <stdbool.h>
#include <stddef.h>

#include "aw/result.h" /* enum aw_ref */
#include "aw/verdict.h"
#include "changepoint.h"
#include "verdict_doc.h" /* struct aw_level */

/* The references a verdict weighs: the kernels beside each cell (one slot per kernel of the
 * family) and the run's two memory states, each a memory kernel beside the run's anchor cells
 * (aw_cell_is_anchor()): the walk's (memchase-v1, the latency of a miss) and the gather's
 * (memgather-v1, the misses in flight together). */
#define AW_DETECT_KERNELS AW_REF_COUNT
#define AW_DETECT_MEMORY  AW_DETECT_KERNELS       /* the walk's state */
#define AW_DETECT_GATHER  (AW_DETECT_KERNELS + 1) /* the gather's state */
#define AW_DETECT_REFS    (AW_DETECT_KERNELS + 2)
/* Not an input: the result's `reference` when the values were corrected by the kernels' slots
 * together (a line on each, fitted jointly), `ref_terms` their slopes. */
#define AW_DETECT_COMBINED AW_DETECT_REFS
/* The most levels a cell's history is split into. */
#define AW_DETECT_LEVELS AW_VERDICT_LEVELS

struct aw_detect_opts {
	size_t window;        /* baseline runs at most, since the last change point (default 30) */
	double fdr;           /* Benjamini-Hochberg level over a host's cells (default 0.05) */
	double min_abs_ns;    /* values below this many ns are this (default 0.1: half a
	                         cycle at 5 GHz); a baseline wholly below it is judged in ns,
	                         where a smaller move never counts. Above it a move counts by
	                         its bounds (a per-call figure averages a batch of calls: its
	                         noise, not a clock, limits it); an undecided one smaller than
	                         this, bounds and runs' scatter too, is unchanged (decide()) */
	double noise_floor;   /* smallest relative run-to-run noise assumed (default 0.001) */
	double screen_noise;  /* smallest noise of a head judged on one run (default 0.01): one
	                         run cannot show its own spread */
	double ref_gain;      /* a reference is used when it cuts the cell's spread by at least
	                         this share (default 0.25) */
	double level_gap;     /* a reference's clusters split at gaps of at least this many
	                         noises (default 4) ... */
	double level_gap_min; /* ... and this much in log units (default 0.02) */
	double level_share;   /* a level this share of the history or more must not regress, and
	                         its runs must be judged (default 0.2) */
	double bimodal_gap;   /* the flag: two clusters of runs this far apart (default 1.25) */
	double state_margin;  /* a head run whose memory state is this many times the
	                         baseline's usual one (its median) was measured in a state the
	                         baseline cannot judge: it confirms no move (default 1.5) */
	double prior_df_max;  /* most weight the pooled noise of a cell's group may get, in degrees
	                         of freedom (default 30) */
	struct aw_cp_opts cp; /* change points of the baseline history */
};

#define AW_DETECT_OPTS_DEFAULT                                                                    \
	{                                                                                         \
		.window = 30, .fdr = 0.05, .min_abs_ns = 0.1, .noise_floor = 0.001,               \
		.screen_noise = 0.01, .ref_gain = 0.25, .level_gap = 4, .level_gap_min = 0.02,    \
		.level_share = 0.2, .bimodal_gap = 1.25, .state_margin = 1.5, .prior_df_max = 30, \
		.cp = AW_CP_OPTS_DEFAULT                                                          \
	}

/* One cell and one metric (p50 or p99) on one host, in ns. `history` is every earlier run on
 * the baseline ref in commit order, oldest first (the window is taken from its end); `head`
 * the commit's runs. `*_se` (optional) hold each run's own standard error of the metric, a
 * floor for the noise. ref[k] (optional, NULL or NAN where unknown) hold reference kernel k's
 * ns beside the cell in each run, aligned with the values. */
struct aw_detect_input {
	const double *history;
	const double *history_se;
	const double *history_ref[AW_DETECT_REFS];
	size_t n_history;
	const double *head;
	const double *head_se;
	const double *head_ref[AW_DETECT_REFS];
	/* optional: the memory gather measured beside this very cell in each history and head
	 * run: a state of the moment, never a reference (the cell's own traffic moves it) */
	const double *history_cell_gather, *head_cell_gather;
	const bool *head_confirmation; /* optional: head runs that re-measured the cell after
	                                  another run raised a suspicion */
	size_t n_head;
	/* optional: the runs of a base commit (compare); when given they are the baseline and
	 * the history only measures the noise */
	const double *base;
	const double *base_ref[AW_DETECT_REFS];
	size_t n_base;
	double threshold; /* relative, e.g. 0.05 */
	int group;        /* cells of one group share a pooled noise; any int */
	int family;       /* cells of one family share one false discovery correction */
};

struct aw_detect_result {
	enum aw_verdict verdict; /* unchanged, regressed, improved, new, or AW_VERDICT_UNKNOWN
	                            when undecided (the analysis makes it suspect or
	                            inconclusive) */
	double baseline;         /* ns: the dominant level's centre (or the judged level's) */
	double head;             /* ns: the median of the head runs */
	double change;           /* of the deciding level: head / base - 1 */
	double change_lo, change_hi;
	double change_ns;      /* head - baseline in ns, as measured (not adjusted) */
	bool absolute;         /* the baseline is below resolution: the change is change_ns */
	double noise;          /* relative run-to-run noise of the dominant level, moderated */
	double pvalue, qvalue; /* of the deciding test, before and after the correction */
	size_t window_n;       /* baseline runs */
	size_t head_n;         /* head runs */
	size_t agree_n;        /* of a move: head runs that each could show it alone (their
	                          change's bound reaches the threshold, the right way), measured
	                          in a memory state the baseline saw, or bridged to one */
	size_t unseen_n;       /* head runs measured in a memory state beyond the baseline's
	                          (state_margin) that the head's other runs do not bridge: they
	                          confirm no move */
	double unseen_by;      /* the largest such state over the baseline's median (or NAN) */
	size_t split_at;  /* a head split (detect_head_split()): its runs at the baseline's level */
	size_t split_far; /* ... and those three thresholds or more beyond it; 0 when not split */
	size_t off_n;     /* head runs whose correcting reference read beyond the band of
	                     the baseline's central runs: they decide nothing */
	size_t odd_n;     /* head runs the threshold above their level beside a kernel of the
	                     core slower than its runs (detect_odd_state()): they decide nothing */
	int reference;    /* the input's ref[] index the values were adjusted by,
	                     AW_DETECT_COMBINED (the kernels together), or -1 */
	double ref_slope; /* d log(value) / d log(reference) (1 for the combination) */
	double ref_terms[AW_DETECT_KERNELS]; /* of the combination: each kernel slot's slope
	                                        (NAN: a slot not in it) */
	double ref_gain;                     /* share of the spread the reference removed */
	int level_ref;   /* the ref[] index whose clusters are the levels, or -1 */
	bool own_levels; /* the levels are the cell's own clusters (no reference's) */
	struct aw_level levels[AW_DETECT_LEVELS];
	size_t n_levels;
	size_t dominant; /* index of the dominant level */
	int decided_by;  /* the level that decided, or -1 (undecided) */
	bool bimodal;    /* the baseline runs split into two clusters (docs/detection.md) */
	char note[200];  /* why, in a sentence, "" when nothing needs saying */
};

/* Judges n cells of one host. Returns 0 or -ENOMEM; out[i] answers in[i]. */
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
