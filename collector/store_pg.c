/* The PostgreSQL backend of the store (several stateless collectors on one database): libpq,
 * named prepared statements per connection (PQexecParams for the few queries whose text depends
 * on the filters), a run's cells written with one array-valued statement. The only file of the
 * collector that includes <libpq-fe.h>. */
#include "store_backend.h"

#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/buf.h"
#include "aw/log.h"
#include "aw/strmap.h"

static const char *const migrations[] = {
    /* 1: the initial schema; see store_sqlite.c for the meaning of each column */
    "CREATE TABLE projects ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " created_at TEXT NOT NULL);"
    "CREATE TABLE hosts ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " arch TEXT NOT NULL,"
    " cpu_model TEXT NOT NULL,"
    " platform_hash TEXT,"
    " fingerprint_id BIGINT,"
    " first_seen TEXT NOT NULL,"
    " last_seen TEXT NOT NULL);"
    "CREATE TABLE fingerprints ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " host_id BIGINT NOT NULL REFERENCES hosts (id),"
    " hash TEXT NOT NULL,"
    " platform_hash TEXT,"
    " doc TEXT NOT NULL,"
    " first_seen TEXT NOT NULL,"
    " last_seen TEXT NOT NULL,"
    " UNIQUE (host_id, hash));"
    "CREATE TABLE commits ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " project_id BIGINT NOT NULL REFERENCES projects (id),"
    " sha TEXT NOT NULL,"
    " commit_time TEXT,"
    " commit_time_us BIGINT,"
    " first_started_us BIGINT NOT NULL,"
    " order_us BIGINT NOT NULL,"
    " UNIQUE (project_id, sha));"
    "CREATE INDEX commits_sha ON commits (sha);"
    "CREATE TABLE runs ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " uuid TEXT NOT NULL UNIQUE,"
    " project_id BIGINT NOT NULL REFERENCES projects (id),"
    " host_id BIGINT NOT NULL REFERENCES hosts (id),"
    " fingerprint_id BIGINT NOT NULL REFERENCES fingerprints (id),"
    " commit_id BIGINT REFERENCES commits (id),"
    " ref TEXT NOT NULL,"
    " commit_time TEXT,"
    " trigger TEXT NOT NULL,"
    " started_at TEXT NOT NULL,"
    " started_us BIGINT NOT NULL,"
    " finished_at TEXT NOT NULL,"
    " matrix_name TEXT NOT NULL,"
    " matrix_version BIGINT NOT NULL,"
    " matrix_hash TEXT NOT NULL,"
    " matrix_profile TEXT,"
    " meta TEXT,"
    " n_cells BIGINT NOT NULL,"
    " content_hash TEXT NOT NULL,"
    " received_at TEXT NOT NULL);"
    "CREATE INDEX runs_host ON runs (host_id, id);"
    "CREATE INDEX runs_host_ref ON runs (host_id, ref, id);"
    "CREATE INDEX runs_commit ON runs (commit_id, host_id);"
    "CREATE INDEX runs_project ON runs (project_id, id);"
    "CREATE TABLE cells ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " sig TEXT NOT NULL UNIQUE,"
    " key TEXT NOT NULL,"
    " op TEXT NOT NULL,"
    " reader TEXT,"
    " subject TEXT,"
    " kernel TEXT,"
    " placement TEXT,"
    " cpu INTEGER,"
    " contender_cpu INTEGER,"
    " c BIGINT,"
    " d BIGINT NOT NULL);"
    "CREATE INDEX cells_key ON cells (key);"
    "CREATE TABLE measurements ("
    " run_id BIGINT NOT NULL REFERENCES runs (id),"
    " cell_id BIGINT NOT NULL REFERENCES cells (id),"
    " ord INTEGER NOT NULL,"
    " status TEXT NOT NULL,"
    " n BIGINT NOT NULL,"
    " batch BIGINT NOT NULL,"
    " min DOUBLE PRECISION, p50 DOUBLE PRECISION, p95 DOUBLE PRECISION,"
    " p99 DOUBLE PRECISION, max DOUBLE PRECISION, mean DOUBLE PRECISION,"
    " stddev DOUBLE PRECISION, ci_lo DOUBLE PRECISION, ci_hi DOUBLE PRECISION,"
    " baseline_ns DOUBLE PRECISION,"
    " below_resolution BOOLEAN NOT NULL,"
    " reason TEXT,"
    " PRIMARY KEY (run_id, cell_id));"
    "CREATE TABLE tokens ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " role TEXT NOT NULL CHECK (role IN ('agent', 'ci', 'admin')),"
    " host TEXT,"
    " hash TEXT NOT NULL UNIQUE,"
    " created_at TEXT NOT NULL,"
    " revoked_at TEXT,"
    " last_used_at TEXT,"
    " CHECK ((role = 'agent') = (host IS NOT NULL)));"
    "CREATE TABLE jobs ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " project TEXT NOT NULL,"
    " commit_sha TEXT NOT NULL,"
    " ref TEXT NOT NULL,"
    " subject TEXT,"
    " all_hosts BOOLEAN NOT NULL,"
    " created_at TEXT NOT NULL,"
    " expires_at TEXT NOT NULL,"
    " expires_us BIGINT NOT NULL,"
    " created_by BIGINT);"
    "CREATE INDEX jobs_expires ON jobs (expires_us);"
    "CREATE TABLE job_targets ("
    " job_id BIGINT NOT NULL REFERENCES jobs (id),"
    " host TEXT NOT NULL,"
    " PRIMARY KEY (job_id, host));"
    "CREATE INDEX job_targets_host ON job_targets (host, job_id);"
    "CREATE TABLE job_hosts ("
    " job_id BIGINT NOT NULL REFERENCES jobs (id),"
    " host TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('claimed', 'running', 'done', 'failed')),"
    " run_id TEXT,"
    " message TEXT,"
    " claimed_at TEXT NOT NULL,"
    " claimed_us BIGINT NOT NULL,"
    " updated_at TEXT NOT NULL,"
    " PRIMARY KEY (job_id, host));",
    /* 2: regression analysis (see store_sqlite.c) */
    "CREATE TABLE change_points ("
    " project TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " ref TEXT NOT NULL,"
    " cell_key TEXT NOT NULL,"
    " metric TEXT NOT NULL,"
    " commit_sha TEXT,"
    " run_uuid TEXT NOT NULL,"
    " order_us BIGINT NOT NULL,"
    " before DOUBLE PRECISION NOT NULL,"
    " after DOUBLE PRECISION NOT NULL,"
    " pvalue DOUBLE PRECISION NOT NULL,"
    " computed_at TEXT NOT NULL);"
    "CREATE INDEX change_points_series ON change_points (host, ref, project, cell_key, order_us);"
    "CREATE TABLE verdicts ("
    " project TEXT NOT NULL,"
    " commit_sha TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " baseline_ref TEXT NOT NULL,"
    " status TEXT NOT NULL,"
    " doc TEXT NOT NULL,"
    " order_us BIGINT NOT NULL,"
    " computed_at TEXT NOT NULL,"
    " PRIMARY KEY (project, commit_sha, host));"
    "CREATE INDEX verdicts_host ON verdicts (host, order_us);"
    "CREATE INDEX verdicts_order ON verdicts (order_us);",
};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == STORE_SCHEMA_VERSION,
               "one migration per schema version");

/* pg_advisory_lock key that serialises migrations across collectors ("atomwatc"). */
#define MIGRATION_LOCK "6174776174636800"

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

enum pg_stmt {
	PG_BEGIN,
	PG_COMMIT,
	PG_ROLLBACK,
	PG_PING,
	PG_PROJECT_UPSERT,
	PG_RUN_FIND,
	PG_HOST_UPSERT,
	PG_FP_UPSERT,
	PG_HOST_SET_FP,
	PG_COMMIT_UPSERT,
	PG_RUN_ADD,
	PG_CELLS_ADD,
	PG_CELLS_FIND,
	PG_MEAS_ADD,
	PG_RUN_GET,
	PG_RUN_CELLS,
	PG_REF_HISTORY,
	PG_HOSTS,
	PG_HOST_GET,
	PG_FPS,
	PG_TOKEN_ADD,
	PG_TOKEN_FIND,
	PG_TOKEN_LIST,
	PG_TOKEN_REVOKE,
	PG_TOKEN_TOUCH,
	PG_JOB_ADD,
	PG_JOB_TARGETS_ADD,
	PG_JOB_CANDIDATE,
	PG_JOB_CLAIM,
	PG_JOB_UNCLAIM,
	PG_JOB_STATE_SET,
	PG_JOB_STATE_GET,
	PG_JOB_GET,
	PG_JOB_HOSTS,
	PG_JOB_LIST,
	PG_CP_DELETE,
	PG_CP_ADD,
	PG_CP_LIST,
	PG_VERDICT_PUT,
	PG_VERDICT_LIST,
	PG_VERDICT_STATUSES,
	PG_N
};

