/* The read side of the HTTP API: hosts, runs, one run as its full document, trend series,
 * /healthz and /metrics. Every query parameter is validated before the database sees it. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/buf.h"
#include "aw/log.h"
#include "internal.h"
#include "json_write.h"
#include "metrics.h"
#include "postingest.h"
#include "reports.h"
#include "writer.h"

#define LIST_DEFAULT    100
#define LIST_MAX        1000
#define SERIES_DEFAULT  500
#define SERIES_MAX      10000
#define SERIES_TEXT_MAX ((size_t)64 << 20) /* 10,000 points are about 2.7 MB */

/* A JSON object parsed from stored canonical text; null when there is none. */
static json_t *stored_json(const char *text)
{
	json_t *j = text ? json_loads(text, 0, NULL) : NULL;

	return j ? j : json_null();
}

static void time_us(int64_t us, char *out)
{
	struct timespec ts = {.tv_sec = (time_t)(us / 1000000),
	                      .tv_nsec = (long)(us % 1000000) * 1000};

	aw_time_format(&ts, out);
}

/* ---- hosts ---- */

static json_t *host_json(const struct store_host *h)
{
	json_t *fp = stored_json(h->fingerprint);
	json_t *labels = json_object_get(fp, "labels");
	json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:s, s:s, s:I, s:o}", "name", h->name, "arch",
	                      h->arch, "cpu_model", h->cpu_model, "platform_hash",
	                      aw_json_str(h->platform_hash), "first_seen", h->first_seen,
	                      "last_seen", h->last_seen, "runs", (json_int_t)h->runs, "labels",
	                      json_is_object(labels) ? json_incref(labels) : json_object());

	if (o && json_object_set_new(o, "fingerprint", fp)) {
		json_decref(o);
		return NULL;
	}
	if (!o)
		json_decref(fp);
	return o;
}

static int on_host(const struct store_host *h, void *cls)
{
	json_t *o = host_json(h);

	return o && !json_array_append_new(cls, o) ? 0 : -ENOMEM;
}

void aw_api_hosts(struct aw_ctx *x)
{
	struct store_conn *c;
	json_t *hosts = json_array();
	int rc;

	rc = hosts ? aw_ctx_conn(x, &c) : -ENOMEM;
	if (!rc)
		rc = store_list_hosts(c, on_host, hosts);
	if (rc) {
		json_decref(hosts);
		aw_reply_store_error(x->req, rc);
		return;
	}
	aw_reply_json(x->req, 200, json_pack("{s:o}", "hosts", hosts));
}

struct host_detail {
	json_t *host;
	json_t *fingerprints;
};

static int on_one_host(const struct store_host *h, void *cls)
{
	struct host_detail *d = cls;

	d->host = host_json(h);
	return d->host ? 0 : -ENOMEM;
}

static int on_fingerprint(const struct store_fingerprint *f, void *cls)
{
	struct host_detail *d = cls;
	json_t *o = json_pack("{s:s, s:o, s:s, s:s, s:o}", "hash", f->hash, "platform_hash",
	                      aw_json_str(f->platform_hash), "first_seen", f->first_seen,
	                      "last_seen", f->last_seen, "fingerprint", stored_json(f->doc));

	return o && !json_array_append_new(d->fingerprints, o) ? 0 : -ENOMEM;
}

void aw_api_host(struct aw_ctx *x)
{
	struct host_detail d = {NULL, json_array()};
	struct store_conn *c;
	int rc;

	if (!aw_valid_name(x->param)) {
		aw_reply_error(x->req, 400, "invalid", "name",
		               "host names are 1 to 64 characters from [A-Za-z0-9._-]");
		goto out;
	}
	rc = d.fingerprints ? aw_ctx_conn(x, &c) : -ENOMEM;
	if (!rc)
		rc = store_get_host(c, x->param, on_one_host, on_fingerprint, &d);
	if (rc == -ENOENT) {
		aw_reply_error(x->req, 404, "not_found", "name", "no host '%s'", x->param);
		goto out;
	}
	if (rc) {
		aw_reply_store_error(x->req, rc);
		goto out;
	}
	aw_reply_json(x->req, 200,
	              json_pack("{s:o, s:o}", "host", d.host, "fingerprints", d.fingerprints));
	return;
out:
	json_decref(d.host);
	json_decref(d.fingerprints);
}

/* ---- runs ---- */

struct run_list {
	json_t *runs;
	int64_t last_seq;
	unsigned n;
};

