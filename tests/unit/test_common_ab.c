/* The A/B decision (common/ab_decide.c): a round's level by its reference, the looks of the
 * sequential test, the decision on the A/B less the A/A with its combined interval (per level,
 * per layout) and the checks of the document's new, optional fields (common/ab.c). The stored
 * case of issue 30 is here: a significant +11% whose A/A interval reaches 1.175 is regressed,
 * never "unchanged: a real change smaller than the threshold". */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "aw/ab.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const struct aw_ab_rule plain = {.threshold = 0.005, .alpha = 0.05, .looks = 1};

/* A small zero-centred wobble per round, the same in every test. */
static double wobble(size_t i)
{
	static const double w[] = {0.002,  -0.003, 0.001, -0.001, 0.004, -0.002, 0.0,
	                           0.003,  -0.004, 0.001, -0.002, 0.002, -0.001, 0.003,
	                           -0.003, 0.001,  0.0,   -0.002, 0.002, -0.001};

	return w[i % N_OF(w)];
}

static void test_classify(void **state)
{
	(void)state;
	assert_int_equal(aw_ab_classify(1.0, 1.04, 1.0, 1.05), AW_AB_LEVEL_ALONE);
	assert_int_equal(aw_ab_classify(1.08, 1.3, 1.0, 1.05), AW_AB_LEVEL_SHARED);
	assert_int_equal(aw_ab_classify(1.0, 1.3, 1.0, 1.05), AW_AB_LEVEL_MIXED);
	assert_int_equal(aw_ab_classify(1.3, 1.0, 1.0, 1.05), AW_AB_LEVEL_MIXED);
	assert_int_equal(aw_ab_classify(0, 1.0, 1.0, 1.05), AW_AB_LEVEL_MIXED);
	assert_int_equal(aw_ab_classify(1.0, NAN, 1.0, 1.05), AW_AB_LEVEL_MIXED);
	assert_int_equal(aw_ab_classify(1.0, 1.0, NAN, 1.05), AW_AB_LEVEL_MIXED);
	assert_string_equal(aw_ab_level_name(AW_AB_LEVEL_ALONE), "alone");
	assert_string_equal(aw_ab_level_name(AW_AB_LEVEL_SHARED), "shared");
	assert_null(aw_ab_level_name(AW_AB_LEVEL_NONE));
	assert_int_equal(aw_ab_level_parse("shared"), AW_AB_LEVEL_SHARED);
	assert_int_equal(aw_ab_level_parse("mixed"), AW_AB_LEVEL_NONE);
	assert_int_equal(aw_ab_level_parse(NULL), AW_AB_LEVEL_NONE);
}

static void test_looks(void **state)
{
	unsigned at[32], n;

	(void)state;
	n = aw_ab_looks(400, at, 32);
	assert_int_equal(n, 12);
	assert_int_equal(at[0], 12);
	assert_int_equal(at[1], 16);
	assert_int_equal(at[2], 24);
	assert_int_equal(at[3], 32);
	assert_int_equal(at[10], 384);
	assert_int_equal(at[11], 400);
	for (unsigned i = 1; i < n; i++)
		assert_true(at[i] > at[i - 1]);
	/* a budget below the first look: one look at the end */
	assert_int_equal(aw_ab_looks(8, at, 32), 1);
	assert_int_equal(at[0], 8);
	assert_int_equal(aw_ab_looks(12, NULL, 0), 1);
	assert_int_equal(aw_ab_looks(1000, NULL, 0), 14);
}

/* The stored case: the rounds' disturbances (a level change, a burst of other work) hit an A/B
 * round and its A/A round alike, so the A/A interval reaches 1.175 while the A/B is a clear
 * +11%; the old rule took the A/A's reach as the threshold and called it unchanged. */
