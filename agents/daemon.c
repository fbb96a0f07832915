/* atomwatch-agent daemon: one loop that long-polls the collector for jobs (so it sleeps in the
 * kernel while idle), runs what is due (a job, the schedule, a changed fingerprint, a spool
 * flush) and remembers the last run's fingerprint and the last scheduled run in
 * spool/state.json. The collector only ever names a commit, a ref and a subject of our own
 * config: nothing it sends is executed. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ab.h"
#include "agent.h"
#include "bisect.h"
#include "atomwatch/runner.h"
#include "aw/log.h"
#include "aw/util.h"
#include "kernel.h"

#define STATE_LIMIT  (1u << 20)
#define MESSAGE_MAX  500 /* the collector takes 512 printable bytes */
#define STATUS_TRIES 3
#define MS           UINT64_C(1000000)

struct state {
	json_t *host;       /* fingerprint of the last run, or NULL */
	int64_t last_sched; /* realtime µs of the last scheduled run, 0: never */
	char *path;
};

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void state_load(struct state *s)
{
	char *text = NULL, *err = NULL;
	const char *t;
	size_t len;
	json_t *doc;

	if (aw_read_file(s->path, STATE_LIMIT, &text, &len, &err)) {
		free(err);
		return; /* first start */
	}
	doc = json_loadb(text, len, 0, NULL);
	free(text);
	if (!json_is_object(doc)) {
		aw_warn("ignoring '%s': not a JSON object", s->path);
		json_decref(doc);
		return;
	}
	if (json_is_object(json_object_get(doc, "fingerprint")))
		s->host = json_incref(json_object_get(doc, "fingerprint"));
	t = json_string_value(json_object_get(doc, "last_scheduled_run"));
	if (t && aw_time_parse(t, &s->last_sched))
		s->last_sched = 0;
	json_decref(doc);
}

static void state_save(const struct state *s)
{
	char when[AW_TIME_LEN] = "", *text, *err = NULL;
	struct timespec ts = {.tv_sec = (time_t)(s->last_sched / 1000000),
	                      .tv_nsec = (long)(s->last_sched % 1000000) * 1000};
	json_t *doc;

	if (s->last_sched)
		aw_time_format(&ts, when);
	doc = json_pack("{s:O?, s:s?}", "fingerprint", s->host, "last_scheduled_run",
	                s->last_sched ? when : NULL);
	text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
	if (!text || aw_write_file_atomic(s->path, text, strlen(text), &err))
		aw_warn("cannot save the daemon state: %s", err ? err : "out of memory");
	free(text);
	free(err);
	json_decref(doc);
}

static void state_set_host(struct state *s, const json_t *host)
{
	json_decref(s->host);
	s->host = json_deep_copy(host);
}

/* A job status message: printable, one line, short enough for the collector. */
static void clean_message(const char *in, char *out, size_t len)
{
	size_t n = 0;

	if (len > MESSAGE_MAX + 1)
		len = MESSAGE_MAX + 1;
	for (; in && *in && n + 1 < len; in++)
		out[n++] = (unsigned char)*in < 0x20 || *in == 0x7f ? ' ' : *in;
	out[n] = '\0';
}

/* POST /api/v1/jobs/{id}/status, a few tries. `interruptible` false: sent even while stopping
 * (the final "failed" of an interrupted job). */