#define PG_VERDICT_REST                                                                       \
	"order_us FROM verdicts WHERE ($1::text IS NULL OR project = $1) AND "                \
	"($2::text IS NULL OR commit_sha = $2) AND ($3::text IS NULL OR host = $3) ORDER BY " \
	"order_us DESC, host LIMIT $4"

static const char *const pg_sql[PG_N] = {
    [PG_BEGIN] = "BEGIN",
    [PG_COMMIT] = "COMMIT",
    [PG_ROLLBACK] = "ROLLBACK",
    [PG_PING] = "SELECT 1",
    [PG_PROJECT_UPSERT] = "WITH ins AS (INSERT INTO projects (name, created_at) VALUES ($1, $2) "
                          "ON CONFLICT (name) DO NOTHING RETURNING id) "
                          "SELECT id FROM ins UNION ALL SELECT id FROM projects WHERE name = $1 "
                          "LIMIT 1",
    [PG_RUN_FIND] = "SELECT id, content_hash FROM runs WHERE uuid = $1",
    [PG_HOST_UPSERT] =
        "INSERT INTO hosts (name, arch, cpu_model, platform_hash, first_seen, last_seen) "
        "VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (name) DO UPDATE SET "
        "arch = excluded.arch, cpu_model = excluded.cpu_model, "
        "platform_hash = excluded.platform_hash, last_seen = excluded.last_seen RETURNING id",
    [PG_FP_UPSERT] =
        "INSERT INTO fingerprints (host_id, hash, platform_hash, doc, first_seen, last_seen) "
        "VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (host_id, hash) DO UPDATE SET "
        "last_seen = excluded.last_seen RETURNING id",
    [PG_HOST_SET_FP] = "UPDATE hosts SET fingerprint_id = $2 WHERE id = $1",
    [PG_COMMIT_UPSERT] =
        "INSERT INTO commits AS o (project_id, sha, commit_time, commit_time_us, "
        "first_started_us, order_us) VALUES ($1, $2, $3, $4::bigint, $5::bigint, "
        "COALESCE($4::bigint, $5::bigint)) ON CONFLICT (project_id, sha) DO UPDATE SET "
        "commit_time = COALESCE(o.commit_time, excluded.commit_time), "
        "commit_time_us = COALESCE(o.commit_time_us, excluded.commit_time_us), "
        "first_started_us = LEAST(o.first_started_us, excluded.first_started_us), "
        "order_us = COALESCE(o.commit_time_us, excluded.commit_time_us, "
        "LEAST(o.first_started_us, excluded.first_started_us)) RETURNING id",
    [PG_RUN_ADD] =
        "INSERT INTO runs (uuid, project_id, host_id, fingerprint_id, commit_id, ref, "
        "commit_time, trigger, started_at, started_us, finished_at, matrix_name, "
        "matrix_version, matrix_hash, matrix_profile, meta, n_cells, content_hash, "
        "received_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, "
        "$15, $16, $17, $18, $19) RETURNING id",
    /* Sorted, so that concurrent transactions lock new cells in the same order. */
    [PG_CELLS_ADD] =
        "INSERT INTO cells (sig, key, op, reader, subject, kernel, placement, cpu, "
        "contender_cpu, c, d) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], "
        "$4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::int[], $10::bigint[], "
        "$11::bigint[]) AS u ORDER BY 1 ON CONFLICT (sig) DO NOTHING",
    [PG_CELLS_FIND] = "SELECT sig, id FROM cells WHERE sig = ANY ($1::text[])",
    [PG_MEAS_ADD] =
        "INSERT INTO measurements (run_id, cell_id, ord, status, n, batch, min, p50, p95, p99, "
        "max, mean, stddev, ci_lo, ci_hi, baseline_ns, below_resolution, reason) "
        "SELECT $1::bigint, * FROM unnest($2::bigint[], $3::int[], $4::text[], $5::bigint[], "
        "$6::bigint[], $7::float8[], $8::float8[], $9::float8[], $10::float8[], $11::float8[], "
        "$12::float8[], $13::float8[], $14::float8[], $15::float8[], $16::float8[], "
        "$17::boolean[], $18::text[])",
    [PG_RUN_GET] = "SELECT r.id, r.uuid, p.name, c.sha, r.ref, r.commit_time, r.trigger, "
                   "r.started_at, r.finished_at, r.matrix_name, r.matrix_version, "
                   "r.matrix_hash, r.matrix_profile, r.meta, f.doc" RUN_FROM " WHERE r.uuid = $1",
    [PG_RUN_CELLS] = "SELECT " CELL_COLS " FROM measurements m JOIN cells k ON k.id = m.cell_id "
                     "WHERE m.run_id = $1 ORDER BY m.ord",
    [PG_REF_HISTORY] = "SELECT " RUN_COLS RUN_FROM
                       " WHERE h.name = $1 AND r.ref = $2 AND ($3::text IS NULL OR p.name = $3) "
                       "AND (COALESCE(c.order_us, r.started_us), r.id) < ($4::bigint, "
                       "$5::bigint) ORDER BY COALESCE(c.order_us, r.started_us) DESC, r.id DESC "
                       "LIMIT $6",
    [PG_HOSTS] = "SELECT h.name, h.arch, h.cpu_model, h.platform_hash, h.first_seen, "
                 "h.last_seen, f.doc, (SELECT COUNT(*) FROM runs r WHERE r.host_id = h.id), "
                 "h.id FROM hosts h LEFT JOIN fingerprints f ON f.id = h.fingerprint_id "
                 "ORDER BY h.name",
    [PG_HOST_GET] = "SELECT h.name, h.arch, h.cpu_model, h.platform_hash, h.first_seen, "
                    "h.last_seen, f.doc, (SELECT COUNT(*) FROM runs r WHERE r.host_id = h.id), "
                    "h.id FROM hosts h LEFT JOIN fingerprints f ON f.id = h.fingerprint_id "
                    "WHERE h.name = $1",
    [PG_FPS] = "SELECT hash, platform_hash, first_seen, last_seen, doc FROM fingerprints "
               "WHERE host_id = $1 ORDER BY id",
    [PG_TOKEN_ADD] = "INSERT INTO tokens (role, host, hash, created_at) VALUES ($1, $2, $3, $4) "
                     "RETURNING id",
    [PG_TOKEN_FIND] = "SELECT " TOKEN_COLS " FROM tokens WHERE hash = $1",
    [PG_TOKEN_LIST] = "SELECT " TOKEN_COLS " FROM tokens ORDER BY id",
    [PG_TOKEN_REVOKE] = "UPDATE tokens SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1",
    [PG_TOKEN_TOUCH] = "UPDATE tokens SET last_used_at = $2 WHERE id = $1",
    [PG_JOB_ADD] = "INSERT INTO jobs (project, commit_sha, ref, subject, all_hosts, created_at, "
                   "expires_at, expires_us, created_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, "
                   "$9) RETURNING id",
    [PG_JOB_TARGETS_ADD] = "INSERT INTO job_targets (job_id, host) SELECT $1, unnest($2::text[]) "
                           "ON CONFLICT DO NOTHING",
    [PG_JOB_CANDIDATE] =
        "SELECT " JOB_COLS " FROM jobs j WHERE j.expires_us > $2 AND (j.all_hosts OR "
        "EXISTS (SELECT 1 FROM job_targets t WHERE t.job_id = j.id AND t.host = $1)) AND NOT "
        "EXISTS (SELECT 1 FROM job_hosts x WHERE x.job_id = j.id AND x.host = $1 AND "
        "(x.state <> 'claimed' OR x.claimed_us > $3)) ORDER BY j.id LIMIT 1",
    [PG_JOB_CLAIM] =
        "INSERT INTO job_hosts AS x (job_id, host, state, claimed_at, claimed_us, updated_at) "
        "VALUES ($1, $2, 'claimed', $3, $4, $3) ON CONFLICT (job_id, host) DO UPDATE SET "
        "claimed_at = excluded.claimed_at, claimed_us = excluded.claimed_us, "
        "updated_at = excluded.updated_at WHERE x.state = 'claimed' AND x.claimed_us <= $5",
    [PG_JOB_UNCLAIM] =
        "DELETE FROM job_hosts WHERE job_id = $1 AND host = $2 AND state = 'claimed'",
    /* done and failed are final; repeating the final state is harmless. */
    [PG_JOB_STATE_SET] = "UPDATE job_hosts SET state = $3, run_id = COALESCE($4, run_id), "
                         "message = COALESCE($5, message), updated_at = $6 "
                         "WHERE job_id = $1 AND host = $2 AND "
                         "(state NOT IN ('done', 'failed') OR state = $3)",
    [PG_JOB_STATE_GET] = "SELECT state FROM job_hosts WHERE job_id = $1 AND host = $2",
    [PG_JOB_GET] = "SELECT " JOB_COLS " FROM jobs j WHERE j.id = $1",
    /* Targeted hosts that have not claimed the job yet show as "pending". */
    [PG_JOB_HOSTS] = "SELECT host, state, run_id, message, claimed_at, updated_at "
                     "FROM job_hosts WHERE job_id = $1 UNION ALL "
                     "SELECT t.host, 'pending', NULL, NULL, NULL, NULL FROM job_targets t "
                     "WHERE t.job_id = $1 AND NOT EXISTS (SELECT 1 FROM job_hosts h "
                     "WHERE h.job_id = t.job_id AND h.host = t.host) ORDER BY 1",
    [PG_JOB_LIST] = "SELECT " JOB_COLS " FROM jobs j ORDER BY j.id DESC LIMIT $1",
    [PG_CP_DELETE] = "DELETE FROM change_points WHERE project = $1 AND host = $2 AND ref = $3",
    [PG_CP_ADD] = "INSERT INTO change_points (project, host, ref, cell_key, metric, commit_sha, "
                  "run_uuid, order_us, before, after, pvalue, computed_at) VALUES ($1, $2, $3, "
                  "$4, $5, $6, $7, $8, $9, $10, $11, $12)",
    [PG_CP_LIST] = "SELECT project, host, ref, cell_key, metric, commit_sha, run_uuid, order_us, "
                   "before, after, pvalue, computed_at FROM change_points WHERE host = $1 AND "
                   "ref = $2 AND ($3::text IS NULL OR project = $3) AND ($4::text IS NULL OR "
                   "cell_key = $4) ORDER BY order_us, cell_key, metric",
    [PG_VERDICT_PUT] =
        "INSERT INTO verdicts (project, commit_sha, host, baseline_ref, status, doc, order_us, "
        "computed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (project, commit_sha, "
        "host) DO UPDATE SET baseline_ref = excluded.baseline_ref, status = excluded.status, "
        "doc = excluded.doc, order_us = excluded.order_us, computed_at = excluded.computed_at",
    [PG_VERDICT_LIST] = "SELECT project, commit_sha, host, baseline_ref, status, "
                        "doc, computed_at, " PG_VERDICT_REST,
    /* the same without the document, which may be large, nor what a row keeps after it
     * (reading a column stored after a large value reads through that value) */
    [PG_VERDICT_STATUSES] = "SELECT project, commit_sha, host, baseline_ref, status, "
                            "NULL, NULL, " PG_VERDICT_REST,
};

