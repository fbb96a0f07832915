/* The collector's storage: one interface, two backends (SQLite in WAL mode, PostgreSQL). The
 * statements and the mappings of rows to these structs are written once (rows.c) over a
 * small driver per backend (driver.h), the way redis' ae.c picks an event backend.
 * Everything the HTTP API, the reports and the regression detection read or write goes through
 * these functions.
 *
 * Conventions: int functions return 0 or a negative errno: -ENOENT (no such row), -EAGAIN (a
 * retryable conflict with a concurrent transaction: deadlock, serialization failure, unique
 * race; nothing was changed), -EBUSY (the database is locked or unreachable right now), -EIO (any
 * other database error, already logged where it happened), -ENOMEM, -EINVAL. A callback that
 * returns non-zero stops the iteration and its value is returned. Strings handed to callbacks
 * are valid only during the call.
 *
 * Threads: a struct store is shared by every thread; a struct store_conn is used by one thread
 * at a time (take one from the pool with store_acquire() or own one with store_connect()). */
#ifndef AW_COLLECTOR_STORE_H
#define AW_COLLECTOR_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aw/result.h"
#include "aw/sha256.h"
#include "aw/util.h"

enum store_kind {
	STORE_SQLITE,
	STORE_POSTGRES
};

/* A parsed database URL: "sqlite:PATH" or "postgres://..." / "postgresql://..." (handed to
 * libpq as a connection URI). */
struct store_url {
	enum store_kind kind;
	char *target; /* the path, or the whole URI for PostgreSQL; owned */
};

/* Parses `url` into *out (release with store_url_release()). Returns 0, or -EINVAL with *err
 * saying what is wrong, or -ENOMEM. */
int store_url_parse(const char *url, struct store_url *out, char **err);
void store_url_release(struct store_url *u);

struct store_options {
	unsigned pool_size;       /* most pooled connections (store_acquire), >= 1 */
	bool sqlite_sync_full;    /* SQLite synchronous=FULL (durable across power loss) or NORMAL
	                           * (durable across process crashes; see docs/benchmarks.md) */
	unsigned busy_timeout_ms; /* how long SQLite waits for a lock before -EBUSY */
	uint64_t sqlite_cache;    /* bytes of page cache each SQLite connection keeps (0: SQLite's
	                           * own default, 2000 KiB) */
};

#define STORE_OPTIONS_DEFAULT                                                      \
	{                                                                          \
		.pool_size = 4, .sqlite_sync_full = true, .busy_timeout_ms = 10000 \
	}

struct store;
struct store_conn;

/* Opens the database at `url` (no connection is made until one is needed, except that SQLite
 * creates the file). Returns 0 with *out set (free with store_close()), or a negative errno
 * with *err. */
int store_open(const char *url, const struct store_options *opt, struct store **out, char **err);

/* Closes every pooled connection and frees the store; sets *s to NULL. Connections taken with
 * store_acquire() must have been released, those of store_connect() disconnected. */
void store_close(struct store **s);

enum store_kind store_kind(const struct store *s);

/* Takes a connection from the pool, connecting when none is idle and the pool is not full,
 * waiting otherwise. Returns 0, or -EBUSY/-EIO when connecting fails (logged). */
int store_acquire(struct store *s, struct store_conn **out);

/* Returns a connection to the pool; sets *c to NULL. A connection whose link broke is closed
 * instead. */
void store_release(struct store *s, struct store_conn **c);

/* A connection of the caller's own, outside the pool (writer and background threads).
 * Returns 0 or a negative errno with *err. */
int store_connect(struct store *s, struct store_conn **out, char **err);
void store_disconnect(struct store_conn **c);

/* Database errors seen by this process (for /metrics). */
uint64_t store_errors_total(void);

/* Disk full: the times a statement failed with the database's storage full (-ENOSPC: SQLite's
 * SQLITE_FULL, PostgreSQL's 53100), for /metrics; and whether the latest write failed so,
 * none having succeeded since (for /healthz). store_note_write_ok() is called by whoever
 * commits writes (the ingest writers). */
uint64_t store_disk_full_total(void);
bool store_disk_full_now(void);
void store_note_write_ok(void);

/* ---- schema ---- */

