/* The PostgreSQL driver of the store (several stateless collectors on one database): libpq,
 * statements prepared server-side once per connection (named, re-prepared after a reconnection),
 * parameters rewritten from "?N" to "$N" and sent as text (blobs as binary), its errors mapped
 * to the store's (its migrations are in schema.c). The only file of the collector that includes
 * <libpq-fe.h>. */
#include "driver.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/buf.h"
#include "aw/log.h"
#include "aw/util.h"

/* pg_advisory_lock key that serialises migrations across collectors ("atomwatc"). */
#define MIGRATION_LOCK "6174776174636800"

/* Most bytes of formatted numbers one statement's parameters hold. */
#define NUM_LIMIT ((size_t)64 << 20)

/* A query of a pipelined transaction whose result is not read yet. */
struct pending {
	const char *what;
	struct pg_stmt *parse; /* the statement it prepares, for a Parse */
};

struct pg_conn {
	struct store_conn base;
	PGconn *pg;
	unsigned gen;       /* bumped at each reconnection: prepared statements are gone */
	unsigned next_name; /* of the next named statement */
	bool in_tx;
	/* A write transaction runs in pipeline mode: statements whose outcome is not needed at
	 * once (send()) go out without waiting, and their results are read at the next
	 * statement that returns something, or at the commit. */
	bool piped;
	struct pending *pend;
	size_t n_pend, cap_pend;
};

struct pg_stmt {
	struct store_stmt base;
	const char *what;
	char *sql; /* with $N parameters */
	char name[16];
	bool cached;
	unsigned prepared_gen; /* the connection's gen when it was prepared, 0: never */
	int n;                 /* parameters */
	const char **values;
	int *lengths, *formats;
	long *num_at; /* a number's offset in `num`, or -1 */
	struct aw_buf num;
	PGresult *res;       /* once run */
	int row;             /* the current row of res */
	unsigned char *blob; /* the last bytea read, decoded */
};

static struct pg_conn *pgc(struct store_conn *c)
{
	return (struct pg_conn *)c;
}

static struct pg_stmt *pgs(struct store_stmt *s)
{
	return (struct pg_stmt *)s;
}

static int first_line(const char *m)
{
	return (int)strcspn(m, "\n");
}

/* Maps a failed result to an errno, logging what is not a routine race. */
static int pg_fail(struct pg_conn *c, PGresult *res, const char *what)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = PQerrorMessage(c->pg);

	if (res && PQresultErrorMessage(res)[0])
		msg = PQresultErrorMessage(res);
	/* deadlock, serialization failure, unique race: nothing was changed, retry */
	if (state &&
	    (!strcmp(state, "40P01") || !strcmp(state, "40001") || !strcmp(state, "23505"))) {
		aw_debug("postgres: cannot %s: %.*s", what, first_line(msg), msg);
		return -EAGAIN;
	}
	store_count_error();
	aw_error("postgres: cannot %s: %.*s", what, first_line(msg), msg);
	if (PQstatus(c->pg) != CONNECTION_OK || (state && !strncmp(state, "08", 2)))
		return -EBUSY;
	/* 53100 disk_full, and 53000 (insufficient_resources) that the server may raise for a
	 * file it cannot extend */
	if (state && (!strcmp(state, "53100") || !strcmp(state, "53000"))) {
		store_count_disk_full();
		return -ENOSPC;
	}
	return -EIO;
}

/* Reconnects a connection whose link broke (the server restarted, a proxy dropped it); only
 * between transactions, since one that was open is gone with the link. */
static int ensure_link(struct pg_conn *c)
{
	if (PQstatus(c->pg) == CONNECTION_OK)
		return 0;
	if (c->in_tx) {
		aw_warn("postgres: the link broke during a transaction");
		return -EBUSY;
	}
	PQreset(c->pg);
	c->gen++;
	c->piped = false;
	c->n_pend = 0;
	if (PQstatus(c->pg) != CONNECTION_OK) {
		store_count_error();
		aw_error("postgres: cannot reconnect: %.*s", first_line(PQerrorMessage(c->pg)),
		         PQerrorMessage(c->pg));
		return -EBUSY;
	}
	return 0;
}

