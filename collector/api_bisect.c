/* Bisections over HTTP (docs/api.md "Bisections"): GET /api/v1/bisects (filters project, host,
 * state, commit), GET /api/v1/bisects/{id}, the agent's progress (POST .../{id}/progress, the
 * runner host's token: its answer so far, and whether it was cancelled) and cancelling
 * (POST .../{id}/cancel, ci or admin). The collector queues them itself (bisect_queue.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/buf.h"
#include "aw/log.h"
#include "aw/util.h"
#include "internal.h"
#include "postingest.h"

#define LIST_DEFAULT 100
#define LIST_MAX     1000
#define COMMITS_MAX  (64 * 41) /* the commits measured kept with a bisection */
#define ANSWER_MAX   (256 * 1024)
#define TEXT_MAX     512

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *opt_int(int64_t v)
{
	return v == AW_NONE ? json_null() : json_integer(v);
}

json_t *aw_bisect_json(const struct store_bisect *b, bool answer)
{
	json_t *cells = b->cells ? json_loads(b->cells, 0, NULL) : NULL;
	json_t *o = json_pack(
	    "{s:I, s:s, s:s, s:s, s:o, s:s, s:s, s:s, s:s, s:o, s:s, s:s, s:o, "
	    "s:{s:I, s:o, s:{s:o, s:o, s:o}}, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:s, s:o}",
	    "id", (json_int_t)b->id, "project", b->project, "host", b->host, "runner", b->runner,
	    "subject", b->subject[0] ? json_string(b->subject) : json_null(), "platform_hash",
	    b->platform_hash, "ref", b->ref, "good", b->good, "bad", b->bad, "cells",
	    cells ? cells : json_array(), "reason", b->reason, "state", b->state, "job_id",
	    opt_int(b->job_id), "progress", "steps_done", (json_int_t)b->steps_done,
	    "expected_steps", opt_int(b->expected_steps), "range", "good",
	    aw_json_str(b->range_good), "bad", aw_json_str(b->range_bad), "commits",
	    opt_int(b->range_commits), "culprit", aw_json_str(b->culprit), "change", num(b->change),
	    "lo", num(b->change_lo), "hi", num(b->change_hi), "cell", aw_json_str(b->cell),
	    "outcome", aw_json_str(b->outcome), "message", aw_json_str(b->message), "created_at",
	    b->created_at, "updated_at", b->updated_at, "page",
	    b->culprit ? json_sprintf("/commits/%s", b->culprit) : json_null());
	json_t *doc = answer && b->answer ? json_loads(b->answer, 0, NULL) : NULL;

	if (o && doc && json_object_set_new(o, "answer", doc)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int on_bisect(const struct store_bisect *b, void *cls)
{
	json_t **out = cls;

	*out = aw_bisect_json(b, true);
	return *out ? 0 : -ENOMEM;
}

static int on_listed(const struct store_bisect *b, void *cls)
{
	return json_array_append_new(cls, aw_bisect_json(b, false)) ? -ENOMEM : 0;
}

static bool valid_state(const char *s)
{
	return !strcmp(s, "queued") || !strcmp(s, "running") || !strcmp(s, "done") ||
	       !strcmp(s, "failed") || !strcmp(s, "cancelled");
}

void aw_api_bisects(struct aw_ctx *x)
{
	struct store_bisect_filter f = {0};
	struct store_conn *c;
	json_t *items;
	int rc;

	if (aw_query_checked(x, "project", aw_valid_name, "a name", &f.project) ||
	    aw_query_checked(x, "host", aw_valid_name, "a host name", &f.host) ||
	    aw_query_checked(x, "state", valid_state, "queued, running, done, failed or cancelled",
	                     &f.state) ||
	    aw_query_checked(x, "commit", aw_valid_commit, "7 to 64 hex digits", &f.commit) ||
	    aw_query_limit(x, "limit", LIST_DEFAULT, LIST_MAX, &f.limit))
		return;
	items = json_array();
	rc = items ? aw_ctx_conn(x, &c) : -ENOMEM;
	if (!rc)
		rc = store_bisect_list(c, &f, on_listed, items);
	if (rc) {
		json_decref(items);
		aw_reply_store_error(x->req, rc);
		return;
	}
	aw_reply_json(x->req, 200, json_pack("{s:o}", "bisects", items));
}

/* Replies `status` with bisection `id` (404 when unknown). */
static void reply_bisect(struct aw_ctx *x, struct store_conn *c, int64_t id, unsigned status)
{
	json_t *o = NULL;
	int rc = store_bisect_get(c, id, on_bisect, &o);

	if (rc == -ENOENT)
		aw_reply_error(x->req, 404, "not_found", "id", "no bisection %lld", (long long)id);
	else if (rc)
		aw_reply_store_error(x->req, rc);
	else
		aw_reply_json(x->req, status, json_pack("{s:o}", "bisect", o));
	if (rc)
		json_decref(o);
}

void aw_api_bisect(struct aw_ctx *x)
{
	struct store_conn *c;
	int64_t id;
	int rc;

	if (aw_parse_id(x->param, &id)) {
		aw_reply_error(x->req, 400, "invalid", "id", "a bisection id is a positive number");
		return;
	}
	rc = aw_ctx_conn(x, &c);
	if (rc)
		aw_reply_store_error(x->req, rc);
	else
		reply_bisect(x, c, id, 200);
}

void aw_api_bisect_cancel(struct aw_ctx *x)
{
	struct store_conn *c;
	int64_t id;
	int rc;

	if (aw_parse_id(x->param, &id)) {
		aw_reply_error(x->req, 400, "invalid", "id", "a bisection id is a positive number");
		return;
	}
	rc = aw_ctx_conn(x, &c);
	if (!rc)
		rc = store_bisect_cancel(c, id);
	if (rc == -ENOENT) {
		aw_reply_error(x->req, 404, "not_found", "id", "no bisection %lld", (long long)id);
	} else if (rc == -EPERM) {
		aw_reply_error(x->req, 409, "conflict", "state",
		               "bisection %lld is finished already", (long long)id);
	} else if (rc) {
		aw_reply_store_error(x->req, rc);
	} else {
		aw_info("bisection %lld cancelled", (long long)id);
		reply_bisect(x, c, id, 200);
	}
}

/* A printable string of at most `max` bytes, or NULL with a 400. */
static int text_field(struct aw_ctx *x, const json_t *o, const char *key, size_t max,
                      bool (*valid)(const char *), const char **out)
{
	const json_t *v = json_object_get(o, key);
	const char *s;

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	s = json_string_value(v);
	if (!s || strlen(s) > max || (valid && !valid(s))) {
		aw_reply_error(x->req, 400, "invalid", key, "'%s' is not valid here", key);
		return -EINVAL;
	}
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 && *p != '\n') {
			aw_reply_error(x->req, 400, "invalid", key, "'%s' must be printable", key);
			return -EINVAL;
		}
	*out = s;
	return 0;
}

static int64_t int_field(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) && json_integer_value(v) >= 0 ? json_integer_value(v) : AW_NONE;
}

