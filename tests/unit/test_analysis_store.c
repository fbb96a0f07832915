/* Regression analysis over a real SQLite store: a commit's verdict per host against the
 * baseline ref (regressed cells first, the head's own runs left out of its baseline, runs of
 * another matrix ignored), an incomplete host, compare against a base commit, change points
 * stored and listed, and the verdict cache written after ingest. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis.h"
#include "collector_fixture.h"

#define FILLER 30

/* A run of `host` at `commit` (commit_time `day` days after a fixed date) whose ldadd, stadd
 * and llsc cells have these p50s (p99 = 1.1 p50), plus FILLER quiet cells. */
static struct aw_result *run_of(const char *host, const char *commit, const char *ref, int day,
                                double ldadd, double stadd, double llsc, const char *matrix_hash)
{
	static int serial;
	struct aw_result *r = aw_result_new();
	const double vals[3] = {ldadd, stadd, llsc};
	const char *ops[3] = {"ldadd", "stadd", "llsc"};
	double ripple = 1 + 0.002 * ((serial * 7) % 5 - 2);

	assert_non_null(r);
	serial++;
	assert_int_equal(aw_set_str(&r->project, "linux"), 0);
	assert_int_equal(aw_set_str(&r->commit, commit), 0);
	assert_int_equal(aw_set_str(&r->ref, ref), 0);
	r->commit_time = aw_asprintf("2026-10-%02dT12:00:00Z", day);
	assert_int_equal(aw_set_str(&r->matrix_name, "atomwatch-matrix"), 0);
	assert_int_equal(aw_set_str(&r->matrix_hash, matrix_hash), 0);
	r->matrix_version = 1;
	snprintf(r->started_at, sizeof(r->started_at), "2026-11-%02dT10:%02d:00Z", day % 28 + 1,
	         serial % 60);
	snprintf(r->finished_at, sizeof(r->finished_at), "%s", r->started_at);
	r->host =
	    json_pack("{s:s, s:s, s:s, s:{}, s:s}", "name", host, "arch", "aarch64", "cpu_model",
	              "Neoverse-V2", "labels", "platform_hash", "00aa11bb22cc33dd");
	for (int i = 0; i < 3 + FILLER; i++) {
		struct aw_cell *c = aw_result_add_cell(r);
		double v = i < 3 ? vals[i] : 10 + i;

		if (i < 3) {
			assert_int_equal(aw_set_str(&c->op, ops[i]), 0);
			c->cpu = 0;
		} else {
			assert_int_equal(aw_set_str(&c->op, "cas"), 0);
			c->cpu = i;
		}
		c->n = 200;
		c->min = c->p50 = v * ripple;
		c->p95 = c->p50 * 1.05;
		c->p99 = c->max = c->p50 * 1.1;
		c->ci_lo = c->p50 * 0.999;
		c->ci_hi = c->p50 * 1.001;
		assert_int_equal(aw_cell_make_key(c), 0);
	}
	return r;
}

static void put(struct store_conn *c, struct aw_result *r)
{
	put_one(c, r, STORE_CREATED, NULL);
	aw_result_free(&r);
}

#define HASH "0123456789abcdef"

/* 12 commits on main; llsc steps from 10 to 20 ns at the seventh. */
static void load_main(struct store_conn *c, const char *host)
{
	for (int i = 1; i <= 12; i++) {
		char sha[16];

		snprintf(sha, sizeof(sha), "c0ffee%02d", i);
		put(c, run_of(host, sha, "main", i, 5.0, 50.0, i < 7 ? 10.0 : 20.0, HASH));
	}
}

static void test_verdict_regressed_first(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_host_verdict v;
	char *err = NULL;

	(void)state;
	aw_analysis_opts_default(&o);
	o.confirm_runs = 1; /* one head run decides here; test_confirmation() has the default */
	load_main(c, "grace");
	/* a run of another matrix must not be compared */
	put(c, run_of("grace", "0ddba11", "main", 13, 500, 500, 500, "ffffffffffffffff"));
	/* the head: stadd 10x slower, the rest as before */
	put(c, run_of("grace", "badc0de1", "feature", 14, 5.0, 500.0, 20.0, HASH));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de1", NULL, "grace", &v, &err), 0);
	assert_int_equal(v.status, AW_VERDICT_FAIL);
	assert_int_equal(v.n_head_runs, 1);
	assert_int_equal(v.n_baseline_runs, 12);
	assert_int_equal(v.n_cells, 3 + FILLER);
	assert_int_equal(v.counts[AW_VERDICT_REGRESSED], 1);
	assert_string_equal(v.cells[0].key, "op=stadd cpu=0");
	assert_int_equal(v.cells[0].verdict, AW_VERDICT_REGRESSED);
	assert_true(fabs(v.cells[0].p50.change - 9) < 0.1);
	/* llsc's baseline window starts after its change point: 20 ns is no news */
	for (size_t i = 0; i < v.n_cells; i++)
		if (!strcmp(v.cells[i].key, "op=llsc cpu=0"))
			assert_int_equal(v.cells[i].verdict, AW_VERDICT_UNCHANGED);
	{
		json_t *j = aw_host_verdict_json(&v, false);

		assert_non_null(j);
		assert_string_equal(json_string_value(json_object_get(j, "status")), "fail");
		assert_int_equal(json_array_size(json_object_get(j, "cells")), 1);
		assert_int_equal(
		    json_integer_value(json_object_get(json_object_get(j, "counts"), "regressed")),
		    1);
		json_decref(j);
	}
	aw_host_verdict_release(&v);
	/* the head commit passes when it is a commit of main itself, judged against the
	 * commits before it */
	assert_int_equal(aw_analysis_host(c, &o, "linux", "c0ffee12", NULL, "grace", &v, &err), 0);
	assert_int_equal(v.status, AW_VERDICT_PASS);
	assert_int_equal(v.n_baseline_runs, 11);
	aw_host_verdict_release(&v);
	assert_null(err);
	store_disconnect(&c);
	store_close(&s);
}

static void test_incomplete_and_compare(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_host_verdict v;
	char *err = NULL;

	(void)state;
	aw_analysis_opts_default(&o);
	o.confirm_runs = 1; /* one head run decides here; test_confirmation() has the default */
	load_main(c, "grace");
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de1", NULL, "grace", &v, &err), 0);
	assert_int_equal(v.status, AW_VERDICT_INCOMPLETE);
	assert_non_null(strstr(v.reason, "no run of commit badc0de1 on host grace"));
	aw_host_verdict_release(&v);
	/* compare two commits: llsc doubled between c0ffee03 and c0ffee12 (the history before
	 * c0ffee12, whose noise the test uses, holds the step with runs on both sides of it) */
	assert_int_equal(
	    aw_analysis_host(c, &o, "linux", "c0ffee12", "c0ffee03", "grace", &v, &err), 0);
	assert_int_equal(v.n_baseline_runs, 1);
	assert_string_equal(v.cells[0].key, "op=llsc cpu=0");
	assert_int_equal(v.cells[0].verdict, AW_VERDICT_REGRESSED);
	aw_host_verdict_release(&v);
	store_disconnect(&c);
	store_close(&s);
}

