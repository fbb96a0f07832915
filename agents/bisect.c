/* Bisection of a commit range; see bisect.h. This file holds the loop (list the commits, measure
 * the ends, halve the range, answer) and the subject's way of measuring: each commit built in a
 * worktree of its own (ab_build.h), loaded `BISECT_LAYOUTS` + 1 times, and compared with both
 * ends by the interleaved A/B's measuring (ab_measure_cell(), decided by aw_ab_decide()). */
#include "bisect.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ab.h"
#include "ab_measure.h"
#include "atomwatch/runner.h"
#include "aw/log.h"
#include "aw/util.h"
#include "bisect_int.h"
#include "control.h"

#define BISECT_LAYOUTS  4   /* loads of each build beside its first (ab's default) */
#define BISECT_ROUNDS   400 /* rounds at most per comparison (ab's default) */
#define BISECT_CMP_S    10  /* seconds of measuring at most per comparison */
#define BISECT_EXTRA    4   /* the default budget: the expected steps and this many more */
#define LIST_LIMIT      (size_t)(AW_BISECT_MAX_COMMITS * 41 + 4096)
#define REASON_MAX      400  /* of a skipped commit's reason in the answer */
#define MAX_CELL_CHOICE 64   /* cells compared at the ends */
#define MAX_LISTED      1000 /* candidates listed in an answer */

const char *aw_bisect_outcome_name(enum aw_bisect_outcome o)
{
	switch (o) {
	case AW_BISECT_CULPRIT:
		return "culprit";
	case AW_BISECT_CANDIDATES:
		return "candidates";
	case AW_BISECT_NONE:
		return "no regression";
	case AW_BISECT_BUDGET:
		return "budget";
	}
	return "budget";
}

/* ---- shared helpers (bisect_int.h) ---- */

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

json_t *bisect_cmp_json(const struct bisect_cmp *c)
{
	return json_pack("{s:o, s:o, s:o, s:s}", "ratio", num(exp(c->est)), "lo", num(exp(c->lo)),
	                 "hi", num(exp(c->hi)), "verdict", aw_ab_verdict_name(c->verdict));
}

/* Where the bounds put the probe against half the range's change: each comparison whose
 * interval lies wholly on one side of it votes; none, or votes both ways, is inconclusive. */
static enum probe_verdict by_half(const struct bisect_cmp *from_good,
                                  const struct bisect_cmp *to_bad, double range)
{
	double half = range / 2;
	bool good, bad;

	if (!(range > 0) || !isfinite(range))
		return PROBE_INCONCLUSIVE;
	/* slower than good by more than half of it: the change came before the probe; bad
	 * slower than the probe by more than half of it: the change is still to come */
	bad = (isfinite(from_good->lo) && from_good->lo > half) ||
	      (isfinite(to_bad->hi) && to_bad->hi < half);
	good = (isfinite(from_good->hi) && from_good->hi < half) ||
	       (isfinite(to_bad->lo) && to_bad->lo > half);
	if (good == bad)
		return PROBE_INCONCLUSIVE;
	return good ? PROBE_GOOD : PROBE_BAD;
}

enum probe_verdict bisect_classify(const struct bisect_cmp *from_good,
                                   const struct bisect_cmp *to_bad, double range)
{
	enum aw_ab_verdict g = from_good->verdict, b = to_bad->verdict;

	if (g == AW_AB_VERDICT_REGRESSED && b == AW_AB_VERDICT_UNCHANGED)
		return PROBE_BAD;
	if (g == AW_AB_VERDICT_UNCHANGED && b == AW_AB_VERDICT_REGRESSED)
		return PROBE_GOOD;
	/* slower than good and faster than bad: the larger share of the change is the side the
	 * bisection follows (two regressions follow the larger), once the bounds cannot place the
	 * probe by half the change and both comparisons are narrower than half of it: one as wide
	 * cannot tell which side holds more (ASan's e2e.agent.bisect: a probe after a +5% culprit
	 * read +3.6% from good and +15% [+0.06, +33] to bad, and the bisection followed the wrong
	 * side), and the probe is measured again */
	if (g == AW_AB_VERDICT_REGRESSED && b == AW_AB_VERDICT_REGRESSED) {
		enum probe_verdict v = by_half(from_good, to_bad, range);

		if (v != PROBE_INCONCLUSIVE)
			return v;
		if (isfinite(range) && (!(from_good->hi - from_good->lo < range / 2) ||
		                        !(to_bad->hi - to_bad->lo < range / 2)))
			return PROBE_INCONCLUSIVE;
		return from_good->est >= to_bad->est ? PROBE_BAD : PROBE_GOOD;
	}
	return by_half(from_good, to_bad, range);
}

void bisect_reason(const char *why, char *out, size_t size)
{
	size_t len = strlen(why), head = strcspn(why, "\n");

	if (len < size) {
		snprintf(out, size, "%s", why);
		return;
	}
	/* what happened (the first line) and how it ended (the log's last lines) */
	if (head > size / 3)
		head = size / 3;
	snprintf(out, size, "%.*s ... %s", (int)head, why, why + len - (size - head - 6));
}

bool bisect_wants(const struct bisect *x, const char *key)
{
	if (!x->req->n_cells)
		return true;
	for (size_t i = 0; i < x->req->n_cells; i++)
		if (!fnmatch(x->req->cells[i], key, 0))
			return true;
	return false;
}

int bisect_git(struct bisect *x, const char *const *args, struct aw_buf *out, int *code, char **err)
{
	return aw_ab_git(&x->repo, args, out, -1, code, err);
}

