/* The row layer's shared part, for the files of collector/store/ only: a statement's definition
 * (its text for both dialects, beside the code that binds it in its entity's file: ingest.c,
 * runs.c, jobs.c, tasks.c, cache.c, auth.c, ab.c, bisects.c), the per-connection cache of prepared
 * statements, and the small helpers that bind, step and read through the driver (driver.h).
 * Conventions are the driver's: 0 or a negative errno, logged once where it happens. */
#ifndef AW_COLLECTOR_STORE_ROWS_H
#define AW_COLLECTOR_STORE_ROWS_H

#include <math.h>
#include <stdint.h>

#include "driver.h"

/* The sizes of the multi-row statements a run's cells and measurements are written with: each
 * multi-row statement holds N_CHUNKS prepared statements, one of each size. */
#define N_CHUNKS 5
extern const int chunk_rows[N_CHUNKS];

/* Each statement's slot in the connection's cache (struct store_conn.stmt). */
enum stmt_id {
	S_VERSION,
	S_MIGRATED,
	S_PING,
	S_PROJECT_FIND,
	S_PROJECT_ADD,
	S_RUN_FIND,
	S_HOST_UPSERT,
	S_FP_UPSERT,
	S_HOST_SET_FP,
	S_COMMIT_UPSERT,
	S_RUN_ADD,
	S_CELLS_ADD,                         /* N_CHUNKS statements, by chunk_rows */
	S_MEAS_ADD = S_CELLS_ADD + N_CHUNKS, /* likewise */
	S_RUN_GET = S_MEAS_ADD + N_CHUNKS,
	S_RUN_CELLS,
	S_RUN_VALUES,
	S_RUN_REFERENCE,
	S_RUN_SUBJECT_CELLS,
	S_RUN_BOOK,
	S_COMMIT_REORDER,
	S_REF_HISTORY,                       /* a filtered_def of 1 filter: 2 slots */
	S_REF_NEWEST = S_REF_HISTORY + 2,    /* likewise */
	S_RUN_LIST = S_REF_NEWEST + 2,       /* 4 filters: 16 slots */
	S_RUN_LIST_COMMIT = S_RUN_LIST + 16, /* 2 filters: 4 slots */
	S_SERIES = S_RUN_LIST_COMMIT + 4,    /* 1 filter */
	S_AGGREGATES = S_SERIES + 2,         /* 1 filter */
	S_HOSTS = S_AGGREGATES + 2,
	S_HOST_GET,
	S_FPS,
	S_TOKEN_ADD,
	S_TOKEN_FIND,
	S_TOKEN_LIST,
	S_TOKEN_REVOKE,
	S_TOKEN_TOUCH,
	S_JOB_ADD,
	S_JOB_TARGET_ADD,
	S_JOB_CANDIDATE,
	S_JOB_CLAIM,
	S_JOB_UNCLAIM,
	S_JOB_STATE_SET,
	S_JOB_STATE_GET,
	S_JOB_GET,
	S_JOB_HOSTS,
	S_JOB_LIST,
	S_JOB_POLLED_SET,
	S_JOB_POLLED_GET,
	S_JOB_CONFIRM_FIND,
	S_CP_LOCK,
	S_CP_DELETE,
	S_CP_ADD,
	S_CP_LIST, /* 2 filters: 4 slots */
	S_VERDICT_PUT = S_CP_LIST + 4,
	S_VERDICT_LIST,                          /* 3 filters: 8 slots */
	S_VERDICT_STATUSES = S_VERDICT_LIST + 8, /* likewise */
	S_RETENTION_PAIRS = S_VERDICT_STATUSES + 8,
	S_RETENTION_BOUND,
	S_RETENTION_OLDEST,
	S_RETENTION_RUNS,
	S_RETENTION_VALUES,
	S_RETENTION_AGG_PUT,
	S_RETENTION_DROP_MEAS,
	S_RETENTION_DROP_RUN,
	S_TASK_ENQUEUE,
	S_TASK_CLAIM,
	S_TASK_DELETE,
	S_TASK_RELEASE,
	S_TASK_FAIL,
	S_TASK_REST,
	S_TASK_COUNT,
	S_CHART_PUT,
	S_CHART_GET,
	S_CHART_STAT,
	S_AB_FIND,
	S_AB_ADD,
	S_AB_GET,
	S_BISECT_ADD,
	S_BISECT_FIND,
	S_BISECT_JOB_ADD,
	S_BISECT_JOB_TARGET,
	S_BISECT_SET_JOB,
	S_BISECT_UPDATE,
	S_BISECT_STATE,
	S_BISECT_CANCEL,
	S_BISECT_CANCEL_JOB,
	S_BISECT_GET,
	S_BISECT_COVERED,
	S_HOST_SUBJECTS,
	S_DAEMON_HOSTS,
	S_RUN_FINGERPRINT,
	S_AB_LIST, /* 3 filters: 8 slots */
	S_N = S_AB_LIST + 8
};

