/* The handlers' replies and request helpers; see reply.h. */
#include "reply.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/util.h"
#include "internal.h"

int aw_parse_id(const char *s, int64_t *out)
{
	uint64_t v;

	if (!s || aw_parse_u64(s, INT64_MAX, &v) || !v)
		return -EINVAL;
	*out = (int64_t)v;
	return 0;
}

/* The reply to a body that could not be built or serialised. */
static void reply_internal(struct aw_httpd_req *req)
{
	static const char oom[] =
	    "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\",\"field\":\"\"}}";
	char *copy = strdup(oom);

	aw_httpd_reply(req, 500, "application/json", copy, copy ? strlen(copy) : 0);
}

void aw_reply_json(struct aw_httpd_req *req, unsigned status, json_t *body)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;

	json_decref(body);
	if (!text) {
		reply_internal(req);
		return;
	}
	aw_httpd_reply(req, status, "application/json", text, strlen(text));
}

void aw_reply_json_text(struct aw_httpd_req *req, unsigned status, struct aw_buf *text, int rc)
{
	size_t len = text->len;
	char *body = rc ? NULL : aw_buf_detach(text);

	aw_buf_release(text);
	if (!body) {
		reply_internal(req);
		return;
	}
	aw_httpd_reply(req, status, "application/json", body, len);
}

void aw_reply_error(struct aw_httpd_req *req, unsigned status, const char *code, const char *field,
                    const char *fmt, ...)
{
	char message[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	if (status == 401)
		aw_httpd_add_header(req, "WWW-Authenticate", "Bearer realm=\"atomwatch\"");
	if (status == 503)
		aw_httpd_add_header(req, "Retry-After", "1");
	if (status == 507) /* someone has to free space first */
		aw_httpd_add_header(req, "Retry-After", "60");
	aw_reply_json(req, status,
	              json_pack("{s:{s:s, s:s, s:s}}", "error", "code", code, "message", message,
	                        "field", field ? field : ""));
}

void aw_reply_store_error(struct aw_httpd_req *req, int rc)
{
	if (rc == -EBUSY || rc == -EAGAIN)
		aw_reply_error(req, 503, "database", "", "the database is busy or unreachable");
	else if (rc == -ENOSPC)
		aw_reply_error(req, 507, "storage_full", "",
		               "the database's disk is full; nothing was stored (retry later)");
	else
		aw_reply_error(req, 500, "database", "", "database error (%s)", strerror(-rc));
}

int aw_ctx_conn(struct aw_ctx *x, struct store_conn **out)
{
	int rc = 0;

	if (!x->conn)
		rc = store_acquire(x->col->store, &x->conn);
	*out = x->conn;
	return rc;
}

json_t *aw_json_str(const char *s)
{
	return s ? json_string(s) : json_null();
}

int aw_query_checked(struct aw_ctx *x, const char *name, bool (*valid)(const char *),
                     const char *what, const char **out)
{
	const char *v = aw_httpd_query(x->req, name);

	*out = NULL;
	if (!v)
		return 0;
	if (!valid(v)) {
		aw_reply_error(x->req, 400, "invalid", name, "'%s' must be %s, got '%.64s'", name,
		               what, v);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int aw_query_limit(struct aw_ctx *x, const char *name, unsigned def, unsigned max, unsigned *out)
{
	const char *v = aw_httpd_query(x->req, name);
	uint64_t n;

	*out = def;
	if (!v)
		return 0;
	if (aw_parse_u64(v, max, &n) || n < 1) {
		aw_reply_error(x->req, 400, "invalid", name,
		               "'%s' must be a whole number from 1 to %u, got '%.32s'", name, max,
		               v);
		return -EINVAL;
	}
	*out = (unsigned)n;
	return 0;
}