/* ---- the range ---- */

/* The full id of `spec` as a commit, or -EINVAL naming it (`what`: "--good"). */
static int resolve(struct bisect *x, const char *spec, const char *what, char out[41], char **err)
{
	char *arg = aw_asprintf("%s^{commit}", spec);
	const char *args[] = {"rev-parse", "--verify", "--quiet", arg, NULL};
	struct aw_buf b;
	int code = 0, rc;

	if (!arg)
		return aw_errorf(err, -ENOMEM, "out of memory");
	aw_buf_init(&b, 4096);
	rc = bisect_git(x, args, &b, &code, err);
	if (!rc && (code || b.len < 40))
		rc = aw_errorf(err, -EINVAL, "%s %s: no such commit in %s", what, spec,
		               x->repo.toplevel);
	if (!rc) {
		memcpy(out, b.data, 40);
		out[40] = '\0';
		if (!aw_valid_commit(out))
			rc = aw_errorf(err, -EINVAL, "%s %s: git named it '%.40s', not a commit id",
			               what, spec, out);
	}
	aw_buf_release(&b);
	free(arg);
	return rc;
}

/* Lists the commits after good up to bad, first-parent, oldest first. */
static int list_range(struct bisect *x, char **err)
{
	char *range = aw_asprintf("%s..%s", x->good, x->bad);
	const char *ancestor[] = {"merge-base", "--is-ancestor", x->good, x->bad, NULL};
	const char *list[] = {"rev-list", "--first-parent", "--reverse", range, NULL};
	struct aw_buf b;
	size_t cap = 0;
	int code = 0, rc;

	if (!range)
		return aw_errorf(err, -ENOMEM, "out of memory");
	aw_buf_init(&b, LIST_LIMIT);
	rc = bisect_git(x, ancestor, NULL, &code, err);
	if (!rc && code == 1)
		rc = aw_errorf(
		    err, -EINVAL,
		    "--good %s is not an ancestor of --bad %s: there is no range between "
		    "them to bisect (swap them, or pick a good commit before the bad one)",
		    x->good, x->bad);
	else if (!rc && code)
		rc = aw_errorf(err, -EIO, "git merge-base --is-ancestor failed (exit status %d)",
		               code);
	if (!rc)
		rc = bisect_git(x, list, &b, &code, err);
	if (!rc && code)
		rc = aw_errorf(err, -EIO, "git rev-list %s failed (exit status %d)", range, code);
	for (size_t at = 0; !rc && at + 40 <= b.len;) {
		size_t end = at;

		while (end < b.len && b.data[end] != '\n')
			end++;
		if (end - at == 40) {
			if (x->n >= AW_BISECT_MAX_COMMITS) {
				rc = aw_errorf(err, -EINVAL,
				               "the range %.12s..%.12s holds more than "
				               "%d commits",
				               x->good, x->bad, AW_BISECT_MAX_COMMITS);
				break;
			}
			if (aw_array_reserve(&x->c, x->n, &cap, sizeof(*x->c), 64)) {
				rc = aw_errorf(err, -ENOMEM, "out of memory");
				break;
			}
			memset(&x->c[x->n], 0, sizeof(x->c[x->n]));
			memcpy(x->c[x->n].sha, b.data + at, 40);
			x->n++;
		}
		at = end + 1;
	}
	if (!rc && !x->n)
		rc = aw_errorf(err, -EINVAL,
		               "the range %s..%s is empty: --good and --bad are the "
		               "same commit, so there is nothing to bisect",
		               x->good, x->bad);
	if (!rc && strcmp(x->c[x->n - 1].sha, x->bad))
		rc = aw_errorf(err, -EIO, "git rev-list %s did not end at %s", range, x->bad);
	aw_buf_release(&b);
	free(range);
	return rc;
}

/* ---- the subject's way: builds compared in one process ---- */

/* One build and its loads: lib (the first, which every slice of a comparison measures when
 * the build is the base) and BISECT_LAYOUTS copies, each at a path of its own. */
struct build {
	struct aw_ab_side side;
	struct aw_subject_lib copy[BISECT_LAYOUTS];
	char *copy_path[BISECT_LAYOUTS];
	bool built;
};

struct subject_way {
	const struct aw_agent_subject *s;
	struct build good, bad, probe;
	int cpu;
	bool reader;
	char name[AW_NAME_MAX + 1]; /* the op or reader followed */
	uint64_t rng;
	struct aw_runner *runner;     /* for the runs, kept: calibrated once */
	struct aw_result *pending[2]; /* runs measured, not uploaded yet */
	const char **keys;            /* the cells of the runs */
	size_t n_keys;
	char control_key[128];
};

static uint64_t next_random(uint64_t *v)
{
	*v ^= *v >> 12;
	*v ^= *v << 25;
	*v ^= *v >> 27;
	return *v * UINT64_C(0x2545f4914f6cdd1d);
}

static void build_release(struct bisect *x, struct build *b)
{
	for (int k = 0; k < BISECT_LAYOUTS; k++) {
		aw_subject_close(&b->copy[k]);
		if (b->copy_path[k])
			unlink(b->copy_path[k]);
		aw_freep(&b->copy_path[k]);
	}
	aw_ab_side_release(&x->repo, &b->side);
	b->built = false;
}

/* Builds and loads commit `sha` as `name`. A build that fails is -ENOEXEC with *err (the
 * caller decides: an end fails the bisection, a probe is skipped). */