/* Runs a command without parameters or rows (BEGIN, COMMIT...). */
static int command(struct pg_conn *c, const char *sql, const char *what)
{
	PGresult *res = PQexec(c->pg, sql);
	int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : pg_fail(c, res, what);

	PQclear(res);
	return rc;
}

/* ---- pipelined transactions ---- */

/* The link broke while a pipeline was being sent or read. */
static int pipe_broken(struct pg_conn *c, const char *what)
{
	store_count_error();
	aw_error("postgres: cannot %s: %.*s", what, first_line(PQerrorMessage(c->pg)),
	         PQerrorMessage(c->pg));
	return -EBUSY;
}

static int add_pending(struct pg_conn *c, const char *what, struct pg_stmt *parse)
{
	if (aw_array_reserve(&c->pend, c->n_pend, &c->cap_pend, sizeof(*c->pend), 16))
		return -ENOMEM;
	c->pend[c->n_pend++] = (struct pending){what, parse};
	return 0;
}

/* The result of one query of the pipeline: *rc gets its failure unless it holds one already
 * (later queries of a failed pipeline are aborted, not failed). Returns the result, or NULL when
 * the link broke. */
static PGresult *next_result(struct pg_conn *c, const char *what, int *rc)
{
	PGresult *res = PQgetResult(c->pg), *extra;

	if (!res) {
		if (!*rc)
			*rc = pipe_broken(c, what);
		return NULL;
	}
	if (PQresultStatus(res) == PGRES_FATAL_ERROR && !*rc)
		*rc = pg_fail(c, res, what);
	while ((extra = PQgetResult(c->pg))) /* the NULL that ends each query's results */
		PQclear(extra);
	return res;
}

/* Marks a sync point and reads every pending result up to it, then *own's (the result of the
 * query just sent, when own is not NULL), then the sync. Returns 0 or the first failure
 * (logged); *own is set either way (NULL if there is none). */
static int drain(struct pg_conn *c, PGresult **own, const char *own_what)
{
	PGresult *res;
	int rc = 0;

	if (own)
		*own = NULL;
	if (!PQpipelineSync(c->pg)) {
		c->n_pend = 0;
		return pipe_broken(c, "send a sync point");
	}
	for (size_t i = 0; i < c->n_pend; i++) {
		res = next_result(c, c->pend[i].what, &rc);
		if (!res)
			break;
		if (PQresultStatus(res) != PGRES_COMMAND_OK &&
		    PQresultStatus(res) != PGRES_TUPLES_OK && c->pend[i].parse)
			c->pend[i].parse->prepared_gen = 0; /* not prepared after all */
		PQclear(res);
	}
	c->n_pend = 0;
	if (own && PQstatus(c->pg) == CONNECTION_OK) {
		*own = next_result(c, own_what, &rc);
		if (*own && PQresultStatus(*own) == PGRES_PIPELINE_ABORTED && !rc) {
			/* an earlier failure aborts it, and that one was reported */
			store_count_error();
			aw_error("postgres: cannot %s: the pipeline was aborted", own_what);
			rc = -EIO;
		}
	}
	res = PQstatus(c->pg) == CONNECTION_OK ? PQgetResult(c->pg) : NULL;
	if (!res || PQresultStatus(res) != PGRES_PIPELINE_SYNC) {
		if (!rc)
			rc = pipe_broken(c, "read a sync point");
	}
	PQclear(res);
	return rc;
}

