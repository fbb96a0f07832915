/* The store's row layer: every statement of store.h and every mapping between columns and
 * fields, written once over the driver of driver.h. Statements are prepared on first use
 * and kept per connection; a run's cells and measurements go in with multi-row statements of a
 * few fixed sizes, so that PostgreSQL gets a handful of round trips per run and SQLite a
 * handful of statement executions. */
#include "driver.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/buf.h"
#include "aw/log.h"
#include "aw/strmap.h"

/* The columns of a listed run, in the order fill_run() reads them. */
#define RUN_COLS                                                                                  \
	"r.seq, r.run_id, p.name, h.name, c.sha, r.ref, r.commit_time, r.trigger, r.started_at, " \
	"r.finished_at, r.received_at, r.matrix_name, r.matrix_version, r.matrix_hash, "          \
	"r.matrix_profile, r.n_cells, COALESCE(c.order_us, r.started_us), f.platform_hash, "      \
	"r.confirmation_of, r.confirm, r.reference"
#define RUN_FROM                                                                               \
	" FROM runs r JOIN projects p ON p.id = r.project_id JOIN hosts h ON h.id = r.host_id" \
	" JOIN fingerprints f ON f.id = r.fingerprint_id"                                      \
	" LEFT JOIN commits c ON c.id = r.commit_id"
/* The columns of a cell, in the order fill_cell() reads them. */
#define CELL_COLS                                                                                \
	"k.key, k.op, k.reader, k.subject, k.kernel, k.placement, k.cpu, k.contender_cpu, k.c, " \
	"k.d, m.status, m.n, m.batch, m.min, m.p50, m.p95, m.p99, m.max, m.mean, m.stddev, "     \
	"m.ci_lo, m.ci_hi, m.baseline_ns, m.below_resolution, m.reason"
#define JOB_COLS                                                                                     \
	"j.id, j.project, j.commit_sha, j.ref, j.subject, j.all_hosts, j.created_at, j.expires_at, " \
	"j.confirm, j.ab_base"
#define TOKEN_COLS "id, role, host, hash, created_at, revoked_at, last_used_at"
#define TASK_COLS  "id, kind, project, commit_sha, host, ref, generation, attempts, enqueued_at"
#define HOST_COLS                                                                            \
	"h.name, h.arch, h.cpu_model, h.platform_hash, h.first_seen, h.last_seen, f.doc, "   \
	"(SELECT COUNT(*) FROM runs r WHERE r.host_id = h.id), h.id FROM hosts h LEFT JOIN " \
	"fingerprints f ON f.id = h.fingerprint_id"
#define VERDICT_REST                                                                      \
	"order_us FROM verdicts WHERE (CAST(?1 AS TEXT) IS NULL OR project = ?1) AND "    \
	"(CAST(?2 AS TEXT) IS NULL OR commit_sha = ?2) AND (CAST(?3 AS TEXT) IS NULL OR " \
	"host = ?3) ORDER BY order_us DESC, host LIMIT ?4"
/* A task is dead once the claims of its last claimer's max_attempts were all made and none is
 * live (?1: now in microseconds). */
#define TASK_DEAD                                                                       \
	"(max_attempts IS NOT NULL AND attempts >= max_attempts AND (owner IS NULL OR " \
	"claimed_us <= CAST(?1 AS BIGINT) - lease_us))"

/* The sizes of the multi-row statements a run's cells and measurements are written with. */
static const int chunk_rows[] = {256, 64, 16, 4, 1};
#define N_CHUNKS   5
#define CELL_NCOLS 11
#define MEAS_NCOLS 18

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
	S_REF_HISTORY,
	S_HOSTS,
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
	S_CP_DELETE,
	S_CP_ADD,
	S_CP_LIST,
	S_VERDICT_PUT,
	S_VERDICT_LIST,
	S_VERDICT_STATUSES,
	S_TASK_ENQUEUE,
	S_TASK_CLAIM,
	S_TASK_DELETE,
	S_TASK_RELEASE,
	S_TASK_FAIL,
	S_TASK_COUNT,
	S_CHART_PUT,
	S_CHART_GET,
	S_CHART_STAT,
	S_AB_FIND,
	S_AB_ADD,
	S_AB_GET,
	S_AB_LIST,
	S_N
};

_Static_assert(S_N <= STORE_STMT_SLOTS, "a slot per statement");

#define AB_COLS                                                                            \
	"seq, ab_id, project, host, subject, base_commit, head_commit, ref, aa, verdict, " \
	"content_hash, received_at"

/* A statement: its text for both dialects, or PostgreSQL's own where they differ. A multi-row
 * statement (ncols > 0) is `sql`, then groups of ncols parameters, one a row, then `tail`. */
struct stmt_def {
	const char *what;
	const char *sql;
	const char *pg;
	int ncols;
	const char *tail;
};

