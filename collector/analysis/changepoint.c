/* E-divisive means with a t-test significance; see changepoint.h. The energy statistic of a
 * split at t of a segment [s, e) with alpha = 1 is
 *   Q(t) = m n / (m + n) * (2/(m n) B - 2/(m (m-1)) WL - 2/(n (n-1)) WR)
 * where B sums |x_i - x_j| across the split and WL, WR within each side (pairs counted once);
 * all three are updated in O(e - s) per step, so scanning a segment costs O((e - s)^2). */
#include "changepoint.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stattest.h"

struct segment {
	size_t start, end;
	int done;
};

/* The best split of [s, e) by the energy statistic, or 0 when the segment is too short. */
static size_t best_split(const double *x, size_t s, size_t e, size_t min_seg)
{
	double wl = 0, wr = 0, b = 0, best_q = -1;
	size_t best = 0;

	if (e - s < 2 * min_seg)
		return 0;
	/* Start with the split at s + 1: left = {x_s}. */
	for (size_t j = s + 1; j < e; j++) {
		b += fabs(x[s] - x[j]);
		for (size_t k = j + 1; k < e; k++)
			wr += fabs(x[j] - x[k]);
	}
	for (size_t t = s + 1; t + min_seg <= e; t++) {
		double m = (double)(t - s), n = (double)(e - t), q;

		if (t - s >= min_seg) {
			q = m * n / (m + n) *
			    (2 / (m * n) * b - (m > 1 ? 2 / (m * (m - 1)) * wl : 0) -
			     (n > 1 ? 2 / (n * (n - 1)) * wr : 0));
			if (q > best_q) {
				best_q = q;
				best = t;
			}
		}
		/* move x_t from the right side to the left */
		for (size_t i = s; i < t; i++) {
			double d = fabs(x[i] - x[t]);

			wl += d;
			b -= d;
		}
		for (size_t k = t + 1; k < e; k++) {
			double d = fabs(x[t] - x[k]);

			wr -= d;
			b += d;
		}
	}
	return best;
}

static double mean_of(const double *x, size_t s, size_t e)
{
	double sum = 0;

	for (size_t i = s; i < e; i++)
		sum += x[i];
	return sum / (double)(e - s);
}

static int cmp_cp(const void *a, const void *b)
{
	size_t x = ((const struct aw_changepoint *)a)->index;
	size_t y = ((const struct aw_changepoint *)b)->index;

	return (x > y) - (x < y);
}

int aw_changepoints(const double *x, size_t n, const struct aw_cp_opts *opts,
                    struct aw_changepoint *out, size_t max_out)
{
	const struct aw_cp_opts defaults = AW_CP_OPTS_DEFAULT;
	const struct aw_cp_opts *o = opts ? opts : &defaults;
	struct segment *seg;
	size_t n_seg = 1, found = 0, min_seg = o->min_segment < 2 ? 2 : o->min_segment;

	if (!x && n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return -EINVAL;
	if (n < 2 * min_seg || !max_out)
		return 0;
	seg = malloc((n / min_seg + 1) * sizeof(*seg));
	if (!seg)
		return -ENOMEM;
	seg[0] = (struct segment){0, n, 0};
	/* Each round accepts the most significant split among all segments, like Otava. */
	while (found < max_out) {
		double best_p = 2;
		size_t best_seg = 0, best_t = 0;

		for (size_t i = 0; i < n_seg; i++) {
			size_t t;
			double p, before, after;

			if (seg[i].done)
				continue;
			t = best_split(x, seg[i].start, seg[i].end, min_seg);
			if (!t) {
				seg[i].done = 1;
				continue;
			}
			p = aw_welch_p(x + seg[i].start, t - seg[i].start, x + t, seg[i].end - t);
			before = mean_of(x, seg[i].start, t);
			after = mean_of(x, t, seg[i].end);
			if (p >= o->max_pvalue ||
			    fabs(after - before) < o->min_rel_change * fabs(before)) {
				seg[i].done = 1;
				continue;
			}
			if (p < best_p) {
				best_p = p;
				best_seg = i;
				best_t = t;
			}
		}
		if (best_p > 1)
			break;
		out[found++] =
		    (struct aw_changepoint){best_t, best_p, mean_of(x, seg[best_seg].start, best_t),
		                            mean_of(x, best_t, seg[best_seg].end)};
		seg[n_seg++] = (struct segment){best_t, seg[best_seg].end, 0};
		seg[best_seg].end = best_t;
	}
	free(seg);
	qsort(out, found, sizeof(*out), cmp_cp);
	return (int)found;
}