static int build_load(struct bisect *x, struct subject_way *w, struct build *b, const char *name,
                      const char *sha, char **err)
{
	int rc;

	b->side = (struct aw_ab_side){.name = name, .commit = sha};
	x->builds++;
	rc = aw_ab_side_build(&x->repo, &b->side, 1, err);
	if (rc == -EINTR)
		return rc;
	if (rc)
		return -ENOEXEC;
	b->built = true;
	rc = aw_subject_open(w->s, b->side.library, &b->side.lib, err);
	for (int k = 0; !rc && k < BISECT_LAYOUTS; k++) {
		b->copy_path[k] = aw_asprintf("%s/%s-layout%d.so", x->work, name, k);
		if (!b->copy_path[k])
			return aw_errorf(err, -ENOMEM, "out of memory");
		rc = aw_ab_copy_file(b->side.library, b->copy_path[k], err);
		if (!rc)
			rc = aw_subject_open(w->s, b->copy_path[k], &b->copy[k], err);
	}
	if (rc && rc != -ENOMEM)
		rc =
		    -ENOEXEC; /* a library that does not load is a commit that cannot be measured */
	return rc;
}

static bool find_call(const struct aw_subject_lib *lib, bool reader, const char *name,
                      struct ab_call *out)
{
	if (!lib->d)
		return false;
	if (!reader) {
		for (size_t i = 0; i < lib->n_ops; i++)
			if (!strcmp(lib->d->ops[i].name, name)) {
				*out = (struct ab_call){.op = lib->d->ops[i].op};
				return true;
			}
		return false;
	}
	for (size_t i = 0; i < lib->n_readers; i++)
		if (!strcmp(lib->d->readers[i].name, name)) {
			*out = (struct ab_call){.lock = lib->d->readers[i].lock,
			                        .unlock = lib->d->readers[i].unlock};
			return true;
		}
	return false;
}

/* An interleaved A/B of `head` against `base` on the followed cell: base's first load in every
 * slice, its copies and head's copies as the layouts. */
static int compare(struct bisect *x, struct subject_way *w, const struct build *base,
                   const struct build *head, struct bisect_cmp *out, char **err)
{
	struct ab_call ref, b[BISECT_LAYOUTS], h[BISECT_LAYOUTS];
	struct ab_cell_plan plan = {
	    .cpu = w->cpu,
	    .layouts = BISECT_LAYOUTS,
	    .base_ref = &ref,
	    .base = b,
	    .head = h,
	    .max_rounds = BISECT_ROUNDS,
	    .budget_s = BISECT_CMP_S,
	    .rule = {.threshold = AW_AB_STOP_THRESHOLD, .alpha = AW_AB_ALPHA},
	    .seed = next_random(&w->rng),
	    .stop = x->a->stop,
	};
	struct ab_cell_result res;
	bool ok = find_call(&base->side.lib, w->reader, w->name, &ref);
	int rc;

	for (int k = 0; k < BISECT_LAYOUTS; k++)
		ok = ok && find_call(&base->copy[k], w->reader, w->name, &b[k]) &&
		     find_call(&head->copy[k], w->reader, w->name, &h[k]);
	if (!ok) {
		/* the op is gone at one side: it cannot be compared (new, missing) */
		*out = (struct bisect_cmp){NAN, NAN, NAN,
		                           find_call(&base->side.lib, w->reader, w->name, &ref)
		                               ? AW_AB_VERDICT_MISSING
		                               : AW_AB_VERDICT_NEW};
		return 0;
	}
	rc = ab_measure_cell(&plan, &res);
	if (!rc && res.reason)
		rc = aw_errorf(err, -EIO, "the cell '%s' failed: %s", x->cell_key, res.reason);
	else if (rc == -EINTR)
		aw_errorf(err, rc, "interrupted");
	else if (rc)
		aw_errorf(err, rc, "cannot measure '%s': %s", x->cell_key, strerror(-rc));
	if (!rc)
		*out = (struct bisect_cmp){res.decision.diff.estimate, res.decision.diff.lo,
		                           res.decision.diff.hi, res.decision.verdict};
	ab_cell_result_release(&res);
	return rc;
}

/* The keys of the subject's cells the request follows, on the subject's CPUs, and the control
 * cell: what each commit's run measures. */
static int run_keys(struct bisect *x, struct subject_way *w, const struct aw_subject_lib *lib,
                    const int *cpus, int n_cpus, char **err)
{
	size_t total = (lib->n_ops + lib->n_readers) * (size_t)n_cpus + 1;

	w->keys = calloc(total, sizeof(*w->keys));
	if (!w->keys)
		return aw_errorf(err, -ENOMEM, "out of memory");
	for (int ci = 0; ci < n_cpus; ci++)
		for (size_t i = 0; i < lib->n_ops + lib->n_readers; i++) {
			bool reader = i >= lib->n_ops;
			struct aw_cell c = {
			    .cpu = cpus[ci], .contender_cpu = AW_NONE, .c = AW_NONE};

			if (aw_set_str(&c.subject, w->s->name) ||
			    aw_set_str(&c.op, reader ? w->s->name : lib->d->ops[i].name) ||
			    aw_set_str(&c.reader,
			               reader ? lib->d->readers[i - lib->n_ops].name : NULL) ||
			    aw_cell_make_key(&c)) {
				aw_cell_release(&c);
				return aw_errorf(err, -ENOMEM, "out of memory");
			}
			if (bisect_wants(x, c.key))
				w->keys[w->n_keys++] = c.key, c.key = NULL;
			aw_cell_release(&c);
		}
	w->keys[w->n_keys++] = w->control_key;
	return 0;
}