/* Applies every migration newer than the database's version, each in its own transaction, and
 * records it in schema_migrations. A migration that rewrites many rows (8: every run's
 * order_us) does it first in passes of a few thousand rows, each committed by itself, and is
 * recorded only once its script ran after the last pass: a process killed half-way leaves the
 * version where it was, and the next call goes on with the rows still to do. Several processes
 * may call this at once. Sets *from and *to (either may be NULL) to the version before and
 * after. Returns 0 or a negative errno with *err. */
int store_migrate(struct store_conn *c, int *from, int *to, char **err);

/* The newest schema version this build knows. */
int store_schema_version(void);

/* A cheap round trip proving the connection works. */
int store_ping(struct store_conn *c);

/* For tests of the query plans: while a hook is set on `c`, each statement is explained before
 * it runs, with the parameters it runs with (SQLite: EXPLAIN QUERY PLAN, one line per row of
 * it; PostgreSQL: EXPLAIN), and `cb` gets what the statement does (its `what`, e.g. "read a
 * ref's history"), its text and the plan, valid during the call. A plan that cannot be had is
 * handed over as NULL. It costs a statement more each time: never in service. NULL clears
 * it. */
typedef void (*store_plan_cb)(const char *what, const char *sql, const char *plan, void *cls);
void store_set_plan_hook(struct store_conn *c, store_plan_cb cb, void *cls);

/* ---- ingest ---- */

enum store_outcome {
	STORE_CREATED,   /* a new run */
	STORE_DUPLICATE, /* this run_id is stored with the same content: nothing changed */
	STORE_CONFLICT,  /* this run_id is stored with different content: nothing changed */
};

struct store_put {
	/* in */
	const struct aw_result *result;           /* validated by aw_result_from_json() */
	char content_hash[AW_SHA256_HEX_LEN + 1]; /* of the canonical document */
	char host_hash[AW_SHA256_HEX_LEN + 1];    /* of the canonical host object */
	const char *host_json;                    /* the canonical host object */
	char received_at[AW_TIME_LEN];
	/* out */
	enum store_outcome outcome;
	int64_t seq; /* the stored run's sequence (also for a duplicate or conflict) */
};

/* Stores the runs of `items` in ONE transaction: all of them or none. Sets each item's outcome.
 * Returns 0 once committed; -EAGAIN when a concurrent transaction got in the way (rolled back,
 * retry); another negative errno otherwise (rolled back). */
int store_put_runs(struct store_conn *c, struct store_put *items, size_t n);

/* ---- runs ---- */

/* One run as listed: the document's header without its cells, plus the collector's own
 * columns. Strings may be NULL where the document had none (commit, commit_time,
 * matrix_profile). */
struct store_run {
	int64_t seq; /* monotonically increasing: cursors and "newest first" */
	const char *run_id, *project, *host, *commit, *ref, *commit_time, *trigger;
	const char *started_at, *finished_at, *received_at;
	const char *matrix_name, *matrix_hash, *matrix_profile;
	int64_t matrix_version;
	int64_t n_cells;
	int64_t order_us; /* the commit's position on its ref: commit_time, else the first run's
	                   * started_at; the run's own started_at when it has no commit */
	const char *platform_hash;   /* of the host fingerprint this run was measured with */
	const char *confirmation_of; /* the run whose suspects this one re-measures, or NULL */
	int64_t confirm;             /* confirmation runs its agent measures itself; 0: none */
	bool has_reference; /* the run has reference series (store_run_reference() reads them:
	                       12 KB packed for 300 cells, which no listing carries) */
};

typedef int (*store_run_cb)(const struct store_run *run, void *cls);

/* Filters of store_list_runs(); NULL or 0 means "any". */
struct store_run_filter {
	const char *project, *host, *commit, *ref;
	int64_t before_seq; /* only runs with seq < before_seq (the cursor) */
	unsigned limit;     /* 1..10000 */
};

/* The reference series stored with run `seq`, packed (aw/refblob.h; a run stored before schema
 * 11 has its JSON text packed on the way), into *packed and *len (the caller frees it; NULL when
 * it has none). Returns 0, -ENOENT (no such run) or another negative errno. */
int store_run_reference(struct store_conn *c, int64_t seq, uint8_t **packed, size_t *len);

/* The generation of the store c is a connection to: unique in the process (two stores open on
 * one database have two), so that what is kept of a run by its sequence is kept per store. */
uint64_t store_conn_generation(const struct store_conn *c);

/* Lists runs newest first (seq descending). With project+commit (and optionally host) it is
 * "every run of a commit (per host)". */
int store_list_runs(struct store_conn *c, const struct store_run_filter *f, store_run_cb cb,
                    void *cls);

