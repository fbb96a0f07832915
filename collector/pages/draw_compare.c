/* The compare chart of a commit on a host (draw.h): its items against a base commit's runs or
 * a ref's baseline window, the cells the cached verdict says regressed marked, and the table of
 * the medians it was drawn from that its page reads (aw_chart_table_rel()). */
#include "draw_internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/strmap.h"
#include "aw/util.h"

struct verdict_find {
	struct aw_arena *a;
	const char *baseline_ref; /* NULL: any */
	struct aw_verdict_view view;
	bool found;
};

static int on_verdict(const struct store_verdict *v, void *cls)
{
	struct verdict_find *f = cls;

	if (f->found ||
	    (f->baseline_ref && v->baseline_ref && strcmp(f->baseline_ref, v->baseline_ref)))
		return 0;
	if (aw_verdict_view_parse(f->a, v, &f->view) == -EINVAL)
		return 0; /* not usable: as if there were none */
	f->found = true;
	return f->a->rc;
}

/* The keys of the cells the cached verdict of (commit, host) against `base` says regressed;
 * an empty map when there is no such verdict. */
static int regressed_keys(struct aw_draw *d, struct aw_arena *a, const char *commit,
                          const char *host, const char *base, struct aw_strmap **out)
{
	struct verdict_find f = {.a = a, .baseline_ref = base};
	const struct aw_draw_verdict *dv = d->verdict;
	int rc = 0;

	*out = aw_strmap_new(CELLS_MAX);
	if (!*out)
		return -ENOMEM;
	if (dv && dv->v && !strcmp(dv->commit, commit) && !strcmp(dv->host, host) &&
	    dv->baseline_ref && !strcmp(dv->baseline_ref, base)) {
		/* the verdict this task just computed: no round trip through its JSON */
		for (size_t i = 0; !rc && i < dv->v->n_cells; i++)
			if (dv->v->cells[i].verdict == AW_VERDICT_REGRESSED)
				rc = aw_strmap_put(*out, dv->v->cells[i].key, 1);
		return rc;
	}
	rc = store_verdict_list(d->conn, d->project, commit, host, 1, on_verdict, &f);
	for (size_t i = 0; !rc && f.found && i < f.view.n_cells; i++)
		if (f.view.cells[i].verdict == AW_VERDICT_REGRESSED)
			rc = aw_strmap_put(*out, f.view.cells[i].key, 1);
	return rc;
}

static json_t *json_value(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* Writes the compare chart's numbers for every cell, the head's then those only the baseline
 * has, unless the file already says the same (a redraw of unchanged data writes nothing). */
static int write_table(const char *data_dir, const struct aw_chart_id *id, struct aw_arena *a,
                       const struct cellset *head, const struct cellset *base, char **err)
{
	char rel[1100], *text = NULL, *old = NULL;
	json_t *cells = json_array(), *doc = json_pack("{s:o}", "cells", cells);
	size_t old_len = 0;
	int rc = doc ? 0 : -ENOMEM;

	for (int pass = 0; pass < 2 && !rc; pass++) {
		const struct cellset *from = pass ? base : head;

		for (size_t i = 0; i < from->n && !rc; i++) {
			const struct cell_acc *c = &from->cells[i];
			const struct cell_acc *h = pass ? NULL : c;
			const struct cell_acc *b = pass ? c : draw_cellset_find(base, c->key);

			if (pass && draw_cellset_find(head, c->key))
				continue;
			rc = json_array_append_new(cells,
			                           json_pack("[s, o, o]", c->key,
			                                     json_value(draw_median(a, b, 0)),
			                                     json_value(draw_median(a, h, 0))))
			         ? -ENOMEM
			         : 0;
		}
	}
	if (!rc)
		rc = aw_chart_table_rel(id, rel, sizeof(rel));
	if (!rc && !(text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(10))))
		rc = -ENOMEM;
	if (rc) {
		aw_errorf(err, rc, "cannot write the table of a compare chart: %s", strerror(-rc));
		goto out;
	}
	if (aw_read_beneath(data_dir, rel, TABLE_MAX, &old, &old_len) == 0 && !strcmp(old, text))
		goto out;
	rc = aw_write_beneath(data_dir, rel, text, strlen(text), true, err);
out:
	free(old);
	free(text);
	json_decref(doc);
	return rc;
}

/* The compare chart of `head` against `base`: the runs of commit `base` on the host when there
 * are some, else the baseline window of ref `base` (or -ENOENT when `pair_only`). */
