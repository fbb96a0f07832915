/* Jobs: CI queues work for hosts (POST /api/v1/jobs), agents long-poll for it
 * (GET /api/v1/jobs/next) and report progress (POST /api/v1/jobs/{id}/status). A waiting poll
 * holds no thread: its connection is suspended and one background thread hands out jobs as soon
 * as one is posted here, re-checking the database about once a second for jobs posted through
 * another collector on the same database. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aw/log.h"
#include "internal.h"

#define FLUSH_EVERY_NS (30 * UINT64_C(1000000000))
#define MESSAGE_MAX    512
#define TARGETS_MAX    1024

struct waiter {
	struct aw_httpd_req *req;
	char host[AW_NAME_MAX + 1];
	uint64_t deadline_ns;
	struct waiter *next;
};

/* What a long-poll request remembers, so that a claim whose reply never got out is released. */
struct poll_state {
	int64_t job_id;
	char host[AW_NAME_MAX + 1];
	struct aw_collector *col;
};

struct aw_jobs {
	struct aw_collector *col;
	pthread_t tid;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct waiter *waiters;
	unsigned n_waiters;
	bool kicked, closing, stopping;
	uint64_t next_wake_ns; /* when the thread plans its next pass */
	struct store_conn *conn;
};

static json_t *job_json(const struct store_job *j)
{
	json_t *bisect;
	json_t *confirm = j->confirm ? json_loads(j->confirm, 0, NULL) : NULL;
	/* a confirmation job says what to re-measure; an ordinary job has no "confirm" */
	json_t *o =
	    json_pack("{s:I, s:s, s:s, s:s, s:o, s:b, s:s, s:s, s:o*}", "id", (json_int_t)j->id,
	              "project", j->project, "commit", j->commit, "ref", j->ref, "subject",
	              aw_json_str(j->subject), "all_hosts", j->all_hosts, "created_at",
	              j->created_at, "expires_at", j->expires_at, "confirm", confirm);

	/* only on A/B jobs: an agent from before them sees the job it always saw */
	if (o && j->ab_base && json_object_set_new(o, "ab_base", json_string(j->ab_base))) {
		json_decref(o);
		o = NULL;
	}
	/* a bisection's job (only for hosts that reported their subjects: agents that know it) */
	bisect = j->bisect ? json_loads(j->bisect, 0, NULL) : NULL;
	if (o && bisect && json_object_set_new(o, "bisect", bisect)) {
		json_decref(o);
		o = NULL;
	} else if (!o) {
		json_decref(bisect);
	}
	return o;
}

struct claimed {
	json_t *job;
	int64_t id;
};

static int on_claimed(const struct store_job *j, void *cls)
{
	struct claimed *c = cls;

	c->job = job_json(j);
	c->id = j->id;
	return c->job ? 0 : -ENOMEM;
}

/* Tries to claim a job for `host`: 0 with *out (a reply body), -ENOENT, or a store error. */
static int try_claim(struct aw_collector *col, struct store_conn *conn, const char *host,
                     struct claimed *out)
{
	out->job = NULL;
	out->id = 0;
	return store_job_claim(conn, host, (int64_t)col->cfg->jobs_reclaim_ms * 1000, on_claimed,
	                       out);
}

static void reply_job(struct aw_httpd_req *req, struct claimed *c)
{
	struct poll_state *ps = aw_httpd_data(req);

	if (ps)
		ps->job_id = c->id;
	aw_reply_json(req, 200, json_pack("{s:o}", "job", c->job));
	c->job = NULL;
}