/* The last `limit` runs of `host` on `ref` (of `project`, when not NULL) that come strictly
 * before the position (before_order_us, before_seq) in commit order, newest first: the baseline
 * window of regression detection. Pass INT64_MAX for both to get the newest runs. */
int store_ref_history(struct store_conn *c, const char *project, const char *host, const char *ref,
                      int64_t before_order_us, int64_t before_seq, unsigned limit, store_run_cb cb,
                      void *cls);

/* The sequence of the newest run (the last stored) of `host` on `ref` (of `project`, when not
 * NULL) into *seq, 0 when there is none. Returns 0 or a negative errno. */
int store_ref_newest_seq(struct store_conn *c, const char *project, const char *host,
                         const char *ref, int64_t *seq);

/* The whole stored run `run_id`, rebuilt from the normalised tables: a document that
 * validates again with aw_result_from_json(). Returns 0 with *out (caller frees), -ENOENT,
 * or another negative errno. */
int store_get_run(struct store_conn *c, const char *run_id, struct aw_result **out);

/* Calls `cb` for each cell of the run with sequence `seq`, in document order. */
typedef int (*store_cell_cb)(const struct aw_cell *cell, void *cls);
int store_run_cells(struct store_conn *c, int64_t seq, store_cell_cb cb, void *cls);

/* As store_run_cells(), the cells of one subject only (the control's, of ten runs): the cells
 * table searched for the subject, the run's measurements of those cells found by their primary
 * key, rather than every measurement of the run read. */
int store_run_subject_cells(struct store_conn *c, int64_t seq, const char *subject,
                            store_cell_cb cb, void *cls);

/* The cells described so far by the store_run_values() calls given it. Returns NULL when out
 * of memory; store_cell_book_free() frees it and NULLs the pointer. */
struct store_cell_book;
struct store_cell_book *store_cell_book_new(void);
void store_cell_book_free(struct store_cell_book **b);

/* As store_run_cells(), for a reader of many runs (a verdict's history): each cell with its
 * description (key, op, reader, subject, kernel, placement, cpu, contender_cpu, c, d; read
 * once per book, which keeps them), status, p50, p99, ci_lo, ci_hi and reason; n and batch 0,
 * the other values NAN. The cell is the callback's for the call only. Returns 0, cb's non-zero
 * return, or a negative errno. */
int store_run_values(struct store_conn *c, struct store_cell_book *b, int64_t seq, store_cell_cb cb,
                     void *cls);

/* The process's kept run values (store_run_values() keeps each run it read, for every store
 * and thread): the reads that found the run kept, those that did not, and the bytes kept. */
void store_valcache_counts(uint64_t *hits, uint64_t *misses, size_t *bytes);

/* ---- trends ---- */

enum store_metric {
	STORE_METRIC_MIN,
	STORE_METRIC_P50,
	STORE_METRIC_P95,
	STORE_METRIC_P99,
	STORE_METRIC_MAX,
	STORE_METRIC_MEAN,
	STORE_METRIC_STDDEV,
	STORE_METRIC_CI_LO,
	STORE_METRIC_CI_HI,
	STORE_METRIC_BASELINE,
	STORE_METRIC_COUNT
};

/* "p50" -> STORE_METRIC_P50. Returns 0 or -EINVAL. */
int store_metric_parse(const char *name, enum store_metric *out);
const char *store_metric_name(enum store_metric m);

struct store_series_query {
	const char *host, *ref, *cell_key; /* required */
	const char *project;               /* NULL: any */
	enum store_metric metric;
	unsigned limit; /* the newest `limit` points, 1..10000 */
};

struct store_point {
	int64_t seq;
	const char *run_id, *commit, *started_at, *matrix_hash, *status;
	int64_t order_us;
	double value; /* NAN when the cell had none (skipped, failed, not measured) */
};

typedef int (*store_point_cb)(const struct store_point *p, void *cls);

/* The series of one cell and metric for a host on a ref in commit order (oldest first; runs
 * of one commit in the order they were stored). */
int store_series(struct store_conn *c, const struct store_series_query *q, store_point_cb cb,
                 void *cls);

/* The p50 of one cell per day or week (UTC; a week starts on Monday). */
enum store_period {
	STORE_PERIOD_DAY,
	STORE_PERIOD_WEEK
};

