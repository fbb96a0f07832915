/* The store's bisections (issue 33): one per finding, queued with its job in one transaction
 * (the finding's uniqueness makes two of one finding one), the agent's progress, cancelling,
 * reads; the subjects daemon hosts report with their polls; a run's host object. */
#include "rows.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define BISECT_COLS                                                                                  \
	"id, job_id, project, platform_hash, subject, ref, good, bad, host, runner, cells, reason, " \
	"state, steps_done, expected_steps, range_commits, range_good, range_bad, culprit, cell, "   \
	"outcome, message, commits, answer, change, change_lo, change_hi, created_at, updated_at"

static const struct stmt_def sql_bisect_find = {
    .id = S_BISECT_FIND,
    .what = "look up a bisection",
    .sql = "SELECT id FROM bisects WHERE project = ?1 AND platform_hash = ?2 AND subject = ?3 "
           "AND good = ?4 AND bad = ?5"};

static const struct stmt_def sql_bisect_add = {
    .id = S_BISECT_ADD,
    .what = "add a bisection",
    .sql = "INSERT INTO bisects (project, platform_hash, subject, ref, good, bad, host, runner, "
           "cells, reason, state, steps_done, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, "
           "?5, ?6, ?7, ?8, ?9, ?10, 'queued', 0, ?11, ?11) RETURNING id"};

static const struct stmt_def sql_bisect_job_add = {
    .id = S_BISECT_JOB_ADD,
    .what = "add a bisection's job",
    .sql = "INSERT INTO jobs (project, commit_sha, ref, subject, all_hosts, created_at, "
           "expires_at, expires_us, bisect) VALUES (?1, ?2, ?3, ?4, FALSE, ?5, ?6, ?7, ?8) "
           "RETURNING id"};

static const struct stmt_def sql_bisect_job_target = {
    .id = S_BISECT_JOB_TARGET,
    .what = "add a bisection job's host",
    .sql = "INSERT INTO job_targets (job_id, host) VALUES (?1, ?2)"};

static const struct stmt_def sql_bisect_set_job = {
    .id = S_BISECT_SET_JOB,
    .what = "tie a bisection to its job",
    .sql = "UPDATE bisects SET job_id = ?2 WHERE id = ?1"};

int store_bisect_create(struct store_conn *c, const struct store_bisect_spec *spec, int64_t *id,
                        bool *created)
{
	char now[AW_TIME_LEN], expires[AW_TIME_LEN];
	struct store_stmt *s;
	struct timespec ts;
	json_t *job = NULL, *cells = NULL;
	char *text = NULL;
	int64_t us, job_id = 0;
	int rc;

	*created = false;
	store_now(now, &us);
	ts.tv_sec = (time_t)((us + spec->ttl_us) / 1000000);
	ts.tv_nsec = (long)((us + spec->ttl_us) % 1000000) * 1000;
	aw_time_format(&ts, expires);
	rc = rows_begin(c, STORE_TX_WRITE);
	if (rc)
		return rc;
	rc = rows_get(c, &sql_bisect_find, &s);
	if (!rc) {
		b_text(s, 1, spec->project);
		b_text(s, 2, spec->platform_hash);
		b_text(s, 3, spec->subject);
		b_text(s, 4, spec->good);
		b_text(s, 5, spec->bad);
		rc = rows_run_id(s, id);
		if (!rc)
			return rows_finish(c, 0); /* the finding's bisection exists: one runs */
		if (rc == -ENOENT)
			rc = 0;
	}
	if (!rc)
		rc = rows_get(c, &sql_bisect_add, &s);
	if (!rc) {
		b_text(s, 1, spec->project);
		b_text(s, 2, spec->platform_hash);
		b_text(s, 3, spec->subject);
		b_text(s, 4, spec->ref);
		b_text(s, 5, spec->good);
		b_text(s, 6, spec->bad);
		b_text(s, 7, spec->host);
		b_text(s, 8, spec->runner);
		b_text(s, 9, spec->cells);
		b_text(s, 10, spec->reason);
		b_text(s, 11, now);
		rc = rows_run_id(s, id);
	}
	if (!rc) {
		cells = json_loads(spec->cells, 0, NULL);
		job = json_pack("{s:I, s:s, s:s, s:s?, s:o}", "id", (json_int_t)*id, "good",
		                spec->good, "bad", spec->bad, "subject",
		                spec->subject[0] ? spec->subject : NULL, "cells",
		                cells ? cells : json_array());
		text = job ? json_dumps(job, JSON_COMPACT) : NULL;
		rc = text ? rows_get(c, &sql_bisect_job_add, &s) : -ENOMEM;
	}
	if (!rc) {
		b_text(s, 1, spec->project);
		b_text(s, 2, spec->bad);
		b_text(s, 3, spec->ref);
		b_text(s, 4, spec->subject[0] ? spec->subject : NULL);
		b_text(s, 5, now);
		b_text(s, 6, expires);
		b_i64(s, 7, us + spec->ttl_us);
		b_text(s, 8, text);
		rc = rows_run_id(s, &job_id);
	}
	if (!rc)
		rc = rows_get(c, &sql_bisect_job_target, &s);
	if (!rc) {
		b_i64(s, 1, job_id);
		b_text(s, 2, spec->runner);
		rc = rows_run_done(s, NULL);
	}
	if (!rc)
		rc = rows_get(c, &sql_bisect_set_job, &s);
	if (!rc) {
		b_i64(s, 1, *id);
		b_i64(s, 2, job_id);
		rc = rows_run_done(s, NULL);
	}
	json_decref(job);
	free(text);
	rc = rows_finish(c, rc);
	*created = rc == 0;
	return rc;
}

