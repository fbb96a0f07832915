/* The SQLite backend of the store (the embedded default): WAL mode so that readers never wait
 * for the writer, prepared statements kept per connection, the schema's migrations in SQLite's
 * dialect. The only file of the collector that includes <sqlite3.h>. */
#include "store_backend.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/buf.h"
#include "aw/log.h"
#include "aw/strmap.h"

/* Migration N is migrations[N - 1]; never edit one that shipped, add the next. */
static const char *const migrations[] = {
    /* 1: the initial schema */
    "CREATE TABLE projects ("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " created_at TEXT NOT NULL);"
    "CREATE TABLE hosts ("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " arch TEXT NOT NULL,"
    " cpu_model TEXT NOT NULL,"
    " platform_hash TEXT,"
    " fingerprint_id INTEGER," /* the latest fingerprint */
    " first_seen TEXT NOT NULL,"
    " last_seen TEXT NOT NULL);"
    /* Each distinct host object a host reported, by the hash of its canonical JSON. */
    "CREATE TABLE fingerprints ("
    " id INTEGER PRIMARY KEY,"
    " host_id INTEGER NOT NULL REFERENCES hosts (id),"
    " hash TEXT NOT NULL,"
    " platform_hash TEXT,"
    " doc TEXT NOT NULL,"
    " first_seen TEXT NOT NULL,"
    " last_seen TEXT NOT NULL,"
    " UNIQUE (host_id, hash));"
    /* order_us places a commit on its refs: its own time, else its first run's start. */
    "CREATE TABLE commits ("
    " id INTEGER PRIMARY KEY,"
    " project_id INTEGER NOT NULL REFERENCES projects (id),"
    " sha TEXT NOT NULL,"
    " commit_time TEXT,"
    " commit_time_us INTEGER,"
    " first_started_us INTEGER NOT NULL,"
    " order_us INTEGER NOT NULL,"
    " UNIQUE (project_id, sha));"
    "CREATE INDEX commits_sha ON commits (sha);"
    /* id is the run's sequence: AUTOINCREMENT never reuses one, so cursors stay valid. */
    "CREATE TABLE runs ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " uuid TEXT NOT NULL UNIQUE,"
    " project_id INTEGER NOT NULL REFERENCES projects (id),"
    " host_id INTEGER NOT NULL REFERENCES hosts (id),"
    " fingerprint_id INTEGER NOT NULL REFERENCES fingerprints (id),"
    " commit_id INTEGER REFERENCES commits (id),"
    " ref TEXT NOT NULL,"
    " commit_time TEXT,"
    " trigger TEXT NOT NULL,"
    " started_at TEXT NOT NULL,"
    " started_us INTEGER NOT NULL,"
    " finished_at TEXT NOT NULL,"
    " matrix_name TEXT NOT NULL,"
    " matrix_version INTEGER NOT NULL,"
    " matrix_hash TEXT NOT NULL,"
    " matrix_profile TEXT,"
    " meta TEXT,"
    " n_cells INTEGER NOT NULL,"
    " content_hash TEXT NOT NULL,"
    " received_at TEXT NOT NULL);"
    "CREATE INDEX runs_host ON runs (host_id, id);"
    "CREATE INDEX runs_host_ref ON runs (host_id, ref, id);"
    "CREATE INDEX runs_commit ON runs (commit_id, host_id);"
    "CREATE INDEX runs_project ON runs (project_id, id);"
    /* A cell's identity: sig joins every field below (see store_cell_sig()). */
    "CREATE TABLE cells ("
    " id INTEGER PRIMARY KEY,"
    " sig TEXT NOT NULL UNIQUE,"
    " key TEXT NOT NULL,"
    " op TEXT NOT NULL,"
    " reader TEXT,"
    " subject TEXT,"
    " kernel TEXT,"
    " placement TEXT,"
    " cpu INTEGER,"
    " contender_cpu INTEGER,"
    " c INTEGER,"
    " d INTEGER NOT NULL);"
    "CREATE INDEX cells_key ON cells (key);"
    "CREATE TABLE measurements ("
    " run_id INTEGER NOT NULL REFERENCES runs (id),"
    " cell_id INTEGER NOT NULL REFERENCES cells (id),"
    " ord INTEGER NOT NULL," /* position in the document */
    " status TEXT NOT NULL,"
    " n INTEGER NOT NULL,"
    " batch INTEGER NOT NULL,"
    " min REAL, p50 REAL, p95 REAL, p99 REAL, max REAL, mean REAL, stddev REAL,"
    " ci_lo REAL, ci_hi REAL, baseline_ns REAL,"
    " below_resolution INTEGER NOT NULL,"
    " reason TEXT,"
    " PRIMARY KEY (run_id, cell_id)) WITHOUT ROWID;"
    "CREATE TABLE tokens ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " role TEXT NOT NULL CHECK (role IN ('agent', 'ci', 'admin')),"
    " host TEXT,"
    " hash TEXT NOT NULL UNIQUE,"
    " created_at TEXT NOT NULL,"
    " revoked_at TEXT,"
    " last_used_at TEXT,"
    " CHECK ((role = 'agent') = (host IS NOT NULL)));"
    "CREATE TABLE jobs ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " project TEXT NOT NULL,"
    " commit_sha TEXT NOT NULL,"
    " ref TEXT NOT NULL,"
    " subject TEXT,"
    " all_hosts INTEGER NOT NULL,"
    " created_at TEXT NOT NULL,"
    " expires_at TEXT NOT NULL,"
    " expires_us INTEGER NOT NULL,"
    " created_by INTEGER);"
    "CREATE INDEX jobs_expires ON jobs (expires_us);"
    "CREATE TABLE job_targets ("
    " job_id INTEGER NOT NULL REFERENCES jobs (id),"
    " host TEXT NOT NULL,"
    " PRIMARY KEY (job_id, host)) WITHOUT ROWID;"
    "CREATE INDEX job_targets_host ON job_targets (host, job_id);"
    "CREATE TABLE job_hosts ("
    " job_id INTEGER NOT NULL REFERENCES jobs (id),"
    " host TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('claimed', 'running', 'done', 'failed')),"
    " run_id TEXT,"
    " message TEXT,"
    " claimed_at TEXT NOT NULL,"
    " claimed_us INTEGER NOT NULL,"
    " updated_at TEXT NOT NULL,"
    " PRIMARY KEY (job_id, host)) WITHOUT ROWID;",
    /* 2: regression analysis: change points of each series and each commit's verdict per
     * host, both recomputed in the background after ingest (names, not ids: a cache that is
     * replaced whole, never joined on the ingest path) */
    "CREATE TABLE change_points ("
    " project TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " ref TEXT NOT NULL,"
    " cell_key TEXT NOT NULL,"
    " metric TEXT NOT NULL,"
    " commit_sha TEXT,"
    " run_uuid TEXT NOT NULL,"
    " order_us INTEGER NOT NULL,"
    " before REAL NOT NULL,"
    " after REAL NOT NULL,"
    " pvalue REAL NOT NULL,"
    " computed_at TEXT NOT NULL);"
    "CREATE INDEX change_points_series ON change_points (host, ref, project, cell_key, order_us);"
    "CREATE TABLE verdicts ("
    " project TEXT NOT NULL,"
    " commit_sha TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " baseline_ref TEXT NOT NULL,"
    " status TEXT NOT NULL,"
    " doc TEXT NOT NULL,"
    " order_us INTEGER NOT NULL,"
    " computed_at TEXT NOT NULL,"
    " PRIMARY KEY (project, commit_sha, host));"
    "CREATE INDEX verdicts_host ON verdicts (host, order_us);"
    "CREATE INDEX verdicts_order ON verdicts (order_us);",
    /* ---- tasks and charts (interim) ---- */
    /* 3: the durable queue of the work after an upload (one row per task; commit_sha '' for
     * none) and the chart files every collector serves */
    "CREATE TABLE postingest_tasks ("
    " id INTEGER PRIMARY KEY,"
    " kind TEXT NOT NULL,"
    " project TEXT NOT NULL,"
    " commit_sha TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " ref TEXT NOT NULL,"
    " generation INTEGER NOT NULL,"
    " attempts INTEGER NOT NULL,"
    " max_attempts INTEGER,"
    " owner TEXT,"
    " claimed_us INTEGER," /* when owner claimed it */
    " lease_us INTEGER,"   /* the lease owner claimed it with (for counting the dead) */
    " enqueued_at TEXT NOT NULL,"
    " last_error TEXT,"
    " UNIQUE (kind, project, commit_sha, host, ref));"
    "CREATE TABLE charts ("
    " path TEXT PRIMARY KEY,"
    " content_type TEXT NOT NULL,"
    " hash TEXT NOT NULL,"
    " size INTEGER NOT NULL,"
    " updated_at TEXT NOT NULL,"
    " data BLOB NOT NULL);",
    /* ---- end of tasks and charts (interim) ---- */
};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == STORE_SCHEMA_VERSION,
               "one migration per schema version");

/* The columns of a listed run, in the order fill_run() reads them. */
#define RUN_COLS                                                                               \
	"r.id, r.uuid, p.name, h.name, c.sha, r.ref, r.commit_time, r.trigger, r.started_at, " \
	"r.finished_at, r.received_at, r.matrix_name, r.matrix_version, r.matrix_hash, "       \
	"r.matrix_profile, r.n_cells, COALESCE(c.order_us, r.started_us), f.platform_hash"
#define RUN_FROM                                                                               \
	" FROM runs r JOIN projects p ON p.id = r.project_id JOIN hosts h ON h.id = r.host_id" \
	" JOIN fingerprints f ON f.id = r.fingerprint_id"                                      \
	" LEFT JOIN commits c ON c.id = r.commit_id"
#define CELL_COLS                                                                                \
	"k.key, k.op, k.reader, k.subject, k.kernel, k.placement, k.cpu, k.contender_cpu, k.c, " \
	"k.d, m.status, m.n, m.batch, m.min, m.p50, m.p95, m.p99, m.max, m.mean, m.stddev, "     \
	"m.ci_lo, m.ci_hi, m.baseline_ns, m.below_resolution, m.reason"
