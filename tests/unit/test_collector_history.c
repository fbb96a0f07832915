/* A long history read in bounded time (issue 32), against a real database: SQLite files in a
 * temp dir, or a throw-away PostgreSQL through with_postgres.py (CTest runs both). The stored
 * commit order of each run, kept right when a later run moves its commit; and the query plans of
 * the hot statements over a few thousand runs, taken through the row layer itself
 * (store_set_plan_hook()), so that each statement is checked as it runs: no full scan and no
 * temporary sort of runs or measurements. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aw/util.h"
#include "driver.h"

#include "collector_fixture.h"

/* A run of `host` and `commit` on `ref` with `n_cells` cells (p50 = base + i), started at
 * `started`, with commit_time `commit_time` (NULL: none). */
static struct aw_result *make_run(const char *run_id, const char *project, const char *host,
                                  const char *commit, const char *ref, const char *started,
                                  const char *commit_time, int n_cells, double base)
{
	struct aw_result *r = aw_result_new();

	assert_non_null(r);
	snprintf(r->run_id, sizeof(r->run_id), "%s", run_id);
	assert_int_equal(aw_set_str(&r->project, project), 0);
	assert_int_equal(aw_set_str(&r->commit, commit), 0);
	assert_int_equal(aw_set_str(&r->ref, ref), 0);
	assert_int_equal(aw_set_str(&r->commit_time, commit_time), 0);
	assert_int_equal(aw_set_str(&r->matrix_name, "default"), 0);
	assert_int_equal(aw_set_str(&r->matrix_hash, "0123456789abcdef"), 0);
	r->matrix_version = 1;
	r->trigger = AW_TRIGGER_CI;
	snprintf(r->started_at, sizeof(r->started_at), "%s", started);
	snprintf(r->finished_at, sizeof(r->finished_at), "%s", started);
	r->host = json_pack("{s:s, s:s, s:s}", "name", host, "arch", "aarch64", "cpu_model", "V2");
	for (int i = 0; i < n_cells; i++) {
		struct aw_cell *c = aw_result_add_cell(r);

		assert_int_equal(aw_set_str(&c->op, i % 2 ? "stadd" : "ldadd"), 0);
		c->cpu = i / 2;
		c->n = 100;
		c->batch = 1024;
		c->p50 = base + i;
		c->min = c->p50 * 0.9;
		c->p95 = c->p50 * 1.1;
		c->p99 = c->p50 * 1.2;
		c->max = c->p50 * 2;
		c->mean = c->p50;
		c->stddev = 0.1;
		c->ci_lo = c->p50;
		c->ci_hi = c->p50;
		c->baseline_ns = 0.3;
		assert_int_equal(aw_cell_make_key(c), 0);
	}
	return r;
}

static void put(struct store_conn *c, const char *run_id, const char *commit, const char *started,
                const char *commit_time, double base)
{
	struct aw_result *r =
	    make_run(run_id, "linux", "h1", commit, "main", started, commit_time, 4, base);

	put_one(c, r, STORE_CREATED, NULL);
	aw_result_free(&r);
}

struct order_seen {
	int n;
	char commits[16][16];
	int64_t order[16];
	double values[16];
};

static int on_run(const struct store_run *r, void *cls)
{
	struct order_seen *s = cls;

	assert_true(s->n < 16);
	snprintf(s->commits[s->n], sizeof(s->commits[0]), "%s", r->commit);
	s->order[s->n++] = r->order_us;
	return 0;
}

static int on_point(const struct store_point *p, void *cls)
{
	struct order_seen *s = cls;

	assert_true(s->n < 16);
	snprintf(s->commits[s->n], sizeof(s->commits[0]), "%s", p->commit);
	s->order[s->n] = p->order_us;
	s->values[s->n++] = p->value;
	return 0;
}

/* "aaa,bbb,..." of the commits seen. */
static const char *commits_of(const struct order_seen *s, char *out, size_t len)
{
	out[0] = '\0';
	for (int i = 0; i < s->n; i++) {
		size_t used = strlen(out);

		snprintf(out + used, len - used, "%s%s", i ? "," : "", s->commits[i]);
	}
	return out;
}

static void history(struct store_conn *c, struct order_seen *s)
{
	memset(s, 0, sizeof(*s));
	assert_int_equal(
	    store_ref_history(c, NULL, "h1", "main", INT64_MAX, INT64_MAX, 16, on_run, s), 0);
}

