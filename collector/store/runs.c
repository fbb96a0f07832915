/* The store's reads of runs: lists, a ref's history in commit order, a run's cells, a whole
 * run as a result document, a cell's series for trends, and the hosts with their
 * fingerprints. */
#include "rows.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aw/buf.h"
#include "aw/refblob.h"

/* The columns of a listed run, in the order fill_run() reads them. */
#define RUN_COLS                                                                                  \
	"r.seq, r.run_id, p.name, h.name, c.sha, r.ref, r.commit_time, r.trigger, r.started_at, " \
	"r.finished_at, r.received_at, r.matrix_name, r.matrix_version, r.matrix_hash, "          \
	"r.matrix_profile, r.n_cells, r.order_us, f.platform_hash, "                              \
	"r.confirmation_of, r.confirm, "                                                          \
	"CASE WHEN r.reference_bin IS NULL AND r.reference IS NULL THEN 0 ELSE 1 END"
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
	run->has_reference = c_i64(s, 20) != 0;
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

/* The filters of store_list_runs(), in the order of their bits; an id is found by its name
 * first, so that the runs are read through the index of that id. */
static const struct filtered_def sql_run_list = {
    .first = S_RUN_LIST,
    .what = "list runs",
    .head = "SELECT " RUN_COLS RUN_FROM " WHERE r.seq < ?",
    .joiner = " AND ",
    .filters = {"r.project_id = (SELECT id FROM projects WHERE name = ?)",
                "r.host_id = (SELECT id FROM hosts WHERE name = ?)",
                "r.commit_id IN (SELECT id FROM commits WHERE sha = ?)", "r.ref = ?"},
    .n = 4,
    .tail = " ORDER BY r.seq DESC LIMIT ?"};

/* With a project, a commit is one row: its runs come in order from runs_commit. */
static const struct filtered_def sql_run_list_commit = {
    .first = S_RUN_LIST_COMMIT,
    .what = "list the runs of a commit",
    .head = "SELECT " RUN_COLS RUN_FROM " WHERE r.commit_id = (SELECT k.id FROM commits k "
            "JOIN projects kp ON kp.id = k.project_id WHERE kp.name = ? AND k.sha = ?)",
    .joiner = " AND ",
    .filters = {"r.host_id = (SELECT id FROM hosts WHERE name = ?)", "r.ref = ?"},
    .n = 2,
    .tail = " AND r.seq < ? ORDER BY r.seq DESC LIMIT ?"};

int store_list_runs(struct store_conn *c, const struct store_run_filter *f, store_run_cb cb,
                    void *cls)
{
	const char *given[4] = {f->project, f->host, f->commit, f->ref};
	struct run_rows rr = {cb, cls};
	struct store_stmt *s;
	unsigned mask = 0;
	int n = 0, rc;

	if (f->project && f->commit) {
		rc = rows_get_filtered(c, &sql_run_list_commit,
		                       (f->host ? 1u : 0u) | (f->ref ? 2u : 0u), &s);
		if (rc)
			return rc;
		b_text(s, ++n, f->project);
		b_text(s, ++n, f->commit);
		if (f->host)
			b_text(s, ++n, f->host);
		if (f->ref)
			b_text(s, ++n, f->ref);
		b_i64(s, ++n, f->before_seq > 0 ? f->before_seq : INT64_MAX);
	} else {
		for (int i = 0; i < 4; i++)
			mask |= given[i] ? 1u << i : 0;
		rc = rows_get_filtered(c, &sql_run_list, mask, &s);
		if (rc)
			return rc;
		b_i64(s, ++n, f->before_seq > 0 ? f->before_seq : INT64_MAX);
		for (int i = 0; i < 4; i++)
			if (given[i])
				b_text(s, ++n, given[i]);
	}
	b_i64(s, ++n, f->limit);
	return rows_each_row(s, run_row, &rr);
}

static const struct stmt_def sql_run_reference = {
    .id = S_RUN_REFERENCE,
    .what = "read a run's reference series",
    .sql = "SELECT reference_bin, reference FROM runs WHERE seq = ?1"};

struct packed {
	uint8_t *p;
	size_t len;
};

/* Column i's bytes copied into *out (none: out->p NULL). 0 or -ENOMEM. */
static int copy_blob(struct store_stmt *s, int i, struct packed *out)
{
	const void *p = s->drv->col_blob(s, i, &out->len);

	if (!p) {
		out->len = 0;
		return 0;
	}
	out->p = malloc(out->len ? out->len : 1);
	if (!out->p)
		return -ENOMEM;
	memcpy(out->p, p, out->len);
	return 0;
}

