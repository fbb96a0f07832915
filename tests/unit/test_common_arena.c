/* The collector's region allocator: alignment and zeroing, strings, growing arrays, the hard
 * limit with its sticky error, and reuse after a release. */
#include <errno.h>
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "aw/arena.h"

static void test_alloc_and_strings(void **state)
{
	struct aw_arena a;
	char *s, *t;
	unsigned char *p;

	(void)state;
	aw_arena_init(&a, 1u << 20);
	p = aw_arena_alloc(&a, 3);
	assert_non_null(p);
	assert_int_equal((uintptr_t)p % alignof(max_align_t), 0);
	assert_int_equal(p[0] | p[1] | p[2], 0);
	s = aw_arena_strdup(&a, "stadd");
	t = aw_arena_strndup(&a, "0123456789abcdef", 7);
	assert_string_equal(s, "stadd");
	assert_string_equal(t, "0123456");
	assert_null(aw_arena_strdup(&a, NULL));
	assert_int_equal(a.rc, 0);
	/* a block larger than the usual ones, then small ones again */
	p = aw_arena_alloc(&a, 200000);
	assert_non_null(p);
	p[199999] = 1;
	assert_string_equal(aw_arena_strdup(&a, "after"), "after");
	aw_arena_release(&a);
	assert_null(a.blocks);
}

static void test_push(void **state)
{
	struct aw_arena a;
	int *v = NULL, *x;
	size_t n = 0, cap = 0;

	(void)state;
	aw_arena_init(&a, 1u << 20);
	for (int i = 0; i < 1000; i++) {
		x = aw_arena_push(&a, &v, &n, &cap, sizeof(*v));
		assert_non_null(x);
		assert_int_equal(*x, 0);
		*x = i;
	}
	assert_int_equal(n, 1000);
	assert_true(cap >= 1000);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(v[i], i);
	aw_arena_release(&a);
}

static void test_limit(void **state)
{
	struct aw_arena a;

	(void)state;
	aw_arena_init(&a, 100000);
	assert_non_null(aw_arena_alloc(&a, 1000));
	assert_null(aw_arena_alloc(&a, 200000));
	assert_int_equal(a.rc, -E2BIG);
	/* sticky: nothing more until the release */
	assert_null(aw_arena_alloc(&a, 8));
	assert_null(aw_arena_strdup(&a, "x"));
	aw_arena_release(&a);
	assert_int_equal(a.rc, 0);
	assert_non_null(aw_arena_alloc(&a, 8));
	aw_arena_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_alloc_and_strings),
	    cmocka_unit_test(test_push),
	    cmocka_unit_test(test_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
