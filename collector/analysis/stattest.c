/* Hypothesis tests; see stattest.h. (Student's t and the incomplete beta function are in
 * common/signrank.c, which the agent's A/B decision shares.) */
#include "stattest.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aw/stats.h"

double aw_norm_sf(double z)
{
	return 0.5 * erfc(z / sqrt(2.0));
}

double aw_digamma(double x)
{
	double r = 0, f;

	assert(x > 0); /* -inf would never reach 12 */
	/* recurrence up to where the asymptotic series is accurate */
	while (x < 12) {
		r -= 1 / x;
		x += 1;
	}
	f = 1 / (x * x);
	return r + log(x) - 0.5 / x -
	       f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))));
}

double aw_trigamma(double x)
{
	double r = 0, f;

	assert(x > 0);
	while (x < 12) {
		r += 1 / (x * x);
		x += 1;
	}
	f = 1 / (x * x);
	return r + 1 / x + f / 2 +
	       f / x * (1.0 / 6 - f * (1.0 / 30 - f * (1.0 / 42 - f * (1.0 / 30))));
}

double aw_trigamma_inverse(double x)
{
	double lo = 1e-8, hi = 1e8;

	/* trigamma decreases monotonically: bisect on a log scale */
	for (int i = 0; i < 200; i++) {
		double mid = sqrt(lo * hi);

		if (aw_trigamma(mid) > x)
			lo = mid;
		else
			hi = mid;
		if (hi / lo < 1 + 1e-12)
			break;
	}
	return sqrt(lo * hi);
}

static void mean_var(const double *v, size_t n, double *mean, double *var)
{
	double s = 0, ss = 0;

	for (size_t i = 0; i < n; i++)
		s += v[i];
	*mean = s / (double)n;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - *mean) * (v[i] - *mean);
	*var = n > 1 ? ss / (double)(n - 1) : 0;
}

double aw_welch_p(const double *a, size_t na, const double *b, size_t nb)
{
	double ma, va, mb, vb, se2, t, df;

	if (na < 2 || nb < 2)
		return 1;
	mean_var(a, na, &ma, &va);
	mean_var(b, nb, &mb, &vb);
	se2 = va / (double)na + vb / (double)nb;
	if (se2 <= 0)
		return ma == mb ? 1 : 0;
	t = (ma - mb) / sqrt(se2);
	df = se2 * se2 /
	     ((va / (double)na) * (va / (double)na) / (double)(na - 1) +
	      (vb / (double)nb) * (vb / (double)nb) / (double)(nb - 1));
	return fmin(1, 2 * aw_t_sf(fabs(t), df));
}

struct ranked {
	double v;
	int from_a;
};

static int cmp_ranked(const void *x, const void *y)
{
	double a = ((const struct ranked *)x)->v, b = ((const struct ranked *)y)->v;

	return (a > b) - (a < b);
}

/* P(U >= u) under H0 for sizes m, n without ties, by the recurrence
 * f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u) over counts of arrangements. */
static double exact_upper(size_t m, size_t n, double u)
{
	size_t max = m * n, stride = max + 1;
	double *f = calloc((m + 1) * (n + 1) * stride, sizeof(*f)), total = 0, tail = 0;

	if (!f)
		return NAN;
#define F(i, j, k) f[((i) * (n + 1) + (j)) * stride + (k)]
	for (size_t i = 0; i <= m; i++) {
		for (size_t j = 0; j <= n; j++) {
			if (i == 0 || j == 0) {
				F(i, j, 0) = 1;
				continue;
			}
			for (size_t k = 0; k <= i * j; k++)
				F(i, j, k) = (k >= j ? F(i - 1, j, k - j) : 0) + F(i, j - 1, k);
		}
	}
	for (size_t k = 0; k <= max; k++) {
		total += F(m, n, k);
		if ((double)k >= u - 1e-9)
			tail += F(m, n, k);
	}
#undef F
	free(f);
	return tail / total;
}

double aw_mann_whitney_p(const double *a, size_t na, const double *b, size_t nb,
                         enum aw_alternative alt)
{
	size_t n = na + nb, i = 0;
	struct ranked *r;
	double rank_sum = 0, ties = 0, u, mean, var, p_hi, p_lo, z;
	int tied = 0;

	if (!na || !nb)
		return 1;
	r = malloc(n * sizeof(*r));
	if (!r)
		return NAN;
	for (size_t k = 0; k < na; k++)
		r[k] = (struct ranked){a[k], 1};
	for (size_t k = 0; k < nb; k++)
		r[na + k] = (struct ranked){b[k], 0};
	qsort(r, n, sizeof(*r), cmp_ranked);
	while (i < n) {
		size_t j = i;
		double mid;

		while (j + 1 < n && r[j + 1].v == r[i].v)
			j++;
		mid = (double)(i + j) / 2 + 1; /* midrank of positions i..j, 1-based */
		for (size_t k = i; k <= j; k++)
			if (r[k].from_a)
				rank_sum += mid;
		if (j > i) {
			double t = (double)(j - i + 1);

			ties += t * t * t - t;
			tied = 1;
		}
		i = j + 1;
	}
	free(r);
	u = rank_sum - (double)na * ((double)na + 1) / 2;
	if (!tied && na * nb <= 400) {
		p_hi = exact_upper(na, nb, u);
		p_lo = exact_upper(na, nb, (double)(na * nb) - u);
	} else {
		mean = (double)na * (double)nb / 2;
		var = (double)na * (double)nb / 12 *
		      ((double)n + 1 - ties / ((double)n * ((double)n - 1)));
		if (var <= 0)
			return 1;
		z = (u - mean - 0.5) / sqrt(var);
		p_hi = aw_norm_sf(z);
		z = (mean - u - 0.5) / sqrt(var);
		p_lo = aw_norm_sf(z);
	}
	switch (alt) {
	case AW_GREATER:
		return p_hi;
	case AW_LESS:
		return p_lo;
	case AW_TWO_SIDED:
		return fmin(1, 2 * fmin(p_hi, p_lo));
	}
	return 1;
}

struct indexed {
	double p;
	size_t i;
};

static int cmp_indexed(const void *x, const void *y)
{
	double a = ((const struct indexed *)x)->p, b = ((const struct indexed *)y)->p;

	return (a > b) - (a < b);
}

int aw_bh_adjust(const double *p, size_t n, double *q)
{
	struct indexed *s;
	double run = 1;

	if (!n)
		return 0;
	s = malloc(n * sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		s[i] = (struct indexed){isnan(p[i]) ? 1 : p[i], i};
	qsort(s, n, sizeof(*s), cmp_indexed);
	/* q_(k) = min over j >= k of p_(j) * n / j, walking down from the largest p. */
	for (size_t k = n; k > 0; k--) {
		double v = s[k - 1].p * (double)n / (double)k;

		if (v < run)
			run = v;
		s[k - 1].p = run;
	}
	for (size_t k = 0; k < n; k++)
		q[s[k].i] = s[k].p;
	free(s);
	return 0;
}

double aw_t_quantile_memo(struct aw_t_memo *m, double p, double df)
{
	size_t at;

	/* equal p and df give the same quantile (+0 and -0 alike: both are taken as 200) */
	for (size_t i = 0; i < m->n; i++)
		if (m->p[i] == p && m->df[i] == df)
			return m->t[i];
	at = m->next;
	m->next = (m->next + 1) % AW_T_MEMO_N;
	if (m->n < AW_T_MEMO_N)
		m->n++;
	m->p[at] = p;
	m->df[at] = df;
	m->t[at] = aw_t_quantile(p, df);
	return m->t[at];
}
