/* Chart drawing throughput for docs/benchmarks.md ("Reports"): the charts of one commit on
 * four hosts drawn through one persistent gnuplot and through one gnuplot process per chart,
 * the two alternating in the same run; then the same set with one and two drawing workers (one
 * gnuplot each, as the collector runs them) and the cost of a pass that is all cache hits.
 * Usage: bench_reports_charts [rounds (default 5)] */
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aw/util.h"
#include "reports.h"

#define N_HOSTS     4
#define N_OPS       18 /* the aarch64 ops of the default matrix */
#define N_CPUS      96
#define N_CELLS     40 /* cells on a host's compare chart */
#define N_GROUPS    4  /* trend charts per host */
#define N_SERIES    5  /* ops per trend group */
#define N_POINTS    100
#define N_CONTENDED 3 /* contention charts per host */

static const char *const op_names[N_OPS] = {
    "plain",   "llsc",      "stadd",     "ldadd",       "ldadda",     "ldaddl",
    "ldaddal", "cas",       "icas",      "swp",         "casp",       "ldxp_stxp",
    "prfm",    "prfm_keep", "prfm_strm", "c11_relaxed", "c11_seqcst", "c11_cas"};
static const char *const host_names[N_HOSTS] = {"graviton2", "graviton4", "grace", "epyc"};
static const char *const group_names[N_GROUPS] = {"lse", "llsc", "cas", "readers"};

enum {
	JOB_COMPARE,
	JOB_TREND,
	JOB_HEATMAP,
	JOB_PERCPU,
	JOB_CONTENTION
};

struct job {
	int type;
	struct aw_chart_id id;
	const void *data;
};

