/* What a confirmation costs: the first measurement of a run's suspect cells (their share of
 * the first run: the same cells, the profile's batches) against the N confirmation runs that
 * re-measure only them (each a runner of its own, as the agent makes one per run, with
 * aw_confirm_samples() batches per cell), alternately (ABBA) in one process. Target: the N runs
 * together cost at most twice the first measurement of those cells. The reference kernel is
 * measured beside every cell on both sides, as in real runs.
 * usage: bench_runner_confirm [--profile NAME] [--suspects K] [--confirm N] [--reps R] */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "atomwatch/runner.h"
#include "aw/stats.h"
#include "aw/util.h"

#define MAX_REPS     100
#define MAX_SUSPECTS 64

/* Runs `r` over `keys` with `samples` batches per cell `times` times: the wall seconds. With
 * `profile` set, a fresh runner is made first and its making counted (calibration, topology,
 * fingerprint), as a daemon's confirmation job pays it once; else `r` is reused, as
 * atomwatch-agent run --confirm reuses the first run's runner. Negative on failure. */
static double measure(struct aw_runner *r, const char *profile, const char *const *keys, size_t n,
                      uint32_t samples, unsigned long times)
{
	struct aw_runner_opts o = {.profile = profile};
	uint64_t t0 = aw_monotonic_ns();
	struct aw_runner *own = NULL;
	char *err = NULL;

	if (profile) {
		own = r = aw_runner_new(&o, &err);
		if (!r) {
			fprintf(stderr, "bench: %s\n", err);
			free(err);
			return -1;
		}
	}
	aw_runner_select(r, keys, n);
	aw_runner_set_samples(r, samples);
	for (unsigned long i = 0; i < times; i++) {
		struct aw_result *res = aw_runner_run(r, &err);

		if (!res) {
			fprintf(stderr, "bench: %s\n", err);
			free(err);
			aw_runner_free(&own);
			return -1;
		}
		aw_result_free(&res);
	}
	aw_runner_free(&own);
	return (double)(aw_monotonic_ns() - t0) / 1e9;
}

static double median(double *v, size_t n)
{
	aw_sort_doubles(v, n);
	return aw_quantile_sorted(v, n, 0.5);
}

int main(int argc, char **argv)
{
	const char *profile = "quick", *keys[MAX_SUSPECTS];
	unsigned long reps = 5, k = 4, confirm = 3;
	double first[MAX_REPS], conf[MAX_REPS], fresh[MAX_REPS], ratio[MAX_REPS], ratio2[MAX_REPS];
	struct aw_runner_opts o = {0};
	struct aw_runner *plan;
	struct aw_plan_info info;
	uint32_t samples, each;
	size_t n = 0;
	char *err = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--profile") && i + 1 < argc) {
			profile = argv[++i];
		} else if (!strcmp(argv[i], "--suspects") && i + 1 < argc) {
			k = strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--confirm") && i + 1 < argc) {
			confirm = strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = strtoul(argv[++i], NULL, 10);
		} else {
			fprintf(
			    stderr,
			    "usage: %s [--profile NAME] [--suspects K] [--confirm N] [--reps R]\n",
			    argv[0]);
			return 2;
		}
	}
	if (!reps || reps > MAX_REPS || !k || k > MAX_SUSPECTS || !confirm || confirm > 16) {
		fprintf(stderr, "bench: --reps 1..%d, --suspects 1..%d, --confirm 1..16\n",
		        MAX_REPS, MAX_SUSPECTS);
		return 2;
	}
	o.profile = profile;
	plan = aw_runner_new(&o, &err);
	if (!plan) {
		fprintf(stderr, "bench: %s\n", err);
		free(err);
		return 1;
	}
	/* the suspects: the first K cells of the plan that are measured (uncontended ops first) */
	for (size_t i = 0; n < k && aw_runner_plan(plan, i, &info); i++)
		if (!info.skipped)
			keys[n++] = info.key;
	samples = aw_runner_samples(plan);
	each = aw_confirm_samples(samples, (unsigned)confirm);
	printf("profile %s, %zu suspect cells of %zu, first run %u batches per cell, %lu "
	       "confirmation runs of %u batches, %lu repetitions (ABBA)\n",
	       profile, n, aw_runner_cell_count(plan), samples, confirm, each, reps);
	for (unsigned long r = 0; r < reps; r++) {
		/* ABBA over the three: the first measurement, the reused runner, a fresh one */
		for (int side = 0; side < 3; side++) {
			int which = r % 2 ? 2 - side : side;
			double t = which == 0   ? measure(plan, NULL, keys, n, samples, 1)
			           : which == 1 ? measure(plan, NULL, keys, n, each, confirm)
			                        : measure(NULL, profile, keys, n, each, confirm);

			if (t <= 0) {
				aw_runner_free(&plan);
				return 1;
			}
			*(which == 0 ? &first[r] : which == 1 ? &conf[r] : &fresh[r]) = t;
		}
		ratio[r] = conf[r] / first[r];
		ratio2[r] = fresh[r] / first[r];
	}
	printf("first measurement of the suspects (their share of the first run): median %.3f s\n",
	       median(first, reps));
	printf("%lu confirmation runs, the first run's runner (agent --confirm): median %.3f s, "
	       "ratio %.2f (target <= 2.00)\n",
	       confirm, median(conf, reps), median(ratio, reps));
	printf("%lu confirmation runs, a fresh runner (a daemon's job):         median %.3f s, "
	       "ratio %.2f\n",
	       confirm, median(fresh, reps), median(ratio2, reps));
	aw_runner_free(&plan);
	return 0;
}