static void test_eleven_percent_with_wide_aa(void **state)
{
	struct aw_ab_round r[20];
	struct aw_ab_decision d;

	(void)state;
	for (size_t i = 0; i < N_OF(r); i++) {
		double e = -0.29 + 0.58 * (double)i / 19;

		e = e < 0 ? e : 1.6 * e;
		r[i] = (struct aw_ab_round){log(1.11) + e + wobble(i), e - wobble(i) / 2,
		                            AW_AB_LEVEL_NONE, -1};
	}
	assert_int_equal(aw_ab_decide(r, N_OF(r), &plain, &d), 0);
	/* the fixture is the case: the A/B significant, the A/A reaching past 1.175 and past
	 * the A/B's own estimate */
	assert_true(d.ab.lo > 0);
	assert_true(fmax(fabs(d.aa.lo), fabs(d.aa.hi)) >= log(1.175));
	assert_true(fmax(fabs(d.aa.lo), fabs(d.aa.hi)) > d.ab.estimate);
	assert_int_equal(d.verdict, AW_AB_VERDICT_REGRESSED);
	assert_true(fabs(expm1(d.diff.estimate) - 0.11) < 0.005);
	assert_true(d.diff.lo > log(1.1) && d.diff.hi < log(1.12));
	assert_int_equal(d.diff.rounds, 20);
	assert_true(d.alpha_each == 0.05);
}

/* The same +11% with A/A rounds whose disturbances are their own: the combined interval is wide,
 * and a wide interval is never "unchanged". */
static void test_eleven_percent_with_unpaired_aa(void **state)
{
	struct aw_ab_round r[20];
	struct aw_ab_decision d;

	(void)state;
	for (size_t i = 0; i < N_OF(r); i++) {
		double e = -0.29 + 0.58 * (double)i / 19,
		       f = -0.29 + 0.58 * (double)((i * 7) % 20) / 19;

		r[i] = (struct aw_ab_round){log(1.11) + 0.25 * e, f, AW_AB_LEVEL_NONE, -1};
	}
	assert_int_equal(aw_ab_decide(r, N_OF(r), &plain, &d), 0);
	assert_true(d.ab.lo > 0);
	assert_int_not_equal(d.verdict, AW_AB_VERDICT_UNCHANGED);
	assert_int_not_equal(d.verdict, AW_AB_VERDICT_IMPROVED);
}

/* A bias between the two loads is removed: the A/B reads +3%, the A/A +3% too, the change is
 * none. */
static void test_bias_removed(void **state)
{
	struct aw_ab_round r[16];
	struct aw_ab_decision d;

	(void)state;
	for (size_t i = 0; i < N_OF(r); i++)
		r[i] = (struct aw_ab_round){log(1.03) + wobble(i) / 4,
		                            log(1.03) + wobble(i + 5) / 4, AW_AB_LEVEL_NONE, -1};
	assert_int_equal(aw_ab_decide(r, N_OF(r), &plain, &d), 0);
	assert_int_equal(d.ab.verdict, AW_AB_VERDICT_REGRESSED);
	assert_int_equal(d.verdict, AW_AB_VERDICT_UNCHANGED);
	assert_true(fabs(d.diff.estimate) < 0.002);
}

static void test_unchanged_and_too_few(void **state)
{
	struct aw_ab_round r[20];
	struct aw_ab_decision d;

	(void)state;
	for (size_t i = 0; i < N_OF(r); i++)
		r[i] = (struct aw_ab_round){wobble(i) / 2, wobble(i + 3) / 2, AW_AB_LEVEL_NONE, -1};
	assert_int_equal(aw_ab_decide(r, N_OF(r), &plain, &d), 0);
	assert_int_equal(d.verdict, AW_AB_VERDICT_UNCHANGED);
	assert_true(d.diff.lo >= -log1p(0.005) && d.diff.hi <= log1p(0.005));
	/* five rounds cannot give a 95% interval */
	assert_int_equal(aw_ab_decide(r, 5, &plain, &d), 0);
	assert_int_equal(d.verdict, AW_AB_VERDICT_INCONCLUSIVE);
	assert_true(isnan(d.diff.lo));
	assert_non_null(strstr(d.reason, "too few rounds"));
	assert_int_equal(aw_ab_decide(NULL, 0, &plain, &d), 0);
	assert_int_equal(d.verdict, AW_AB_VERDICT_INCONCLUSIVE);
}