/* running, done and failed only while queued or running: a cancelled one stays cancelled */
static const struct stmt_def sql_bisect_update = {
    .id = S_BISECT_UPDATE,
    .what = "record a bisection's progress",
    .sql = "UPDATE bisects SET state = ?3, steps_done = COALESCE(CAST(?4 AS BIGINT), steps_done), "
           "expected_steps = COALESCE(CAST(?5 AS BIGINT), expected_steps), "
           "range_commits = COALESCE(CAST(?6 AS BIGINT), range_commits), "
           "range_good = COALESCE(CAST(?7 AS TEXT), range_good), "
           "range_bad = COALESCE(CAST(?8 AS TEXT), range_bad), "
           "culprit = COALESCE(CAST(?9 AS TEXT), culprit), cell = COALESCE(CAST(?10 AS TEXT), "
           "cell), outcome = COALESCE(CAST(?11 AS TEXT), outcome), "
           "message = COALESCE(CAST(?12 AS TEXT), message), "
           "commits = COALESCE(CAST(?13 AS TEXT), commits), "
           "answer = COALESCE(CAST(?14 AS TEXT), answer), "
           "change = COALESCE(CAST(?15 AS DOUBLE PRECISION), change), "
           "change_lo = COALESCE(CAST(?16 AS DOUBLE PRECISION), change_lo), "
           "change_hi = COALESCE(CAST(?17 AS DOUBLE PRECISION), change_hi), updated_at = ?18 "
           "WHERE id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR runner = ?2) AND "
           "state IN ('queued', 'running')"};

static const struct stmt_def sql_bisect_state = {
    .id = S_BISECT_STATE,
    .what = "read a bisection's state",
    .sql = "SELECT state, runner FROM bisects WHERE id = ?1"};

/* Why an update or a cancel changed nothing: -ENOENT, -ECANCELED, -EPERM (or 0 when `ok` is the
 * state it found). */
static int why_unchanged(struct store_conn *c, int64_t id, const char *runner, const char *ok)
{
	struct store_stmt *s;
	int rc = rows_get(c, &sql_bisect_state, &s);

	if (rc)
		return rc;
	b_i64(s, 1, id);
	rc = step(s);
	if (rc == STORE_ROW) {
		const char *state = c_text(s, 0), *who = c_text(s, 1);

		if (runner && (!who || strcmp(who, runner)))
			rc = -ENOENT;
		else if (ok && !strcmp(state, ok))
			rc = 0;
		else
			rc = !strcmp(state, "cancelled") ? -ECANCELED : -EPERM;
	} else if (rc == STORE_DONE) {
		rc = -ENOENT;
	}
	reset(s);
	return rc;
}

int store_bisect_update(struct store_conn *c, int64_t id, const char *runner,
                        const struct store_bisect_update *u)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us, changed = 0;
	int rc;

	store_now(now, &us);
	rc = rows_get(c, &sql_bisect_update, &s);
	if (rc)
		return rc;
	b_i64(s, 1, id);
	b_text(s, 2, runner);
	b_text(s, 3, u->state);
	b_opt(s, 4, u->steps_done);
	b_opt(s, 5, u->expected_steps);
	b_opt(s, 6, u->range_commits);
	b_text(s, 7, u->range_good);
	b_text(s, 8, u->range_bad);
	b_text(s, 9, u->culprit);
	b_text(s, 10, u->cell);
	b_text(s, 11, u->outcome);
	b_text(s, 12, u->message);
	b_text(s, 13, u->commits);
	b_text(s, 14, u->answer);
	b_real(s, 15, u->change);
	b_real(s, 16, u->change_lo);
	b_real(s, 17, u->change_hi);
	b_text(s, 18, now);
	rc = rows_run_done(s, &changed);
	if (rc || changed)
		return rc;
	return why_unchanged(c, id, runner, NULL);
}