/* Everything the charts of one commit read (deterministic pseudo-random numbers). */
struct fixture {
	char cell_names[N_CELLS][48];
	struct aw_chart_compare_item items[N_HOSTS][N_CELLS];
	struct aw_chart_compare compare[N_HOSTS];
	double trend_values[N_HOSTS][N_GROUPS][N_SERIES][3][N_POINTS];
	struct aw_chart_trend_series series[N_HOSTS][N_GROUPS][N_SERIES];
	struct aw_chart_trend trend[N_HOSTS][N_GROUPS];
	char sha_labels[N_POINTS][8];
	const char *sha_ptrs[N_POINTS];
	size_t change_points[1], regressions[1];
	double heat[N_OPS * N_HOSTS];
	struct aw_chart_heatmap heatmap;
	int cpus[N_CPUS];
	double percpu_values[N_HOSTS][N_OPS * N_CPUS];
	struct aw_chart_percpu percpu[N_HOSTS];
	int64_t c_values[3], d_values[2];
	double contention_values[N_HOSTS][N_CONTENDED][6];
	struct aw_chart_contention contention[N_HOSTS][N_CONTENDED];
	char titles[N_HOSTS][N_GROUPS + N_CONTENDED + 2][96];
	struct job jobs[N_HOSTS * (2 + N_GROUPS + N_CONTENDED) + 1];
	size_t n_jobs;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double uniform(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* A measurement near `centre`: p50s of one cell vary by a few percent between runs. */
static double ns_around(double centre)
{
	return centre * (0.97 + 0.06 * uniform());
}

static void build(struct fixture *f)
{
	for (size_t i = 0; i < N_CELLS; i++)
		snprintf(f->cell_names[i], sizeof(f->cell_names[i]), "%s%s cpu=0",
		         i >= N_OPS ? "reader=srcu op=" : "op=", op_names[i % N_OPS]);
	for (size_t i = 0; i < N_POINTS; i++) {
		snprintf(f->sha_labels[i], sizeof(f->sha_labels[i]), "%07zx", 0xa1b2c3 + 7919 * i);
		f->sha_ptrs[i] = f->sha_labels[i];
	}
	f->change_points[0] = N_POINTS / 2;
	f->regressions[0] = N_POINTS / 2;
	for (int i = 0; i < N_CPUS; i++)
		f->cpus[i] = i;
	f->c_values[0] = 10, f->c_values[1] = 100, f->c_values[2] = 1000;
	f->d_values[0] = 0, f->d_values[1] = 100;

	for (size_t h = 0; h < N_HOSTS; h++) {
		double slow = h == 2 ? 10.0 : 1.0; /* grace: stadd ten times slower */

		for (size_t i = 0; i < N_CELLS; i++) {
			double base = 1.0 + (double)(i % N_OPS) * 0.5;
			struct aw_chart_compare_item *it = &f->items[h][i];

			*it = (struct aw_chart_compare_item){
			    f->cell_names[i],    ns_around(base), ns_around(base * 1.2),
			    ns_around(base * 2), ns_around(base), ns_around(base * 1.2),
			    ns_around(base * 2), i % 11 == 2};
		}
		snprintf(f->titles[h][0], sizeof(f->titles[h][0]), "%s: c0ffee1 against main",
		         host_names[h]);
		f->compare[h] = (struct aw_chart_compare){f->titles[h][0], "main, last 5 runs",
		                                          "c0ffee1", f->items[h], N_CELLS};
		for (size_t g = 0; g < N_GROUPS; g++) {
			for (size_t s = 0; s < N_SERIES; s++) {
				double(*v)[N_POINTS] = f->trend_values[h][g][s];

				for (size_t p = 0; p < N_POINTS; p++) {
					double centre =
					    (1 + (double)s) * (p >= N_POINTS / 2 ? 2 : 1);

					v[0][p] = ns_around(centre);
					v[1][p] = v[0][p] * 1.3;
					v[2][p] = v[0][p] * 2.1;
				}
				f->series[h][g][s] = (struct aw_chart_trend_series){
				    op_names[(g * N_SERIES + s) % N_OPS],
				    v[0],
				    v[1],
				    v[2],
				    f->change_points,
				    1,
				    f->regressions,
				    1};
			}
			snprintf(f->titles[h][1 + g], sizeof(f->titles[h][1 + g]),
			         "%s: %s ops on main", host_names[h], group_names[g]);
			f->trend[h][g] = (struct aw_chart_trend){f->titles[h][1 + g],
			                                         f->sha_ptrs,
			                                         N_POINTS,
			                                         f->series[h][g],
			                                         N_SERIES,
			                                         NULL,
			                                         0};
		}
		for (size_t o = 0; o < N_OPS; o++) {
			for (size_t c = 0; c < N_CPUS; c++)
				f->percpu_values[h][o * N_CPUS + c] =
				    ns_around((1 + (double)o) * (c >= 64 ? 3 : 1));
			f->heat[o * N_HOSTS + h] = ns_around((1 + (double)o) * (o == 2 ? slow : 1));
		}
		snprintf(f->titles[h][1 + N_GROUPS], sizeof(f->titles[h][1 + N_GROUPS]),
		         "%s: p50 per CPU", host_names[h]);
		f->percpu[h] = (struct aw_chart_percpu){
		    f->titles[h][1 + N_GROUPS], op_names, N_OPS, f->cpus, N_CPUS,
		    f->percpu_values[h]};
		for (size_t k = 0; k < N_CONTENDED; k++) {
			for (size_t i = 0; i < 6; i++)
				f->contention_values[h][k][i] = ns_around(80.0 / (1 + (double)i));
			f->contention[h][k] = (struct aw_chart_contention){
			    op_names[1 + k], f->c_values, 3,
			    f->d_values,     2,           f->contention_values[h][k]};
		}
	}
	f->heatmap = (struct aw_chart_heatmap){
	    "c0ffee1: p50 across hosts", op_names, N_OPS, host_names, N_HOSTS, f->heat};

	f->n_jobs = 0;
	f->jobs[f->n_jobs++] =
	    (struct job){JOB_HEATMAP, {.kind = AW_CHART_HEATMAP, .commit = "c0ffee1"}, &f->heatmap};
	for (size_t h = 0; h < N_HOSTS; h++) {
		const char *host = host_names[h];

		f->jobs[f->n_jobs++] = (struct job){
		    JOB_COMPARE,
		    {.kind = AW_CHART_COMPARE, .commit = "c0ffee1", .host = host, .base = "main"},
		    &f->compare[h]};
		f->jobs[f->n_jobs++] =
		    (struct job){JOB_PERCPU,
		                 {.kind = AW_CHART_PERCPU, .commit = "c0ffee1", .host = host},
		                 &f->percpu[h]};
		for (size_t g = 0; g < N_GROUPS; g++)
			f->jobs[f->n_jobs++] = (struct job){JOB_TREND,
			                                    {.kind = AW_CHART_TREND,
			                                     .host = host,
			                                     .ref = "main",
			                                     .name = group_names[g]},
			                                    &f->trend[h][g]};
		for (size_t k = 0; k < N_CONTENDED; k++)
			f->jobs[f->n_jobs++] = (struct job){JOB_CONTENTION,
			                                    {.kind = AW_CHART_CONTENTION,
			                                     .commit = "c0ffee1",
			                                     .host = host,
			                                     .name = op_names[1 + k]},
			                                    &f->contention[h][k]};
	}
}

static int draw(struct aw_gnuplot *gp, const char *dir, const struct job *j, unsigned flags)
{
	char *err = NULL;
	int rc = -EINVAL;

	switch (j->type) {
	case JOB_COMPARE:
		rc = aw_chart_draw_compare(gp, dir, &j->id, j->data, flags, &err);
		break;
	case JOB_TREND:
		rc = aw_chart_draw_trend(gp, dir, &j->id, j->data, flags, &err);
		break;
	case JOB_HEATMAP:
		rc = aw_chart_draw_heatmap(gp, dir, &j->id, j->data, flags, &err);
		break;
	case JOB_PERCPU:
		rc = aw_chart_draw_percpu(gp, dir, &j->id, j->data, flags, &err);
		break;
	case JOB_CONTENTION:
		rc = aw_chart_draw_contention(gp, dir, &j->id, j->data, flags, &err);
		break;
	}
	if (rc < 0) {
		fprintf(stderr, "bench: %s\n", err ? err : "draw failed");
		exit(1);
	}
	free(err);
	return rc;
}

static struct aw_gnuplot *start_gnuplot(void)
{
	char *err = NULL;
	struct aw_gnuplot *gp = aw_gnuplot_new(NULL, &err);

	if (!gp) {
		fprintf(stderr, "bench: %s\n", err);
		exit(1);
	}
	return gp;
}

/* CPU seconds used so far by this process, by its reaped children (the per-chart gnuplots) and
 * by the live gnuplots in `pids`: the load-independent cost of a pass on a shared machine. */
static double cpu_seconds(const int *pids, size_t n)
{
	struct rusage self, children;
	double total;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &children);
	total = (double)self.ru_utime.tv_sec + (double)self.ru_utime.tv_usec / 1e6 +
	        (double)self.ru_stime.tv_sec + (double)self.ru_stime.tv_usec / 1e6 +
	        (double)children.ru_utime.tv_sec + (double)children.ru_utime.tv_usec / 1e6 +
	        (double)children.ru_stime.tv_sec + (double)children.ru_stime.tv_usec / 1e6;
	for (size_t i = 0; i < n; i++) {
		char path[64], buf[1024];
		unsigned long utime = 0, stime = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/stat", pids[i]);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f)) {
			const char *p = strrchr(buf, ')'); /* fields after the command name */

			if (p &&
			    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			           &utime, &stime) == 2)
				total += (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
		}
		fclose(f);
	}
	return total;
}