#define JOB_COLS \
	"j.id, j.project, j.commit_sha, j.ref, j.subject, j.all_hosts, j.created_at, j.expires_at"
#define TOKEN_COLS "id, role, host, hash, created_at, revoked_at, last_used_at"

enum sq_stmt {
	SQ_BEGIN,
	SQ_BEGIN_READ,
	SQ_MIGRATED,
	SQ_COMMIT,
	SQ_ROLLBACK,
	SQ_PING,
	SQ_PROJECT_FIND,
	SQ_PROJECT_ADD,
	SQ_RUN_FIND,
	SQ_HOST_UPSERT,
	SQ_FP_UPSERT,
	SQ_HOST_SET_FP,
	SQ_COMMIT_UPSERT,
	SQ_RUN_ADD,
	SQ_CELL_FIND,
	SQ_CELL_ADD,
	SQ_MEAS_ADD,
	SQ_RUN_GET,
	SQ_RUN_CELLS,
	SQ_REF_HISTORY,
	SQ_HOSTS,
	SQ_HOST_GET,
	SQ_FPS,
	SQ_TOKEN_ADD,
	SQ_TOKEN_FIND,
	SQ_TOKEN_LIST,
	SQ_TOKEN_REVOKE,
	SQ_TOKEN_TOUCH,
	SQ_JOB_ADD,
	SQ_JOB_TARGET_ADD,
	SQ_JOB_CANDIDATE,
	SQ_JOB_CLAIM,
	SQ_JOB_UNCLAIM,
	SQ_JOB_STATE_GET,
	SQ_JOB_STATE_SET,
	SQ_JOB_GET,
	SQ_JOB_HOSTS,
	SQ_JOB_LIST,
	SQ_CP_DELETE,
	SQ_CP_ADD,
	SQ_CP_LIST,
	SQ_VERDICT_PUT,
	SQ_VERDICT_LIST,
	SQ_VERDICT_STATUSES,
	SQ_N
};

#define SQ_VERDICT_REST                                                              \
	"order_us FROM verdicts WHERE (?1 IS NULL OR project = ?1) AND (?2 IS NULL " \
	"OR commit_sha = ?2) AND (?3 IS NULL OR host = ?3) ORDER BY order_us DESC, host LIMIT ?4"

static const char *const sq_sql[SQ_N] = {
    [SQ_BEGIN] = "BEGIN IMMEDIATE",
    [SQ_BEGIN_READ] = "BEGIN",
    [SQ_MIGRATED] = "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)",
    [SQ_COMMIT] = "COMMIT",
    [SQ_ROLLBACK] = "ROLLBACK",
    [SQ_PING] = "SELECT 1",
    [SQ_PROJECT_FIND] = "SELECT id FROM projects WHERE name = ?1",
    [SQ_PROJECT_ADD] = "INSERT INTO projects (name, created_at) VALUES (?1, ?2) "
                       "ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING id",
    [SQ_RUN_FIND] = "SELECT id, content_hash FROM runs WHERE uuid = ?1",
    [SQ_HOST_UPSERT] =
        "INSERT INTO hosts (name, arch, cpu_model, platform_hash, first_seen, last_seen) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (name) DO UPDATE SET "
        "arch = excluded.arch, cpu_model = excluded.cpu_model, "
        "platform_hash = excluded.platform_hash, last_seen = excluded.last_seen RETURNING id",
    [SQ_FP_UPSERT] =
        "INSERT INTO fingerprints (host_id, hash, platform_hash, doc, first_seen, last_seen) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (host_id, hash) DO UPDATE SET "
        "last_seen = excluded.last_seen RETURNING id",
    [SQ_HOST_SET_FP] = "UPDATE hosts SET fingerprint_id = ?2 WHERE id = ?1",
    [SQ_COMMIT_UPSERT] =
        "INSERT INTO commits (project_id, sha, commit_time, commit_time_us, first_started_us, "
        "order_us) VALUES (?1, ?2, ?3, ?4, ?5, COALESCE(?4, ?5)) "
        "ON CONFLICT (project_id, sha) DO UPDATE SET "
        "commit_time = COALESCE(commits.commit_time, excluded.commit_time), "
        "commit_time_us = COALESCE(commits.commit_time_us, excluded.commit_time_us), "
        "first_started_us = MIN(commits.first_started_us, excluded.first_started_us), "
        "order_us = COALESCE(commits.commit_time_us, excluded.commit_time_us, "
        "MIN(commits.first_started_us, excluded.first_started_us)) RETURNING id",
    [SQ_RUN_ADD] =
        "INSERT INTO runs (uuid, project_id, host_id, fingerprint_id, commit_id, ref, "
        "commit_time, trigger, started_at, started_us, finished_at, matrix_name, "
        "matrix_version, matrix_hash, matrix_profile, meta, n_cells, content_hash, "
        "received_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
        "?15, ?16, ?17, ?18, ?19) RETURNING id",
    [SQ_CELL_FIND] = "SELECT id FROM cells WHERE sig = ?1",
    [SQ_CELL_ADD] = "INSERT INTO cells (sig, key, op, reader, subject, kernel, placement, cpu, "
                    "contender_cpu, c, d) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
                    "RETURNING id",
    [SQ_MEAS_ADD] =
        "INSERT INTO measurements (run_id, cell_id, ord, status, n, batch, min, p50, p95, p99, "
        "max, mean, stddev, ci_lo, ci_hi, baseline_ns, below_resolution, reason) VALUES (?1, "
        "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
    [SQ_RUN_GET] = "SELECT r.id, r.uuid, p.name, c.sha, r.ref, r.commit_time, r.trigger, "
                   "r.started_at, r.finished_at, r.matrix_name, r.matrix_version, "
                   "r.matrix_hash, r.matrix_profile, r.meta, f.doc" RUN_FROM " WHERE r.uuid = ?1",
    [SQ_RUN_CELLS] = "SELECT " CELL_COLS " FROM measurements m JOIN cells k ON k.id = m.cell_id "
                     "WHERE m.run_id = ?1 ORDER BY m.ord",
    [SQ_REF_HISTORY] = "SELECT " RUN_COLS RUN_FROM
                       " WHERE h.name = ?1 AND r.ref = ?2 AND (?3 IS NULL OR p.name = ?3) "
                       "AND (COALESCE(c.order_us, r.started_us), r.id) < (?4, ?5) "
                       "ORDER BY COALESCE(c.order_us, r.started_us) DESC, r.id DESC LIMIT ?6",
    [SQ_HOSTS] = "SELECT h.name, h.arch, h.cpu_model, h.platform_hash, h.first_seen, "
                 "h.last_seen, f.doc, (SELECT COUNT(*) FROM runs r WHERE r.host_id = h.id) "
                 "FROM hosts h LEFT JOIN fingerprints f ON f.id = h.fingerprint_id "
                 "ORDER BY h.name",
    [SQ_HOST_GET] = "SELECT h.name, h.arch, h.cpu_model, h.platform_hash, h.first_seen, "
                    "h.last_seen, f.doc, (SELECT COUNT(*) FROM runs r WHERE r.host_id = h.id), "
                    "h.id FROM hosts h LEFT JOIN fingerprints f ON f.id = h.fingerprint_id "
                    "WHERE h.name = ?1",
    [SQ_FPS] = "SELECT hash, platform_hash, first_seen, last_seen, doc FROM fingerprints "
               "WHERE host_id = ?1 ORDER BY id",
    [SQ_TOKEN_ADD] = "INSERT INTO tokens (role, host, hash, created_at) VALUES (?1, ?2, ?3, ?4) "
                     "RETURNING id",
    [SQ_TOKEN_FIND] = "SELECT " TOKEN_COLS " FROM tokens WHERE hash = ?1",
    [SQ_TOKEN_LIST] = "SELECT " TOKEN_COLS " FROM tokens ORDER BY id",
    [SQ_TOKEN_REVOKE] = "UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1",
    [SQ_TOKEN_TOUCH] = "UPDATE tokens SET last_used_at = ?2 WHERE id = ?1",
    [SQ_JOB_ADD] = "INSERT INTO jobs (project, commit_sha, ref, subject, all_hosts, created_at, "
                   "expires_at, expires_us, created_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                   "?9) RETURNING id",
    [SQ_JOB_TARGET_ADD] = "INSERT OR IGNORE INTO job_targets (job_id, host) VALUES (?1, ?2)",
    [SQ_JOB_CANDIDATE] =
        "SELECT " JOB_COLS " FROM jobs j WHERE j.expires_us > ?2 AND (j.all_hosts = 1 OR "
        "EXISTS (SELECT 1 FROM job_targets t WHERE t.job_id = j.id AND t.host = ?1)) AND NOT "
        "EXISTS (SELECT 1 FROM job_hosts x WHERE x.job_id = j.id AND x.host = ?1 AND "
        "(x.state <> 'claimed' OR x.claimed_us > ?3)) ORDER BY j.id LIMIT 1",
    [SQ_JOB_CLAIM] =
        "INSERT INTO job_hosts (job_id, host, state, claimed_at, claimed_us, updated_at) "
        "VALUES (?1, ?2, 'claimed', ?3, ?4, ?3) ON CONFLICT (job_id, host) DO UPDATE SET "
        "claimed_at = excluded.claimed_at, claimed_us = excluded.claimed_us, "
        "updated_at = excluded.updated_at "
        "WHERE job_hosts.state = 'claimed' AND job_hosts.claimed_us <= ?5",
    [SQ_JOB_UNCLAIM] =
        "DELETE FROM job_hosts WHERE job_id = ?1 AND host = ?2 AND state = 'claimed'",
    [SQ_JOB_STATE_GET] = "SELECT state FROM job_hosts WHERE job_id = ?1 AND host = ?2",
    [SQ_JOB_STATE_SET] = "UPDATE job_hosts SET state = ?3, run_id = COALESCE(?4, run_id), "
                         "message = COALESCE(?5, message), updated_at = ?6 "
                         "WHERE job_id = ?1 AND host = ?2",
    [SQ_JOB_GET] = "SELECT " JOB_COLS " FROM jobs j WHERE j.id = ?1",
    /* Targeted hosts that have not claimed the job yet show as "pending". */
    [SQ_JOB_HOSTS] = "SELECT host, state, run_id, message, claimed_at, updated_at "
                     "FROM job_hosts WHERE job_id = ?1 UNION ALL "
                     "SELECT t.host, 'pending', NULL, NULL, NULL, NULL FROM job_targets t "
                     "WHERE t.job_id = ?1 AND NOT EXISTS (SELECT 1 FROM job_hosts h "
                     "WHERE h.job_id = t.job_id AND h.host = t.host) ORDER BY 1",
    [SQ_JOB_LIST] = "SELECT " JOB_COLS " FROM jobs j ORDER BY j.id DESC LIMIT ?1",
    [SQ_CP_DELETE] = "DELETE FROM change_points WHERE project = ?1 AND host = ?2 AND ref = ?3",
    [SQ_CP_ADD] = "INSERT INTO change_points (project, host, ref, cell_key, metric, commit_sha, "
                  "run_uuid, order_us, before, after, pvalue, computed_at) VALUES (?1, ?2, ?3, "
                  "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    [SQ_CP_LIST] = "SELECT project, host, ref, cell_key, metric, commit_sha, run_uuid, order_us, "
                   "before, after, pvalue, computed_at FROM change_points WHERE host = ?1 AND "
                   "ref = ?2 AND (?3 IS NULL OR project = ?3) AND (?4 IS NULL OR cell_key = ?4) "
                   "ORDER BY order_us, cell_key, metric",
    [SQ_VERDICT_PUT] =
        "INSERT INTO verdicts (project, commit_sha, host, baseline_ref, status, doc, order_us, "
        "computed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (project, commit_sha, "
        "host) DO UPDATE SET baseline_ref = excluded.baseline_ref, status = excluded.status, "
        "doc = excluded.doc, order_us = excluded.order_us, computed_at = excluded.computed_at",
    [SQ_VERDICT_LIST] = "SELECT project, commit_sha, host, baseline_ref, status, "
                        "doc, computed_at, " SQ_VERDICT_REST,
    /* the same without the document, which may be large, nor what a row keeps after it
     * (reading a column stored after a large value reads through that value) */
    [SQ_VERDICT_STATUSES] = "SELECT project, commit_sha, host, baseline_ref, status, "
                            "NULL, NULL, " SQ_VERDICT_REST,
};

