/* The store's ingest: a batch of result documents in one write transaction, each run with
 * its project, host, fingerprint and commit, its cells (new ones added with multi-row
 * statements, known ones from the connection's cache) and its measurements, and the "run" task
 * of each created run. */
#include "rows.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aw/log.h"
#include "aw/refblob.h"
#include "aw/strmap.h"

#define CELL_NCOLS 11 /* the columns of a row of sql_cells_add */
#define MEAS_NCOLS 18 /* of sql_meas_add */

/* A cell the connection has no id for yet. */
struct new_cell {
	char *sig;
	size_t cell; /* index in the document */
	int64_t id;  /* AW_NONE until stored */
};

static int new_cell_cmp(const void *a, const void *b)
{
	const struct new_cell *x = a, *y = b;
	int d = strcmp(x->sig, y->sig);

	return d ? d : (x->cell > y->cell) - (x->cell < y->cell);
}

struct new_cells {
	struct new_cell *v;
	size_t n;
};

/* One row that RETURNING gave back: its id goes to every entry of that signature. */
static int returned_cell(struct store_stmt *s, void *cls)
{
	struct new_cells *nc = cls;
	const char *sig = c_text(s, 0);
	size_t lo = 0, hi = nc->n;

	while (lo < hi) { /* the first entry whose sig is not below `sig` */
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(nc->v[mid].sig, sig) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < nc->n && !strcmp(nc->v[lo].sig, sig); lo++)
		nc->v[lo].id = c_i64(s, 1);
	return 0;
}

/* New cells are sorted, so that concurrent transactions lock them in the same order; the
 * update of a cell stored meanwhile is what makes RETURNING give its id too. Each of the
 * N_CHUNKS statements of either kind is this text with its number of rows. */
static const struct stmt_def sql_cells_add = {
    .id = S_CELLS_ADD,
    .what = "add cells",
    .sql = "INSERT INTO cells (sig, key, op, reader, subject, kernel, placement, cpu, "
           "contender_cpu, c, d) VALUES ",
    .ncols = CELL_NCOLS,
    .tail = " ON CONFLICT (sig) DO UPDATE SET sig = excluded.sig RETURNING sig, id"};

/* Stores the next chunk_rows[chunk] distinct cells of nc->v, from nc->v[*next] on, with the
 * multi-row statement of that many rows; advances *next past them. */
static int add_cells(struct store_conn *c, const struct aw_result *r, struct new_cells *nc,
                     size_t *next, int chunk)
{
	struct store_stmt *s;
	int rc = rows_get_chunk(c, &sql_cells_add, chunk, &s);
	int rows = chunk_rows[chunk];

	if (rc)
		return rc;
	for (int row = 0; row < rows; row++) {
		const struct new_cell *m = &nc->v[*next];
		const struct aw_cell *cell = &r->cells[m->cell];
		int p = row * CELL_NCOLS;

		b_text(s, p + 1, m->sig);
		b_text(s, p + 2, cell->key);
		b_text(s, p + 3, cell->op);
		b_text(s, p + 4, cell->reader);
		b_text(s, p + 5, cell->subject);
		b_text(s, p + 6, cell->kernel);
		b_text(s, p + 7, cell->placement);
		b_opt(s, p + 8, cell->cpu);
		b_opt(s, p + 9, cell->contender_cpu);
		b_opt(s, p + 10, cell->c);
		b_i64(s, p + 11, cell->d);
		/* the next distinct signature */
		for ((*next)++; *next < nc->n && !strcmp(nc->v[*next].sig, m->sig); (*next)++)
			;
	}
	return rows_each_row(s, returned_cell, nc);
}

/* The id of every cell of `r` into ids[]: from the connection's cache, else stored (or found)
 * with a few multi-row statements. */