/* Most statements give only `what` and `sql`; the fields after them are zero (clang warns of
 * that positional form, GCC does not). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct stmt_def defs[S_N] = {
    [S_VERSION] = {"read the schema version",
                   "SELECT COALESCE(MAX(version), 0) FROM schema_migrations"},
    [S_MIGRATED] = {"record a migration",
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)"},
    [S_PING] = {"ping", "SELECT 1"},
    [S_PROJECT_FIND] = {"look up a project", "SELECT id FROM projects WHERE name = ?1"},
    [S_PROJECT_ADD] = {"add a project",
                       "INSERT INTO projects (name, created_at) VALUES (?1, ?2) "
                       "ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING id"},
    [S_RUN_FIND] = {"look up a run", "SELECT seq, content_hash FROM runs WHERE run_id = ?1"},
    [S_HOST_UPSERT] =
        {"store a host",
         "INSERT INTO hosts (name, arch, cpu_model, platform_hash, first_seen, last_seen) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (name) DO UPDATE SET "
         "arch = excluded.arch, cpu_model = excluded.cpu_model, "
         "platform_hash = excluded.platform_hash, last_seen = excluded.last_seen RETURNING id"},
    [S_FP_UPSERT] =
        {"store a fingerprint",
         "INSERT INTO fingerprints (host_id, hash, platform_hash, doc, first_seen, last_seen) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (host_id, hash) DO UPDATE SET "
         "last_seen = excluded.last_seen RETURNING id"},
    [S_HOST_SET_FP] = {"update a host", "UPDATE hosts SET fingerprint_id = ?2 WHERE id = ?1"},
    /* order_us: the commit's own time, else the earliest start of its runs */
    [S_COMMIT_UPSERT] =
        {"store a commit",
         "INSERT INTO commits (project_id, sha, commit_time, commit_time_us, first_started_us, "
         "order_us) VALUES (?1, ?2, ?3, CAST(?4 AS BIGINT), CAST(?5 AS BIGINT), "
         "COALESCE(CAST(?4 AS BIGINT), CAST(?5 AS BIGINT))) "
         "ON CONFLICT (project_id, sha) DO UPDATE SET "
         "commit_time = COALESCE(commits.commit_time, excluded.commit_time), "
         "commit_time_us = COALESCE(commits.commit_time_us, excluded.commit_time_us), "
         "first_started_us = CASE WHEN excluded.first_started_us < commits.first_started_us "
         "THEN excluded.first_started_us ELSE commits.first_started_us END, "
         "order_us = COALESCE(commits.commit_time_us, excluded.commit_time_us, "
         "CASE WHEN excluded.first_started_us < commits.first_started_us "
         "THEN excluded.first_started_us ELSE commits.first_started_us END) RETURNING id"},
    [S_RUN_ADD] = {"add a run",
                   "INSERT INTO runs (run_id, project_id, host_id, fingerprint_id, commit_id, ref, "
                   "commit_time, trigger, started_at, started_us, finished_at, matrix_name, "
                   "matrix_version, matrix_hash, matrix_profile, meta, n_cells, content_hash, "
                   "received_at, reference, confirmation_of, confirm) VALUES (?1, ?2, ?3, ?4, "
                   "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
                   "?21, ?22) RETURNING seq"},
    /* New cells are sorted, so that concurrent transactions lock them in the same order; the
     * update of a cell stored meanwhile is what makes RETURNING give its id too. Each of the
     * N_CHUNKS statements of either kind is this text with its number of rows. */
    [S_CELLS_ADD] = {"add cells",
                     "INSERT INTO cells (sig, key, op, reader, subject, kernel, placement, cpu, "
                     "contender_cpu, c, d) VALUES ",
                     NULL, CELL_NCOLS,
                     " ON CONFLICT (sig) DO UPDATE SET sig = excluded.sig RETURNING sig, id"},
    [S_MEAS_ADD] = {"add measurements",
                    "INSERT INTO measurements (run_seq, cell_id, ord, status, n, batch, min, p50, "
                    "p95, p99, max, mean, stddev, ci_lo, ci_hi, baseline_ns, below_resolution, "
                    "reason) VALUES ",
                    NULL, MEAS_NCOLS, ""},
    [S_RUN_GET] = {"read a run",
                   "SELECT r.seq, r.run_id, p.name, c.sha, r.ref, r.commit_time, r.trigger, "
                   "r.started_at, r.finished_at, r.matrix_name, r.matrix_version, "
                   "r.matrix_hash, r.matrix_profile, r.meta, f.doc, r.reference, "
                   "r.confirmation_of, r.confirm" RUN_FROM " WHERE r.run_id = ?1"},
    [S_RUN_CELLS] = {"read a run's cells",
                     "SELECT " CELL_COLS " FROM measurements m JOIN cells k ON k.id = m.cell_id "
                     "WHERE m.run_seq = ?1 ORDER BY m.ord"},
    [S_REF_HISTORY] = {"read a ref's history",
                       "SELECT " RUN_COLS RUN_FROM
                       " WHERE h.name = ?1 AND r.ref = ?2 AND (CAST(?3 AS TEXT) IS NULL OR "
                       "p.name = ?3) AND (COALESCE(c.order_us, r.started_us), r.seq) < "
                       "(CAST(?4 AS BIGINT), CAST(?5 AS BIGINT)) "
                       "ORDER BY COALESCE(c.order_us, r.started_us) DESC, r.seq DESC LIMIT ?6"},
    [S_HOSTS] = {"list hosts", "SELECT " HOST_COLS " ORDER BY h.name"},
    [S_HOST_GET] = {"read a host", "SELECT " HOST_COLS " WHERE h.name = ?1"},
    [S_FPS] = {"read fingerprints",
               "SELECT hash, platform_hash, first_seen, last_seen, doc FROM fingerprints "
               "WHERE host_id = ?1 ORDER BY id"},
    [S_TOKEN_ADD] = {"create a token",
                     "INSERT INTO tokens (role, host, hash, created_at) VALUES (?1, ?2, ?3, ?4) "
                     "RETURNING id"},
    [S_TOKEN_FIND] = {"look up a token", "SELECT " TOKEN_COLS " FROM tokens WHERE hash = ?1"},
    [S_TOKEN_LIST] = {"list tokens", "SELECT " TOKEN_COLS " FROM tokens ORDER BY id"},
    [S_TOKEN_REVOKE] = {"revoke a token",
                        "UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1"},
    [S_TOKEN_TOUCH] = {"update a token", "UPDATE tokens SET last_used_at = ?2 WHERE id = ?1"},
    [S_JOB_ADD] = {"add a job",
                   "INSERT INTO jobs (project, commit_sha, ref, subject, all_hosts, created_at, "
                   "expires_at, expires_us, created_by, confirm, confirmation_of, ab_base) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) RETURNING id"},
    [S_JOB_TARGET_ADD] = {"add a job's host",
                          "INSERT INTO job_targets (job_id, host) VALUES (?1, ?2) "
                          "ON CONFLICT DO NOTHING"},
    [S_JOB_CANDIDATE] =
        {"look for jobs",
         "SELECT " JOB_COLS " FROM jobs j WHERE j.expires_us > ?2 AND (j.all_hosts = TRUE OR "
         "EXISTS (SELECT 1 FROM job_targets t WHERE t.job_id = j.id AND t.host = ?1)) AND NOT "
         "EXISTS (SELECT 1 FROM job_hosts x WHERE x.job_id = j.id AND x.host = ?1 AND "
         "(x.state <> 'claimed' OR x.claimed_us > ?3)) ORDER BY j.id LIMIT 1"},
    [S_JOB_CLAIM] =
        {"claim a job",
         "INSERT INTO job_hosts (job_id, host, state, claimed_at, claimed_us, updated_at) "
         "VALUES (?1, ?2, 'claimed', ?3, ?4, ?3) ON CONFLICT (job_id, host) DO UPDATE SET "
         "claimed_at = excluded.claimed_at, claimed_us = excluded.claimed_us, "
         "updated_at = excluded.updated_at "
         "WHERE job_hosts.state = 'claimed' AND job_hosts.claimed_us <= ?5"},
    [S_JOB_UNCLAIM] = {"release a job", "DELETE FROM job_hosts WHERE job_id = ?1 AND host = ?2 "
                                        "AND state = 'claimed'"},
    /* done and failed are final; repeating the final state is harmless */
    [S_JOB_STATE_SET] = {"set a job's state",
                         "UPDATE job_hosts SET state = ?3, run_id = COALESCE(?4, run_id), "
                         "message = COALESCE(?5, message), updated_at = ?6 "
                         "WHERE job_id = ?1 AND host = ?2 AND "
                         "(state NOT IN ('done', 'failed') OR state = ?3)"},
    [S_JOB_STATE_GET] = {"read a job's state",
                         "SELECT state FROM job_hosts WHERE job_id = ?1 AND host = ?2"},
    [S_JOB_GET] = {"read a job", "SELECT " JOB_COLS " FROM jobs j WHERE j.id = ?1"},
    /* Targeted hosts that have not claimed the job yet show as "pending". */
    [S_JOB_HOSTS] = {"read a job's hosts",
                     "SELECT host, state, run_id, message, claimed_at, updated_at "
                     "FROM job_hosts WHERE job_id = ?1 UNION ALL "
                     "SELECT t.host, 'pending', NULL, NULL, NULL, NULL FROM job_targets t "
                     "WHERE t.job_id = ?1 AND NOT EXISTS (SELECT 1 FROM job_hosts h "
                     "WHERE h.job_id = t.job_id AND h.host = t.host) ORDER BY 1"},
    [S_JOB_LIST] = {"list jobs", "SELECT " JOB_COLS " FROM jobs j ORDER BY j.id DESC LIMIT ?1"},
    [S_JOB_POLLED_SET] = {"note a job poll",
                          "INSERT INTO job_polls (host, polled_us) VALUES (?1, ?2) "
                          "ON CONFLICT (host) DO UPDATE SET polled_us = excluded.polled_us"},
    [S_JOB_POLLED_GET] = {"read a host's last job poll",
                          "SELECT polled_us FROM job_polls WHERE host = ?1"},
    [S_JOB_CONFIRM_FIND] = {"find a run's confirmation job",
                            "SELECT id FROM jobs WHERE confirmation_of = ?1 LIMIT 1"},
    [S_CP_DELETE] = {"clear change points",
                     "DELETE FROM change_points WHERE project = ?1 AND host = ?2 AND ref = ?3"},
    [S_CP_ADD] = {"store a change point",
                  "INSERT INTO change_points (project, host, ref, cell_key, metric, commit_sha, "
                  "run_id, order_us, before, after, pvalue, computed_at) VALUES (?1, ?2, ?3, "
                  "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"},
    [S_CP_LIST] = {"list change points",
                   "SELECT project, host, ref, cell_key, metric, commit_sha, run_id, order_us, "
                   "before, after, pvalue, computed_at FROM change_points WHERE host = ?1 AND "
                   "ref = ?2 AND (CAST(?3 AS TEXT) IS NULL OR project = ?3) AND "
                   "(CAST(?4 AS TEXT) IS NULL OR cell_key = ?4) "
                   "ORDER BY order_us, cell_key, metric"},
    [S_VERDICT_PUT] = {"store a verdict",
                       "INSERT INTO verdicts (project, commit_sha, host, baseline_ref, status, "
                       "json, order_us, computed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
                       "ON CONFLICT (project, commit_sha, host) DO UPDATE SET "
                       "baseline_ref = excluded.baseline_ref, status = excluded.status, "
                       "json = excluded.json, order_us = excluded.order_us, "
                       "computed_at = excluded.computed_at"},
    [S_VERDICT_LIST] = {"list verdicts", "SELECT project, commit_sha, host, baseline_ref, status, "
                                         "json, computed_at, " VERDICT_REST},
    /* the same without the document, which may be large, nor what a row keeps after it
     * (reading a column stored after a large value reads through that value) */
    [S_VERDICT_STATUSES] = {"list verdicts", "SELECT project, commit_sha, host, baseline_ref, "
                                             "status, NULL, NULL, " VERDICT_REST},
    /* Merged with an equal task: a waiting one is left as it is, a claimed one gets another
     * generation (its worker's done leaves it queued); either gets its attempts back, since
     * what it has to do changed. */
    [S_TASK_ENQUEUE] = {"queue a task",
                        "INSERT INTO tasks (kind, project, commit_sha, host, ref, generation, "
                        "attempts, enqueued_at) VALUES (?1, ?2, ?3, ?4, ?5, 1, 0, ?6) "
                        "ON CONFLICT (kind, project, commit_sha, host, ref) DO UPDATE SET "
                        "generation = tasks.generation + CASE WHEN tasks.owner IS NULL "
                        "THEN 0 ELSE 1 END, attempts = 0"},
    /* "run" tasks first, then the oldest; a claim older than its lease is taken over */
    [S_TASK_CLAIM] =
        {"claim a task",
         "UPDATE tasks SET owner = ?1, claimed_at = ?2, claimed_us = ?3, lease_us = ?4, "
         "max_attempts = ?5, attempts = attempts + 1 WHERE id = (SELECT id FROM tasks WHERE "
         "(owner IS NULL OR claimed_us <= CAST(?3 AS BIGINT) - CAST(?4 AS BIGINT)) AND "
         "attempts < ?5 ORDER BY CASE WHEN kind = 'run' THEN 0 ELSE 1 END, id LIMIT 1) "
         "RETURNING " TASK_COLS,
         "UPDATE tasks SET owner = ?1, claimed_at = ?2, claimed_us = ?3, lease_us = ?4, "
         "max_attempts = ?5, attempts = attempts + 1 WHERE id = (SELECT id FROM tasks WHERE "
         "(owner IS NULL OR claimed_us <= CAST(?3 AS BIGINT) - CAST(?4 AS BIGINT)) AND "
         "attempts < ?5 ORDER BY CASE WHEN kind = 'run' THEN 0 ELSE 1 END, id LIMIT 1 "
         "FOR UPDATE SKIP LOCKED) RETURNING " TASK_COLS},
    [S_TASK_DELETE] = {"finish a task", "DELETE FROM tasks WHERE id = ?1 AND generation = ?2"},
    [S_TASK_RELEASE] = {"release a task",
                        "UPDATE tasks SET owner = NULL, claimed_at = NULL, claimed_us = NULL, "
                        "attempts = 0 WHERE id = ?1"},
    [S_TASK_FAIL] = {"fail a task",
                     "UPDATE tasks SET owner = NULL, claimed_at = NULL, claimed_us = NULL, "
                     "last_error = ?2 WHERE id = ?1"},
    [S_TASK_COUNT] = {"count tasks", "SELECT COALESCE(SUM(CASE WHEN " TASK_DEAD " THEN 0 ELSE 1 "
                                     "END), 0), COALESCE(SUM(CASE WHEN " TASK_DEAD
                                     " THEN 1 ELSE 0 END), 0) FROM tasks"},
    [S_CHART_PUT] = {"store a chart",
                     "INSERT INTO charts (path, content_type, hash, updated_at, data) VALUES "
                     "(?1, ?2, ?3, ?4, ?5) ON CONFLICT (path) DO UPDATE SET "
                     "content_type = excluded.content_type, hash = excluded.hash, "
                     "updated_at = excluded.updated_at, data = excluded.data"},
    [S_CHART_GET] = {"read a chart", "SELECT path, content_type, hash, updated_at, data "
                                     "FROM charts WHERE path = ?1"},
    [S_CHART_STAT] = {"read a chart", "SELECT path, content_type, hash, updated_at, "
                                      "length(data) FROM charts WHERE path = ?1"},
    [S_AB_FIND] = {"look up an A/B document",
                   "SELECT seq, content_hash FROM ab_docs WHERE ab_id = ?1"},
    [S_AB_ADD] = {"add an A/B document",
                  "INSERT INTO ab_docs (ab_id, project, host, subject, base_commit, head_commit, "
                  "ref, aa, verdict, content_hash, received_at, judgment, doc) VALUES (?1, ?2, "
                  "?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) RETURNING seq"},
    [S_AB_GET] = {"read an A/B document", "SELECT " AB_COLS ", judgment, doc FROM ab_docs "
                                          "WHERE ab_id = ?1"},
    /* newest first; the document itself is not read for a list */
    [S_AB_LIST] = {"list A/B documents",
                   "SELECT " AB_COLS ", judgment, NULL FROM ab_docs WHERE (CAST(?1 AS TEXT) IS "
                   "NULL OR project = ?1) AND (CAST(?2 AS TEXT) IS NULL OR head_commit = ?2) "
                   "AND (CAST(?3 AS TEXT) IS NULL OR host = ?3) ORDER BY seq DESC LIMIT ?4"},
};
#pragma GCC diagnostic pop

