/* Regression analysis over the store: the verdicts of a commit on each host against its
 * baseline (for the gate, the compare endpoint and the commit pages), and the change points of
 * a host's series on a ref (stored, listed by the API, drawn on trend charts). It feeds the
 * pure statistics of detect.c from the store and caches what pages need, so that no page
 * computes a verdict on the request path. */
#ifndef AW_COLLECTOR_ANALYSIS_H
#define AW_COLLECTOR_ANALYSIS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "detect.h"
#include "store.h"

/* Thresholds (configs/thresholds.yaml): the first matching rule wins, for each of p50, p99 and
 * gate separately (a rule that sets only p99 does not hide a later rule's p50). */
struct aw_thresholds {
	double p50; /* default relative threshold of p50 (0.05) */
	double p99; /* default of p99 (0.10: tails are noisier) */
	struct aw_threshold_rule *p50_rules;
	size_t n_p50_rules;
	struct aw_threshold_rule *p99_rules;
	size_t n_p99_rules;
	/* the rules that set `gate:`; each one's `threshold` holds its enum aw_gate, so that the
	 * one matcher (aw_threshold_for) serves both */
	struct aw_threshold_rule *gate_rules;
	size_t n_gate_rules;
};

/* The most --cells globs one verdict takes (the API answers 400 beyond). */
#define AW_ANALYSIS_MAX_GLOBS 32

struct aw_analysis_opts {
	const char *baseline_ref; /* the ref whose history is the baseline ("main") */
	unsigned history;         /* earlier runs read per host: window, excursions, change
	                             points (default 40) */
	struct aw_detect_opts detect;
	const struct aw_thresholds *thresholds; /* NULL: 5% / 10% everywhere, default gates */
	/* When n_globs > 0, only the cells whose key matches one of these fnmatch globs are read
	 * and judged (they alone are the false discovery family); at most AW_ANALYSIS_MAX_GLOBS.
	 * Borrowed. */
	const char *const *globs;
	size_t n_globs;
	/* A cell judged regressed on fewer head runs of it than this is `suspect` instead (the
	 * first run plus confirm_runs - 1 re-measurements; default 2; 0 or 1: one run decides). */
	unsigned confirm_runs;
	/* With confirm_runs > 1, a first run's slowdown whose upper bound reaches the threshold
	 * and whose p-value, before the false discovery correction over the host's cells, is
	 * below this is suspect too (default 0.20; 0: only a significant regression is). The
	 * cells re-measured are judged as a false discovery family of their own. */
	double suspect_p;
	/* The screen's least run-to-run noise, relative (default 0.01): one run cannot show its
	 * own spread, and the history's spread is that of other builds (a subject's +5% build
	 * spread 0.24% where its base spread 0.04%), so a first run's slowdown is suspect when
	 * its upper bound, widened to this noise, reaches the threshold (0: the bound as the
	 * noise gives it). Only the screen uses it; the verdict after re-measurement does not. */
	double screen_noise;
	/* After the post-ingest verdict of a daemon host's first run with suspects, queue a job
	 * re-measuring them this many times (0: none), claimable for confirm_ttl_us. */
	unsigned confirm_jobs;
	int64_t confirm_ttl_us;
};

/* Defaults: baseline_ref "main", history 40, AW_DETECT_OPTS_DEFAULT, thresholds NULL, no
 * globs, confirm_runs 2, suspect_p 0.20, screen_noise 0.01. */
void aw_analysis_opts_default(struct aw_analysis_opts *o);

/* One cell of one host: p50 and p99 judged separately; `verdict` is the more severe of the two
 * (regressed > suspect > improved > noisy > new > missing > unchanged). A metric regressed on
 * fewer head runs than opts' confirm_runs is `suspect` (the cell too). */
struct aw_cell_verdict {
	char *key, *op, *reader, *subject; /* owned; reader/subject may be NULL */
	int cpu;
	enum aw_verdict verdict;
	size_t n_head; /* head runs that measured the cell */
	/* how its regression weighs (the first thresholds rule with `gate:` that matches, else
	 * fail for uncontended ops, readers, subject and kernel cells, warn for contended cells
	 * and cells with duty) */
	enum aw_gate gate;
	struct aw_detect_result p50, p99;
	double p50_threshold, p99_threshold;
};