struct sq_conn {
	struct store_conn base;
	sqlite3 *db;
	sqlite3_stmt *stmt[SQ_N];
	struct aw_strmap *cells; /* cell signature -> cells.id, committed rows only */
	bool in_tx;
};

static struct sq_conn *sq(struct store_conn *c)
{
	return (struct sq_conn *)c;
}

/* Logs the connection's last error once and maps it to an errno. */
static int sq_fail(struct sq_conn *c, int rc, const char *what)
{
	store_count_error();
	rc &= 0xff; /* primary result code */
	if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
		aw_warn("sqlite: %s: %s", what, sqlite3_errmsg(c->db));
		return -EBUSY;
	}
	aw_error("sqlite: %s: %s", what, sqlite3_errmsg(c->db));
	return rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
}

/* The prepared statement `i`, prepared on first use; NULL on failure (logged). */
static sqlite3_stmt *st(struct sq_conn *c, enum sq_stmt i)
{
	int rc;

	if (c->stmt[i]) {
		sqlite3_reset(c->stmt[i]);
		sqlite3_clear_bindings(c->stmt[i]);
		return c->stmt[i];
	}
	rc = sqlite3_prepare_v3(c->db, sq_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &c->stmt[i], NULL);
	if (rc != SQLITE_OK) {
		sq_fail(c, rc, "cannot prepare a statement");
		c->stmt[i] = NULL;
	}
	return c->stmt[i];
}

static void b_text(sqlite3_stmt *s, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, i);
}

static void b_i64(sqlite3_stmt *s, int i, int64_t v)
{
	sqlite3_bind_int64(s, i, v);
}

/* An optional integer: AW_NONE is NULL. */
static void b_opt(sqlite3_stmt *s, int i, int64_t v)
{
	if (v == AW_NONE)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_int64(s, i, v);
}

static void b_real(sqlite3_stmt *s, int i, double v)
{
	if (isfinite(v))
		sqlite3_bind_double(s, i, v);
	else
		sqlite3_bind_null(s, i);
}

static const char *col_text(sqlite3_stmt *s, int i)
{
	return (const char *)sqlite3_column_text(s, i);
}

static int64_t col_opt(sqlite3_stmt *s, int i)
{
	return sqlite3_column_type(s, i) == SQLITE_NULL ? AW_NONE : sqlite3_column_int64(s, i);
}

static double col_real(sqlite3_stmt *s, int i)
{
	return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

/* Steps a statement that returns no rows. */
static int exec_stmt(struct sq_conn *c, sqlite3_stmt *s, const char *what)
{
	int rc;

	if (!s)
		return -EIO;
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return sq_fail(c, rc, what);
	return 0;
}

/* Steps a statement that returns one integer (RETURNING id, SELECT id): 0 with *out, -ENOENT
 * when it returned no row. */
static int exec_id(struct sq_conn *c, sqlite3_stmt *s, const char *what, int64_t *out)
{
	int rc;

	if (!s)
		return -EIO;
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(s, 0);
		rc = sqlite3_step(s); /* finish, so that RETURNING statements complete */
		sqlite3_reset(s);
		return rc == SQLITE_DONE ? 0 : sq_fail(c, rc, what);
	}
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? -ENOENT : sq_fail(c, rc, what);
}

static int begin(struct sq_conn *c)
{
	int rc = exec_stmt(c, st(c, SQ_BEGIN), "cannot begin a transaction");

	c->in_tx = !rc;
	return rc;
}

static int commit(struct sq_conn *c)
{
	int rc = exec_stmt(c, st(c, SQ_COMMIT), "cannot commit");

	if (!rc)
		c->in_tx = false;
	return rc;
}

/* Rolls back, and forgets cached cell ids since some may name rows that no longer exist. */
static void rollback(struct sq_conn *c)
{
	if (c->in_tx && sqlite3_get_autocommit(c->db) == 0)
		exec_stmt(c, st(c, SQ_ROLLBACK), "cannot roll back");
	c->in_tx = false;
	aw_strmap_clear(c->cells);
}

/* ---- connection ---- */

static void sq_disconnect(struct store_conn *base)
{
	struct sq_conn *c = sq(base);

	for (int i = 0; i < SQ_N; i++)
		sqlite3_finalize(c->stmt[i]);
	if (c->db && sqlite3_close(c->db) != SQLITE_OK)
		aw_warn("sqlite: cannot close the database: %s", sqlite3_errmsg(c->db));
	aw_strmap_free(&c->cells);
	free(c);
}

static bool sq_broken(struct store_conn *base)
{
	(void)base;
	return false;
}