/* The background thread: one pass over the waiters after each kick or recheck period. */
static void *jobs_main(void *arg)
{
	struct aw_jobs *j = arg;
	const struct aw_collector_config *cfg = j->col->cfg;
	uint64_t next_flush = aw_monotonic_ns() + FLUSH_EVERY_NS;

	pthread_mutex_lock(&j->lock);
	while (!j->stopping) {
		struct waiter *list, *keep = NULL, **tail = &keep, *w, *next;
		uint64_t now = aw_monotonic_ns(), wake = now + cfg->jobs_recheck_ms * 1000000;
		struct timespec ts;
		bool closing;

		for (w = j->waiters; w; w = w->next)
			if (w->deadline_ns < wake)
				wake = w->deadline_ns;
		j->next_wake_ns = wake;
		if (!j->kicked && !j->closing && wake > now) {
			/* CLOCK_MONOTONIC would be better, but the default condvar clock is
			 * realtime; convert the relative wait. */
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (time_t)((wake - now) / 1000000000);
			ts.tv_nsec += (long)((wake - now) % 1000000000);
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&j->cond, &j->lock, &ts);
			if (j->stopping)
				break;
		}
		j->kicked = false;
		closing = j->closing;
		list = j->waiters;
		j->waiters = NULL;
		j->next_wake_ns = UINT64_MAX; /* a pass is running: no need to wake us */
		pthread_mutex_unlock(&j->lock);

		now = aw_monotonic_ns();
		for (w = list; w; w = next) {
			struct claimed c;
			int rc = -ENOENT;
			bool none;

			next = w->next;
			if (!closing)
				rc = try_claim(j->col, j->conn, w->host, &c);
			none = rc == -ENOENT || rc == -EBUSY || rc == -EAGAIN;
			if (none && !closing && now < w->deadline_ns) {
				*tail = w;
				tail = &w->next;
				continue;
			}
			/* answered: the gauge drops before the agent has its reply */
			pthread_mutex_lock(&j->lock);
			j->n_waiters--;
			pthread_mutex_unlock(&j->lock);
			if (!rc)
				reply_job(w->req, &c);
			else if (!none)
				aw_reply_store_error(w->req, rc);
			else
				aw_httpd_reply(w->req, 204, NULL, NULL, 0);
			aw_httpd_resume(w->req);
			free(w);
		}
		*tail = NULL;
		if (now >= next_flush) {
			aw_auth_flush(j->col->auth, j->conn);
			next_flush = now + FLUSH_EVERY_NS;
		}

		pthread_mutex_lock(&j->lock);
		/* The waiters kept from this pass, then those that arrived during it. */
		*tail = j->waiters;
		j->waiters = keep;
		for (j->n_waiters = 0, w = j->waiters; w; w = w->next)
			j->n_waiters++;
	}
	pthread_mutex_unlock(&j->lock);
	aw_auth_flush(j->col->auth, j->conn);
	return NULL;
}

int aw_jobs_start(struct aw_collector *col, struct aw_jobs **out, char **err)
{
	struct aw_jobs *j = calloc(1, sizeof(*j));
	int rc;

	*out = NULL;
	if (!j)
		return aw_errorf(err, -ENOMEM, "out of memory");
	j->col = col;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	rc = store_connect(col->store, &j->conn, err);
	if (rc)
		goto fail;
	rc = -pthread_create(&j->tid, NULL, jobs_main, j);
	if (rc) {
		aw_errorf(err, rc, "cannot start the jobs thread: %s", strerror(-rc));
		goto fail;
	}
	j->started = true;
	*out = j;
	return 0;
fail:
	aw_jobs_stop(&j);
	return rc;
}

