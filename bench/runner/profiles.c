/* The cost of each matrix profile: cells and wall time measured here, the mean time per
 * measured cell, and the projected time on a 96-CPU host (cell counts from the real planner on
 * a synthetic 2 x 48-core sysfs tree for x86-64, and from the matrix lists for a one-socket
 * 96-core aarch64 host). Also prints this host's p50 of every op of the quick profile relative
 * to `plain`, the first row of the cross-host ratio table in docs/benchmarks.md. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomwatch/runner.h"
#include "aw/util.h"
#include "internal.h"

static int write_file(const char *root, const char *rel, const char *text)
{
	char path[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "%s\n", text);
	return fclose(f) ? -errno : 0;
}

/* A 2-package, 48-cores-per-package x86-64 host without SMT, one NUMA node per package. */
static int make_sysroot(const char *root)
{
	char rel[128], val[64];
	int rc = 0;

	rc |= write_file(root, "sys/devices/system/cpu/online", "0-95");
	rc |= write_file(root, "sys/devices/system/cpu/possible", "0-95");
	rc |= write_file(root, "sys/devices/system/cpu/present", "0-95");
	for (int cpu = 0; cpu < 96 && !rc; cpu++) {
		int pkg = cpu / 48;

#define TOPO(name, ...)                                                                 \
	snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/topology/" name, cpu); \
	snprintf(val, sizeof(val), __VA_ARGS__);                                        \
	rc |= write_file(root, rel, val)
		TOPO("physical_package_id", "%d", pkg);
		TOPO("core_id", "%d", cpu % 48);
		TOPO("core_cpus_list", "%d", cpu);
		TOPO("thread_siblings_list", "%d", cpu);
		TOPO("cluster_id", "%d", pkg);
#undef TOPO
	}
	rc |= write_file(root, "sys/devices/system/node/node0/cpulist", "0-47");
	rc |= write_file(root, "sys/devices/system/node/node1/cpulist", "48-95");
	rc |= write_file(root, "proc/cpuinfo",
	                 "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n"
	                 "model\t\t: 143\nmodel name\t: Synthetic 96-core x86-64\n");
	return rc;
}

struct counts {
	size_t measured, skipped;
};

static int plan_counts(const char *profile, const char *sysroot, struct counts *c)
{
	struct aw_runner_opts o = {.profile = profile, .sysroot = sysroot, .host_name = "bench"};
	struct aw_plan_info info;
	struct aw_runner *r;
	char *err = NULL;

	r = aw_runner_new(&o, &err);
	if (!r) {
		fprintf(stderr, "bench: %s\n", err);
		free(err);
		return -EINVAL;
	}
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; aw_runner_plan(r, i, &info); i++) {
		if (info.skipped)
			c->skipped++;
		else
			c->measured++;
	}
	aw_runner_free(&r);
	return 0;
}

/* aarch64 cells on a one-socket 96-core host, from the matrix lists: every aarch64 op on every
 * CPU; readers on one CPU; contention near only (no far CPU on one socket). */
static size_t arm_cells(const char *profile)
{
	struct aw_matrix m;
	const struct aw_profile *p;
	char *err = NULL;
	size_t n = 0, ops = 0, cops = 0, c_nonzero = 0;

	if (aw_matrix_parse((const char *)aw_matrix_default, aw_matrix_default_len, "matrix", &m,
	                    &err))
		return 0;
	p = aw_matrix_profile(&m, profile);
	for (size_t i = 0; i < p->n_ops; i++)
		ops += aw_op_on_arch(aw_op_lookup(p->ops[i]), "aarch64");
	n += ops * (strcmp(p->op_cpus, "all") ? 1 : 96);
	for (size_t i = 0; i < p->n_readers; i++) {
		size_t k = 0;

		for (size_t j = 0; j < p->readers[i].n_ops; j++)
			k += aw_op_on_arch(aw_op_lookup(p->readers[i].ops[j]), "aarch64");
		n += (p->readers[i].n_ops ? k : 1) * (strcmp(p->reader_cpus, "all") ? 1 : 96);
	}
	for (size_t i = 0; i < p->n_contention_ops; i++)
		cops += aw_op_on_arch(aw_op_lookup(p->contention_ops[i]), "aarch64");
	for (size_t i = 0; i < p->n_c; i++)
		c_nonzero += p->c_values[i] > 0;
	n += cops * c_nonzero * p->n_d * (p->near ? 1 : 0);
	aw_matrix_release(&m);
	return n;
}

int main(int argc, char **argv)
{
	const char *profiles[] = {"quick", "default", "full"};
	char root[] = "/tmp/aw-bench-sysroot-XXXXXX";
	struct aw_result *quick = NULL;
	int rc = 1;

	(void)argc;
	(void)argv;
	if (!mkdtemp(root) || make_sysroot(root)) {
		perror("bench: synthetic sysroot");
		return 1;
	}
	printf("%-8s %7s %7s %9s %11s | %14s %11s | %14s %11s\n", "profile", "cells", "skipped",
	       "wall s", "ms/cell", "x86 96-CPU", "projected", "arm64 96-CPU", "projected");
	for (size_t i = 0; i < 3; i++) {
		struct aw_runner_opts o = {.profile = profiles[i], .host_name = "bench"};
		struct aw_runner *r;
		struct aw_result *res;
		struct counts here, big;
		char *err = NULL;
		uint64_t t0, t1;
		double per_cell;
		size_t arm;

		r = aw_runner_new(&o, &err);
		if (!r || plan_counts(profiles[i], "/", &here) ||
		    plan_counts(profiles[i], root, &big)) {
			fprintf(stderr, "bench: %s\n", err ? err : "cannot plan");
			goto out;
		}
		t0 = aw_monotonic_ns();
		res = aw_runner_run(r, &err);
		t1 = aw_monotonic_ns();
		if (!res) {
			fprintf(stderr, "bench: %s\n", err);
			goto out;
		}
		per_cell = (double)(t1 - t0) / 1e6 / (double)here.measured;
		arm = arm_cells(profiles[i]);
		printf("%-8s %7zu %7zu %9.2f %11.2f | %14zu %10.1fs | %14zu %10.1fs\n", profiles[i],
		       here.measured, here.skipped, (double)(t1 - t0) / 1e9, per_cell, big.measured,
		       per_cell * (double)big.measured / 1e3, arm, per_cell * (double)arm / 1e3);
		if (i == 0)
			quick = res;
		else
			aw_result_free(&res);
		aw_runner_free(&r);
		free(err);
	}
	printf("\nthis host, quick profile: p50 of each op relative to plain (net ns)\n");
	{
		const struct aw_cell *plain = NULL;

		for (size_t i = 0; i < quick->n_cells; i++)
			if (!strcmp(quick->cells[i].key, "op=plain cpu=0"))
				plain = &quick->cells[i];
		for (size_t i = 0; plain && i < quick->n_cells; i++) {
			const struct aw_cell *c = &quick->cells[i];

			if (c->reader || c->c != AW_NONE || c->d || c->cpu != 0 ||
			    c->status != AW_CELL_OK)
				continue;
			printf("  %-20s %9.3f ns  x%.1f\n", c->op, c->p50,
			       plain->p50 > 0 ? c->p50 / plain->p50 : NAN);
		}
	}
	rc = 0;
out:
	aw_result_free(&quick);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd) != 0)
			fprintf(stderr, "bench: cannot remove %s\n", root);
	}
	return rc;
}
