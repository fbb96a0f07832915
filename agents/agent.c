/* One run of the agent (matrix, subject, refscale), the spool-then-upload path that never loses
 * a result, and the spool flush; see agent.h. The daemon loop is daemon.c. */
#include "agent.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atomwatch/runner.h"
#include "aw/log.h"
#include "aw/sha256.h"
#include "ab_build.h"
#include "aw/util.h"
#include "control.h"
#include "kmod.h"
#include "macro.h"
#include "refscale.h"
#include "subjects.h"

#ifndef AW_VERSION
#define AW_VERSION "0.0.0"
#endif

#define RESULTS_PATH "/api/v1/results"

int aw_agent_open(struct aw_agent *a, const struct aw_agent_config *cfg, volatile int *stop,
                  char **err)
{
	struct aw_http_client_opts ho = {0};
	char *token = NULL;
	int rc;

	memset(a, 0, sizeof(*a));
	a->cfg = cfg;
	a->stop = stop;
	a->policy.retries = cfg->retries;
	a->policy.backoff_ms = cfg->backoff_ms;
	a->policy.backoff_max_ms = cfg->backoff_max_ms;
	rc = aw_spool_open(&a->spool, cfg->spool_dir, err);
	if (rc)
		return rc;
	rc = aw_agent_read_token(cfg, &token, err);
	if (rc)
		goto fail;
	ho.base_url = cfg->url;
	ho.token = token;
	ho.ca_file = cfg->ca_file;
	ho.connect_timeout_ms = cfg->connect_timeout_ms;
	ho.timeout_ms = cfg->timeout_ms;
	ho.user_agent = AW_AGENT_PROG "/" AW_VERSION;
	a->http = aw_http_client_new(&ho, err);
	memset(token, 0, strlen(token));
	free(token);
	if (!a->http) {
		rc = -EINVAL;
		goto fail;
	}
	aw_http_client_set_stop(a->http, stop);
	return 0;
fail:
	aw_agent_close(a);
	return rc;
}

void aw_agent_close(struct aw_agent *a)
{
	aw_http_client_free(&a->http);
	aw_spool_close(&a->spool);
}

/* spool/logs/<subject>-<commit>-<time>.log */
static char *build_log_path(const struct aw_agent *a, const char *subject, const char *commit)
{
	char stamp[AW_TIME_LEN];

	aw_time_now(stamp);
	for (char *c = stamp; *c; c++)
		if (*c == ':')
			*c = '-';
	return aw_asprintf("%s/%s-%.12s-%s.log", a->spool.log_dir, subject,
	                   commit ? commit : "none", stamp);
}

static json_t *run_meta(const struct aw_agent_run *run, const struct aw_agent_subject *subject,
                        const char *log_path)
{
	json_t *meta = json_pack("{s:s}", "agent", AW_AGENT_PROG " " AW_VERSION);

	if (meta && run->meta && json_object_update(meta, (json_t *)run->meta))
		goto fail;
	if (meta && subject &&
	    json_object_set_new(meta, "subject",
	                        json_pack("{s:s, s:s, s:s?}", "name", subject->name, "library",
	                                  subject->library, "build_log", log_path)))
		goto fail;
	return meta;
fail:
	json_decref(meta);
	return NULL;
}

void aw_agent_runner_opts(const struct aw_agent *a, const char *profile,
                          struct aw_runner_opts *opts)
{
	const struct aw_agent_config *cfg = a->cfg;

	opts->matrix_path = cfg->matrix_file;
	opts->profile = profile ? profile : cfg->profile;
	opts->cpus = cfg->cpus;
	opts->ops = cfg->ops;
	opts->samples = cfg->samples;
	opts->host_name = cfg->host_name;
	opts->labels = cfg->labels;
	opts->stop = a->stop;
}

int aw_agent_measure(struct aw_agent *a, const struct aw_agent_run *run, struct aw_result **out,
                     char **err)
{
	return aw_agent_measure_keep(a, run, out, NULL, err);
}