struct store_aggregate {
	int64_t start_us;        /* the period's first microsecond */
	int64_t count;           /* runs with a p50 of the cell in the period */
	int64_t stored;          /* of them, those retention thinned (their aggregate is stored) */
	double min, median, max; /* of their p50s */
};

typedef int (*store_aggregate_cb)(const struct store_aggregate *a, void *cls);

/* The series of one cell's p50 for a host on a ref per period, by the runs' started_at, oldest
 * period first: the aggregates retention stored of the runs it thinned, and the runs still kept
 * grouped the same way, so that the whole history is there however old. q->limit: the newest
 * `limit` periods; q->metric must be STORE_METRIC_P50 (-EINVAL otherwise: retention keeps the
 * p50s only). A period of thinned and of kept runs (a week part of which retention kept, or a
 * late upload of an old run) has the count, min and max of both and the count-weighted mean of
 * their medians. It reads every kept run of the host's ref: as many as retention keeps, or the
 * whole history without it. For trend charts over long ranges. */
int store_series_periods(struct store_conn *c, const struct store_series_query *q,
                         enum store_period period, store_aggregate_cb cb, void *cls);

/* ---- retention: raw runs for a while, aggregates forever ---- */

struct store_retention {
	unsigned raw_days;  /* every run is kept at least this many days (by its started_at) */
	unsigned keep_runs; /* and, however old, the newest this many of each host and ref (in
	                     * commit order: the verdicts' baseline and the trend windows) */
};

struct store_retention_stats {
	int64_t runs;       /* runs thinned: folded into the aggregates, then deleted */
	int64_t aggregates; /* aggregate rows written (new, or merged into one stored before) */
	int64_t weeks;      /* (host, ref, week)s that had runs to thin, a transaction each */
	bool more;          /* the budget ran out before the pass was done */
};

/* One pass of retention at time `now_us`: for each host and ref, the runs that started before
 * the week (Monday, UTC) holding now - raw_days, except the newest keep_runs, a week of them in
 * one transaction: their p50s folded into the daily and weekly aggregates of each cell (count,
 * min, median, max: store_series_periods()), then they and their measurements deleted. Change
 * points, verdicts, commits and fingerprints stay; so do run ids named elsewhere (jobs, change
 * points), now of thinned runs. Stops, with out->more set, once `budget_us` of work is done
 * (after one transaction at least).
 * Returns 0, -EINVAL when raw_days is 0, or a negative errno (the week in hand rolled back,
 * those before it committed). */
int store_retention_run(struct store_conn *c, const struct store_retention *r, int64_t now_us,
                        int64_t budget_us, struct store_retention_stats *out);

/* ---- hosts ---- */

struct store_host {
	const char *name, *arch, *cpu_model, *platform_hash, *first_seen, *last_seen;
	const char *fingerprint; /* the latest host object, canonical JSON */
	int64_t runs;
};

struct store_fingerprint {
	const char *hash, *platform_hash, *first_seen, *last_seen;
	const char *doc; /* canonical JSON */
};

typedef int (*store_host_cb)(const struct store_host *h, void *cls);
typedef int (*store_fingerprint_cb)(const struct store_fingerprint *f, void *cls);

/* Every host, by name. */
int store_list_hosts(struct store_conn *c, store_host_cb cb, void *cls);

/* One host and its fingerprint history (oldest first). Returns -ENOENT for an unknown name.
 * `fcb` may be NULL. */
int store_get_host(struct store_conn *c, const char *name, store_host_cb cb,
                   store_fingerprint_cb fcb, void *cls);

/* ---- tokens ---- */

enum store_role {
	STORE_ROLE_AGENT,
	STORE_ROLE_CI,
	STORE_ROLE_ADMIN
};

const char *store_role_name(enum store_role r);
int store_role_parse(const char *s, enum store_role *out);

struct store_token {
	int64_t id;
	enum store_role role;
	const char *host;                                   /* agent tokens only */
	const char *hash;                                   /* hex SHA-256 of the secret */
	const char *created_at, *revoked_at, *last_used_at; /* NULL when never */
};

typedef int (*store_token_cb)(const struct store_token *t, void *cls);

/* Records a token by the hash of its secret; *id receives its id. */
int store_token_create(struct store_conn *c, enum store_role role, const char *host,
                       const char *hash, int64_t *id);

/* Calls `cb` once for the token whose hash is `hash`; -ENOENT when there is none. */
int store_token_find(struct store_conn *c, const char *hash, store_token_cb cb, void *cls);

