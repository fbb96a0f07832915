/* Judging an A/B document; see ab_judge.h. */
#include "ab_judge.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "stattest.h"

/* log(head/base) of each round with both medians positive (validated documents have only
 * those). Returns how many, into a new array *out (NULL when none or without memory). */
static size_t log_ratios(const json_t *rounds, double **out)
{
	size_t n = json_array_size(rounds), m = 0, i;
	json_t *r;

	*out = n ? malloc(n * sizeof(**out)) : NULL;
	if (!*out)
		return 0;
	json_array_foreach (rounds, i, r) {
		double b = json_number_value(json_object_get(r, "base"));
		double h = json_number_value(json_object_get(r, "head"));

		if (b > 0 && h > 0)
			(*out)[m++] = log(h / b);
	}
	return m;
}

static json_t *ratio(double log_value)
{
	return isfinite(log_value) ? json_real(exp(log_value)) : json_null();
}

struct judged {
	json_t *out;
	struct aw_hl ab, aa;
	size_t n_ab, n_aa;
	double threshold; /* in log units */
	bool measured;    /* has rounds to judge */
};

static const char *cell_verdict(const struct judged *j, double q, double alpha, const char **reason)
{
	double t = j->threshold;
	bool significant = q <= alpha;

	if (isnan(j->ab.lo)) {
		*reason = "too few rounds for an interval";
		return "inconclusive";
	}
	if (significant && j->ab.estimate > t && j->ab.lo > 0)
		return "regressed";
	if (significant && j->ab.estimate < -t && j->ab.hi < 0)
		return "improved";
	if (j->ab.lo >= -t && j->ab.hi <= t)
		return "unchanged";
	if (significant) {
		*reason = "a real change smaller than the threshold";
		return "unchanged";
	}
	*reason = "the interval reaches past the threshold without excluding no change";
	return "inconclusive";
}

json_t *aw_ab_judge(const json_t *doc, const struct aw_ab_opts *opts)
{
	const json_t *cells = json_object_get(doc, "cells");
	size_t n = json_array_size(cells), n_p = 0, i;
	struct judged *js = calloc(n ? n : 1, sizeof(*js));
	double *p = calloc(n ? n : 1, sizeof(*p)), *q = calloc(n ? n : 1, sizeof(*q));
	json_t *out = NULL, *arr = NULL, *c;
	bool any_reg = false, any_imp = false, any_inc = false;
	double t0 = log1p(opts->threshold);

	if (!js || !p || !q)
		goto fail;
	json_array_foreach (cells, i, c) {
		struct judged *j = &js[i];
		const char *status = json_string_value(json_object_get(c, "status"));
		double *d = NULL;

		j->threshold = t0;
		if (!status || strcmp(status, "ok"))
			continue;
		j->n_ab = log_ratios(json_object_get(c, "rounds"), &d);
		if (aw_hodges_lehmann(d, j->n_ab, opts->alpha, &j->ab)) {
			free(d);
			goto fail;
		}
		free(d);
		j->n_aa = log_ratios(json_object_get(c, "aa_rounds"), &d);
		if (aw_hodges_lehmann(d, j->n_aa, opts->alpha, &j->aa)) {
			free(d);
			goto fail;
		}
		free(d);
		/* The floor: what the A/A interval cannot rule out is no evidence of a change. */
		if (isfinite(j->aa.lo))
			j->threshold = fmax(t0, fmax(fabs(j->aa.lo), fabs(j->aa.hi)));
		j->measured = j->n_ab > 0;
		if (j->measured)
			p[n_p++] = j->ab.p;
	}
	if (aw_bh_adjust(p, n_p, q))
		goto fail;
	arr = json_array();
	if (!arr)
		goto fail;
	n_p = 0;
	json_array_foreach (cells, i, c) {
		struct judged *j = &js[i];
		const char *status = json_string_value(json_object_get(c, "status"));
		const char *verdict, *reason = NULL;
		json_t *o;

		if (!j->measured) {
			verdict = !status || !strcmp(status, "ok") ? "inconclusive" : status;
			reason = !strcmp(verdict, "failed")
			             ? json_string_value(json_object_get(c, "reason"))
			         : !strcmp(verdict, "inconclusive") ? "no rounds"
			                                            : NULL;
			o = json_pack("{s:O, s:s, s:s?}", "key", json_object_get(c, "key"),
			              "verdict", verdict, "reason", reason);
			any_inc |= !strcmp(verdict, "failed") || !strcmp(verdict, "inconclusive");
		} else {
			double qi = q[n_p++];

			verdict = cell_verdict(j, qi, opts->alpha, &reason);
			o = json_pack(
			    "{s:O, s:s, s:o, s:o, s:o, s:f, s:f, s:f, s:i, s:{s:o, s:o, s:o, s:i}, "
			    "s:s?}",
			    "key", json_object_get(c, "key"), "verdict", verdict, "ratio",
			    ratio(j->ab.estimate), "lo", ratio(j->ab.lo), "hi", ratio(j->ab.hi),
			    "p", j->ab.p, "q", qi, "threshold", expm1(j->threshold), "rounds",
			    (int)j->n_ab, "aa", "ratio", ratio(j->aa.estimate), "lo",
			    ratio(j->aa.lo), "hi", ratio(j->aa.hi), "rounds", (int)j->n_aa,
			    "reason", reason);
			any_reg |= !strcmp(verdict, "regressed");
			any_imp |= !strcmp(verdict, "improved");
			any_inc |= !strcmp(verdict, "inconclusive");
		}
		if (!o || json_array_append_new(arr, o))
			goto fail;
	}
	out = json_pack("{s:s, s:f, s:f, s:O}", "verdict",
	                any_reg   ? "regressed"
	                : any_imp ? "improved"
	                : any_inc ? "inconclusive"
	                          : "unchanged",
	                "threshold", opts->threshold, "alpha", opts->alpha, "cells", arr);
fail:
	json_decref(arr);
	free(js);
	free(p);
	free(q);
	return out;
}