/* Counts the statements that move a commit's runs (a plan hook: it sees each statement). */
static void on_statement(const char *what, const char *sql, const char *plan, void *cls)
{
	(void)sql;
	(void)plan;
	*(int *)cls += !strcmp(what, "reorder a commit's runs");
}

/* A commit's order moves when a later run brings its commit_time, or an earlier start; the runs
 * stored before follow it at once, in history, lists and series alike. */
static void test_reorder(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct store_series_query q = {.host = "h1",
	                               .ref = "main",
	                               .cell_key = "op=ldadd cpu=0",
	                               .metric = STORE_METRIC_P50,
	                               .limit = 16};
	struct store_run_filter f = {.project = "linux", .commit = "aaaaaaa", .limit = 16};
	struct order_seen seen;
	char text[256];
	int reordered = 0;

	(void)state;
	/* aaaaaaa without commit_time: placed by its start (Jan 5), after bbbbbbb's Jan 3 */
	put(c, "00000000-0000-4000-8000-000000000001", "aaaaaaa", "2026-01-05T00:00:00Z", NULL, 1);
	put(c, "00000000-0000-4000-8000-000000000002", "bbbbbbb", "2026-01-04T00:00:00Z",
	    "2026-01-03T00:00:00Z", 2);
	history(c, &seen);
	assert_string_equal(commits_of(&seen, text, sizeof(text)), "aaaaaaa,bbbbbbb");
	/* a later run of aaaaaaa says it was committed on Jan 1: both its runs move before
	 * bbbbbbb's */
	store_set_plan_hook(c, on_statement, &reordered);
	put(c, "00000000-0000-4000-8000-000000000003", "aaaaaaa", "2026-01-06T00:00:00Z",
	    "2026-01-01T00:00:00Z", 3);
	store_set_plan_hook(c, NULL, NULL);
	/* (PostgreSQL pipelines the update: the hook sees only what is stepped) */
	assert_int_equal(reordered, pg_host() ? 0 : 1);
	reordered = 0;
	history(c, &seen);
	assert_string_equal(commits_of(&seen, text, sizeof(text)), "bbbbbbb,aaaaaaa,aaaaaaa");
	assert_int_equal(seen.order[1], INT64_C(1767225600000000)); /* 2026-01-01 */
	assert_int_equal(seen.order[2], INT64_C(1767225600000000));
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(store_list_runs(c, &f, on_run, &seen), 0);
	assert_int_equal(seen.n, 2);
	assert_int_equal(seen.order[0], seen.order[1]);
	assert_int_equal(seen.order[1], INT64_C(1767225600000000));
	/* a commit without commit_time moves to its earliest start */
	put(c, "00000000-0000-4000-8000-000000000004", "ccccccc", "2026-01-10T00:00:00Z", NULL, 4);
	put(c, "00000000-0000-4000-8000-000000000005", "ddddddd", "2026-01-08T00:00:00Z", NULL, 5);
	history(c, &seen);
	assert_string_equal(commits_of(&seen, text, sizeof(text)),
	                    "ccccccc,ddddddd,bbbbbbb,aaaaaaa,aaaaaaa");
	put(c, "00000000-0000-4000-8000-000000000006", "ccccccc", "2026-01-07T00:00:00Z", NULL, 6);
	history(c, &seen);
	assert_string_equal(commits_of(&seen, text, sizeof(text)),
	                    "ddddddd,ccccccc,ccccccc,bbbbbbb,aaaaaaa,aaaaaaa");
	/* commit_time, once known, is kept: a later run with another one changes nothing, and
	 * its runs are not even looked at (a commit measured every night for a year has
	 * hundreds) */
	store_set_plan_hook(c, on_statement, &reordered);
	put(c, "00000000-0000-4000-8000-000000000007", "aaaaaaa", "2026-01-11T00:00:00Z",
	    "2026-01-20T00:00:00Z", 7);
	store_set_plan_hook(c, NULL, NULL);
	assert_int_equal(reordered, 0);
	history(c, &seen);
	assert_string_equal(commits_of(&seen, text, sizeof(text)),
	                    "ddddddd,ccccccc,ccccccc,bbbbbbb,aaaaaaa,aaaaaaa,aaaaaaa");
	/* the series in the same order, oldest first, each run's own value */
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(store_series(c, &q, on_point, &seen), 0);
	assert_string_equal(commits_of(&seen, text, sizeof(text)),
	                    "aaaaaaa,aaaaaaa,aaaaaaa,bbbbbbb,ccccccc,ccccccc,ddddddd");
	assert_true(seen.values[0] == 1 && seen.values[1] == 3 && seen.values[2] == 7);
	assert_true(seen.values[4] == 4 && seen.values[5] == 6);
	/* the newest two points */
	memset(&seen, 0, sizeof(seen));
	q.limit = 2;
	assert_int_equal(store_series(c, &q, on_point, &seen), 0);
	assert_string_equal(commits_of(&seen, text, sizeof(text)), "ccccccc,ddddddd");
	/* before a position: strictly earlier (order, seq) */
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(store_ref_history(c, "linux", "h1", "main", INT64_C(1767225600000000),
	                                   INT64_MAX, 16, on_run, &seen),
	                 0);
	assert_int_equal(seen.n, 3);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(store_ref_history(c, "linux", "h1", "main", INT64_C(1767225600000000), 0,
	                                   16, on_run, &seen),
	                 0);
	assert_int_equal(seen.n, 0);
	store_disconnect(&c);
	store_close(&s);
}

