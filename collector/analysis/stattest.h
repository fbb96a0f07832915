/* Hypothesis tests behind regression detection: normal and Student-t tails, the Welch t-test,
 * the Mann-Whitney U test, the Wilcoxon signed-rank test with the Hodges-Lehmann estimate and
 * its interval (paired A/B rounds), and Benjamini-Hochberg control of the false discovery
 * rate. */
#ifndef AW_STATTEST_H
#define AW_STATTEST_H

#include <stdbool.h>
#include <stddef.h>

/* P(Z > z) for a standard normal Z. */
double aw_norm_sf(double z);

/* P(T > t) for Student's t with `df` > 0 degrees of freedom (df may be fractional). */
double aw_t_sf(double t, double df);

/* The t with P(T > t) = p for Student's t on df > 0 degrees of freedom (0 < p < 1/2; df
 * above 200 is taken as 200). */
double aw_t_quantile(double p, double df);

/* The regularised incomplete beta function I_x(a, b), 0 <= x <= 1, a, b > 0. */
double aw_betainc(double a, double b, double x);

/* The digamma and trigamma functions (derivatives of log Gamma), x > 0. */
double aw_digamma(double x);
double aw_trigamma(double x);

/* The y > 0 with aw_trigamma(y) == x, for x > 0. */
double aw_trigamma_inverse(double x);

/* Welch's two-sample t-test of mean(a) != mean(b); returns the two-sided p-value (1 when
 * either side has fewer than 2 values; 0 when both variances are 0 and the means differ). */
double aw_welch_p(const double *a, size_t na, const double *b, size_t nb);

enum aw_alternative {
	AW_GREATER,
	AW_LESS,
	AW_TWO_SIDED
};

/* Mann-Whitney U test of a against b (AW_GREATER: a tends to be larger). Exact distribution
 * when there are no ties and na * nb <= 400, else the normal approximation with tie and
 * continuity corrections. Returns the p-value, or 1 when a side is empty. */
double aw_mann_whitney_p(const double *a, size_t na, const double *b, size_t nb,
                         enum aw_alternative alt);

/* Benjamini-Hochberg adjusted p-values ("q-values") of n p-values: q[i] <= alpha means p[i] is
 * a discovery at false discovery rate alpha. q may alias p. Returns 0 or -ENOMEM. */
int aw_bh_adjust(const double *p, size_t n, double *q);

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

#endif
