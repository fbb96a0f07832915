/* The charts of a commit drawn as grids (draw.h): the per-CPU chart and the contention x duty
 * charts of one host, and the heat map of the commit's ops across its hosts. */
#include "draw_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/strmap.h"
#include "aw/util.h"

/* ---- one commit on one host ---- */

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;

	return (a > b) - (a < b);
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return (a > b) - (a < b);
}

/* Sorts and removes duplicates; returns the new count. */
static size_t unique(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	unsigned char *p = v;
	size_t k = 0;

	if (!n)
		return 0;
	qsort(v, n, size, cmp);
	for (size_t i = 1; i < n; i++)
		if (cmp(p + i * size, p + k * size))
			memmove(p + ++k * size, p + i * size, size);
	return k + 1;
}

static bool plain_op(const struct cell_acc *c)
{
	return !grid_cell(c) && !c->reader && !c->subject && !c->kernel && c->cpu >= 0;
}

int draw_percpu_with(struct aw_draw *d, struct aw_arena *a, struct commit_host *head, char **err)
{
	const char **ops = NULL;
	int *cpus = NULL;
	double *p50;
	size_t n_ops = 0, ops_cap = 0, n_cpus = 0, cpus_cap = 0;
	struct aw_strmap *op_index = aw_strmap_new(AW_CHART_MAX_ITEMS);
	char title[LABEL_MAX];
	int64_t row;
	int rc = 0;

	if (!op_index)
		return aw_errorf(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < head->cells.n; i++) {
		const struct cell_acc *c = &head->cells.cells[i];
		const char **op;
		int *cpu;

		if (!plain_op(c))
			continue;
		if (aw_strmap_get(op_index, c->op, &row)) {
			if (aw_strmap_put(op_index, c->op, (int64_t)n_ops))
				continue; /* over the chart's limit */
			op = aw_arena_push(a, &ops, &n_ops, &ops_cap, sizeof(*op));
			if (op)
				*op = c->op;
		}
		cpu = aw_arena_push(a, &cpus, &n_cpus, &cpus_cap, sizeof(*cpu));
		if (cpu)
			*cpu = c->cpu;
	}
	n_cpus = unique(cpus, n_cpus, sizeof(*cpus), cmp_int);
	if (n_cpus > AW_CHART_MAX_ITEMS)
		n_cpus = AW_CHART_MAX_ITEMS;
	p50 = aw_arena_alloc(a, (n_ops * n_cpus + 1) * sizeof(*p50));
	if (a->rc) {
		rc = aw_errorf(err, a->rc, "cannot gather the per-CPU chart of '%s': %s",
		               head->commit, strerror(-a->rc));
		goto out;
	}
	for (size_t i = 0; i < n_ops * n_cpus; i++)
		p50[i] = NAN;
	for (size_t i = 0; i < head->cells.n; i++) {
		const struct cell_acc *c = &head->cells.cells[i];
		int *at;

		if (!plain_op(c) || aw_strmap_get(op_index, c->op, &row))
			continue;
		at = bsearch(&c->cpu, cpus, n_cpus, sizeof(*cpus), cmp_int);
		if (at)
			p50[(size_t)row * n_cpus + (size_t)(at - cpus)] = draw_median(a, c, 0);
	}
	snprintf(title, sizeof(title), "%.64s: p50 per CPU at %.12s", head->host, head->commit);
	const struct aw_chart_percpu chart = {title, ops, n_ops, cpus, n_cpus, p50};
	const struct aw_chart_id id = {
	    .kind = AW_CHART_PERCPU, .commit = head->commit, .host = head->host};

	draw_hold(d, &id);
	rc = draw_published(d, &id,
	                    aw_chart_draw_percpu(d->gp, d->data_dir, &id, &chart, d->flags, err));
out:
	aw_strmap_free(&op_index);
	return rc;
}

static bool contention_of(const struct cell_acc *c, const char *name)
{
	char buf[LABEL_MAX];

	return grid_cell(c) &&
	       !strcmp(aw_cell_contention_name(c->op, c->reader, c->placement, buf, sizeof(buf)),
	               name);
}

