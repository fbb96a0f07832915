/* The trend charts of a host on a ref (draw.h): one per op group of its newest run, each cell's
 * p50 with its p95-p99 band over the newest AW_TREND_POINTS runs, the stored change points and
 * the commits the cached verdicts say regressed it. */
#include "draw_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/strmap.h"
#include "aw/util.h"
#include "bisect_pages.h"

/* ---- a host's trends on a ref ---- */

struct trend_ctx {
	struct aw_draw *d;
	struct aw_arena *a;
	const char *host, *ref;
	struct run_list runs;        /* oldest first */
	struct aw_strmap *by_seq;    /* decimal seq -> point */
	struct aw_strmap *by_run;    /* run id -> point */
	struct aw_strmap *regressed; /* "commit key" -> 1 */
	const char **labels;         /* short shas */
	double *values;              /* scratch of one series */
	struct cellset cells;        /* of the newest run */
	int first_cpu;
	const struct aw_chart_mark *marks; /* the host's changes, the culprits (bisect_pages.h) */
	size_t n_marks;
	const char *arch; /* the host's, NULL: unknown (its trend groups, aw_cell_group()) */
};

static int on_trend_verdict(const struct store_verdict *v, void *cls)
{
	struct trend_ctx *t = cls;
	struct aw_verdict_view view;
	char key[512];
	int rc = 0;

	if (aw_verdict_view_parse(t->a, v, &view) == -EINVAL)
		return 0;
	for (size_t i = 0; i < view.n_cells && !rc; i++) {
		if (view.cells[i].verdict != AW_VERDICT_REGRESSED)
			continue;
		snprintf(key, sizeof(key), "%.64s %s", v->commit, view.cells[i].key);
		rc = aw_strmap_put(t->regressed, key, 1);
		if (rc == -ENOSPC)
			rc = 0; /* marks are a bonus */
	}
	return rc ? rc : t->a->rc;
}

struct series_fill {
	struct trend_ctx *t;
	double *out;
};

static int on_point(const struct store_point *p, void *cls)
{
	struct series_fill *s = cls;
	char seq[24];
	int64_t i;

	snprintf(seq, sizeof(seq), "%" PRId64, p->seq);
	if (!aw_strmap_get(s->t->by_seq, seq, &i))
		s->out[i] = p->value;
	return 0;
}

struct cp_fill {
	struct trend_ctx *t;
	size_t *points;
	size_t n, cap;
};

static int on_changepoint(const struct store_changepoint *cp, void *cls)
{
	struct cp_fill *f = cls;
	size_t *slot;
	int64_t i;

	if (!cp->metric || strcmp(cp->metric, "p50") || !cp->run_id ||
	    aw_strmap_get(f->t->by_run, cp->run_id, &i))
		return 0;
	slot = aw_arena_push(f->t->a, &f->points, &f->n, &f->cap, sizeof(*slot));
	if (slot)
		*slot = (size_t)i;
	return f->t->a->rc;
}

static int on_trend_host(const struct store_host *h, void *cls)
{
	struct trend_ctx *t = cls;

	t->arch = h->arch ? aw_arena_strdup(t->a, h->arch) : NULL;
	return t->a->rc;
}

/* The marks every trend chart of the host carries: where it changed, the culprits. */
static int trend_marks(struct trend_ctx *t)
{
	const char **ids = aw_arena_alloc(t->a, (t->runs.n + 1) * sizeof(*ids));
	const char **shas = aw_arena_alloc(t->a, (t->runs.n + 1) * sizeof(*shas));

	for (size_t i = 0; ids && shas && i < t->runs.n; i++) {
		ids[i] = t->runs.runs[i].run_id;
		shas[i] = t->runs.runs[i].commit;
	}
	return ids && shas ? aw_trend_marks(t->d->conn, t->a, t->d->project, t->host, ids, shas,
	                                    t->runs.n, &t->marks, &t->n_marks)
	                   : t->a->rc;
}