/* The sequential test's looks and the levels narrow each interval (Bonferroni), so that every
 * interval of every look holds at once with probability >= 1 - alpha. */
static void test_alpha_per_look(void **state)
{
	struct aw_ab_round r[12];
	struct aw_ab_rule seq = {.threshold = 0.005, .alpha = 0.05, .looks = 13, .levels = true};
	struct aw_ab_decision d, d1;

	(void)state;
	for (size_t i = 0; i < N_OF(r); i++)
		r[i] = (struct aw_ab_round){0.002 + wobble(i), wobble(i + 7), AW_AB_LEVEL_ALONE,
		                            (int)(i % 2)};
	assert_int_equal(aw_ab_decide(r, N_OF(r), &seq, &d), 0);
	assert_true(fabs(d.alpha_each - 0.05 / 39) < 1e-12);
	seq.looks = 1;
	seq.levels = false;
	assert_int_equal(aw_ab_decide(r, N_OF(r), &seq, &d1), 0);
	/* same rounds, a stricter level: a wider interval */
	assert_true(d.diff.lo <= d1.diff.lo && d.diff.hi >= d1.diff.hi);
	assert_true(d.diff.hi - d.diff.lo > d1.diff.hi - d1.diff.lo);
}

static void fill_levels(struct aw_ab_round *r, size_t n, double alone, double shared)
{
	for (size_t i = 0; i < n; i++) {
		bool is_shared = i % 2;

		r[i] = (struct aw_ab_round){
		    log(is_shared ? shared : alone) + wobble(i) / 4, wobble(i + 9) / 4,
		    is_shared ? AW_AB_LEVEL_SHARED : AW_AB_LEVEL_ALONE, (int)(i % 3)};
	}
}

/* A change that costs nothing alone and 7% shared is regressed, and says so per level. */
static void test_levels(void **state)
{
	struct aw_ab_rule rule = {.threshold = 0.005, .alpha = 0.05, .looks = 4, .levels = true};
	struct aw_ab_round r[48];
	struct aw_ab_decision d;

	(void)state;
	fill_levels(r, N_OF(r), 1.0, 1.07);
	assert_int_equal(aw_ab_decide(r, N_OF(r), &rule, &d), 0);
	assert_int_equal(d.verdict, AW_AB_VERDICT_REGRESSED);
	assert_int_equal(d.level[AW_AB_LEVEL_ALONE].verdict, AW_AB_VERDICT_UNCHANGED);
	assert_int_equal(d.level[AW_AB_LEVEL_SHARED].verdict, AW_AB_VERDICT_REGRESSED);
	assert_int_equal(d.level[AW_AB_LEVEL_ALONE].rounds, 24);
	assert_true(fabs(expm1(d.level[AW_AB_LEVEL_SHARED].estimate) - 0.07) < 0.003);
	assert_non_null(strstr(d.reason, "alone unchanged"));
	assert_non_null(strstr(d.reason, "shared regressed"));
	/* faster alone, slower shared: split evidence is inconclusive, never a pass */
	fill_levels(r, N_OF(r), 0.95, 1.05);
	assert_int_equal(aw_ab_decide(r, N_OF(r), &rule, &d), 0);
	assert_int_equal(d.verdict, AW_AB_VERDICT_INCONCLUSIVE);
	assert_non_null(strstr(d.reason, "disagree"));
	/* only the alone level seen: unchanged, and the reason says what was not seen */
	for (size_t i = 0; i < N_OF(r); i++)
		r[i].level = AW_AB_LEVEL_ALONE;
	fill_levels(r, N_OF(r), 1.0, 1.0);
	for (size_t i = 0; i < N_OF(r); i++)
		r[i].level = AW_AB_LEVEL_ALONE;
	assert_int_equal(aw_ab_decide(r, N_OF(r), &rule, &d), 0);
	assert_int_equal(d.verdict, AW_AB_VERDICT_UNCHANGED);
	assert_non_null(strstr(d.reason, "no shared rounds"));
	/* a level of too few rounds to judge leaves the verdict to the others, and says so */
	r[0].level = AW_AB_LEVEL_SHARED;
	assert_int_equal(aw_ab_decide(r, N_OF(r), &rule, &d), 0);
	assert_int_equal(d.verdict, AW_AB_VERDICT_UNCHANGED);
	assert_non_null(strstr(d.reason, "too few"));
}

