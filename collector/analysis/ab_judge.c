/* Judging an A/B document; see ab_judge.h. The decision itself is aw_ab_decide() (common/), the
 * same the agent ran to know when to stop; here it is fed from the JSON and written back. */
#include "ab_judge.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/ab.h"
#include "aw/verdict.h"
#include "stattest.h"

static double log_ratio(const json_t *round)
{
	double b = json_number_value(json_object_get(round, "base"));
	double h = json_number_value(json_object_get(round, "head"));

	return b > 0 && h > 0 ? log(h / b) : NAN;
}

/* The cell's rounds as the decision reads them: round i of `rounds` with round i of
 * `aa_rounds` (a document without A/A rounds is judged on the A/B rounds alone). Returns how
 * many, into a new array *out (NULL when none or without memory); *levels tells whether any
 * round carries a level. */
static size_t read_rounds(const json_t *cell, struct aw_ab_round **out, bool *levels)
{
	const json_t *ab = json_object_get(cell, "rounds"),
	             *aa = json_object_get(cell, "aa_rounds");
	size_t n_ab = json_array_size(ab), n_aa = json_array_size(aa), n, m = 0;

	n = n_aa && n_aa < n_ab ? n_aa : n_ab;
	*out = n ? malloc(n * sizeof(**out)) : NULL;
	if (!*out)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const json_t *r = json_array_get(ab, i), *layout = json_object_get(r, "layout");
		struct aw_ab_round *o = &(*out)[m];

		o->ab = log_ratio(r);
		o->aa = n_aa ? log_ratio(json_array_get(aa, i)) : 0;
		o->level = aw_ab_level_parse(json_string_value(json_object_get(r, "level")));
		o->layout = json_is_integer(layout) ? (int)json_integer_value(layout) : -1;
		*levels |= o->level != AW_AB_LEVEL_NONE;
		if (isfinite(o->ab) && isfinite(o->aa))
			m++;
	}
	return m;
}

static json_t *ratio(double log_value)
{
	return isfinite(log_value) ? json_real(exp(log_value)) : json_null();
}

struct judged {
	struct aw_ab_decision d;
	bool measured; /* has rounds to judge */
	bool levels;   /* its rounds carry levels */
	double p;      /* the cell's p: the smallest of its estimands', Bonferroni-adjusted */
};

/* The cell's p-value over its estimands (every round, and each level with rounds). */
static double cell_p(const struct judged *j)
{
	unsigned estimands = j->levels ? 3 : 1;
	double p = j->d.diff.p;

	if (j->levels)
		for (int l = AW_AB_LEVEL_ALONE; l <= AW_AB_LEVEL_SHARED; l++)
			if (j->d.level[l].rounds)
				p = fmin(p, j->d.level[l].p);
	return fmin(1, p * estimands);
}