void aw_jobs_kick(struct aw_jobs *j)
{
	pthread_mutex_lock(&j->lock);
	j->kicked = true;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

void aw_jobs_close(struct aw_jobs *j)
{
	pthread_mutex_lock(&j->lock);
	j->closing = true;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

unsigned aw_jobs_waiting(struct aw_jobs *j)
{
	unsigned n;

	pthread_mutex_lock(&j->lock);
	n = j->n_waiters;
	pthread_mutex_unlock(&j->lock);
	return n;
}

void aw_jobs_stop(struct aw_jobs **jp)
{
	struct aw_jobs *j = *jp;

	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	j->stopping = true;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
	if (j->started)
		pthread_join(j->tid, NULL);
	/* Every waiter was answered by aw_jobs_close() and the HTTP drain before this. */
	while (j->waiters) {
		struct waiter *w = j->waiters;

		j->waiters = w->next;
		free(w);
	}
	store_disconnect(&j->conn);
	pthread_cond_destroy(&j->cond);
	pthread_mutex_destroy(&j->lock);
	free(j);
	*jp = NULL;
}

/* Registers a suspended long-poll. Returns 0, or -ESHUTDOWN when closing (nothing kept). */
static int add_waiter(struct aw_jobs *j, struct aw_httpd_req *req, const char *host,
                      uint64_t wait_ms)
{
	struct waiter *w = calloc(1, sizeof(*w));
	int rc = 0;

	if (!w)
		return -ENOMEM;
	w->req = req;
	snprintf(w->host, sizeof(w->host), "%s", host);
	w->deadline_ns = aw_monotonic_ns() + wait_ms * 1000000;
	pthread_mutex_lock(&j->lock);
	if (j->closing) {
		rc = -ESHUTDOWN;
		free(w);
	} else {
		w->next = j->waiters;
		j->waiters = w;
		j->n_waiters++;
		/* Wake the thread only when this deadline is sooner than its next pass. */
		if (w->deadline_ns < j->next_wake_ns)
			pthread_cond_signal(&j->cond);
	}
	pthread_mutex_unlock(&j->lock);
	return rc;
}

void aw_jobs_request_done(struct aw_httpd_req *req, bool sent)
{
	struct poll_state *ps = aw_httpd_data(req);
	struct store_conn *c = NULL;

	if (sent || !ps || aw_httpd_tag(req) < 0 || !ps->job_id || !ps->col)
		return;
	/* The agent never got the job: let it (or its next poll) claim it again. */
	if (!store_acquire(ps->col->store, &c)) {
		if (!store_job_unclaim(c, ps->job_id, ps->host))
			aw_info("job %lld: the reply to '%s' was lost; released its claim",
			        (long long)ps->job_id, ps->host);
		store_release(ps->col->store, &c);
	}
}

/* "a,b,c": names, at most 64 of them (or ""). */
static bool valid_subjects(const char *list)
{
	char name[AW_NAME_MAX + 1];
	unsigned n = 0;

	while (*list) {
		size_t len = strcspn(list, ",");

		if (!len || len > AW_NAME_MAX || ++n > 64)
			return false;
		memcpy(name, list, len);
		name[len] = '\0';
		if (!aw_valid_name(name))
			return false;
		list += len + (list[len] == ',');
	}
	return true;
}

void aw_jobs_next(struct aw_ctx *x)
{
	const char *host = aw_httpd_query(x->req, "host");
	const char *wait = aw_httpd_query(x->req, "wait");
	const char *subjects = aw_httpd_query(x->req, "subjects");
	const char *step = aw_httpd_query(x->req, "step");
	uint64_t wait_s = 0, max_s = x->col->cfg->jobs_max_wait_ms / 1000;
	struct poll_state *ps;
	struct store_conn *c;
	struct claimed cl;
	int rc;

	if (!host) {
		aw_reply_error(x->req, 400, "required", "host", "'host' is required");
		return;
	}
	if (!aw_valid_name(host)) {
		aw_reply_error(x->req, 400, "invalid", "host",
		               "host names are 1 to 64 characters from [A-Za-z0-9._-]");
		return;
	}
	if (wait && aw_parse_u64(wait, UINT32_MAX, &wait_s)) {
		aw_reply_error(x->req, 400, "invalid", "wait",
		               "'wait' must be a whole number of seconds, got '%.32s'", wait);
		return;
	}
	if ((subjects && !valid_subjects(subjects)) || (step && !aw_valid_name(step))) {
		aw_reply_error(x->req, 400, "invalid",
		               subjects && !valid_subjects(subjects) ? "subjects" : "step",
		               "'subjects' is a comma-separated list of subject names, 'step' one "
		               "name");
		return;
	}
	if (wait_s > max_s)
		wait_s = max_s;
	if (x->who.role == STORE_ROLE_AGENT && strcmp(host, x->who.host)) {
		aw_reply_error(x->req, 403, "forbidden", "host",
		               "this token polls for host '%s', not '%s'", x->who.host, host);
		return;
	}
	ps = calloc(1, sizeof(*ps));
	if (!ps) {
		aw_reply_error(x->req, 500, "internal", "", "out of memory");
		return;
	}
	ps->col = x->col;
	snprintf(ps->host, sizeof(ps->host), "%s", host);
	aw_httpd_set_data(x->req, ps, free);
	rc = aw_ctx_conn(x, &c);
	/* a host that polls is a daemon host: the collector queues its confirmations */
	if (!rc && store_job_polled(c, host))
		aw_warn("cannot note that host '%s' polled for jobs", host);
	/* and the bisections it can run (agents that know them say so) */
	if (!rc && subjects && store_host_subjects_set(c, host, subjects, step))
		aw_warn("cannot note the subjects of host '%s'", host);
	if (!rc)
		rc = try_claim(x->col, c, host, &cl);
	if (!rc) {
		reply_job(x->req, &cl);
		return;
	}
	if (rc != -ENOENT) {
		aw_reply_store_error(x->req, rc);
		return;
	}
	if (!wait_s) {
		aw_httpd_reply(x->req, 204, NULL, NULL, 0);
		return;
	}
	aw_httpd_suspend(x->req);
	rc = add_waiter(x->col->jobs, x->req, host, wait_s * 1000);
	if (rc) {
		if (rc == -ESHUTDOWN)
			aw_httpd_reply(x->req, 204, NULL, NULL, 0);
		else
			aw_reply_error(x->req, 500, "internal", "", "out of memory");
		aw_httpd_resume(x->req);
	}
}

/* ---- POST /api/v1/jobs ---- */

static const char *const job_keys[] = {"project", "commit", "ref",     "subject",
                                       "hosts",   "ttl",    "ab_base", NULL};

static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* Parses the request body of POST /api/v1/jobs into *spec (strings point into `doc`). Replies
 * 400 and returns -EINVAL on a bad body. */
static int parse_job(struct aw_ctx *x, json_t *doc, struct store_job_spec *spec,
                     const char ***hosts)
{
	const struct aw_collector_config *cfg = x->col->cfg;
	json_t *v, *h;
	const char *k;
	size_t i;

	if (!json_is_object(doc)) {
		aw_reply_error(x->req, 400, "type", "", "the body must be a JSON object");
		return -EINVAL;
	}
	json_object_foreach (doc, k, v) {
		for (i = 0; job_keys[i]; i++)
			if (!strcmp(k, job_keys[i]))
				break;
		if (!job_keys[i]) {
			aw_reply_error(x->req, 400, "unknown_field", k, "unknown field '%.64s'", k);
			return -EINVAL;
		}
	}
#define STR_FIELD(name, check, what, required, dst)                                               \
	do {                                                                                      \
		v = json_object_get(doc, name);                                                   \
		if (!v || json_is_null(v)) {                                                      \
			if (required) {                                                           \
				aw_reply_error(x->req, 400, "required", name,                     \
				               "'" name "' is required");                         \
				return -EINVAL;                                                   \
			}                                                                         \
			break;                                                                    \
		}                                                                                 \
		if (!json_is_string(v) || !check(json_string_value(v))) {                         \
			aw_reply_error(x->req, 400, json_is_string(v) ? "invalid" : "type", name, \
			               "'" name "' must be " what);                               \
			return -EINVAL;                                                           \
		}                                                                                 \
		dst = json_string_value(v);                                                       \
	} while (0)
	STR_FIELD("project", aw_valid_name, "a name of 1 to 64 characters from [A-Za-z0-9._-]",
	          true, spec->project);
	STR_FIELD("commit", aw_valid_commit, "a commit id of 7 to 64 hex digits", true,
	          spec->commit);
	STR_FIELD("ref", aw_valid_ref, "a valid git ref name", true, spec->ref);
	STR_FIELD("subject", aw_valid_name, "a subject name from the agent's config", false,
	          spec->subject);
	STR_FIELD("ab_base", aw_valid_commit,
	          "the base commit id of an A/B job (7 to 64 hex digits)", false, spec->ab_base);
#undef STR_FIELD
	if (spec->ab_base && !spec->subject) {
		aw_reply_error(x->req, 400, "required", "subject",
		               "an A/B job ('ab_base') measures a subject: 'subject' is required");
		return -EINVAL;
	}
	if (spec->ab_base && !strcmp(spec->ab_base, spec->commit)) {
		aw_reply_error(x->req, 400, "invalid", "ab_base",
		               "'ab_base' is the job's own commit: nothing to compare");
		return -EINVAL;
	}
	h = json_object_get(doc, "hosts");
	if (!h) {
		aw_reply_error(x->req, 400, "required", "hosts",
		               "'hosts' is required: \"all\" or a list of host names");
		return -EINVAL;
	}
	if (json_is_string(h) && !strcmp(json_string_value(h), "all")) {
		spec->hosts = NULL;
	} else if (json_is_array(h) && json_array_size(h) >= 1 &&
	           json_array_size(h) <= TARGETS_MAX) {
		*hosts = calloc(json_array_size(h), sizeof(**hosts));
		if (!*hosts) {
			aw_reply_error(x->req, 500, "internal", "", "out of memory");
			return -ENOMEM;
		}
		json_array_foreach (h, i, v) {
			char field[32];

			snprintf(field, sizeof(field), "hosts[%zu]", i);
			if (!json_is_string(v) || !aw_valid_name(json_string_value(v))) {
				aw_reply_error(x->req, 400, json_is_string(v) ? "invalid" : "type",
				               field,
				               "host names are 1 to 64 characters from "
				               "[A-Za-z0-9._-]");
				return -EINVAL;
			}
			(*hosts)[i] = json_string_value(v);
		}
		spec->hosts = *hosts;
		spec->n_hosts = json_array_size(h);
	} else {
		aw_reply_error(x->req, 400, "invalid", "hosts",
		               "'hosts' must be \"all\" or a list of 1 to %d host names",
		               TARGETS_MAX);
		return -EINVAL;
	}
	spec->ttl_us = (int64_t)cfg->jobs_default_ttl_ms * 1000;
	v = json_object_get(doc, "ttl");
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    (uint64_t)json_integer_value(v) * 1000 > cfg->jobs_max_ttl_ms) {
			aw_reply_error(x->req, 400, "range", "ttl",
			               "'ttl' must be a whole number of seconds from 1 to %llu",
			               (unsigned long long)(cfg->jobs_max_ttl_ms / 1000));
			return -EINVAL;
		}
		spec->ttl_us = (int64_t)json_integer_value(v) * 1000000;
	}
	spec->created_by = x->who.token_id;
	return 0;
}