/* Every token, by id. */
int store_token_list(struct store_conn *c, store_token_cb cb, void *cls);

/* Marks token `id` revoked. -ENOENT when there is no such token (revoking twice is fine). */
int store_token_revoke(struct store_conn *c, int64_t id);

/* Sets last_used_at of token `id` (the collector batches these off the request path). */
int store_token_touch(struct store_conn *c, int64_t id, const char *when);

/* ---- jobs ---- */

struct store_job_spec {
	const char *project, *commit, *ref;
	const char *subject;      /* NULL: none */
	const char *ab_base;      /* an A/B job of subject from this base commit to commit; NULL: a
	                           * run */
	const char *const *hosts; /* NULL: every host; else n_hosts names */
	size_t n_hosts;
	int64_t created_by; /* token id, 0 when unknown */
	int64_t ttl_us;     /* hosts may claim it until created + ttl */
	/* a confirmation job: its JSON {"of", "cells", "runs", "samples"} and the run it
	 * confirms; both NULL for an ordinary job */
	const char *confirm, *confirmation_of;
};

struct store_job {
	int64_t id;
	const char *project, *commit, *ref, *subject; /* subject may be NULL */
	const char *ab_base;                          /* NULL: a run; else an A/B job's base */
	bool all_hosts;
	const char *created_at, *expires_at;
	const char *confirm; /* a confirmation job's JSON, or NULL */
	const char *bisect;  /* a bisection's job: {"id", "good", "bad", "subject", "cells"} */
};

/* A host's progress on a job: state "pending" (named by the job, not claimed yet; claimed_at
 * and updated_at NULL), "claimed", "running", "done" or "failed". */
struct store_job_host {
	const char *host, *state, *run_id, *message; /* run_id, message may be NULL */
	const char *claimed_at, *updated_at;
};

typedef int (*store_job_cb)(const struct store_job *j, void *cls);
typedef int (*store_job_host_cb)(const struct store_job_host *h, void *cls);

/* Queues a job; *id receives its id. */
int store_job_create(struct store_conn *c, const struct store_job_spec *spec, int64_t *id);

/* Claims, for `host`, the oldest unexpired job that targets it and that it has not claimed
 * yet (or claimed more than `reclaim_us` ago without reporting a state: the reply was lost).
 * Calls `cb` with the job and returns 0, or returns -ENOENT when there is nothing to do. Each
 * host claims a job once, even with several collectors on one database. */
int store_job_claim(struct store_conn *c, const char *host, int64_t reclaim_us, store_job_cb cb,
                    void *cls);

/* Notes that `host` polled for jobs now (it is a daemon host). */
int store_job_polled(struct store_conn *c, const char *host);

/* Whether `host` polled for jobs within the last `max_age_us` (a daemon host). */
int store_job_polls(struct store_conn *c, const char *host, int64_t max_age_us, bool *polls);

/* The confirmation jobs of run `run_id` (store_job_spec.confirmation_of) for `host`: how many,
 * the re-measurements they asked for in all (their "confirm" object's "runs") and how many have
 * not ended there (neither done nor failed, nor expired). */
struct store_confirm_jobs {
	size_t jobs, open;
	uint64_t asked;
};
int store_job_confirmations(struct store_conn *c, const char *run_id, const char *host,
                            struct store_confirm_jobs *out);

/* Forgets `host`'s claim of job `id` (its reply never reached the agent). */
int store_job_unclaim(struct store_conn *c, int64_t id, const char *host);

/* Sets `host`'s state of job `id`: "running", "done" or "failed"; run_id and message may be
 * NULL. Returns -ENOENT when the host has not claimed that job, -EPERM when the job is already
 * done or failed for that host with another state. */
int store_job_set_state(struct store_conn *c, int64_t id, const char *host, const char *state,
                        const char *run_id, const char *message);

/* One job and its per-host states; -ENOENT when unknown. `hcb` may be NULL. */
int store_job_get(struct store_conn *c, int64_t id, store_job_cb cb, store_job_host_cb hcb,
                  void *cls);

/* The newest jobs, newest first. */
int store_job_list(struct store_conn *c, unsigned limit, store_job_cb cb, void *cls);

/* ---- analysis (change points and cached verdicts; see analysis.h) ---- */

struct store_changepoint {
	const char *project, *host, *ref;
	const char *cell_key;
	const char *metric;   /* "p50" or "p99" */
	const char *commit;   /* the first commit of the new segment */
	const char *run_id;   /* its run */
	int64_t order_us;     /* its position on the ref */
	double before, after; /* segment means around the change */
	double pvalue;
	const char *computed_at;
};

