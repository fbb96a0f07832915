/* The bisection's way for ranges the agent cannot build itself (a kernel's): for each commit
 * it measures, the owner's step command (bisect.step, sh -c, in bisect.repo) builds, boots,
 * measures and uploads under that commit (ATOMWATCH_COMMIT and the others in its environment);
 * the agent then asks the collector how the commit compares with both ends
 * (GET /api/v1/compare) on the host its runs are filed under. A step that exits non-zero or
 * uploads nothing leaves its commit skipped, with the reason. See bisect_int.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomwatch/runner.h"
#include "aw/log.h"
#include "aw/util.h"
#include "bisect_int.h"
#include "proc.h"

#define STEP_ENV   7
#define REASON_MAX 400
#define QUERY_MAX  2048
#define MAX_RUNS_Q 1000

struct step_way {
	char host[AW_NAME_MAX + 1]; /* where the step's runs are filed */
	char *log_dir;
};

static int percent_encode(const char *in, char *out, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (; *in; in++) {
		unsigned char c = (unsigned char)*in;

		if (n + 4 > size)
			return -ENAMETOOLONG;
		if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
			out[n++] = (char)c;
		} else {
			out[n++] = '%';
			out[n++] = hex[c >> 4];
			out[n++] = hex[c & 15];
		}
	}
	out[n] = '\0';
	return 0;
}

/* GET `path` from the collector as JSON. Returns 0 with *doc, or -EIO with *err. */
static int get_json(struct bisect *x, const char *path, json_t **doc, char **err)
{
	struct aw_http_client_reply rep;
	enum aw_upload_outcome o;
	int rc = 0;

	*doc = NULL;
	aw_http_client_reply_init(&rep);
	o = aw_upload_get(x->a->http, path, &x->a->policy, &rep);
	if (o != AW_UPLOAD_STORED) {
		if (x->a->stop && *x->a->stop)
			rc = aw_errorf(err, -EINTR, "interrupted");
		else
			rc = aw_errorf(err, -EIO, "the collector did not answer %s: %s%ld", path,
			               rep.status ? "HTTP " : rep.error,
			               rep.status ? rep.status : 0L);
	} else {
		*doc = json_loadb(rep.body.data ? rep.body.data : "", rep.body.len, 0, NULL);
		if (!*doc)
			rc = aw_errorf(err, -EPROTO, "the collector's answer to %s is not JSON",
			               path);
	}
	aw_http_client_reply_release(&rep);
	return rc;
}

/* How many runs of `sha` the collector holds for the step's host. */
static int count_runs(struct bisect *x, const char *sha, size_t *n, char **err)
{
	struct step_way *w = x->method;
	char path[QUERY_MAX];
	json_t *doc = NULL;
	int rc;

	snprintf(path, sizeof(path), "/api/v1/runs?project=%s&host=%s&commit=%s&limit=%d",
	         x->project, w->host, sha, MAX_RUNS_Q);
	rc = get_json(x, path, &doc, err);
	if (!rc)
		*n = json_array_size(json_object_get(doc, "runs"));
	json_decref(doc);
	return rc;
}

/* Runs the step for `sha`. Returns 0 with *reason NULL (measured and uploaded), 0 with a
 * *reason (caller frees: the commit is skipped), or a negative errno with *err. */