/* ---- query plans ---- */

#define PLAN_HOSTS   2
#define PLAN_COMMITS 1500 /* per host: 3,000 runs on main, and a few on a second ref */
#define PLAN_CELLS   8
#define PLAN_BATCH   100
#define PLAN_CPS     600 /* change points per host */

static void fill(struct store_conn *c)
{
	struct aw_result *docs[PLAN_BATCH];
	struct store_put puts[PLAN_BATCH];
	char *host_json[PLAN_BATCH];
	char *err = NULL;

	for (int h = 0; h < PLAN_HOSTS; h++) {
		for (int first = 0; first < PLAN_COMMITS; first += PLAN_BATCH) {
			for (int k = 0; k < PLAN_BATCH; k++) {
				int i = first + k;
				char id[40], sha[16], when[AW_TIME_LEN];
				struct timespec ts = {.tv_sec = 1767225600 + (time_t)i * 3600};

				snprintf(id, sizeof(id), "00000000-0000-4000-8%03d-%012d", h, i);
				snprintf(sha, sizeof(sha), "c%07x", i);
				aw_time_format(&ts, when);
				docs[k] = make_run(id, "linux", h ? "h1" : "h0", sha,
				                   i % 50 == 49 ? "pr/1" : "main", when,
				                   i % 3 ? when : NULL, PLAN_CELLS, 1 + i % 7);
				make_put(&puts[k], docs[k], &host_json[k]);
			}
			assert_int_equal(store_put_runs(c, puts, PLAN_BATCH), 0);
			for (int k = 0; k < PLAN_BATCH; k++) {
				aw_result_free(&docs[k]);
				free(host_json[k]);
			}
		}
	}
	/* every commit's verdict on each host, and a few change points */
	assert_int_equal(c->drv->begin(c, STORE_TX_WRITE), 0);
	for (int h = 0; h < PLAN_HOSTS; h++)
		for (int i = 0; i < PLAN_COMMITS; i++) {
			char sha[16];
			struct store_verdict v = {.project = "linux",
			                          .commit = sha,
			                          .host = h ? "h1" : "h0",
			                          .baseline_ref = "main",
			                          .status = "pass",
			                          .json = "{}",
			                          .computed_at = "2026-01-01T00:00:00Z",
			                          .order_us = INT64_C(1767225600000000) +
			                                      (int64_t)i * 3600000000};

			snprintf(sha, sizeof(sha), "c%07x", i);
			assert_int_equal(store_verdict_put(c, &v), 0);
		}
	assert_int_equal(c->drv->commit(c), 0);
	/* as many change points as a large matrix's history holds, a few per cell, on as many
	 * hosts as a fleet has (those without runs too: a host's list is a part of the table) */
	for (int h = 0; h < 10; h++) {
		char host[8];

		static char keys[PLAN_CPS][32];
		struct store_changepoint cp[PLAN_CPS];

		for (int i = 0; i < PLAN_CPS; i++) {
			snprintf(keys[i], sizeof(keys[i]), "op=%s cpu=%d",
			         i % 2 ? "stadd" : "ldadd", i / 6);
			cp[i] = (struct store_changepoint){
			    .cell_key = keys[i],
			    .metric = i % 3 ? "p50" : "p99",
			    .commit = "c0000010",
			    .run_id = "00000000-0000-4000-8000-000000000010",
			    .order_us = INT64_C(1767225600000000) + i,
			    .before = 1,
			    .after = 2,
			    .pvalue = 0.001,
			    .computed_at = "2026-01-01T00:00:00Z"};
		}
		snprintf(host, sizeof(host), "h%d", h);
		assert_int_equal(store_changepoints_replace(c, "linux", host, "main", cp, PLAN_CPS),
		                 0);
	}
	/* PostgreSQL plans by its statistics, which autovacuum keeps in service: taken now.
	 * SQLite's planner works without (the collector never runs ANALYZE on it). */
	if (pg_host())
		assert_int_equal(c->drv->exec(c, "ANALYZE", &err), 0);
	free(err);
}

