/* Hypothesis tests behind regression detection: normal and Student-t tails, the Welch t-test,
 * the Mann-Whitney U test and Benjamini-Hochberg control of the false discovery rate; the
 * Wilcoxon signed-rank test with the Hodges-Lehmann estimate (paired A/B rounds) is in
 * aw/signrank.h. */
#ifndef AW_STATTEST_H
#define AW_STATTEST_H

#include <stdbool.h>
#include <stddef.h>

#include "aw/signrank.h" /* the signed-rank test, Hodges-Lehmann and Student's t, shared with
                            the agent */

/* P(Z > z) for a standard normal Z. */
double aw_norm_sf(double z);

/* (aw_t_sf(), aw_t_quantile() and aw_betainc(): aw/signrank.h) */

/* The last AW_T_MEMO_N quantiles aw_t_quantile_memo() computed. aw_t_quantile() costs some
 * 60 incomplete beta functions, and one verdict asks it for the same few degrees of freedom
 * hundreds of times (a group's cells share them). Zero it before its first use. */
#define AW_T_MEMO_N 8
struct aw_t_memo {
	double p[AW_T_MEMO_N], df[AW_T_MEMO_N], t[AW_T_MEMO_N];
	size_t n, next; /* entries held; the one replaced next */
};

/* aw_t_quantile(p, df), the very same value, remembered in m (the caller's, used by one thread
 * at a time): one asked for before is not computed again. */
double aw_t_quantile_memo(struct aw_t_memo *m, double p, double df);

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

#endif