static int run_step(struct bisect *x, const char *sha, char **reason, char **err)
{
	struct step_way *w = x->method;
	const struct aw_agent_config *cfg = x->a->cfg;
	const char *argv[] = {"/bin/sh", "-c", cfg->bisect_step, NULL};
	char *env[STEP_ENV] = {0}, *log_path = NULL, *tail = NULL;
	struct aw_proc proc = {0};
	size_t before = 0, after = 0;
	int fd = -1, code = 0, rc;

	*reason = NULL;
	rc = count_runs(x, sha, &before, err);
	if (rc)
		return rc;
	env[0] = aw_asprintf("ATOMWATCH_COMMIT=%s", sha);
	env[1] = aw_asprintf("ATOMWATCH_PROJECT=%s", x->project);
	env[2] = aw_asprintf("ATOMWATCH_REF=%s", x->ref);
	env[3] = aw_asprintf("ATOMWATCH_HOST=%s", w->host);
	env[4] = aw_asprintf("ATOMWATCH_BISECT_GOOD=%s", x->good);
	env[5] = aw_asprintf("ATOMWATCH_BISECT_BAD=%s", x->bad);
	env[6] = aw_asprintf("ATOMWATCH_BISECT_ID=%lld", (long long)x->req->id);
	log_path = aw_asprintf("%s/%s-bisect-step-%.12s.log", w->log_dir, x->req->subject, sha);
	for (int i = 0; i < STEP_ENV; i++)
		if (!env[i])
			rc = -ENOMEM;
	if (rc || !log_path) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0) {
		rc = aw_errorf(err, -errno, "cannot create the step log '%s': %s", log_path,
		               strerror(errno));
		goto out;
	}
	dprintf(fd, "# atomwatch-agent bisect: the step for %s in %s\n$ %s\n", sha,
	        x->repo.toplevel, cfg->bisect_step);
	aw_info("bisect: the step command for %.12s (log: %s)", sha, log_path);
	x->builds++;
	proc.argv = argv;
	proc.env = (const char *const *)env;
	proc.n_env = STEP_ENV;
	proc.dir = x->repo.toplevel;
	proc.log_fd = fd;
	proc.timeout_ms = cfg->bisect_timeout_ms;
	proc.stop = x->a->stop;
	rc = aw_proc_run(&proc, &code, err);
	close(fd);
	fd = -1;
	if (rc == -EINTR)
		goto out;
	if (rc || code) {
		tail = aw_ab_log_tail(log_path);
		aw_freep(err);
		if (code)
			*reason =
			    aw_asprintf("the step command exited with status %d; the last lines "
			                "of %s: %s",
			                code, log_path, tail ? tail : "");
		else
			*reason = aw_asprintf("the step command %s; the last lines of %s: %s",
			                      rc == -ETIMEDOUT ? "ran out of time and was killed"
			                                       : "could not run",
			                      log_path, tail ? tail : "");
		rc = *reason ? 0 : aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	rc = count_runs(x, sha, &after, err);
	if (!rc && after <= before) {
		*reason = aw_asprintf("the step command exited with status 0 but uploaded nothing: "
		                      "the collector holds no new run of %s on host %s",
		                      sha, w->host);
		rc = *reason ? 0 : aw_errorf(err, -ENOMEM, "out of memory");
	}
out:
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < STEP_ENV; i++)
		free(env[i]);
	free(log_path);
	free(tail);
	return rc;
}

static enum aw_ab_verdict verdict_of(const char *word)
{
	if (!word)
		return AW_AB_VERDICT_UNKNOWN;
	if (!strcmp(word, "regressed"))
		return AW_AB_VERDICT_REGRESSED;
	if (!strcmp(word, "unchanged"))
		return AW_AB_VERDICT_UNCHANGED;
	if (!strcmp(word, "improved"))
		return AW_AB_VERDICT_IMPROVED;
	if (!strcmp(word, "noisy"))
		return AW_AB_VERDICT_INCONCLUSIVE;
	if (!strcmp(word, "new"))
		return AW_AB_VERDICT_NEW;
	if (!strcmp(word, "missing"))
		return AW_AB_VERDICT_MISSING;
	return AW_AB_VERDICT_UNKNOWN;
}

static double log1p_or_nan(const json_t *v)
{
	return json_is_number(v) && json_number_value(v) > -1 ? log1p(json_number_value(v)) : NAN;
}

/* The collector's comparison of `head` with `base` on the step's host: its cells (every one,
 * or `key` alone), each as {key, bisect_cmp}. */