#define PLANS_MAX 64

struct plans {
	int n;
	char *what[PLANS_MAX], *sql[PLANS_MAX], *plan[PLANS_MAX];
};

static void on_plan(const char *what, const char *sql, const char *plan, void *cls)
{
	struct plans *p = cls;

	int same = 0;

	for (int i = 0; i < p->n; i++)
		same += !strcmp(p->what[i], what);
	if (p->n == PLANS_MAX || same == 4) /* a statement run again and again: its first few */
		return;
	if (getenv("AW_TEST_SHOW_PLANS"))
		print_message("-- %s\n%s\n", what, plan ? plan : "(none)");
	p->what[p->n] = strdup(what);
	p->sql[p->n] = strdup(sql);
	p->plan[p->n] = plan ? strdup(plan) : NULL;
	p->n++;
}

static void plans_clear(struct plans *p)
{
	for (int i = 0; i < p->n; i++) {
		free(p->what[i]);
		free(p->sql[i]);
		free(p->plan[i]);
	}
	p->n = 0;
}

/* Drops the plans of `what`, keeping the others in order. */
static void plans_forget(struct plans *p, const char *what)
{
	int k = 0;

	for (int i = 0; i < p->n; i++) {
		if (strcmp(p->what[i], what)) {
			p->what[k] = p->what[i];
			p->sql[k] = p->sql[i];
			p->plan[k++] = p->plan[i];
			continue;
		}
		free(p->what[i]);
		free(p->sql[i]);
		free(p->plan[i]);
	}
	p->n = k;
}

/* SQLite: "SCAN t" (every row of t, through an index or not) and "USE TEMP B-TREE" (a sort)
 * in the plan of EXPLAIN QUERY PLAN; PostgreSQL: "Seq Scan on t" and a "Sort" node, in that of
 * EXPLAIN. `tables` names the tables (by the statement's alias as SQLite prints them, and by name)
 * that must never be read whole; `sorted` whether no sort may appear. */
static bool bad_line(const char *line, const char *const *tables, bool sorted)
{
	if (pg_host()) {
		const char *node = line + strspn(line, " ->");

		if (sorted &&
		    (!strncmp(node, "Sort ", 5) || !strncmp(node, "Incremental Sort", 16)))
			return true;
		for (const char *const *t = tables; *t; t++) {
			char want[64];

			snprintf(want, sizeof(want), "Seq Scan on %s ", *t);
			if (!strncmp(node, want, strlen(want)))
				return true;
		}
		return false;
	}
	if (sorted && strstr(line, "USE TEMP B-TREE"))
		return true;
	for (const char *const *t = tables; *t; t++) {
		const char *at = strstr(line, "SCAN ");
		size_t len = strlen(*t);

		if (at && !strncmp(at + 5, *t, len) && (at[5 + len] == ' ' || !at[5 + len]))
			return true;
	}
	return false;
}

/* The statements of `what` explained since the last check: how many there were, and in *bad
 * the first bad line of the first one with a bad line, or "no plan" (NULL: all good). */
static int find_bad(struct plans *p, const char *what, const char *const *tables, bool sorted,
                    char *bad, size_t len, int *at)
{
	int found = 0;

	bad[0] = '\0';
	for (int i = 0; i < p->n; i++) {
		char *line, *save = NULL, *text;

		if (strcmp(p->what[i], what))
			continue;
		found++;
		if (!p->plan[i] && !bad[0]) {
			snprintf(bad, len, "no plan");
			*at = i;
		}
		text = strdup(p->plan[i] ? p->plan[i] : "");
		for (line = strtok_r(text, "\n", &save); line && !bad[0];
		     line = strtok_r(NULL, "\n", &save))
			if (bad_line(line, tables, sorted)) {
				snprintf(bad, len, "%s", line);
				*at = i;
			}
		free(text);
	}
	return found;
}

/* Each statement of `what` explained since the last check has a plan and none of its lines is
 * bad; at least one was. */
