/* What the collector computes after an upload and keeps for pages and the gate: the change
 * points of a host's series, the verdict of each commit on each host, and the drawn charts. */
#include "rows.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "aw/lru.h"

/* The filters of the verdict lists, in the order of their bits (project, commit, host): each
 * combination its own statement, read through its index (the primary key, verdicts_commit,
 * verdicts_host, verdicts_host_project, verdicts_project, verdicts_order). */
#define VERDICT_FILTERS \
	.joiner = " WHERE ", .filters = {"project = ?", "commit_sha = ?", "host = ?"}
#define VERDICT_TAIL " ORDER BY order_us DESC, host LIMIT ?"

/* ---- analysis ---- */

/* Two collectors' workers replacing one host's change points at once: on PostgreSQL (read
 * committed) the second's DELETE waited for the first, found the rows it had meant to delete
 * gone and did not see the first's new ones, and both sets stayed (every change point twice).
 * A lock on (project, host, ref) for the transaction makes the second wait before it deletes.
 * SQLite's write transaction (BEGIN IMMEDIATE) already admits one writer: there a no-op. */
static const struct stmt_def sql_cp_lock = {
    .id = S_CP_LOCK,
    .what = "lock a host's change points",
    .sql = "SELECT CAST(?1 AS TEXT), CAST(?2 AS TEXT), CAST(?3 AS TEXT)",
    .pg = "SELECT pg_advisory_xact_lock(hashtextextended(CAST(?1 AS TEXT) || chr(31) || "
          "CAST(?2 AS TEXT) || chr(31) || CAST(?3 AS TEXT), 0))"};

static const struct stmt_def sql_cp_delete = {
    .id = S_CP_DELETE,
    .what = "clear change points",
    .sql = "DELETE FROM change_points WHERE project = ?1 AND host = ?2 AND ref = ?3"};

static const struct stmt_def sql_cp_add = {
    .id = S_CP_ADD,
    .what = "store a change point",
    .sql = "INSERT INTO change_points (project, host, ref, cell_key, metric, commit_sha, "
           "run_id, order_us, before, after, pvalue, computed_at) VALUES (?1, ?2, ?3, "
           "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"};

int store_changepoints_replace(struct store_conn *c, const char *project, const char *host,
                               const char *ref, const struct store_changepoint *items, size_t n)
{
	struct store_stmt *s;
	int rc = rows_begin(c, STORE_TX_WRITE);

	if (rc)
		return rc;
	rc = rows_get(c, &sql_cp_lock, &s);
	if (!rc) {
		b_text(s, 1, project);
		b_text(s, 2, host);
		b_text(s, 3, ref);
		rc = rows_run_done(s, NULL);
	}
	if (!rc)
		rc = rows_get(c, &sql_cp_delete, &s);
	if (!rc) {
		b_text(s, 1, project);
		b_text(s, 2, host);
		b_text(s, 3, ref);
		rc = rows_run_later(s);
	}
	for (size_t i = 0; !rc && i < n; i++) {
		const struct store_changepoint *p = &items[i];

		rc = rows_get(c, &sql_cp_add, &s);
		if (rc)
			break;
		b_text(s, 1, project);
		b_text(s, 2, host);
		b_text(s, 3, ref);
		b_text(s, 4, p->cell_key);
		b_text(s, 5, p->metric);
		b_text(s, 6, p->commit);
		b_text(s, 7, p->run_id);
		b_i64(s, 8, p->order_us);
		b_real(s, 9, p->before);
		b_real(s, 10, p->after);
		b_real(s, 11, p->pvalue);
		b_text(s, 12, p->computed_at);
		rc = rows_run_later(s);
	}
	return rows_finish(c, rc);
}

struct cp_rows {
	store_changepoint_cb cb;
	void *cls;
};