static int cell_ids(struct store_conn *c, const struct aw_result *r, int64_t *ids)
{
	struct new_cells nc = {NULL, 0};
	char sig[STORE_SIG_MAX];
	size_t distinct = 0, next = 0;
	int rc = 0;

	for (size_t i = 0; i < r->n_cells; i++) {
		rc = store_cell_sig(&r->cells[i], sig, sizeof(sig));
		if (rc)
			goto out;
		if (!aw_strmap_get(c->cells, sig, &ids[i]))
			continue;
		if (!nc.v) {
			nc.v = calloc(r->n_cells - i, sizeof(*nc.v));
			if (!nc.v) {
				rc = -ENOMEM;
				goto out;
			}
		}
		nc.v[nc.n] = (struct new_cell){strdup(sig), i, AW_NONE};
		if (!nc.v[nc.n++].sig) {
			rc = -ENOMEM;
			goto out;
		}
	}
	if (!nc.n)
		goto out;
	qsort(nc.v, nc.n, sizeof(*nc.v), new_cell_cmp);
	for (size_t k = 0; k < nc.n; k++)
		distinct += !k || strcmp(nc.v[k].sig, nc.v[k - 1].sig);
	for (int k = 0; !rc && k < N_CHUNKS; k++)
		while (!rc && distinct >= (size_t)chunk_rows[k]) {
			rc = add_cells(c, r, &nc, &next, k);
			distinct -= (size_t)chunk_rows[k];
		}
	for (size_t k = 0; !rc && k < nc.n; k++) {
		if (nc.v[k].id == AW_NONE) {
			store_count_error();
			aw_error("store: cell '%s' vanished while storing it",
			         r->cells[nc.v[k].cell].key);
			rc = -EIO;
			break;
		}
		ids[nc.v[k].cell] = nc.v[k].id;
		/* A full cache starts over rather than grow: the matrix has far fewer cells. */
		if (aw_strmap_put(c->cells, nc.v[k].sig, nc.v[k].id) == -ENOSPC) {
			aw_strmap_clear(c->cells);
			aw_strmap_put(c->cells, nc.v[k].sig, nc.v[k].id);
		}
	}
out:
	for (size_t k = 0; k < nc.n; k++)
		free(nc.v[k].sig);
	free(nc.v);
	return rc;
}

static const struct stmt_def sql_meas_add = {
    .id = S_MEAS_ADD,
    .what = "add measurements",
    .sql = "INSERT INTO measurements (run_seq, cell_id, ord, status, n, batch, min, p50, "
           "p95, p99, max, mean, stddev, ci_lo, ci_hi, baseline_ns, below_resolution, "
           "reason) VALUES ",
    .ncols = MEAS_NCOLS,
    .tail = ""};

/* Measurements [first, first + chunk_rows[chunk]) of `r`. */
static int add_measurements(struct store_conn *c, const struct aw_result *r, int64_t seq,
                            const int64_t *ids, size_t first, int chunk)
{
	struct store_stmt *s;
	int rc = rows_get_chunk(c, &sql_meas_add, chunk, &s);
	int rows = chunk_rows[chunk];

	if (rc)
		return rc;
	for (int row = 0; row < rows; row++) {
		size_t i = first + (size_t)row;
		const struct aw_cell *cell = &r->cells[i];
		int p = row * MEAS_NCOLS;

		b_i64(s, p + 1, seq);
		b_i64(s, p + 2, ids[i]);
		b_i64(s, p + 3, (int64_t)i);
		b_text(s, p + 4, aw_cell_status_name(cell->status));
		b_i64(s, p + 5, (int64_t)cell->n);
		b_i64(s, p + 6, (int64_t)cell->batch);
		b_real(s, p + 7, cell->min);
		b_real(s, p + 8, cell->p50);
		b_real(s, p + 9, cell->p95);
		b_real(s, p + 10, cell->p99);
		b_real(s, p + 11, cell->max);
		b_real(s, p + 12, cell->mean);
		b_real(s, p + 13, cell->stddev);
		b_real(s, p + 14, cell->ci_lo);
		b_real(s, p + 15, cell->ci_hi);
		b_real(s, p + 16, cell->baseline_ns);
		b_i64(s, p + 17, cell->below_resolution);
		b_text(s, p + 18, cell->reason);
	}
	return rows_run_later(s);
}

