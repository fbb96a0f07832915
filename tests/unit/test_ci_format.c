/* atomwatch-ci without a network: gate and compare replies (tests/fixtures/gate) read into the
 * model, replies of the wrong shape refused naming the field, the exit status of each report,
 * and the Markdown, JUnit, console and GitHub formats, with hostile host names and cell keys
 * escaped for each format. */
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

#include "aw/util.h"
#include "ci.h"

#define BASE "http://collector.example:8080"

static char *fixture(const char *name, size_t *len)
{
	const char *src = getenv("AW_SOURCE_DIR");
	char path[4096], *data = NULL, *err = NULL;

	snprintf(path, sizeof(path), "%s/tests/fixtures/gate/%s", src ? src : "../..", name);
	if (aw_read_file(path, 1 << 20, &data, len, &err)) {
		fail_msg("%s", err);
	}
	return data;
}

static void load(const char *name, bool compare, struct aw_ci_report *r)
{
	size_t len;
	char *text = fixture(name, &len), *err = NULL;
	int rc = aw_ci_report_parse(text, len, compare, r, &err);

	if (rc)
		fail_msg("%s: %s", name, err);
	free(text);
}

typedef int (*format_fn)(const struct aw_ci_report *, const char *, struct aw_buf *);

static char *formatted(const struct aw_ci_report *r, format_fn fn)
{
	struct aw_buf b;

	aw_buf_init(&b, 1 << 22);
	assert_int_equal(fn(r, BASE, &b), 0);
	return aw_buf_detach(&b);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static void test_parse_fail(void **state)
{
	struct aw_ci_report r;
	const struct aw_ci_cell *c;

	(void)state;
	load("fail.json", false, &r);
	assert_string_equal(r.project, "libpcpu");
	assert_string_equal(r.commit, "b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f80");
	assert_string_equal(r.baseline, "main");
	assert_int_equal(r.status, AW_VERDICT_FAIL);
	assert_string_equal(r.report, "/commits/b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f80");
	assert_null(r.hosts[0].disturbed_run); /* a reply without "runs": nothing disturbed */
	assert_int_equal(r.n_charts, 1);
	assert_string_equal(r.charts[0].name, "heatmap");
	assert_int_equal(r.n_hosts, 2);
	assert_string_equal(r.hosts[0].name, "x86-ci");
	assert_int_equal(r.hosts[0].status, AW_VERDICT_FAIL);
	assert_int_equal(r.hosts[0].n_head_runs, 1);
	assert_int_equal(r.hosts[0].baseline_runs, 4);
	assert_int_equal(r.hosts[0].counts[AW_VERDICT_REGRESSED], 1);
	assert_int_equal(r.hosts[0].counts[AW_VERDICT_NEW], 1);
	assert_int_equal(r.hosts[0].n_charts, 2);
	assert_int_equal(r.hosts[0].n_cells, 5);
	c = &r.hosts[0].cells[0];
	assert_string_equal(c->key, "subject=libpcpu op=inc cpu=0");
	assert_string_equal(c->subject, "libpcpu");
	assert_null(c->reader);
	assert_int_equal(c->cpu, 0);
	assert_int_equal(c->verdict, AW_VERDICT_REGRESSED);
	assert_true(c->p50.present && c->p99.present);
	assert_int_equal(c->p50.verdict, AW_VERDICT_REGRESSED);
	assert_true(fabs(c->p50.head - 18.43) < 1e-9);
	assert_int_equal(c->p50.window, 4);
	assert_null(c->p50.note); /* "" is no note */
	c = &r.hosts[0].cells[2];
	assert_int_equal(c->verdict, AW_VERDICT_NEW);
	assert_true(isnan(c->p50.baseline) && isnan(c->p50.change));
	assert_string_equal(c->p50.note, "no baseline for this cell");
	assert_string_equal(r.hosts[0].cells[1].reader ? "x" : "null", "null");
	assert_true(r.hosts[0].cells[1].p50.bimodal);
	assert_int_equal(r.hosts[1].n_cells, 0);
	aw_ci_report_release(&r);
}

static void test_exit_status(void **state)
{
	static const struct {
		const char *file;
		bool compare;
		enum aw_ci_exit want;
	} cases[] = {
	    {"pass.json", false, AW_CI_EXIT_PASS},
	    {"fail.json", false, AW_CI_EXIT_REGRESSION},
	    {"incomplete.json", false, AW_CI_EXIT_INCOMPLETE},
	    {"inconclusive.json", false, AW_CI_EXIT_INCONCLUSIVE},
	    {"unconfirmed.json", false, AW_CI_EXIT_PASS},
	    {"hostile.json", false, AW_CI_EXIT_REGRESSION},
	    {"compare.json", true, AW_CI_EXIT_REGRESSION},
	};
	struct aw_ci_report r;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		load(cases[i].file, cases[i].compare, &r);
		assert_int_equal(aw_ci_exit_for(&r), cases[i].want);
		aw_ci_report_release(&r);
	}

	/* a host CI expected but the reply left out makes a passing gate incomplete */
	load("pass.json", false, &r);
	assert_int_equal(aw_ci_report_add_missing(&r, "graviton4-a", "not in the reply"), 0);
	assert_int_equal(r.status, AW_VERDICT_INCOMPLETE);
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_INCOMPLETE);
	aw_ci_report_release(&r);

	/* a failing host wins over an incomplete one */
	load("fail.json", false, &r);
	assert_int_equal(aw_ci_report_add_missing(&r, "graviton4-a", "not in the reply"), 0);
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_REGRESSION);
	/* a regressed cell under a host said to pass still fails the gate */
	r.status = AW_VERDICT_PASS;
	r.hosts[0].status = AW_VERDICT_PASS;
	r.hosts[2].status = AW_VERDICT_PASS;
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_REGRESSION);
	r.hosts[0].cells[0].verdict = AW_VERDICT_UNCHANGED;
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_PASS);
	r.n_hosts = 0; /* nothing judged is not a pass */
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_INCOMPLETE);
	r.n_hosts = 3;
	aw_ci_report_release(&r);
}