/* Leaves pipeline mode, reading what is pending first. Returns 0 or its first failure. */
static int unpipe(struct pg_conn *c)
{
	int rc = 0;

	if (!c->piped)
		return 0;
	if (PQstatus(c->pg) != CONNECTION_OK) { /* failed already, and said so */
		c->piped = false;
		c->n_pend = 0;
		return -EBUSY;
	}
	if (c->n_pend)
		rc = drain(c, NULL, NULL);
	if (PQstatus(c->pg) == CONNECTION_OK && !PQexitPipelineMode(c->pg) && !rc)
		rc = pipe_broken(c, "leave pipeline mode");
	c->piped = false;
	return rc;
}

/* ---- connection ---- */

static void notice_ignore(void *arg, const char *message)
{
	(void)arg;
	aw_debug("postgres: %.*s", first_line(message), message);
}

static void pg_disconnect(struct store_conn *base)
{
	struct pg_conn *c = pgc(base);

	PQfinish(c->pg);
	free(c->pend);
	free(c);
}

static bool pg_broken(struct store_conn *base)
{
	return PQstatus(pgc(base)->pg) != CONNECTION_OK;
}

static int pg_connect(const char *uri, const struct store_options *opt, struct store_conn **out,
                      char **err)
{
	struct pg_conn *c = calloc(1, sizeof(*c));
	PGresult *res;
	int rc;

	(void)opt;
	*out = NULL;
	if (!c)
		return aw_errorf(err, -ENOMEM, "out of memory");
	c->base.drv = &store_pg_driver;
	c->gen = 1;
	c->pg = PQconnectdb(uri);
	if (!c->pg) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto fail;
	}
	if (PQstatus(c->pg) != CONNECTION_OK) {
		const char *m = PQerrorMessage(c->pg);

		rc = aw_errorf(err, -EBUSY, "cannot connect to postgres: %.*s", first_line(m), m);
		goto fail;
	}
	PQsetNoticeProcessor(c->pg, notice_ignore, NULL);
	if (PQsetClientEncoding(c->pg, "UTF8")) {
		rc = aw_errorf(err, -EIO, "cannot set the client encoding to UTF8");
		goto fail;
	}
	/* A stuck statement must not hold a worker forever. */
	res = PQexec(c->pg, "SET statement_timeout = '60s'");
	rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -EIO;
	PQclear(res);
	if (rc) {
		rc = aw_errorf(err, rc, "cannot set up the postgres session: %s",
		               PQerrorMessage(c->pg));
		goto fail;
	}
	*out = &c->base;
	return 0;
fail:
	pg_disconnect(&c->base);
	return rc;
}

/* ---- schema and transactions ---- */

static int pg_exec(struct store_conn *base, const char *sql, char **err)
{
	struct pg_conn *c = pgc(base);
	PGresult *res;
	ExecStatusType st;
	int rc = ensure_link(c);

	if (!rc)
		rc = unpipe(c); /* scripts need the simple protocol */
	if (rc)
		return aw_errorf(err, rc, "the connection to postgres is broken or failed");
	res = PQexec(c->pg, sql);
	st = PQresultStatus(res);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		const char *m = PQresultErrorMessage(res);

		rc = aw_errorf(err, -EIO, "%.*s", first_line(m), m);
	}
	PQclear(res);
	return rc;
}

static int pg_schema_lock(struct store_conn *base, bool lock, char **err)
{
	char *msg = NULL;
	int rc = pg_exec(base,
	                 lock ? "SELECT pg_advisory_lock(" MIGRATION_LOCK ")"
	                      : "SELECT pg_advisory_unlock(" MIGRATION_LOCK ")",
	                 &msg);

	if (rc)
		aw_errorf(err, rc, "cannot %s the schema: %s", lock ? "lock" : "unlock", msg);
	free(msg);
	return rc;
}

/* Reads need no transaction of their own: runs and their cells never change once committed,
 * and READ COMMITTED gives each statement a consistent view. */
