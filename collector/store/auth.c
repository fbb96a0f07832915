/* The store's tokens: created with their role and host, found by hash, listed, revoked, and
 * touched when used. Only hashes are stored. */
#include "rows.h"

#include <errno.h>

#define TOKEN_COLS "id, role, host, hash, created_at, revoked_at, last_used_at"

static const struct stmt_def sql_token_add = {
    .id = S_TOKEN_ADD,
    .what = "create a token",
    .sql = "INSERT INTO tokens (role, host, hash, created_at) VALUES (?1, ?2, ?3, ?4) "
           "RETURNING id"};

int store_token_create(struct store_conn *c, enum store_role role, const char *host,
                       const char *hash, int64_t *id)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us;
	int rc = rows_get(c, &sql_token_add, &s);

	if (rc)
		return rc;
	store_now(now, &us);
	b_text(s, 1, store_role_name(role));
	b_text(s, 2, host);
	b_text(s, 3, hash);
	b_text(s, 4, now);
	return rows_run_id(s, id);
}

struct token_rows {
	store_token_cb cb;
	void *cls;
	bool found;
};

static int token_row(struct store_stmt *s, void *cls)
{
	struct token_rows *tr = cls;
	struct store_token t = {
	    .id = c_i64(s, 0),
	    .host = c_text(s, 2),
	    .hash = c_text(s, 3),
	    .created_at = c_text(s, 4),
	    .revoked_at = c_text(s, 5),
	    .last_used_at = c_text(s, 6),
	};

	if (store_role_parse(c_text(s, 1), &t.role))
		return -EIO;
	tr->found = true;
	return tr->cb(&t, tr->cls);
}

static const struct stmt_def sql_token_find = {.id = S_TOKEN_FIND,
                                               .what = "look up a token",
                                               .sql = "SELECT " TOKEN_COLS
                                                      " FROM tokens WHERE hash = ?1"};

int store_token_find(struct store_conn *c, const char *hash, store_token_cb cb, void *cls)
{
	struct token_rows tr = {cb, cls, false};
	struct store_stmt *s;
	int rc = rows_get(c, &sql_token_find, &s);

	if (rc)
		return rc;
	b_text(s, 1, hash);
	rc = rows_each_row(s, token_row, &tr);
	return rc ? rc : tr.found ? 0 : -ENOENT;
}

static const struct stmt_def sql_token_list = {.id = S_TOKEN_LIST,
                                               .what = "list tokens",
                                               .sql =
                                                   "SELECT " TOKEN_COLS " FROM tokens ORDER BY id"};

int store_token_list(struct store_conn *c, store_token_cb cb, void *cls)
{
	struct token_rows tr = {cb, cls, false};
	struct store_stmt *s;
	int rc = rows_get(c, &sql_token_list, &s);

	return rc ? rc : rows_each_row(s, token_row, &tr);
}

static const struct stmt_def sql_token_revoke = {
    .id = S_TOKEN_REVOKE,
    .what = "revoke a token",
    .sql = "UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1"};

int store_token_revoke(struct store_conn *c, int64_t id)
{
	char now[AW_TIME_LEN];
	struct store_stmt *s;
	int64_t us, changed = 0;
	int rc = rows_get(c, &sql_token_revoke, &s);

	if (rc)
		return rc;
	store_now(now, &us);
	b_i64(s, 1, id);
	b_text(s, 2, now);
	rc = rows_run_done(s, &changed);
	return rc ? rc : changed ? 0 : -ENOENT;
}

static const struct stmt_def sql_token_touch = {
    .id = S_TOKEN_TOUCH,
    .what = "update a token",
    .sql = "UPDATE tokens SET last_used_at = ?2 WHERE id = ?1"};

int store_token_touch(struct store_conn *c, int64_t id, const char *when)
{
	struct store_stmt *s;
	int rc = rows_get(c, &sql_token_touch, &s);

	if (rc)
		return rc;
	b_i64(s, 1, id);
	b_text(s, 2, when);
	return rows_run_done(s, NULL);
}