static void test_layouts(void **state)
{
	struct aw_ab_round r[30];
	struct aw_ab_decision d;

	(void)state;
	for (size_t i = 0; i < N_OF(r); i++) {
		int layout = (int)(i % 3);

		/* layout 2 reads 1% more than the others */
		r[i] = (struct aw_ab_round){log(1.05) + (layout == 2 ? log(1.01) : 0), 0,
		                            AW_AB_LEVEL_ALONE, layout};
	}
	assert_int_equal(aw_ab_decide(r, N_OF(r), &plain, &d), 0);
	assert_int_equal(d.verdict, AW_AB_VERDICT_REGRESSED); /* (layouts that agree) */
	assert_int_equal(d.n_layouts, 3);
	assert_int_equal(d.layout[0].rounds, 10);
	assert_true(fabs(d.layout_spread - log(1.01)) < 1e-9);
	assert_true(fabs(d.layout[2].diff - log(1.05 * 1.01)) < 1e-9);
	for (size_t i = 0; i < N_OF(r); i++)
		r[i].layout = 0;
	assert_int_equal(aw_ab_decide(r, N_OF(r), &plain, &d), 0);
	assert_int_equal(d.n_layouts, 1);
	assert_true(isnan(d.layout_spread));
}

/* The try of the family-25 VM's bench (chain, two more adds): the head read +0.7% against the
 * base's reference load, but the base's copy in one layout read 11.7% slower than the reference
 * load and the head's copy in that layout did not, so that layout's rounds said -10% and,
 * having most of the rounds, made the cell "improved". A slower build is never improved on
 * the strength of one load: the loads differ by far more than the change, and the interval
 * their spread gives leaves the cell inconclusive. */
static void test_layout_against_the_rest(void **state)
{
	struct aw_ab_round r[42];
	struct aw_ab_decision d;

	(void)state;
	for (size_t i = 0; i < N_OF(r); i++) {
		int layout = i < 30 ? 0 : 1;

		r[i] = (struct aw_ab_round){log(1.015) + wobble(i),
		                            (layout == 0 ? log(1.117) : 0) + wobble(i + 7),
		                            AW_AB_LEVEL_ALONE, layout};
	}
	/* layout 0 alone: improved, as the pooled rounds would say */
	assert_int_equal(aw_ab_decide(r, 30, &plain, &d), 0);
	assert_int_equal(d.verdict, AW_AB_VERDICT_IMPROVED);
	assert_int_equal(aw_ab_decide(r, N_OF(r), &plain, &d), 0);
	assert_true(d.diff.estimate < -log1p(plain.threshold));
	assert_int_equal(d.layout[0].verdict, AW_AB_VERDICT_IMPROVED);
	assert_int_equal(d.layout[1].verdict, AW_AB_VERDICT_REGRESSED);
	assert_int_equal(d.verdict, AW_AB_VERDICT_INCONCLUSIVE);
	/* the two layouts' centres (head over base copy) 11.7% apart: sd log(1.117) / sqrt(2) on
	 * one degree of freedom */
	assert_true(fabs(d.loads_sd - log(1.117) / sqrt(2)) < 0.002);
	assert_true(d.loads_hw > 0.2 && d.diff.lo < -0.2 && d.diff.hi > 0.1);
	assert_non_null(strstr(d.reason, "the loads differ on their own (sd 8."));
	assert_non_null(strstr(d.reason, "over 2 layouts"));
}

/* stop 51's A/A on the changed family-25 VM: a README-only head whose rounds read +1.0% in one
 * layout and +0.1% in the other was regressed (+0.57% [+0.11, +1.10], threshold 0.5%) at the
 * first look. The loads are a sample: two that read 0.9% apart bound no change of 0.5%, at any
 * count of rounds; two that agree, even on six rounds each, do. */