static void test_parse_errors(void **state)
{
	static const struct {
		const char *json;
		const char *msg;
	} cases[] = {
	    {"<html>502 Bad Gateway</html>", "not JSON"},
	    {"[]", "'(top)' is not an object"},
	    {"{\"project\":\"p\",\"baseline_ref\":\"main\",\"status\":\"pass\",\"hosts\":[]}",
	     "'commit' is missing"},
	    {"{\"project\":\"p\",\"commit\":\"abcdef1\",\"baseline_ref\":\"main\",\"status\":\"ok\","
	     "\"hosts\":[]}",
	     "'status' is none of pass, fail, incomplete"},
	    {"{\"project\":\"p\",\"commit\":\"abcdef1\",\"baseline_ref\":\"main\",\"status\":\"pass\","
	     "\"hosts\":{}}",
	     "'hosts' is missing or not an array"},
	    {"{\"project\":\"p\",\"commit\":\"abcdef1\",\"baseline_ref\":\"main\",\"status\":\"pass\","
	     "\"hosts\":[{\"host\":\"a\",\"status\":\"pass\",\"cells\":[{\"verdict\":\"new\"}]}]}",
	     "'hosts[0].cells[0].key' is missing"},
	    {"{\"project\":\"p\",\"commit\":\"abcdef1\",\"baseline_ref\":\"main\",\"status\":\"pass\","
	     "\"hosts\":[{\"host\":\"a\",\"status\":\"pass\",\"cells\":[{\"key\":\"k\",\"verdict\":"
	     "\"new\",\"p50\":{\"verdict\":\"new\",\"head\":\"fast\"}}]}]}",
	     "'hosts[0].cells[0].p50.head' is not a number"},
	    {"{\"project\":\"p\",\"commit\":\"abcdef1\",\"baseline_ref\":\"main\",\"status\":\"pass\","
	     "\"hosts\":[{\"host\":7,\"status\":\"pass\"}]}",
	     "'hosts[0].host' is not a string"},
	    /* a host status word this client does not know: never read as a pass */
	    {"{\"project\":\"p\",\"commit\":\"abcdef1\",\"baseline_ref\":\"main\",\"status\":"
	     "\"inconclusive\",\"hosts\":[{\"host\":\"a\",\"status\":\"undecidable\"}]}",
	     "'hosts[0].status' is none of pass, fail, incomplete, unconfirmed, inconclusive"},
	    /* what the verdict document's parser refuses, named under the host */
	    {"{\"project\":\"p\",\"commit\":\"abcdef1\",\"baseline_ref\":\"main\",\"status\":\"pass\","
	     "\"hosts\":[{\"host\":\"a\",\"status\":\"pass\",\"head_runs\":[7]}]}",
	     "bad reply from the collector: in 'hosts[0]': head_runs[0] is not a string"},
	    {"{\"project\":\"p\",\"project\":\"q\"}", "not JSON"},
	    {"{\"project\":\"p\",\"commit\":\"abcdef1\",\"baseline_ref\":\"main\",\"status\":\"pass\","
	     "\"hosts\":[{\"host\":\"a\",\"status\":\"pass\",\"cells\":[{\"key\":\"k\",\"verdict\":"
	     "\"new\",\"gate\":\"loud\"}]}]}",
	     "'hosts[0].cells[0].gate' is none of fail, warn, off"},
	};
	struct aw_ci_report r;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *err = NULL;

		assert_int_equal(
		    aw_ci_report_parse(cases[i].json, strlen(cases[i].json), false, &r, &err),
		    -EINVAL);
		if (!strstr(err, cases[i].msg))
			fail_msg("case %zu: '%s' lacks '%s'", i, err, cases[i].msg);
		assert_null(r.hosts);
		free(err);
	}
}

/* Gate levels and confirmation: a warn or off cell's regression never fails, a suspect makes
 * the gate unconfirmed (exit 0, or 1 with --strict), and every format lists them apart from
 * the regressions. */
