/* The store's durable post-ingest queue and its charts (store.h), over a real SQLite store: a
 * stored run enqueues its task in the same transaction, equal tasks merge, a claimed task
 * enqueued again runs once more, failures use up attempts, an expired claim is taken over,
 * "run" tasks come before "trends", and chart files come back byte for byte. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "collector_fixture.h"

#define SHA1 "badc0de1badc0de1badc0de1badc0de1badc0de1"
#define SHA2 "c0ffee07c0ffee07c0ffee07c0ffee07c0ffee07"

static struct aw_result *run_of(const char *run_id, const char *host, const char *commit)
{
	struct aw_result *r = aw_result_new();
	struct aw_cell *cell;

	assert_non_null(r);
	snprintf(r->run_id, sizeof(r->run_id), "%s", run_id);
	assert_int_equal(aw_set_str(&r->project, "linux"), 0);
	assert_int_equal(aw_set_str(&r->commit, commit), 0);
	assert_int_equal(aw_set_str(&r->ref, "main"), 0);
	snprintf(r->started_at, sizeof(r->started_at), "2026-11-29T10:00:00Z");
	snprintf(r->finished_at, sizeof(r->finished_at), "2026-11-29T10:01:00Z");
	r->trigger = AW_TRIGGER_CI;
	r->host = json_pack("{s:s, s:s, s:s}", "name", host, "arch", "aarch64", "cpu_model", "V2");
	assert_int_equal(aw_set_str(&r->matrix_name, "default"), 0);
	assert_int_equal(aw_set_str(&r->matrix_hash, "9a8b7c6d"), 0);
	r->matrix_version = 1;
	cell = aw_result_add_cell(r);
	assert_int_equal(aw_set_str(&cell->op, "llsc"), 0);
	cell->cpu = 0;
	cell->n = 1;
	cell->p50 = cell->min = cell->max = cell->p95 = cell->p99 = 5.0;
	assert_int_equal(aw_cell_make_key(cell), 0);
	return r;
}

static void put(struct store_conn *c, const char *run_id, const char *host, const char *commit)
{
	struct aw_result *r = run_of(run_id, host, commit);

	put_one(c, r, STORE_CREATED, NULL);
	aw_result_free(&r);
}

struct claimed {
	int64_t id, generation;
	int attempts;
	char kind[16], project[32], commit[80], host[32], ref[32];
	bool no_commit;
};

static int on_task(const struct store_task *t, void *cls)
{
	struct claimed *k = cls;

	k->id = t->id;
	k->generation = t->generation;
	k->attempts = t->attempts;
	snprintf(k->kind, sizeof(k->kind), "%s", t->kind);
	snprintf(k->project, sizeof(k->project), "%s", t->project);
	snprintf(k->commit, sizeof(k->commit), "%s", t->commit ? t->commit : "");
	k->no_commit = !t->commit;
	snprintf(k->host, sizeof(k->host), "%s", t->host);
	snprintf(k->ref, sizeof(k->ref), "%s", t->ref);
	assert_non_null(t->enqueued_at);
	return 0;
}

static void counts(struct store_conn *c, int64_t want_pending, int64_t want_dead)
{
	int64_t pending = -1, dead = -1;

	assert_int_equal(store_task_count(c, &pending, &dead), 0);
	assert_int_equal(pending, want_pending);
	assert_int_equal(dead, want_dead);
}

#define LEASE (60 * 1000000LL)

static void test_upload_enqueues_and_merges(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct claimed k = {0};

	(void)state;
	counts(c, 0, 0);
	assert_int_equal(store_task_claim(c, "a", LEASE, 5, on_task, &k), -ENOENT);
	put(c, "11111111-1111-4111-8111-111111111111", "grace", SHA1);
	counts(c, 1, 0);
	/* a second run of the same commit on the same host while the task waits: merged */
	put(c, "22222222-2222-4222-8222-222222222222", "grace", SHA1);
	counts(c, 1, 0);
	put(c, "33333333-3333-4333-8333-333333333333", "neoverse", SHA1);
	counts(c, 2, 0);
	/* the same document again stores nothing and queues nothing */
	{
		struct aw_result *r =
		    run_of("33333333-3333-4333-8333-333333333333", "neoverse", SHA1);

		put_one(c, r, STORE_DUPLICATE, NULL);
		aw_result_free(&r);
	}
	counts(c, 2, 0);

	assert_int_equal(store_task_claim(c, "a", LEASE, 5, on_task, &k), 0);
	assert_string_equal(k.kind, "run");
	assert_string_equal(k.project, "linux");
	assert_string_equal(k.commit, SHA1);
	assert_string_equal(k.host, "grace");
	assert_string_equal(k.ref, "main");
	assert_int_equal(k.attempts, 1);
	assert_int_equal(store_task_done(c, k.id, k.generation), 0);
	assert_int_equal(store_task_done(c, k.id, k.generation), -ENOENT);
	counts(c, 1, 0);
	assert_int_equal(store_task_claim(c, "a", LEASE, 5, on_task, &k), 0);
	assert_string_equal(k.host, "neoverse");
	/* claimed: nobody else gets it */
	assert_int_equal(store_task_claim(c, "b", LEASE, 5, on_task, &k), -ENOENT);
	counts(c, 1, 0);
	assert_int_equal(store_task_done(c, k.id, k.generation), 0);
	counts(c, 0, 0);
	store_disconnect(&c);
	store_close(&s);
}

