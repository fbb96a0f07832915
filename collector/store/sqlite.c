/* The SQLite driver of the store (the embedded default): WAL mode so that readers never wait for
 * the writer, statements prepared once per connection, the schema's migrations in SQLite's
 * dialect and its errors mapped to the store's. The only file of the collector that includes
 * <sqlite3.h>. */
#include "driver.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/log.h"

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
    /* 3: one name per identifier (a run is `seq` as a number, `run_id` as a UUID, in every
     * table; a verdict's document is `json` as in store.h), the durable queue of the work after
     * an upload, and the drawn charts. RENAME COLUMN rewrites the indexes and the foreign keys
     * that name a column. */
    "ALTER TABLE runs RENAME COLUMN id TO seq;"
    "ALTER TABLE runs RENAME COLUMN uuid TO run_id;"
    "ALTER TABLE measurements RENAME COLUMN run_id TO run_seq;"
    "ALTER TABLE change_points RENAME COLUMN run_uuid TO run_id;"
    "ALTER TABLE verdicts RENAME COLUMN doc TO json;"
    /* One row per kind and (project, commit, host, ref), commit_sha '' for runs without one.
     * generation grows when it is enqueued again while claimed; max_attempts and lease_us are
     * those of its last claim, which tell a dead task (its attempts used up) from a live one. */
    "CREATE TABLE tasks ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " kind TEXT NOT NULL,"
    " project TEXT NOT NULL,"
    " commit_sha TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " ref TEXT NOT NULL,"
    " generation INTEGER NOT NULL,"
    " attempts INTEGER NOT NULL,"
    " max_attempts INTEGER,"
    " owner TEXT,"
    " claimed_at TEXT,"
    " claimed_us INTEGER,"
    " lease_us INTEGER,"
    " last_error TEXT,"
    " enqueued_at TEXT NOT NULL,"
    " UNIQUE (kind, project, commit_sha, host, ref));"
    /* data last: reading the columns before it does not read through it */
    "CREATE TABLE charts ("
    " path TEXT PRIMARY KEY,"
    " content_type TEXT NOT NULL,"
    " hash TEXT NOT NULL,"
    " updated_at TEXT NOT NULL,"
    " data BLOB NOT NULL);",
    /* 4: the run's reference series (a document's "reference" object; NULL: none) */
    "ALTER TABLE runs ADD COLUMN reference TEXT;",
    /* 5: confirmation: the run whose suspects a run re-measures (a document's
     * "confirmation_of"; NULL: a first run) and the re-measurements a first run's agent makes
     * itself ("confirm"; NULL: none) */
    "ALTER TABLE runs ADD COLUMN confirmation_of TEXT;"
    "ALTER TABLE runs ADD COLUMN confirm INTEGER;"
    /* a confirmation job: what it re-measures (JSON) and the run it confirms; the hosts
     * that poll for jobs (daemon hosts, which the collector queues confirmations for) */
    "ALTER TABLE jobs ADD COLUMN confirm TEXT;"
    "ALTER TABLE jobs ADD COLUMN confirmation_of TEXT;"
    "CREATE INDEX jobs_confirmation_of ON jobs (confirmation_of);"
    "CREATE TABLE job_polls (host TEXT PRIMARY KEY, polled_us INTEGER NOT NULL);",
    /* 6: interleaved A/B documents (atomwatch.ab/1): the document as uploaded and the
     * collector's judgment of it, found by id and by (project, head commit) */
    "CREATE TABLE ab_docs ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " ab_id TEXT NOT NULL UNIQUE,"
    " project TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " subject TEXT NOT NULL,"
    " base_commit TEXT NOT NULL,"
    " head_commit TEXT NOT NULL,"
    " ref TEXT,"
    " aa INTEGER NOT NULL,"
    " verdict TEXT NOT NULL,"
    " content_hash TEXT NOT NULL,"
    " received_at TEXT NOT NULL,"
    " judgment TEXT NOT NULL,"
    " doc TEXT NOT NULL);"
    "CREATE INDEX ab_docs_head ON ab_docs (project, head_commit, seq);"
    /* an A/B job (atomwatch-ci trigger --ab): the base commit; NULL for a run */
    "ALTER TABLE jobs ADD COLUMN ab_base TEXT;",
};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == STORE_SCHEMA_VERSION,
               "one migration per schema version");