typedef int (*store_changepoint_cb)(const struct store_changepoint *cp, void *cls);

/* Replaces every change point of (project, host, ref) with `items` (their project, host and
 * ref fields are ignored) in one transaction. */
int store_changepoints_replace(struct store_conn *c, const char *project, const char *host,
                               const char *ref, const struct store_changepoint *items, size_t n);

/* The change points of `host` on `ref`, oldest first; project and cell_key may be NULL (any). */
int store_changepoints_list(struct store_conn *c, const char *project, const char *host,
                            const char *ref, const char *cell_key, store_changepoint_cb cb,
                            void *cls);

/* A commit's verdict on one host as computed after ingest (analysis.h): the gate status
 * ("pass", "fail", "incomplete") and the JSON of aw_host_verdict_json(). */
struct store_verdict {
	const char *project, *commit, *host, *baseline_ref;
	const char *status;
	const char *json;
	const char *computed_at;
	int64_t order_us; /* the commit's position on its ref, for "latest" */
};

typedef int (*store_verdict_cb)(const struct store_verdict *v, void *cls);

/* Stores the verdict of (project, commit, host), replacing an earlier one. */
int store_verdict_put(struct store_conn *c, const struct store_verdict *v);

/* Cached verdicts, newest commit first; project, commit and host may be NULL (any); limit
 * 1..10000. */
int store_verdict_list(struct store_conn *c, const char *project, const char *commit,
                       const char *host, unsigned limit, store_verdict_cb cb, void *cls);

/* The same rows without their JSON and computation time (v->json and v->computed_at are
 * NULL): for pages that show statuses only, at a cost that does not grow with the size of
 * each verdict. */
int store_verdict_statuses(struct store_conn *c, const char *project, const char *commit,
                           const char *host, unsigned limit, store_verdict_cb cb, void *cls);

/* ---- post-ingest tasks: the durable queue of the work after an upload ----
 *
 * store_put_runs() enqueues, in the transaction that stores the runs, one task of kind "run"
 * per (project, commit, host, ref) it created a run for. A task that is waiting (not claimed)
 * and equal to a new one is merged with it; one that is claimed gets its generation bumped, so
 * that the worker's store_task_done() leaves it queued for another pass. Any collector on the
 * database may claim a task: PostgreSQL with FOR UPDATE SKIP LOCKED, SQLite in one
 * transaction. A claim older than the lease is taken over (its collector died). */

struct store_task {
	int64_t id;
	const char *kind; /* "run" (verdict, change points, the commit's charts), "trends", "ab"
	                   * or "retention" */
	/* commit is NULL for runs without one */
	const char *project, *commit, *host, *ref;
	int64_t generation; /* hand it back to store_task_done() */
	int attempts;       /* claims so far, this one included */
	const char *enqueued_at;
};

typedef int (*store_task_cb)(const struct store_task *t, void *cls);

/* Queues a task outside an upload (e.g. "charts" and "trends" after a "run", "ab" for an A/B
 * document's chart, its ab_id as the ref, "retention" for a pass of store_retention_run(), every
 * other field ""); merged as above. -EINVAL for a kind other than "run", "charts", "trends",
 * "ab" or "retention". */
int store_task_enqueue(struct store_conn *c, const char *kind, const char *project,
                       const char *commit, const char *host, const char *ref);

/* Claims for `owner` (a collector instance's id) the oldest task that is unclaimed, or whose
 * claim is older than `lease_us`, and that has been claimed fewer than `max_attempts` times;
 * tasks of kind "run" before any "trends". Calls `cb` with it and returns 0, or returns -ENOENT
 * when there is nothing to do, -EINVAL for a negative lease or max_attempts < 1. One task is
 * claimed by one owner at a time. */
int store_task_claim(struct store_conn *c, const char *owner, int64_t lease_us, int max_attempts,
                     store_task_cb cb, void *cls);

/* store_task_claim() at the time `now_us` (microseconds since the epoch, as the store's clock
 * counts) instead of the clock's: the claim is made at, and other claims' ages are measured
 * from, that time. For tests of the lease, which must not wait for one to pass. -EINVAL also
 * for a negative now_us. */
int store_task_claim_at(struct store_conn *c, const char *owner, int64_t now_us, int64_t lease_us,
                        int max_attempts, store_task_cb cb, void *cls);

