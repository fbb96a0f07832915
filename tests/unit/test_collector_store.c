/* The store against a real database: SQLite files in a temp dir, or a throw-away PostgreSQL
 * when run through with_postgres.py (CTest runs both). URLs, migrations (from a database an
 * earlier release made, too), a run stored and rebuilt exactly, idempotency, one transaction per
 * batch, listing and cursors, commit order, series, hosts with fingerprint history, tokens,
 * jobs, change points and verdicts, the post-ingest task queue and charts. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
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
#include "aw/util.h"
#include "driver.h"

#include "aw/refblob.h"
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

static int stop_at_first_cell(const struct aw_cell *cell, void *cls)
{
	(void)cell;
	(void)cls;
	return 7;
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

/* The cells of a run as store_run_cells() gives them, in its order, for store_run_values(). */
struct cells_seen {
	struct aw_cell cell[32];
	size_t n;
};

static int keep_cell(const struct aw_cell *cell, void *cls)
{
	struct cells_seen *seen = cls;
	struct aw_cell *c = &seen->cell[seen->n++];

	assert_true(seen->n <= 32);
	*c = *cell;
	c->key = c->op = c->reader = c->subject = c->kernel = c->placement = c->reason = NULL;
	assert_int_equal(aw_set_str(&c->key, cell->key), 0);
	assert_int_equal(aw_set_str(&c->op, cell->op), 0);
	assert_int_equal(aw_set_str(&c->reader, cell->reader), 0);
	assert_int_equal(aw_set_str(&c->subject, cell->subject), 0);
	assert_int_equal(aw_set_str(&c->kernel, cell->kernel), 0);
	assert_int_equal(aw_set_str(&c->placement, cell->placement), 0);
	assert_int_equal(aw_set_str(&c->reason, cell->reason), 0);
	return 0;
}

static void assert_same_str(const char *a, const char *b)
{
	if (!a || !b)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

/* What store_run_values() gives of each cell is store_run_cells()'s, in the same order. */
static void assert_values_of_cells(const struct cells_seen *want, const struct cells_seen *got)
{
	assert_int_equal(got->n, want->n);
	for (size_t i = 0; i < want->n; i++) {
		const struct aw_cell *w = &want->cell[i], *g = &got->cell[i];

		assert_string_equal(g->key, w->key);
		assert_same_str(g->op, w->op);
		assert_same_str(g->reader, w->reader);
		assert_same_str(g->subject, w->subject);
		assert_same_str(g->kernel, w->kernel);
		assert_same_str(g->placement, w->placement);
		assert_same_str(g->reason, w->reason);
		assert_int_equal(g->cpu, w->cpu);
		assert_int_equal(g->contender_cpu, w->contender_cpu);
		assert_int_equal(g->c, w->c);
		assert_int_equal(g->d, w->d);
		assert_int_equal(g->status, w->status);
		assert_memory_equal(&g->p50, &w->p50, sizeof(double));
		assert_memory_equal(&g->p99, &w->p99, sizeof(double));
		assert_memory_equal(&g->ci_lo, &w->ci_lo, sizeof(double));
		assert_memory_equal(&g->ci_hi, &w->ci_hi, sizeof(double));
		assert_int_equal(g->n, 0);
		assert_true(isnan(g->mean) && isnan(g->baseline_ns));
	}
}

static void cells_seen_release(struct cells_seen *seen)
{
	for (size_t i = 0; i < seen->n; i++)
		aw_cell_release(&seen->cell[i]);
	seen->n = 0;
}

/* A verdict's reads: runs whose cells come in another order than they were first stored in,
 * and with cells the book has not met yet, read through one book. */
static void test_run_values(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_result *r = make_result("00000000-0000-4000-8000-000000000001", "h1", "c111111",
	                                  "2026-01-01T00:00:00Z", 12, 1);
	struct store_cell_book *book = store_cell_book_new();
	struct cells_seen want = {0}, got = {0};
	char first_key[64] = "";
	int64_t seq[3];

	(void)state;
	assert_non_null(book);
	put_one(c, r, STORE_CREATED, &seq[0]);
	aw_result_free(&r);
	/* the same cells in reverse, then four more cells than the book has met, first */
	r = make_result("00000000-0000-4000-8000-000000000002", "h1", "c222222",
	                "2026-01-01T01:00:00Z", 12, 1.5);
	for (size_t i = 0; i < r->n_cells / 2; i++) {
		struct aw_cell t = r->cells[i];

		r->cells[i] = r->cells[r->n_cells - 1 - i];
		r->cells[r->n_cells - 1 - i] = t;
	}
	put_one(c, r, STORE_CREATED, &seq[1]);
	aw_result_free(&r);
	r = make_result("00000000-0000-4000-8000-000000000003", "h1", "c333333",
	                "2026-01-01T02:00:00Z", 16, 2);
	for (size_t i = 0; i < 4; i++) {
		struct aw_cell t = r->cells[i];

		r->cells[i] = r->cells[12 + i];
		r->cells[12 + i] = t;
	}
	put_one(c, r, STORE_CREATED, &seq[2]);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(store_run_cells(c, seq[i], keep_cell, &want), 0);
		assert_int_equal(store_run_values(c, book, seq[i], keep_cell, &got), 0);
		assert_int_equal(want.n, i == 2 ? 16 : 12);
		assert_values_of_cells(&want, &got);
		/* (the second run's first cell is the first run's last: not by cell id) */
		if (i == 0)
			snprintf(first_key, sizeof(first_key), "%s", got.cell[11].key);
		if (i == 1)
			assert_string_equal(got.cell[0].key, first_key);
		cells_seen_release(&want);
		cells_seen_release(&got);
	}
	/* one subject's cells of a run, in its order: those store_run_cells() gives of it */
	for (size_t i = 0; i < r->n_cells; i++)
		aw_cell_release(&r->cells[i]);
	r->n_cells = 0;
	for (int i = 0; i < 5; i++) {
		struct aw_cell *cell = aw_result_add_cell(r);

		assert_int_equal(aw_set_str(&cell->op, "chain"), 0);
		assert_int_equal(aw_set_str(&cell->subject, i % 2 ? "ctl" : "lib"), 0);
		cell->cpu = 4 - i;
		cell->p50 = cell->p99 = cell->ci_lo = cell->ci_hi = 10 + i;
		assert_int_equal(aw_cell_make_key(cell), 0);
	}
	snprintf(r->run_id, sizeof(r->run_id), "00000000-0000-4000-8000-000000000004");
	put_one(c, r, STORE_CREATED, &seq[0]);
	assert_int_equal(store_run_cells(c, seq[0], keep_cell, &want), 0);
	assert_int_equal(store_run_subject_cells(c, seq[0], "ctl", keep_cell, &got), 0);
	assert_int_equal(got.n, 2);
	assert_string_equal(got.cell[0].key, want.cell[1].key);
	assert_string_equal(got.cell[1].key, want.cell[3].key);
	assert_true(got.cell[0].p50 == 11 && got.cell[1].p50 == 13);
	assert_string_equal(got.cell[1].subject, "ctl");
	cells_seen_release(&want);
	cells_seen_release(&got);
	assert_int_equal(store_run_subject_cells(c, seq[1], "ctl", keep_cell, &got), 0);
	assert_int_equal(got.n, 0);
	/* a run of nothing stored; the callback's non-zero return is the call's */
	assert_int_equal(store_run_values(c, book, seq[2] + 100, keep_cell, &got), 0);
	assert_int_equal(got.n, 0);
	assert_int_equal(store_run_values(c, book, seq[0], stop_at_first_cell, NULL), 7);
	store_cell_book_free(&book);
	assert_null(book);
	store_cell_book_free(&book);
	aw_result_free(&r);
	store_disconnect(&c);
	store_close(&s);
}

/* store_run_values() keeps each run it read (valcache.c): read again, through a new book, a run
 * comes from what was kept, as stored (its skipped cell's reason too); a second store whose run
 * has the same sequence and other values reads its own; closing a store forgets its runs. */