static int pg_begin(struct store_conn *base, enum store_tx tx)
{
	struct pg_conn *c = pgc(base);
	int rc;

	if (tx == STORE_TX_READ)
		return 0;
	rc = ensure_link(c);
	if (rc)
		return rc;
	c->piped = PQenterPipelineMode(c->pg) == 1;
	if (!c->piped) {
		rc = command(c, "BEGIN", "begin a transaction");
	} else if (!PQsendQueryParams(c->pg, "BEGIN", 0, NULL, NULL, NULL, NULL, 0)) {
		rc = pipe_broken(c, "begin a transaction");
		unpipe(c);
	} else {
		rc = add_pending(c, "begin a transaction", NULL);
		if (rc)
			unpipe(c);
	}
	c->in_tx = !rc;
	return rc;
}

static int pg_commit(struct store_conn *base)
{
	struct pg_conn *c = pgc(base);
	PGresult *res = NULL;
	int rc = 0;

	if (!c->in_tx)
		return 0;
	if (!c->piped) {
		res = PQexec(c->pg, "COMMIT");
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			rc = pg_fail(c, res, "commit");
	} else if (!PQsendQueryParams(c->pg, "COMMIT", 0, NULL, NULL, NULL, NULL, 0)) {
		rc = pipe_broken(c, "commit");
	} else {
		rc = drain(c, &res, "commit");
	}
	if (!rc && (!res || strcmp(PQcmdStatus(res), "COMMIT"))) {
		/* the transaction had failed: COMMIT rolled it back */
		store_count_error();
		aw_error("postgres: cannot commit: the transaction was rolled back");
		rc = -EIO;
	}
	PQclear(res);
	if (rc) {
		c->n_pend = 0;
		unpipe(c);
		/* a failed COMMIT leaves no transaction behind, whatever it was */
		if (PQstatus(c->pg) == CONNECTION_OK && PQtransactionStatus(c->pg) != PQTRANS_IDLE)
			command(c, "ROLLBACK", "roll back");
	} else {
		rc = unpipe(c);
	}
	c->in_tx = false;
	return rc;
}

static void pg_rollback(struct store_conn *base)
{
	struct pg_conn *c = pgc(base);

	unpipe(c); /* logs what failed unseen */
	if (PQstatus(c->pg) == CONNECTION_OK && PQtransactionStatus(c->pg) != PQTRANS_IDLE)
		command(c, "ROLLBACK", "roll back");
	c->in_tx = false;
}

/* ---- statements ---- */

/* Rewrites "?N" and "?" (the highest number so far plus one, as SQLite numbers them) into
 * "$N" outside quotes. Returns the new text (caller frees) with *n the highest number, or NULL
 * without memory. */
static char *rewrite(const char *sql, int *n)
{
	size_t len = strlen(sql), size = len * 6 + 1; /* "?" -> "$65535" at most */
	char *out = malloc(size), *o = out;
	char quote = 0;

	*n = 0;
	if (!out)
		return NULL;
	for (const char *p = sql; *p; p++) {
		if (quote) {
			if (*p == quote)
				quote = 0;
			*o++ = *p;
		} else if (*p == '\'' || *p == '"') {
			quote = *p;
			*o++ = *p;
		} else if (*p == '?') {
			long k = *n + 1;

			if (isdigit((unsigned char)p[1])) {
				char *end;

				k = strtol(p + 1, &end, 10);
				p = end - 1;
			}
			if (k > *n)
				*n = (int)k;
			o += snprintf(o, size - (size_t)(o - out), "$%ld", k);
		} else {
			*o++ = *p;
		}
	}
	*o = 0;
	return out;
}

static void pg_finalize(struct store_stmt *base)
{
	struct pg_stmt *s = pgs(base);

	if (!s)
		return;
	PQclear(s->res);
	PQfreemem(s->blob);
	aw_buf_release(&s->num);
	free(s->values);
	free(s->lengths);
	free(s->formats);
	free(s->num_at);
	free(s->sql);
	free(s);
}