static int on_run(const struct store_run *r, void *cls)
{
	struct run_list *l = cls;
	char order[AW_TIME_LEN];
	json_t *matrix, *o;

	time_us(r->order_us, order);
	matrix = json_pack("{s:s, s:I, s:s, s:o}", "name", r->matrix_name, "version",
	                   (json_int_t)r->matrix_version, "hash", r->matrix_hash, "profile",
	                   aw_json_str(r->matrix_profile));
	o = json_pack("{s:s, s:I, s:s, s:s, s:o, s:s, s:o, s:s, s:s, s:s, s:s, s:s, s:o, s:I, "
	              "s:o}",
	              "run_id", r->run_id, "seq", (json_int_t)r->seq, "project", r->project, "host",
	              r->host, "commit", aw_json_str(r->commit), "ref", r->ref, "commit_time",
	              aw_json_str(r->commit_time), "order_time", order, "trigger", r->trigger,
	              "started_at", r->started_at, "finished_at", r->finished_at, "received_at",
	              r->received_at, "platform_hash", aw_json_str(r->platform_hash), "cells",
	              (json_int_t)r->n_cells, "matrix", matrix);
	if (o && r->confirmation_of &&
	    json_object_set_new(o, "confirmation_of", json_string(r->confirmation_of)))
		return -ENOMEM;
	if (!o || json_array_append_new(l->runs, o))
		return -ENOMEM;
	l->last_seq = r->seq;
	l->n++;
	return 0;
}

void aw_api_runs(struct aw_ctx *x)
{
	struct store_run_filter f = {0};
	struct run_list l = {json_array(), 0, 0};
	const char *cursor = aw_httpd_query(x->req, "cursor");
	struct store_conn *c;
	char next[24];
	int rc;

	if (aw_query_checked(x, "project", aw_valid_name, "a name", &f.project) ||
	    aw_query_checked(x, "host", aw_valid_name, "a host name", &f.host) ||
	    aw_query_checked(x, "commit", aw_valid_commit, "7 to 64 hex digits", &f.commit) ||
	    aw_query_checked(x, "ref", aw_valid_ref, "a git ref name", &f.ref) ||
	    aw_query_limit(x, "limit", LIST_DEFAULT, LIST_MAX, &f.limit))
		goto out;
	if (cursor && aw_parse_id(cursor, &f.before_seq)) {
		aw_reply_error(x->req, 400, "invalid", "cursor",
		               "'cursor' must be a next_cursor from an earlier page");
		goto out;
	}
	rc = l.runs ? aw_ctx_conn(x, &c) : -ENOMEM;
	if (!rc)
		rc = store_list_runs(c, &f, on_run, &l);
	if (rc) {
		aw_reply_store_error(x->req, rc);
		goto out;
	}
	snprintf(next, sizeof(next), "%lld", (long long)l.last_seq);
	aw_reply_json(x->req, 200,
	              json_pack("{s:o, s:o}", "runs", l.runs, "next_cursor",
	                        l.n == f.limit ? json_string(next) : json_null()));
	return;
out:
	json_decref(l.runs);
}

void aw_api_run(struct aw_ctx *x)
{
	struct aw_result *r = NULL;
	struct store_conn *c;
	int rc;

	if (!aw_valid_uuid(x->param)) {
		aw_reply_error(x->req, 400, "invalid", "run_id",
		               "a run id is a lowercase UUID, got '%.40s'", x->param);
		return;
	}
	rc = aw_ctx_conn(x, &c);
	if (!rc)
		rc = store_get_run(c, x->param, &r);
	if (rc == -ENOENT) {
		aw_reply_error(x->req, 404, "not_found", "run_id", "no run '%s'", x->param);
		return;
	}
	if (rc) {
		aw_reply_store_error(x->req, rc);
		return;
	}
	aw_reply_json(x->req, 200, aw_result_to_json(r));
	aw_result_free(&r);
}

/* The keys of the fail-level suspect cells of a verdict (what a confirmation re-measures). */
static json_t *suspect_keys(const struct aw_host_verdict *v)
{
	json_t *keys = json_array();

	for (size_t i = 0; keys && i < v->n_cells; i++) {
		const struct aw_cell_verdict *c = &v->cells[i];

		if (c->verdict != AW_VERDICT_SUSPECT || c->gate != AW_GATE_FAIL)
			continue;
		if (json_array_append_new(keys, json_string(c->key))) {
			json_decref(keys);
			return NULL;
		}
	}
	return keys;
}

/* The keys of the run's first AW_ANCHORS anchor cells (what a confirmation re-measures beside
 * the suspects, so that it carries the run's memory state), or NULL on allocation failure. */
