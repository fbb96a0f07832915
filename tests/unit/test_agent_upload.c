/* The upload policy without a network: Retry-After in both forms, the backoff curve with its
 * jitter bounds, and which replies are retried. The transfers themselves are tested end to end
 * against the real collector (tests/e2e/test_agent.py). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "upload.h"

static void test_retry_after(void **state)
{
	time_t now = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT */
	int64_t ms;

	(void)state;
	assert_int_equal(aw_retry_after_parse("120", now, &ms), 0);
	assert_int_equal(ms, 120000);
	assert_int_equal(aw_retry_after_parse("0", now, &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(aw_retry_after_parse("Sun, 06 Nov 1994 08:49:40 GMT", now, &ms), 0);
	assert_int_equal(ms, 3000);
	assert_int_equal(aw_retry_after_parse("Sunday, 06-Nov-94 08:50:37 GMT", now, &ms), 0);
	assert_int_equal(ms, 60000);
	assert_int_equal(aw_retry_after_parse("Sun Nov  6 08:49:37 1994", now, &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(aw_retry_after_parse("Sat, 05 Nov 1994 08:49:37 GMT", now, &ms), 0);
	assert_int_equal(ms, 0); /* in the past: at once */
	assert_int_equal(aw_retry_after_parse("-5", now, &ms), -EINVAL);
	assert_int_equal(aw_retry_after_parse("1.5", now, &ms), -EINVAL);
	assert_int_equal(aw_retry_after_parse("", now, &ms), -EINVAL);
	assert_int_equal(aw_retry_after_parse("soon", now, &ms), -EINVAL);
}

static void test_backoff(void **state)
{
	const struct aw_retry_policy p = {.retries = 10, .backoff_ms = 100, .backoff_max_ms = 1000};
	const uint64_t want[] = {100, 200, 400, 800, 1000, 1000, 1000};

	(void)state;
	for (uint32_t a = 0; a < sizeof(want) / sizeof(want[0]); a++) {
		/* the lower half is fixed, the upper half random */
		assert_int_equal(aw_backoff_ms(&p, a, 0), want[a] - want[a] / 2);
		assert_int_equal(aw_backoff_ms(&p, a, want[a] / 2), want[a]);
		for (uint64_t r = 0; r < 5000; r += 37) {
			uint64_t d = aw_backoff_ms(&p, a, r * 7919);

			assert_true(d >= want[a] - want[a] / 2 && d <= want[a]);
		}
	}
	assert_int_equal(aw_backoff_ms(&p, 4000000000u, 0), 500); /* no overflow */
}

static void test_retryable(void **state)
{
	(void)state;
	assert_true(aw_http_retryable(0));
	assert_true(aw_http_retryable(408));
	assert_true(aw_http_retryable(429));
	assert_true(aw_http_retryable(500));
	assert_true(aw_http_retryable(503));
	assert_false(aw_http_retryable(400));
	assert_false(aw_http_retryable(403));
	assert_false(aw_http_retryable(413));
	assert_false(aw_http_retryable(201));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_retry_after),
	    cmocka_unit_test(test_backoff),
	    cmocka_unit_test(test_retryable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