static void test_unconfirmed_and_warnings(void **state)
{
	struct aw_ci_report r;
	char *text, *md, *xml, *gh;

	(void)state;
	load("unconfirmed.json", false, &r);
	assert_int_equal(r.status, AW_VERDICT_UNCONFIRMED);
	assert_int_equal(r.hosts[0].status, AW_VERDICT_UNCONFIRMED);
	assert_int_equal(r.hosts[0].counts[AW_VERDICT_SUSPECT], 1);
	assert_int_equal(r.hosts[0].cells[0].verdict, AW_VERDICT_SUSPECT);
	assert_int_equal(r.hosts[0].cells[0].gate, AW_GATE_FAIL);
	assert_int_equal(r.hosts[0].cells[1].gate, AW_GATE_WARN);
	assert_int_equal(r.hosts[0].cells[2].gate, AW_GATE_OFF);
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_PASS);

	text = formatted(&r, aw_ci_format_text);
	assert_non_null(strstr(text, "atomwatch gate: unconfirmed: commit c1d2e3f4a5b6"));
	assert_non_null(strstr(text, "no regression on 1 host"));
	assert_non_null(strstr(text, "  suspect    x86-ci  subject=libpcpu op=inc cpu=0 [p50]"));
	assert_non_null(strstr(text, "  warning    x86-ci  op=lock_inc cpu=0 contender=1"));
	assert_null(strstr(text, "regressed  "));
	assert_null(strstr(text, "reader=srcu"));
	/* the head run the collector found disturbed, with its factors */
	assert_non_null(strstr(text,
	                       "  disturbed  x86-ci: head run 1e7c5a9b-1d2f-4a3b-8c4d-5e6f7a8b9c0d "
	                       "(reference mulchain-v1 x1.118, beyond"));
	free(text);

	md = formatted(&r, aw_ci_format_markdown);
	assert_non_null(strstr(md, "## atomwatch gate: unconfirmed"));
	assert_null(strstr(md, "### Regressions"));
	assert_non_null(strstr(md, "### Unconfirmed"));
	assert_non_null(strstr(md, "### Warnings"));
	assert_non_null(strstr(md, "**Disturbed run** on x86-ci: head run "
	                           "`1e7c5a9b-1d2f-4a3b-8c4d-5e6f7a8b9c0d` (reference mulchain-v1 "
	                           "x1.118)"));
	assert_true(strstr(md, "### Unconfirmed") < strstr(md, "subject=libpcpu"));
	/* the off cell is shown among the others, marked */
	assert_non_null(strstr(md, "regressed (gate: off)"));
	free(md);

	xml = formatted(&r, aw_ci_format_junit);
	assert_non_null(strstr(xml, "failures=\"0\""));
	assert_null(strstr(xml, "<failure"));
	assert_non_null(strstr(xml, "<system-out>unconfirmed: "));
	assert_non_null(strstr(xml, "<system-out>warning (gate: warn, never fails): "));
	assert_non_null(strstr(xml, "<system-out>not gated (gate: off): "));
	assert_non_null(strstr(xml, "<property name=\"status\" value=\"unconfirmed\"/>"));
	free(xml);

	gh = formatted(&r, aw_ci_format_annotations);
	assert_null(strstr(gh, "::error"));
	assert_int_equal(count(gh, "::warning"), 2);
	free(gh);

	/* --strict: an unconfirmed gate fails, and a suspect fails even under a passing host */
	r.strict = true;
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_REGRESSION);
	r.status = AW_VERDICT_PASS;
	r.hosts[0].status = AW_VERDICT_PASS;
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_REGRESSION);
	md = formatted(&r, aw_ci_format_markdown);
	assert_non_null(strstr(md, "## atomwatch gate: unconfirmed"));
	free(md);
	r.strict = false;
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_PASS);
	/* a warn cell stays a warning even when strict; a fail cell regressed fails */
	r.hosts[0].cells[0].verdict = AW_VERDICT_UNCHANGED;
	r.strict = true;
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_PASS);
	r.hosts[0].cells[1].gate = AW_GATE_FAIL;
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_REGRESSION);
	aw_ci_report_release(&r);
}

/* Inconclusive: a cell of gate level fail whose change reaches its threshold and whose evidence
 * stayed split after the confirmation budget. The gate neither passes nor fails (exit 4, after a
 * regression, before incomplete); every format lists the cells right after the regressions,
 * with the line that tells the deciding metric's levels apart. A noisy cell (its change under
 * its threshold: its own noise) is listed with the other cells, on an inconclusive host too. */
