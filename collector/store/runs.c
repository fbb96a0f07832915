/* The store's reads of runs: lists, a ref's history in commit order, a run's cells, a whole
 * run as a result document, a cell's series for trends, and the hosts with their
 * fingerprints. */
#include "rows.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aw/buf.h"

/* The columns of a listed run, in the order fill_run() reads them. */
#define RUN_COLS                                                                                  \
	"r.seq, r.run_id, p.name, h.name, c.sha, r.ref, r.commit_time, r.trigger, r.started_at, " \
	"r.finished_at, r.received_at, r.matrix_name, r.matrix_version, r.matrix_hash, "          \
	"r.matrix_profile, r.n_cells, COALESCE(c.order_us, r.started_us), f.platform_hash, "      \
	"r.confirmation_of, r.confirm, r.reference"
#define RUN_FROM                                                                               \
	" FROM runs r JOIN projects p ON p.id = r.project_id JOIN hosts h ON h.id = r.host_id" \
	" JOIN fingerprints f ON f.id = r.fingerprint_id"                                      \
	" LEFT JOIN commits c ON c.id = r.commit_id"
/* The columns of a cell, in the order fill_cell() reads them. */
#define CELL_COLS                                                                                \
	"k.key, k.op, k.reader, k.subject, k.kernel, k.placement, k.cpu, k.contender_cpu, k.c, " \
	"k.d, m.status, m.n, m.batch, m.min, m.p50, m.p95, m.p99, m.max, m.mean, m.stddev, "     \
	"m.ci_lo, m.ci_hi, m.baseline_ns, m.below_resolution, m.reason"
#define HOST_COLS                                                                            \
	"h.name, h.arch, h.cpu_model, h.platform_hash, h.first_seen, h.last_seen, f.doc, "   \
	"(SELECT COUNT(*) FROM runs r WHERE r.host_id = h.id), h.id FROM hosts h LEFT JOIN " \
	"fingerprints f ON f.id = h.fingerprint_id"

/* ---- runs ---- */

static void fill_run(struct store_stmt *s, struct store_run *run)
{
	run->seq = c_i64(s, 0);
	run->run_id = c_text(s, 1);
	run->project = c_text(s, 2);
	run->host = c_text(s, 3);
	run->commit = c_text(s, 4);
	run->ref = c_text(s, 5);
	run->commit_time = c_text(s, 6);
	run->trigger = c_text(s, 7);
	run->started_at = c_text(s, 8);
	run->finished_at = c_text(s, 9);
	run->received_at = c_text(s, 10);
	run->matrix_name = c_text(s, 11);
	run->matrix_version = c_i64(s, 12);
	run->matrix_hash = c_text(s, 13);
	run->matrix_profile = c_text(s, 14);
	run->n_cells = c_i64(s, 15);
	run->order_us = c_i64(s, 16);
	run->platform_hash = c_text(s, 17);
	run->confirmation_of = c_text(s, 18);
	run->confirm = c_opt(s, 19) > 0 ? c_opt(s, 19) : 0;
	run->reference = c_text(s, 20);
}

struct run_rows {
	store_run_cb cb;
	void *cls;
};

static int run_row(struct store_stmt *s, void *cls)
{
	struct run_rows *rr = cls;
	struct store_run run;

	fill_run(s, &run);
	return rr->cb(&run, rr->cls);
}

int store_list_runs(struct store_conn *c, const struct store_run_filter *f, store_run_cb cb,
                    void *cls)
{
	struct run_rows rr = {cb, cls};
	struct store_stmt *s = NULL;
	const char *texts[4];
	struct aw_buf sql;
	int n = 0, rc;

	aw_buf_init(&sql, 4096);
	/* The statement text comes from constant fragments only; every value is bound. The
	 * filters are left out rather than written "(? IS NULL OR ...)", so that each variant
	 * uses its index. */
	rc = aw_buf_puts(&sql, "SELECT " RUN_COLS RUN_FROM " WHERE 1 = 1");
	if (!rc && f->project) {
		texts[n++] = f->project;
		rc = aw_buf_printf(&sql, " AND p.name = ?%d", n);
	}
	if (!rc && f->host) {
		texts[n++] = f->host;
		rc = aw_buf_printf(&sql, " AND h.name = ?%d", n);
	}
	if (!rc && f->commit) {
		texts[n++] = f->commit;
		rc = aw_buf_printf(&sql, " AND c.sha = ?%d", n);
	}
	if (!rc && f->ref) {
		texts[n++] = f->ref;
		rc = aw_buf_printf(&sql, " AND r.ref = ?%d", n);
	}
	if (!rc)
		rc = aw_buf_printf(&sql, " AND r.seq < ?%d ORDER BY r.seq DESC LIMIT ?%d", n + 1,
		                   n + 2);
	if (!rc)
		rc = c->drv->prepare(c, sql.data, "list runs", false, &s);
	if (rc)
		goto out;
	for (int i = 0; i < n; i++)
		b_text(s, i + 1, texts[i]);
	b_i64(s, n + 1, f->before_seq > 0 ? f->before_seq : INT64_MAX);
	b_i64(s, n + 2, f->limit);
	rc = rows_each_row(s, run_row, &rr);
out:
	c->drv->finalize(s);
	aw_buf_release(&sql);
	return rc;
}

