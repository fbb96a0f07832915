/* What every route handler replies and reads with: JSON replies and the error shape of the API
 * (docs/api.md "Conventions"), the request's pooled database connection, and the parsing of a
 * path's id. Kept apart from the router (server.c) and the handlers (api.c, jobs.c, ingest.c,
 * web.c) so that both depend on this file and neither on the other's helpers. Not for use
 * outside collector/. */
#ifndef AW_COLLECTOR_REPLY_H
#define AW_COLLECTOR_REPLY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "aw/buf.h"
#include "httpd.h"

struct aw_ctx;
struct store_conn;

/* A pooled connection for this request, taken on the first call and the same one after; the
 * router returns it when the handler is done. Returns 0 with *out, or a store error. */
int aw_ctx_conn(struct aw_ctx *x, struct store_conn **out);

/* Replies with `body` as JSON (the reference is stolen; NULL or a body that cannot be
 * serialised gets 500 with an "internal" error). */
void aw_reply_json(struct aw_httpd_req *req, unsigned status, json_t *body);

/* Replies with `text`, JSON written by the handler (json_write.h), when `rc` is 0; else, or
 * when the text cannot be taken, with what aw_reply_json() gives a body it cannot serialise
 * (500, "internal"). Takes the text's data and leaves `text` released in every case. */
void aw_reply_json_text(struct aw_httpd_req *req, unsigned status, struct aw_buf *text, int rc);

/* Replies {"error":{"code","message","field"}}; field "" when it is about no field. 401 adds
 * WWW-Authenticate, 503 adds Retry-After: 1, 507 Retry-After: 60. */
void aw_reply_error(struct aw_httpd_req *req, unsigned status, const char *code, const char *field,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Replies to a store failure: 503 when the database is busy or unreachable, 507 when its disk
 * is full (-ENOSPC), 500 otherwise. */
void aw_reply_store_error(struct aw_httpd_req *req, int rc);

/* Parses a decimal id (1..INT64_MAX) from a path segment. Returns 0 or -EINVAL. */
int aw_parse_id(const char *s, int64_t *out);

/* Reads an optional name-like query parameter. Returns 0 (with *out NULL when absent) or
 * replies 400 naming it and returns -EINVAL. */
int aw_query_checked(struct aw_ctx *x, const char *name, bool (*valid)(const char *),
                     const char *what, const char **out);

/* Reads an optional count parameter (1..max, `def` when absent). Returns 0, or replies 400
 * naming it and returns -EINVAL. */
int aw_query_limit(struct aw_ctx *x, const char *name, unsigned def, unsigned max, unsigned *out);

/* A JSON string, or null for NULL (a new reference; NULL when out of memory). */
json_t *aw_json_str(const char *s);

#endif