/* The transaction statements each connection keeps prepared. */
enum {
	TX_BEGIN_WRITE,
	TX_BEGIN_READ,
	TX_COMMIT,
	TX_ROLLBACK,
	TX_N
};

static const char *const tx_sql[TX_N] = {"BEGIN IMMEDIATE", "BEGIN", "COMMIT", "ROLLBACK"};
static const char *const tx_what[TX_N] = {"begin a transaction", "begin a read", "commit",
                                          "roll back"};

struct sq_conn {
	struct store_conn base;
	sqlite3 *db;
	sqlite3_stmt *tx[TX_N];
};

struct sq_stmt {
	struct store_stmt base;
	sqlite3_stmt *st;
	const char *what;
};

static struct sq_conn *sq(struct store_conn *c)
{
	return (struct sq_conn *)c;
}

static struct sq_stmt *sqs(struct store_stmt *s)
{
	return (struct sq_stmt *)s;
}

/* Logs the connection's last error once and maps it to an errno. */
static int sq_fail(sqlite3 *db, int rc, const char *what)
{
	store_count_error();
	rc &= 0xff; /* primary result code */
	if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
		aw_warn("sqlite: cannot %s: %s", what, sqlite3_errmsg(db));
		return -EBUSY;
	}
	aw_error("sqlite: cannot %s: %s", what, sqlite3_errmsg(db));
	if (rc == SQLITE_FULL) {
		store_count_disk_full();
		return -ENOSPC;
	}
	return rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
}

/* ---- connection ---- */

static void sq_disconnect(struct store_conn *base)
{
	struct sq_conn *c = sq(base);

	for (int i = 0; i < TX_N; i++)
		sqlite3_finalize(c->tx[i]);
	if (c->db && sqlite3_close(c->db) != SQLITE_OK)
		aw_warn("sqlite: cannot close the database: %s", sqlite3_errmsg(c->db));
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
	char pragmas[320];
	char *msg = NULL;
	int rc;

	*out = NULL;
	if (!c)
		return aw_errorf(err, -ENOMEM, "out of memory");
	c->base.drv = &store_sqlite_driver;
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
	         " PRAGMA temp_store = MEMORY; PRAGMA cache_size = %lld;",
	         opt->sqlite_sync_full ? "FULL" : "NORMAL",
	         /* negative: KiB */
	         opt->sqlite_cache ? -(long long)((opt->sqlite_cache + 1023) / 1024) : -2000LL);
	rc = sqlite3_exec(c->db, pragmas, NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		rc = aw_errorf(err, -EIO, "cannot set up database '%s': %s", path,
		               msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		goto fail;
	}
	for (int i = 0; i < TX_N; i++) {
		rc = sqlite3_prepare_v3(c->db, tx_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &c->tx[i],
		                        NULL);
		if (rc != SQLITE_OK) {
			rc = aw_errorf(err, -EIO, "cannot prepare '%s': %s", tx_sql[i],
			               sqlite3_errmsg(c->db));
			goto fail;
		}
	}
	*out = &c->base;
	return 0;
fail:
	sq_disconnect(&c->base);
	return rc;
}

/* ---- schema and transactions ---- */

static int sq_exec(struct store_conn *base, const char *sql, char **err)
{
	char *msg = NULL;
	int rc = sqlite3_exec(sq(base)->db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK)
		rc = aw_errorf(err, -EIO, "%s", msg ? msg : sqlite3_errstr(rc));
	sqlite3_free(msg);
	return rc;
}

static int run_tx(struct sq_conn *c, int which)
{
	int rc = sqlite3_step(c->tx[which]);

	sqlite3_reset(c->tx[which]);
	return rc == SQLITE_DONE ? 0 : sq_fail(c->db, rc, tx_what[which]);
}

static int sq_begin(struct store_conn *base, enum store_tx tx)
{
	return run_tx(sq(base), tx == STORE_TX_WRITE ? TX_BEGIN_WRITE : TX_BEGIN_READ);
}

static int sq_commit(struct store_conn *base)
{
	return run_tx(sq(base), TX_COMMIT);
}

static void sq_rollback(struct store_conn *base)
{
	struct sq_conn *c = sq(base);

	if (sqlite3_get_autocommit(c->db) == 0)
		run_tx(c, TX_ROLLBACK);
}

/* ---- statements ---- */