static const struct aw_cell_verdict *cell_of(const struct aw_host_verdict *v, const char *key)
{
	for (size_t i = 0; i < v->n_cells; i++)
		if (!strcmp(v->cells[i].key, key))
			return &v->cells[i];
	fail_msg("no cell '%s'", key);
	return NULL;
}

/* thresholds.yaml's gate: a warn cell's regression is listed as a warning and the host
 * passes; an off cell is still judged and shown but neither fails nor warns; the defaults
 * fail uncontended ops */
static void test_gate_levels(void **state)
{
	/* as thresholds.yaml's "- op: stadd / gate: warn" and "- key: 'op=stadd *' / gate: off" */
	struct aw_threshold_rule warn = {.op = "stadd", .threshold = AW_GATE_WARN};
	struct aw_threshold_rule off = {.key = "op=stadd *", .threshold = AW_GATE_OFF};
	struct aw_thresholds th = {
	    .p50 = 0.05, .p99 = 0.10, .gate_rules = &warn, .n_gate_rules = 1};
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_host_verdict v;
	char *err = NULL;
	json_t *j;

	(void)state;
	aw_analysis_opts_default(&o);
	o.confirm_runs = 1; /* one head run decides here; test_confirmation() has the default */
	load_main(c, "grace");
	put(c, run_of("grace", "badc0de1", "feature", 14, 5.0, 500.0, 20.0, HASH));
	/* no thresholds: an uncontended op fails */
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de1", NULL, "grace", &v, &err), 0);
	assert_int_equal(v.status, AW_VERDICT_FAIL);
	assert_int_equal(cell_of(&v, "op=stadd cpu=0")->gate, AW_GATE_FAIL);
	assert_int_equal(v.warnings, 0);
	aw_host_verdict_release(&v);

	o.thresholds = &th;
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de1", NULL, "grace", &v, &err), 0);
	assert_int_equal(v.status, AW_VERDICT_PASS);
	assert_int_equal(v.counts[AW_VERDICT_REGRESSED], 1);
	assert_int_equal(v.warnings, 1);
	assert_int_equal(cell_of(&v, "op=stadd cpu=0")->gate, AW_GATE_WARN);
	assert_int_equal(cell_of(&v, "op=ldadd cpu=0")->gate, AW_GATE_FAIL);
	j = aw_host_verdict_json(&v, false);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "pass");
	assert_int_equal(json_integer_value(json_object_get(j, "warnings")), 1);
	assert_string_equal(json_string_value(json_object_get(
	                        json_array_get(json_object_get(j, "cells"), 0), "gate")),
	                    "warn");
	json_decref(j);
	aw_host_verdict_release(&v);

	th.gate_rules = &off;
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de1", NULL, "grace", &v, &err), 0);
	assert_int_equal(v.status, AW_VERDICT_PASS);
	assert_int_equal(v.warnings, 0);
	assert_int_equal(cell_of(&v, "op=stadd cpu=0")->verdict, AW_VERDICT_REGRESSED);
	assert_int_equal(cell_of(&v, "op=stadd cpu=0")->gate, AW_GATE_OFF);
	aw_host_verdict_release(&v);
	assert_null(err);
	store_disconnect(&c);
	store_close(&s);
}

/* --cells: only the matching cells are read and judged; each glob says whether it matched a
 * cell of the head */
static void test_cell_globs(void **state)
{
	const char *const globs[] = {"op=ld*", "op=nothing*", "op=llsc *"};
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_host_verdict v;
	char *err = NULL;

	(void)state;
	aw_analysis_opts_default(&o);
	o.confirm_runs = 1; /* one head run decides here; test_confirmation() has the default */
	load_main(c, "grace");
	put(c, run_of("grace", "badc0de1", "feature", 14, 5.0, 500.0, 20.0, HASH));
	o.globs = globs;
	o.n_globs = 3;
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de1", NULL, "grace", &v, &err), 0);
	/* stadd regressed, but it is not asked for */
	assert_int_equal(v.status, AW_VERDICT_PASS);
	assert_int_equal(v.n_cells, 2);
	assert_int_equal(v.globs_matched, 1 | 4);
	cell_of(&v, "op=ldadd cpu=0");
	cell_of(&v, "op=llsc cpu=0");
	aw_host_verdict_release(&v);
	o.n_globs = 0;
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de1", NULL, "grace", &v, &err), 0);
	assert_int_equal(v.n_cells, 3 + FILLER);
	assert_int_equal(v.globs_matched, 0);
	aw_host_verdict_release(&v);
	assert_null(err);
	store_disconnect(&c);
	store_close(&s);
}

/* A run of the head that re-measures only stadd (a confirmation run measures the suspects). */
/* Keeps cells [from, from + n) of r, as a confirmation run of them carries. */
static struct aw_result *keep_cells(struct aw_result *r, size_t from, size_t n)
{
	for (size_t i = 0; i < r->n_cells; i++)
		if (i < from || i >= from + n)
			aw_cell_release(&r->cells[i]);
	memmove(r->cells, r->cells + from, n * sizeof(*r->cells));
	r->n_cells = n;
	return r;
}

static struct aw_result *only_stadd(struct aw_result *r)
{
	assert_string_equal(r->cells[1].op, "stadd");
	return keep_cells(r, 1, 1);
}

/* r made a re-measurement the agent sent because a run of the same commit left suspects */
static struct aw_result *confirming(struct aw_result *r)
{
	assert_int_equal(aw_set_str(&r->confirmation_of, "0e7c5a9b-1d2f-4a3b-8c4d-5e6f7a8b9c0f"),
	                 0);
	return r;
}

/* The default detection.confirm_runs (2): one head run makes stadd suspect and the host
 * unconfirmed. Its re-measurements (runs measuring only stadd) decide: over twelve runs of
 * history, one run as slow is no proof (one run in fourteen could be that far off for all
 * twelve runs can tell), two are (fail), while the cells not re-measured keep their one run;
 * re-measurements that do not reproduce the slowdown clear it. */
