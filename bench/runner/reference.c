/* What the reference kernel costs: a profile measured with and without it, alternately in one
 * process, its wall time each way and the ratio (target: at most 1.30 for the quick profile),
 * and how steady the reference itself was within each run (its spread over the cells).
 * usage: bench_runner_reference [--profile NAME] [--reps N] */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomwatch/runner.h"
#include "aw/stats.h"
#include "aw/util.h"

#define MAX_REPS 100

/* One run: its wall time in seconds, and the reference's median and relative spread
 * ((max - min) / median) over the cells. Returns 0 or -1 (the error printed). */
static int one_run(struct aw_runner *r, double *secs, double *ref_p50, double *ref_spread)
{
	uint64_t t0 = aw_monotonic_ns();
	struct aw_result *res;
	double *v = NULL;
	size_t n = 0;
	char *err = NULL;

	res = aw_runner_run(r, &err);
	*secs = (double)(aw_monotonic_ns() - t0) / 1e9;
	if (!res) {
		fprintf(stderr, "bench: %s\n", err);
		free(err);
		return -1;
	}
	*ref_p50 = *ref_spread = NAN;
	v = malloc((res->n_cells ? res->n_cells : 1) * sizeof(*v));
	if (!v) {
		aw_result_free(&res);
		return -1;
	}
	for (size_t i = 0; i < res->n_cells; i++)
		if (isfinite(res->cells[i].reference_ns))
			v[n++] = res->cells[i].reference_ns;
	if (n) {
		aw_sort_doubles(v, n);
		*ref_p50 = aw_quantile_sorted(v, n, 0.5);
		*ref_spread = (v[n - 1] - v[0]) / *ref_p50;
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

int main(int argc, char **argv)
{
	const char *profile = "quick";
	unsigned long reps = 7;
	struct aw_runner_opts with = {.host_name = "bench"}, without;
	struct aw_runner *rw = NULL, *ro = NULL;
	double t_with[MAX_REPS], t_without[MAX_REPS], p50s[MAX_REPS], spreads[MAX_REPS];
	double tw, to, scratch;
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
		double *t_first = i % 2 ? &t_without[i] : &t_with[i];
		double *t_second = i % 2 ? &t_with[i] : &t_without[i];

		if (one_run(first, t_first, first == rw ? &p50s[i] : &scratch,
		            first == rw ? &spreads[i] : &scratch) ||
		    one_run(second, t_second, second == rw ? &p50s[i] : &scratch,
		            second == rw ? &spreads[i] : &scratch))
			goto out;
		printf("  rep %2lu: with %.3f s, without %.3f s, ratio %.3f; reference %.4f ns "
		       "per step, spread over the cells %.2f%%\n",
		       i + 1, t_with[i], t_without[i], t_with[i] / t_without[i], p50s[i],
		       100 * spreads[i]);
	}
	tw = median(t_with, reps);
	to = median(t_without, reps);
	printf("\nmedian wall time: with the reference %.3f s, without %.3f s, ratio %.3f "
	       "(target <= 1.30: %s)\n",
	       tw, to, tw / to, tw / to <= 1.30 ? "met" : "missed");
	printf("reference: median %.4f ns per step over the runs, median spread over one run's "
	       "cells %.2f%%\n",
	       median(p50s, reps), 100 * median(spreads, reps));
	status = 0;
out:
	free(err);
	aw_runner_free(&rw);
	aw_runner_free(&ro);
	return status;
}