static void test_inconclusive(void **state)
{
	struct aw_ci_report r;
	const struct aw_ci_cell *c;
	char *text, *md, *xml, *gh;
	const char *p;

	(void)state;
	load("inconclusive.json", false, &r);
	assert_int_equal(r.status, AW_VERDICT_INCONCLUSIVE);
	assert_int_equal(r.hosts[0].status, AW_VERDICT_INCONCLUSIVE);
	assert_int_equal(r.hosts[0].counts[AW_VERDICT_INCONCLUSIVE], 2);
	assert_int_equal(r.hosts[0].doc.confirm_budget, 3);
	c = &r.hosts[0].cells[0];
	assert_int_equal(c->verdict, AW_VERDICT_INCONCLUSIVE);
	assert_int_equal(c->p50.verdict, AW_VERDICT_INCONCLUSIVE);
	/* the verdict document's parser read the same cell: head runs, levels, reference */
	assert_non_null(c->doc);
	assert_int_equal(c->doc->n_head, 4);
	assert_non_null(c->p50.doc);
	assert_int_equal(c->p50.doc->n_levels, 2);
	assert_string_equal(c->p50.doc->level_by, "mulblock-v1");
	assert_string_equal(c->p50.doc->reference, "mulblock-v1");
	assert_int_equal(c->p50.doc->decided_by, -1);
	assert_int_equal(c->p99.doc->n_levels, 0);
	assert_int_equal(r.hosts[0].cells[1].verdict, AW_VERDICT_NOISY);
	assert_int_equal(r.hosts[0].cells[2].gate, AW_GATE_WARN);
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_INCONCLUSIVE);

	text = formatted(&r, aw_ci_format_text);
	assert_non_null(strstr(text, "atomwatch gate: inconclusive: commit d4e5f6a7b8c9 of libpcpu "
	                             "against main: no regression on 2 hosts, 1 inconclusive "
	                             "metric\n"));
	assert_non_null(
	    strstr(text, "  inconclusive x86-ci  subject=libpcpu op=inc cpu=0 [p50]  1.02 ns "
	                 "-> 1.10 ns  +7.8%  (95% interval +1.0% to +15.0%; p = 0.03; q = "
	                 "0.09; 10 baseline runs; threshold 5%; unchanged alone, +7% shared)\n"
	                 "             levels by mulblock-v1: L1 (60%) +0.3% unchanged, L2 "
	                 "(40%) +7.1% undecided\n"));
	assert_non_null(strstr(text, "  (1 inconclusive metric: the change reaches the threshold, "
	                             "the re-measurements left the evidence split; the gate "
	                             "neither passes nor fails it"));
	/* the noisy cell and the warn cell are no reason to withhold the gate */
	assert_null(strstr(text, "op=lock_xadd"));
	assert_null(strstr(text, "inconclusive x86-ci  op=lock_inc"));
	assert_true(strstr(text, "  inconclusive x86-ci") < strstr(text, "report: "));
	free(text);

	md = formatted(&r, aw_ci_format_markdown);
	assert_non_null(strstr(md, "## atomwatch gate: INCONCLUSIVE\n"));
	assert_non_null(strstr(md, ": no regression on 2 hosts, **1 inconclusive metric**."));
	assert_null(strstr(md, "### Regressions"));
	p = strstr(md, "### Inconclusive\n");
	assert_non_null(p);
	assert_true(p < strstr(md, "### Hosts"));
	assert_non_null(strstr(p, "| host | cell | metric | verdict | change [95% bounds] | "
	                          "threshold | head runs | note | charts |\n"));
	assert_non_null(strstr(
	    p,
	    "| x86-ci | subject=libpcpu op=inc cpu=0 | p50 | inconclusive | **+7.8%** [+1.0%, "
	    "+15.0%] | 5% | 4 (budget: 3 re-measurements) | unchanged alone, +7% "
	    "shared<br>levels by mulblock-v1: L1 \\(60%\\) +0.3% unchanged, L2 \\(40%\\) +7.1% "
	    "undecided | [chart](" BASE "/charts/commits/d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d/"
	    "hosts/x86-ci/compare-main.svg) · [report](" BASE
	    "/commits/d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d) |\n"));
	assert_int_equal(count(p, "| x86-ci | "), 1 + 1 + 2); /* 1 listed, hosts, others */
	/* the noisy cell of level fail and the warn cell among the others */
	assert_true(strstr(md, "| x86-ci | op=lock\\_xadd cpu=0 | noisy | p50 | 5.81 ns | 6.10 ns "
	                       "| +5.0% | the runs cannot bound the change within 5% |") >
	            strstr(md, "### Hosts"));
	assert_non_null(
	    strstr(md, "| x86-ci | inconclusive | 4 | 10 | 0 | 2 | 0 | 1 | 0 | 0 | 2 |"));
	assert_non_null(strstr(md, "| graviton4-a | pass | 1 | 10 | 0 | 0 | 0 | 0 | 0 | 0 | 5 |"));
	assert_non_null(strstr(md, "| x86-ci | op=lock\\_inc cpu=0 contender=1 c=100 d=100 | "
	                           "inconclusive | p50 |"));
	free(md);

	xml = formatted(&r, aw_ci_format_junit);
	assert_non_null(
	    strstr(xml, "<testsuites name=\"atomwatch gate\" tests=\"4\" failures=\"1\""));
	assert_int_equal(count(xml, "<failure "), 1);
	assert_non_null(strstr(xml,
	                       "name=\"subject=libpcpu op=inc cpu=0 [p50]\" time=\"0\">\n      "
	                       "<failure type=\"inconclusive\" message=\"p50 inconclusive: "
	                       "1.02 ns -&gt; 1.10 ns (+7.8%)\">x86-ci: subject=libpcpu op=inc "
	                       "cpu=0 [p50] cannot be vouched for against main: "));
	assert_non_null(strstr(xml, "change: +7.8% [+1.0%, +15.0%]\nthreshold: 5%\nhead runs: 4\n"
	                            "confirmation budget: 3 re-measurements\nnote: unchanged "
	                            "alone, +7% shared\nlevels by mulblock-v1: L1 (60%) +0.3% "
	                            "unchanged, L2 (40%) +7.1% undecided\nchart: " BASE));
	assert_non_null(strstr(xml,
	                       "cpu=0 [p50] cannot be vouched for against main: its change "
	                       "reaches its threshold, the re-measurements left its evidence "
	                       "split; the gate neither passes nor fails it (exit status 4)\n"));
	assert_non_null(strstr(xml, "<property name=\"status\" value=\"inconclusive\"/>"));
	/* the p99 of the inconclusive cell, the noisy cell and the warn cell pass */
	assert_non_null(strstr(xml, "name=\"subject=libpcpu op=inc cpu=0 [p99]\" time=\"0\">"
	                            "</testcase>"));
	assert_non_null(strstr(xml, "<system-out>noisy: 5.81 ns -&gt; 6.10 ns (+5.0%)"));
	assert_non_null(strstr(xml, "<system-out>inconclusive: 4.00 ns -&gt; 4.60 ns (+15.0%)"));
	free(xml);

	gh = formatted(&r, aw_ci_format_annotations);
	assert_int_equal(count(gh, "::error title="), 1);
	assert_null(strstr(gh, "::warning"));
	assert_non_null(strstr(gh, "::error title=atomwatch%3A x86-ci subject=libpcpu op=inc cpu=0 "
	                           "[p50] +7.8%25::x86-ci: subject=libpcpu op=inc cpu=0 [p50] is "
	                           "inconclusive: its change reaches its threshold, the "
	                           "re-measurements left its evidence split"));
	assert_non_null(strstr(gh, "levels by mulblock-v1: L1 (60%25) +0.3%25 unchanged"));
	assert_null(strstr(gh, "op=lock_xadd"));
	free(gh);

	/* precedence: a regression on another host (1) over inconclusive (4), inconclusive over
	 * a host without a run (2) */
	assert_int_equal(aw_ci_report_add_missing(&r, "epyc-1", "not in the reply"), 0);
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_INCONCLUSIVE);
	text = formatted(&r, aw_ci_format_text);
	assert_non_null(strstr(text, "atomwatch gate: inconclusive: "));
	free(text);
	r.hosts[1].status = AW_VERDICT_FAIL;
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_REGRESSION);
	md = formatted(&r, aw_ci_format_markdown);
	assert_non_null(strstr(md, "## atomwatch gate: FAIL\n"));
	assert_non_null(strstr(md, "### Inconclusive\n")); /* still listed */
	free(md);
	r.hosts[1].status = AW_VERDICT_PASS;
	/* an inconclusive cell of level fail under a host said to pass still withholds it */
	r.status = AW_VERDICT_PASS;
	r.hosts[0].status = AW_VERDICT_PASS;
	r.hosts[2].status = AW_VERDICT_PASS;
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_INCONCLUSIVE);
	/* neither the noisy cell of level fail nor the inconclusive one of level warn */
	r.hosts[0].cells[0].verdict = AW_VERDICT_UNCHANGED;
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_PASS);
	text = formatted(&r, aw_ci_format_text);
	assert_null(strstr(text, "  inconclusive "));
	free(text);
	/* incomplete (2) before unconfirmed with --strict (1) */
	r.strict = true;
	r.hosts[0].status = AW_VERDICT_UNCONFIRMED;
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_REGRESSION);
	r.hosts[2].status = AW_VERDICT_INCOMPLETE;
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_INCOMPLETE);
	r.strict = false;
	assert_int_equal(aw_ci_exit_for(&r), AW_CI_EXIT_INCOMPLETE);
	aw_ci_report_release(&r);
}