static void free_keys(struct subject_way *w)
{
	for (size_t i = 0; w->keys && i < w->n_keys; i++)
		if (w->keys[i] != w->control_key)
			free((char *)w->keys[i]);
	aw_freep(&w->keys);
	w->n_keys = 0;
}

/* Measures the run of one built commit (trigger bisect), kept in w->pending[slot] until the
 * step is committed. */
static int measure_run(struct bisect *x, struct subject_way *w, const struct build *b, int slot,
                       int step, char **err)
{
	struct aw_agent_subject built = *w->s;
	struct aw_agent_run run = {.project = x->project,
	                           .commit = b->side.commit,
	                           .ref = x->ref,
	                           .trigger = AW_TRIGGER_BISECT,
	                           .keys = w->keys,
	                           .n_keys = w->n_keys,
	                           .built = &built,
	                           .reuse = w->runner};
	char commit_time[AW_TIME_LEN];
	json_t *meta;
	int rc;

	built.build = NULL;
	built.dir = b->side.dir;
	built.library = b->side.library;
	aw_ab_commit_time(&x->repo, b->side.commit, commit_time, err);
	aw_freep(err);
	run.commit_time = commit_time[0] ? commit_time : NULL;
	meta = json_pack("{s:{s:s, s:s, s:i, s:I}}", "bisect", "good", x->good, "bad", x->bad,
	                 "step", step, "id", (json_int_t)x->req->id);
	if (!meta)
		return aw_errorf(err, -ENOMEM, "out of memory");
	run.meta = meta;
	rc = w->runner ? aw_agent_measure(x->a, &run, &w->pending[slot], err)
	               : aw_agent_measure_keep(x->a, &run, &w->pending[slot], &w->runner, err);
	json_decref(meta);
	return rc;
}

/* The key of op or reader `name` of the subject on `cpu` into out[size]. */
static int cell_key(const struct subject_way *w, bool reader, const char *name, int cpu, char *out,
                    size_t size)
{
	struct aw_cell c = {.cpu = cpu, .contender_cpu = AW_NONE, .c = AW_NONE};
	int rc = aw_set_str(&c.subject, w->s->name) ||
	                 aw_set_str(&c.op, reader ? w->s->name : name) ||
	                 aw_set_str(&c.reader, reader ? name : NULL) || aw_cell_make_key(&c)
	             ? -ENOMEM
	             : 0;

	if (!rc)
		snprintf(out, size, "%s", c.key);
	aw_cell_release(&c);
	return rc;
}

/* Once: both ends built and loaded, the CPU of the comparisons (the subject's first) and the
 * cells of the runs. */
static int subject_prepare(struct bisect *x, struct subject_way *w, char **err)
{
	struct aw_runner_opts opts = {0};
	struct aw_runner *r = NULL;
	int *cpus = NULL, n_cpus, first = 0, rc;

	rc = build_load(x, w, &w->good, "good", x->good, err);
	if (!rc)
		rc = build_load(x, w, &w->bad, "bad", x->bad, err);
	if (rc == -ENOEXEC)
		rc = -EIO; /* an end that does not build or load: nothing to compare with */
	if (rc)
		return rc;
	aw_agent_runner_opts(x->a, NULL, &opts);
	r = aw_runner_new(&opts, err);
	if (!r)
		return -EINVAL;
	n_cpus = aw_subject_cpus(r, w->s, NULL, &cpus, err);
	if (n_cpus < 1) {
		rc = n_cpus < 0 ? n_cpus : aw_errorf(err, -EINVAL, "no CPU to measure on");
		goto out;
	}
	w->cpu = cpus[0];
	if (aw_runner_cpus(r, "first", &first, 1, err) < 1)
		first = cpus[0];
	aw_freep(err);
	rc = aw_control_key(first, w->control_key, sizeof(w->control_key));
	if (!rc)
		rc = run_keys(x, w, &w->good.side.lib, cpus, n_cpus, err);
out:
	free(cpus);
	aw_runner_free(&r);
	return rc;
}

static int subject_ends(struct bisect *x, json_t *step, bool *decided, bool *regressed,
                        struct bisect_cmp *range, char **err)
{
	struct subject_way *w = x->method;
	const struct aw_subject_lib *g = &w->good.side.lib;
	json_t *cells = json_array();
	char best_key[512] = "", best_name[AW_NAME_MAX + 1] = "";
	double best = -INFINITY;
	bool best_reader = false, any_inconclusive = false;
	size_t compared = 0;
	int rc = 0;