static void test_confirmation(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_host_verdict v;
	char *err = NULL;
	json_t *j;

	(void)state;
	aw_analysis_opts_default(&o);
	assert_int_equal(o.confirm_runs, 2);
	load_main(c, "grace");
	put(c, run_of("grace", "badc0de1", "feature", 14, 5.0, 500.0, 20.0, HASH));
	put(c, run_of("grace", "badc0de2", "feature", 15, 5.0, 500.0, 20.0, HASH));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de1", NULL, "grace", &v, &err), 0);
	assert_int_equal(v.status, AW_VERDICT_UNCONFIRMED);
	assert_int_equal(v.counts[AW_VERDICT_SUSPECT], 1);
	assert_int_equal(v.counts[AW_VERDICT_REGRESSED], 0);
	assert_string_equal(v.cells[0].key, "op=stadd cpu=0");
	assert_int_equal(v.cells[0].verdict, AW_VERDICT_SUSPECT);
	assert_int_equal(v.cells[0].p50.verdict, AW_VERDICT_SUSPECT);
	assert_int_equal(v.cells[0].n_head, 1);
	j = aw_host_verdict_json(&v, false);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "unconfirmed");
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "counts"), "suspect")), 1);
	assert_string_equal(json_string_value(json_object_get(
	                        json_array_get(json_object_get(j, "cells"), 0), "verdict")),
	                    "suspect");
	json_decref(j);
	aw_host_verdict_release(&v);

	/* one re-measurement as slow: still suspect; two: confirmed */
	put(c, confirming(
	           only_stadd(run_of("grace", "badc0de1", "feature", 14, 5.0, 498.0, 20.0, HASH))));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de1", NULL, "grace", &v, &err), 0);
	assert_int_equal(v.status, AW_VERDICT_UNCONFIRMED);
	assert_int_equal(cell_of(&v, "op=stadd cpu=0")->n_head, 2);
	aw_host_verdict_release(&v);
	put(c, confirming(
	           only_stadd(run_of("grace", "badc0de1", "feature", 14, 5.0, 503.0, 20.0, HASH))));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de1", NULL, "grace", &v, &err), 0);
	assert_int_equal(v.status, AW_VERDICT_FAIL);
	assert_int_equal(v.n_head_runs, 3);
	assert_int_equal(v.n_baseline_runs, 12);
	assert_string_equal(v.cells[0].key, "op=stadd cpu=0");
	assert_int_equal(v.cells[0].verdict, AW_VERDICT_REGRESSED);
	assert_int_equal(v.cells[0].n_head, 3);
	assert_int_equal(cell_of(&v, "op=ldadd cpu=0")->n_head, 1);
	assert_int_equal(v.counts[AW_VERDICT_SUSPECT], 0);
	aw_host_verdict_release(&v);

	/* not reproduced: the second run is back at 50 ns; the median of 500 and 50 is still
	 * far above, so two runs that disagree leave it to the rank test: a third decides */
	put(c, confirming(
	           only_stadd(run_of("grace", "badc0de2", "feature", 15, 5.0, 50.0, 20.0, HASH))));
	put(c, confirming(
	           only_stadd(run_of("grace", "badc0de2", "feature", 15, 5.0, 50.1, 20.0, HASH))));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de2", NULL, "grace", &v, &err), 0);
	assert_int_equal(cell_of(&v, "op=stadd cpu=0")->n_head, 3);
	assert_int_not_equal(cell_of(&v, "op=stadd cpu=0")->verdict, AW_VERDICT_REGRESSED);
	assert_int_not_equal(cell_of(&v, "op=stadd cpu=0")->verdict, AW_VERDICT_SUSPECT);
	assert_int_equal(v.status, AW_VERDICT_PASS);
	aw_host_verdict_release(&v);

	/* a confirmation run of a commit of main is no further run of the baseline: the next
	 * commit's history holds the first runs only */
	{
		struct aw_result *conf =
		    only_stadd(run_of("grace", "c0ffee12", "main", 12, 5.0, 5000.0, 20.0, HASH));

		assert_int_equal(
		    aw_set_str(&conf->confirmation_of, "0e7c5a9b-1d2f-4a3b-8c4d-5e6f7a8b9c0d"), 0);
		put(c, conf);
	}
	put(c, run_of("grace", "badc0de3", "feature", 16, 5.0, 50.0, 20.0, HASH));
	put(c, run_of("grace", "badc0de3", "feature", 16, 5.0, 50.0, 20.0, HASH));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de3", NULL, "grace", &v, &err), 0);
	assert_int_equal(v.n_baseline_runs, 12);
	assert_int_equal(cell_of(&v, "op=stadd cpu=0")->verdict, AW_VERDICT_UNCHANGED);
	assert_int_equal(v.status, AW_VERDICT_PASS);
	aw_host_verdict_release(&v);
	assert_null(err);
	store_disconnect(&c);
	store_close(&s);
}

/* A confirmation run carries only the suspects (and the anchors): three cells twice as slow
 * in the head's first run (whose 30 other cells are as usual) and again in two confirmations
 * that measured only them are confirmed regressions, and no run is disturbed. */
static void test_confirmation_of_suspects(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_host_verdict v;
	struct aw_result *conf;
	char *err = NULL;

	(void)state;
	aw_analysis_opts_default(&o);
	load_main(c, "grace");
	put(c, run_of("grace", "badc0de4", "feature", 14, 10.0, 100.0, 40.0, HASH));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de4", NULL, "grace", &v, &err), 0);
	assert_int_equal(v.status, AW_VERDICT_UNCONFIRMED);
	assert_int_equal(v.counts[AW_VERDICT_SUSPECT], 3);
	aw_host_verdict_release(&v);

	for (int k = 0; k < 2; k++) {
		conf = keep_cells(
		    run_of("grace", "badc0de4", "feature", 14, 10.1, 100.5 + k, 40.2, HASH), 0, 3);
		put(c, confirming(conf));
	}
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de4", NULL, "grace", &v, &err), 0);
	assert_int_equal(v.n_head_runs, 3);
	assert_int_equal(v.status, AW_VERDICT_FAIL);
	assert_int_equal(v.counts[AW_VERDICT_REGRESSED], 3);
	for (size_t i = 0; i < v.n_runs; i++)
		assert_false(v.runs[i].disturbed);
	assert_false(v.disturbed);
	assert_int_equal(cell_of(&v, "op=stadd cpu=0")->n_head, 3);
	assert_int_equal(cell_of(&v, "op=stadd cpu=0")->p50.head_n, 3);
	assert_int_equal(cell_of(&v, "op=cas cpu=3")->n_head, 1);
	aw_host_verdict_release(&v);
	assert_null(err);
	store_disconnect(&c);
	store_close(&s);
}

/* r's stadd cell made the cell of a subject library, "subject=chain op=op cpu=0" */
static struct aw_result *as_subject(struct aw_result *r)
{
	for (size_t i = 0; i < r->n_cells; i++) {
		struct aw_cell *cell = &r->cells[i];

		if (strcmp(cell->op, "stadd"))
			continue;
		assert_int_equal(aw_set_str(&cell->subject, "chain"), 0);
		assert_int_equal(aw_set_str(&cell->op, "op"), 0);
		free(cell->key);
		cell->key = NULL;
		assert_int_equal(aw_cell_make_key(cell), 0);
	}
	return r;
}

/* stadd's own run-to-run spread on main (in %, about 3% robust sigma), while the other cells
 * follow the runs' common ripple: a cell alone in its noise, like a library's subject. */