static json_t *anchor_keys(const struct aw_result *r)
{
	const char *keys[AW_ANCHORS];
	size_t n = aw_result_anchors(r, keys, AW_ANCHORS);
	json_t *list = json_array();

	for (size_t i = 0; list && i < n; i++)
		if (json_array_append_new(list, json_string(keys[i]))) {
			json_decref(list);
			return NULL;
		}
	return list;
}

/* GET /api/v1/runs/{id}/suspects: the verdict of the run's commit on the run's host, computed
 * now, the suspect cells that a confirmation should re-measure and the run's anchor cells to
 * re-measure beside them. An agent token asks only for runs of its own host. */
void aw_api_run_suspects(struct aw_ctx *x)
{
	struct aw_host_verdict v = {0};
	struct aw_result *r = NULL;
	struct store_conn *c;
	const char *host;
	json_t *keys, *anchors;
	char *err = NULL;
	int rc;

	if (!aw_valid_uuid(x->param)) {
		aw_reply_error(x->req, 400, "invalid", "run_id",
		               "a run id is a lowercase UUID, got '%.40s'", x->param);
		return;
	}
	rc = aw_ctx_conn(x, &c);
	if (!rc)
		rc = store_get_run(c, x->param, &r);
	if (rc == -ENOENT) {
		aw_reply_error(x->req, 404, "not_found", "run_id", "no run '%s'", x->param);
		return;
	}
	if (rc) {
		aw_reply_store_error(x->req, rc);
		return;
	}
	host = aw_host_name(r->host);
	if (x->who.role == STORE_ROLE_AGENT && (!host || strcmp(host, x->who.host))) {
		aw_reply_error(x->req, 403, "forbidden", "run_id",
		               "this token speaks for host '%s', not for the host of run '%s'",
		               x->who.host, x->param);
		goto out;
	}
	if (!r->commit) {
		aw_reply_error(x->req, 409, "no_commit", "run_id",
		               "run '%s' is not tied to a commit: there is nothing to confirm",
		               x->param);
		goto out;
	}
	rc = aw_analysis_host(c, &x->col->analysis, r->project, r->commit, NULL, host, &v, &err);
	if (rc) {
		if (err)
			aw_warn("%s", err);
		free(err);
		aw_reply_store_error(x->req, rc);
		goto out;
	}
	keys = suspect_keys(&v);
	anchors = anchor_keys(r);
	if (!keys || !anchors) {
		json_decref(keys);
		json_decref(anchors);
		keys = anchors = NULL;
	}
	aw_reply_json(x->req, 200,
	              !keys
	                  ? NULL
	                  : json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:o, s:o}",
	                              "run_id", r->run_id, "project", r->project, "commit",
	                              r->commit, "host", host, "status", aw_verdict_name(v.status),
	                              "head_runs", (json_int_t)v.n_head_runs, "confirm_runs",
	                              (json_int_t)x->col->analysis.confirm_runs, "confirm_budget",
	                              (json_int_t)x->col->analysis.confirm_budget, "suspects", keys,
	                              "anchors", anchors));
	aw_host_verdict_release(&v);
out:
	aw_result_free(&r);
}

/* ---- series ---- */

/* A series reply is written straight as text (json_write.h): a jansson tree of 500 points cost
 * as much as reading them from the store. What it writes, and how it fails, is what the
 * json_pack() and json_dumps() before it gave: a field that json_pack() refused (a NULL or
 * invalid UTF-8 string, a non-finite "f" number) fails the read (-ENOMEM, as the tree's
 * allocation did). */
struct series_text {
	struct aw_buf b;
	bool first; /* no point written yet */
};

/* `"key":` then `s` as a string that must be one (json_pack's "s"). */
static int put_field_str(struct aw_buf *b, const char *key, const char *s)
{
	int rc = aw_buf_puts(b, key);

	if (!rc && !s)
		rc = -EINVAL;
	return rc ? rc : aw_json_put_str(b, s);
}

/* `"key":` then a finite number. */
static int put_field_real(struct aw_buf *b, const char *key, double v)
{
	int rc = aw_buf_puts(b, key);

	return rc ? rc : aw_json_put_real(b, v);
}