/* ---- statements ---- */

/* The text of a multi-row statement: "?" parameters, numbered in order. NULL without memory. */
static char *rows_sql(const struct stmt_def *d, int rows)
{
	struct aw_buf b;
	int rc;

	aw_buf_init(&b, (size_t)1 << 20);
	rc = aw_buf_puts(&b, d->sql);
	for (int r = 0; !rc && r < rows; r++) {
		rc = aw_buf_puts(&b, r ? ",(" : "(");
		for (int i = 0; !rc && i < d->ncols; i++)
			rc = aw_buf_puts(&b, i ? ",?" : "?");
		if (!rc)
			rc = aw_buf_puts(&b, ")");
	}
	if (!rc)
		rc = aw_buf_puts(&b, d->tail);
	if (rc) {
		aw_buf_release(&b);
		return NULL;
	}
	return aw_buf_detach(&b);
}

/* The prepared statement `id` of connection `c`, prepared on first use. */
static int get(struct store_conn *c, enum stmt_id id, struct store_stmt **out)
{
	enum stmt_id base = id >= S_MEAS_ADD && id < S_MEAS_ADD + N_CHUNKS     ? S_MEAS_ADD
	                    : id >= S_CELLS_ADD && id < S_CELLS_ADD + N_CHUNKS ? S_CELLS_ADD
	                                                                       : id;
	const struct stmt_def *d = &defs[base];
	const char *sql = d->sql;
	char *text = NULL;
	int rc;

	*out = c->stmt[id];
	if (*out)
		return 0;
	if (d->ncols) {
		text = rows_sql(d, chunk_rows[id - base]);
		if (!text)
			return -ENOMEM;
		sql = text;
	} else if (d->pg && c->drv->kind == STORE_POSTGRES) {
		sql = d->pg;
	}
	rc = c->drv->prepare(c, sql, d->what, true, &c->stmt[id]);
	free(text);
	*out = c->stmt[id];
	return rc;
}

static void reset(struct store_stmt *s)
{
	s->drv->reset(s);
}

static int step(struct store_stmt *s)
{
	return s->drv->step(s);
}

static void b_text(struct store_stmt *s, int i, const char *v)
{
	s->drv->bind_text(s, i, v);
}

static void b_i64(struct store_stmt *s, int i, int64_t v)
{
	s->drv->bind_i64(s, i, v);
}

/* An optional integer: AW_NONE is NULL. */
static void b_opt(struct store_stmt *s, int i, int64_t v)
{
	if (v == AW_NONE)
		s->drv->bind_null(s, i);
	else
		s->drv->bind_i64(s, i, v);
}

/* A measured value: NAN (and any other non-finite value) is NULL. */
static void b_real(struct store_stmt *s, int i, double v)
{
	if (isfinite(v))
		s->drv->bind_double(s, i, v);
	else
		s->drv->bind_null(s, i);
}

static const char *c_text(struct store_stmt *s, int i)
{
	return s->drv->col_text(s, i);
}

static int64_t c_i64(struct store_stmt *s, int i)
{
	return s->drv->col_i64(s, i);
}

static int64_t c_opt(struct store_stmt *s, int i)
{
	return s->drv->col_null(s, i) ? AW_NONE : s->drv->col_i64(s, i);
}

static double c_real(struct store_stmt *s, int i)
{
	return s->drv->col_null(s, i) ? NAN : s->drv->col_double(s, i);
}

/* Runs `s` to its end, ignoring its rows; *changes (may be NULL) gets the rows it changed.
 * Resets it. */
static int run_done(struct store_stmt *s, int64_t *changes)
{
	int rc;

	while ((rc = step(s)) == STORE_ROW)
		;
	if (!rc && changes)
		*changes = s->drv->changes(s);
	reset(s);
	return rc;
}

/* Runs `s`, whose rows and changes the caller does not need: a driver may send it now and
 * report its failure by a later call of the transaction (PostgreSQL pipelines them, which
 * saves a round trip each). Resets it. */
static int run_later(struct store_stmt *s)
{
	int rc;

	if (!s->drv->send)
		return run_done(s, NULL);
	rc = s->drv->send(s);
	reset(s);
	return rc;
}

/* Runs `s`, which returns one integer (RETURNING id, SELECT id): 0 with *out, -ENOENT when
 * it returned no row. Resets it. */
static int run_id(struct store_stmt *s, int64_t *out)
{
	int rc = step(s);

	if (rc == STORE_ROW) {
		*out = c_i64(s, 0);
		while ((rc = step(s)) == STORE_ROW) /* finish, so that RETURNING completes */
			;
	} else if (rc == STORE_DONE) {
		rc = -ENOENT;
	}
	reset(s);
	return rc;
}

/* Steps `s` calling `row(s, cls)` for each row; a non-zero return stops and is returned.
 * Resets it. */
static int each_row(struct store_stmt *s, int (*row)(struct store_stmt *, void *), void *cls)
{
	int rc;

	while ((rc = step(s)) == STORE_ROW) {
		rc = row(s, cls);
		if (rc)
			break;
	}
	reset(s);
	return rc;
}

static int begin(struct store_conn *c, enum store_tx tx)
{
	return c->drv->begin(c, tx);
}

static int commit(struct store_conn *c)
{
	return c->drv->commit(c);
}

/* Rolls back, and forgets cached cell ids since some may name rows that no longer exist. */
static void rollback(struct store_conn *c)
{
	c->drv->rollback(c);
	aw_strmap_clear(c->cells);
}

/* Commits when rc is 0, else (or when the commit fails) rolls back. Returns the outcome. */
static int finish(struct store_conn *c, int rc)
{
	if (!rc)
		rc = commit(c);
	if (rc)
		rollback(c);
	return rc;
}

/* ---- connections ---- */

int store_conn_init(struct store_conn *c)
{
	c->cells = aw_strmap_new(STORE_CELL_CACHE_MAX);
	return c->cells ? 0 : -ENOMEM;
}

void store_conn_close(struct store_conn *c)
{
	for (int i = 0; i < STORE_STMT_SLOTS; i++) {
		c->drv->finalize(c->stmt[i]);
		c->stmt[i] = NULL;
	}
	aw_strmap_free(&c->cells);
	c->drv->disconnect(c);
}

int store_ping(struct store_conn *c)
{
	struct store_stmt *s;
	int rc = get(c, S_PING, &s);

	return rc ? rc : run_done(s, NULL);
}

/* ---- schema ---- */

int store_migrate(struct store_conn *c, int *from, int *to, char **err)
{
	const struct store_driver *d = c->drv;
	int version = 0, first = -1, rc;
	struct store_stmt *s;
	char *msg = NULL;

	if (d->schema_lock) {
		rc = d->schema_lock(c, true, err);
		if (rc)
			return rc;
	}
	rc = d->exec(c,
	             "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
	             "applied_at TEXT NOT NULL)",
	             &msg);
	if (rc) {
		rc = aw_errorf(err, rc, "cannot create schema_migrations: %s", msg);
		goto out;
	}
	for (;;) {
		char now[AW_TIME_LEN];
		int64_t v, us;

		/* A write transaction first (SQLite: BEGIN IMMEDIATE), then the version: two
		 * processes migrating at once apply each migration exactly once. */
		rc = begin(c, STORE_TX_WRITE);
		if (rc) {
			aw_errorf(err, rc, "cannot begin a migration");
			goto out;
		}
		rc = get(c, S_VERSION, &s);
		if (!rc)
			rc = run_id(s, &v);
		if (rc) {
			aw_errorf(err, rc, "cannot read the schema version");
			goto fail;
		}
		version = (int)v;
		if (first < 0)
			first = version;
		if (version >= STORE_SCHEMA_VERSION) {
			rc = commit(c);
			if (rc) {
				aw_errorf(err, rc, "cannot commit");
				goto fail;
			}
			break;
		}
		/* A migration is constant DDL: a script run as it is. */
		rc = d->exec(c, d->migrations[version], &msg);
		if (rc) {
			aw_errorf(err, rc, "migration %d failed: %s", version + 1, msg);
			goto fail;
		}
		store_now(now, &us);
		rc = get(c, S_MIGRATED, &s);
		if (!rc) {
			b_i64(s, 1, version + 1);
			b_text(s, 2, now);
			rc = run_done(s, NULL);
		}
		if (!rc)
			rc = commit(c);
		if (rc) {
			aw_errorf(err, rc, "cannot record migration %d", version + 1);
			goto fail;
		}
	}
	if (version > STORE_SCHEMA_VERSION) {
		rc = aw_errorf(err, -EPROTO,
		               "the database has schema version %d, newer than this collector's %d",
		               version, STORE_SCHEMA_VERSION);
		goto out;
	}
	if (from)
		*from = first;
	if (to)
		*to = version;
	rc = 0;
	goto out;
fail:
	rollback(c);
out:
	if (d->schema_lock)
		d->schema_lock(c, false, NULL);
	free(msg);
	return rc;
}