struct job_view {
	json_t *job;
	json_t *hosts;
};

static int on_job(const struct store_job *j, void *cls)
{
	struct job_view *v = cls;

	v->job = job_json(j);
	return v->job ? 0 : -ENOMEM;
}

static int on_job_host(const struct store_job_host *h, void *cls)
{
	struct job_view *v = cls;
	json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o}", "host", h->host, "state", h->state,
	                      "run_id", aw_json_str(h->run_id), "message", aw_json_str(h->message),
	                      "claimed_at", aw_json_str(h->claimed_at), "updated_at",
	                      aw_json_str(h->updated_at));

	return o && !json_array_append_new(v->hosts, o) ? 0 : -ENOMEM;
}

/* Replies `status` with job `id` and its hosts. */
static void reply_job_view(struct aw_ctx *x, struct store_conn *c, int64_t id, unsigned status)
{
	struct job_view v = {NULL, json_array()};
	int rc = v.hosts ? store_job_get(c, id, on_job, on_job_host, &v) : -ENOMEM;

	if (rc == -ENOENT) {
		aw_reply_error(x->req, 404, "not_found", "id", "no job %lld", (long long)id);
	} else if (rc) {
		aw_reply_store_error(x->req, rc);
	} else if (json_object_set_new(v.job, "hosts", v.hosts)) {
		aw_reply_error(x->req, 500, "internal", "", "out of memory");
	} else {
		v.hosts = NULL;
		aw_reply_json(x->req, status, json_pack("{s:o}", "job", v.job));
		v.job = NULL;
	}
	json_decref(v.job);
	json_decref(v.hosts);
}