static int on_point(const struct store_point *p, void *cls)
{
	struct series_text *t = cls;
	struct aw_buf *b = &t->b;
	char order[AW_TIME_LEN];
	int rc;

	time_us(p->order_us, order);
	rc = aw_buf_puts(b, t->first ? "{" : ",{");
	t->first = false;
	rc = rc ? rc : put_field_str(b, "\"run_id\":", p->run_id);
	rc = rc ? rc : aw_buf_puts(b, ",\"seq\":");
	rc = rc ? rc : aw_json_put_int(b, p->seq);
	rc = rc ? rc : aw_buf_puts(b, ",\"commit\":");
	rc = rc ? rc : aw_json_put_str(b, p->commit);
	rc = rc ? rc : put_field_str(b, ",\"order_time\":", order);
	rc = rc ? rc : put_field_str(b, ",\"started_at\":", p->started_at);
	rc = rc ? rc : put_field_str(b, ",\"matrix_hash\":", p->matrix_hash);
	rc = rc ? rc : put_field_str(b, ",\"status\":", p->status);
	if (!rc && isfinite(p->value))
		rc = put_field_real(b, ",\"value\":", p->value);
	else if (!rc)
		rc = aw_buf_puts(b, ",\"value\":null");
	rc = rc ? rc : aw_buf_puts(b, "}");
	return rc ? -ENOMEM : 0;
}

static int on_period(const struct store_aggregate *a, void *cls)
{
	struct series_text *t = cls;
	struct aw_buf *b = &t->b;
	char start[AW_TIME_LEN];
	int rc;

	if (!isfinite(a->min) || !isfinite(a->median) || !isfinite(a->max))
		return -ENOMEM; /* json_pack's "f" refused it */
	time_us(a->start_us, start);
	rc = aw_buf_puts(b, t->first ? "{" : ",{");
	t->first = false;
	rc = rc ? rc : put_field_str(b, "\"start\":", start);
	rc = rc ? rc : aw_buf_puts(b, ",\"count\":");
	rc = rc ? rc : aw_json_put_int(b, a->count);
	rc = rc ? rc : aw_buf_puts(b, ",\"thinned\":");
	rc = rc ? rc : aw_json_put_int(b, a->stored);
	rc = rc ? rc : put_field_real(b, ",\"min\":", a->min);
	rc = rc ? rc : put_field_real(b, ",\"median\":", a->median);
	rc = rc ? rc : put_field_real(b, ",\"max\":", a->max);
	rc = rc ? rc : aw_buf_puts(b, "}");
	return rc ? -ENOMEM : 0;
}

/* The reply's fields before its points, up to the points' '['. */
static int series_head(struct aw_buf *b, const struct store_series_query *q)
{
	int rc = put_field_str(b, "{\"host\":", q->host);

	rc = rc ? rc : put_field_str(b, ",\"cell\":", q->cell_key);
	rc = rc ? rc : put_field_str(b, ",\"metric\":", store_metric_name(q->metric));
	rc = rc ? rc : put_field_str(b, ",\"ref\":", q->ref);
	rc = rc ? rc : aw_buf_puts(b, ",\"project\":");
	rc = rc ? rc : aw_json_put_str(b, q->project);
	return rc ? rc : aw_buf_puts(b, ",\"points\":[");
}

void aw_api_series(struct aw_ctx *x)
{
	struct store_series_query q = {0};
	const char *metric = aw_httpd_query(x->req, "metric");
	const char *downsample = aw_httpd_query(x->req, "downsample");
	enum store_period period = STORE_PERIOD_DAY;
	struct series_text t = {.first = true};
	struct store_conn *c;
	int rc, head_rc;

	aw_buf_init(&t.b, SERIES_TEXT_MAX);
	if (aw_query_checked(x, "host", aw_valid_name, "a host name", &q.host) ||
	    aw_query_checked(x, "ref", aw_valid_ref, "a git ref name", &q.ref) ||
	    aw_query_checked(x, "project", aw_valid_name, "a name", &q.project) ||
	    aw_query_limit(x, "limit", SERIES_DEFAULT, SERIES_MAX, &q.limit))
		goto out;
	q.cell_key = aw_httpd_query(x->req, "cell");
	if (!q.host) {
		aw_reply_error(x->req, 400, "required", "host", "'host' is required");
		goto out;
	}
	if (!q.cell_key || !*q.cell_key || strlen(q.cell_key) > 512) {
		aw_reply_error(x->req, 400, q.cell_key ? "invalid" : "required", "cell",
		               "'cell' must be a cell key such as 'op=ldadd cpu=0'");
		goto out;
	}
	if (!q.ref)
		q.ref = "main";
	q.metric = STORE_METRIC_P50;
	if (metric && store_metric_parse(metric, &q.metric)) {
		aw_reply_error(x->req, 400, "invalid", "metric",
		               "'metric' must be one of min, p50, p95, p99, max, mean, stddev, "
		               "ci_lo, ci_hi, baseline_ns");
		goto out;
	}
	if (downsample && strcmp(downsample, "day") && strcmp(downsample, "week")) {
		aw_reply_error(x->req, 400, "invalid", "downsample",
		               "'downsample' must be day or week, not '%.32s'", downsample);
		goto out;
	}
	if (downsample && q.metric != STORE_METRIC_P50) {
		aw_reply_error(
		    x->req, 400, "invalid", "metric",
		    "a series per day or week is of the p50 only (what retention keeps)");
		goto out;
	}
	if (downsample && !strcmp(downsample, "week"))
		period = STORE_PERIOD_WEEK;
	/* a field the head cannot hold (a cell key of invalid UTF-8) fails the reply, not the
	 * read: the read's own failure is the answer when both fail, as before */
	head_rc = series_head(&t.b, &q);
	rc = aw_ctx_conn(x, &c);
	if (!rc)
		rc = downsample ? store_series_periods(c, &q, period, on_period, &t)
		                : store_series(c, &q, on_point, &t);
	if (rc) {
		aw_reply_store_error(x->req, rc);
		goto out;
	}
	rc = head_rc ? head_rc : aw_buf_puts(&t.b, "]");
	if (!rc && downsample)
		rc = put_field_str(&t.b, ",\"downsample\":", downsample);
	rc = rc ? rc : aw_buf_puts(&t.b, "}");
	aw_reply_json_text(x->req, 200, &t.b, rc);
out:
	aw_buf_release(&t.b);
}

