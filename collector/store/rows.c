/* The store's row layer, its shared part: the cache of prepared statements, the helpers that
 * run them, connections and the schema's migrations. Each entity's statements and mappings are
 * in a file of their own (ingest.c, runs.c, jobs.c, tasks.c, cache.c, auth.c, ab.c), written
 * once for both dialects over the driver of driver.h. */
#include "rows.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "aw/buf.h"
#include "aw/log.h"
#include "aw/strmap.h"

const int chunk_rows[N_CHUNKS] = {256, 64, 16, 4, 1};

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

static int prepare(struct store_conn *c, const struct stmt_def *d, int chunk,
                   struct store_stmt **out)
{
	int slot = (int)d->id + chunk;
	const char *sql = d->sql;
	char *text = NULL;
	int rc;

	*out = c->stmt[slot];
	if (*out)
		return 0;
	if (d->ncols) {
		text = rows_sql(d, chunk_rows[chunk]);
		if (!text)
			return -ENOMEM;
		sql = text;
	} else if (d->pg && c->drv->kind == STORE_POSTGRES) {
		sql = d->pg;
	}
	rc = c->drv->prepare(c, sql, d->what, true, &c->stmt[slot]);
	free(text);
	*out = c->stmt[slot];
	return rc;
}

int rows_get(struct store_conn *c, const struct stmt_def *d, struct store_stmt **out)
{
	return prepare(c, d, 0, out);
}

int rows_get_chunk(struct store_conn *c, const struct stmt_def *d, int chunk,
                   struct store_stmt **out)
{
	return prepare(c, d, chunk, out);
}

int rows_get_filtered(struct store_conn *c, const struct filtered_def *d, unsigned mask,
                      struct store_stmt **out)
{
	int slot = (int)d->first + (int)mask, rc, k = 0;
	struct aw_buf b;

	assert(d->n <= 4 && mask < (1u << d->n));
	*out = c->stmt[slot];
	if (*out)
		return 0;
	aw_buf_init(&b, 16384);
	rc = aw_buf_puts(&b, d->head);
	for (int i = 0; !rc && i < d->n; i++)
		if (mask & (1u << i))
			rc = aw_buf_printf(&b, "%s%s", k++ ? " AND " : d->joiner, d->filters[i]);
	if (!rc)
		rc = aw_buf_puts(&b, d->tail);
	if (!rc)
		rc = c->drv->prepare(c, b.data, d->what, true, &c->stmt[slot]);
	aw_buf_release(&b);
	*out = c->stmt[slot];
	return rc;
}

int rows_run_done(struct store_stmt *s, int64_t *changes)
{
	int rc;

	while ((rc = step(s)) == STORE_ROW)
		;
	if (!rc && changes)
		*changes = s->drv->changes(s);
	reset(s);
	return rc;
}

int rows_run_later(struct store_stmt *s)
{
	int rc;

	if (!s->drv->send)
		return rows_run_done(s, NULL);
	rc = s->drv->send(s);
	reset(s);
	return rc;
}

int rows_run_id(struct store_stmt *s, int64_t *out)
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

int rows_each_row(struct store_stmt *s, int (*row)(struct store_stmt *, void *), void *cls)
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

void rows_rollback(struct store_conn *c)
{
	c->drv->rollback(c);
	aw_strmap_clear(c->cells);
}

int rows_finish(struct store_conn *c, int rc)
{
	if (!rc)
		rc = rows_commit(c);
	if (rc)
		rows_rollback(c);
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

void store_set_plan_hook(struct store_conn *c, store_plan_cb cb, void *cls)
{
	c->plan_cb = cb;
	c->plan_cls = cls;
}

static const struct stmt_def sql_ping = {.id = S_PING, .what = "ping", .sql = "SELECT 1"};

int store_ping(struct store_conn *c)
{
	struct store_stmt *s;
	int rc = rows_get(c, &sql_ping, &s);

	return rc ? rc : rows_run_done(s, NULL);
}

/* ---- schema ---- */

static const struct stmt_def sql_version = {
    .id = S_VERSION,
    .what = "read the schema version",
    .sql = "SELECT COALESCE(MAX(version), 0) FROM schema_migrations"};

static const struct stmt_def sql_migrated = {
    .id = S_MIGRATED,
    .what = "record a migration",
    .sql = "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)"};

/* Runs the backfill of migration `version` until a pass changes no row, each pass in a
 * transaction of its own: killed half-way, a later call goes on from what was committed. */
static int backfill(struct store_conn *c, int version, char **err)
{
	struct store_stmt *s = NULL;
	int64_t changed = 1, total = 0;
	int rc = c->drv->prepare(c, store_backfills[version - 1], "fill in a migration", false, &s);

	while (!rc && changed) {
		rc = rows_begin(c, STORE_TX_WRITE);
		if (rc)
			break;
		c->drv->bind_i64(s, 1, STORE_BACKFILL_ROWS);
		rc = rows_finish(c, rows_run_done(s, &changed));
		total += changed;
		if (!rc && changed)
			aw_debug("store: migration %d: %" PRId64 " rows filled in so far", version,
			         total);
	}
	c->drv->finalize(s);
	if (rc)
		return aw_errorf(err, rc, "migration %d: cannot fill in its rows", version);
	if (total)
		aw_info("store: migration %d: %" PRId64 " rows filled in", version, total);
	return 0;
}

int store_migrate(struct store_conn *c, int *from, int *to, char **err)
{
	const struct store_driver *d = c->drv;
	int version = 0, first = -1, filled = 0, rc;
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
		rc = rows_begin(c, STORE_TX_WRITE);
		if (rc) {
			aw_errorf(err, rc, "cannot begin a migration");
			goto out;
		}
		rc = rows_get(c, &sql_version, &s);
		if (!rc)
			rc = rows_run_id(s, &v);
		if (rc) {
			aw_errorf(err, rc, "cannot read the schema version");
			goto fail;
		}
		version = (int)v;
		if (first < 0)
			first = version;
		if (version >= STORE_SCHEMA_VERSION) {
			rc = rows_commit(c);
			if (rc) {
				aw_errorf(err, rc, "cannot commit");
				goto fail;
			}
			break;
		}
		/* Its backfill first, outside this transaction; then read the version again. */
		if (store_backfills[version] && filled != version + 1) {
			rc = rows_commit(c);
			if (rc) {
				aw_errorf(err, rc, "cannot commit");
				goto fail;
			}
			rc = backfill(c, version + 1, err);
			if (rc)
				goto out;
			filled = version + 1;
			continue;
		}
		/* A migration is constant DDL: a script run as it is. */
		rc = d->exec(c, d->migrations[version], &msg);
		if (rc) {
			aw_errorf(err, rc, "migration %d failed: %s", version + 1, msg);
			goto fail;
		}
		store_now(now, &us);
		rc = rows_get(c, &sql_migrated, &s);
		if (!rc) {
			b_i64(s, 1, version + 1);
			b_text(s, 2, now);
			rc = rows_run_done(s, NULL);
		}
		if (!rc)
			rc = rows_commit(c);
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
	rows_rollback(c);
out:
	if (d->schema_lock)
		d->schema_lock(c, false, NULL);
	free(msg);
	return rc;
}