/* ---- ingest ---- */

/* A cell the connection has no id for yet. */
struct new_cell {
	char *sig;
	size_t cell; /* index in the document */
	int64_t id;  /* AW_NONE until stored */
};

static int new_cell_cmp(const void *a, const void *b)
{
	const struct new_cell *x = a, *y = b;
	int d = strcmp(x->sig, y->sig);

	return d ? d : (x->cell > y->cell) - (x->cell < y->cell);
}

struct new_cells {
	struct new_cell *v;
	size_t n;
};

/* One row that RETURNING gave back: its id goes to every entry of that signature. */
static int returned_cell(struct store_stmt *s, void *cls)
{
	struct new_cells *nc = cls;
	const char *sig = c_text(s, 0);
	size_t lo = 0, hi = nc->n;

	while (lo < hi) { /* the first entry whose sig is not below `sig` */
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(nc->v[mid].sig, sig) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < nc->n && !strcmp(nc->v[lo].sig, sig); lo++)
		nc->v[lo].id = c_i64(s, 1);
	return 0;
}

/* Stores the next `rows` distinct cells of nc->v, from nc->v[*next] on, with statement `id`
 * (a multi-row statement of that many rows); advances *next past them. */
static int add_cells(struct store_conn *c, const struct aw_result *r, struct new_cells *nc,
                     size_t *next, int rows, enum stmt_id id)
{
	struct store_stmt *s;
	int rc = get(c, id, &s);

	if (rc)
		return rc;
	for (int row = 0; row < rows; row++) {
		const struct new_cell *m = &nc->v[*next];
		const struct aw_cell *cell = &r->cells[m->cell];
		int p = row * CELL_NCOLS;

		b_text(s, p + 1, m->sig);
		b_text(s, p + 2, cell->key);
		b_text(s, p + 3, cell->op);
		b_text(s, p + 4, cell->reader);
		b_text(s, p + 5, cell->subject);
		b_text(s, p + 6, cell->kernel);
		b_text(s, p + 7, cell->placement);
		b_opt(s, p + 8, cell->cpu);
		b_opt(s, p + 9, cell->contender_cpu);
		b_opt(s, p + 10, cell->c);
		b_i64(s, p + 11, cell->d);
		/* the next distinct signature */
		for ((*next)++; *next < nc->n && !strcmp(nc->v[*next].sig, m->sig); (*next)++)
			;
	}
	return each_row(s, returned_cell, nc);
}

/* The id of every cell of `r` into ids[]: from the connection's cache, else stored (or found)
 * with a few multi-row statements. */
static int cell_ids(struct store_conn *c, const struct aw_result *r, int64_t *ids)
{
	struct new_cells nc = {NULL, 0};
	char sig[STORE_SIG_MAX];
	size_t distinct = 0, next = 0;
	int rc = 0;

	for (size_t i = 0; i < r->n_cells; i++) {
		rc = store_cell_sig(&r->cells[i], sig, sizeof(sig));
		if (rc)
			goto out;
		if (!aw_strmap_get(c->cells, sig, &ids[i]))
			continue;
		if (!nc.v) {
			nc.v = calloc(r->n_cells - i, sizeof(*nc.v));
			if (!nc.v) {
				rc = -ENOMEM;
				goto out;
			}
		}
		nc.v[nc.n] = (struct new_cell){strdup(sig), i, AW_NONE};
		if (!nc.v[nc.n++].sig) {
			rc = -ENOMEM;
			goto out;
		}
	}
	if (!nc.n)
		goto out;
	qsort(nc.v, nc.n, sizeof(*nc.v), new_cell_cmp);
	for (size_t k = 0; k < nc.n; k++)
		distinct += !k || strcmp(nc.v[k].sig, nc.v[k - 1].sig);
	for (int k = 0; !rc && k < N_CHUNKS; k++)
		while (!rc && distinct >= (size_t)chunk_rows[k]) {
			rc = add_cells(c, r, &nc, &next, chunk_rows[k], S_CELLS_ADD + k);
			distinct -= (size_t)chunk_rows[k];
		}
	for (size_t k = 0; !rc && k < nc.n; k++) {
		if (nc.v[k].id == AW_NONE) {
			store_count_error();
			aw_error("store: cell '%s' vanished while storing it",
			         r->cells[nc.v[k].cell].key);
			rc = -EIO;
			break;
		}
		ids[nc.v[k].cell] = nc.v[k].id;
		/* A full cache starts over rather than grow: the matrix has far fewer cells. */
		if (aw_strmap_put(c->cells, nc.v[k].sig, nc.v[k].id) == -ENOSPC) {
			aw_strmap_clear(c->cells);
			aw_strmap_put(c->cells, nc.v[k].sig, nc.v[k].id);
		}
	}
out:
	for (size_t k = 0; k < nc.n; k++)
		free(nc.v[k].sig);
	free(nc.v);
	return rc;
}

/* Measurements [first, first + rows) of `r` with statement `id`. */
static int add_measurements(struct store_conn *c, const struct aw_result *r, int64_t seq,
                            const int64_t *ids, size_t first, int rows, enum stmt_id id)
{
	struct store_stmt *s;
	int rc = get(c, id, &s);

	if (rc)
		return rc;
	for (int row = 0; row < rows; row++) {
		size_t i = first + (size_t)row;
		const struct aw_cell *cell = &r->cells[i];
		int p = row * MEAS_NCOLS;

		b_i64(s, p + 1, seq);
		b_i64(s, p + 2, ids[i]);
		b_i64(s, p + 3, (int64_t)i);
		b_text(s, p + 4, aw_cell_status_name(cell->status));
		b_i64(s, p + 5, (int64_t)cell->n);
		b_i64(s, p + 6, (int64_t)cell->batch);
		b_real(s, p + 7, cell->min);
		b_real(s, p + 8, cell->p50);
		b_real(s, p + 9, cell->p95);
		b_real(s, p + 10, cell->p99);
		b_real(s, p + 11, cell->max);
		b_real(s, p + 12, cell->mean);
		b_real(s, p + 13, cell->stddev);
		b_real(s, p + 14, cell->ci_lo);
		b_real(s, p + 15, cell->ci_hi);
		b_real(s, p + 16, cell->baseline_ns);
		b_i64(s, p + 17, cell->below_resolution);
		b_text(s, p + 18, cell->reason);
	}
	return run_later(s);
}

static int put_cells(struct store_conn *c, const struct aw_result *r, int64_t seq)
{
	int64_t *ids = calloc(r->n_cells ? r->n_cells : 1, sizeof(*ids));
	size_t done = 0;
	int rc;

	if (!ids)
		return -ENOMEM;
	rc = cell_ids(c, r, ids);
	for (int k = 0; !rc && k < N_CHUNKS; k++)
		while (!rc && r->n_cells - done >= (size_t)chunk_rows[k]) {
			rc = add_measurements(c, r, seq, ids, done, chunk_rows[k], S_MEAS_ADD + k);
			done += (size_t)chunk_rows[k];
		}
	free(ids);
	return rc;
}

