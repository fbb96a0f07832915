/* Interleaved A/B of a subject; see ab.h. The builds are the agent owner's own commands (as for
 * `run`); the git commands run with fixed arguments, never through a shell. */
#include "ab.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ab_build.h"
#include "ab_measure.h"
#include "atomwatch/runner.h"
#include "aw/ab.h"
#include "aw/log.h"
#include "aw/util.h"
#include "subjects.h"

struct ab_run {
	struct aw_agent *a;
	const struct aw_agent_ab *ab;
	const struct aw_agent_subject *s;
	unsigned builds;  /* code layouts of each side: --builds, or the subject's ab_builds */
	unsigned layouts; /* --layouts, or by default 4 and at least the builds */
	char *work;       /* spool/ab/<id>: worktrees and library copies */
	struct aw_ab_repo repo;
	struct aw_ab_side base, head;
	/* the layouts' loads: base_lay[k] is a copy of base's library, head_lay[0] the head's
	 * own load until fresh copies replace it, head_lay[k > 0] copies; base.lib is the load
	 * every slice measures. copy[k][0] and copy[k][1] are the files of base_lay[k] and of
	 * head_lay_extra[k] (NULL: none) */
	struct aw_subject_lib base_lay[AW_AB_MAX_LAYOUTS], head_lay_extra[AW_AB_MAX_LAYOUTS];
	const struct aw_subject_lib *head_lay[AW_AB_MAX_LAYOUTS];
	char *copy[AW_AB_MAX_LAYOUTS][2];
	unsigned copies_made;
	bool fresh_failed; /* a fresh copy would not load: the loads stay from then on */
	/* the cell being measured, for fresh_copy() */
	const char *cell_name;
	bool cell_reader;
	uint64_t rng;
	double budget_left_s;
	size_t cells_left;
	double measured_s; /* spent measuring, every cell */
	size_t rounds_total;
};

static uint64_t next_random(uint64_t *x)
{
	/* xorshift64*: the order of sides needs no more than unpredictability to the subject */
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * UINT64_C(0x2545f4914f6cdd1d);
}

/* One entry of a side's description: an op (index < n_ops) or a reader. */
struct entry {
	const char *name;
	void (*op)(uint64_t *counter);
	void (*lock)(void), (*unlock)(void);
};

static bool find_entry(const struct aw_subject_lib *lib, bool reader, const char *name,
                       struct entry *e)
{
	if (!reader) {
		for (size_t i = 0; i < lib->n_ops; i++)
			if (!strcmp(lib->d->ops[i].name, name)) {
				*e = (struct entry){name, lib->d->ops[i].op, NULL, NULL};
				return true;
			}
		return false;
	}
	for (size_t i = 0; i < lib->n_readers; i++)
		if (!strcmp(lib->d->readers[i].name, name)) {
			*e = (struct entry){name, NULL, lib->d->readers[i].lock,
			                    lib->d->readers[i].unlock};
			return true;
		}
	return false;
}

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static struct ab_call call_of(const struct entry *e)
{
	return (struct ab_call){.op = e->op, .lock = e->lock, .unlock = e->unlock};
}

/* One round of the document: the A/B round (`aa` false) or its A/A round. */
static json_t *round_json(const struct ab_block *b, bool aa)
{
	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:s, s:i, s:i, s:i}", "first",
	                 (aa ? b->aa_head_first : b->head_first) ? "head" : "base", "base",
	                 num(b->base), "head", num(aa ? b->aa_head : b->head), "base_ref",
	                 num(b->ref), "head_ref", num(b->ref), "level", aw_ab_level_name(b->level),
	                 "layout", (int)b->layout, "build", (int)b->build, "slices",
	                 (int)b->slices);
}

static void report_cell(const struct ab_run *x, const char *key, const struct ab_cell_result *res)
{
	const struct aw_ab_estimate *d = &res->decision.diff;

	if (!x->a->progress)
		return;
	fprintf(stderr,
	        AW_AGENT_PROG ": ab %s: %zu rounds (%zu slices, %zu set aside, %u loads of each "
	                      "side, %.2f s loading) in %.2f s, %s "
	                      "%+.2f%% [%+.2f%%, %+.2f%%] (stopped: %s)\n",
	        key, res->n_blocks, res->slices, res->set_aside, res->loads, res->reload_s,
	        res->seconds, aw_ab_verdict_name(res->decision.verdict), 100 * expm1(d->estimate),
	        100 * expm1(d->lo), 100 * expm1(d->hi), ab_stop_name(res->stop));
}