int draw_contention_with(struct aw_draw *d, struct aw_arena *a, struct commit_host *head,
                         const char *name, char **err)
{
	int64_t *cs = NULL, *ds = NULL;
	size_t n_c = 0, c_cap = 0, n_d = 0, d_cap = 0;
	int contender = AW_NONE, grid_cpu = AW_NONE;
	const char *grid_op = "", *grid_reader = "";
	bool have_contender = false;
	char title[2 * LABEL_MAX];
	double *p50;

	for (size_t i = 0; i < head->cells.n; i++) {
		const struct cell_acc *c = &head->cells.cells[i];
		int64_t *x;

		if (!contention_of(c, name))
			continue;
		/* one chart per contender: the first one seen */
		if (!have_contender) {
			contender = c->contender_cpu;
			grid_op = c->op;
			grid_reader = c->reader ? c->reader : "";
			have_contender = true;
		}
		if (c->contender_cpu != contender)
			continue;
		if ((x = aw_arena_push(a, &cs, &n_c, &c_cap, sizeof(*x))))
			*x = grid_c(c);
		if ((x = aw_arena_push(a, &ds, &n_d, &d_cap, sizeof(*x))))
			*x = c->d;
	}
	if (!n_c)
		return aw_errorf(err, -ENOENT, "no contended cell '%s' of '%s' on '%s'", name,
		                 head->commit, head->host);
	n_c = unique(cs, n_c, sizeof(*cs), cmp_i64);
	n_d = unique(ds, n_d, sizeof(*ds), cmp_i64);
	p50 = aw_arena_alloc(a, (n_c * n_d + 1) * sizeof(*p50));
	if (a->rc)
		return aw_errorf(err, a->rc, "cannot gather the contention chart of '%s': %s",
		                 head->commit, strerror(-a->rc));
	for (size_t i = 0; i < n_c * n_d; i++)
		p50[i] = NAN;
	for (size_t i = 0; i < head->cells.n; i++) {
		const struct cell_acc *c = &head->cells.cells[i];
		int64_t *ci, *di;

		if (!contention_of(c, name) || c->contender_cpu != contender)
			continue;
		const int64_t cv = grid_c(c);

		ci = bsearch(&cv, cs, n_c, sizeof(*cs), cmp_i64);
		di = bsearch(&c->d, ds, n_d, sizeof(*ds), cmp_i64);
		if (ci && di)
			p50[(size_t)(ci - cs) * n_d + (size_t)(di - ds)] = draw_median(a, c, 0);
		if (grid_cpu == AW_NONE)
			grid_cpu = c->cpu;
	}
	/* A grid with a row of no contention and a column of no duty (a paste's "c 0, d 0") shows
	 * the op measured alone there: the reference the other cells are read against. */
	if (cs[0] == 0 && ds[0] == 0 && isnan(p50[0])) {
		for (size_t i = 0; i < head->cells.n; i++) {
			const struct cell_acc *c = &head->cells.cells[i];

			if (!grid_cell(c) && c->cpu == grid_cpu && !c->subject && !c->kernel &&
			    !strcmp(c->op, grid_op) &&
			    !strcmp(c->reader ? c->reader : "", grid_reader)) {
				p50[0] = draw_median(a, c, 0);
				break;
			}
		}
	}
	if (contender != AW_NONE)
		snprintf(title, sizeof(title), "%.64s: %.64s with a contender on CPU %d at %.12s",
		         head->host, name, contender, head->commit);
	else
		snprintf(title, sizeof(title), "%.64s: %.64s under contention and duty at %.12s",
		         head->host, name, head->commit);
	const struct aw_chart_contention chart = {title, cs, n_c, ds, n_d, p50};
	const struct aw_chart_id id = {
	    .kind = AW_CHART_CONTENTION, .commit = head->commit, .host = head->host, .name = name};

	draw_hold(d, &id);
	return draw_published(
	    d, &id, aw_chart_draw_contention(d->gp, d->data_dir, &id, &chart, d->flags, err));
}

/* The names of the contention charts of a commit on a host. */
int draw_contention_names(struct aw_arena *a, const struct commit_host *head, const char ***names,
                          size_t *n)
{
	struct aw_strmap *seen = aw_strmap_new(AW_CHART_MAX_ITEMS);
	size_t cap = 0;
	int64_t one;

	*names = NULL;
	*n = 0;
	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < head->cells.n && !a->rc; i++) {
		const struct cell_acc *c = &head->cells.cells[i];
		char buf[LABEL_MAX];
		const char **slot;

		if (!grid_cell(c))
			continue;
		aw_cell_contention_name(c->op, c->reader, c->placement, buf, sizeof(buf));
		if (!aw_strmap_get(seen, buf, &one) || aw_strmap_put(seen, buf, 1))
			continue;
		slot = aw_arena_push(a, names, n, &cap, sizeof(*slot));
		if (slot)
			*slot = aw_arena_strdup(a, buf);
	}
	aw_strmap_free(&seen);
	return a->rc;
}

/* ---- one commit on every host ---- */