int aw_agent_measure_keep(struct aw_agent *a, const struct aw_agent_run *run,
                          struct aw_result **out, struct aw_runner **keep, char **err)
{
	const struct aw_agent_config *cfg = a->cfg;
	const struct aw_agent_subject *subject = NULL;
	struct aw_runner_opts opts = {0};
	struct aw_progress prog = {0}, extra = {0};
	struct aw_runner *runner = NULL;
	struct aw_result *res = NULL;
	json_t *kernel = NULL;
	char *log_path = NULL, when[AW_TIME_LEN] = "";
	int rc = 0;

	*out = NULL;
	if (keep)
		*keep = NULL;
	if (run->built) {
		subject = run->built;
	} else if (run->subject) {
		subject = aw_agent_config_subject(cfg, run->subject);
		if (!subject) {
			char names[512];

			aw_agent_config_subject_names(cfg, names, sizeof(names));
			return aw_errorf(err, -EINVAL,
			                 "unknown subject '%s' (this agent's config defines: %s)",
			                 run->subject, names);
		}
	}
	aw_agent_runner_opts(a, run->profile, &opts);
	opts.keys = run->keys;
	opts.n_keys = run->n_keys;
	if (a->progress) {
		opts.progress = aw_progress_cb;
		opts.progress_arg = &prog;
	}
	if (run->reuse) {
		runner = run->reuse;
		aw_runner_select(runner, run->keys, run->n_keys);
		aw_runner_set_progress(runner, opts.progress, opts.progress_arg);
	} else {
		runner = aw_runner_new(&opts, err);
		if (!runner)
			return -EINVAL;
	}
	if (run->samples)
		aw_runner_set_samples(runner, run->samples);
	if (subject && !run->reuse && !run->built) {
		log_path = build_log_path(a, subject->name, run->commit);
		if (!log_path) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			goto out;
		}
		if (subject->build)
			aw_info("building subject '%s' (log: %s)", subject->name, log_path);
		rc = aw_subject_build(subject, run->project, run->commit, run->ref, -1, log_path,
		                      a->stop, err);
		if (rc)
			goto out;
	}
	aw_progress_init(&prog, AW_AGENT_PROG, runner);
	res = aw_runner_run(runner, err);
	if (!res) {
		rc = a->stop && *a->stop ? -EINTR : -EIO;
		goto out;
	}
	if (subject) {
		aw_progress_init(&extra, AW_AGENT_PROG, NULL);
		if (a->progress && !extra.tty)
			fprintf(stderr, AW_AGENT_PROG ": measuring subject '%s'\n", subject->name);
		rc = aw_subject_measure(runner, subject, res, a->progress ? &extra : NULL, a->stop,
		                        err);
		if (rc)
			goto out;
	}
	/* the control, which never changes: it moves only when the host does */
	rc = aw_control_measure(runner, res, err);
	if (rc)
		goto out;
	/* the macro check, when the profile has one: a workload that leans on the primitives */
	rc = aw_macro_measure(runner, res, a->stop, err);
	if (rc)
		goto out;
	if (cfg->kmod && !run->n_keys) {
		if (a->progress)
			fprintf(stderr,
			        AW_AGENT_PROG ": measuring the kernel's own ops (the %s "
			                      "module)\n",
			        AW_KMOD_NAME);
		kernel = json_object();
		rc = kernel ? aw_kmod_run(cfg, runner, a->spool.log_dir, res, kernel, a->stop, err)
		            : aw_errorf(err, -ENOMEM, "out of memory");
		if (rc)
			goto out;
	}
	if (cfg->n_refscale_types && !run->n_keys) {
		if (a->progress)
			fprintf(stderr,
			        AW_AGENT_PROG ": measuring kernel readers (refscale: %zu types)\n",
			        cfg->n_refscale_types);
		rc = aw_refscale_run(cfg, a->spool.log_dir, res, a->stop, err);
		if (rc)
			goto out;
	}
	aw_time_now(res->finished_at);
	res->trigger = run->trigger;
	json_decref(res->meta);
	res->meta = run_meta(run, subject, log_path);
	if (!res->meta || aw_set_str(&res->project, run->project) ||
	    aw_set_str(&res->commit, run->commit) || aw_set_str(&res->ref, run->ref) ||
	    (kernel && json_object_set(res->meta, "kernel", kernel)) ||
	    aw_set_str(&res->confirmation_of, run->confirmation_of)) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	res->confirm = run->confirmation_of ? 0 : run->confirm;
	if (run->commit_time) {
		snprintf(when, sizeof(when), "%s", run->commit_time);
	} else if (subject && run->commit) {
		/* the subject's own history orders its commits (a bisection measures old ones
		 * after new ones) */
		aw_subject_commit_time(a, subject, run->commit, when);
	}
	if (when[0] && aw_set_str(&res->commit_time, when)) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < res->n_cells; i++)
		if (res->cells[i].status == AW_CELL_FAILED)
			aw_warn("cell '%s' failed: %s", res->cells[i].key, res->cells[i].reason);
	*out = res;
	res = NULL;
