/* The driver behind store.h: what a storage backend (sqlite.c, pg.c) gives the row
 * layer (rows.c), which writes every statement and every column-to-field mapping once.
 * A driver holds a connection, prepares, binds, steps and reads statements, runs its
 * transactions, and knows its dialect, its migrations and its errors. Only store.c,
 * rows.c and the backends include this (and the store's unit tests).
 *
 * Conventions: errors are the negative errnos of store.h. A driver logs a failure once, where it
 * happens, and counts it with store_count_error(); a retryable conflict (-EAGAIN) is logged at
 * debug level and not counted. */
#ifndef AW_COLLECTOR_STORE_BACKEND_H
#define AW_COLLECTOR_STORE_BACKEND_H

#include "store.h"

struct aw_strmap;

/* The schema version of this build: every driver holds this many migrations. */
#define STORE_SCHEMA_VERSION 11

/* Most statements a connection keeps prepared (the row layer's statement ids). */
#define STORE_STMT_SLOTS 160

/* Every backend connection starts with this; the row layer owns all but `drv`. */
struct store_conn {
	const struct store_driver *drv;
	uint64_t gen;                              /* its store's generation (store.c; 0: none) */
	struct store_conn *next_idle;              /* pool list, owned by store.c */
	struct store_stmt *stmt[STORE_STMT_SLOTS]; /* prepared on first use, by statement id */
	struct aw_strmap *cells; /* cell signature -> cells.id, committed rows only */
	store_plan_cb plan_cb;   /* store_set_plan_hook(): drivers explain each statement */
	void *plan_cls;
};

/* Every backend statement starts with this. */
struct store_stmt {
	const struct store_driver *drv;
	struct store_conn *conn;
};

/* What step() returns besides a negative errno. */
enum {
	STORE_DONE = 0, /* the statement has run to its end */
	STORE_ROW = 1,  /* a row is ready to be read */
};

enum store_tx {
	STORE_TX_READ,  /* reads that must agree with each other */
	STORE_TX_WRITE, /* takes the write lock up front where the backend has one */
};

/* Statement text is written once, for both dialects: parameters are "?N" (numbered from 1, a
 * number may repeat) or "?" (the next number); a parameter whose type the statement does not
 * fix is written CAST(?N AS TEXT) / CAST(?N AS BIGINT). Strings and blobs bound to a statement
 * must stay valid until it is reset; strings and blobs read from a row only until the next
 * step or reset. */
struct store_driver {
	const char *name;
	enum store_kind kind;

	/* The contracts are those of store_connect() and store_disconnect(); connect() fills
	 * only `drv` of the common part. disconnect() is called once the row layer has
	 * finalized its statements. */
	int (*connect)(const char *target, const struct store_options *opt, struct store_conn **out,
	               char **err);
	void (*disconnect)(struct store_conn *c);
	bool (*broken)(struct store_conn *c); /* the link is gone: do not pool it */

	/* ---- schema ---- */
	const char *const *migrations; /* STORE_SCHEMA_VERSION scripts; N is migrations[N - 1] */
	/* Runs a constant script of one or more statements without parameters, outside any
	 * prepared-statement cache. Returns 0, or -EIO with *err (not logged: the caller says
	 * what failed). */
	int (*exec)(struct store_conn *c, const char *sql, char **err);
	/* Serialises migrations across processes (lock true, then false); NULL when the write
	 * transaction of STORE_TX_WRITE already does. Returns 0 or -EIO with *err. */
	int (*schema_lock)(struct store_conn *c, bool lock, char **err);

	/* ---- transactions ---- */
	int (*begin)(struct store_conn *c, enum store_tx tx);
	int (*commit)(struct store_conn *c);
	void (*rollback)(struct store_conn *c); /* harmless outside a transaction */

	/* ---- statements ---- */
	/* Prepares `sql` (see above); `what` names what it does, for error messages ("add a
	 * run"), and must outlive the statement. A `cached` statement is run many times
	 * (server-side preparation); one that is not runs once or twice. Returns 0 with *out
	 * (finalize it), or a negative errno (logged). */
	int (*prepare)(struct store_conn *c, const char *sql, const char *what, bool cached,
	               struct store_stmt **out);
	void (*finalize)(struct store_stmt *s); /* NULL is fine */
	void (*reset)(struct store_stmt *s);    /* ready to bind and run again, bindings cleared */
	void (*bind_i64)(struct store_stmt *s, int i, int64_t v);
	void (*bind_double)(struct store_stmt *s, int i, double v);    /* a finite v */
	void (*bind_text)(struct store_stmt *s, int i, const char *v); /* NULL binds NULL */
	void (*bind_null)(struct store_stmt *s, int i);
	void (*bind_blob)(struct store_stmt *s, int i, const void *p, size_t len);
	/* Runs the statement on the first call, then moves to its next row: STORE_ROW,
	 * STORE_DONE, or a negative errno (logged). */
	int (*step)(struct store_stmt *s);
	/* Optional: runs a statement whose rows and changes are not needed. Inside a write
	 * transaction its failure may be reported by a later call on the connection (the
	 * commit at the latest); the statement may be reset and bound again at once. NULL:
	 * the row layer steps it. */
	int (*send)(struct store_stmt *s);
	int64_t (*changes)(struct store_stmt *s); /* rows changed, once it is done */
	bool (*col_null)(struct store_stmt *s, int i);
	int64_t (*col_i64)(struct store_stmt *s, int i); /* booleans read as 0 or 1 */
	double (*col_double)(struct store_stmt *s, int i);
	const char *(*col_text)(struct store_stmt *s, int i);              /* NULL for NULL */
	const void *(*col_blob)(struct store_stmt *s, int i, size_t *len); /* NULL for NULL */
};

extern const struct store_driver store_sqlite_driver;
extern const struct store_driver store_pg_driver;

/* Each driver's migrations (schema.c), STORE_SCHEMA_VERSION scripts. */
extern const char *const store_sqlite_migrations[];
extern const char *const store_pg_migrations[];

/* The backfill of each migration (both dialects; NULL for most): a statement store_migrate()
 * runs in transactions of its own before the migration's script, binding ?1 to the rows of one
 * pass, until a pass changes no row. */
extern const char *const store_backfills[STORE_SCHEMA_VERSION];

/* Rows one pass of a backfill changes at most. */
#define STORE_BACKFILL_ROWS 2000

/* Sets up the row layer's part of a new connection (store.c calls it after connect()).
 * Returns 0 or -ENOMEM. */
int store_conn_init(struct store_conn *c);

/* Finalizes the connection's statements and disconnects it. */
void store_conn_close(struct store_conn *c);

/* Counts one database error for /metrics (drivers call it where they log the error). */
void store_count_error(void);
/* Counts one disk-full failure (drivers return -ENOSPC for it); see store_disk_full_now(). */
void store_count_disk_full(void);

/* The identity of a cell in the cells table: every field that defines it, joined with 0x1f
 * ("key\x1fop\x1freader..."), absent values empty. Returns 0 or -ENAMETOOLONG. */
#define STORE_SIG_MAX 1024
int store_cell_sig(const struct aw_cell *c, char *out, size_t len);

/* Most distinct cells a connection caches (cell signature -> id). */
#define STORE_CELL_CACHE_MAX 65536

/* The SQL column of each enum store_metric. */
extern const char *const store_metric_columns[STORE_METRIC_COUNT];

/* Parses a stored cell status ("ok", ...). Returns 0 or -EINVAL. */
int store_status_parse(const char *s, enum aw_cell_status *out);

/* Now as RFC 3339 text and as microseconds since the epoch. */
void store_now(char *text, int64_t *us);

#endif
