/* The store's post-ingest tasks: queued (merged with an equal one), claimed with a lease by any
 * collector, done, failed, and counted for /metrics. */
#include "rows.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define TASK_COLS "id, kind, project, commit_sha, host, ref, generation, attempts, enqueued_at"
/* A task is dead once the claims of its last claimer's max_attempts were all made and none is
 * live (?1: now in microseconds). */
#define TASK_DEAD                                                                       \
	"(max_attempts IS NOT NULL AND attempts >= max_attempts AND (owner IS NULL OR " \
	"claimed_us <= CAST(?1 AS BIGINT) - lease_us))"

/* Merged with an equal task: a waiting one is left as it is, a claimed one gets another
 * generation (its worker's done leaves it queued), an idle one (resting after its last pass)
 * is asked again, still not before the end of its rest; each gets its attempts back, since
 * what it has to do changed. */
static const struct stmt_def sql_task_enqueue = {
    .id = S_TASK_ENQUEUE,
    .what = "queue a task",
    .sql = "INSERT INTO tasks (kind, project, commit_sha, host, ref, generation, "
           "attempts, enqueued_at) VALUES (?1, ?2, ?3, ?4, ?5, 1, 0, ?6) "
           "ON CONFLICT (kind, project, commit_sha, host, ref) DO UPDATE SET "
           "generation = tasks.generation + CASE WHEN tasks.owner IS NULL "
           "THEN 0 ELSE 1 END, attempts = 0, idle = 0"};

int rows_task_enqueue(struct store_conn *c, const char *kind, const char *project,
                      const char *commit, const char *host, const char *ref, const char *now)
{
	struct store_stmt *s;
	int rc = rows_get(c, &sql_task_enqueue, &s);

	if (rc)
		return rc;
	b_text(s, 1, kind);
	b_text(s, 2, project);
	b_text(s, 3, commit ? commit : ""); /* part of the task's key: never NULL */
	b_text(s, 4, host);
	b_text(s, 5, ref);
	b_text(s, 6, now);
	return rows_run_later(s);
}

int store_task_enqueue(struct store_conn *c, const char *kind, const char *project,
                       const char *commit, const char *host, const char *ref)
{
	char now[AW_TIME_LEN];
	int64_t us;

	if (!kind || (strcmp(kind, "run") && strcmp(kind, "charts") && strcmp(kind, "trends") &&
	              strcmp(kind, "ab") && strcmp(kind, "retention")))
		return -EINVAL; /* the other columns are the schema's to check */
	store_now(now, &us);
	return rows_task_enqueue(c, kind, project, commit, host, ref, now);
}

struct task_rows {
	store_task_cb cb;
	void *cls;
	bool found;
};

static int task_row(struct store_stmt *s, void *cls)
{
	struct task_rows *tr = cls;
	const char *commit = c_text(s, 3);
	struct store_task t = {
	    .id = c_i64(s, 0),
	    .kind = c_text(s, 1),
	    .project = c_text(s, 2),
	    .commit = commit && *commit ? commit : NULL,
	    .host = c_text(s, 4),
	    .ref = c_text(s, 5),
	    .generation = c_i64(s, 6),
	    .attempts = (int)c_i64(s, 7),
	    .enqueued_at = c_text(s, 8),
	};

	tr->found = true;
	return tr->cb(&t, tr->cls);
}

/* "run" tasks first, then the oldest; a claim older than its lease is taken over; a task
 * that is idle or resting is not there yet */
static const struct stmt_def sql_task_claim = {
    .id = S_TASK_CLAIM,
    .what = "claim a task",
    .sql = "UPDATE tasks SET owner = ?1, claimed_at = ?2, claimed_us = ?3, lease_us = ?4, "
           "max_attempts = ?5, attempts = attempts + 1 WHERE id = (SELECT id FROM tasks WHERE "
           "idle = 0 AND (not_before_us IS NULL OR not_before_us <= CAST(?3 AS BIGINT)) AND "
           "(owner IS NULL OR claimed_us <= CAST(?3 AS BIGINT) - CAST(?4 AS BIGINT)) AND "
           "attempts < ?5 ORDER BY CASE WHEN kind = 'run' THEN 0 ELSE 1 END, id LIMIT 1) "
           "RETURNING " TASK_COLS,
    .pg = "UPDATE tasks SET owner = ?1, claimed_at = ?2, claimed_us = ?3, lease_us = ?4, "
          "max_attempts = ?5, attempts = attempts + 1 WHERE id = (SELECT id FROM tasks WHERE "
          "idle = 0 AND (not_before_us IS NULL OR not_before_us <= CAST(?3 AS BIGINT)) AND "
          "(owner IS NULL OR claimed_us <= CAST(?3 AS BIGINT) - CAST(?4 AS BIGINT)) AND "
          "attempts < ?5 ORDER BY CASE WHEN kind = 'run' THEN 0 ELSE 1 END, id LIMIT 1 "
          "FOR UPDATE SKIP LOCKED) RETURNING " TASK_COLS};

int store_task_claim(struct store_conn *c, const char *owner, int64_t lease_us, int max_attempts,
                     store_task_cb cb, void *cls)
{
	char now[AW_TIME_LEN];
	int64_t us;

	store_now(now, &us);
	return store_task_claim_at(c, owner, us, lease_us, max_attempts, cb, cls);
}

