/* The store's retention: raw runs for a while, aggregates forever. A pass thins the runs older
 * than the retention window (whole weeks, by started_at) that are not among the newest of their
 * host and ref, folding each cell's p50s into daily and weekly aggregates (count, min, median,
 * max) before it deletes them; and the series of a cell per day or week reads those aggregates
 * and the runs still kept, grouped alike. */
#include "rows.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aw/stats.h"
#include "aw/util.h"

#define DAY_US  (INT64_C(86400) * 1000000)
#define WEEK_US (7 * DAY_US)
/* The first Monday of the epoch, 1970-01-05: weeks start on Mondays, as ISO 8601's do. */
#define MONDAY_US (4 * DAY_US)

/* The largest multiple of `step` (from `origin`) not above `t`. */
static int64_t floor_to(int64_t t, int64_t origin, int64_t step)
{
	int64_t r = (t - origin) % step;

	return t - (r < 0 ? r + step : r);
}

static int64_t day_of(int64_t t)
{
	return floor_to(t, 0, DAY_US);
}

static int64_t week_of(int64_t t)
{
	return floor_to(t, MONDAY_US, WEEK_US);
}

static const struct stmt_def sql_oldest = {
    .id = S_RETENTION_OLDEST,
    .what = "find the oldest run to thin",
    .sql = "SELECT started_us FROM runs WHERE started_us >= ?1 AND started_us < ?2 "
           "ORDER BY started_us LIMIT 1"};

static const struct stmt_def sql_pairs = {
    .id = S_RETENTION_PAIRS,
    .what = "list the hosts and refs of a week",
    .sql = "SELECT DISTINCT host_id, ref FROM runs WHERE started_us >= ?1 AND started_us < ?2"};

/* the position of the newest run that may go: the keep_runs-th newest in commit order */
static const struct stmt_def sql_bound = {
    .id = S_RETENTION_BOUND,
    .what = "find the runs retention keeps",
    .sql = "SELECT order_us, seq FROM runs WHERE host_id = ?1 AND ref = ?2 "
           "ORDER BY order_us DESC, seq DESC LIMIT 1 OFFSET ?3"};

/* A week of runs_started, the host and ref filtered: "host_id + 0" and "ref || ''" keep the
 * planner from walking all the older runs of the host and ref along runs_history instead. */
static const struct stmt_def sql_runs = {
    .id = S_RETENTION_RUNS,
    .what = "list the runs to thin",
    .sql = "SELECT seq, project_id, started_us FROM runs WHERE started_us >= ?1 AND "
           "started_us < ?2 AND host_id + 0 = ?3 AND ref || '' = ?4 AND (order_us < ?5 OR "
           "(order_us = ?5 AND seq < ?6))"};

static const struct stmt_def sql_values = {
    .id = S_RETENTION_VALUES,
    .what = "read the p50s of a run to thin",
    .sql = "SELECT cell_id, p50 FROM measurements WHERE run_seq = ?1 AND p50 IS NOT NULL"};

/* An aggregate written again (a run of its period thinned later: a host that had fewer than
 * keep_runs then) merges: counts add, min and max combine, the medians are weighted by count. */
static const struct stmt_def sql_agg_put = {
    .id = S_RETENTION_AGG_PUT,
    .what = "store an aggregate",
    .sql = "INSERT INTO aggregates (host_id, ref, cell_id, period, start_us, project_id, n, min, "
           "median, max) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT "
           "(host_id, ref, cell_id, period, start_us, project_id) DO UPDATE SET "
           "n = aggregates.n + excluded.n, "
           "min = CASE WHEN excluded.min < aggregates.min THEN excluded.min "
           "ELSE aggregates.min END, "
           "max = CASE WHEN excluded.max > aggregates.max THEN excluded.max "
           "ELSE aggregates.max END, "
           "median = (aggregates.median * aggregates.n + excluded.median * excluded.n) / "
           "(aggregates.n + excluded.n)"};

static const struct stmt_def sql_drop_meas = {.id = S_RETENTION_DROP_MEAS,
                                              .what = "delete a thinned run's measurements",
                                              .sql = "DELETE FROM measurements WHERE run_seq = ?1"};

static const struct stmt_def sql_drop_run = {.id = S_RETENTION_DROP_RUN,
                                             .what = "delete a thinned run",
                                             .sql = "DELETE FROM runs WHERE seq = ?1"};

/* One p50 of a run to thin, with what it is aggregated by. */
struct sample {
	int64_t project, cell, day;
	double v;
};

static int sample_cmp(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;

	if (x->project != y->project)
		return x->project < y->project ? -1 : 1;
	if (x->cell != y->cell)
		return x->cell < y->cell ? -1 : 1;
	if (x->day != y->day)
		return x->day < y->day ? -1 : 1;
	return (x->v > y->v) - (x->v < y->v);
}