static double ratio_field(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : NAN;
}

/* The commits an answer measured (its ends and its steps'), space-separated, into b. */
static int measured_commits(const json_t *answer, struct aw_buf *b)
{
	const json_t *steps = json_object_get(answer, "steps"), *s;
	const char *ends[2] = {json_string_value(json_object_get(answer, "good")),
	                       json_string_value(json_object_get(answer, "bad"))};
	size_t i;
	int rc = 0;

	for (int e = 0; e < 2 && !rc; e++)
		if (ends[e] && aw_valid_commit(ends[e]))
			rc = aw_buf_printf(b, "%s%s", b->len ? " " : "", ends[e]);
	json_array_foreach (steps, i, s) {
		const char *commit = json_string_value(json_object_get(s, "commit"));
		const char *verdict = json_string_value(json_object_get(s, "verdict"));

		if (rc || !commit || !aw_valid_commit(commit) || !verdict ||
		    !strcmp(verdict, "skipped"))
			continue;
		rc = aw_buf_printf(b, " %s", commit);
	}
	return rc == -E2BIG ? 0 : rc; /* the first ones are kept */
}

/* Where a finished bisection's culprit is drawn: the trend charts of its finding's host and of
 * its runner on its ref. */
struct trend_hosts {
	char project[AW_NAME_MAX + 1], ref[256], host[2][AW_NAME_MAX + 1];
};

static int on_trend_hosts(const struct store_bisect *b, void *cls)
{
	struct trend_hosts *t = cls;

	snprintf(t->project, sizeof(t->project), "%s", b->project);
	snprintf(t->ref, sizeof(t->ref), "%s", b->ref);
	snprintf(t->host[0], sizeof(t->host[0]), "%s", b->host);
	snprintf(t->host[1], sizeof(t->host[1]), "%s", strcmp(b->runner, b->host) ? b->runner : "");
	return 0;
}

/* Queues the redraw of those trend charts: the last runs the bisection uploaded may have been
 * drawn before it was done, and no other run may come to redraw them. A failure is logged: the
 * answer is stored, the marks wait for the next run. */
