/* Hypothesis tests and change points against values computed by hand or by R. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "changepoint.h"
#include "stattest.h"

#define assert_close(a, b, tol) assert_true(fabs((a) - (b)) < (tol))

static void test_tails(void **state)
{
	(void)state;
	assert_close(aw_norm_sf(0), 0.5, 1e-12);
	assert_close(aw_norm_sf(1.959963984540054), 0.025, 1e-9);
	assert_close(aw_t_sf(1, 1), 0.25, 1e-9);                  /* Cauchy */
	assert_close(aw_t_sf(2.262157162740992, 9), 0.025, 1e-7); /* R: qt(0.975, 9) */
	assert_close(aw_t_sf(-2.262157162740992, 9), 0.975, 1e-7);
	assert_close(aw_t_sf(3, 1e6), aw_norm_sf(3), 1e-5);
	assert_close(aw_betainc(2, 3, 0.4), 0.5248, 1e-10);
	assert_close(aw_betainc(0.5, 0.5, 0.5), 0.5, 1e-10);
}

/* The memo gives aw_t_quantile()'s very bits, keeps the last AW_T_MEMO_N, forgets the oldest. */
static void test_t_quantile_memo(void **state)
{
	struct aw_t_memo m = {0};

	(void)state;
	assert_close(aw_t_quantile(0.025, 9), 2.262157162740992, 1e-9); /* R: qt(0.975, 9) */
	for (int round = 0; round < 2; round++)
		for (int df = 1; df <= 2 * AW_T_MEMO_N; df++) {
			double want = aw_t_quantile(0.05, df),
			       got = aw_t_quantile_memo(&m, 0.05, df);

			assert_memory_equal(&got, &want, sizeof(got));
		}
	assert_int_equal(m.n, AW_T_MEMO_N);
	/* the last AW_T_MEMO_N asked for are held, the first ones forgotten */
	for (int df = AW_T_MEMO_N + 1; df <= 2 * AW_T_MEMO_N; df++) {
		bool held = false;

		for (size_t i = 0; i < m.n; i++)
			held = held || (m.df[i] == df && m.p[i] == 0.05);
		assert_true(held);
	}
	for (size_t i = 0; i < m.n; i++)
		assert_true(m.df[i] > AW_T_MEMO_N);
	/* another p is another quantile; df beyond 200 and NAN as aw_t_quantile() takes them */
	assert_true(aw_t_quantile_memo(&m, 0.025, 9) > aw_t_quantile_memo(&m, 0.05, 9));
	assert_close(aw_t_quantile_memo(&m, 0.025, 9), 2.262157162740992, 1e-9);
	assert_true(aw_t_quantile_memo(&m, 0.05, 1e6) == aw_t_quantile(0.05, 200));
	/* (twice: a NAN is never found, only computed again) */
	assert_true(aw_t_quantile_memo(&m, 0.05, NAN) == aw_t_quantile(0.05, 200));
	assert_true(aw_t_quantile_memo(&m, 0.05, NAN) == aw_t_quantile(0.05, 200));
}

static void test_gamma_family(void **state)
{
	(void)state;
	assert_close(aw_digamma(1), -0.5772156649015329, 1e-12); /* -Euler's gamma */
	assert_close(aw_digamma(0.5), -1.9635100260214235, 1e-12);
	assert_close(aw_digamma(10), 2.251752589066721, 1e-12);
	assert_close(aw_trigamma(1), 1.6449340668482264, 1e-12);  /* pi^2 / 6 */
	assert_close(aw_trigamma(0.5), 4.934802200544679, 1e-12); /* pi^2 / 2 */
	assert_close(aw_trigamma_inverse(aw_trigamma(3.7)), 3.7, 1e-9);
	assert_close(aw_trigamma_inverse(aw_trigamma(250)), 250, 1e-6);
}

