/* Statistics of one cell; see stats.h. */
#include "aw/stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void aw_sort_doubles(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
}

double aw_quantile_sorted(const double *sorted, size_t n, double q)
{
	double h, lo;
	size_t i;

	if (n == 1 || q <= 0)
		return sorted[0];
	if (q >= 1)
		return sorted[n - 1];
	h = (double)(n - 1) * q;
	lo = floor(h);
	i = (size_t)lo;
	if (i + 1 >= n)
		return sorted[n - 1];
	return sorted[i] + (h - lo) * (sorted[i + 1] - sorted[i]);
}

/* P(X <= k) for X ~ Binomial(n, 1/2), summed in log space so large n does not underflow. */
static double binom_half_cdf(size_t n, size_t k)
{
	double sum = 0, ln2n = (double)n * log(2.0);

	for (size_t i = 0; i <= k; i++)
		sum += exp(lgamma((double)n + 1) - lgamma((double)i + 1) -
		           lgamma((double)(n - i) + 1) - ln2n);
	return sum;
}

double aw_median_ci_ranks(size_t n, double level, size_t *lo, size_t *hi)
{
	double alpha = 1 - level, coverage;
	size_t j = 1;

	*lo = 1;
	*hi = n;
	if (n == 0)
		return 0;
	coverage = 1 - 2 * binom_half_cdf(n, 0);
	if (coverage < level)
		return n == 1 ? 0 : coverage;
	/* Grow j while [x(j+1), x(n-j)] still covers: coverage of [x(j), x(n-j+1)] is
	 * 1 - 2 P(X <= j - 1). For large n, start near the normal approximation. */
	if (n > 200) {
		double z = 1.959963984540054;
		double guess = floor((double)n / 2 - z * sqrt((double)n) / 2) - 3;

		if (guess > 1)
			j = (size_t)guess;
	}
	while (j + 1 <= n / 2 && 2 * binom_half_cdf(n, j) <= alpha)
		j++;
	*lo = j;
	*hi = n - j + 1;
	return 1 - 2 * binom_half_cdf(n, j - 1);
}

int aw_summarize(double *v, size_t n, struct aw_summary *out)
{
	double sum = 0, ss = 0;
	size_t lo, hi;

	if (n == 0)
		return -EINVAL;
	aw_sort_doubles(v, n);
	out->n = n;
	out->min = v[0];
	out->max = v[n - 1];
	out->p50 = aw_quantile_sorted(v, n, 0.50);
	out->p95 = aw_quantile_sorted(v, n, 0.95);
	out->p99 = aw_quantile_sorted(v, n, 0.99);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	out->mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - out->mean) * (v[i] - out->mean);
	out->stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
	aw_median_ci_ranks(n, 0.95, &lo, &hi);
	out->ci_lo = v[lo - 1];
	out->ci_hi = v[hi - 1];
	return 0;
}

double aw_mad_sorted(const double *sorted, size_t n, double *scratch)
{
	double med = aw_quantile_sorted(sorted, n, 0.5);

	for (size_t i = 0; i < n; i++)
		scratch[i] = fabs(sorted[i] - med);
	aw_sort_doubles(scratch, n);
	return aw_quantile_sorted(scratch, n, 0.5);
}