struct pg_conn {
	struct store_conn base;
	PGconn *pg;
	bool prepared[PG_N];
	struct aw_strmap *cells; /* cell signature -> cells.id, committed rows only */
};

static struct pg_conn *pgc(struct store_conn *c)
{
	return (struct pg_conn *)c;
}

/* Text parameters of one statement: numbers are formatted into `num`. */
#define PARAMS_MAX 24
struct params {
	const char *v[PARAMS_MAX];
	char num[PARAMS_MAX][32];
	int n;
};

static void p_text(struct params *p, const char *s)
{
	p->v[p->n++] = s;
}

static void p_i64(struct params *p, int64_t x)
{
	snprintf(p->num[p->n], sizeof(p->num[0]), "%" PRId64, x);
	p->v[p->n] = p->num[p->n];
	p->n++;
}

static void p_opt(struct params *p, int64_t x)
{
	if (x == AW_NONE)
		p->v[p->n++] = NULL;
	else
		p_i64(p, x);
}

static void p_bool(struct params *p, bool b)
{
	p->v[p->n++] = b ? "t" : "f";
}

static const char *v_text(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

static int64_t v_i64(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? AW_NONE : strtoll(PQgetvalue(res, row, col), NULL, 10);
}

static double v_real(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NAN : strtod(PQgetvalue(res, row, col), NULL);
}

static bool v_bool(const PGresult *res, int row, int col)
{
	return !PQgetisnull(res, row, col) && PQgetvalue(res, row, col)[0] == 't';
}

/* Maps a failed result to an errno, logging what is not a routine race. */
static int pg_fail(struct pg_conn *c, PGresult *res, const char *what)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = PQerrorMessage(c->pg);

	if (res && PQresultErrorMessage(res)[0])
		msg = PQresultErrorMessage(res);
	if (state &&
	    (!strcmp(state, "40P01") || !strcmp(state, "40001") || !strcmp(state, "23505"))) {
		aw_debug("postgres: %s: %s", what, msg);
		return -EAGAIN;
	}
	store_count_error();
	aw_error("postgres: %s: %.*s", what, (int)strcspn(msg, "\n"), msg);
	if (PQstatus(c->pg) != CONNECTION_OK || (state && !strncmp(state, "08", 2)))
		return -EBUSY;
	return -EIO;
}

/* Reconnects a connection whose link broke (the server restarted, a proxy dropped it). */
static int ensure_link(struct pg_conn *c)
{
	if (PQstatus(c->pg) == CONNECTION_OK)
		return 0;
	PQreset(c->pg);
	memset(c->prepared, 0, sizeof(c->prepared));
	aw_strmap_clear(c->cells);
	if (PQstatus(c->pg) != CONNECTION_OK) {
		store_count_error();
		aw_error("postgres: cannot reconnect: %.*s",
		         (int)strcspn(PQerrorMessage(c->pg), "\n"), PQerrorMessage(c->pg));
		return -EBUSY;
	}
	return 0;
}

/* Runs prepared statement `i` (preparing it on first use) with text parameters. Returns the
 * result (caller PQclear()s) or NULL with *rc set. */
static PGresult *run(struct pg_conn *c, enum pg_stmt i, const struct params *p, int *rc,
                     const char *what)
{
	char name[16];
	PGresult *res;
	ExecStatusType st;

	*rc = ensure_link(c);
	if (*rc)
		return NULL;
	snprintf(name, sizeof(name), "aw%d", (int)i);
	if (!c->prepared[i]) {
		res = PQprepare(c->pg, name, pg_sql[i], 0, NULL);
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			*rc = pg_fail(c, res, "cannot prepare a statement");
			PQclear(res);
			return NULL;
		}
		PQclear(res);
		c->prepared[i] = true;
	}
	res = PQexecPrepared(c->pg, name, p ? p->n : 0, p ? p->v : NULL, NULL, NULL, 0);
	st = PQresultStatus(res);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		*rc = pg_fail(c, res, what);
		PQclear(res);
		return NULL;
	}
	*rc = 0;
	return res;
}

/* Runs a statement whose result is not needed. */
static int run_cmd(struct pg_conn *c, enum pg_stmt i, const struct params *p, const char *what)
{
	int rc;
	PGresult *res = run(c, i, p, &rc, what);

	PQclear(res);
	return rc;
}

/* Runs a statement returning one id: 0 with *out, or -ENOENT without a row. */
static int run_id(struct pg_conn *c, enum pg_stmt i, const struct params *p, int64_t *out,
                  const char *what)
{
	int rc;
	PGresult *res = run(c, i, p, &rc, what);

	if (!res)
		return rc;
	if (PQntuples(res) < 1) {
		rc = -ENOENT;
	} else {
		*out = v_i64(res, 0, 0);
	}
	PQclear(res);
	return rc;
}

/* Runs a statement and returns how many rows it changed, or a negative errno. */
static int run_count(struct pg_conn *c, enum pg_stmt i, const struct params *p, const char *what)
{
	int rc;
	PGresult *res = run(c, i, p, &rc, what);

	if (!res)
		return rc;
	rc = (int)strtol(PQcmdTuples(res), NULL, 10); /* "" for no count: 0 */
	PQclear(res);
	return rc;
}

static void rollback(struct pg_conn *c)
{
	if (PQstatus(c->pg) == CONNECTION_OK && PQtransactionStatus(c->pg) != PQTRANS_IDLE)
		run_cmd(c, PG_ROLLBACK, NULL, "cannot roll back");
	aw_strmap_clear(c->cells);
}

/* ---- connection ---- */

static void notice_ignore(void *arg, const char *message)
{
	(void)arg;
	aw_debug("postgres: %.*s", (int)strcspn(message, "\n"), message);
}

static void pg_disconnect(struct store_conn *base)
{
	struct pg_conn *c = pgc(base);

	PQfinish(c->pg);
	aw_strmap_free(&c->cells);
	free(c);
}

static bool pg_broken(struct store_conn *base)
{
	return PQstatus(pgc(base)->pg) != CONNECTION_OK;
}