static void test_enqueued_while_claimed_runs_again(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct claimed k = {0}, again = {0};

	(void)state;
	put(c, "11111111-1111-4111-8111-111111111111", "grace", SHA1);
	assert_int_equal(store_task_claim(c, "a", LEASE, 5, on_task, &k), 0);
	/* new data arrives while the worker draws the old */
	put(c, "22222222-2222-4222-8222-222222222222", "grace", SHA1);
	counts(c, 1, 0);
	assert_int_equal(store_task_claim(c, "b", LEASE, 5, on_task, &again), -ENOENT);
	assert_int_equal(store_task_done(c, k.id, k.generation), 0);
	counts(c, 1, 0); /* still queued, for the new run */
	assert_int_equal(store_task_claim(c, "b", LEASE, 5, on_task, &again), 0);
	assert_int_equal(again.id, k.id);
	assert_true(again.generation > k.generation);
	assert_int_equal(again.attempts, 1);
	assert_int_equal(store_task_done(c, again.id, again.generation), 0);
	counts(c, 0, 0);
	store_disconnect(&c);
	store_close(&s);
}

static void test_failures_and_takeover(void **state)
{
	/* the claims of the takeover are made at given times, not the clock's */
	const int64_t at = INT64_C(1795000000000000), lease = 200000; /* 2026-11-18, 200 ms */
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct claimed k = {0};

	(void)state;
	put(c, "11111111-1111-4111-8111-111111111111", "grace", SHA1);
	assert_int_equal(store_task_claim(c, "a", LEASE, 3, on_task, &k), 0);
	assert_int_equal(k.attempts, 1);
	assert_int_equal(store_task_fail(c, k.id, "gnuplot died"), 0);
	counts(c, 1, 0);
	assert_int_equal(store_task_claim_at(c, "b", at, LEASE, 3, on_task, &k), 0);
	assert_int_equal(k.attempts, 2);
	/* its collector died holding it: a claim older than the claimer's own lease is taken
	 * over; not one a microsecond short of it, nor by a claimer with a longer lease */
	assert_int_equal(store_task_claim_at(c, "c", at + lease - 1, lease, 3, on_task, &k),
	                 -ENOENT);
	assert_int_equal(store_task_claim_at(c, "c", at + lease + 1, LEASE, 3, on_task, &k),
	                 -ENOENT);
	assert_int_equal(store_task_claim_at(c, "c", at + lease + 1, lease, 3, on_task, &k), 0);
	assert_int_equal(k.attempts, 3);
	assert_int_equal(store_task_fail(c, k.id, NULL), 0);
	/* its attempts are used up: dead, never claimed again */
	counts(c, 0, 1);
	assert_int_equal(store_task_claim(c, "d", LEASE, 3, on_task, &k), -ENOENT);
	assert_int_equal(store_task_fail(c, 999999, NULL), -ENOENT);
	/* a new upload of that commit and host brings it back with fresh attempts */
	put(c, "22222222-2222-4222-8222-222222222222", "grace", SHA1);
	counts(c, 1, 0);
	assert_int_equal(store_task_claim(c, "d", LEASE, 3, on_task, &k), 0);
	assert_int_equal(k.attempts, 1);
	assert_int_equal(store_task_done(c, k.id, k.generation), 0);
	counts(c, 0, 0);
	store_disconnect(&c);
	store_close(&s);
}