static const struct stmt_def sql_ref_history = {
    .id = S_REF_HISTORY,
    .what = "read a ref's history",
    .sql = "SELECT " RUN_COLS RUN_FROM
           " WHERE h.name = ?1 AND r.ref = ?2 AND (CAST(?3 AS TEXT) IS NULL OR "
           "p.name = ?3) AND (COALESCE(c.order_us, r.started_us), r.seq) < "
           "(CAST(?4 AS BIGINT), CAST(?5 AS BIGINT)) "
           "ORDER BY COALESCE(c.order_us, r.started_us) DESC, r.seq DESC LIMIT ?6"};

int store_ref_history(struct store_conn *c, const char *project, const char *host, const char *ref,
                      int64_t before_order_us, int64_t before_seq, unsigned limit, store_run_cb cb,
                      void *cls)
{
	struct run_rows rr = {cb, cls};
	struct store_stmt *s;
	int rc = rows_get(c, &sql_ref_history, &s);

	if (rc)
		return rc;
	b_text(s, 1, host);
	b_text(s, 2, ref);
	b_text(s, 3, project);
	b_i64(s, 4, before_order_us);
	b_i64(s, 5, before_seq);
	b_i64(s, 6, limit);
	return rows_each_row(s, run_row, &rr);
}

/* Fills a cell from the CELL_COLS columns. Returns 0 or -ENOMEM/-EIO. */
static int fill_cell(struct store_stmt *s, struct aw_cell *cell)
{
	if (aw_set_str(&cell->key, c_text(s, 0)) || aw_set_str(&cell->op, c_text(s, 1)) ||
	    aw_set_str(&cell->reader, c_text(s, 2)) || aw_set_str(&cell->subject, c_text(s, 3)) ||
	    aw_set_str(&cell->kernel, c_text(s, 4)) || aw_set_str(&cell->placement, c_text(s, 5)) ||
	    aw_set_str(&cell->reason, c_text(s, 24)))
		return -ENOMEM;
	cell->cpu = (int)c_opt(s, 6);
	cell->contender_cpu = (int)c_opt(s, 7);
	cell->c = c_opt(s, 8);
	cell->d = c_i64(s, 9);
	if (store_status_parse(c_text(s, 10), &cell->status))
		return -EIO;
	cell->n = (uint64_t)c_i64(s, 11);
	cell->batch = (uint64_t)c_i64(s, 12);
	cell->min = c_real(s, 13);
	cell->p50 = c_real(s, 14);
	cell->p95 = c_real(s, 15);
	cell->p99 = c_real(s, 16);
	cell->max = c_real(s, 17);
	cell->mean = c_real(s, 18);
	cell->stddev = c_real(s, 19);
	cell->ci_lo = c_real(s, 20);
	cell->ci_hi = c_real(s, 21);
	cell->baseline_ns = c_real(s, 22);
	cell->below_resolution = c_i64(s, 23) != 0;
	return 0;
}

struct cell_rows {
	store_cell_cb cb;
	void *cls;
	struct aw_result *into; /* or append here */
};

static int cell_row(struct store_stmt *s, void *cls)
{
	struct cell_rows *cr = cls;
	struct aw_cell tmp = {0}, *cell = &tmp;
	int rc;

	if (cr->into) {
		cell = aw_result_add_cell(cr->into);
		return cell ? fill_cell(s, cell) : -ENOMEM;
	}
	rc = fill_cell(s, cell);
	if (!rc)
		rc = cr->cb(cell, cr->cls);
	aw_cell_release(&tmp);
	return rc;
}

static const struct stmt_def sql_run_cells = {
    .id = S_RUN_CELLS,
    .what = "read a run's cells",
    .sql = "SELECT " CELL_COLS " FROM measurements m JOIN cells k ON k.id = m.cell_id "
           "WHERE m.run_seq = ?1 ORDER BY m.ord"};

int store_run_cells(struct store_conn *c, int64_t seq, store_cell_cb cb, void *cls)
{
	struct cell_rows cr = {cb, cls, NULL};
	struct store_stmt *s;
	int rc = rows_get(c, &sql_run_cells, &s);

	if (rc)
		return rc;
	b_i64(s, 1, seq);
	return rows_each_row(s, cell_row, &cr);
}