/* The packed series of a run stored since schema 11, else its JSON text packed (a text that
 * does not parse is no series: the run is judged and drawn without, as before). */
static int reference_row(struct store_stmt *s, void *cls)
{
	struct packed *out = cls;

	if (copy_blob(s, 0, out))
		return -ENOMEM;
	if (!out->p && c_text(s, 1) &&
	    aw_refblob_from_json(c_text(s, 1), &out->p, &out->len) == -ENOMEM)
		return -ENOMEM;
	return 1;
}

int store_run_reference(struct store_conn *c, int64_t seq, uint8_t **packed, size_t *len)
{
	struct packed out = {NULL, 0};
	struct store_stmt *s;
	int rc = rows_get(c, &sql_run_reference, &s);

	*packed = NULL;
	*len = 0;
	if (rc)
		return rc;
	b_i64(s, 1, seq);
	rc = rows_each_row(s, reference_row, &out);
	if (rc < 0) {
		free(out.p);
		return rc;
	}
	*packed = out.p;
	*len = out.len;
	return rc == 1 ? 0 : -ENOENT;
}

uint64_t store_conn_generation(const struct store_conn *c)
{
	return c->gen;
}

/* Walks runs_history (runs_history_project) newest first from the position given: no sort, and
 * no more rows than the limit asks. */
static const struct filtered_def sql_ref_history = {
    .first = S_REF_HISTORY,
    .what = "read a ref's history",
    .head = "SELECT " RUN_COLS RUN_FROM
            " WHERE r.host_id = (SELECT id FROM hosts WHERE name = ?) AND r.ref = ?",
    .joiner = " AND ",
    .filters = {"r.project_id = (SELECT id FROM projects WHERE name = ?)"},
    .n = 1,
    .tail = " AND r.order_us <= ? AND (r.order_us < ? OR r.seq < ?) "
            "ORDER BY r.order_us DESC, r.seq DESC LIMIT ?"};

int store_ref_history(struct store_conn *c, const char *project, const char *host, const char *ref,
                      int64_t before_order_us, int64_t before_seq, unsigned limit, store_run_cb cb,
                      void *cls)
{
	struct run_rows rr = {cb, cls};
	struct store_stmt *s;
	int n, rc = rows_get_filtered(c, &sql_ref_history, project ? 1 : 0, &s);

	if (rc)
		return rc;
	n = rows_bind_host_ref(s, host, ref, project);
	b_i64(s, ++n, before_order_us);
	b_i64(s, ++n, before_order_us);
	b_i64(s, ++n, before_seq);
	b_i64(s, ++n, limit);
	return rows_each_row(s, run_row, &rr);
}

/* The newest run of a host on a ref by sequence: runs_host_ref walked backwards (with a
 * project, to the first of that project's). */
static const struct filtered_def sql_ref_newest = {
    .first = S_REF_NEWEST,
    .what = "find a ref's newest run",
    .head = "SELECT r.seq FROM runs r"
            " WHERE r.host_id = (SELECT id FROM hosts WHERE name = ?) AND r.ref = ?",
    .joiner = " AND ",
    .filters = {"r.project_id = (SELECT id FROM projects WHERE name = ?)"},
    .n = 1,
    .tail = " ORDER BY r.seq DESC LIMIT 1"};

static int seq_row(struct store_stmt *s, void *cls)
{
	*(int64_t *)cls = c_i64(s, 0);
	return 1;
}