static int put_one(struct store_conn *c, struct store_put *it)
{
	const struct aw_result *r = it->result;
	const char *host = json_string_value(json_object_get(r->host, "name"));
	const char *arch = json_string_value(json_object_get(r->host, "arch"));
	const char *model = json_string_value(json_object_get(r->host, "cpu_model"));
	const char *platform = json_string_value(json_object_get(r->host, "platform_hash"));
	int64_t project, host_id, fp, commit_id = AW_NONE, started_us = 0, ct_us = AW_NONE;
	struct store_stmt *s;
	char *meta = NULL, *reference = NULL;
	int rc;

	rc = get(c, S_RUN_FIND, &s);
	if (rc)
		return rc;
	b_text(s, 1, r->run_id);
	rc = step(s);
	if (rc == STORE_ROW) {
		it->seq = c_i64(s, 0);
		it->outcome =
		    strcmp(c_text(s, 1), it->content_hash) ? STORE_CONFLICT : STORE_DUPLICATE;
		reset(s);
		return 0;
	}
	reset(s);
	if (rc < 0)
		return rc;

	rc = get(c, S_PROJECT_FIND, &s);
	if (rc)
		return rc;
	b_text(s, 1, r->project);
	rc = run_id(s, &project);
	if (rc == -ENOENT) {
		rc = get(c, S_PROJECT_ADD, &s);
		if (rc)
			return rc;
		b_text(s, 1, r->project);
		b_text(s, 2, it->received_at);
		rc = run_id(s, &project);
	}
	if (rc)
		return rc;

	rc = get(c, S_HOST_UPSERT, &s);
	if (rc)
		return rc;
	b_text(s, 1, host);
	b_text(s, 2, arch);
	b_text(s, 3, model);
	b_text(s, 4, platform);
	b_text(s, 5, it->received_at);
	rc = run_id(s, &host_id);
	if (rc)
		return rc;

	rc = get(c, S_FP_UPSERT, &s);
	if (rc)
		return rc;
	b_i64(s, 1, host_id);
	b_text(s, 2, it->host_hash);
	b_text(s, 3, platform);
	b_text(s, 4, it->host_json);
	b_text(s, 5, it->received_at);
	rc = run_id(s, &fp);
	if (rc)
		return rc;
	rc = get(c, S_HOST_SET_FP, &s);
	if (rc)
		return rc;
	b_i64(s, 1, host_id);
	b_i64(s, 2, fp);
	rc = run_later(s);
	if (rc)
		return rc;

	aw_time_parse(r->started_at, &started_us);
	if (r->commit_time)
		aw_time_parse(r->commit_time, &ct_us);
	if (r->commit) {
		rc = get(c, S_COMMIT_UPSERT, &s);
		if (rc)
			return rc;
		b_i64(s, 1, project);
		b_text(s, 2, r->commit);
		b_text(s, 3, r->commit_time);
		b_opt(s, 4, ct_us);
		b_i64(s, 5, started_us);
		rc = run_id(s, &commit_id);
		if (rc)
			return rc;
	}

	if (r->meta) {
		meta = json_dumps(r->meta, JSON_COMPACT | JSON_SORT_KEYS);
		if (!meta)
			return -ENOMEM;
	}
	if (r->reference_kernel) {
		/* the reference series as the document had it; rebuilt over the cells on read */
		json_t *ref = aw_result_reference_to_json(r);

		reference = ref ? json_dumps(ref, JSON_COMPACT) : NULL;
		json_decref(ref);
		if (!reference) {
			free(meta);
			return -ENOMEM;
		}
	}
	rc = get(c, S_RUN_ADD, &s);
	if (rc) {
		free(meta);
		free(reference);
		return rc;
	}
	b_text(s, 1, r->run_id);
	b_i64(s, 2, project);
	b_i64(s, 3, host_id);
	b_i64(s, 4, fp);
	b_opt(s, 5, commit_id);
	b_text(s, 6, r->ref);
	b_text(s, 7, r->commit_time);
	b_text(s, 8, aw_trigger_name(r->trigger));
	b_text(s, 9, r->started_at);
	b_i64(s, 10, started_us);
	b_text(s, 11, r->finished_at);
	b_text(s, 12, r->matrix_name);
	b_i64(s, 13, r->matrix_version);
	b_text(s, 14, r->matrix_hash);
	b_text(s, 15, r->matrix_profile);
	b_text(s, 16, meta);
	b_i64(s, 17, (int64_t)r->n_cells);
	b_text(s, 18, it->content_hash);
	b_text(s, 19, it->received_at);
	b_text(s, 20, reference);
	b_text(s, 21, r->confirmation_of);
	b_opt(s, 22, r->confirm > 0 ? r->confirm : AW_NONE);
	rc = run_id(s, &it->seq);
	free(meta);
	free(reference);
	if (rc)
		return rc;
	rc = put_cells(c, r, it->seq);
	if (rc)
		return rc;
	it->outcome = STORE_CREATED;
	return 0;
}

static int task_enqueue(struct store_conn *c, const char *kind, const char *project,
                        const char *commit, const char *host, const char *ref, const char *now)
{
	struct store_stmt *s;
	int rc = get(c, S_TASK_ENQUEUE, &s);

	if (rc)
		return rc;
	b_text(s, 1, kind);
	b_text(s, 2, project);
	b_text(s, 3, commit ? commit : ""); /* part of the task's key: never NULL */
	b_text(s, 4, host);
	b_text(s, 5, ref);
	b_text(s, 6, now);
	return run_later(s);
}

static const char *put_host(const struct store_put *p)
{
	return json_string_value(json_object_get(p->result->host, "name"));
}