out:
	json_decref(kernel);
	aw_result_free(&res);
	if (run->reuse) {
		aw_runner_set_progress(runner, NULL, NULL); /* `prog` goes out of scope */
		aw_runner_select(runner, NULL, 0);
	} else if (keep && !rc) {
		aw_runner_set_progress(runner, NULL, NULL);
		*keep = runner;
	} else {
		aw_runner_free(&runner);
	}
	free(log_path);
	return rc;
}

static void reply_message(const struct aw_http_client_reply *rep, char *buf, size_t len);

uint32_t aw_confirm_samples(uint32_t samples, unsigned confirm)
{
	uint64_t n = confirm ? 2 * (uint64_t)samples / confirm : samples;

	if (n > samples)
		n = samples;
	return n < AW_RUNNER_MIN_SAMPLES ? AW_RUNNER_MIN_SAMPLES : (uint32_t)n;
}

void aw_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void aw_suspects_release(struct aw_suspects *s)
{
	aw_strv_free(s->keys);
	aw_strv_free(s->anchors);
	memset(s, 0, sizeof(*s));
}

/* The strings of JSON array `list` (others skipped) into a new NULL-terminated *out and *n.
 * Returns 0 or -ENOMEM. */
static int string_list(const json_t *list, char ***out, size_t *n)
{
	*n = 0;
	*out = calloc(json_array_size(list) + 1, sizeof(char *));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < json_array_size(list); i++) {
		const char *k = json_string_value(json_array_get(list, i));

		if (!k)
			continue;
		(*out)[*n] = strdup(k);
		if (!(*out)[*n])
			return -ENOMEM;
		(*n)++;
	}
	return 0;
}

int aw_suspects_from_json(const json_t *doc, const char *run_id, struct aw_suspects *out,
                          char **err)
{
	const json_t *keys = json_object_get(doc, "suspects");
	const json_t *anchors = json_object_get(doc, "anchors");
	json_int_t budget = json_integer_value(json_object_get(doc, "confirm_budget"));
	const char *status = json_string_value(json_object_get(doc, "status"));
	int rc;

	memset(out, 0, sizeof(*out));
	if (!json_is_array(keys) || (anchors && !json_is_array(anchors)))
		return aw_errorf(err, -EPROTO, "the collector's suspects of run %s are unreadable",
		                 run_id);
	out->has_anchors = anchors != NULL;
	snprintf(out->status, sizeof(out->status), "%s", status ? status : "");
	out->confirm_budget = budget > 0 && budget <= UINT_MAX ? (unsigned)budget : 0;
	rc = string_list(keys, &out->keys, &out->n_keys);
	if (!rc)
		rc = string_list(anchors, &out->anchors, &out->n_anchors);
	if (rc) {
		aw_suspects_release(out);
		return aw_errorf(err, rc, "out of memory");
	}
	return 0;
}

