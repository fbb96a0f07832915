/* Descriptive statistics of one cell's samples: order statistics, moments and a
 * distribution-free confidence interval of the median. */
#ifndef AW_STATS_H
#define AW_STATS_H

#include <stddef.h>

struct aw_summary {
	size_t n;
	double min, p50, p95, p99, max;
	double mean, stddev; /* stddev is the sample (n - 1) deviation; 0 when n == 1 */
	double ci_lo, ci_hi; /* 95% CI of the median, see aw_median_ci_ranks() */
};

/* Sorts `v` (n values) in place and fills `out`. Returns 0, or -EINVAL when n == 0. */
int aw_summarize(double *v, size_t n, struct aw_summary *out);

/* The q-quantile (0 <= q <= 1) of sorted values by linear interpolation between order
 * statistics (Hyndman & Fan type 7, the default of R and NumPy). n must be > 0. */
double aw_quantile_sorted(const double *sorted, size_t n, double q);

/* 1-based ranks (lo, hi) of the order statistics that bound a distribution-free confidence
 * interval of the median at `level` (e.g. 0.95): the narrowest symmetric pair
 * x(lo) <= median <= x(hi) whose exact binomial(n, 1/2) coverage is at least `level`. When no
 * pair reaches `level` (n < 6 at 95%), the widest pair, (1, n), is returned. Returns the
 * achieved coverage. */
double aw_median_ci_ranks(size_t n, double level, size_t *lo, size_t *hi);

/* Sorts a copy-free array with qsort (ascending, total order on finite doubles). */
void aw_sort_doubles(double *v, size_t n);

/* Median absolute deviation of sorted values (unscaled). n must be > 0. `scratch` holds n
 * doubles. */
double aw_mad_sorted(const double *sorted, size_t n, double *scratch);

#endif