static void redraw_trends(struct aw_ctx *x, struct store_conn *c, int64_t id)
{
	struct trend_hosts t = {.project = ""};
	int rc = store_bisect_get(c, id, on_trend_hosts, &t);

	for (int i = 0; !rc && i < 2; i++)
		if (t.host[i][0])
			rc = store_task_enqueue(c, "trends", t.project, NULL, t.host[i], t.ref);
	if (rc)
		aw_warn("bisection %lld: cannot queue its hosts' trend charts: %s", (long long)id,
		        strerror(-rc));
	else if (x->col->postingest)
		aw_postingest_kick(x->col->postingest);
}

void aw_api_bisect_progress(struct aw_ctx *x)
{
	struct store_bisect_update u = {.steps_done = AW_NONE,
	                                .expected_steps = AW_NONE,
	                                .range_commits = AW_NONE,
	                                .change = NAN,
	                                .change_lo = NAN,
	                                .change_hi = NAN};
	const char *body, *runner;
	const json_t *answer, *range;
	json_error_t jerr;
	struct store_conn *c;
	struct aw_buf commits;
	json_t *doc = NULL;
	char *answer_text = NULL;
	size_t len;
	int64_t id;
	int rc;

	aw_buf_init(&commits, COMMITS_MAX);
	if (aw_parse_id(x->param, &id)) {
		aw_reply_error(x->req, 400, "invalid", "id", "a bisection id is a positive number");
		goto out;
	}
	body = aw_httpd_body(x->req, &len);
	doc = len ? json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
	if (!json_is_object(doc)) {
		aw_reply_error(x->req, 400, doc ? "type" : "json", "",
		               "the body must be a JSON object {\"state\", \"answer\"}");
		goto out;
	}
	if (text_field(x, doc, "state", 16, valid_state, &u.state) ||
	    text_field(x, doc, "message", TEXT_MAX, NULL, &u.message))
		goto out;
	if (!u.state ||
	    (strcmp(u.state, "running") && strcmp(u.state, "done") && strcmp(u.state, "failed"))) {
		aw_reply_error(x->req, 400, "invalid", "state",
		               "'state' must be running, done or "
		               "failed");
		goto out;
	}
	answer = json_object_get(doc, "answer");
	if (answer && !json_is_object(answer)) {
		aw_reply_error(x->req, 400, "type", "answer", "'answer' must be an object");
		goto out;
	}
	if (answer) {
		range = json_object_get(answer, "range");
		if (text_field(x, answer, "culprit", 64, aw_valid_commit, &u.culprit) ||
		    text_field(x, range, "good", 64, aw_valid_commit, &u.range_good) ||
		    text_field(x, range, "bad", 64, aw_valid_commit, &u.range_bad) ||
		    text_field(x, answer, "cell", TEXT_MAX, NULL, &u.cell) ||
		    text_field(x, answer, "outcome", 32, NULL, &u.outcome) ||
		    (!u.message && text_field(x, answer, "message", TEXT_MAX, NULL, &u.message)))
			goto out;
		u.steps_done = int_field(answer, "steps_done");
		u.expected_steps = int_field(answer, "expected_steps");
		u.range_commits = int_field(range, "commits");
		u.change = ratio_field(answer, "change");
		u.change_lo = ratio_field(answer, "lo");
		u.change_hi = ratio_field(answer, "hi");
		answer_text = json_dumps(answer, JSON_COMPACT);
		if (!answer_text || strlen(answer_text) > ANSWER_MAX) {
			aw_reply_error(x->req, 413, "too_large", "answer",
			               "the answer is larger than %d bytes", ANSWER_MAX);
			goto out;
		}
		u.answer = answer_text;
		if (measured_commits(answer, &commits)) {
			aw_reply_error(x->req, 500, "internal", "", "out of memory");
			goto out;
		}
		u.commits = commits.len ? commits.data : NULL;
	}
	runner = x->who.role == STORE_ROLE_AGENT ? x->who.host : NULL;
	rc = aw_ctx_conn(x, &c);
	if (!rc)
		rc = store_bisect_update(c, id, runner, &u);
	if (!rc && !strcmp(u.state, "done"))
		redraw_trends(x, c, id);
	if (rc == -ENOENT)
		aw_reply_error(x->req, 404, "not_found", "id", "no bisection %lld of this host",
		               (long long)id);
	else if (rc == -ECANCELED)
		aw_reply_error(x->req, 409, "cancelled", "state",
		               "bisection %lld was cancelled: stop, upload nothing more",
		               (long long)id);
	else if (rc == -EPERM)
		aw_reply_error(x->req, 409, "conflict", "state",
		               "bisection %lld is finished already", (long long)id);
	else if (rc)
		aw_reply_store_error(x->req, rc);
	else
		reply_bisect(x, c, id, 200);
out:
	aw_buf_release(&commits);
	free(answer_text);
	json_decref(doc);
}