static int pg_connect(const char *uri, const struct store_options *opt, struct store_conn **out,
                      char **err)
{
	struct pg_conn *c = calloc(1, sizeof(*c));
	PGresult *res;
	int rc;

	(void)opt;
	*out = NULL;
	if (!c)
		return aw_errorf(err, -ENOMEM, "out of memory");
	c->base.ops = &store_pg_ops;
	c->cells = aw_strmap_new(STORE_CELL_CACHE_MAX);
	c->pg = PQconnectdb(uri);
	if (!c->cells || !c->pg) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto fail;
	}
	if (PQstatus(c->pg) != CONNECTION_OK) {
		const char *m = PQerrorMessage(c->pg);

		rc = aw_errorf(err, -EBUSY, "cannot connect to postgres: %.*s",
		               (int)strcspn(m, "\n"), m);
		goto fail;
	}
	PQsetNoticeProcessor(c->pg, notice_ignore, NULL);
	if (PQsetClientEncoding(c->pg, "UTF8")) {
		rc = aw_errorf(err, -EIO, "cannot set the client encoding to UTF8");
		goto fail;
	}
	/* A stuck statement must not hold a worker forever. */
	res = PQexec(c->pg, "SET statement_timeout = '60s'");
	rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -EIO;
	PQclear(res);
	if (rc) {
		rc = aw_errorf(err, rc, "cannot set up the postgres session: %s",
		               PQerrorMessage(c->pg));
		goto fail;
	}
	*out = &c->base;
	return 0;
fail:
	pg_disconnect(&c->base);
	return rc;
}

static int pg_ping(struct store_conn *base)
{
	return run_cmd(pgc(base), PG_PING, NULL, "ping failed");
}

/* ---- migrations ---- */

/* Runs constant SQL (migration scripts) with the simple protocol. */
static int exec_script(struct pg_conn *c, const char *sql, char **err, const char *what)
{
	PGresult *res = PQexec(c->pg, sql);
	ExecStatusType st = PQresultStatus(res);
	int rc = 0;

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		const char *m = PQresultErrorMessage(res);

		rc = aw_errorf(err, -EIO, "%s: %.*s", what, (int)strcspn(m, "\n"), m);
	}
	PQclear(res);
	return rc;
}

static int pg_migrate(struct store_conn *base, int *from, int *to, char **err)
{
	struct pg_conn *c = pgc(base);
	int version = 0, first = -1, rc;
	PGresult *res = NULL;

	rc = exec_script(c, "SELECT pg_advisory_lock(" MIGRATION_LOCK ")", err,
	                 "cannot lock the schema");
	if (rc)
		return rc;
	rc = exec_script(c,
	                 "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY "
	                 "KEY, applied_at TEXT NOT NULL)",
	                 err, "cannot create schema_migrations");
	while (!rc) {
		char now[AW_TIME_LEN], num[16];
		const char *values[2] = {num, now};
		int64_t us;

		res = PQexec(c->pg, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
		if (PQresultStatus(res) != PGRES_TUPLES_OK) {
			rc = aw_errorf(err, -EIO, "cannot read the schema version: %s",
			               PQresultErrorMessage(res));
			break;
		}
		version = (int)strtol(PQgetvalue(res, 0, 0), NULL, 10);
		PQclear(res);
		res = NULL;
		if (first < 0)
			first = version;
		if (version >= STORE_SCHEMA_VERSION)
			break;
		rc = exec_script(c, "BEGIN", err, "cannot begin a migration");
		if (rc)
			break;
		snprintf(num, sizeof(num), "%d", version + 1);
		rc = exec_script(c, migrations[version], err, "migration failed");
		if (!rc) {
			store_now(now, &us);
			res = PQexecParams(c->pg,
			                   "INSERT INTO schema_migrations (version, applied_at) "
			                   "VALUES ($1, $2)",
			                   2, NULL, values, NULL, NULL, 0);
			if (PQresultStatus(res) != PGRES_COMMAND_OK)
				rc = aw_errorf(err, -EIO, "cannot record migration %d: %s",
				               version + 1, PQresultErrorMessage(res));
			PQclear(res);
			res = NULL;
		}
		if (!rc)
			rc = exec_script(c, "COMMIT", err, "cannot commit a migration");
		if (rc)
			exec_script(c, "ROLLBACK", NULL, "rollback");
	}
	PQclear(res);
	exec_script(c, "SELECT pg_advisory_unlock(" MIGRATION_LOCK ")", NULL, "unlock");
	if (!rc && version > STORE_SCHEMA_VERSION)
		rc = aw_errorf(err, -EPROTO,
		               "the database has schema version %d, newer than this collector's %d",
		               version, STORE_SCHEMA_VERSION);
	if (!rc) {
		if (from)
			*from = first;
		if (to)
			*to = version;
	}
	return rc;
}

/* ---- array parameters ---- */

/* Appends `s` as one element of a PostgreSQL array literal (quoted; NULL unquoted). */
static int arr_text(struct aw_buf *b, const char *s)
{
	int rc = aw_buf_puts(b, b->len > 1 ? "," : "");

	if (rc)
		return rc;
	if (!s)
		return aw_buf_puts(b, "NULL");
	rc = aw_buf_puts(b, "\"");
	for (; !rc && *s; s++) {
		if (*s == '"' || *s == '\\')
			rc = aw_buf_puts(b, "\\");
		if (!rc)
			rc = aw_buf_append(b, s, 1);
	}
	return rc ? rc : aw_buf_puts(b, "\"");
}

static int arr_i64(struct aw_buf *b, int64_t x, bool null_none)
{
	if (null_none && x == AW_NONE)
		return aw_buf_puts(b, b->len > 1 ? ",NULL" : "NULL");
	return aw_buf_printf(b, "%s%" PRId64, b->len > 1 ? "," : "", x);
}

static int arr_real(struct aw_buf *b, double x)
{
	/* 17 significant digits read back as the same double. */
	if (!isfinite(x))
		return aw_buf_puts(b, b->len > 1 ? ",NULL" : "NULL");
	return aw_buf_printf(b, "%s%.17g", b->len > 1 ? "," : "", x);
}

#define ARR_LIMIT ((size_t)256 << 20)

static void arrays_init(struct aw_buf *a, int n)
{
	for (int i = 0; i < n; i++)
		aw_buf_init(&a[i], ARR_LIMIT);
}

static void arrays_release(struct aw_buf *a, int n)
{
	for (int i = 0; i < n; i++)
		aw_buf_release(&a[i]);
}

static int arrays_open(struct aw_buf *a, int n)
{
	for (int i = 0; i < n; i++)
		if (aw_buf_puts(&a[i], "{"))
			return -ENOMEM;
	return 0;
}

static int arrays_close(struct aw_buf *a, int n, struct params *p)
{
	for (int i = 0; i < n; i++) {
		if (aw_buf_puts(&a[i], "}"))
			return -ENOMEM;
		p_text(p, a[i].data);
	}
	return 0;
}

/* ---- ingest ---- */

/* Finds (or creates) the id of every cell of `r` into ids[]. */
static int cell_ids(struct pg_conn *c, const struct aw_result *r, int64_t *ids)
{
	enum {
		N = 11
	};
	struct aw_buf a[N], sigs;
	struct params p = {.n = 0};
	char sig[STORE_SIG_MAX];
	PGresult *res = NULL;
	size_t missing = 0;
	int rc = 0;

	arrays_init(a, N);
	aw_buf_init(&sigs, ARR_LIMIT);
	if (arrays_open(a, N) || aw_buf_puts(&sigs, "{")) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct aw_cell *cell = &r->cells[i];

		rc = store_cell_sig(cell, sig, sizeof(sig));
		if (rc)
			goto out;
		if (!aw_strmap_get(c->cells, sig, &ids[i]))
			continue;
		ids[i] = AW_NONE;
		missing++;
		if (arr_text(&a[0], sig) || arr_text(&a[1], cell->key) ||
		    arr_text(&a[2], cell->op) || arr_text(&a[3], cell->reader) ||
		    arr_text(&a[4], cell->subject) || arr_text(&a[5], cell->kernel) ||
		    arr_text(&a[6], cell->placement) || arr_i64(&a[7], cell->cpu, true) ||
		    arr_i64(&a[8], cell->contender_cpu, true) || arr_i64(&a[9], cell->c, true) ||
		    arr_i64(&a[10], cell->d, false) || arr_text(&sigs, sig)) {
			rc = -ENOMEM;
			goto out;
		}
	}
	if (!missing)
		goto out;
	if (arrays_close(a, N, &p) || aw_buf_puts(&sigs, "}")) {
		rc = -ENOMEM;
		goto out;
	}
	rc = run_cmd(c, PG_CELLS_ADD, &p, "cannot add cells");
	if (rc)
		goto out;
	p.n = 0;
	p_text(&p, sigs.data);
	res = run(c, PG_CELLS_FIND, &p, &rc, "cannot look up cells");
	if (!res)
		goto out;
	for (int row = 0; row < PQntuples(res); row++) {
		if (aw_strmap_put(c->cells, PQgetvalue(res, row, 0), v_i64(res, row, 1)) ==
		    -ENOSPC) {
			aw_strmap_clear(c->cells);
			aw_strmap_put(c->cells, PQgetvalue(res, row, 0), v_i64(res, row, 1));
		}
	}
	/* A second pass fills the ids from the (now warm) cache. */
	for (size_t i = 0; i < r->n_cells; i++) {
		if (ids[i] != AW_NONE)
			continue;
		if (store_cell_sig(&r->cells[i], sig, sizeof(sig)) ||
		    aw_strmap_get(c->cells, sig, &ids[i])) {
			aw_error("postgres: cell '%s' vanished while storing it", r->cells[i].key);
			rc = -EIO;
			goto out;
		}
	}
out:
	PQclear(res);
	arrays_release(a, N);
	aw_buf_release(&sigs);
	return rc;
}