/* The task is done: deletes it when its generation is still `generation`, else releases the
 * claim (it was enqueued again meanwhile). -ENOENT when there is no such task. */
int store_task_done(struct store_conn *c, int64_t id, int64_t generation);

/* store_task_done() of a task that then rests until `until_us` (the store's clock, microseconds
 * since the epoch): it stays, idle, and an equal task enqueued before then merges with it and
 * is claimed no sooner (one enqueued while it ran waits the same). A host's trends are drawn at
 * most once per rest this way, however many uploads ask. until_us <= 0: store_task_done(). */
int store_task_done_rest(struct store_conn *c, int64_t id, int64_t generation, int64_t until_us);

/* The task failed: releases the claim and keeps `message` (may be NULL) as its last error;
 * it is retried until max_attempts claims were made. -ENOENT when there is no such task. */
int store_task_fail(struct store_conn *c, int64_t id, const char *message);

/* Tasks waiting, resting with something asked of them, or claimed (*pending), and those that
 * used up their attempts (*dead). Either pointer may be NULL. */
int store_task_count(struct store_conn *c, int64_t *pending, int64_t *dead);

/* ---- charts: the drawn files, where every collector reads them ---- */

struct store_chart {
	const char *path;         /* relative to the data dir: "charts/commits/<sha>/..." */
	const char *content_type; /* "image/svg+xml", "image/png", "application/json" */
	const char *hash;         /* hex SHA-256 of the data it was drawn from */
	const void *data;
	size_t len;
	const char *updated_at;
};

typedef int (*store_chart_cb)(const struct store_chart *ch, void *cls);

/* Stores (or replaces) the chart at ch->path; updated_at is set by the store. -EINVAL when
 * the path, content type or hash is NULL, or data is NULL with len > 0. */
int store_chart_put(struct store_conn *c, const struct store_chart *ch);

/* Calls `cb` with the chart at `path` (data included); -ENOENT when there is none. */
int store_chart_get(struct store_conn *c, const char *path, store_chart_cb cb, void *cls);

/* The chart at `path` without its data (ch->data NULL, ch->len its size); -ENOENT when none. */
int store_chart_stat(struct store_conn *c, const char *path, store_chart_cb cb, void *cls);

/* ---- interleaved A/B documents (aw/ab.h) ---- */

/* One stored A/B document: the columns it is found by, the collector's judgment (JSON of
 * aw_ab_judge()) and the document as uploaded (canonical JSON; NULL in lists). */
struct store_ab {
	int64_t seq;
	const char *ab_id, *project, *host, *subject, *base, *head, *ref; /* ref may be NULL */
	bool aa;
	const char *verdict; /* the document's verdict */
	char content_hash[AW_SHA256_HEX_LEN + 1];
	const char *received_at;
	const char *judgment, *doc;
	enum store_outcome outcome; /* out of store_ab_put() */
};

typedef int (*store_ab_cb)(const struct store_ab *ab, void *cls);

/* Stores an A/B document in one transaction unless its ab_id is stored already: sets
 * ab->outcome (CREATED, DUPLICATE for the same content hash, CONFLICT otherwise) and ab->seq.
 * Returns 0, -EAGAIN on a concurrent insert of the same id (retry), or another negative
 * errno. */
int store_ab_put(struct store_conn *c, struct store_ab *ab);

/* Calls `cb` with the document `ab_id` (doc and judgment set); -ENOENT when unknown. */
int store_ab_get(struct store_conn *c, const char *ab_id, store_ab_cb cb, void *cls);

/* The newest A/B documents first (doc NULL), filtered by project, head commit and host (each
 * NULL: any); limit 1..10000. */
int store_ab_list(struct store_conn *c, const char *project, const char *head, const char *host,
                  unsigned limit, store_ab_cb cb, void *cls);

/* ---- bisections (collector/store/bisects.c): one per finding, its job, its progress ---- */

/* A finding to bisect: a regression of `project` on the platform `platform_hash` between the
 * measured commits `good` and `bad` of `ref`, for `subject` ("" when the agent's step command
 * measures it), seen on `host`; its job goes to `runner` (a daemon host of that platform with
 * the subject). */
struct store_bisect_spec {
	const char *project, *platform_hash, *subject, *ref, *good, *bad;
	const char *host, *runner;
	const char *cells;  /* JSON array of the finding's cell keys */
	const char *reason; /* "verdict" or "changepoint" */
	int64_t ttl_us;     /* its job may be claimed until created + ttl */
};

