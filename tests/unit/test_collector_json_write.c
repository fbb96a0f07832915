/* The JSON writer of the collector's large replies (json_write.h), checked against jansson,
 * whose json_dumps() wrote those replies before: every string, number and failure must come
 * out byte for byte the same. */
#include <errno.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json_write.h"

/* What json_dumps() writes for j (stolen), NULL where it fails or j is NULL. */
static char *jansson_text(json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

	json_decref(j);
	return text;
}

static void check_str(const char *s)
{
	char *want = jansson_text(json_string(s));
	struct aw_buf b;
	int rc;

	aw_buf_init(&b, 1 << 20);
	rc = aw_json_put_str(&b, s);
	if (!want) {
		assert_int_equal(rc, -EINVAL);
	} else {
		assert_int_equal(rc, 0);
		assert_string_equal(b.data, want);
	}
	free(want);
	aw_buf_release(&b);
}

static void check_real(double v)
{
	char *want = jansson_text(json_real(v));
	struct aw_buf b;
	int rc;

	aw_buf_init(&b, 64);
	rc = aw_json_put_real(&b, v);
	if (!want) {
		assert_int_equal(rc, -EINVAL);
		assert_int_equal(b.len, 0);
	} else {
		assert_int_equal(rc, 0);
		assert_string_equal(b.data, want);
	}
	free(want);
	aw_buf_release(&b);
}

/* Every byte alone and between plain text, every two-byte pair (invalid UTF-8 among them),
 * the escapes, and the longer sequences jansson refuses or takes. */
static void test_strings(void **state)
{
	static const char *const odd[] = {
	    "",
	    "op=stadd cpu=0",
	    "quote \" backslash \\ slash / tab \t nl \n cr \r bs \b ff \f",
	    "\x01\x02\x1f\x7f end",
	    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",       /* é € 😀 */
	    "\xed\xa0\x80",                                    /* a surrogate */
	    "\xe0\x80\xaf",                                    /* overlong '/' */
	    "\xf4\x90\x80\x80",                                /* above U+10FFFF */
	    "\xf0\x9f\x98",                                    /* cut short */
	    "\xc3",                                            /* cut short at the end */
	    "\xe2\x80\xa8 \xe2\x80\xa9",                       /* U+2028, U+2029: as they are */
	    "\xef\xbf\xbf \xf4\x8f\xbf\xbf \xc2\x80 \xdf\xbf", /* edges that are valid */
	};
	char s[8];

	(void)state;
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		check_str(odd[i]);
	for (int c = 1; c < 256; c++) {
		snprintf(s, sizeof(s), "a%cb", c);
		check_str(s);
		s[0] = (char)c;
		s[1] = '\0';
		check_str(s);
	}
	for (int c = 0x80; c < 256; c++) {
		for (int d = 1; d < 256; d++) {
			s[0] = (char)c;
			s[1] = (char)d;
			s[2] = '\0';
			check_str(s);
		}
	}
}

/* Random bytes, mostly valid UTF-8 or not. */
static void test_random_strings(void **state)
{
	unsigned seed = 7;
	char s[24];

	(void)state;
	for (int k = 0; k < 200000; k++) {
		size_t n = (size_t)(rand_r(&seed) % 20);

		for (size_t i = 0; i < n; i++) {
			int r = rand_r(&seed);

			s[i] = (char)(r % 4 ? 0x20 + (r >> 4) % 0x60 : 1 + (r >> 4) % 255);
		}
		s[n] = '\0';
		check_str(s);
	}
}

static void test_null(void **state)
{
	struct aw_buf b;

	(void)state;
	aw_buf_init(&b, 64);
	assert_int_equal(aw_json_put_str(&b, NULL), 0);
	assert_string_equal(b.data, "null");
	aw_buf_release(&b);
}

/* The forms (".0", exponents without '+' or leading zeros), the extremes, the one jansson
 * cannot write (24 bytes), non-finite numbers, and random bit patterns. */
static void test_reals(void **state)
{
	static const double fixed[] = {0.0,
	                               -0.0,
	                               1.0,
	                               -3.0,
	                               48.7,
	                               0.1,
	                               1e16,
	                               12345678901234567.0,
	                               1e17,
	                               1e20,
	                               1e-5,
	                               1.5e-7,
	                               2.5e100,
	                               1e300,
	                               -1.2345678901234567e-300,
	                               1.2345678901234567e-300,
	                               -1.2345678901234567e300,
	                               5e-324,
	                               -5e-324,
	                               DBL_MIN,
	                               DBL_MAX,
	                               -DBL_MAX,
	                               DBL_EPSILON,
	                               NAN,
	                               INFINITY,
	                               -INFINITY};
	unsigned seed = 11;

	(void)state;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		check_real(fixed[i]);
	for (int k = 0; k < 200000; k++) {
		uint64_t bits = ((uint64_t)rand_r(&seed) << 42) ^ ((uint64_t)rand_r(&seed) << 21) ^
		                (uint64_t)rand_r(&seed);
		double v;

		memcpy(&v, &bits, sizeof(v));
		check_real(v);
		check_real((double)(rand_r(&seed) % 100000) / 1000.0); /* ns-like values */
	}
}

static void test_ints(void **state)
{
	static const int64_t v[] = {0, 1, -1, 100, INT64_MAX, INT64_MIN, 4294967296};
	struct aw_buf b;

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char *want = jansson_text(json_integer((json_int_t)v[i]));

		aw_buf_init(&b, 64);
		assert_int_equal(aw_json_put_int(&b, v[i]), 0);
		assert_string_equal(b.data, want);
		free(want);
		aw_buf_release(&b);
	}
}

/* A full buffer is an error, not a cut value. */
static void test_limit(void **state)
{
	struct aw_buf b;

	(void)state;
	aw_buf_init(&b, 8);
	assert_int_equal(aw_json_put_str(&b, "0123456789"), -E2BIG);
	aw_buf_reset(&b);
	assert_int_equal(aw_json_put_real(&b, 0.123456789), -E2BIG);
	assert_int_equal(aw_json_put_int(&b, INT64_MAX), -E2BIG);
	assert_int_equal(aw_json_put_int(&b, 1234567), 0);
	assert_string_equal(b.data, "1234567");
	aw_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_strings), cmocka_unit_test(test_random_strings),
	    cmocka_unit_test(test_null),    cmocka_unit_test(test_reals),
	    cmocka_unit_test(test_ints),    cmocka_unit_test(test_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