static int put_cells(struct pg_conn *c, const struct aw_result *r, int64_t run_seq)
{
	enum {
		N = 17
	};
	struct aw_buf a[N];
	struct params p = {.n = 0};
	int64_t *ids = NULL;
	int rc;

	arrays_init(a, N);
	ids = calloc(r->n_cells ? r->n_cells : 1, sizeof(*ids));
	if (!ids) {
		rc = -ENOMEM;
		goto out;
	}
	rc = cell_ids(c, r, ids);
	if (rc)
		goto out;
	if (arrays_open(a, N)) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct aw_cell *cell = &r->cells[i];

		if (arr_i64(&a[0], ids[i], false) || arr_i64(&a[1], (int64_t)i, false) ||
		    arr_text(&a[2], aw_cell_status_name(cell->status)) ||
		    arr_i64(&a[3], (int64_t)cell->n, false) ||
		    arr_i64(&a[4], (int64_t)cell->batch, false) || arr_real(&a[5], cell->min) ||
		    arr_real(&a[6], cell->p50) || arr_real(&a[7], cell->p95) ||
		    arr_real(&a[8], cell->p99) || arr_real(&a[9], cell->max) ||
		    arr_real(&a[10], cell->mean) || arr_real(&a[11], cell->stddev) ||
		    arr_real(&a[12], cell->ci_lo) || arr_real(&a[13], cell->ci_hi) ||
		    arr_real(&a[14], cell->baseline_ns) ||
		    aw_buf_puts(&a[15], a[15].len > 1 ? (cell->below_resolution ? ",t" : ",f")
		                                      : (cell->below_resolution ? "t" : "f")) ||
		    arr_text(&a[16], cell->reason)) {
			rc = -ENOMEM;
			goto out;
		}
	}
	p_i64(&p, run_seq);
	if (arrays_close(a, N, &p)) {
		rc = -ENOMEM;
		goto out;
	}
	rc = run_cmd(c, PG_MEAS_ADD, &p, "cannot add measurements");
out:
	free(ids);
	arrays_release(a, N);
	return rc;
}

static int put_one(struct pg_conn *c, struct store_put *it)
{
	const struct aw_result *r = it->result;
	const char *host = json_string_value(json_object_get(r->host, "name"));
	const char *arch = json_string_value(json_object_get(r->host, "arch"));
	const char *model = json_string_value(json_object_get(r->host, "cpu_model"));
	const char *platform = json_string_value(json_object_get(r->host, "platform_hash"));
	int64_t project, host_id, fp, commit_id = AW_NONE, started_us = 0, ct_us = AW_NONE;
	struct params p = {.n = 0};
	char *meta = NULL;
	PGresult *res;
	int rc;

	p_text(&p, r->run_id);
	res = run(c, PG_RUN_FIND, &p, &rc, "cannot look up a run");
	if (!res)
		return rc;
	if (PQntuples(res) > 0) {
		it->seq = v_i64(res, 0, 0);
		it->outcome = strcmp(PQgetvalue(res, 0, 1), it->content_hash) ? STORE_CONFLICT
		                                                              : STORE_DUPLICATE;
		PQclear(res);
		return 0;
	}
	PQclear(res);

	p.n = 0;
	p_text(&p, r->project);
	p_text(&p, it->received_at);
	rc = run_id(c, PG_PROJECT_UPSERT, &p, &project, "cannot store a project");
	if (rc)
		return rc == -ENOENT ? -EAGAIN : rc; /* inserted by a concurrent transaction */

	p.n = 0;
	p_text(&p, host);
	p_text(&p, arch);
	p_text(&p, model);
	p_text(&p, platform);
	p_text(&p, it->received_at);
	rc = run_id(c, PG_HOST_UPSERT, &p, &host_id, "cannot store a host");
	if (rc)
		return rc;

	p.n = 0;
	p_i64(&p, host_id);
	p_text(&p, it->host_hash);
	p_text(&p, platform);
	p_text(&p, it->host_json);
	p_text(&p, it->received_at);
	rc = run_id(c, PG_FP_UPSERT, &p, &fp, "cannot store a fingerprint");
	if (rc)
		return rc;
	p.n = 0;
	p_i64(&p, host_id);
	p_i64(&p, fp);
	rc = run_cmd(c, PG_HOST_SET_FP, &p, "cannot update a host");
	if (rc)
		return rc;

	aw_time_parse(r->started_at, &started_us);
	if (r->commit_time)
		aw_time_parse(r->commit_time, &ct_us);
	if (r->commit) {
		p.n = 0;
		p_i64(&p, project);
		p_text(&p, r->commit);
		p_text(&p, r->commit_time);
		p_opt(&p, ct_us);
		p_i64(&p, started_us);
		rc = run_id(c, PG_COMMIT_UPSERT, &p, &commit_id, "cannot store a commit");
		if (rc)
			return rc;
	}

	if (r->meta) {
		meta = json_dumps(r->meta, JSON_COMPACT | JSON_SORT_KEYS);
		if (!meta)
			return -ENOMEM;
	}
	p.n = 0;
	p_text(&p, r->run_id);
	p_i64(&p, project);
	p_i64(&p, host_id);
	p_i64(&p, fp);
	p_opt(&p, commit_id);
	p_text(&p, r->ref);
	p_text(&p, r->commit_time);
	p_text(&p, aw_trigger_name(r->trigger));
	p_text(&p, r->started_at);
	p_i64(&p, started_us);
	p_text(&p, r->finished_at);
	p_text(&p, r->matrix_name);
	p_i64(&p, r->matrix_version);
	p_text(&p, r->matrix_hash);
	p_text(&p, r->matrix_profile);
	p_text(&p, meta);
	p_i64(&p, (int64_t)r->n_cells);
	p_text(&p, it->content_hash);
	p_text(&p, it->received_at);
	rc = run_id(c, PG_RUN_ADD, &p, &it->seq, "cannot add a run");
	free(meta);
	if (rc)
		return rc;
	rc = put_cells(c, r, it->seq);
	if (rc)
		return rc;
	it->outcome = STORE_CREATED;
	return 0;
}

static int pg_put_runs(struct store_conn *base, struct store_put *items, size_t n)
{
	struct pg_conn *c = pgc(base);
	int rc;

	rc = run_cmd(c, PG_BEGIN, NULL, "cannot begin a transaction");
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		rc = put_one(c, &items[i]);
		if (rc)
			goto fail;
	}
	rc = run_cmd(c, PG_COMMIT, NULL, "cannot commit");
	if (rc)
		goto fail;
	return 0;
fail:
	rollback(c);
	return rc;
}

/* ---- reads ---- */

static void fill_run(const PGresult *res, int row, struct store_run *run)
{
	run->seq = v_i64(res, row, 0);
	run->run_id = v_text(res, row, 1);
	run->project = v_text(res, row, 2);
	run->host = v_text(res, row, 3);
	run->commit = v_text(res, row, 4);
	run->ref = v_text(res, row, 5);
	run->commit_time = v_text(res, row, 6);
	run->trigger = v_text(res, row, 7);
	run->started_at = v_text(res, row, 8);
	run->finished_at = v_text(res, row, 9);
	run->received_at = v_text(res, row, 10);
	run->matrix_name = v_text(res, row, 11);
	run->matrix_version = v_i64(res, row, 12);
	run->matrix_hash = v_text(res, row, 13);
	run->matrix_profile = v_text(res, row, 14);
	run->n_cells = v_i64(res, row, 15);
	run->order_us = v_i64(res, row, 16);
	run->platform_hash = v_text(res, row, 17);
}

static int each_run(PGresult *res, store_run_cb cb, void *cls)
{
	int rc = 0;

	for (int row = 0; !rc && row < PQntuples(res); row++) {
		struct store_run run;

		fill_run(res, row, &run);
		rc = cb(&run, cls);
	}
	PQclear(res);
	return rc;
}

/* Runs SQL built from constant fragments with text parameters (PQexecParams). */
static PGresult *run_params(struct pg_conn *c, const char *sql, const struct params *p, int *rc,
                            const char *what)
{
	PGresult *res;

	*rc = ensure_link(c);
	if (*rc)
		return NULL;
	res = PQexecParams(c->pg, sql, p->n, NULL, p->v, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		*rc = pg_fail(c, res, what);
		PQclear(res);
		return NULL;
	}
	return res;
}