int aw_agent_suspects(struct aw_agent *a, const char *run_id, struct aw_suspects *out, char **err)
{
	struct aw_http_client_reply rep;
	json_t *doc = NULL;
	char path[96];
	int rc = 0;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/api/v1/runs/%s/suspects", run_id);
	aw_http_client_reply_init(&rep);
	if (aw_upload_get(a->http, path, &a->policy, &rep) == AW_UPLOAD_DEFERRED) {
		if (rep.status)
			rc = aw_errorf(
			    err, -EIO,
			    "cannot ask the collector for the suspects of run %s: HTTP %ld", run_id,
			    rep.status);
		else
			rc = aw_errorf(err, -EIO,
			               "cannot ask the collector for the suspects of run %s: %s",
			               run_id, rep.error);
		goto out;
	}
	if (rep.status != 200) {
		char msg[256];

		reply_message(&rep, msg, sizeof(msg));
		rc = aw_errorf(err, -EIO,
		               "the collector refused the suspects of run %s (HTTP %ld: %s)",
		               run_id, rep.status, msg);
		goto out;
	}
	doc = json_loadb(rep.body.data ? rep.body.data : "", rep.body.len, 0, NULL);
	rc = aw_suspects_from_json(doc, run_id, out, err);
out:
	json_decref(doc);
	aw_http_client_reply_release(&rep);
	return rc;
}

const char *aw_confirm_stop_name(enum aw_confirm_stop s)
{
	switch (s) {
	case AW_CONFIRM_GO_ON:
		break;
	case AW_CONFIRM_NO_SUSPECT:
		return "no suspect left";
	case AW_CONFIRM_MAX_RUNS:
		return "the most re-measurements made";
	case AW_CONFIRM_BUDGET:
		return "time budget spent";
	case AW_CONFIRM_DEFERRED:
		return "upload deferred to the spool";
	case AW_CONFIRM_UNMEASURABLE:
		return "the suspects are kernel or refscale cells, not re-measured";
	}
	return "not stopped";
}

enum aw_confirm_stop aw_confirm_check(const struct aw_confirm_opts *o, size_t n_suspects,
                                      unsigned made, double measured_s)
{
	if (!n_suspects)
		return AW_CONFIRM_NO_SUSPECT;
	if (made >= o->max_runs)
		return AW_CONFIRM_MAX_RUNS;
	if (made && !(measured_s < o->budget_s))
		return AW_CONFIRM_BUDGET;
	return AW_CONFIRM_GO_ON;
}

/* The batches the first run measured per cell: the most any of cells keys[n] took there. */
static uint32_t first_samples(const struct aw_result *first, const char *const *keys, size_t n)
{
	uint64_t most = 0;

	for (size_t i = 0; i < first->n_cells; i++) {
		const struct aw_cell *c = &first->cells[i];

		for (size_t k = 0; k < n; k++)
			if (!strcmp(keys[k], c->key) && c->n > most)
				most = c->n;
	}
	return most > UINT32_MAX ? UINT32_MAX : (uint32_t)most;
}

/* The cells of one confirmation run: keys[n_keys], then each of anchors[n_anchors] that is not
 * among them. Returns a new array (the strings borrowed; free() it) with *n, or NULL. */
static const char **confirmation_keys(char *const *keys, size_t n_keys, char *const *anchors,
                                      size_t n_anchors, size_t *n)
{
	const char **out = calloc(n_keys + n_anchors + 1, sizeof(*out));

	*n = 0;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n_keys; i++)
		out[(*n)++] = keys[i];
	for (size_t i = 0; i < n_anchors; i++) {
		bool seen = false;

		for (size_t k = 0; k < *n && !seen; k++)
			seen = !strcmp(out[k], anchors[i]);
		if (!seen)
			out[(*n)++] = anchors[i];
	}
	return out;
}