static int pg_prepare(struct store_conn *base, const char *sql, const char *what, bool cached,
                      struct store_stmt **out)
{
	struct pg_conn *c = pgc(base);
	struct pg_stmt *s = calloc(1, sizeof(*s));
	size_t n;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->base.drv = &store_pg_driver;
	s->base.conn = base;
	s->what = what;
	s->cached = cached;
	s->row = -1;
	aw_buf_init(&s->num, NUM_LIMIT);
	s->sql = rewrite(sql, &s->n);
	n = s->n ? (size_t)s->n : 1;
	s->values = calloc(n, sizeof(*s->values));
	s->lengths = calloc(n, sizeof(*s->lengths));
	s->formats = calloc(n, sizeof(*s->formats));
	s->num_at = malloc(n * sizeof(*s->num_at));
	if (!s->sql || !s->values || !s->lengths || !s->formats || !s->num_at) {
		pg_finalize(&s->base);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		s->num_at[i] = -1;
	/* Prepared on its first run: a statement is never prepared on a connection that does not
	 * use it, and again after a reconnection. */
	if (cached)
		snprintf(s->name, sizeof(s->name), "aw%u", c->next_name++);
	*out = &s->base;
	return 0;
}

static void pg_reset(struct store_stmt *base)
{
	struct pg_stmt *s = pgs(base);

	PQclear(s->res);
	s->res = NULL;
	s->row = -1;
	PQfreemem(s->blob);
	s->blob = NULL;
	for (int i = 0; i < s->n; i++) {
		s->values[i] = NULL;
		s->lengths[i] = 0;
		s->formats[i] = 0;
		s->num_at[i] = -1;
	}
	aw_buf_reset(&s->num);
}

/* Parameter `i` (from 1) as text or NULL. */
static void set_param(struct pg_stmt *s, int i, const char *v)
{
	if (i < 1 || i > s->n)
		return;
	s->values[i - 1] = v;
	s->num_at[i - 1] = -1;
	s->formats[i - 1] = 0;
}

/* A number formatted into the statement's buffer; its address is taken when it runs, since
 * the buffer may move as it grows. */
static void set_number(struct pg_stmt *s, int i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_number(struct pg_stmt *s, int i, const char *fmt, ...)
{
	size_t at = s->num.len;
	va_list ap;
	int rc;

	if (i < 1 || i > s->n)
		return;
	va_start(ap, fmt);
	rc = aw_buf_vprintf(&s->num, fmt, ap);
	va_end(ap);
	if (!rc)
		rc = aw_buf_append(&s->num, "", 1);
	set_param(s, i, NULL);
	if (!rc)
		s->num_at[i - 1] = (long)at;
	else
		s->values[i - 1] = ""; /* fails to parse as a number: the statement errors */
}

static void pg_bind_i64(struct store_stmt *base, int i, int64_t v)
{
	set_number(pgs(base), i, "%" PRId64, v);
}

static void pg_bind_double(struct store_stmt *base, int i, double v)
{
	/* 17 significant digits read back as the same double. */
	set_number(pgs(base), i, "%.17g", v);
}

static void pg_bind_text(struct store_stmt *base, int i, const char *v)
{
	set_param(pgs(base), i, v);
}

static void pg_bind_null(struct store_stmt *base, int i)
{
	set_param(pgs(base), i, NULL);
}

static void pg_bind_blob(struct store_stmt *base, int i, const void *p, size_t len)
{
	struct pg_stmt *s = pgs(base);

	set_param(s, i, p ? p : "");
	if (i >= 1 && i <= s->n) {
		s->lengths[i - 1] = (int)len;
		s->formats[i - 1] = 1; /* binary: the bytes as they are */
	}
}

/* Sends the statement's Parse, in a pipeline, when the connection has not got it yet. */
static int send_parse(struct pg_conn *c, struct pg_stmt *s)
{
	if (!s->cached || s->prepared_gen == c->gen)
		return 0;
	if (!PQsendPrepare(c->pg, s->name, s->sql, s->n, NULL))
		return pipe_broken(c, s->what);
	s->prepared_gen = c->gen;
	return add_pending(c, s->what, s);
}

/* Sends the statement's Bind and Execute in a pipeline. */
static int send_query(struct pg_conn *c, struct pg_stmt *s)
{
	int ok;

	for (int i = 0; i < s->n; i++)
		if (s->num_at[i] >= 0)
			s->values[i] = s->num.data + s->num_at[i];
	if (s->cached)
		ok =
		    PQsendQueryPrepared(c->pg, s->name, s->n, s->values, s->lengths, s->formats, 0);
	else
		ok = PQsendQueryParams(c->pg, s->sql, s->n, NULL, s->values, s->lengths, s->formats,
		                       0);
	return ok ? 0 : pipe_broken(c, s->what);
}

/* Runs the statement and keeps its result: in the transaction's pipeline (reading what is
 * pending before it), or on its own. */
static int run(struct pg_stmt *s)
{
	struct pg_conn *c = pgc(s->base.conn);
	ExecStatusType st;
	int rc = ensure_link(c);

	if (rc)
		return rc;
	if (c->piped) {
		rc = send_parse(c, s);
		if (!rc)
			rc = send_query(c, s);
		if (rc) {
			c->n_pend = 0;
			return rc;
		}
		rc = drain(c, &s->res, s->what);
		if (rc) {
			PQclear(s->res);
			s->res = NULL;
		}
		return rc;
	}
	for (int i = 0; i < s->n; i++)
		if (s->num_at[i] >= 0)
			s->values[i] = s->num.data + s->num_at[i];
	if (s->cached && s->prepared_gen != c->gen) {
		PGresult *res = PQprepare(c->pg, s->name, s->sql, s->n, NULL);
		char what[96];

		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			snprintf(what, sizeof(what), "prepare the statement to %s", s->what);
			rc = pg_fail(c, res, what);
			PQclear(res);
			return rc;
		}
		PQclear(res);
		s->prepared_gen = c->gen;
	}
	if (s->cached)
		s->res = PQexecPrepared(c->pg, s->name, s->n, s->values, s->lengths, s->formats, 0);
	else
		s->res =
		    PQexecParams(c->pg, s->sql, s->n, NULL, s->values, s->lengths, s->formats, 0);
	st = PQresultStatus(s->res);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		rc = pg_fail(c, s->res, s->what);
		PQclear(s->res);
		s->res = NULL;
		return rc;
	}
	return 0;
}

