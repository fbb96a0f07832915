/* The runner's public API (include/atomwatch/runner.h): matrix + topology + fingerprint + timer
 * -> plan -> measured result. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomwatch/runner.h"
#include "aw/sha256.h"
#include "aw/util.h"
#include "internal.h"

#ifndef AW_VERSION
#define AW_VERSION "0.0.0"
#endif

struct aw_runner {
	struct aw_timer timer;
	struct aw_matrix matrix;
	struct aw_profile profile; /* the chosen profile with overrides (shallow copy) */
	char matrix_hash[AW_SHA256_HEX_LEN + 1];
	struct aw_topology topo;
	struct aw_urcu urcu;
	bool have_urcu;
	json_t *host;
	struct aw_plan plan;
	struct aw_measure_params params;
	aw_progress_fn progress;
	void *progress_arg;
	volatile int *stop;
	const char *const *keys; /* opts.keys: the only cells measured (none: every cell) */
	size_t n_keys;
};

const char *aw_runner_version(void)
{
	return AW_VERSION;
}

bool aw_runner_selected(const struct aw_runner *r, const char *key)
{
	for (size_t i = 0; i < r->n_keys; i++)
		if (key && !strcmp(r->keys[i], key))
			return true;
	return !r->n_keys;
}

uint32_t aw_runner_samples(const struct aw_runner *r)
{
	return r->params.samples;
}

void aw_runner_set_samples(struct aw_runner *r, uint32_t samples)
{
	uint32_t full = r->profile.samples ? r->profile.samples : 1;
	double share;

	/* after the hash: fewer batches measure the same cells */
	r->params.samples = samples < AW_RUNNER_MIN_SAMPLES ? AW_RUNNER_MIN_SAMPLES : samples;
	share = r->params.samples < full ? (double)r->params.samples / full : 1;
	/* a cell's fixed costs shrink alike (the warm-up, the reference's batches beside it),
	 * so that the time of a run follows its batches: N confirmation runs of 2S/N batches
	 * cost about twice the first measurement of their cells */
	r->params.warmup_ns = (uint64_t)((double)r->profile.warmup_ns * share);
	if (r->params.reference_samples) {
		uint32_t ref = (uint32_t)(AW_REFERENCE_SAMPLES * share + 0.5);

		r->params.reference_samples =
		    ref < AW_REFERENCE_MIN_SAMPLES ? AW_REFERENCE_MIN_SAMPLES : ref;
	}
}

void aw_runner_select(struct aw_runner *r, const char *const *keys, size_t n)
{
	r->keys = keys;
	r->n_keys = n;
}

void aw_runner_set_progress(struct aw_runner *r, aw_progress_fn fn, void *arg)
{
	r->progress = fn;
	r->progress_arg = arg;
}

struct aw_runner *aw_runner_new(const struct aw_runner_opts *opts, char **err)
{
	struct aw_runner *r = calloc(1, sizeof(*r));
	struct aw_plan_env env = {0};
	const struct aw_profile *p;
	const char *why = NULL;
	int rc;

