/* Detection quality on simulated series shaped like real ones: for each noise class and shift,
 * the rate at which shifted cells are flagged, the false alarm rate per unshifted cell, and the
 * false gate rate per commit of a 300-cell matrix; atomwatch's detector beside a plain 5%
 * threshold and a z-score |z| > 5 (Conbench's default) on the very same series. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/stats.h"
#include "detect.h"
#include "splitmix.h"

#define CELLS   300
#define SHIFTED 10  /* cells shifted in a commit with a shift */
#define HISTORY 40  /* earlier runs on the baseline ref; the detector's window is the last 10 */
#define SAMPLES 100 /* batches per run */
#define COMMITS 120 /* simulated commits per (class, shift) */
#define TRUE_NS 50.0

/* A cell's noise: each run scales the truth by (1 + N(0, cv_run)); each of its batches adds
 * N(0, cv_sample) and, with probability p_out, is 10x slower (a second mode, as STADD's p99 on
 * Graviton4 or contended LL/SC). */
struct noise {
	const char *name;
	double cv_run, cv_sample, p_out;
};

static const struct noise classes[] = {
    {"tight (run-to-run CV 0.1%, batches 1%)", 0.001, 0.01, 0},
    {"typical (run-to-run CV 1%, batches 5%)", 0.01, 0.05, 0},
    {"noisy+bimodal (run-to-run CV 5%, batches 5%, 1% of batches 10x)", 0.05, 0.05, 0.01},
};

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static double uniform(void)
{
	return ((double)(aw_splitmix64(&rng_state) >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(void)
{
	return sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
}

struct run {
	double min, p50, p99, se50, se99;
};

static struct run one_run(const struct noise *nz, double truth)
{
	double v[SAMPLES], f = 1 + nz->cv_run * normal();
	struct aw_summary s;
	struct run r;

	for (int i = 0; i < SAMPLES; i++) {
		v[i] = truth * f * (1 + nz->cv_sample * normal());
		if (nz->p_out > 0 && uniform() < nz->p_out)
			v[i] *= 10;
		if (v[i] < 0)
			v[i] = 0;
	}
	aw_summarize(v, SAMPLES, &s);
	r.min = s.min;
	r.p50 = s.p50;
	r.p99 = s.p99;
	r.se50 = (s.ci_hi - s.ci_lo) / (2 * 1.96);
	r.se99 = NAN; /* runs carry no interval for p99 */
	return r;
}

struct tally {
	size_t shifted_flagged, shifted_total, null_flagged, null_total, gates, commits;
};

enum method {
	ATOMWATCH,
	ATOMWATCH_3,
	PLAIN_5,
	ZSCORE_5,
	N_METHODS
};
static const char *const method_names[] = {"atomwatch (1 head run)", "atomwatch (3 head runs)",
                                           "plain 5% threshold", "z-score |z| > 5"};

static int plain_threshold(const double *b, size_t n, double head)
{
	double s[HISTORY];

	memcpy(s, b, n * sizeof(*b));
	aw_sort_doubles(s, n);
	return head / aw_quantile_sorted(s, n, 0.5) - 1 > 0.05;
}

static int zscore(const double *b, size_t n, double head)
{
	double m = 0, s = 0;

	for (size_t i = 0; i < n; i++)
		m += b[i];
	m /= (double)n;
	for (size_t i = 0; i < n; i++)
		s += (b[i] - m) * (b[i] - m);
	s = sqrt(s / (double)(n - 1));
	return s > 0 ? (head - m) / s > 5 : head > m;
}

static double hist[2][CELLS][HISTORY], hse[2][CELLS][HISTORY];
static double head[2][CELLS][3], xse[2][CELLS][3];
static struct aw_detect_input in[2 * CELLS];
static struct aw_detect_result out[2 * CELLS];

/* Runs the detector over both metrics of every cell as one family, as the collector does (p50
 * and p99 pool their noise separately); flags[c] |= regressed on either. */
static void detect_cells(int n_head, int *flags)
{
	for (int m = 0; m < 2; m++)
		for (int c = 0; c < CELLS; c++)
			in[m * CELLS + c] = (struct aw_detect_input){.history = hist[m][c],
			                                             .history_se = hse[m][c],
			                                             .n_history = HISTORY,
			                                             .head = head[m][c],
			                                             .head_se = xse[m][c],
			                                             .n_head = (size_t)n_head,
			                                             .threshold = 0.05,
			                                             .group = m};
	if (aw_detect(in, 2 * CELLS, NULL, out))
		exit(1);
	for (int m = 0; m < 2; m++)
		for (int c = 0; c < CELLS; c++)
			flags[c] |= out[m * CELLS + c].verdict == AW_VERDICT_REGRESSED;
}

static void count(struct tally *t, const int *flags, double shift)
{
	int gate = 0;

	for (int c = 0; c < CELLS; c++) {
		if (shift > 0 && c < SHIFTED) {
			t->shifted_flagged += (size_t)flags[c];
			t->shifted_total++;
		} else {
			t->null_flagged += (size_t)flags[c];
			t->null_total++;
		}
		gate |= flags[c];
	}
	t->gates += (size_t)gate;
	t->commits++;
}

static void simulate(const struct noise *nz, double shift, struct tally *t)
{
	for (int commit = 0; commit < COMMITS; commit++) {
		int flags[N_METHODS][CELLS];

		memset(flags, 0, sizeof(flags));
		for (int c = 0; c < CELLS; c++) {
			double truth = TRUE_NS * (1 + 0.3 * c / CELLS);
			int shifted = shift > 0 && c < SHIFTED;

			for (int i = 0; i < HISTORY; i++) {
				struct run r = one_run(nz, truth);

				hist[0][c][i] = r.p50, hse[0][c][i] = r.se50;
				hist[1][c][i] = r.p99, hse[1][c][i] = r.se99;
			}
			for (int i = 0; i < 3; i++) {
				struct run r = one_run(nz, truth * (shifted ? 1 + shift : 1));

				head[0][c][i] = r.p50, xse[0][c][i] = r.se50;
				head[1][c][i] = r.p99, xse[1][c][i] = r.se99;
			}
			for (int m = 0; m < 2; m++) {
				const double *b = hist[m][c] + HISTORY - 10;

				flags[PLAIN_5][c] |= plain_threshold(b, 10, head[m][c][0]);
				flags[ZSCORE_5][c] |= zscore(b, 10, head[m][c][0]);
			}
		}
		detect_cells(1, flags[ATOMWATCH]);
		detect_cells(3, flags[ATOMWATCH_3]);
		for (int k = 0; k < N_METHODS; k++)
			count(&t[k], flags[k], shift);
	}
}

int main(int argc, char **argv)
{
	const double shifts[] = {0, 0.01, 0.02, 0.05, 0.10, 0.50};

	printf("%d cells per commit (%d of them shifted when the shift is > 0), %d earlier runs "
	       "of %d batches each, %d commits per row; a cell is flagged when its p50 or its p99 "
	       "is\n",
	       CELLS, SHIFTED, HISTORY, SAMPLES, COMMITS);
	for (size_t k = 0; k < sizeof(classes) / sizeof(classes[0]); k++) {
		/* bench_detect_quality [CLASS]: the classes whose name starts so (the random
		 * stream then differs from a run of all three: compare like with like) */
		if (argc > 1 && strncmp(argv[1], classes[k].name, strlen(argv[1])))
			continue;
		printf("\n%s\n%-26s %8s %8s %8s %8s %8s %8s | %11s %11s\n", classes[k].name,
		       "method", "det 1%", "det 2%", "det 5%", "det 10%", "det 50%", "",
		       "false/cell", "false gate");
		struct tally all[6][N_METHODS];

		memset(all, 0, sizeof(all));
		for (size_t s = 0; s < 6; s++)
			simulate(&classes[k], shifts[s], all[s]);
		for (int m = 0; m < N_METHODS; m++) {
			printf("%-26s", method_names[m]);
			for (size_t s = 1; s < 6; s++)
				printf(" %7.1f%%", 100.0 * (double)all[s][m].shifted_flagged /
				                       (double)all[s][m].shifted_total);
			printf(" %8s | %10.3f%% %10.1f%%\n", "",
			       100.0 * (double)all[0][m].null_flagged /
			           (double)all[0][m].null_total,
			       100.0 * (double)all[0][m].gates / (double)all[0][m].commits);
		}
	}
	printf(
	    "\ndet x%% = share of cells with a true x%% slowdown flagged as regressed; false/cell "
	    "= share of unshifted cells flagged (shift 0 commits); false gate = share of "
	    "commits without any shift that the gate fails.\n");
	return 0;
}
