/* The one verdict vocabulary: every verdict's word parses back to it, the words are the ones the
 * collector's JSON, its verdict cache and its pages have always carried (they are a wire format:
 * atomwatch-ci and stored verdicts read them), anything else is unknown, and the cell and status
 * ranges split the enum as the gate and the counts need. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "aw/verdict.h"

static void test_round_trip(void **state)
{
	(void)state;
	for (int v = 0; v < AW_VERDICT_COUNT; v++) {
		const char *name = aw_verdict_name((enum aw_verdict)v);

		assert_non_null(name);
		assert_int_equal(aw_verdict_parse(name), v);
		for (int w = 0; w < v; w++)
			assert_string_not_equal(name, aw_verdict_name((enum aw_verdict)w));
	}
}

static void test_words(void **state)
{
	static const struct {
		enum aw_verdict v;
		const char *name;
	} words[] = {
	    {AW_VERDICT_UNKNOWN, "unknown"},
	    {AW_VERDICT_PASS, "pass"},
	    {AW_VERDICT_FAIL, "fail"},
	    {AW_VERDICT_INCOMPLETE, "incomplete"},
	    {AW_VERDICT_UNCHANGED, "unchanged"},
	    {AW_VERDICT_REGRESSED, "regressed"},
	    {AW_VERDICT_IMPROVED, "improved"},
	    {AW_VERDICT_NOISY, "noisy"},
	    {AW_VERDICT_NEW, "new"},
	    {AW_VERDICT_MISSING, "missing"},
	    {AW_VERDICT_SUSPECT, "suspect"},
	    {AW_VERDICT_INCONCLUSIVE, "inconclusive"},
	    {AW_VERDICT_UNCONFIRMED, "unconfirmed"},
	    {AW_VERDICT_HOST_CHANGED, "host changed"},
	};

	(void)state;
	assert_int_equal(sizeof(words) / sizeof(words[0]), AW_VERDICT_COUNT);
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		assert_string_equal(aw_verdict_name(words[i].v), words[i].name);
		assert_int_equal(aw_verdict_parse(words[i].name), words[i].v);
	}
	/* zero is "nothing decided", so a zeroed struct never claims a verdict */
	assert_int_equal(AW_VERDICT_UNKNOWN, 0);
}

static void test_unknown(void **state)
{
	static const char *const others[] = {"",      "other", "Regressed", "PASS", "regressed ",
	                                     " pass", "pas",   "passed",    "?"};

	(void)state;
	assert_int_equal(aw_verdict_parse(NULL), AW_VERDICT_UNKNOWN);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		assert_int_equal(aw_verdict_parse(others[i]), AW_VERDICT_UNKNOWN);
	assert_string_equal(aw_verdict_name((enum aw_verdict)AW_VERDICT_COUNT), "unknown");
	assert_string_equal(aw_verdict_name((enum aw_verdict) - 1), "unknown");
}

static void test_ranges(void **state)
{
	(void)state;
	/* "counts" in the gate's JSON lists the cell verdicts in enum order */
	assert_int_equal(AW_VERDICT_CELL_FIRST, AW_VERDICT_UNCHANGED);
	/* the words added later are appended: the earlier ones keep their values */
	assert_int_equal(AW_VERDICT_MISSING, 9);
	assert_int_equal(AW_VERDICT_SUSPECT, AW_VERDICT_MISSING + 1);
	assert_int_equal(AW_VERDICT_INCONCLUSIVE, AW_VERDICT_SUSPECT + 1);
	assert_int_equal(AW_VERDICT_CELL_LAST, AW_VERDICT_INCONCLUSIVE);
	assert_int_equal(AW_VERDICT_CELL_LAST - AW_VERDICT_CELL_FIRST + 1, 8);
	for (int v = 0; v < AW_VERDICT_COUNT; v++) {
		bool cell = aw_verdict_is_cell((enum aw_verdict)v);
		bool status = aw_verdict_is_status((enum aw_verdict)v);

		/* one word is both: a cell whose evidence stayed split, and a host with one */
		assert_int_equal(cell && status, v == AW_VERDICT_INCONCLUSIVE);
		assert_int_equal(cell, (v >= AW_VERDICT_CELL_FIRST && v <= AW_VERDICT_CELL_LAST) ||
		                           v == AW_VERDICT_HOST_CHANGED);
		assert_int_equal(!cell && !status, v == AW_VERDICT_UNKNOWN);
	}
	assert_true(aw_verdict_is_status(AW_VERDICT_PASS));
	assert_true(aw_verdict_is_status(AW_VERDICT_FAIL));
	assert_true(aw_verdict_is_status(AW_VERDICT_INCOMPLETE));
	assert_true(aw_verdict_is_status(AW_VERDICT_UNCONFIRMED));
	assert_true(aw_verdict_is_cell(AW_VERDICT_SUSPECT));
	/* appended after the statuses: a cell's word, out of the contiguous range */
	assert_int_equal(AW_VERDICT_HOST_CHANGED, AW_VERDICT_UNCONFIRMED + 1);
	assert_true(aw_verdict_is_cell(AW_VERDICT_HOST_CHANGED));
	assert_false(aw_verdict_is_cell((enum aw_verdict)AW_VERDICT_COUNT));
	assert_false(aw_verdict_is_status((enum aw_verdict)AW_VERDICT_COUNT));
}