/* ---- service ---- */

void aw_api_healthz(struct aw_ctx *x)
{
	struct store_conn *c;
	int rc = aw_ctx_conn(x, &c);

	if (!rc)
		rc = store_ping(c);
	if (rc) {
		aw_reply_error(x->req, 503, "database", "", "the database does not answer");
		return;
	}
	/* Degraded, not down: reads are still served, so a load balancer keeps it; the reason is
	 * for whoever looks. */
	if (store_disk_full_now()) {
		aw_reply_json(
		    x->req, 200,
		    json_pack("{s:s, s:s, s:s, s:i}", "status", "degraded", "reason",
		              "disk full: the last upload could not be stored", "database",
		              store_kind(x->col->store) == STORE_SQLITE ? "sqlite" : "postgres",
		              "schema", store_schema_version()));
		return;
	}
	aw_reply_json(x->req, 200,
	              json_pack("{s:s, s:s, s:i}", "status", "ok", "database",
	                        store_kind(x->col->store) == STORE_SQLITE ? "sqlite" : "postgres",
	                        "schema", store_schema_version()));
}

void aw_api_metrics(struct aw_ctx *x)
{
	struct aw_metrics_gauges g = {
	    .in_flight = aw_httpd_in_flight(x->col->http),
	    .waiters = aw_jobs_waiting(x->col->jobs),
	    .queue_depth = aw_writer_depth(x->col->writer),
	};
	struct store_conn *c = NULL;
	struct aw_buf out;

	if (aw_ctx_conn(x, &c))
		c = NULL; /* the database's task counts are left out */
	aw_postingest_gauges(x->col->postingest, x->col->charts, c, &g.postingest);
	aw_buf_init(&out, 1u << 20);
	if (aw_metrics_format(&out, &g)) {
		aw_buf_release(&out);
		aw_reply_error(x->req, 500, "internal", "", "cannot format the metrics");
		return;
	}
	aw_httpd_reply(x->req, 200, "text/plain; version=0.0.4; charset=utf-8", out.data, out.len);
}

/* ---- regression verdicts ---- */

#define GATE_MAX_HOSTS 256

struct host_set {
	char *name[GATE_MAX_HOSTS];
	size_t n;
};

static void host_set_release(struct host_set *h)
{
	for (size_t i = 0; i < h->n; i++)
		free(h->name[i]);
	h->n = 0;
}

static int host_set_add(struct host_set *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(h->name[i], name))
			return 0;
	if (h->n == GATE_MAX_HOSTS)
		return -E2BIG;
	h->name[h->n] = strdup(name);
	return h->name[h->n] ? (h->n++, 0) : -ENOMEM;
}

static int add_run_host(const struct store_run *run, void *cls)
{
	return host_set_add(cls, run->host);
}

/* The hosts to judge: the `hosts` parameter ("a,b"), else every host that ran `commit`.
 * Replies (and returns non-zero) on a bad list or a store failure. */