	*decided = false;
	*regressed = false;
	if (!cells)
		return aw_errorf(err, -ENOMEM, "out of memory");
	if (!w->good.built)
		rc = subject_prepare(x, w, err);
	/* each op and reader that both ends have, on the first CPU, that the request wants: the
	 * one that regressed most is followed */
	for (size_t i = 0; !rc && i < g->n_ops + g->n_readers && compared < MAX_CELL_CHOICE; i++) {
		bool reader = i >= g->n_ops;
		const char *name = reader ? g->d->readers[i - g->n_ops].name : g->d->ops[i].name;
		struct ab_call unused;
		struct bisect_cmp cmp;
		char key[512];

		if (!find_call(&w->bad.side.lib, reader, name, &unused))
			continue;
		rc = cell_key(w, reader, name, w->cpu, key, sizeof(key));
		if (rc) {
			aw_errorf(err, rc, "out of memory");
			break;
		}
		if (!bisect_wants(x, key))
			continue;
		snprintf(w->name, sizeof(w->name), "%s", name);
		w->reader = reader;
		snprintf(x->cell_key, sizeof(x->cell_key), "%s", key);
		rc = compare(x, w, &w->good, &w->bad, &cmp, err);
		if (rc)
			break;
		compared++;
		if (json_array_append_new(cells, json_pack("{s:s, s:o}", "cell", key, "range",
		                                           bisect_cmp_json(&cmp)))) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			break;
		}
		any_inconclusive = any_inconclusive || cmp.verdict == AW_AB_VERDICT_INCONCLUSIVE;
		if (cmp.verdict == AW_AB_VERDICT_REGRESSED && cmp.est > best) {
			best = cmp.est;
			*range = cmp;
			snprintf(best_key, sizeof(best_key), "%s", key);
			snprintf(best_name, sizeof(best_name), "%s", name);
			best_reader = reader;
		}
	}
	if (!rc && !compared)
		rc = aw_errorf(err, -EINVAL,
		               "no cell of subject '%s' that both ends have matches --cells",
		               w->s->name);
	if (rc)
		goto out;
	if (best_key[0]) {
		*regressed = *decided = true;
		snprintf(x->cell_key, sizeof(x->cell_key), "%s", best_key);
		snprintf(w->name, sizeof(w->name), "%s", best_name);
		w->reader = best_reader;
		json_object_set_new(step, "cell", json_string(best_key));
	} else {
		*decided = !any_inconclusive;
	}
	json_object_set_new(step, "cells", cells);
	cells = NULL;
	/* the runs of both ends, uploaded once the step is committed */
	rc = measure_run(x, w, &w->good, 0, 1, err);
	if (!rc)
		rc = measure_run(x, w, &w->bad, 1, 1, err);
out:
	json_decref(cells);
	return rc;
}

static int subject_probe(struct bisect *x, size_t pos, json_t *step, enum probe_verdict *v,
                         struct bisect_cmp *from_good, struct bisect_cmp *to_bad, char **err)
{
	struct subject_way *w = x->method;
	const char *sha = x->c[pos - 1].sha;
	char *why = NULL;
	int rc;

	build_release(x, &w->probe);
	rc = build_load(x, w, &w->probe, "probe", sha, &why);
	if (rc == -ENOEXEC) {
		char reason[REASON_MAX + 1];

		bisect_reason(why ? why : "the build failed", reason, sizeof(reason));
		aw_warn("skipping %.12s: %s", sha, reason);
		json_object_set_new(step, "reason", json_string(reason));
		if (w->probe.side.log_path)
			json_object_set_new(step, "build_log", json_string(w->probe.side.log_path));
		*v = PROBE_SKIPPED;
		free(why);
		build_release(x, &w->probe);
		return 0;
	}
	if (rc) {
		if (why)
			rc = aw_errorf(err, rc, "%s", why);
		free(why);
		return rc;
	}
	json_object_set_new(step, "build_s", json_real(w->probe.side.build_s));
	rc = compare(x, w, &w->good, &w->probe, from_good, err);
	if (!rc)
		rc = compare(x, w, &w->probe, &w->bad, to_bad, err);
	if (rc)
		return rc;
	*v = bisect_classify(from_good, to_bad, x->range_change);
	return measure_run(x, w, &w->probe, 0,
	                   (int)json_integer_value(json_object_get(step, "step")), err);
}

static int subject_commit(struct bisect *x, json_t *step, char **err)
{
	struct subject_way *w = x->method;
	json_t *ids = json_array();
	int rc = 0;

	for (int i = 0; i < 2 && !rc; i++) {
		enum aw_upload_outcome outcome;

		if (!w->pending[i])
			continue;
		rc = aw_agent_submit(x->a, w->pending[i], &outcome, err);
		if (!rc && outcome == AW_UPLOAD_REJECTED)
			rc = aw_errorf(err, -EIO,
			               "the collector refused run %s of %s (see the "
			               "agent's rejected/ folder)",
			               w->pending[i]->run_id, w->pending[i]->commit);
		if (!rc && ids)
			json_array_append_new(ids, json_string(w->pending[i]->run_id));
		aw_result_free(&w->pending[i]);
	}
	if (ids && json_array_size(ids))
		json_object_set(step, "runs", ids);
	json_decref(ids);
	return rc;
}

static void subject_discard(struct bisect *x)
{
	struct subject_way *w = x->method;

	for (int i = 0; i < 2; i++)
		aw_result_free(&w->pending[i]);
}

static const struct bisect_method subject_method = {subject_ends, subject_probe, subject_commit,
                                                    subject_discard};

static int subject_open(struct bisect *x, const struct aw_agent_subject *s, char **err)
{
	struct subject_way *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return aw_errorf(err, -ENOMEM, "out of memory");
	x->method = w;
	x->m = &subject_method;
	w->s = s;
	if (aw_random_bytes(&w->rng, sizeof(w->rng)))
		return aw_errorf(err, -EIO, "cannot read random bytes");
	w->rng |= 1;
	x->repo = (struct aw_ab_repo){.a = x->a,
	                              .s = s,
	                              .project = x->project,
	                              .ref = x->ref,
	                              .work = x->work,
	                              .tag = "bisect"};
	rc = aw_ab_repo_open(&x->repo, err);
	if (!rc && !x->repo.toplevel)
		rc =
		    aw_errorf(err, -EINVAL,
		              "subject '%s': its dir %s is not in a git repository, so the commits "
		              "between --good and --bad cannot be listed",
		              s->name, s->dir);
	return rc;
}