static void report(struct aw_agent *a, json_int_t id, const char *state, const char *run_id,
                   const char *message, bool interruptible)
{
	char path[64], clean[MESSAGE_MAX + 1];
	int tries = interruptible ? STATUS_TRIES : 1; /* stopping: one quick try */
	struct aw_http_client_reply rep;
	json_t *body;
	char *text;

	clean_message(message, clean, sizeof(clean));
	body = json_pack("{s:s, s:s?, s:s?}", "state", state, "run_id", run_id, "message",
	                 message ? clean : NULL);
	text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!text) {
		aw_error("job %lld: cannot report '%s': out of memory", (long long)id, state);
		return;
	}
	snprintf(path, sizeof(path), "/api/v1/jobs/%lld/status", (long long)id);
	aw_http_client_reply_init(&rep);
	if (!interruptible)
		aw_http_client_set_stop(a->http, NULL);
	for (int i = 0; i < tries; i++) {
		int rc = aw_http_client_request(a->http, "POST", path, text, strlen(text),
		                                interruptible ? 0 : 5000, &rep);

		if (!rc && rep.status >= 200 && rep.status < 300)
			break;
		if (rc == -EINTR || (!rc && !aw_http_client_retryable(rep.status)) ||
		    i == tries - 1) {
			aw_warn("job %lld: cannot report '%s' (%s%ld)", (long long)id, state,
			        rc ? rep.error : "HTTP ", rc ? 0L : rep.status);
			break;
		}
		aw_sleep_ns(a->cfg->backoff_ms * MS, interruptible ? a->stop : NULL);
	}
	aw_http_client_set_stop(a->http, a->stop);
	aw_http_client_reply_release(&rep);
	free(text);
}

/* Measures and submits one run. The state (its fingerprint, and the period of a scheduled run)
 * is saved once the run is measured, before the upload: whoever sees the run on the collector
 * also sees the state that accounts for it, and a daemon restarted during a slow upload does
 * not measure the period again. Returns 0 with *outcome and the run id, or a negative errno
 * with *err (-EINTR: stopped). */
static int run_and_submit(struct aw_agent *a, struct state *st, const struct aw_agent_run *run,
                          enum aw_upload_outcome *outcome, char *run_id, char **err)
{
	struct aw_result *res = NULL;
	int rc = aw_agent_measure(a, run, &res, err);

	if (!rc) {
		memcpy(run_id, res->run_id, AW_UUID_LEN + 1);
		state_set_host(st, res->host);
		state_save(st);
		rc = aw_agent_submit(a, res, outcome, err);
	}
	aw_result_free(&res);
	malloc_trim(0); /* a run's memory goes back to the system while the daemon idles */
	return rc;
}

#define CONFIRM_CELLS_MAX 4096

/* The strings of the job's JSON array `list` (at most `max`, each a cell key) into a new
 * NULL-terminated *out and *n. Returns 0, -EPROTO (not such an array) or -ENOMEM. */
static int job_keys(const json_t *list, size_t max, char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!json_is_array(list) || json_array_size(list) > max)
		return -EPROTO;
	*out = calloc(json_array_size(list) + 1, sizeof(char *));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < json_array_size(list); i++) {
		const char *k = json_string_value(json_array_get(list, i));

		if (!k)
			return -EPROTO;
		(*out)[*n] = strdup(k);
		if (!(*out)[(*n)++])
			return -ENOMEM;
	}
	return 0;
}

/* A confirmation job (the collector's, for this daemon host's run with suspects): the adaptive
 * confirmation of aw_agent_remeasure(), starting with the job's cells and anchors, at most its
 * number of runs, with its batches per cell and the default time budget. A job without anchors
 * (from an older collector) takes them from the collector's suspects answer. Returns 0 with
 * *rep, or a negative errno with *err (-EPROTO: a job the agent cannot read). */