_Static_assert(S_N <= STORE_STMT_SLOTS, "a slot per statement");

/* A statement: its slot, its text for both dialects, or PostgreSQL's own where they differ
 * (`pg`). A multi-row statement (ncols > 0) is `sql`, then groups of ncols parameters, one a
 * row, then `tail`, in N_CHUNKS slots from `id` on. `what` names what it does, for errors. */
struct stmt_def {
	enum stmt_id id;
	const char *what;
	const char *sql;
	const char *pg;
	int ncols;
	const char *tail;
};

/* A statement with optional filters, without "(? IS NULL OR ...)" (which keeps the planner
 * from the index that a present filter needs): one text and one prepared statement per
 * combination of the filters present. Its text is `head`, then `joiner` (" WHERE " or " AND ")
 * and the present filters joined with " AND ", then `tail`; its parameters are "?" (numbered
 * in order): head's, one per present filter, then tail's. */
struct filtered_def {
	enum stmt_id first; /* the combination `mask` (bit i: filters[i] present) is first + mask */
	const char *what;
	const char *head, *joiner;
	const char *filters[4];
	int n; /* filters, at most 4 */
	const char *tail;
};

/* The prepared statement of `d` for the filters present in `mask`, prepared on first use.
 * Returns 0 with *out, or a negative errno (logged). */
int rows_get_filtered(struct store_conn *c, const struct filtered_def *d, unsigned mask,
                      struct store_stmt **out);

/* The prepared statement `d` of connection `c`, prepared on first use. Returns 0 with *out, or
 * a negative errno (logged by the driver). */
int rows_get(struct store_conn *c, const struct stmt_def *d, struct store_stmt **out);

/* The same for chunk `chunk` (0 .. N_CHUNKS - 1) of the multi-row statement `d`, which has
 * chunk_rows[chunk] rows. */
int rows_get_chunk(struct store_conn *c, const struct stmt_def *d, int chunk,
                   struct store_stmt **out);

static inline void reset(struct store_stmt *s)
{
	s->drv->reset(s);
}

static inline int step(struct store_stmt *s)
{
	return s->drv->step(s);
}

static inline void b_text(struct store_stmt *s, int i, const char *v)
{
	s->drv->bind_text(s, i, v);
}

/* Binds the first parameters of a statement on a host's ref: the host, the ref and, when given,
 * the project (a filtered_def's optional filter); returns how many it bound. */
static inline int rows_bind_host_ref(struct store_stmt *s, const char *host, const char *ref,
                                     const char *project)
{
	b_text(s, 1, host);
	b_text(s, 2, ref);
	if (project)
		b_text(s, 3, project);
	return project ? 3 : 2;
}

static inline void b_i64(struct store_stmt *s, int i, int64_t v)
{
	s->drv->bind_i64(s, i, v);
}

/* An optional integer: AW_NONE is NULL. */
static inline void b_opt(struct store_stmt *s, int i, int64_t v)
{
	if (v == AW_NONE)
		s->drv->bind_null(s, i);
	else
		s->drv->bind_i64(s, i, v);
}