/* The header of a run from sql_run_get into a new result. Returns 0 or -ENOMEM/-EIO. */
static int fill_header(struct store_stmt *s, struct aw_result *r)
{
	snprintf(r->run_id, sizeof(r->run_id), "%s", c_text(s, 1));
	if (aw_set_str(&r->project, c_text(s, 2)) || aw_set_str(&r->commit, c_text(s, 3)) ||
	    aw_set_str(&r->ref, c_text(s, 4)) || aw_set_str(&r->commit_time, c_text(s, 5)) ||
	    aw_set_str(&r->matrix_name, c_text(s, 9)) ||
	    aw_set_str(&r->matrix_hash, c_text(s, 11)) ||
	    aw_set_str(&r->matrix_profile, c_text(s, 12)))
		return -ENOMEM;
	if (aw_trigger_parse(c_text(s, 6), &r->trigger))
		return -EIO;
	snprintf(r->started_at, sizeof(r->started_at), "%s", c_text(s, 7));
	snprintf(r->finished_at, sizeof(r->finished_at), "%s", c_text(s, 8));
	r->matrix_version = c_i64(s, 10);
	if (aw_set_str(&r->confirmation_of, c_text(s, 16)))
		return -ENOMEM;
	r->confirm = c_opt(s, 17) > 0 ? c_opt(s, 17) : 0;
	if (c_text(s, 13)) {
		r->meta = json_loads(c_text(s, 13), 0, NULL);
		if (!r->meta)
			return -EIO;
	}
	r->host = json_loads(c_text(s, 14), 0, NULL);
	return r->host ? 0 : -EIO;
}

/* The stored reference series (column 15 of sql_run_get, text kept) over r's cells, once they are
 * in place. Returns 0, or -ENOMEM/-EIO (a stored series that does not fit its cells). */
static int fill_reference(const char *text, struct aw_result *r)
{
	struct aw_verr e;
	json_t *ref;
	int rc;

	if (!text)
		return 0;
	ref = json_loads(text, 0, NULL);
	if (!ref)
		return -EIO;
	rc = aw_result_reference_from_json(r, ref, &e) ? -EIO : 0;
	json_decref(ref);
	return rc;
}

static const struct stmt_def sql_run_get = {
    .id = S_RUN_GET,
    .what = "read a run",
    .sql = "SELECT r.seq, r.run_id, p.name, c.sha, r.ref, r.commit_time, r.trigger, "
           "r.started_at, r.finished_at, r.matrix_name, r.matrix_version, "
           "r.matrix_hash, r.matrix_profile, r.meta, f.doc, r.reference, "
           "r.confirmation_of, r.confirm" RUN_FROM " WHERE r.run_id = ?1"};

int store_get_run(struct store_conn *c, const char *run_id, struct aw_result **out)
{
	struct cell_rows cr = {NULL, NULL, NULL};
	struct aw_result *r = NULL;
	struct store_stmt *s;
	char *reference = NULL;
	int64_t seq = 0;
	int rc;

	*out = NULL;
	rc = rows_get(c, &sql_run_get, &s);
	if (rc)
		return rc;
	/* The header and the cells are read in one transaction so they match. */
	rc = rows_begin(c, STORE_TX_READ);
	if (rc)
		return rc;
	b_text(s, 1, run_id);
	rc = step(s);
	if (rc == STORE_ROW) {
		seq = c_i64(s, 0);
		r = aw_result_new();
		rc = r ? fill_header(s, r) : -ENOMEM;
		if (!rc && c_text(s, 15) && !(reference = strdup(c_text(s, 15))))
			rc = -ENOMEM;
	} else if (rc == STORE_DONE) {
		rc = -ENOENT;
	}
	reset(s);
	if (!rc)
		rc = rows_get(c, &sql_run_cells, &s);
	if (!rc) {
		cr.into = r;
		b_i64(s, 1, seq);
		rc = rows_each_row(s, cell_row, &cr);
	}
	if (!rc)
		rc = fill_reference(reference, r);
	if (!rc) {
		*out = r;
		r = NULL;
	}
	rows_commit(c); /* ends the read */
	aw_result_free(&r);
	free(reference);
	return rc;
}

/* ---- trends ---- */

struct point_rows {
	store_point_cb cb;
	void *cls;
};

static int point_row(struct store_stmt *s, void *cls)
{
	struct point_rows *pr = cls;
	struct store_point p = {
	    .seq = c_i64(s, 0),
	    .run_id = c_text(s, 1),
	    .commit = c_text(s, 2),
	    .started_at = c_text(s, 3),
	    .matrix_hash = c_text(s, 4),
	    .status = c_text(s, 5),
	    .order_us = c_i64(s, 6),
	    .value = c_real(s, 7),
	};

	return pr->cb(&p, pr->cls);
}

