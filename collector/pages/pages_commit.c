/* "/commits/{sha}" and "/compare" (pages.h): per host that ran the commit, its compare chart
 * and the table of its cells (the medians the chart was drawn from, what the cached verdict
 * says), the heat map across hosts, and the commit's interleaved A/B documents. */
#include "pages_internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/strmap.h"
#include "aw/util.h"
#include "bisect_pages.h"

#define COMMIT_RUNS_MAX 10000 /* runs of one commit read */
#define CELLS_MAX       60000
#define TABLE_MAX       (64u << 20) /* bytes of a compare chart's table */

/* ---- "/commits/{sha}" and "/compare" ---- */

static int cmp_host(const void *x, const void *y)
{
	return strcmp((*(const struct run_copy *const *)x)->host,
	              (*(const struct run_copy *const *)y)->host);
}

/* The newest full run of each host among `runs` (newest first), sorted by host name: a
 * re-measurement of suspects holds only those cells, so it stands for its host only when the
 * host has nothing else. */
static int newest_per_host(struct aw_arena *a, const struct runs *runs,
                           const struct run_copy ***out, size_t *n)
{
	struct aw_strmap *seen = aw_strmap_new(COMMIT_RUNS_MAX);
	const struct run_copy **v = NULL;
	size_t cap = 0;
	int64_t pos;
	int rc = 0;

	*n = 0;
	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < runs->n && !a->rc; i++) {
		const struct run_copy *run = &runs->v[i], **slot;

		if (!aw_strmap_get(seen, run->host, &pos)) {
			if (v[pos]->confirmation && !run->confirmation)
				v[pos] = run;
			continue;
		}
		rc = aw_strmap_put(seen, run->host, (int64_t)*n);
		if (rc)
			break;
		slot = aw_arena_push(a, &v, n, &cap, sizeof(*slot));
		if (slot)
			*slot = run;
	}
	aw_strmap_free(&seen);
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_host);
	*out = v;
	return rc ? rc : a->rc;
}

struct cell_copy {
	const char *key;
	double p50;
	double duty_ns; /* a duty cell's empty loop (the duty alone), NAN for other cells */
};

struct cells {
	struct aw_arena *a;
	struct cell_copy *v;
	size_t n, cap;
};

static int on_cell(const struct aw_cell *cell, void *cls)
{
	struct cells *l = cls;
	struct cell_copy *x;

	if (l->n >= CELLS_MAX)
		return 0;
	x = aw_arena_push(l->a, &l->v, &l->n, &l->cap, sizeof(*x));
	if (!x)
		return l->a->rc;
	x->key = aw_arena_strdup(l->a, cell->key);
	x->p50 = cell->status == AW_CELL_OK ? cell->p50 : NAN;
	x->duty_ns = cell->d > 0 && isfinite(cell->baseline_ns) ? cell->baseline_ns : NAN;
	return l->a->rc;
}

static int run_cells(struct store_conn *c, struct aw_arena *a, int64_t seq, struct cells *out)
{
	memset(out, 0, sizeof(*out));
	out->a = a;
	return store_run_cells(c, seq, on_cell, out);
}

/* key -> position, for cells or verdict cells */
static struct aw_strmap *index_keys(const void *items, size_t n, size_t size, size_t key_offset)
{
	struct aw_strmap *m = aw_strmap_new(n + 1);

	for (size_t i = 0; m && i < n; i++) {
		const char *key =
		    *(const char *const *)((const char *)items + i * size + key_offset);

		if (key && aw_strmap_put(m, key, (int64_t)i) == -ENOMEM)
			aw_strmap_free(&m);
	}
	return m;
}

/* A compare chart's table (aw_chart_table_rel()): the medians it was drawn from. */
struct table {
	struct aw_strmap *index; /* key -> position */
	double *base, *head;
	size_t n, cap_base, cap_head;
};

static double json_number(const json_t *j)
{
	return json_is_number(j) ? json_number_value(j) : NAN;
}

/* Reads the table of chart `id`; an absent or unreadable one leaves *t empty (the page then
 * shows what the runs and the verdict say). Returns 0 or -ENOMEM. */
static int read_table(struct aw_arena *a, const char *data_dir, const struct aw_chart_id *id,
                      struct table *t)
{
	char rel[1100], *text = NULL;
	json_t *doc = NULL, *row;
	size_t len, i, n_head = 0;
	int rc = 0;