static int pg_list_runs(struct store_conn *base, const struct store_run_filter *f, store_run_cb cb,
                        void *cls)
{
	struct pg_conn *c = pgc(base);
	struct params p = {.n = 0};
	struct aw_buf sql;
	PGresult *res;
	int rc;

	aw_buf_init(&sql, 4096);
	rc = aw_buf_puts(&sql, "SELECT " RUN_COLS RUN_FROM " WHERE TRUE");
	if (!rc && f->project) {
		p_text(&p, f->project);
		rc = aw_buf_printf(&sql, " AND p.name = $%d", p.n);
	}
	if (!rc && f->host) {
		p_text(&p, f->host);
		rc = aw_buf_printf(&sql, " AND h.name = $%d", p.n);
	}
	if (!rc && f->commit) {
		p_text(&p, f->commit);
		rc = aw_buf_printf(&sql, " AND c.sha = $%d", p.n);
	}
	if (!rc && f->ref) {
		p_text(&p, f->ref);
		rc = aw_buf_printf(&sql, " AND r.ref = $%d", p.n);
	}
	p_i64(&p, f->before_seq > 0 ? f->before_seq : INT64_MAX);
	p_i64(&p, f->limit);
	if (!rc)
		rc = aw_buf_printf(&sql, " AND r.id < $%d::bigint ORDER BY r.id DESC LIMIT $%d",
		                   p.n - 1, p.n);
	if (!rc) {
		res = run_params(c, sql.data, &p, &rc, "cannot list runs");
		if (res)
			rc = each_run(res, cb, cls);
	}
	aw_buf_release(&sql);
	return rc;
}

static int pg_ref_history(struct store_conn *base, const char *project, const char *host,
                          const char *ref, int64_t before_order_us, int64_t before_seq,
                          unsigned limit, store_run_cb cb, void *cls)
{
	struct pg_conn *c = pgc(base);
	struct params p = {.n = 0};
	PGresult *res;
	int rc;

	p_text(&p, host);
	p_text(&p, ref);
	p_text(&p, project);
	p_i64(&p, before_order_us);
	p_i64(&p, before_seq);
	p_i64(&p, limit);
	res = run(c, PG_REF_HISTORY, &p, &rc, "cannot read a ref's history");
	return res ? each_run(res, cb, cls) : rc;
}

static int fill_cell(const PGresult *res, int row, struct aw_cell *cell)
{
	if (aw_set_str(&cell->key, v_text(res, row, 0)) ||
	    aw_set_str(&cell->op, v_text(res, row, 1)) ||
	    aw_set_str(&cell->reader, v_text(res, row, 2)) ||
	    aw_set_str(&cell->subject, v_text(res, row, 3)) ||
	    aw_set_str(&cell->kernel, v_text(res, row, 4)) ||
	    aw_set_str(&cell->placement, v_text(res, row, 5)) ||
	    aw_set_str(&cell->reason, v_text(res, row, 24)))
		return -ENOMEM;
	cell->cpu = (int)v_i64(res, row, 6);
	cell->contender_cpu = (int)v_i64(res, row, 7);
	cell->c = v_i64(res, row, 8);
	cell->d = v_i64(res, row, 9);
	if (store_status_parse(v_text(res, row, 10), &cell->status))
		return -EIO;
	cell->n = (uint64_t)v_i64(res, row, 11);
	cell->batch = (uint64_t)v_i64(res, row, 12);
	cell->min = v_real(res, row, 13);
	cell->p50 = v_real(res, row, 14);
	cell->p95 = v_real(res, row, 15);
	cell->p99 = v_real(res, row, 16);
	cell->max = v_real(res, row, 17);
	cell->mean = v_real(res, row, 18);
	cell->stddev = v_real(res, row, 19);
	cell->ci_lo = v_real(res, row, 20);
	cell->ci_hi = v_real(res, row, 21);
	cell->baseline_ns = v_real(res, row, 22);
	cell->below_resolution = v_bool(res, row, 23);
	return 0;
}

static int pg_run_cells(struct store_conn *base, int64_t seq, store_cell_cb cb, void *cls)
{
	struct pg_conn *c = pgc(base);
	struct params p = {.n = 0};
	PGresult *res;
	int rc;

	p_i64(&p, seq);
	res = run(c, PG_RUN_CELLS, &p, &rc, "cannot read a run's cells");
	if (!res)
		return rc;
	for (int row = 0; !rc && row < PQntuples(res); row++) {
		struct aw_cell cell = {0};

		rc = fill_cell(res, row, &cell);
		if (!rc)
			rc = cb(&cell, cls);
		aw_cell_release(&cell);
	}
	PQclear(res);
	return rc;
}

static int pg_get_run(struct store_conn *base, const char *run_id, struct aw_result **out)
{
	struct pg_conn *c = pgc(base);
	struct aw_result *r = NULL;
	struct params p = {.n = 0};
	PGresult *res;
	int64_t seq;
	int rc;

	*out = NULL;
	p_text(&p, run_id);
	/* Runs and their cells never change once committed, so two reads agree. */
	res = run(c, PG_RUN_GET, &p, &rc, "cannot read a run");
	if (!res)
		return rc;
	if (PQntuples(res) < 1) {
		rc = -ENOENT;
		goto out;
	}
	r = aw_result_new();
	rc = -ENOMEM;
	if (!r)
		goto out;
	seq = v_i64(res, 0, 0);
	snprintf(r->run_id, sizeof(r->run_id), "%s", v_text(res, 0, 1));
	if (aw_set_str(&r->project, v_text(res, 0, 2)) ||
	    aw_set_str(&r->commit, v_text(res, 0, 3)) || aw_set_str(&r->ref, v_text(res, 0, 4)) ||
	    aw_set_str(&r->commit_time, v_text(res, 0, 5)) ||
	    aw_set_str(&r->matrix_name, v_text(res, 0, 9)) ||
	    aw_set_str(&r->matrix_hash, v_text(res, 0, 11)) ||
	    aw_set_str(&r->matrix_profile, v_text(res, 0, 12)))
		goto out;
	rc = -EIO;
	if (aw_trigger_parse(v_text(res, 0, 6), &r->trigger))
		goto out;
	snprintf(r->started_at, sizeof(r->started_at), "%s", v_text(res, 0, 7));
	snprintf(r->finished_at, sizeof(r->finished_at), "%s", v_text(res, 0, 8));
	r->matrix_version = v_i64(res, 0, 10);
	if (v_text(res, 0, 13)) {
		r->meta = json_loads(v_text(res, 0, 13), 0, NULL);
		if (!r->meta)
			goto out;
	}
	r->host = json_loads(v_text(res, 0, 14), 0, NULL);
	if (!r->host)
		goto out;
	PQclear(res);
	p.n = 0;
	p_i64(&p, seq);
	res = run(c, PG_RUN_CELLS, &p, &rc, "cannot read a run's cells");
	if (!res)
		goto out;
	for (int row = 0; !rc && row < PQntuples(res); row++) {
		struct aw_cell *cell = aw_result_add_cell(r);

		rc = cell ? fill_cell(res, row, cell) : -ENOMEM;
	}
	if (rc)
		goto out;
	*out = r;
	r = NULL;
out:
	PQclear(res);
	aw_result_free(&r);
	return rc;
}

static int pg_series(struct store_conn *base, const struct store_series_query *q, store_point_cb cb,
                     void *cls)
{
	struct pg_conn *c = pgc(base);
	struct params p = {.n = 0};
	struct aw_buf sql;
	PGresult *res = NULL;
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
	    "WHERE h.name = $1 AND r.ref = $2 AND k.key = $3 AND ($4::text IS NULL OR p.name = $4) "
	    "ORDER BY o DESC, r.id DESC LIMIT $5) s ORDER BY o, id",
	    store_metric_columns[q->metric]);
	if (rc)
		goto out;
	p_text(&p, q->host);
	p_text(&p, q->ref);
	p_text(&p, q->cell_key);
	p_text(&p, q->project);
	p_i64(&p, q->limit);
	res = run_params(c, sql.data, &p, &rc, "cannot read a series");
	for (int row = 0; res && !rc && row < PQntuples(res); row++) {
		struct store_point pt = {
		    .seq = v_i64(res, row, 0),
		    .run_id = v_text(res, row, 1),
		    .commit = v_text(res, row, 2),
		    .started_at = v_text(res, row, 3),
		    .matrix_hash = v_text(res, row, 4),
		    .status = v_text(res, row, 5),
		    .order_us = v_i64(res, row, 6),
		    .value = v_real(res, row, 7),
		};

		rc = cb(&pt, cls);
	}
out:
	PQclear(res);
	aw_buf_release(&sql);
	return rc;
}

static void fill_host(const PGresult *res, int row, struct store_host *h)
{
	h->name = v_text(res, row, 0);
	h->arch = v_text(res, row, 1);
	h->cpu_model = v_text(res, row, 2);
	h->platform_hash = v_text(res, row, 3);
	h->first_seen = v_text(res, row, 4);
	h->last_seen = v_text(res, row, 5);
	h->fingerprint = v_text(res, row, 6);
	h->runs = v_i64(res, row, 7);
}

