/* The collector's judgment of A/B documents (collector/analysis/ab_judge.c): a document of the
 * first shape (rounds without levels or layouts, no `measure`) is still judged, the stored case
 * of issue 30 (+11%, an A/A interval reaching 1.175) regressed; a document of the new shape is
 * judged per level and layout at the level its looks leave each interval. Numbers are compared
 * with what the same rounds say, never with a fixed number of ns. */
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ab_judge.h"

#define ROUNDS 20

static double wobble(size_t i)
{
	static const double w[] = {0.002,  -0.003, 0.001, -0.001, 0.004, -0.002, 0.0,
	                           0.003,  -0.004, 0.001, -0.002, 0.002, -0.001, 0.003,
	                           -0.003, 0.001,  0.0,   -0.002, 0.002, -0.001};

	return w[i % (sizeof(w) / sizeof(w[0]))];
}

/* A cell whose round i reads base 20 ns, head 20 exp(ab(i)), A/A head 20 exp(aa(i)); with
 * `levels`, every other round shared and four layouts taking turns. */
static json_t *cell(const char *key, double (*ab)(size_t), double (*aa)(size_t), bool levels,
                    size_t n)
{
	json_t *r = json_array(), *a = json_array();

	for (size_t i = 0; i < n; i++) {
		json_t *x = json_pack("{s:s, s:f, s:f}", "first", i % 2 ? "head" : "base", "base",
		                      20.0, "head", 20 * exp(ab(i)));
		json_t *y = json_pack("{s:s, s:f, s:f}", "first", i % 2 ? "base" : "head", "base",
		                      20.0, "head", 20 * exp(aa(i)));

		if (levels) {
			const char *level = i % 2 ? "shared" : "alone";

			json_object_set_new(x, "level", json_string(level));
			json_object_set_new(y, "level", json_string(level));
			json_object_set_new(x, "layout", json_integer((json_int_t)(i / 2 % 4)));
			json_object_set_new(y, "layout", json_integer((json_int_t)(i / 2 % 4)));
		}
		json_array_append_new(r, x);
		json_array_append_new(a, y);
	}
	return json_pack("{s:s, s:s, s:s, s:i, s:o, s:o}", "key", key, "op", "op", "status", "ok",
	                 "cpu", 0, "rounds", r, "aa_rounds", a);
}

static double disturbance(size_t i)
{
	double e = -0.29 + 0.58 * (double)i / (ROUNDS - 1);

	return e < 0 ? e : 1.6 * e;
}

static double eleven_ab(size_t i)
{
	return log(1.11) + disturbance(i) + wobble(i);
}

static double eleven_aa(size_t i)
{
	return disturbance(i) - wobble(i) / 2;
}

static double quiet(size_t i)
{
	return wobble(i) / 4;
}

/* nothing alone, +7% shared (the odd rounds) */
static double shared_only(size_t i)
{
	return (i % 2 ? log(1.07) : 0) + wobble(i + 3) / 4;
}

static json_t *document(json_t *cells, bool measure)
{
	json_t *doc = json_pack("{s:s, s:o}", "schema", "atomwatch.ab/1", "cells", cells);

	if (measure)
		json_object_set_new(doc, "measure",
		                    json_pack("{s:i, s:i}", "looks", 12, "layouts", 4));
	return doc;
}

static const json_t *cell_of(const json_t *j, size_t i)
{
	return json_array_get(json_object_get(j, "cells"), i);
}

static double num(const json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static void test_first_shape(void **state)
{
	struct aw_ab_opts opts = AW_AB_OPTS_DEFAULT;
	json_t *doc = document(
	    json_pack("[o, o]", cell("subject=s op=op cpu=0", eleven_ab, eleven_aa, false, ROUNDS),
	              cell("subject=s op=op cpu=1", quiet, quiet, false, ROUNDS)),
	    false);
	json_t *j = aw_ab_judge(doc, &opts);
	const json_t *c;

	(void)state;
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "verdict")), "regressed");
	assert_int_equal(json_integer_value(json_object_get(j, "looks")), 1);
	c = cell_of(j, 0);
	assert_string_equal(json_string_value(json_object_get(c, "verdict")), "regressed");
	/* the A/A interval reaches 1.175, which the old rule took as the threshold */
	assert_true(num(json_object_get(c, "aa"), "hi") >= 1.175);
	assert_true(num(c, "lo") > 1 && num(c, "ratio") > 1.1 && num(c, "ratio") < 1.12);
	assert_true(num(c, "threshold") == opts.threshold);
	assert_null(json_object_get(c, "levels"));
	assert_int_equal(json_integer_value(json_object_get(c, "rounds")), ROUNDS);
	c = cell_of(j, 1);
	assert_string_equal(json_string_value(json_object_get(c, "verdict")), "unchanged");
	json_decref(j);
	json_decref(doc);
}

static void test_levels_and_layouts(void **state)
{
	struct aw_ab_opts opts = AW_AB_OPTS_DEFAULT;
	json_t *doc = document(
	    json_pack("[o]", cell("subject=s op=op cpu=0", shared_only, quiet, true, 2 * ROUNDS)),
	    true);
	json_t *j = aw_ab_judge(doc, &opts);
	const json_t *c, *levels, *shared;

	(void)state;
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "looks")), 12);
	c = cell_of(j, 0);
	assert_string_equal(json_string_value(json_object_get(c, "verdict")), "regressed");
	levels = json_object_get(c, "levels");
	shared = json_object_get(levels, "shared");
	assert_string_equal(json_string_value(json_object_get(shared, "verdict")), "regressed");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(levels, "alone"), "verdict")),
	    "unchanged");
	assert_true(fabs(num(shared, "ratio") - 1.07) < 0.003);
	assert_int_equal(json_integer_value(json_object_get(shared, "rounds")), ROUNDS);
	assert_int_equal(json_array_size(json_object_get(c, "layouts")), 4);
	/* the four layouts' spread, and the half-width it gives: t x sd / sqrt(4) */
	{
		const json_t *ld = json_object_get(c, "loads");

		assert_true(json_is_object(ld));
		assert_true(num(ld, "sd") >= 0 && num(ld, "half_width") >= 0);
		assert_true(num(c, "lo") <= num(c, "ratio") / (1 + num(ld, "half_width")) + 1e-9);
	}
	/* 12 looks, three estimands */
	assert_true(fabs(num(c, "alpha_each") - AW_AB_ALPHA / 36) < 1e-12);
	assert_non_null(
	    strstr(json_string_value(json_object_get(c, "reason")), "shared regressed"));
	json_decref(j);
	json_decref(doc);
}

static void test_cells_without_rounds(void **state)
{
	struct aw_ab_opts opts = AW_AB_OPTS_DEFAULT;
	json_t *doc = document(json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}]", "key", "a",
	                                 "op", "a", "status", "new", "key", "b", "op", "b",
	                                 "status", "failed", "reason", "counter off"),
	                       false);
	json_t *j = aw_ab_judge(doc, &opts);

	(void)state;
	assert_string_equal(json_string_value(json_object_get(cell_of(j, 0), "verdict")), "new");
	assert_string_equal(json_string_value(json_object_get(cell_of(j, 1), "verdict")), "failed");
	assert_string_equal(json_string_value(json_object_get(cell_of(j, 1), "reason")),
	                    "counter off");
	assert_string_equal(json_string_value(json_object_get(j, "verdict")), "inconclusive");
	json_decref(j);
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_first_shape),
	    cmocka_unit_test(test_levels_and_layouts),
	    cmocka_unit_test(test_cells_without_rounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
