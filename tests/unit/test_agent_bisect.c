/* The bisection's verdict of a probe from its two comparisons (agents/bisect.c,
 * bisect_classify()): the decided cases, the larger side of two regressions, and a side that
 * cannot tell settled by half the range's own change, as a step command's one run per commit
 * on a loaded host needs (e2e.agent.bisect's step: from good [0.58, 1.42], to bad +39.8%
 * [1.375, 1.421] of a +39.6% range, measured again until the budget ran out before). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bisect_int.h"

/* A comparison of ratio `r` in [lo, hi] (ratios; logs inside). */
static struct bisect_cmp cmp(double r, double lo, double hi, enum aw_ab_verdict v)
{
	return (struct bisect_cmp){log(r), log(lo), log(hi), v};
}

static void test_decided(void **state)
{
	struct bisect_cmp slower = cmp(1.10, 1.09, 1.11, AW_AB_VERDICT_REGRESSED);
	struct bisect_cmp same = cmp(1.00, 0.99, 1.01, AW_AB_VERDICT_UNCHANGED);
	double range = log(1.10);

	(void)state;
	assert_int_equal(bisect_classify(&slower, &same, range), PROBE_BAD);
	assert_int_equal(bisect_classify(&same, &slower, range), PROBE_GOOD);
	/* the range unknown changes nothing that is decided */
	assert_int_equal(bisect_classify(&slower, &same, NAN), PROBE_BAD);
	assert_int_equal(bisect_classify(&same, &slower, NAN), PROBE_GOOD);
}

static void test_two_regressions_follow_the_larger(void **state)
{
	struct bisect_cmp big = cmp(1.23, 1.20, 1.25, AW_AB_VERDICT_REGRESSED);
	struct bisect_cmp small = cmp(1.14, 1.11, 1.16, AW_AB_VERDICT_REGRESSED);

	(void)state;
	assert_int_equal(bisect_classify(&small, &big, log(1.40)), PROBE_GOOD);
	assert_int_equal(bisect_classify(&big, &small, log(1.40)), PROBE_BAD);
}

/* Both regressed, one as wide as half the range's change or more (e2e.agent.bisect under
 * ASan: a probe after the +5% culprit read +3.6% from good and +15% [+0.06, +33] to bad, and
 * the bisection followed the larger into the wrong half): it is measured again. */
static void test_two_regressions_too_wide_to_weigh(void **state)
{
	struct bisect_cmp from_good = cmp(1.036, 1.012, 1.061, AW_AB_VERDICT_REGRESSED);
	struct bisect_cmp to_bad = cmp(1.15, 1.0006, 1.33, AW_AB_VERDICT_REGRESSED);
	double range = log(1.05);

	(void)state;
	assert_int_equal(bisect_classify(&from_good, &to_bad, range), PROBE_INCONCLUSIVE);
	assert_int_equal(bisect_classify(&to_bad, &from_good, range), PROBE_INCONCLUSIVE);
	/* a bound beyond half the change still places it */
	from_good = cmp(1.04, 1.03, 1.05, AW_AB_VERDICT_REGRESSED);
	assert_int_equal(bisect_classify(&from_good, &to_bad, range), PROBE_BAD);
}

static void test_one_side_settled_by_half_the_range(void **state)
{
	struct bisect_cmp wide = cmp(0.998, 0.58, 1.42, AW_AB_VERDICT_INCONCLUSIVE);
	struct bisect_cmp whole = cmp(1.398, 1.375, 1.421, AW_AB_VERDICT_REGRESSED);
	struct bisect_cmp none = cmp(1.002, 0.98, 1.03, AW_AB_VERDICT_INCONCLUSIVE);
	double range = log(1.396);

	(void)state;
	/* bad is slower than the probe by the whole change: the probe is as fast as good */
	assert_int_equal(bisect_classify(&wide, &whole, range), PROBE_GOOD);
	/* the probe is slower than good by the whole change: it is as slow as bad */
	assert_int_equal(bisect_classify(&whole, &wide, range), PROBE_BAD);
	/* the bound must lie beyond half the change: an interval across it tells nothing */
	assert_int_equal(bisect_classify(&wide, &wide, range), PROBE_INCONCLUSIVE);
	/* without the range's change nothing settles it */
	assert_int_equal(bisect_classify(&wide, &whole, NAN), PROBE_INCONCLUSIVE);
	/* an inconclusive comparison that is surely under half the change counts too */
	assert_int_equal(bisect_classify(&none, &wide, range), PROBE_GOOD);
	assert_int_equal(bisect_classify(&wide, &none, range), PROBE_BAD);
}

static void test_contradiction_is_inconclusive(void **state)
{
	struct bisect_cmp none = cmp(1.002, 0.98, 1.03, AW_AB_VERDICT_INCONCLUSIVE);
	struct bisect_cmp missing = {NAN, NAN, NAN, AW_AB_VERDICT_MISSING};
	double range = log(1.396);

	(void)state;
	/* as fast as good and as fast as bad: no single step puts it there */
	assert_int_equal(bisect_classify(&none, &none, range), PROBE_INCONCLUSIVE);
	/* a comparison without bounds votes for nothing */
	assert_int_equal(bisect_classify(&missing, &missing, range), PROBE_INCONCLUSIVE);
	assert_int_equal(bisect_classify(&missing, &none, range), PROBE_BAD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decided),
	    cmocka_unit_test(test_two_regressions_follow_the_larger),
	    cmocka_unit_test(test_two_regressions_too_wide_to_weigh),
	    cmocka_unit_test(test_one_side_settled_by_half_the_range),
	    cmocka_unit_test(test_contradiction_is_inconclusive),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
