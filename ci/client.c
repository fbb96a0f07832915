/* The requests atomwatch-ci makes to the collector: queue a job, ask whether a host reported a
 * commit (and wait for all of them with doubling delays), fetch the gate and compare verdicts.
 * HTTP goes through common's client (aw/http_client.h, the project's one libcurl adapter). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/log.h"
#include "aw/util.h"
#include "aw/http_client.h"
#include "ci.h"

#define REPLY_LIMIT     (16u << 20) /* a gate reply listing every cell of many hosts */
#define QUERY_LIMIT     4000        /* the HTTP client's URLs are at most 4 KiB */
#define CONNECT_MS      10000
#define REQUEST_MS      120000
#define GET_RETRIES     2
#define RETRY_FIRST_MS  1000
#define RETRY_MAX_MS    10000
#define WAIT_POLL_MS    2000
#define WAIT_POLL_MAX   30000
#define WAIT_MAX_ERRORS 5

struct aw_ci_client {
	struct aw_http_client *http;
	char *base_url;
};

struct aw_ci_client *aw_ci_client_new(const char *base_url, const char *token, char **err)
{
	struct aw_http_client_opts o = {
	    .base_url = base_url,
	    .token = token,
	    .connect_timeout_ms = CONNECT_MS,
	    .timeout_ms = REQUEST_MS,
	    .user_agent = "atomwatch-ci/" AW_VERSION,
	};
	struct aw_ci_client *c = calloc(1, sizeof(*c));

	if (!c) {
		aw_errorf(err, -ENOMEM, "out of memory");
		return NULL;
	}
	c->base_url = strdup(base_url);
	if (!c->base_url) {
		aw_errorf(err, -ENOMEM, "out of memory");
		goto fail;
	}
	c->http = aw_http_client_new(&o, err);
	if (!c->http)
		goto fail;
	return c;
fail:
	aw_ci_client_free(&c);
	return NULL;
}

void aw_ci_client_free(struct aw_ci_client **cp)
{
	struct aw_ci_client *c = *cp;

	if (!c)
		return;
	aw_http_client_free(&c->http);
	free(c->base_url);
	free(c);
	*cp = NULL;
}

static void reply_init(struct aw_http_client_reply *rep)
{
	aw_http_client_reply_init(rep);
	rep->body.limit = REPLY_LIMIT; /* the agent's default limit fits uploads' short replies */
}

/* The error a non-2xx reply means: the collector's own message when it sent one. */
static int reply_error(const struct aw_http_client_reply *rep, const char *what, char **err)
{
	json_t *doc = rep->body.len ? json_loadb(rep->body.data, rep->body.len, 0, NULL) : NULL;
	const json_t *e = json_object_get(json_object_get(doc, "error"), "message");
	const json_t *f = json_object_get(json_object_get(doc, "error"), "field");
	const char *msg = json_is_string(e) ? json_string_value(e) : "no error message";
	const char *field = json_is_string(f) ? json_string_value(f) : "";
	int rc = rep->status == 401 || rep->status == 403  ? -EACCES
	         : rep->status >= 400 && rep->status < 500 ? -EINVAL
	                                                   : -EIO;

	if (*field)
		aw_errorf(err, rc, "the collector refused %s: %ld: %.200s (field '%.64s')", what,
		          rep->status, msg, field);
	else
		aw_errorf(err, rc, "the collector refused %s: %ld: %.200s", what, rep->status, msg);
	json_decref(doc);
	return rc;
}

/* One GET, retried on transport errors and retryable statuses; a 2xx leaves the body in rep.
 * Returns 0 or a negative errno with *err. */
static int get(struct aw_ci_client *c, const char *path, const char *what, int retries,
               struct aw_http_client_reply *rep, char **err)
{
	struct aw_retry_policy policy = {
	    .retries = (uint32_t)retries,
	    .backoff_ms = RETRY_FIRST_MS,
	    .backoff_max_ms = RETRY_MAX_MS,
	};
	int rc;

