/* The Wilcoxon signed-rank test with the Hodges-Lehmann estimate of a centre and its
 * distribution-free interval, and Student's t: the statistics of paired A/B rounds and of the
 * spread of its loads, which the agent (deciding when an interleaved A/B has measured enough) and
 * the collector (judging the document; its tests use Student's t too) share. */
#ifndef AW_SIGNRANK_H
#define AW_SIGNRANK_H

#include <stdbool.h>
#include <stddef.h>

/* Wilcoxon signed-rank test of "the values are centred on 0" (zeros dropped, tied absolute
 * values given midranks): two-sided p-value, exact when there are no ties or zeros and at most
 * 50 values, else the normal approximation with tie and continuity corrections. 1 when no
 * value is non-zero. */
double aw_signrank_p(const double *d, size_t n);

/* The fewest values whose exact signed-rank interval can reach coverage 1 - alpha (two-sided):
 * 6 for alpha 0.05, as 2 / 2^n must not exceed alpha. */
size_t aw_signrank_min_n(double alpha);

/* The Hodges-Lehmann estimate of the centre of `d` (the median of its n(n+1)/2 Walsh averages
 * (d_i + d_j) / 2, i <= j) with the Wilcoxon signed-rank confidence interval
 * [W(k), W(m + 1 - k)] of the sorted Walsh averages, k the largest with
 * 2 P(T+ <= k - 1) <= alpha: exact for n <= 50 (coverage as achieved, >= 1 - alpha), the
 * normal approximation above. */
struct aw_hl {
	double estimate;
	double lo, hi;   /* NAN when n < aw_signrank_min_n(alpha) */
	double p;        /* aw_signrank_p() of d */
	double coverage; /* of [lo, hi]; NAN without an interval */
	bool exact;      /* the interval is from the exact distribution */
};

/* Fills *out (every field NAN/1 for n == 0). Returns 0 or -ENOMEM. */
int aw_hodges_lehmann(const double *d, size_t n, double alpha, struct aw_hl *out);

/* P(T > t) for Student's t with `df` > 0 degrees of freedom (df may be fractional). */
double aw_t_sf(double t, double df);

/* The t with P(T > t) = p for Student's t on df > 0 degrees of freedom (0 < p < 1/2; df
 * above 200 is taken as 200; at most 50). */
double aw_t_quantile(double p, double df);

/* The regularised incomplete beta function I_x(a, b), 0 <= x <= 1, a, b > 0. */
double aw_betainc(double a, double b, double x);

#endif