/* Forgets a copy's file (its load closed first: a file of a live load keeps its inode, so a
 * later copy never takes it and dlopen never mistakes one copy for another). */
static void drop_copy(char **path)
{
	if (*path) {
		unlink(*path);
		free(*path);
		*path = NULL;
	}
}

/* A copy of one side's library for layout k (its code layout k mod --builds) at a path of its
 * own (*path: the caller's to drop_copy()), each load of the A/B numbered in turn; 0 or a
 * negative errno, *why saying why. */
static int copy_library(struct ab_run *x, int head, unsigned k, char **path, char **why)
{
	*path = aw_asprintf("%s/%s-load%u.so", x->work, head ? "head" : "base", x->copies_made++);
	if (!*path)
		return -ENOMEM;
	return aw_ab_copy_file(aw_ab_side_library(head ? &x->head : &x->base, k), *path, why);
}

/* Fresh copies of both sides' libraries in place of layout k's loads (ab_cell_plan.reload):
 * loaded beside the live ones first, so that a library that does not allow one more load keeps
 * the loads it has (and the A/B goes on with them, replacing no more). */
static int fresh_copy(void *ctx, unsigned k, struct ab_call *base, struct ab_call *head)
{
	struct ab_run *x = ctx;
	struct aw_subject_lib lib[2] = {{0}, {0}};
	char *path[2] = {NULL, NULL}, *why = NULL;
	struct entry e[2];
	int rc = 0, first = (int)(next_random(&x->rng) & 1);

	if (x->fresh_failed)
		return -EAGAIN;
	for (int i = 0; i < 2 && !rc; i++) {
		int side = i ^ first; /* either side first, as in load_layouts() */

		rc = copy_library(x, side, k, &path[side], &why);
		if (!rc)
			rc = aw_subject_open(x->s, path[side], &lib[side], &why);
		if (!rc && !find_entry(&lib[side], x->cell_reader, x->cell_name, &e[side]))
			rc = -ENOENT; /* a copy of a library that has it: cannot happen */
	}
	if (rc) {
		aw_warn("subject '%s': a fresh copy of its libraries does not load beside the "
		        "live ones (%s): the A/B goes on with the loads it has",
		        x->s->name, why ? why : strerror(-rc));
		x->fresh_failed = true;
		for (int side = 0; side < 2; side++) {
			aw_subject_close(&lib[side]);
			drop_copy(&path[side]);
		}
		free(why);
		return rc;
	}
	aw_subject_close(&x->base_lay[k]);
	aw_subject_close(&x->head_lay_extra[k]); /* (layout 0's head was the head's own load) */
	for (int side = 0; side < 2; side++) {
		drop_copy(&x->copy[k][side]);
		x->copy[k][side] = path[side];
	}
	x->base_lay[k] = lib[0];
	x->head_lay_extra[k] = lib[1];
	x->head_lay[k] = &x->head_lay_extra[k];
	*base = call_of(&e[0]);
	*head = call_of(&e[1]);
	return 0;
}