int draw_compare_with(struct aw_draw *d, struct aw_arena *a, struct commit_host *head,
                      const char *base, bool pair_only, char **err)
{
	const struct run_ref *oldest = &head->runs.runs[head->runs.n - 1];
	struct run_list base_runs = {.a = a};
	struct aw_strmap *regressed = NULL;
	struct aw_chart_compare_item *items = NULL;
	struct cellset baseline;
	size_t n_items = 0, cap = 0;
	char base_label[LABEL_MAX], title[2 * LABEL_MAX];
	bool pair = false;
	int rc;

	rc = draw_cellset_init(&baseline, a);
	if (rc)
		return aw_errorf(err, rc, "out of memory");
	if (aw_valid_commit(base)) {
		struct store_run_filter f = {.project = d->project,
		                             .host = head->host,
		                             .commit = base,
		                             .limit = HEAD_RUNS_MAX};

		rc = store_list_runs(d->conn, &f, draw_on_run, &base_runs);
		pair = !rc && base_runs.n;
	}
	if (!rc && !pair && pair_only) {
		rc = -ENOENT; /* quietly: the base commit never ran on this host */
		goto out;
	}
	if (!rc && pair) {
		snprintf(base_label, sizeof(base_label), "%.12s", base);
	} else if (!rc) {
		unsigned window = d->analysis && d->analysis->detect.window
		                      ? (unsigned)d->analysis->detect.window
		                      : 10;

		/* the baseline window: the newest runs of the ref before the commit */
		rc = store_ref_history(d->conn, d->project, head->host, base, oldest->order_us,
		                       oldest->seq, window, draw_on_run, &base_runs);
		if (!rc)
			rc = regressed_keys(d, a, head->commit, head->host, base, &regressed);
		snprintf(base_label, sizeof(base_label), "%.64s, %zu earlier run%s", base,
		         base_runs.n, base_runs.n == 1 ? "" : "s");
	}
	if (!rc)
		rc = draw_cellset_add_runs(d->conn, &baseline, &base_runs);
	if (rc) {
		aw_errorf(err, rc, "cannot read the runs of the compare chart of '%s' on '%s': %s",
		          head->commit, head->host, strerror(-rc));
		goto out;
	}
	/* the head's items, then those only the baseline has */
	for (int pass = 0; pass < 2; pass++) {
		const struct cellset *from = pass ? &baseline : &head->cells;

		for (size_t i = 0; i < from->n && n_items < AW_CHART_MAX_ITEMS; i++) {
			const struct cell_acc *c = &from->cells[i];
			const struct cell_acc *h = pass ? NULL : c;
			const struct cell_acc *b = pass ? c : draw_cellset_find(&baseline, c->key);
			struct aw_chart_compare_item *it;
			int64_t flag;

			if (!is_item(c, head->first_cpu) ||
			    (pass && draw_cellset_find(&head->cells, c->key)))
				continue;
			it = aw_arena_push(a, &items, &n_items, &cap, sizeof(*it));
			if (!it)
				break;
			it->name = draw_cell_label(a, c);
			it->base_p50 = draw_median(a, b, 0);
			it->base_p95 = draw_median(a, b, 1);
			it->base_p99 = draw_median(a, b, 2);
			it->head_p50 = draw_median(a, h, 0);
			it->head_p95 = draw_median(a, h, 1);
			it->head_p99 = draw_median(a, h, 2);
			it->regressed = regressed && !aw_strmap_get(regressed, c->key, &flag);
		}
	}
	if (a->rc) {
		rc = aw_errorf(err, a->rc, "cannot gather the compare chart of '%s': %s",
		               head->commit, strerror(-a->rc));
		goto out;
	}
	snprintf(title, sizeof(title), "%.64s: %.12s against %s", head->host, head->commit,
	         base_label);
	const struct aw_chart_compare chart = {title, base_label, short_sha(a, head->commit), items,
	                                       n_items};
	const struct aw_chart_id id = {
	    .kind = AW_CHART_COMPARE, .commit = head->commit, .host = head->host, .base = base};

	draw_hold(d, &id);
	rc = aw_chart_draw_compare(d->gp, d->data_dir, &id, &chart, d->flags, err);
	if (rc >= 0) {
		int table_rc = write_table(d->data_dir, &id, a, &head->cells, &baseline, err);

		if (table_rc)
			rc = table_rc;
	}
	rc = draw_published(d, &id, rc);
out:
	aw_strmap_free(&regressed);
	draw_cellset_release(&baseline);
	return rc;
}