static int pg_list_hosts(struct store_conn *base, store_host_cb cb, void *cls)
{
	struct pg_conn *c = pgc(base);
	PGresult *res;
	int rc;

	res = run(c, PG_HOSTS, NULL, &rc, "cannot list hosts");
	for (int row = 0; res && !rc && row < PQntuples(res); row++) {
		struct store_host h;

		fill_host(res, row, &h);
		rc = cb(&h, cls);
	}
	PQclear(res);
	return rc;
}

static int pg_get_host(struct store_conn *base, const char *name, store_host_cb cb,
                       store_fingerprint_cb fcb, void *cls)
{
	struct pg_conn *c = pgc(base);
	struct params p = {.n = 0};
	struct store_host h;
	PGresult *res;
	int64_t id;
	int rc;

	p_text(&p, name);
	res = run(c, PG_HOST_GET, &p, &rc, "cannot read a host");
	if (!res)
		return rc;
	if (PQntuples(res) < 1) {
		PQclear(res);
		return -ENOENT;
	}
	fill_host(res, 0, &h);
	id = v_i64(res, 0, 8);
	rc = cb(&h, cls);
	PQclear(res);
	if (rc || !fcb)
		return rc;
	p.n = 0;
	p_i64(&p, id);
	res = run(c, PG_FPS, &p, &rc, "cannot read fingerprints");
	for (int row = 0; res && !rc && row < PQntuples(res); row++) {
		struct store_fingerprint f = {
		    .hash = v_text(res, row, 0),
		    .platform_hash = v_text(res, row, 1),
		    .first_seen = v_text(res, row, 2),
		    .last_seen = v_text(res, row, 3),
		    .doc = v_text(res, row, 4),
		};

		rc = fcb(&f, cls);
	}
	PQclear(res);
	return rc;
}

/* ---- tokens ---- */

static int pg_token_create(struct store_conn *base, enum store_role role, const char *host,
                           const char *hash, int64_t *id)
{
	struct params p = {.n = 0};
	char now[AW_TIME_LEN];
	int64_t us;

	store_now(now, &us);
	p_text(&p, store_role_name(role));
	p_text(&p, host);
	p_text(&p, hash);
	p_text(&p, now);
	return run_id(pgc(base), PG_TOKEN_ADD, &p, id, "cannot create a token");
}

static int each_token(PGresult *res, store_token_cb cb, void *cls)
{
	int rc = 0;

	for (int row = 0; !rc && row < PQntuples(res); row++) {
		struct store_token t = {
		    .id = v_i64(res, row, 0),
		    .host = v_text(res, row, 2),
		    .hash = v_text(res, row, 3),
		    .created_at = v_text(res, row, 4),
		    .revoked_at = v_text(res, row, 5),
		    .last_used_at = v_text(res, row, 6),
		};

		rc = store_role_parse(v_text(res, row, 1), &t.role) ? -EIO : cb(&t, cls);
	}
	PQclear(res);
	return rc;
}

static int pg_token_find(struct store_conn *base, const char *hash, store_token_cb cb, void *cls)
{
	struct params p = {.n = 0};
	PGresult *res;
	int rc;

	p_text(&p, hash);
	res = run(pgc(base), PG_TOKEN_FIND, &p, &rc, "cannot look up a token");
	if (!res)
		return rc;
	if (PQntuples(res) < 1) {
		PQclear(res);
		return -ENOENT;
	}
	return each_token(res, cb, cls);
}

static int pg_token_list(struct store_conn *base, store_token_cb cb, void *cls)
{
	PGresult *res;
	int rc;

	res = run(pgc(base), PG_TOKEN_LIST, NULL, &rc, "cannot list tokens");
	return res ? each_token(res, cb, cls) : rc;
}

static int pg_token_revoke(struct store_conn *base, int64_t id)
{
	struct params p = {.n = 0};
	char now[AW_TIME_LEN];
	int64_t us;
	int rc;

	store_now(now, &us);
	p_i64(&p, id);
	p_text(&p, now);
	rc = run_count(pgc(base), PG_TOKEN_REVOKE, &p, "cannot revoke a token");
	return rc < 0 ? rc : rc == 0 ? -ENOENT : 0;
}

static int pg_token_touch(struct store_conn *base, int64_t id, const char *when)
{
	struct params p = {.n = 0};

	p_i64(&p, id);
	p_text(&p, when);
	return run_cmd(pgc(base), PG_TOKEN_TOUCH, &p, "cannot update a token");
}

/* ---- jobs ---- */

static int pg_job_create(struct store_conn *base, const struct store_job_spec *spec, int64_t *id)
{
	struct pg_conn *c = pgc(base);
	char now[AW_TIME_LEN], expires[AW_TIME_LEN];
	struct params p = {.n = 0};
	struct aw_buf hosts;
	struct timespec ts;
	int64_t us;
	int rc;

	aw_buf_init(&hosts, ARR_LIMIT);
	store_now(now, &us);
	ts.tv_sec = (time_t)((us + spec->ttl_us) / 1000000);
	ts.tv_nsec = (long)((us + spec->ttl_us) % 1000000) * 1000;
	aw_time_format(&ts, expires);
	rc = run_cmd(c, PG_BEGIN, NULL, "cannot begin a transaction");
	if (rc)
		goto out;
	p_text(&p, spec->project);
	p_text(&p, spec->commit);
	p_text(&p, spec->ref);
	p_text(&p, spec->subject);
	p_bool(&p, spec->hosts == NULL);
	p_text(&p, now);
	p_text(&p, expires);
	p_i64(&p, us + spec->ttl_us);
	p_opt(&p, spec->created_by ? spec->created_by : AW_NONE);
	rc = run_id(c, PG_JOB_ADD, &p, id, "cannot add a job");
	if (!rc && spec->hosts) {
		rc = aw_buf_puts(&hosts, "{");
		for (size_t i = 0; !rc && i < spec->n_hosts; i++)
			rc = arr_text(&hosts, spec->hosts[i]);
		if (!rc)
			rc = aw_buf_puts(&hosts, "}");
		if (!rc) {
			p.n = 0;
			p_i64(&p, *id);
			p_text(&p, hosts.data);
			rc = run_cmd(c, PG_JOB_TARGETS_ADD, &p, "cannot add a job's hosts");
		}
	}
	if (!rc)
		rc = run_cmd(c, PG_COMMIT, NULL, "cannot commit");
	if (rc)
		rollback(c);
out:
	aw_buf_release(&hosts);
	return rc;
}

static int each_job(PGresult *res, store_job_cb cb, void *cls)
{
	int rc = 0;

	for (int row = 0; !rc && row < PQntuples(res); row++) {
		struct store_job j = {
		    .id = v_i64(res, row, 0),
		    .project = v_text(res, row, 1),
		    .commit = v_text(res, row, 2),
		    .ref = v_text(res, row, 3),
		    .subject = v_text(res, row, 4),
		    .all_hosts = v_bool(res, row, 5),
		    .created_at = v_text(res, row, 6),
		    .expires_at = v_text(res, row, 7),
		};

		rc = cb(&j, cls);
	}
	return rc;
}

static int pg_job_claim(struct store_conn *base, const char *host, int64_t reclaim_us,
                        store_job_cb cb, void *cls)
{
	struct pg_conn *c = pgc(base);
	char now[AW_TIME_LEN];
	int64_t us;
	int rc;

	store_now(now, &us);
	/* A few rounds: another collector (or a duplicate agent) may win a candidate. */
	for (int round = 0; round < 4; round++) {
		struct params p = {.n = 0};
		PGresult *res;
		int64_t id;

		p_text(&p, host);
		p_i64(&p, us);
		p_i64(&p, us - reclaim_us);
		res = run(c, PG_JOB_CANDIDATE, &p, &rc, "cannot look for jobs");
		if (!res)
			return rc;
		if (PQntuples(res) < 1) {
			PQclear(res);
			return -ENOENT;
		}
		id = v_i64(res, 0, 0);
		p.n = 0;
		p_i64(&p, id);
		p_text(&p, host);
		p_text(&p, now);
		p_i64(&p, us);
		p_i64(&p, us - reclaim_us);
		rc = run_count(c, PG_JOB_CLAIM, &p, "cannot claim a job");
		if (rc == -EAGAIN) /* a concurrent claim of the same row */
			rc = 0;
		if (rc < 0) {
			PQclear(res);
			return rc;
		}
		if (rc == 1) {
			rc = each_job(res, cb, cls);
			PQclear(res);
			return rc;
		}
		PQclear(res);
	}
	return -ENOENT;
}

static int pg_job_unclaim(struct store_conn *base, int64_t id, const char *host)
{
	struct params p = {.n = 0};

	p_i64(&p, id);
	p_text(&p, host);
	return run_cmd(pgc(base), PG_JOB_UNCLAIM, &p, "cannot release a job");
}