static int collector_compare(struct bisect *x, const char *base, const char *head, const char *key,
                             json_t **cells, char **err)
{
	struct step_way *w = x->method;
	char path[QUERY_MAX], enc[1024];
	json_t *doc = NULL, *hosts;
	size_t n, i;
	int rc;

	*cells = NULL;
	n = (size_t)snprintf(path, sizeof(path),
	                     "/api/v1/compare?project=%s&base=%s&head=%s&host=%s&all=1", x->project,
	                     base, head, w->host);
	if (key && !percent_encode(key, enc, sizeof(enc)))
		snprintf(path + n, sizeof(path) - n, "&cells=%s", enc);
	for (i = 0; !key && i < x->req->n_cells && n < sizeof(path); i++)
		if (!percent_encode(x->req->cells[i], enc, sizeof(enc)))
			n += (size_t)snprintf(path + n, sizeof(path) - n, "&cells=%s", enc);
	rc = get_json(x, path, &doc, err);
	if (rc)
		return rc;
	hosts = json_object_get(doc, "hosts");
	for (i = 0; i < json_array_size(hosts); i++) {
		const char *h =
		    json_string_value(json_object_get(json_array_get(hosts, i), "host"));

		if (h && !strcmp(h, w->host))
			break;
	}
	*cells = json_incref(json_object_get(json_array_get(hosts, i), "cells"));
	json_decref(doc);
	if (!json_is_array(*cells)) {
		json_decref(*cells);
		*cells = NULL;
		return aw_errorf(err, -EPROTO,
		                 "the collector compared no run of %.12s with %.12s on "
		                 "host %s",
		                 head, base, w->host);
	}
	return 0;
}

/* A cell of the collector's comparison, in the bisection's terms. The collector's words serve
 * its gate (a suspect is regressed in fewer runs than it confirms with; a head in a mode the
 * history has shown is noisy, a small move improved), while a step measures each commit once or
 * a few times, so the p50's bounds decide against the cell's threshold: regressed when the
 * collector says so, or the lower bound is above 0 and the change reaches the threshold;
 * unchanged (no slower) when the upper bound stays under the threshold; else inconclusive. */
static struct bisect_cmp cmp_of(const json_t *cell)
{
	const json_t *p50 = json_object_get(cell, "p50");
	const char *word = json_string_value(json_object_get(cell, "verdict"));
	struct bisect_cmp c = {log1p_or_nan(json_object_get(p50, "change")),
	                       log1p_or_nan(json_object_get(p50, "change_lo")),
	                       log1p_or_nan(json_object_get(p50, "change_hi")), verdict_of(word)};
	double threshold = log1p_or_nan(json_object_get(p50, "threshold"));

	if (c.verdict == AW_AB_VERDICT_REGRESSED || c.verdict == AW_AB_VERDICT_NEW ||
	    c.verdict == AW_AB_VERDICT_MISSING)
		return c;
	if (c.hi < threshold && c.est < threshold)
		c.verdict = AW_AB_VERDICT_UNCHANGED;
	else if (c.lo > 0 && c.est >= threshold)
		c.verdict = AW_AB_VERDICT_REGRESSED;
	else
		c.verdict = AW_AB_VERDICT_INCONCLUSIVE;
	return c;
}

/* The comparison of the followed cell. */
static int followed(struct bisect *x, const char *base, const char *head, struct bisect_cmp *out,
                    char **err)
{
	json_t *cells = NULL;
	size_t i;
	int rc = collector_compare(x, base, head, x->cell_key, &cells, err);

	*out = (struct bisect_cmp){NAN, NAN, NAN, AW_AB_VERDICT_MISSING};
	for (i = 0; !rc && i < json_array_size(cells); i++) {
		const char *k = json_string_value(json_object_get(json_array_get(cells, i), "key"));

		if (k && !strcmp(k, x->cell_key))
			*out = cmp_of(json_array_get(cells, i));
	}
	json_decref(cells);
	return rc;
}

static int step_ends(struct bisect *x, json_t *step, bool *decided, bool *regressed,
                     struct bisect_cmp *range, char **err)
{
	const char *ends[2] = {x->good, x->bad};
	json_t *cells = NULL, *list = json_array(), *c;
	double best = -INFINITY;
	bool inconclusive = false;
	size_t i;
	int rc = 0;

