/* configs/thresholds.yaml and its errors: the shipped file loads and its rules match the
 * right cells; every bad input names file:line:col; percentages and fractions parse. */
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
#include "config.h"

static void test_shipped_file(void **state)
{
	struct aw_thresholds t;
	char path[512], *err = NULL;
	const char *src = getenv("AW_SOURCE_DIR");

	(void)state;
	snprintf(path, sizeof(path), "%s/configs/thresholds.yaml", src ? src : ".");
	assert_int_equal(aw_thresholds_load(&t, path, &err), 0);
	assert_null(err);
	assert_true(t.p50 == 0.05 && t.p99 == 0.25);
	assert_int_equal(t.p99_gate, AW_GATE_WARN);
	assert_int_equal(t.n_p50_rules, 4);
	assert_int_equal(t.n_p99_rules, 3);
	/* the macro check's cells: a workload-sized change on p50, the p99 off */
	assert_true(aw_threshold_for(t.p50_rules, t.n_p50_rules, "hackbench", NULL,
	                             "subject=atomwatch-macro op=hackbench cpu=0", t.p50) == 0.10);
	assert_true(isinf(aw_threshold_for(t.p99_rules, t.n_p99_rules, "hackbench", NULL,
	                                   "subject=atomwatch-macro op=hackbench cpu=0", t.p99)));
	assert_true(aw_threshold_for(t.p50_rules, t.n_p50_rules, "plain", NULL, "op=plain cpu=0",
	                             t.p50) == 0.5);
	assert_true(aw_threshold_for(t.p50_rules, t.n_p50_rules, "llsc", NULL,
	                             "op=llsc cpu=0 contender=1 c=10", t.p50) == 0.25);
	assert_true(aw_threshold_for(t.p99_rules, t.n_p99_rules, "ldadd", "srcu_fast",
	                             "reader=srcu_fast op=ldadd cpu=0", t.p99) == 0.25);
	assert_true(aw_threshold_for(t.p50_rules, t.n_p50_rules, "stadd", NULL, "op=stadd cpu=3",
	                             t.p50) == 0.05);
	aw_thresholds_release(&t);
}

static void expect_error(const char *text, const char *want)
{
	struct aw_thresholds t;
	char *err = NULL;

	assert_int_equal(aw_thresholds_parse(&t, text, strlen(text), "t.yaml", &err), -EINVAL);
	assert_non_null(err);
	if (!strstr(err, want))
		fail_msg("got '%s', want '%s'", err, want);
	assert_int_equal(t.n_p50_rules + t.n_p99_rules + t.n_gate_rules, 0);
	free(err);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("p50: fast\n", "t.yaml:1:6: 'p50' must be a positive fraction");
	expect_error("p50: -5%\n", "t.yaml:1:6:");
	expect_error("p95: 5%\n", "t.yaml:1:1: unknown key 'p95' (p50, p99, p99_gate, rules)");
	expect_error("p99_gate: loud\n",
	             "t.yaml:1:11: 'p99_gate' must be fail, warn or off, not 'loud'");
	expect_error("p99_gate: [warn]\n", "t.yaml:1:11:");
	expect_error("rules: {op: plain}\n", "t.yaml:1:8: 'rules' must be a list");
	expect_error("rules:\n  - p50: 5%\n", "t.yaml:2:5: rule 1 matches nothing");
	expect_error("rules:\n  - op: plain\n", "t.yaml:2:5: rule 1 sets no threshold");
	expect_error("rules:\n  - op: plain\n    p50: 5%\n  - opp: x\n    p50: 1%\n",
	             "t.yaml:4:5: unknown key 'opp' in rule 2");
	expect_error("rules:\n  - op: [a, b]\n    p50: 5%\n", "t.yaml:2:9: 'op' must be a single");
	expect_error("- 5%\n", "t.yaml:1:1: the file must be a mapping");
	expect_error("p50: [5%\n", "t.yaml:");
	/* an unknown gate level names its place and the levels there are */
	expect_error("rules:\n  - op: plain\n    gate: loud\n",
	             "t.yaml:3:11: 'gate' must be fail, warn or off, not 'loud'");
	expect_error("rules:\n  - op: plain\n    p50: 5%\n    gate: [warn]\n",
	             "t.yaml:4:11: 'gate' must be a single value");
	expect_error("rules:\n  - op: plain\n    gate: \"\"\n", "t.yaml:3:11: 'gate' must be");
}