static void check_plans(struct plans *p, const char *what, const char *const *tables, bool sorted)
{
	char bad[512];
	int at = 0, found = find_bad(p, what, tables, sorted, bad, sizeof(bad), &at);

	if (!found)
		fail_msg("no statement '%s' was explained", what);
	if (bad[0])
		fail_msg("'%s' reads a table whole or sorts (%s):\n%s\n-- %s", what, bad,
		         p->plan[at] ? p->plan[at] : "", p->sql[at]);
	print_message("plans of '%s': %d statement%s, ok\n", what, found, found > 1 ? "s" : "");
	plans_forget(p, what);
}

/* The check itself tells a bad plan: the old order of a ref's history, a key computed across a
 * join that no index covers, sorts every run of the host. */
static void check_catches_a_sort(struct store_conn *c, struct plans *p)
{
	static const char *const runs[] = {"r", "runs", NULL};
	struct store_stmt *s = NULL;
	char bad[512];
	int at = 0;

	assert_int_equal(
	    c->drv->prepare(
	        c,
	        "SELECT r.seq FROM runs r LEFT JOIN commits c ON c.id = r.commit_id "
	        "WHERE r.host_id = (SELECT id FROM hosts WHERE name = ?1) AND r.ref = ?2 "
	        "ORDER BY COALESCE(c.order_us, r.started_us) DESC, r.seq DESC LIMIT 40",
	        "read a history the old way", false, &s),
	    0);
	c->drv->bind_text(s, 1, "h1");
	c->drv->bind_text(s, 2, "main");
	assert_true(c->drv->step(s) == STORE_ROW);
	c->drv->finalize(s);
	assert_int_equal(
	    find_bad(p, "read a history the old way", runs, true, bad, sizeof(bad), &at), 1);
	print_message("the old history read is caught: %s\n", bad);
	assert_true(bad[0] != '\0');
	plans_clear(p);
}

static int ignore_run(const struct store_run *r, void *cls)
{
	(void)r;
	(void)cls;
	return 0;
}

static int ignore_point(const struct store_point *p, void *cls)
{
	(void)p;
	(void)cls;
	return 0;
}

static int ignore_verdict(const struct store_verdict *v, void *cls)
{
	(void)v;
	(void)cls;
	return 0;
}

static int ignore_cp(const struct store_changepoint *cp, void *cls)
{
	(void)cp;
	(void)cls;
	return 0;
}

static int ignore_period(const struct store_aggregate *a, void *cls)
{
	(void)a;
	(void)cls;
	return 0;
}

static int take_task(const struct store_task *t, void *cls)
{
	(void)t;
	(void)cls;
	return 0;
}