static void test_loads_apart(void **state)
{
	const struct aw_ab_rule agent = {
	    .threshold = 0.005, .alpha = 0.05, .looks = 14, .levels = true};
	struct aw_ab_round r[64];
	struct aw_ab_decision d;

	(void)state;
	for (size_t i = 0; i < N_OF(r); i++) {
		int layout = (int)(i % 2);

		r[i] = (struct aw_ab_round){(layout ? log(1.010) : log(1.001)) + wobble(i) / 4,
		                            wobble(i + 3) / 4, AW_AB_LEVEL_ALONE, layout};
	}
	/* the pooled rounds, taken as one load, would call it regressed */
	{
		struct aw_ab_round one[N_OF(r)];

		for (size_t i = 0; i < N_OF(r); i++) {
			one[i] = r[i];
			one[i].layout = 0;
		}
		assert_int_equal(aw_ab_decide(one, N_OF(one), &plain, &d), 0);
		assert_true(d.diff.lo > 0 && d.diff.estimate > log1p(plain.threshold));
		assert_int_equal(d.verdict, AW_AB_VERDICT_REGRESSED);
		assert_true(isnan(d.loads_sd) && d.loads_hw == 0);
	}
	assert_int_equal(aw_ab_decide(r, N_OF(r), &plain, &d), 0);
	assert_int_equal(d.layout[0].verdict, AW_AB_VERDICT_UNCHANGED);
	assert_int_equal(d.layout[1].verdict, AW_AB_VERDICT_REGRESSED);
	assert_int_equal(d.verdict, AW_AB_VERDICT_INCONCLUSIVE);
	assert_true(d.diff.lo < -log1p(plain.threshold));
	assert_non_null(strstr(d.reason, "the loads differ on their own"));
	/* ten times the rounds, the same two loads: still undecided */
	{
		struct aw_ab_round many[640];

		for (size_t i = 0; i < N_OF(many); i++)
			many[i] = r[i % N_OF(r)];
		assert_int_equal(aw_ab_decide(many, N_OF(many), &plain, &d), 0);
		assert_int_equal(d.verdict, AW_AB_VERDICT_INCONCLUSIVE);
	}
	/* the agent's first look, 13 rounds (6 and 7 a layout) of 400 at 14 looks and three
	 * estimands, the two loads alike: +5% stands out of their spread */
	for (size_t i = 0; i < 13; i++)
		r[i].ab = log(1.05) + wobble(i) / 4;
	assert_int_equal(aw_ab_decide(r, 13, &agent, &d), 0);
	assert_false(d.layout[0].interval);
	assert_true(d.loads_hw > 0 && d.loads_hw < 0.04);
	assert_int_equal(d.verdict, AW_AB_VERDICT_REGRESSED);
	/* so over every round */
	for (size_t i = 0; i < N_OF(r); i++)
		r[i].ab = log(1.05) + wobble(i) / 4;
	assert_int_equal(aw_ab_decide(r, N_OF(r), &plain, &d), 0);
	assert_int_equal(d.verdict, AW_AB_VERDICT_REGRESSED);
}

/* A slower build is never improved; a faster one is. */
static void test_directions(void **state)
{
	struct aw_ab_round r[20];
	struct aw_ab_decision d;

	(void)state;
	for (size_t i = 0; i < N_OF(r); i++)
		r[i] = (struct aw_ab_round){log(0.97) + wobble(i), wobble(i + 2), AW_AB_LEVEL_NONE,
		                            -1};
	assert_int_equal(aw_ab_decide(r, N_OF(r), &plain, &d), 0);
	assert_int_equal(d.verdict, AW_AB_VERDICT_IMPROVED);
	for (size_t i = 0; i < N_OF(r); i++)
		r[i].ab = log(1.02) + wobble(i);
	assert_int_equal(aw_ab_decide(r, N_OF(r), &plain, &d), 0);
	assert_int_equal(d.verdict, AW_AB_VERDICT_REGRESSED);
}

/* Load k's own offset on `side` (0: the base's copy, 1: the head's), log units: uniform
 * within +-2.4%, an sd of 1.4% (the lookup over a table of 4 MiB, docs/detection.md
 * "Interleaved A/B"), the same in every run of the test. */