static void test_runs_before_trends(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct claimed k = {0};

	(void)state;
	assert_int_equal(store_task_enqueue(c, "trends", "linux", NULL, "grace", "main"), 0);
	assert_int_equal(store_task_enqueue(c, "trends", "linux", NULL, "grace", "main"), 0);
	counts(c, 1, 0);
	put(c, "11111111-1111-4111-8111-111111111111", "grace", SHA2);
	counts(c, 2, 0);
	assert_int_equal(store_task_claim(c, "a", LEASE, 5, on_task, &k), 0);
	assert_string_equal(k.kind, "run");
	assert_string_equal(k.commit, SHA2);
	assert_int_equal(store_task_done(c, k.id, k.generation), 0);
	assert_int_equal(store_task_claim(c, "a", LEASE, 5, on_task, &k), 0);
	assert_string_equal(k.kind, "trends");
	assert_true(k.no_commit);
	assert_string_equal(k.host, "grace");
	assert_int_equal(store_task_done(c, k.id, k.generation), 0);
	counts(c, 0, 0);
	assert_int_equal(store_task_enqueue(c, NULL, "linux", NULL, "grace", "main"), -EINVAL);
	assert_int_equal(store_task_claim(c, "a", -1, 5, on_task, &k), -EINVAL);
	assert_int_equal(store_task_claim(c, "a", LEASE, 0, on_task, &k), -EINVAL);
	store_disconnect(&c);
	store_close(&s);
}

/* A task done with a rest stays, idle, until the rest ends: what is enqueued meanwhile merges
 * into it and is claimed once, no sooner than the rest's end (also when it was enqueued while
 * the task ran); resting with something asked counts as pending, idle not at all. */
static void test_rest(void **state)
{
	struct timespec ts;
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct claimed k = {0};
	int64_t now, until;

	(void)state;
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	until = now + INT64_C(3600000000); /* an hour: no claim by the clock reaches it */
	assert_int_equal(store_task_enqueue(c, "trends", "linux", NULL, "grace", "main"), 0);
	assert_int_equal(store_task_claim(c, "a", LEASE, 5, on_task, &k), 0);
	assert_int_equal(store_task_done_rest(c, k.id, k.generation, until), 0);
	counts(c, 0, 0); /* idle: nothing to do */
	assert_int_equal(store_task_claim(c, "a", LEASE, 5, on_task, &k), -ENOENT);
	/* three uploads ask for the trends while they rest: one task, not before the rest ends */
	for (int i = 0; i < 3; i++)
		assert_int_equal(store_task_enqueue(c, "trends", "linux", NULL, "grace", "main"),
		                 0);
	counts(c, 1, 0);
	assert_int_equal(store_task_claim(c, "a", LEASE, 5, on_task, &k), -ENOENT);
	assert_int_equal(store_task_claim_at(c, "a", until - 1, LEASE, 5, on_task, &k), -ENOENT);
	/* an upload's task is not held up by it */
	put(c, "11111111-1111-4111-8111-111111111111", "grace", SHA2);
	assert_int_equal(store_task_claim(c, "a", LEASE, 5, on_task, &k), 0);
	assert_string_equal(k.kind, "run");
	assert_int_equal(store_task_done(c, k.id, k.generation), 0);
	assert_int_equal(store_task_claim_at(c, "a", until, LEASE, 5, on_task, &k), 0);
	assert_string_equal(k.kind, "trends");
	assert_int_equal(k.attempts, 1);
	/* enqueued while it ran: it rests, then runs once more */
	assert_int_equal(store_task_enqueue(c, "trends", "linux", NULL, "grace", "main"), 0);
	assert_int_equal(store_task_done_rest(c, k.id, k.generation, until + 1000), 0);
	counts(c, 1, 0);
	assert_int_equal(store_task_claim_at(c, "a", until + 999, LEASE, 5, on_task, &k), -ENOENT);
	assert_int_equal(store_task_claim_at(c, "a", until + 1000, LEASE, 5, on_task, &k), 0);
	/* without a rest: gone, as store_task_done() */
	assert_int_equal(store_task_done_rest(c, k.id, k.generation, 0), 0);
	assert_int_equal(store_task_done_rest(c, k.id, k.generation, until), -ENOENT);
	assert_int_equal(store_task_enqueue(c, "trends", "linux", NULL, "grace", "main"), 0);
	counts(c, 1, 0);
	assert_int_equal(store_task_claim(c, "a", LEASE, 5, on_task, &k), 0); /* no rest left */
	store_disconnect(&c);
	store_close(&s);
}