	for (uint32_t attempt = 0;; attempt++) {
		uint64_t random = 0, delay;

		rc = aw_http_client_request(c->http, "GET", path, NULL, 0, 0, rep);
		if (!rc && rep->status >= 200 && rep->status < 300) {
			if (rep->truncated)
				return aw_errorf(
				    err, -E2BIG,
				    "the collector's reply to %s is larger than %u bytes", what,
				    REPLY_LIMIT);
			return 0;
		}
		if ((!rc && !aw_http_client_retryable(rep->status)) || attempt >= policy.retries)
			break;
		aw_random_bytes(&random, sizeof(random));
		delay = aw_backoff_ms(&policy, attempt, random);
		if (!rc && rep->retry_after_ms >= 0 && (uint64_t)rep->retry_after_ms < RETRY_MAX_MS)
			delay = (uint64_t)rep->retry_after_ms;
		aw_sleep_ns(delay * 1000000, NULL);
	}
	if (rc)
		return aw_errorf(err, rc, "cannot reach the collector at %s for %s: %s",
		                 c->base_url, what, rep->error);
	return reply_error(rep, what, err);
}

/* "&name=value" (or "?name=value" first) with the value percent-encoded. */
static int query_add(struct aw_buf *q, const char *name, const char *value)
{
	int rc = aw_buf_printf(q, "%c%s=", strchr(q->data ? q->data : "", '?') ? '&' : '?', name);

	return rc ? rc : aw_ci_url_encode(q, value);
}

/* "&hosts=a,b" with each name encoded and the commas kept. */
static int query_add_list(struct aw_buf *q, const char *name, const char *const *v, size_t n)
{
	int rc = aw_buf_printf(q, "%c%s=", strchr(q->data ? q->data : "", '?') ? '&' : '?', name);

	for (size_t i = 0; !rc && i < n; i++) {
		if (i)
			rc = aw_buf_puts(q, ",");
		if (!rc)
			rc = aw_ci_url_encode(q, v[i]);
	}
	return rc;
}

static int query_error(int rc, char **err)
{
	if (rc == -E2BIG)
		return aw_errorf(err, -E2BIG,
		                 "the request is longer than %d bytes (too many hosts)",
		                 QUERY_LIMIT);
	return aw_errorf(err, rc, "out of memory");
}

int aw_ci_trigger(struct aw_ci_client *c, const struct aw_ci_job *job, int64_t *id, char **err)
{
	json_t *body = json_pack("{s:s, s:s, s:s}", "project", job->project, "commit", job->commit,
	                         "ref", job->ref);
	json_t *hosts = NULL, *doc = NULL;
	const json_t *jid;
	struct aw_http_client_reply rep;
	char *text = NULL;
	int rc = -ENOMEM;

	reply_init(&rep);
	if (!body)
		goto nomem;
	if (job->subject && json_object_set_new(body, "subject", json_string(job->subject)))
		goto nomem;
	if (job->ab_base && json_object_set_new(body, "ab_base", json_string(job->ab_base)))
		goto nomem;
	if (job->hosts) {
		hosts = json_array();
		for (size_t i = 0; hosts && i < job->n_hosts; i++)
			if (json_array_append_new(hosts, json_string(job->hosts[i])))
				goto nomem;
		if (!hosts || json_object_set_new(body, "hosts", hosts))
			goto nomem;
	} else if (json_object_set_new(body, "hosts", json_string("all"))) {
		goto nomem;
	}
	text = json_dumps(body, JSON_COMPACT);
	if (!text)
		goto nomem;
	/* not retried: a job the collector stored but whose reply was lost would be queued twice */
	rc = aw_http_client_request(c->http, "POST", "/api/v1/jobs", text, strlen(text), 0, &rep);
	if (rc) {
		rc = aw_errorf(err, rc, "cannot reach the collector at %s to queue the job: %s",
		               c->base_url, rep.error);
		goto out;
	}
	if (rep.status != 201 && rep.status != 200) {
		rc = reply_error(&rep, "the job", err);
		goto out;
	}
	doc = json_loadb(rep.body.data ? rep.body.data : "", rep.body.len, 0, NULL);
	jid = json_object_get(json_object_get(doc, "job"), "id");
	if (!json_is_integer(jid)) {
		rc = aw_errorf(err, -EIO, "bad reply from the collector: 'job.id' is missing");
		goto out;
	}
	*id = (int64_t)json_integer_value(jid);
	rc = 0;
	goto out;
nomem:
	rc = aw_errorf(err, -ENOMEM, "cannot queue the job: out of memory");
out:
	json_decref(doc);
	json_decref(body);
	free(text);
	aw_http_client_reply_release(&rep);
	return rc;
}

