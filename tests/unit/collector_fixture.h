/* Test fixture for collector tests that need a real database: a temp directory per test
 * group, fresh migrated stores, and runs put the way ingest puts them. The stores are SQLite
 * files in the temp dir, or, when AW_TEST_PG_HOST and AW_TEST_PG_PORT name a PostgreSQL server
 * (tests/unit/with_postgres.py starts a throw-away one), a new database on it each. Include it
 * in one test file after cmocka.h; everything is static. */
#ifndef AW_TEST_COLLECTOR_FIXTURE_H
#define AW_TEST_COLLECTOR_FIXTURE_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aw/result.h"
#include "aw/sha256.h"
#include "driver.h"

static char dir[64];
static char url[256];

/* The PostgreSQL server of the run, or NULL: SQLite. */
static const char *pg_host(void)
{
	const char *h = getenv("AW_TEST_PG_HOST");

	return h && *h && getenv("AW_TEST_PG_PORT") ? h : NULL;
}

static void pg_url(char *out, size_t len, const char *db)
{
	snprintf(out, len, "postgres:///%s?host=%s&port=%s&user=postgres", db, pg_host(),
	         getenv("AW_TEST_PG_PORT"));
}

/* Runs `sql` (no transaction) on the server's "postgres" database. */
static int pg_admin(const char *sql)
{
	struct store *s = NULL;
	struct store_conn *c = NULL;
	char u[256], *err = NULL;
	int rc;

	pg_url(u, sizeof(u), "postgres");
	rc = store_open(u, NULL, &s, &err);
	if (!rc)
		rc = store_connect(s, &c, &err);
	if (!rc)
		rc = c->drv->exec(c, sql, &err);
	if (rc)
		fprintf(stderr, "%s: %s\n", sql, err ? err : "failed");
	free(err);
	store_disconnect(&c);
	store_close(&s);
	return rc;
}

/* The URL of a new, empty database (`name` names a SQLite file in the temp dir, or is part of
 * the PostgreSQL database's name). Returns 0 or -1. */
static int new_database(char *out, size_t len, const char *name)
{
	static int serial;
	char db[64], sql[96];

	if (!pg_host()) {
		snprintf(out, len, "sqlite:%s/%s%d.db", dir, name, ++serial);
		return 0;
	}
	snprintf(db, sizeof(db), "aw_%s_%d_%d", name, (int)getpid(), ++serial);
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", db);
	if (pg_admin(sql))
		return -1;
	pg_url(out, len, db);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/aw-store-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	return new_database(url, sizeof(url), "t");
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A fresh migrated database and a connection to it. */
static struct store *open_fresh(struct store_conn **c)
{
	struct store *s = NULL;
	char u[256], *err = NULL;

	assert_int_equal(new_database(u, sizeof(u), "t"), 0);
	assert_int_equal(store_open(u, NULL, &s, &err), 0);
	assert_int_equal(store_connect(s, c, &err), 0);
	assert_int_equal(store_migrate(*c, NULL, NULL, &err), 0);
	assert_null(err);
	return s;
}

/* Fills a put for `r` with hashes of its JSON, as ingest does. */
static void make_put(struct store_put *p, const struct aw_result *r, char **host_json)
{
	json_t *doc = aw_result_to_json(r);
	char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);

	memset(p, 0, sizeof(*p));
	p->result = r;
	assert_int_equal(aw_sha256_hex(text, strlen(text), p->content_hash), 0);
	*host_json = json_dumps(r->host, JSON_COMPACT | JSON_SORT_KEYS);
	assert_int_equal(aw_sha256_hex(*host_json, strlen(*host_json), p->host_hash), 0);
	p->host_json = *host_json;
	aw_time_now(p->received_at);
	free(text);
	json_decref(doc);
}

static void put_one(struct store_conn *c, const struct aw_result *r, enum store_outcome want,
                    int64_t *seq)
{
	struct store_put p;
	char *host_json;

	make_put(&p, r, &host_json);
	assert_int_equal(store_put_runs(c, &p, 1), 0);
	assert_int_equal(p.outcome, want);
	if (seq)
		*seq = p.seq;
	free(host_json);
}

#endif
