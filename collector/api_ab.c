/* Interleaved A/B documents over the API: the upload (a document of schema atomwatch.ab/N sent
 * where runs go), judged and stored in the request, and the two read endpoints
 * GET /api/v1/ab/{id} and GET /api/v1/ab?project=&head=&host=&limit=. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ab_judge.h"
#include "aw/ab.h"
#include "aw/sha256.h"
#include "aw/log.h"
#include "aw/verdict.h"
#include "internal.h"
#include "postingest.h"

#define AB_LIST_DEFAULT 100
#define AB_LIST_MAX     1000

static json_t *parsed(const char *text)
{
	json_t *j = text ? json_loads(text, 0, NULL) : NULL;

	return j ? j : json_null();
}

/* The API's view of a stored document: its columns, the judgment, and (when `full`) the
 * document. */
static json_t *ab_json(const struct store_ab *ab, bool full)
{
	json_t *o = json_pack(
	    "{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:b, s:s, s:s, s:o, s:s}", "ab_id", ab->ab_id,
	    "project", ab->project, "host", ab->host, "subject", ab->subject, "base", ab->base,
	    "head", ab->head, "ref", aw_json_str(ab->ref), "aa", ab->aa, "verdict", ab->verdict,
	    "received_at", ab->received_at, "judgment", parsed(ab->judgment), "page", "");

	if (o) {
		char *page = aw_asprintf("/ab/%s", ab->ab_id);

		if (!page || json_object_set_new(o, "page", json_string(page))) {
			json_decref(o);
			o = NULL;
		}
		free(page);
	}
	if (o && full && json_object_set_new(o, "document", parsed(ab->doc))) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

void aw_ab_post(struct aw_ctx *x, json_t *doc)
{
	struct aw_ab_opts opts = AW_AB_OPTS_DEFAULT;
	struct store_ab ab = {0};
	struct aw_verr verr;
	struct store_conn *c;
	json_t *judgment = NULL;
	char *text = NULL, *jtext = NULL, now[AW_TIME_LEN];
	int rc;

	if (aw_ab_validate(doc, &x->col->limits, &verr)) {
		aw_reply_error(x->req, 400, verr.code, verr.field, "%s", verr.message);
		return;
	}
	ab.host = aw_host_name(json_object_get(doc, "host"));
	if (x->who.role == STORE_ROLE_AGENT && strcmp(ab.host, x->who.host)) {
		aw_reply_error(x->req, 403, "forbidden", "host.name",
		               "this token uploads for host '%s', not '%s'", x->who.host, ab.host);
		return;
	}
	opts.threshold = x->col->cfg->ab_threshold;
	judgment = aw_ab_judge(doc, &opts);
	text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
	jtext = judgment ? json_dumps(judgment, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
	if (!text || !jtext || aw_sha256_hex(text, strlen(text), ab.content_hash)) {
		aw_reply_error(x->req, 500, "internal", "", "out of memory");
		goto out;
	}
	aw_time_now(now);
	ab.ab_id = json_string_value(json_object_get(doc, "ab_id"));
	ab.project = json_string_value(json_object_get(doc, "project"));
	ab.subject = json_string_value(json_object_get(doc, "subject"));
	ab.base = json_string_value(json_object_get(json_object_get(doc, "base"), "commit"));
	ab.head = json_string_value(json_object_get(json_object_get(doc, "head"), "commit"));
	ab.ref = json_string_value(json_object_get(doc, "ref"));
	ab.aa = json_is_true(json_object_get(doc, "aa"));
	ab.verdict = json_string_value(json_object_get(judgment, "verdict"));
	ab.received_at = now;
	ab.judgment = jtext;
	ab.doc = text;
	rc = aw_ctx_conn(x, &c);
	for (int attempt = 0; !rc && attempt < 5; attempt++) {
		rc = store_ab_put(c, &ab);
		if (rc != -EAGAIN)
			break;
	}
	if (rc) {
		aw_reply_store_error(x->req, rc);
		goto out;
	}
	/* the chart follows off the request path, by any collector's post-ingest workers */
	if (ab.outcome == STORE_CREATED) {
		if (store_task_enqueue(c, "ab", ab.project, ab.head, ab.host, ab.ab_id))
			aw_warn("A/B document %s: cannot queue its chart", ab.ab_id);
		else if (x->col->postingest)
			aw_postingest_kick(x->col->postingest);
	}
	if (ab.outcome == STORE_CONFLICT) {
		aw_reply_error(x->req, 409, "conflict", "ab_id",
		               "A/B document '%s' is already stored with different content",
		               ab.ab_id);
		goto out;
	}
	aw_reply_json(x->req, ab.outcome == STORE_CREATED ? 201 : 200,
	              json_pack("{s:s, s:s, s:s, s:I}", "ab_id", ab.ab_id, "status",
	                        ab.outcome == STORE_CREATED ? "created" : "duplicate", "verdict",
	                        ab.verdict, "seq", (json_int_t)ab.seq));
out:
	free(text);
	free(jtext);
	json_decref(judgment);
}

static int got_one(const struct store_ab *ab, void *cls)
{
	*(json_t **)cls = ab_json(ab, true);
	return *(json_t **)cls ? 0 : -ENOMEM;
}

void aw_api_ab(struct aw_ctx *x)
{
	struct store_conn *c;
	json_t *o = NULL;
	int rc;

	if (!aw_valid_uuid(x->param)) {
		aw_reply_error(x->req, 400, "invalid", "ab_id",
		               "an A/B id is a lowercase UUID, got '%.40s'", x->param);
		return;
	}
	rc = aw_ctx_conn(x, &c);
	if (!rc)
		rc = store_ab_get(c, x->param, got_one, &o);
	if (rc == -ENOENT) {
		aw_reply_error(x->req, 404, "not_found", "ab_id", "no A/B document '%s'", x->param);
		return;
	}
	if (rc) {
		json_decref(o);
		aw_reply_store_error(x->req, rc);
		return;
	}
	aw_reply_json(x->req, 200, o);
}

static int listed(const struct store_ab *ab, void *cls)
{
	return json_array_append_new(cls, ab_json(ab, false)) ? -ENOMEM : 0;
}

void aw_api_ab_list(struct aw_ctx *x)
{
	const char *project, *head, *host;
	struct store_conn *c;
	unsigned limit;
	json_t *items;
	int rc;

	if (aw_query_checked(x, "project", aw_valid_name, "a name", &project) ||
	    aw_query_checked(x, "head", aw_valid_commit, "7 to 64 hex digits", &head) ||
	    aw_query_checked(x, "host", aw_valid_name, "a host name", &host) ||
	    aw_query_limit(x, "limit", AB_LIST_DEFAULT, AB_LIST_MAX, &limit))
		return;
	items = json_array();
	rc = items ? aw_ctx_conn(x, &c) : -ENOMEM;
	if (!rc)
		rc = store_ab_list(c, project, head, host, limit, listed, items);
	if (rc) {
		json_decref(items);
		aw_reply_store_error(x->req, rc);
		return;
	}
	aw_reply_json(x->req, 200, json_pack("{s:o}", "items", items));
}

struct newest {
	json_t *found; /* the newest A/B (not A/A) document's summary */
};

static int newest_ab(const struct store_ab *ab, void *cls)
{
	struct newest *n = cls;

	if (ab->aa || n->found)
		return 0;
	n->found = ab_json(ab, false);
	return n->found ? 0 : -ENOMEM;
}

int aw_ab_gate_evidence(struct aw_ctx *x, const char *project, const char *commit, json_t *reply)
{
	struct newest n = {NULL};
	struct store_conn *c;
	const char *history = json_string_value(json_object_get(reply, "status"));
	enum aw_ab_verdict verdict;
	const char *want = aw_httpd_query(x->req, "evidence");
	bool decides, history_only = want && !strcmp(want, "history");
	json_t *ev;
	int rc = aw_ctx_conn(x, &c);

	if (!rc)
		rc = store_ab_list(c, project, commit, NULL, 20, newest_ab, &n);
	if (rc)
		return rc;
	if (!n.found)
		return json_object_set_new(reply, "evidence",
		                           json_pack("{s:s}", "decided_by", "history"))
		           ? -ENOMEM
		           : 0;
	verdict = aw_ab_verdict_parse(json_string_value(json_object_get(n.found, "verdict")));
	decides = !history_only && aw_ab_verdict_decides(verdict);
	ev = json_pack("{s:s, s:s?, s:O, s:O, s:O, s:O}", "decided_by", decides ? "ab" : "history",
	               "history_status", history, "ab_id", json_object_get(n.found, "ab_id"),
	               "verdict", json_object_get(n.found, "verdict"), "base",
	               json_object_get(n.found, "base"), "page", json_object_get(n.found, "page"));
	json_decref(n.found);
	if (!ev || json_object_set_new(reply, "evidence", ev))
		return -ENOMEM;
	if (decides &&
	    json_object_set_new(
	        reply, "status",
	        json_string(aw_verdict_name(verdict == AW_AB_VERDICT_REGRESSED ? AW_VERDICT_FAIL
	                                                                       : AW_VERDICT_PASS))))
		return -ENOMEM;
	return 0;
}