/* The body as a JSON object, or a 400 reply and NULL. */
static json_t *body_json(struct aw_ctx *x)
{
	json_error_t jerr;
	size_t len;
	const char *body = aw_httpd_body(x->req, &len);
	json_t *doc;

	if (!len) {
		aw_reply_error(x->req, 400, "required", "", "the request has no body");
		return NULL;
	}
	doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		aw_reply_error(x->req, 400, "json", "", "invalid JSON at line %d, column %d: %s",
		               jerr.line, jerr.column, jerr.text);
	return doc;
}

void aw_jobs_post(struct aw_ctx *x)
{
	struct store_job_spec spec = {0};
	const char **hosts = NULL;
	struct store_conn *c;
	json_t *doc = body_json(x);
	int64_t id;
	int rc;

	if (!doc)
		return;
	if (parse_job(x, doc, &spec, &hosts))
		goto out;
	rc = aw_ctx_conn(x, &c);
	if (!rc)
		rc = store_job_create(c, &spec, &id);
	if (rc) {
		aw_reply_store_error(x->req, rc);
		goto out;
	}
	aw_info("job %lld queued: %s %s on %s", (long long)id, spec.project, spec.commit,
	        spec.hosts ? "listed hosts" : "all hosts");
	/* the reply shows the job as created, before a waiting agent can claim it */
	reply_job_view(x, c, id, 201);
	aw_jobs_kick(x->col->jobs);
out:
	free(hosts);
	json_decref(doc);
}

