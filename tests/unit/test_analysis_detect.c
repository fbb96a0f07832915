/* Regression verdicts on hand-made histories: clear regressions from one head run, noise that
 * must not alarm, new and missing cells, a baseline below resolution, bimodal baselines and
 * excursions seen before, the window cut at a change point, and threshold rules. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "detect.h"

/* A deterministic ripple of +-amp around v. */
static void series(double *x, size_t n, double v, double amp)
{
	static const double r[] = {0.3, -0.8, 0.1, 0.9, -0.4, -0.1, 0.6, -0.9, 0.2, -0.5, 0.7};

	for (size_t i = 0; i < n; i++)
		x[i] = v * (1 + amp * r[i % 11]);
}

/* Gives `in` the runs' common mode and reference factors, history and head. */
static void set_factors(struct aw_detect_input *in, const double *cm, const double *xcm,
                        const double *rf, const double *xrf)
{
	in->history_factor[AW_FACTOR_COMMON] = cm;
	in->head_factor[AW_FACTOR_COMMON] = xcm;
	in->history_factor[AW_FACTOR_REFERENCE] = rf;
	in->head_factor[AW_FACTOR_REFERENCE] = xrf;
}

/* One host with a filler of quiet cells around the cell under test, so that the false discovery
 * correction sees a realistic family. Returns the verdict of cell 0. */
static struct aw_detect_result judge_one_min(const double *hist, const double *hist_min, size_t nh,
                                             const double *head, const double *head_min, size_t nx,
                                             double threshold);

static struct aw_detect_result judge_one(const double *hist, size_t nh, const double *head,
                                         size_t nx, double threshold)
{
	return judge_one_min(hist, NULL, nh, head, NULL, nx, threshold);
}

/* The same for a cell whose input is given whole. */
static struct aw_detect_result judge_input(const struct aw_detect_input *cell)
{
	enum {
		FILLER = 40
	};
	static double fh[FILLER][20], fx[FILLER][1];
	struct aw_detect_input in[FILLER + 1];
	struct aw_detect_result out[FILLER + 1];

	in[0] = *cell;
	for (int i = 0; i < FILLER; i++) {
		series(fh[i], 20, 10 + i, 0.004);
		fx[i][0] = (10 + i) * 1.001;
		in[i + 1] = (struct aw_detect_input){.history = fh[i],
		                                     .n_history = 20,
		                                     .head = fx[i],
		                                     .n_head = 1,
		                                     .threshold = 0.05};
	}
	assert_int_equal(aw_detect(in, FILLER + 1, NULL, out), 0);
	for (int i = 1; i <= FILLER; i++)
		assert_int_equal(out[i].verdict, AW_VERDICT_UNCHANGED);
	return out[0];
}

/* The same, with the runs' fastest batches of the cell under test. */
static struct aw_detect_result judge_one_min(const double *hist, const double *hist_min, size_t nh,
                                             const double *head, const double *head_min, size_t nx,
                                             double threshold)
{
	const struct aw_detect_input in = {.history = hist,
	                                   .n_history = nh,
	                                   .head = head,
	                                   .n_head = nx,
	                                   .threshold = threshold,
	                                   .history_min = hist_min,
	                                   .head_min = head_min};

	return judge_input(&in);
}