struct thin_run {
	int64_t seq, project, started_us;
};

struct thinning {
	struct thin_run *runs;
	size_t n_runs, cap_runs;
	struct sample *s;
	size_t n, cap;
	double *week; /* one (project, cell)'s values of the week, sorted */
	size_t cap_week;
	const struct thin_run *run; /* whose values sample_row() reads */
};

static int run_row(struct store_stmt *s, void *cls)
{
	struct thinning *t = cls;

	if (aw_array_reserve(&t->runs, t->n_runs, &t->cap_runs, sizeof(*t->runs), 64))
		return -ENOMEM;
	t->runs[t->n_runs++] = (struct thin_run){c_i64(s, 0), c_i64(s, 1), c_i64(s, 2)};
	return 0;
}

static int sample_row(struct store_stmt *s, void *cls)
{
	struct thinning *t = cls;

	if (aw_array_reserve(&t->s, t->n, &t->cap, sizeof(*t->s), 1024))
		return -ENOMEM;
	t->s[t->n++] =
	    (struct sample){t->run->project, c_i64(s, 0), day_of(t->run->started_us), c_real(s, 1)};
	return 0;
}

static double median_sorted(const double *v, size_t n)
{
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int put_aggregate(struct store_conn *c, int64_t host_id, const char *ref, int64_t cell,
                         const char *period, int64_t start, int64_t project, const double *sorted,
                         size_t n)
{
	struct store_stmt *s;
	int rc = rows_get(c, &sql_agg_put, &s);

	if (rc)
		return rc;
	b_i64(s, 1, host_id);
	b_text(s, 2, ref);
	b_i64(s, 3, cell);
	b_text(s, 4, period);
	b_i64(s, 5, start);
	b_i64(s, 6, project);
	b_i64(s, 7, (int64_t)n);
	b_real(s, 8, sorted[0]);
	b_real(s, 9, median_sorted(sorted, n));
	b_real(s, 10, sorted[n - 1]);
	return rows_run_later(s);
}

/* The day and week aggregates of t's samples, sorted by (project, cell, day, value). */
static int put_aggregates(struct store_conn *c, struct thinning *t, int64_t host_id,
                          const char *ref, int64_t week, struct store_retention_stats *out)
{
	int rc = 0;

	if (t->n) /* (qsort's array may not be NULL, even empty) */
		qsort(t->s, t->n, sizeof(*t->s), sample_cmp);
	for (size_t i = 0; !rc && i < t->n;) {
		size_t end = i, k = 0;

		while (end < t->n && t->s[end].project == t->s[i].project &&
		       t->s[end].cell == t->s[i].cell)
			end++;
		/* each day of this (project, cell), its values in order */
		for (size_t d = i; !rc && d < end;) {
			size_t dend = d;

			while (dend < end && t->s[dend].day == t->s[d].day) {
				if (aw_array_reserve(&t->week, k, &t->cap_week, sizeof(*t->week),
				                     256))
					return -ENOMEM;
				t->week[k++] = t->s[dend++].v;
			}
			rc = put_aggregate(c, host_id, ref, t->s[i].cell, "day", t->s[d].day,
			                   t->s[i].project, t->week + (k - (dend - d)), dend - d);
			out->aggregates++;
			d = dend;
		}
		aw_sort_doubles(t->week, k);
		if (!rc)
			rc = put_aggregate(c, host_id, ref, t->s[i].cell, "week", week,
			                   t->s[i].project, t->week, k);
		out->aggregates++;
		i = end;
	}
	return rc;
}

/* Thins the runs of (host_id, ref) that started in `week` and are older, in commit order, than
 * its newest keep_runs: one transaction. */
static int thin_week(struct store_conn *c, const struct store_retention *r, int64_t host_id,
                     const char *ref, int64_t week, struct thinning *t,
                     struct store_retention_stats *out)
{
	int64_t bound_order = INT64_MAX, bound_seq = INT64_MAX;
	struct store_stmt *s;
	int rc = rows_begin(c, STORE_TX_WRITE);

	t->n_runs = t->n = 0;
	if (rc)
		return rc;
	if (r->keep_runs) {
		rc = rows_get(c, &sql_bound, &s);
		if (rc)
			goto out;
		b_i64(s, 1, host_id);
		b_text(s, 2, ref);
		b_i64(s, 3, (int64_t)r->keep_runs - 1);
		rc = step(s);
		if (rc == STORE_ROW) {
			bound_order = c_i64(s, 0);
			bound_seq = c_i64(s, 1);
			rc = 0;
		} else if (rc == STORE_DONE) {
			rc = -ENOENT; /* fewer runs than keep_runs: every one stays */
		}
		reset(s);
		if (rc)
			goto out;
	}
	rc = rows_get(c, &sql_runs, &s);
	if (rc)
		goto out;
	b_i64(s, 1, week);
	b_i64(s, 2, week + WEEK_US);
	b_i64(s, 3, host_id);
	b_text(s, 4, ref);
	b_i64(s, 5, bound_order);
	b_i64(s, 6, bound_seq);
	rc = rows_each_row(s, run_row, t);
	for (size_t i = 0; !rc && i < t->n_runs; i++) {
		rc = rows_get(c, &sql_values, &s);
		if (rc)
			break;
		t->run = &t->runs[i];
		b_i64(s, 1, t->runs[i].seq);
		rc = rows_each_row(s, sample_row, t);
	}
	if (!rc && t->n_runs)
		rc = put_aggregates(c, t, host_id, ref, week, out);
	for (size_t i = 0; !rc && i < t->n_runs; i++) {
		valcache_forget(c->gen, t->runs[i].seq);
		rc = rows_get(c, &sql_drop_meas, &s);
		if (!rc) {
			b_i64(s, 1, t->runs[i].seq);
			rc = rows_run_later(s);
		}
		if (!rc)
			rc = rows_get(c, &sql_drop_run, &s);
		if (!rc) {
			b_i64(s, 1, t->runs[i].seq);
			rc = rows_run_later(s);
		}
	}
out:
	if (rc == -ENOENT)
		rc = 0;
	rc = rows_finish(c, rc);
	if (!rc && t->n_runs) {
		out->runs += (int64_t)t->n_runs;
		out->weeks++;
	}
	return rc;
}

struct pair {
	int64_t host_id;
	char *ref;
};

struct pairs {
	struct pair *v;
	size_t n, cap;
};

static int pair_row(struct store_stmt *s, void *cls)
{
	struct pairs *p = cls;

	if (aw_array_reserve(&p->v, p->n, &p->cap, sizeof(*p->v), 16))
		return -ENOMEM;
	p->v[p->n].host_id = c_i64(s, 0);
	p->v[p->n].ref = strdup(c_text(s, 1));
	return p->v[p->n++].ref ? 0 : -ENOMEM;
}

static void pairs_clear(struct pairs *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i].ref);
	p->n = 0;
}

