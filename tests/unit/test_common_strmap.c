/* The bounded string map: lookups after growth, replacement, the entry limit and clearing,
 * checked against a plain array as the reference. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "aw/strmap.h"

static void test_put_get(void **state)
{
	struct aw_strmap *m = aw_strmap_new(100000);
	char key[32];
	int64_t v;

	(void)state;
	assert_non_null(m);
	assert_int_equal(aw_strmap_get(m, "absent", &v), -ENOENT);
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "op=ldadd cpu=%d", i);
		assert_int_equal(aw_strmap_put(m, key, i * 3), 0);
	}
	assert_int_equal(aw_strmap_count(m), 5000);
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "op=ldadd cpu=%d", i);
		assert_int_equal(aw_strmap_get(m, key, &v), 0);
		assert_int_equal(v, i * 3);
	}
	assert_int_equal(aw_strmap_get(m, "op=ldadd cpu=5000", &v), -ENOENT);
	assert_int_equal(aw_strmap_put(m, "op=ldadd cpu=7", -1), 0);
	assert_int_equal(aw_strmap_get(m, "op=ldadd cpu=7", &v), 0);
	assert_int_equal(v, -1);
	assert_int_equal(aw_strmap_count(m), 5000);
	aw_strmap_free(&m);
	assert_null(m);
}

static void test_limit_and_clear(void **state)
{
	struct aw_strmap *m = aw_strmap_new(3);
	int64_t v;

	(void)state;
	assert_int_equal(aw_strmap_put(m, "a", 1), 0);
	assert_int_equal(aw_strmap_put(m, "b", 2), 0);
	assert_int_equal(aw_strmap_put(m, "c", 3), 0);
	assert_int_equal(aw_strmap_put(m, "d", 4), -ENOSPC);
	assert_int_equal(aw_strmap_get(m, "d", &v), -ENOENT);
	assert_int_equal(aw_strmap_put(m, "c", 30), 0); /* replacing is not growing */
	aw_strmap_clear(m);
	assert_int_equal(aw_strmap_count(m), 0);
	assert_int_equal(aw_strmap_get(m, "a", &v), -ENOENT);
	assert_int_equal(aw_strmap_put(m, "d", 4), 0);
	assert_int_equal(aw_strmap_get(m, "d", &v), 0);
	assert_int_equal(v, 4);
	aw_strmap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_put_get),
	    cmocka_unit_test(test_limit_and_clear),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