struct got {
	char path[128], type[32], hash[80], updated_at[40];
	unsigned char data[64];
	size_t len;
	bool had_data;
};

static int on_chart(const struct store_chart *ch, void *cls)
{
	struct got *g = cls;

	snprintf(g->path, sizeof(g->path), "%s", ch->path);
	snprintf(g->type, sizeof(g->type), "%s", ch->content_type);
	snprintf(g->hash, sizeof(g->hash), "%s", ch->hash);
	snprintf(g->updated_at, sizeof(g->updated_at), "%s", ch->updated_at);
	g->len = ch->len;
	g->had_data = ch->data != NULL;
	if (ch->data && ch->len <= sizeof(g->data))
		memcpy(g->data, ch->data, ch->len);
	return 0;
}

static void test_charts(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	static const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 7};
	const char *path = "charts/commits/" SHA1 "/hosts/grace/percpu.png";
	struct store_chart ch = {.path = path,
	                         .content_type = "image/png",
	                         .hash = "aa11",
	                         .data = png,
	                         .len = sizeof(png)};
	struct got g = {0};

	(void)state;
	assert_int_equal(store_chart_stat(c, path, on_chart, &g), -ENOENT);
	assert_int_equal(store_chart_get(c, path, on_chart, &g), -ENOENT);
	assert_int_equal(store_chart_put(c, &ch), 0);
	assert_int_equal(store_chart_stat(c, path, on_chart, &g), 0);
	assert_string_equal(g.path, path);
	assert_string_equal(g.type, "image/png");
	assert_string_equal(g.hash, "aa11");
	assert_int_equal(g.len, sizeof(png));
	assert_false(g.had_data);
	assert_true(g.updated_at[0]);
	memset(&g, 0, sizeof(g));
	assert_int_equal(store_chart_get(c, path, on_chart, &g), 0);
	assert_true(g.had_data);
	assert_int_equal(g.len, sizeof(png));
	assert_memory_equal(g.data, png, sizeof(png));
	/* redrawn: replaced */
	ch.hash = "bb22";
	ch.len = 4;
	assert_int_equal(store_chart_put(c, &ch), 0);
	assert_int_equal(store_chart_get(c, path, on_chart, &g), 0);
	assert_string_equal(g.hash, "bb22");
	assert_int_equal(g.len, 4);
	ch.hash = NULL;
	assert_int_equal(store_chart_put(c, &ch), -EINVAL);
	store_disconnect(&c);
	store_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_upload_enqueues_and_merges),
	    cmocka_unit_test(test_enqueued_while_claimed_runs_again),
	    cmocka_unit_test(test_failures_and_takeover),
	    cmocka_unit_test(test_runs_before_trends),
	    cmocka_unit_test(test_rest),
	    cmocka_unit_test(test_charts),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