int store_task_claim_at(struct store_conn *c, const char *owner, int64_t now_us, int64_t lease_us,
                        int max_attempts, store_task_cb cb, void *cls)
{
	struct task_rows tr = {cb, cls, false};
	struct timespec ts = {.tv_sec = (time_t)(now_us / 1000000),
	                      .tv_nsec = (long)(now_us % 1000000) * 1000};
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int rc;

	if (!owner || !cb || now_us < 0 || lease_us < 0 || max_attempts < 1)
		return -EINVAL;
	aw_time_format(&ts, now);
	/* The claim and the callback in one transaction: a callback that fails undoes it. On
	 * PostgreSQL, FOR UPDATE SKIP LOCKED lets concurrent claimers pass each other by. */
	rc = rows_begin(c, STORE_TX_WRITE);
	if (rc)
		return rc;
	rc = rows_get(c, &sql_task_claim, &s);
	if (!rc) {
		b_text(s, 1, owner);
		b_text(s, 2, now);
		b_i64(s, 3, now_us);
		b_i64(s, 4, lease_us);
		b_i64(s, 5, max_attempts);
		rc = rows_each_row(s, task_row, &tr);
	}
	if (!rc && !tr.found)
		rc = -ENOENT;
	return rows_finish(c, rc);
}

static const struct stmt_def sql_task_delete = {
    .id = S_TASK_DELETE,
    .what = "finish a task",
    .sql = "DELETE FROM tasks WHERE id = ?1 AND generation = ?2"};

static const struct stmt_def sql_task_release = {
    .id = S_TASK_RELEASE,
    .what = "release a task",
    .sql = "UPDATE tasks SET owner = NULL, claimed_at = NULL, claimed_us = NULL, "
           "attempts = 0 WHERE id = ?1"};

/* Done, and resting until ?2: idle unless it was enqueued again while it ran (then it is
 * claimed again after the rest, with attempts of its own). */
static const struct stmt_def sql_task_rest = {
    .id = S_TASK_REST,
    .what = "rest a task",
    .sql = "UPDATE tasks SET owner = NULL, claimed_at = NULL, claimed_us = NULL, attempts = 0, "
           "not_before_us = ?2, idle = CASE WHEN generation = ?3 THEN 1 ELSE 0 END "
           "WHERE id = ?1"};

int store_task_done_rest(struct store_conn *c, int64_t id, int64_t generation, int64_t until_us)
{
	struct store_stmt *s;
	int64_t changed = 0;
	int rc;

	if (until_us <= 0)
		return store_task_done(c, id, generation);
	rc = rows_get(c, &sql_task_rest, &s);
	if (rc)
		return rc;
	b_i64(s, 1, id);
	b_i64(s, 2, until_us);
	b_i64(s, 3, generation);
	rc = rows_run_done(s, &changed);
	return rc ? rc : changed ? 0 : -ENOENT;
}

int store_task_done(struct store_conn *c, int64_t id, int64_t generation)
{
	struct store_stmt *s;
	int64_t changed = 0;
	int rc = rows_begin(c, STORE_TX_WRITE);

	if (rc)
		return rc;
	rc = rows_get(c, &sql_task_delete, &s);
	if (!rc) {
		b_i64(s, 1, id);
		b_i64(s, 2, generation);
		rc = rows_run_done(s, &changed);
	}
	/* Enqueued again while it ran: another pass, with attempts of its own. */
	if (!rc && !changed)
		rc = rows_get(c, &sql_task_release, &s);
	if (!rc && !changed) {
		b_i64(s, 1, id);
		rc = rows_run_done(s, &changed);
		if (!rc && !changed)
			rc = -ENOENT;
	}
	return rows_finish(c, rc);
}

static const struct stmt_def sql_task_fail = {
    .id = S_TASK_FAIL,
    .what = "fail a task",
    .sql = "UPDATE tasks SET owner = NULL, claimed_at = NULL, claimed_us = NULL, "
           "last_error = ?2 WHERE id = ?1"};

int store_task_fail(struct store_conn *c, int64_t id, const char *message)
{
	struct store_stmt *s;
	int64_t changed = 0;
	int rc = rows_get(c, &sql_task_fail, &s);

	if (rc)
		return rc;
	b_i64(s, 1, id);
	b_text(s, 2, message);
	rc = rows_run_done(s, &changed);
	return rc ? rc : changed ? 0 : -ENOENT;
}

static const struct stmt_def sql_task_count = {
    .id = S_TASK_COUNT,
    .what = "count tasks",
    .sql = "SELECT COALESCE(SUM(CASE WHEN " TASK_DEAD " THEN 0 ELSE 1 "
           "END), 0), COALESCE(SUM(CASE WHEN " TASK_DEAD " THEN 1 ELSE 0 END), 0) FROM tasks "
           "WHERE idle = 0"};

int store_task_count(struct store_conn *c, int64_t *pending, int64_t *dead)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us;
	int rc = rows_get(c, &sql_task_count, &s);

	if (rc)
		return rc;
	store_now(now, &us);
	b_i64(s, 1, us);
	rc = step(s);
	if (rc == STORE_ROW) {
		if (pending)
			*pending = c_i64(s, 0);
		if (dead)
			*dead = c_i64(s, 1);
		rc = 0;
	} else if (rc == STORE_DONE) {
		rc = -EIO; /* an aggregate always has a row */
	}
	reset(s);
	return rc;
}