static void test_run_values_kept(void **state)
{
	struct store_conn *c, *c2;
	struct store *s = open_fresh(&c), *s2;
	struct store_cell_book *book = store_cell_book_new();
	struct cells_seen want = {0}, got = {0};
	struct aw_result *r = make_result("00000000-0000-4000-8000-000000000001", "h1", "c111111",
	                                  "2026-01-01T00:00:00Z", 12, 1);
	uint64_t h0, m0, h1, m1;
	size_t b0, b1;
	int64_t seq, seq2;

	(void)state;
	assert_non_null(book);
	put_one(c, r, STORE_CREATED, &seq);
	aw_result_free(&r);
	store_valcache_counts(&h0, &m0, &b0);
	assert_int_equal(store_run_values(c, book, seq, keep_cell, &got), 0);
	store_valcache_counts(&h1, &m1, &b1);
	assert_true(h1 == h0 && m1 == m0 + 1 && b1 > b0);
	cells_seen_release(&got);
	store_cell_book_free(&book);
	book = store_cell_book_new();
	assert_non_null(book);
	assert_int_equal(store_run_values(c, book, seq, keep_cell, &got), 0);
	store_valcache_counts(&h0, &m0, &b0);
	assert_true(h0 == h1 + 1 && m0 == m1 && b0 == b1);
	assert_int_equal(store_run_cells(c, seq, keep_cell, &want), 0);
	assert_values_of_cells(&want, &got);
	assert_string_equal(got.cell[2].reason, "no LSE, \"quoted\"");
	cells_seen_release(&want);
	cells_seen_release(&got);
	/* another store, the same sequence */
	s2 = open_fresh(&c2);
	r = make_result("00000000-0000-4000-8000-000000000002", "h1", "c222222",
	                "2026-01-01T00:00:00Z", 12, 3);
	put_one(c2, r, STORE_CREATED, &seq2);
	aw_result_free(&r);
	assert_int_equal(seq2, seq);
	store_cell_book_free(&book);
	book = store_cell_book_new();
	assert_non_null(book);
	assert_int_equal(store_run_values(c2, book, seq2, keep_cell, &got), 0);
	assert_int_equal(store_run_cells(c2, seq2, keep_cell, &want), 0);
	assert_values_of_cells(&want, &got);
	assert_true(got.cell[0].p50 == 4.4 * 3);
	cells_seen_release(&want);
	cells_seen_release(&got);
	store_valcache_counts(&h0, &m0, &b0);
	store_disconnect(&c2);
	store_close(&s2);
	store_valcache_counts(&h1, &m1, &b1);
	assert_true(b1 < b0);
	store_cell_book_free(&book);
	store_disconnect(&c);
	store_close(&s);
}

static int keep_run(const struct store_run *run, void *cls)
{
	*(struct store_run *)cls = *run; /* (its strings are the statement's: not read) */
	return 1;
}

/* A run's reference series are read on their own (store_run_reference()), never with a
 * listing, which says only whether the run has them; a run without has none; a sequence of no
 * run is -ENOENT; a store's connections share its generation, two stores have two. */