	if (!r) {
		aw_errorf(err, -ENOMEM, "out of memory");
		return NULL;
	}
	aw_timer_init(&r->timer, opts->force_clock);
	if (opts->matrix_path)
		rc = aw_matrix_load(opts->matrix_path, &r->matrix, err);
	else
		rc = aw_matrix_parse((const char *)aw_matrix_default, aw_matrix_default_len,
		                     "<built-in matrix.yaml>", &r->matrix, err);
	if (rc)
		goto fail;
	p = aw_matrix_profile(&r->matrix, opts->profile ? opts->profile : "default");
	if (!p) {
		char names[256] = "";
		size_t n = 0;

		for (size_t i = 0; i < r->matrix.n_profiles && n < sizeof(names); i++)
			n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
			                      r->matrix.profiles[i].name);
		aw_errorf(err, -EINVAL, "unknown profile '%s' (the matrix has: %s)", opts->profile,
		          names);
		goto fail;
	}
	r->profile = *p;
	if (opts->samples)
		r->profile.samples = opts->samples;
	if (aw_matrix_hash(&r->matrix, &r->profile, r->matrix_hash)) {
		aw_errorf(err, -EIO, "cannot hash the matrix");
		goto fail;
	}
	if (aw_topology_load(opts->sysroot ? opts->sysroot : "/", &r->topo, err))
		goto fail;
	{
		struct aw_fp_source src = {.root = opts->sysroot,
		                           .lse = -1,
		                           .timer_hz = r->timer.hz,
		                           .timer_name = r->timer.name};

		r->host = aw_fingerprint(&src, opts->host_name, opts->labels, err);
	}
	if (!r->host)
		goto fail;
	r->have_urcu = aw_urcu_load(&r->urcu, &why) == 0;
	env.topo = &r->topo;
	env.arch = aw_build_arch();
	env.lse = aw_cpu_has_lse();
	env.cpus_override = opts->cpus;
	env.ops_filter = opts->ops;
	env.urcu = r->have_urcu ? &r->urcu : NULL;
	env.urcu_missing = why;
	if (aw_plan_build(&r->profile, &env, &r->plan, err))
		goto fail;
	aw_runner_select(r, opts->keys, opts->n_keys);
	r->params.samples = r->profile.samples;
	r->params.batch_min_ns = r->profile.batch_min_ns;
	r->params.batch_min_ticks = r->profile.batch_min_ticks;
	r->params.warmup_ns = r->profile.warmup_ns;
	r->params.timer = &r->timer;
	r->params.reference_kernels = opts->no_reference        ? 0
	                              : opts->reference_kernels ? opts->reference_kernels
	                                                        : AW_REF_ALL;
	r->params.reference_kernels &= AW_REF_ALL;
	r->params.reference_samples = r->params.reference_kernels ? AW_REFERENCE_SAMPLES : 0;
	r->progress = opts->progress;
	r->progress_arg = opts->progress_arg;
	r->stop = opts->stop;
	return r;
fail:
	aw_runner_free(&r);
	return NULL;
}

void aw_runner_free(struct aw_runner **rp)
{
	struct aw_runner *r = *rp;

	if (!r)
		return;
	aw_plan_release(&r->plan);
	if (r->have_urcu)
		aw_urcu_release(&r->urcu);
	json_decref(r->host);
	aw_topology_release(&r->topo);
	aw_matrix_release(&r->matrix);
	free(r);
	*rp = NULL;
}

size_t aw_runner_cell_count(const struct aw_runner *r)
{
	return r->plan.n;
}

size_t aw_runner_plan(const struct aw_runner *r, size_t i, struct aw_plan_info *out)
{
	const struct aw_planned *e;

	if (i >= r->plan.n)
		return 0;
	e = &r->plan.cells[i];
	out->key = e->cell.key;
	out->section = e->section;
	out->skipped = e->cell.status == AW_CELL_SKIPPED;
	out->reason = e->cell.reason;
	return 1;
}

const json_t *aw_runner_host(const struct aw_runner *r)
{
	return r->host;
}

void aw_runner_matrix(const struct aw_runner *r, const char **name, int64_t *version,
                      const char **profile, const char **hash)
{
	*name = r->matrix.name;
	*version = r->matrix.version;
	*profile = r->profile.name;
	*hash = r->matrix_hash;
}

/* Copies a planned cell's identity (and skip status) into a result cell. */
static int copy_identity(struct aw_cell *dst, const struct aw_cell *src)
{
	dst->cpu = src->cpu;
	dst->contender_cpu = src->contender_cpu;
	dst->c = src->c;
	dst->d = src->d;
	dst->status = src->status;
	if (aw_set_str(&dst->key, src->key) || aw_set_str(&dst->op, src->op) ||
	    aw_set_str(&dst->reader, src->reader) || aw_set_str(&dst->subject, src->subject) ||
	    aw_set_str(&dst->kernel, src->kernel) || aw_set_str(&dst->placement, src->placement) ||
	    aw_set_str(&dst->reason, src->reason))
		return -ENOMEM;
	return 0;
}