static void test_clear_regression_one_run(void **state)
{
	double h[10], x[] = {50.0};
	struct aw_detect_result r;

	(void)state;
	series(h, 10, 5.0, 0.01); /* LDADD-like 5 ns, then STADD-like 50 ns */
	r = judge_one(h, 10, x, 1, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	assert_true(fabs(r.change - 9) < 0.2);
	assert_true(r.qvalue < 0.05);
	assert_true(r.change_lo > 8);
	assert_string_equal(aw_verdict_name(r.verdict), "regressed");
}

static void test_noise_is_not_a_regression(void **state)
{
	double h[10], x[] = {5.0 * 1.012};
	struct aw_detect_result r;

	(void)state;
	series(h, 10, 5.0, 0.01);
	r = judge_one(h, 10, x, 1, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_UNCHANGED);
	/* a small but real shift below the threshold is not a regression either */
	series(h, 10, 5.0, 0.0005);
	x[0] = 5.0 * 1.02;
	r = judge_one(h, 10, x, 1, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_UNCHANGED);
}

static void test_improvement(void **state)
{
	double h[10], x[] = {2.5};
	struct aw_detect_result r;

	(void)state;
	series(h, 10, 5.0, 0.01);
	r = judge_one(h, 10, x, 1, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_IMPROVED);
	assert_true(r.change < -0.45);
}

static void test_new_and_missing(void **state)
{
	double h[10], x[] = {5.0};
	struct aw_detect_result r;

	(void)state;
	series(h, 10, 5.0, 0.01);
	r = judge_one(NULL, 0, x, 1, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_NEW);
	assert_true(isnan(r.baseline));
	r = judge_one(h, 10, NULL, 0, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_MISSING);
	assert_true(r.baseline > 4.9 && r.baseline < 5.1);
}

static void test_below_resolution_baseline(void **state)
{
	double h[10] = {0}, x[] = {20.0}, se[] = {0.05}, zero[] = {0};
	struct aw_detect_input in = {.history = h,
	                             .n_history = 10,
	                             .head = x,
	                             .head_se = se,
	                             .n_head = 1,
	                             .strict_resolution = true,
	                             .threshold = 0.05};
	struct aw_detect_result r;

	(void)state;
	/* plain incq at 0 ns, then lock xadd + mfence: a regression of unbounded size */
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	assert_true(isinf(r.change));
	assert_non_null(strstr(r.note, "below resolution"));
	in.head = zero;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_int_equal(r.verdict, AW_VERDICT_UNCHANGED);
	/* a head still at the timer's resolution (a few ps) is no news either */
	x[0] = 0.044;
	in.head = x;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_int_equal(r.verdict, AW_VERDICT_UNCHANGED);
}

/* A contended cell with duty that hides under its duty nops in some runs (0 ns) and costs a few
 * ns in others: judged on its change in ns against its own noise, never as +inf. */
static void test_flipping_through_resolution(void **state)
{
	double h[10] = {0, 0, 5.2, 0, 6.1, 0, 0, 7.4, 0, 5.6}, x[] = {6.0}, big[] = {60.0};
	double zero_h[10] = {0}, two[] = {5.0, 0};
	struct aw_detect_input in = {
	    .history = h, .n_history = 10, .head = x, .n_head = 1, .threshold = 0.25};
	struct aw_detect_result r;

	(void)state;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_true(r.absolute);
	assert_true(isfinite(r.change));
	assert_int_not_equal(r.verdict, AW_VERDICT_REGRESSED);
	/* ten times its level is a regression, still of finite size */
	in.head = big;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	assert_true(isfinite(r.change) && r.change > 5);
	assert_non_null(strstr(r.note, "in ns"));
	/* a strict (uncontended, duty-free) cell with a 0-ns baseline whose head does not clear
	 * the resolution in every run is judged in ns too, not as +inf */
	in = (struct aw_detect_input){.history = zero_h,
	                              .n_history = 10,
	                              .head = two,
	                              .n_head = 2,
	                              .strict_resolution = true,
	                              .threshold = 0.05};
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_true(r.absolute);
	assert_false(isinf(r.change));
}

/* Whole runs in a fast and a slow regime, each steady: the head is compared with its own
 * regime's level, so a 6% slowdown in the fast regime is caught, and a slow-regime head is
 * not a regression. */
static void test_regimes(void **state)
{
	double h[12], fast6[] = {6.35 * 1.064}, slow[] = {9.8}, fast[] = {6.356};
	struct aw_detect_result r;

	(void)state;
	for (int i = 0; i < 12; i++)
		h[i] = i % 3 == 1 ? 9.0 + 0.2 * (i % 5) : 6.35 * (1 + 0.001 * (i % 4));
	r = judge_one(h, 12, fast6, 1, 0.05);
	assert_true(r.regimes);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	assert_true(fabs(r.baseline - 6.355) < 0.02);
	r = judge_one(h, 12, slow, 1, 0.05);
	assert_true(r.regimes);
	assert_int_not_equal(r.verdict, AW_VERDICT_REGRESSED);
	r = judge_one(h, 12, fast, 1, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_UNCHANGED);
}

/* Run factors: a head run whose common mode moved far beyond its history's spread is
 * disturbed, and a change it explains is not a regression; an undisturbed head run beside it
 * decides alone; a cell whose history follows the reference kernel is judged relative to it. */
static void test_run_factors(void **state)
{
	double h[10], hf[10], x[] = {5.5}, xf[] = {log(1.12)}, x2[] = {5.5, 5.02},
	                      xf2[] = {log(1.12), 0.001};
	double hr[10], fr[10], xr[] = {5.0 * 1.2 * 1.003}, xrf[] = {log(1.2)};
	struct aw_detect_input in = {
	    .history = h, .n_history = 10, .head = x, .n_head = 1, .threshold = 0.05};
	struct aw_detect_result r;

	(void)state;
	series(h, 10, 5.0, 0.002);
	for (int i = 0; i < 10; i++)
		hf[i] = 0.002 * (i % 3);
	in.history_factor[AW_FACTOR_COMMON] = hf;
	in.head_factor[AW_FACTOR_COMMON] = xf;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_true(r.disturbed);
	assert_int_equal(r.disturbed_by, AW_FACTOR_COMMON);
	assert_true(fabs(r.disturb - 1.12) < 0.01);
	assert_true(r.explained);
	assert_non_null(strstr(r.note, "disturbed"));
	/* from one head run it awaits confirmation; two head runs both disturbed are noisy */
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	assert_false(r.by_reference); /* the common mode alone: a real change of every cell? */
	{
		/* the reference kernel slowed as much in that run: the machine's doing */
		double rf[10], xrf1[] = {log(1.115)};

		for (int i = 0; i < 10; i++)
			rf[i] = 0.001 * (i % 2);
		in.history_factor[AW_FACTOR_REFERENCE] = rf;
		in.head_factor[AW_FACTOR_REFERENCE] = xrf1;
		assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
		assert_true(r.disturbed && r.explained && r.by_reference);
		assert_int_equal(r.verdict, AW_VERDICT_REGRESSED); /* still confirmation's call */
		xrf1[0] = log(1.01);                               /* its reference unmoved */
		assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
		assert_true(r.explained);
		assert_false(r.by_reference);
		in.history_factor[AW_FACTOR_REFERENCE] = in.head_factor[AW_FACTOR_REFERENCE] = NULL;
	}
	{
		double x3[] = {5.5, 5.52}, xf3[] = {log(1.12), log(1.11)};

		in.head = x3;
		in.head_factor[AW_FACTOR_COMMON] = xf3;
		in.n_head = 2;
		assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
		assert_true(r.disturbed && r.explained);
		assert_int_equal(r.verdict, AW_VERDICT_NOISY);
		in.head = x;
		in.head_factor[AW_FACTOR_COMMON] = xf;
		in.n_head = 1;
	}
	/* without the factors the same head is a regression */
	in.history_factor[AW_FACTOR_COMMON] = in.head_factor[AW_FACTOR_COMMON] = NULL;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	/* a second, undisturbed head run is judged alone */
	in.history_factor[AW_FACTOR_COMMON] = hf;
	in.head = x2;
	in.head_factor[AW_FACTOR_COMMON] = xf2;
	in.n_head = 2;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_false(r.disturbed);
	assert_int_equal(r.head_n, 1);
	assert_int_equal(r.verdict, AW_VERDICT_UNCHANGED);
	/* a history that follows the reference kernel (runs 1.0x or 1.2x slower, the cell with
	 * them): judged in steps of it (step 9e), a head 20% slower with its reference is
	 * unchanged, and the same head with an unmoved reference is a regression */
	for (int i = 0; i < 10; i++) {
		fr[i] = i % 2 ? log(1.2) : 0;
		hr[i] = 5.0 * exp(fr[i]) * (1 + 0.002 * (i % 3));
	}
	in = (struct aw_detect_input){
	    .history = hr, .n_history = 10, .head = xr, .n_head = 1, .threshold = 0.05};
	in.history_factor[AW_FACTOR_REFERENCE] = fr;
	in.head_factor[AW_FACTOR_REFERENCE] = xrf;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_true(r.on_reference);
	assert_int_equal(r.matched, AW_FACTOR_NONE);
	assert_int_equal(r.verdict, AW_VERDICT_UNCHANGED);
	xrf[0] = 0;
	xr[0] = 5.0 * 1.08;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_true(r.on_reference);
	assert_int_equal(r.matched, AW_FACTOR_NONE);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	assert_string_equal(aw_factor_name(AW_FACTOR_REFERENCE), "reference");
	assert_null(aw_factor_name(AW_FACTOR_NONE));
}

/* Seen before, over the whole history: a head no further out than two runs of it (one head
 * run) or two stretches of as many runs (several) is noisy, so two lone slow runs hide a
 * one-run head but not three head runs that all show the change, while two slow spells of
 * four runs hide those too. */
static void test_stretches(void **state)
{
	double h[40], one[] = {5.4}, three[] = {5.4, 5.41, 5.39};
	struct aw_detect_result r;

	(void)state;
	series(h, 40, 5.0, 0.002);
	h[7] = h[23] = 5.5; /* two lone slow runs */
	r = judge_one(h, 40, one, 1, 0.05);
	assert_true(r.seen_before);
	assert_int_equal(r.verdict, AW_VERDICT_NOISY);
	assert_non_null(strstr(r.note, "2 of the 40 runs"));
	r = judge_one(h, 40, three, 3, 0.05);
	assert_false(r.seen_before);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	for (int i = 0; i < 4; i++) /* two slow spells of four runs */
		h[2 + i] = h[20 + i] = 5.45;
	r = judge_one(h, 40, three, 3, 0.05);
	assert_true(r.seen_before);
	assert_int_equal(r.verdict, AW_VERDICT_NOISY);
	assert_non_null(strstr(r.note, "stretches of 3 runs"));
}

/* A cell whose history follows the reference kernel beside it far more closely than its runs'
 * common mode (a mul chain on a host whose clock steps between two levels 2% apart, while the
 * lock ops of the common mode wander on their own), but whose own noise (0.6%) is too large a
 * share of its spread to be judged in steps of the reference (step 9e), is matched by its
 * reference: a head on the slow clock is compared with the runs of that clock, so it is
 * unchanged, and 6% slower than them it is a 6% regression. A cell that follows the common
 * mode keeps it. */
static void test_matched_by_closer_factor(void **state)
{
	double h[40], cm[40], rf[40], x[] = {5.0 * 1.02}, xcm[] = {0.02}, xrf[] = {log(1.02)};
	struct aw_detect_input in = {
	    .history = h, .n_history = 40, .head = x, .n_head = 1, .threshold = 0.05};
	struct aw_detect_result r;

	(void)state;
	series(h, 40, 5.0, 0.006);
	for (int i = 0; i < 40; i++) {
		cm[i] = 0.02 * ((i * 7) % 5);
		rf[i] = i % 3 ? 0 : log(1.02);
		h[i] *= exp(rf[i]);
	}
	set_factors(&in, cm, xcm, rf, xrf);
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_false(r.on_reference);
	assert_int_equal(r.matched, AW_FACTOR_REFERENCE);
	assert_true(fabs(r.change) < 0.005);
	assert_int_not_equal(r.verdict, AW_VERDICT_REGRESSED);
	x[0] *= 1.06;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_int_equal(r.matched, AW_FACTOR_REFERENCE);
	assert_true(fabs(r.change - 0.06) < 0.01);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	/* the same cell following its common mode instead: matched by it */
	for (int i = 0; i < 40; i++)
		h[i] = 5.0 * exp(cm[i]) * (1 + 0.001 * ((i % 5) - 2));
	x[0] = 5.0 * exp(xcm[0]);
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_int_equal(r.matched, AW_FACTOR_COMMON);
	assert_int_equal(r.verdict, AW_VERDICT_UNCHANGED);
}

/* Seen before as the cell would have measured beside the head's reference kernel: two lone
 * slow runs hide a one-run head (test_stretches) unless the reference beside the cell ran 10%
 * slower in them too: the machine slowed those runs, the cell did nothing. Never the other way
 * round: a head whose own reference ran slow is explained by it (still confirmation's call),
 * not seen before. */
static void test_stretches_beside_reference(void **state)
{
	double h[40], cm[40], rf[40], x[] = {5.4}, xcm[] = {0.001}, xrf[] = {0.0005};
	struct aw_detect_input in = {
	    .history = h, .n_history = 40, .head = x, .n_head = 1, .threshold = 0.05};
	struct aw_detect_result r;

	(void)state;
	series(h, 40, 5.0, 0.002);
	for (int i = 0; i < 40; i++) {
		cm[i] = 0.002 * (i % 3);
		rf[i] = 0.001 * (i % 2);
		h[i] *= exp(cm[i]); /* (a cell that follows its runs' common mode) */
	}
	h[7] = h[23] = 5.5;
	set_factors(&in, cm, xcm, rf, xrf);
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_true(r.seen_before);
	assert_int_equal(r.verdict, AW_VERDICT_NOISY);
	rf[7] = rf[23] = log(1.1);
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_int_equal(r.matched, AW_FACTOR_COMMON);
	assert_false(r.seen_before);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	/* 3% slower is within the reference's reach of the head's: taken as measured */
	rf[7] = rf[23] = log(1.02);
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_true(r.seen_before);
	rf[7] = rf[23] = 0.001;
	xrf[0] = log(1.1);
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_true(r.seen_before); /* (the two lone runs, as measured) */
	h[7] = h[23] = 5.0;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_false(r.seen_before);
	assert_true(r.disturbed && r.explained && r.by_reference);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
}

/* Step 9e, from a real recording (vm-quick-compilers-9, an Intel VM): the runs switch between
 * two clocks 2.8% apart, a third of them on the fast one, and the subject (a mul chain) keeps
 * time with the reference beside it to 0.02-0.06%. Judged in steps of it, a +10% head from a run on
 * the fast clock is a +10% regression, against a baseline as the history would have measured on
 * that clock (in the recording, the runs matched by their reference after a change point at a
 * clock switch mixed both clocks: +8.7% against a noise of 3.9%, "noisy"). A head on the slow
 * clock with its reference is
 * unchanged, and a head whose reference ran slow while the cell did not is no regression. A
 * cell whose history does not keep time with its reference is judged as measured. */
static void test_judged_on_reference(void **state)
{
	double h[40], cm[40], rf[40], x[] = {26.62 * 1.10}, xcm[] = {0}, xrf[] = {log(0.8130)};
	struct aw_detect_input in = {
	    .history = h, .n_history = 40, .head = x, .n_head = 1, .threshold = 0.05};
	struct aw_detect_result r;

	(void)state;
	series(h, 40, 32.74, 0.0002); /* the subject in steps of the reference */
	for (int i = 0; i < 40; i++) {
		rf[i] = log(i % 3 ? 0.8357 : 0.8130);
		h[i] *= exp(rf[i]);
		cm[i] = rf[i] + 0.01 * ((i * 7) % 3); /* the lock ops wander on their own */
	}
	set_factors(&in, cm, xcm, rf, xrf);
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_true(r.on_reference);
	assert_int_equal(r.matched, AW_FACTOR_NONE);
	assert_true(fabs(r.change - 0.10) < 0.003);
	assert_true(fabs(r.baseline - 26.62) < 0.05); /* as measured beside the head's reference */
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	x[0] = 27.36;
	xrf[0] = log(0.8357);
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_true(fabs(r.change) < 0.002);
	assert_int_equal(r.verdict, AW_VERDICT_UNCHANGED);
	xrf[0] = log(0.8357 * 1.03); /* the reference alone slowed: the cell is 3% faster */
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_int_not_equal(r.verdict, AW_VERDICT_REGRESSED);
	/* a cell whose reference wandered on its own: as measured, matched by its common mode */
	for (int i = 0; i < 40; i++)
		rf[i] = 0.01 * ((i * 5) % 4);
	x[0] = 27.36;
	xrf[0] = 0;
	for (int i = 0; i < 40; i++)
		h[i] = 27.36 * exp(cm[i]) * (1 + 0.0002 * (i % 3));
	xcm[0] = cm[1];
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_false(r.on_reference);
	assert_int_equal(r.matched, AW_FACTOR_COMMON);
}

/* Cells judged in steps of their reference (step 9e), steadier there, pool their noise apart
 * from the other cells of their group: beside them, lock ops' moderated noise is what it is
 * among lock ops alone (in one real head, such cells pulled a lock op's +7.7% over four runs
 * to a false gate). */
static void test_reference_steps_pool_apart(void **state)
{
	enum {
		OPS = 8,
		CELLS = 2 * OPS
	};
	double h[CELLS][40], cm[40], rf[40], x[CELLS][1], xcm[] = {0}, xrf[] = {log(0.8357)};
	struct aw_detect_input in[CELLS];
	struct aw_detect_result r[CELLS], alone[OPS];

	(void)state;
	for (int i = 0; i < 40; i++) {
		rf[i] = log(i % 3 ? 0.8357 : 0.8130);
		cm[i] = 0.03 * ((i * 7) % 3);
	}
	for (int k = 0; k < CELLS; k++) {
		bool chain = k >= OPS; /* the second half keeps time with the reference */

		for (int i = 0; i < 40; i++) {
			double wobble = (chain ? 0.001 : 0.005) * (((i * (k + 3)) % 7) - 3) / 3.0;

			h[k][i] = (chain ? 27.36 * exp(rf[i] - log(0.8357)) : 2.5) * (1 + wobble);
		}
		x[k][0] = chain ? 27.36 : 2.5;
		in[k] = (struct aw_detect_input){
		    .history = h[k], .n_history = 40, .head = x[k], .n_head = 1, .threshold = 0.05};
		set_factors(&in[k], cm, xcm, rf, xrf);
	}
	assert_int_equal(aw_detect(in, CELLS, NULL, r), 0);
	assert_int_equal(aw_detect(in, OPS, NULL, alone), 0);
	for (int k = 0; k < OPS; k++) {
		assert_false(r[k].on_reference);
		assert_true(r[OPS + k].on_reference);
		assert_true(fabs(r[k].noise - alone[k].noise) < 1e-12);
	}
}

/* Head runs without a common mode (confirmation runs carry only the suspect cells) are matched
 * by their reference kernel: three quiet re-measurements of a cell 6% slower are compared with
 * the history's quiet runs, not with a window that also holds the runs the machine slowed (its
 * reference 6% slower beside the cell, the cell with it). */
static void test_confirmations_by_reference(void **state)
{
	double h[20], cm[20], rf[20], x[] = {5.3, 5.31, 5.29}, xcm[] = {NAN, NAN, NAN},
	                              xrf[] = {0.0005, 0.001, 0};
	struct aw_detect_input in = {
	    .history = h, .n_history = 20, .head = x, .n_head = 3, .threshold = 0.05};
	struct aw_detect_result r;

	(void)state;
	for (int i = 0; i < 20; i++) {
		rf[i] = i % 2 ? log(1.06) : 0.0005 * (i % 3);
		h[i] = (i % 2 ? 5.3 : 5.0) * (1 + 0.001 * (i % 4));
		cm[i] = 0.002 * (i % 3);
	}
	set_factors(&in, cm, xcm, rf, xrf);
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_true(r.on_reference); /* (it keeps time with its reference: step 9e) */
	assert_true(fabs(r.baseline - 5.0) < 0.02);
	assert_false(r.seen_before);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	/* without a reference they are judged against the window, which hides the change */
	in.history_factor[AW_FACTOR_REFERENCE] = in.head_factor[AW_FACTOR_REFERENCE] = NULL;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_int_equal(r.matched, AW_FACTOR_NONE);
	assert_int_not_equal(r.verdict, AW_VERDICT_REGRESSED);
}

/* A disturbed head run clears no threshold-sized slowdown: compared with the runs of its own
 * slow regime (the common mode 8% up), which the cell spreads over 5.1-5.4 ns, a head 5.6% over
 * them is not significant, but `hidden`; the same value from a quiet run is a regression, and
 * a head within the slow runs hides nothing. */
static void test_disturbed_head_hides(void **state)
{
	static const double slow[] = {5.12, 5.3, 5.42, 5.17, 5.36, 5.22};
	double h[20], cm[20], x[] = {5.555}, xcm[] = {log(1.08)};
	struct aw_detect_input in = {
	    .history = h, .n_history = 20, .head = x, .n_head = 1, .threshold = 0.05};
	struct aw_detect_result r;

	(void)state;
	series(h, 20, 5.0, 0.002);
	for (int i = 0; i < 20; i++)
		cm[i] = 0.002 * (i % 3);
	for (int i = 0; i < 6; i++) {
		h[2 + 3 * i] = slow[i];
		cm[2 + 3 * i] = log(1.08) + 0.001 * (i % 2);
	}
	in.history_factor[AW_FACTOR_COMMON] = cm;
	in.head_factor[AW_FACTOR_COMMON] = xcm;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_true(r.disturbed);
	assert_int_equal(r.matched, AW_FACTOR_COMMON);
	assert_int_equal(r.window_n, 6);
	assert_true(r.change >= 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_UNCHANGED);
	assert_true(r.hidden);
	x[0] = 5.3;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_false(r.hidden);
	x[0] = 5.555;
	xcm[0] = 0.001;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_false(r.disturbed);
	assert_false(r.hidden);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
}

/* A disturbed head run is set aside for the level, but it still confirms a change far beyond
 * its disturbance (agree_n); one the disturbance explains does not. */
static void test_disturbed_runs_confirm(void **state)
{
	double h[20], hf[20], x[] = {50.0, 52.0}, xf[] = {0.001, log(1.3)};
	struct aw_detect_input in = {
	    .history = h, .n_history = 20, .head = x, .n_head = 2, .threshold = 0.05};
	struct aw_detect_result r;

	(void)state;
	series(h, 20, 5.0, 0.002);
	for (int i = 0; i < 20; i++)
		hf[i] = 0.002 * (i % 3);
	in.history_factor[AW_FACTOR_COMMON] = hf;
	in.head_factor[AW_FACTOR_COMMON] = xf;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	assert_int_equal(r.head_n, 1);
	assert_int_equal(r.agree_n, 2);
	/* 5.9 in the disturbed run: 18% over the baseline, 30% slower a run */
	x[1] = 5.9;
	assert_int_equal(aw_detect(&in, 1, NULL, &r), 0);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	assert_int_equal(r.head_n, 1);
	assert_int_equal(r.agree_n, 1);
}

static void test_sub_cycle_changes(void **state)
{
	double h[10], x[] = {0.33};
	struct aw_detect_result r;

	(void)state;
	/* +27% of 0.26 ns is 0.07 ns: below half a cycle, never a regression */
	series(h, 10, 0.26, 0.002);
	r = judge_one(h, 10, x, 1, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_UNCHANGED);
	/* one whole cycle more is */
	x[0] = 0.52;
	r = judge_one(h, 10, x, 1, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
}

static void test_bimodal_baseline(void **state)
{
	double h[10], x[] = {27.0};
	struct aw_detect_result r;

	(void)state;
	/* Graviton4-like: runs land at ~4.6 ns or ~27 ns */
	for (int i = 0; i < 10; i++)
		h[i] = i % 3 == 0 ? 27.5 - 0.1 * i : 4.6 + 0.01 * i;
	r = judge_one(h, 10, x, 1, 0.05);
	assert_true(r.bimodal);
	assert_true(r.seen_before);
	assert_int_not_equal(r.verdict, AW_VERDICT_REGRESSED);
}

/* The `bimodal` flag says the baseline's levels are split, nothing else: not a steady cell
 * with one run whose p99 was three times its p50 (on a shared VM nearly every cell has such a
 * run among 40), not two lone fast runs below a noisy level, not two clusters whose gap is
 * within a few times their own spread. */
static void test_bimodal_only_when_split(void **state)
{
	double h[10], x[] = {5.02}, noisy[10] = {3.9, 5.4, 4.0, 5.0, 5.6, 5.1, 5.7, 5.2, 5.5, 5.3};
	double wide[10] = {3.0, 5.0, 3.5, 6.2, 4.0, 7.0, 3.2, 5.5, 3.8, 6.6};
	double split[10] = {4.60, 6.01, 4.62, 4.59, 6.02, 4.61, 6.00, 4.63, 6.03, 4.58};
	struct aw_detect_input in = {
	    .history = h, .n_history = 10, .head = x, .n_head = 1, .threshold = 0.05};
	struct aw_detect_result r;

	(void)state;
	series(h, 10, 5.0, 0.01);
	in.tail_bimodal = true; /* some run's p99 >= 3 x its p50 */
	r = judge_input(&in);
	assert_false(r.bimodal);
	assert_int_equal(r.verdict, AW_VERDICT_UNCHANGED);
	/* 3.9 and 4.0 below 5.0..5.7: a gap of 25%, but two runs are no level */
	in.history = noisy;
	in.tail_bimodal = false;
	r = judge_input(&in);
	assert_false(r.bimodal);
	/* 3.0..4.0 and 5.0..7.0: 25% apart, but each side spreads as far */
	in.history = wide;
	r = judge_input(&in);
	assert_false(r.bimodal);
	/* 4.6 and 6.0 ns, each to a fraction of a percent: two levels */
	in.history = split;
	r = judge_input(&in);
	assert_true(r.bimodal);
}

static void test_excursions(void **state)
{
	double h[20], x[] = {48.0};
	struct aw_detect_result r;

	(void)state;
	series(h, 20, 5.0, 0.01);
	h[3] *= 10; /* two earlier runs were 10x excursions */
	h[11] *= 9;
	r = judge_one(h, 20, x, 1, 0.05);
	assert_true(r.seen_before);
	assert_int_equal(r.verdict, AW_VERDICT_NOISY);
	assert_non_null(strstr(r.note, "excursions"));
	/* without excursions in the history the same head is a regression */
	series(h, 20, 5.0, 0.01);
	r = judge_one(h, 20, x, 1, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
}

static void test_window_cut_at_change_point(void **state)
{
	double h[24], x[] = {20.1};
	struct aw_detect_result r;

	(void)state;
	series(h, 12, 10.0, 0.004);
	series(h + 12, 12, 20.0, 0.004);
	r = judge_one(h, 24, x, 1, 0.05);
	assert_int_equal(r.last_change, 12);
	assert_true(r.window_start >= 12);
	assert_true(fabs(r.baseline - 20) < 0.2);
	assert_int_equal(r.verdict, AW_VERDICT_UNCHANGED);
}

static void test_noisy_baseline(void **state)
{
	double h[10], x[] = {5.0 * 1.12};
	struct aw_detect_result r;

	(void)state;
	series(h, 10, 5.0, 0.15);
	r = judge_one(h, 10, x, 1, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_NOISY);
	assert_true(r.noise > 0.05);
}

static void test_rank_test_with_three_head_runs(void **state)
{
	double h[10], agree[] = {5.6, 5.7, 5.65}, split[] = {5.0, 7.5, 4.9};
	struct aw_detect_result r;

	(void)state;
	series(h, 10, 5.0, 0.005);
	r = judge_one(h, 10, agree, 3, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	assert_true(r.mw_pvalue < 0.05);
	/* the median moved, but two of three runs did not: the rank test disagrees */
	r = judge_one(h, 10, split, 3, 0.05);
	assert_int_not_equal(r.verdict, AW_VERDICT_REGRESSED);
}

/* A cell that flips between two levels for spells of runs (vm-default-none-2's op=c11_relaxed:
 * 2.0 ns, now and then 2.3): a head and re-measurements that land three at 2.3 and one at 2.0
 * are the spell, though their median is 14% up and the rank test agrees. The same four runs
 * all at 2.3 are a regression. */
static void test_mixed_levels(void **state)
{
	double h[20], spell[] = {2.309, 2.319, 1.998, 2.255}, moved[] = {2.309, 2.319, 2.3, 2.255};
	struct aw_detect_result r;

	(void)state;
	series(h, 20, 2.0, 0.003);
	h[5] = 2.565;
	h[3] = 2.308;
	r = judge_one(h, 20, spell, 4, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_NOISY);
	assert_non_null(strstr(r.note, "1 of the 4 head runs stayed at the baseline"));
	assert_true(r.mw_pvalue < 0.05);
	r = judge_one(h, 20, moved, 4, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	/* one run is no mix of levels: it stays the suspect the analysis makes of it */
	r = judge_one(h, 20, spell, 1, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
}

/* A slowdown that leaves each run's fastest batch where it was is part of the runs, not the
 * code (step 9d): vm-quick-compilers-2's op=prefetchw_lock_inc, a head and its three
 * re-measurements whose medians rose 10-43% while their fastest batches stayed at the usual
 * 1.65 ns. The same cell 20% slower in every batch, the fastest too, is a regression; one head
 * run is left to confirmation. */
static void test_part_of_runs(void **state)
{
	static const double h[15] = {1.709, 1.656, 1.657, 2.270, 1.657, 2.571, 1.705, 1.672,
	                             1.657, 1.657, 1.657, 1.659, 1.657, 1.656, 1.657};
	static const double hmin[15] = {1.651, 1.649, 1.647, 2.185, 1.649, 2.188, 1.648, 1.650,
	                                1.649, 1.649, 1.648, 1.650, 1.648, 1.648, 1.649};
	static const double x[] = {2.366, 1.816, 2.145, 1.825},
	                    xmin[] = {1.638, 1.648, 1.724, 1.653};
	static const double code[] = {1.99, 1.99, 1.98, 2.00},
	                    code_min[] = {1.98, 1.98, 1.97, 1.99};
	struct aw_detect_result r;

	(void)state;
	/* without the fastest batches, these runs are a regression */
	r = judge_one_min(h, NULL, 15, x, NULL, 4, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	r = judge_one_min(h, hmin, 15, x, xmin, 4, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_NOISY);
	assert_non_null(strstr(r.note, "fastest batches stayed near the baseline's"));
	r = judge_one_min(h, hmin, 15, code, code_min, 4, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	assert_true(r.change > 0.15);
	r = judge_one_min(h, hmin, 15, x, xmin, 1, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
}

/* A level the host shows in 3 runs in 40 of its history, each run alone (a CI's commits are
 * minutes apart, so a spell of the host's shows in it as lone runs), is seen before even for a
 * head of four runs, which are seconds apart and share one spell: vm-quick-none-2's
 * op=c11_relaxed, at 2.0 ns and now and then at 2.4-2.5. Two such runs in forty are not
 * enough: those four head runs are then a regression. */
static void test_seen_alone(void **state)
{
	double h[40], x[] = {2.431, 2.446, 2.452, 2.438};
	static const size_t spell[] = {3, 11, 19, 26, 34};
	struct aw_detect_result r;

	(void)state;
	series(h, 40, 2.0, 0.003);
	for (size_t i = 0; i < 5; i++)
		h[spell[i]] = 2.45 + 0.01 * (double)i;
	r = judge_one(h, 40, x, 4, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_NOISY);
	assert_true(r.seen_before);
	assert_non_null(strstr(r.note, "5 of the 40 runs of the history were as far"));
	h[spell[3]] = h[spell[4]] = 2.0;
	r = judge_one(h, 40, x, 4, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_NOISY);
	assert_non_null(strstr(r.note, "3 of the 40 runs of the history were as far"));
	h[spell[2]] = 2.0;
	r = judge_one(h, 40, x, 4, 0.05);
	assert_int_equal(r.verdict, AW_VERDICT_REGRESSED);
	assert_false(r.seen_before);
}

/* Each family of inputs has its own false discovery correction: a cell alone in its noise
 * group, 12% slower against a 3% spread, is no discovery among 41 (p about 0.009, where a 5%
 * level over 41 asks 0.0012 at rank one) but is one on its own, as the analysis judges the cells
 * a confirmation re-measured; the other cells stay unchanged when it leaves their family. */
static void test_families(void **state)
{
	enum {
		N = 41
	};
	static double h[N][20], x[N][1];
	struct aw_detect_input in[N];
	struct aw_detect_result out[N], apart[N];

	(void)state;
	for (int i = 0; i < N; i++) {
		series(h[i], 20, 10 + i, i ? 0.004 : 0.04);
		x[i][0] = (10 + i) * (i ? 1.001 : 1.12);
		in[i] = (struct aw_detect_input){.history = h[i],
		                                 .n_history = 20,
		                                 .head = x[i],
		                                 .n_head = 1,
		                                 .threshold = 0.05,
		                                 .group = i ? 0 : 1};
	}
	assert_int_equal(aw_detect(in, N, NULL, out), 0);
	assert_true(out[0].pvalue < 0.05 && out[0].pvalue > 0.05 / N);
	assert_true(out[0].qvalue > 0.05);
	assert_int_equal(out[0].verdict, AW_VERDICT_UNCHANGED);
	in[0].family = 1;
	assert_int_equal(aw_detect(in, N, NULL, apart), 0);
	assert_true(apart[0].pvalue == out[0].pvalue);
	assert_true(apart[0].qvalue == apart[0].pvalue);
	assert_int_equal(apart[0].verdict, AW_VERDICT_REGRESSED);
	for (int i = 1; i < N; i++) {
		assert_int_equal(apart[i].verdict, AW_VERDICT_UNCHANGED);
		assert_true(apart[i].qvalue >= out[i].qvalue);
	}
}

static void test_threshold_rules(void **state)
{
	const struct aw_threshold_rule rules[] = {
	    {.op = "plain", .threshold = 0.5},
	    {.reader = "srcu*", .threshold = 0.1},
	    {.key = "*contender=*", .threshold = 0.25},
	};

	(void)state;
	assert_true(aw_threshold_for(rules, 3, "plain", NULL, "op=plain cpu=0", 0.05) == 0.5);
	assert_true(aw_threshold_for(rules, 3, "ldadd", "srcu_fast", "x", 0.05) == 0.1);
	assert_true(aw_threshold_for(rules, 3, "llsc", NULL, "op=llsc cpu=0 contender=1 c=10",
	                             0.05) == 0.25);
	assert_true(aw_threshold_for(rules, 3, "ldadd", NULL, "op=ldadd cpu=0", 0.05) == 0.05);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clear_regression_one_run),
	    cmocka_unit_test(test_families),
	    cmocka_unit_test(test_noise_is_not_a_regression),
	    cmocka_unit_test(test_improvement),
	    cmocka_unit_test(test_new_and_missing),
	    cmocka_unit_test(test_below_resolution_baseline),
	    cmocka_unit_test(test_sub_cycle_changes),
	    cmocka_unit_test(test_flipping_through_resolution),
	    cmocka_unit_test(test_regimes),
	    cmocka_unit_test(test_run_factors),
	    cmocka_unit_test(test_bimodal_baseline),
	    cmocka_unit_test(test_bimodal_only_when_split),
	    cmocka_unit_test(test_excursions),
	    cmocka_unit_test(test_window_cut_at_change_point),
	    cmocka_unit_test(test_noisy_baseline),
	    cmocka_unit_test(test_stretches),
	    cmocka_unit_test(test_stretches_beside_reference),
	    cmocka_unit_test(test_matched_by_closer_factor),
	    cmocka_unit_test(test_judged_on_reference),
	    cmocka_unit_test(test_reference_steps_pool_apart),
	    cmocka_unit_test(test_confirmations_by_reference),
	    cmocka_unit_test(test_disturbed_head_hides),
	    cmocka_unit_test(test_disturbed_runs_confirm),
	    cmocka_unit_test(test_rank_test_with_three_head_runs),
	    cmocka_unit_test(test_mixed_levels),
	    cmocka_unit_test(test_part_of_runs),
	    cmocka_unit_test(test_seen_alone),
	    cmocka_unit_test(test_threshold_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