static int str_cmp(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

/* Orders created runs by their task's key (project, commit, host, ref). */
static int put_key_cmp(const void *a, const void *b)
{
	const struct store_put *x = *(const struct store_put *const *)a;
	const struct store_put *y = *(const struct store_put *const *)b;
	int d = strcmp(x->result->project, y->result->project);

	if (!d)
		d = str_cmp(x->result->commit, y->result->commit);
	if (!d)
		d = str_cmp(put_host(x), put_host(y));
	return d ? d : strcmp(x->result->ref, y->result->ref);
}

/* The "run" task of each created run, in key order (so that concurrent transactions update
 * shared task rows in the same order) and each key once. */
static int enqueue_created(struct store_conn *c, struct store_put *items, size_t n)
{
	struct store_put **created = calloc(n ? n : 1, sizeof(*created));
	char now[AW_TIME_LEN];
	size_t k = 0;
	int64_t us;
	int rc = 0;

	if (!created)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (items[i].outcome == STORE_CREATED)
			created[k++] = &items[i];
	qsort(created, k, sizeof(*created), put_key_cmp);
	store_now(now, &us);
	for (size_t i = 0; !rc && i < k; i++) {
		const struct aw_result *r = created[i]->result;

		if (i && !put_key_cmp(&created[i - 1], &created[i]))
			continue;
		rc = task_enqueue(c, "run", r->project, r->commit, put_host(created[i]), r->ref,
		                  now);
	}
	free(created);
	return rc;
}

int store_put_runs(struct store_conn *c, struct store_put *items, size_t n)
{
	int rc = begin(c, STORE_TX_WRITE);

	if (rc)
		return rc;
	for (size_t i = 0; !rc && i < n; i++)
		rc = put_one(c, &items[i]);
	if (!rc)
		rc = enqueue_created(c, items, n);
	return finish(c, rc);
}

/* ---- runs ---- */

static void fill_run(struct store_stmt *s, struct store_run *run)
{
	run->seq = c_i64(s, 0);
	run->run_id = c_text(s, 1);
	run->project = c_text(s, 2);
	run->host = c_text(s, 3);
	run->commit = c_text(s, 4);
	run->ref = c_text(s, 5);
	run->commit_time = c_text(s, 6);
	run->trigger = c_text(s, 7);
	run->started_at = c_text(s, 8);
	run->finished_at = c_text(s, 9);
	run->received_at = c_text(s, 10);
	run->matrix_name = c_text(s, 11);
	run->matrix_version = c_i64(s, 12);
	run->matrix_hash = c_text(s, 13);
	run->matrix_profile = c_text(s, 14);
	run->n_cells = c_i64(s, 15);
	run->order_us = c_i64(s, 16);
	run->platform_hash = c_text(s, 17);
	run->confirmation_of = c_text(s, 18);
	run->confirm = c_opt(s, 19) > 0 ? c_opt(s, 19) : 0;
	run->reference = c_text(s, 20);
}

struct run_rows {
	store_run_cb cb;
	void *cls;
};

static int run_row(struct store_stmt *s, void *cls)
{
	struct run_rows *rr = cls;
	struct store_run run;

	fill_run(s, &run);
	return rr->cb(&run, rr->cls);
}

int store_list_runs(struct store_conn *c, const struct store_run_filter *f, store_run_cb cb,
                    void *cls)
{
	struct run_rows rr = {cb, cls};
	struct store_stmt *s = NULL;
	const char *texts[4];
	struct aw_buf sql;
	int n = 0, rc;

	aw_buf_init(&sql, 4096);
	/* The statement text comes from constant fragments only; every value is bound. The
	 * filters are left out rather than written "(? IS NULL OR ...)", so that each variant
	 * uses its index. */
	rc = aw_buf_puts(&sql, "SELECT " RUN_COLS RUN_FROM " WHERE 1 = 1");
	if (!rc && f->project) {
		texts[n++] = f->project;
		rc = aw_buf_printf(&sql, " AND p.name = ?%d", n);
	}
	if (!rc && f->host) {
		texts[n++] = f->host;
		rc = aw_buf_printf(&sql, " AND h.name = ?%d", n);
	}
	if (!rc && f->commit) {
		texts[n++] = f->commit;
		rc = aw_buf_printf(&sql, " AND c.sha = ?%d", n);
	}
	if (!rc && f->ref) {
		texts[n++] = f->ref;
		rc = aw_buf_printf(&sql, " AND r.ref = ?%d", n);
	}
	if (!rc)
		rc = aw_buf_printf(&sql, " AND r.seq < ?%d ORDER BY r.seq DESC LIMIT ?%d", n + 1,
		                   n + 2);
	if (!rc)
		rc = c->drv->prepare(c, sql.data, "list runs", false, &s);
	if (rc)
		goto out;
	for (int i = 0; i < n; i++)
		b_text(s, i + 1, texts[i]);
	b_i64(s, n + 1, f->before_seq > 0 ? f->before_seq : INT64_MAX);
	b_i64(s, n + 2, f->limit);
	rc = each_row(s, run_row, &rr);
out:
	c->drv->finalize(s);
	aw_buf_release(&sql);
	return rc;
}

int store_ref_history(struct store_conn *c, const char *project, const char *host, const char *ref,
                      int64_t before_order_us, int64_t before_seq, unsigned limit, store_run_cb cb,
                      void *cls)
{
	struct run_rows rr = {cb, cls};
	struct store_stmt *s;
	int rc = get(c, S_REF_HISTORY, &s);

	if (rc)
		return rc;
	b_text(s, 1, host);
	b_text(s, 2, ref);
	b_text(s, 3, project);
	b_i64(s, 4, before_order_us);
	b_i64(s, 5, before_seq);
	b_i64(s, 6, limit);
	return each_row(s, run_row, &rr);
}

/* Fills a cell from the CELL_COLS columns. Returns 0 or -ENOMEM/-EIO. */
static int fill_cell(struct store_stmt *s, struct aw_cell *cell)
{
	if (aw_set_str(&cell->key, c_text(s, 0)) || aw_set_str(&cell->op, c_text(s, 1)) ||
	    aw_set_str(&cell->reader, c_text(s, 2)) || aw_set_str(&cell->subject, c_text(s, 3)) ||
	    aw_set_str(&cell->kernel, c_text(s, 4)) || aw_set_str(&cell->placement, c_text(s, 5)) ||
	    aw_set_str(&cell->reason, c_text(s, 24)))
		return -ENOMEM;
	cell->cpu = (int)c_opt(s, 6);
	cell->contender_cpu = (int)c_opt(s, 7);
	cell->c = c_opt(s, 8);
	cell->d = c_i64(s, 9);
	if (store_status_parse(c_text(s, 10), &cell->status))
		return -EIO;
	cell->n = (uint64_t)c_i64(s, 11);
	cell->batch = (uint64_t)c_i64(s, 12);
	cell->min = c_real(s, 13);
	cell->p50 = c_real(s, 14);
	cell->p95 = c_real(s, 15);
	cell->p99 = c_real(s, 16);
	cell->max = c_real(s, 17);
	cell->mean = c_real(s, 18);
	cell->stddev = c_real(s, 19);
	cell->ci_lo = c_real(s, 20);
	cell->ci_hi = c_real(s, 21);
	cell->baseline_ns = c_real(s, 22);
	cell->below_resolution = c_i64(s, 23) != 0;
	return 0;
}

struct cell_rows {
	store_cell_cb cb;
	void *cls;
	struct aw_result *into; /* or append here */
};

static int cell_row(struct store_stmt *s, void *cls)
{
	struct cell_rows *cr = cls;
	struct aw_cell tmp = {0}, *cell = &tmp;
	int rc;

	if (cr->into) {
		cell = aw_result_add_cell(cr->into);
		return cell ? fill_cell(s, cell) : -ENOMEM;
	}
	rc = fill_cell(s, cell);
	if (!rc)
		rc = cr->cb(cell, cr->cls);
	aw_cell_release(&tmp);
	return rc;
}

int store_run_cells(struct store_conn *c, int64_t seq, store_cell_cb cb, void *cls)
{
	struct cell_rows cr = {cb, cls, NULL};
	struct store_stmt *s;
	int rc = get(c, S_RUN_CELLS, &s);

	if (rc)
		return rc;
	b_i64(s, 1, seq);
	return each_row(s, cell_row, &cr);
}

/* The header of a run from S_RUN_GET into a new result. Returns 0 or -ENOMEM/-EIO. */
static int fill_header(struct store_stmt *s, struct aw_result *r)
{
	snprintf(r->run_id, sizeof(r->run_id), "%s", c_text(s, 1));
	if (aw_set_str(&r->project, c_text(s, 2)) || aw_set_str(&r->commit, c_text(s, 3)) ||
	    aw_set_str(&r->ref, c_text(s, 4)) || aw_set_str(&r->commit_time, c_text(s, 5)) ||
	    aw_set_str(&r->matrix_name, c_text(s, 9)) ||
	    aw_set_str(&r->matrix_hash, c_text(s, 11)) ||
	    aw_set_str(&r->matrix_profile, c_text(s, 12)))
		return -ENOMEM;
	if (aw_trigger_parse(c_text(s, 6), &r->trigger))
		return -EIO;
	snprintf(r->started_at, sizeof(r->started_at), "%s", c_text(s, 7));
	snprintf(r->finished_at, sizeof(r->finished_at), "%s", c_text(s, 8));
	r->matrix_version = c_i64(s, 10);
	if (aw_set_str(&r->confirmation_of, c_text(s, 16)))
		return -ENOMEM;
	r->confirm = c_opt(s, 17) > 0 ? c_opt(s, 17) : 0;
	if (c_text(s, 13)) {
		r->meta = json_loads(c_text(s, 13), 0, NULL);
		if (!r->meta)
			return -EIO;
	}
	r->host = json_loads(c_text(s, 14), 0, NULL);
	return r->host ? 0 : -EIO;
}

/* The stored reference series (column 15 of S_RUN_GET, text kept) over r's cells, once they are
 * in place. Returns 0, or -ENOMEM/-EIO (a stored series that does not fit its cells). */
static int fill_reference(const char *text, struct aw_result *r)
{
	struct aw_verr e;
	json_t *ref;
	int rc;

	if (!text)
		return 0;
	ref = json_loads(text, 0, NULL);
	if (!ref)
		return -EIO;
	rc = aw_result_reference_from_json(r, ref, &e) ? -EIO : 0;
	json_decref(ref);
	return rc;
}

int store_get_run(struct store_conn *c, const char *run_id, struct aw_result **out)
{
	struct cell_rows cr = {NULL, NULL, NULL};
	struct aw_result *r = NULL;
	struct store_stmt *s;
	char *reference = NULL;
	int64_t seq = 0;
	int rc;

	*out = NULL;
	rc = get(c, S_RUN_GET, &s);
	if (rc)
		return rc;
	/* The header and the cells are read in one transaction so they match. */
	rc = begin(c, STORE_TX_READ);
	if (rc)
		return rc;
	b_text(s, 1, run_id);
	rc = step(s);
	if (rc == STORE_ROW) {
		seq = c_i64(s, 0);
		r = aw_result_new();
		rc = r ? fill_header(s, r) : -ENOMEM;
		if (!rc && c_text(s, 15) && !(reference = strdup(c_text(s, 15))))
			rc = -ENOMEM;
	} else if (rc == STORE_DONE) {
		rc = -ENOENT;
	}
	reset(s);
	if (!rc)
		rc = get(c, S_RUN_CELLS, &s);
	if (!rc) {
		cr.into = r;
		b_i64(s, 1, seq);
		rc = each_row(s, cell_row, &cr);
	}
	if (!rc)
		rc = fill_reference(reference, r);
	if (!rc) {
		*out = r;
		r = NULL;
	}
	commit(c); /* ends the read */
	aw_result_free(&r);
	free(reference);
	return rc;
}

/* ---- trends ---- */

struct point_rows {
	store_point_cb cb;
	void *cls;
};

static int point_row(struct store_stmt *s, void *cls)
{
	struct point_rows *pr = cls;
	struct store_point p = {
	    .seq = c_i64(s, 0),
	    .run_id = c_text(s, 1),
	    .commit = c_text(s, 2),
	    .started_at = c_text(s, 3),
	    .matrix_hash = c_text(s, 4),
	    .status = c_text(s, 5),
	    .order_us = c_i64(s, 6),
	    .value = c_real(s, 7),
	};

	return pr->cb(&p, pr->cls);
}

int store_series(struct store_conn *c, const struct store_series_query *q, store_point_cb cb,
                 void *cls)
{
	struct point_rows pr = {cb, cls};
	struct store_stmt *s = NULL;
	struct aw_buf sql;
	int rc;

	if ((unsigned)q->metric >= STORE_METRIC_COUNT)
		return -EINVAL;
	aw_buf_init(&sql, 4096);
	/* The metric's column comes from a fixed table, never from the request. */
	rc = aw_buf_printf(
	    &sql,
	    "SELECT * FROM (SELECT r.seq, r.run_id, c.sha, r.started_at, r.matrix_hash, m.status, "
	    "COALESCE(c.order_us, r.started_us) AS o, m.%s FROM runs r "
	    "JOIN hosts h ON h.id = r.host_id JOIN projects p ON p.id = r.project_id "
	    "JOIN measurements m ON m.run_seq = r.seq JOIN cells k ON k.id = m.cell_id "
	    "LEFT JOIN commits c ON c.id = r.commit_id "
	    "WHERE h.name = ?1 AND r.ref = ?2 AND k.key = ?3 AND (CAST(?4 AS TEXT) IS NULL OR "
	    "p.name = ?4) ORDER BY o DESC, r.seq DESC LIMIT ?5) s ORDER BY o, seq",
	    store_metric_columns[q->metric]);
	if (!rc)
		rc = c->drv->prepare(c, sql.data, "read a series", false, &s);
	if (rc)
		goto out;
	b_text(s, 1, q->host);
	b_text(s, 2, q->ref);
	b_text(s, 3, q->cell_key);
	b_text(s, 4, q->project);
	b_i64(s, 5, q->limit);
	rc = each_row(s, point_row, &pr);
out:
	c->drv->finalize(s);
	aw_buf_release(&sql);
	return rc;
}

/* ---- hosts ---- */

struct host_rows {
	store_host_cb cb;
	store_fingerprint_cb fcb;
	void *cls;
	int64_t id;
};

static int host_row(struct store_stmt *s, void *cls)
{
	struct host_rows *hr = cls;
	struct store_host h = {
	    .name = c_text(s, 0),
	    .arch = c_text(s, 1),
	    .cpu_model = c_text(s, 2),
	    .platform_hash = c_text(s, 3),
	    .first_seen = c_text(s, 4),
	    .last_seen = c_text(s, 5),
	    .fingerprint = c_text(s, 6),
	    .runs = c_i64(s, 7),
	};

	hr->id = c_i64(s, 8);
	return hr->cb(&h, hr->cls);
}

int store_list_hosts(struct store_conn *c, store_host_cb cb, void *cls)
{
	struct host_rows hr = {cb, NULL, cls, 0};
	struct store_stmt *s;
	int rc = get(c, S_HOSTS, &s);

	return rc ? rc : each_row(s, host_row, &hr);
}

static int fp_row(struct store_stmt *s, void *cls)
{
	struct host_rows *hr = cls;
	struct store_fingerprint f = {
	    .hash = c_text(s, 0),
	    .platform_hash = c_text(s, 1),
	    .first_seen = c_text(s, 2),
	    .last_seen = c_text(s, 3),
	    .doc = c_text(s, 4),
	};

	return hr->fcb(&f, hr->cls);
}

int store_get_host(struct store_conn *c, const char *name, store_host_cb cb,
                   store_fingerprint_cb fcb, void *cls)
{
	struct host_rows hr = {cb, fcb, cls, 0};
	struct store_stmt *s;
	int rc = get(c, S_HOST_GET, &s);

	if (rc)
		return rc;
	b_text(s, 1, name);
	rc = each_row(s, host_row, &hr);
	if (rc)
		return rc;
	if (!hr.id)
		return -ENOENT;
	if (!fcb)
		return 0;
	rc = get(c, S_FPS, &s);
	if (rc)
		return rc;
	b_i64(s, 1, hr.id);
	return each_row(s, fp_row, &hr);
}

/* ---- tokens ---- */

int store_token_create(struct store_conn *c, enum store_role role, const char *host,
                       const char *hash, int64_t *id)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us;
	int rc = get(c, S_TOKEN_ADD, &s);

	if (rc)
		return rc;
	store_now(now, &us);
	b_text(s, 1, store_role_name(role));
	b_text(s, 2, host);
	b_text(s, 3, hash);
	b_text(s, 4, now);
	return run_id(s, id);
}