static int run_confirmation(struct aw_agent *a, const struct aw_agent_run *run,
                            const json_t *confirm, struct aw_confirm_report *rep, char **err)
{
	const char *of = json_string_value(json_object_get(confirm, "of"));
	const json_t *anchors = json_object_get(confirm, "anchors");
	json_int_t runs = json_integer_value(json_object_get(confirm, "runs"));
	json_int_t samples = json_integer_value(json_object_get(confirm, "samples"));
	struct aw_confirm_opts o = {.budget_s = AW_CONFIRM_DEFAULT_BUDGET_S,
	                            .gap_s = (double)a->cfg->confirm_gap_ms / 1000};
	struct aw_suspects start = {0}, asked = {0};
	int rc;

	memset(rep, 0, sizeof(*rep));
	if (!aw_valid_uuid(of) || runs < 1 || runs > AW_RESULT_MAX_CONFIRM || samples < 0 ||
	    samples > UINT32_MAX)
		return aw_errorf(err, -EPROTO, "the agent could not read this confirmation job");
	o.max_runs = (unsigned)runs;
	o.samples = (uint32_t)samples;
	rc = job_keys(json_object_get(confirm, "cells"), CONFIRM_CELLS_MAX, &start.keys,
	              &start.n_keys);
	if (!rc && anchors)
		rc = job_keys(anchors, CONFIRM_CELLS_MAX, &start.anchors, &start.n_anchors);
	if (!rc && !start.n_keys)
		rc = -EPROTO;
	if (rc) {
		rc = aw_errorf(err, rc,
		               rc == -ENOMEM ? "out of memory"
		                             : "the agent could not read this "
		                               "confirmation job");
		goto out;
	}
	if (!anchors) {
		rc = aw_agent_suspects(a, of, &asked, err);
		if (rc)
			goto out;
		start.anchors = asked.anchors;
		start.n_anchors = asked.n_anchors;
		asked.anchors = NULL;
	}
	rc = aw_agent_remeasure(a, run, of, &start, &o, rep, err);
out:
	aw_suspects_release(&asked);
	aw_suspects_release(&start);
	return rc;
}

/* An A/B job (atomwatch-ci trigger --ab): `atomwatch-agent ab` of the subject from ab_base to
 * the job's commit, the document uploaded like a run. */
static void run_ab_job(struct aw_agent *a, json_int_t id, const char *project, const char *ref,
                       const char *subject, const char *base, const char *head)
{
	struct aw_agent_ab ab = {
	    .project = project,
	    .ref = ref,
	    .subject = subject,
	    .base = base,
	    .head = head,
	    .rounds = AW_AB_DEFAULT_ROUNDS,
	    .layouts = 0, /* the default, at least the subject's ab_builds */
	    .budget_s = AW_AB_DEFAULT_BUDGET_S,
	};
	enum aw_upload_outcome outcome = AW_UPLOAD_REJECTED;
	const char *ab_id = NULL;
	json_t *doc = NULL;
	char *err = NULL;
	int rc;

	report(a, id, "running", NULL, NULL, true);
	rc = aw_agent_ab(a, &ab, &doc, &err);
	if (!rc) {
		ab_id = json_string_value(json_object_get(doc, "ab_id"));
		rc = aw_agent_submit_json(a, ab_id, doc, &outcome, &err);
	}
	if (rc == -EINTR || (a->stop && *a->stop)) {
		report(a, id, "failed", NULL, "the agent was stopped before the A/B finished",
		       false);
	} else if (rc) {
		aw_error("job %lld: %s", (long long)id, err);
		report(a, id, "failed", NULL, err, true);
	} else if (outcome == AW_UPLOAD_REJECTED) {
		report(a, id, "failed", ab_id,
		       "the collector rejected the A/B document (see the agent's rejected/ folder)",
		       true);
	} else {
		aw_info("job %lld: A/B document %s", (long long)id, ab_id);
		report(a, id, "done", ab_id,
		       outcome == AW_UPLOAD_STORED
		           ? "A/B document"
		           : "A/B document measured; the upload is pending in the agent's spool",
		       true);
	}
	json_decref(doc);
	free(err);
}

/* POSTs a bisection's progress (or its end) to the collector. Returns 0, -ECANCELED when the
 * collector says it was cancelled, or -EIO (the collector is away: the bisection goes on). */