	memset(t, 0, sizeof(*t));
	if (aw_chart_table_rel(id, rel, sizeof(rel)) ||
	    aw_read_beneath(data_dir, rel, TABLE_MAX, &text, &len))
		return 0;
	doc = json_loadb(text, len, 0, NULL);
	free(text);
	t->index = aw_strmap_new(CELLS_MAX);
	if (!t->index) {
		rc = -ENOMEM;
		goto out;
	}
	json_array_foreach (json_object_get(doc, "cells"), i, row) {
		const char *key = json_string_value(json_array_get(row, 0));
		double *b, *h;

		if (!key || aw_strmap_put(t->index, key, (int64_t)t->n))
			continue;
		b = aw_arena_push(a, &t->base, &t->n, &t->cap_base, sizeof(*b));
		h = aw_arena_push(a, &t->head, &n_head, &t->cap_head, sizeof(*h));
		if (!b || !h)
			break;
		*b = json_number(json_array_get(row, 1));
		*h = json_number(json_array_get(row, 2));
	}
	rc = a->rc;
out:
	json_decref(doc);
	return rc;
}

static void table_release(struct table *t)
{
	aw_strmap_free(&t->index);
}

/* The table of one host: its head run's cells with the medians of the compare chart's table
 * (else the head run's values and, compare, the base run's), and what the cached verdict says
 * of the cells it lists. */
static int host_rows(struct aw_arena *a, const struct cells *head, const struct cells *base,
                     const struct table *t, const struct aw_verdict_view *v,
                     struct aw_page_host_result *out)
{
	struct aw_strmap *base_index = NULL, *verdict_index = NULL;
	struct aw_page_cell_row *rows = NULL;
	size_t n = 0, cap = 0;
	int64_t pos;
	int rc = 0;

	if (base)
		base_index =
		    index_keys(base->v, base->n, sizeof(*base->v), offsetof(struct cell_copy, key));
	if (v)
		verdict_index = index_keys(v->cells, v->n_cells, sizeof(*v->cells),
		                           offsetof(struct aw_verdict_cell, key));
	if ((base && !base_index) || (v && !verdict_index)) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < head->n; i++) {
		struct aw_page_cell_row *r = aw_arena_push(a, &rows, &n, &cap, sizeof(*r));

		if (!r)
			break;
		r->cell = head->v[i].key;
		r->head_p50 = head->v[i].p50;
		r->base_p50 = NAN;
		r->verdict = AW_VERDICT_UNKNOWN;
		if (base_index && !aw_strmap_get(base_index, r->cell, &pos))
			r->base_p50 = base->v[pos].p50;
		if (t->index && !aw_strmap_get(t->index, r->cell, &pos)) {
			r->base_p50 = t->base[pos];
			if (isfinite(t->head[pos]))
				r->head_p50 = t->head[pos]; /* the median over the commit's runs */
		}
		if (v && !aw_strmap_get(verdict_index, r->cell, &pos)) {
			const struct aw_verdict_cell *c = &v->cells[pos];
			double shown = r->head_p50;

			site_cell_row(c, r);
			r->cell = head->v[i].key;
			if (!isfinite(c->head_p50))
				r->head_p50 = shown; /* else the median over the commit's runs */
		} else if (v && (v->status == AW_VERDICT_PASS || v->status == AW_VERDICT_FAIL ||
		                 v->status == AW_VERDICT_UNCONFIRMED ||
		                 v->status == AW_VERDICT_INCONCLUSIVE)) {
			r->verdict =
			    AW_VERDICT_UNCHANGED; /* the verdict lists changed cells only */
		}
		/* the net figure shown, plus the duty's own time */
		r->head_gross = r->head_p50 + head->v[i].duty_ns;
	}
	/* cells of the baseline the head lacks */
	for (size_t i = 0; v && i < v->n_cells && !a->rc; i++) {
		const struct aw_verdict_cell *c = &v->cells[i];
		struct aw_page_cell_row *r;

		if (c->verdict != AW_VERDICT_MISSING)
			continue;
		r = aw_arena_push(a, &rows, &n, &cap, sizeof(*r));
		if (r) {
			site_cell_row(c, r);
			r->head_p50 = NAN;
			r->head_gross = NAN;
		}
	}
	out->rows = rows;
	out->n_rows = n;
	rc = a->rc;