static double load_offset(unsigned k, unsigned side)
{
	uint64_t z = (uint64_t)(2 * k + side + 1) * UINT64_C(0x9e3779b97f4a7c15);

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	z ^= z >> 31;
	return 0.024 * (2 * ((double)(z >> 11) / 9007199254740992.0) - 1);
}

/* n rounds over `loads` loads taking turns, a change of `change` (log) on the head. */
static void rounds_over_loads(struct aw_ab_round *r, size_t n, unsigned loads, double change)
{
	for (size_t i = 0; i < n; i++) {
		unsigned k = (unsigned)(i % loads);

		r[i] = (struct aw_ab_round){change + load_offset(k, 1) + wobble(i) / 4,
		                            load_offset(k, 0) + wobble(i + 5) / 4,
		                            AW_AB_LEVEL_ALONE, (int)k};
	}
}

/* The lookup's loads read 1-3% apart on their own: with the same four loads throughout, a +2%
 * change is known to some +-4% only, at any count of rounds. Fresh loads every few rounds
 * (agents/ab_measure.c, AB_LOAD_TURNS) sample the layouts as the rounds sample the moments:
 * over 48 loads of 8 rounds each the same change is regressed, and an unchanged build is
 * neither regressed nor improved. */
static void test_fresh_loads(void **state)
{
	const struct aw_ab_rule agent = {
	    .threshold = 0.005, .alpha = 0.05, .looks = 14, .levels = true};
	static struct aw_ab_round r[400];
	struct aw_ab_decision d;

	(void)state;
	rounds_over_loads(r, 400, 4, log(1.02));
	assert_int_equal(aw_ab_decide(r, 400, &agent, &d), 0);
	assert_int_equal(d.n_layouts, 4);
	assert_true(d.loads_hw > 0.02);
	assert_int_equal(d.verdict, AW_AB_VERDICT_INCONCLUSIVE);
	rounds_over_loads(r, 384, 48, log(1.02));
	assert_int_equal(aw_ab_decide(r, 384, &agent, &d), 0);
	assert_int_equal(d.n_layouts, 48);
	assert_true(d.loads_sd > 0.01 && d.loads_sd < 0.02);
	assert_true(d.loads_hw < 0.012);
	assert_int_equal(d.verdict, AW_AB_VERDICT_REGRESSED);
	assert_true(fabs(d.diff.estimate - log(1.02)) < 0.005);
	rounds_over_loads(r, 384, 48, 0);
	assert_int_equal(aw_ab_decide(r, 384, &agent, &d), 0);
	assert_true(d.verdict == AW_AB_VERDICT_UNCHANGED ||
	            d.verdict == AW_AB_VERDICT_INCONCLUSIVE);
	/* as many loads as a cell may measure, one round each */
	rounds_over_loads(r, AW_AB_MAX_LOADS, AW_AB_MAX_LOADS, log(1.05));
	assert_int_equal(aw_ab_decide(r, AW_AB_MAX_LOADS, &agent, &d), 0);
	assert_int_equal(d.n_layouts, AW_AB_MAX_LOADS);
	assert_int_equal(d.layout[AW_AB_MAX_LOADS - 1].rounds, 1);
	assert_int_equal(d.verdict, AW_AB_VERDICT_REGRESSED);
}