static int gate_hosts(struct aw_ctx *x, const char *project, const char *commit,
                      struct host_set *out)
{
	const char *list = aw_httpd_query(x->req, "hosts");
	struct store_conn *c;
	int rc;

	if (list && strcmp(list, "all")) {
		char name[AW_NAME_MAX + 1];
		const char *p = list;

		while (*p) {
			size_t len = strcspn(p, ",");

			if (!len || len > AW_NAME_MAX) {
				aw_reply_error(
				    x->req, 400, "invalid", "hosts",
				    "'hosts' must be a comma-separated list of host names");
				return -EINVAL;
			}
			memcpy(name, p, len);
			name[len] = '\0';
			if (!aw_valid_name(name)) {
				aw_reply_error(x->req, 400, "invalid", "hosts",
				               "'%s' in 'hosts' is not a host name", name);
				return -EINVAL;
			}
			rc = host_set_add(out, name);
			if (rc) {
				aw_reply_error(x->req, rc == -E2BIG ? 400 : 500,
				               rc == -E2BIG ? "too_many" : "internal", "hosts",
				               "at most %d hosts", GATE_MAX_HOSTS);
				return rc;
			}
			p += len + (p[len] == ',');
		}
		return 0;
	}
	rc = aw_ctx_conn(x, &c);
	if (!rc) {
		struct store_run_filter f = {.project = project, .commit = commit, .limit = 10000};

		rc = store_list_runs(c, &f, add_run_host, out);
	}
	if (rc == -E2BIG)
		rc = 0; /* more hosts than one answer judges: the first GATE_MAX_HOSTS */
	if (rc)
		aw_reply_store_error(x->req, rc);
	return rc;
}

/* Sets obj[name] to the site-relative address of chart `id` ("/charts/..."). A chart whose
 * address does not fit is left out: a link is a convenience, the verdict is the answer. */
static int set_chart_link(json_t *obj, const char *name, const struct aw_chart_id *id)
{
	char path[1024];

	path[0] = '/';
	if (aw_chart_path(id, "svg", path + 1, sizeof(path) - 1))
		return 0;
	return json_object_set_new(obj, name, json_string(path)) ? -ENOMEM : 0;
}

/* A host's "charts": its comparison chart, when the workers draw that pair (a commit as the
 * base, or the baseline ref the collector is configured with: what runs are drawn against). */
static int host_chart_links(struct aw_ctx *x, json_t *host_json, const char *host, const char *head,
                            const char *base, const char *ref)
{
	struct aw_chart_id id = {.kind = AW_CHART_COMPARE, .commit = head, .host = host};
	json_t *charts;

	if (base)
		id.base = base;
	else if (!strcmp(ref, x->col->analysis.baseline_ref))
		id.base = ref;
	if (!id.base)
		return 0;
	charts = json_object();
	if (!charts || json_object_set_new(host_json, "charts", charts))
		return -ENOMEM;
	return set_chart_link(charts, "compare", &id);
}

/* The reply's top-level "charts": the cross-host heat map of the head commit. */
static int commit_chart_links(json_t *reply, const char *head)
{
	const struct aw_chart_id id = {.kind = AW_CHART_HEATMAP, .commit = head};
	json_t *charts = json_object();

	if (!charts || json_object_set_new(reply, "charts", charts))
		return -ENOMEM;
	return set_chart_link(charts, "heatmap", &id);
}

/* The `cells` globs (repeatable) into o->globs: each 1 to 256 printable characters, at most
 * AW_ANALYSIS_MAX_GLOBS. Replies 400 and returns -EINVAL on a bad one. */
static int query_globs(struct aw_ctx *x, const char **globs, struct aw_analysis_opts *o)
{
	size_t n = aw_httpd_query_all(x->req, "cells", globs, AW_ANALYSIS_MAX_GLOBS);

	if (n > AW_ANALYSIS_MAX_GLOBS) {
		aw_reply_error(x->req, 400, "too_many", "cells", "at most %d 'cells' globs",
		               AW_ANALYSIS_MAX_GLOBS);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(globs[i]);
		bool printable = len >= 1 && len <= 256;

		for (size_t k = 0; printable && k < len; k++)
			printable = (unsigned char)globs[i][k] >= 0x20 && globs[i][k] != 0x7f;
		if (!printable) {
			aw_reply_error(x->req, 400, "invalid", "cells",
			               "'cells' must be a glob on cell keys of 1 to 256 printable "
			               "characters, such as 'subject=*'");
			return -EINVAL;
		}
	}
	o->globs = globs;
	o->n_globs = n;
	return 0;
}

