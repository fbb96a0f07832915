/* The chart of an interleaved A/B document (draw.h): each cell's per-round change head/base - 1
 * beside its A/A rounds, with a line at each estimate of the judgment. */
#include "draw_internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aw/util.h"

/* ---- the rounds of an interleaved A/B document ---- */

#define AB_SERIES_MAX (AW_CHART_MAX_SERIES / 2) /* cells drawn; each gives A/B and A/A */

struct ab_load {
	json_t *doc, *judgment;
};

static int on_ab(const struct store_ab *ab, void *cls)
{
	struct ab_load *l = cls;

	l->doc = json_loads(ab->doc ? ab->doc : "", 0, NULL);
	l->judgment = json_loads(ab->judgment ? ab->judgment : "", 0, NULL);
	return l->doc && l->judgment ? 0 : -EINVAL;
}

/* log-free percent change of one round, NAN for a bad one */
static double round_pct(const json_t *r)
{
	double b = json_number_value(json_object_get(r, "base"));
	double h = json_number_value(json_object_get(r, "head"));

	return b > 0 && h > 0 ? 100 * (h / b - 1) : NAN;
}

static double judged_pct(const json_t *cell, const char *which)
{
	const json_t *o = which ? json_object_get(cell, which) : cell;
	const json_t *r = json_object_get(o, "ratio");

	return json_is_number(r) ? 100 * (json_number_value(r) - 1) : NAN;
}

int aw_draw_ab(struct aw_draw *d, const char *ab_id, char **err)
{
	const struct aw_chart_id id = {.kind = AW_CHART_AB, .name = ab_id};
	struct ab_load l = {NULL, NULL};
	struct aw_chart_ab chart = {0};
	const char **names = NULL;
	double *pct = NULL, *est = NULL;
	bool *aa = NULL;
	size_t n_cells = 0, n_rounds = 0, i, k = 0;
	json_t *cells, *c;
	char *title = NULL;
	int rc;

	if (!d->gp)
		return aw_errorf(err, -ENOSYS, "no gnuplot to draw with");
	rc = store_ab_get(d->conn, ab_id, on_ab, &l);
	if (rc) {
		aw_errorf(err, rc, "cannot read A/B document '%s': %s", ab_id,
		          rc == -ENOENT ? "no such document" : strerror(-rc));
		goto out;
	}
	cells = json_object_get(l.doc, "cells");
	json_array_foreach (cells, i, c) {
		size_t n = json_array_size(json_object_get(c, "rounds"));
		size_t m = json_array_size(json_object_get(c, "aa_rounds"));

		if (!n || n_cells >= AB_SERIES_MAX)
			continue;
		n_cells++;
		n_rounds = n > n_rounds ? n : n_rounds;
		n_rounds = m > n_rounds ? m : n_rounds;
	}
	names = calloc(2 * n_cells + 1, sizeof(*names));
	aa = calloc(2 * n_cells + 1, sizeof(*aa));
	est = calloc(2 * n_cells + 1, sizeof(*est));
	pct = calloc(2 * n_cells * n_rounds + 1, sizeof(*pct));
	title = aw_asprintf(
	    "%s: %.12s (base) against %.12s (head), rounds in the order measured",
	    json_string_value(json_object_get(l.doc, "subject")),
	    json_string_value(json_object_get(json_object_get(l.doc, "base"), "commit")),
	    json_string_value(json_object_get(json_object_get(l.doc, "head"), "commit")));
	if (!names || !aa || !est || !pct || !title) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < 2 * n_cells * n_rounds; i++)
		pct[i] = NAN;
	json_array_foreach (cells, i, c) {
		const json_t *jc = json_array_get(json_object_get(l.judgment, "cells"), i);
		const char *key = json_string_value(json_object_get(c, "key"));

		if (!json_array_size(json_object_get(c, "rounds")) || k >= 2 * n_cells)
			continue;
		for (int side = 0; side < 2; side++, k++) {
			const json_t *rounds = json_object_get(c, side ? "aa_rounds" : "rounds"),
			             *r;
			size_t j;

			names[k] = aw_asprintf("%s %s", key ? key : "?", side ? "A/A" : "A/B");
			if (!names[k]) {
				rc = aw_errorf(err, -ENOMEM, "out of memory");
				goto out;
			}
			aa[k] = side == 1;
			/* the A/B rounds' own estimate (a judgment of before the A/A bias was
			 * removed has only the decision's, the same there) */
			est[k] = judged_pct(jc, side                        ? "aa"
			                        : json_object_get(jc, "ab") ? "ab"
			                                                    : NULL);
			json_array_foreach (rounds, j, r)
				if (j < n_rounds)
					pct[k * n_rounds + j] = round_pct(r);
		}
	}
	chart = (struct aw_chart_ab){
	    .title = title,
	    .series = names,
	    .aa = aa,
	    .estimate = est,
	    .n_series = k,
	    .n_rounds = n_rounds,
	    .pct = pct,
	};
	draw_hold(d, &id);
	rc = draw_published(d, &id,
	                    aw_chart_draw_ab(d->gp, d->data_dir, &id, &chart, d->flags, err));
out:
	draw_count_one(d, rc);
	for (i = 0; names && i < 2 * n_cells; i++)
		free((void *)names[i]);
	free(names);
	free(aa);
	free(est);
	free(pct);
	free(title);
	json_decref(l.doc);
	json_decref(l.judgment);
	return rc;
}
