/* Regression analysis over the store: the verdicts of a commit on each host against its
 * baseline (for the gate, the compare endpoint and the commit pages), and the change points of
 * a host's series on a ref (stored, listed by the API, drawn on trend charts). It feeds the
 * pure statistics of detect.c from the store and caches the verdict document (verdict_doc.h)
 * for pages and the gate, so that no page computes a verdict on the request path. */
#ifndef AW_COLLECTOR_ANALYSIS_H
#define AW_COLLECTOR_ANALYSIS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "detect.h"
#include "store.h"
#include "verdict_doc.h"

/* Thresholds (configs/thresholds.yaml): the first matching rule wins, for each of p50, p99 and
 * gate separately (a rule that sets only p99 does not hide a later rule's p50). */
struct aw_thresholds {
	double p50; /* default relative threshold of p50 (0.05) */
	double p99; /* default of p99 (0.25: tails drift) */
	/* How a tail's regression weighs at most (warn: listed, never failing; fail: as the
	 * cell's gate says); a cell's own `gate:` can only lower it */
	enum aw_gate p99_gate;
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
	unsigned history;         /* earlier runs read per host (default 40) */
	struct aw_detect_opts detect;
	const struct aw_thresholds *thresholds; /* NULL: 5% / 25% everywhere, default gates */
	/* When n_globs > 0, only the cells whose key matches one of these fnmatch globs are read
	 * and judged (they alone are the false discovery family); at most AW_ANALYSIS_MAX_GLOBS.
	 * Borrowed. */
	const char *const *globs;
	size_t n_globs;
	/* A cell that moved on fewer head runs than this, each showing the move, is `suspect`
	 * instead (the first run plus confirm_runs - 1 re-measurements; default 2; 0 or 1: one
	 * run decides, and an undecided cell is inconclusive at once). */
	unsigned confirm_runs;
	/* Re-measurements an undecided cell may get (default 10): with fewer it is `suspect` (the
	 * agent re-measures it), after that many `inconclusive`; a cell that even that many runs
	 * could not bound below its threshold is `noisy`. */
	unsigned confirm_budget;
	/* After the post-ingest verdict of a daemon host's first run with suspects, queue a job
	 * re-measuring them up to this many times (0: none), claimable for confirm_ttl_us. */
	unsigned confirm_jobs;
	int64_t confirm_ttl_us;
};

/* Defaults: baseline_ref "main", history 40, AW_DETECT_OPTS_DEFAULT, thresholds NULL, no
 * globs, confirm_runs 2, confirm_budget 10. */
void aw_analysis_opts_default(struct aw_analysis_opts *o);

/* Whether a metric measured by `head_n` head runs may still get a re-measurement: fewer runs
 * than the first plus the budget. */
static inline bool aw_analysis_budget_left(const struct aw_analysis_opts *o, size_t head_n)
{
	return head_n < 1 + (size_t)o->confirm_budget;
}

/* Judges `commit` of `project` on `host`. The baseline is the last o->history runs of
 * o->baseline_ref that come before the commit in commit order, or, when `base_commit` is not
 * NULL, the runs of base_commit on that host (compare). A host without a run of the commit is
 * AW_VERDICT_INCOMPLETE with a reason. Returns 0 (release *out with aw_host_verdict_release()) or
 * a negative store errno with *err. */
int aw_analysis_host(struct store_conn *c, const struct aw_analysis_opts *o, const char *project,
                     const char *commit, const char *base_commit, const char *host,
                     struct aw_host_verdict *out, char **err);

/* The verdict the gate reads: the one cached after the commit's last upload on `host` when it
 * was computed against o->baseline_ref from every run the commit has there now and no cell
 * globs are asked, else aw_analysis_host() computed now (*cached says which). Same contract;
 * a cached verdict lists only the cells that are not unchanged (its counts cover all). */
int aw_analysis_host_cached(struct store_conn *c, const struct aw_analysis_opts *o,
                            const char *project, const char *commit, const char *host,
                            struct aw_host_verdict *out, bool *cached, char **err);

/* Recomputes the change points of every cell's p50 and p99 series of `host` on `ref` (of
 * `project`) from the last o->history runs and stores them, replacing the previous set for
 * that (project, host, ref). Returns 0 or a negative errno with *err. */
int aw_analysis_changepoints(struct store_conn *c, const struct aw_analysis_opts *o,
                             const char *project, const char *host, const char *ref, char **err);

/* The background work after a run of (project, commit, host, ref) was stored: the change points
 * of that host and ref, then the verdict of the commit on that host against the baseline ref,
 * cached in the store for pages and the gate (store_verdict_put). Never call it on the request
 * path. Returns 0 or a negative errno with *err. */
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