static int post_bisect(struct aw_agent *a, json_int_t id, const char *state, const json_t *answer,
                       const char *message)
{
	char path[80], clean[MESSAGE_MAX + 1];
	struct aw_http_client_reply rep;
	json_t *body;
	char *text;
	int rc = -EIO;

	clean_message(message, clean, sizeof(clean));
	body = json_pack("{s:s, s:O?, s:s?}", "state", state, "answer", answer, "message",
	                 message ? clean : NULL);
	text = body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
	json_decref(body);
	if (!text)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/api/v1/bisects/%lld/progress", (long long)id);
	aw_http_client_reply_init(&rep);
	for (int i = 0; i < STATUS_TRIES; i++) {
		int r = aw_http_client_request(a->http, "POST", path, text, strlen(text), 0, &rep);

		if (!r && rep.status >= 200 && rep.status < 300) {
			rc = 0;
			break;
		}
		if (!r && rep.status == 409 && rep.body.data &&
		    strstr(rep.body.data, "cancelled")) {
			rc = -ECANCELED;
			break;
		}
		if (r == -EINTR || (!r && !aw_http_client_retryable(rep.status)))
			break;
		aw_sleep_ns(a->cfg->backoff_ms * MS, a->stop);
	}
	if (rc == -EIO)
		aw_warn("bisection %lld: cannot report its progress (%s%ld)", (long long)id,
		        rep.status ? "HTTP " : rep.error, rep.status);
	aw_http_client_reply_release(&rep);
	free(text);
	return rc;
}

struct bisect_job {
	struct aw_agent *a;
	json_int_t id;
};

static int bisect_progress(void *cls, const json_t *state)
{
	struct bisect_job *j = cls;

	/* a collector that cannot be reached does not stop the bisection; a cancel does */
	return post_bisect(j->a, j->id, "running", state, NULL) == -ECANCELED ? -ECANCELED : 0;
}

/* A bisection the collector queued (a finding of this host's platform): atomwatch-agent
 * bisect of the job's subject (or the step command's) between the finding's commits, its
 * progress and answer reported to /api/v1/bisects/{id}. */
static void run_bisect_job(struct aw_agent *a, json_int_t job_id, const char *project,
                           const char *ref, const char *subject, const json_t *bisect)
{
	const json_t *cells = json_object_get(bisect, "cells");
	const char *globs[AW_BISECT_MAX_GLOBS];
	struct bisect_job ctx = {a, json_integer_value(json_object_get(bisect, "id"))};
	struct aw_bisect_req req = {
	    .subject = subject ? subject : a->cfg->bisect_subject,
	    .good = json_string_value(json_object_get(bisect, "good")),
	    .bad = json_string_value(json_object_get(bisect, "bad")),
	    .project = project,
	    .ref = ref,
	    .cells = globs,
	    .id = ctx.id,
	    .progress = bisect_progress,
	    .progress_cls = &ctx,
	};
	char msg[MESSAGE_MAX + 1];
	json_t *answer = NULL;
	char *err = NULL;
	int rc;

	if (ctx.id <= 0 || !aw_valid_commit(req.good) || !aw_valid_commit(req.bad) ||
	    (!subject && !a->cfg->bisect_step)) {
		aw_error("job %lld: cannot read its bisection", (long long)job_id);
		report(a, job_id, "failed", NULL, "the agent could not read this bisection job",
		       true);
		return;
	}
	for (size_t i = 0; i < json_array_size(cells) && req.n_cells < AW_BISECT_MAX_GLOBS; i++)
		if (json_string_value(json_array_get(cells, i)))
			globs[req.n_cells++] = json_string_value(json_array_get(cells, i));
	report(a, job_id, "running", NULL, NULL, true);
	aw_info("job %lld: bisection %lld of %s %.12s..%.12s", (long long)job_id, (long long)ctx.id,
	        req.subject, req.good, req.bad);
	rc = aw_agent_bisect(a, &req, &answer, &err);
	if (rc == -ECANCELED) {
		aw_info("job %lld: bisection %lld was cancelled", (long long)job_id,
		        (long long)ctx.id);
		report(a, job_id, "failed", NULL, "the bisection was cancelled", true);
	} else if (rc == -EINTR || (a->stop && *a->stop)) {
		post_bisect(a, ctx.id, "failed", NULL, "the agent was stopped");
		report(a, job_id, "failed", NULL,
		       "the agent was stopped before the bisection finished", false);
	} else if (rc) {
		aw_error("job %lld: %s", (long long)job_id, err);
		post_bisect(a, ctx.id, "failed", NULL, err);
		report(a, job_id, "failed", NULL, err, true);
	} else {
		const char *culprit = json_string_value(json_object_get(answer, "culprit"));

		post_bisect(a, ctx.id, "done", answer, NULL);
		snprintf(msg, sizeof(msg), "bisection %lld: %s%s%s", (long long)ctx.id,
		         culprit ? "culprit " : "",
		         culprit ? culprit : json_string_value(json_object_get(answer, "outcome")),
		         "");
		aw_info("job %lld: %s", (long long)job_id, msg);
		report(a, job_id, "done", NULL, msg, true);
	}
	json_decref(answer);
	free(err);
}