static int put_cells(struct store_conn *c, const struct aw_result *r, int64_t seq)
{
	int64_t *ids = calloc(r->n_cells ? r->n_cells : 1, sizeof(*ids));
	size_t done = 0;
	int rc;

	if (!ids)
		return -ENOMEM;
	rc = cell_ids(c, r, ids);
	for (int k = 0; !rc && k < N_CHUNKS; k++)
		while (!rc && r->n_cells - done >= (size_t)chunk_rows[k]) {
			rc = add_measurements(c, r, seq, ids, done, k);
			done += (size_t)chunk_rows[k];
		}
	free(ids);
	return rc;
}

static const struct stmt_def sql_project_find = {.id = S_PROJECT_FIND,
                                                 .what = "look up a project",
                                                 .sql = "SELECT id FROM projects WHERE name = ?1"};

static const struct stmt_def sql_project_add = {
    .id = S_PROJECT_ADD,
    .what = "add a project",
    .sql = "INSERT INTO projects (name, created_at) VALUES (?1, ?2) "
           "ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING id"};

static const struct stmt_def sql_run_find = {
    .id = S_RUN_FIND,
    .what = "look up a run",
    .sql = "SELECT seq, content_hash FROM runs WHERE run_id = ?1"};

static const struct stmt_def sql_host_upsert = {
    .id = S_HOST_UPSERT,
    .what = "store a host",
    .sql = "INSERT INTO hosts (name, arch, cpu_model, platform_hash, first_seen, last_seen) "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (name) DO UPDATE SET "
           "arch = excluded.arch, cpu_model = excluded.cpu_model, "
           "platform_hash = excluded.platform_hash, last_seen = excluded.last_seen RETURNING id"};

static const struct stmt_def sql_fp_upsert = {
    .id = S_FP_UPSERT,
    .what = "store a fingerprint",
    .sql = "INSERT INTO fingerprints (host_id, hash, platform_hash, doc, first_seen, last_seen) "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (host_id, hash) DO UPDATE SET "
           "last_seen = excluded.last_seen RETURNING id"};

static const struct stmt_def sql_host_set_fp = {
    .id = S_HOST_SET_FP,
    .what = "update a host",
    .sql = "UPDATE hosts SET fingerprint_id = ?2 WHERE id = ?1"};

/* order_us: the commit's own time, else the earliest start of its runs; prev_order_us what it
 * was before this statement (every right-hand side of SET reads the row as it was), so that
 * the commit's runs are moved only when it moved */
static const struct stmt_def sql_commit_upsert = {
    .id = S_COMMIT_UPSERT,
    .what = "store a commit",
    .sql = "INSERT INTO commits (project_id, sha, commit_time, commit_time_us, first_started_us, "
           "order_us, prev_order_us) VALUES (?1, ?2, ?3, CAST(?4 AS BIGINT), "
           "CAST(?5 AS BIGINT), COALESCE(CAST(?4 AS BIGINT), CAST(?5 AS BIGINT)), "
           "COALESCE(CAST(?4 AS BIGINT), CAST(?5 AS BIGINT))) "
           "ON CONFLICT (project_id, sha) DO UPDATE SET "
           "commit_time = COALESCE(commits.commit_time, excluded.commit_time), "
           "commit_time_us = COALESCE(commits.commit_time_us, excluded.commit_time_us), "
           "first_started_us = CASE WHEN excluded.first_started_us < commits.first_started_us "
           "THEN excluded.first_started_us ELSE commits.first_started_us END, "
           "prev_order_us = commits.order_us, "
           "order_us = COALESCE(commits.commit_time_us, excluded.commit_time_us, "
           "CASE WHEN excluded.first_started_us < commits.first_started_us "
           "THEN excluded.first_started_us ELSE commits.first_started_us END) "
           "RETURNING id, order_us, prev_order_us"};

/* A commit's order moved (a run brought its commit_time, or an earlier start): its runs
 * stored before follow it, in the transaction that moved it. */
static const struct stmt_def sql_commit_reorder = {
    .id = S_COMMIT_REORDER,
    .what = "reorder a commit's runs",
    .sql = "UPDATE runs SET order_us = ?2 WHERE commit_id = ?1 AND order_us <> ?2"};