static void test_plans(void **state)
{
	static const char *const runs[] = {"r", "runs", NULL};
	static const char *const runs_meas[] = {"r", "runs", "m", "measurements", NULL};
	static const char *const verdicts[] = {"verdicts", NULL};
	static const char *const cps[] = {"change_points", NULL};
	static const char *const none[] = {NULL};
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct plans p = {0};
	struct store_series_query q = {.host = "h1",
	                               .ref = "main",
	                               .cell_key = "op=stadd cpu=1",
	                               .metric = STORE_METRIC_P50,
	                               .limit = 100};
	struct store_run_filter f = {.project = "linux", .commit = "c00003e8", .limit = 100};

	(void)state;
	fill(c);
	store_set_plan_hook(c, on_plan, &p);
	check_catches_a_sort(c, &p);

	/* a verdict's baseline, the change points' and the trend charts' window */
	assert_int_equal(store_ref_history(c, "linux", "h1", "main", INT64_C(1770000000000000), 0,
	                                   40, ignore_run, NULL),
	                 0);
	assert_int_equal(
	    store_ref_history(c, NULL, "h1", "main", INT64_MAX, INT64_MAX, 100, ignore_run, NULL),
	    0);
	check_plans(&p, "read a ref's history", runs, true);
	/* whether a post-ingest task's run is its host's newest, and a run's references */
	{
		int64_t newest = 0;
		uint8_t *packed = NULL;
		size_t len = 0;
		int rc;

		assert_int_equal(store_ref_newest_seq(c, "linux", "h1", "main", &newest), 0);
		assert_true(newest > 0);
		assert_int_equal(store_ref_newest_seq(c, NULL, "h1", "main", &newest), 0);
		check_plans(&p, "find a ref's newest run", runs, true);
		rc = store_run_reference(c, newest, &packed, &len);
		assert_true(rc == 0);
		free(packed);
	}
	check_plans(&p, "read a run's reference series", runs, true);

	assert_int_equal(store_series(c, &q, ignore_point, NULL), 0);
	q.project = "linux";
	assert_int_equal(store_series(c, &q, ignore_point, NULL), 0);
	check_plans(&p, "read a series", runs_meas, true);

	/* the runs of a commit: of a project (the gate's hosts), on a host (a verdict's head) */
	assert_int_equal(store_list_runs(c, &f, ignore_run, NULL), 0);
	f.host = "h1";
	assert_int_equal(store_list_runs(c, &f, ignore_run, NULL), 0);
	check_plans(&p, "list the runs of a commit", runs, true);
	/* in any project (a commit page): a commit's few runs may be sorted, never all runs */
	f = (struct store_run_filter){.commit = "c00003e8", .limit = 100};
	assert_int_equal(store_list_runs(c, &f, ignore_run, NULL), 0);
	/* a host's newest run (the overview), a host's runs on a ref */
	f = (struct store_run_filter){.host = "h0", .limit = 1};
	assert_int_equal(store_list_runs(c, &f, ignore_run, NULL), 0);
	f.ref = "main";
	f.limit = 50;
	assert_int_equal(store_list_runs(c, &f, ignore_run, NULL), 0);
	check_plans(&p, "list runs", runs, false);

	/* the overview: a host's newest verdict, a commit's verdicts; a host's trend marks */
	assert_int_equal(store_verdict_statuses(c, NULL, NULL, "h0", 1, ignore_verdict, NULL), 0);
	assert_int_equal(
	    store_verdict_statuses(c, NULL, "c00003e8", NULL, 100, ignore_verdict, NULL), 0);
	check_plans(&p, "list verdict statuses", verdicts, false);
	assert_int_equal(store_verdict_list(c, "linux", NULL, "h1", 100, ignore_verdict, NULL), 0);
	assert_int_equal(store_verdict_list(c, NULL, "c00003e8", NULL, 10, ignore_verdict, NULL),
	                 0);
	assert_int_equal(store_verdict_list(c, "linux", "c00003e8", "h1", 1, ignore_verdict, NULL),
	                 0);
	check_plans(&p, "list verdicts", verdicts, false);

	assert_int_equal(
	    store_changepoints_list(c, "linux", "h1", "main", "op=stadd cpu=0", ignore_cp, NULL),
	    0);
	assert_int_equal(store_changepoints_list(c, NULL, "h1", "main", NULL, ignore_cp, NULL), 0);
	assert_int_equal(
	    store_changepoints_list(c, NULL, "h1", "main", "op=stadd cpu=0", ignore_cp, NULL), 0);
	check_plans(&p, "list change points", cps, false);

	/* thousands of tasks wait (one per uploaded commit): a claim takes the first in order */
	assert_int_equal(store_task_claim(c, "plans", 600000000, 5, take_task, NULL), 0);
	check_plans(&p, "claim a task", none, true);

	/* retention: a month of the two months thinned, then the series per day */
	{
		static const char *const meas[] = {"measurements", NULL};
		static const char *const aggs[] = {"aggregates", NULL};
		const struct store_retention r = {.raw_days = 30, .keep_runs = 100};
		struct store_retention_stats st;

		assert_int_equal(store_retention_run(c, &r, INT64_C(1772668800000000) /* 03-05 */,
		                                     INT64_MAX, &st),
		                 0);
		assert_true(st.runs > 1000);
		check_plans(&p, "find the oldest run to thin", runs, true);
		check_plans(&p, "list the hosts and refs of a week", runs, false);
		check_plans(&p, "find the runs retention keeps", runs, true);
		check_plans(&p, "list the runs to thin", runs, false);
		check_plans(&p, "read the p50s of a run to thin", meas, false);
		plans_clear(&p);
		q.project = NULL;
		assert_int_equal(store_series_periods(c, &q, STORE_PERIOD_DAY, ignore_period, NULL),
		                 0);
		check_plans(&p, "read aggregates", aggs, true);
	}

	store_set_plan_hook(c, NULL, NULL);
	plans_clear(&p); /* the series that store_series_periods() read, unchecked here */
	store_disconnect(&c);
	store_close(&s);
}

/* ---- retention ---- */

static int count_verdict(const struct store_verdict *v, void *cls)
{
	(void)v;
	(*(int *)cls)++;
	return 0;
}

static int count_cp(const struct store_changepoint *cp, void *cls)
{
	(void)cp;
	(*(int *)cls)++;
	return 0;
}

#define MONDAY_2026_01_05 INT64_C(1767571200) /* seconds */
#define DAY_S             86400