static const double wide[12] = {0, 3.8, -3.1, 1.5, -4.0, 2.6, -1.2, 4.1, -2.9, 0.8, -2.0, 3.2};

static void load_spread_of(struct store_conn *c, const char *host, const double *pct)
{
	for (int i = 1; i <= 12; i++) {
		char sha[16];

		snprintf(sha, sizeof(sha), "c0ffee%02d", i);
		put(c, as_subject(run_of(host, sha, "main", i, 5.0, 50.0 * (1 + pct[i - 1] / 100),
		                         10.0, HASH)));
	}
}

/* The confirmation budget (detection.confirm_budget): a subject whose runs wander by about 3%
 * is +6% in one run, suspect; its re-measurements disagree (+2%, +9%, +5.5%), so after the
 * budget of three the cell is inconclusive, its change still as large as the threshold and its
 * bound not below it, and the host is inconclusive, which no strict gate passes. With a budget
 * of ten the same runs leave it suspect: more re-measurements may settle it. A cell whose runs
 * agree within the threshold after its budget is unchanged. */
static void test_budget_inconclusive(void **state)
{
	static const double again[] = {51.0, 54.5, 52.75};
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_host_verdict v;
	const struct aw_cell_verdict *cv;
	const char *key = "subject=chain op=op cpu=0";
	char *err = NULL;
	json_t *j;

	(void)state;
	aw_analysis_opts_default(&o);
	assert_int_equal(o.confirm_budget, 10);
	load_spread_of(c, "grace", wide);
	put(c, as_subject(run_of("grace", "badc0de5", "feature", 14, 5.0, 53.0, 10.0, HASH)));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de5", NULL, "grace", &v, &err), 0);
	assert_int_equal(cell_of(&v, key)->p50.verdict, AW_VERDICT_SUSPECT);
	assert_int_equal(v.status, AW_VERDICT_UNCONFIRMED);
	aw_host_verdict_release(&v);

	for (size_t k = 0; k < 3; k++)
		put(c, confirming(as_subject(only_stadd(run_of("grace", "badc0de5", "feature", 14,
		                                               5.0, again[k], 10.0, HASH)))));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de5", NULL, "grace", &v, &err), 0);
	assert_int_equal(cell_of(&v, key)->p50.verdict, AW_VERDICT_SUSPECT);
	aw_host_verdict_release(&v);

	o.confirm_budget = 3;
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de5", NULL, "grace", &v, &err), 0);
	cv = cell_of(&v, key);
	assert_int_equal(cv->n_head, 4);
	assert_int_equal(cv->p50.verdict, AW_VERDICT_INCONCLUSIVE);
	assert_int_equal(cv->verdict, AW_VERDICT_INCONCLUSIVE);
	assert_true(cv->p50.change_hi >= cv->p50.threshold);
	assert_non_null(cv->p50.note);
	assert_int_equal(v.status, AW_VERDICT_INCONCLUSIVE);
	assert_int_equal(v.counts[AW_VERDICT_INCONCLUSIVE], 1);
	assert_string_equal(v.cells[0].key, key); /* listed first, before the unchanged */
	j = aw_host_verdict_json(&v, false);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "inconclusive");
	json_decref(j);
	aw_host_verdict_release(&v);

	/* runs that agree: unchanged within the budget */
	put(c, as_subject(run_of("grace", "badc0de6", "feature", 15, 5.0, 52.6, 10.0, HASH)));
	for (size_t k = 0; k < 3; k++)
		put(c,
		    confirming(as_subject(only_stadd(run_of("grace", "badc0de6", "feature", 15, 5.0,
		                                            50.2 + 0.3 * (double)k, 10.0, HASH)))));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de6", NULL, "grace", &v, &err), 0);
	assert_int_equal(cell_of(&v, key)->p50.verdict, AW_VERDICT_UNCHANGED);
	assert_int_equal(v.status, AW_VERDICT_PASS);
	aw_host_verdict_release(&v);
	assert_null(err);
	store_disconnect(&c);
	store_close(&s);
}

/* A cell that even the whole budget could not clear is noisy after one run: a subject whose runs
 * wander by about 3% read +3.5% in its head run; ten more runs would bound its change to about
 * +-2% (t x noise x sqrt(1/11 + 1/window)), which about +3.5% still crosses the 5% threshold.
 * Nor is a regression its estimate would show: the cell is noisy at once and the host passes, no
 * re-measurement asked. A head that read +0.5%, which the budget could clear, stays suspect. */
static void test_noisy_at_once(void **state)
{
	static const double wider[12] = {0,    4.4, -3.6, 1.7, -4.6, 3.0,
	                                 -1.4, 4.7, -3.3, 0.9, -2.3, 3.7};
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_host_verdict v;
	const struct aw_cell_verdict *cv;
	const char *key = "subject=chain op=op cpu=0";
	char *err = NULL;
	double reach;

	(void)state;
	aw_analysis_opts_default(&o);
	assert_true(o.confirm_runs > 1);
	load_spread_of(c, "grace", wider);
	put(c, as_subject(run_of("grace", "badc0de7", "feature", 14, 5.0, 52.0, 10.0, HASH)));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de7", NULL, "grace", &v, &err), 0);
	cv = cell_of(&v, key);
	reach = 1.697 * cv->p50.noise *
	        sqrt(1.0 / (1 + o.confirm_budget) + 1.0 / (double)cv->p50.window);
	/* (its noise alone would not make it noisy: the budget could bound a change of 0) */
	assert_true(reach < log1p(cv->p50.threshold));
	assert_true(fabs(log1p(cv->p50.change)) + reach >= log1p(cv->p50.threshold));
	assert_int_equal(cv->n_head, 1);
	assert_int_equal(cv->p50.verdict, AW_VERDICT_NOISY);
	assert_int_equal(v.status, AW_VERDICT_PASS);
	aw_host_verdict_release(&v);

	put(c, as_subject(run_of("grace", "badc0de8", "feature", 15, 5.0, 50.25, 10.0, HASH)));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de8", NULL, "grace", &v, &err), 0);
	assert_int_equal(cell_of(&v, key)->p50.verdict, AW_VERDICT_SUSPECT);
	assert_int_equal(v.status, AW_VERDICT_UNCONFIRMED);
	aw_host_verdict_release(&v);
	assert_null(err);
	store_disconnect(&c);
	store_close(&s);
}

/* detection.screen_noise: on main the subject follows the runs' common ripple (no spread of
 * its own), so one run at +4% is precisely +4% as far as the history can tell, and its bound
 * falls short of the 5% threshold. The screen widens that bound to 1% of noise, so the run is
 * suspect and re-measured; with screen_noise 0 it passes. Re-measured at +4% twice, the three
 * runs are judged with the history's noise alone: unchanged, the gate passes. Re-measured at
 * +6%, they regress. */