int aw_ci_reported(struct aw_ci_client *c, const char *project, const char *commit,
                   const char *host, bool *reported, char **err)
{
	struct aw_buf q;
	struct aw_http_client_reply rep;
	json_t *doc = NULL;
	const json_t *runs;
	int rc;

	aw_buf_init(&q, QUERY_LIMIT);
	reply_init(&rep);
	rc = aw_buf_puts(&q, "/api/v1/runs");
	if (!rc)
		rc = query_add(&q, "project", project);
	if (!rc)
		rc = query_add(&q, "commit", commit);
	if (!rc)
		rc = query_add(&q, "host", host);
	if (!rc)
		rc = aw_buf_puts(&q, "&limit=1");
	if (rc) {
		rc = query_error(rc, err);
		goto out;
	}
	rc = get(c, q.data, "the runs query", 0, &rep, err);
	if (rc)
		goto out;
	doc = json_loadb(rep.body.data ? rep.body.data : "", rep.body.len, 0, NULL);
	runs = json_object_get(doc, "runs");
	if (!json_is_array(runs)) {
		rc = aw_errorf(err, -EIO, "bad reply from the collector: 'runs' is missing");
		goto out;
	}
	*reported = json_array_size(runs) > 0;
out:
	json_decref(doc);
	aw_http_client_reply_release(&rep);
	aw_buf_release(&q);
	return rc;
}

uint64_t aw_ci_poll_delay_ms(const struct aw_ci_wait_opts *o, unsigned round)
{
	uint64_t d = o->poll_ms ? o->poll_ms : WAIT_POLL_MS;
	uint64_t max = o->poll_max_ms ? o->poll_max_ms : WAIT_POLL_MAX;

	for (unsigned i = 0; i < round && d < max; i++)
		d *= 2;
	return d < max ? d : max;
}