static int pg_job_set_state(struct store_conn *base, int64_t id, const char *host,
                            const char *state, const char *run_id, const char *message)
{
	struct pg_conn *c = pgc(base);
	struct params p = {.n = 0};
	char now[AW_TIME_LEN];
	PGresult *res;
	int64_t us;
	int rc;

	store_now(now, &us);
	p_i64(&p, id);
	p_text(&p, host);
	p_text(&p, state);
	p_text(&p, run_id);
	p_text(&p, message);
	p_text(&p, now);
	rc = run_count(c, PG_JOB_STATE_SET, &p, "cannot set a job's state");
	if (rc != 0)
		return rc < 0 ? rc : 0;
	/* Nothing changed: unknown, or final already. */
	p.n = 0;
	p_i64(&p, id);
	p_text(&p, host);
	res = run(c, PG_JOB_STATE_GET, &p, &rc, "cannot read a job's state");
	if (!res)
		return rc;
	rc = PQntuples(res) > 0 ? -EPERM : -ENOENT;
	PQclear(res);
	return rc;
}

static int pg_job_get(struct store_conn *base, int64_t id, store_job_cb cb, store_job_host_cb hcb,
                      void *cls)
{
	struct pg_conn *c = pgc(base);
	struct params p = {.n = 0};
	PGresult *res;
	int rc;

	p_i64(&p, id);
	res = run(c, PG_JOB_GET, &p, &rc, "cannot read a job");
	if (!res)
		return rc;
	if (PQntuples(res) < 1) {
		PQclear(res);
		return -ENOENT;
	}
	rc = each_job(res, cb, cls);
	PQclear(res);
	if (rc || !hcb)
		return rc;
	res = run(c, PG_JOB_HOSTS, &p, &rc, "cannot read a job's hosts");
	for (int row = 0; res && !rc && row < PQntuples(res); row++) {
		struct store_job_host h = {
		    .host = v_text(res, row, 0),
		    .state = v_text(res, row, 1),
		    .run_id = v_text(res, row, 2),
		    .message = v_text(res, row, 3),
		    .claimed_at = v_text(res, row, 4),
		    .updated_at = v_text(res, row, 5),
		};

		rc = hcb(&h, cls);
	}
	PQclear(res);
	return rc;
}

static int pg_job_list(struct store_conn *base, unsigned limit, store_job_cb cb, void *cls)
{
	struct params p = {.n = 0};
	PGresult *res;
	int rc;

	p_i64(&p, limit);
	res = run(pgc(base), PG_JOB_LIST, &p, &rc, "cannot list jobs");
	if (!res)
		return rc;
	rc = each_job(res, cb, cls);
	PQclear(res);
	return rc;
}

/* ---- analysis ---- */

/* A double as text for a parameter; NULL for a non-finite one. */
static void p_real(struct params *p, double x)
{
	if (!isfinite(x)) {
		p->v[p->n++] = NULL;
		return;
	}
	snprintf(p->num[p->n], sizeof(p->num[0]), "%.17g", x);
	p->v[p->n] = p->num[p->n];
	p->n++;
}

static int pg_changepoints_replace(struct store_conn *base, const char *project, const char *host,
                                   const char *ref, const struct store_changepoint *items, size_t n)
{
	struct pg_conn *c = pgc(base);
	struct params p = {.n = 0};
	int rc = run_cmd(c, PG_BEGIN, NULL, "cannot begin a transaction");

	if (rc)
		return rc;
	p_text(&p, project);
	p_text(&p, host);
	p_text(&p, ref);
	rc = run_cmd(c, PG_CP_DELETE, &p, "cannot clear change points");
	for (size_t i = 0; !rc && i < n; i++) {
		const struct store_changepoint *x = &items[i];

		p.n = 0;
		p_text(&p, project);
		p_text(&p, host);
		p_text(&p, ref);
		p_text(&p, x->cell_key);
		p_text(&p, x->metric);
		p_text(&p, x->commit);
		p_text(&p, x->run_id);
		p_i64(&p, x->order_us);
		p_real(&p, x->before);
		p_real(&p, x->after);
		p_real(&p, x->pvalue);
		p_text(&p, x->computed_at);
		rc = run_cmd(c, PG_CP_ADD, &p, "cannot store a change point");
	}
	if (!rc)
		rc = run_cmd(c, PG_COMMIT, NULL, "cannot commit");
	if (rc)
		rollback(c);
	return rc;
}

static int pg_changepoints_list(struct store_conn *base, const char *project, const char *host,
                                const char *ref, const char *cell_key, store_changepoint_cb cb,
                                void *cls)
{
	struct params p = {.n = 0};
	PGresult *res;
	int rc;

	p_text(&p, host);
	p_text(&p, ref);
	p_text(&p, project);
	p_text(&p, cell_key);
	res = run(pgc(base), PG_CP_LIST, &p, &rc, "cannot list change points");
	if (!res)
		return rc;
	for (int row = 0; !rc && row < PQntuples(res); row++) {
		struct store_changepoint x = {
		    .project = v_text(res, row, 0),
		    .host = v_text(res, row, 1),
		    .ref = v_text(res, row, 2),
		    .cell_key = v_text(res, row, 3),
		    .metric = v_text(res, row, 4),
		    .commit = v_text(res, row, 5),
		    .run_id = v_text(res, row, 6),
		    .order_us = v_i64(res, row, 7),
		    .before = v_real(res, row, 8),
		    .after = v_real(res, row, 9),
		    .pvalue = v_real(res, row, 10),
		    .computed_at = v_text(res, row, 11),
		};

		rc = cb(&x, cls);
	}
	PQclear(res);
	return rc;
}

static int pg_verdict_put(struct store_conn *base, const struct store_verdict *v)
{
	struct params p = {.n = 0};

	p_text(&p, v->project);
	p_text(&p, v->commit);
	p_text(&p, v->host);
	p_text(&p, v->baseline_ref);
	p_text(&p, v->status);
	p_text(&p, v->json);
	p_i64(&p, v->order_us);
	p_text(&p, v->computed_at);
	return run_cmd(pgc(base), PG_VERDICT_PUT, &p, "cannot store a verdict");
}

static int verdict_query(struct store_conn *base, enum pg_stmt which, const char *project,
                         const char *commit, const char *host, unsigned limit, store_verdict_cb cb,
                         void *cls)
{
	struct params p = {.n = 0};
	PGresult *res;
	int rc;

	p_text(&p, project);
	p_text(&p, commit);
	p_text(&p, host);
	p_i64(&p, limit);
	res = run(pgc(base), which, &p, &rc, "cannot list verdicts");
	if (!res)
		return rc;
	for (int row = 0; !rc && row < PQntuples(res); row++) {
		struct store_verdict v = {
		    .project = v_text(res, row, 0),
		    .commit = v_text(res, row, 1),
		    .host = v_text(res, row, 2),
		    .baseline_ref = v_text(res, row, 3),
		    .status = v_text(res, row, 4),
		    .json = v_text(res, row, 5),
		    .computed_at = v_text(res, row, 6),
		    .order_us = v_i64(res, row, 7),
		};

		rc = cb(&v, cls);
	}
	PQclear(res);
	return rc;
}

static int pg_verdict_list(struct store_conn *base, const char *project, const char *commit,
                           const char *host, unsigned limit, store_verdict_cb cb, void *cls)
{
	return verdict_query(base, PG_VERDICT_LIST, project, commit, host, limit, cb, cls);
}

static int pg_verdict_statuses(struct store_conn *base, const char *project, const char *commit,
                               const char *host, unsigned limit, store_verdict_cb cb, void *cls)
{
	return verdict_query(base, PG_VERDICT_STATUSES, project, commit, host, limit, cb, cls);
}

const struct store_ops store_pg_ops = {
    .name = "postgres",
    .connect = pg_connect,
    .disconnect = pg_disconnect,
    .broken = pg_broken,
    .migrate = pg_migrate,
    .ping = pg_ping,
    .put_runs = pg_put_runs,
    .list_runs = pg_list_runs,
    .ref_history = pg_ref_history,
    .get_run = pg_get_run,
    .run_cells = pg_run_cells,
    .series = pg_series,
    .list_hosts = pg_list_hosts,
    .get_host = pg_get_host,
    .token_create = pg_token_create,
    .token_find = pg_token_find,
    .token_list = pg_token_list,
    .token_revoke = pg_token_revoke,
    .token_touch = pg_token_touch,
    .job_create = pg_job_create,
    .job_claim = pg_job_claim,
    .job_unclaim = pg_job_unclaim,
    .job_set_state = pg_job_set_state,
    .job_get = pg_job_get,
    .job_list = pg_job_list,
    .changepoints_replace = pg_changepoints_replace,
    .changepoints_list = pg_changepoints_list,
    .verdict_put = pg_verdict_put,
    .verdict_list = pg_verdict_list,
    .verdict_statuses = pg_verdict_statuses,
};