int store_series(struct store_conn *c, const struct store_series_query *q, store_point_cb cb,
                 void *cls)
{
	struct point_rows pr = {cb, cls};
	struct store_stmt *s = NULL;
	struct aw_buf sql;
	int rc;

	if ((unsigned)q->metric >= STORE_METRIC_COUNT)
		return -EINVAL;
	aw_buf_init(&sql, 4096);
	/* The metric's column comes from a fixed table, never from the request. */
	rc = aw_buf_printf(
	    &sql,
	    "SELECT * FROM (SELECT r.seq, r.run_id, c.sha, r.started_at, r.matrix_hash, m.status, "
	    "COALESCE(c.order_us, r.started_us) AS o, m.%s FROM runs r "
	    "JOIN hosts h ON h.id = r.host_id JOIN projects p ON p.id = r.project_id "
	    "JOIN measurements m ON m.run_seq = r.seq JOIN cells k ON k.id = m.cell_id "
	    "LEFT JOIN commits c ON c.id = r.commit_id "
	    "WHERE h.name = ?1 AND r.ref = ?2 AND k.key = ?3 AND (CAST(?4 AS TEXT) IS NULL OR "
	    "p.name = ?4) ORDER BY o DESC, r.seq DESC LIMIT ?5) s ORDER BY o, seq",
	    store_metric_columns[q->metric]);
	if (!rc)
		rc = c->drv->prepare(c, sql.data, "read a series", false, &s);
	if (rc)
		goto out;
	b_text(s, 1, q->host);
	b_text(s, 2, q->ref);
	b_text(s, 3, q->cell_key);
	b_text(s, 4, q->project);
	b_i64(s, 5, q->limit);
	rc = rows_each_row(s, point_row, &pr);
out:
	c->drv->finalize(s);
	aw_buf_release(&sql);
	return rc;
}

/* ---- hosts ---- */

struct host_rows {
	store_host_cb cb;
	store_fingerprint_cb fcb;
	void *cls;
	int64_t id;
};

static int host_row(struct store_stmt *s, void *cls)
{
	struct host_rows *hr = cls;
	struct store_host h = {
	    .name = c_text(s, 0),
	    .arch = c_text(s, 1),
	    .cpu_model = c_text(s, 2),
	    .platform_hash = c_text(s, 3),
	    .first_seen = c_text(s, 4),
	    .last_seen = c_text(s, 5),
	    .fingerprint = c_text(s, 6),
	    .runs = c_i64(s, 7),
	};

	hr->id = c_i64(s, 8);
	return hr->cb(&h, hr->cls);
}

static const struct stmt_def sql_hosts = {
    .id = S_HOSTS, .what = "list hosts", .sql = "SELECT " HOST_COLS " ORDER BY h.name"};

int store_list_hosts(struct store_conn *c, store_host_cb cb, void *cls)
{
	struct host_rows hr = {cb, NULL, cls, 0};
	struct store_stmt *s;
	int rc = rows_get(c, &sql_hosts, &s);

	return rc ? rc : rows_each_row(s, host_row, &hr);
}

static int fp_row(struct store_stmt *s, void *cls)
{
	struct host_rows *hr = cls;
	struct store_fingerprint f = {
	    .hash = c_text(s, 0),
	    .platform_hash = c_text(s, 1),
	    .first_seen = c_text(s, 2),
	    .last_seen = c_text(s, 3),
	    .doc = c_text(s, 4),
	};

	return hr->fcb(&f, hr->cls);
}

static const struct stmt_def sql_host_get = {
    .id = S_HOST_GET, .what = "read a host", .sql = "SELECT " HOST_COLS " WHERE h.name = ?1"};

static const struct stmt_def sql_fps = {
    .id = S_FPS,
    .what = "read fingerprints",
    .sql = "SELECT hash, platform_hash, first_seen, last_seen, doc FROM fingerprints "
           "WHERE host_id = ?1 ORDER BY id"};

int store_get_host(struct store_conn *c, const char *name, store_host_cb cb,
                   store_fingerprint_cb fcb, void *cls)
{
	struct host_rows hr = {cb, fcb, cls, 0};
	struct store_stmt *s;
	int rc = rows_get(c, &sql_host_get, &s);

	if (rc)
		return rc;
	b_text(s, 1, name);
	rc = rows_each_row(s, host_row, &hr);
	if (rc)
		return rc;
	if (!hr.id)
		return -ENOENT;
	if (!fcb)
		return 0;
	rc = rows_get(c, &sql_fps, &s);
	if (rc)
		return rc;
	b_i64(s, 1, hr.id);
	return rows_each_row(s, fp_row, &hr);
}