/* ---- POST /api/v1/jobs/{id}/status ---- */

static const char *const status_keys[] = {"state", "run_id", "message", "host", NULL};

void aw_jobs_status(struct aw_ctx *x)
{
	const char *state, *run_id = NULL, *message = NULL, *host = NULL, *k;
	json_t *doc = NULL, *v;
	struct store_conn *c;
	int64_t id;
	size_t i;
	int rc;

	if (aw_parse_id(x->param, &id)) {
		aw_reply_error(x->req, 400, "invalid", "id", "a job id is a positive number");
		return;
	}
	doc = body_json(x);
	if (!doc)
		return;
	if (!json_is_object(doc)) {
		aw_reply_error(x->req, 400, "type", "", "the body must be a JSON object");
		goto out;
	}
	json_object_foreach (doc, k, v) {
		for (i = 0; status_keys[i]; i++)
			if (!strcmp(k, status_keys[i]))
				break;
		if (!status_keys[i]) {
			aw_reply_error(x->req, 400, "unknown_field", k, "unknown field '%.64s'", k);
			goto out;
		}
	}
	state = json_string_value(json_object_get(doc, "state"));
	if (!state ||
	    (strcmp(state, "running") && strcmp(state, "done") && strcmp(state, "failed"))) {
		aw_reply_error(x->req, 400, state ? "invalid" : "required", "state",
		               "'state' must be running, done or failed");
		goto out;
	}
	v = json_object_get(doc, "run_id");
	if (v && !json_is_null(v)) {
		run_id = json_string_value(v);
		if (!run_id || !aw_valid_uuid(run_id)) {
			aw_reply_error(x->req, 400, "invalid", "run_id",
			               "'run_id' must be a lowercase UUID");
			goto out;
		}
	}
	v = json_object_get(doc, "message");
	if (v && !json_is_null(v)) {
		message = json_string_value(v);
		if (!message || json_string_length(v) > MESSAGE_MAX ||
		    strlen(message) != json_string_length(v) || !printable(message)) {
			aw_reply_error(x->req, 400, "invalid", "message",
			               "'message' must be a string of at most %d printable bytes",
			               MESSAGE_MAX);
			goto out;
		}
	}
	v = json_object_get(doc, "host");
	if (v && !json_is_null(v)) {
		host = json_string_value(v);
		if (!host || !aw_valid_name(host)) {
			aw_reply_error(x->req, 400, "invalid", "host",
			               "host names are 1 to 64 characters from [A-Za-z0-9._-]");
			goto out;
		}
	}
	if (x->who.role == STORE_ROLE_AGENT) {
		if (host && strcmp(host, x->who.host)) {
			aw_reply_error(x->req, 403, "forbidden", "host",
			               "this token reports for host '%s', not '%s'", x->who.host,
			               host);
			goto out;
		}
		host = x->who.host;
	} else if (!host) {
		aw_reply_error(x->req, 400, "required", "host",
		               "'host' is required with a token that is not an agent's");
		goto out;
	}
	rc = aw_ctx_conn(x, &c);
	if (!rc)
		rc = store_job_set_state(c, id, host, state, run_id, message);
	if (rc == -ENOENT) {
		aw_reply_error(x->req, 404, "not_found", "id", "host '%s' has not claimed job %lld",
		               host, (long long)id);
	} else if (rc == -EPERM) {
		aw_reply_error(x->req, 409, "conflict", "state",
		               "job %lld is already finished on host '%s'", (long long)id, host);
	} else if (rc) {
		aw_reply_store_error(x->req, rc);
	} else {
		reply_job_view(x, c, id, 200);
	}
out:
	json_decref(doc);
}