static void test_welch(void **state)
{
	double a[] = {1, 2, 3, 4, 5}, b[] = {3, 4, 5, 6, 7}, c[] = {2, 2, 2}, d[] = {3, 3, 3};

	(void)state;
	/* t = -2, df = 8: R's t.test(a, b) p-value 0.08052 */
	assert_close(aw_welch_p(a, 5, b, 5), 0.080516, 1e-5);
	assert_close(aw_welch_p(c, 3, d, 3), 0, 1e-12);
	assert_close(aw_welch_p(c, 3, c, 3), 1, 1e-12);
	assert_close(aw_welch_p(a, 1, b, 5), 1, 1e-12);
}

static void test_mann_whitney(void **state)
{
	double hi[] = {4, 5, 6}, lo[] = {1, 2, 3}, mixed[] = {1.5, 2.5, 5.5};
	double x[] = {1, 2, 2, 3, 4, 4, 5}, y[] = {1, 2, 2, 3, 4, 4, 5};

	(void)state;
	/* every a above every b: U = 9, P(U >= 9) = 1 / C(6, 3) */
	assert_close(aw_mann_whitney_p(hi, 3, lo, 3, AW_GREATER), 0.05, 1e-12);
	assert_close(aw_mann_whitney_p(hi, 3, lo, 3, AW_LESS), 1, 1e-12);
	assert_close(aw_mann_whitney_p(hi, 3, lo, 3, AW_TWO_SIDED), 0.1, 1e-12);
	/* mixed vs lo: U = 1 + 2 + 3 = 6 -> P(U >= 6) = 7/20 (R: wilcox.test exact) */
	assert_close(aw_mann_whitney_p(mixed, 3, lo, 3, AW_GREATER), 0.35, 1e-12);
	/* ties: identical samples are no evidence either way */
	assert_true(aw_mann_whitney_p(x, 7, y, 7, AW_TWO_SIDED) > 0.9);
	assert_close(aw_mann_whitney_p(x, 0, y, 7, AW_GREATER), 1, 1e-12);
}

static void test_bh(void **state)
{
	double p[] = {0.01, 0.04, 0.03, 0.005}, q[4];

	(void)state;
	assert_int_equal(aw_bh_adjust(p, 4, q), 0);
	assert_close(q[0], 0.02, 1e-12);
	assert_close(q[1], 0.04, 1e-12);
	assert_close(q[2], 0.04, 1e-12);
	assert_close(q[3], 0.02, 1e-12);
	assert_int_equal(aw_bh_adjust(p, 4, p), 0); /* in place */
	assert_close(p[3], 0.02, 1e-12);
}

/* Expected values from brute force over every sign pattern (2^n of them) in Python: the
 * Walsh averages' median, P(T+ <= t) by enumeration, and the interval's order statistics. */
