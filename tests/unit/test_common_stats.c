/* Statistics of a cell against hand-computed vectors: type-7 percentiles, moments, and the
 * order-statistic confidence interval of the median (exact binomial coverage). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aw/stats.h"

#define assert_near(a, b) assert_true(fabs((a) - (b)) < 1e-9)

static void test_n1(void **state)
{
	double v[] = {5};
	struct aw_summary s;

	(void)state;
	assert_int_equal(aw_summarize(v, 1, &s), 0);
	assert_near(s.min, 5);
	assert_near(s.p50, 5);
	assert_near(s.p99, 5);
	assert_near(s.max, 5);
	assert_near(s.mean, 5);
	assert_near(s.stddev, 0);
	assert_near(s.ci_lo, 5);
	assert_near(s.ci_hi, 5);
}

static void test_n2(void **state)
{
	double v[] = {3, 1};
	struct aw_summary s;

	(void)state;
	assert_int_equal(aw_summarize(v, 2, &s), 0);
	assert_near(s.min, 1);
	assert_near(s.p50, 2);
	assert_near(s.p95, 2.9);
	assert_near(s.p99, 2.98);
	assert_near(s.max, 3);
	assert_near(s.mean, 2);
	assert_near(s.stddev, sqrt(2));
	/* two samples cannot give 95%: the widest interval is reported */
	assert_near(s.ci_lo, 1);
	assert_near(s.ci_hi, 3);
}

static void test_n10(void **state)
{
	double v[] = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
	struct aw_summary s;

	(void)state;
	assert_int_equal(aw_summarize(v, 10, &s), 0);
	assert_near(s.p50, 5.5);
	assert_near(s.p95, 9.55);
	assert_near(s.p99, 9.91);
	assert_near(s.mean, 5.5);
	assert_near(s.stddev, sqrt(55.0 / 6.0));
	/* ranks 2 and 9: coverage 1 - 2*11/1024 = 0.9785; ranks 3 and 8 only 0.8906 */
	assert_near(s.ci_lo, 2);
	assert_near(s.ci_hi, 9);
}

static void test_ci_ranks(void **state)
{
	size_t lo, hi;
	double cov;

	(void)state;
	cov = aw_median_ci_ranks(100, 0.95, &lo, &hi);
	assert_int_equal(lo, 40);
	assert_int_equal(hi, 61);
	assert_true(cov >= 0.95 && cov < 0.97);
	cov = aw_median_ci_ranks(5, 0.95, &lo, &hi);
	assert_int_equal(lo, 1);
	assert_int_equal(hi, 5);
	assert_near(cov, 1 - 2.0 / 32);
	cov = aw_median_ci_ranks(6, 0.95, &lo, &hi);
	assert_int_equal(lo, 1);
	assert_int_equal(hi, 6);
	assert_near(cov, 1 - 2.0 / 64);
	/* a large n takes the normal-approximation start and must still be exact: for n = 200
	 * the tables give ranks 86 and 115 */
	aw_median_ci_ranks(200, 0.95, &lo, &hi);
	assert_int_equal(lo, 86);
	assert_int_equal(hi, 115);
	aw_median_ci_ranks(1000, 0.95, &lo, &hi);
	assert_int_equal(lo, 469);
	assert_int_equal(hi, 532);
}

static void test_empty(void **state)
{
	struct aw_summary s;
	double v[1];

	(void)state;
	assert_int_equal(aw_summarize(v, 0, &s), -22);
}

static int cmp_like_qsort(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* aw_sort_doubles() leaves every bit where qsort() did: ties, -0 beside 0, NANs (equal to
 * anything) among the numbers; short arrays and long ones (past its stack buffer). */
static void test_sort_like_qsort(void **state)
{
	static double want[700], got[700];
	/* (rounds 1 to 3: NANs too; round 4: -0 beside 0 and infinities, no NAN) */
	const double odd[] = {0.0, -0.0, INFINITY, -INFINITY, 1.5, 1.5, NAN};
	unsigned seed = 12345;

	(void)state;
	for (size_t n = 0; n <= 700; n += n < 40 ? 1 : 37) {
		for (int round = 0; round < 5; round++) {
			for (size_t i = 0; i < n; i++) {
				seed = seed * 1103515245u + 12345u;
				want[i] = (double)(seed >> 16 & 0xff) - 100;
				if (round && seed % (round == 3 ? 2 : 7) == 0)
					want[i] = odd[(seed >> 8) % (round == 4 ? 6 : 7)];
			}
			memcpy(got, want, n * sizeof(*want));
			qsort(want, n, sizeof(*want), cmp_like_qsort);
			aw_sort_doubles(got, n);
			if (n)
				assert_memory_equal(got, want, n * sizeof(*want));
		}
	}
}

static void test_mad(void **state)
{
	double v[] = {1, 1, 2, 2, 4, 6, 9};
	double scratch[7];

	(void)state;
	/* median 2; deviations 1 1 0 0 2 4 7 -> median 1 */
	assert_near(aw_mad_sorted(v, 7, scratch), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_n1),
	    cmocka_unit_test(test_n2),
	    cmocka_unit_test(test_n10),
	    cmocka_unit_test(test_ci_ranks),
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_mad),
	    cmocka_unit_test(test_sort_like_qsort),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
