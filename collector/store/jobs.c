/* The store's jobs: work queued for agents (a commit to measure, a confirmation, an A/B),
 * claimed per host with a lease, their states, and the hosts' last polls. */
#include "rows.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>

#define JOB_COLS                                                                                     \
	"j.id, j.project, j.commit_sha, j.ref, j.subject, j.all_hosts, j.created_at, j.expires_at, " \
	"j.confirm, j.ab_base, j.bisect"

static const struct stmt_def sql_job_add = {
    .id = S_JOB_ADD,
    .what = "add a job",
    .sql = "INSERT INTO jobs (project, commit_sha, ref, subject, all_hosts, created_at, "
           "expires_at, expires_us, created_by, confirm, confirmation_of, ab_base) "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) RETURNING id"};

static const struct stmt_def sql_job_target_add = {
    .id = S_JOB_TARGET_ADD,
    .what = "add a job's host",
    .sql = "INSERT INTO job_targets (job_id, host) VALUES (?1, ?2) "
           "ON CONFLICT DO NOTHING"};

int store_job_create(struct store_conn *c, const struct store_job_spec *spec, int64_t *id)
{
	char now[AW_TIME_LEN], expires[AW_TIME_LEN];
	struct store_stmt *s;
	struct timespec ts;
	int64_t us;
	int rc;

	store_now(now, &us);
	ts.tv_sec = (time_t)((us + spec->ttl_us) / 1000000);
	ts.tv_nsec = (long)((us + spec->ttl_us) % 1000000) * 1000;
	aw_time_format(&ts, expires);
	rc = rows_begin(c, STORE_TX_WRITE);
	if (rc)
		return rc;
	rc = rows_get(c, &sql_job_add, &s);
	if (!rc) {
		b_text(s, 1, spec->project);
		b_text(s, 2, spec->commit);
		b_text(s, 3, spec->ref);
		b_text(s, 4, spec->subject);
		b_i64(s, 5, spec->hosts == NULL);
		b_text(s, 6, now);
		b_text(s, 7, expires);
		b_i64(s, 8, us + spec->ttl_us);
		b_opt(s, 9, spec->created_by ? spec->created_by : AW_NONE);
		b_text(s, 10, spec->confirm);
		b_text(s, 11, spec->confirmation_of);
		b_text(s, 12, spec->ab_base);
		rc = rows_run_id(s, id);
	}
	for (size_t i = 0; !rc && spec->hosts && i < spec->n_hosts; i++) {
		rc = rows_get(c, &sql_job_target_add, &s);
		if (rc)
			break;
		b_i64(s, 1, *id);
		b_text(s, 2, spec->hosts[i]);
		rc = rows_run_later(s);
	}
	return rows_finish(c, rc);
}

struct job_rows {
	store_job_cb cb;
	store_job_host_cb hcb;
	void *cls;
	int64_t found;
};

static int job_row(struct store_stmt *s, void *cls)
{
	struct job_rows *jr = cls;
	struct store_job j = {
	    .id = c_i64(s, 0),
	    .project = c_text(s, 1),
	    .commit = c_text(s, 2),
	    .ref = c_text(s, 3),
	    .subject = c_text(s, 4),
	    .all_hosts = c_i64(s, 5) != 0,
	    .created_at = c_text(s, 6),
	    .expires_at = c_text(s, 7),
	    .confirm = c_text(s, 8),
	    .ab_base = c_text(s, 9),
	    .bisect = c_text(s, 10),
	};

	jr->found = j.id;
	return jr->cb ? jr->cb(&j, jr->cls) : 0;
}

static const struct stmt_def sql_job_candidate = {
    .id = S_JOB_CANDIDATE,
    .what = "look for jobs",
    .sql = "SELECT " JOB_COLS " FROM jobs j WHERE j.expires_us > ?2 AND (j.all_hosts = TRUE OR "
           "EXISTS (SELECT 1 FROM job_targets t WHERE t.job_id = j.id AND t.host = ?1)) AND NOT "
           "EXISTS (SELECT 1 FROM job_hosts x WHERE x.job_id = j.id AND x.host = ?1 AND "
           "(x.state <> 'claimed' OR x.claimed_us > ?3)) ORDER BY j.id LIMIT 1"};

static const struct stmt_def sql_job_claim = {
    .id = S_JOB_CLAIM,
    .what = "claim a job",
    .sql = "INSERT INTO job_hosts (job_id, host, state, claimed_at, claimed_us, updated_at) "
           "VALUES (?1, ?2, 'claimed', ?3, ?4, ?3) ON CONFLICT (job_id, host) DO UPDATE SET "
           "claimed_at = excluded.claimed_at, claimed_us = excluded.claimed_us, "
           "updated_at = excluded.updated_at "
           "WHERE job_hosts.state = 'claimed' AND job_hosts.claimed_us <= ?5"};