/* Whether run `res` measured one of the cells keys[n]. */
static bool measured_one_of(const struct aw_result *res, char *const *keys, size_t n)
{
	for (size_t i = 0; i < res->n_cells; i++)
		for (size_t k = 0; k < n; k++)
			if (!strcmp(res->cells[i].key, keys[k]))
				return true;
	return false;
}

/* Waits until gap_s seconds have passed since `since` (aw_monotonic_ns()), woken early by the
 * agent's stop flag. Returns 0, or -EINTR when stopped. */
static int wait_gap(struct aw_agent *a, uint64_t since, double gap_s, double *waited_s)
{
	uint64_t until = since + (uint64_t)(gap_s * 1e9), t0 = aw_monotonic_ns();

	if (t0 < until)
		aw_sleep_ns(until - t0, a->stop);
	*waited_s += (double)(aw_monotonic_ns() - t0) / 1e9;
	return a->stop && *a->stop ? -EINTR : 0;
}

int aw_agent_remeasure(struct aw_agent *a, const struct aw_agent_run *run, const char *first_id,
                       const struct aw_suspects *start, const struct aw_confirm_opts *o,
                       struct aw_confirm_report *rep, char **err)
{
	struct aw_agent_run again = *run;
	struct aw_suspects now = {0}; /* the collector's latest answer, once asked again */
	const struct aw_suspects *cur = start;
	struct aw_runner *own = NULL;
	const char **keys = NULL;
	uint64_t last = aw_monotonic_ns(); /* the end of the last measurement (the first run's) */
	int rc = 0;

	memset(rep, 0, sizeof(*rep));
	snprintf(rep->status, sizeof(rep->status), "%s", start->status);
	again.samples = o->samples;
	again.confirmation_of = first_id;
	again.confirm = 0;
	if (start->n_keys)
		aw_info(
		    "run %s: %zu suspect cell%s, re-measuring %s with %zu anchor cell%s, at most "
		    "%u times or %.0f s (%" PRIu32 " batches each), %.0f s apart",
		    first_id, start->n_keys, start->n_keys == 1 ? "" : "s",
		    start->n_keys == 1 ? "it" : "them", start->n_anchors,
		    start->n_anchors == 1 ? "" : "s", o->max_runs, o->budget_s, o->samples,
		    o->gap_s);
	for (;;) {
		struct aw_result *res = NULL;
		enum aw_upload_outcome outcome;
		uint64_t t0;
		size_t n;

		rep->stop = aw_confirm_check(o, cur->n_keys, rep->runs, rep->measured_s);
		if (rep->stop != AW_CONFIRM_GO_ON)
			break;
		if (a->stop && *a->stop) {
			rc = -EINTR;
			break;
		}
		free(keys);
		keys =
		    confirmation_keys(cur->keys, cur->n_keys, start->anchors, start->n_anchors, &n);
		if (!keys) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			break;
		}
		again.keys = keys;
		again.n_keys = n;
		/* at another moment than the last measurement: a spell of the machine outlasts a
		 * run */
		if (o->gap_s > 0 && wait_gap(a, last, o->gap_s, &rep->waited_s)) {
			rc = -EINTR;
			break;
		}
		/* one runner for all of them: calibrated once, the subject built once */
		t0 = aw_monotonic_ns();
		rc = again.reuse ? aw_agent_measure(a, &again, &res, err)
		                 : aw_agent_measure_keep(a, &again, &res, &own, err);
		last = aw_monotonic_ns();
		rep->measured_s += (double)(last - t0) / 1e9;
		if (rc)
			break;
		if (own)
			again.reuse = own;
		if (!measured_one_of(res, cur->keys, cur->n_keys)) {
			aw_warn("run %s: its suspects are kernel or refscale cells, which a "
			        "confirmation does not re-measure",
			        first_id);
			rep->stop = AW_CONFIRM_UNMEASURABLE;
			aw_result_free(&res);
			break;
		}
		rc = aw_agent_submit(a, res, &outcome, err);
		if (!rc && outcome == AW_UPLOAD_REJECTED)
			rc = aw_errorf(err, -EINVAL, "the collector refused confirmation run %s",
			               res->run_id);
		if (rc) {
			aw_result_free(&res);
			break;
		}
		rep->runs++;
		rep->cells += res->n_cells;
		memcpy(rep->last_id, res->run_id, AW_UUID_LEN + 1);
		aw_info("confirmation %u of run %s: run %s (%zu cell%s)", rep->runs, first_id,
		        res->run_id, res->n_cells, res->n_cells == 1 ? "" : "s");
		aw_result_free(&res);
		if (outcome == AW_UPLOAD_DEFERRED) {
			/* the collector has not seen it: it cannot say what is still suspect */
			rep->deferred = true;
			rep->stop = AW_CONFIRM_DEFERRED;
			break;
		}
		aw_suspects_release(&now);
		rc = aw_agent_suspects(a, first_id, &now, err);
		if (rc)
			break;
		cur = &now;
		snprintf(rep->status, sizeof(rep->status), "%s", now.status);
	}
	if (!rc)
		aw_info("run %s: %u re-measurement%s, %zu cell%s, %.2f s measuring, %.0f s waiting "
		        "between them; the collector says '%s'; stopped: %s",
		        first_id, rep->runs, rep->runs == 1 ? "" : "s", rep->cells,
		        rep->cells == 1 ? "" : "s", rep->measured_s, rep->waited_s,
		        rep->status[0] ? rep->status : "unknown", aw_confirm_stop_name(rep->stop));
	free(keys);
	aw_suspects_release(&now);
	aw_runner_free(&own);
	return rc;
}