/* The start of the oldest run in [from, to): 0 with *out, or -ENOENT. */
static int oldest(struct store_conn *c, int64_t from, int64_t to, int64_t *out)
{
	struct store_stmt *s;
	int rc = rows_get(c, &sql_oldest, &s);

	if (rc)
		return rc;
	b_i64(s, 1, from);
	b_i64(s, 2, to);
	return rows_run_id(s, out);
}

int store_retention_run(struct store_conn *c, const struct store_retention *r, int64_t now_us,
                        int64_t budget_us, struct store_retention_stats *out)
{
	uint64_t t0 = aw_monotonic_ns();
	struct thinning t = {0};
	struct pairs pairs = {0};
	int64_t cutoff, week, first;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!r->raw_days)
		return -EINVAL;
	/* whole weeks only: every run of a week is thinned in one pass, so that its aggregates
	 * are exact (a week whose newest runs retention keeps is the exception) */
	cutoff = week_of(now_us - (int64_t)r->raw_days * DAY_US);
	for (week = INT64_MIN; !rc; week += WEEK_US) {
		rc = oldest(c, week, cutoff, &first);
		if (rc)
			break;
		week = week_of(first);
		pairs_clear(&pairs);
		{
			struct store_stmt *s;

			rc = rows_get(c, &sql_pairs, &s);
			if (rc)
				break;
			b_i64(s, 1, week);
			b_i64(s, 2, week + WEEK_US);
			rc = rows_each_row(s, pair_row, &pairs);
		}
		for (size_t i = 0; !rc && i < pairs.n; i++) {
			if (out->weeks && (int64_t)(aw_monotonic_ns() - t0) / 1000 > budget_us) {
				out->more = true;
				break;
			}
			rc = thin_week(c, r, pairs.v[i].host_id, pairs.v[i].ref, week, &t, out);
		}
		if (out->more)
			break;
	}
	if (rc == -ENOENT)
		rc = 0; /* nothing older than the window is left */
	pairs_clear(&pairs);
	free(pairs.v);
	free(t.runs);
	free(t.s);
	free(t.week);
	return rc;
}

/* ---- series per day or week ---- */

/* Along the primary key (host, ref, cell, period, start); in start order for one cell id, and
 * put in order in memory anyway (a key may name more than one cell). */