static int sq_prepare(struct store_conn *base, const char *sql, const char *what, bool cached,
                      struct store_stmt **out)
{
	struct sq_conn *c = sq(base);
	struct sq_stmt *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->base.drv = &store_sqlite_driver;
	s->base.conn = base;
	s->what = what;
	/* SQLite takes "?N" and "?" as they are. */
	rc = sqlite3_prepare_v3(c->db, sql, -1, cached ? SQLITE_PREPARE_PERSISTENT : 0, &s->st,
	                        NULL);
	if (rc != SQLITE_OK) {
		char prep[96];

		snprintf(prep, sizeof(prep), "prepare the statement to %s", what);
		rc = sq_fail(c->db, rc, prep);
		free(s);
		return rc;
	}
	*out = &s->base;
	return 0;
}

static void sq_finalize(struct store_stmt *base)
{
	if (!base)
		return;
	sqlite3_finalize(sqs(base)->st);
	free(base);
}

static void sq_reset(struct store_stmt *base)
{
	sqlite3_reset(sqs(base)->st);
	sqlite3_clear_bindings(sqs(base)->st);
}

static void sq_bind_i64(struct store_stmt *base, int i, int64_t v)
{
	sqlite3_bind_int64(sqs(base)->st, i, v);
}

static void sq_bind_double(struct store_stmt *base, int i, double v)
{
	sqlite3_bind_double(sqs(base)->st, i, v);
}

static void sq_bind_text(struct store_stmt *base, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(sqs(base)->st, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(sqs(base)->st, i);
}

static void sq_bind_null(struct store_stmt *base, int i)
{
	sqlite3_bind_null(sqs(base)->st, i);
}

static void sq_bind_blob(struct store_stmt *base, int i, const void *p, size_t len)
{
	/* a NULL pointer would bind NULL, not an empty blob */
	sqlite3_bind_blob64(sqs(base)->st, i, p ? p : "", len, SQLITE_STATIC);
}

static int sq_step(struct store_stmt *base)
{
	struct sq_stmt *s = sqs(base);
	int rc = sqlite3_step(s->st);

	if (rc == SQLITE_ROW)
		return STORE_ROW;
	if (rc == SQLITE_DONE)
		return STORE_DONE;
	return sq_fail(sq(base->conn)->db, rc, s->what);
}

static int64_t sq_changes(struct store_stmt *base)
{
	return sqlite3_changes(sq(base->conn)->db);
}

static bool sq_col_null(struct store_stmt *base, int i)
{
	return sqlite3_column_type(sqs(base)->st, i) == SQLITE_NULL;
}

static int64_t sq_col_i64(struct store_stmt *base, int i)
{
	return sqlite3_column_int64(sqs(base)->st, i);
}

static double sq_col_double(struct store_stmt *base, int i)
{
	return sqlite3_column_double(sqs(base)->st, i);
}

static const char *sq_col_text(struct store_stmt *base, int i)
{
	return (const char *)sqlite3_column_text(sqs(base)->st, i);
}

static const void *sq_col_blob(struct store_stmt *base, int i, size_t *len)
{
	sqlite3_stmt *st = sqs(base)->st;
	const void *p;

	*len = 0;
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return NULL;
	p = sqlite3_column_blob(st, i);
	*len = (size_t)sqlite3_column_bytes(st, i);
	return p ? p : ""; /* an empty blob is not NULL */
}

const struct store_driver store_sqlite_driver = {
    .name = "sqlite",
    .kind = STORE_SQLITE,
    .connect = sq_connect,
    .disconnect = sq_disconnect,
    .broken = sq_broken,
    .migrations = migrations,
    .exec = sq_exec,
    .schema_lock = NULL, /* BEGIN IMMEDIATE serialises migrations */
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .prepare = sq_prepare,
    .finalize = sq_finalize,
    .reset = sq_reset,
    .bind_i64 = sq_bind_i64,
    .bind_double = sq_bind_double,
    .bind_text = sq_bind_text,
    .bind_null = sq_bind_null,
    .bind_blob = sq_bind_blob,
    .step = sq_step,
    .send = NULL, /* in-process: nothing to gain */
    .changes = sq_changes,
    .col_null = sq_col_null,
    .col_i64 = sq_col_i64,
    .col_double = sq_col_double,
    .col_text = sq_col_text,
    .col_blob = sq_col_blob,
};