static void run_job(struct aw_agent *a, struct state *st, const json_t *job)
{
	json_int_t id = json_integer_value(json_object_get(job, "id"));
	const char *project = json_string_value(json_object_get(job, "project"));
	const char *commit = json_string_value(json_object_get(job, "commit"));
	const char *ref = json_string_value(json_object_get(job, "ref"));
	const char *subject = json_string_value(json_object_get(job, "subject"));
	const char *ab_base;
	struct aw_agent_run run = {.project = project,
	                           .commit = commit,
	                           .ref = ref,
	                           .subject = subject,
	                           .trigger = AW_TRIGGER_CI};
	char run_id[AW_UUID_LEN + 1] = "", names[400], msg[MESSAGE_MAX + 1], summary[200] = "";
	enum aw_upload_outcome outcome;
	json_t *meta = NULL;
	char *err = NULL;
	int rc;

	if (id <= 0 || !aw_valid_name(project) || !aw_valid_commit(commit) || !aw_valid_ref(ref) ||
	    (json_object_get(job, "subject") && !json_is_null(json_object_get(job, "subject")) &&
	     !aw_valid_name(subject))) {
		aw_error("ignoring a malformed job from the collector");
		if (id > 0)
			report(a, id, "failed", NULL, "the agent could not read this job", true);
		return;
	}
	ab_base = json_string_value(json_object_get(job, "ab_base"));
	if (json_object_get(job, "ab_base") && (!aw_valid_commit(ab_base) || !subject)) {
		aw_error("ignoring a malformed A/B job from the collector");
		report(a, id, "failed", NULL, "the agent could not read this A/B job", true);
		return;
	}
	aw_info("job %lld: %s %s%s%s (%s)%s%s", (long long)id, project, ab_base ? ab_base : "",
	        ab_base ? ".." : "", commit, ref, subject ? ", subject " : "",
	        subject ? subject : "");
	if (subject && !aw_agent_config_subject(a->cfg, subject)) {
		aw_agent_config_subject_names(a->cfg, names, sizeof(names));
		snprintf(msg, sizeof(msg), "unknown subject '%s': this agent's config defines: %s",
		         subject, names);
		aw_error("job %lld: %s", (long long)id, msg);
		report(a, id, "failed", NULL, msg, true);
		return;
	}
	if (ab_base) {
		run_ab_job(a, id, project, ref, subject, ab_base, commit);
		return;
	}
	if (json_is_object(json_object_get(job, "bisect"))) {
		run_bisect_job(a, id, project, ref, subject, json_object_get(job, "bisect"));
		return;
	}
	report(a, id, "running", NULL, NULL, true);
	meta = json_pack("{s:I}", "job", id);
	run.meta = meta;
	if (json_is_object(json_object_get(job, "confirm"))) {
		struct aw_confirm_report rep;

		rc = run_confirmation(a, &run, json_object_get(job, "confirm"), &rep, &err);
		memcpy(run_id, rep.last_id, sizeof(run_id));
		outcome = rep.deferred ? AW_UPLOAD_DEFERRED : AW_UPLOAD_STORED;
		snprintf(summary, sizeof(summary),
		         "%u confirmation run%s; the collector says '%s'; stopped: %s", rep.runs,
		         rep.runs == 1 ? "" : "s", rep.status[0] ? rep.status : "unknown",
		         aw_confirm_stop_name(rep.stop));
		malloc_trim(0);
	} else {
		rc = run_and_submit(a, st, &run, &outcome, run_id, &err);
	}
	if (rc == -EINTR || (a->stop && *a->stop)) {
		aw_info("job %lld: stopped before the run finished", (long long)id);
		report(a, id, "failed", NULL, "the agent was stopped before the run finished",
		       false);
	} else if (rc) {
		aw_error("job %lld: %s", (long long)id, err);
		report(a, id, "failed", NULL, err, true);
	} else if (outcome == AW_UPLOAD_STORED) {
		report(a, id, "done", run_id[0] ? run_id : NULL, summary[0] ? summary : NULL, true);
	} else if (outcome == AW_UPLOAD_DEFERRED) {
		report(a, id, "done", run_id,
		       "measured; the upload is pending in the agent's spool", true);
	} else {
		report(a, id, "failed", run_id,
		       "the collector rejected the result (see the agent's rejected/ folder)",
		       true);
	}
	json_decref(meta);
	free(err);
}

