/* Descriptive statistics of one cell's samples: order statistics, moments and a
 * distribution-free confidence interval of the median. */
#ifndef AW_STATS_H
#define AW_STATS_H

#include <stddef.h>
#include <stdint.h>

struct aw_cell;

struct aw_summary {
	size_t n;
	double min, p50, p95, p99, max;
	double mean, stddev; /* stddev is the sample (n - 1) deviation; 0 when n == 1 */
	double ci_lo, ci_hi; /* 95% CI of the median, see aw_median_ci_ranks() */
};

/* Sorts `v` (n values) in place and fills `out`. Returns 0, or -EINVAL when n == 0. */
int aw_summarize(double *v, size_t n, struct aw_summary *out);

/* A cell's statistics the runner's way from the same samples of the timed loop (`gross`) and
 * the empty loop (`base`), in ns per op, n of each: the empty loop's median is subtracted from
 * every timed sample (never below 0), and the cell is below resolution (min, p50 and ci_lo 0)
 * when the two medians' 95% intervals overlap. Sorts both arrays. Fills c's n, batch, the
 * statistics, baseline_ns and below_resolution, and *gross_out / *base_out when not NULL.
 * Returns 0, -EINVAL (n == 0) or -ENOMEM. */
int aw_cell_set_stats(struct aw_cell *c, double *gross, double *base, size_t n, uint64_t batch,
                      struct aw_summary *gross_out, struct aw_summary *base_out);

/* The q-quantile (0 <= q <= 1) of sorted values by linear interpolation between order
 * statistics (Hyndman & Fan type 7, the default of R and NumPy). n must be > 0. */
double aw_quantile_sorted(const double *sorted, size_t n, double q);

/* 1-based ranks (lo, hi) of the order statistics that bound a distribution-free confidence
 * interval of the median at `level` (e.g. 0.95): the narrowest symmetric pair
 * x(lo) <= median <= x(hi) whose exact binomial(n, 1/2) coverage is at least `level`. When no
 * pair reaches `level` (n < 6 at 95%), the widest pair, (1, n), is returned. Returns the
 * achieved coverage. */
double aw_median_ci_ranks(size_t n, double level, size_t *lo, size_t *hi);

/* Sorts v ascending, in place, as glibc's qsort() with a (x > y) - (x < y) comparison does, step
 * for step (NANs and -0 end up where it put them), without its call per comparison. */
void aw_sort_doubles(double *v, size_t n);

/* Median absolute deviation of sorted values (unscaled). n must be > 0. `scratch` holds n
 * doubles. */
double aw_mad_sorted(const double *sorted, size_t n, double *scratch);

#endif