static int sq_connect(const char *path, const struct store_options *opt, struct store_conn **out,
                      char **err)
{
	struct sq_conn *c = calloc(1, sizeof(*c));
	char pragmas[256];
	char *msg = NULL;
	int rc;

	*out = NULL;
	if (!c)
		return aw_errorf(err, -ENOMEM, "out of memory");
	c->base.ops = &store_sqlite_ops;
	c->cells = aw_strmap_new(STORE_CELL_CACHE_MAX);
	if (!c->cells) {
		free(c);
		return aw_errorf(err, -ENOMEM, "out of memory");
	}
	/* NOMUTEX: a connection is only ever used by one thread at a time. */
	rc = sqlite3_open_v2(
	    path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		rc = aw_errorf(err, -EIO, "cannot open database '%s': %s", path,
		               c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
		goto fail;
	}
	sqlite3_busy_timeout(c->db, (int)opt->busy_timeout_ms);
	sqlite3_extended_result_codes(c->db, 1);
	snprintf(pragmas, sizeof(pragmas),
	         "PRAGMA journal_mode = WAL; PRAGMA synchronous = %s; PRAGMA foreign_keys = ON;"
	         " PRAGMA temp_store = MEMORY;",
	         opt->sqlite_sync_full ? "FULL" : "NORMAL");
	rc = sqlite3_exec(c->db, pragmas, NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		rc = aw_errorf(err, -EIO, "cannot set up database '%s': %s", path,
		               msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		goto fail;
	}
	*out = &c->base;
	return 0;
fail:
	sq_disconnect(&c->base);
	return rc;
}

static int sq_ping(struct store_conn *base)
{
	struct sq_conn *c = sq(base);

	return exec_stmt(c, st(c, SQ_PING), "ping failed");
}

/* ---- migrations ---- */

static int schema_version(struct sq_conn *c, int *version, char **err)
{
	sqlite3_stmt *s = NULL;
	int rc;

	rc = sqlite3_prepare_v2(c->db, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
	                        -1, &s, NULL);
	if (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
		*version = sqlite3_column_int(s, 0);
		rc = 0;
	} else {
		rc = aw_errorf(err, -EIO, "cannot read the schema version: %s",
		               sqlite3_errmsg(c->db));
	}
	sqlite3_finalize(s);
	return rc;
}

static int sq_migrate(struct store_conn *base, int *from, int *to, char **err)
{
	struct sq_conn *c = sq(base);
	int version = 0, first = -1, rc;
	char *msg = NULL;

	rc = sqlite3_exec(c->db,
	                  "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY "
	                  "KEY, applied_at TEXT NOT NULL)",
	                  NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		rc = aw_errorf(err, -EIO, "cannot create schema_migrations: %s", msg);
		goto out;
	}
	for (;;) {
		char now[AW_TIME_LEN];
		sqlite3_stmt *s;
		int64_t us;

		/* BEGIN IMMEDIATE takes the write lock before reading the version, so two
		 * processes migrating at once apply each migration exactly once. */
		if (begin(c)) {
			rc = aw_errorf(err, -EIO, "cannot begin a migration: %s",
			               sqlite3_errmsg(c->db));
			goto out;
		}
		rc = schema_version(c, &version, err);
		if (rc)
			goto fail;
		if (first < 0)
			first = version;
		if (version >= STORE_SCHEMA_VERSION) {
			rc = commit(c);
			if (rc) {
				aw_errorf(err, rc, "cannot commit: %s", sqlite3_errmsg(c->db));
				goto fail;
			}
			break;
		}
		/* A migration is constant DDL: a script run as it is. */
		if (sqlite3_exec(c->db, migrations[version], NULL, NULL, &msg) != SQLITE_OK) {
			rc = aw_errorf(err, -EIO, "migration %d failed: %s", version + 1, msg);
			goto fail;
		}
		store_now(now, &us);
		s = st(c, SQ_MIGRATED);
		if (s) {
			b_i64(s, 1, version + 1);
			b_text(s, 2, now);
		}
		if (!s || exec_stmt(c, s, "cannot record a migration") || commit(c)) {
			rc = aw_errorf(err, -EIO, "cannot record migration %d: %s", version + 1,
			               sqlite3_errmsg(c->db));
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
	sqlite3_free(msg);
	return rc;
}

/* ---- tasks and charts (interim) ---- */

/* Statements of this block are prepared per call: none is on a path where that shows. */
static int tq_prepare(struct sq_conn *c, const char *sql, sqlite3_stmt **s)
{
	int rc = sqlite3_prepare_v2(c->db, sql, -1, s, NULL);

	return rc == SQLITE_OK ? 0 : sq_fail(c, rc, "cannot prepare a statement");
}

/* Steps a prepared statement to its end; returns 0 with *changes, or an errno. */
static int tq_exec(struct sq_conn *c, sqlite3_stmt *s, const char *what, int *changes)
{
	int rc = sqlite3_step(s);

	while (rc == SQLITE_ROW)
		rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		return sq_fail(c, rc, what);
	if (changes)
		*changes = sqlite3_changes(c->db);
	return 0;
}

static int task_add(struct sq_conn *c, const char *kind, const char *project, const char *commit,
                    const char *host, const char *ref)
{
	sqlite3_stmt *s = NULL;
	char now[AW_TIME_LEN];
	int64_t us;
	int rc;

	rc = tq_prepare(c,
	                "INSERT INTO postingest_tasks (kind, project, commit_sha, host, ref, "
	                "generation, attempts, enqueued_at) VALUES (?1, ?2, ?3, ?4, ?5, 1, 0, ?6) "
	                "ON CONFLICT (kind, project, commit_sha, host, ref) DO UPDATE SET "
	                "generation = generation + 1, attempts = CASE WHEN owner IS NULL THEN 0 "
	                "ELSE attempts END, last_error = NULL",
	                &s);
	if (rc)
		return rc;
	store_now(now, &us);
	b_text(s, 1, kind);
	b_text(s, 2, project);
	b_text(s, 3, commit ? commit : "");
	b_text(s, 4, host);
	b_text(s, 5, ref);
	b_text(s, 6, now);
	rc = tq_exec(c, s, "cannot queue a task", NULL);
	sqlite3_finalize(s);
	return rc;
}

static int sq_task_enqueue(struct store_conn *base, const char *kind, const char *project,
                           const char *commit, const char *host, const char *ref)
{
	return task_add(sq(base), kind, project, commit, host, ref);
}

/* ?1: now minus the claimer's lease */
#define TQ_CLAIMABLE "(owner IS NULL OR claimed_us < ?1) AND attempts < ?2"

static int sq_task_claim(struct store_conn *base, const char *owner, int64_t lease_us,
                         int max_attempts, store_task_cb cb, void *cls)
{
	struct sq_conn *c = sq(base);
	sqlite3_stmt *s = NULL;
	struct store_task t;
	char now[AW_TIME_LEN], *text[6] = {NULL};
	int64_t us, id = 0;
	int rc;

	store_now(now, &us);
	/* a plain read first: an idle poll must not take the write lock */
	rc = tq_prepare(c, "SELECT id FROM postingest_tasks WHERE " TQ_CLAIMABLE " LIMIT 1", &s);
	if (rc)
		return rc;
	b_i64(s, 1, us - lease_us);
	b_i64(s, 2, max_attempts);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	s = NULL;
	if (rc == SQLITE_DONE)
		return -ENOENT;
	if (rc != SQLITE_ROW)
		return sq_fail(c, rc, "cannot look for a task");
	rc = begin(c);
	if (rc)
		return rc;
	rc = tq_prepare(c,
	                "SELECT id FROM postingest_tasks WHERE " TQ_CLAIMABLE
	                " ORDER BY kind = 'trends', id LIMIT 1",
	                &s);
	if (rc)
		goto fail;
	b_i64(s, 1, us - lease_us);
	b_i64(s, 2, max_attempts);
	rc = exec_id(c, s, "cannot look for a task", &id);
	sqlite3_finalize(s);
	s = NULL;
	if (rc)
		goto fail;
	rc = tq_prepare(
	    c,
	    "UPDATE postingest_tasks SET owner = ?2, claimed_us = ?3, lease_us = ?5, "
	    "attempts = attempts + 1, max_attempts = ?4 WHERE id = ?1 RETURNING id, kind, "
	    "project, commit_sha, host, ref, generation, attempts, enqueued_at",
	    &s);
	if (rc)
		goto fail;
	b_i64(s, 1, id);
	b_text(s, 2, owner);
	b_i64(s, 3, us);
	b_i64(s, 4, max_attempts);
	b_i64(s, 5, lease_us);
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		rc = rc == SQLITE_DONE ? -ENOENT : sq_fail(c, rc, "cannot claim a task");
		goto fail;
	}
	/* copied out: the transaction ends before the callback runs */
	rc = 0;
	for (int i = 0; i < 6; i++) {
		static const int cols[6] = {1, 2, 3, 4, 5, 8};

		text[i] = strdup(col_text(s, cols[i]) ? col_text(s, cols[i]) : "");
		if (!text[i])
			rc = -ENOMEM;
	}
	t = (struct store_task){.id = sqlite3_column_int64(s, 0),
	                        .kind = text[0],
	                        .project = text[1],
	                        .commit = text[2] && *text[2] ? text[2] : NULL,
	                        .host = text[3],
	                        .ref = text[4],
	                        .generation = sqlite3_column_int64(s, 6),
	                        .attempts = sqlite3_column_int(s, 7),
	                        .enqueued_at = text[5]};
	sqlite3_finalize(s);
	s = NULL;
	if (!rc)
		rc = commit(c);
	if (rc)
		goto fail;
	rc = cb(&t, cls);
	goto out;
fail:
	sqlite3_finalize(s);
	rollback(c);
out:
	for (int i = 0; i < 6; i++)
		free(text[i]);
	return rc;
}

static int sq_task_done(struct store_conn *base, int64_t id, int64_t generation)
{
	struct sq_conn *c = sq(base);
	sqlite3_stmt *s = NULL;
	int changes = 0, rc;

	rc = tq_prepare(c, "DELETE FROM postingest_tasks WHERE id = ?1 AND generation = ?2", &s);
	if (rc)
		return rc;
	b_i64(s, 1, id);
	b_i64(s, 2, generation);
	rc = tq_exec(c, s, "cannot end a task", &changes);
	sqlite3_finalize(s);
	if (rc || changes)
		return rc;
	/* enqueued again while it ran: it waits for another pass, with fresh attempts */
	rc = tq_prepare(c,
	                "UPDATE postingest_tasks SET owner = NULL, claimed_us = NULL, "
	                "attempts = 0 WHERE id = ?1",
	                &s);
	if (rc)
		return rc;
	b_i64(s, 1, id);
	rc = tq_exec(c, s, "cannot release a task", &changes);
	sqlite3_finalize(s);
	return rc ? rc : changes ? 0 : -ENOENT;
}

static int sq_task_fail(struct store_conn *base, int64_t id, const char *message)
{
	struct sq_conn *c = sq(base);
	sqlite3_stmt *s = NULL;
	int changes = 0, rc;

	rc = tq_prepare(c,
	                "UPDATE postingest_tasks SET owner = NULL, claimed_us = NULL, "
	                "last_error = ?2 WHERE id = ?1",
	                &s);
	if (rc)
		return rc;
	b_i64(s, 1, id);
	b_text(s, 2, message);
	rc = tq_exec(c, s, "cannot release a task", &changes);
	sqlite3_finalize(s);
	return rc ? rc : changes ? 0 : -ENOENT;
}

static int sq_task_count(struct store_conn *base, int64_t *pending, int64_t *dead)
{
	struct sq_conn *c = sq(base);
	sqlite3_stmt *s = NULL;
	char now[AW_TIME_LEN];
	int64_t us;
	int rc;

	rc = tq_prepare(c,
	                "SELECT COUNT(*), COALESCE(SUM(max_attempts IS NOT NULL AND attempts >= "
	                "max_attempts AND (owner IS NULL OR claimed_us + lease_us < ?1)), 0) "
	                "FROM postingest_tasks",
	                &s);
	if (rc)
		return rc;
	store_now(now, &us);
	b_i64(s, 1, us);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*dead = sqlite3_column_int64(s, 1);
		*pending = sqlite3_column_int64(s, 0) - *dead;
		rc = 0;
	} else {
		rc = sq_fail(c, rc, "cannot count tasks");
	}
	sqlite3_finalize(s);
	return rc;
}

static int sq_chart_put(struct store_conn *base, const struct store_chart *ch)
{
	struct sq_conn *c = sq(base);
	sqlite3_stmt *s = NULL;
	char now[AW_TIME_LEN];
	int64_t us;
	int rc;

	rc = tq_prepare(c,
	                "INSERT INTO charts (path, content_type, hash, size, updated_at, data) "
	                "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (path) DO UPDATE SET "
	                "content_type = excluded.content_type, hash = excluded.hash, "
	                "size = excluded.size, updated_at = excluded.updated_at, "
	                "data = excluded.data",
	                &s);
	if (rc)
		return rc;
	store_now(now, &us);
	b_text(s, 1, ch->path);
	b_text(s, 2, ch->content_type);
	b_text(s, 3, ch->hash);
	b_i64(s, 4, (int64_t)ch->len);
	b_text(s, 5, now);
	sqlite3_bind_blob64(s, 6, ch->len ? ch->data : "", ch->len, SQLITE_STATIC);
	rc = tq_exec(c, s, "cannot store a chart", NULL);
	sqlite3_finalize(s);
	return rc;
}

static int sq_chart_get(struct store_conn *base, const char *path, bool with_data,
                        store_chart_cb cb, void *cls)
{
	struct sq_conn *c = sq(base);
	sqlite3_stmt *s = NULL;
	struct store_chart ch;
	int rc;

	rc = tq_prepare(c,
	                with_data ? "SELECT path, content_type, hash, size, updated_at, data "
	                            "FROM charts WHERE path = ?1"
	                          : "SELECT path, content_type, hash, size, updated_at "
	                            "FROM charts WHERE path = ?1",
	                &s);
	if (rc)
		return rc;
	b_text(s, 1, path);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		ch = (struct store_chart){.path = col_text(s, 0),
		                          .content_type = col_text(s, 1),
		                          .hash = col_text(s, 2),
		                          .len = (size_t)sqlite3_column_int64(s, 3),
		                          .updated_at = col_text(s, 4)};
		if (with_data) {
			ch.data = sqlite3_column_blob(s, 5);
			ch.len = (size_t)sqlite3_column_bytes(s, 5);
		}
		rc = cb(&ch, cls);
	} else {
		rc = rc == SQLITE_DONE ? -ENOENT : sq_fail(c, rc, "cannot read a chart");
	}
	sqlite3_finalize(s);
	return rc;
}

/* ---- end of tasks and charts (interim) ---- */

/* ---- ingest ---- */

static int cell_id(struct sq_conn *c, const struct aw_cell *cell, int64_t *id)
{
	char sig[STORE_SIG_MAX];
	sqlite3_stmt *s;
	int rc;

	rc = store_cell_sig(cell, sig, sizeof(sig));
	if (rc)
		return rc;
	if (!aw_strmap_get(c->cells, sig, id))
		return 0;
	s = st(c, SQ_CELL_FIND);
	if (!s)
		return -EIO;
	b_text(s, 1, sig);
	rc = exec_id(c, s, "cannot look up a cell", id);
	if (rc == -ENOENT) {
		s = st(c, SQ_CELL_ADD);
		if (!s)
			return -EIO;
		b_text(s, 1, sig);
		b_text(s, 2, cell->key);
		b_text(s, 3, cell->op);
		b_text(s, 4, cell->reader);
		b_text(s, 5, cell->subject);
		b_text(s, 6, cell->kernel);
		b_text(s, 7, cell->placement);
		b_opt(s, 8, cell->cpu);
		b_opt(s, 9, cell->contender_cpu);
		b_opt(s, 10, cell->c);
		b_i64(s, 11, cell->d);
		rc = exec_id(c, s, "cannot add a cell", id);
	}
	if (rc)
		return rc;
	/* A full cache starts over rather than grow: the matrix has far fewer cells. */
	if (aw_strmap_put(c->cells, sig, *id) == -ENOSPC) {
		aw_strmap_clear(c->cells);
		aw_strmap_put(c->cells, sig, *id);
	}
	return 0;
}

static int put_cells(struct sq_conn *c, const struct aw_result *r, int64_t run)
{
	sqlite3_stmt *s = st(c, SQ_MEAS_ADD);
	int rc;

	if (!s)
		return -EIO;
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct aw_cell *cell = &r->cells[i];
		int64_t id;

		rc = cell_id(c, cell, &id);
		if (rc)
			return rc;
		sqlite3_reset(s);
		b_i64(s, 1, run);
		b_i64(s, 2, id);
		b_i64(s, 3, (int64_t)i);
		b_text(s, 4, aw_cell_status_name(cell->status));
		b_i64(s, 5, (int64_t)cell->n);
		b_i64(s, 6, (int64_t)cell->batch);
		b_real(s, 7, cell->min);
		b_real(s, 8, cell->p50);
		b_real(s, 9, cell->p95);
		b_real(s, 10, cell->p99);
		b_real(s, 11, cell->max);
		b_real(s, 12, cell->mean);
		b_real(s, 13, cell->stddev);
		b_real(s, 14, cell->ci_lo);
		b_real(s, 15, cell->ci_hi);
		b_real(s, 16, cell->baseline_ns);
		b_i64(s, 17, cell->below_resolution);
		b_text(s, 18, cell->reason);
		rc = exec_stmt(c, s, "cannot add a measurement");
		if (rc)
			return rc;
	}
	return 0;
}