static const struct stmt_def sql_job_get = {.id = S_JOB_GET,
                                            .what = "read a job",
                                            .sql =
                                                "SELECT " JOB_COLS " FROM jobs j WHERE j.id = ?1"};

int store_job_claim(struct store_conn *c, const char *host, int64_t reclaim_us, store_job_cb cb,
                    void *cls)
{
	char now[AW_TIME_LEN];
	int64_t us;
	int rc;

	store_now(now, &us);
	/* A few rounds: another collector (or a duplicate agent) may win a candidate. */
	for (int round = 0; round < 4; round++) {
		struct job_rows jr = {NULL, NULL, NULL, 0};
		struct store_stmt *s;
		int64_t changed = 0;

		rc = rows_get(c, &sql_job_candidate, &s);
		if (rc)
			return rc;
		b_text(s, 1, host);
		b_i64(s, 2, us);
		b_i64(s, 3, us - reclaim_us);
		rc = rows_each_row(s, job_row, &jr);
		if (rc)
			return rc;
		if (!jr.found)
			return -ENOENT;
		rc = rows_get(c, &sql_job_claim, &s);
		if (rc)
			return rc;
		b_i64(s, 1, jr.found);
		b_text(s, 2, host);
		b_text(s, 3, now);
		b_i64(s, 4, us);
		b_i64(s, 5, us - reclaim_us);
		rc = rows_run_done(s, &changed);
		if (rc == -EAGAIN) /* a concurrent claim of the same row */
			continue;
		if (rc)
			return rc;
		if (changed == 1) {
			struct job_rows out = {cb, NULL, cls, 0};

			rc = rows_get(c, &sql_job_get, &s);
			if (rc)
				return rc;
			b_i64(s, 1, jr.found);
			return rows_each_row(s, job_row, &out);
		}
	}
	return -ENOENT;
}

static const struct stmt_def sql_job_polled_set = {
    .id = S_JOB_POLLED_SET,
    .what = "note a job poll",
    .sql = "INSERT INTO job_polls (host, polled_us) VALUES (?1, ?2) "
           "ON CONFLICT (host) DO UPDATE SET polled_us = excluded.polled_us"};

int store_job_polled(struct store_conn *c, const char *host)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us;
	int rc = rows_get(c, &sql_job_polled_set, &s);

	if (rc)
		return rc;
	store_now(now, &us);
	b_text(s, 1, host);
	b_i64(s, 2, us);
	return rows_run_done(s, NULL);
}

static const struct stmt_def sql_job_polled_get = {
    .id = S_JOB_POLLED_GET,
    .what = "read a host's last job poll",
    .sql = "SELECT polled_us FROM job_polls WHERE host = ?1"};

int store_job_polls(struct store_conn *c, const char *host, int64_t max_age_us, bool *polls)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us;
	int rc = rows_get(c, &sql_job_polled_get, &s);

	*polls = false;
	if (rc)
		return rc;
	store_now(now, &us);
	b_text(s, 1, host);
	rc = step(s);
	if (rc == STORE_ROW)
		*polls = us - c_i64(s, 0) <= max_age_us;
	reset(s);
	return rc < 0 ? rc : 0;
}

static const struct stmt_def sql_job_confirm_find = {
    .id = S_JOB_CONFIRM_FIND,
    .what = "list a run's confirmation jobs",
    .sql = "SELECT j.confirm, j.expires_us, h.state FROM jobs j "
           "LEFT JOIN job_hosts h ON h.job_id = j.id AND h.host = ?2 "
           "WHERE j.confirmation_of = ?1"};

int store_job_confirmations(struct store_conn *c, const char *run_id, const char *host,
                            struct store_confirm_jobs *out)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us;
	int rc = rows_get(c, &sql_job_confirm_find, &s);

	memset(out, 0, sizeof(*out));
	if (rc)
		return rc;
	store_now(now, &us);
	b_text(s, 1, run_id);
	b_text(s, 2, host);
	while ((rc = step(s)) == STORE_ROW) {
		const char *state = c_text(s, 2);
		json_t *confirm = json_loads(c_text(s, 0) ? c_text(s, 0) : "", 0, NULL);
		json_int_t runs = json_integer_value(json_object_get(confirm, "runs"));

		json_decref(confirm);
		out->jobs++;
		out->asked += runs > 0 ? (uint64_t)runs : 0;
		if (c_i64(s, 1) > us &&
		    !(state && (!strcmp(state, "done") || !strcmp(state, "failed"))))
			out->open++;
	}
	reset(s);
	return rc < 0 ? rc : 0;
}