/* thresholds.yaml's gate: levels; zero is fail, so a zeroed cell gates as it always did */
static void test_gate_levels(void **state)
{
	static const char *const words[] = {"fail", "warn", "off"};
	static const char *const others[] = {"", "Fail", "warning", "on", "error", " off"};
	enum aw_gate g = AW_GATE_WARN;

	(void)state;
	assert_int_equal(AW_GATE_FAIL, 0);
	for (int i = 0; i < AW_GATE_COUNT; i++) {
		assert_string_equal(aw_gate_name((enum aw_gate)i), words[i]);
		assert_int_equal(aw_gate_parse(words[i], &g), 0);
		assert_int_equal(g, i);
	}
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		g = AW_GATE_OFF;
		assert_int_equal(aw_gate_parse(others[i], &g), -EINVAL);
		assert_int_equal(g, AW_GATE_OFF);
	}
	assert_int_equal(aw_gate_parse(NULL, &g), -EINVAL);
	assert_string_equal(aw_gate_name((enum aw_gate)AW_GATE_COUNT), "fail");
}

/* The A/B verdicts: one enum and one table, the words the judgments have always carried. */
static void test_ab_verdicts(void **state)
{
	static const char *const words[AW_AB_VERDICT_COUNT] = {
	    "unknown",      "unchanged", "regressed", "improved",
	    "inconclusive", "new",       "missing",   "failed",
	};

	(void)state;
	for (int v = 0; v < AW_AB_VERDICT_COUNT; v++) {
		assert_string_equal(aw_ab_verdict_name((enum aw_ab_verdict)v), words[v]);
		assert_int_equal(aw_ab_verdict_parse(words[v]), v);
	}
	assert_int_equal(aw_ab_verdict_parse(NULL), AW_AB_VERDICT_UNKNOWN);
	assert_int_equal(aw_ab_verdict_parse("Regressed"), AW_AB_VERDICT_UNKNOWN);
	assert_int_equal(aw_ab_verdict_parse("noisy"), AW_AB_VERDICT_UNKNOWN);
	assert_string_equal(aw_ab_verdict_name((enum aw_ab_verdict)AW_AB_VERDICT_COUNT), "unknown");
	/* what decides a gate: a change or its absence, never "cannot tell" */
	assert_true(aw_ab_verdict_decides(AW_AB_VERDICT_REGRESSED));
	assert_true(aw_ab_verdict_decides(AW_AB_VERDICT_IMPROVED));
	assert_true(aw_ab_verdict_decides(AW_AB_VERDICT_UNCHANGED));
	assert_false(aw_ab_verdict_decides(AW_AB_VERDICT_INCONCLUSIVE));
	assert_false(aw_ab_verdict_decides(AW_AB_VERDICT_UNKNOWN));
	assert_false(aw_ab_verdict_decides(AW_AB_VERDICT_FAILED));
}

/* A change from below the resolution, or judged in ns, is told in ns; any other in percent;
 * nothing when a value is unknown. */
static void test_change_text(void **state)
{
	char b[64];

	(void)state;
	assert_string_equal(aw_change_text(b, sizeof(b), 0.037, 23.7, 639.5, false),
	                    "below resolution -> 23.7 ns");
	assert_string_equal(aw_change_text(b, sizeof(b), 0, 24.9, NAN, false),
	                    "below resolution -> 24.9 ns");
	assert_string_equal(aw_change_text(b, sizeof(b), 0, 0.04, NAN, true), "below resolution");
	assert_string_equal(aw_change_text(b, sizeof(b), 3.1, 5.2, 0.42, true), "+2.10 ns");
	assert_string_equal(aw_change_text(b, sizeof(b), 5.2, 3.1, NAN, true), "-2.10 ns");
	assert_string_equal(aw_change_text(b, sizeof(b), 5.0, 50.0, NAN, false), "+900.0%");
	assert_string_equal(aw_change_text(b, sizeof(b), 1.03, 18.4, 16.89, false), "+1689.0%");
	assert_string_equal(aw_change_text(b, sizeof(b), AW_RESOLUTION_NS, 0.2, NAN, false),
	                    "+100.0%");
	assert_null(aw_change_text(b, sizeof(b), NAN, 5.0, NAN, false));
	assert_string_equal(b, "");
	assert_null(aw_change_text(b, sizeof(b), 0, NAN, NAN, false));
	assert_null(aw_change_text(b, sizeof(b), 3.0, NAN, NAN, true));
	assert_true(aw_change_in_ns(0, false));
	assert_true(aw_change_in_ns(5.0, true));
	assert_false(aw_change_in_ns(5.0, false));
	assert_false(aw_change_in_ns(NAN, false));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),  cmocka_unit_test(test_words),
	    cmocka_unit_test(test_unknown),     cmocka_unit_test(test_ranges),
	    cmocka_unit_test(test_gate_levels), cmocka_unit_test(test_ab_verdicts),
	    cmocka_unit_test(test_change_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