/* How much a host's status weighs in the gate's: fail, then inconclusive (a cell whose
 * evidence stayed split, or whose noise hides its threshold), incomplete (a host without a
 * run), unconfirmed (suspects still being re-measured), pass. */
static int status_rank(enum aw_verdict s)
{
	switch (s) {
	case AW_VERDICT_FAIL:
		return 4;
	case AW_VERDICT_INCONCLUSIVE:
		return 3;
	case AW_VERDICT_INCOMPLETE:
		return 2;
	case AW_VERDICT_UNCONFIRMED:
		return 1;
	default:
		return 0;
	}
}

/* Judges `head` on every host (against `base`, or the baseline ref) and replies with the
 * overall status: the weightiest of the hosts' (status_rank()). A `cells` glob that matched no cell
 * of the head on any host that ran it is a 400 naming it: a typo must not pass a gate by judging
 * nothing.
 */
static void judge_hosts(struct aw_ctx *x, const struct aw_analysis_opts *o, const char *project,
                        const char *head, const char *base, const struct host_set *hosts,
                        json_t *reply)
{
	enum aw_verdict overall = AW_VERDICT_PASS;
	uint64_t matched = 0;
	bool judged = false;
	bool all = aw_httpd_query(x->req, "all") != NULL;
	json_t *list = json_array();
	struct store_conn *c;
	char *err = NULL;
	int rc = list ? aw_ctx_conn(x, &c) : -ENOMEM;

	for (size_t i = 0; !rc && i < hosts->n; i++) {
		struct aw_host_verdict v;
		bool cached = false;
		json_t *j;

		/* the verdict stored after the commit's last upload, when it is the one asked for
		 * (it lists the cells that are not unchanged) */
		if (!base && !all)
			rc = aw_analysis_host_cached(c, o, project, head, hosts->name[i], &v,
			                             &cached, &err);
		else
			rc = aw_analysis_host(c, o, project, head, base, hosts->name[i], &v, &err);
		if (rc)
			break;
		matched |= v.globs_matched;
		judged = judged || v.n_head_runs;
		if (status_rank(v.status) > status_rank(overall))
			overall = v.status;
		j = aw_host_verdict_json(&v, all);
		aw_host_verdict_release(&v);
		if (j && json_object_set_new(j, "cached", json_boolean(cached))) {
			json_decref(j);
			j = NULL;
		}
		if (!j || json_array_append_new(list, j) ||
		    host_chart_links(x, j, hosts->name[i], head, base, o->baseline_ref))
			rc = -ENOMEM;
	}
	if (!rc && !hosts->n)
		overall = AW_VERDICT_INCOMPLETE; /* nothing reported the commit at all */
	if (rc) {
		if (err)
			aw_warn("%s", err);
		free(err);
		json_decref(list);
		json_decref(reply);
		aw_reply_store_error(x->req, rc);
		return;
	}
	for (size_t i = 0; judged && i < o->n_globs; i++) {
		if (matched & (UINT64_C(1) << i))
			continue;
		json_decref(list);
		json_decref(reply);
		aw_reply_error(x->req, 400, "no_match", "cells",
		               "the 'cells' glob '%.256s' matches no cell of commit %s on any host",
		               o->globs[i], head);
		return;
	}
	if (json_object_set_new(reply, "status", json_string(aw_verdict_name(overall))) ||
	    json_object_set_new(reply, "hosts", list) || commit_chart_links(reply, head)) {
		json_decref(reply);
		aw_reply_error(x->req, 500, "internal", "", "out of memory");
		return;
	}
	/* the gate: the commit's interleaved A/B document decides when there is one */
	rc = base ? 0 : aw_ab_gate_evidence(x, project, head, reply);
	if (rc) {
		json_decref(reply);
		aw_reply_store_error(x->req, rc);
		return;
	}
	aw_reply_json(x->req, 200, reply);
}