struct token_rows {
	store_token_cb cb;
	void *cls;
	bool found;
};

static int token_row(struct store_stmt *s, void *cls)
{
	struct token_rows *tr = cls;
	struct store_token t = {
	    .id = c_i64(s, 0),
	    .host = c_text(s, 2),
	    .hash = c_text(s, 3),
	    .created_at = c_text(s, 4),
	    .revoked_at = c_text(s, 5),
	    .last_used_at = c_text(s, 6),
	};

	if (store_role_parse(c_text(s, 1), &t.role))
		return -EIO;
	tr->found = true;
	return tr->cb(&t, tr->cls);
}

int store_token_find(struct store_conn *c, const char *hash, store_token_cb cb, void *cls)
{
	struct token_rows tr = {cb, cls, false};
	struct store_stmt *s;
	int rc = get(c, S_TOKEN_FIND, &s);

	if (rc)
		return rc;
	b_text(s, 1, hash);
	rc = each_row(s, token_row, &tr);
	return rc ? rc : tr.found ? 0 : -ENOENT;
}

int store_token_list(struct store_conn *c, store_token_cb cb, void *cls)
{
	struct token_rows tr = {cb, cls, false};
	struct store_stmt *s;
	int rc = get(c, S_TOKEN_LIST, &s);

	return rc ? rc : each_row(s, token_row, &tr);
}

int store_token_revoke(struct store_conn *c, int64_t id)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us, changed = 0;
	int rc = get(c, S_TOKEN_REVOKE, &s);

	if (rc)
		return rc;
	store_now(now, &us);
	b_i64(s, 1, id);
	b_text(s, 2, now);
	rc = run_done(s, &changed);
	return rc ? rc : changed ? 0 : -ENOENT;
}

int store_token_touch(struct store_conn *c, int64_t id, const char *when)
{
	struct store_stmt *s;
	int rc = get(c, S_TOKEN_TOUCH, &s);

	if (rc)
		return rc;
	b_i64(s, 1, id);
	b_text(s, 2, when);
	return run_done(s, NULL);
}

/* ---- jobs ---- */

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
	rc = begin(c, STORE_TX_WRITE);
	if (rc)
		return rc;
	rc = get(c, S_JOB_ADD, &s);
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
		rc = run_id(s, id);
	}
	for (size_t i = 0; !rc && spec->hosts && i < spec->n_hosts; i++) {
		rc = get(c, S_JOB_TARGET_ADD, &s);
		if (rc)
			break;
		b_i64(s, 1, *id);
		b_text(s, 2, spec->hosts[i]);
		rc = run_later(s);
	}
	return finish(c, rc);
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
	};

	jr->found = j.id;
	return jr->cb ? jr->cb(&j, jr->cls) : 0;
}

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

		rc = get(c, S_JOB_CANDIDATE, &s);
		if (rc)
			return rc;
		b_text(s, 1, host);
		b_i64(s, 2, us);
		b_i64(s, 3, us - reclaim_us);
		rc = each_row(s, job_row, &jr);
		if (rc)
			return rc;
		if (!jr.found)
			return -ENOENT;
		rc = get(c, S_JOB_CLAIM, &s);
		if (rc)
			return rc;
		b_i64(s, 1, jr.found);
		b_text(s, 2, host);
		b_text(s, 3, now);
		b_i64(s, 4, us);
		b_i64(s, 5, us - reclaim_us);
		rc = run_done(s, &changed);
		if (rc == -EAGAIN) /* a concurrent claim of the same row */
			continue;
		if (rc)
			return rc;
		if (changed == 1) {
			struct job_rows out = {cb, NULL, cls, 0};

			rc = get(c, S_JOB_GET, &s);
			if (rc)
				return rc;
			b_i64(s, 1, jr.found);
			return each_row(s, job_row, &out);
		}
	}
	return -ENOENT;
}

int store_job_polled(struct store_conn *c, const char *host)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us;
	int rc = get(c, S_JOB_POLLED_SET, &s);

	if (rc)
		return rc;
	store_now(now, &us);
	b_text(s, 1, host);
	b_i64(s, 2, us);
	return run_done(s, NULL);
}

int store_job_polls(struct store_conn *c, const char *host, int64_t max_age_us, bool *polls)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us;
	int rc = get(c, S_JOB_POLLED_GET, &s);

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

int store_job_confirming(struct store_conn *c, const char *run_id, bool *exists)
{
	struct store_stmt *s;
	int rc = get(c, S_JOB_CONFIRM_FIND, &s);

	*exists = false;
	if (rc)
		return rc;
	b_text(s, 1, run_id);
	rc = step(s);
	*exists = rc == STORE_ROW;
	reset(s);
	return rc < 0 ? rc : 0;
}

int store_job_unclaim(struct store_conn *c, int64_t id, const char *host)
{
	struct store_stmt *s;
	int rc = get(c, S_JOB_UNCLAIM, &s);

	if (rc)
		return rc;
	b_i64(s, 1, id);
	b_text(s, 2, host);
	return run_done(s, NULL);
}

int store_job_set_state(struct store_conn *c, int64_t id, const char *host, const char *state,
                        const char *run_id, const char *message)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us, changed = 0;
	int rc;

	store_now(now, &us);
	rc = get(c, S_JOB_STATE_SET, &s);
	if (rc)
		return rc;
	b_i64(s, 1, id);
	b_text(s, 2, host);
	b_text(s, 3, state);
	b_text(s, 4, run_id);
	b_text(s, 5, message);
	b_text(s, 6, now);
	rc = run_done(s, &changed);
	if (rc || changed)
		return rc;
	/* Nothing changed: unknown, or final already. */
	rc = get(c, S_JOB_STATE_GET, &s);
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

int store_job_get(struct store_conn *c, int64_t id, store_job_cb cb, store_job_host_cb hcb,
                  void *cls)
{
	struct job_rows jr = {cb, hcb, cls, 0};
	struct store_stmt *s;
	int rc = begin(c, STORE_TX_READ);

	if (rc)
		return rc;
	rc = get(c, S_JOB_GET, &s);
	if (!rc) {
		b_i64(s, 1, id);
		rc = each_row(s, job_row, &jr);
	}
	if (!rc && !jr.found)
		rc = -ENOENT;
	if (!rc && hcb)
		rc = get(c, S_JOB_HOSTS, &s);
	if (!rc && hcb) {
		b_i64(s, 1, id);
		rc = each_row(s, job_host_row, &jr);
	}
	commit(c); /* ends the read */
	return rc;
}

int store_job_list(struct store_conn *c, unsigned limit, store_job_cb cb, void *cls)
{
	struct job_rows jr = {cb, NULL, cls, 0};
	struct store_stmt *s;
	int rc = get(c, S_JOB_LIST, &s);

	if (rc)
		return rc;
	b_i64(s, 1, limit);
	return each_row(s, job_row, &jr);
}

/* ---- analysis ---- */

int store_changepoints_replace(struct store_conn *c, const char *project, const char *host,
                               const char *ref, const struct store_changepoint *items, size_t n)
{
	struct store_stmt *s;
	int rc = begin(c, STORE_TX_WRITE);

	if (rc)
		return rc;
	rc = get(c, S_CP_DELETE, &s);
	if (!rc) {
		b_text(s, 1, project);
		b_text(s, 2, host);
		b_text(s, 3, ref);
		rc = run_later(s);
	}
	for (size_t i = 0; !rc && i < n; i++) {
		const struct store_changepoint *p = &items[i];

		rc = get(c, S_CP_ADD, &s);
		if (rc)
			break;
		b_text(s, 1, project);
		b_text(s, 2, host);
		b_text(s, 3, ref);
		b_text(s, 4, p->cell_key);
		b_text(s, 5, p->metric);
		b_text(s, 6, p->commit);
		b_text(s, 7, p->run_id);
		b_i64(s, 8, p->order_us);
		b_real(s, 9, p->before);
		b_real(s, 10, p->after);
		b_real(s, 11, p->pvalue);
		b_text(s, 12, p->computed_at);
		rc = run_later(s);
	}
	return finish(c, rc);
}

struct cp_rows {
	store_changepoint_cb cb;
	void *cls;
};

static int cp_row(struct store_stmt *s, void *cls)
{
	struct cp_rows *cr = cls;
	struct store_changepoint p = {
	    .project = c_text(s, 0),
	    .host = c_text(s, 1),
	    .ref = c_text(s, 2),
	    .cell_key = c_text(s, 3),
	    .metric = c_text(s, 4),
	    .commit = c_text(s, 5),
	    .run_id = c_text(s, 6),
	    .order_us = c_i64(s, 7),
	    .before = c_real(s, 8),
	    .after = c_real(s, 9),
	    .pvalue = c_real(s, 10),
	    .computed_at = c_text(s, 11),
	};

	return cr->cb(&p, cr->cls);
}

int store_changepoints_list(struct store_conn *c, const char *project, const char *host,
                            const char *ref, const char *cell_key, store_changepoint_cb cb,
                            void *cls)
{
	struct cp_rows cr = {cb, cls};
	struct store_stmt *s;
	int rc = get(c, S_CP_LIST, &s);

	if (rc)
		return rc;
	b_text(s, 1, host);
	b_text(s, 2, ref);
	b_text(s, 3, project);
	b_text(s, 4, cell_key);
	return each_row(s, cp_row, &cr);
}