struct store_bisect {
	int64_t id, job_id; /* job_id AW_NONE when none */
	const char *project, *platform_hash, *subject, *ref, *good, *bad, *host, *runner;
	const char *cells, *reason;
	const char *state; /* queued, running, done, failed, cancelled */
	int64_t steps_done, expected_steps, range_commits; /* AW_NONE: not known yet */
	const char *range_good, *range_bad, *culprit, *cell, *outcome, *message;
	const char *commits, *answer;        /* may be NULL */
	double change, change_lo, change_hi; /* NAN: none */
	const char *created_at, *updated_at;
};

typedef int (*store_bisect_cb)(const struct store_bisect *b, void *cls);

/* Queues the bisection of a finding and its job (for spec->runner alone, carrying
 * {"id", "good", "bad", "subject", "cells"} as its "bisect"), in one transaction, unless one
 * of the same finding (project, platform, subject, good, bad) exists: then *created is false
 * and *id is that one's. Returns 0, -EAGAIN (a concurrent one won: retry), or a store error. */
int store_bisect_create(struct store_conn *c, const struct store_bisect_spec *spec, int64_t *id,
                        bool *created);

/* What an agent reports of a bisection it runs. */
struct store_bisect_update {
	const char *state;                                 /* running, done or failed */
	int64_t steps_done, expected_steps, range_commits; /* AW_NONE: unchanged */
	const char *range_good, *range_bad, *culprit, *cell, *outcome, *message;
	const char *commits, *answer;        /* may be NULL: unchanged */
	double change, change_lo, change_hi; /* NAN: unchanged */
};

/* Records the progress of bisection `id` run by host `runner` (NULL: any, an admin). Returns 0,
 * -ENOENT (no such bisection, or another host's), -ECANCELED (it was cancelled: nothing
 * changed, the agent stops), -EPERM (it is done or failed already), or a store error. */
int store_bisect_update(struct store_conn *c, int64_t id, const char *runner,
                        const struct store_bisect_update *u);

/* Cancels bisection `id` (queued or running): its job can no longer be claimed, and the agent
 * running it stops at its next report, before that step's runs are uploaded. -ENOENT
 * unknown, -EPERM finished already. */
int store_bisect_cancel(struct store_conn *c, int64_t id);

/* Calls `cb` with bisection `id`; -ENOENT when unknown. */
int store_bisect_get(struct store_conn *c, int64_t id, store_bisect_cb cb, void *cls);

struct store_bisect_filter {
	const char *project, *host, *state; /* host: the finding's or the runner; NULL: any */
	const char *commit;                 /* its good, bad or culprit; NULL: any */
	unsigned limit;                     /* 1..10000 */
};

/* Bisections newest first. */
int store_bisect_list(struct store_conn *c, const struct store_bisect_filter *f, store_bisect_cb cb,
                      void *cls);

/* Whether a bisection of `project` on `platform` (queued, running or done) already answers the
 * finding from `good` to `bad`: it bisects to `bad` too, its culprit is `bad`, or it measured
 * both commits (a finding between the commits one bisection measured lies inside its range). */
int store_bisect_covered(struct store_conn *c, const char *project, const char *platform,
                         const char *good, const char *bad, bool *covered);

/* Notes the subjects (comma-separated, may be "") and the step command's subject name (NULL:
 * none) a daemon host reported with its poll: what bisections it can run. */
int store_host_subjects_set(struct store_conn *c, const char *host, const char *subjects,
                            const char *step);

/* A daemon host as a bisection's runner is chosen from. */
struct store_daemon_host {
	const char *host, *platform_hash; /* platform_hash may be NULL */
	const char *subjects, *step;      /* NULL: it reported none (an agent from before) */
	int64_t polled_us;
};

typedef int (*store_daemon_host_cb)(const struct store_daemon_host *h, void *cls);

/* The hosts that polled for jobs within `max_age_us`, by name. */
int store_daemon_hosts(struct store_conn *c, int64_t max_age_us, store_daemon_host_cb cb,
                       void *cls);

/* The host object (canonical JSON) run `run_id` was measured with; -ENOENT when unknown. The
 * string is valid during the call of `cb`. */
int store_run_fingerprint(struct store_conn *c, const char *run_id,
                          int (*cb)(const char *doc, void *cls), void *cls);

#endif