static const struct stmt_def sql_run_add = {
    .id = S_RUN_ADD,
    .what = "add a run",
    .sql = "INSERT INTO runs (run_id, project_id, host_id, fingerprint_id, commit_id, ref, "
           "commit_time, trigger, started_at, started_us, finished_at, matrix_name, "
           "matrix_version, matrix_hash, matrix_profile, meta, n_cells, content_hash, "
           "received_at, reference_bin, confirmation_of, confirm, order_us) VALUES (?1, ?2, ?3, "
           "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
           "?21, ?22, ?23) RETURNING seq"};

static int put_one(struct store_conn *c, struct store_put *it)
{
	const struct aw_result *r = it->result;
	const char *host = aw_host_name(r->host);
	const char *arch = aw_host_field(r->host, "arch");
	const char *model = aw_host_field(r->host, "cpu_model");
	const char *platform = aw_host_field(r->host, "platform_hash");
	int64_t project, host_id, fp, commit_id = AW_NONE, started_us = 0, ct_us = AW_NONE;
	int64_t order_us;
	bool moved = false;
	struct store_stmt *s;
	char *meta = NULL;
	uint8_t *reference = NULL;
	size_t reference_len = 0;
	int rc;

	rc = rows_get(c, &sql_run_find, &s);
	if (rc)
		return rc;
	b_text(s, 1, r->run_id);
	rc = step(s);
	if (rc == STORE_ROW) {
		it->seq = c_i64(s, 0);
		it->outcome =
		    strcmp(c_text(s, 1), it->content_hash) ? STORE_CONFLICT : STORE_DUPLICATE;
		reset(s);
		return 0;
	}
	reset(s);
	if (rc < 0)
		return rc;

	rc = rows_get(c, &sql_project_find, &s);
	if (rc)
		return rc;
	b_text(s, 1, r->project);
	rc = rows_run_id(s, &project);
	if (rc == -ENOENT) {
		rc = rows_get(c, &sql_project_add, &s);
		if (rc)
			return rc;
		b_text(s, 1, r->project);
		b_text(s, 2, it->received_at);
		rc = rows_run_id(s, &project);
	}
	if (rc)
		return rc;

	rc = rows_get(c, &sql_host_upsert, &s);
	if (rc)
		return rc;
	b_text(s, 1, host);
	b_text(s, 2, arch);
	b_text(s, 3, model);
	b_text(s, 4, platform);
	b_text(s, 5, it->received_at);
	rc = rows_run_id(s, &host_id);
	if (rc)
		return rc;

	rc = rows_get(c, &sql_fp_upsert, &s);
	if (rc)
		return rc;
	b_i64(s, 1, host_id);
	b_text(s, 2, it->host_hash);
	b_text(s, 3, platform);
	b_text(s, 4, it->host_json);
	b_text(s, 5, it->received_at);
	rc = rows_run_id(s, &fp);
	if (rc)
		return rc;
	rc = rows_get(c, &sql_host_set_fp, &s);
	if (rc)
		return rc;
	b_i64(s, 1, host_id);
	b_i64(s, 2, fp);
	rc = rows_run_later(s);
	if (rc)
		return rc;

	aw_time_parse(r->started_at, &started_us);
	if (r->commit_time)
		aw_time_parse(r->commit_time, &ct_us);
	order_us = started_us; /* a run without a commit is placed by its own start */
	if (r->commit) {
		rc = rows_get(c, &sql_commit_upsert, &s);
		if (rc)
			return rc;
		b_i64(s, 1, project);
		b_text(s, 2, r->commit);
		b_text(s, 3, r->commit_time);
		b_opt(s, 4, ct_us);
		b_i64(s, 5, started_us);
		rc = step(s);
		if (rc == STORE_ROW) {
			commit_id = c_i64(s, 0);
			order_us = c_i64(s, 1);
			moved = c_i64(s, 2) != order_us;
			/* finish, so that RETURNING completes */
			while ((rc = step(s)) == STORE_ROW)
				;
		} else if (rc == STORE_DONE) {
			rc = -EIO; /* RETURNING always has a row */
		}
		reset(s);
		if (rc)
			return rc;
		rc = moved ? rows_get(c, &sql_commit_reorder, &s) : 0;
		if (rc)
			return rc;
		if (moved) {
			b_i64(s, 1, commit_id);
			b_i64(s, 2, order_us);
			rc = rows_run_later(s);
			if (rc)
				return rc;
		}
	}

	if (r->meta) {
		meta = json_dumps(r->meta, JSON_COMPACT | JSON_SORT_KEYS);
		if (!meta)
			return -ENOMEM;
	}
	/* the reference series packed (aw/refblob.h); rebuilt over the cells on read */
	if (aw_refblob_pack(r, &reference, &reference_len)) {
		free(meta);
		return -ENOMEM;
	}
	rc = rows_get(c, &sql_run_add, &s);
	if (rc) {
		free(meta);
		free(reference);
		return rc;
	}
	b_text(s, 1, r->run_id);
	b_i64(s, 2, project);
	b_i64(s, 3, host_id);
	b_i64(s, 4, fp);
	b_opt(s, 5, commit_id);
	b_text(s, 6, r->ref);
	b_text(s, 7, r->commit_time);
	b_text(s, 8, aw_trigger_name(r->trigger));
	b_text(s, 9, r->started_at);
	b_i64(s, 10, started_us);
	b_text(s, 11, r->finished_at);
	b_text(s, 12, r->matrix_name);
	b_i64(s, 13, r->matrix_version);
	b_text(s, 14, r->matrix_hash);
	b_text(s, 15, r->matrix_profile);
	b_text(s, 16, meta);
	b_i64(s, 17, (int64_t)r->n_cells);
	b_text(s, 18, it->content_hash);
	b_text(s, 19, it->received_at);
	b_blob(s, 20, reference, reference_len);
	b_text(s, 21, r->confirmation_of);
	b_opt(s, 22, r->confirm > 0 ? r->confirm : AW_NONE);
	b_i64(s, 23, order_us);
	rc = rows_run_id(s, &it->seq);
	free(meta);
	free(reference);
	if (rc)
		return rc;
	rc = put_cells(c, r, it->seq);
	if (rc)
		return rc;
	it->outcome = STORE_CREATED;
	return 0;
}