static void subject_close(struct bisect *x)
{
	struct subject_way *w = x->method;

	if (!w)
		return;
	subject_discard(x);
	build_release(x, &w->probe);
	build_release(x, &w->good);
	build_release(x, &w->bad);
	aw_runner_free(&w->runner);
	free_keys(w);
	free(w);
	x->method = NULL;
}

/* ---- the loop ---- */

struct state {
	json_t *steps;
	size_t lo, hi; /* positions: 0 good, k the commit x->c[k - 1]; lo good-like, hi bad-like */
	unsigned measured, budget, expected;
	uint64_t t0;
	struct bisect_cmp change;
	bool have_change;
	const char *message;
	char buf[512];
};

static const char *pos_sha(const struct bisect *x, size_t pos)
{
	return pos ? x->c[pos - 1].sha : x->good;
}

static unsigned ceil_log2(size_t n)
{
	unsigned k = 0;

	while (((size_t)1 << k) < n)
		k++;
	return k;
}

/* The answer so far (outcome "running" until it is known). */
static json_t *answer(const struct bisect *x, const struct state *st, const char *outcome)
{
	json_t *cand = json_array(), *skipped = json_array();
	bool one = !strcmp(outcome, "culprit");
	json_t *o;

	bool list =
	    (!strcmp(outcome, "candidates") || !strcmp(outcome, "budget")) && st->have_change;

	for (size_t p = st->lo + 1; list && cand && p <= st->hi && p <= st->lo + MAX_LISTED; p++)
		json_array_append_new(cand, json_string(pos_sha(x, p)));
	for (size_t i = 0; skipped && i < x->n; i++)
		if (x->c[i].skipped)
			json_array_append_new(skipped, json_string(x->c[i].sha));
	o = json_pack("{s:o, s:o, s:o, s:o, s:o, s:s, s:O, s:I, s:f, s:s, s:s?, s:s, s:s, s:I, "
	              "s:I, s:I, s:{s:s, s:s, s:I}, s:o, s:s, s:s, s:s}",
	              "culprit", one ? json_string(pos_sha(x, st->hi)) : json_null(), "candidates",
	              cand ? cand : json_array(), "change",
	              st->have_change ? num(exp(st->change.est)) : json_null(), "lo",
	              st->have_change ? num(exp(st->change.lo)) : json_null(), "hi",
	              st->have_change ? num(exp(st->change.hi)) : json_null(), "cell", x->cell_key,
	              "steps", st->steps, "builds", (json_int_t)x->builds, "seconds",
	              (double)(aw_monotonic_ns() - st->t0) / 1e9, "outcome", outcome, "message",
	              st->message, "good", x->good, "bad", x->bad, "commits", (json_int_t)x->n,
	              "steps_done", (json_int_t)st->measured, "expected_steps",
	              (json_int_t)st->expected, "range", "good", pos_sha(x, st->lo), "bad",
	              pos_sha(x, st->hi), "commits", (json_int_t)(st->hi - st->lo), "skipped",
	              skipped ? skipped : json_array(), "project", x->project, "ref", x->ref,
	              "subject", x->req->subject);
	return o;
}

/* Reports the step to the caller's progress, then commits it (its runs uploaded) or, when
 * cancelled, drops it. */
static int finish_step(struct bisect *x, struct state *st, json_t *step, char **err)
{
	int rc = 0;

	if (json_array_append(st->steps, step))
		return aw_errorf(err, -ENOMEM, "out of memory");
	if (x->req->progress) {
		json_t *now = answer(x, st, "running");

		rc = now ? x->req->progress(x->req->progress_cls, now) : 0;
		json_decref(now);
	}
	if (rc == -ECANCELED) {
		if (x->m->discard)
			x->m->discard(x);
		json_array_remove(st->steps, json_array_size(st->steps) - 1);
		return aw_errorf(err, rc, "the bisection was cancelled");
	}
	if (x->m->commit)
		rc = x->m->commit(x, step, err);
	return rc;
}