static int trend_load(struct trend_ctx *t)
{
	struct aw_draw *d = t->d;
	struct run_list newest_first = {.a = t->a};
	char seq[24];
	int rc;

	t->runs.a = t->a;
	rc = draw_cellset_init(&t->cells, t->a);
	if (rc)
		return rc;
	t->by_seq = aw_strmap_new(AW_TREND_POINTS);
	t->by_run = aw_strmap_new(AW_TREND_POINTS);
	t->regressed = aw_strmap_new(CELLS_MAX);
	if (!t->by_seq || !t->by_run || !t->regressed)
		return -ENOMEM;
	/* the host's arch names its groups; a host the store lacks keeps the arm64 names */
	rc = store_get_host(d->conn, t->host, on_trend_host, NULL, t);
	if (rc && rc != -ENOENT)
		return rc;
	rc = store_ref_history(d->conn, d->project, t->host, t->ref, INT64_MAX, INT64_MAX,
	                       AW_TREND_POINTS, draw_on_run, &newest_first);
	if (rc)
		return rc;
	if (!newest_first.n)
		return -ENOENT;
	t->runs.runs = aw_arena_alloc(t->a, newest_first.n * sizeof(*t->runs.runs));
	t->labels = aw_arena_alloc(t->a, newest_first.n * sizeof(*t->labels));
	if (t->a->rc)
		return t->a->rc;
	t->runs.n = t->runs.cap = newest_first.n;
	for (size_t i = 0; i < newest_first.n && !rc; i++) {
		struct run_ref *r = &t->runs.runs[i];

		*r = newest_first.runs[newest_first.n - 1 - i];
		t->labels[i] = r->commit ? aw_arena_strndup(t->a, r->commit, 7) : NULL;
		snprintf(seq, sizeof(seq), "%" PRId64, r->seq);
		rc = aw_strmap_put(t->by_seq, seq, (int64_t)i);
		if (!rc)
			rc = aw_strmap_put(t->by_run, r->run_id, (int64_t)i);
	}
	/* the groups and cells come from the newest run */
	if (!rc) {
		struct run_list one = {.a = t->a, .runs = newest_first.runs, .n = 1, .cap = 1};

		rc = draw_cellset_add_runs(d->conn, &t->cells, &one);
	}
	t->first_cpu = draw_first_cpu(&t->cells);
	if (!rc)
		rc = store_verdict_list(d->conn, d->project, NULL, t->host, AW_TREND_POINTS,
		                        on_trend_verdict, t);
	if (!rc)
		rc = trend_marks(t);
	return rc ? rc : t->a->rc;
}

static void trend_release(struct trend_ctx *t)
{
	aw_strmap_free(&t->by_seq);
	aw_strmap_free(&t->by_run);
	aw_strmap_free(&t->regressed);
	draw_cellset_release(&t->cells);
}