/* A scheduled run (trigger schedule), with what changed in meta. */
static void run_scheduled(struct aw_agent *a, struct state *st, const json_t *host, json_t *changed,
                          const char *why)
{
	const struct aw_agent_config *cfg = a->cfg;
	struct aw_agent_run run = {.project = cfg->schedule_project,
	                           .commit = cfg->schedule_commit,
	                           .ref = cfg->schedule_ref,
	                           .trigger = AW_TRIGGER_SCHEDULE};
	char commit[41], run_id[AW_UUID_LEN + 1];
	enum aw_upload_outcome outcome;
	json_t *meta;
	char *err = NULL;
	int rc;

	if (run.commit && !strcmp(run.commit, AW_KERNEL_COMMIT)) {
		struct aw_kernel_id kid;

		/* the kernel's own commit where it names one, else the platform state's */
		run.commit = NULL;
		if (!aw_kernel_commit(&kid, &err)) {
			snprintf(commit, sizeof(commit), "%.40s", kid.commit);
			run.commit = commit;
		} else {
			aw_warn(
			    "schedule.commit is 'kernel', but %s; filed under the platform commit",
			    err);
			aw_freep(&err);
		}
	}
	if (!run.commit) {
		if (aw_platform_commit(host, commit)) {
			aw_error("cannot derive the platform commit: out of memory");
			return;
		}
		run.commit = commit;
	}
	meta = json_pack("{s:s}", "reason", why);
	if (meta && changed && json_object_size(changed))
		json_object_set(meta, "changed", changed);
	run.meta = meta;
	aw_info("scheduled run (%s): %s %s (%s)", why, run.project, run.commit, run.ref);
	/* the period is spent once a run starts, measured or not: a host whose runs fail does not
	 * retry at every start */
	st->last_sched = now_us();
	rc = run_and_submit(a, st, &run, &outcome, run_id, &err);
	if (rc)
		state_save(st); /* not measured: nothing saved it */
	if (rc && rc != -EINTR)
		aw_error("scheduled run: %s", err);
	json_decref(meta);
	free(err);
}

/* Checks the fingerprint against the last run's; runs when it changed. Returns the current
 * fingerprint (new reference) or NULL. */
