/* The store against a real SQLite database in a temp dir: URLs, migrations, a run stored and
 * rebuilt exactly, idempotency, one transaction per batch, listing and cursors, commit order,
 * series, hosts with fingerprint history, tokens and jobs. The PostgreSQL backend runs the same
 * contract in the end-to-end suite. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "aw/sha256.h"
#include "store_backend.h"

#include "collector_fixture.h"

static struct aw_result *make_result(const char *run_id, const char *host, const char *commit,
                                     const char *started, int n_cells, double scale)
{
	struct aw_result *r = aw_result_new();
	const char *ops[] = {"ldadd", "stadd", "llsc"};

	assert_non_null(r);
	snprintf(r->run_id, sizeof(r->run_id), "%s", run_id);
	assert_int_equal(aw_set_str(&r->project, "linux"), 0);
	assert_int_equal(aw_set_str(&r->commit, commit), 0);
	assert_int_equal(aw_set_str(&r->ref, "main"), 0);
	assert_int_equal(aw_set_str(&r->matrix_name, "default"), 0);
	assert_int_equal(aw_set_str(&r->matrix_hash, "0123456789abcdef"), 0);
	r->matrix_version = 3;
	r->trigger = AW_TRIGGER_CI;
	snprintf(r->started_at, sizeof(r->started_at), "%s", started);
	snprintf(r->finished_at, sizeof(r->finished_at), "%s", started);
	r->host = json_pack("{s:s, s:s, s:s, s:{s:s}}", "name", host, "arch", "aarch64",
	                    "cpu_model", "Neoverse-V2 \"quoted\" \\ x", "labels", "rack", "b7");
	r->meta = json_pack("{s:s}", "why", "test");
	for (int i = 0; i < n_cells; i++) {
		struct aw_cell *c = aw_result_add_cell(r);

		assert_int_equal(aw_set_str(&c->op, ops[i % 3]), 0);
		c->cpu = i / 3;
		if (i == 1) {
			assert_int_equal(aw_set_str(&c->reader, "srcu"), 0);
			c->contender_cpu = 5;
			c->c = 100;
			c->d = 10;
			assert_int_equal(aw_set_str(&c->placement, "far"), 0);
		}
		if (i == 2) {
			c->status = AW_CELL_SKIPPED;
			assert_int_equal(aw_set_str(&c->reason, "no LSE, \"quoted\""), 0);
		} else {
			c->n = 200;
			c->batch = 4096;
			c->min = 1.0 / 3.0 * scale;
			c->p50 = 4.4 * scale + i;
			c->p95 = c->p50 + 0.1;
			c->p99 = c->p95 + 1e-9;
			c->max = 1e6;
			c->mean = c->p50;
			c->stddev = 0;
			c->ci_lo = c->p50;
			c->ci_hi = c->p50;
			c->baseline_ns = 0.3125;
			c->below_resolution = i % 2;
		}
		assert_int_equal(aw_cell_make_key(c), 0);
	}
	return r;
}

static void test_urls(void **state)
{
	struct store_url u;
	char *err = NULL;

	(void)state;
	assert_int_equal(store_url_parse("sqlite:/var/lib/a.db", &u, NULL), 0);
	assert_int_equal(u.kind, STORE_SQLITE);
	assert_string_equal(u.target, "/var/lib/a.db");
	store_url_release(&u);
	assert_int_equal(store_url_parse("sqlite:///var/lib/a.db", &u, NULL), 0);
	assert_string_equal(u.target, "/var/lib/a.db");
	store_url_release(&u);
	assert_int_equal(store_url_parse("sqlite:rel.db", &u, NULL), 0);
	assert_string_equal(u.target, "rel.db");
	store_url_release(&u);
	assert_int_equal(store_url_parse("postgres://aw@db:5432/aw?sslmode=require", &u, NULL), 0);
	assert_int_equal(u.kind, STORE_POSTGRES);
	assert_string_equal(u.target, "postgres://aw@db:5432/aw?sslmode=require");
	store_url_release(&u);
	assert_int_equal(store_url_parse("postgresql:///aw", &u, NULL), 0);
	store_url_release(&u);
	assert_int_equal(store_url_parse("mysql://x", &u, &err), -EINVAL);
	assert_string_equal(err,
	                    "database url 'mysql://x' must start with 'sqlite:' or 'postgres://'");
	assert_int_equal(store_url_parse("sqlite:", &u, &err), -EINVAL);
	assert_int_equal(store_url_parse("sqlite::memory:", &u, &err), -EINVAL);
	assert_int_equal(store_url_parse("", &u, &err), -EINVAL);
	free(err);
}

static void test_sig_and_names(void **state)
{
	char key[] = "op=llsc cpu=0 contender=1 c=10", op[] = "llsc";
	struct aw_cell c = {0};
	char sig[STORE_SIG_MAX];
	enum store_metric m;
	enum store_role role;
	enum aw_cell_status st;

	(void)state;
	c.key = key;
	c.op = op;
	c.cpu = 0;
	c.contender_cpu = 1;
	c.c = 10;
	assert_int_equal(store_cell_sig(&c, sig, sizeof(sig)), 0);
	assert_string_equal(sig, "op=llsc cpu=0 contender=1 c=10\x1fllsc\x1f\x1f\x1f\x1f\x1f"
	                         "0\x1f"
	                         "1\x1f"
	                         "10\x1f"
	                         "0");
	assert_int_equal(store_cell_sig(&c, sig, 8), -ENAMETOOLONG);
	assert_int_equal(store_metric_parse("p99", &m), 0);
	assert_int_equal(m, STORE_METRIC_P99);
	assert_string_equal(store_metric_name(STORE_METRIC_BASELINE), "baseline_ns");
	assert_int_equal(store_metric_parse("p42", &m), -EINVAL);
	assert_int_equal(store_role_parse("ci", &role), 0);
	assert_int_equal(role, STORE_ROLE_CI);
	assert_int_equal(store_role_parse("root", &role), -EINVAL);
	assert_int_equal(store_status_parse("skipped", &st), 0);
	assert_int_equal(st, AW_CELL_SKIPPED);
	assert_int_equal(store_status_parse(NULL, &st), -EINVAL);
}

static void test_migrate_twice(void **state)
{
	struct store *s = NULL;
	struct store_conn *c = NULL;
	char *err = NULL;
	int from, to;

	(void)state;
	assert_int_equal(store_open(url, NULL, &s, &err), 0);
	assert_int_equal(store_connect(s, &c, &err), 0);
	assert_int_equal(store_migrate(c, &from, &to, &err), 0);
	assert_int_equal(from, 0);
	assert_int_equal(to, store_schema_version());
	assert_int_equal(store_migrate(c, &from, &to, &err), 0);
	assert_int_equal(from, store_schema_version());
	assert_int_equal(store_ping(c), 0);
	store_disconnect(&c);
	store_close(&s);
	assert_null(s);
}

static void test_round_trip(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_result *r = make_result("11111111-1111-4111-8111-111111111111", "h1", "abcdef0",
	                                  "2026-01-01T00:00:00Z", 60, 1);
	struct aw_result *back = NULL, *again = NULL;
	struct aw_verr verr;
	json_t *a, *b;
	char *ta, *tb;
	int64_t seq;

	(void)state;
	put_one(c, r, STORE_CREATED, &seq);
	assert_true(seq > 0);
	assert_int_equal(store_get_run(c, r->run_id, &back), 0);
	a = aw_result_to_json(r);
	b = aw_result_to_json(back);
	ta = json_dumps(a, JSON_SORT_KEYS | JSON_COMPACT);
	tb = json_dumps(b, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(ta, tb);
	/* The rebuilt document validates again. */
	again = aw_result_from_json(b, NULL, &verr);
	if (!again)
		fail_msg("%s: %s", verr.field, verr.message);
	assert_true(isnan(back->cells[2].p50));
	assert_int_equal(back->cells[1].contender_cpu, 5);
	aw_result_free(&back);
	assert_int_equal(store_get_run(c, "22222222-2222-4222-8222-222222222222", &back), -ENOENT);
	assert_null(back);
	free(ta);
	free(tb);
	json_decref(a);
	json_decref(b);
	aw_result_free(&again);
	aw_result_free(&back);
	aw_result_free(&r);
	store_disconnect(&c);
	store_close(&s);
}

