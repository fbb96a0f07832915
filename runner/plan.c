/* Expands a matrix profile into this host's cells: the ops of this architecture on the selected
 * CPUs, the readers, and the contention x duty grid with near and far contenders. What cannot
 * run here (LSE on a CPU without it, a far contender on a one-package host, liburcu missing) is
 * planned as a skipped cell that says why, never silently dropped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/util.h"
#include "internal.h"

#define LSE_MISSING "needs the LSE atomics (FEAT_LSE); this CPU lacks them (HWCAP_ATOMICS not set)"

struct planner {
	const struct aw_plan_env *env;
	struct aw_plan *plan;
	json_t *keys;  /* keys already planned */
	char **filter; /* --ops names, NULL-terminated, or NULL */
	char **err;
};

static const struct aw_kernel *find_kernel(const char *name)
{
	unsigned n;
	const struct aw_kernel *k = aw_kernels(&n);

	for (unsigned i = 0; i < n; i++)
		if (!strcmp(k[i].name, name))
			return &k[i];
	return NULL;
}

static const struct aw_reader_kernel *find_reader(const char *reader, const char *op)
{
	unsigned n;
	const struct aw_reader_kernel *r = aw_reader_kernels(&n);

	for (unsigned i = 0; i < n; i++)
		if (!strcmp(r[i].reader, reader) && !strcmp(r[i].op, op))
			return &r[i];
	return NULL;
}

static bool filtered_out(const struct planner *pl, const char *op, const char *reader)
{
	if (!pl->filter)
		return false;
	for (char **f = pl->filter; *f; f++)
		if (!strcmp(*f, op) || (reader && !strcmp(*f, reader)))
			return false;
	return true;
}

/* Appends a cell unless its key is already planned. Returns the new entry, NULL for a
 * duplicate (*rc = 0) or on allocation failure (*rc = -ENOMEM). */
static struct aw_planned *add(struct planner *pl, const char *section, const char *op,
                              const char *reader, int cpu, int *rc)
{
	struct aw_plan *plan = pl->plan;
	struct aw_planned *e;

	*rc = -ENOMEM;
	if (aw_array_reserve(&plan->cells, plan->n, &plan->cap, sizeof(*plan->cells), 64))
		return NULL;
	e = &plan->cells[plan->n];
	memset(e, 0, sizeof(*e));
	e->section = section;
	e->cell.cpu = cpu;
	e->cell.contender_cpu = AW_NONE;
	e->cell.c = AW_NONE;
	e->job.cpu = cpu;
	e->job.contender_cpu = -1;
	if (aw_set_str(&e->cell.op, op) || aw_set_str(&e->cell.reader, reader))
		goto fail;
	*rc = 0;
	return e;
fail:
	aw_cell_release(&e->cell);
	return NULL;
}

/* Gives the entry its key and keeps it, or drops it as a duplicate; `rc` is the result of
 * filling the entry (on failure the entry is released and rc returned). */
static int commit(struct planner *pl, struct aw_planned *e, int rc)
{
	if (rc) {
		aw_cell_release(&e->cell);
		return rc;
	}
	if (aw_cell_make_key(&e->cell))
		goto nomem;
	if (json_object_get(pl->keys, e->cell.key)) {
		aw_cell_release(&e->cell);
		return 0;
	}
	if (json_object_set_new(pl->keys, e->cell.key, json_true()))
		goto nomem;
	pl->plan->n++;
	return 0;
nomem:
	aw_cell_release(&e->cell);
	return -ENOMEM;
}

static int skip(struct aw_planned *e, const char *why)
{
	e->cell.status = AW_CELL_SKIPPED;
	return aw_set_str(&e->cell.reason, why);
}

int aw_cpus_resolve(const struct aw_topology *t, const char *sel, struct aw_cpuset *out, char **err)
{
	char online[256];
	int rc;

	aw_cpuset_clear(out);
	if (!strcmp(sel, "all")) {
		*out = t->online;
		return 0;
	}
	if (!strcmp(sel, "first")) {
		aw_cpuset_set(out, aw_cpuset_next(&t->online, -1));
		return 0;
	}
	if (!strcmp(sel, "first-per-type")) {
		aw_topology_first_per_type(t, out);
		return 0;
	}
	rc = aw_cpulist_parse(sel, out, err);
	if (rc)
		return rc;
	for (int cpu = aw_cpuset_next(out, -1); cpu >= 0; cpu = aw_cpuset_next(out, cpu)) {
		if (!aw_cpuset_has(&t->online, cpu)) {
			aw_cpulist_format(&t->online, online, sizeof(online));
			return aw_errorf(err, -EINVAL, "CPU %d is not online (online: %s)", cpu,
			                 online);
		}
	}
	return 0;
}