out:
	aw_strmap_free(&base_index);
	aw_strmap_free(&verdict_index);
	return rc;
}

static int commit_runs(const struct aw_site *s, struct aw_arena *a, const char *commit,
                       struct runs *runs, const struct run_copy ***hosts, size_t *n_hosts)
{
	struct store_run_filter f = {.commit = commit, .limit = COMMIT_RUNS_MAX};
	int rc = site_list_runs(s->conn, a, &f, runs);

	if (!rc && !runs->n)
		rc = -ENOENT;
	return rc ? rc : newest_per_host(a, runs, hosts, n_hosts);
}

/* ---- interleaved A/B documents ---- */

struct ab_links {
	struct aw_arena *a;
	struct aw_page_ab_link *items;
	size_t n, cap;
};

static int on_ab_link(const struct store_ab *ab, void *cls)
{
	struct ab_links *l = cls;
	struct aw_page_ab_link *it = aw_arena_push(l->a, &l->items, &l->n, &l->cap, sizeof(*it));

	if (!it)
		return l->a->rc;
	it->ab_id = aw_arena_strdup(l->a, ab->ab_id);
	it->base = aw_arena_strdup(l->a, ab->base);
	it->verdict = aw_ab_verdict_parse(ab->verdict);
	it->aa = ab->aa;
	return l->a->rc;
}

/* The A/B documents whose head is `commit`, newest first (at most 20). */
static int ab_links_of(const struct aw_site *s, struct aw_arena *a, const char *commit,
                       struct ab_links *out)
{
	*out = (struct ab_links){.a = a};
	return store_ab_list(s->conn, NULL, commit, NULL, 20, on_ab_link, out);
}

int aw_site_commit(const struct aw_site *s, const char *commit, struct aw_buf *out)
{
	struct aw_arena a;
	struct runs runs;
	struct verdicts verdicts = {0};
	const struct run_copy **hosts = NULL;
	struct aw_page_host_result *results = NULL;
	struct aw_chart_ref heatmap;
	enum aw_verdict overall = AW_VERDICT_UNKNOWN;
	size_t n_hosts = 0;
	char now[AW_TIME_LEN];
	int rc;

	if (!aw_valid_commit(commit))
		return -EINVAL;
	aw_arena_init(&a, ARENA_LIMIT);
	rc = commit_runs(s, &a, commit, &runs, &hosts, &n_hosts);
	if (!rc)
		rc = site_read_verdicts(s->conn, &a, NULL, commit, true, VERDICTS_READ, &verdicts);
	if (!rc)
		results = aw_arena_alloc(&a, n_hosts * sizeof(*results) + 1);
	for (size_t i = 0; !rc && results && i < n_hosts; i++) {
		const struct run_copy *run = hosts[i];
		const struct aw_verdict_view *v = site_verdict_of(&verdicts, run->host);
		struct aw_page_host_result *r = &results[i];
		const struct aw_chart_id id = {.kind = AW_CHART_COMPARE,
		                               .commit = commit,
		                               .host = run->host,
		                               .base = s->baseline_ref};
		struct cells head;
		struct table t;

		/* first: an export draws the chart, and its table, here */
		r->chart = site_chart_ref(
		    s, id, site_fmt(&a, "%s against %s", run->host, s->baseline_ref));
		rc = run_cells(s->conn, &a, run->seq, &head);
		if (!rc)
			rc = read_table(&a, s->data_dir, &id, &t);
		if (!rc)
			rc = host_rows(&a, &head, NULL, &t, v, r);
		table_release(&t);
		r->host = run->host;
		r->verdict = v ? v->status : AW_VERDICT_UNKNOWN;
		if (v)
			r->disturbed = v->disturbed;
		if (v && v->baseline_runs >= 0)
			r->baseline = site_fmt(&a, "%s, %ld earlier run%s",
			                       v->baseline_ref ? v->baseline_ref : s->baseline_ref,
			                       v->baseline_runs, v->baseline_runs == 1 ? "" : "s");
		overall = i ? site_worst(overall, r->verdict) : r->verdict;
	}
	if (!rc)
		rc = a.rc;
	if (!rc) {
		const struct aw_chart_id hid = {.kind = AW_CHART_HEATMAP, .commit = commit};
		struct aw_page_commit p = {.sha = commit,
		                           .ref = site_refs_of(&a, &runs),
		                           .baseline_ref = s->baseline_ref,
		                           .verdict = overall,
		                           .hosts = results,
		                           .n_hosts = n_hosts,
		                           .heatmap = &heatmap,
		                           .generated_at = now};

		struct ab_links abl;

		heatmap = site_chart_ref(s, hid, "p50 of each op on each host");
		aw_time_now(now);
		rc = ab_links_of(s, &a, commit, &abl);
		p.ab = abl.items;
		p.n_ab = abl.n;
		if (!rc)
			rc = aw_site_bisects(s->conn, &a, commit, &p.bisects, &p.n_bisects);
		if (!rc)
			rc = aw_html_commit(out, s->links, &p);
	}
	site_verdicts_release(&verdicts);
	aw_arena_release(&a);
	return rc;
}

