/* Change points of a series by E-divisive means (Matteson & James, 2014) with the significance
 * of each split decided by Welch's t-test between its two sides, as Apache Otava (Hunter) does
 * instead of the original permutation test: deterministic and fast enough to run on every
 * series after every ingest. */
#ifndef AW_CHANGEPOINT_H
#define AW_CHANGEPOINT_H

#include <stddef.h>

struct aw_cp_opts {
	size_t min_segment;    /* fewest points on each side of a change (>= 2) */
	double max_pvalue;     /* accept a split when Welch's p-value is below this */
	double min_rel_change; /* and the means differ by at least this fraction (0 = any) */
};

#define AW_CP_OPTS_DEFAULT                                                    \
	{                                                                     \
		.min_segment = 3, .max_pvalue = 0.001, .min_rel_change = 0.01 \
	}

struct aw_changepoint {
	size_t index;  /* first point of the new segment */
	double pvalue; /* Welch's p-value of the split when it was accepted */
	double before; /* mean of the segment before ... */
	double after;  /* ... and after, as split when accepted */
};

/* Finds the change points of x[0..n), returning how many were written to out (at most
 * max_out, in ascending index order), or -EINVAL / -ENOMEM. */
int aw_changepoints(const double *x, size_t n, const struct aw_cp_opts *opts,
                    struct aw_changepoint *out, size_t max_out);

#endif