static int put_one(struct sq_conn *c, struct store_put *it)
{
	const struct aw_result *r = it->result;
	const char *host = json_string_value(json_object_get(r->host, "name"));
	const char *arch = json_string_value(json_object_get(r->host, "arch"));
	const char *model = json_string_value(json_object_get(r->host, "cpu_model"));
	const char *platform = json_string_value(json_object_get(r->host, "platform_hash"));
	int64_t project, host_id, fp, commit_id = AW_NONE, started_us = 0, ct_us = AW_NONE;
	char *meta = NULL;
	sqlite3_stmt *s;
	int rc;

	s = st(c, SQ_RUN_FIND);
	if (!s)
		return -EIO;
	b_text(s, 1, r->run_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		it->seq = sqlite3_column_int64(s, 0);
		it->outcome =
		    strcmp(col_text(s, 1), it->content_hash) ? STORE_CONFLICT : STORE_DUPLICATE;
		sqlite3_reset(s);
		return 0;
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return sq_fail(c, rc, "cannot look up a run");

	s = st(c, SQ_PROJECT_FIND);
	if (!s)
		return -EIO;
	b_text(s, 1, r->project);
	rc = exec_id(c, s, "cannot look up a project", &project);
	if (rc == -ENOENT) {
		s = st(c, SQ_PROJECT_ADD);
		if (!s)
			return -EIO;
		b_text(s, 1, r->project);
		b_text(s, 2, it->received_at);
		rc = exec_id(c, s, "cannot add a project", &project);
	}
	if (rc)
		return rc;

	s = st(c, SQ_HOST_UPSERT);
	if (!s)
		return -EIO;
	b_text(s, 1, host);
	b_text(s, 2, arch);
	b_text(s, 3, model);
	b_text(s, 4, platform);
	b_text(s, 5, it->received_at);
	rc = exec_id(c, s, "cannot store a host", &host_id);
	if (rc)
		return rc;

	s = st(c, SQ_FP_UPSERT);
	if (!s)
		return -EIO;
	b_i64(s, 1, host_id);
	b_text(s, 2, it->host_hash);
	b_text(s, 3, platform);
	b_text(s, 4, it->host_json);
	b_text(s, 5, it->received_at);
	rc = exec_id(c, s, "cannot store a fingerprint", &fp);
	if (rc)
		return rc;
	s = st(c, SQ_HOST_SET_FP);
	if (!s)
		return -EIO;
	b_i64(s, 1, host_id);
	b_i64(s, 2, fp);
	rc = exec_stmt(c, s, "cannot update a host");
	if (rc)
		return rc;

	aw_time_parse(r->started_at, &started_us);
	if (r->commit_time)
		aw_time_parse(r->commit_time, &ct_us);
	if (r->commit) {
		s = st(c, SQ_COMMIT_UPSERT);
		if (!s)
			return -EIO;
		b_i64(s, 1, project);
		b_text(s, 2, r->commit);
		b_text(s, 3, r->commit_time);
		b_opt(s, 4, ct_us);
		b_i64(s, 5, started_us);
		rc = exec_id(c, s, "cannot store a commit", &commit_id);
		if (rc)
			return rc;
	}

	if (r->meta) {
		meta = json_dumps(r->meta, JSON_COMPACT | JSON_SORT_KEYS);
		if (!meta)
			return -ENOMEM;
	}
	s = st(c, SQ_RUN_ADD);
	if (!s) {
		free(meta);
		return -EIO;
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
	rc = exec_id(c, s, "cannot add a run", &it->seq);
	free(meta);
	if (rc)
		return rc;
	rc = put_cells(c, r, it->seq);
	if (!rc) /* tasks (interim) */
		rc = task_add(c, "run", r->project, r->commit, host, r->ref);
	if (rc)
		return rc;
	it->outcome = STORE_CREATED;
	return 0;
}

static int sq_put_runs(struct store_conn *base, struct store_put *items, size_t n)
{
	struct sq_conn *c = sq(base);
	int rc;

	rc = begin(c);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		rc = put_one(c, &items[i]);
		if (rc)
			goto fail;
	}
	rc = commit(c);
	if (rc)
		goto fail;
	return 0;
fail:
	rollback(c);
	return rc;
}

/* ---- reads ---- */

static void fill_run(sqlite3_stmt *s, struct store_run *run)
{
	run->seq = sqlite3_column_int64(s, 0);
	run->run_id = col_text(s, 1);
	run->project = col_text(s, 2);
	run->host = col_text(s, 3);
	run->commit = col_text(s, 4);
	run->ref = col_text(s, 5);
	run->commit_time = col_text(s, 6);
	run->trigger = col_text(s, 7);
	run->started_at = col_text(s, 8);
	run->finished_at = col_text(s, 9);
	run->received_at = col_text(s, 10);
	run->matrix_name = col_text(s, 11);
	run->matrix_version = sqlite3_column_int64(s, 12);
	run->matrix_hash = col_text(s, 13);
	run->matrix_profile = col_text(s, 14);
	run->n_cells = sqlite3_column_int64(s, 15);
	run->order_us = sqlite3_column_int64(s, 16);
	run->platform_hash = col_text(s, 17);
}

/* Steps `s` calling `row(s, cls)` for each row; resets. */
static int each_row(struct sq_conn *c, sqlite3_stmt *s, int (*row)(sqlite3_stmt *, void *),
                    void *cls, const char *what)
{
	int rc;

	if (!s)
		return -EIO;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int stop = row(s, cls);

		if (stop) {
			sqlite3_reset(s);
			return stop;
		}
	}
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? 0 : sq_fail(c, rc, what);
}