int aw_site_compare(const struct aw_site *s, const char *base, const char *head, struct aw_buf *out)
{
	struct aw_arena a;
	struct runs head_runs, base_runs;
	const struct run_copy **head_hosts = NULL, **base_hosts = NULL;
	struct aw_page_host_result *results = NULL;
	struct aw_chart_ref heatmap;
	size_t n_head = 0, n_base = 0, n = 0;
	char now[AW_TIME_LEN];
	int rc;

	if (!aw_valid_commit(base) || !aw_valid_commit(head))
		return -EINVAL;
	aw_arena_init(&a, ARENA_LIMIT);
	rc = commit_runs(s, &a, head, &head_runs, &head_hosts, &n_head);
	if (!rc)
		rc = commit_runs(s, &a, base, &base_runs, &base_hosts, &n_base);
	if (!rc)
		results = aw_arena_alloc(&a, n_head * sizeof(*results) + 1);
	/* the hosts that ran both (both lists are sorted by host) */
	for (size_t i = 0, j = 0; !rc && results && i < n_head && j < n_base;) {
		int order = strcmp(head_hosts[i]->host, base_hosts[j]->host);
		struct aw_page_host_result *r = &results[n];
		const char *host = head_hosts[i]->host;
		const struct aw_chart_id id = {
		    .kind = AW_CHART_COMPARE, .commit = head, .host = host, .base = base};
		struct cells head_cells, base_cells;
		struct table t = {0};

		if (order) {
			order < 0 ? i++ : j++;
			continue;
		}
		r->chart = site_chart_ref(
		    s, id, site_fmt(&a, "%s: %.12s against %.12s", host, head, base));
		rc = run_cells(s->conn, &a, head_hosts[i]->seq, &head_cells);
		if (!rc)
			rc = run_cells(s->conn, &a, base_hosts[j]->seq, &base_cells);
		if (!rc)
			rc = read_table(&a, s->data_dir, &id, &t);
		if (!rc)
			rc = host_rows(&a, &head_cells, &base_cells, &t, NULL, r);
		table_release(&t);
		r->host = host;
		r->verdict = AW_VERDICT_UNKNOWN;
		r->baseline = site_fmt(&a, "the runs of %.12s on %s", base, host);
		n++;
		i++;
		j++;
	}
	if (!rc)
		rc = a.rc;
	if (!rc) {
		const struct aw_chart_id hid = {.kind = AW_CHART_HEATMAP, .commit = head};
		struct aw_page_commit p = {.sha = head,
		                           .base = base,
		                           .ref = site_refs_of(&a, &head_runs),
		                           .verdict = AW_VERDICT_UNKNOWN,
		                           .hosts = results,
		                           .n_hosts = n,
		                           .heatmap = &heatmap,
		                           .generated_at = now};

		heatmap = site_chart_ref(
		    s, hid, site_fmt(&a, "p50 of each op on each host at %.12s", head));
		aw_time_now(now);
		rc = aw_html_commit(out, s->links, &p);
	}
	aw_arena_release(&a);
	return rc;
}

int aw_site_commit_page(const struct aw_site *s, const char *a, const char *b, struct aw_buf *out)
{
	(void)b;
	return aw_site_commit(s, a, out);
}