int store_verdict_put(struct store_conn *c, const struct store_verdict *v)
{
	struct store_stmt *s;
	int rc = get(c, S_VERDICT_PUT, &s);

	if (rc)
		return rc;
	b_text(s, 1, v->project);
	b_text(s, 2, v->commit);
	b_text(s, 3, v->host);
	b_text(s, 4, v->baseline_ref);
	b_text(s, 5, v->status);
	b_text(s, 6, v->json);
	b_i64(s, 7, v->order_us);
	b_text(s, 8, v->computed_at);
	return run_done(s, NULL);
}

struct verdict_rows {
	store_verdict_cb cb;
	void *cls;
};

static int verdict_row(struct store_stmt *s, void *cls)
{
	struct verdict_rows *vr = cls;
	struct store_verdict v = {
	    .project = c_text(s, 0),
	    .commit = c_text(s, 1),
	    .host = c_text(s, 2),
	    .baseline_ref = c_text(s, 3),
	    .status = c_text(s, 4),
	    .json = c_text(s, 5),
	    .computed_at = c_text(s, 6),
	    .order_us = c_i64(s, 7),
	};

	return vr->cb(&v, vr->cls);
}

static int verdict_query(struct store_conn *c, enum stmt_id which, const char *project,
                         const char *commit, const char *host, unsigned limit, store_verdict_cb cb,
                         void *cls)
{
	struct verdict_rows vr = {cb, cls};
	struct store_stmt *s;
	int rc;

	if (limit < 1 || limit > 10000)
		return -EINVAL;
	rc = get(c, which, &s);
	if (rc)
		return rc;
	b_text(s, 1, project);
	b_text(s, 2, commit);
	b_text(s, 3, host);
	b_i64(s, 4, limit);
	return each_row(s, verdict_row, &vr);
}

int store_verdict_list(struct store_conn *c, const char *project, const char *commit,
                       const char *host, unsigned limit, store_verdict_cb cb, void *cls)
{
	return verdict_query(c, S_VERDICT_LIST, project, commit, host, limit, cb, cls);
}

int store_verdict_statuses(struct store_conn *c, const char *project, const char *commit,
                           const char *host, unsigned limit, store_verdict_cb cb, void *cls)
{
	return verdict_query(c, S_VERDICT_STATUSES, project, commit, host, limit, cb, cls);
}

/* ---- post-ingest tasks ---- */

int store_task_enqueue(struct store_conn *c, const char *kind, const char *project,
                       const char *commit, const char *host, const char *ref)
{
	char now[AW_TIME_LEN];
	int64_t us;

	if (!kind || (strcmp(kind, "run") && strcmp(kind, "trends") && strcmp(kind, "ab")))
		return -EINVAL; /* the other columns are the schema's to check */
	store_now(now, &us);
	return task_enqueue(c, kind, project, commit, host, ref, now);
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
	rc = begin(c, STORE_TX_WRITE);
	if (rc)
		return rc;
	rc = get(c, S_TASK_CLAIM, &s);
	if (!rc) {
		b_text(s, 1, owner);
		b_text(s, 2, now);
		b_i64(s, 3, now_us);
		b_i64(s, 4, lease_us);
		b_i64(s, 5, max_attempts);
		rc = each_row(s, task_row, &tr);
	}
	if (!rc && !tr.found)
		rc = -ENOENT;
	return finish(c, rc);
}

int store_task_done(struct store_conn *c, int64_t id, int64_t generation)
{
	struct store_stmt *s;
	int64_t changed = 0;
	int rc = begin(c, STORE_TX_WRITE);

	if (rc)
		return rc;
	rc = get(c, S_TASK_DELETE, &s);
	if (!rc) {
		b_i64(s, 1, id);
		b_i64(s, 2, generation);
		rc = run_done(s, &changed);
	}
	/* Enqueued again while it ran: another pass, with attempts of its own. */
	if (!rc && !changed)
		rc = get(c, S_TASK_RELEASE, &s);
	if (!rc && !changed) {
		b_i64(s, 1, id);
		rc = run_done(s, &changed);
		if (!rc && !changed)
			rc = -ENOENT;
	}
	return finish(c, rc);
}

int store_task_fail(struct store_conn *c, int64_t id, const char *message)
{
	struct store_stmt *s;
	int64_t changed = 0;
	int rc = get(c, S_TASK_FAIL, &s);

	if (rc)
		return rc;
	b_i64(s, 1, id);
	b_text(s, 2, message);
	rc = run_done(s, &changed);
	return rc ? rc : changed ? 0 : -ENOENT;
}

int store_task_count(struct store_conn *c, int64_t *pending, int64_t *dead)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us;
	int rc = get(c, S_TASK_COUNT, &s);

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

/* ---- charts ---- */

int store_chart_put(struct store_conn *c, const struct store_chart *ch)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us;
	int rc;

	if (!ch->path || !ch->content_type || !ch->hash || (ch->len && !ch->data))
		return -EINVAL;
	rc = get(c, S_CHART_PUT, &s);
	if (rc)
		return rc;
	store_now(now, &us);
	b_text(s, 1, ch->path);
	b_text(s, 2, ch->content_type);
	b_text(s, 3, ch->hash);
	b_text(s, 4, now);
	s->drv->bind_blob(s, 5, ch->data, ch->len);
	return run_done(s, NULL);
}

static int chart_read(struct store_conn *c, enum stmt_id which, const char *path, store_chart_cb cb,
                      void *cls)
{
	struct store_chart ch = {0};
	struct store_stmt *s;
	int rc = get(c, which, &s);

	if (rc)
		return rc;
	b_text(s, 1, path);
	rc = step(s);
	if (rc == STORE_ROW) {
		ch.path = c_text(s, 0);
		ch.content_type = c_text(s, 1);
		ch.hash = c_text(s, 2);
		ch.updated_at = c_text(s, 3);
		if (which == S_CHART_GET)
			ch.data = s->drv->col_blob(s, 4, &ch.len);
		else
			ch.len = (size_t)c_i64(s, 4);
		rc = cb(&ch, cls);
	} else if (rc == STORE_DONE) {
		rc = -ENOENT;
	}
	reset(s);
	return rc;
}

int store_chart_get(struct store_conn *c, const char *path, store_chart_cb cb, void *cls)
{
	return chart_read(c, S_CHART_GET, path, cb, cls);
}

int store_chart_stat(struct store_conn *c, const char *path, store_chart_cb cb, void *cls)
{
	return chart_read(c, S_CHART_STAT, path, cb, cls);
}

/* ---- interleaved A/B documents ---- */

int store_ab_put(struct store_conn *c, struct store_ab *ab)
{
	struct store_stmt *s;
	int rc = begin(c, STORE_TX_WRITE);

	if (rc)
		return rc;
	rc = get(c, S_AB_FIND, &s);
	if (rc)
		return finish(c, rc);
	b_text(s, 1, ab->ab_id);
	rc = step(s);
	if (rc == STORE_ROW) {
		ab->seq = c_i64(s, 0);
		ab->outcome =
		    strcmp(c_text(s, 1), ab->content_hash) ? STORE_CONFLICT : STORE_DUPLICATE;
		reset(s);
		return finish(c, 0);
	}
	reset(s);
	if (rc < 0)
		return finish(c, rc);
	rc = get(c, S_AB_ADD, &s);
	if (rc)
		return finish(c, rc);
	b_text(s, 1, ab->ab_id);
	b_text(s, 2, ab->project);
	b_text(s, 3, ab->host);
	b_text(s, 4, ab->subject);
	b_text(s, 5, ab->base);
	b_text(s, 6, ab->head);
	b_text(s, 7, ab->ref);
	b_i64(s, 8, ab->aa ? 1 : 0);
	b_text(s, 9, ab->verdict);
	b_text(s, 10, ab->content_hash);
	b_text(s, 11, ab->received_at);
	b_text(s, 12, ab->judgment);
	b_text(s, 13, ab->doc);
	rc = run_id(s, &ab->seq);
	ab->outcome = STORE_CREATED;
	return finish(c, rc);
}

struct ab_rows {
	store_ab_cb cb;
	void *cls;
	bool found;
};

static int ab_row(struct store_stmt *s, void *cls)
{
	struct ab_rows *ar = cls;
	struct store_ab ab = {
	    .seq = c_i64(s, 0),
	    .ab_id = c_text(s, 1),
	    .project = c_text(s, 2),
	    .host = c_text(s, 3),
	    .subject = c_text(s, 4),
	    .base = c_text(s, 5),
	    .head = c_text(s, 6),
	    .ref = c_text(s, 7),
	    .aa = c_i64(s, 8) != 0,
	    .verdict = c_text(s, 9),
	    .received_at = c_text(s, 11),
	    .judgment = c_text(s, 12),
	    .doc = c_text(s, 13),
	};

	snprintf(ab.content_hash, sizeof(ab.content_hash), "%s", c_text(s, 10));
	ar->found = true;
	return ar->cb(&ab, ar->cls);
}

int store_ab_get(struct store_conn *c, const char *ab_id, store_ab_cb cb, void *cls)
{
	struct ab_rows ar = {cb, cls, false};
	struct store_stmt *s;
	int rc = get(c, S_AB_GET, &s);

	if (rc)
		return rc;
	b_text(s, 1, ab_id);
	rc = each_row(s, ab_row, &ar);
	return !rc && !ar.found ? -ENOENT : rc;
}

int store_ab_list(struct store_conn *c, const char *project, const char *head, const char *host,
                  unsigned limit, store_ab_cb cb, void *cls)
{
	struct ab_rows ar = {cb, cls, false};
	struct store_stmt *s;
	int rc;

	if (limit < 1 || limit > 10000)
		return -EINVAL;
	rc = get(c, S_AB_LIST, &s);
	if (rc)
		return rc;
	b_text(s, 1, project);
	b_text(s, 2, head);
	b_text(s, 3, host);
	b_i64(s, 4, limit);
	return each_row(s, ab_row, &ar);
}