struct run_rows {
	store_run_cb cb;
	void *cls;
};

static int run_row(sqlite3_stmt *s, void *cls)
{
	struct run_rows *rr = cls;
	struct store_run run;

	fill_run(s, &run);
	return rr->cb(&run, rr->cls);
}

static int sq_list_runs(struct store_conn *base, const struct store_run_filter *f, store_run_cb cb,
                        void *cls)
{
	struct sq_conn *c = sq(base);
	struct run_rows rr = {cb, cls};
	struct aw_buf sql;
	sqlite3_stmt *s = NULL;
	const char *texts[4];
	int n = 0, rc;

	aw_buf_init(&sql, 4096);
	/* The statement text comes from constant fragments only; every value is bound. */
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
		rc = aw_buf_printf(&sql, " AND r.id < ?%d ORDER BY r.id DESC LIMIT ?%d", n + 1,
		                   n + 2);
	if (rc)
		goto out;
	rc = sqlite3_prepare_v2(c->db, sql.data, -1, &s, NULL);
	if (rc != SQLITE_OK) {
		rc = sq_fail(c, rc, "cannot prepare the run list");
		goto out;
	}
	for (int i = 0; i < n; i++)
		b_text(s, i + 1, texts[i]);
	b_i64(s, n + 1, f->before_seq > 0 ? f->before_seq : INT64_MAX);
	b_i64(s, n + 2, f->limit);
	rc = each_row(c, s, run_row, &rr, "cannot list runs");
out:
	sqlite3_finalize(s);
	aw_buf_release(&sql);
	return rc;
}

static int sq_ref_history(struct store_conn *base, const char *project, const char *host,
                          const char *ref, int64_t before_order_us, int64_t before_seq,
                          unsigned limit, store_run_cb cb, void *cls)
{
	struct sq_conn *c = sq(base);
	struct run_rows rr = {cb, cls};
	sqlite3_stmt *s = st(c, SQ_REF_HISTORY);

	if (!s)
		return -EIO;
	b_text(s, 1, host);
	b_text(s, 2, ref);
	b_text(s, 3, project);
	b_i64(s, 4, before_order_us);
	b_i64(s, 5, before_seq);
	b_i64(s, 6, limit);
	return each_row(c, s, run_row, &rr, "cannot read a ref's history");
}

/* Fills a cell from the CELL_COLS columns. Returns 0 or -ENOMEM/-EIO. */
static int fill_cell(sqlite3_stmt *s, struct aw_cell *cell)
{
	if (aw_set_str(&cell->key, col_text(s, 0)) || aw_set_str(&cell->op, col_text(s, 1)) ||
	    aw_set_str(&cell->reader, col_text(s, 2)) ||
	    aw_set_str(&cell->subject, col_text(s, 3)) ||
	    aw_set_str(&cell->kernel, col_text(s, 4)) ||
	    aw_set_str(&cell->placement, col_text(s, 5)) ||
	    aw_set_str(&cell->reason, col_text(s, 24)))
		return -ENOMEM;
	cell->cpu = (int)col_opt(s, 6);
	cell->contender_cpu = (int)col_opt(s, 7);
	cell->c = col_opt(s, 8);
	cell->d = sqlite3_column_int64(s, 9);
	if (store_status_parse(col_text(s, 10), &cell->status))
		return -EIO;
	cell->n = (uint64_t)sqlite3_column_int64(s, 11);
	cell->batch = (uint64_t)sqlite3_column_int64(s, 12);
	cell->min = col_real(s, 13);
	cell->p50 = col_real(s, 14);
	cell->p95 = col_real(s, 15);
	cell->p99 = col_real(s, 16);
	cell->max = col_real(s, 17);
	cell->mean = col_real(s, 18);
	cell->stddev = col_real(s, 19);
	cell->ci_lo = col_real(s, 20);
	cell->ci_hi = col_real(s, 21);
	cell->baseline_ns = col_real(s, 22);
	cell->below_resolution = sqlite3_column_int(s, 23) != 0;
	return 0;
}

struct cell_rows {
	store_cell_cb cb;
	void *cls;
	struct aw_result *into; /* or append here */
};

static int cell_row(sqlite3_stmt *s, void *cls)
{
	struct cell_rows *cr = cls;
	struct aw_cell tmp = {0}, *cell = &tmp;
	int rc;

	if (cr->into) {
		cell = aw_result_add_cell(cr->into);
		if (!cell)
			return -ENOMEM;
		return fill_cell(s, cell);
	}
	rc = fill_cell(s, cell);
	if (!rc)
		rc = cr->cb(cell, cr->cls);
	aw_cell_release(&tmp);
	return rc;
}

static int sq_run_cells(struct store_conn *base, int64_t seq, store_cell_cb cb, void *cls)
{
	struct sq_conn *c = sq(base);
	struct cell_rows cr = {cb, cls, NULL};
	sqlite3_stmt *s = st(c, SQ_RUN_CELLS);

	if (!s)
		return -EIO;
	b_i64(s, 1, seq);
	return each_row(c, s, cell_row, &cr, "cannot read a run's cells");
}

static int sq_get_run(struct store_conn *base, const char *run_id, struct aw_result **out)
{
	struct sq_conn *c = sq(base);
	struct aw_result *r = NULL;
	struct cell_rows cr = {NULL, NULL, NULL};
	sqlite3_stmt *s;
	int64_t seq;
	int rc;

	*out = NULL;
	s = st(c, SQ_RUN_GET);
	if (!s)
		return -EIO;
	b_text(s, 1, run_id);
	/* The header and the cells are read in one transaction so they match. */
	rc = exec_stmt(c, st(c, SQ_BEGIN_READ), "cannot begin a read");
	if (rc)
		return rc;
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		rc = rc == SQLITE_DONE ? -ENOENT : sq_fail(c, rc, "cannot read a run");
		goto out;
	}
	r = aw_result_new();
	if (!r) {
		rc = -ENOMEM;
		goto out;
	}
	seq = sqlite3_column_int64(s, 0);
	snprintf(r->run_id, sizeof(r->run_id), "%s", col_text(s, 1));
	rc = -ENOMEM;
	if (aw_set_str(&r->project, col_text(s, 2)) || aw_set_str(&r->commit, col_text(s, 3)) ||
	    aw_set_str(&r->ref, col_text(s, 4)) || aw_set_str(&r->commit_time, col_text(s, 5)) ||
	    aw_set_str(&r->matrix_name, col_text(s, 9)) ||
	    aw_set_str(&r->matrix_hash, col_text(s, 11)) ||
	    aw_set_str(&r->matrix_profile, col_text(s, 12)))
		goto out;
	rc = -EIO;
	if (aw_trigger_parse(col_text(s, 6), &r->trigger))
		goto out;
	snprintf(r->started_at, sizeof(r->started_at), "%s", col_text(s, 7));
	snprintf(r->finished_at, sizeof(r->finished_at), "%s", col_text(s, 8));
	r->matrix_version = sqlite3_column_int64(s, 10);
	if (col_text(s, 13)) {
		r->meta = json_loads(col_text(s, 13), 0, NULL);
		if (!r->meta)
			goto out;
	}
	r->host = json_loads(col_text(s, 14), 0, NULL);
	if (!r->host)
		goto out;
	sqlite3_reset(s);
	cr.into = r;
	s = st(c, SQ_RUN_CELLS);
	if (!s)
		goto out;
	b_i64(s, 1, seq);
	rc = each_row(c, s, cell_row, &cr, "cannot read a run's cells");
	if (rc)
		goto out;
	*out = r;
	r = NULL;
out:
	if (s)
		sqlite3_reset(s);
	exec_stmt(c, st(c, SQ_COMMIT), "cannot end a read");
	aw_result_free(&r);
	return rc;
}

struct point_rows {
	store_point_cb cb;
	void *cls;
};

static int point_row(sqlite3_stmt *s, void *cls)
{
	struct point_rows *pr = cls;
	struct store_point p = {
	    .seq = sqlite3_column_int64(s, 0),
	    .run_id = col_text(s, 1),
	    .commit = col_text(s, 2),
	    .started_at = col_text(s, 3),
	    .matrix_hash = col_text(s, 4),
	    .status = col_text(s, 5),
	    .order_us = sqlite3_column_int64(s, 6),
	    .value = col_real(s, 7),
	};

	return pr->cb(&p, pr->cls);
}

static int sq_series(struct store_conn *base, const struct store_series_query *q, store_point_cb cb,
                     void *cls)
{
	struct sq_conn *c = sq(base);
	struct point_rows pr = {cb, cls};
	struct aw_buf sql;
	sqlite3_stmt *s = NULL;
	int rc;

	if ((unsigned)q->metric >= STORE_METRIC_COUNT)
		return -EINVAL;
	aw_buf_init(&sql, 4096);
	/* The metric's column comes from a fixed table, never from the request. */
	rc = aw_buf_printf(
	    &sql,
	    "SELECT * FROM (SELECT r.id, r.uuid, c.sha, r.started_at, r.matrix_hash, m.status, "
	    "COALESCE(c.order_us, r.started_us) AS o, m.%s FROM runs r "
	    "JOIN hosts h ON h.id = r.host_id JOIN projects p ON p.id = r.project_id "
	    "JOIN measurements m ON m.run_id = r.id JOIN cells k ON k.id = m.cell_id "
	    "LEFT JOIN commits c ON c.id = r.commit_id "
	    "WHERE h.name = ?1 AND r.ref = ?2 AND k.key = ?3 AND (?4 IS NULL OR p.name = ?4) "
	    "ORDER BY o DESC, r.id DESC LIMIT ?5) ORDER BY o, id",
	    store_metric_columns[q->metric]);
	if (rc)
		goto out;
	rc = sqlite3_prepare_v2(c->db, sql.data, -1, &s, NULL);
	if (rc != SQLITE_OK) {
		rc = sq_fail(c, rc, "cannot prepare the series query");
		goto out;
	}
	b_text(s, 1, q->host);
	b_text(s, 2, q->ref);
	b_text(s, 3, q->cell_key);
	b_text(s, 4, q->project);
	b_i64(s, 5, q->limit);
	rc = each_row(c, s, point_row, &pr, "cannot read a series");
out:
	sqlite3_finalize(s);
	aw_buf_release(&sql);
	return rc;
}