/* Reads one metric of one cell into a fresh array of the chart's points (NAN where absent). */
static double *trend_series(struct trend_ctx *t, const char *key, enum store_metric metric, int *rc)
{
	const size_t n = t->runs.n;
	struct series_fill fill = {t, aw_arena_alloc(t->a, n * sizeof(double))};
	struct store_series_query q = {.host = t->host,
	                               .ref = t->ref,
	                               .cell_key = key,
	                               .project = t->d->project,
	                               .metric = metric,
	                               .limit = AW_TREND_POINTS};

	if (!fill.out) {
		*rc = t->a->rc;
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		fill.out[i] = NAN;
	*rc = store_series(t->d->conn, &q, on_point, &fill);
	return fill.out;
}

static int trend_draw_group(struct trend_ctx *t, const char *group, char **err)
{
	struct aw_chart_trend_series *series = NULL;
	size_t n_series = 0, cap = 0;
	char buf[LABEL_MAX], title[3 * LABEL_MAX], mark[512];
	int64_t one;
	int rc = 0;

	for (size_t i = 0; i < t->cells.n && !rc; i++) {
		const struct cell_acc *c = &t->cells.cells[i];
		struct aw_chart_trend_series *s;
		struct cp_fill cps = {t, NULL, 0, 0};
		size_t *regs = NULL, n_regs = 0, regs_cap = 0;

		if (!is_item(c, t->first_cpu) ||
		    strcmp(cell_group(t->arch, c, buf, sizeof(buf)), group) ||
		    n_series >= AW_CHART_MAX_SERIES)
			continue;
		s = aw_arena_push(t->a, &series, &n_series, &cap, sizeof(*s));
		if (!s)
			break;
		s->name = draw_cell_label(t->a, c);
		s->p50 = trend_series(t, c->key, STORE_METRIC_P50, &rc);
		if (!rc)
			s->p95 = trend_series(t, c->key, STORE_METRIC_P95, &rc);
		if (!rc)
			s->p99 = trend_series(t, c->key, STORE_METRIC_P99, &rc);
		if (!rc)
			rc = store_changepoints_list(t->d->conn, t->d->project, t->host, t->ref,
			                             c->key, on_changepoint, &cps);
		for (size_t p = 0; !rc && p < t->runs.n; p++) {
			size_t *slot;

			if (!t->runs.runs[p].commit)
				continue;
			snprintf(mark, sizeof(mark), "%.64s %s", t->runs.runs[p].commit, c->key);
			if (aw_strmap_get(t->regressed, mark, &one))
				continue;
			slot = aw_arena_push(t->a, &regs, &n_regs, &regs_cap, sizeof(*slot));
			if (slot)
				*slot = p;
		}
		s->change_points = cps.points;
		s->n_change_points = cps.n;
		s->regressions = regs;
		s->n_regressions = n_regs;
	}
	/* the control's chart draws the reference kernels beside the control cell */
	if (!rc && !strcmp(group, "control"))
		rc = draw_read_references(t->d->conn, &t->runs);
	if (!rc && !strcmp(group, "control"))
		rc = aw_reference_series(t->a, &t->runs.runs[0].reference, sizeof(t->runs.runs[0]),
		                         t->runs.n, &series, &n_series, &cap);
	if (rc || t->a->rc)
		return aw_errorf(err, rc ? rc : t->a->rc, "cannot read the trend '%s' of '%s': %s",
		                 group, t->host, strerror(-(rc ? rc : t->a->rc)));
	snprintf(title, sizeof(title), "%.64s on %.64s: %s (p50, p95-p99 band)", t->host, t->ref,
	         group);
	const struct aw_chart_trend chart = {title,    t->labels, t->runs.n, series,
	                                     n_series, t->marks,  t->n_marks};
	const struct aw_chart_id id = {
	    .kind = AW_CHART_TREND, .host = t->host, .ref = t->ref, .name = group};

	draw_hold(t->d, &id);
	return draw_published(
	    t->d, &id,
	    aw_chart_draw_trend(t->d->gp, t->d->data_dir, &id, &chart, t->d->flags, err));
}

/* Draws the trend of `only` (a group name) or, NULL, of every group. */
int draw_trends_of(struct aw_draw *d, const char *host, const char *ref, const char *only,
                   char **err_out)
{
	char *scratch = NULL, **err = err_out ? err_out : &scratch;
	struct aw_arena a;
	struct trend_ctx t = {.d = d, .a = &a, .host = host, .ref = ref};
	struct aw_strmap *done = NULL;
	char *first_err = NULL, buf[LABEL_MAX];
	int first = 0, rc;
	int64_t one;

	aw_arena_init(&a, ARENA_LIMIT);
	rc = trend_load(&t);
	if (rc) {
		aw_errorf(err, rc, "cannot read the trends of '%s' on '%s': %s", host, ref,
		          rc == -ENOENT ? "no run" : strerror(-rc));
		goto out;
	}
	done = aw_strmap_new(GROUPS_MAX);
	if (!done) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < t.cells.n; i++) {
		const struct cell_acc *c = &t.cells.cells[i];
		const char *group = cell_group(t.arch, c, buf, sizeof(buf));

		if (!is_item(c, t.first_cpu) || (only && strcmp(group, only)) ||
		    !aw_strmap_get(done, group, &one) || aw_strmap_put(done, group, 1))
			continue;
		draw_count(d, trend_draw_group(&t, group, err), err, &first_err, &first);
	}
	if (only && !aw_strmap_count(done)) {
		rc = aw_errorf(err, -ENOENT, "no trend '%s' of '%s' on '%s'", only, host, ref);
		goto out;
	}
	rc = first;
	if (first)
		*err = first_err;
	first_err = NULL;
out:
	free(first_err);
	free(scratch);
	aw_strmap_free(&done);
	trend_release(&t);
	aw_arena_release(&a);
	return rc;
}

int aw_draw_trends(struct aw_draw *d, const char *host, const char *ref, char **err)
{
	if (!d->gp)
		return aw_errorf(err, -ENOSYS, "no gnuplot to draw with");
	return draw_trends_of(d, host, ref, NULL, err);
}