static const struct stmt_def sql_bisect_cancel = {
    .id = S_BISECT_CANCEL,
    .what = "cancel a bisection",
    .sql = "UPDATE bisects SET state = 'cancelled', updated_at = ?2 WHERE id = ?1 AND "
           "state IN ('queued', 'running')"};

/* its job expires: no host claims it any more */
static const struct stmt_def sql_bisect_cancel_job = {
    .id = S_BISECT_CANCEL_JOB,
    .what = "expire a cancelled bisection's job",
    .sql = "UPDATE jobs SET expires_us = 0, expires_at = ?2 WHERE id = "
           "(SELECT job_id FROM bisects WHERE id = ?1)"};

int store_bisect_cancel(struct store_conn *c, int64_t id)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us, changed = 0;
	int rc;

	store_now(now, &us);
	rc = rows_begin(c, STORE_TX_WRITE);
	if (!rc)
		rc = rows_get(c, &sql_bisect_cancel, &s);
	if (!rc) {
		b_i64(s, 1, id);
		b_text(s, 2, now);
		rc = rows_run_done(s, &changed);
	}
	if (!rc && !changed)
		rc = why_unchanged(c, id, NULL, "cancelled");
	if (!rc)
		rc = rows_get(c, &sql_bisect_cancel_job, &s);
	if (!rc) {
		b_i64(s, 1, id);
		b_text(s, 2, now);
		rc = rows_run_done(s, NULL);
	}
	return rows_finish(c, rc);
}

struct bisect_rows {
	store_bisect_cb cb;
	void *cls;
	bool found;
};

static int bisect_row(struct store_stmt *s, void *cls)
{
	struct bisect_rows *br = cls;
	struct store_bisect b = {
	    .id = c_i64(s, 0),
	    .job_id = c_opt(s, 1),
	    .project = c_text(s, 2),
	    .platform_hash = c_text(s, 3),
	    .subject = c_text(s, 4),
	    .ref = c_text(s, 5),
	    .good = c_text(s, 6),
	    .bad = c_text(s, 7),
	    .host = c_text(s, 8),
	    .runner = c_text(s, 9),
	    .cells = c_text(s, 10),
	    .reason = c_text(s, 11),
	    .state = c_text(s, 12),
	    .steps_done = c_i64(s, 13),
	    .expected_steps = c_opt(s, 14),
	    .range_commits = c_opt(s, 15),
	    .range_good = c_text(s, 16),
	    .range_bad = c_text(s, 17),
	    .culprit = c_text(s, 18),
	    .cell = c_text(s, 19),
	    .outcome = c_text(s, 20),
	    .message = c_text(s, 21),
	    .commits = c_text(s, 22),
	    .answer = c_text(s, 23),
	    .change = c_real(s, 24),
	    .change_lo = c_real(s, 25),
	    .change_hi = c_real(s, 26),
	    .created_at = c_text(s, 27),
	    .updated_at = c_text(s, 28),
	};

	br->found = true;
	return br->cb(&b, br->cls);
}

static const struct stmt_def sql_bisect_get = {
    .id = S_BISECT_GET,
    .what = "read bisections",
    .sql = "SELECT " BISECT_COLS " FROM bisects WHERE (CAST(?1 AS BIGINT) IS NULL OR id = ?1) "
           "AND (CAST(?2 AS TEXT) IS NULL OR project = ?2) AND (CAST(?3 AS TEXT) IS NULL OR "
           "host = ?3 OR runner = ?3) AND (CAST(?4 AS TEXT) IS NULL OR state = ?4) AND "
           "(CAST(?5 AS TEXT) IS NULL OR good = ?5 OR bad = ?5 OR culprit = ?5) "
           "ORDER BY id DESC LIMIT ?6"};

int store_bisect_get(struct store_conn *c, int64_t id, store_bisect_cb cb, void *cls)
{
	struct bisect_rows br = {cb, cls, false};
	struct store_stmt *s;
	int rc = rows_get(c, &sql_bisect_get, &s);

	if (rc)
		return rc;
	b_i64(s, 1, id);
	b_text(s, 2, NULL);
	b_text(s, 3, NULL);
	b_text(s, 4, NULL);
	b_text(s, 5, NULL);
	b_i64(s, 6, 1);
	rc = rows_each_row(s, bisect_row, &br);
	return rc ? rc : br.found ? 0 : -ENOENT;
}