/* Three runs a day for 8 weeks from Monday 2026-01-05 on h1/main, a commit each; cell i of the
 * run k of day d has p50 10 d + k + i, so that each day's min, median and max are known. */
static void fill_weeks(struct store_conn *c)
{
	for (int d = 0; d < 56; d++) {
		struct aw_result *docs[3];
		struct store_put puts[3];
		char *host_json[3];

		for (int k = 0; k < 3; k++) {
			struct timespec ts = {.tv_sec =
			                          MONDAY_2026_01_05 + d * DAY_S + k * 8 * 3600};
			char id[40], sha[16], when[AW_TIME_LEN];

			snprintf(id, sizeof(id), "00000000-0000-4000-8000-%012d", 3 * d + k);
			snprintf(sha, sizeof(sha), "d%07x", 3 * d + k);
			aw_time_format(&ts, when);
			docs[k] =
			    make_run(id, "linux", "h1", sha, "main", when, when, 4, 10 * d + k);
			make_put(&puts[k], docs[k], &host_json[k]);
		}
		assert_int_equal(store_put_runs(c, puts, 3), 0);
		for (int k = 0; k < 3; k++) {
			aw_result_free(&docs[k]);
			free(host_json[k]);
		}
	}
}

struct periods_seen {
	int n;
	struct store_aggregate a[64];
};

static int on_period(const struct store_aggregate *a, void *cls)
{
	struct periods_seen *p = cls;

	assert_true(p->n < 64);
	p->a[p->n++] = *a;
	return 0;
}

static int count_run(const struct store_run *r, void *cls)
{
	(void)r;
	(*(int *)cls)++;
	return 0;
}

static void put_run(struct store_conn *c, struct aw_result *r)
{
	put_one(c, r, STORE_CREATED, NULL);
	aw_result_free(&r);
}

static int runs_of(struct store_conn *c, const char *ref)
{
	struct store_run_filter f = {.host = "h1", .ref = ref, .limit = 10000};
	int n = 0;

	assert_int_equal(store_list_runs(c, &f, count_run, &n), 0);
	return n;
}

static void expect_period(const struct store_aggregate *a, int64_t start_s, int64_t count,
                          int64_t stored, double min, double median, double max)
{
	if (a->start_us != start_s * 1000000 || a->count != count || a->stored != stored ||
	    a->min != min || fabs(a->median - median) > 1e-9 || a->max != max)
		fail_msg("period at %" PRId64 ": %" PRId64 " (%" PRId64 " thinned) %g %g %g; want "
		         "%" PRId64 ": %" PRId64 " (%" PRId64 ") %g %g %g",
		         a->start_us, a->count, a->stored, a->min, a->median, a->max,
		         start_s * 1000000, count, stored, min, median, max);
}

/* Runs older than the window, in whole weeks, are folded into daily and weekly aggregates and
 * deleted; the newest keep_runs of a host and ref stay whatever their age; what was thinned
 * and what is kept read back as one series per day or week; verdicts and change points stay; a
 * late run of a thinned week merges into its aggregates. */
