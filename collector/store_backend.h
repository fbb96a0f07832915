/* What a storage backend implements: the operations table behind store.h. Only store.c and
 * the backends (store_sqlite.c, store_pg.c) include this. */
#ifndef AW_COLLECTOR_STORE_BACKEND_H
#define AW_COLLECTOR_STORE_BACKEND_H

#include "store.h"

/* The schema version of this build: both backends hold this many migrations. */
#define STORE_SCHEMA_VERSION 3

/* Every backend connection starts with this. */
struct store_conn {
	const struct store_ops *ops;
	struct store_conn *next_idle; /* pool list, owned by store.c */
};

/* The contracts are those of the store_* function of the same name. */
struct store_ops {
	const char *name;
	int (*connect)(const char *target, const struct store_options *opt, struct store_conn **out,
	               char **err);
	void (*disconnect)(struct store_conn *c);
	bool (*broken)(struct store_conn *c); /* the link is gone: do not pool it */
	int (*migrate)(struct store_conn *c, int *from, int *to, char **err);
	int (*ping)(struct store_conn *c);
	int (*put_runs)(struct store_conn *c, struct store_put *items, size_t n);
	int (*list_runs)(struct store_conn *c, const struct store_run_filter *f, store_run_cb cb,
	                 void *cls);
	int (*ref_history)(struct store_conn *c, const char *project, const char *host,
	                   const char *ref, int64_t before_order_us, int64_t before_seq,
	                   unsigned limit, store_run_cb cb, void *cls);
	int (*get_run)(struct store_conn *c, const char *run_id, struct aw_result **out);
	int (*run_cells)(struct store_conn *c, int64_t seq, store_cell_cb cb, void *cls);
	int (*series)(struct store_conn *c, const struct store_series_query *q, store_point_cb cb,
	              void *cls);
	int (*list_hosts)(struct store_conn *c, store_host_cb cb, void *cls);
	int (*get_host)(struct store_conn *c, const char *name, store_host_cb cb,
	                store_fingerprint_cb fcb, void *cls);
	int (*token_create)(struct store_conn *c, enum store_role role, const char *host,
	                    const char *hash, int64_t *id);
	int (*token_find)(struct store_conn *c, const char *hash, store_token_cb cb, void *cls);
	int (*token_list)(struct store_conn *c, store_token_cb cb, void *cls);
	int (*token_revoke)(struct store_conn *c, int64_t id);
	int (*token_touch)(struct store_conn *c, int64_t id, const char *when);
	int (*job_create)(struct store_conn *c, const struct store_job_spec *spec, int64_t *id);
	int (*job_claim)(struct store_conn *c, const char *host, int64_t reclaim_us,
	                 store_job_cb cb, void *cls);
	int (*job_unclaim)(struct store_conn *c, int64_t id, const char *host);
	int (*job_set_state)(struct store_conn *c, int64_t id, const char *host, const char *state,
	                     const char *run_id, const char *message);
	int (*job_get)(struct store_conn *c, int64_t id, store_job_cb cb, store_job_host_cb hcb,
	               void *cls);
	int (*job_list)(struct store_conn *c, unsigned limit, store_job_cb cb, void *cls);
	int (*changepoints_replace)(struct store_conn *c, const char *project, const char *host,
	                            const char *ref, const struct store_changepoint *items,
	                            size_t n);
	int (*changepoints_list)(struct store_conn *c, const char *project, const char *host,
	                         const char *ref, const char *cell_key, store_changepoint_cb cb,
	                         void *cls);
	int (*verdict_put)(struct store_conn *c, const struct store_verdict *v);
	int (*verdict_list)(struct store_conn *c, const char *project, const char *commit,
	                    const char *host, unsigned limit, store_verdict_cb cb, void *cls);
	int (*verdict_statuses)(struct store_conn *c, const char *project, const char *commit,
	                        const char *host, unsigned limit, store_verdict_cb cb, void *cls);
	/* ---- tasks and charts (interim) ---- */
	int (*task_enqueue)(struct store_conn *c, const char *kind, const char *project,
	                    const char *commit, const char *host, const char *ref);
	int (*task_claim)(struct store_conn *c, const char *owner, int64_t lease_us,
	                  int max_attempts, store_task_cb cb, void *cls);
	int (*task_done)(struct store_conn *c, int64_t id, int64_t generation);
	int (*task_fail)(struct store_conn *c, int64_t id, const char *message);
	int (*task_count)(struct store_conn *c, int64_t *pending, int64_t *dead);
	int (*chart_put)(struct store_conn *c, const struct store_chart *ch);
	int (*chart_get)(struct store_conn *c, const char *path, bool with_data, store_chart_cb cb,
	                 void *cls);
	/* ---- end of tasks and charts (interim) ---- */
};

extern const struct store_ops store_sqlite_ops;
extern const struct store_ops store_pg_ops;

/* Counts one database error for /metrics (backends call it where they log the error). */
void store_count_error(void);

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
