/* The Wilcoxon signed-rank test and the Hodges-Lehmann estimate with its interval, and Student's
 * t; see aw/signrank.h. */
#include "aw/signrank.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#define SIGNRANK_EXACT_MAX 50 /* counts up to 2^50 stay exact in a double */

/* P(T+ <= t) for n values without ties or zeros, from the counts of subsets of {1..n} by
 * their sum: c(k) gains c(k - i) for each rank i. */
static double signrank_cdf(const double *counts, size_t n, double t)
{
	size_t max = n * (n + 1) / 2;
	double below = 0;

	if (t < 0)
		return 0;
	for (size_t k = 0; k <= max && (double)k <= t + 1e-9; k++)
		below += counts[k];
	return below / ldexp(1, (int)n);
}

static double *signrank_counts(size_t n)
{
	size_t max = n * (n + 1) / 2;
	double *c = calloc(max + 1, sizeof(*c));

	if (!c)
		return NULL;
	c[0] = 1;
	for (size_t i = 1; i <= n; i++)
		for (size_t k = i * (i + 1) / 2; k >= i; k--)
			c[k] += c[k - i];
	return c;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

struct abs_ranked {
	double abs;
	int positive;
};

static int cmp_abs(const void *x, const void *y)
{
	double a = ((const struct abs_ranked *)x)->abs, b = ((const struct abs_ranked *)y)->abs;

	return (a > b) - (a < b);
}

/* The signed-rank statistic T+ of the non-zero values, their count, and whether ranks tie
 * (with the tie term sum(t^3 - t) for the variance). */
static int signed_rank(const double *d, size_t n, double *t_plus, size_t *nz, double *ties)
{
	struct abs_ranked *r = malloc((n ? n : 1) * sizeof(*r));
	size_t m = 0, i = 0;

	if (!r)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++)
		if (d[k] != 0)
			r[m++] = (struct abs_ranked){fabs(d[k]), d[k] > 0};
	qsort(r, m, sizeof(*r), cmp_abs);
	*t_plus = 0;
	*ties = 0;
	while (i < m) {
		size_t j = i;
		double mid;

		while (j + 1 < m && r[j + 1].abs == r[i].abs)
			j++;
		mid = (double)(i + j) / 2 + 1;
		for (size_t k = i; k <= j; k++)
			if (r[k].positive)
				*t_plus += mid;
		if (j > i) {
			double t = (double)(j - i + 1);

			*ties += t * t * t - t;
		}
		i = j + 1;
	}
	*nz = m;
	free(r);
	return 0;
}

static double norm_sf(double z)
{
	return 0.5 * erfc(z / sqrt(2.0));
}

/* The z with P(Z > z) == p, 0 < p < 1, by bisection (called once per interval). */
static double norm_isf(double p)
{
	double lo = -40, hi = 40;

	for (int i = 0; i < 200; i++) {
		double mid = (lo + hi) / 2;

		if (norm_sf(mid) > p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

size_t aw_signrank_min_n(double alpha)
{
	/* the most extreme of the 2^n equally likely sign patterns, on either side */
	size_t n = 1;

	while (2 * ldexp(1, -(int)n) > alpha && n < 64)
		n++;
	return n;
}

double aw_signrank_p(const double *d, size_t n)
{
	double t, ties, mean, var, z, *c, lo, hi;
	size_t m;

	if (signed_rank(d, n, &t, &m, &ties))
		return NAN;
	if (!m)
		return 1;
	mean = (double)m * ((double)m + 1) / 4;
	if (ties == 0 && m <= SIGNRANK_EXACT_MAX && m == n) {
		c = signrank_counts(m);
		if (!c)
			return NAN;
		lo = signrank_cdf(c, m, t);
		/* T+ is symmetric about its mean: P(T+ >= t) = P(T+ <= M - t) */
		hi = signrank_cdf(c, m, (double)m * ((double)m + 1) / 2 - t);
		free(c);
		return fmin(1, 2 * fmin(lo, hi));
	}
	var = (double)m * ((double)m + 1) * (2 * (double)m + 1) / 24 - ties / 48;
	if (var <= 0)
		return 1;
	z = (fabs(t - mean) - 0.5) / sqrt(var);
	return fmin(1, 2 * norm_sf(z > 0 ? z : 0));
}

int aw_hodges_lehmann(const double *d, size_t n, double alpha, struct aw_hl *out)
{
	size_t m = n * (n + 1) / 2, k = 0, w = 0;
	double *walsh, *c;

	out->estimate = out->lo = out->hi = NAN;
	out->p = 1;
	out->coverage = NAN;
	out->exact = n <= SIGNRANK_EXACT_MAX;
	if (!n)
		return 0;
	walsh = malloc(m * sizeof(*walsh));
	if (!walsh)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i; j < n; j++)
			walsh[w++] = (d[i] + d[j]) / 2;
	qsort(walsh, m, sizeof(*walsh), cmp_double);
	out->estimate = m % 2 ? walsh[m / 2] : (walsh[m / 2 - 1] + walsh[m / 2]) / 2;
	out->p = aw_signrank_p(d, n);
	/* The interval [W(k), W(m + 1 - k)] covers the centre with probability
	 * 1 - 2 P(T+ <= k - 1): k is the largest with 2 P(T+ <= k - 1) <= alpha. */
	if (out->exact) {
		c = signrank_counts(n);
		if (!c) {
			free(walsh);
			return -ENOMEM;
		}
		while (k < m / 2 && 2 * signrank_cdf(c, n, (double)k) <= alpha)
			k++;
		if (k)
			out->coverage = 1 - 2 * signrank_cdf(c, n, (double)k - 1);
		free(c);
	} else {
		double sd = sqrt((double)n * ((double)n + 1) * (2 * (double)n + 1) / 24);
		double z = norm_isf(alpha / 2);
		double kk = floor((double)m / 2 - z * sd);

		k = kk < 1 ? 1 : (size_t)kk;
		out->coverage = 1 - alpha;
	}
	if (k) {
		out->lo = walsh[k - 1];
		out->hi = walsh[m - k];
	}
	free(walsh);
	return 0;
}

/* ---- Student's t ---- */

/* The incomplete beta function by its continued fraction with the modified Lentz method, which
 * converges quickly for x < (a+1)/(a+b+2); the symmetry I_x(a,b) = 1 - I_{1-x}(b,a) covers the
 * rest. */
static double beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300, eps = 1e-15;
	double c = 1, d = 1 - (a + b) * x / (a + 1), h;

	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	h = d;
	for (int m = 1; m <= 300; m++) {
		double m2 = 2.0 * m, num, delta;

		/* even step */
		num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
		d = 1 + num * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + num / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		h *= d * c;
		/* odd step */
		num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
		d = 1 + num * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + num / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		delta = d * c;
		h *= delta;
		if (fabs(delta - 1) < eps)
			break;
	}
	return h;
}

double aw_betainc(double a, double b, double x)
{
	double front;

	assert(a > 0 && b > 0);
	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * beta_cf(a, b, x) / a;
	return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double aw_t_sf(double t, double df)
{
	double tail;

	assert(df > 0);
	if (isinf(t))
		return t > 0 ? 0 : 1;
	tail = 0.5 * aw_betainc(df / 2, 0.5, df / (df + t * t));
	return t >= 0 ? tail : 1 - tail;
}

double aw_t_quantile(double p, double df)
{
	double lo = 0, hi = 50;

	if (!(df > 0) || df > 200)
		df = 200;
	for (int i = 0; i < 60; i++) {
		double mid = (lo + hi) / 2;

		if (aw_t_sf(mid, df) > p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}