struct aw_result *aw_runner_run(struct aw_runner *r, char **err)
{
	struct aw_result *res = aw_result_new();
	int rc = 0;

	if (!res) {
		aw_errorf(err, -ENOMEM, "out of memory");
		return NULL;
	}
	aw_time_now(res->started_at);
	res->host = json_incref(r->host);
	if (aw_set_str(&res->matrix_name, r->matrix.name) ||
	    aw_set_str(&res->matrix_hash, r->matrix_hash) ||
	    aw_set_str(&res->matrix_profile, r->profile.name) ||
	    aw_result_set_references(res, r->params.reference_kernels)) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	res->matrix_version = r->matrix.version;
	for (size_t i = 0; i < r->plan.n; i++) {
		const struct aw_planned *e = &r->plan.cells[i];
		struct aw_cell *c;

		if (r->stop && *r->stop) {
			rc = aw_errorf(err, -EINTR, "interrupted after %zu of %zu cells", i,
			               r->plan.n);
			goto out;
		}
		if (!aw_runner_selected(r, e->cell.key))
			continue; /* not asked for (a confirmation's selection) */
		c = aw_result_add_cell(res);
		if (!c || copy_identity(c, &e->cell)) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			goto out;
		}
		if (e->cell.status != AW_CELL_SKIPPED) {
			rc = aw_measure(&e->job, &r->params, c);
			if (rc) {
				aw_errorf(err, rc, "cannot measure '%s': %s", c->key,
				          strerror(-rc));
				goto out;
			}
		}
		if (r->progress)
			r->progress(r->progress_arg, i + 1, r->plan.n, c);
	}
	aw_time_now(res->finished_at);
out:
	if (rc)
		aw_result_free(&res);
	return res;
}

int aw_runner_measure_call(struct aw_runner *r, void (*op)(uint64_t *counter),
                           void (*reader_lock)(void), void (*reader_unlock)(void),
                           struct aw_cell *cell)
{
	struct aw_call_ops call = {.op = op, .lock = reader_lock, .unlock = reader_unlock};
	struct aw_job job = {.call = &call, .cpu = cell->cpu, .contender_cpu = -1};

	if (cell->cpu == AW_NONE)
		job.cpu = cell->cpu = aw_cpuset_next(&r->topo.online, -1);
	if (op) {
		job.timed = aw_call_op_timed;
		job.empty = aw_call_op_empty;
		job.check = AW_CHECK_VALUE;
	} else if (reader_lock && reader_unlock) {
		job.timed = aw_call_reader_timed;
		job.empty = aw_call_reader_empty;
		job.check = AW_CHECK_NONE;
	} else {
		return -EINVAL;
	}
	return aw_measure(&job, &r->params, cell);
}

const char *aw_runner_reference_kernel(const struct aw_runner *r)
{
	return r->params.reference_kernels & (1u << AW_REF_MULCHAIN) ? AW_REFERENCE_KERNEL : NULL;
}

int aw_runner_cpus(const struct aw_runner *r, const char *selection, int *cpus, size_t max,
                   char **err)
{
	struct aw_cpuset set;
	size_t n = 0;
	int rc = aw_cpus_resolve(&r->topo, selection, &set, err);

	if (rc)
		return rc;
	for (int cpu = aw_cpuset_next(&set, -1); cpu >= 0; cpu = aw_cpuset_next(&set, cpu)) {
		if (n < max)
			cpus[n] = cpu;
		n++;
	}
	return (int)n;
}

json_t *aw_runner_fingerprint(const struct aw_runner_opts *opts, char **err)
{
	struct aw_timer timer;
	struct aw_fp_source src = {.root = opts->sysroot, .lse = -1};

	aw_timer_init(&timer, opts->force_clock);
	src.timer_hz = timer.hz;
	src.timer_name = timer.name;
	return aw_fingerprint(&src, opts->host_name, opts->labels, err);
}