static void test_idempotency_and_atomicity(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_result *r = make_result("11111111-1111-4111-8111-111111111111", "h1", "abcdef0",
	                                  "2026-01-01T00:00:00Z", 30, 1);
	struct aw_result *other = make_result("11111111-1111-4111-8111-111111111111", "h1",
	                                      "abcdef0", "2026-01-01T00:00:00Z", 30, 2);
	struct aw_result *good = make_result("33333333-3333-4333-8333-333333333333", "h1",
	                                     "abcdef1", "2026-01-01T00:00:00Z", 30, 1);
	struct aw_result *bad = make_result("44444444-4444-4444-8444-444444444444", "h1", "abcdef1",
	                                    "2026-01-01T00:00:00Z", 30, 1);
	struct store_put batch[2];
	char *hj[2];
	int64_t seq1, seq2;

	(void)state;
	put_one(c, r, STORE_CREATED, &seq1);
	put_one(c, r, STORE_DUPLICATE, &seq2);
	assert_int_equal(seq1, seq2);
	put_one(c, other, STORE_CONFLICT, &seq2);
	assert_int_equal(seq1, seq2);

	/* A batch is one transaction: one broken document and nothing of it is stored. */
	free(bad->cells[5].op);
	bad->cells[5].op = NULL; /* NOT NULL in the schema */
	make_put(&batch[0], good, &hj[0]);
	make_put(&batch[1], bad, &hj[1]);
	assert_int_equal(store_put_runs(c, batch, 2), -EIO);
	aw_result_free(&other);
	assert_int_equal(store_get_run(c, good->run_id, &other), -ENOENT);
	/* The connection stays usable and the good one alone goes in. */
	assert_int_equal(store_put_runs(c, batch, 1), 0);
	assert_int_equal(batch[0].outcome, STORE_CREATED);
	free(hj[0]);
	free(hj[1]);
	aw_result_free(&r);
	aw_result_free(&other);
	aw_result_free(&good);
	aw_result_free(&bad);
	store_disconnect(&c);
	store_close(&s);
}