int store_ref_newest_seq(struct store_conn *c, const char *project, const char *host,
                         const char *ref, int64_t *seq)
{
	struct store_stmt *s;
	int rc = rows_get_filtered(c, &sql_ref_newest, project ? 1 : 0, &s);

	*seq = 0;
	if (rc)
		return rc;
	rows_bind_host_ref(s, host, ref, project);
	rc = rows_each_row(s, seq_row, seq);
	return rc < 0 ? rc : 0;
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

static const struct stmt_def sql_run_subject_cells = {
    .id = S_RUN_SUBJECT_CELLS,
    .what = "read a run's cells of a subject",
    .sql = "SELECT " CELL_COLS " FROM measurements m JOIN cells k ON k.id = m.cell_id "
           "WHERE m.run_seq = ?1 AND m.cell_id IN (SELECT id FROM cells WHERE subject = ?2) "
           "ORDER BY m.ord"};

int store_run_subject_cells(struct store_conn *c, int64_t seq, const char *subject,
                            store_cell_cb cb, void *cls)
{
	struct cell_rows cr = {cb, cls, NULL};
	struct store_stmt *s;
	int rc = rows_get(c, &sql_run_subject_cells, &s);

	if (rc)
		return rc;
	b_i64(s, 1, seq);
	b_text(s, 2, subject);
	return rows_each_row(s, cell_row, &cr);
}

/* ---- a run's values, its cells described once per book ---- */

/* The cells met so far, sorted by id. Cells are never changed once stored, so a description read
 * for one run holds for every other run that measured the cell. */
struct book_entry {
	int64_t id;
	struct aw_cell cell; /* its description: key, op, reader, subject, kernel, placement, cpu,
	                        contender_cpu, c, d */
};

struct store_cell_book {
	struct book_entry *e;
	size_t n, cap;
};

struct store_cell_book *store_cell_book_new(void)
{
	return calloc(1, sizeof(struct store_cell_book));
}

void store_cell_book_free(struct store_cell_book **bp)
{
	struct store_cell_book *b = *bp;

	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++)
		aw_cell_release(&b->e[i].cell);
	free(b->e);
	free(b);
	*bp = NULL;
}