static json_t *estimate_json(const struct aw_ab_estimate *e, bool verdict)
{
	json_t *o = json_pack("{s:o, s:o, s:o, s:i}", "ratio", ratio(e->estimate), "lo",
	                      ratio(e->lo), "hi", ratio(e->hi), "rounds", (int)e->rounds);

	if (o && verdict &&
	    json_object_set_new(o, "verdict", json_string(aw_ab_verdict_name(e->verdict)))) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* The judged cell's details beyond the fields every collector wrote: the A/B alone, the levels,
 * the layouts. */
static int details(json_t *o, const struct judged *j)
{
	json_t *levels = j->levels ? json_object() : NULL, *layouts = json_array();
	int rc = -ENOMEM;

	if (!layouts || (j->levels && !levels))
		goto out;
	for (int l = AW_AB_LEVEL_ALONE; levels && l <= AW_AB_LEVEL_SHARED; l++)
		if (json_object_set_new(levels, aw_ab_level_name((enum aw_ab_level)l),
		                        estimate_json(&j->d.level[l], true)))
			goto out;
	for (size_t l = 0; l < j->d.n_layouts; l++) {
		const struct aw_ab_layout *lay = &j->d.layout[l];

		if (lay->rounds &&
		    json_array_append_new(layouts,
		                          json_pack("{s:i, s:i, s:o, s:o, s:s}", "layout", (int)l,
		                                    "rounds", (int)lay->rounds, "ratio",
		                                    ratio(lay->diff), "aa", ratio(lay->aa),
		                                    "verdict", aw_ab_verdict_name(lay->verdict))))
			goto out;
	}
	rc = json_object_set_new(o, "layouts", layouts);
	layouts = NULL; /* taken, or freed on failure */
	if (!rc && levels) {
		rc = json_object_set_new(o, "levels", levels);
		levels = NULL;
	}
	if (!rc)
		rc = json_object_set_new(o, "ab", estimate_json(&j->d.ab, false));
	if (!rc)
		rc = json_object_set_new(o, "layout_spread",
		                         isfinite(j->d.layout_spread)
		                             ? json_real(expm1(j->d.layout_spread))
		                             : json_null());
	if (!rc)
		rc = json_object_set_new(o, "loads",
		                         isfinite(j->d.loads_sd)
		                             ? json_pack("{s:f, s:f}", "sd", expm1(j->d.loads_sd),
		                                         "half_width", expm1(j->d.loads_hw))
		                             : json_null());
	if (!rc)
		rc = json_object_set_new(o, "alpha_each", json_real(j->d.alpha_each));
	rc = rc ? -ENOMEM : 0;
out:
	json_decref(levels);
	json_decref(layouts);
	return rc;
}

json_t *aw_ab_judge(const json_t *doc, const struct aw_ab_opts *opts)
{
	const json_t *cells = json_object_get(doc, "cells"), *c;
	const json_t *looks = json_object_get(json_object_get(doc, "measure"), "looks");
	size_t n = json_array_size(cells), n_p = 0, i;
	struct judged *js = calloc(n ? n : 1, sizeof(*js));
	double *p = calloc(n ? n : 1, sizeof(*p)), *q = calloc(n ? n : 1, sizeof(*q));
	json_t *out = NULL, *arr = NULL;
	bool any_reg = false, any_imp = false, any_inc = false;
	struct aw_ab_rule rule = {.threshold = opts->threshold, .alpha = opts->alpha, .looks = 1};

	if (!js || !p || !q)
		goto fail;
	/* a sequential document: each interval at the level the agent's looks took */
	if (json_is_integer(looks) && json_integer_value(looks) > 0)
		rule.looks = (unsigned)json_integer_value(looks);
	json_array_foreach (cells, i, c) {
		struct judged *j = &js[i];
		const char *status = json_string_value(json_object_get(c, "status"));
		struct aw_ab_round *r = NULL;
		size_t m;

		if (!status || strcmp(status, "ok"))
			continue;
		m = read_rounds(c, &r, &j->levels);
		rule.levels = j->levels;
		if (aw_ab_decide(r, m, &rule, &j->d)) {
			free(r);
			goto fail;
		}
		free(r);
		j->measured = m > 0;
		j->p = cell_p(j);
		if (j->measured)
			p[n_p++] = j->p;
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
		enum aw_ab_verdict verdict;
		const char *reason = NULL;
		char why[200];
		json_t *o;

		if (!j->measured) {
			verdict = !status || !strcmp(status, "ok") ? AW_AB_VERDICT_INCONCLUSIVE
			                                           : aw_ab_verdict_parse(status);
			reason = verdict == AW_AB_VERDICT_FAILED
			             ? json_string_value(json_object_get(c, "reason"))
			         : verdict == AW_AB_VERDICT_INCONCLUSIVE ? "no rounds"
			                                                 : NULL;
			o = json_pack("{s:O, s:s, s:s?}", "key", json_object_get(c, "key"),
			              "verdict", aw_ab_verdict_name(verdict), "reason", reason);
			any_inc |= verdict == AW_AB_VERDICT_FAILED ||
			           verdict == AW_AB_VERDICT_INCONCLUSIVE;
		} else {
			double qi = q[n_p++];

			verdict = j->d.verdict;
			snprintf(why, sizeof(why), "%s", j->d.reason);
			if ((verdict == AW_AB_VERDICT_REGRESSED ||
			     verdict == AW_AB_VERDICT_IMPROVED) &&
			    qi > opts->alpha) {
				/* a change that the document's other cells make likely chance */
				snprintf(
				    why, sizeof(why),
				    "%s, but not significant over the document's cells (q %.2g)",
				    aw_ab_verdict_name(verdict), qi);
				verdict = AW_AB_VERDICT_INCONCLUSIVE;
			}
			reason = why[0] ? why : NULL;
			o = json_pack(
			    "{s:O, s:s, s:o, s:o, s:o, s:f, s:f, s:f, s:i, s:{s:o, s:o, s:o, s:i}, "
			    "s:s?}",
			    "key", json_object_get(c, "key"), "verdict",
			    aw_ab_verdict_name(verdict), "ratio", ratio(j->d.diff.estimate), "lo",
			    ratio(j->d.diff.lo), "hi", ratio(j->d.diff.hi), "p", j->p, "q", qi,
			    "threshold", opts->threshold, "rounds", (int)j->d.diff.rounds, "aa",
			    "ratio", ratio(j->d.aa.estimate), "lo", ratio(j->d.aa.lo), "hi",
			    ratio(j->d.aa.hi), "rounds", (int)j->d.aa.rounds, "reason", reason);
			if (o && details(o, j)) {
				json_decref(o);
				o = NULL;
			}
			any_reg |= verdict == AW_AB_VERDICT_REGRESSED;
			any_imp |= verdict == AW_AB_VERDICT_IMPROVED;
			any_inc |= verdict == AW_AB_VERDICT_INCONCLUSIVE;
		}
		if (!o || json_array_append_new(arr, o))
			goto fail;
	}
	out = json_pack("{s:s, s:f, s:f, s:i, s:O}", "verdict",
	                aw_ab_verdict_name(any_reg   ? AW_AB_VERDICT_REGRESSED
	                                   : any_imp ? AW_AB_VERDICT_IMPROVED
	                                   : any_inc ? AW_AB_VERDICT_INCONCLUSIVE
	                                             : AW_AB_VERDICT_UNCHANGED),
	                "threshold", opts->threshold, "alpha", opts->alpha, "looks",
	                (int)rule.looks, "cells", arr);
fail:
	json_decref(arr);
	free(js);
	free(p);
	free(q);
	return out;
}