/* A measured value: NAN (and any other non-finite value) is NULL. */
static inline void b_real(struct store_stmt *s, int i, double v)
{
	if (isfinite(v))
		s->drv->bind_double(s, i, v);
	else
		s->drv->bind_null(s, i);
}

/* Bytes; NULL is NULL. */
static inline void b_blob(struct store_stmt *s, int i, const void *p, size_t len)
{
	if (p)
		s->drv->bind_blob(s, i, p, len);
	else
		s->drv->bind_null(s, i);
}

static inline const char *c_text(struct store_stmt *s, int i)
{
	return s->drv->col_text(s, i);
}

static inline int64_t c_i64(struct store_stmt *s, int i)
{
	return s->drv->col_i64(s, i);
}

static inline int64_t c_opt(struct store_stmt *s, int i)
{
	return s->drv->col_null(s, i) ? AW_NONE : s->drv->col_i64(s, i);
}

static inline double c_real(struct store_stmt *s, int i)
{
	return s->drv->col_null(s, i) ? NAN : s->drv->col_double(s, i);
}

/* Runs `s` to its end, ignoring its rows; *changes (may be NULL) gets the rows it changed.
 * Resets it. */
int rows_run_done(struct store_stmt *s, int64_t *changes);

/* Runs `s`, whose rows and changes the caller does not need: a driver may send it now and
 * report its failure by a later call of the transaction (PostgreSQL pipelines them, which
 * saves a round trip each). Resets it. */
int rows_run_later(struct store_stmt *s);

/* Runs `s`, which returns one integer (RETURNING id, SELECT id): 0 with *out, -ENOENT when
 * it returned no row. Resets it. */
int rows_run_id(struct store_stmt *s, int64_t *out);

/* Steps `s` calling `row(s, cls)` for each row; a non-zero return stops and is returned.
 * Resets it. */
int rows_each_row(struct store_stmt *s, int (*row)(struct store_stmt *, void *), void *cls);

static inline int rows_begin(struct store_conn *c, enum store_tx tx)
{
	return c->drv->begin(c, tx);
}

static inline int rows_commit(struct store_conn *c)
{
	return c->drv->commit(c);
}

/* Rolls back, and forgets cached cell ids since some may name rows that no longer exist. */
void rows_rollback(struct store_conn *c);

/* Commits when rc is 0, else (or when the commit fails) rolls back. Returns the outcome. */
int rows_finish(struct store_conn *c, int rc);

/* Queues (or merges) the post-ingest task of that key at `now` (tasks.c), inside the caller's
 * transaction. */
int rows_task_enqueue(struct store_conn *c, const char *kind, const char *project,
                      const char *commit, const char *host, const char *ref, const char *now);

/* One measurement of a run, as read (in the primary key's order), until it is handed on
 *. */
struct value_row {
	int64_t cell_id, ord;
	enum aw_cell_status status;
	double p50, p99, ci_lo, ci_hi;
	char *reason;
};

struct value_rows {
	struct value_row *v;
	size_t n, cap;
};

/* The runs' values store_run_values() keeps once per process (cache.c), by the reading store's
 * generation (store_conn.gen; 0 keeps nothing) and the run's sequence, at most
 * AW_VALCACHE_BYTES (20,000 uploads of 300 cells from 16 hosts: 16 x 41 runs in play, 14 KB
 * each kept, 9.4 MB; docs/benchmarks.md). Only committed runs may be kept: nothing reads a run's
 * values in the transaction that writes it. valcache_forget() drops run seq's (retention
 * thinned it). */
#define AW_VALCACHE_BYTES (10u << 20)
/* valcache_get() copies run seq's rows into *out: 1, 0 when not kept, or -ENOMEM;
 * valcache_put() keeps a copy (nothing when out of memory or past the budget's 64th). */
int valcache_get(uint64_t gen, int64_t seq, struct value_rows *out);
void valcache_put(uint64_t gen, int64_t seq, const struct value_rows *rows);
void valcache_forget(uint64_t gen, int64_t seq);
/* Drops every run a store kept (store_close()). */
void valcache_forget_store(uint64_t gen);

#endif
