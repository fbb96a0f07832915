/* POST /api/v1/runs (and /api/v1/results, the same): read the body into the model (the fast path,
 * aw_result_parse_fast, for a valid document; else jansson and aw_result_from_json, the rules
 * every side shares, which word any error), apply the collector's own rules (a commit is
 * required; an agent uploads only for its host), hash its content for idempotency, and hand it
 * to the writer; the reply is sent once the writer has committed (or failed). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "aw/buf.h"
#include "aw/log.h"
#include "aw/sha256.h"
#include "aw/ab.h"
#include "internal.h"
#include "metrics.h"
#include "postingest.h"
#include "writer.h"

struct upload {
	struct aw_write write;
	struct aw_result *result;
	char *host_json;
	struct aw_httpd_req *req;
	struct aw_postingest *postingest; /* NULL: no workers here */
};

static void upload_free(void *p)
{
	struct upload *u = p;

	if (!u)
		return;
	aw_result_free(&u->result);
	free(u->host_json);
	free(u);
}

/* On a writer thread: answer the upload and resume its request. */
static void upload_done(struct aw_write *w, void *cls)
{
	struct upload *u = cls;
	const struct store_put *put = &w->put;
	struct aw_httpd_req *req = u->req;

	if (w->rc) {
		aw_reply_store_error(req, w->rc);
	} else {
		aw_metrics_run(put->outcome);
		switch (put->outcome) {
		case STORE_CREATED:
		case STORE_DUPLICATE:
			aw_reply_json(
			    req, put->outcome == STORE_CREATED ? 201 : 200,
			    json_pack("{s:s, s:s, s:I}", "run_id", u->result->run_id, "status",
			              put->outcome == STORE_CREATED ? "created" : "duplicate",
			              "seq", (json_int_t)put->seq));
			/* The verdict and charts follow off the request path: the run's task was
			 * stored with it; a worker here looks for it now (never blocks). */
			if (put->outcome == STORE_CREATED && u->postingest)
				aw_postingest_kick(u->postingest);
			break;
		case STORE_CONFLICT:
			aw_reply_error(req, 409, "conflict", "run_id",
			               "run '%s' is already stored with different content",
			               u->result->run_id);
			break;
		}
	}
	aw_httpd_resume(req);
}

/* Hex SHA-256 of the canonical JSON of `j` (compact, keys sorted); *canonical receives the text
 * when not NULL. Returns 0, -ENOMEM or -EIO. */
static int canonical_hash(const json_t *j, char *hex, char **canonical)
{
	char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	int rc;

	if (!text)
		return -ENOMEM;
	rc = aw_sha256_hex(text, strlen(text), hex);
	if (canonical && !rc)
		*canonical = text;
	else
		free(text);
	return rc;
}

/* ---- the content hash ----
 * The hash that tells a repeated upload (200) from a different one with the same run_id (409)
 * covers the validated model in a canonical binary form: every field in a fixed order, strings
 * with their length, numbers as their 64-bit patterns, the host and meta objects as canonical
 * JSON. Two documents hash alike exactly when they carry the same values, whatever their key
 * order, spacing or number spelling (4 and 4.0). It costs a tenth of re-serialising the whole
 * document as sorted JSON, whose number formatting dominated the upload's CPU time. */

static int put_u64(struct aw_buf *b, uint64_t v)
{
	unsigned char le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (unsigned char)(v >> (8 * i));
	return aw_buf_append(b, le, sizeof(le));
}

static int put_str(struct aw_buf *b, const char *s)
{
	int rc;

	if (!s)
		return put_u64(b, UINT64_MAX);
	rc = put_u64(b, strlen(s));
	return rc ? rc : aw_buf_append(b, s, strlen(s));
}

static int put_real(struct aw_buf *b, double x)
{
	uint64_t bits;

	if (isnan(x))
		return put_u64(b, UINT64_C(0x7ff8000000000001)); /* "absent" */
	memcpy(&bits, &x, sizeof(bits));
	return put_u64(b, bits);
}

static int put_json(struct aw_buf *b, const json_t *j)
{
	char *text;
	int rc;

	if (!j)
		return put_str(b, NULL);
	text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	if (!text)
		return -ENOMEM;
	rc = put_str(b, text);
	free(text);
	return rc;
}

static int encode_cell(struct aw_buf *b, const struct aw_cell *c)
{
	const double stats[] = {c->min,  c->p50,    c->p95,   c->p99,   c->max,
	                        c->mean, c->stddev, c->ci_lo, c->ci_hi, c->baseline_ns};
	int rc = 0;

	rc = put_str(b, c->key);
	rc = rc ? rc : put_str(b, c->op);
	rc = rc ? rc : put_str(b, c->reader);
	rc = rc ? rc : put_str(b, c->subject);
	rc = rc ? rc : put_str(b, c->kernel);
	rc = rc ? rc : put_str(b, c->placement);
	rc = rc ? rc : put_u64(b, (uint64_t)(int64_t)c->cpu);
	rc = rc ? rc : put_u64(b, (uint64_t)(int64_t)c->contender_cpu);
	rc = rc ? rc : put_u64(b, (uint64_t)c->c);
	rc = rc ? rc : put_u64(b, (uint64_t)c->d);
	rc = rc ? rc : put_u64(b, c->n);
	rc = rc ? rc : put_u64(b, c->batch);
	for (size_t i = 0; !rc && i < sizeof(stats) / sizeof(stats[0]); i++)
		rc = put_real(b, stats[i]);
	rc = rc ? rc : put_u64(b, c->below_resolution);
	rc = rc ? rc : put_u64(b, (uint64_t)c->status);
	rc = rc ? rc : put_str(b, c->reason);
	return rc;
}