static double seconds_since(uint64_t t0)
{
	return (double)(aw_monotonic_ns() - t0) / 1e9;
}

/* Seconds spent on each type of chart by the persistent gnuplot, over every round. */
static double type_seconds[5];
static unsigned type_count[5];
static const char *const type_names[5] = {"compare", "trend", "heat map", "per-CPU", "contention"};

static double persistent_pass(struct aw_gnuplot *gp, const char *dir, const struct fixture *f)
{
	uint64_t t0 = aw_monotonic_ns();

	for (size_t i = 0; i < f->n_jobs; i++) {
		uint64_t t1 = aw_monotonic_ns();

		draw(gp, dir, &f->jobs[i], AW_DRAW_FORCE);
		type_seconds[f->jobs[i].type] += seconds_since(t1);
		type_count[f->jobs[i].type]++;
	}
	return seconds_since(t0);
}

static double per_process_pass(const char *dir, const struct fixture *f)
{
	uint64_t t0 = aw_monotonic_ns();

	for (size_t i = 0; i < f->n_jobs; i++) {
		struct aw_gnuplot *gp = start_gnuplot();

		draw(gp, dir, &f->jobs[i], AW_DRAW_FORCE);
		aw_gnuplot_free(&gp);
	}
	return seconds_since(t0);
}

struct worker {
	pthread_t thread;
	struct aw_gnuplot *gp;
	const struct fixture *f;
	const char *dir;
	size_t first, step;
	unsigned flags;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (size_t i = w->first; i < w->f->n_jobs; i += w->step)
		draw(w->gp, w->dir, &w->f->jobs[i], w->flags);
	return NULL;
}