static int resolve_cpus(const struct planner *pl, const char *sel, struct aw_cpuset *out)
{
	return aw_cpus_resolve(pl->env->topo, pl->env->cpus_override ? pl->env->cpus_override : sel,
	                       out, pl->err);
}

static int plan_ops(struct planner *pl, const struct aw_profile *p)
{
	struct aw_cpuset cpus;
	int rc = resolve_cpus(pl, p->op_cpus, &cpus);

	for (int cpu = aw_cpuset_next(&cpus, -1); !rc && cpu >= 0;
	     cpu = aw_cpuset_next(&cpus, cpu)) {
		for (size_t i = 0; !rc && i < p->n_ops; i++) {
			const struct aw_op_info *info = aw_op_lookup(p->ops[i]);
			const struct aw_kernel *k = find_kernel(p->ops[i]);
			struct aw_planned *e;

			if (!info || !aw_op_on_arch(info, pl->env->arch) || !k ||
			    filtered_out(pl, k->name, NULL))
				continue;
			e = add(pl, "ops", k->name, NULL, cpu, &rc);
			if (!e)
				break;
			if ((k->flags & AW_OP_LSE) && !pl->env->lse) {
				rc = skip(e, LSE_MISSING);
			} else {
				e->job.timed = k->timed;
				e->job.empty = k->empty;
				e->job.check =
				    (k->flags & AW_OP_PAIR) ? AW_CHECK_PAIR : AW_CHECK_VALUE;
			}
			rc = commit(pl, e, rc);
		}
	}
	return rc;
}

static void urcu_register(const void *urcu)
{
	((const struct aw_urcu *)urcu)->register_thread();
}

static void urcu_unregister(const void *urcu)
{
	((const struct aw_urcu *)urcu)->unregister_thread();
}

static int plan_urcu(struct planner *pl, int cpu)
{
	struct aw_planned *e;
	int rc;

	if (filtered_out(pl, "liburcu", "urcu_memb"))
		return 0;
	e = add(pl, "readers", "liburcu", "urcu_memb", cpu, &rc);
	if (!e)
		return rc;
	if (!pl->env->urcu) {
		rc = skip(e, pl->env->urcu_missing ? pl->env->urcu_missing
		                                   : "liburcu is not installed on this host");
	} else {
		e->job.timed = aw_call_reader_timed;
		e->job.empty = aw_call_reader_empty;
		e->job.call = &pl->env->urcu->call;
		e->job.check = AW_CHECK_NONE;
		e->job.thread_init = urcu_register;
		e->job.thread_fini = urcu_unregister;
		e->job.thread_ctx = pl->env->urcu;
	}
	return commit(pl, e, rc);
}

static int plan_readers(struct planner *pl, const struct aw_profile *p)
{
	struct aw_cpuset cpus;
	int rc = resolve_cpus(pl, p->reader_cpus, &cpus);

	for (int cpu = aw_cpuset_next(&cpus, -1); !rc && cpu >= 0;
	     cpu = aw_cpuset_next(&cpus, cpu)) {
		for (size_t i = 0; !rc && i < p->n_readers; i++) {
			const struct aw_reader_spec *rs = &p->readers[i];

			if (!strcmp(rs->reader, "urcu_memb")) {
				rc = plan_urcu(pl, cpu);
				continue;
			}
			for (size_t j = 0; !rc && j < rs->n_ops; j++) {
				const struct aw_reader_kernel *k =
				    find_reader(rs->reader, rs->ops[j]);
				struct aw_planned *e;

				if (!k || filtered_out(pl, k->op, k->reader))
					continue;
				e = add(pl, "readers", k->op, k->reader, cpu, &rc);
				if (!e)
					break;
				if ((k->flags & AW_OP_LSE) && !pl->env->lse) {
					rc = skip(e, LSE_MISSING);
				} else {
					e->job.timed = k->timed;
					e->job.empty = k->empty;
					e->job.check = AW_CHECK_READER;
				}
				rc = commit(pl, e, rc);
			}
		}
	}
	return rc;
}

static int plan_contended(struct planner *pl, const struct aw_kernel *k, int cpu,
                          const char *placement, int64_t c, int64_t d)
{
	const char *why = NULL;
	struct aw_planned *e;
	int contender = -1, rc;

	if (c > 0)
		contender = !strcmp(placement, "near") ? aw_topology_near(pl->env->topo, cpu, &why)
		                                       : aw_topology_far(pl->env->topo, cpu, &why);
	e = add(pl, "contention", k->name, NULL, cpu, &rc);
	if (!e)
		return rc;
	e->cell.d = d;
	if (c > 0) {
		e->cell.c = c;
		e->cell.contender_cpu = contender >= 0 ? contender : AW_NONE;
		if (aw_set_str(&e->cell.placement, placement)) {
			aw_cell_release(&e->cell);
			return -ENOMEM;
		}
	}
	if ((k->flags & AW_OP_LSE) && !pl->env->lse) {
		rc = skip(e, LSE_MISSING);
	} else if (c > 0 && contender < 0) {
		char reason[160];

		snprintf(reason, sizeof(reason), "no %s contender CPU for CPU %d: %s", placement,
		         cpu, why ? why : "topology unknown");
		rc = skip(e, reason);
	} else {
		e->job.timed = k->timed;
		e->job.empty = k->empty;
		e->job.duty = (uint32_t)d;
		e->job.check = (k->flags & AW_OP_PAIR) ? AW_CHECK_PAIR : AW_CHECK_VALUE;
		if (c > 0) {
			e->job.contend = k->contend;
			e->job.contender_cpu = contender;
			e->job.gap = (uint32_t)c;
		}
	}
	return commit(pl, e, rc);
}