static void test_hodges_lehmann(void **state)
{
	static const double a[] = {1.5, -0.3, 2.2, 0.9, 1.1, -0.8};
	static const double b[] = {0.011, 0.009, 0.013, -0.002, 0.010,
	                           0.008, 0.012, 0.007, 0.015,  0.004};
	static const double c[] = {3.1, -1.2, 0.4, 2.7, -0.5};
	static const double d[] = {0.2,   -0.15, 0.05,  -0.31, 0.12, 0.27,
	                           -0.08, 0.01,  -0.22, 0.17,  0.09, -0.04};
	double big[80], zeros[7] = {0};
	struct aw_hl hl;

	(void)state;
	assert_int_equal(aw_signrank_min_n(0.05), 6);
	assert_int_equal(aw_hodges_lehmann(a, 6, 0.05, &hl), 0);
	assert_close(hl.estimate, 0.9, 1e-12);
	assert_close(hl.p, 0.15625, 1e-12);
	assert_close(hl.lo, -0.8, 1e-12); /* n = 6: the only 95% interval is W(1), W(21) */
	assert_close(hl.hi, 2.2, 1e-12);
	assert_close(hl.coverage, 0.96875, 1e-12);
	assert_true(hl.exact);
	assert_int_equal(aw_hodges_lehmann(b, 10, 0.05, &hl), 0);
	assert_close(hl.estimate, 0.0095, 1e-12);
	assert_close(hl.p, 0.00390625, 1e-12);
	assert_close(hl.lo, 0.005, 1e-12);
	assert_close(hl.hi, 0.012, 1e-12);
	assert_close(hl.coverage, 0.951171875, 1e-12);
	/* five values cannot give a 95% interval */
	assert_int_equal(aw_hodges_lehmann(c, 5, 0.05, &hl), 0);
	assert_close(hl.estimate, 0.95, 1e-12);
	assert_close(hl.p, 0.625, 1e-12);
	assert_true(isnan(hl.lo) && isnan(hl.hi) && isnan(hl.coverage));
	assert_int_equal(aw_hodges_lehmann(d, 12, 0.05, &hl), 0);
	assert_close(hl.estimate, 0.015, 1e-12);
	assert_close(hl.p, 0.791015625, 1e-12);
	assert_close(hl.lo, -0.11, 1e-12);
	assert_close(hl.hi, 0.13, 1e-12);
	assert_close(hl.coverage, 0.95751953125, 1e-12);
	/* all zeros: no evidence either way */
	assert_int_equal(aw_hodges_lehmann(zeros, 7, 0.05, &hl), 0);
	assert_close(hl.estimate, 0, 1e-15);
	assert_close(hl.p, 1, 1e-15);
	/* above 50 values the normal approximation: 1..80 shifted by -40.5 is symmetric about
	 * 0, so the estimate is 0 and the interval symmetric; T+ = sum of 1..80 / 2 gives p = 1
	 * after the continuity correction */
	for (int i = 0; i < 80; i++)
		big[i] = i + 1 - 40.5;
	assert_int_equal(aw_hodges_lehmann(big, 80, 0.05, &hl), 0);
	assert_false(hl.exact);
	assert_close(hl.estimate, 0, 1e-12);
	assert_close(hl.lo, -hl.hi, 1e-12);
	assert_close(hl.lo, -5.5, 1e-12); /* k = floor(m / 2 - 1.96 sd) = 1211, by Python */
	assert_close(hl.hi, 5.5, 1e-12);
	assert_close(hl.p, 1, 1e-12);
}

static void test_changepoints(void **state)
{
	double x[60], flat[30], bad[8] = {1, 2, 3, 4, NAN, 6, 7, 8};
	struct aw_changepoint cp[8];
	struct aw_cp_opts o = AW_CP_OPTS_DEFAULT;
	int n;

	(void)state;
	for (int i = 0; i < 60; i++) /* deterministic +-0.5% ripple around 10, 12, 9 */
		x[i] = (i < 20 ? 10 : i < 40 ? 12 : 9) * (1 + 0.005 * ((i * 7 % 5) - 2) / 2.0);
	n = aw_changepoints(x, 60, &o, cp, 8);
	assert_int_equal(n, 2);
	assert_int_equal(cp[0].index, 20);
	assert_int_equal(cp[1].index, 40);
	assert_true(cp[0].after > cp[0].before);
	assert_true(cp[1].pvalue < 0.001);
	for (int i = 0; i < 30; i++)
		flat[i] = 5 + 0.01 * ((i * 3 % 7) - 3);
	assert_int_equal(aw_changepoints(flat, 30, &o, cp, 8), 0);
	/* a step smaller than min_rel_change is not a change */
	o.min_rel_change = 0.5;
	assert_int_equal(aw_changepoints(x, 60, &o, cp, 8), 0);
	o.min_rel_change = 0;
	assert_int_equal(aw_changepoints(x, 5, &o, cp, 8), 0); /* too short */
	assert_int_equal(aw_changepoints(bad, 8, &o, cp, 8), -22);
	assert_int_equal(aw_changepoints(x, 60, &o, cp, 1), 1); /* out is bounded */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tails),           cmocka_unit_test(test_welch),
	    cmocka_unit_test(test_mann_whitney),    cmocka_unit_test(test_bh),
	    cmocka_unit_test(test_changepoints),    cmocka_unit_test(test_gamma_family),
	    cmocka_unit_test(test_t_quantile_memo), cmocka_unit_test(test_hodges_lehmann),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