static void test_screen_noise(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_host_verdict v;
	const struct aw_cell_verdict *cv;
	const char *key = "subject=chain op=op cpu=0";
	char *err = NULL;

	(void)state;
	aw_analysis_opts_default(&o);
	assert_true(o.detect.screen_noise == 0.01);
	for (int i = 1; i <= 12; i++) {
		char sha[16];

		snprintf(sha, sizeof(sha), "c0ffee%02d", i);
		put(c, as_subject(run_of("grace", sha, "main", i, 5.0, 50.0, 10.0, HASH)));
	}
	put(c, as_subject(run_of("grace", "badc0de8", "feature", 14, 5.0, 52.0, 10.0, HASH)));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de8", NULL, "grace", &v, &err), 0);
	cv = cell_of(&v, key);
	assert_int_equal(cv->p50.verdict, AW_VERDICT_SUSPECT);
	assert_true(cv->p50.noise < o.detect.screen_noise);
	assert_true(cv->p50.change < 0.045);
	assert_true(cv->p50.change_hi >= cv->p50.threshold); /* widened by the screen */
	assert_non_null(strstr(cv->p50.note, "could still be"));
	assert_int_equal(v.status, AW_VERDICT_UNCONFIRMED);
	aw_host_verdict_release(&v);

	o.detect.screen_noise = 0;
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de8", NULL, "grace", &v, &err), 0);
	assert_int_equal(cell_of(&v, key)->p50.verdict, AW_VERDICT_UNCHANGED);
	assert_int_equal(v.status, AW_VERDICT_PASS);
	aw_host_verdict_release(&v);
	o.detect.screen_noise = 0.01;

	for (int k = 0; k < 2; k++)
		put(c, confirming(as_subject(only_stadd(
		           run_of("grace", "badc0de8", "feature", 14, 5.0, 52.0, 10.0, HASH)))));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de8", NULL, "grace", &v, &err), 0);
	cv = cell_of(&v, key);
	assert_int_equal(cv->n_head, 3);
	assert_int_equal(cv->p50.verdict, AW_VERDICT_UNCHANGED);
	assert_int_equal(v.status, AW_VERDICT_PASS);
	aw_host_verdict_release(&v);

	put(c, as_subject(run_of("grace", "badc0de9", "feature", 15, 5.0, 53.0, 10.0, HASH)));
	for (int k = 0; k < 2; k++)
		put(c, confirming(as_subject(only_stadd(
		           run_of("grace", "badc0de9", "feature", 15, 5.0, 53.0, 10.0, HASH)))));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de9", NULL, "grace", &v, &err), 0);
	assert_int_equal(cell_of(&v, key)->p50.verdict, AW_VERDICT_REGRESSED);
	assert_int_equal(v.status, AW_VERDICT_FAIL);
	aw_host_verdict_release(&v);
	assert_null(err);
	store_disconnect(&c);
	store_close(&s);
}

/* Multiplies every time of one cell by `factor`. */
static void scale_cell(struct aw_cell *c, double factor)
{
	c->min *= factor;
	c->p50 *= factor;
	c->p95 *= factor;
	c->p99 *= factor;
	c->max *= factor;
	c->ci_lo *= factor;
	c->ci_hi *= factor;
}

/* The runs of `r` on a clock `clock` times the usual one: a reference series beside every
 * cell, and stadd (a chain of dependent operations) keeping time with it; the other cells
 * wander by `wander` on their own. */
static struct aw_result *on_clock(struct aw_result *r, double clock, double wander)
{
	assert_int_equal(aw_set_str(&r->reference_kernel, "mulchain-v1"), 0);
	for (size_t i = 0; i < r->n_cells; i++) {
		struct aw_cell *c = &r->cells[i];

		c->reference_ns = 0.8357 * clock;
		scale_cell(c, !strcmp(c->op, "stadd") ? clock : wander);
	}
	return r;
}

/* A reference through the store: on a host whose runs switch between two clocks 10% apart, a
 * cell that keeps time with the reference kernel measured beside it is judged on the runs
 * adjusted by it (its "reference" in the verdict names the kernel): +10% from a run on a
 * faster clock is a suspect, and a head on the slow clock, unchanged, is no change. A cell
 * that wanders on its own is judged as measured. */
static void test_clock_regimes(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_host_verdict v;
	char *err = NULL;

	(void)state;
	aw_analysis_opts_default(&o);
	for (int i = 1; i <= 30; i++) {
		char sha[16];

		snprintf(sha, sizeof(sha), "c0ffee%02d", i);
		put(c, on_clock(run_of("clk", sha, "main", i, 5.0, 50.0, 20.0, HASH),
		                i % 3 ? 1.0 : 0.90, 1 + 0.01 * ((i * 7) % 4)));
	}
	put(c,
	    on_clock(run_of("clk", "c10c4001", "feature", 31, 5.0, 55.0, 20.0, HASH), 0.95, 1.01));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "c10c4001", NULL, "clk", &v, &err), 0);
	assert_non_null(cell_of(&v, "op=stadd cpu=0")->p50.reference);
	assert_string_equal(cell_of(&v, "op=stadd cpu=0")->p50.reference, "mulchain-v1");
	assert_null(cell_of(&v, "op=ldadd cpu=0")->p50.reference);
	assert_true(fabs(cell_of(&v, "op=stadd cpu=0")->p50.change - 0.10) < 0.005);
	assert_int_equal(cell_of(&v, "op=stadd cpu=0")->p50.verdict, AW_VERDICT_SUSPECT);
	{
		json_t *j = aw_host_verdict_json(&v, false);
		json_t *cells = json_object_get(j, "cells");
		bool seen = false;

		for (size_t i = 0; i < json_array_size(cells); i++) {
			json_t *cell = json_array_get(cells, i);
			json_t *ref;

			if (strcmp(json_string_value(json_object_get(cell, "key")),
			           "op=stadd cpu=0"))
				continue;
			ref = json_object_get(json_object_get(cell, "p50"), "reference");
			assert_string_equal(json_string_value(json_object_get(ref, "kernel")),
			                    "mulchain-v1");
			seen = true;
		}
		assert_true(seen);
		json_decref(j);
	}
	aw_host_verdict_release(&v);
	put(c,
	    on_clock(run_of("clk", "c10c4002", "feature", 32, 5.0, 50.0, 20.0, HASH), 1.0, 1.02));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "c10c4002", NULL, "clk", &v, &err), 0);
	assert_true(fabs(cell_of(&v, "op=stadd cpu=0")->p50.change) < 0.005);
	assert_int_equal(cell_of(&v, "op=stadd cpu=0")->p50.verdict, AW_VERDICT_UNCHANGED);
	aw_host_verdict_release(&v);
	store_disconnect(&c);
	store_close(&s);
}

/* The run of `r` on a host whose memory state is `mem` times its usual (other tenants' cache
 * traffic): the family beside every cell, the chains and the atomic add steady, the walk
 * steady too (a dependent chase that waits for each miss does not feel it), the gather
 * (misses in flight together) `mem` times its usual 8 ns, and stadd, a lookup in a table of
 * megabytes, keeping time with the gather; `gather` false: the document carries no gather, as
 * an agent from before it sends. */