static int cp_row(struct store_stmt *s, void *cls)
{
	struct cp_rows *cr = cls;
	struct store_changepoint p = {
	    .project = c_text(s, 0),
	    .host = c_text(s, 1),
	    .ref = c_text(s, 2),
	    .cell_key = c_text(s, 3),
	    .metric = c_text(s, 4),
	    .commit = c_text(s, 5),
	    .run_id = c_text(s, 6),
	    .order_us = c_i64(s, 7),
	    .before = c_real(s, 8),
	    .after = c_real(s, 9),
	    .pvalue = c_real(s, 10),
	    .computed_at = c_text(s, 11),
	};

	return cr->cb(&p, cr->cls);
}

/* by host and ref, the project and the cell when given (change_points_series,
 * change_points_cell) */
static const struct filtered_def sql_cp_list = {
    .first = S_CP_LIST,
    .what = "list change points",
    .head = "SELECT project, host, ref, cell_key, metric, commit_sha, run_id, order_us, "
            "before, after, pvalue, computed_at FROM change_points WHERE host = ? AND ref = ?",
    .joiner = " AND ",
    .filters = {"project = ?", "cell_key = ?"},
    .n = 2,
    .tail = " ORDER BY order_us, cell_key, metric"};

int store_changepoints_list(struct store_conn *c, const char *project, const char *host,
                            const char *ref, const char *cell_key, store_changepoint_cb cb,
                            void *cls)
{
	struct cp_rows cr = {cb, cls};
	struct store_stmt *s;
	int n,
	    rc = rows_get_filtered(c, &sql_cp_list, (project ? 1u : 0u) | (cell_key ? 2u : 0u), &s);

	if (rc)
		return rc;
	n = rows_bind_host_ref(s, host, ref, project);
	if (cell_key)
		b_text(s, ++n, cell_key);
	return rows_each_row(s, cp_row, &cr);
}

static const struct stmt_def sql_verdict_put = {
    .id = S_VERDICT_PUT,
    .what = "store a verdict",
    .sql = "INSERT INTO verdicts (project, commit_sha, host, baseline_ref, status, "
           "json, order_us, computed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
           "ON CONFLICT (project, commit_sha, host) DO UPDATE SET "
           "baseline_ref = excluded.baseline_ref, status = excluded.status, "
           "json = excluded.json, order_us = excluded.order_us, "
           "computed_at = excluded.computed_at"};

int store_verdict_put(struct store_conn *c, const struct store_verdict *v)
{
	struct store_stmt *s;
	int rc = rows_get(c, &sql_verdict_put, &s);

	if (rc)
		return rc;
	b_text(s, 1, v->project);
	b_text(s, 2, v->commit);
	b_text(s, 3, v->host);
	b_text(s, 4, v->baseline_ref);
	b_text(s, 5, v->status);
	b_text(s, 6, v->json);
	b_i64(s, 7, v->order_us);
	b_text(s, 8, v->computed_at);
	return rows_run_done(s, NULL);
}

struct verdict_rows {
	store_verdict_cb cb;
	void *cls;
};

static int verdict_row(struct store_stmt *s, void *cls)
{
	struct verdict_rows *vr = cls;
	struct store_verdict v = {
	    .project = c_text(s, 0),
	    .commit = c_text(s, 1),
	    .host = c_text(s, 2),
	    .baseline_ref = c_text(s, 3),
	    .status = c_text(s, 4),
	    .json = c_text(s, 5),
	    .computed_at = c_text(s, 6),
	    .order_us = c_i64(s, 7),
	};

	return vr->cb(&v, vr->cls);
}