int aw_ingest_content_hash(const struct aw_result *r, char *hex)
{
	struct aw_buf b;
	int rc;

	aw_buf_init(&b, (size_t)1 << 30);
	rc = put_str(&b, AW_RESULT_SCHEMA);
	rc = rc ? rc : put_str(&b, r->run_id);
	rc = rc ? rc : put_str(&b, r->project);
	rc = rc ? rc : put_str(&b, r->commit);
	rc = rc ? rc : put_str(&b, r->ref);
	rc = rc ? rc : put_str(&b, r->commit_time);
	rc = rc ? rc : put_u64(&b, (uint64_t)r->trigger);
	rc = rc ? rc : put_str(&b, r->started_at);
	rc = rc ? rc : put_str(&b, r->finished_at);
	rc = rc ? rc : put_json(&b, r->host);
	rc = rc ? rc : put_str(&b, r->matrix_name);
	rc = rc ? rc : put_u64(&b, (uint64_t)r->matrix_version);
	rc = rc ? rc : put_str(&b, r->matrix_hash);
	rc = rc ? rc : put_str(&b, r->matrix_profile);
	rc = rc ? rc : put_json(&b, r->meta);
	rc = rc ? rc : put_u64(&b, r->n_cells);
	for (size_t i = 0; !rc && i < r->n_cells; i++)
		rc = encode_cell(&b, &r->cells[i]);
	if (!rc)
		rc = aw_sha256_hex(b.data, b.len, hex);
	aw_buf_release(&b);
	return rc;
}

/* Whether an upload's Content-Type is JSON: "application/json" in any case, with parameters
 * (a charset) or none. No header at all is taken as JSON too: clients that send a body
 * without naming its type (Python's http.client, scripts) have always been accepted, and a
 * body that is not JSON still gets 400 (docs/api.md). */
static bool json_content_type(const char *ct)
{
	static const char want[] = "application/json";
	size_t n = sizeof(want) - 1;

	if (!ct)
		return true;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, want, n))
		return false;
	ct += n;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return !*ct || *ct == ';';
}

/* The result document of an upload's body. The fast path reads a valid one straight into the
 * model (jansson's tree was most of an upload's CPU time); on anything else it gives up, and the
 * slow path reads the text again, tells an A/B document, and words every error as it always
 * has. Returns the model (caller frees), or NULL when the request is answered: an error, or an
 * A/B document (judged and stored by aw_ab_post()). */
static struct aw_result *read_result(struct aw_ctx *x, const char *body, size_t len)
{
	struct aw_result *r = aw_result_parse_fast(body, len, &x->col->limits);
	struct aw_verr verr;
	json_error_t jerr;
	json_t *doc;

	if (r)
		return r;
	doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc) {
		aw_reply_error(x->req, 400, "json", "", "invalid JSON at line %d, column %d: %s",
		               jerr.line, jerr.column, jerr.text);
		return NULL;
	}
	if (aw_ab_is_ab(doc)) {
		aw_ab_post(x, doc); /* an interleaved A/B document: judged and stored here */
	} else {
		r = aw_result_from_json(doc, &x->col->limits, &verr);
		if (!r)
			aw_reply_error(x->req, strcmp(verr.code, "internal") ? 400 : 500, verr.code,
			               verr.field, "%s", verr.message);
	}
	json_decref(doc);
	return r;
}

void aw_ingest_post(struct aw_ctx *x)
{
	struct aw_httpd_req *req = x->req;
	struct upload *u = NULL;
	const char *body, *host;
	size_t len;
	int rc;

	if (!json_content_type(aw_httpd_header(req, "Content-Type"))) {
		aw_reply_error(req, 415, "unsupported_media_type", "Content-Type",
		               "an upload must be application/json, not '%.64s'",
		               aw_httpd_header(req, "Content-Type"));
		goto out;
	}
	body = aw_httpd_body(req, &len);
	if (!len) {
		aw_reply_error(req, 400, "required", "", "the request has no body");
		goto out;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		aw_reply_error(req, 500, "internal", "", "out of memory");
		goto out;
	}
	u->result = read_result(x, body, len);
	if (!u->result)
		goto out;
	if (!u->result->commit) {
		aw_reply_error(req, 400, "required", "commit",
		               "'commit' is required for an upload (the collector keeps history "
		               "by commit)");
		goto out;
	}
	host = aw_host_name(u->result->host);
	if (x->who.role == STORE_ROLE_AGENT && strcmp(host, x->who.host)) {
		aw_reply_error(req, 403, "forbidden", "host.name",
		               "this token uploads for host '%s', not '%s'", x->who.host, host);
		goto out;
	}
	rc = aw_ingest_content_hash(u->result, u->write.put.content_hash);
	if (!rc)
		rc = canonical_hash(u->result->host, u->write.put.host_hash, &u->host_json);
	if (rc) {
		aw_reply_error(req, 500, "internal", "", "cannot hash the document");
		goto out;
	}
	aw_httpd_body_release(req); /* the model holds everything now */

	u->req = req;
	u->postingest = x->col->postingest;
	u->write.put.result = u->result;
	u->write.put.host_json = u->host_json;
	aw_time_now(u->write.put.received_at);
	u->write.done = upload_done;
	u->write.cls = u;
	aw_httpd_set_data(req, u, upload_free);
	aw_httpd_suspend(req);
	rc = aw_writer_submit(x->col->writer, &u->write);
	if (rc) {
		aw_reply_error(req, 503, rc == -EBUSY ? "busy" : "shutting_down", "",
		               rc == -EBUSY ? "too many uploads are waiting; retry later"
		                            : "the collector is shutting down; retry later");
		aw_httpd_resume(req);
	}
	return;
out:
	upload_free(u);
}