static struct aw_result *in_memory(struct aw_result *r, double mem, bool gather)
{
	unsigned mask = AW_REF_ALL & ~(gather ? 0u : 1u << AW_REF_MEMGATHER);
	static const double usual[AW_REF_COUNT] = {0.8357, 1.09, 5.45, 150.0, 8.0};

	assert_int_equal(aw_result_set_references(r, mask), 0);
	for (size_t i = 0; i < r->n_cells; i++) {
		struct aw_cell *c = &r->cells[i];

		for (int k = 0; k < AW_REF_COUNT; k++)
			c->ref_ns[k] =
			    mask & (1u << k) ? usual[k] * (k == AW_REF_MEMGATHER ? mem : 1) : NAN;
		if (!strcmp(c->op, "stadd"))
			scale_cell(c, mem);
	}
	return r;
}

/* The gather's memory state through the store: on a host whose memory state wanders over two
 * to one from run to run, a cell that keeps time with the gather beside the run's anchor cells
 * is judged on its runs corrected by it (the verdict's reference names "memory-gather"): +30%
 * in a usual state is a suspect of +30%, and an unchanged head measured while the memory was
 * 30% slower (within the history's usual band) is unchanged. Without the gather in the
 * documents, that head reads +21%. */
static void test_memory_gather_state(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_host_verdict v;
	char *err = NULL;

	(void)state;
	aw_analysis_opts_default(&o);
	for (int with = 1; with >= 0; with--) {
		const char *host = with ? "gather" : "no-gather";

		for (int i = 1; i <= 30; i++) {
			char sha[16];
			double u = fmod(i * 0.6180339887, 1.0); /* spread evenly, in no clusters */

			snprintf(sha, sizeof(sha), "c0ffee%02d", i);
			put(c, in_memory(run_of(host, sha, "main", i, 5.0, 50.0, 20.0, HASH),
			                 0.7 + 0.75 * u, with));
		}
		put(c, in_memory(run_of(host, "9a7e0001", "feature", 31, 5.0, 65.0, 20.0, HASH),
		                 1.0, with));
		put(c, in_memory(run_of(host, "9a7e0002", "feature", 32, 5.0, 50.0, 20.0, HASH),
		                 1.3, with));
		assert_int_equal(aw_analysis_host(c, &o, "linux", "9a7e0001", NULL, host, &v, &err),
		                 0);
		if (with) {
			const struct aw_metric_verdict *m = &cell_of(&v, "op=stadd cpu=0")->p50;

			assert_non_null(m->reference);
			assert_string_equal(m->reference, "memory-gather");
			assert_true(fabs(m->change - 0.30) < 0.01);
			assert_int_equal(m->verdict, AW_VERDICT_SUSPECT);
		}
		aw_host_verdict_release(&v);
		assert_int_equal(aw_analysis_host(c, &o, "linux", "9a7e0002", NULL, host, &v, &err),
		                 0);
		{
			const struct aw_metric_verdict *m = &cell_of(&v, "op=stadd cpu=0")->p50;

			if (with) {
				assert_string_equal(m->reference, "memory-gather");
				assert_true(fabs(m->change) < 0.01);
				assert_int_equal(m->verdict, AW_VERDICT_UNCHANGED);
			} else {
				assert_null(m->reference);
				assert_true(m->change > 0.15);
				assert_int_not_equal(m->verdict, AW_VERDICT_UNCHANGED);
			}
		}
		aw_host_verdict_release(&v);
	}
	store_disconnect(&c);
	store_close(&s);
}

/* thresholds' p99_gate (default warn): a tail twice as high in a run and in both its
 * re-measurements regresses p99, which is listed as a warning and fails no gate; with
 * p99_gate fail it fails it. */
static void test_p99_gate(void **state)
{
	struct aw_thresholds th = {.p50 = 0.05, .p99 = 0.25, .p99_gate = AW_GATE_WARN};
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_host_verdict v;
	struct aw_result *r;
	char *err = NULL;

	(void)state;
	aw_analysis_opts_default(&o);
	o.thresholds = &th;
	load_main(c, "grace");
	for (int k = 0; k < 3; k++) { /* a first run and two re-measurements of stadd */
		r = run_of("grace", "badc0de7", "feature", 14, 5.0, 50.0, 20.0, HASH);
		r->cells[1].p99 = r->cells[1].max = 2 * r->cells[1].p99;
		put(c, k ? confirming(only_stadd(r)) : r);
	}
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de7", NULL, "grace", &v, &err), 0);
	assert_int_equal(cell_of(&v, "op=stadd cpu=0")->p50.verdict, AW_VERDICT_UNCHANGED);
	assert_int_equal(cell_of(&v, "op=stadd cpu=0")->p99.verdict, AW_VERDICT_REGRESSED);
	assert_int_equal(v.status, AW_VERDICT_PASS);
	assert_int_equal(v.warnings, 1);
	aw_host_verdict_release(&v);
	th.p99_gate = AW_GATE_FAIL;
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de7", NULL, "grace", &v, &err), 0);
	assert_int_equal(v.status, AW_VERDICT_FAIL);
	aw_host_verdict_release(&v);
	assert_null(err);
	store_disconnect(&c);
	store_close(&s);
}

/* The gate reads the verdict cached after the commit's last upload: aw_analysis_host_cached()
 * returns it (the same status, counts and listed cells as computed now) while no run of the
 * commit came since; a later run, or cell globs, make it compute afresh. */
static void test_cached_verdict(void **state)
{
	const char *const globs[] = {"op=st*"};
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_host_verdict v, w;
	bool cached = false;
	char *err = NULL;

	(void)state;
	aw_analysis_opts_default(&o);
	load_main(c, "grace");
	put(c, run_of("grace", "badc0de8", "feature", 14, 5.0, 500.0, 20.0, HASH));
	assert_int_equal(
	    aw_analysis_after_ingest(c, &o, "linux", "badc0de8", "grace", "feature", &err), 0);
	assert_int_equal(
	    aw_analysis_host_cached(c, &o, "linux", "badc0de8", "grace", &v, &cached, &err), 0);
	assert_true(cached);
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de8", NULL, "grace", &w, &err), 0);
	assert_int_equal(v.status, AW_VERDICT_UNCONFIRMED);
	assert_int_equal(v.status, w.status);
	/* (the cache lists the cells that are not unchanged; the counts cover them all) */
	assert_int_equal(v.n_cells, w.n_cells - w.counts[AW_VERDICT_UNCHANGED]);
	for (int k = 0; k < AW_VERDICT_COUNT; k++)
		assert_int_equal(v.counts[k], w.counts[k]);
	assert_string_equal(v.cells[0].key, w.cells[0].key);
	assert_true(fabs(v.cells[0].p50.change - w.cells[0].p50.change) < 1e-9);
	aw_host_verdict_release(&v);
	aw_host_verdict_release(&w);

	/* a re-measurement stored, the cache not yet refreshed: computed now, and confirmed */
	put(c, only_stadd(run_of("grace", "badc0de8", "feature", 14, 5.0, 502.0, 20.0, HASH)));
	assert_int_equal(
	    aw_analysis_host_cached(c, &o, "linux", "badc0de8", "grace", &v, &cached, &err), 0);
	assert_false(cached);
	assert_int_equal(v.status, AW_VERDICT_FAIL);
	aw_host_verdict_release(&v);

	o.globs = globs;
	o.n_globs = 1;
	assert_int_equal(
	    aw_analysis_after_ingest(c, &o, "linux", "badc0de8", "grace", "feature", &err), 0);
	assert_int_equal(
	    aw_analysis_host_cached(c, &o, "linux", "badc0de8", "grace", &v, &cached, &err), 0);
	assert_false(cached);
	assert_int_equal(v.n_cells, 1);
	aw_host_verdict_release(&v);
	assert_null(err);
	store_disconnect(&c);
	store_close(&s);
}