int store_bisect_list(struct store_conn *c, const struct store_bisect_filter *f, store_bisect_cb cb,
                      void *cls)
{
	struct bisect_rows br = {cb, cls, false};
	struct store_stmt *s;
	int rc = rows_get(c, &sql_bisect_get, &s);

	if (rc)
		return rc;
	b_opt(s, 1, AW_NONE);
	b_text(s, 2, f->project);
	b_text(s, 3, f->host);
	b_text(s, 4, f->state);
	b_text(s, 5, f->commit);
	b_i64(s, 6, f->limit ? f->limit : 100);
	return rows_each_row(s, bisect_row, &br);
}

static const struct stmt_def sql_bisect_covered = {
    .id = S_BISECT_COVERED,
    .what = "look for a bisection that answers a finding",
    .sql = "SELECT id FROM bisects WHERE project = ?1 AND platform_hash = ?2 AND "
           "state IN ('queued', 'running', 'done') AND (bad = ?4 OR culprit = ?4 OR "
           "(' ' || commits || ' ' LIKE '% ' || ?3 || ' %' AND "
           "' ' || commits || ' ' LIKE '% ' || ?4 || ' %')) LIMIT 1"};

int store_bisect_covered(struct store_conn *c, const char *project, const char *platform,
                         const char *good, const char *bad, bool *covered)
{
	struct store_stmt *s;
	int64_t id;
	int rc = rows_get(c, &sql_bisect_covered, &s);

	*covered = false;
	if (rc)
		return rc;
	b_text(s, 1, project);
	b_text(s, 2, platform);
	b_text(s, 3, good);
	b_text(s, 4, bad);
	rc = rows_run_id(s, &id);
	*covered = rc == 0;
	return rc == -ENOENT ? 0 : rc;
}

static const struct stmt_def sql_host_subjects = {
    .id = S_HOST_SUBJECTS,
    .what = "note a daemon host's subjects",
    .sql = "UPDATE job_polls SET subjects = ?2, step = ?3 WHERE host = ?1"};

int store_host_subjects_set(struct store_conn *c, const char *host, const char *subjects,
                            const char *step)
{
	struct store_stmt *s;
	int rc = rows_get(c, &sql_host_subjects, &s);

	if (rc)
		return rc;
	b_text(s, 1, host);
	b_text(s, 2, subjects ? subjects : "");
	b_text(s, 3, step);
	return rows_run_done(s, NULL);
}

struct daemon_rows {
	store_daemon_host_cb cb;
	void *cls;
};

static int daemon_row(struct store_stmt *s, void *cls)
{
	struct daemon_rows *dr = cls;
	struct store_daemon_host h = {
	    .host = c_text(s, 0),
	    .platform_hash = c_text(s, 1),
	    .subjects = c_text(s, 2),
	    .step = c_text(s, 3),
	    .polled_us = c_i64(s, 4),
	};

	return dr->cb(&h, dr->cls);
}

static const struct stmt_def sql_daemon_hosts = {
    .id = S_DAEMON_HOSTS,
    .what = "list the daemon hosts",
    .sql = "SELECT jp.host, h.platform_hash, jp.subjects, jp.step, jp.polled_us FROM job_polls "
           "jp LEFT JOIN hosts h ON h.name = jp.host WHERE jp.polled_us >= ?1 ORDER BY "
           "jp.host"};

int store_daemon_hosts(struct store_conn *c, int64_t max_age_us, store_daemon_host_cb cb, void *cls)
{
	struct daemon_rows dr = {cb, cls};
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us;
	int rc = rows_get(c, &sql_daemon_hosts, &s);

	if (rc)
		return rc;
	store_now(now, &us);
	b_i64(s, 1, us - max_age_us);
	return rows_each_row(s, daemon_row, &dr);
}

static const struct stmt_def sql_run_fingerprint = {
    .id = S_RUN_FINGERPRINT,
    .what = "read a run's host object",
    .sql = "SELECT f.doc FROM runs r JOIN fingerprints f ON f.id = r.fingerprint_id "
           "WHERE r.run_id = ?1"};

struct fp_row {
	int (*cb)(const char *doc, void *cls);
	void *cls;
	bool found;
};

static int fingerprint_row(struct store_stmt *s, void *cls)
{
	struct fp_row *f = cls;

	f->found = true;
	return f->cb(c_text(s, 0), f->cls);
}

int store_run_fingerprint(struct store_conn *c, const char *run_id,
                          int (*cb)(const char *doc, void *cls), void *cls)
{
	struct fp_row f = {cb, cls, false};
	struct store_stmt *s;
	int rc = rows_get(c, &sql_run_fingerprint, &s);

	if (rc)
		return rc;
	b_text(s, 1, run_id);
	rc = rows_each_row(s, fingerprint_row, &f);
	return rc ? rc : f.found ? 0 : -ENOENT;
}