/* The hosts still missing, comma-separated, for a progress line. */
static void missing_list(const char *const *hosts, size_t n, const bool *reported, char *out,
                         size_t size)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n && used < size; i++) {
		int w;

		if (reported[i])
			continue;
		w = snprintf(out + used, size - used, "%s%s", used ? ", " : "", hosts[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

int aw_ci_wait(struct aw_ci_client *c, const char *project, const char *commit,
               const char *const *hosts, size_t n, const struct aw_ci_wait_opts *o, bool *reported,
               char **err)
{
	uint64_t start = aw_monotonic_ns(), deadline = start + o->timeout_ms * 1000000;
	unsigned max_errors = o->max_errors ? o->max_errors : WAIT_MAX_ERRORS;
	unsigned errors = 0;
	size_t last_missing = n + 1;

	for (size_t i = 0; i < n; i++)
		reported[i] = false;
	for (unsigned round = 0;; round++) {
		size_t missing = 0;
		uint64_t now, delay;
		char *e = NULL;
		int rc = 0;

		for (size_t i = 0; i < n; i++) {
			if (reported[i])
				continue;
			rc = aw_ci_reported(c, project, commit, hosts[i], &reported[i], &e);
			if (rc)
				break;
			missing += !reported[i];
		}
		if (rc) {
			/* a refusal is final; an unreachable or failing collector may come back */
			if (rc == -EINVAL || rc == -EACCES || ++errors >= max_errors) {
				aw_errorf(err, rc, "%s", e);
				free(e);
				return rc;
			}
			aw_warn("%s (attempt %u of %u)", e, errors, max_errors);
			free(e);
			missing = n + 1; /* not known this round */
		} else {
			errors = 0;
		}
		if (!missing)
			return 0;
		now = aw_monotonic_ns();
		if (missing <= n && missing != last_missing && !o->quiet) {
			char names[512];

			missing_list(hosts, n, reported, names, sizeof(names));
			aw_info("waiting for %zu of %zu host%s to report %.12s: %s (%llu s left)",
			        missing, n, n == 1 ? "" : "s", commit, names,
			        (unsigned long long)(now < deadline ? (deadline - now) / 1000000000
			                                            : 0));
			last_missing = missing;
		}
		if (now >= deadline)
			return -ETIMEDOUT;
		delay = aw_ci_poll_delay_ms(o, round) * 1000000;
		if (delay > deadline - now)
			delay = deadline - now;
		aw_sleep_ns(delay, NULL);
	}
}

int aw_ci_get_json(struct aw_ci_client *c, const char *path, const char *what, json_t **out,
                   char **err)
{
	struct aw_http_client_reply rep;
	json_error_t jerr;
	int rc;

	*out = NULL;
	reply_init(&rep);
	rc = get(c, path, what, GET_RETRIES, &rep, err);
	if (!rc) {
		*out = json_loadb(rep.body.data ? rep.body.data : "", rep.body.len, 0, &jerr);
		if (!*out)
			rc = aw_errorf(err, -EINVAL, "the collector's reply to %s is not JSON: %s",
			               what, jerr.text);
	}
	aw_http_client_reply_release(&rep);
	return rc;
}

static int fetch_report(struct aw_ci_client *c, const char *path, const char *what, bool compare,
                        struct aw_ci_report *out, char **err)
{
	struct aw_http_client_reply rep;
	int rc;

	reply_init(&rep);
	rc = get(c, path, what, GET_RETRIES, &rep, err);
	if (!rc)
		rc = aw_ci_report_parse(rep.body.data ? rep.body.data : "", rep.body.len, compare,
		                        out, err);
	aw_http_client_reply_release(&rep);
	return rc;
}

int aw_ci_fetch_gate(struct aw_ci_client *c, const struct aw_ci_gate_query *qr,
                     struct aw_ci_report *out, char **err)
{
	struct aw_buf q;
	int rc;

	aw_buf_init(&q, QUERY_LIMIT);
	rc = aw_buf_puts(&q, "/api/v1/gate");
	if (!rc)
		rc = query_add(&q, "project", qr->project);
	if (!rc)
		rc = query_add(&q, "commit", qr->commit);
	if (!rc)
		rc = query_add(&q, "baseline_ref", qr->baseline_ref);
	if (!rc && qr->hosts)
		rc = query_add_list(&q, "hosts", qr->hosts, qr->n_hosts);
	if (!rc && qr->all_cells)
		rc = aw_buf_puts(&q, "&all=1");
	for (size_t i = 0; !rc && i < qr->n_cells; i++)
		rc = query_add(&q, "cells", qr->cells[i]);
	/* the history's own verdict: the A/B evidence is weighed by cmd_gate (evidence.h) */
	if (!rc)
		rc = aw_buf_puts(&q, "&evidence=history");
	if (rc)
		rc = query_error(rc, err);
	else
		rc = fetch_report(c, q.data, "the gate query", false, out, err);
	aw_buf_release(&q);
	return rc;
}

int aw_ci_fetch_compare(struct aw_ci_client *c, const struct aw_ci_gate_query *qr, const char *base,
                        const char *host, struct aw_ci_report *out, char **err)
{
	struct aw_buf q;
	int rc;

	aw_buf_init(&q, QUERY_LIMIT);
	rc = aw_buf_puts(&q, "/api/v1/compare");
	if (!rc)
		rc = query_add(&q, "project", qr->project);
	if (!rc)
		rc = query_add(&q, "base", base);
	if (!rc)
		rc = query_add(&q, "head", qr->commit);
	if (!rc && host)
		rc = query_add(&q, "host", host);
	if (!rc && qr->all_cells)
		rc = aw_buf_puts(&q, "&all=1");
	for (size_t i = 0; !rc && i < qr->n_cells; i++)
		rc = query_add(&q, "cells", qr->cells[i]);
	if (rc)
		rc = query_error(rc, err);
	else
		rc = fetch_report(c, q.data, "the compare query", true, out, err);
	aw_buf_release(&q);
	return rc;
}
