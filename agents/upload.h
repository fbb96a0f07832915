/* Talking to the collector over HTTP(S): one request (bounded reply, connect and total timeouts,
 * TLS verification always on, an optional CA file), and the upload policy around it (retries
 * with exponential backoff and jitter, Retry-After honoured, which replies are final). The only
 * file that touches libcurl is upload.c. */
#ifndef AW_AGENT_UPLOAD_H
#define AW_AGENT_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "aw/buf.h"

#define AW_HTTP_BODY_LIMIT (64u << 10) /* reply bytes kept; the rest is dropped */

struct aw_http;

struct aw_http_opts {
	const char *base_url; /* "https://collector:8080", no trailing slash */
	const char *token;    /* bearer token (copied; never logged), or NULL */
	const char *ca_file;  /* PEM bundle to verify the collector with, or NULL: the system's */
	uint64_t connect_timeout_ms;
	uint64_t timeout_ms;    /* whole request, unless a request gives its own */
	const char *user_agent; /* e.g. "atomwatch-ci/0.1.0"; NULL: "atomwatch-agent/VERSION" */
};

struct aw_http_reply {
	long status;            /* HTTP status; 0 when no answer came */
	struct aw_buf body;     /* at most AW_HTTP_BODY_LIMIT bytes */
	bool truncated;         /* the body was longer */
	int64_t retry_after_ms; /* Retry-After of the reply, -1 when absent */
	char error[256];        /* why no answer came (status 0) */
};

/* Once per process, before any other call (curl_global_init). Returns 0 or -EIO. */
int aw_http_global_init(void);
void aw_http_global_cleanup(void);

/* A client for one collector; connections are kept and reused. Returns NULL with *err. Free
 * with aw_http_free(). */
struct aw_http *aw_http_new(const struct aw_http_opts *opts, char **err);
void aw_http_free(struct aw_http **h);

/* While *stop is non-zero, transfers are abandoned within about a second (NULL: never). */
void aw_http_set_stop(struct aw_http *h, volatile int *stop);

void aw_http_reply_init(struct aw_http_reply *rep);
void aw_http_reply_release(struct aw_http_reply *rep);

/* One request: `method` "GET" or "POST" (with a JSON body of `len` bytes), `path` beginning
 * with '/'; `timeout_ms` 0 means the client's. Fills `rep` (reset first). Returns 0 when an HTTP
 * reply came (whatever its status), -EINTR when the stop flag abandoned it, or another negative
 * errno (connection refused, timeout, TLS verification failed: rep->error says which). */
int aw_http_request(struct aw_http *h, const char *method, const char *path, const void *body,
                    size_t len, uint64_t timeout_ms, struct aw_http_reply *rep);

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

/* Whether a reply is worth retrying: no answer, 408, 429 or 5xx. */
bool aw_http_retryable(long status);

enum aw_upload_outcome {
	AW_UPLOAD_STORED,   /* 2xx: the collector has it (201 created, 200 duplicate) */
	AW_UPLOAD_REJECTED, /* a final 4xx (not 401, 408, 429): the document itself is refused */
	AW_UPLOAD_DEFERRED, /* no success yet (down, 5xx, 401, out of retries, stopped): keep it */
};

/* POSTs `body` to `path` under the policy, sleeping between attempts (interrupted when the
 * client's stop flag is raised). `rep` holds the last reply. Returns the outcome; `rep->status`
 * and `rep->error` say why for the other outcomes. */
enum aw_upload_outcome aw_http_post_retry(struct aw_http *h, const char *path, const void *body,
                                          size_t len, const struct aw_retry_policy *policy,
                                          struct aw_http_reply *rep);

#endif