static const struct stmt_def sql_job_unclaim = {
    .id = S_JOB_UNCLAIM,
    .what = "release a job",
    .sql = "DELETE FROM job_hosts WHERE job_id = ?1 AND host = ?2 "
           "AND state = 'claimed'"};

int store_job_unclaim(struct store_conn *c, int64_t id, const char *host)
{
	struct store_stmt *s;
	int rc = rows_get(c, &sql_job_unclaim, &s);

	if (rc)
		return rc;
	b_i64(s, 1, id);
	b_text(s, 2, host);
	return rows_run_done(s, NULL);
}

/* done and failed are final; repeating the final state is harmless */
static const struct stmt_def sql_job_state_set = {
    .id = S_JOB_STATE_SET,
    .what = "set a job's state",
    .sql = "UPDATE job_hosts SET state = ?3, run_id = COALESCE(?4, run_id), "
           "message = COALESCE(?5, message), updated_at = ?6 "
           "WHERE job_id = ?1 AND host = ?2 AND "
           "(state NOT IN ('done', 'failed') OR state = ?3)"};

static const struct stmt_def sql_job_state_get = {
    .id = S_JOB_STATE_GET,
    .what = "read a job's state",
    .sql = "SELECT state FROM job_hosts WHERE job_id = ?1 AND host = ?2"};

int store_job_set_state(struct store_conn *c, int64_t id, const char *host, const char *state,
                        const char *run_id, const char *message)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us, changed = 0;
	int rc;

	store_now(now, &us);
	rc = rows_get(c, &sql_job_state_set, &s);
	if (rc)
		return rc;
	b_i64(s, 1, id);
	b_text(s, 2, host);
	b_text(s, 3, state);
	b_text(s, 4, run_id);
	b_text(s, 5, message);
	b_text(s, 6, now);
	rc = rows_run_done(s, &changed);
	if (rc || changed)
		return rc;
	/* Nothing changed: unknown, or final already. */
	rc = rows_get(c, &sql_job_state_get, &s);
	if (rc)
		return rc;
	b_i64(s, 1, id);
	b_text(s, 2, host);
	rc = step(s);
	reset(s);
	return rc < 0 ? rc : rc == STORE_ROW ? -EPERM : -ENOENT;
}

static int job_host_row(struct store_stmt *s, void *cls)
{
	struct job_rows *jr = cls;
	struct store_job_host h = {
	    .host = c_text(s, 0),
	    .state = c_text(s, 1),
	    .run_id = c_text(s, 2),
	    .message = c_text(s, 3),
	    .claimed_at = c_text(s, 4),
	    .updated_at = c_text(s, 5),
	};

	return jr->hcb(&h, jr->cls);
}

/* Targeted hosts that have not claimed the job yet show as "pending". */
static const struct stmt_def sql_job_hosts = {
    .id = S_JOB_HOSTS,
    .what = "read a job's hosts",
    .sql = "SELECT host, state, run_id, message, claimed_at, updated_at "
           "FROM job_hosts WHERE job_id = ?1 UNION ALL "
           "SELECT t.host, 'pending', NULL, NULL, NULL, NULL FROM job_targets t "
           "WHERE t.job_id = ?1 AND NOT EXISTS (SELECT 1 FROM job_hosts h "
           "WHERE h.job_id = t.job_id AND h.host = t.host) ORDER BY 1"};

int store_job_get(struct store_conn *c, int64_t id, store_job_cb cb, store_job_host_cb hcb,
                  void *cls)
{
	struct job_rows jr = {cb, hcb, cls, 0};
	struct store_stmt *s;
	int rc = rows_begin(c, STORE_TX_READ);

	if (rc)
		return rc;
	rc = rows_get(c, &sql_job_get, &s);
	if (!rc) {
		b_i64(s, 1, id);
		rc = rows_each_row(s, job_row, &jr);
	}
	if (!rc && !jr.found)
		rc = -ENOENT;
	if (!rc && hcb)
		rc = rows_get(c, &sql_job_hosts, &s);
	if (!rc && hcb) {
		b_i64(s, 1, id);
		rc = rows_each_row(s, job_host_row, &jr);
	}
	rows_commit(c); /* ends the read */
	return rc;
}

static const struct stmt_def sql_job_list = {.id = S_JOB_LIST,
                                             .what = "list jobs",
                                             .sql = "SELECT " JOB_COLS
                                                    " FROM jobs j ORDER BY j.id DESC LIMIT ?1"};

int store_job_list(struct store_conn *c, unsigned limit, store_job_cb cb, void *cls)
{
	struct job_rows jr = {cb, NULL, cls, 0};
	struct store_stmt *s;
	int rc = rows_get(c, &sql_job_list, &s);

	if (rc)
		return rc;
	b_i64(s, 1, limit);
	return rows_each_row(s, job_row, &jr);
}