/* The index in b of cell `id`, or of where it would go (*found false). */
static size_t book_find(const struct store_cell_book *b, int64_t id, bool *found)
{
	size_t lo = 0, hi = b->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->e[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < b->n && b->e[lo].id == id;
	return lo;
}

/* A row of sql_run_book (the id, then the description) into the book, unless already there. */
static int book_row(struct store_stmt *s, void *cls)
{
	struct store_cell_book *b = cls;
	int64_t id = c_i64(s, 0);
	struct aw_cell cell = {0};
	bool found;
	size_t at = book_find(b, id, &found);

	if (found)
		return 0;
	if (aw_array_reserve(&b->e, b->n, &b->cap, sizeof(*b->e), 256))
		return -ENOMEM;
	if (aw_set_str(&cell.key, c_text(s, 1)) || aw_set_str(&cell.op, c_text(s, 2)) ||
	    aw_set_str(&cell.reader, c_text(s, 3)) || aw_set_str(&cell.subject, c_text(s, 4)) ||
	    aw_set_str(&cell.kernel, c_text(s, 5)) || aw_set_str(&cell.placement, c_text(s, 6))) {
		aw_cell_release(&cell);
		return -ENOMEM;
	}
	cell.cpu = (int)c_opt(s, 7);
	cell.contender_cpu = (int)c_opt(s, 8);
	cell.c = c_opt(s, 9);
	cell.d = c_i64(s, 10);
	/* (the rows come by cell id: each is appended) */
	memmove(b->e + at + 1, b->e + at, (b->n - at) * sizeof(*b->e));
	b->e[at].id = id;
	b->e[at].cell = cell;
	b->n++;
	return 0;
}

static int value_row(struct store_stmt *s, void *cls)
{
	struct value_rows *rows = cls;
	struct value_row *v;

	if (aw_array_reserve(&rows->v, rows->n, &rows->cap, sizeof(*rows->v), 256))
		return -ENOMEM;
	v = &rows->v[rows->n];
	memset(v, 0, sizeof(*v));
	v->cell_id = c_i64(s, 0);
	v->ord = c_i64(s, 1);
	if (store_status_parse(c_text(s, 2), &v->status))
		return -EIO;
	v->p50 = c_real(s, 3);
	v->p99 = c_real(s, 4);
	v->ci_lo = c_real(s, 5);
	v->ci_hi = c_real(s, 6);
	if (aw_set_str(&v->reason, c_text(s, 7)))
		return -ENOMEM;
	rows->n++;
	return 0;
}

static int cmp_ord(const void *a, const void *b)
{
	const struct value_row *x = a, *y = b;

	if (x->ord != y->ord)
		return x->ord < y->ord ? -1 : 1;
	return x->cell_id < y->cell_id ? -1 : x->cell_id > y->cell_id;
}

/* The measurements in the primary key's order, no cells joined: SQLite's ORDER BY m.ord
 * sorted every row of every run through a temporary B-tree, which cost more than the reading. */
static const struct stmt_def sql_run_values = {
    .id = S_RUN_VALUES,
    .what = "read a run's values",
    .sql = "SELECT m.cell_id, m.ord, m.status, m.p50, m.p99, m.ci_lo, m.ci_hi, m.reason "
           "FROM measurements m WHERE m.run_seq = ?1"};

static const struct stmt_def sql_run_book = {
    .id = S_RUN_BOOK,
    .what = "describe a run's cells",
    .sql = "SELECT k.id, k.key, k.op, k.reader, k.subject, k.kernel, k.placement, k.cpu, "
           "k.contender_cpu, k.c, k.d FROM measurements m JOIN cells k ON k.id = m.cell_id "
           "WHERE m.run_seq = ?1"};

/* Describes in b every cell of run `seq` that it lacks, when one of rows' lacks it. */
static int book_fill(struct store_conn *c, struct store_cell_book *b, int64_t seq,
                     const struct value_rows *rows)
{
	struct store_stmt *s;
	bool found = true;
	int rc;

	for (size_t i = 0; i < rows->n && found; i++)
		book_find(b, rows->v[i].cell_id, &found);
	if (found)
		return 0;
	rc = rows_get(c, &sql_run_book, &s);
	if (rc)
		return rc;
	b_i64(s, 1, seq);
	return rows_each_row(s, book_row, b);
}

int store_run_values(struct store_conn *c, struct store_cell_book *b, int64_t seq, store_cell_cb cb,
                     void *cls)
{
	struct value_rows rows = {0};
	struct store_stmt *s;
	int rc = valcache_get(c->gen, seq, &rows);

	if (rc == 0) { /* not kept: read, sorted, then kept */
		rc = rows_get(c, &sql_run_values, &s);
		if (!rc) {
			b_i64(s, 1, seq);
			rc = rows_each_row(s, value_row, &rows);
		}
		if (!rc && rows.n)
			qsort(rows.v, rows.n, sizeof(*rows.v), cmp_ord);
		if (!rc && rows.n)
			valcache_put(c->gen, seq, &rows);
	} else if (rc > 0) {
		rc = 0;
	}
	if (!rc)
		rc = book_fill(c, b, seq, &rows);
	for (size_t i = 0; !rc && i < rows.n; i++) {
		const struct value_row *v = &rows.v[i];
		struct aw_cell cell;
		bool found;
		size_t at = book_find(b, v->cell_id, &found);

		if (!found) {
			rc = -EIO; /* a measurement of no cell: the foreign key forbids it */
			break;
		}
		cell = b->e[at].cell; /* its strings stay the book's */
		cell.status = v->status;
		cell.p50 = v->p50;
		cell.p99 = v->p99;
		cell.ci_lo = v->ci_lo;
		cell.ci_hi = v->ci_hi;
		cell.min = cell.p95 = cell.max = cell.mean = cell.stddev = cell.baseline_ns = NAN;
		cell.reason = v->reason;
		rc = cb(&cell, cls);
	}
	for (size_t i = 0; i < rows.n; i++)
		free(rows.v[i].reason);
	free(rows.v);
	return rc;
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

/* The stored reference series (column 18 of sql_run_get, packed, or column 15, the JSON text of a
 * run stored before schema 11; either kept) over r's cells, once they are in place. Returns 0,
 * or -ENOMEM/-EIO (a stored series that does not fit its cells). */
static int fill_reference(const struct packed *packed, const char *text, struct aw_result *r)
{
	struct aw_verr e;
	json_t *ref;
	int rc;

	if (packed->p) {
		rc = aw_refblob_to_result(r, packed->p, packed->len);
		return rc == -ENOMEM ? rc : rc ? -EIO : 0;
	}
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
           "r.confirmation_of, r.confirm, r.reference_bin" RUN_FROM " WHERE r.run_id = ?1"};

int store_get_run(struct store_conn *c, const char *run_id, struct aw_result **out)
{
	struct cell_rows cr = {NULL, NULL, NULL};
	struct aw_result *r = NULL;
	struct store_stmt *s;
	char *reference = NULL;
	struct packed packed = {NULL, 0};
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
		if (!rc)
			rc = copy_blob(s, 18, &packed);
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
		rc = fill_reference(&packed, reference, r);
	if (!rc) {
		*out = r;
		r = NULL;
	}
	rows_commit(c); /* ends the read */
	aw_result_free(&r);
	free(reference);
	free(packed.p);
	return rc;
}

/* ---- trends ---- */

/* The points of a series, newest first as the statement reads them, kept until they are
 * handed over oldest first: strings at offsets in one buffer (NO_TEXT: NULL). */
#define NO_TEXT SIZE_MAX

struct kept_point {
	int64_t seq, order_us;
	double value;
	size_t run_id, commit, started_at, matrix_hash, status;
};

struct series_rows {
	enum store_metric metric;
	struct kept_point *v;
	size_t n, cap;
	struct aw_buf text;
};

static size_t keep_text(struct aw_buf *b, const char *s, int *rc)
{
	size_t at = b->len;

	if (!s)
		return NO_TEXT;
	if (!*rc)
		*rc = aw_buf_append(b, s, strlen(s) + 1);
	return at;
}

static int series_row(struct store_stmt *s, void *cls)
{
	struct series_rows *sr = cls;
	struct kept_point *p;
	int rc = 0;

	if (aw_array_reserve(&sr->v, sr->n, &sr->cap, sizeof(*sr->v), 128))
		return -ENOMEM;
	p = &sr->v[sr->n++];
	p->seq = c_i64(s, 0);
	p->order_us = c_i64(s, 6);
	p->value = c_real(s, 7 + (int)sr->metric);
	p->run_id = keep_text(&sr->text, c_text(s, 1), &rc);
	p->commit = keep_text(&sr->text, c_text(s, 2), &rc);
	p->started_at = keep_text(&sr->text, c_text(s, 3), &rc);
	p->matrix_hash = keep_text(&sr->text, c_text(s, 4), &rc);
	p->status = keep_text(&sr->text, c_text(s, 5), &rc);
	return rc;
}

static const char *kept(const struct series_rows *sr, size_t at)
{
	return at == NO_TEXT ? NULL : sr->text.data + at;
}

/* The runs of the host's ref newest first along runs_history, each one's measurement of the
 * cell found by its primary key (run_seq, cell_id): the cell's rows of the window only, never a
 * sort. Every metric is read (the row is read whole anyway), so that one statement serves them
 * all; the columns after the seventh are in the order of enum store_metric. */
static const struct filtered_def sql_series = {
    .first = S_SERIES,
    .what = "read a series",
    .head = "SELECT r.seq, r.run_id, c.sha, r.started_at, r.matrix_hash, m.status, r.order_us, "
            "m.min, m.p50, m.p95, m.p99, m.max, m.mean, m.stddev, m.ci_lo, m.ci_hi, "
            "m.baseline_ns FROM runs r JOIN measurements m ON m.run_seq = r.seq "
            "LEFT JOIN commits c ON c.id = r.commit_id "
            "WHERE r.host_id = (SELECT id FROM hosts WHERE name = ?) AND r.ref = ? "
            "AND m.cell_id IN (SELECT id FROM cells WHERE key = ?)",
    .joiner = " AND ",
    .filters = {"r.project_id = (SELECT id FROM projects WHERE name = ?)"},
    .n = 1,
    .tail = " ORDER BY r.order_us DESC, r.seq DESC LIMIT ?"};

_Static_assert(STORE_METRIC_BASELINE == 9 && STORE_METRIC_COUNT == 10,
               "sql_series reads the metrics in the enum's order");

int store_series(struct store_conn *c, const struct store_series_query *q, store_point_cb cb,
                 void *cls)
{
	struct series_rows sr = {.metric = q->metric};
	struct store_stmt *s;
	int n = 0, rc;

	if ((unsigned)q->metric >= STORE_METRIC_COUNT)
		return -EINVAL;
	aw_buf_init(&sr.text, (size_t)64 << 20);
	rc = rows_get_filtered(c, &sql_series, q->project ? 1 : 0, &s);
	if (rc)
		goto out;
	b_text(s, ++n, q->host);
	b_text(s, ++n, q->ref);
	b_text(s, ++n, q->cell_key);
	if (q->project)
		b_text(s, ++n, q->project);
	b_i64(s, ++n, q->limit);
	rc = rows_each_row(s, series_row, &sr);
	for (size_t i = sr.n; !rc && i-- > 0;) { /* oldest first */
		const struct kept_point *k = &sr.v[i];
		struct store_point p = {
		    .seq = k->seq,
		    .run_id = kept(&sr, k->run_id),
		    .commit = kept(&sr, k->commit),
		    .started_at = kept(&sr, k->started_at),
		    .matrix_hash = kept(&sr, k->matrix_hash),
		    .status = kept(&sr, k->status),
		    .order_us = k->order_us,
		    .value = k->value,
		};

		rc = cb(&p, cls);
	}
out:
	free(sr.v);
	aw_buf_release(&sr.text);
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
