/* The work after an upload (post-ingest): the commit's verdict on the host and the change points
 * of the host's series (analysis.h), then the commit's charts and the host's trends (draw.h),
 * each chart stored in the database. Each upload enqueues its task in the database in the
 * transaction that stores the run (store.h); that task caches the verdict and queues the
 * drawing as tasks of their own, which every waiting verdict's task goes before, so that a
 * flood of uploads is judged first and drawn after. A task survives a crash and any
 * collector's workers may take it: they wake at once for this collector's uploads, look for
 * those of other collectors every poll interval, take over a task whose claim outlived its
 * lease, and give up on one after a bounded number of attempts. Charts that a page asks for
 * (a compare pair nobody drew) wait in a bounded in-memory queue of this collector.
 *
 * Conventions: int functions return 0 or a negative errno; `char **err`, when given, receives
 * a malloc'd message the caller frees. */
#ifndef AW_COLLECTOR_POSTINGEST_H
#define AW_COLLECTOR_POSTINGEST_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis.h"
#include "chart_cache.h"
#include "draw.h"
#include "store.h"

/* The work after a new run of (project, commit, host, ref) was stored: the analysis (change
 * points and the cached verdict; skipped when d->analysis is NULL), then, when d->gp is set,
 * the charts of the commit on that host (aw_draw_commit()), which get the verdict in memory.
 * A store failure of the analysis is kept in d->store_rc (a worker tries the task again).
 * Returns 0 or the first failure, with *err. */
int aw_postingest_after_ingest(struct aw_draw *d, const char *project, const char *commit,
                               const char *host, const char *ref, char **err);

struct aw_postingest;

struct aw_postingest_opts {
	const char *data_dir;
	const char *gnuplot;     /* NULL: /usr/bin/gnuplot */
	unsigned timeout_ms;     /* most time one chart may take; 0: the reports default */
	unsigned workers;        /* threads, each with its own gnuplot when charts are on; >= 1 */
	bool charts;             /* false: verdicts and change points only, no gnuplot */
	unsigned queue_max;      /* charts asked for by pages, waiting at most; more are dropped */
	uint64_t lease_ms;       /* a claim older than this is taken over (its collector died) */
	uint64_t poll_ms;        /* how often idle workers look for other collectors' tasks */
	unsigned attempts;       /* claims of one task before it is given up */
	uint64_t trends_rest_ms; /* a host's trends drawn at most once in this; 0: after each
	                          * upload's verdict */
	const struct aw_analysis_opts *analysis; /* must outlive the workers */
	/* what a "retention" task thins (store_retention_run()); NULL: such a task is done
	 * without thinning (a collector that keeps every run). Must outlive the workers. */
	const struct store_retention *retention;
	struct aw_chart_cache *cache; /* where drawn charts are stored; must outlive the workers */
};

/* The kind of the task of a retention pass (store.h), which every collector with retention on
 * queues each retention.interval; a pass left unfinished at its budget queues itself again. */
#define AW_TASK_RETENTION "retention"

/* Starts the workers (a gnuplot that cannot start is logged, and its worker only runs the
 * analysis). Returns 0 with *out, or a negative errno with *err. */
int aw_postingest_start(struct store *store, const struct aw_postingest_opts *o,
                        struct aw_postingest **out, char **err);

/* This collector stored a run: its task is in the database; a worker looks for it now. Never
 * blocks. */
void aw_postingest_kick(struct aw_postingest *p);

/* Queues one chart (a compare page asking for a pair nobody drew). Never blocks on the
 * workers: a chart equal to one still waiting is merged with it. Strings are copied. Returns
 * 0, -EAGAIN (the queue is full: dropped, logged once), -ESHUTDOWN or -ENOMEM. */
int aw_postingest_push_chart(struct aw_postingest *p, const struct aw_chart_id *id);

/* What /metrics shows of the work after uploads. */
struct aw_postingest_gauges {
	uint64_t tasks;        /* tasks waiting or running (every collector's), and charts asked of
	                        * this one not drawn yet */
	uint64_t running;      /* tasks this collector's workers are running */
	uint64_t charts;       /* charts asked of this collector, waiting or in hand (in tasks) */
	uint64_t dead;         /* tasks that used up their attempts */
	uint64_t done, failed; /* tasks run by this process */
	uint64_t chart_cache_bytes, chart_cache_files;
};

/* The gauges of /metrics: tasks waiting or running in the database (any collector's), plus the
 * charts asked of this collector that are waiting or being drawn, and what `cache` holds. `p`
 * may be NULL (no workers here), `cache` NULL, and `c` NULL (the database's counts are left
 * out). */
void aw_postingest_gauges(struct aw_postingest *p, struct aw_chart_cache *cache,
                          struct store_conn *c, struct aw_postingest_gauges *g);

/* Lets each worker finish the task in hand and stops the workers and their gnuplots (tasks
 * still in the database wait there for the next worker, of any collector; charts still queued
 * are dropped, logged); sets *p to NULL. */
void aw_postingest_stop(struct aw_postingest **p);

#endif