struct cps {
	int n;
	char key[64], commit[16];
};

static int on_cp(const struct store_changepoint *p, void *cls)
{
	struct cps *x = cls;

	if (!strcmp(p->metric, "p50")) {
		snprintf(x->key, sizeof(x->key), "%s", p->cell_key);
		snprintf(x->commit, sizeof(x->commit), "%s", p->commit);
		assert_true(p->after > p->before);
	}
	x->n++;
	return 0;
}

/* The change points stored for one cell of grace's main. */
static struct cps cps_of(struct store_conn *c, const char *cell)
{
	struct cps cp = {0};

	assert_int_equal(store_changepoints_list(c, "linux", "grace", "main", cell, on_cp, &cp), 0);
	return cp;
}

/* Runs 1 to 12 of grace's main, its ldadd, stadd and llsc at before[] up to run 6 and at
 * after[] from run 7 (c0ffee07) on. */
static void put_step(struct store_conn *c, const double *before, const double *after)
{
	for (int i = 1; i <= 12; i++) {
		const double *v = i < 7 ? before : after;
		char sha[16];

		snprintf(sha, sizeof(sha), "c0ffee%02d", i);
		put(c, run_of("grace", sha, "main", i, v[0], v[1], v[2], HASH));
	}
}

static int on_verdict(const struct store_verdict *v, void *cls)
{
	int *n = cls;

	assert_string_equal(v->status, "fail");
	assert_non_null(strstr(v->json, "op=stadd cpu=0"));
	(*n)++;
	return 0;
}

static void test_changepoints_and_cache(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct cps cp = {0};
	char *err = NULL;
	int n = 0;

	(void)state;
	aw_analysis_opts_default(&o);
	o.confirm_runs = 1; /* one head run decides here; test_confirmation() has the default */
	load_main(c, "grace");
	put(c, run_of("grace", "badc0de1", "main", 14, 5.0, 500.0, 20.0, HASH));
	assert_int_equal(
	    aw_analysis_after_ingest(c, &o, "linux", "badc0de1", "grace", "main", &err), 0);
	assert_null(err);
	assert_int_equal(store_changepoints_list(c, "linux", "grace", "main", NULL, on_cp, &cp), 0);
	assert_int_equal(cp.n, 2); /* llsc p50 and p99 */
	assert_string_equal(cp.key, "op=llsc cpu=0");
	assert_string_equal(cp.commit, "c0ffee07");
	memset(&cp, 0, sizeof(cp));
	assert_int_equal(
	    store_changepoints_list(c, NULL, "grace", "main", "op=stadd cpu=0", on_cp, &cp), 0);
	assert_int_equal(cp.n, 0);
	assert_int_equal(store_verdict_list(c, "linux", "badc0de1", NULL, 10, on_verdict, &n), 0);
	assert_int_equal(n, 1);
	/* recomputing replaces, never duplicates */
	assert_int_equal(
	    aw_analysis_after_ingest(c, &o, "linux", "badc0de1", "grace", "main", &err), 0);
	memset(&cp, 0, sizeof(cp));
	assert_int_equal(store_changepoints_list(c, "linux", "grace", "main", NULL, on_cp, &cp), 0);
	assert_int_equal(cp.n, 2);
	n = 0;
	assert_int_equal(store_verdict_list(c, NULL, NULL, "grace", 10, on_verdict, &n), 0);
	assert_int_equal(n, 1);
	store_disconnect(&c);
	store_close(&s);
}

/* Whether the verdict JSON of `cell`'s p50 says "bimodal" (what atomwatch-ci prints). */
static bool json_bimodal(const json_t *host, const char *cell)
{
	size_t i;
	json_t *c;

	json_array_foreach (json_object_get(host, "cells"), i, c)
		if (!strcmp(json_string_value(json_object_get(c, "key")), cell))
			return json_is_true(json_object_get(json_object_get(c, "p50"), "bimodal"));
	fail_msg("no cell '%s' in the verdict", cell);
	return false;
}

/* The "bimodal" of the verdict JSON, from stored runs: llsc, whose runs land at 10 or at 14 ns
 * (each level to a fraction of a percent), has it; ldadd, steady at 5 ns but with one run whose
 * p99 was five times its p50 (a preempted batch or two), has not. */
static void test_bimodal_badge(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_host_verdict v;
	char *err = NULL;
	json_t *j;

	(void)state;
	aw_analysis_opts_default(&o);
	for (int i = 1; i <= 13; i++) {
		struct aw_result *r;
		char sha[16];

		snprintf(sha, sizeof(sha), "c0ffee%02d", i);
		r = run_of("grace", sha, "main", i, 5.0, 50.0, i % 3 ? 10.0 : 14.0, HASH);
		if (i == 8)
			r->cells[0].p99 = r->cells[0].max = 5 * r->cells[0].p50; /* ldadd's tail */
		put(c, r);
	}
	assert_int_equal(aw_analysis_host(c, &o, "linux", "c0ffee13", NULL, "grace", &v, &err), 0);
	assert_null(err);
	j = aw_host_verdict_json(&v, true);
	assert_non_null(j);
	assert_true(json_bimodal(j, "op=llsc cpu=0"));
	assert_false(json_bimodal(j, "op=ldadd cpu=0"));
	assert_false(json_bimodal(j, "op=stadd cpu=0"));
	json_decref(j);
	aw_host_verdict_release(&v);
	store_disconnect(&c);
	store_close(&s);
}

/* A change point is stored (and so listed and drawn) only where its move reaches the cell's
 * threshold for that metric: a 1.2% step of llsc, clear to the t-test over these quiet runs (and
 * over the 1% the change point search asks), is below every threshold (p50 5%, p99 25% by
 * default) and is no change point; stadd's +20% step is one in p50, not in p99 (under 25%); with
 * thresholds p50 5% and p99 10% it is one in both, and so is llsc's +8% in p50 under a rule that
 * sets its p50 threshold to 2% (not in p99, whose threshold stays 10%). */