static void test_run_reference(void **state)
{
	struct store_conn *c, *c2;
	struct store *s = open_fresh(&c), *s2;
	struct aw_result *r = make_result("00000000-0000-4000-8000-000000000001", "h1", "c111111",
	                                  "2026-01-01T00:00:00Z", 12, 1);
	struct store_run_filter f = {.limit = 1};
	struct store_run run = {0};
	struct aw_result *back = NULL;
	struct aw_refblob b;
	uint8_t *packed = NULL;
	size_t len = 0;
	char *err = NULL;
	int64_t seq[2];

	(void)state;
	assert_int_equal(aw_result_set_references(r, (1u << AW_REF_COUNT) - 1), 0);
	for (size_t i = 0; i < r->n_cells; i++)
		for (int k = 0; k < AW_REF_COUNT; k++)
			r->cells[i].ref_ns[k] = 1.5 + (double)i + 0.25 * k;
	put_one(c, r, STORE_CREATED, &seq[0]);
	aw_result_free(&r);
	r = make_result("00000000-0000-4000-8000-000000000002", "h1", "c222222",
	                "2026-01-01T01:00:00Z", 12, 1);
	put_one(c, r, STORE_CREATED, &seq[1]);
	aw_result_free(&r);
	assert_int_equal(store_list_runs(c, &f, keep_run, &run), 1);
	assert_int_equal(run.seq, seq[1]);
	assert_false(run.has_reference);
	f.commit = "c111111";
	assert_int_equal(store_list_runs(c, &f, keep_run, &run), 1);
	assert_int_equal(run.seq, seq[0]);
	assert_true(run.has_reference);
	/* packed (schema 11), every kernel of the family beside every cell */
	assert_int_equal(store_run_reference(c, seq[0], &packed, &len), 0);
	assert_int_equal(aw_refblob_open(packed, len, &b), 0);
	assert_int_equal(b.family, AW_REF_ALL);
	assert_int_equal(b.n_cells, 12);
	assert_true(aw_refblob_value(&b, AW_REF_MEMGATHER, 11) == 1.5 + 11 + 0.25 * 4);
	free(packed);
	assert_int_equal(store_get_run(c, "00000000-0000-4000-8000-000000000001", &back), 0);
	assert_true(back->cells[3].ref_ns[AW_REF_MEMCHASE] == 1.5 + 3 + 0.75);
	assert_int_equal(back->references, AW_REF_ALL);
	aw_result_free(&back);
	assert_int_equal(store_run_reference(c, seq[1], &packed, &len), 0);
	assert_null(packed);
	assert_int_equal(store_run_reference(c, seq[1] + 100, &packed, &len), -ENOENT);
	assert_null(packed);
	assert_int_equal(store_connect(s, &c2, &err), 0);
	assert_true(store_conn_generation(c2) == store_conn_generation(c));
	store_disconnect(&c2);
	s2 = open_fresh(&c2);
	assert_true(store_conn_generation(c2) != store_conn_generation(c));
	store_disconnect(&c2);
	store_close(&s2);
	store_disconnect(&c);
	store_close(&s);
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

/* ---- bisections: one per finding, its one job, cancelling ---- */

struct bisect_jobs {
	int n, with_bisect;
	int64_t id;
};

static int on_bisect_job(const struct store_job *j, void *cls)
{
	struct bisect_jobs *b = cls;

	b->n++;
	b->with_bisect += j->bisect != NULL;
	b->id = j->id;
	return 0;
}

static int on_bisect_row(const struct store_bisect *b, void *cls)
{
	char *out = cls;

	snprintf(out + strlen(out), 256 - strlen(out), "%lld:%s:%s ", (long long)b->id, b->state,
	         b->runner);
	return 0;
}

static void test_bisects(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct store_bisect_spec spec = {.project = "linux",
	                                 .platform_hash = "5f1c2e9a0b7d3c41",
	                                 .subject = "mylib",
	                                 .ref = "main",
	                                 .good = "aaaaaaa1",
	                                 .bad = "bbbbbbb2",
	                                 .host = "h1",
	                                 .runner = "h1",
	                                 .cells = "[\"subject=mylib op=inc cpu=0\"]",
	                                 .reason = "verdict",
	                                 .ttl_us = INT64_C(3600000000)};
	struct store_bisect_update running = {.state = "running",
	                                      .steps_done = 1,
	                                      .expected_steps = 6,
	                                      .range_commits = AW_NONE,
	                                      .change = NAN,
	                                      .change_lo = NAN,
	                                      .change_hi = NAN};
	struct store_bisect_filter all = {.limit = 100};
	struct bisect_jobs jobs = {0};
	char listed[256] = "";
	int64_t id, again;
	bool created, covered;

	(void)state;
	assert_int_equal(store_bisect_create(c, &spec, &id, &created), 0);
	assert_true(created);
	/* The same finding again, from its own host or from a twin of its platform (as two
	 * collectors' post-ingest work would): no second bisection, no second job. */
	assert_int_equal(store_bisect_create(c, &spec, &again, &created), 0);
	assert_false(created);
	assert_int_equal(again, id);
	spec.host = spec.runner = "h2";
	assert_int_equal(store_bisect_create(c, &spec, &again, &created), 0);
	assert_false(created);
	assert_int_equal(again, id);
	assert_int_equal(store_bisect_list(c, &all, on_bisect_row, listed), 0);
	assert_string_equal(listed + strcspn(listed, ":"), ":queued:h1 ");
	assert_int_equal(store_job_list(c, 100, on_bisect_job, &jobs), 0);
	assert_int_equal(jobs.n, 1);
	assert_int_equal(jobs.with_bisect, 1);
	/* One runs: its runner claims the job once; the twin has none. */
	memset(&jobs, 0, sizeof(jobs));
	assert_int_equal(store_job_claim(c, "h2", INT64_C(600000000), on_bisect_job, &jobs),
	                 -ENOENT);
	assert_int_equal(store_job_claim(c, "h1", INT64_C(600000000), on_bisect_job, &jobs), 0);
	assert_int_equal(jobs.with_bisect, 1);
	assert_int_equal(store_job_claim(c, "h1", INT64_C(600000000), on_bisect_job, &jobs),
	                 -ENOENT);
	assert_int_equal(
	    store_bisect_covered(c, "linux", spec.platform_hash, spec.good, spec.bad, &covered), 0);
	assert_true(covered);
	/* Progress from its runner only; cancelled, its reports are refused and its job is gone. */
	assert_int_equal(store_bisect_update(c, id, "h2", &running), -ENOENT);
	assert_int_equal(store_bisect_update(c, id, "h1", &running), 0);
	assert_int_equal(store_bisect_cancel(c, id), 0);
	assert_int_equal(store_bisect_update(c, id, "h1", &running), -ECANCELED);
	assert_int_equal(store_bisect_cancel(c, id), 0);
	assert_int_equal(store_job_claim(c, "h1", 0, on_bisect_job, &jobs), -ENOENT);
	listed[0] = '\0';
	assert_int_equal(store_bisect_list(c, &all, on_bisect_row, listed), 0);
	assert_string_equal(listed + strcspn(listed, ":"), ":cancelled:h1 ");
	/* A cancelled finding is not queued again. */
	assert_int_equal(store_bisect_create(c, &spec, &again, &created), 0);
	assert_false(created);
	assert_int_equal(again, id);
	assert_int_equal(store_bisect_cancel(c, id + 1000), -ENOENT);
	store_disconnect(&c);
	store_close(&s);
}

/* ---- change points and verdicts: real values on either backend ---- */

struct cp_seen {
	int n;
	struct store_changepoint cp[8];
	char text[8][8][80]; /* copies of the strings */
};

static const char *keep(char *buf, const char *s)
{
	if (!s)
		return NULL;
	snprintf(buf, 80, "%s", s);
	return buf;
}

static int on_cp(const struct store_changepoint *p, void *cls)
{
	struct cp_seen *s = cls;
	struct store_changepoint *x = &s->cp[s->n];
	char(*t)[80] = s->text[s->n];

	assert_true(s->n < 8);
	*x = *p;
	x->project = keep(t[0], p->project);
	x->host = keep(t[1], p->host);
	x->ref = keep(t[2], p->ref);
	x->cell_key = keep(t[3], p->cell_key);
	x->metric = keep(t[4], p->metric);
	x->commit = keep(t[5], p->commit);
	x->run_id = keep(t[6], p->run_id);
	x->computed_at = keep(t[7], p->computed_at);
	s->n++;
	return 0;
}

static void test_changepoints(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	const struct store_changepoint items[] = {
	    {.cell_key = "op=stadd cpu=0",
	     .metric = "p99",
	     .commit = "c0ffee04",
	     .run_id = "00000000-0000-4000-8000-000000000401",
	     .order_us = INT64_C(1791115200000000),
	     .before = 1.0 / 3.0,
	     .after = 48.700000000000003,
	     .pvalue = 2.5716184144067704e-06,
	     .computed_at = "2026-12-01T09:37:47.583388Z"},
	    {.cell_key = "op=stadd cpu=0",
	     .metric = "p50",
	     .commit = "c0ffee04",
	     .run_id = "00000000-0000-4000-8000-000000000401",
	     .order_us = INT64_C(1791115200000000),
	     .before = 1e-300,
	     .after = 7.064784666666667,
	     .pvalue = 0.00011820551607597637,
	     .computed_at = "2026-12-01T09:37:47.583388Z"},
	    {.cell_key = "op=ldadd cpu=1",
	     .metric = "p50",
	     .commit = NULL, /* a run without a commit */
	     .run_id = "00000000-0000-4000-8000-000000000301",
	     .order_us = INT64_C(1791028800000000),
	     .before = 4.3819593333333335,
	     .after = 1.7976931348623157e308,
	     .pvalue = 0,
	     .computed_at = "2026-12-01T09:37:47.583388Z"},
	};
	/* listed by position, then cell, then metric */
	const int order[] = {2, 1, 0};
	struct cp_seen seen = {0};

	(void)state;
	assert_int_equal(store_changepoints_replace(c, "linux", "grace", "main", items, 3), 0);
	assert_int_equal(store_changepoints_replace(c, "linux", "altra", "main", items, 1), 0);
	assert_int_equal(store_changepoints_list(c, NULL, "grace", "main", NULL, on_cp, &seen), 0);
	assert_int_equal(seen.n, 3);
	for (int i = 0; i < 3; i++) {
		const struct store_changepoint *want = &items[order[i]], *got = &seen.cp[i];

		assert_string_equal(got->project, "linux");
		assert_string_equal(got->host, "grace");
		assert_string_equal(got->ref, "main");
		assert_string_equal(got->cell_key, want->cell_key);
		assert_string_equal(got->metric, want->metric);
		if (want->commit)
			assert_string_equal(got->commit, want->commit);
		else
			assert_null(got->commit);
		assert_string_equal(got->run_id, want->run_id);
		assert_int_equal(got->order_us, want->order_us);
		/* exactly the doubles that went in */
		assert_true(got->before == want->before);
		assert_true(got->after == want->after);
		assert_true(got->pvalue == want->pvalue);
		assert_string_equal(got->computed_at, want->computed_at);
	}
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(
	    store_changepoints_list(c, "linux", "grace", "main", "op=stadd cpu=0", on_cp, &seen),
	    0);
	assert_int_equal(seen.n, 2);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(store_changepoints_list(c, "other", "grace", "main", NULL, on_cp, &seen),
	                 0);
	assert_int_equal(seen.n, 0);
	/* Replacing replaces one series set only. */
	assert_int_equal(store_changepoints_replace(c, "linux", "grace", "main", items + 2, 1), 0);
	assert_int_equal(store_changepoints_list(c, NULL, "grace", "main", NULL, on_cp, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_true(seen.cp[0].after == 1.7976931348623157e308);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(store_changepoints_list(c, NULL, "altra", "main", NULL, on_cp, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_true(seen.cp[0].before == 1.0 / 3.0);
	store_disconnect(&c);
	store_close(&s);
}

struct verdicts_seen {
	int n;
	char text[512];
};

static int on_verdict(const struct store_verdict *v, void *cls)
{
	struct verdicts_seen *s = cls;
	size_t len = strlen(s->text);

	snprintf(s->text + len, sizeof(s->text) - len, "%s/%s/%s/%s/%s/%lld/%s/%s ", v->project,
	         v->commit, v->host, v->baseline_ref, v->status, (long long)v->order_us,
	         v->json ? v->json : "-", v->computed_at ? v->computed_at : "-");
	s->n++;
	return 0;
}

static void test_verdicts(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct store_verdict v = {.project = "linux",
	                          .commit = "c0ffee01",
	                          .host = "grace",
	                          .baseline_ref = "main",
	                          .status = "pass",
	                          .json = "{\"a\":1}",
	                          .computed_at = "2026-01-01T00:00:00Z",
	                          .order_us = 10};
	struct verdicts_seen seen = {0};

	(void)state;
	assert_int_equal(store_verdict_put(c, &v), 0);
	v.host = "altra";
	v.order_us = 10;
	assert_int_equal(store_verdict_put(c, &v), 0);
	v.commit = "c0ffee02";
	v.status = "fail";
	v.json = "{\"b\":\"\\u00e9\"}";
	v.order_us = 20;
	assert_int_equal(store_verdict_put(c, &v), 0);
	/* replaced, not added */
	v.baseline_ref = "release";
	assert_int_equal(store_verdict_put(c, &v), 0);
	assert_int_equal(store_verdict_list(c, NULL, NULL, NULL, 10, on_verdict, &seen), 0);
	assert_int_equal(seen.n, 3);
	assert_string_equal(seen.text,
	                    "linux/c0ffee02/altra/release/fail/20/{\"b\":\"\\u00e9\"}/"
	                    "2026-01-01T00:00:00Z "
	                    "linux/c0ffee01/altra/main/pass/10/{\"a\":1}/2026-01-01T00:00:00Z "
	                    "linux/c0ffee01/grace/main/pass/10/{\"a\":1}/2026-01-01T00:00:00Z ");
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(store_verdict_statuses(c, "linux", "c0ffee01", NULL, 1, on_verdict, &seen),
	                 0);
	assert_string_equal(seen.text, "linux/c0ffee01/altra/main/pass/10/-/- ");
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(store_verdict_list(c, NULL, NULL, "grace", 10, on_verdict, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_int_equal(store_verdict_list(c, NULL, NULL, NULL, 0, on_verdict, &seen), -EINVAL);
	store_disconnect(&c);
	store_close(&s);
}

/* ---- post-ingest tasks ---- */

struct task_seen {
	int n;
	int64_t id, generation;
	int attempts;
	char kind[16], project[32], commit[64], host[32], ref[32];
	bool no_commit;
};

static int on_task(const struct store_task *t, void *cls)
{
	struct task_seen *s = cls;

	s->n++;
	s->id = t->id;
	s->generation = t->generation;
	s->attempts = t->attempts;
	snprintf(s->kind, sizeof(s->kind), "%s", t->kind);
	snprintf(s->project, sizeof(s->project), "%s", t->project);
	snprintf(s->commit, sizeof(s->commit), "%s", t->commit ? t->commit : "");
	s->no_commit = !t->commit;
	snprintf(s->host, sizeof(s->host), "%s", t->host);
	snprintf(s->ref, sizeof(s->ref), "%s", t->ref);
	assert_non_null(t->enqueued_at);
	return 0;
}

static void expect_tasks(struct store_conn *c, int64_t pending, int64_t dead)
{
	int64_t p = -1, d = -1;

	assert_int_equal(store_task_count(c, &p, &d), 0);
	assert_int_equal(p, pending);
	assert_int_equal(d, dead);
}

#define HOUR_US INT64_C(3600000000)

static void test_tasks_of_uploads(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_result *r = make_result("11111111-1111-4111-8111-111111111111", "h1", "abcdef0",
	                                  "2026-01-01T00:00:00Z", 6, 1);
	struct aw_result *good = make_result("33333333-3333-4333-8333-333333333333", "h2",
	                                     "abcdef1", "2026-01-01T00:00:00Z", 6, 1);
	struct aw_result *bad = make_result("44444444-4444-4444-8444-444444444444", "h1", "abcdef1",
	                                    "2026-01-01T00:00:00Z", 6, 1);
	struct task_seen t = {0};
	struct store_put batch[2];
	char *hj[2];

	(void)state;
	expect_tasks(c, 0, 0);
	/* A created run queues its task in the same transaction; a duplicate queues nothing. */
	put_one(c, r, STORE_CREATED, NULL);
	expect_tasks(c, 1, 0);
	put_one(c, r, STORE_DUPLICATE, NULL);
	expect_tasks(c, 1, 0);
	/* Another run of the same commit, host and ref: merged with the waiting task. */
	snprintf(r->run_id, sizeof(r->run_id), "22222222-2222-4222-8222-222222222222");
	put_one(c, r, STORE_CREATED, NULL);
	expect_tasks(c, 1, 0);
	/* A batch that fails queues nothing. */
	free(bad->cells[1].op);
	bad->cells[1].op = NULL;
	make_put(&batch[0], good, &hj[0]);
	make_put(&batch[1], bad, &hj[1]);
	assert_int_equal(store_put_runs(c, batch, 2), -EIO);
	expect_tasks(c, 1, 0);
	assert_int_equal(store_put_runs(c, batch, 1), 0);
	expect_tasks(c, 2, 0);
	/* The oldest first, with the key of its runs. */
	assert_int_equal(store_task_claim(c, "collector-a", HOUR_US, 3, on_task, &t), 0);
	assert_int_equal(t.n, 1);
	assert_string_equal(t.kind, "run");
	assert_string_equal(t.project, "linux");
	assert_string_equal(t.commit, "abcdef0");
	assert_string_equal(t.host, "h1");
	assert_string_equal(t.ref, "main");
	assert_int_equal(t.attempts, 1);
	assert_int_equal(store_task_done(c, t.id, t.generation), 0);
	assert_int_equal(store_task_claim(c, "collector-a", HOUR_US, 3, on_task, &t), 0);
	assert_string_equal(t.commit, "abcdef1");
	assert_string_equal(t.host, "h2");
	assert_int_equal(store_task_done(c, t.id, t.generation), 0);
	assert_int_equal(store_task_done(c, t.id, t.generation), -ENOENT);
	expect_tasks(c, 0, 0);
	assert_int_equal(store_task_claim(c, "collector-a", HOUR_US, 3, on_task, &t), -ENOENT);
	free(hj[0]);
	free(hj[1]);
	aw_result_free(&r);
	aw_result_free(&good);
	aw_result_free(&bad);
	store_disconnect(&c);
	store_close(&s);
}

static void test_task_queue(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct task_seen t = {0}, u = {0};
	int64_t gen;

	(void)state;
	/* "run" tasks go before "trends", even older ones; a task without a commit has none. */
	assert_int_equal(store_task_enqueue(c, "trends", "linux", NULL, "h1", "main"), 0);
	assert_int_equal(store_task_enqueue(c, "run", "linux", "abcdef0", "h1", "main"), 0);
	assert_int_equal(store_task_enqueue(c, "trends", "linux", NULL, "h1", "main"), 0);
	expect_tasks(c, 2, 0);
	assert_int_equal(store_task_claim(c, "a", HOUR_US, 3, on_task, &t), 0);
	assert_string_equal(t.kind, "run");
	gen = t.generation;
	assert_int_equal(store_task_claim(c, "b", HOUR_US, 3, on_task, &u), 0);
	assert_string_equal(u.kind, "trends");
	assert_true(u.no_commit);
	assert_int_equal(store_task_claim(c, "b", HOUR_US, 3, on_task, &u), -ENOENT);
	assert_int_equal(store_task_done(c, u.id, u.generation), 0);

	/* Enqueued again while claimed: another generation; done with the old one leaves it
	 * queued for another pass. */
	assert_int_equal(store_task_enqueue(c, "run", "linux", "abcdef0", "h1", "main"), 0);
	assert_int_equal(store_task_done(c, t.id, gen), 0);
	expect_tasks(c, 1, 0);
	memset(&u, 0, sizeof(u));
	assert_int_equal(store_task_claim(c, "b", HOUR_US, 3, on_task, &u), 0);
	assert_int_equal(u.id, t.id);
	assert_int_equal(u.generation, gen + 1);
	assert_int_equal(u.attempts, 1);
	assert_int_equal(store_task_done(c, u.id, u.generation), 0);
	expect_tasks(c, 0, 0);
	assert_int_equal(store_task_done(c, u.id, u.generation), -ENOENT);
	assert_int_equal(store_task_fail(c, u.id, "gone"), -ENOENT);

	/* A waiting task is merged as it is: same id, same generation. */
	assert_int_equal(store_task_enqueue(c, "run", "linux", "abcdef1", "h1", "main"), 0);
	assert_int_equal(store_task_enqueue(c, "run", "linux", "abcdef1", "h1", "main"), 0);
	expect_tasks(c, 1, 0);
	assert_int_equal(store_task_claim(c, "a", HOUR_US, 3, on_task, &t), 0);
	assert_int_equal(t.generation, 1);

	/* A claim older than the lease is taken over (its collector died). */
	assert_int_equal(store_task_claim(c, "b", HOUR_US, 3, on_task, &u), -ENOENT);
	memset(&u, 0, sizeof(u));
	assert_int_equal(store_task_claim(c, "b", 0, 3, on_task, &u), 0);
	assert_int_equal(u.id, t.id);
	assert_int_equal(u.attempts, 2);
	assert_int_equal(store_task_done(c, u.id, u.generation), 0);

	/* Failures are retried until max_attempts claims were made; then the task is dead. */
	assert_int_equal(store_task_enqueue(c, "run", "linux", "abcdef2", "h1", "main"), 0);
	assert_int_equal(store_task_claim(c, "a", HOUR_US, 2, on_task, &t), 0);
	assert_int_equal(t.attempts, 1);
	assert_int_equal(store_task_fail(c, t.id, "gnuplot died"), 0);
	expect_tasks(c, 1, 0);
	assert_int_equal(store_task_claim(c, "a", HOUR_US, 2, on_task, &t), 0);
	assert_int_equal(t.attempts, 2);
	assert_int_equal(store_task_fail(c, t.id, NULL), 0);
	assert_int_equal(store_task_claim(c, "a", HOUR_US, 2, on_task, &t), -ENOENT);
	expect_tasks(c, 0, 1);
	/* A claim that makes the last attempt is pending until its lease runs out. */
	assert_int_equal(store_task_enqueue(c, "run", "linux", "abcdef3", "h1", "main"), 0);
	assert_int_equal(store_task_claim(c, "a", HOUR_US, 1, on_task, &u), 0);
	expect_tasks(c, 1, 1);
	assert_int_equal(store_task_done(c, u.id, u.generation), 0);
	/* New work for a dead task brings it back with attempts of its own. */
	assert_int_equal(store_task_enqueue(c, "run", "linux", "abcdef2", "h1", "main"), 0);
	expect_tasks(c, 1, 0);
	memset(&u, 0, sizeof(u));
	assert_int_equal(store_task_claim(c, "a", HOUR_US, 2, on_task, &u), 0);
	assert_int_equal(u.id, t.id);
	assert_int_equal(u.attempts, 1);
	store_disconnect(&c);
	store_close(&s);
}

static int fail_task(const struct store_task *t, void *cls)
{
	(void)t;
	(void)cls;
	return -ECANCELED;
}

static void test_task_callback_failure(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct task_seen t = {0};

	(void)state;
	assert_int_equal(store_task_enqueue(c, "run", "linux", "abcdef0", "h1", "main"), 0);
	assert_int_equal(store_task_claim(c, "a", HOUR_US, 3, fail_task, NULL), -ECANCELED);
	assert_int_equal(store_task_claim(c, "a", HOUR_US, 3, on_task, &t), 0);
	assert_int_equal(t.attempts, 1);
	store_disconnect(&c);
	store_close(&s);
}

#define N_RACED 40

struct claimer {
	struct store *s;
	const char *owner;
	pthread_barrier_t *start;
	int n;
	int64_t ids[N_RACED];
	int rc;
};

static int on_raced(const struct store_task *t, void *cls)
{
	struct claimer *k = cls;

	if (k->n < N_RACED)
		k->ids[k->n] = t->id;
	k->n++;
	usleep(500); /* widen the window in which the claim is not committed yet */
	return 0;
}

static void *claim_all(void *arg)
{
	struct claimer *k = arg;
	struct store_conn *c = NULL;
	char *err = NULL;
	int rc;

	k->rc = store_connect(k->s, &c, &err);
	free(err);
	pthread_barrier_wait(k->start);
	if (k->rc)
		return NULL;
	while (!(rc = store_task_claim(c, k->owner, HOUR_US, 3, on_raced, k)))
		;
	if (rc != -ENOENT)
		k->rc = rc;
	store_disconnect(&c);
	return NULL;
}

#define N_ROUNDS 40

struct replacer {
	struct store *s;
	pthread_barrier_t *start;
	const struct store_changepoint *items;
	int rc;
};

static void *replace_once(void *arg)
{
	struct replacer *k = arg;
	struct store_conn *c = NULL;
	char *err = NULL;

	k->rc = store_connect(k->s, &c, &err);
	free(err);
	pthread_barrier_wait(k->start);
	if (!k->rc)
		k->rc = store_changepoints_replace(c, "linux", "grace", "main", k->items, 2);
	store_disconnect(&c);
	return NULL;
}

static int count_cp(const struct store_changepoint *p, void *cls)
{
	(void)p;
	++*(int *)cls;
	return 0;
}

/* Two workers replacing one host's change points at the same moment, round after round: one
 * set stays, never both (on PostgreSQL each DELETE saw none of the other's new rows, and both
 * sets stayed: every change point twice, e2e.collector.gate.postgres). */
static void test_changepoints_concurrent_replace(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct store_changepoint items[2][2];

	(void)state;
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++)
			items[i][j] = (struct store_changepoint){
			    .cell_key = j ? "op=stadd cpu=0" : "op=ldadd cpu=1",
			    .metric = "p50",
			    .commit = "abcdef01",
			    .run_id = "00000000-0000-4000-8000-000000000401",
			    .order_us = INT64_C(1791115200000000),
			    .before = 1,
			    .after = 2 + i,
			    .pvalue = 0.001,
			    .computed_at = "2026-12-05T18:11:56.553457Z"};
	for (int round = 0; round < N_ROUNDS; round++) {
		struct replacer k[2];
		pthread_barrier_t start;
		pthread_t tid[2];
		int n = 0;

		pthread_barrier_init(&start, NULL, 2);
		for (int i = 0; i < 2; i++) {
			k[i] = (struct replacer){.s = s, .start = &start, .items = items[i]};
			assert_int_equal(pthread_create(&tid[i], NULL, replace_once, &k[i]), 0);
		}
		for (int i = 0; i < 2; i++)
			pthread_join(tid[i], NULL);
		pthread_barrier_destroy(&start);
		assert_int_equal(k[0].rc, 0);
		assert_int_equal(k[1].rc, 0);
		assert_int_equal(
		    store_changepoints_list(c, NULL, "grace", "main", NULL, count_cp, &n), 0);
		assert_int_equal(n, 2);
	}
	store_disconnect(&c);
	store_close(&s);
}

static void test_task_concurrent_claims(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct claimer k[2];
	pthread_barrier_t start;
	pthread_t tid[2];
	char seen[N_RACED + 1] = {0};

	(void)state;
	for (int i = 0; i < N_RACED; i++) {
		char commit[16];

		snprintf(commit, sizeof(commit), "abcdef%02d", i);
		assert_int_equal(store_task_enqueue(c, "run", "linux", commit, "h1", "main"), 0);
	}
	pthread_barrier_init(&start, NULL, 2);
	for (int i = 0; i < 2; i++) {
		memset(&k[i], 0, sizeof(k[i]));
		k[i].s = s;
		k[i].owner = i ? "collector-b" : "collector-a";
		k[i].start = &start;
		assert_int_equal(pthread_create(&tid[i], NULL, claim_all, &k[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&start);
	/* Every task claimed once, by one of the two. */
	assert_int_equal(k[0].rc, 0);
	assert_int_equal(k[1].rc, 0);
	assert_int_equal(k[0].n + k[1].n, N_RACED);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < k[i].n; j++) {
			int64_t id = k[i].ids[j];

			assert_true(id >= 1 && id <= N_RACED);
			assert_int_equal(seen[id], 0);
			seen[id] = 1;
		}
	expect_tasks(c, N_RACED, 0);
	store_disconnect(&c);
	store_close(&s);
}

/* A statement whose outcome is read late (PostgreSQL pipelines them) still fails its
 * transaction, which leaves nothing behind and the connection usable. */
static void test_late_failures_roll_back(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct store_changepoint good = {.cell_key = "op=stadd cpu=0",
	                                 .metric = "p50",
	                                 .commit = "c0ffee04",
	                                 .run_id = "00000000-0000-4000-8000-000000000401",
	                                 .order_us = 1,
	                                 .before = 1,
	                                 .after = 2,
	                                 .pvalue = 0.5,
	                                 .computed_at = "2026-01-01T00:00:00Z"};
	struct store_changepoint two[2] = {good, good};
	const char *hosts[] = {"h1", NULL};
	struct store_job_spec spec = {.project = "linux",
	                              .commit = "abcdef0",
	                              .ref = "main",
	                              .hosts = hosts,
	                              .n_hosts = 2,
	                              .ttl_us = HOUR_US};
	struct cp_seen seen = {0};
	int64_t id = 0, got = 0;

	(void)state;
	assert_int_equal(store_changepoints_replace(c, "linux", "grace", "main", &good, 1), 0);
	two[1].cell_key = NULL; /* NOT NULL */
	assert_int_equal(store_changepoints_replace(c, "linux", "grace", "main", two, 2), -EIO);
	assert_int_equal(store_changepoints_list(c, NULL, "grace", "main", NULL, on_cp, &seen), 0);
	assert_int_equal(seen.n, 1); /* the old set, not cleared */
	assert_int_equal(store_job_create(c, &spec, &id), -EIO);
	assert_int_equal(store_job_list(c, 10, on_job, &got), 0);
	assert_int_equal(got, 0); /* no job */
	spec.n_hosts = 1;
	assert_int_equal(store_job_create(c, &spec, &id), 0);
	assert_int_equal(store_task_enqueue(c, "run", "linux", "abcdef0", NULL, "main"), -EIO);
	expect_tasks(c, 0, 0);
	assert_int_equal(store_ping(c), 0);
	store_disconnect(&c);
	store_close(&s);
}

/* ---- charts ---- */

struct chart_seen {
	int n;
	char path[128], type[32], hash[80], at[AW_TIME_LEN];
	unsigned char data[64];
	size_t len;
	bool has_data;
};

static int on_chart(const struct store_chart *ch, void *cls)
{
	struct chart_seen *s = cls;

	s->n++;
	snprintf(s->path, sizeof(s->path), "%s", ch->path);
	snprintf(s->type, sizeof(s->type), "%s", ch->content_type);
	snprintf(s->hash, sizeof(s->hash), "%s", ch->hash);
	snprintf(s->at, sizeof(s->at), "%s", ch->updated_at);
	s->len = ch->len;
	s->has_data = ch->data != NULL;
	if (ch->data) {
		assert_true(ch->len <= sizeof(s->data));
		memcpy(s->data, ch->data, ch->len);
	}
	return 0;
}

static void test_charts(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	const char *path = "charts/commits/abcdef0/h1/compare-main.svg";
	static const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
	                                    0,    0,   0,   0,   0xff, 0xfe, '\\', 'x'};
	struct store_chart ch = {.path = path,
	                         .content_type = "image/svg+xml",
	                         .hash = "aa",
	                         .data = "<svg/>",
	                         .len = 6};
	struct chart_seen seen = {0};
	char first_at[AW_TIME_LEN];

	(void)state;
	assert_int_equal(store_chart_get(c, path, on_chart, &seen), -ENOENT);
	assert_int_equal(store_chart_stat(c, path, on_chart, &seen), -ENOENT);
	assert_int_equal(seen.n, 0);
	assert_int_equal(store_chart_put(c, &ch), 0);
	assert_int_equal(store_chart_get(c, path, on_chart, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_string_equal(seen.path, path);
	assert_string_equal(seen.type, "image/svg+xml");
	assert_string_equal(seen.hash, "aa");
	assert_int_equal(seen.len, 6);
	assert_memory_equal(seen.data, "<svg/>", 6);
	assert_int_equal(strlen(seen.at), strlen("2026-01-01T00:00:00.000000Z"));
	snprintf(first_at, sizeof(first_at), "%s", seen.at);
	/* Replaced whole: binary data (NUL bytes, a backslash) comes back as it went in. */
	ch.path = path;
	ch.content_type = "image/png";
	ch.hash = "bb";
	ch.data = png;
	ch.len = sizeof(png);
	usleep(2000);
	assert_int_equal(store_chart_put(c, &ch), 0);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(store_chart_get(c, path, on_chart, &seen), 0);
	assert_string_equal(seen.type, "image/png");
	assert_string_equal(seen.hash, "bb");
	assert_int_equal(seen.len, sizeof(png));
	assert_memory_equal(seen.data, png, sizeof(png));
	assert_true(strcmp(seen.at, first_at) > 0);
	/* Its size without its data. */
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(store_chart_stat(c, path, on_chart, &seen), 0);
	assert_false(seen.has_data);
	assert_int_equal(seen.len, sizeof(png));
	assert_string_equal(seen.hash, "bb");
	/* An empty chart is data too. */
	ch.path = "charts/empty.json";
	ch.content_type = "application/json";
	ch.data = NULL;
	ch.len = 0;
	assert_int_equal(store_chart_put(c, &ch), 0);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(store_chart_get(c, "charts/empty.json", on_chart, &seen), 0);
	assert_int_equal(seen.len, 0);
	assert_true(seen.has_data);
	assert_int_equal(store_chart_get(c, "charts/none.svg", on_chart, &seen), -ENOENT);
	store_disconnect(&c);
	store_close(&s);
}

/* ---- databases made by earlier releases (tests/fixtures/db/): release-v2, the release before
 * schema 3, release-v6, the one before runs stored their commit order, and release-v10, the
 * one before runs stored their reference series packed ---- */

static void fixture_path(char *out, size_t len, const char *name)
{
	const char *src = getenv("AW_SOURCE_DIR");

	snprintf(out, len, "%s/tests/fixtures/db/%s", src ? src : ".", name);
}

/* The fixture database `name` ("release-v2") of this run's backend, as that release left it. */
static struct store *open_release(const char *name, struct store_conn **c)
{
	struct store *s = NULL;
	char path[512], u[256], *err = NULL;

	if (!pg_host()) {
		char copy[128], file[64], *data = NULL;
		size_t len;

		/* a copy: migrating changes the file */
		snprintf(file, sizeof(file), "%s.sqlite", name);
		fixture_path(path, sizeof(path), file);
		snprintf(copy, sizeof(copy), "%s/%s.db", dir, name);
		assert_int_equal(aw_read_file(path, (size_t)64 << 20, &data, &len, &err), 0);
		assert_int_equal(aw_write_file_atomic(copy, data, len, &err), 0);
		free(data);
		snprintf(u, sizeof(u), "sqlite:%s", copy);
	} else {
		char db[64], sql[96], cmd[1024], file[64];
		static int serial;

		snprintf(file, sizeof(file), "%s.pg.sql", name);
		fixture_path(path, sizeof(path), file);
		snprintf(db, sizeof(db), "aw_release_%d_%d", (int)getpid(), ++serial);
		snprintf(sql, sizeof(sql), "CREATE DATABASE %s", db);
		assert_int_equal(pg_admin(sql), 0);
		snprintf(cmd, sizeof(cmd),
		         "'%s' -X -q -v ON_ERROR_STOP=1 -h '%s' -p '%s' -U postgres -d %s -f '%s' "
		         ">/dev/null",
		         getenv("AW_TEST_PSQL") ? getenv("AW_TEST_PSQL") : "psql", pg_host(),
		         getenv("AW_TEST_PG_PORT"), db, path);
		assert_int_equal(system(cmd), 0);
		pg_url(u, sizeof(u), db);
	}
	assert_int_equal(store_open(u, NULL, &s, &err), 0);
	assert_int_equal(store_connect(s, c, &err), 0);
	assert_null(err);
	return s;
}

/* What the release stored, read with its schema's names ("runs", "rows"). */
static json_t *release_facts(const char *name)
{
	char path[512], file[64];
	json_error_t e;
	json_t *facts;

	snprintf(file, sizeof(file), "%s.%s.json", name, pg_host() ? "pg" : "sqlite");
	fixture_path(path, sizeof(path), file);
	facts = json_load_file(path, 0, &e);
	if (!facts)
		fail_msg("%s:%d: %s", path, e.line, e.text);
	return facts;
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* Every field of `want` has its value in `got` (numbers as numbers: 5 and 5.0 are equal), and
 * `got` has no other. Takes `got`. */
static void expect_row(const json_t *want, json_t *got, const char *what)
{
	const char *key;
	json_t *w;
	bool same = json_object_size(want) == json_object_size(got);

	json_object_foreach ((json_t *)want, key, w) {
		json_t *g = json_object_get(got, key);

		if (json_is_number(w))
			same = same && json_is_number(g) &&
			       json_number_value(w) == json_number_value(g);
		else
			same = same && json_equal(w, g);
	}
	if (!same) {
		char *a = json_dumps(want, JSON_SORT_KEYS), *b = json_dumps(got, JSON_SORT_KEYS);

		fail_msg("%s: want %s, got %s", what, a, b);
	}
	json_decref(got);
}

struct rows_seen {
	json_t *rows; /* an array */
};

static int on_run_row(const struct store_run *r, void *cls)
{
	json_array_append_new(((struct rows_seen *)cls)->rows,
	                      json_pack("{s:I, s:s}", "id", (json_int_t)r->seq, "uuid", r->run_id));
	return 0;
}

static int on_token_row(const struct store_token *t, void *cls)
{
	json_array_append_new(((struct rows_seen *)cls)->rows,
	                      json_pack("{s:I, s:s, s:o, s:s, s:s, s:o, s:o}", "id",
	                                (json_int_t)t->id, "role", store_role_name(t->role), "host",
	                                str_or_null(t->host), "hash", t->hash, "created_at",
	                                t->created_at, "revoked_at", str_or_null(t->revoked_at),
	                                "last_used_at", str_or_null(t->last_used_at)));
	return 0;
}

static int on_job_row(const struct store_job *j, void *cls)
{
	json_array_append_new(((struct rows_seen *)cls)->rows,
	                      json_pack("{s:I, s:s, s:s, s:s, s:o, s:i, s:s, s:s}", "id",
	                                (json_int_t)j->id, "project", j->project, "commit_sha",
	                                j->commit, "ref", j->ref, "subject",
	                                str_or_null(j->subject), "all_hosts", j->all_hosts,
	                                "created_at", j->created_at, "expires_at", j->expires_at));
	return 0;
}

static int on_job_host_row(const struct store_job_host *h, void *cls)
{
	json_array_append_new(((struct rows_seen *)cls)->rows,
	                      json_pack("{s:s, s:s, s:o, s:o, s:o, s:o}", "host", h->host, "state",
	                                h->state, "run_id", str_or_null(h->run_id), "message",
	                                str_or_null(h->message), "claimed_at",
	                                str_or_null(h->claimed_at), "updated_at",
	                                str_or_null(h->updated_at)));
	return 0;
}

static int on_verdict_row(const struct store_verdict *v, void *cls)
{
	char sha[AW_SHA256_HEX_LEN + 1];

	assert_int_equal(aw_sha256_hex(v->json, strlen(v->json), sha), 0);
	json_array_append_new(((struct rows_seen *)cls)->rows,
	                      json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:s}", "project",
	                                v->project, "commit_sha", v->commit, "host", v->host,
	                                "baseline_ref", v->baseline_ref, "status", v->status,
	                                "doc_sha256", sha, "order_us", (json_int_t)v->order_us,
	                                "computed_at", v->computed_at));
	return 0;
}

static int on_cp_row(const struct store_changepoint *p, void *cls)
{
	json_array_append_new(
	    ((struct rows_seen *)cls)->rows,
	    json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:s, s:I, s:f, s:f, s:f, s:s}", "project",
	              p->project, "host", p->host, "ref", p->ref, "cell_key", p->cell_key, "metric",
	              p->metric, "commit_sha", str_or_null(p->commit), "run_uuid", p->run_id,
	              "order_us", (json_int_t)p->order_us, "before", p->before, "after", p->after,
	              "pvalue", p->pvalue, "computed_at", p->computed_at));
	return 0;
}

/* The rows of `got` are those of `want`, in order. Takes `got`. */
static void expect_rows(const json_t *want, json_t *got, const char *what)
{
	size_t i;
	json_t *w;

	if (json_array_size(want) != json_array_size(got))
		fail_msg("%s: want %zu rows, got %zu", what, json_array_size(want),
		         json_array_size(got));
	json_array_foreach (want, i, w) {
		expect_row(w, json_incref(json_array_get(got, i)), what);
	}
	json_decref(got);
}

/* Migrates the fixture `name`, made at schema version `from`, and finds every row it held under
 * the new names. Returns the facts (caller decrefs) with the store and its connection open. */
static json_t *migrate_release(const char *name, int from_version, struct store **sp,
                               struct store_conn **cp)
{
	struct store_conn *c;
	struct store *s = open_release(name, &c);
	json_t *facts = release_facts(name), *rows = json_object_get(facts, "rows");
	json_t *doc, *want, *w;
	struct store_run_filter f = {.limit = 1000};
	struct rows_seen seen;
	const char *run_id;
	struct aw_result *r = NULL;
	char *err = NULL;
	int from, to;
	size_t i;

	assert_non_null(rows);
	assert_int_equal(store_migrate(c, &from, &to, &err), 0);
	assert_null(err);
	assert_int_equal(from, from_version);
	assert_int_equal(to, store_schema_version()); /* 3 and every later one */

	/* Every run rebuilt as that release served it, under the same seq. */
	json_object_foreach (json_object_get(facts, "runs"), run_id, doc) {
		json_t *back;

		assert_int_equal(store_get_run(c, run_id, &r), 0);
		back = aw_result_to_json(r);
		if (!json_equal(back, doc)) {
			char *a = json_dumps(doc, JSON_SORT_KEYS),
			     *b = json_dumps(back, JSON_SORT_KEYS);

			fail_msg("run %s: want %s, got %s", run_id, a, b);
		}
		json_decref(back);
		aw_result_free(&r);
	}
	assert_true(json_object_size(json_object_get(facts, "runs")) >= 12);
	seen.rows = json_array();
	assert_int_equal(store_list_runs(c, &f, on_run_row, &seen), 0);
	want = json_array();
	for (i = json_array_size(json_object_get(rows, "runs")); i-- > 0;) /* newest first */
		json_array_append(want, json_array_get(json_object_get(rows, "runs"), i));
	expect_rows(want, seen.rows, "runs");
	json_decref(want);

	seen.rows = json_array();
	assert_int_equal(store_token_list(c, on_token_row, &seen), 0);
	expect_rows(json_object_get(rows, "tokens"), seen.rows, "tokens");

	/* Each job, and its hosts: those that claimed it, and "pending" targets. */
	json_array_foreach (json_object_get(rows, "jobs"), i, w) {
		int64_t id = json_integer_value(json_object_get(w, "id"));
		json_t *hosts = json_array(), *t;
		size_t k;

		seen.rows = json_array();
		assert_int_equal(store_job_get(c, id, on_job_row, NULL, &seen), 0);
		want = json_pack("[O]", w);
		expect_rows(want, seen.rows, "job");
		json_decref(want);
		json_array_foreach (json_object_get(rows, "job_targets"), k, t) {
			if (json_integer_value(json_object_get(t, "job_id")) == id)
				json_array_append_new(
				    hosts,
				    json_pack("{s:O, s:s, s:n, s:n, s:n, s:n}", "host",
				              json_object_get(t, "host"), "state", "pending",
				              "run_id", "message", "claimed_at", "updated_at"));
		}
		json_array_foreach (json_object_get(rows, "job_hosts"), k, t) {
			size_t m;
			json_t *p, *h = json_deep_copy(t);

			if (json_integer_value(json_object_get(t, "job_id")) != id) {
				json_decref(h);
				continue;
			}
			json_object_del(h, "job_id");
			json_array_foreach (hosts, m, p) {
				if (json_equal(json_object_get(p, "host"),
				               json_object_get(h, "host"))) {
					json_array_remove(hosts, m);
					break;
				}
			}
			json_array_append_new(hosts, h);
		}
		seen.rows = json_array();
		assert_int_equal(store_job_get(c, id, NULL, on_job_host_row, &seen), 0);
		/* by host, as the store lists them */
		for (size_t a = 0; a < json_array_size(hosts); a++)
			for (size_t b = a + 1; b < json_array_size(hosts); b++) {
				json_t *x = json_array_get(hosts, a), *y = json_array_get(hosts, b);

				if (strcmp(json_string_value(json_object_get(x, "host")),
				           json_string_value(json_object_get(y, "host"))) > 0) {
					json_incref(x);
					json_array_set(hosts, a, y);
					json_array_set_new(hosts, b, x);
				}
			}
		expect_rows(hosts, seen.rows, "job hosts");
		json_decref(hosts);
	}
	assert_true(json_array_size(json_object_get(rows, "job_hosts")) >= 2);

	seen.rows = json_array();
	assert_int_equal(store_verdict_list(c, NULL, NULL, NULL, 10000, on_verdict_row, &seen), 0);
	expect_rows(json_object_get(rows, "verdicts"), seen.rows, "verdicts");
	assert_true(json_array_size(json_object_get(rows, "verdicts")) >= 12);

	seen.rows = json_array();
	for (const char *const *host = (const char *const[]){"altra", "grace", NULL}; *host; host++)
		assert_int_equal(
		    store_changepoints_list(c, NULL, *host, "main", NULL, on_cp_row, &seen), 0);
	expect_rows(json_object_get(rows, "change_points"), seen.rows, "change points");
	assert_true(json_array_size(json_object_get(rows, "change_points")) >= 2);

	/* The upgraded database goes on: a new run after the old ones, with its task. */
	{
		struct aw_result *n = make_result("99999999-9999-4999-8999-999999999999", "grace",
		                                  "c0ffee07", "2026-10-07T12:00:00Z", 8, 1.6);
		json_t *last = json_array_get(json_object_get(rows, "runs"),
		                              json_array_size(json_object_get(rows, "runs")) - 1);
		int64_t seq, pending;

		put_one(c, n, STORE_CREATED, &seq);
		assert_true(seq > json_integer_value(json_object_get(last, "id")));
		assert_int_equal(store_get_run(c, n->run_id, &r), 0);
		assert_int_equal(r->n_cells, 8);
		assert_int_equal(store_task_count(c, &pending, NULL), 0);
		assert_int_equal(pending, 1);
		aw_result_free(&r);
		aw_result_free(&n);
	}
	assert_int_equal(store_migrate(c, &from, &to, &err), 0);
	assert_int_equal(from, store_schema_version());
	*sp = s;
	*cp = c;
	return facts;
}

static void test_migrate_release(void **state)
{
	struct store_conn *c;
	struct store *s;

	(void)state;
	json_decref(migrate_release("release-v2", 2, &s, &c));
	store_disconnect(&c);
	store_close(&s);
}

struct order_rows {
	json_t *got;  /* run_id -> order_us */
	bool history; /* rows in commit order, not by seq */
	int n;
	int64_t last_order, last_seq;
};

static int on_order_row(const struct store_run *r, void *cls)
{
	struct order_rows *o = cls;

	json_object_set_new(o->got, r->run_id, json_integer(r->order_us));
	/* newest first: (order_us, seq) descending */
	if (o->history && o->n++)
		assert_true(r->order_us < o->last_order ||
		            (r->order_us == o->last_order && r->seq < o->last_seq));
	o->last_order = r->order_us;
	o->last_seq = r->seq;
	return 0;
}

/* Every run of the release before runs stored their order gets the order that release served
 * (order_time: its commit's commit_time, else its commit's earliest start, as a later run left
 * it), and each ref's history comes in that order. */
static void test_migrate_release_v6(void **state)
{
	struct store_conn *c;
	struct store *s;
	json_t *facts, *listing, *run;
	struct order_rows o = {json_object(), false, 0, 0, 0};
	struct store_run_filter f = {.limit = 1000};
	size_t i;

	(void)state;
	facts = migrate_release("release-v6", 6, &s, &c);
	listing = json_object_get(facts, "listing");
	assert_true(json_array_size(listing) >= 17);
	assert_int_equal(store_list_runs(c, &f, on_order_row, &o), 0);
	/* and the one migrate_release() added */
	assert_int_equal(json_object_size(o.got), json_array_size(listing) + 1);
	o.history = true;
	json_array_foreach (listing, i, run) {
		const char *id = json_string_value(json_object_get(run, "run_id"));
		const char *when = json_string_value(json_object_get(run, "order_time"));
		int64_t us;

		assert_int_equal(aw_time_parse(when, &us), 0);
		if (json_integer_value(json_object_get(o.got, id)) != us)
			fail_msg("run %s: order %" PRId64 " after the migration, %s before", id,
			         (int64_t)json_integer_value(json_object_get(o.got, id)), when);
	}
	/* the history of each host and ref in that order (the check is in on_order_row) */
	for (const char *const *host = (const char *const[]){"altra", "grace", NULL}; *host; host++)
		for (const char *const *ref = (const char *const[]){"main", "pr/7", NULL}; *ref;
		     ref++) {
			o.n = 0;
			assert_int_equal(store_ref_history(c, NULL, *host, *ref, INT64_MAX,
			                                   INT64_MAX, 1000, on_order_row, &o),
			                 0);
		}
	json_decref(o.got);
	json_decref(facts);
	store_disconnect(&c);
	store_close(&s);
}

/* The series of a served run (its "references", or an older "reference" alone) and the packed
 * ones the store reads for it: the same family, kernel for kernel and value for value. */
static void expect_packed(const json_t *doc, const uint8_t *packed, size_t len, const char *id)
{
	const json_t *family = json_object_get(doc, "references"), *one, *v;
	struct aw_refblob b;
	size_t i, n = 0;
	unsigned mask = 0;

	if (aw_refblob_open(packed, len, &b))
		fail_msg("run %s: its reference series read back packed do not open", id);
	if (!family)
		family = json_pack("[O]", json_object_get(doc, "reference"));
	else
		json_incref((json_t *)family);
	json_array_foreach (family, i, one) {
		int k = aw_ref_lookup(json_string_value(json_object_get(one, "kernel")));
		size_t c;

		assert_true(k >= 0);
		mask |= 1u << k;
		json_array_foreach (json_object_get(one, "values"), c, v) {
			double got = aw_refblob_value(&b, (enum aw_ref)k, c);

			if (json_is_null(v) ? !isnan(got) : got != json_number_value(v))
				fail_msg("run %s: %s beside cell %zu: %g packed", id,
				         aw_ref_name((enum aw_ref)k), c, got);
			n++;
		}
	}
	assert_int_equal(b.family, json_object_get(doc, "references") ? mask : 0);
	assert_int_equal(b.carried, mask);
	assert_int_equal(n, b.n_cells * json_array_size(family));
	json_decref((json_t *)family);
}

/* A database of the release before reference series were stored packed (schema 10, JSON text):
 * every run's series read back packed as it served them, for the analysis and the charts; a
 * run stored after the migration is packed. */
static void test_migrate_release_v10(void **state)
{
	struct store_conn *c;
	struct store *s;
	json_t *facts, *row;
	size_t i, with = 0, alone = 0;

	(void)state;
	facts = migrate_release("release-v10", 10, &s, &c);
	json_array_foreach (json_object_get(json_object_get(facts, "rows"), "runs"), i, row) {
		const char *id = json_string_value(json_object_get(row, "uuid"));
		const json_t *doc = json_object_get(json_object_get(facts, "runs"), id);
		uint8_t *packed = NULL;
		size_t len = 0;

		assert_non_null(doc);
		assert_int_equal(store_run_reference(c,
		                                     json_integer_value(json_object_get(row, "id")),
		                                     &packed, &len),
		                 0);
		if (!json_object_get(doc, "references") && !json_object_get(doc, "reference")) {
			assert_null(packed);
			continue;
		}
		expect_packed(doc, packed, len, id);
		with++;
		alone += !json_object_get(doc, "references");
		free(packed);
	}
	assert_true(with >= 12);
	assert_true(alone >= 2 && alone < with);
	json_decref(facts);
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
	opt.sqlite_cache = 300u << 10;
	assert_int_equal(store_open(url, &opt, &s, &err), 0);
	assert_int_equal(store_acquire(s, &a), 0);
	assert_int_equal(store_acquire(s, &b), 0);
	assert_ptr_not_equal(a, b);
	if (store_kind(s) == STORE_SQLITE) { /* each connection's page cache is bounded */
		struct store_stmt *st = NULL;

		assert_int_equal(b->drv->prepare(b, "PRAGMA cache_size", "cache size", false, &st),
		                 0);
		assert_int_equal(b->drv->step(st), STORE_ROW);
		assert_int_equal(b->drv->col_i64(st, 0), -300); /* KiB */
		b->drv->finalize(st);
	}
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
	    cmocka_unit_test(test_run_values),
	    cmocka_unit_test(test_run_values_kept),
	    cmocka_unit_test(test_run_reference),
	    cmocka_unit_test(test_tokens),
	    cmocka_unit_test(test_jobs),
	    cmocka_unit_test(test_bisects),
	    cmocka_unit_test(test_pool),
	    cmocka_unit_test(test_changepoints),
	    cmocka_unit_test(test_verdicts),
	    cmocka_unit_test(test_tasks_of_uploads),
	    cmocka_unit_test(test_task_queue),
	    cmocka_unit_test(test_task_callback_failure),
	    cmocka_unit_test(test_task_concurrent_claims),
	    cmocka_unit_test(test_changepoints_concurrent_replace),
	    cmocka_unit_test(test_late_failures_roll_back),
	    cmocka_unit_test(test_charts),
	    cmocka_unit_test(test_migrate_release),
	    cmocka_unit_test(test_migrate_release_v6),
	    cmocka_unit_test(test_migrate_release_v10),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