/* Every slice of one cell on one CPU (ab_measure.c), then its rounds into `cell`. */
static int measure_cell(struct ab_run *x, const char *name, bool reader, int cpu, json_t *cell)
{
	struct ab_call ref, base[AW_AB_MAX_LAYOUTS], head[AW_AB_MAX_LAYOUTS];
	struct ab_cell_plan plan = {
	    .cpu = cpu,
	    .layouts = x->layouts,
	    .base_ref = &ref,
	    .base = base,
	    .head = head,
	    .builds = x->builds,
	    .max_rounds = x->ab->rounds,
	    .rule = {.threshold = AW_AB_STOP_THRESHOLD, .alpha = AW_AB_ALPHA},
	    .seed = next_random(&x->rng),
	    .stop = x->a->stop,
	    .reload = x->ab->keep_loads || x->fresh_failed ? NULL : fresh_copy,
	    .reload_ctx = x,
	};
	struct ab_cell_result res;
	json_t *ab = json_array(), *aa = json_array();
	struct entry e;
	int rc;

	find_entry(&x->base.lib, reader, name, &e);
	ref = call_of(&e);
	x->cell_name = name;
	x->cell_reader = reader;
	for (unsigned k = 0; k < x->layouts; k++) {
		find_entry(&x->base_lay[k], reader, name, &e);
		base[k] = call_of(&e);
		find_entry(x->head_lay[k], reader, name, &e);
		head[k] = call_of(&e);
	}
	/* what is left over the cells still to measure (none left after cells that overran
	 * their share: a slice after the warm-up, and an inconclusive cell) */
	plan.budget_s = fmax(0, x->budget_left_s / (double)(x->cells_left ? x->cells_left : 1));
	rc = ab_measure_cell(&plan, &res);
	x->budget_left_s -= res.seconds;
	x->measured_s += res.seconds;
	x->rounds_total += res.n_blocks;
	if (x->cells_left)
		x->cells_left--;
	if (rc)
		goto out;
	rc = -ENOMEM;
	if (!ab || !aa)
		goto out;
	if (res.reason) {
		rc = json_object_set_new(cell, "status", json_string("failed")) ||
		             json_object_set_new(cell, "reason", json_string(res.reason))
		         ? -ENOMEM
		         : 0;
		goto out;
	}
	for (size_t i = 0; i < res.n_blocks; i++)
		if (json_array_append_new(ab, round_json(&res.blocks[i], false)) ||
		    json_array_append_new(aa, round_json(&res.blocks[i], true)))
			goto out;
	if (json_object_set_new(cell, "status", json_string("ok")) ||
	    json_object_set(cell, "rounds", ab) || json_object_set(cell, "aa_rounds", aa) ||
	    json_object_set_new(cell, "seconds", json_real(res.seconds)) ||
	    json_object_set_new(cell, "slices", json_integer((json_int_t)res.slices)) ||
	    json_object_set_new(cell, "set_aside", json_integer((json_int_t)res.set_aside)) ||
	    json_object_set_new(cell, "loads", json_integer((json_int_t)res.loads)) ||
	    json_object_set_new(cell, "stop", json_string(ab_stop_name(res.stop))))
		goto out;
	report_cell(x, json_string_value(json_object_get(cell, "key")), &res);
	rc = 0;
out:
	ab_cell_result_release(&res);
	json_decref(ab);
	json_decref(aa);
	return rc;
}

static json_t *side_json(const struct aw_ab_side *sd)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:f}", "commit", sd->commit, "library_name",
	                      sd->lib.d && sd->lib.d->name ? sd->lib.d->name : "", "build_log",
	                      sd->log_path, "build_s", sd->build_s);

	if (j && sd->n_builds > 1 &&
	    json_object_set_new(j, "distinct_builds", json_integer((json_int_t)sd->distinct))) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* The cells of both sides: every op and reader of either, in base's order then head's new
 * ones, on every CPU. The budget of seconds is shared out as the cells come: each gets what is
 * left over the cells still to measure, so that a cell decided early leaves more to the rest. */
static int measure_all(struct ab_run *x, const int *cpus, int n_cpus, json_t *cells)
{
	const struct aw_subject_lib *libs[2] = {&x->base.lib, &x->head.lib};
	size_t total = 0, both = 0, done = 0;
	int rc = 0;

	/* the union of both sides' entries, and those both have (the measured ones) */
	total = x->base.lib.n_ops + x->base.lib.n_readers;
	for (size_t i = 0; i < x->head.lib.n_ops + x->head.lib.n_readers; i++) {
		bool reader = i >= x->head.lib.n_ops;
		struct entry e;
		bool in_base =
		    find_entry(&x->base.lib, reader,
		               reader ? x->head.lib.d->readers[i - x->head.lib.n_ops].name
		                      : x->head.lib.d->ops[i].name,
		               &e);

		total += !in_base;
		both += in_base;
	}
	x->cells_left = both * (size_t)n_cpus;
	for (int ci = 0; ci < n_cpus && !rc; ci++) {
		for (int l = 0; l < 2 && !rc; l++) {
			const struct aw_subject_lib *lib = libs[l];

			for (size_t i = 0; i < lib->n_ops + lib->n_readers && !rc; i++) {
				bool reader = i >= lib->n_ops;
				const char *name = reader ? lib->d->readers[i - lib->n_ops].name
				                          : lib->d->ops[i].name;
				struct entry be, he;
				bool in_base = find_entry(&x->base.lib, reader, name, &be);
				bool in_head = find_entry(&x->head.lib, reader, name, &he);
				struct aw_cell key = {0};
				json_t *cell;

				if (l == 1 && in_base)
					continue; /* measured with base's cells */
				if (x->a->stop && *x->a->stop)
					return -EINTR;
				key.cpu = cpus[ci];
				key.contender_cpu = AW_NONE;
				key.c = AW_NONE;
				if (aw_set_str(&key.subject, x->s->name) ||
				    aw_set_str(&key.op, reader ? x->s->name : name) ||
				    aw_set_str(&key.reader, reader ? name : NULL) ||
				    aw_cell_make_key(&key)) {
					aw_cell_release(&key);
					return -ENOMEM;
				}
				cell = json_pack("{s:s, s:s, s:s?, s:i}", "key", key.key, "op",
				                 key.op, "reader", key.reader, "cpu", cpus[ci]);
				aw_cell_release(&key);
				if (!cell || json_array_append_new(cells, cell))
					return -ENOMEM;
				if (!in_base || !in_head) {
					if (json_object_set_new(
					        cell, "status",
					        json_string(in_base ? "missing" : "new")))
						return -ENOMEM;
					continue;
				}
				rc = measure_cell(x, name, reader, cpus[ci], cell);
				if (x->a->progress)
					fprintf(stderr, AW_AGENT_PROG ": ab %zu/%zu %s\n", ++done,
					        total * (size_t)n_cpus,
					        json_string_value(json_object_get(cell, "key")));
			}
		}
	}
	return rc;
}

