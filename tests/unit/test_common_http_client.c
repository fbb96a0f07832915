/* The HTTP client: Retry-After in both forms, the backoff curve with its jitter bounds, which
 * replies are retried, and transfers against a one-shot server on 127.0.0.1 (what is sent, the
 * reply captured and bounded, Retry-After read, a refused connection). The agent's and
 * atomwatch-ci's use of it is tested end to end against the real collector
 * (tests/e2e/test_agent_upload.py, test_ci_gate.py). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "aw/http_client.h"

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
	assert_true(aw_http_client_retryable(0));
	assert_true(aw_http_client_retryable(408));
	assert_true(aw_http_client_retryable(429));
	assert_true(aw_http_client_retryable(500));
	assert_true(aw_http_client_retryable(503));
	assert_false(aw_http_client_retryable(400));
	assert_false(aw_http_client_retryable(403));
	assert_false(aw_http_client_retryable(413));
	assert_false(aw_http_client_retryable(201));
}

/* A server that answers one connection with `reply` and keeps what it was sent. */
struct one_shot {
	int fd;
	unsigned port;
	const char *reply;
	char request[8192];
	pthread_t thread;
};

static void *serve_one(void *cls)
{
	struct one_shot *o = cls;
	size_t used = 0;
	int c = accept(o->fd, NULL, NULL);

	if (c < 0)
		return NULL;
	/* the headers, then as much body as Content-Length says */
	while (used < sizeof(o->request) - 1) {
		ssize_t n = read(c, o->request + used, sizeof(o->request) - 1 - used);
		const char *end, *cl;

		if (n <= 0)
			break;
		used += (size_t)n;
		o->request[used] = '\0';
		end = strstr(o->request, "\r\n\r\n");
		if (!end)
			continue;
		cl = strstr(o->request, "Content-Length: ");
		if (!cl || used >= (size_t)(end + 4 - o->request) + strtoul(cl + 16, NULL, 10))
			break;
	}
	if (write(c, o->reply, strlen(o->reply)) < 0)
		perror("write");
	close(c);
	return NULL;
}

static void one_shot_start(struct one_shot *o, const char *reply)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);

	memset(o, 0, sizeof(*o));
	o->reply = reply;
	o->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(o->fd >= 0);
	assert_int_equal(bind(o->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(o->fd, 1), 0);
	assert_int_equal(getsockname(o->fd, (struct sockaddr *)&a, &len), 0);
	o->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&o->thread, NULL, serve_one, o), 0);
}

static void one_shot_join(struct one_shot *o)
{
	pthread_join(o->thread, NULL);
	close(o->fd);
}

static struct aw_http_client *client_for(unsigned port, const char *token)
{
	char url[64], *err = NULL;
	struct aw_http_client_opts opts = {
	    .base_url = url,
	    .token = token,
	    .connect_timeout_ms = 5000,
	    .timeout_ms = 10000,
	};
	struct aw_http_client *h;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
	h = aw_http_client_new(&opts, &err);
	assert_non_null(h);
	assert_null(err);
	assert_string_equal(aw_http_client_base_url(h), url);
	return h;
}

static void test_post(void **state)
{
	struct one_shot o;
	struct aw_http_client *h;
	struct aw_http_client_reply rep;

	(void)state;
	one_shot_start(&o, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
	                   "Content-Length: 13\r\nConnection: close\r\n\r\n{\"seq\": 42}\n\n");
	h = client_for(o.port, "awt_secret");
	aw_http_client_reply_init(&rep);
	assert_int_equal(aw_http_client_request(h, "POST", "/api/v1/runs", "{\"a\":1}", 7, 0, &rep),
	                 0);
	one_shot_join(&o);
	assert_int_equal(rep.status, 201);
	assert_int_equal(rep.body.len, 13);
	assert_memory_equal(rep.body.data, "{\"seq\": 42}\n\n", 13);
	assert_false(rep.truncated);
	assert_int_equal(rep.retry_after_ms, -1);
	assert_non_null(strstr(o.request, "POST /api/v1/runs HTTP/1.1\r\n"));
	assert_non_null(strstr(o.request, "\r\nAuthorization: Bearer awt_secret\r\n"));
	assert_non_null(strstr(o.request, "\r\nContent-Type: application/json\r\n"));
	assert_non_null(strstr(o.request, "\r\nUser-Agent: atomwatch/"));
	assert_null(strstr(o.request, "Expect:"));
	assert_non_null(strstr(o.request, "\r\n\r\n{\"a\":1}"));
	aw_http_client_reply_release(&rep);
	aw_http_client_free(&h);
	assert_null(h);
}

static void test_reply_bounded_and_retry_after(void **state)
{
	static char reply[8192];
	struct one_shot o;
	struct aw_http_client *h;
	struct aw_http_client_reply rep;
	int n;

	(void)state;
	n = snprintf(reply, sizeof(reply),
	             "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 7 \r\n"
	             "Content-Length: 4000\r\nConnection: close\r\n\r\n");
	memset(reply + n, 'x', 4000);
	reply[n + 4000] = '\0';
	one_shot_start(&o, reply);
	h = client_for(o.port, NULL);
	aw_http_client_reply_init(&rep);
	rep.body.limit = 1000;
	assert_int_equal(aw_http_client_request(h, "GET", "/healthz", NULL, 0, 0, &rep), 0);
	one_shot_join(&o);
	assert_int_equal(rep.status, 503);
	assert_true(aw_http_client_retryable(rep.status));
	assert_int_equal(rep.retry_after_ms, 7000);
	assert_true(rep.truncated);
	assert_int_equal(rep.body.len, 1000);
	assert_non_null(strstr(o.request, "GET /healthz HTTP/1.1\r\n"));
	assert_null(strstr(o.request, "Authorization:"));
	aw_http_client_reply_release(&rep);
	aw_http_client_free(&h);
}

static void test_refused(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	struct aw_http_client *h;
	struct aw_http_client_reply rep;
	volatile int stop = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	(void)state;
	/* a port that was just bound and is closed again: nothing answers there */
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	h = client_for(ntohs(a.sin_port), NULL);
	aw_http_client_set_stop(h, &stop);
	assert_ptr_equal(aw_http_client_stop_flag(h), &stop);
	aw_http_client_reply_init(&rep);
	assert_int_equal(aw_http_client_request(h, "GET", "/", NULL, 0, 0, &rep), -ECONNREFUSED);
	assert_int_equal(rep.status, 0);
	assert_true(rep.error[0] != '\0');
	aw_http_client_reply_release(&rep);
	aw_http_client_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_retry_after),
	    cmocka_unit_test(test_backoff),
	    cmocka_unit_test(test_retryable),
	    cmocka_unit_test(test_post),
	    cmocka_unit_test(test_reply_bounded_and_retry_after),
	    cmocka_unit_test(test_refused),
	};
	int rc;

	assert_int_equal(aw_http_client_global_init(), 0);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	aw_http_client_global_cleanup();
	return rc;
}