static const struct filtered_def sql_aggregates = {
    .first = S_AGGREGATES,
    .what = "read aggregates",
    .head = "SELECT start_us, n, min, median, max FROM aggregates WHERE host_id = (SELECT id "
            "FROM hosts WHERE name = ?) AND ref = ? AND cell_id IN (SELECT id FROM cells "
            "WHERE key = ?) AND period = ?",
    .joiner = " AND ",
    .filters = {"project_id = (SELECT id FROM projects WHERE name = ?)"},
    .n = 1,
    .tail = ""};

/* One period as it is being gathered: the stored aggregates' figures and the kept runs'
 * values. */
struct period {
	int64_t start, stored_n;
	double stored_min, stored_max, stored_median_sum; /* median * n summed */
	double *v;                                        /* kept runs' p50s */
	size_t n, cap;
};

struct periods {
	struct period *v;
	size_t n, cap;
	int64_t step;
};

/* The entry of `start`, added when new. Both sources come mostly in time order: the last
 * entry, or a new one after it, is the common case. */
static struct period *period_at(struct periods *p, int64_t start)
{
	if (p->n && start <= p->v[p->n - 1].start)
		for (size_t i = p->n; i-- > 0;)
			if (p->v[i].start == start)
				return &p->v[i];
	if (aw_array_reserve(&p->v, p->n, &p->cap, sizeof(*p->v), 64))
		return NULL;
	p->v[p->n] =
	    (struct period){.start = start, .stored_min = INFINITY, .stored_max = -INFINITY};
	return &p->v[p->n++];
}

static int aggregate_row(struct store_stmt *s, void *cls)
{
	struct periods *p = cls;
	struct period *e = period_at(p, c_i64(s, 0));
	int64_t n = c_i64(s, 1);

	if (!e)
		return -ENOMEM;
	e->stored_n += n;
	e->stored_min = fmin(e->stored_min, c_real(s, 2));
	e->stored_max = fmax(e->stored_max, c_real(s, 4));
	e->stored_median_sum += c_real(s, 3) * (double)n;
	return 0;
}

static int kept_point(const struct store_point *pt, void *cls)
{
	struct periods *p = cls;
	struct period *e;
	int64_t started;

	if (!isfinite(pt->value) || aw_time_parse(pt->started_at, &started))
		return 0;
	e = period_at(p, p->step == WEEK_US ? week_of(started) : day_of(started));
	if (!e || aw_array_reserve(&e->v, e->n, &e->cap, sizeof(*e->v), 16))
		return -ENOMEM;
	e->v[e->n++] = pt->value;
	return 0;
}

static int period_cmp(const void *a, const void *b)
{
	const struct period *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

int store_series_periods(struct store_conn *c, const struct store_series_query *q,
                         enum store_period period, store_aggregate_cb cb, void *cls)
{
	struct periods p = {.step = period == STORE_PERIOD_WEEK ? WEEK_US : DAY_US};
	struct store_series_query kept = *q;
	struct store_stmt *s;
	size_t first;
	int n = 0, rc;

	if (q->metric != STORE_METRIC_P50 || !q->limit ||
	    (period != STORE_PERIOD_DAY && period != STORE_PERIOD_WEEK))
		return -EINVAL;
	rc = rows_get_filtered(c, &sql_aggregates, q->project ? 1 : 0, &s);
	if (rc)
		return rc;
	b_text(s, ++n, q->host);
	b_text(s, ++n, q->ref);
	b_text(s, ++n, q->cell_key);
	b_text(s, ++n, period == STORE_PERIOD_WEEK ? "week" : "day");
	if (q->project)
		b_text(s, ++n, q->project);
	rc = rows_each_row(s, aggregate_row, &p);
	/* every run still kept: as many as retention keeps, or the whole history without it */
	kept.limit = UINT32_MAX >> 1;
	if (!rc)
		rc = store_series(c, &kept, kept_point, &p);
	if (rc)
		goto out;
	if (p.n)
		qsort(p.v, p.n, sizeof(*p.v), period_cmp);
	first = p.n > q->limit ? p.n - q->limit : 0;
	for (size_t i = first; !rc && i < p.n; i++) {
		struct period *e = &p.v[i];
		struct store_aggregate a = {.start_us = e->start,
		                            .count = e->stored_n + (int64_t)e->n,
		                            .stored = e->stored_n,
		                            .min = e->stored_min,
		                            .max = e->stored_max};
		double kept_median = 0;

		if (e->n) {
			aw_sort_doubles(e->v, e->n);
			a.min = fmin(a.min, e->v[0]);
			a.max = fmax(a.max, e->v[e->n - 1]);
			kept_median = median_sorted(e->v, e->n);
		}
		a.median = (e->stored_median_sum + kept_median * (double)e->n) / (double)a.count;
		rc = cb(&a, cls);
	}
out:
	for (size_t i = 0; i < p.n; i++)
		free(p.v[i].v);
	free(p.v);
	return rc;
}