static int check_request(struct aw_agent *a, const struct aw_agent_ab *ab,
                         const struct aw_agent_subject **s, unsigned *builds, unsigned *layouts,
                         char **err)
{
	char names[512];

	*s = aw_agent_config_subject(a->cfg, ab->subject);
	if (!*s) {
		aw_agent_config_subject_names(a->cfg, names, sizeof(names));
		return aw_errorf(err, -EINVAL,
		                 "unknown subject '%s' (this agent's config defines: %s)",
		                 ab->subject, names);
	}
	if (!strcmp(ab->base, ab->head) && !ab->aa)
		return aw_errorf(err, -EINVAL,
		                 "--base and --head are the same commit %s: nothing to compare "
		                 "(for an A/A measurement of two builds of one commit, add --aa)",
		                 ab->base);
	if (ab->rounds < AW_AB_MIN_ROUNDS || ab->rounds > AW_AB_MAX_ROUNDS)
		return aw_errorf(err, -EINVAL,
		                 "--rounds %u: at least %d rounds are needed for an interval (the "
		                 "Wilcoxon signed-rank test at 95%% over three estimands cannot "
		                 "reach it with fewer), at most %d",
		                 ab->rounds, AW_AB_MIN_ROUNDS, AW_AB_MAX_ROUNDS);
	*builds = ab->builds ? ab->builds : (*s)->ab_builds ? (*s)->ab_builds : 1;
	if (*builds > AW_AB_MAX_BUILDS)
		return aw_errorf(err, -EINVAL, "--builds %u: 1 to %d code layouts of each side",
		                 *builds, AW_AB_MAX_BUILDS);
	*layouts = ab->layouts
	               ? ab->layouts
	               : (*builds > AW_AB_DEFAULT_LAYOUTS ? *builds : AW_AB_DEFAULT_LAYOUTS);
	if (*layouts > AW_AB_MAX_LAYOUTS)
		return aw_errorf(err, -EINVAL, "--layouts %u: 1 to %d loads of each side", *layouts,
		                 AW_AB_MAX_LAYOUTS);
	if (*builds > *layouts)
		return aw_errorf(err, -EINVAL,
		                 "%s %u is more than --layouts %u: each code layout is measured "
		                 "in a layout of its own",
		                 ab->builds ? "--builds" : "the subject's ab_builds", *builds,
		                 *layouts);
	if (!(ab->budget_s > 0) || !(ab->budget_s <= AW_AB_MAX_BUDGET_S))
		return aw_errorf(err, -EINVAL, "--budget-s %g: more than 0 and at most %d seconds",
		                 ab->budget_s, AW_AB_MAX_BUDGET_S);
	return 0;
}

/* Loads each side once per layout, each load a copy of the side's library at a path of its
 * own, which dlopen maps at addresses of its own: base.lib (the load every slice measures) and
 * base_lay[k]; the head's own load as head_lay[0] and copies for the other layouts. A library
 * that cannot be loaded that often (static TLS runs out) is a request for more layouts than it
 * allows: -EINVAL naming --layouts. */