static void test_markdown(void **state)
{
	struct aw_ci_report r;
	char *md;
	const char *reg, *hosts, *row;

	(void)state;
	load("fail.json", false, &r);
	md = formatted(&r, aw_ci_format_markdown);
	assert_non_null(strstr(md, "## atomwatch gate: FAIL"));
	reg = strstr(md, "### Regressions");
	hosts = strstr(md, "### Hosts");
	assert_true(reg && hosts && reg < hosts);
	/* the regression rows: numbers, evidence and absolute chart links */
	row = strstr(md, "| x86-ci | subject=libpcpu op=inc cpu=0 | p50 |");
	assert_non_null(row);
	assert_true(row < hosts);
	assert_non_null(strstr(row,
	                       "| 1.02 ns | 18.4 ns | **+1706.9%** | 95% interval +1650.0% to "
	                       "+1760.0%; p = 1.2e-06; q = 4.8e-06; 4 baseline runs; threshold "
	                       "5% | [chart](" BASE "/charts/commits/"
	                       "b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f80/hosts/x86-ci/"
	                       "compare-main.svg) · [report](" BASE "/commits/"
	                       "b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f80) |"));
	assert_non_null(
	    strstr(md, "| x86-ci | subject=libpcpu op=inc cpu=0 | p99 | 1.40 ns | 21.7 ns"));
	assert_int_equal(count(md, "subject=libpcpu op=inc cpu=0 | p"), 2);
	/* hosts table, other cells, charts */
	assert_non_null(strstr(md, "| x86-ci | fail | 1 | 4 | 1 | 0 | 0 | 1 | 1 | 1 | 1 |"));
	assert_non_null(
	    strstr(md, "| neoverse-v2-ref | pass | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 5 |"));
	assert_non_null(strstr(
	    md, "| x86-ci | op=lock\\_xadd cpu=0 | noisy | p50 | 5.81 ns | 6.40 ns | +10.2% | the "
	        "baseline is bimodal |"));
	assert_non_null(strstr(md, "Charts: [heatmap](" BASE "/charts/commits/"));
	assert_non_null(strstr(md, "**2 regressed metrics** on 1 of 2 hosts"));
	free(md);
	aw_ci_report_release(&r);

	load("pass.json", false, &r);
	md = formatted(&r, aw_ci_format_markdown);
	assert_non_null(strstr(md, "## atomwatch gate: pass"));
	assert_non_null(strstr(md, " against main: no regression on 1 host. [Full report]("));
	assert_null(strstr(md, "### Regressions"));
	free(md);
	aw_ci_report_release(&r);

	load("incomplete.json", false, &r);
	md = formatted(&r, aw_ci_format_markdown);
	assert_non_null(strstr(md, "## atomwatch gate: INCOMPLETE"));
	assert_non_null(strstr(md, "| graviton4-a | incomplete: no run of b7c8d9e0f1a2 on "
	                           "graviton4-a | 0 |"));
	free(md);
	aw_ci_report_release(&r);
}