/* Every chart of the set, shared round-robin among `n` workers whose gnuplots already run. */
static double workers_pass(struct worker *w, size_t n, unsigned flags)
{
	uint64_t t0 = aw_monotonic_ns();

	for (size_t i = 0; i < n; i++) {
		w[i].first = i;
		w[i].step = n;
		w[i].flags = flags;
		if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]) != 0) {
			fprintf(stderr, "bench: cannot start a thread\n");
			exit(1);
		}
	}
	for (size_t i = 0; i < n; i++)
		pthread_join(w[i].thread, NULL);
	return seconds_since(t0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int main(int argc, char **argv)
{
	static struct fixture fix;
	char root[] = "/tmp/aw-bench-reports-XXXXXX";
	int rounds = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 5; /* 1..64, checked below */
	double t_persistent[64], t_process[64], t_one[64], t_two[64], t_cached[64];
	double c_persistent[64], c_process[64];
	int pids[3];
	struct worker w[2];
	struct aw_gnuplot *gp;

	if (rounds < 1 || rounds > 64) {
		fprintf(stderr, "usage: %s [rounds 1..64]\n", argv[0]);
		return 2;
	}
	if (!mkdtemp(root)) {
		perror("bench: mkdtemp");
		return 1;
	}
	build(&fix);
	gp = start_gnuplot();
	for (size_t i = 0; i < 2; i++)
		w[i] = (struct worker){.gp = start_gnuplot(), .f = &fix, .dir = root};
	draw(gp, root, &fix.jobs[0], AW_DRAW_FORCE); /* warm the page cache and fonts */

	pids[0] = aw_gnuplot_pid(gp);
	pids[1] = aw_gnuplot_pid(w[0].gp);
	pids[2] = aw_gnuplot_pid(w[1].gp);
	for (int r = 0; r < rounds; r++) {
		double c0 = cpu_seconds(pids, 3);

		t_persistent[r] = persistent_pass(gp, root, &fix);
		c_persistent[r] = cpu_seconds(pids, 3) - c0;
		c0 = cpu_seconds(pids, 3);
		t_process[r] = per_process_pass(root, &fix);
		c_process[r] = cpu_seconds(pids, 3) - c0;
		t_one[r] = workers_pass(w, 1, AW_DRAW_FORCE);
		t_two[r] = workers_pass(w, 2, AW_DRAW_FORCE);
		t_cached[r] = workers_pass(w, 1, 0);
	}
	double per = median(t_persistent, (size_t)rounds), proc = median(t_process, (size_t)rounds);
	double cper = median(c_persistent, (size_t)rounds),
	       cproc = median(c_process, (size_t)rounds);
	double n = (double)fix.n_jobs;

	printf("charts per pass: %zu (one commit, %d hosts: heat map; per host compare with %d "
	       "cells, per-CPU %d ops x %d CPUs, %d trends of %d ops x %d commits, %d contention); "
	       "each chart is one SVG and one PNG; median of %d rounds\n\n",
	       fix.n_jobs, N_HOSTS, N_CELLS, N_OPS, N_CPUS, N_GROUPS, N_SERIES, N_POINTS,
	       N_CONTENDED, rounds);
	printf("| gnuplot | charts/s | ms per chart | pass s | CPU ms per chart | charts per "
	       "CPU-second |\n|---|---|---|---|---|---|\n");
	printf("| one persistent gnuplot | %.1f | %.1f | %.2f | %.1f | %.1f |\n", n / per,
	       per / n * 1e3, per, cper / n * 1e3, n / cper);
	printf("| one gnuplot process per chart | %.1f | %.1f | %.2f | %.1f | %.1f |\n", n / proc,
	       proc / n * 1e3, proc, cproc / n * 1e3, n / cproc);
	printf("\npersistent / per-process: %.2fx in wall time, %.2fx in CPU time\n\n", proc / per,
	       cproc / cper);
	printf("| chart type (persistent) | ms per chart |\n|---|---|\n");
	for (size_t t = 0; t < 5; t++)
		printf("| %s | %.1f |\n", type_names[t], type_seconds[t] / type_count[t] * 1e3);
	printf("\n");
	printf("| the commit's %zu charts | s |\n|---|---|\n", fix.n_jobs);
	printf("| 1 drawing worker | %.2f |\n", median(t_one, (size_t)rounds));
	printf("| 2 drawing workers | %.2f |\n", median(t_two, (size_t)rounds));
	printf("| 1 worker, data unchanged (all cache hits) | %.3f |\n",
	       median(t_cached, (size_t)rounds));

	aw_gnuplot_free(&gp);
	for (size_t i = 0; i < 2; i++)
		aw_gnuplot_free(&w[i].gp);
	nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
