/* The collector's charts: each chart's data gathered from the store and drawn by the reports
 * library into the data dir, then stored in the database (chart_cache.h) so that every
 * collector serves it. The post-ingest workers (postingest.h) draw a commit's charts after each
 * upload; pages never draw: they only ask whether a chart exists (see pages.h).
 *
 * Conventions: int functions return 0 or a negative errno; `char **err`, when given, receives
 * a malloc'd message the caller frees. */
#ifndef AW_COLLECTOR_DRAW_H
#define AW_COLLECTOR_DRAW_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis.h"
#include "aw/arena.h"
#include "chart_cache.h"
#include "reports.h"
#include "store.h"

/* Most points (runs) on a trend chart: the newest ones of the host on the ref. */
#define AW_TREND_POINTS 100

/* The overview lists the commits of the newest AW_RECENT_RUNS runs (newest first, by their
 * newest run); each commit's compare chart against the one listed after it is drawn. */
#define AW_RECENT_RUNS 1000

/* A verdict just computed, handed to the charts of its commit in memory: the compare chart
 * against `baseline_ref` marks the cells it says regressed. */
struct aw_draw_verdict {
	const char *commit, *host, *baseline_ref;
	const struct aw_host_verdict *v;
};

/* What one drawing thread works with; everything is borrowed. */
struct aw_draw {
	struct store_conn *conn;
	struct aw_gnuplot *gp; /* NULL: nothing is drawn (the analysis still runs) */
	const char *data_dir;  /* charts go to <data_dir>/charts/... */
	const struct aw_analysis_opts *analysis;
	const char *project; /* NULL: runs of any project */
	unsigned flags;      /* AW_DRAW_FORCE or 0 */
	/* where each chart drawn is stored for every collector (its data_dir must be data_dir);
	 * NULL: the files stay in data_dir only (a static export) */
	struct aw_chart_cache *publish;
	const struct aw_draw_verdict *verdict; /* NULL: the cached verdicts of the store */
	/* counters, for logs and tests */
	unsigned drawn, cached, failed;
	int store_rc; /* the first failure to store a chart (worth another try), else 0 */
};

/* Draws the chart `id` from the stored data (a compare chart with its table, see
 * aw_chart_table_rel()) and counts the outcome in d (a compare chart's base is
 * a commit when runs of that commit exist on the host, else a ref whose newest earlier runs are the
 * baseline). Returns 0 (drawn), AW_DRAW_CACHED (unchanged), -ENOENT (no run to draw it from),
 * -ENOSYS (no gnuplot), or another negative errno with *err. */
int aw_draw_chart(struct aw_draw *d, const struct aw_chart_id *id, char **err);

/* Where a compare chart's table lives, relative to the data dir: <its path without
 * .svg>.cells.json, a file the chart routes never serve (read and written beneath the data
 * dir, never through a link: aw_read_beneath(), aw_write_beneath()). It
 * holds {"cells": [[key, base_p50, head_p50], ...]}: the medians the chart was drawn from for
 * every cell of the head and the base (null: none), what a page shows for cells the cached
 * verdict does not list. Returns 0, -EINVAL or -ENAMETOOLONG. */
int aw_chart_table_rel(const struct aw_chart_id *id, char *out, size_t size);

/* Whether chart `id` can be shown: its SVG and PNG are in the cache or the database; a compare
 * chart's table is brought into the cache when the database's differs (pages read it there).
 * `c` may be NULL (the cache only). */
bool aw_draw_chart_ready(struct aw_chart_cache *cache, struct store_conn *c,
                         const struct aw_chart_id *id);

/* Writes the database's copy of chart `id` (SVG, PNG and a compare chart's table) under `dir`.
 * Returns 0, -ENOENT when the database lacks one of them, or another negative errno with
 * *err. */
int aw_draw_fetch_chart(struct store_conn *c, const struct aw_chart_id *id, const char *dir,
                        char **err);

/* The trend charts of `host` on `ref`: one per op group of the host's newest run there.
 * Returns 0 or the first failure (every group is still tried), with *err. */
