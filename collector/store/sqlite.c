/* The SQLite driver of the store (the embedded default): WAL mode so that readers never wait for
 * the writer, statements prepared once per connection, its errors mapped to the store's. The only
 * file of the collector that includes <sqlite3.h>. */
#include "driver.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/buf.h"
#include "aw/log.h"
#include "aw/util.h"

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

/* store_set_plan_hook(): EXPLAIN QUERY PLAN of the statement, its bindings lent to it. */
static void sq_explain(struct sq_stmt *s)
{
	struct store_conn *conn = s->base.conn;
	sqlite3_stmt *eqp = NULL;
	struct aw_buf plan;
	char *sql = aw_asprintf("EXPLAIN QUERY PLAN %s", sqlite3_sql(s->st));
	int rc = sql ? sqlite3_prepare_v2(sq(conn)->db, sql, -1, &eqp, NULL) : SQLITE_NOMEM;

	aw_buf_init(&plan, 1 << 20);
	if (rc == SQLITE_OK)
		rc = sqlite3_transfer_bindings(s->st, eqp);
	while (rc == SQLITE_OK && sqlite3_step(eqp) == SQLITE_ROW)
		rc = aw_buf_printf(&plan, "%s%s", plan.len ? "\n" : "",
		                   (const char *)sqlite3_column_text(eqp, 3))
		         ? SQLITE_NOMEM
		         : SQLITE_OK;
	if (eqp)
		sqlite3_transfer_bindings(eqp, s->st);
	conn->plan_cb(s->what, sqlite3_sql(s->st), rc == SQLITE_OK ? plan.data : NULL,
	              conn->plan_cls);
	sqlite3_finalize(eqp);
	aw_buf_release(&plan);
	free(sql);
}

static int sq_step(struct store_stmt *base)
{
	struct sq_stmt *s = sqs(base);
	int rc;

	if (base->conn->plan_cb && !sqlite3_stmt_busy(s->st))
		sq_explain(s);
	rc = sqlite3_step(s->st);

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
    .migrations = store_sqlite_migrations,
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