/* The new fields of the document are optional and checked. */
static void test_validate_new_fields(void **state)
{
	static const char *const good =
	    "{\"schema\":\"atomwatch.ab/1\",\"ab_id\":\"61460e41-add0-48a7-92d7-9fe179449169\","
	    "\"project\":\"p\",\"subject\":\"s\",\"aa\":false,"
	    "\"base\":{\"commit\":\"abcdef1\"},\"head\":{\"commit\":\"abcdef2\"},"
	    "\"started_at\":\"2026-12-01T12:48:59Z\",\"finished_at\":\"2026-12-01T12:49:00Z\","
	    "\"host\":{\"name\":\"h\"},\"rounds\":400,\"aa_rounds\":400,"
	    "\"measure\":{\"layouts\":2,\"budget_s\":20,\"seconds\":0.4,\"rounds\":1,"
	    "\"slices_per_round\":64,\"piece_ns\":15000,\"level_ratio\":1.05,\"threshold\":0.005,"
	    "\"alpha\":0.05,\"looks\":13,\"fresh_loads\":true},"
	    "\"cells\":[{\"key\":\"subject=s op=op cpu=0\",\"op\":\"op\",\"cpu\":0,"
	    "\"status\":\"ok\",\"seconds\":0.4,\"slices\":70,\"set_aside\":6,\"stop\":\"decided\","
	    "\"loads\":127,"
	    "\"rounds\":[{\"first\":\"head\",\"base\":10,\"head\":10.2,\"base_ref\":1.1,"
	    "\"head_ref\":1.1,\"level\":\"alone\",\"layout\":126,\"slices\":64}],"
	    "\"aa_rounds\":[{\"first\":\"base\",\"base\":10,\"head\":10.01,\"level\":\"alone\","
	    "\"layout\":126,\"slices\":64}]}]}";
	static const struct {
		const char *path, *key, *value, *field;
	} bad[] = {
	    {"rounds", "level", "\"mixed\"", "cells[0].rounds[0].level"},
	    {"rounds", "layout", "128", "cells[0].rounds[0].layout"},
	    {"rounds", "layout", "1.5", "cells[0].rounds[0].layout"},
	    {"rounds", "slices", "0", "cells[0].rounds[0].slices"},
	    {"cell", "stop", "\"tired\"", "cells[0].stop"},
	    {"cell", "seconds", "-1", "cells[0].seconds"},
	    {"cell", "colour", "1", "cells[0].colour"},
	    {"cell", "loads", "0", "cells[0].loads"},
	    {"cell", "loads", "129", "cells[0].loads"},
	    {"measure", "fresh_loads", "1", "measure.fresh_loads"},
	    {"measure", "layouts", "0", "measure.layouts"},
	    {"measure", "alpha", "2", "measure.alpha"},
	    {"measure", "speed", "1", "measure.speed"},
	};
	struct aw_result_limits lim = AW_RESULT_LIMITS_DEFAULT;
	struct aw_verr e;
	json_t *doc = json_loads(good, 0, NULL), *d;

	(void)state;
	assert_non_null(doc);
	assert_int_equal(aw_ab_validate(doc, &lim, &e), 0);
	for (size_t i = 0; i < N_OF(bad); i++) {
		json_t *cell, *where;

		d = json_deep_copy(doc);
		cell = json_array_get(json_object_get(d, "cells"), 0);
		where = !strcmp(bad[i].path, "rounds")
		            ? json_array_get(json_object_get(cell, "rounds"), 0)
		        : !strcmp(bad[i].path, "cell") ? cell
		                                       : json_object_get(d, "measure");
		json_object_set_new(where, bad[i].key,
		                    json_loads(bad[i].value, JSON_DECODE_ANY, NULL));
		assert_int_equal(aw_ab_validate(d, &lim, &e), -EINVAL);
		assert_string_equal(e.field, bad[i].field);
		json_decref(d);
	}
	/* a measured cell of the new shape has an A/A round per A/B round */
	d = json_deep_copy(doc);
	json_array_clear(
	    json_object_get(json_array_get(json_object_get(d, "cells"), 0), "aa_rounds"));
	assert_int_equal(aw_ab_validate(d, &lim, &e), -EINVAL);
	json_decref(d);
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_classify),
	    cmocka_unit_test(test_looks),
	    cmocka_unit_test(test_eleven_percent_with_wide_aa),
	    cmocka_unit_test(test_eleven_percent_with_unpaired_aa),
	    cmocka_unit_test(test_bias_removed),
	    cmocka_unit_test(test_unchanged_and_too_few),
	    cmocka_unit_test(test_alpha_per_look),
	    cmocka_unit_test(test_levels),
	    cmocka_unit_test(test_layouts),
	    cmocka_unit_test(test_layout_against_the_rest),
	    cmocka_unit_test(test_loads_apart),
	    cmocka_unit_test(test_directions),
	    cmocka_unit_test(test_fresh_loads),
	    cmocka_unit_test(test_validate_new_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