int aw_agent_confirm(struct aw_agent *a, const struct aw_agent_run *run,
                     const struct aw_result *first, const struct aw_confirm_opts *o,
                     struct aw_confirm_report *rep, char **err)
{
	struct aw_confirm_opts opts = *o;
	struct aw_suspects s;
	const char **keys = NULL;
	size_t n = 0;
	int rc;

	memset(rep, 0, sizeof(*rep));
	rc = aw_agent_suspects(a, first->run_id, &s, err);
	if (rc)
		return rc;
	if (!s.has_anchors) {
		/* an older collector: the first run's own anchors */
		const char *anchor[AW_ANCHORS];
		size_t k = aw_result_anchors(first, anchor, AW_ANCHORS);

		aw_strv_free(s.anchors);
		s.n_anchors = 0;
		s.anchors = calloc(k + 1, sizeof(char *));
		for (size_t i = 0; s.anchors && i < k; i++)
			if ((s.anchors[s.n_anchors] = strdup(anchor[i])))
				s.n_anchors++;
		if (!s.anchors || s.n_anchors < k) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			goto out;
		}
	}
	if (!opts.samples) {
		keys = confirmation_keys(s.keys, s.n_keys, s.anchors, s.n_anchors, &n);
		if (!keys) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			goto out;
		}
		opts.samples = first_samples(first, keys, n);
	}
	if (!s.n_keys)
		aw_info("run %s: no suspect cell, nothing to confirm", first->run_id);
	rc = aw_agent_remeasure(a, run, first->run_id, &s, &opts, rep, err);
out:
	free(keys);
	aw_suspects_release(&s);
	return rc;
}

/* The message of an error reply, or its first bytes. */
static void reply_message(const struct aw_http_client_reply *rep, char *buf, size_t len)
{
	json_t *doc = rep->body.len ? json_loadb(rep->body.data, rep->body.len, 0, NULL) : NULL;
	const char *msg =
	    json_string_value(json_object_get(json_object_get(doc, "error"), "message"));

	if (msg)
		snprintf(buf, len, "%s", msg);
	else if (rep->body.len)
		snprintf(buf, len, "%.200s", rep->body.data);
	else
		snprintf(buf, len, "no message");
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20)
			*c = ' ';
	json_decref(doc);
}

