/* The collector's HTTP server: libmicrohttpd behind a small request/response interface, so
 * that route handlers read as atomwatch and not as MHD. Bodies are collected up to a hard limit
 * (413 beyond it), replies may be given later from another thread (suspend/resume: long-polls,
 * uploads waiting for their commit), and shutdown drains in-flight requests. */
#ifndef AW_COLLECTOR_HTTPD_H
#define AW_COLLECTOR_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct aw_httpd_server;
struct aw_httpd_req;

/* Called once per request, on an HTTP thread, when the whole body is in. The handler must
 * either reply (aw_httpd_reply()) or suspend (aw_httpd_suspend()) before it returns. */
typedef void (*aw_httpd_handler)(struct aw_httpd_req *req, void *cls);

/* Called once per request after its reply was sent (`sent`) or the connection dropped, right
 * before the request is freed: for metrics and cleanup. */
typedef void (*aw_httpd_done)(struct aw_httpd_req *req, bool sent, void *cls);

struct aw_httpd_options {
	const char *host;            /* address to bind; "" or NULL: every IPv4 address */
	unsigned port;               /* 0: an ephemeral port, see aw_httpd_port() */
	unsigned threads;            /* polling threads */
	uint64_t max_body;           /* 413 beyond this */
	uint64_t max_buffered;       /* 503 when bodies held at once would exceed this */
	unsigned max_connections;    /* open connections at once; more are closed at accept */
	unsigned max_per_client;     /* of them from one client address; 0: no limit */
	unsigned timeout_s;          /* idle connection timeout */
	uint64_t request_timeout_ms; /* most time for a request's headers and body to arrive,
	                              * from the connection's start or its previous reply (a
	                              * client trickling bytes is cut off); 0: none */
	aw_httpd_handler handle;
	aw_httpd_done done;
	void *cls;
};

/* Starts listening and serving. Returns 0 with *out set, or a negative errno with *err:
 * -EADDRINUSE when something listens on the address already (the socket is never shared:
 * no SO_REUSEPORT), -EADDRNOTAVAIL when it is no address of this machine. */
int aw_httpd_start(const struct aw_httpd_options *o, struct aw_httpd_server **out, char **err);

/* The bound port (useful after asking for port 0). */
unsigned aw_httpd_port(const struct aw_httpd_server *s);

/* Stops accepting connections; requests on open connections are still served, each reply
 * then closing its connection. */
void aw_httpd_quiesce(struct aw_httpd_server *s);

/* Waits until no request is in flight or `timeout_ms` passed. Returns 0 or -ETIMEDOUT. */
int aw_httpd_drain(struct aw_httpd_server *s, uint64_t timeout_ms);

/* Requests being handled right now (started and not yet done). */
uint64_t aw_httpd_in_flight(struct aw_httpd_server *s);

/* Stops the server, closing every connection; every suspended request must have been resumed.
 * Sets *s to NULL. */
void aw_httpd_stop(struct aw_httpd_server **s);

/* Percent-decoding of paths and query values in place, except "%00": a NUL byte would cut a
 * path short of what its handler validates (".../a.svg%00.png" read as ".../a.svg"), so it
 * stays as the three characters, which no route or name accepts. Returns the new length. */
size_t aw_httpd_unescape(char *s);

/* ---- one request (valid from the handler call until `done`) ---- */

const char *aw_httpd_method(const struct aw_httpd_req *r);
const char *aw_httpd_path(const struct aw_httpd_req *r); /* decoded, without the query */
/* A query argument or header; NULL when absent. Only from the handler's thread, during the
 * handler call. */
const char *aw_httpd_query(const struct aw_httpd_req *r, const char *name);
const char *aw_httpd_header(const struct aw_httpd_req *r, const char *name);
/* Every value of a query argument that may repeat ("cells=a&cells=b"), in the order given: the
 * first `max` into out[] (valid as aw_httpd_query()'s). Returns how many there are, which may
 * be more than `max`. */
size_t aw_httpd_query_all(const struct aw_httpd_req *r, const char *name, const char **out,
                          size_t max);
/* The body (NUL-terminated; "" when none). */
const char *aw_httpd_body(const struct aw_httpd_req *r, size_t *len);
/* Frees the body early (a handler that parsed it no longer needs it). */
void aw_httpd_body_release(struct aw_httpd_req *r);
/* When the request's headers arrived (CLOCK_MONOTONIC ns). */
uint64_t aw_httpd_started_ns(const struct aw_httpd_req *r);
/* The status replied, 0 before a reply. */
unsigned aw_httpd_status(const struct aw_httpd_req *r);

/* A value the application attaches to the request (e.g. the route); `free_fn` (may be NULL)
 * runs after `done`. */
void aw_httpd_set_data(struct aw_httpd_req *r, void *data, void (*free_fn)(void *));
void *aw_httpd_data(const struct aw_httpd_req *r);
void aw_httpd_set_tag(struct aw_httpd_req *r, int tag);
int aw_httpd_tag(const struct aw_httpd_req *r);

/* Adds a reply header (at most 4, names and values up to 31 / 511 bytes). Returns 0 or
 * -ENOSPC. */
int aw_httpd_add_header(struct aw_httpd_req *r, const char *name, const char *value);

/* Sets the reply. Takes ownership of `body` (malloc'd, may be NULL when len is 0) in every
 * case. From the handler, or from any thread while the request is suspended (then call
 * aw_httpd_resume()). Returns 0, or -EALREADY when a reply was set before (body freed). */
int aw_httpd_reply(struct aw_httpd_req *r, unsigned status, const char *content_type, char *body,
                   size_t len);

/* From the handler: the reply comes later. The request stays valid until it is resumed. */
void aw_httpd_suspend(struct aw_httpd_req *r);

/* From any thread, after aw_httpd_reply(): sends the reply of a suspended request. */
void aw_httpd_resume(struct aw_httpd_req *r);

#endif