	*decided = *regressed = false;
	for (int e = 0; e < 2 && !rc; e++) {
		char *reason = NULL;

		rc = run_step(x, ends[e], &reason, err);
		if (!rc && reason) {
			rc = aw_errorf(err, -EIO, "the %s end %s cannot be measured: %s",
			               e ? "bad" : "good", ends[e], reason);
			free(reason);
		}
	}
	if (!rc)
		rc = collector_compare(x, x->good, x->bad, NULL, &cells, err);
	json_array_foreach (cells, i, c) {
		struct bisect_cmp cmp = cmp_of(c);
		const char *key = json_string_value(json_object_get(c, "key"));

		if (!key || !bisect_wants(x, key))
			continue;
		if (list)
			json_array_append_new(list, json_pack("{s:s, s:o}", "cell", key, "range",
			                                      bisect_cmp_json(&cmp)));
		inconclusive = inconclusive || cmp.verdict == AW_AB_VERDICT_INCONCLUSIVE;
		if (cmp.verdict == AW_AB_VERDICT_REGRESSED && isfinite(cmp.est) && cmp.est > best) {
			best = cmp.est;
			*range = cmp;
			snprintf(x->cell_key, sizeof(x->cell_key), "%s", key);
		}
	}
	if (!rc && isfinite(best)) {
		*regressed = *decided = true;
		json_object_set_new(step, "cell", json_string(x->cell_key));
	} else if (!rc) {
		*decided = !inconclusive;
	}
	if (list)
		json_object_set_new(step, "cells", list);
	json_decref(cells);
	return rc;
}

static int step_probe(struct bisect *x, size_t pos, json_t *step, enum probe_verdict *v,
                      struct bisect_cmp *from_good, struct bisect_cmp *to_bad, char **err)
{
	const char *sha = x->c[pos - 1].sha;
	char *reason = NULL;
	int rc = run_step(x, sha, &reason, err);

	if (rc)
		return rc;
	if (reason) {
		char short_reason[REASON_MAX + 1];

		bisect_reason(reason, short_reason, sizeof(short_reason));
		aw_warn("skipping %.12s: %s", sha, short_reason);
		json_object_set_new(step, "reason", json_string(short_reason));
		*v = PROBE_SKIPPED;
		free(reason);
		return 0;
	}
	rc = followed(x, x->good, sha, from_good, err);
	if (!rc)
		rc = followed(x, sha, x->bad, to_bad, err);
	if (!rc)
		*v = bisect_classify(from_good, to_bad, x->range_change);
	return rc;
}

const struct bisect_method bisect_step_method = {step_ends, step_probe, NULL, NULL};

int bisect_step_open(struct bisect *x, char **err)
{
	const struct aw_agent_config *cfg = x->a->cfg;
	const char *args[] = {"rev-parse", "--show-toplevel", NULL};
	struct step_way *w;
	struct aw_buf out;
	int code = 0, rc;

	if (!cfg->bisect_step || !cfg->bisect_repo)
		return aw_errorf(err, -EINVAL,
		                 "subject '%s': a bisection by step command needs bisect.step and "
		                 "bisect.repo in the config",
		                 x->req->subject);
	w = calloc(1, sizeof(*w));
	if (!w)
		return aw_errorf(err, -ENOMEM, "out of memory");
	x->method = w;
	x->m = &bisect_step_method;
	w->log_dir = x->a->spool.log_dir;
	if (cfg->bisect_host) {
		snprintf(w->host, sizeof(w->host), "%s", cfg->bisect_host);
	} else {
		struct aw_runner_opts opts = {.host_name = cfg->host_name, .labels = cfg->labels};
		json_t *fp = aw_runner_fingerprint(&opts, err);

		if (!fp)
			return -EIO;
		snprintf(w->host, sizeof(w->host), "%s", aw_host_name(fp));
		json_decref(fp);
	}
	x->repo = (struct aw_ab_repo){.a = x->a, .tag = "bisect"};
	x->repo.toplevel = realpath(cfg->bisect_repo, NULL);
	if (!x->repo.toplevel)
		return aw_errorf(err, -EINVAL, "bisect.repo %s: %s", cfg->bisect_repo,
		                 strerror(errno));
	aw_buf_init(&out, 4096);
	rc = aw_ab_git(&x->repo, args, &out, -1, &code, err);
	if (!rc && code)
		rc = aw_errorf(err, -EINVAL, "bisect.repo %s is not a git repository",
		               cfg->bisect_repo);
	aw_buf_release(&out);
	return rc;
}

void bisect_step_close(struct bisect *x)
{
	free(x->method);
	x->method = NULL;
}