struct seen {
	int n;
	int64_t seqs[64];
	char commits[64][16];
	double values[64];
};

static int on_run(const struct store_run *r, void *cls)
{
	struct seen *s = cls;

	assert_true(s->n < 64);
	s->seqs[s->n] = r->seq;
	snprintf(s->commits[s->n], sizeof(s->commits[0]), "%s", r->commit ? r->commit : "");
	assert_string_equal(r->project, "linux");
	assert_string_equal(r->matrix_hash, "0123456789abcdef");
	s->n++;
	return 0;
}

static int on_point(const struct store_point *p, void *cls)
{
	struct seen *s = cls;

	s->seqs[s->n] = p->seq;
	snprintf(s->commits[s->n], sizeof(s->commits[0]), "%s", p->commit);
	s->values[s->n] = p->value;
	s->n++;
	return 0;
}

static void test_lists_and_order(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	/* Stored out of commit order: c3 first, then c1 (older), then c2 twice. */
	const struct {
		const char *id, *host, *commit, *started;
		double scale;
	} runs[] = {
	    {"00000000-0000-4000-8000-000000000003", "h1", "c333333", "2026-01-03T00:00:00Z", 3},
	    {"00000000-0000-4000-8000-000000000001", "h1", "c111111", "2026-01-01T00:00:00Z", 1},
	    {"00000000-0000-4000-8000-000000000002", "h1", "c222222", "2026-01-02T00:00:00Z", 2},
	    {"00000000-0000-4000-8000-000000000004", "h1", "c222222", "2026-01-04T00:00:00Z", 2.5},
	    {"00000000-0000-4000-8000-000000000005", "h2", "c111111", "2026-01-05T00:00:00Z", 9},
	};
	struct store_run_filter f = {.limit = 100};
	struct seen seen = {0};
	struct store_series_query q = {.host = "h1",
	                               .ref = "main",
	                               .cell_key = "op=ldadd cpu=0",
	                               .metric = STORE_METRIC_P50,
	                               .limit = 100};

	(void)state;
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		struct aw_result *r = make_result(runs[i].id, runs[i].host, runs[i].commit,
		                                  runs[i].started, 9, runs[i].scale);

		put_one(c, r, STORE_CREATED, NULL);
		aw_result_free(&r);
	}
	/* Newest first, filters, cursor. */
	assert_int_equal(store_list_runs(c, &f, on_run, &seen), 0);
	assert_int_equal(seen.n, 5);
	assert_true(seen.seqs[0] > seen.seqs[1]);
	memset(&seen, 0, sizeof(seen));
	f.host = "h1";
	f.limit = 2;
	assert_int_equal(store_list_runs(c, &f, on_run, &seen), 0);
	assert_int_equal(seen.n, 2);
	f.before_seq = seen.seqs[1];
	assert_int_equal(store_list_runs(c, &f, on_run, &seen), 0);
	assert_int_equal(seen.n, 4);
	assert_true(seen.seqs[2] < seen.seqs[1]);
	memset(&seen, 0, sizeof(seen));
	f = (struct store_run_filter){.project = "linux", .commit = "c111111", .limit = 10};
	assert_int_equal(store_list_runs(c, &f, on_run, &seen), 0);
	assert_int_equal(seen.n, 2); /* both hosts */
	memset(&seen, 0, sizeof(seen));
	f.host = "h2";
	assert_int_equal(store_list_runs(c, &f, on_run, &seen), 0);
	assert_int_equal(seen.n, 1);

	/* Commit order (first run's started_at), not storage order. */
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(
	    store_ref_history(c, NULL, "h1", "main", INT64_MAX, INT64_MAX, 10, on_run, &seen), 0);
	assert_int_equal(seen.n, 4);
	assert_string_equal(seen.commits[0], "c333333");
	assert_string_equal(seen.commits[1], "c222222");
	assert_string_equal(seen.commits[2], "c222222");
	assert_string_equal(seen.commits[3], "c111111");
	/* Before c3's position: c2 (twice), then c1. */
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(store_ref_history(c, "linux", "h1", "main",
	                                   INT64_C(1767398400000000) /* 2026-01-03 */, 0, 2, on_run,
	                                   &seen),
	                 0);
	assert_int_equal(seen.n, 2);
	assert_string_equal(seen.commits[0], "c222222");

	memset(&seen, 0, sizeof(seen));
	assert_int_equal(store_series(c, &q, on_point, &seen), 0);
	assert_int_equal(seen.n, 4);
	assert_string_equal(seen.commits[0], "c111111");
	assert_string_equal(seen.commits[3], "c333333");
	assert_true(fabs(seen.values[0] - 4.4) < 1e-12);
	assert_true(fabs(seen.values[3] - 4.4 * 3) < 1e-12);
	memset(&seen, 0, sizeof(seen));
	q.limit = 1; /* the newest point */
	assert_int_equal(store_series(c, &q, on_point, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_string_equal(seen.commits[0], "c333333");
	memset(&seen, 0, sizeof(seen));
	q.cell_key = "op=nothing";
	assert_int_equal(store_series(c, &q, on_point, &seen), 0);
	assert_int_equal(seen.n, 0);
	store_disconnect(&c);
	store_close(&s);
}

static int count_cell(const struct aw_cell *cell, void *cls)
{
	(*(int *)cls)++;
	assert_non_null(cell->key);
	return 0;
}

static int on_host(const struct store_host *h, void *cls)
{
	(*(int *)cls)++;
	assert_string_equal(h->arch, "aarch64");
	assert_non_null(strstr(h->fingerprint, "\"rack\""));
	return 0;
}

static int on_fp(const struct store_fingerprint *f, void *cls)
{
	(*(int *)cls) += 100;
	assert_int_equal(strlen(f->hash), 64);
	return 0;
}

static void test_hosts_and_cells(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_result *r = make_result("00000000-0000-4000-8000-000000000001", "h1", "c111111",
	                                  "2026-01-01T00:00:00Z", 12, 1);
	int n = 0;
	int64_t seq;

	(void)state;
	put_one(c, r, STORE_CREATED, &seq);
	assert_int_equal(store_run_cells(c, seq, count_cell, &n), 0);
	assert_int_equal(n, 12);
	/* Same host, same fingerprint: one fingerprint row; then a changed kernel: two. */
	snprintf(r->run_id, sizeof(r->run_id), "00000000-0000-4000-8000-000000000002");
	put_one(c, r, STORE_CREATED, NULL);
	n = 0;
	assert_int_equal(store_get_host(c, "h1", on_host, on_fp, &n), 0);
	assert_int_equal(n, 101);
	json_object_set_new(r->host, "kernel", json_string("6.13"));
	snprintf(r->run_id, sizeof(r->run_id), "00000000-0000-4000-8000-000000000003");
	put_one(c, r, STORE_CREATED, NULL);
	n = 0;
	assert_int_equal(store_get_host(c, "h1", on_host, on_fp, &n), 0);
	assert_int_equal(n, 201);
	n = 0;
	assert_int_equal(store_list_hosts(c, on_host, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(store_get_host(c, "nope", on_host, NULL, &n), -ENOENT);
	aw_result_free(&r);
	store_disconnect(&c);
	store_close(&s);
}

static int on_token(const struct store_token *t, void *cls)
{
	*(struct store_token *)cls = *t;
	return 0;
}

static void test_tokens(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct store_token t;
	int64_t id1, id2;

	(void)state;
	assert_int_equal(store_token_create(c, STORE_ROLE_AGENT, "h1", "aa", &id1), 0);
	assert_int_equal(store_token_create(c, STORE_ROLE_CI, NULL, "bb", &id2), 0);
	assert_true(id2 > id1);
	/* The schema refuses an agent without a host. */
	assert_int_equal(store_token_create(c, STORE_ROLE_AGENT, NULL, "cc", &id2), -EIO);
	assert_int_equal(store_token_find(c, "aa", on_token, &t), 0);
	assert_int_equal(t.id, id1);
	assert_int_equal(t.role, STORE_ROLE_AGENT);
	assert_null(t.revoked_at);
	assert_int_equal(store_token_find(c, "zz", on_token, &t), -ENOENT);
	assert_int_equal(store_token_touch(c, id1, "2026-01-01T00:00:00Z"), 0);
	assert_int_equal(store_token_revoke(c, id1), 0);
	assert_int_equal(store_token_revoke(c, id1), 0);
	assert_int_equal(store_token_revoke(c, 999), -ENOENT);
	store_disconnect(&c);
	store_close(&s);
}

static int on_job(const struct store_job *j, void *cls)
{
	*(int64_t *)cls = j->id;
	return 0;
}

static int on_job_host(const struct store_job_host *h, void *cls)
{
	char *out = (char *)cls + sizeof(int64_t); /* after on_job()'s id */

	snprintf(out + strlen(out), 256 - strlen(out), "%s=%s ", h->host, h->state);
	return 0;
}

static void test_jobs(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	const char *hosts[] = {"h1", "h2"};
	struct store_job_spec all = {
	    .project = "linux", .commit = "abcdef0", .ref = "main", .ttl_us = INT64_C(3600000000)};
	struct store_job_spec listed = all;
	struct {
		int64_t id;
		char text[256];
	} states = {0, ""};
	int64_t id_all, id_listed, got;

	(void)state;
	listed.hosts = hosts;
	listed.n_hosts = 2;
	listed.subject = "mylib";
	assert_int_equal(store_job_create(c, &all, &id_all), 0);
	assert_int_equal(store_job_create(c, &listed, &id_listed), 0);
	/* Each host claims each job once, oldest first. */
	assert_int_equal(store_job_claim(c, "h1", INT64_C(600000000), on_job, &got), 0);
	assert_int_equal(got, id_all);
	assert_int_equal(store_job_claim(c, "h1", INT64_C(600000000), on_job, &got), 0);
	assert_int_equal(got, id_listed);
	assert_int_equal(store_job_claim(c, "h1", INT64_C(600000000), on_job, &got), -ENOENT);
	assert_int_equal(store_job_claim(c, "h3", INT64_C(600000000), on_job, &got), 0);
	assert_int_equal(got, id_all); /* h3 is not listed on the second job */
	assert_int_equal(store_job_claim(c, "h3", INT64_C(600000000), on_job, &got), -ENOENT);
	/* A lost reply: released, then claimed again. */
	assert_int_equal(store_job_unclaim(c, id_all, "h3"), 0);
	assert_int_equal(store_job_claim(c, "h3", INT64_C(600000000), on_job, &got), 0);
	/* A claim never followed up is offered again after the reclaim delay (0 here). */
	assert_int_equal(store_job_claim(c, "h3", 0, on_job, &got), 0);
	assert_int_equal(got, id_all);
	/* States. */
	assert_int_equal(store_job_set_state(c, id_listed, "h2", "running", NULL, NULL), -ENOENT);
	assert_int_equal(store_job_set_state(c, id_listed, "h1", "running", NULL, NULL), 0);
	assert_int_equal(store_job_set_state(c, id_listed, "h1", "done",
	                                     "11111111-1111-4111-8111-111111111111", "ok"),
	                 0);
	assert_int_equal(store_job_set_state(c, id_listed, "h1", "done", NULL, NULL), 0);
	assert_int_equal(store_job_set_state(c, id_listed, "h1", "running", NULL, NULL), -EPERM);
	/* Once running it is not offered again, whatever the delay. */
	assert_int_equal(store_job_claim(c, "h1", 0, on_job, &got), 0);
	assert_int_equal(got, id_all); /* h1's claim of the first job was never followed up */
	assert_int_equal(store_job_get(c, id_listed, on_job, on_job_host, &states), 0);
	assert_int_equal(states.id, id_listed);
	assert_string_equal(states.text, "h1=done h2=pending ");
	assert_int_equal(store_job_get(c, 999, on_job, NULL, NULL), -ENOENT);
	got = 0;
	assert_int_equal(store_job_list(c, 1, on_job, &got), 0);
	assert_int_equal(got, id_listed);
	store_disconnect(&c);
	store_close(&s);
}

static void test_pool(void **state)
{
	struct store_options opt = STORE_OPTIONS_DEFAULT;
	struct store_conn *a = NULL, *b = NULL, *a2 = NULL;
	struct store *s = NULL;
	char *err = NULL;

	(void)state;
	opt.pool_size = 2;
	assert_int_equal(store_open(url, &opt, &s, &err), 0);
	assert_int_equal(store_acquire(s, &a), 0);
	assert_int_equal(store_acquire(s, &b), 0);
	assert_ptr_not_equal(a, b);
	store_release(s, &a);
	assert_null(a);
	assert_int_equal(store_acquire(s, &a2), 0); /* the idle one is reused */
	store_release(s, &a2);
	store_release(s, &b);
	store_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_urls),
	    cmocka_unit_test(test_sig_and_names),
	    cmocka_unit_test(test_migrate_twice),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_idempotency_and_atomicity),
	    cmocka_unit_test(test_lists_and_order),
	    cmocka_unit_test(test_hosts_and_cells),
	    cmocka_unit_test(test_tokens),
	    cmocka_unit_test(test_jobs),
	    cmocka_unit_test(test_pool),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