static json_t *check_fingerprint(struct aw_agent *a, struct state *st, bool *ran)
{
	struct aw_runner_opts opts = {.host_name = a->cfg->host_name, .labels = a->cfg->labels};
	json_t *host, *changed;
	char *err = NULL;

	*ran = false;
	host = aw_runner_fingerprint(&opts, &err);
	if (!host) {
		aw_error("cannot take the host fingerprint: %s", err);
		free(err);
		return NULL;
	}
	if (!st->host) {
		/* nothing to compare with yet: this is the baseline */
		state_set_host(st, host);
		state_save(st);
		return host;
	}
	changed = aw_fingerprint_changes(st->host, host);
	if (changed && json_object_size(changed) && a->cfg->on_change) {
		const char *k;
		json_t *v;
		char list[256] = "";
		size_t o = 0;

		json_object_foreach (changed, k, v)
			o += (size_t)snprintf(list + o, o < sizeof(list) ? sizeof(list) - o : 0,
			                      "%s%s", o ? ", " : "", k);
		aw_info("the fingerprint changed (%s)", list);
		run_scheduled(a, st, host, changed, "fingerprint changed");
		*ran = true;
	}
	json_decref(changed);
	return host;
}

/* The next job, waiting up to wait_ms. Returns 1 with *job, 0 for none, -EINTR, or another
 * negative errno (the collector is unreachable or refuses). */
static int poll_job(struct aw_agent *a, const char *host, uint64_t wait_ms, json_t **job, char *why,
                    size_t why_len)
{
	struct aw_http_client_reply rep;
	char path[4096];
	uint64_t wait_s = wait_ms / 1000;
	size_t n;
	json_t *doc;
	int rc;

	*job = NULL;
	/* the subjects this agent builds, and the step command's, tell the collector which
	 * bisections it can run */
	n = snprintf(path, sizeof(path), "/api/v1/jobs/next?host=%s&wait=%llu&subjects=", host,
	             (unsigned long long)wait_s);
	for (size_t i = 0; i < a->cfg->n_subjects && n < sizeof(path); i++)
		n += (size_t)snprintf(path + n, sizeof(path) - n, "%s%s", i ? "," : "",
		                      a->cfg->subjects[i].name);
	if (a->cfg->bisect_step && n < sizeof(path))
		snprintf(path + n, sizeof(path) - n, "&step=%s", a->cfg->bisect_subject);
	aw_http_client_reply_init(&rep);
	rc = aw_http_client_request(a->http, "GET", path, NULL, 0,
	                            wait_ms + a->cfg->connect_timeout_ms + 30000, &rep);
	if (rc) {
		snprintf(why, why_len, "%s", rep.error);
	} else if (rep.status == 204) {
		rc = 0;
	} else if (rep.status == 200) {
		doc = json_loadb(rep.body.data ? rep.body.data : "", rep.body.len, 0, NULL);
		*job = json_incref(json_object_get(doc, "job"));
		json_decref(doc);
		rc = json_is_object(*job) ? 1 : -EPROTO;
		if (rc < 0) {
			json_decref(*job);
			*job = NULL;
			snprintf(why, why_len, "an unreadable job reply");
		}
	} else {
		snprintf(why, why_len, "HTTP %ld", rep.status);
		rc = -EIO;
	}
	aw_http_client_reply_release(&rep);
	return rc;
}

static uint64_t min3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a < b ? a : b;

	return m < c ? m : c;
}