static void test_changepoints_below_threshold(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_threshold_rule rule = {.op = "llsc", .threshold = 0.02};
	struct aw_thresholds th = {.p50 = 0.05, .p99 = 0.10, .p50_rules = &rule, .n_p50_rules = 1};
	struct aw_analysis_opts o;
	struct cps cp = {0};
	char *err = NULL;

	(void)state;
	aw_analysis_opts_default(&o);
	put_step(c, (const double[3]){5.0, 50.0, 10.0}, (const double[3]){5.0, 60.0, 10.12});
	assert_int_equal(aw_analysis_changepoints(c, &o, "linux", "grace", "main", &err), 0);
	assert_null(err);
	assert_int_equal(cps_of(c, "op=llsc cpu=0").n, 0);
	cp = cps_of(c, "op=stadd cpu=0");
	assert_int_equal(cp.n, 1); /* p50 only */
	assert_string_equal(cp.commit, "c0ffee07");
	o.thresholds = &th;
	assert_int_equal(aw_analysis_changepoints(c, &o, "linux", "grace", "main", &err), 0);
	assert_int_equal(cps_of(c, "op=stadd cpu=0").n, 2); /* p50 and p99 */

	/* llsc +8% in runs 13 to 18: over its own 2% rule in p50, under the 10% of p99 */
	for (int i = 13; i <= 18; i++) {
		char sha[16];

		snprintf(sha, sizeof(sha), "c0ffee%02d", i);
		put(c, run_of("grace", sha, "main", i, 5.0, 60.0, 10.9, HASH));
	}
	o.thresholds = &th;
	assert_int_equal(aw_analysis_changepoints(c, &o, "linux", "grace", "main", &err), 0);
	assert_null(err);
	cp = cps_of(c, "op=llsc cpu=0");
	assert_int_equal(cp.n, 1);
	assert_string_equal(cp.commit, "c0ffee13");
	store_disconnect(&c);
	store_close(&s);
}

/* A step under the 0.1 ns floor values are taken at is a change point where it reaches the
 * threshold from a level above the floor: ldadd 1.504 -> 1.601 ns (+6.5%, 0.097 ns), as the
 * verdict now calls it. From a level below the floor (stadd 0.05 -> 0.09 ns, "+80%") a move
 * under the floor is none: it is told in ns there, and 0.04 ns is no change. */
static void test_changepoint_under_the_floor(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct cps cp = {0};
	char *err = NULL;

	(void)state;
	aw_analysis_opts_default(&o);
	put_step(c, (const double[3]){1.504, 0.05, 10.0}, (const double[3]){1.601, 0.09, 10.0});
	assert_int_equal(aw_analysis_changepoints(c, &o, "linux", "grace", "main", &err), 0);
	assert_null(err);
	cp = cps_of(c, "op=ldadd cpu=0");
	assert_int_equal(cp.n, 1);
	assert_string_equal(cp.commit, "c0ffee07");
	assert_int_equal(cps_of(c, "op=stadd cpu=0").n, 0);
	store_disconnect(&c);
	store_close(&s);
}

/* r measured with the atomic kernel `f` times its usual beside every cell, the other kernels as
 * usual: a neighbour that shares the core in a way only the atomic feels. */
static struct aw_result *atomic_at(struct aw_result *r, double f)
{
	in_memory(r, 1.0, true);
	for (size_t i = 0; i < r->n_cells; i++)
		r->cells[i].ref_ns[AW_REF_ATOMICADD] *= f;
	return r;
}

/* Head runs 6% slower, each measured beside an atomic kernel 1.5x anything in its level's history
 * (a neighbour that shares the core in a way only the atomic feels: detect_odd_state()), confirm
 * nothing: the head is suspect, re-measured; once the budget is spent on runs like it,
 * inconclusive, never regressed (the gate withholds the pass; before, it failed). */
static void test_runs_beside_a_slow_kernel_confirm_nothing(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_host_verdict v;
	const struct aw_cell_verdict *cv;
	char *err = NULL;

	(void)state;
	aw_analysis_opts_default(&o);
	for (int i = 1; i <= 30; i++) {
		char sha[16];

		snprintf(sha, sizeof(sha), "c0ffee%02d", i);
		put(c, atomic_at(run_of("odd", sha, "main", i, 5.0, 50.0, 20.0, HASH), 1.0));
	}
	put(c, atomic_at(run_of("odd", "badc0de9", "feature", 31, 5.0, 53.0, 20.0, HASH), 1.5));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de9", NULL, "odd", &v, &err), 0);
	cv = cell_of(&v, "op=stadd cpu=0");
	assert_int_equal(cv->p50.verdict, AW_VERDICT_SUSPECT);
	assert_non_null(cv->p50.note);
	assert_non_null(strstr(cv->p50.note, "decide nothing"));
	assert_int_equal(v.status, AW_VERDICT_UNCONFIRMED);
	aw_host_verdict_release(&v);
	for (unsigned k = 0; k < o.confirm_budget; k++)
		put(c, confirming(only_stadd(atomic_at(
		           run_of("odd", "badc0de9", "feature", 31, 5.0, 53.0, 20.0, HASH), 1.5))));
	assert_int_equal(aw_analysis_host(c, &o, "linux", "badc0de9", NULL, "odd", &v, &err), 0);
	cv = cell_of(&v, "op=stadd cpu=0");
	assert_int_equal(cv->p50.verdict, AW_VERDICT_INCONCLUSIVE);
	assert_int_equal(v.status, AW_VERDICT_INCONCLUSIVE);
	aw_host_verdict_release(&v);
	assert_null(err);
	store_disconnect(&c);
	store_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_verdict_regressed_first),
	    cmocka_unit_test(test_incomplete_and_compare),
	    cmocka_unit_test(test_changepoints_and_cache),
	    cmocka_unit_test(test_changepoints_below_threshold),
	    cmocka_unit_test(test_bimodal_badge),
	    cmocka_unit_test(test_gate_levels),
	    cmocka_unit_test(test_cell_globs),
	    cmocka_unit_test(test_confirmation),
	    cmocka_unit_test(test_confirmation_of_suspects),
	    cmocka_unit_test(test_budget_inconclusive),
	    cmocka_unit_test(test_screen_noise),
	    cmocka_unit_test(test_clock_regimes),
	    cmocka_unit_test(test_p99_gate),
	    cmocka_unit_test(test_cached_verdict),
	    /* (after the others: run_of()'s ripple counts every run before it) */
	    cmocka_unit_test(test_noisy_at_once),
	    cmocka_unit_test(test_memory_gather_state),         /* (its ripple does not matter) */
	    cmocka_unit_test(test_changepoint_under_the_floor), /* (nor this one's) */
	    cmocka_unit_test(test_runs_beside_a_slow_kernel_confirm_nothing),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