static void say(const struct bisect *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(const struct bisect *x, const char *fmt, ...)
{
	va_list ap;

	if (!x->a->progress)
		return;
	va_start(ap, fmt);
	fprintf(stderr, AW_AGENT_PROG ": bisect: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* The next position to probe in (lo, hi): the middle, or the nearest commit to it that was not
 * skipped; 0 when every one in between was. */
static size_t next_probe(const struct bisect *x, const struct state *st)
{
	size_t mid = st->lo + (st->hi - st->lo) / 2;

	for (size_t d = 0; d < st->hi - st->lo; d++) {
		if (mid >= st->lo + 1 + d && !x->c[mid - d - 1].skipped)
			return mid - d;
		if (mid + d < st->hi && !x->c[mid + d - 1].skipped)
			return mid + d;
	}
	return 0;
}

static int run_loop(struct bisect *x, struct state *st, const char **outcome, char **err)
{
	bool decided = false, regressed = false;
	int rc = 0;

	/* step 1: the ends, until the range's change is decided */
	while (!decided) {
		json_t *step = json_pack("{s:i, s:s, s:s}", "step", (int)st->measured + 1, "commit",
		                         x->bad, "kind", "range");
		struct bisect_cmp range = {NAN, NAN, NAN, AW_AB_VERDICT_UNKNOWN};

		if (!step)
			return aw_errorf(err, -ENOMEM, "out of memory");
		if (st->measured >= st->budget) {
			json_decref(step);
			*outcome = "budget";
			st->message =
			    "the budget ran out before the range's own change was decided";
			return 0;
		}
		rc = x->m->ends(x, step, &decided, &regressed, &range, err);
		if (!rc) {
			st->measured++;
			json_object_set_new(step, "verdict",
			                    json_string(regressed ? "regressed"
			                                : decided ? "unchanged"
			                                          : "inconclusive"));
			if (regressed) {
				json_object_update_new(step, bisect_cmp_json(&range));
				json_object_set_new(step, "verdict", json_string("regressed"));
				st->change = range;
				st->have_change = true;
				x->range_change = range.est;
			}
			say(x, "step %u/%u: the range %.12s..%.12s (%zu commit%s): %s%s%s",
			    st->measured, st->expected, x->good, x->bad, x->n, x->n == 1 ? "" : "s",
			    regressed ? "regressed in "
			    : decided ? "no regression"
			              : "inconclusive",
			    regressed ? x->cell_key : "", "");
			rc = finish_step(x, st, step, err);
		}
		json_decref(step);
		if (rc)
			return rc;
	}
	if (!regressed) {
		*outcome = "no regression";
		st->message = "the range holds no regression: no cell followed is slower at --bad "
		              "than at --good";
		return 0;
	}
	while (st->hi - st->lo > 1) {
		size_t pos = next_probe(x, st);
		struct bisect_cmp g = {NAN, NAN, NAN, 0}, b = {NAN, NAN, NAN, 0};
		enum probe_verdict v = PROBE_INCONCLUSIVE;
		json_t *step;

		if (!pos) {
			*outcome = "candidates";
			snprintf(
			    st->buf, sizeof(st->buf),
			    "commits that could not be measured hide the culprit: it is one of "
			    "the %zu candidates",
			    st->hi - st->lo);
			st->message = st->buf;
			return 0;
		}
		if (st->measured >= st->budget) {
			*outcome = "budget";
			snprintf(st->buf, sizeof(st->buf),
			         "the budget of %u steps ran out with %zu candidates left",
			         st->budget, st->hi - st->lo);
			st->message = st->buf;
			return 0;
		}
		step = json_pack("{s:i, s:s, s:s}", "step", (int)st->measured + 1, "commit",
		                 pos_sha(x, pos), "kind", "probe");
		if (!step)
			return aw_errorf(err, -ENOMEM, "out of memory");
		rc = x->m->probe(x, pos, step, &v, &g, &b, err);
		if (!rc && v == PROBE_SKIPPED) {
			x->c[pos - 1].skipped = true;
			json_object_set_new(step, "verdict", json_string("skipped"));
			json_object_set_new(step, "step", json_null());
			say(x, "skipped %.12s: %s", pos_sha(x, pos),
			    json_string_value(json_object_get(step, "reason")));
			rc = finish_step(x, st, step, err);
		} else if (!rc) {
			static const char *const words[] = {"good", "bad", "inconclusive",
			                                    "skipped"};

			st->measured++;
			json_object_update_new(step, bisect_cmp_json(&g));
			json_object_set_new(step, "verdict", json_string(words[v]));
			json_object_set_new(step, "from_good", bisect_cmp_json(&g));
			json_object_set_new(step, "to_bad", bisect_cmp_json(&b));
			say(x, "step %u/%u: %.12s is %s (%+.2f%% from good, %+.2f%% to bad)",
			    st->measured, st->expected, pos_sha(x, pos), words[v],
			    100 * expm1(g.est), 100 * expm1(b.est));
			if (v == PROBE_BAD) {
				st->hi = pos;
				st->change = g; /* the culprit lies at or before it, after good */
			} else if (v == PROBE_GOOD) {
				st->lo = pos;
				st->change = b;
			}
			rc = finish_step(x, st, step, err);
		}
		json_decref(step);
		if (rc)
			return rc;
	}
	*outcome = "culprit";
	snprintf(st->buf, sizeof(st->buf), "%.12s made '%.300s' %+.2f%% slower", pos_sha(x, st->hi),
	         x->cell_key, 100 * expm1(st->change.est));
	st->message = st->buf;
	return 0;
}

int aw_agent_bisect(struct aw_agent *a, const struct aw_bisect_req *req, json_t **out, char **err)
{
	struct bisect x = {.a = a, .req = req, .range_change = NAN};
	struct state st = {0};
	const struct aw_agent_subject *s;
	const char *outcome = "budget";
	char id[AW_UUID_LEN + 1];
	int rc;

	*out = NULL;
	st.t0 = aw_monotonic_ns();
	x.project = req->project ? req->project : req->subject;
	x.ref = req->ref ? req->ref : "main";
	if (req->budget > AW_BISECT_MAX_BUDGET)
		return aw_errorf(err, -EINVAL, "--budget %u: at most %d steps", req->budget,
		                 AW_BISECT_MAX_BUDGET);
	if (!aw_valid_name(x.project))
		return aw_errorf(err, -EINVAL, "bad project name '%s'", x.project);
	s = aw_agent_config_subject(a->cfg, req->subject);
	if (!s && !(a->cfg->bisect_step && !strcmp(req->subject, a->cfg->bisect_subject))) {
		char names[512];

		aw_agent_config_subject_names(a->cfg, names, sizeof(names));
		return aw_errorf(
		    err, -EINVAL, "unknown subject '%s' (this agent's config defines: %s%s%s)",
		    req->subject, names, a->cfg->bisect_step ? "; bisect.subject: " : "",
		    a->cfg->bisect_step ? a->cfg->bisect_subject : "");
	}
	if (aw_uuid4(id))
		return aw_errorf(err, -EIO, "cannot read random bytes");
	x.work = aw_asprintf("%s/bisect/%s", a->spool.dir, id);
	if (!x.work || aw_make_dirs(x.work, 0750)) {
		rc = aw_errorf(err, -errno, "cannot create '%s': %s", x.work ? x.work : "",
		               strerror(errno));
		goto out;
	}
	rc = s ? subject_open(&x, s, err) : bisect_step_open(&x, err);
	if (!rc)
		rc = resolve(&x, req->good, "--good", x.good, err);
	if (!rc)
		rc = resolve(&x, req->bad, "--bad", x.bad, err);
	if (!rc)
		rc = list_range(&x, err);
	if (rc)
		goto out;
	st.lo = 0;
	st.hi = x.n;
	st.expected = 1 + ceil_log2(x.n);
	st.budget = req->budget ? req->budget : st.expected + BISECT_EXTRA;
	st.steps = json_array();
	if (!st.steps) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	say(&x, "%zu commit%s after %.12s up to %.12s: %u steps expected, %u at most", x.n,
	    x.n == 1 ? "" : "s", x.good, x.bad, st.expected, st.budget);
	rc = run_loop(&x, &st, &outcome, err);
	if (!rc) {
		*out = answer(&x, &st, outcome);
		if (!*out)
			rc = aw_errorf(err, -ENOMEM, "out of memory");
	}
out:
	if (x.method)
		s ? subject_close(&x) : bisect_step_close(&x);
	aw_ab_repo_release(&x.repo);
	if (x.work)
		rmdir(x.work);
	free(x.work);
	free(x.c);
	json_decref(st.steps);
	return rc;
}

int aw_bisect_exit_status(const json_t *answer)
{
	const char *o = json_string_value(json_object_get(answer, "outcome"));

	return o && (!strcmp(o, "culprit") || !strcmp(o, "candidates")) ? 0 : 4;
}

char *aw_bisect_text(const json_t *answer)
{
	struct aw_buf b;
	const json_t *steps = json_object_get(answer, "steps"), *s;
	const char *culprit = json_string_value(json_object_get(answer, "culprit"));
	size_t i;
	int rc = 0;

	aw_buf_init(&b, 1u << 20);
	rc = aw_buf_printf(&b, "bisect %s: %lld commits after %.12s up to %.12s, cell '%s'\n",
	                   json_string_value(json_object_get(answer, "subject")),
	                   (long long)json_integer_value(json_object_get(answer, "commits")),
	                   json_string_value(json_object_get(answer, "good")),
	                   json_string_value(json_object_get(answer, "bad")),
	                   json_string_value(json_object_get(answer, "cell")));
	json_array_foreach (steps, i, s) {
		const char *verdict = json_string_value(json_object_get(s, "verdict"));
		double r = json_number_value(json_object_get(s, "ratio"));

		if (rc)
			break;
		if (!json_is_integer(json_object_get(s, "step")))
			rc = aw_buf_printf(&b, "  skipped %.12s: %s\n",
			                   json_string_value(json_object_get(s, "commit")),
			                   json_string_value(json_object_get(s, "reason")));
		else
			rc = aw_buf_printf(
			    &b, "  step %lld: %.12s %s %s",
			    (long long)json_integer_value(json_object_get(s, "step")),
			    json_string_value(json_object_get(s, "commit")),
			    strcmp(json_string_value(json_object_get(s, "kind")), "range")
			        ? "is"
			        : "(the range's end):",
			    verdict ? verdict : "?");
		if (!rc && json_is_integer(json_object_get(s, "step")) && r > 0)
			rc = aw_buf_printf(&b, ", %+.2f%% against good [%+.2f%%, %+.2f%%]\n",
			                   100 * (r - 1),
			                   100 * (json_number_value(json_object_get(s, "lo")) - 1),
			                   100 * (json_number_value(json_object_get(s, "hi")) - 1));
		else if (!rc && json_is_integer(json_object_get(s, "step")))
			rc = aw_buf_puts(&b, "\n");
	}
	if (!rc && culprit)
		rc = aw_buf_printf(&b, "culprit: %s, %+.2f%% [%+.2f%%, %+.2f%%]", culprit,
		                   100 * (json_number_value(json_object_get(answer, "change")) - 1),
		                   100 * (json_number_value(json_object_get(answer, "lo")) - 1),
		                   100 * (json_number_value(json_object_get(answer, "hi")) - 1));
	else if (!rc)
		rc = aw_buf_printf(&b, "%s: %s",
		                   json_string_value(json_object_get(answer, "outcome")),
		                   json_string_value(json_object_get(answer, "message")));
	if (!rc && !culprit && json_array_size(json_object_get(answer, "candidates"))) {
		rc = aw_buf_puts(&b, "\ncandidates:");
		json_array_foreach (json_object_get(answer, "candidates"), i, s)
			if (!rc)
				rc = aw_buf_printf(&b, " %s", json_string_value(s));
	}
	if (!rc)
		rc = aw_buf_printf(
		    &b, "\n(%lld steps, %lld builds, %.1f s)\n",
		    (long long)json_integer_value(json_object_get(answer, "steps_done")),
		    (long long)json_integer_value(json_object_get(answer, "builds")),
		    json_number_value(json_object_get(answer, "seconds")));
	if (rc) {
		aw_buf_release(&b);
		return NULL;
	}
	return aw_buf_detach(&b);
}