static int verdict_query(struct store_conn *c, const struct filtered_def *which,
                         const char *project, const char *commit, const char *host, unsigned limit,
                         store_verdict_cb cb, void *cls)
{
	const char *given[3] = {project, commit, host};
	struct verdict_rows vr = {cb, cls};
	struct store_stmt *s;
	unsigned mask = 0;
	int n = 0, rc;

	if (limit < 1 || limit > 10000)
		return -EINVAL;
	for (int i = 0; i < 3; i++)
		mask |= given[i] ? 1u << i : 0;
	rc = rows_get_filtered(c, which, mask, &s);
	if (rc)
		return rc;
	for (int i = 0; i < 3; i++)
		if (given[i])
			b_text(s, ++n, given[i]);
	b_i64(s, ++n, limit);
	return rows_each_row(s, verdict_row, &vr);
}

static const struct filtered_def sql_verdict_list = {
    .first = S_VERDICT_LIST,
    .what = "list verdicts",
    .head = "SELECT project, commit_sha, host, baseline_ref, status, json, computed_at, "
            "order_us FROM verdicts",
    VERDICT_FILTERS,
    .n = 3,
    .tail = VERDICT_TAIL};

int store_verdict_list(struct store_conn *c, const char *project, const char *commit,
                       const char *host, unsigned limit, store_verdict_cb cb, void *cls)
{
	return verdict_query(c, &sql_verdict_list, project, commit, host, limit, cb, cls);
}

/* the same without the document, which may be large, nor what a row keeps after it
 * (reading a column stored after a large value reads through that value) */
static const struct filtered_def sql_verdict_statuses = {
    .first = S_VERDICT_STATUSES,
    .what = "list verdict statuses",
    .head = "SELECT project, commit_sha, host, baseline_ref, status, NULL, NULL, order_us "
            "FROM verdicts",
    VERDICT_FILTERS,
    .n = 3,
    .tail = VERDICT_TAIL};

int store_verdict_statuses(struct store_conn *c, const char *project, const char *commit,
                           const char *host, unsigned limit, store_verdict_cb cb, void *cls)
{
	return verdict_query(c, &sql_verdict_statuses, project, commit, host, limit, cb, cls);
}

/* ---- charts ---- */

static const struct stmt_def sql_chart_put = {
    .id = S_CHART_PUT,
    .what = "store a chart",
    .sql = "INSERT INTO charts (path, content_type, hash, updated_at, data) VALUES "
           "(?1, ?2, ?3, ?4, ?5) ON CONFLICT (path) DO UPDATE SET "
           "content_type = excluded.content_type, hash = excluded.hash, "
           "updated_at = excluded.updated_at, data = excluded.data"};

int store_chart_put(struct store_conn *c, const struct store_chart *ch)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us;
	int rc;

	if (!ch->path || !ch->content_type || !ch->hash || (ch->len && !ch->data))
		return -EINVAL;
	rc = rows_get(c, &sql_chart_put, &s);
	if (rc)
		return rc;
	store_now(now, &us);
	b_text(s, 1, ch->path);
	b_text(s, 2, ch->content_type);
	b_text(s, 3, ch->hash);
	b_text(s, 4, now);
	s->drv->bind_blob(s, 5, ch->data, ch->len);
	return rows_run_done(s, NULL);
}

static int chart_read(struct store_conn *c, const struct stmt_def *which, const char *path,
                      store_chart_cb cb, void *cls)
{
	struct store_chart ch = {0};
	struct store_stmt *s;
	int rc = rows_get(c, which, &s);

	if (rc)
		return rc;
	b_text(s, 1, path);
	rc = step(s);
	if (rc == STORE_ROW) {
		ch.path = c_text(s, 0);
		ch.content_type = c_text(s, 1);
		ch.hash = c_text(s, 2);
		ch.updated_at = c_text(s, 3);
		if (which->id == S_CHART_GET)
			ch.data = s->drv->col_blob(s, 4, &ch.len);
		else
			ch.len = (size_t)c_i64(s, 4);
		rc = cb(&ch, cls);
	} else if (rc == STORE_DONE) {
		rc = -ENOENT;
	}
	reset(s);
	return rc;
}