void aw_api_gate(struct aw_ctx *x)
{
	struct aw_analysis_opts o = x->col->analysis;
	const char *project, *commit, *ref, *evidence, *globs[AW_ANALYSIS_MAX_GLOBS];
	struct host_set hosts = {0};
	char report[128];

	if (aw_query_checked(x, "project", aw_valid_name, "a name", &project) ||
	    aw_query_checked(x, "commit", aw_valid_commit, "a commit id (7 to 64 hex digits)",
	                     &commit) ||
	    aw_query_checked(x, "baseline_ref", aw_valid_ref, "a git ref name", &ref) ||
	    query_globs(x, globs, &o))
		return;
	if (!project || !commit) {
		aw_reply_error(x->req, 400, "required", project ? "commit" : "project",
		               "'%s' is required", project ? "commit" : "project");
		return;
	}
	evidence = aw_httpd_query(x->req, "evidence");
	if (evidence && strcmp(evidence, "history") && strcmp(evidence, "any")) {
		aw_reply_error(x->req, 400, "invalid", "evidence",
		               "'evidence' must be any (the default) or history, got '%.32s'",
		               evidence);
		return;
	}
	if (ref)
		o.baseline_ref = ref;
	if (gate_hosts(x, project, commit, &hosts))
		goto out;
	snprintf(report, sizeof(report), "/commits/%s", commit);
	judge_hosts(x, &o, project, commit, NULL, &hosts,
	            json_pack("{s:s, s:s, s:s, s:s}", "project", project, "commit", commit,
	                      "baseline_ref", o.baseline_ref, "report", report));
out:
	host_set_release(&hosts);
}

void aw_api_compare(struct aw_ctx *x)
{
	struct aw_analysis_opts o = x->col->analysis;
	const char *project, *base, *head, *host, *globs[AW_ANALYSIS_MAX_GLOBS];
	struct host_set hosts = {0};
	char report[192];

	if (aw_query_checked(x, "project", aw_valid_name, "a name", &project) ||
	    aw_query_checked(x, "base", aw_valid_commit, "a commit id (7 to 64 hex digits)",
	                     &base) ||
	    aw_query_checked(x, "head", aw_valid_commit, "a commit id (7 to 64 hex digits)",
	                     &head) ||
	    aw_query_checked(x, "host", aw_valid_name, "a host name", &host) ||
	    query_globs(x, globs, &o))
		return;
	if (!base || !head) {
		aw_reply_error(x->req, 400, "required", base ? "head" : "base", "'%s' is required",
		               base ? "head" : "base");
		return;
	}
	if (host) {
		if (host_set_add(&hosts, host)) {
			aw_reply_error(x->req, 500, "internal", "", "out of memory");
			return;
		}
	} else if (gate_hosts(x, project, head, &hosts)) {
		goto out;
	}
	snprintf(report, sizeof(report), "/compare?base=%s&head=%s", base, head);
	judge_hosts(x, &o, project, head, base, &hosts,
	            json_pack("{s:o, s:s, s:s, s:s}", "project", aw_json_str(project), "base", base,
	                      "head", head, "report", report));
out:
	host_set_release(&hosts);
}

static int on_changepoint(const struct store_changepoint *p, void *cls)
{
	json_t *o =
	    json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:s, s:o, s:o, s:o, s:s}", "project",
	              p->project, "host", p->host, "ref", p->ref, "cell", p->cell_key, "metric",
	              p->metric, "commit", aw_json_str(p->commit), "run_id", p->run_id, "before",
	              isfinite(p->before) ? json_real(p->before) : json_null(), "after",
	              isfinite(p->after) ? json_real(p->after) : json_null(), "pvalue",
	              isfinite(p->pvalue) ? json_real(p->pvalue) : json_null(), "computed_at",
	              p->computed_at);

	return !o || json_array_append_new(cls, o) ? -ENOMEM : 0;
}

void aw_api_changepoints(struct aw_ctx *x)
{
	const char *host, *ref, *project, *cell = aw_httpd_query(x->req, "cell");
	json_t *list = json_array();
	struct store_conn *c;
	int rc;

	if (aw_query_checked(x, "host", aw_valid_name, "a host name", &host) ||
	    aw_query_checked(x, "ref", aw_valid_ref, "a git ref name", &ref) ||
	    aw_query_checked(x, "project", aw_valid_name, "a name", &project))
		goto out;
	if (!host) {
		aw_reply_error(x->req, 400, "required", "host", "'host' is required");
		goto out;
	}
	if (cell && (!*cell || strlen(cell) > 512)) {
		aw_reply_error(x->req, 400, "invalid", "cell",
		               "'cell' must be a cell key such as 'op=ldadd cpu=0'");
		goto out;
	}
	if (!ref)
		ref = x->col->analysis.baseline_ref;
	rc = list ? aw_ctx_conn(x, &c) : -ENOMEM;
	if (!rc)
		rc = store_changepoints_list(c, project, host, ref, cell, on_changepoint, list);
	if (rc) {
		aw_reply_store_error(x->req, rc);
		goto out;
	}
	aw_reply_json(x->req, 200,
	              json_pack("{s:s, s:s, s:o}", "host", host, "ref", ref, "changepoints", list));
	return;
out:
	json_decref(list);
}