/* Uploads one spooled document and acts on the outcome (remove, reject, keep). Logs the
 * decision once. Returns 0 with *outcome, or a negative errno with *err when the spool could
 * not be changed. */
static int deliver(struct aw_agent *a, const char *path, const char *text, size_t len,
                   enum aw_upload_outcome *outcome, char **err)
{
	struct aw_http_client_reply rep;
	char msg[512];
	int rc = 0;

	aw_http_client_reply_init(&rep);
	*outcome = aw_upload_post(a->http, RESULTS_PATH, text, len, &a->policy, &rep);
	switch (*outcome) {
	case AW_UPLOAD_STORED:
		rc = aw_spool_remove(&a->spool, path, err);
		if (!rc)
			aw_info("uploaded %s (HTTP %ld%s)", path, rep.status,
			        rep.status == 200 ? ", already stored" : "");
		break;
	case AW_UPLOAD_REJECTED: {
		char *why =
		    aw_asprintf("HTTP %ld\n%s%s\n", rep.status, rep.body.data ? rep.body.data : "",
		                rep.truncated ? " [truncated]" : "");

		reply_message(&rep, msg, sizeof(msg));
		rc = why ? aw_spool_reject(&a->spool, path, why, strlen(why), err)
		         : aw_errorf(err, -ENOMEM, "out of memory");
		if (!rc)
			aw_error("the collector refused %s (HTTP %ld: %s); moved to %s/", path,
			         rep.status, msg, a->spool.rejected_dir);
		free(why);
		break;
	}
	case AW_UPLOAD_DEFERRED:
		if (rep.status == 401) {
			aw_error(
			    "the collector refused the agent's token (HTTP 401); %s stays in the "
			    "spool (check collector.token_file)",
			    path);
		} else if (!(a->stop && *a->stop)) {
			if (rep.status)
				snprintf(msg, sizeof(msg), "HTTP %ld", rep.status);
			else
				snprintf(msg, sizeof(msg), "%s", rep.error);
			aw_warn("cannot upload %s now (%s); it stays in the spool", path, msg);
		}
		break;
	}
	aw_http_client_reply_release(&rep);
	return rc;
}

int aw_agent_submit_json(struct aw_agent *a, const char *id, const json_t *doc,
                         enum aw_upload_outcome *outcome, char **err)
{
	/* 10 significant digits: 0.1 fs on a 1 ns figure, far below any timer, and a document
	 * the collector parses faster than one of 17-digit numbers (strtod dominates parsing) */
	char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(10));
	char *path = NULL;
	int rc;

	if (!text)
		return aw_errorf(err, -ENOMEM, "out of memory");
	rc = aw_spool_put(&a->spool, id, text, strlen(text), &path, err);
	if (!rc)
		rc = deliver(a, path, text, strlen(text), outcome, err);
	free(path);
	free(text);
	return rc;
}

int aw_agent_submit(struct aw_agent *a, const struct aw_result *r, enum aw_upload_outcome *outcome,
                    char **err)
{
	json_t *doc = aw_result_to_json(r);
	int rc;

	if (!doc)
		return aw_errorf(err, -ENOMEM, "out of memory");
	rc = aw_agent_submit_json(a, r->run_id, doc, outcome, err);
	json_decref(doc);
	return rc;
}