static const struct stmt_def sql_chart_get = {
    .id = S_CHART_GET,
    .what = "read a chart",
    .sql = "SELECT path, content_type, hash, updated_at, data "
           "FROM charts WHERE path = ?1"};

int store_chart_get(struct store_conn *c, const char *path, store_chart_cb cb, void *cls)
{
	return chart_read(c, &sql_chart_get, path, cb, cls);
}

static const struct stmt_def sql_chart_stat = {.id = S_CHART_STAT,
                                               .what = "read a chart",
                                               .sql =
                                                   "SELECT path, content_type, hash, updated_at, "
                                                   "length(data) FROM charts WHERE path = ?1"};

int store_chart_stat(struct store_conn *c, const char *path, store_chart_cb cb, void *cls)
{
	return chart_read(c, &sql_chart_stat, path, cb, cls);
}

/* ---- the runs' values, kept once per process ----
 *
 * (rows.h) every verdict reads its history's 40 runs, and
 * the next upload's verdict the same runs less one plus one, as do the change points; a run of
 * 300 cells took SQLite's reading and sorting of its measurements about 60% of a post-ingest
 * task's CPU (docs/benchmarks.md). A run's measurements never change once committed, and only
 * retention removes them (it forgets the run here), so they are kept, keyed by the store that
 * read them (its generation: two stores of one process, or one reopened, never share) and the
 * run's sequence, shared by every connection and thread under one mutex, least recently used
 * first out within VALCACHE_BYTES. Each row is kept compact (48 bytes); a reader gets its own
 * copy. */
#define VALCACHE_BYTES AW_VALCACHE_BYTES
#define KEPT_BUCKETS   4096

struct kept_row {
	double p50, p99, ci_lo, ci_hi;
	int64_t cell_id;
	int32_t status;
	int32_t reason; /* offset in the entry's text, -1 none */
};

struct kept_run {
	struct aw_lru node;     /* first: in the least recently used order */
	struct kept_run *chain; /* the next in its bucket */
	uint64_t gen;
	int64_t seq;
	size_t n, bytes;
	char *text; /* the rows' reasons, each NUL-terminated (NULL: none) */
	struct kept_row row[];
};

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept_run *buckets[KEPT_BUCKETS];
static AW_LRU_HEAD(lru);
static size_t held;
static uint64_t hits, misses;

static struct kept_run **slot_of(uint64_t gen, int64_t seq)
{
	uint64_t h = (gen * UINT64_C(0x9e3779b97f4a7c15)) ^ (uint64_t)seq;

	h *= UINT64_C(0xff51afd7ed558ccd);
	return &buckets[(h >> 32) % KEPT_BUCKETS];
}

static struct kept_run *find(uint64_t gen, int64_t seq)
{
	for (struct kept_run *e = *slot_of(gen, seq); e; e = e->chain)
		if (e->gen == gen && e->seq == seq)
			return e;
	return NULL;
}

/* The entry of a node of the order (node is its first member). */
static struct kept_run *of(struct aw_lru *n)
{
	return (struct kept_run *)(void *)n;
}

static void drop(struct kept_run *e)
{
	struct kept_run **p = slot_of(e->gen, e->seq);

	while (*p != e)
		p = &(*p)->chain;
	*p = e->chain;
	aw_lru_unlink(&e->node);
	held -= e->bytes;
	free(e->text);
	free(e);
}