static void test_retention(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	const struct store_retention r = {.raw_days = 14, .keep_runs = 10};
	const int64_t now = (MONDAY_2026_01_05 + 56 * DAY_S + 12 * 3600) * INT64_C(1000000);
	struct store_retention_stats st;
	struct store_series_query q = {.host = "h1",
	                               .ref = "main",
	                               .cell_key = "op=ldadd cpu=0",
	                               .metric = STORE_METRIC_P50,
	                               .limit = 100};
	struct store_verdict v = {.project = "linux",
	                          .commit = "d0000000",
	                          .host = "h1",
	                          .baseline_ref = "main",
	                          .status = "pass",
	                          .json = "{}",
	                          .computed_at = "2026-01-05T00:00:00Z",
	                          .order_us = 1};
	const struct store_changepoint cp = {.cell_key = "op=ldadd cpu=0",
	                                     .metric = "p50",
	                                     .commit = "d0000003",
	                                     .run_id = "00000000-0000-4000-8000-000000000003",
	                                     .order_us = 2,
	                                     .before = 1,
	                                     .after = 2,
	                                     .pvalue = 0.01,
	                                     .computed_at = "2026-01-06T00:00:00Z"};
	struct periods_seen p = {0};
	int verdicts = 0, cps = 0;

	(void)state;
	fill_weeks(c);
	put_run(c, make_run("00000000-0000-4000-8000-900000000001", "linux", "h1", "e0000001",
	                    "rare", "2026-01-05T01:00:00Z", NULL, 4, 5));
	assert_int_equal(store_verdict_put(c, &v), 0);
	assert_int_equal(store_changepoints_replace(c, "linux", "h1", "main", &cp, 1), 0);
	assert_int_equal(store_retention_run(c, &(struct store_retention){0}, now, 0, &st),
	                 -EINVAL);

	/* a budget of nothing: one week, then it says there is more */
	assert_int_equal(store_retention_run(c, &r, now, 0, &st), 0);
	assert_int_equal(st.weeks, 1);
	assert_int_equal(st.runs, 21);
	assert_true(st.more);
	/* the rest: weeks 2 to 6 (the window ends on Monday 2026-02-16, the week holding now -
	 * 14 days); the other ref's one run stays, fewer than keep_runs */
	assert_int_equal(store_retention_run(c, &r, now, INT64_MAX, &st), 0);
	assert_int_equal(st.runs, 105);
	assert_int_equal(st.weeks, 5);
	assert_false(st.more);
	assert_int_equal(st.aggregates, 5 * 4 * (7 + 1));
	assert_int_equal(runs_of(c, "main"), 168 - 126);
	assert_int_equal(runs_of(c, "rare"), 1);
	assert_int_equal(store_retention_run(c, &r, now, INT64_MAX, &st), 0);
	assert_int_equal(st.runs, 0);

	/* the whole history by day: 42 days thinned, 14 kept; the first and the newest */
	assert_int_equal(store_series_periods(c, &q, STORE_PERIOD_DAY, on_period, &p), 0);
	assert_int_equal(p.n, 56);
	expect_period(&p.a[0], MONDAY_2026_01_05, 3, 3, 0, 1, 2);
	expect_period(&p.a[41], MONDAY_2026_01_05 + 41 * DAY_S, 3, 3, 410, 411, 412);
	expect_period(&p.a[42], MONDAY_2026_01_05 + 42 * DAY_S, 3, 0, 420, 421, 422);
	expect_period(&p.a[55], MONDAY_2026_01_05 + 55 * DAY_S, 3, 0, 550, 551, 552);
	/* by week, the newest two of eight; then the first (its 21 values' median: 31) */
	memset(&p, 0, sizeof(p));
	q.limit = 2;
	assert_int_equal(store_series_periods(c, &q, STORE_PERIOD_WEEK, on_period, &p), 0);
	assert_int_equal(p.n, 2);
	expect_period(&p.a[1], MONDAY_2026_01_05 + 49 * DAY_S, 21, 0, 490, 521, 552);
	memset(&p, 0, sizeof(p));
	q.limit = 100;
	assert_int_equal(store_series_periods(c, &q, STORE_PERIOD_WEEK, on_period, &p), 0);
	assert_int_equal(p.n, 8);
	expect_period(&p.a[0], MONDAY_2026_01_05, 21, 21, 0, 31, 62);
	q.metric = STORE_METRIC_P99;
	assert_int_equal(store_series_periods(c, &q, STORE_PERIOD_WEEK, on_period, &p), -EINVAL);
	q.metric = STORE_METRIC_P50;

	/* what pages and the gate read stays */
	assert_int_equal(
	    store_verdict_statuses(c, "linux", "d0000000", NULL, 10, count_verdict, &verdicts), 0);
	assert_int_equal(verdicts, 1);
	memset(&p, 0, sizeof(p));
	assert_int_equal(store_changepoints_list(c, NULL, "h1", "main", NULL, count_cp, &cps), 0);
	assert_int_equal(cps, 1);

	/* a run of a thinned day uploaded late is thinned into its day: counts add, the medians
	 * weighted */
	put_run(c, make_run("00000000-0000-4000-8000-900000000002", "linux", "h1", "e0000002",
	                    "main", "2026-01-08T20:00:00Z", NULL, 4, 100));
	assert_int_equal(store_retention_run(c, &r, now, INT64_MAX, &st), 0);
	assert_int_equal(st.runs, 1);
	memset(&p, 0, sizeof(p));
	assert_int_equal(store_series_periods(c, &q, STORE_PERIOD_DAY, on_period, &p), 0);
	expect_period(&p.a[3], MONDAY_2026_01_05 + 3 * DAY_S, 4, 4, 30, (31 * 3 + 100) / 4.0, 100);
	store_disconnect(&c);
	store_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reorder),
	    cmocka_unit_test(test_plans),
	    cmocka_unit_test(test_retention),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