int aw_agent_flush(struct aw_agent *a, size_t *stored, size_t *rejected, size_t *left, char **err)
{
	char **paths = NULL;
	size_t n = 0, n_stored = 0, n_rejected = 0, i;
	int rc;

	rc = aw_spool_list(&a->spool, &paths, &n, err);
	if (rc)
		return rc;
	for (i = 0; i < n && !rc; i++) {
		enum aw_upload_outcome outcome;
		char *text = NULL, *why = NULL;
		json_error_t jerr;
		json_t *doc;
		size_t len;

		if (a->stop && *a->stop)
			break;
		if (aw_read_file(paths[i], AW_SPOOL_DOC_LIMIT, &text, &len, &why)) {
			if (why)
				aw_warn("%s", why);
			free(why);
			continue; /* gone (another flush took it) or unreadable: not ours to judge
			           */
		}
		doc = json_loadb(text, len, 0, &jerr);
		if (!doc) {
			why = aw_asprintf("not a JSON document (line %d, column %d: %s)", jerr.line,
			                  jerr.column, jerr.text);
			rc = why ? aw_spool_reject(&a->spool, paths[i], why, strlen(why), err)
			         : -ENOMEM;
			if (!rc)
				aw_error("%s is %s; moved to %s/", paths[i], why,
				         a->spool.rejected_dir);
			n_rejected += !rc;
			free(why);
			free(text);
			continue;
		}
		json_decref(doc);
		rc = deliver(a, paths[i], text, len, &outcome, err);
		free(text);
		if (rc)
			break;
		if (outcome == AW_UPLOAD_STORED)
			n_stored++;
		else if (outcome == AW_UPLOAD_REJECTED)
			n_rejected++;
		else
			break; /* the collector cannot take documents now: keep the rest for later
			        */
	}
	if (stored)
		*stored = n_stored;
	if (rejected)
		*rejected = n_rejected;
	if (left)
		*left = n - n_stored - n_rejected;
	aw_spool_list_free(&paths, &n);
	return rc;
}

/* The fields of the fingerprint that identify a platform state (not timer_hz: it moves with
 * every calibration). */
static bool compared_field(const char *k)
{
	return strcmp(k, "timer_hz") != 0;
}

json_t *aw_fingerprint_changes(const json_t *old_host, const json_t *new_host)
{
	json_t *changes = json_object(), *oc, *nc, *v;
	const char *k;
	bool ok = changes != NULL;

#define CHANGE(key, from, to)                                                                      \
	(ok =                                                                                      \
	     ok && !json_object_set_new(changes, key,                                              \
	                                json_pack("{s:O, s:O}", "from", from ? from : json_null(), \
	                                          "to", to ? to : json_null())))
	if (!ok)
		return NULL;
	oc = json_object_get(old_host, "platform_hash");
	nc = json_object_get(new_host, "platform_hash");
	if (!json_equal(oc, nc) && (oc || nc))
		CHANGE("platform_hash", oc, nc);
	oc = json_object_get(old_host, "changing");
	nc = json_object_get(new_host, "changing");
	json_object_foreach (nc, k, v) {
		json_t *before = json_object_get(oc, k);

		if (compared_field(k) && !json_equal(before, v) && !(json_is_null(v) && !before))
			CHANGE(k, before, v);
	}
	json_object_foreach (oc, k, v) {
		if (compared_field(k) && !json_object_get(nc, k) && !json_is_null(v))
			CHANGE(k, v, NULL);
	}
#undef CHANGE
	if (!ok) {
		json_decref(changes);
		return NULL;
	}
	return changes;
}

int aw_platform_commit(const json_t *host, char out[41])
{
	json_t *id = json_object(), *changing = json_object_get(host, "changing"), *v;
	char hex[AW_SHA256_HEX_LEN + 1];
	const char *k;
	char *text = NULL;
	int rc = -ENOMEM;

	if (!id)
		return -ENOMEM;
	if (json_object_set(id, "platform_hash",
	                    json_object_get(host, "platform_hash")
	                        ? json_object_get(host, "platform_hash")
	                        : json_null()))
		goto out;
	json_object_foreach (changing, k, v)
		if (compared_field(k) && json_object_set(id, k, v))
			goto out;
	text = json_dumps(id, JSON_COMPACT | JSON_SORT_KEYS);
	if (!text)
		goto out;
	rc = aw_sha256_hex(text, strlen(text), hex);
	if (!rc) {
		memcpy(out, hex, 40);
		out[40] = '\0';
	}
out:
	free(text);
	json_decref(id);
	return rc;
}