static const char *put_host(const struct store_put *p)
{
	return aw_host_name(p->result->host);
}

static int str_cmp(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

/* Orders created runs by their task's key (project, commit, host, ref). */
static int put_key_cmp(const void *a, const void *b)
{
	const struct store_put *x = *(const struct store_put *const *)a;
	const struct store_put *y = *(const struct store_put *const *)b;
	int d = strcmp(x->result->project, y->result->project);

	if (!d)
		d = str_cmp(x->result->commit, y->result->commit);
	if (!d)
		d = str_cmp(put_host(x), put_host(y));
	return d ? d : strcmp(x->result->ref, y->result->ref);
}

/* The "run" task of each created run, in key order (so that concurrent transactions update
 * shared task rows in the same order) and each key once. */
static int enqueue_created(struct store_conn *c, struct store_put *items, size_t n)
{
	struct store_put **created = calloc(n ? n : 1, sizeof(*created));
	char now[AW_TIME_LEN];
	size_t k = 0;
	int64_t us;
	int rc = 0;

	if (!created)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (items[i].outcome == STORE_CREATED)
			created[k++] = &items[i];
	qsort(created, k, sizeof(*created), put_key_cmp);
	store_now(now, &us);
	for (size_t i = 0; !rc && i < k; i++) {
		const struct aw_result *r = created[i]->result;

		if (i && !put_key_cmp(&created[i - 1], &created[i]))
			continue;
		rc = rows_task_enqueue(c, "run", r->project, r->commit, put_host(created[i]),
		                       r->ref, now);
	}
	free(created);
	return rc;
}

int store_put_runs(struct store_conn *c, struct store_put *items, size_t n)
{
	int rc = rows_begin(c, STORE_TX_WRITE);

	if (rc)
		return rc;
	for (size_t i = 0; !rc && i < n; i++)
		rc = put_one(c, &items[i]);
	if (!rc)
		rc = enqueue_created(c, items, n);
	return rows_finish(c, rc);
}
