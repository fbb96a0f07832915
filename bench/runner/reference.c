/* What the reference kernels cost: a profile measured with the whole family beside every cell
 * and without any, alternately in one process, its wall time each way and the ratio (target:
 * at most 1.30 for the quick profile), and how steady each kernel was within each run (its
 * spread over the cells). On a shared machine the wall times swing with the neighbours' load;
 * the fastest repetition of each side and the process's CPU time (threads that other work
 * preempts do not accrue it) are the steadier figures, so they are printed too.
 * usage: bench_runner_reference [--profile NAME] [--reps N] */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atomwatch/runner.h"
#include "aw/stats.h"
#include "aw/util.h"

#define MAX_REPS 100

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What one run took. */
struct cost {
	double wall, cpu; /* seconds */
};

/* One run: its cost, and each reference kernel's median and relative spread ((max - min) /
 * median) over the cells (NAN without one). Returns 0 or -1 (the error printed). */
static int one_run(struct aw_runner *r, struct cost *c, double *ref_p50, double *ref_spread)
{
	uint64_t t0 = aw_monotonic_ns();
	double cpu0 = cpu_seconds();
	struct aw_result *res;
	double *v = NULL;
	size_t n = 0;
	char *err = NULL;

	res = aw_runner_run(r, &err);
	c->wall = (double)(aw_monotonic_ns() - t0) / 1e9;
	c->cpu = cpu_seconds() - cpu0;
	if (!res) {
		fprintf(stderr, "bench: %s\n", err);
		free(err);
		return -1;
	}
	v = malloc((res->n_cells ? res->n_cells : 1) * sizeof(*v));
	if (!v) {
		aw_result_free(&res);
		return -1;
	}
	for (int k = 0; k < AW_REF_COUNT; k++) {
		ref_p50[k] = ref_spread[k] = NAN;
		n = 0;
		for (size_t i = 0; i < res->n_cells; i++)
			if (isfinite(res->cells[i].ref_ns[k]))
				v[n++] = res->cells[i].ref_ns[k];
		if (n) {
			aw_sort_doubles(v, n);
			ref_p50[k] = aw_quantile_sorted(v, n, 0.5);
			ref_spread[k] = (v[n - 1] - v[0]) / ref_p50[k];
		}
	}
	free(v);
	aw_result_free(&res);
	return 0;
}

static double median(double *v, size_t n)
{
	aw_sort_doubles(v, n);
	return aw_quantile_sorted(v, n, 0.5);
}

/* Median and minimum of one field of the costs. */
static void stats_of(const struct cost *c, size_t n, int cpu, double *med, double *min)
{
	double v[MAX_REPS];

	for (size_t i = 0; i < n; i++)
		v[i] = cpu ? c[i].cpu : c[i].wall;
	*med = median(v, n);
	*min = v[0];
}

int main(int argc, char **argv)
{
	const char *profile = "quick";
	unsigned long reps = 7;
	struct aw_runner_opts with = {.host_name = "bench"}, without;
	struct aw_runner *rw = NULL, *ro = NULL;
	struct cost c_with[MAX_REPS], c_without[MAX_REPS];
	double p50s[MAX_REPS][AW_REF_COUNT], spreads[MAX_REPS][AW_REF_COUNT];
	double scratch[AW_REF_COUNT], wm, wn, om, on, cw, co, dummy;
	char *err = NULL;
	int status = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--profile") && i + 1 < argc) {
			profile = argv[++i];
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = strtoul(argv[++i], NULL, 10);
			if (reps < 1 || reps > MAX_REPS) {
				fprintf(stderr, "bench: --reps from 1 to %d\n", MAX_REPS);
				return 2;
			}
		} else {
			fprintf(stderr, "usage: %s [--profile NAME] [--reps N]\n", argv[0]);
			return 2;
		}
	}
	with.profile = profile;
	without = with;
	without.no_reference = true;
	rw = aw_runner_new(&with, &err);
	if (rw)
		ro = aw_runner_new(&without, &err);
	if (!rw || !ro) {
		fprintf(stderr, "bench: %s\n", err);
		goto out;
	}
	printf("profile %s, %zu cells, %lu repetitions of each, alternating (ABBA)\n", profile,
	       aw_runner_cell_count(rw), reps);
	/* ABBA: neither side always runs first, so a drift of the machine falls on both. */
	for (unsigned long i = 0; i < reps; i++) {
		struct aw_runner *first = i % 2 ? ro : rw, *second = i % 2 ? rw : ro;
		struct cost *c_first = i % 2 ? &c_without[i] : &c_with[i];
		struct cost *c_second = i % 2 ? &c_with[i] : &c_without[i];

		if (one_run(first, c_first, first == rw ? p50s[i] : scratch,
		            first == rw ? spreads[i] : scratch) ||
		    one_run(second, c_second, second == rw ? p50s[i] : scratch,
		            second == rw ? spreads[i] : scratch))
			goto out;
		printf("  rep %2lu: wall with %.3f s, without %.3f s (ratio %.3f); cpu %.3f s, "
		       "%.3f s (%.3f)\n",
		       i + 1, c_with[i].wall, c_without[i].wall, c_with[i].wall / c_without[i].wall,
		       c_with[i].cpu, c_without[i].cpu, c_with[i].cpu / c_without[i].cpu);
		for (int k = 0; k < AW_REF_COUNT; k++)
			printf("          %-12s %9.4f ns per step, spread over the cells %6.2f%%\n",
			       aw_ref_name((enum aw_ref)k), p50s[i][k], 100 * spreads[i][k]);
	}
	stats_of(c_with, reps, 0, &wm, &wn);
	stats_of(c_without, reps, 0, &om, &on);
	printf("\nwall time, median: with the reference %.3f s, without %.3f s, ratio %.3f\n", wm,
	       om, wm / om);
	printf("wall time, fastest: with the reference %.3f s, without %.3f s, ratio %.3f\n", wn,
	       on, wn / on);
	stats_of(c_with, reps, 1, &cw, &dummy);
	stats_of(c_without, reps, 1, &co, &dummy);
	printf("cpu time, median: with the reference %.3f s, without %.3f s, ratio %.3f\n", cw, co,
	       cw / co);
	printf("target: the references add at most 30%% to the wall time (median ratio <= 1.30): "
	       "%s\n",
	       wm / om <= 1.30 ? "met" : "missed");
	for (int k = 0; k < AW_REF_COUNT; k++) {
		double p[MAX_REPS], sp[MAX_REPS];

		for (unsigned long i = 0; i < reps; i++) {
			p[i] = p50s[i][k];
			sp[i] = spreads[i][k];
		}
		printf("%-12s median %9.4f ns per step over the runs, median spread over one run's "
		       "cells %6.2f%%\n",
		       aw_ref_name((enum aw_ref)k), median(p, reps), 100 * median(sp, reps));
	}
	status = 0;
out:
	free(err);
	aw_runner_free(&rw);
	aw_runner_free(&ro);
	return status;
}
