/* The collector's charts: each chart's data gathered from the store and drawn by the reports
 * library into the data dir, the work done after each ingest (analysis, then the charts of the
 * commit and host), and the render workers that do it off the request path through a bounded,
 * coalescing queue. Pages never draw: they only look for the files (see pages.h).
 *
 * Conventions: int functions return 0 or a negative errno; `char **err`, when given, receives
 * a malloc'd message the caller frees. */
#ifndef AW_COLLECTOR_RENDER_H
#define AW_COLLECTOR_RENDER_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis.h"
#include "arena.h"
#include "reports.h"
#include "store.h"

/* Most points (runs) on a trend chart: the newest ones of the host on the ref. */
#define AW_TREND_POINTS 100

/* The overview lists the commits of the newest AW_RECENT_RUNS runs (newest first, by their
 * newest run); each commit's compare chart against the one listed after it is drawn. */
#define AW_RECENT_RUNS 1000

/* What one drawing thread works with; everything is borrowed. */
struct aw_draw {
	struct store_conn *conn;
	struct aw_gnuplot *gp; /* NULL: nothing is drawn (the analysis still runs) */
	const char *data_dir;  /* charts go to <data_dir>/charts/... */
	const struct aw_analysis_opts *analysis;
	const char *project; /* NULL: runs of any project */
	unsigned flags;      /* AW_RENDER_FORCE or 0 */
	/* counters, for logs and tests */
	unsigned drawn, cached, failed;
};

/* Draws the chart `id` from the stored data (a compare chart with its table, see
 * aw_chart_table_path()) and counts the outcome in d (a compare chart's base is
 * a commit when runs of that commit exist on the host, else a ref whose newest earlier runs are the
 * baseline). Returns 0 (drawn), AW_RENDER_CACHED (unchanged), -ENOENT (no run to draw it from),
 * -ENOSYS (no gnuplot), or another negative errno with *err. */
int aw_draw_chart(struct aw_draw *d, const struct aw_chart_id *id, char **err);

/* Where a compare chart's table lives: <data_dir>/<its path without .svg>.cells.json, a file
 * the chart routes never serve. It holds {"cells": [[key, base_p50, head_p50], ...]}: the
 * medians the chart was drawn from for every cell of the head and the base (null: none), what
 * a page shows for cells the cached verdict does not list. Returns 0, -EINVAL or
 * -ENAMETOOLONG. */
int aw_chart_table_path(const char *data_dir, const struct aw_chart_id *id, char *out, size_t size);

/* The trend charts of `host` on `ref`: one per op group of the host's newest run there.
 * Returns 0 or the first failure (every group is still tried), with *err. */
int aw_draw_trends(struct aw_draw *d, const char *host, const char *ref, char **err);

/* The op group a cell's trend is drawn in ("lse", "llsc", "reader-srcu", "kernel-percpu" for the
 * atomwatch module's this_cpu_* cells, "kernel" for refscale's, ...), into buf.
 * Returns buf. */
const char *aw_cell_group(const char *op, const char *reader, const char *subject,
                          const char *kernel, char *buf, size_t size);

/* The name of the contention chart a contended cell belongs to ("stadd", "stadd-far",
 * "srcu-llsc"), into buf. Returns buf. */
const char *aw_cell_contention_name(const char *op, const char *reader, const char *placement,
                                    char *buf, size_t size);

/* The charts a stored run's cells give besides its commit's: the names of its trend groups and
 * of its contention charts (what pages list), copied into `a`. Returns 0 or a store error. */
int aw_run_chart_names(struct store_conn *c, struct aw_arena *a, int64_t seq, const char ***groups,
                       size_t *n_groups, const char ***contention, size_t *n_contention);

/* The work after a new run of (project, commit, host, ref) was stored: the analysis (change
 * points and the cached verdict, see analysis.h; skipped when d->analysis is NULL), then the
 * charts of the commit on that host (compare against the baseline ref, per CPU, contention),
 * the commit's cross-host heat map and its compare chart against the commit listed before it
 * on the overview. The host's trend charts are not drawn here (aw_draw_trends(): the workers
 * queue them behind the commits' charts). Returns 0 or the first failure, with *err. */
int aw_render_after_ingest(struct aw_draw *d, const char *project, const char *commit,
                           const char *host, const char *ref, char **err);

/* ---- the render workers ---- */

struct aw_renderer;

struct aw_renderer_opts {
	const char *data_dir;
	const char *gnuplot; /* NULL: /usr/bin/gnuplot */
	unsigned timeout_ms; /* most time one chart may take; 0: the reports default */
	unsigned workers;    /* threads, each with a gnuplot and a database connection; >= 1 */
	unsigned queue_max;  /* tasks waiting at most; more are dropped (and logged once) */
	const struct aw_analysis_opts *analysis; /* NULL: charts only; must outlive the workers */
};

/* Starts the workers (each connects to the database now; a gnuplot that cannot start is
 * logged and its worker only runs the analysis). Returns 0 with *out, or a negative errno with
 * *err. */
int aw_renderer_start(struct store *store, const struct aw_renderer_opts *o,
                      struct aw_renderer **out, char **err);

/* Queues the work after a new run (aw_render_after_ingest(), then the host's trends). Never
 * blocks on the workers: a task equal to one still waiting is merged with it. Strings are
 * copied. Returns 0, -EAGAIN (the queue is full: dropped), -ESHUTDOWN or -ENOMEM. */
int aw_renderer_push_run(struct aw_renderer *r, const char *project, const char *commit,
                         const char *host, const char *ref);

/* Queues one chart (a compare page asking for a pair nobody drew). Same returns. */
int aw_renderer_push_chart(struct aw_renderer *r, const struct aw_chart_id *id);

/* Tasks waiting or being drawn right now (0: every chart asked for so far is on disk, or
 * failed and logged). */
unsigned aw_renderer_depth(struct aw_renderer *r);

/* Lets each worker finish the task in hand, drops what is still queued (logged), stops the
 * workers and their gnuplots; sets *r to NULL. */
void aw_renderer_stop(struct aw_renderer **r);

/* ---- cached verdicts as the pages show them ---- */

struct aw_verdict_cell {
	const char *key;
	enum aw_verdict verdict;
	double base_p50, head_p50; /* NAN when absent */
};

/* A stored verdict (store_verdict_list()) read back from its JSON, its words through
 * aw_verdict_parse() (aw/verdict.h). */
struct aw_verdict_view {
	enum aw_verdict status;        /* pass, fail, incomplete or unknown */
	const char *baseline_ref;      /* may be NULL */
	long baseline_runs;            /* -1 when unknown */
	struct aw_verdict_cell *cells; /* the cells the JSON lists */
	size_t n_cells;
};

/* Parses `v` into *out with everything copied into `a`. Returns 0, -EINVAL (the JSON is not a
 * verdict) or the arena's error. */
int aw_verdict_view_parse(struct aw_arena *a, const struct store_verdict *v,
                          struct aw_verdict_view *out);

#endif