static int load_layouts(struct ab_run *x, char **err)
{
	unsigned n = x->layouts;
	int rc = aw_subject_open(x->s, aw_ab_side_library(&x->base, 0), &x->base.lib, err);

	if (!rc)
		rc = aw_subject_open(x->s, aw_ab_side_library(&x->head, 0), &x->head.lib, err);
	if (rc)
		return rc;
	x->head_lay[0] = &x->head.lib;
	for (unsigned k = 0; k < n && !rc; k++) {
		/* either side first, at random: what a load gets (memory...) may depend on when */
		int first = (int)(next_random(&x->rng) & 1);

		for (int i = 0; i < 2 && !rc; i++) {
			int head = i ^ first;
			struct aw_subject_lib *lib = head ? &x->head_lay_extra[k] : &x->base_lay[k];
			char *path, *why = NULL;

			if (head && k == 0)
				continue;
			rc = copy_library(x, head, k, &path, err);
			if (!path)
				return aw_errorf(err, -ENOMEM, "out of memory");
			x->copy[k][head] = path;
			if (rc)
				break;
			rc = aw_subject_open(x->s, path, lib, &why);
			if (rc && k == 0)
				rc = aw_errorf(
				    err, -EINVAL,
				    "--layouts %u: subject '%s' cannot be loaded twice into "
				    "one process, and an A/B needs a second load of the base "
				    "for its A/A rounds (%s)",
				    n, x->s->name, why ? why : "dlopen failed");
			else if (rc)
				rc = aw_errorf(
				    err, -EINVAL,
				    "--layouts %u is more than subject '%s' allows: %u loads "
				    "of its libraries fit into one process, enough for "
				    "--layouts %u at most (%s)",
				    n, x->s->name, 2 * k + 1 + (unsigned)i, k,
				    why ? why : "dlopen failed");
			else if (head)
				x->head_lay[k] = lib;
			free(why);
		}
	}
	return rc;
}

static void unload_layouts(struct ab_run *x)
{
	for (unsigned k = 0; k < AW_AB_MAX_LAYOUTS; k++) {
		aw_subject_close(&x->base_lay[k]);
		aw_subject_close(&x->head_lay_extra[k]);
		drop_copy(&x->copy[k][0]);
		drop_copy(&x->copy[k][1]);
	}
}

static json_t *new_document(struct ab_run *x, struct aw_runner *r, const char *id,
                            const char *started)
{
	const struct aw_agent_ab *ab = x->ab;

	(void)r;
	return json_pack("{s:s, s:s, s:s, s:s?, s:s, s:b, s:s, s:O, s:s, s:i, s:i, s:s, s:[]}",
	                 "schema", AW_AB_SCHEMA, "ab_id", id, "project", ab->project, "ref",
	                 ab->ref, "subject", x->s->name, "aa", ab->aa, "started_at", started,
	                 "host", aw_runner_host(r), "reference_kernel", AB_REFERENCE_KERNEL,
	                 "rounds", (int)ab->rounds, "aa_rounds", (int)ab->rounds, "agent",
	                 AW_AGENT_PROG " " AW_VERSION, "cells");
}

/* How the document was measured (docs/result-schema.md "The A/B document", `measure`). */
static json_t *measure_json(const struct ab_run *x)
{
	json_t *m = json_pack(
	    "{s:i, s:f, s:f, s:i, s:i, s:i, s:f, s:f, s:f, s:i, s:b, s:i}", "layouts",
	    (int)x->layouts, "budget_s", x->ab->budget_s, "seconds", x->measured_s, "rounds",
	    (int)x->rounds_total, "slices_per_round", AB_SLICES_PER_ROUND, "piece_ns",
	    (int)AB_PIECE_NS, "level_ratio", AB_LEVEL_RATIO, "threshold", AW_AB_STOP_THRESHOLD,
	    "alpha", AW_AB_ALPHA, "looks", (int)aw_ab_looks(x->ab->rounds, NULL, 0), "fresh_loads",
	    !x->ab->keep_loads && !x->fresh_failed, "builds", (int)x->builds);
	json_t *shifts;

	if (!m || x->builds < 2)
		return m;
	shifts = json_array();
	if (json_object_set_new(m, "code_shifts", shifts)) {
		json_decref(m);
		return NULL;
	}
	for (unsigned k = 0; k < x->builds; k++)
		if (json_array_append_new(shifts, json_integer(aw_subject_layout_shift(k)))) {
			json_decref(m);
			return NULL;
		}
	return m;
}