static int plan_contention(struct planner *pl, const struct aw_profile *p)
{
	const char *placements[2];
	size_t n_place = 0;
	struct aw_cpuset cpus;
	int rc = resolve_cpus(pl, p->contention_cpus, &cpus);

	if (p->near)
		placements[n_place++] = "near";
	if (p->far)
		placements[n_place++] = "far";
	for (int cpu = aw_cpuset_next(&cpus, -1); !rc && cpu >= 0;
	     cpu = aw_cpuset_next(&cpus, cpu)) {
		for (size_t i = 0; !rc && i < p->n_contention_ops; i++) {
			const struct aw_op_info *info = aw_op_lookup(p->contention_ops[i]);
			const struct aw_kernel *k = find_kernel(p->contention_ops[i]);

			if (!info || !aw_op_on_arch(info, pl->env->arch) || !k || !k->contend ||
			    filtered_out(pl, k->name, NULL))
				continue;
			for (size_t pi = 0; !rc && pi < n_place; pi++)
				for (size_t ci = 0; !rc && ci < p->n_c; ci++)
					for (size_t di = 0; !rc && di < p->n_d; di++)
						rc = plan_contended(pl, k, cpu, placements[pi],
						                    p->c_values[ci],
						                    p->d_values[di]);
		}
	}
	return rc;
}

/* Splits and checks --ops: every name must be an op of this architecture or a reader. */
static int parse_filter(struct planner *pl, const char *list)
{
	size_t n = 1;
	char *copy, *save = NULL;
	int rc = 0;

	for (const char *s = list; *s; s++)
		n += *s == ',';
	pl->filter = calloc(n + 1, sizeof(*pl->filter));
	copy = strdup(list);
	if (!pl->filter || !copy) {
		free(copy);
		return -ENOMEM;
	}
	n = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const struct aw_op_info *info = aw_op_lookup(tok);

		if (!info && !aw_reader_known(tok) && strcmp(tok, "liburcu")) {
			rc = aw_errorf(pl->err, -EINVAL, "unknown op '%s'", tok);
			break;
		}
		if (info && !aw_op_on_arch(info, pl->env->arch)) {
			rc = aw_errorf(pl->err, -EINVAL,
			               "op '%s' does not exist on %s (it is %s only)", tok,
			               pl->env->arch, info->arch);
			break;
		}
		pl->filter[n] = strdup(tok);
		if (!pl->filter[n++]) {
			rc = -ENOMEM;
			break;
		}
	}
	if (!rc && n == 0)
		rc = aw_errorf(pl->err, -EINVAL, "empty op list '%s'", list);
	free(copy);
	return rc;
}

int aw_plan_build(const struct aw_profile *p, const struct aw_plan_env *env, struct aw_plan *out,
                  char **err)
{
	struct planner pl = {.env = env, .plan = out, .err = err};
	int rc = 0;

	memset(out, 0, sizeof(*out));
	pl.keys = json_object();
	if (!pl.keys)
		return -ENOMEM;
	if (env->ops_filter)
		rc = parse_filter(&pl, env->ops_filter);
	if (!rc)
		rc = plan_ops(&pl, p);
	if (!rc)
		rc = plan_readers(&pl, p);
	if (!rc)
		rc = plan_contention(&pl, p);
	if (rc == -ENOMEM)
		aw_errorf(err, rc, "out of memory while planning the matrix");
	if (!rc && out->n == 0)
		rc = aw_errorf(err, -EINVAL, "the selection leaves no cell to measure on %s",
		               env->arch);
	if (rc)
		aw_plan_release(out);
	for (char **f = pl.filter; f && *f; f++)
		free(*f);
	free(pl.filter);
	json_decref(pl.keys);
	return rc;
}

void aw_plan_release(struct aw_plan *plan)
{
	for (size_t i = 0; i < plan->n; i++)
		aw_cell_release(&plan->cells[i].cell);
	free(plan->cells);
	memset(plan, 0, sizeof(*plan));
}
