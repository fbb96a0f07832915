/* The store's interleaved A/B documents: added once per ab_id (idempotent, a conflict on
 * other content), read back whole, and listed newest first. */
#include "rows.h"

#include <errno.h>
#include <string.h>

#define AB_COLS                                                                            \
	"seq, ab_id, project, host, subject, base_commit, head_commit, ref, aa, verdict, " \
	"content_hash, received_at"

static const struct stmt_def sql_ab_find = {
    .id = S_AB_FIND,
    .what = "look up an A/B document",
    .sql = "SELECT seq, content_hash FROM ab_docs WHERE ab_id = ?1"};

static const struct stmt_def sql_ab_add = {
    .id = S_AB_ADD,
    .what = "add an A/B document",
    .sql = "INSERT INTO ab_docs (ab_id, project, host, subject, base_commit, head_commit, "
           "ref, aa, verdict, content_hash, received_at, judgment, doc) VALUES (?1, ?2, "
           "?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) RETURNING seq"};

int store_ab_put(struct store_conn *c, struct store_ab *ab)
{
	struct store_stmt *s;
	int rc = rows_begin(c, STORE_TX_WRITE);

	if (rc)
		return rc;
	rc = rows_get(c, &sql_ab_find, &s);
	if (rc)
		return rows_finish(c, rc);
	b_text(s, 1, ab->ab_id);
	rc = step(s);
	if (rc == STORE_ROW) {
		ab->seq = c_i64(s, 0);
		ab->outcome =
		    strcmp(c_text(s, 1), ab->content_hash) ? STORE_CONFLICT : STORE_DUPLICATE;
		reset(s);
		return rows_finish(c, 0);
	}
	reset(s);
	if (rc < 0)
		return rows_finish(c, rc);
	rc = rows_get(c, &sql_ab_add, &s);
	if (rc)
		return rows_finish(c, rc);
	b_text(s, 1, ab->ab_id);
	b_text(s, 2, ab->project);
	b_text(s, 3, ab->host);
	b_text(s, 4, ab->subject);
	b_text(s, 5, ab->base);
	b_text(s, 6, ab->head);
	b_text(s, 7, ab->ref);
	b_i64(s, 8, ab->aa ? 1 : 0);
	b_text(s, 9, ab->verdict);
	b_text(s, 10, ab->content_hash);
	b_text(s, 11, ab->received_at);
	b_text(s, 12, ab->judgment);
	b_text(s, 13, ab->doc);
	rc = rows_run_id(s, &ab->seq);
	ab->outcome = STORE_CREATED;
	return rows_finish(c, rc);
}

struct ab_rows {
	store_ab_cb cb;
	void *cls;
	bool found;
};

static int ab_row(struct store_stmt *s, void *cls)
{
	struct ab_rows *ar = cls;
	struct store_ab ab = {
	    .seq = c_i64(s, 0),
	    .ab_id = c_text(s, 1),
	    .project = c_text(s, 2),
	    .host = c_text(s, 3),
	    .subject = c_text(s, 4),
	    .base = c_text(s, 5),
	    .head = c_text(s, 6),
	    .ref = c_text(s, 7),
	    .aa = c_i64(s, 8) != 0,
	    .verdict = c_text(s, 9),
	    .received_at = c_text(s, 11),
	    .judgment = c_text(s, 12),
	    .doc = c_text(s, 13),
	};

	snprintf(ab.content_hash, sizeof(ab.content_hash), "%s", c_text(s, 10));
	ar->found = true;
	return ar->cb(&ab, ar->cls);
}

static const struct stmt_def sql_ab_get = {.id = S_AB_GET,
                                           .what = "read an A/B document",
                                           .sql = "SELECT " AB_COLS ", judgment, doc FROM ab_docs "
                                                  "WHERE ab_id = ?1"};

int store_ab_get(struct store_conn *c, const char *ab_id, store_ab_cb cb, void *cls)
{
	struct ab_rows ar = {cb, cls, false};
	struct store_stmt *s;
	int rc = rows_get(c, &sql_ab_get, &s);

	if (rc)
		return rc;
	b_text(s, 1, ab_id);
	rc = rows_each_row(s, ab_row, &ar);
	return !rc && !ar.found ? -ENOENT : rc;
}

/* newest first; the document itself is not read for a list. Filters (project, head, host),
 * each combination its own statement (ab_docs_head, ab_docs_head_only, ab_docs_host,
 * ab_docs_project). */
static const struct filtered_def sql_ab_list = {
    .first = S_AB_LIST,
    .what = "list A/B documents",
    .head = "SELECT " AB_COLS ", judgment, NULL FROM ab_docs",
    .joiner = " WHERE ",
    .filters = {"project = ?", "head_commit = ?", "host = ?"},
    .n = 3,
    .tail = " ORDER BY seq DESC LIMIT ?"};

int store_ab_list(struct store_conn *c, const char *project, const char *head, const char *host,
                  unsigned limit, store_ab_cb cb, void *cls)
{
	const char *given[3] = {project, head, host};
	struct ab_rows ar = {cb, cls, false};
	struct store_stmt *s;
	unsigned mask = 0;
	int n = 0, rc;

	if (limit < 1 || limit > 10000)
		return -EINVAL;
	for (int i = 0; i < 3; i++)
		mask |= given[i] ? 1u << i : 0;
	rc = rows_get_filtered(c, &sql_ab_list, mask, &s);
	if (rc)
		return rc;
	for (int i = 0; i < 3; i++)
		if (given[i])
			b_text(s, ++n, given[i]);
	b_i64(s, ++n, limit);
	return rows_each_row(s, ab_row, &ar);
}