struct host_rows {
	store_host_cb cb;
	store_fingerprint_cb fcb;
	void *cls;
	int64_t id;
};

static int host_row(sqlite3_stmt *s, void *cls)
{
	struct host_rows *hr = cls;
	struct store_host h = {
	    .name = col_text(s, 0),
	    .arch = col_text(s, 1),
	    .cpu_model = col_text(s, 2),
	    .platform_hash = col_text(s, 3),
	    .first_seen = col_text(s, 4),
	    .last_seen = col_text(s, 5),
	    .fingerprint = col_text(s, 6),
	    .runs = sqlite3_column_int64(s, 7),
	};

	if (sqlite3_column_count(s) > 8)
		hr->id = sqlite3_column_int64(s, 8);
	return hr->cb(&h, hr->cls);
}

static int sq_list_hosts(struct store_conn *base, store_host_cb cb, void *cls)
{
	struct sq_conn *c = sq(base);
	struct host_rows hr = {cb, NULL, cls, 0};

	return each_row(c, st(c, SQ_HOSTS), host_row, &hr, "cannot list hosts");
}

static int fp_row(sqlite3_stmt *s, void *cls)
{
	struct host_rows *hr = cls;
	struct store_fingerprint f = {
	    .hash = col_text(s, 0),
	    .platform_hash = col_text(s, 1),
	    .first_seen = col_text(s, 2),
	    .last_seen = col_text(s, 3),
	    .doc = col_text(s, 4),
	};

	return hr->fcb(&f, hr->cls);
}

static int sq_get_host(struct store_conn *base, const char *name, store_host_cb cb,
                       store_fingerprint_cb fcb, void *cls)
{
	struct sq_conn *c = sq(base);
	struct host_rows hr = {cb, fcb, cls, 0};
	sqlite3_stmt *s = st(c, SQ_HOST_GET);
	int rc;

	if (!s)
		return -EIO;
	b_text(s, 1, name);
	rc = each_row(c, s, host_row, &hr, "cannot read a host");
	if (rc)
		return rc;
	if (!hr.id)
		return -ENOENT;
	if (!fcb)
		return 0;
	s = st(c, SQ_FPS);
	if (!s)
		return -EIO;
	b_i64(s, 1, hr.id);
	return each_row(c, s, fp_row, &hr, "cannot read fingerprints");
}

/* ---- tokens ---- */

static int sq_token_create(struct store_conn *base, enum store_role role, const char *host,
                           const char *hash, int64_t *id)
{
	struct sq_conn *c = sq(base);
	sqlite3_stmt *s = st(c, SQ_TOKEN_ADD);
	char now[AW_TIME_LEN];
	int64_t us;

	if (!s)
		return -EIO;
	store_now(now, &us);
	b_text(s, 1, store_role_name(role));
	b_text(s, 2, host);
	b_text(s, 3, hash);
	b_text(s, 4, now);
	return exec_id(c, s, "cannot create a token", id);
}

struct token_rows {
	store_token_cb cb;
	void *cls;
	int found;
};

static int token_row(sqlite3_stmt *s, void *cls)
{
	struct token_rows *tr = cls;
	struct store_token t = {
	    .id = sqlite3_column_int64(s, 0),
	    .host = col_text(s, 2),
	    .hash = col_text(s, 3),
	    .created_at = col_text(s, 4),
	    .revoked_at = col_text(s, 5),
	    .last_used_at = col_text(s, 6),
	};

	if (store_role_parse(col_text(s, 1), &t.role))
		return -EIO;
	tr->found = 1;
	return tr->cb(&t, tr->cls);
}

static int sq_token_find(struct store_conn *base, const char *hash, store_token_cb cb, void *cls)
{
	struct sq_conn *c = sq(base);
	struct token_rows tr = {cb, cls, 0};
	sqlite3_stmt *s = st(c, SQ_TOKEN_FIND);
	int rc;

	if (!s)
		return -EIO;
	b_text(s, 1, hash);
	rc = each_row(c, s, token_row, &tr, "cannot look up a token");
	return rc ? rc : tr.found ? 0 : -ENOENT;
}

static int sq_token_list(struct store_conn *base, store_token_cb cb, void *cls)
{
	struct sq_conn *c = sq(base);
	struct token_rows tr = {cb, cls, 0};

	return each_row(c, st(c, SQ_TOKEN_LIST), token_row, &tr, "cannot list tokens");
}

static int sq_token_revoke(struct store_conn *base, int64_t id)
{
	struct sq_conn *c = sq(base);
	sqlite3_stmt *s = st(c, SQ_TOKEN_REVOKE);
	char now[AW_TIME_LEN];
	int64_t us;
	int rc;

	if (!s)
		return -EIO;
	store_now(now, &us);
	b_i64(s, 1, id);
	b_text(s, 2, now);
	rc = exec_stmt(c, s, "cannot revoke a token");
	if (!rc && sqlite3_changes(c->db) == 0)
		rc = -ENOENT;
	return rc;
}

static int sq_token_touch(struct store_conn *base, int64_t id, const char *when)
{
	struct sq_conn *c = sq(base);
	sqlite3_stmt *s = st(c, SQ_TOKEN_TOUCH);

	if (!s)
		return -EIO;
	b_i64(s, 1, id);
	b_text(s, 2, when);
	return exec_stmt(c, s, "cannot update a token");
}

/* ---- jobs ---- */

static int sq_job_create(struct store_conn *base, const struct store_job_spec *spec, int64_t *id)
{
	struct sq_conn *c = sq(base);
	char now[AW_TIME_LEN], expires[AW_TIME_LEN];
	struct timespec ts;
	sqlite3_stmt *s;
	int64_t us;
	int rc;

	store_now(now, &us);
	ts.tv_sec = (time_t)((us + spec->ttl_us) / 1000000);
	ts.tv_nsec = (long)((us + spec->ttl_us) % 1000000) * 1000;
	aw_time_format(&ts, expires);
	rc = begin(c);
	if (rc)
		return rc;
	s = st(c, SQ_JOB_ADD);
	if (!s) {
		rc = -EIO;
		goto fail;
	}
	b_text(s, 1, spec->project);
	b_text(s, 2, spec->commit);
	b_text(s, 3, spec->ref);
	b_text(s, 4, spec->subject);
	b_i64(s, 5, spec->hosts == NULL);
	b_text(s, 6, now);
	b_text(s, 7, expires);
	b_i64(s, 8, us + spec->ttl_us);
	if (spec->created_by)
		b_i64(s, 9, spec->created_by);
	else
		sqlite3_bind_null(s, 9);
	rc = exec_id(c, s, "cannot add a job", id);
	for (size_t i = 0; !rc && spec->hosts && i < spec->n_hosts; i++) {
		s = st(c, SQ_JOB_TARGET_ADD);
		if (!s) {
			rc = -EIO;
			break;
		}
		b_i64(s, 1, *id);
		b_text(s, 2, spec->hosts[i]);
		rc = exec_stmt(c, s, "cannot add a job's host");
	}
	if (!rc)
		rc = commit(c);
	if (!rc)
		return 0;
fail:
	rollback(c);
	return rc;
}

struct job_rows {
	store_job_cb cb;
	store_job_host_cb hcb;
	void *cls;
	int64_t found;
};

static int job_row(sqlite3_stmt *s, void *cls)
{
	struct job_rows *jr = cls;
	struct store_job j = {
	    .id = sqlite3_column_int64(s, 0),
	    .project = col_text(s, 1),
	    .commit = col_text(s, 2),
	    .ref = col_text(s, 3),
	    .subject = col_text(s, 4),
	    .all_hosts = sqlite3_column_int(s, 5) != 0,
	    .created_at = col_text(s, 6),
	    .expires_at = col_text(s, 7),
	};

	jr->found = j.id;
	return jr->cb ? jr->cb(&j, jr->cls) : 0;
}

static int sq_job_claim(struct store_conn *base, const char *host, int64_t reclaim_us,
                        store_job_cb cb, void *cls)
{
	struct sq_conn *c = sq(base);
	char now[AW_TIME_LEN];
	int64_t us;
	int rc;

	store_now(now, &us);
	/* A few rounds: another collector (or a duplicate agent) may win a candidate. */
	for (int round = 0; round < 4; round++) {
		struct job_rows jr = {NULL, NULL, NULL, 0};
		sqlite3_stmt *s = st(c, SQ_JOB_CANDIDATE);

		if (!s)
			return -EIO;
		b_text(s, 1, host);
		b_i64(s, 2, us);
		b_i64(s, 3, us - reclaim_us);
		rc = each_row(c, s, job_row, &jr, "cannot look for jobs");
		if (rc)
			return rc;
		if (!jr.found)
			return -ENOENT;
		s = st(c, SQ_JOB_CLAIM);
		if (!s)
			return -EIO;
		b_i64(s, 1, jr.found);
		b_text(s, 2, host);
		b_text(s, 3, now);
		b_i64(s, 4, us);
		b_i64(s, 5, us - reclaim_us);
		rc = exec_stmt(c, s, "cannot claim a job");
		if (rc)
			return rc;
		if (sqlite3_changes(c->db) == 1) {
			struct job_rows out = {cb, NULL, cls, 0};

			s = st(c, SQ_JOB_GET);
			if (!s)
				return -EIO;
			b_i64(s, 1, jr.found);
			return each_row(c, s, job_row, &out, "cannot read a job");
		}
	}
	return -ENOENT;
}

static int sq_job_unclaim(struct store_conn *base, int64_t id, const char *host)
{
	struct sq_conn *c = sq(base);
	sqlite3_stmt *s = st(c, SQ_JOB_UNCLAIM);

	if (!s)
		return -EIO;
	b_i64(s, 1, id);
	b_text(s, 2, host);
	return exec_stmt(c, s, "cannot release a job");
}

