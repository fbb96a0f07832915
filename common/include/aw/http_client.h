/* The project's HTTP(S) client (its only libcurl adapter): one request at a time on a kept
 * connection, bounded replies, connect and total timeouts, TLS verification always on with an
 * optional CA file, a stop flag that abandons a transfer; and the pieces of a retry policy
 * (which replies are worth retrying, Retry-After, exponential backoff with jitter). The agent's
 * uploads (agents/upload.h) and atomwatch-ci (ci/client.c) are built on it. Its one source file,
 * the aw_http_client library, is the only one of the project that includes curl/curl.h. */
#ifndef AW_HTTP_CLIENT_H
#define AW_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "aw/buf.h"

#define AW_HTTP_CLIENT_BODY_LIMIT (64u << 10) /* reply bytes kept by default; the rest dropped */

struct aw_http_client;

struct aw_http_client_opts {
	const char *base_url; /* "https://collector:8080", no trailing slash */
	const char *token;    /* bearer token (copied; never logged), or NULL */
	const char *ca_file;  /* PEM bundle to verify the server with, or NULL: the system's */
	uint64_t connect_timeout_ms;
	uint64_t timeout_ms;    /* whole request, unless a request gives its own */
	const char *user_agent; /* e.g. "atomwatch-ci/0.1.0"; NULL: "atomwatch/VERSION" */
};

struct aw_http_client_reply {
	long status;            /* HTTP status; 0 when no answer came */
	struct aw_buf body;     /* at most body.limit bytes (AW_HTTP_CLIENT_BODY_LIMIT unless the
	                         * caller changes it after aw_http_client_reply_init()) */
	bool truncated;         /* the body was longer */
	int64_t retry_after_ms; /* Retry-After of the reply, -1 when absent */
	char error[256];        /* why no answer came (status 0) */
};

/* Once per process, before any other call (curl_global_init). Returns 0 or -EIO. */
int aw_http_client_global_init(void);
void aw_http_client_global_cleanup(void);

/* A client for one server; its connection is kept and reused. Returns NULL with *err. Free
 * with aw_http_client_free() (which wipes the token). One thread at a time per client. */
struct aw_http_client *aw_http_client_new(const struct aw_http_client_opts *opts, char **err);
void aw_http_client_free(struct aw_http_client **h);

/* While *stop is non-zero, transfers are abandoned within about a second (NULL: never). */
void aw_http_client_set_stop(struct aw_http_client *h, volatile int *stop);
/* The flag given to aw_http_client_set_stop() (NULL when none), for waits between attempts. */
volatile int *aw_http_client_stop_flag(const struct aw_http_client *h);
/* The base URL the client was made with (owned by the client). */
const char *aw_http_client_base_url(const struct aw_http_client *h);

void aw_http_client_reply_init(struct aw_http_client_reply *rep);
void aw_http_client_reply_release(struct aw_http_client_reply *rep);

/* One request: `method` "GET" or "POST" (with a JSON body of `len` bytes), `path` beginning
 * with '/'; `timeout_ms` 0 means the client's. Fills `rep` (reset first). Returns 0 when an HTTP
 * reply came (whatever its status), -EINTR when the stop flag abandoned it, or another negative
 * errno (connection refused, timeout, TLS verification failed: rep->error says which). */
int aw_http_client_request(struct aw_http_client *h, const char *method, const char *path,
                           const void *body, size_t len, uint64_t timeout_ms,
                           struct aw_http_client_reply *rep);

/* Whether a reply is worth retrying: no answer, 408, 429 or 5xx. */
bool aw_http_client_retryable(long status);

/* Parses a Retry-After value: delta-seconds or an HTTP-date (relative to `now`). Returns 0 with
 * *ms (0 for a date in the past) or -EINVAL. */
int aw_retry_after_parse(const char *value, time_t now, int64_t *ms);

struct aw_retry_policy {
	uint32_t retries;        /* attempts after the first */
	uint64_t backoff_ms;     /* delay before the first retry */
	uint64_t backoff_max_ms; /* no delay is longer; a longer Retry-After ends the attempts */
};

/* The delay before retry number `attempt` (0-based): backoff_ms * 2^attempt capped at
 * backoff_max_ms, of which the upper half is random jitter (`random` picks it). */
uint64_t aw_backoff_ms(const struct aw_retry_policy *p, uint32_t attempt, uint64_t random);

#endif