static void test_junit(void **state)
{
	struct aw_ci_report r;
	char *x;

	(void)state;
	load("fail.json", false, &r);
	x = formatted(&r, aw_ci_format_junit);
	assert_true(!strncmp(x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", 50));
	/* 5 cells x 2 metrics on x86-ci, nothing listed for the reference host */
	assert_non_null(strstr(x, "<testsuites name=\"atomwatch gate\" tests=\"10\" failures=\"2\" "
	                          "errors=\"0\" skipped=\"4\""));
	assert_non_null(
	    strstr(x, "<testsuite name=\"atomwatch: x86-ci\" tests=\"10\" failures=\"2\""));
	assert_non_null(strstr(x, "<testcase classname=\"x86-ci\" name=\"subject=libpcpu op=inc "
	                          "cpu=0 [p50]\" time=\"0\">\n      <failure type=\"regression\" "
	                          "message=\"p50 regressed: 1.02 ns -&gt; 18.4 ns (+1706.9%)\">"));
	assert_non_null(strstr(x, "name=\"subject=libpcpu op=inc cpu=0 [p99]\""));
	assert_non_null(strstr(x, "chart: " BASE "/charts/commits/"));
	assert_int_equal(count(x, "<failure "), 2);
	assert_int_equal(count(x, "<skipped "), 4);
	assert_int_equal(count(x, "<testcase "), 10);
	assert_non_null(strstr(x, "name=\"subject=libpcpu reader=nest op=libpcpu cpu=0 [p50]\" "
	                          "time=\"0\">\n      <skipped message=\"new: no baseline"));
	assert_non_null(strstr(x, "<system-out>noisy: 5.81 ns -&gt; 6.40 ns (+10.2%)"));
	assert_non_null(strstr(x, "<testsuite name=\"atomwatch: neoverse-v2-ref\" tests=\"0\""));
	free(x);
	aw_ci_report_release(&r);

	load("incomplete.json", false, &r);
	x = formatted(&r, aw_ci_format_junit);
	assert_non_null(strstr(x, "<testcase classname=\"graviton4-a\" name=\"run of "
	                          "b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f80\" time=\"0\">\n      "
	                          "<error type=\"incomplete\" message=\"no run of b7c8d9e0f1a2 on "
	                          "graviton4-a\"/>"));
	assert_non_null(strstr(x, "errors=\"1\""));
	free(x);
	aw_ci_report_release(&r);
}

/* Nothing from the hostile fixture may reach any output unescaped. */
static void test_hostile(void **state)
{
	struct aw_ci_report r;
	char *x, *md, *gh, *text;

	(void)state;
	load("hostile.json", false, &r);

	x = formatted(&r, aw_ci_format_junit);
	assert_null(strstr(x, "evil<host>"));
	assert_null(strstr(x, "]]>"));
	assert_null(strstr(x, "<script>"));
	assert_null(strstr(x, "\x07"));
	assert_null(strstr(x, "\x01"));
	assert_null(strstr(x, "\xef\xbf\xbe"));
	assert_non_null(strstr(x, "classname=\"evil&lt;host&gt;&amp;&quot;]]&gt;|`x`\n\xef\xbf\xbd"
	                          "@team #1\""));
	assert_non_null(strstr(x,
	                       "name=\"subject=&lt;lib&gt; op=a&amp;b cpu=0 ]]&gt; &quot;q&quot; "
	                       "&apos;a&apos; | *b* [l](u) \xef\xbf\xbd \xef\xbf\xbd [p50]\""));
	assert_null(strstr(x, "&lt;script"));
	assert_non_null(
	    strstr(x, "/commits/b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f80?x=%3Cscript%3E&amp;"
	              "y=%221%22"));
	/* every '<' starts markup, every '&' an entity */
	for (const char *p = strchr(x, '&'); p; p = strchr(p + 1, '&'))
		assert_true(!strncmp(p, "&amp;", 5) || !strncmp(p, "&lt;", 4) ||
		            !strncmp(p, "&gt;", 4) || !strncmp(p, "&quot;", 6) ||
		            !strncmp(p, "&apos;", 6));
	for (const char *p = strchr(x, '<'); p; p = strchr(p + 1, '<'))
		assert_true(p[1] == '?' || p[1] == '/' || (p[1] >= 'a' && p[1] <= 'z'));
	free(x);

	md = formatted(&r, aw_ci_format_markdown);
	assert_null(strstr(md, "<host>"));
	assert_null(strstr(md, "<script>"));
	assert_null(strstr(md, "<b>"));
	assert_null(strstr(md, "@team"));
	assert_null(strstr(md, "javascript:"));
	assert_null(strstr(md, "\x07"));
	assert_non_null(
	    strstr(md, "| evil&lt;host&gt;&amp;\"\\]\\]&gt;&#124;\\`x\\`  &#64;team &#35;1 | "
	               "subject=&lt;lib&gt; op=a&amp;b cpu=0 \\]\\]&gt; \"q\" 'a' &#124; "
	               "\\*b\\* \\[l\\]\\(u\\)"));
	/* a link's URL cannot end early or carry markup */
	assert_non_null(strstr(md, "[chart](" BASE "/charts/x%20y/%3Cb%3E%22%29%28.svg)"));
	assert_non_null(strstr(md, "| [compare](" BASE "/charts/x%20y/%3Cb%3E%22%29%28.svg) |\n"));
	/* each table row stays one line: header, rule and the one regression */
	{
		const char *p = strstr(md, "| host | cell | metric |");
		int rows = 0;

		assert_non_null(p);
		for (; *p == '|'; p = strchr(p, '\n') + 1) {
			const char *eol = strchr(p, '\n');

			assert_non_null(eol);
			assert_true(eol[-1] == '|');
			rows++;
		}
		assert_int_equal(rows, 3);
	}
	free(md);

	gh = formatted(&r, aw_ci_format_annotations);
	assert_int_equal(count(gh, "\n"), 2); /* one regression, one host without a run */
	assert_int_equal(count(gh, "::error title="), 2);
	assert_non_null(strstr(gh, "::error title=atomwatch%3A evil<host>&\"]]>|`x`%0A @team #1 "));
	assert_non_null(strstr(gh, "note <i>&amp;</i> ]]> %250A::error::"));
	assert_non_null(strstr(gh, "did not report::gone&<away>: no run \"yet\" <>&%0D%0A::x\n"));
	free(gh);

	text = formatted(&r, aw_ci_format_text);
	assert_null(strstr(text, "\x07"));
	assert_non_null(strstr(text, "evil<host>&\"]]>|`x`??@team #1"));
	free(text);
	aw_ci_report_release(&r);
}

static void test_compare_and_text(void **state)
{
	struct aw_ci_report r;
	char *text;

	(void)state;
	load("compare.json", true, &r);
	assert_true(r.compare);
	assert_string_equal(r.commit, "b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f80");
	assert_string_equal(r.baseline, "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678");
	assert_null(r.report);
	assert_false(r.hosts[0].cells[0].p99.present);
	text = formatted(&r, aw_ci_format_text);
	assert_non_null(strstr(text,
	                       "atomwatch compare: fail: commit b7c8d9e0f1a2 of libpcpu against "
	                       "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678: 1 regressed metric on "
	                       "1 of 1 host\n"));
	assert_non_null(strstr(text,
	                       "  regressed  x86-ci  subject=libpcpu op=inc cpu=0 [p50]  1.03 "
	                       "ns -> 18.4 ns  +1689.0%  (95% interval +1620.0% to +1750.0%; 1 "
	                       "baseline run; threshold 5%)\n"));
	free(text);
	aw_ci_report_release(&r);

	load("fail.json", false, &r);
	text = formatted(&r, aw_ci_format_text);
	assert_non_null(
	    strstr(text, "report: " BASE "/commits/b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f80\n"));
	free(text);
	aw_ci_report_release(&r);
}

/* A baseline below resolution is told as an absolute change, never a percentage: plain incq at
 * 0 ns (the collector sends no relative change then) or at 0.037 ns (it sends +63954%) hardened
 * into lock xadd reads "below resolution -> 24.9 ns" in every format, its interval in ns; a
 * metric the collector judged in ns (`absolute`: a contended cell flipping through the
 * resolution) has its change in ns too. */
static void test_from_below_resolution(void **state)
{
	static const char reply[] =
	    "{\"project\": \"libpcpu\", \"commit\": \"b7c8d9e0\", \"baseline_ref\": \"main\", "
	    "\"status\": \"fail\", \"hosts\": [{\"host\": \"x86-ci\", \"status\": \"fail\", "
	    "\"cells\": [{\"key\": \"subject=libpcpu op=inc cpu=0\", \"verdict\": \"regressed\", "
	    "\"p50\": {\"verdict\": \"regressed\", \"baseline\": 0, \"head\": 24.9, \"change\": null, "
	    "\"pvalue\": 0, \"qvalue\": 0, \"window\": 10, \"threshold\": 0.05}}, "
	    "{\"key\": \"subject=libpcpu op=inc cpu=1\", \"verdict\": \"regressed\", "
	    "\"p50\": {\"verdict\": \"regressed\", \"baseline\": 0.037, \"head\": 23.7, "
	    "\"change\": 639.54, \"change_lo\": 630.0, \"change_hi\": 650.0, \"pvalue\": 0, "
	    "\"qvalue\": 0, \"window\": 10, \"threshold\": 0.05}}, "
	    "{\"key\": \"op=lock_inc cpu=0 contender=1 c=10 d=100\", \"verdict\": \"noisy\", "
	    "\"p50\": {\"verdict\": \"noisy\", \"baseline\": 3.1, \"head\": 5.2, \"change\": 0.42, "
	    "\"change_lo\": 0.1, \"change_hi\": 0.74, \"absolute\": true, \"change_ns\": 2.1, "
	    "\"pvalue\": 0.2, \"qvalue\": 0.3, \"window\": 10, \"threshold\": 0.25}}]}]}";
	struct aw_ci_report r;
	char *err = NULL, *text;

	(void)state;
	assert_int_equal(aw_ci_report_parse(reply, strlen(reply), false, &r, &err), 0);
	assert_true(r.hosts[0].cells[2].p50.absolute);
	assert_true(fabs(r.hosts[0].cells[2].p50.change_ns - 2.1) < 1e-9);
	text = formatted(&r, aw_ci_format_markdown);
	assert_non_null(
	    strstr(text, "| 0.000 ns | 24.9 ns | **below resolution -&gt; 24.9 ns** |"));
	assert_non_null(strstr(text, "| 0.037 ns | 23.7 ns | **below resolution -&gt; 23.7 ns** | "
	                             "95% interval +23.3 ns to +24 ns;"));
	assert_non_null(strstr(text, "| p50 | 3.10 ns | 5.20 ns | +2.10 ns |"));
	assert_null(strstr(text, "%;"));
	assert_null(strstr(text, "63954"));
	free(text);
	text = formatted(&r, aw_ci_format_text);
	assert_non_null(strstr(text, "0.000 ns -> 24.9 ns  below resolution -> 24.9 ns  ("));
	assert_non_null(strstr(text, "0.037 ns -> 23.7 ns  below resolution -> 23.7 ns  (95% "
	                             "interval +23.3 ns to +24 ns;"));
	free(text);
	text = formatted(&r, aw_ci_format_junit);
	assert_non_null(strstr(text, "change: below resolution -&gt; 24.9 ns"));
	assert_non_null(strstr(text, "regressed: 0.037 ns -&gt; 23.7 ns (below resolution -&gt; "
	                             "23.7 ns)"));
	assert_non_null(strstr(text, "noisy: 3.10 ns -&gt; 5.20 ns (+2.10 ns); 95% interval "
	                             "+0.5 ns to +3.7 ns;"));
	assert_null(strstr(text, "n/a"));
	assert_null(strstr(text, "63954"));
	free(text);
	text = formatted(&r, aw_ci_format_annotations);
	assert_non_null(strstr(text, "from 0.037 ns to 23.7 ns (below resolution -> 23.7 ns; "));
	free(text);
	aw_ci_report_release(&r);
}

static char *escaped(int (*fn)(struct aw_buf *, const char *), const char *s)
{
	struct aw_buf b;

	aw_buf_init(&b, 4096);
	assert_int_equal(fn(&b, s), 0);
	return aw_buf_detach(&b);
}

static int gh_data(struct aw_buf *b, const char *s)
{
	return aw_ci_gh_escape(b, s, false);
}

static int gh_prop(struct aw_buf *b, const char *s)
{
	return aw_ci_gh_escape(b, s, true);
}

static void test_escapes(void **state)
{
	static const struct {
		int (*fn)(struct aw_buf *, const char *);
		const char *in, *out;
	} cases[] = {
	    {aw_ci_xml_escape, "a<b>&\"c\"'d' ]]>",
	     "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos; ]]&gt;"},
	    {aw_ci_xml_escape, "tab\tnl\ncr\r bell\x07 esc\x1b",
	     "tab\tnl\ncr\r bell\xef\xbf\xbd esc\xef\xbf\xbd"},
	    {aw_ci_xml_escape, "\xef\xbf\xbf\xc3\xa9", "\xef\xbf\xbd\xc3\xa9"},
	    {aw_ci_md_escape, "a|b<c>&d", "a&#124;b&lt;c&gt;&amp;d"},
	    {aw_ci_md_escape, "*x* _y_ `z` [a](b) ~s~ !i \\",
	     "\\*x\\* \\_y\\_ \\`z\\` \\[a\\]\\(b\\) \\~s\\~ \\!i \\\\"},
	    {aw_ci_md_escape, "line\nbreak\r", "line break "},
	    {aw_ci_md_escape, "op=plain cpu=0", "op=plain cpu=0"},
	    {gh_data, "50% \r\n::x, y", "50%25 %0D%0A::x, y"},
	    {gh_prop, "50% \r\n::x, y", "50%25 %0D%0A%3A%3Ax%2C y"},
	    {gh_data, "bell\x07 esc\x1b[31m", "bell  esc [31m"},
	    {aw_ci_url_encode, "refs/heads/a b&c=d~e", "refs%2Fheads%2Fa%20b%26c%3Dd~e"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = escaped(cases[i].fn, cases[i].in);

		if (strcmp(got, cases[i].out))
			fail_msg("case %zu: got '%s', want '%s'", i, got, cases[i].out);
		free(got);
	}
}

static void test_link_url(void **state)
{
	struct aw_buf b;

	(void)state;
	aw_buf_init(&b, 4096);
	assert_int_equal(aw_ci_link_url(&b, BASE, "/commits/abc"), 0);
	assert_string_equal(b.data, BASE "/commits/abc");
	aw_buf_reset(&b);
	assert_int_equal(aw_ci_link_url(&b, BASE, "https://other.example/x (1)<"), 0);
	assert_string_equal(b.data, "https://other.example/x%20%281%29%3C");
	aw_buf_reset(&b);
	assert_int_equal(aw_ci_link_url(&b, BASE, "//evil.example/x"), -EINVAL);
	assert_int_equal(aw_ci_link_url(&b, BASE, "javascript:alert(1)"), -EINVAL);
	assert_int_equal(aw_ci_link_url(&b, BASE, "charts/x.svg"), -EINVAL);
	assert_int_equal(aw_ci_link_url(&b, BASE, NULL), -EINVAL);
	assert_int_equal(b.len, 0);
	aw_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_fail),
	    cmocka_unit_test(test_exit_status),
	    cmocka_unit_test(test_parse_errors),
	    cmocka_unit_test(test_unconfirmed_and_warnings),
	    cmocka_unit_test(test_inconclusive),
	    cmocka_unit_test(test_markdown),
	    cmocka_unit_test(test_junit),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_compare_and_text),
	    cmocka_unit_test(test_from_below_resolution),
	    cmocka_unit_test(test_escapes),
	    cmocka_unit_test(test_link_url),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