/* One head run's state against the baseline's runs: its common mode and reference kernel over
 * their usual values (1 = as usual, NAN: unknown), and whether either moved beyond the spread
 * those runs show. */
struct aw_run_state {
	double common, reference, tails; /* each over its baseline median (NAN: unknown) */
	bool disturbed;                  /* some factor moved beyond what the baseline shows */
};

/* A commit on one host. */
struct aw_host_verdict {
	char *host;
	enum aw_verdict status; /* fail: a cell of gate level fail regressed (confirmed);
	                           else unconfirmed: a fail-level cell is suspect; else pass;
	                           incomplete: no head run */
	char *reason;           /* why incomplete, else NULL */
	char **head_runs;       /* run ids of the commit on this host, newest first */
	size_t n_head_runs;
	struct aw_run_state *runs; /* one per head run, in head_runs order */
	size_t n_runs;
	bool disturbed;                /* some head run was disturbed */
	size_t n_baseline_runs;        /* earlier runs read (baseline ref or base commit) */
	struct aw_cell_verdict *cells; /* regressed first, then improved, noisy, new, missing,
	                                  unchanged; the largest change first within each */
	size_t n_cells;
	size_t counts[AW_VERDICT_COUNT]; /* cells per verdict (cell verdicts only) */
	size_t warnings;                 /* regressed or suspect cells of gate level warn */
	uint64_t globs_matched;          /* bit i: opts' globs[i] matched a cell of a head run */
	char *host_changed; /* what changed on the host, when a regression was its (control.h) */
};

/* Judges `commit` of `project` on `host`. The baseline is the last o->history runs of
 * o->baseline_ref that come before the commit in commit order, or, when `base_commit` is not
 * NULL, the runs of base_commit on that host (compare). A host without a run of the commit is
 * AW_VERDICT_INCOMPLETE with a reason. Returns 0 (release *out with aw_host_verdict_release()) or
 * a negative store errno with *err. */
int aw_analysis_host(struct store_conn *c, const struct aw_analysis_opts *o, const char *project,
                     const char *commit, const char *base_commit, const char *host,
                     struct aw_host_verdict *out, char **err);

void aw_host_verdict_release(struct aw_host_verdict *v);

/* The JSON form used by /api/v1/gate and /api/v1/compare:
 *   {"host", "status", "reason", "head_runs": [...], "baseline_runs": n, "counts": {...},
 *    "warnings": n,
 *    "cells": [{"key", "op", "reader", "subject", "cpu", "verdict", "gate", "head_runs",
 *               "p50": {verdict, baseline, head, change, change_lo, change_hi, noise, pvalue,
 *                       qvalue, window, bimodal, note, threshold}, "p99": {...}}, ...]}
 * Cells whose verdict is unchanged are listed only when `all_cells`. NULL on allocation
 * failure. */
json_t *aw_host_verdict_json(const struct aw_host_verdict *v, bool all_cells);

/* Recomputes the change points of every cell's p50 and p99 series of `host` on `ref` (of
 * `project`) from the last o->history runs and stores them, replacing the previous set for
 * that (project, host, ref). Returns 0 or a negative errno with *err. */
int aw_analysis_changepoints(struct store_conn *c, const struct aw_analysis_opts *o,
                             const char *project, const char *host, const char *ref, char **err);

/* The background work after a run of (project, commit, host, ref) was stored: the change points
 * of that host and ref, then the verdict of the commit on that host against the baseline ref,
 * cached in the store for pages (store_verdict_put). Never call it on the request path.
 * Returns 0 or a negative errno with *err. */
int aw_analysis_after_ingest(struct store_conn *c, const struct aw_analysis_opts *o,
                             const char *project, const char *commit, const char *host,
                             const char *ref, char **err);

/* The same, handing the verdict it cached to the caller (the charts drawn next mark its
 * regressions): *out is filled when it returns 0 and `commit` is not NULL (release it with
 * aw_host_verdict_release()), zeroed otherwise. */
int aw_analysis_after_ingest_verdict(struct store_conn *c, const struct aw_analysis_opts *o,
                                     const char *project, const char *commit, const char *host,
                                     const char *ref, struct aw_host_verdict *out, char **err);

#endif