int valcache_get(uint64_t gen, int64_t seq, struct value_rows *out)
{
	struct kept_run *e;
	int rc = 1;

	memset(out, 0, sizeof(*out));
	if (!gen)
		return 0;
	pthread_mutex_lock(&kept_lock);
	e = find(gen, seq);
	if (!e) {
		misses++;
		pthread_mutex_unlock(&kept_lock);
		return 0;
	}
	hits++;
	aw_lru_unlink(&e->node);
	aw_lru_push(&lru, &e->node);
	out->v = calloc(e->n ? e->n : 1, sizeof(*out->v));
	if (!out->v)
		rc = -ENOMEM;
	for (size_t i = 0; rc > 0 && i < e->n; i++) {
		const struct kept_row *k = &e->row[i];
		struct value_row *v = &out->v[i];

		v->cell_id = k->cell_id;
		v->ord = (int64_t)i;
		v->status = (enum aw_cell_status)k->status;
		v->p50 = k->p50;
		v->p99 = k->p99;
		v->ci_lo = k->ci_lo;
		v->ci_hi = k->ci_hi;
		out->n = i + 1;
		if (k->reason >= 0 && !(v->reason = strdup(e->text + k->reason)))
			rc = -ENOMEM;
	}
	pthread_mutex_unlock(&kept_lock);
	if (rc < 0) {
		for (size_t i = 0; i < out->n; i++)
			free(out->v[i].reason);
		free(out->v);
		memset(out, 0, sizeof(*out));
	}
	return rc;
}

void valcache_put(uint64_t gen, int64_t seq, const struct value_rows *rows)
{
	size_t text = 0, bytes, at = 0;
	struct kept_run *e;

	if (!gen)
		return;
	for (size_t i = 0; i < rows->n; i++)
		if (rows->v[i].reason)
			text += strlen(rows->v[i].reason) + 1;
	bytes = sizeof(*e) + rows->n * sizeof(e->row[0]) + text;
	if (bytes > VALCACHE_BYTES / 64)
		return; /* (a run this large is read every time) */
	e = malloc(sizeof(*e) + rows->n * sizeof(e->row[0]));
	if (!e)
		return; /* (a cache: the run is read again next time) */
	e->text = text ? malloc(text) : NULL;
	if (text && !e->text) {
		free(e);
		return;
	}
	e->gen = gen;
	e->seq = seq;
	e->n = rows->n;
	e->bytes = bytes;
	for (size_t i = 0; i < rows->n; i++) {
		const struct value_row *v = &rows->v[i];
		struct kept_row *k = &e->row[i];

		k->p50 = v->p50;
		k->p99 = v->p99;
		k->ci_lo = v->ci_lo;
		k->ci_hi = v->ci_hi;
		k->cell_id = v->cell_id;
		k->status = (int32_t)v->status;
		k->reason = -1;
		if (v->reason) {
			size_t n = strlen(v->reason) + 1;

			memcpy(e->text + at, v->reason, n);
			k->reason = (int32_t)at;
			at += n;
		}
	}
	pthread_mutex_lock(&kept_lock);
	if (find(gen, seq)) { /* (another thread read it meanwhile) */
		pthread_mutex_unlock(&kept_lock);
		free(e->text);
		free(e);
		return;
	}
	while (held + bytes > VALCACHE_BYTES && !aw_lru_empty(&lru))
		drop(of(lru.next));
	e->chain = *slot_of(gen, seq);
	*slot_of(gen, seq) = e;
	aw_lru_push(&lru, &e->node);
	held += bytes;
	pthread_mutex_unlock(&kept_lock);
}

void valcache_forget(uint64_t gen, int64_t seq)
{
	struct kept_run *e;

	pthread_mutex_lock(&kept_lock);
	e = find(gen, seq);
	if (e)
		drop(e);
	pthread_mutex_unlock(&kept_lock);
}

void valcache_forget_store(uint64_t gen)
{
	pthread_mutex_lock(&kept_lock);
	for (struct aw_lru *n = lru.next, *next; n != &lru; n = next) {
		struct kept_run *e = of(n);

		next = n->next;
		if (e->gen == gen)
			drop(e);
	}
	pthread_mutex_unlock(&kept_lock);
}

void store_valcache_counts(uint64_t *hits_out, uint64_t *misses_out, size_t *bytes)
{
	pthread_mutex_lock(&kept_lock);
	*hits_out = hits;
	*misses_out = misses;
	*bytes = held;
	pthread_mutex_unlock(&kept_lock);
}