/* ---- reads ---- */

void aw_jobs_get(struct aw_ctx *x)
{
	struct store_conn *c;
	int64_t id;
	int rc;

	if (aw_parse_id(x->param, &id)) {
		aw_reply_error(x->req, 400, "invalid", "id", "a job id is a positive number");
		return;
	}
	rc = aw_ctx_conn(x, &c);
	if (rc) {
		aw_reply_store_error(x->req, rc);
		return;
	}
	reply_job_view(x, c, id, 200);
}

static int on_listed_job(const struct store_job *j, void *cls)
{
	json_t *o = job_json(j);

	return o && !json_array_append_new(cls, o) ? 0 : -ENOMEM;
}

void aw_jobs_list(struct aw_ctx *x)
{
	const char *limit = aw_httpd_query(x->req, "limit");
	json_t *jobs = json_array();
	struct store_conn *c;
	uint64_t n = 50;
	int rc;

	if (limit && (aw_parse_u64(limit, 1000, &n) || !n)) {
		json_decref(jobs);
		aw_reply_error(x->req, 400, "invalid", "limit",
		               "'limit' must be a whole number from 1 to 1000");
		return;
	}
	rc = jobs ? aw_ctx_conn(x, &c) : -ENOMEM;
	if (!rc)
		rc = store_job_list(c, (unsigned)n, on_listed_job, jobs);
	if (rc) {
		json_decref(jobs);
		aw_reply_store_error(x->req, rc);
		return;
	}
	aw_reply_json(x->req, 200, json_pack("{s:o}", "jobs", jobs));
}