/* A build that does not take $ATOMWATCH_LAYOUT_CFLAGS gives the same library every time: the
 * A/B goes on (its layouts still vary the load addresses), and says so. */
static void warn_same_builds(const struct ab_run *x)
{
	const struct aw_ab_side *sd[2] = {&x->base, &x->head};

	for (int i = 0; i < 2; i++)
		if (sd[i]->n_builds > 1 && sd[i]->distinct < 2)
			aw_warn(
			    "subject '%s': the %u builds of the %s are byte-identical: its build "
			    "does not take $ATOMWATCH_LAYOUT_CFLAGS, so the code layouts do not "
			    "differ (docs/detection.md \"Code layouts\")",
			    x->s->name, sd[i]->n_builds, sd[i]->name);
}

int aw_agent_ab(struct aw_agent *a, const struct aw_agent_ab *ab, json_t **out, char **err)
{
	struct ab_run x = {.a = a, .ab = ab};
	struct aw_runner_opts opts = {0};
	struct aw_runner *r = NULL;
	char id[AW_UUID_LEN + 1], started[AW_TIME_LEN], finished[AW_TIME_LEN];
	json_t *doc = NULL;
	int *cpus = NULL, n_cpus = 0, rc;

	*out = NULL;
	x.base = (struct aw_ab_side){.name = "base", .commit = ab->base};
	x.head = (struct aw_ab_side){.name = "head", .commit = ab->head};
	x.budget_left_s = ab->budget_s;
	rc = check_request(a, ab, &x.s, &x.builds, &x.layouts, err);
	if (rc)
		return rc;
	aw_agent_runner_opts(a, ab->profile, &opts);
	r = aw_runner_new(&opts, err);
	if (!r)
		return -EINVAL;
	n_cpus = aw_subject_cpus(r, x.s, ab->cpus, &cpus, err);
	if (n_cpus < 0) {
		rc = -EINVAL;
		goto out;
	}
	if (aw_uuid4(id) || aw_random_bytes(&x.rng, sizeof(x.rng))) {
		rc = aw_errorf(err, -EIO, "cannot read random bytes");
		goto out;
	}
	x.rng |= 1;
	aw_time_now(started);
	x.work = aw_asprintf("%s/ab/%s", a->spool.dir, id);
	if (!x.work || aw_make_dirs(x.work, 0750)) {
		rc = aw_errorf(err, -errno, "cannot create '%s': %s", x.work ? x.work : "",
		               strerror(errno));
		goto out;
	}
	x.repo = (struct aw_ab_repo){
	    .a = a, .s = x.s, .project = ab->project, .ref = ab->ref, .work = x.work, .tag = "ab"};
	rc = aw_ab_repo_open(&x.repo, err);
	if (!rc)
		rc = aw_ab_side_build(&x.repo, &x.base, x.builds, err);
	if (!rc)
		rc = aw_ab_side_build(&x.repo, &x.head, x.builds, err);
	if (!rc)
		warn_same_builds(&x);
	if (!rc)
		rc = load_layouts(&x, err);
	if (rc)
		goto out;
	doc = new_document(&x, r, id, started);
	if (!doc) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	rc = measure_all(&x, cpus, n_cpus, json_object_get(doc, "cells"));
	if (rc == -EINTR) {
		aw_errorf(err, rc, "interrupted while measuring subject '%s'", x.s->name);
		goto out;
	}
	if (rc < 0) {
		aw_errorf(err, rc, "subject '%s': cannot measure: %s", x.s->name, strerror(-rc));
		goto out;
	}
	aw_info("subject '%s': %zu rounds in %.1f s of measuring (budget %g s, %u layouts)",
	        x.s->name, x.rounds_total, x.measured_s, ab->budget_s, x.layouts);
	aw_time_now(finished);
	if (json_object_set_new(doc, "base", side_json(&x.base)) ||
	    json_object_set_new(doc, "head", side_json(&x.head)) ||
	    json_object_set_new(doc, "measure", measure_json(&x)) ||
	    json_object_set_new(doc, "finished_at", json_string(finished))) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	*out = doc;
	doc = NULL;
out:
	json_decref(doc);
	unload_layouts(&x);
	aw_ab_side_release(&x.repo, &x.base);
	aw_ab_side_release(&x.repo, &x.head);
	if (x.work)
		rmdir(x.work);
	free(x.work);
	aw_ab_repo_release(&x.repo);
	free(cpus);
	aw_runner_free(&r);
	return rc;
}
