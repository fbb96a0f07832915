/* The asserts that state the headers' preconditions: a broken contract aborts in the Debug and
 * sanitizer builds, and the release builds (NDEBUG) compile the check out. Each call runs in a
 * child process. The calls are chosen so that breaking the contract is harmless without the
 * assert (nothing is read or written out of bounds), so the NDEBUG case can run them too. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "aw/stats.h"
#include "aw/util.h"

/* Runs fn in a child with stderr silenced; returns its wait status. */
static int in_child(void (*fn)(void))
{
	int status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDERR_FILENO);
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void assert_contract(void (*fn)(void))
{
	int status = in_child(fn);

#ifdef NDEBUG
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
#else
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
#endif
}

/* aw_array_reserve() makes room for item [n] of n items at most: asked for [5] of an empty
 * array it would grow it to `first` (4) only. */
static void reserve_past_the_end(void)
{
	int *items = NULL;
	size_t cap = 0;

	if (aw_array_reserve(&items, 5, &cap, sizeof(*items), 4) == 0)
		free(items);
}

/* aw_quantile_sorted() of no values: n must be > 0. */
static void quantile_of_nothing(void)
{
	const double one[] = {1.0};

	(void)aw_quantile_sorted(one, 0, 0.5);
}

static void test_reserve_contract(void **state)
{
	(void)state;
	assert_contract(reserve_past_the_end);
}

static void test_quantile_contract(void **state)
{
	(void)state;
	assert_contract(quantile_of_nothing);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reserve_contract),
	    cmocka_unit_test(test_quantile_contract),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