/* `gate:` is a third list beside p50 and p99: a rule may set it alone, the first matching rule
 * that sets it wins, and a rule without it does not hide a later one's */
static void test_gate(void **state)
{
	const char *text = "rules:\n"
	                   "  - key: \"subject=*\"\n"
	                   "    gate: fail\n"
	                   "  - key: \"* contender=*\"\n"
	                   "    p50: 25%\n"
	                   "  - key: \"* contender=*\"\n"
	                   "    gate: off\n"
	                   "  - reader: \"srcu*\"\n"
	                   "    p50: 5%\n"
	                   "    gate: warn\n";
	struct aw_thresholds t;
	char *err = NULL;

	(void)state;
	assert_int_equal(aw_thresholds_parse(&t, text, strlen(text), "t.yaml", &err), 0);
	assert_null(err);
	assert_int_equal(t.n_gate_rules, 3);
	assert_int_equal(t.n_p50_rules, 2);
	assert_int_equal(t.n_p99_rules, 0);
	assert_int_equal((int)aw_threshold_for(t.gate_rules, t.n_gate_rules, "inc", NULL,
	                                       "subject=lib op=inc cpu=0 contender=1 c=0", -1),
	                 AW_GATE_FAIL);
	assert_int_equal((int)aw_threshold_for(t.gate_rules, t.n_gate_rules, "llsc", NULL,
	                                       "op=llsc cpu=0 contender=1 c=10", -1),
	                 AW_GATE_OFF);
	assert_int_equal((int)aw_threshold_for(t.gate_rules, t.n_gate_rules, "ldadd", "srcu_fast",
	                                       "reader=srcu_fast op=ldadd cpu=0", -1),
	                 AW_GATE_WARN);
	assert_true(aw_threshold_for(t.gate_rules, t.n_gate_rules, "ldadd", NULL, "op=ldadd cpu=0",
	                             -1) == -1);
	aw_thresholds_release(&t);
	assert_int_equal(t.n_gate_rules, 0);
}

static void test_off(void **state)
{
	const char *text = "rules:\n  - op: plain\n    p99: off\n";
	struct aw_thresholds t;
	char *err = NULL;

	(void)state;
	assert_int_equal(aw_thresholds_parse(&t, text, strlen(text), "t.yaml", &err), 0);
	assert_int_equal(t.n_p99_rules, 1);
	assert_int_equal(t.n_p50_rules, 0);
	assert_true(isinf(aw_threshold_for(t.p99_rules, t.n_p99_rules, "plain", NULL, "x", 0.1)));
	aw_thresholds_release(&t);
}

static void test_ratios(void **state)
{
	double v;

	(void)state;
	assert_int_equal(aw_parse_ratio("5%", 1, &v), 0);
	assert_true(v == 0.05);
	assert_int_equal(aw_parse_ratio("0.25", 1, &v), 0);
	assert_true(v == 0.25);
	assert_int_equal(aw_parse_ratio("150%", 1, &v), -EINVAL);
	assert_int_equal(aw_parse_ratio("5 %", 1, &v), -EINVAL);
	assert_int_equal(aw_parse_ratio("", 1, &v), -EINVAL);
	assert_int_equal(aw_parse_ratio("nan", 1, &v), -EINVAL);
}

/* p99_gate: warn without it, and what the file says */
static void test_p99_gate(void **state)
{
	static const char *const text[] = {"p50: 5%\n", "p99_gate: fail\n", "p99_gate: off\n"};
	static const enum aw_gate want[] = {AW_GATE_WARN, AW_GATE_FAIL, AW_GATE_OFF};
	struct aw_thresholds t;
	char *err = NULL;

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(aw_thresholds_parse(&t, text[i], strlen(text[i]), "t.yaml", &err),
		                 0);
		assert_int_equal(t.p99_gate, want[i]);
		aw_thresholds_release(&t);
	}
	assert_null(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_shipped_file), cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_ratios),       cmocka_unit_test(test_off),
	    cmocka_unit_test(test_gate),         cmocka_unit_test(test_p99_gate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
