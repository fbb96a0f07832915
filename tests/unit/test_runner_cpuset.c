/* CPU sets and the Linux CPU-list syntax (runner/cpuset.c): set operations, parse/format round
 * trips, and every malformed list rejected with a message. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

static void test_set_ops(void **state)
{
	struct aw_cpuset s;

	(void)state;
	aw_cpuset_clear(&s);
	assert_int_equal(aw_cpuset_count(&s), 0);
	assert_int_equal(aw_cpuset_next(&s, -1), -1);
	aw_cpuset_set(&s, 0);
	aw_cpuset_set(&s, 63);
	aw_cpuset_set(&s, 64);
	aw_cpuset_set(&s, AW_MAX_CPUS - 1);
	aw_cpuset_set(&s, AW_MAX_CPUS); /* out of range: ignored */
	aw_cpuset_set(&s, -1);
	assert_int_equal(aw_cpuset_count(&s), 4);
	assert_true(aw_cpuset_has(&s, 63));
	assert_false(aw_cpuset_has(&s, 62));
	assert_false(aw_cpuset_has(&s, -1));
	assert_false(aw_cpuset_has(&s, AW_MAX_CPUS));
	assert_int_equal(aw_cpuset_next(&s, -1), 0);
	assert_int_equal(aw_cpuset_next(&s, 0), 63);
	assert_int_equal(aw_cpuset_next(&s, 63), 64);
	assert_int_equal(aw_cpuset_next(&s, 64), AW_MAX_CPUS - 1);
	assert_int_equal(aw_cpuset_next(&s, AW_MAX_CPUS - 1), -1);
}

/* Parses `in`, checks the members and that formatting gives `canon`, and that `canon` parses
 * back to the same set. */
static void round_trip(const char *in, const char *canon, int count)
{
	struct aw_cpuset s, again;
	char buf[256], *err = NULL;

	assert_int_equal(aw_cpulist_parse(in, &s, &err), 0);
	assert_null(err);
	assert_int_equal(aw_cpuset_count(&s), count);
	aw_cpulist_format(&s, buf, sizeof(buf));
	assert_string_equal(buf, canon);
	assert_int_equal(aw_cpulist_parse(buf, &again, NULL), 0);
	assert_memory_equal(&s, &again, sizeof(s));
}

static void test_round_trips(void **state)
{
	(void)state;
	round_trip("0", "0", 1);
	round_trip("0-3", "0-3", 4);
	round_trip("0-3\n", "0-3", 4); /* sysfs files end with a newline */
	round_trip("0-3 \n", "0-3", 4);
	round_trip("0,2,4-7,9", "0,2,4-7,9", 7);
	round_trip("0,1,2,3", "0-3", 4);
	round_trip("3,1,2", "1-3", 3);
	round_trip("5-5", "5", 1);
	round_trip("0-3,2-5", "0-5", 6);
	round_trip("0-1,4-5,64-65", "0-1,4-5,64-65", 6);
	round_trip("63-64", "63-64", 2);
	round_trip("4095", "4095", 1);
	round_trip("0-4095", "0-4095", AW_MAX_CPUS);
	round_trip("007", "7", 1);
}

static void test_bad_lists(void **state)
{
	static const char *const bad[] = {
	    "",    "3-1", "1,,2", "a",   "1-",  "-1", "1,",  ",1",    "1-2-3",
	    "1 2", " 1",  "0x1",  "1;2", "1-a", "+1", "1.5", "0-3,a", "0,\n",
	};
	struct aw_cpuset s;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *err = NULL;

		if (aw_cpulist_parse(bad[i], &s, &err) != -EINVAL)
			fail_msg("'%s' was not rejected", bad[i]);
		assert_non_null(err);
		assert_non_null(strstr(err, "bad CPU list"));
		free(err);
	}
}

static void test_huge_numbers(void **state)
{
	static const char *const huge[] = {
	    "4096",
	    "0-4096",
	    "99999999999999999999999999",
	    "1,18446744073709551617",
	    "2147483648-2147483649",
	};
	struct aw_cpuset s;

	(void)state;
	for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		char *err = NULL;

		if (aw_cpulist_parse(huge[i], &s, &err) != -ERANGE)
			fail_msg("'%s' was not rejected as too large", huge[i]);
		assert_non_null(strstr(err, "too large"));
		free(err);
	}
	/* no message wanted: still rejected */
	assert_int_equal(aw_cpulist_parse("4096", &s, NULL), -ERANGE);
	assert_int_equal(aw_cpulist_parse("x", &s, NULL), -EINVAL);
}

static void test_format_edges(void **state)
{
	struct aw_cpuset s;
	char buf[8];

	(void)state;
	aw_cpuset_clear(&s);
	memset(buf, 'x', sizeof(buf));
	aw_cpulist_format(&s, buf, sizeof(buf));
	assert_string_equal(buf, "");
	/* a short buffer stays terminated */
	assert_int_equal(aw_cpulist_parse("0,2,4,6,8,10,12", &s, NULL), 0);
	aw_cpulist_format(&s, buf, sizeof(buf));
	assert_true(strlen(buf) < sizeof(buf));
	assert_int_equal(strncmp(buf, "0,2,4,6", strlen(buf)), 0);
	aw_cpulist_format(&s, buf, 0); /* nothing written, nothing read */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_set_ops),      cmocka_unit_test(test_round_trips),
	    cmocka_unit_test(test_bad_lists),    cmocka_unit_test(test_huge_numbers),
	    cmocka_unit_test(test_format_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
