/* Charts from the store (see draw.h): a chart by its id, and the charts of a commit after an
 * upload, each drawn by the file of its kind (draw_compare.c, draw_grid.c, draw_trend.c,
 * draw_ab.c) from the data draw_data.c reads. The workers that draw them are in postingest.c. */
#include "draw_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aw/util.h"

/* ---- by chart id, and after ingest ---- */

int aw_draw_chart(struct aw_draw *d, const struct aw_chart_id *id, char **err)
{
	struct aw_arena a;
	struct commit_host head;
	int rc;

	if (!d->gp)
		return aw_errorf(err, -ENOSYS, "no gnuplot to draw with");
	if (id->kind == AW_CHART_TREND)
		return draw_trends_of(d, id->host, id->ref, id->name, err);
	if (id->kind == AW_CHART_AB)
		return aw_draw_ab(d, id->name, err);
	aw_arena_init(&a, ARENA_LIMIT);
	memset(&head, 0, sizeof(head));
	if (id->kind == AW_CHART_HEATMAP) {
		rc = draw_heatmap(d, &a, id->commit, err);
		goto out;
	}
	rc = draw_load_commit_host(d, &a, id->commit, id->host, &head);
	if (rc) {
		aw_errorf(err, rc, "cannot read the runs of '%s' on '%s': %s", id->commit, id->host,
		          rc == -ENOENT ? "no run" : strerror(-rc));
		goto out;
	}
	switch (id->kind) {
	case AW_CHART_COMPARE:
		rc = draw_compare_with(d, &a, &head, id->base, false, err);
		break;
	case AW_CHART_PERCPU:
		rc = draw_percpu_with(d, &a, &head, err);
		break;
	case AW_CHART_CONTENTION:
		rc = draw_contention_with(d, &a, &head, id->name, err);
		break;
	default:
		rc = aw_errorf(err, -EINVAL, "bad chart kind");
		break;
	}
out:
	draw_count_one(d, rc);
	draw_cellset_release(&head.cells);
	aw_arena_release(&a);
	return rc;
}

/* The commit listed after `commit` on the overview (the newest runs' commits, newest first):
 * the base of the compare page the overview links. NULL when there is none. */
static const char *previous_commit(struct aw_draw *d, struct aw_arena *a, const char *commit)
{
	struct store_run_filter f = {.limit = AW_RECENT_RUNS};
	struct run_list runs = {.a = a};
	bool seen = false;

	if (store_list_runs(d->conn, &f, draw_on_run, &runs))
		return NULL;
	for (size_t i = 0; i < runs.n; i++) {
		const char *c = runs.runs[i].commit;

		if (!c)
			continue;
		if (!strcmp(c, commit))
			seen = true;
		else if (seen)
			return c;
	}
	return NULL;
}

int aw_draw_commit(struct aw_draw *d, const char *project, const char *commit, const char *host,
                   char **err_out)
{
	char *scratch = NULL, **err = &scratch; /* the steps below always report into one */
	struct aw_draw dp = *d;
	struct aw_arena a;
	struct commit_host head;
	const char **names = NULL, *prev;
	char *first_err = NULL;
	size_t n_names = 0;
	int first = 0, rc;

	dp.project = project;
	memset(&head, 0, sizeof(head));
	aw_arena_init(&a, ARENA_LIMIT);
	if (!d->gp)
		goto out;
	rc = draw_load_commit_host(&dp, &a, commit, host, &head);
	if (rc) {
		draw_count(d,
		           aw_errorf(err, rc, "cannot read the runs of '%s' on '%s': %s", commit,
		                     host, rc == -ENOENT ? "no run" : strerror(-rc)),
		           err, &first_err, &first);
		goto out;
	}
	/* the commit's own charts first: they are what a reader of its page waits for */
	draw_count(d,
	           draw_compare_with(&dp, &a, &head,
	                             d->analysis && d->analysis->baseline_ref
	                                 ? d->analysis->baseline_ref
	                                 : "main",
	                             false, err),
	           err, &first_err, &first);
	draw_count(d, draw_percpu_with(&dp, &a, &head, err), err, &first_err, &first);
	rc = draw_contention_names(&a, &head, &names, &n_names);
	for (size_t i = 0; !rc && i < n_names; i++)
		draw_count(d, draw_contention_with(&dp, &a, &head, names[i], err), err, &first_err,
		           &first);
	dp.project = NULL; /* the heat map and the overview's pairs span projects, as pages do */
	draw_count(d, draw_heatmap(&dp, &a, commit, err), err, &first_err, &first);
	prev = previous_commit(&dp, &a, commit);
	if (prev) {
		struct aw_draw pair = dp;
		char *pair_err = NULL;

		pair.project = project;
		rc = draw_compare_with(&pair, &a, &head, prev, true, &pair_err);
		if (rc != -ENOENT)
			draw_count(d, rc, &pair_err, &first_err, &first);
		free(pair_err);
		if (!dp.store_rc)
			dp.store_rc = pair.store_rc;
	}
out:
	if (!d->store_rc)
		d->store_rc = dp.store_rc;
	draw_cellset_release(&head.cells);
	aw_arena_release(&a);
	free(scratch);
	if (first && err_out)
		*err_out = first_err;
	else
		free(first_err);
	return first;
}