int aw_draw_trends(struct aw_draw *d, const char *host, const char *ref, char **err);

/* The agent's control cell's subject (agents/control.h): its trend is the group "control". */
#define AW_TREND_CONTROL_SUBJECT "atomwatch-control"

/* The op group a cell's trend is drawn in, which names the chart (its title and file), into
 * buf: on a host of `arch` "x86_64" (or "amd64") the x86-64 ops' groups ("x86": plain beside the
 * locked increments, "prefetch", "cas", "c11"), on any other (aarch64, or NULL: unknown) the
 * arm64 ones ("llsc": plain beside LL/SC, "lse", "prefetch", "cas", "c11"); for every arch
 * "reader-srcu", "control" for the agent's control cell, "subject-<name>", "kernel-percpu" for the
 * atomwatch module's this_cpu_* cells, "kernel" for refscale's, "other". Returns buf. */
const char *aw_cell_group(const char *arch, const char *op, const char *reader, const char *subject,
                          const char *kernel, char *buf, size_t size);

/* The name of the contention chart a contended cell belongs to ("stadd", "stadd-far",
 * "srcu-llsc"), into buf. Returns buf. */
const char *aw_cell_contention_name(const char *op, const char *reader, const char *placement,
                                    char *buf, size_t size);

/* The charts a stored run of a host of `arch` (aw_cell_group()) gives besides its commit's: the
 * names of its trend groups and of its contention charts (what pages list), copied into `a`.
 * Returns 0 or a store error. */
int aw_run_chart_names(struct store_conn *c, struct aw_arena *a, const char *arch, int64_t seq,
                       const char ***groups, size_t *n_groups, const char ***contention,
                       size_t *n_contention);

/* The charts of (project, commit, host) after a new run was stored: the compare chart
 * against the baseline ref (with d->verdict's marks when it is that commit's), per CPU and
 * contention, the commit's cross-host heat map and its compare chart against the commit listed
 * before it on the overview. The host's trend charts are not drawn here (aw_draw_trends(): the
 * workers queue them behind the commits' charts). Returns 0 or the first failure, with *err. */
int aw_draw_commit(struct aw_draw *d, const char *project, const char *commit, const char *host,
                   char **err);

/* The chart of A/B document `ab_id`: each cell's per-round change head/base - 1, the A/A
 * rounds beside the A/B ones, a line at each estimate (at most 32 cells). Returns 0, -ENOENT
 * (no such document), -ENOSYS (no gnuplot), or another negative errno with *err. */
int aw_draw_ab(struct aw_draw *d, const char *ab_id, char **err);

/* ---- cached verdicts as the pages show them ---- */

struct aw_verdict_cell {
	const char *key;
	enum aw_verdict verdict;
	enum aw_gate gate;
	double base_p50, head_p50; /* NAN when absent */
	bool absolute;             /* the p50 was judged in ns (at or through the resolution) */
	/* of the metric that gave the cell its verdict (aw_cell_verdict_deciding()): */
	const char *note;   /* the sentence behind it, or NULL */
	size_t n_levels;    /* the levels its history is split into (0 or 1: none) */
	const char *levels; /* with two or more, the line that tells them apart
	                       (aw_metric_verdict_levels_text()), else NULL */
};

/* A stored verdict (store_verdict_list()) read back from its JSON, its words through
 * aw_verdict_parse() (aw/verdict.h). */
struct aw_verdict_view {
	enum aw_verdict status;        /* a host status (pass, fail, inconclusive, unconfirmed,
	                                  incomplete) or unknown */
	const char *baseline_ref;      /* may be NULL */
	long baseline_runs;            /* -1 when unknown */
	struct aw_verdict_cell *cells; /* the cells the JSON lists */
	size_t n_cells;
	struct aw_page_disturbance disturbed; /* the most disturbed head run (run_id NULL: none) */
};

/* Parses `v` into *out with everything copied into `a`. Returns 0, -EINVAL (the JSON is not a
 * verdict) or the arena's error. */
int aw_verdict_view_parse(struct aw_arena *a, const struct store_verdict *v,
                          struct aw_verdict_view *out);

#endif