int aw_agent_daemon(struct aw_agent *a, char **err)
{
	const struct aw_agent_config *cfg = a->cfg;
	struct state st = {0};
	json_t *host = NULL;
	char host_name[AW_NAME_MAX + 1], why[300];
	uint64_t next_flush, next_check, next_sched = UINT64_MAX, backoff_ms = cfg->backoff_ms;
	uint64_t backoff_cap =
	    cfg->backoff_max_ms < cfg->poll_wait_ms ? cfg->backoff_max_ms : cfg->poll_wait_ms;
	bool down = false, ran;
	int rc = 0;

	st.path = aw_asprintf("%s/state.json", a->spool.dir);
	if (!st.path)
		return aw_errorf(err, -ENOMEM, "out of memory");
	state_load(&st);
	host = check_fingerprint(a, &st, &ran);
	if (!host) {
		rc = aw_errorf(err, -EIO, "cannot take the host fingerprint");
		goto out;
	}
	snprintf(host_name, sizeof(host_name), "%s", aw_host_name(host));
	aw_info("daemon for host '%s' polling %s", host_name, cfg->url);
	next_flush = aw_monotonic_ns();
	next_check = aw_monotonic_ns() + cfg->check_every_ms * MS;
	if (cfg->schedule_every_ms) {
		int64_t since = st.last_sched ? now_us() - st.last_sched : INT64_MAX;
		uint64_t every_us = cfg->schedule_every_ms * 1000;

		next_sched = aw_monotonic_ns();
		if (ran)
			next_sched += cfg->schedule_every_ms * MS; /* it just measured */
		else if (since >= 0 && (uint64_t)since < every_us)
			next_sched += (every_us - (uint64_t)since) * 1000;
	}
	while (!*a->stop) {
		uint64_t now = aw_monotonic_ns(), wake, wait_ms;
		json_t *job = NULL;
		int got;

		if (now >= next_flush) {
			size_t stored = 0, rejected = 0, left = 0;
			char *ferr = NULL;

			if (aw_agent_flush(a, &stored, &rejected, &left, &ferr))
				aw_error("%s", ferr);
			else if (stored || rejected)
				aw_info("spool flushed: %zu uploaded, %zu rejected, %zu waiting",
				        stored, rejected, left);
			free(ferr);
			next_flush = aw_monotonic_ns() + cfg->flush_every_ms * MS;
			continue;
		}
		if (now >= next_check) {
			json_decref(host);
			host = check_fingerprint(a, &st, &ran);
			next_check = aw_monotonic_ns() + cfg->check_every_ms * MS;
			if (ran && cfg->schedule_every_ms)
				next_sched = aw_monotonic_ns() + cfg->schedule_every_ms * MS;
			continue;
		}
		if (now >= next_sched) {
			json_t *fp = host ? json_incref(host) : json_object();

			if (fp)
				run_scheduled(a, &st, fp, NULL,
				              st.last_sched ? "schedule" : "first scheduled run");
			json_decref(fp);
			next_sched = aw_monotonic_ns() + cfg->schedule_every_ms * MS;
			continue;
		}
		wake = min3(next_flush, next_check, next_sched);
		wait_ms = (wake - now) / MS;
		if (wait_ms > cfg->poll_wait_ms)
			wait_ms = cfg->poll_wait_ms;
		if (down) {
			/* the collector is unreachable: no polling in a loop, just wait a while */
			aw_sleep_ns((backoff_ms < wait_ms ? backoff_ms : wait_ms) * MS, a->stop);
			/* capped at a poll's length: a collector that is back is seen soon */
			backoff_ms = backoff_ms * 2 < backoff_cap ? backoff_ms * 2 : backoff_cap;
		}
		if (*a->stop)
			break;
		if (wait_ms < 1000)
			wait_ms = 1000;
		got = poll_job(a, host_name, wait_ms, &job, why, sizeof(why));
		if (got == -EINTR)
			break;
		if (got < 0) {
			if (!down)
				aw_warn(
				    "cannot reach the collector for jobs (%s); retrying with backoff",
				    why);
			down = true;
			continue;
		}
		if (down)
			aw_info("the collector answers again");
		down = false;
		backoff_ms = cfg->backoff_ms;
		if (got == 1) {
			run_job(a, &st, job);
			json_decref(job);
			next_flush = aw_monotonic_ns(); /* something may wait behind it */
		}
	}
	aw_info("stopping");
out:
	json_decref(host);
	json_decref(st.host);
	free(st.path);
	return rc;
}
