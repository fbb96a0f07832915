/* Test fixture for collector tests that need a real database: a temp directory per test
 * group, fresh migrated SQLite stores in it, and runs put the way ingest puts them. Include it
 * in one test file after cmocka.h; everything is static. */
#ifndef AW_TEST_COLLECTOR_FIXTURE_H
#define AW_TEST_COLLECTOR_FIXTURE_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/result.h"
#include "aw/sha256.h"
#include "store.h"

static char dir[64];
static char url[128];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/aw-store-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(url, sizeof(url), "sqlite:%s/t.db", dir);
	return 0;
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
	static int serial;
	struct store *s = NULL;
	char u[160], *err = NULL;

	snprintf(u, sizeof(u), "sqlite:%s/t%d.db", dir, ++serial);
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
