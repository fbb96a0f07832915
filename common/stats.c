/* Statistics of one cell; see stats.h. */
#include "aw/stats.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "aw/result.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* A stable insertion sort, for short runs of values without NANs. */
static void insertion_sort(double *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		double x = v[i];
		size_t j = i;

		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* glibc's qsort() of doubles, step for step (its merge sort: halves of n / 2 and the rest, the
 * left element taken unless it compares greater), without its call through a function pointer
 * for each comparison, which cost a verdict of 300 cells a fifth of its time. Following its
 * steps keeps even the order NANs end up in (they compare equal to anything) as it was. With
 * `run` > 1 (values without NANs only), runs of up to `run` values are sorted by insertion:
 * stable too, so it leaves every value (-0 and 0 too, which compare equal) where the plain
 * merge does, in about half its time for the few dozen values of a verdict's medians. */
static void merge_sort(double *v, size_t n, double *tmp, size_t run)
{
	size_t n1 = n / 2, n2 = n - n1, k = 0;
	double *b1 = v, *b2 = v + n1;

	if (n <= run) {
		insertion_sort(v, n);
		return;
	}
	merge_sort(b1, n1, tmp, run);
	merge_sort(b2, n2, tmp, run);
	while (n1 > 0 && n2 > 0) {
		if (!(*b1 > *b2)) {
			tmp[k++] = *b1++;
			n1--;
		} else {
			tmp[k++] = *b2++;
			n2--;
		}
	}
	if (n1 > 0)
		memcpy(tmp + k, b1, n1 * sizeof(*v));
	memcpy(v, tmp, (n - n2) * sizeof(*v));
}

void aw_sort_doubles(double *v, size_t n)
{
	double small[256], *tmp = n <= 256 ? small : malloc(n * sizeof(*v));
	bool nan = false;

	if (!tmp) {
		qsort(v, n, sizeof(*v), cmp_double); /* (as glibc does without the memory) */
		return;
	}
	for (size_t i = 0; i < n && !nan; i++)
		nan = isnan(v[i]);
	merge_sort(v, n, tmp, nan ? 1 : 16);
	if (tmp != small)
		free(tmp);
}

double aw_quantile_sorted(const double *sorted, size_t n, double q)
{
	double h, lo;
	size_t i;

	assert(n > 0);            /* sorted[0] is read */
	assert(q >= 0 && q <= 1); /* and not NaN, which would index anywhere */
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

double aw_median_ci_ranks(size_t n, double level, size_t *lo, size_t *hi)
{
	double alpha = 1 - level, logp, cdf;
	size_t j;

	*lo = 1;
	*hi = n;
	if (n <= 1)
		return 0;
	/* Walk the Binomial(n, 1/2) distribution upwards in log space (2^-n underflows for large
	 * n): the interval [x(j), x(n-j+1)] covers the median with probability
	 * 1 - 2 P(X <= j - 1). Grow j while that stays >= level. */
	logp = -(double)n * log(2.0); /* log P(X = 0) */
	cdf = exp(logp);
	if (1 - 2 * cdf < level)
		return 1 - 2 * cdf;
	for (j = 1; j + 1 <= n / 2; j++) {
		/* cdf = P(X <= j - 1); would [x(j+1), x(n-j)] still cover? */
		double next;

		logp += log((double)(n - (j - 1))) - log((double)j); /* log P(X = j) */
		next = cdf + exp(logp);
		if (2 * next > alpha)
			break;
		cdf = next;
	}
	*lo = j;
	*hi = n - j + 1;
	return 1 - 2 * cdf;
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

	assert(scratch && scratch != sorted);
	for (size_t i = 0; i < n; i++)
		scratch[i] = fabs(sorted[i] - med);
	aw_sort_doubles(scratch, n);
	return aw_quantile_sorted(scratch, n, 0.5);
}

int aw_cell_set_stats(struct aw_cell *c, double *gross, double *base, size_t n, uint64_t batch,
                      struct aw_summary *gross_out, struct aw_summary *base_out)
{
	double *net;
	struct aw_summary g, b, s;

	if (!n)
		return -EINVAL;
	net = malloc(n * sizeof(*net));
	if (!net)
		return -ENOMEM;
	aw_summarize(base, n, &b);
	for (size_t i = 0; i < n; i++)
		net[i] = fmax(0, gross[i] - b.p50);
	aw_summarize(gross, n, &g);
	aw_summarize(net, n, &s);
	free(net);
	c->n = n;
	c->batch = batch;
	c->min = s.min;
	c->p50 = s.p50;
	c->p95 = s.p95;
	c->p99 = s.p99;
	c->max = s.max;
	c->mean = s.mean;
	c->stddev = s.stddev;
	c->ci_lo = s.ci_lo;
	c->ci_hi = s.ci_hi;
	c->baseline_ns = b.p50;
	/* Below resolution: the op's median cannot be told apart from the empty loop's, i.e. the
	 * two 95% intervals of the median overlap. Report 0 rather than noise. */
	c->below_resolution = g.ci_lo <= b.ci_hi;
	if (c->below_resolution) {
		c->min = 0;
		c->p50 = 0;
		c->ci_lo = 0;
	}
	if (gross_out)
		*gross_out = g;
	if (base_out)
		*base_out = b;
	return 0;
}