static int cmp_run_host(const void *x, const void *y)
{
	return strcmp(((const struct run_ref *)x)->host, ((const struct run_ref *)y)->host);
}

int draw_heatmap(struct aw_draw *d, struct aw_arena *a, const char *commit, char **err)
{
	struct store_run_filter f = {
	    .project = d->project, .commit = commit, .limit = HOST_RUNS_MAX};
	struct run_list all = {.a = a}, newest = {.a = a};
	struct aw_strmap *hosts = aw_strmap_new(HOST_RUNS_MAX), *rows = NULL;
	const char **row_names = NULL, **col_names = NULL;
	struct {
		size_t row, col;
		double v;
	} *values = NULL;
	size_t n_rows = 0, rows_cap = 0, n_values = 0, values_cap = 0;
	char title[LABEL_MAX];
	double *p50;
	int64_t pos;
	int rc;

	rows = aw_strmap_new(AW_CHART_MAX_ITEMS);
	if (!hosts || !rows) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	rc = store_list_runs(d->conn, &f, draw_on_run, &all);
	/* the newest run of the commit on each host (the list is newest first) */
	for (size_t i = 0; !rc && i < all.n; i++) {
		struct run_ref *r;

		if (!aw_strmap_get(hosts, all.runs[i].host, &pos) || newest.n >= AW_CHART_MAX_ITEMS)
			continue;
		rc = aw_strmap_put(hosts, all.runs[i].host, 1);
		r = aw_arena_push(a, &newest.runs, &newest.n, &newest.cap, sizeof(*r));
		if (r)
			*r = all.runs[i];
	}
	if (!rc && !newest.n)
		rc = -ENOENT;
	if (rc || a->rc) {
		rc = aw_errorf(err, rc ? rc : a->rc, "cannot read the runs of '%s': %s", commit,
		               strerror(-(rc ? rc : a->rc)));
		goto out;
	}
	qsort(newest.runs, newest.n, sizeof(*newest.runs), cmp_run_host);
	col_names = aw_arena_alloc(a, newest.n * sizeof(*col_names));
	for (size_t h = 0; h < newest.n && !rc && !a->rc; h++) {
		struct run_list one = {.a = a, .runs = &newest.runs[h], .n = 1, .cap = 1};
		struct cellset cells;
		int cpu;

		col_names[h] = newest.runs[h].host;
		rc = draw_cellset_init(&cells, a);
		if (!rc)
			rc = draw_cellset_add_runs(d->conn, &cells, &one);
		cpu = draw_first_cpu(&cells);
		for (size_t i = 0; !rc && i < cells.n; i++) {
			const struct cell_acc *c = &cells.cells[i];
			const char *label;

			if (!is_item(c, cpu) || !(label = draw_cell_label(a, c)))
				continue;
			if (aw_strmap_get(rows, label, &pos)) {
				const char **slot;

				if (aw_strmap_put(rows, label, (int64_t)n_rows))
					continue; /* over the chart's limit */
				pos = (int64_t)n_rows;
				slot =
				    aw_arena_push(a, &row_names, &n_rows, &rows_cap, sizeof(*slot));
				if (slot)
					*slot = label;
			}
			if (aw_arena_push(a, &values, &n_values, &values_cap, sizeof(*values))) {
				values[n_values - 1].row = (size_t)pos;
				values[n_values - 1].col = h;
				values[n_values - 1].v = draw_median(a, c, 0);
			}
		}
		draw_cellset_release(&cells);
	}
	p50 = aw_arena_alloc(a, (n_rows * newest.n + 1) * sizeof(*p50));
	if (rc || a->rc) {
		rc = aw_errorf(err, rc ? rc : a->rc, "cannot gather the heat map of '%s': %s",
		               commit, strerror(-(rc ? rc : a->rc)));
		goto out;
	}
	for (size_t i = 0; i < n_rows * newest.n; i++)
		p50[i] = NAN;
	for (size_t i = 0; i < n_values; i++)
		p50[values[i].row * newest.n + values[i].col] = values[i].v;
	snprintf(title, sizeof(title), "p50 across hosts at %.12s", commit);
	const struct aw_chart_heatmap chart = {title, row_names, n_rows, col_names, newest.n, p50};
	const struct aw_chart_id id = {.kind = AW_CHART_HEATMAP, .commit = commit};

	draw_hold(d, &id);
	rc = draw_published(d, &id,
	                    aw_chart_draw_heatmap(d->gp, d->data_dir, &id, &chart, d->flags, err));
out:
	aw_strmap_free(&hosts);
	aw_strmap_free(&rows);
	return rc;
}