/* In a write transaction, the statement goes out now and its result is read later, with the
 * next statement that returns something or with the commit. */
static int pg_send(struct store_stmt *base)
{
	struct pg_stmt *s = pgs(base);
	struct pg_conn *c = pgc(base->conn);
	int rc;

	if (!c->piped)
		return run(s);
	rc = send_parse(c, s);
	if (!rc)
		rc = send_query(c, s);
	if (!rc)
		rc = add_pending(c, s->what, NULL);
	return rc;
}

/* store_set_plan_hook(): EXPLAIN of the statement with its parameters, in its transaction's
 * pipeline when it has one. */
static void pg_explain(struct pg_stmt *s)
{
	struct pg_conn *c = pgc(s->base.conn);
	char *sql = aw_asprintf("EXPLAIN %s", s->sql);
	PGresult *res = NULL;
	struct aw_buf plan;
	int rc = sql ? 0 : -ENOMEM;

	aw_buf_init(&plan, 1 << 20);
	for (int i = 0; i < s->n; i++)
		if (s->num_at[i] >= 0)
			s->values[i] = s->num.data + s->num_at[i];
	if (!rc && c->piped) {
		if (!PQsendQueryParams(c->pg, sql, s->n, NULL, s->values, s->lengths, s->formats,
		                       0))
			rc = pipe_broken(c, "explain");
		else
			rc = drain(c, &res, "explain");
	} else if (!rc) {
		res = PQexecParams(c->pg, sql, s->n, NULL, s->values, s->lengths, s->formats, 0);
	}
	if (!rc && PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = pg_fail(c, res, "explain");
	for (int i = 0; !rc && i < PQntuples(res); i++)
		rc = aw_buf_printf(&plan, "%s%s", i ? "\n" : "", PQgetvalue(res, i, 0));
	c->base.plan_cb(s->what, s->sql, rc ? NULL : plan.data, c->base.plan_cls);
	PQclear(res);
	aw_buf_release(&plan);
	free(sql);
}

static int pg_step(struct store_stmt *base)
{
	struct pg_stmt *s = pgs(base);

	if (!s->res && base->conn->plan_cb)
		pg_explain(s);
	if (!s->res) {
		int rc = run(s);

		if (rc)
			return rc;
	}
	PQfreemem(s->blob);
	s->blob = NULL;
	if (s->row + 1 < PQntuples(s->res)) {
		s->row++;
		return STORE_ROW;
	}
	s->row = PQntuples(s->res);
	return STORE_DONE;
}

static int64_t pg_changes(struct store_stmt *base)
{
	struct pg_stmt *s = pgs(base);

	return s->res ? strtoll(PQcmdTuples(s->res), NULL, 10) : 0;
}

static bool pg_col_null(struct store_stmt *base, int i)
{
	struct pg_stmt *s = pgs(base);

	return PQgetisnull(s->res, s->row, i);
}

static int64_t pg_col_i64(struct store_stmt *base, int i)
{
	struct pg_stmt *s = pgs(base);
	const char *v = PQgetvalue(s->res, s->row, i);

	if (PQgetisnull(s->res, s->row, i))
		return 0;
	if (*v == 't' || *v == 'f') /* a boolean */
		return *v == 't';
	return strtoll(v, NULL, 10);
}

static double pg_col_double(struct store_stmt *base, int i)
{
	struct pg_stmt *s = pgs(base);

	if (PQgetisnull(s->res, s->row, i))
		return 0;
	return strtod(PQgetvalue(s->res, s->row, i), NULL);
}

static const char *pg_col_text(struct store_stmt *base, int i)
{
	struct pg_stmt *s = pgs(base);

	return PQgetisnull(s->res, s->row, i) ? NULL : PQgetvalue(s->res, s->row, i);
}

static const void *pg_col_blob(struct store_stmt *base, int i, size_t *len)
{
	struct pg_stmt *s = pgs(base);

	*len = 0;
	if (PQgetisnull(s->res, s->row, i))
		return NULL;
	/* bytea comes as text ("\x" and hex digits) */
	PQfreemem(s->blob);
	s->blob = PQunescapeBytea((const unsigned char *)PQgetvalue(s->res, s->row, i), len);
	if (!s->blob) {
		store_count_error();
		aw_error("postgres: cannot %s: out of memory decoding a bytea", s->what);
		return NULL;
	}
	return s->blob;
}

const struct store_driver store_pg_driver = {
    .name = "postgres",
    .kind = STORE_POSTGRES,
    .connect = pg_connect,
    .disconnect = pg_disconnect,
    .broken = pg_broken,
    .migrations = store_pg_migrations,
    .exec = pg_exec,
    .schema_lock = pg_schema_lock,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .prepare = pg_prepare,
    .finalize = pg_finalize,
    .reset = pg_reset,
    .bind_i64 = pg_bind_i64,
    .bind_double = pg_bind_double,
    .bind_text = pg_bind_text,
    .bind_null = pg_bind_null,
    .bind_blob = pg_bind_blob,
    .step = pg_step,
    .send = pg_send,
    .changes = pg_changes,
    .col_null = pg_col_null,
    .col_i64 = pg_col_i64,
    .col_double = pg_col_double,
    .col_text = pg_col_text,
    .col_blob = pg_col_blob,
};