static int state_row(sqlite3_stmt *s, void *cls)
{
	snprintf(cls, 16, "%s", col_text(s, 0));
	return 0;
}

static int sq_job_set_state(struct store_conn *base, int64_t id, const char *host,
                            const char *state, const char *run_id, const char *message)
{
	struct sq_conn *c = sq(base);
	char now[AW_TIME_LEN], old[16] = "";
	sqlite3_stmt *s;
	int64_t us;
	int rc;

	store_now(now, &us);
	rc = begin(c);
	if (rc)
		return rc;
	s = st(c, SQ_JOB_STATE_GET);
	if (!s) {
		rc = -EIO;
		goto fail;
	}
	b_i64(s, 1, id);
	b_text(s, 2, host);
	rc = each_row(c, s, state_row, old, "cannot read a job's state");
	if (rc)
		goto fail;
	if (!*old) {
		rc = -ENOENT;
		goto fail;
	}
	/* done and failed are final; repeating the final state is harmless. */
	if ((!strcmp(old, "done") || !strcmp(old, "failed")) && strcmp(old, state)) {
		rc = -EPERM;
		goto fail;
	}
	s = st(c, SQ_JOB_STATE_SET);
	if (!s) {
		rc = -EIO;
		goto fail;
	}
	b_i64(s, 1, id);
	b_text(s, 2, host);
	b_text(s, 3, state);
	b_text(s, 4, run_id);
	b_text(s, 5, message);
	b_text(s, 6, now);
	rc = exec_stmt(c, s, "cannot set a job's state");
	if (!rc)
		rc = commit(c);
	if (!rc)
		return 0;
fail:
	rollback(c);
	return rc;
}

static int job_host_row(sqlite3_stmt *s, void *cls)
{
	struct job_rows *jr = cls;
	struct store_job_host h = {
	    .host = col_text(s, 0),
	    .state = col_text(s, 1),
	    .run_id = col_text(s, 2),
	    .message = col_text(s, 3),
	    .claimed_at = col_text(s, 4),
	    .updated_at = col_text(s, 5),
	};

	return jr->hcb(&h, jr->cls);
}

static int sq_job_get(struct store_conn *base, int64_t id, store_job_cb cb, store_job_host_cb hcb,
                      void *cls)
{
	struct sq_conn *c = sq(base);
	struct job_rows jr = {cb, hcb, cls, 0};
	sqlite3_stmt *s;
	int rc;

	rc = exec_stmt(c, st(c, SQ_BEGIN_READ), "cannot begin a read");
	if (rc)
		return rc;
	s = st(c, SQ_JOB_GET);
	if (!s) {
		rc = -EIO;
		goto out;
	}
	b_i64(s, 1, id);
	rc = each_row(c, s, job_row, &jr, "cannot read a job");
	if (!rc && !jr.found)
		rc = -ENOENT;
	if (rc || !hcb)
		goto out;
	s = st(c, SQ_JOB_HOSTS);
	if (!s) {
		rc = -EIO;
		goto out;
	}
	b_i64(s, 1, id);
	rc = each_row(c, s, job_host_row, &jr, "cannot read a job's hosts");
out:
	exec_stmt(c, st(c, SQ_COMMIT), "cannot end a read");
	return rc;
}

static int sq_job_list(struct store_conn *base, unsigned limit, store_job_cb cb, void *cls)
{
	struct sq_conn *c = sq(base);
	struct job_rows jr = {cb, NULL, cls, 0};
	sqlite3_stmt *s = st(c, SQ_JOB_LIST);

	if (!s)
		return -EIO;
	b_i64(s, 1, limit);
	return each_row(c, s, job_row, &jr, "cannot list jobs");
}

/* ---- analysis ---- */

static int sq_changepoints_replace(struct store_conn *base, const char *project, const char *host,
                                   const char *ref, const struct store_changepoint *items, size_t n)
{
	struct sq_conn *c = sq(base);
	sqlite3_stmt *s;
	int rc = begin(c);

	if (rc)
		return rc;
	s = st(c, SQ_CP_DELETE);
	if (!s) {
		rc = -EIO;
		goto out;
	}
	b_text(s, 1, project);
	b_text(s, 2, host);
	b_text(s, 3, ref);
	rc = exec_stmt(c, s, "cannot clear change points");
	for (size_t i = 0; !rc && i < n; i++) {
		const struct store_changepoint *p = &items[i];

		s = st(c, SQ_CP_ADD);
		if (!s) {
			rc = -EIO;
			break;
		}
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
		rc = exec_stmt(c, s, "cannot store a change point");
	}
out:
	if (!rc)
		rc = commit(c);
	if (rc)
		rollback(c);
	return rc;
}

struct cp_rows {
	store_changepoint_cb cb;
	void *cls;
};

static int cp_row(sqlite3_stmt *s, void *cls)
{
	struct cp_rows *cr = cls;
	struct store_changepoint p = {
	    .project = col_text(s, 0),
	    .host = col_text(s, 1),
	    .ref = col_text(s, 2),
	    .cell_key = col_text(s, 3),
	    .metric = col_text(s, 4),
	    .commit = col_text(s, 5),
	    .run_id = col_text(s, 6),
	    .order_us = sqlite3_column_int64(s, 7),
	    .before = col_real(s, 8),
	    .after = col_real(s, 9),
	    .pvalue = col_real(s, 10),
	    .computed_at = col_text(s, 11),
	};

	return cr->cb(&p, cr->cls);
}

static int sq_changepoints_list(struct store_conn *base, const char *project, const char *host,
                                const char *ref, const char *cell_key, store_changepoint_cb cb,
                                void *cls)
{
	struct sq_conn *c = sq(base);
	struct cp_rows cr = {cb, cls};
	sqlite3_stmt *s = st(c, SQ_CP_LIST);

	if (!s)
		return -EIO;
	b_text(s, 1, host);
	b_text(s, 2, ref);
	b_text(s, 3, project);
	b_text(s, 4, cell_key);
	return each_row(c, s, cp_row, &cr, "cannot list change points");
}

static int sq_verdict_put(struct store_conn *base, const struct store_verdict *v)
{
	struct sq_conn *c = sq(base);
	sqlite3_stmt *s = st(c, SQ_VERDICT_PUT);

	if (!s)
		return -EIO;
	b_text(s, 1, v->project);
	b_text(s, 2, v->commit);
	b_text(s, 3, v->host);
	b_text(s, 4, v->baseline_ref);
	b_text(s, 5, v->status);
	b_text(s, 6, v->json);
	b_i64(s, 7, v->order_us);
	b_text(s, 8, v->computed_at);
	return exec_stmt(c, s, "cannot store a verdict");
}

struct verdict_rows {
	store_verdict_cb cb;
	void *cls;
};

static int verdict_row(sqlite3_stmt *s, void *cls)
{
	struct verdict_rows *vr = cls;
	struct store_verdict v = {
	    .project = col_text(s, 0),
	    .commit = col_text(s, 1),
	    .host = col_text(s, 2),
	    .baseline_ref = col_text(s, 3),
	    .status = col_text(s, 4),
	    .json = col_text(s, 5),
	    .computed_at = col_text(s, 6),
	    .order_us = sqlite3_column_int64(s, 7),
	};

	return vr->cb(&v, vr->cls);
}

static int verdict_query(struct store_conn *base, enum sq_stmt which, const char *project,
                         const char *commit, const char *host, unsigned limit, store_verdict_cb cb,
                         void *cls)
{
	struct sq_conn *c = sq(base);
	struct verdict_rows vr = {cb, cls};
	sqlite3_stmt *s = st(c, which);

	if (!s)
		return -EIO;
	b_text(s, 1, project);
	b_text(s, 2, commit);
	b_text(s, 3, host);
	b_i64(s, 4, limit);
	return each_row(c, s, verdict_row, &vr, "cannot list verdicts");
}

static int sq_verdict_list(struct store_conn *base, const char *project, const char *commit,
                           const char *host, unsigned limit, store_verdict_cb cb, void *cls)
{
	return verdict_query(base, SQ_VERDICT_LIST, project, commit, host, limit, cb, cls);
}

static int sq_verdict_statuses(struct store_conn *base, const char *project, const char *commit,
                               const char *host, unsigned limit, store_verdict_cb cb, void *cls)
{
	return verdict_query(base, SQ_VERDICT_STATUSES, project, commit, host, limit, cb, cls);
}

const struct store_ops store_sqlite_ops = {
    .name = "sqlite",
    .connect = sq_connect,
    .disconnect = sq_disconnect,
    .broken = sq_broken,
    .migrate = sq_migrate,
    .ping = sq_ping,
    .put_runs = sq_put_runs,
    .list_runs = sq_list_runs,
    .ref_history = sq_ref_history,
    .get_run = sq_get_run,
    .run_cells = sq_run_cells,
    .series = sq_series,
    .list_hosts = sq_list_hosts,
    .get_host = sq_get_host,
    .token_create = sq_token_create,
    .token_find = sq_token_find,
    .token_list = sq_token_list,
    .token_revoke = sq_token_revoke,
    .token_touch = sq_token_touch,
    .job_create = sq_job_create,
    .job_claim = sq_job_claim,
    .job_unclaim = sq_job_unclaim,
    .job_set_state = sq_job_set_state,
    .job_get = sq_job_get,
    .job_list = sq_job_list,
    .changepoints_replace = sq_changepoints_replace,
    .changepoints_list = sq_changepoints_list,
    .verdict_put = sq_verdict_put,
    .verdict_list = sq_verdict_list,
    .verdict_statuses = sq_verdict_statuses,
    /* tasks and charts (interim) */
    .task_enqueue = sq_task_enqueue,
    .task_claim = sq_task_claim,
    .task_done = sq_task_done,
    .task_fail = sq_task_fail,
    .task_count = sq_task_count,
    .chart_put = sq_chart_put,
    .chart_get = sq_chart_get,
};
