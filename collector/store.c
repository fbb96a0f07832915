/* The storage interface: database URLs, the connection pool, and dispatch to the backend's
 * operations table (store_sqlite.c, store_pg.c). */
#include "store_backend.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aw/log.h"

struct store {
	const struct store_ops *ops;
	enum store_kind kind;
	char *target;
	struct store_options opt;
	pthread_mutex_t lock;
	pthread_cond_t idle_cond;
	struct store_conn *idle; /* connections ready to be taken */
	unsigned open;           /* pooled connections in existence (idle or taken) */
};

static atomic_uint_fast64_t db_errors;

void store_count_error(void)
{
	atomic_fetch_add_explicit(&db_errors, 1, memory_order_relaxed);
}

uint64_t store_errors_total(void)
{
	return atomic_load_explicit(&db_errors, memory_order_relaxed);
}

int store_url_parse(const char *url, struct store_url *out, char **err)
{
	memset(out, 0, sizeof(*out));
	if (!url || !*url)
		return aw_errorf(err, -EINVAL, "empty database url");
	if (!strncmp(url, "sqlite:", 7)) {
		const char *path = url + 7;

		/* Accept "sqlite:///abs/path" as well as "sqlite:/abs/path" and "sqlite:rel". */
		if (!strncmp(path, "//", 2))
			path += 2;
		if (!*path)
			return aw_errorf(err, -EINVAL, "database url '%s' names no file", url);
		if (!strcmp(path, ":memory:") || !strncmp(path, "file:", 5))
			return aw_errorf(err, -EINVAL, "database url '%s': give the path of a file",
			                 url);
		out->kind = STORE_SQLITE;
		out->target = strdup(path);
	} else if (!strncmp(url, "postgres://", 11) || !strncmp(url, "postgresql://", 13)) {
		out->kind = STORE_POSTGRES;
		out->target = strdup(url);
	} else {
		return aw_errorf(err, -EINVAL,
		                 "database url '%s' must start with 'sqlite:' or 'postgres://'",
		                 url);
	}
	if (!out->target)
		return aw_errorf(err, -ENOMEM, "out of memory");
	return 0;
}

void store_url_release(struct store_url *u)
{
	aw_freep(&u->target);
}

int store_open(const char *url, const struct store_options *opt, struct store **out, char **err)
{
	const struct store_options defaults = STORE_OPTIONS_DEFAULT;
	struct store_url u;
	struct store *s = NULL;
	int rc;

	*out = NULL;
	rc = store_url_parse(url, &u, err);
	if (rc)
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s) {
		store_url_release(&u);
		return aw_errorf(err, -ENOMEM, "out of memory");
	}
	s->kind = u.kind;
	s->ops = u.kind == STORE_SQLITE ? &store_sqlite_ops : &store_pg_ops;
	s->target = u.target;
	s->opt = opt ? *opt : defaults;
	if (!s->opt.pool_size)
		s->opt.pool_size = 1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle_cond, NULL);
	*out = s;
	return 0;
}

void store_close(struct store **sp)
{
	struct store *s = *sp;
	unsigned closed = 0;

	if (!s)
		return;
	while (s->idle) {
		struct store_conn *c = s->idle;

		s->idle = c->next_idle;
		s->ops->disconnect(c);
		closed++;
	}
	/* store.h: every connection taken with store_acquire() was released first */
	assert(closed == s->open);
	(void)closed;
	pthread_cond_destroy(&s->idle_cond);
	pthread_mutex_destroy(&s->lock);
	free(s->target);
	free(s);
	*sp = NULL;
}

enum store_kind store_kind(const struct store *s)
{
	return s->kind;
}

int store_connect(struct store *s, struct store_conn **out, char **err)
{
	return s->ops->connect(s->target, &s->opt, out, err);
}

void store_disconnect(struct store_conn **c)
{
	if (!*c)
		return;
	(*c)->ops->disconnect(*c);
	*c = NULL;
}

int store_acquire(struct store *s, struct store_conn **out)
{
	struct store_conn *c = NULL;
	char *err = NULL;
	int rc = 0;

	*out = NULL;
	pthread_mutex_lock(&s->lock);
	while (!s->idle && s->open >= s->opt.pool_size)
		pthread_cond_wait(&s->idle_cond, &s->lock);
	if (s->idle) {
		c = s->idle;
		s->idle = c->next_idle;
		c->next_idle = NULL;
		pthread_mutex_unlock(&s->lock);
		*out = c;
		return 0;
	}
	s->open++; /* reserve the slot, connect without holding the lock */
	pthread_mutex_unlock(&s->lock);
	rc = s->ops->connect(s->target, &s->opt, &c, &err);
	if (rc) {
		aw_error("%s", err ? err : "cannot connect to the database");
		free(err);
		store_count_error();
		pthread_mutex_lock(&s->lock);
		s->open--;
		pthread_cond_signal(&s->idle_cond);
		pthread_mutex_unlock(&s->lock);
		return rc == -ENOMEM ? rc : -EBUSY;
	}
	*out = c;
	return 0;
}

void store_release(struct store *s, struct store_conn **cp)
{
	struct store_conn *c = *cp;

	if (!c)
		return;
	*cp = NULL;
	if (c->ops->broken(c)) {
		c->ops->disconnect(c);
		pthread_mutex_lock(&s->lock);
		assert(s->open > 0); /* c came from this store's store_acquire() */
		s->open--;
	} else {
		pthread_mutex_lock(&s->lock);
		c->next_idle = s->idle;
		s->idle = c;
	}
	pthread_cond_signal(&s->idle_cond);
	pthread_mutex_unlock(&s->lock);
}

/* ---- helpers shared by the backends ---- */

const char *const store_metric_columns[STORE_METRIC_COUNT] = {
    "min", "p50", "p95", "p99", "max", "mean", "stddev", "ci_lo", "ci_hi", "baseline_ns"};

static const char *const metric_names[STORE_METRIC_COUNT] = {
    "min", "p50", "p95", "p99", "max", "mean", "stddev", "ci_lo", "ci_hi", "baseline_ns"};

int store_metric_parse(const char *name, enum store_metric *out)
{
	for (int i = 0; i < STORE_METRIC_COUNT; i++) {
		if (!strcmp(name, metric_names[i])) {
			*out = (enum store_metric)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *store_metric_name(enum store_metric m)
{
	return metric_names[m];
}

static const char *const role_names[] = {"agent", "ci", "admin"};

const char *store_role_name(enum store_role r)
{
	return role_names[r];
}

int store_role_parse(const char *s, enum store_role *out)
{
	for (int i = 0; i < 3; i++) {
		if (!strcmp(s, role_names[i])) {
			*out = (enum store_role)i;
			return 0;
		}
	}
	return -EINVAL;
}

int store_status_parse(const char *s, enum aw_cell_status *out)
{
	for (int i = AW_CELL_OK; i <= AW_CELL_FAILED; i++) {
		if (s && !strcmp(s, aw_cell_status_name((enum aw_cell_status)i))) {
			*out = (enum aw_cell_status)i;
			return 0;
		}
	}
	return -EINVAL;
}

int store_cell_sig(const struct aw_cell *c, char *out, size_t len)
{
	char cpu[16] = "", ccpu[16] = "", cc[24] = "";
	int n;

	if (c->cpu != AW_NONE)
		snprintf(cpu, sizeof(cpu), "%d", c->cpu);
	if (c->contender_cpu != AW_NONE)
		snprintf(ccpu, sizeof(ccpu), "%d", c->contender_cpu);
	if (c->c != AW_NONE)
		snprintf(cc, sizeof(cc), "%lld", (long long)c->c);
	n = snprintf(out, len, "%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%lld", c->key,
	             c->op ? c->op : "", c->reader ? c->reader : "", c->subject ? c->subject : "",
	             c->kernel ? c->kernel : "", c->placement ? c->placement : "", cpu, ccpu, cc,
	             (long long)c->d);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

void store_now(char *text, int64_t *us)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	aw_time_format(&ts, text);
	*us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int store_schema_version(void)
{
	return STORE_SCHEMA_VERSION;
}

/* ---- dispatch ---- */

int store_migrate(struct store_conn *c, int *from, int *to, char **err)
{
	return c->ops->migrate(c, from, to, err);
}

int store_ping(struct store_conn *c)
{
	return c->ops->ping(c);
}

int store_put_runs(struct store_conn *c, struct store_put *items, size_t n)
{
	return c->ops->put_runs(c, items, n);
}

int store_list_runs(struct store_conn *c, const struct store_run_filter *f, store_run_cb cb,
                    void *cls)
{
	return c->ops->list_runs(c, f, cb, cls);
}

int store_ref_history(struct store_conn *c, const char *project, const char *host, const char *ref,
                      int64_t before_order_us, int64_t before_seq, unsigned limit, store_run_cb cb,
                      void *cls)
{
	return c->ops->ref_history(c, project, host, ref, before_order_us, before_seq, limit, cb,
	                           cls);
}

int store_get_run(struct store_conn *c, const char *run_id, struct aw_result **out)
{
	return c->ops->get_run(c, run_id, out);
}

int store_run_cells(struct store_conn *c, int64_t seq, store_cell_cb cb, void *cls)
{
	return c->ops->run_cells(c, seq, cb, cls);
}

int store_series(struct store_conn *c, const struct store_series_query *q, store_point_cb cb,
                 void *cls)
{
	return c->ops->series(c, q, cb, cls);
}

int store_list_hosts(struct store_conn *c, store_host_cb cb, void *cls)
{
	return c->ops->list_hosts(c, cb, cls);
}

int store_get_host(struct store_conn *c, const char *name, store_host_cb cb,
                   store_fingerprint_cb fcb, void *cls)
{
	return c->ops->get_host(c, name, cb, fcb, cls);
}

int store_token_create(struct store_conn *c, enum store_role role, const char *host,
                       const char *hash, int64_t *id)
{
	return c->ops->token_create(c, role, host, hash, id);
}

int store_token_find(struct store_conn *c, const char *hash, store_token_cb cb, void *cls)
{
	return c->ops->token_find(c, hash, cb, cls);
}

int store_token_list(struct store_conn *c, store_token_cb cb, void *cls)
{
	return c->ops->token_list(c, cb, cls);
}

int store_token_revoke(struct store_conn *c, int64_t id)
{
	return c->ops->token_revoke(c, id);
}

int store_token_touch(struct store_conn *c, int64_t id, const char *when)
{
	return c->ops->token_touch(c, id, when);
}

int store_job_create(struct store_conn *c, const struct store_job_spec *spec, int64_t *id)
{
	return c->ops->job_create(c, spec, id);
}

int store_job_claim(struct store_conn *c, const char *host, int64_t reclaim_us, store_job_cb cb,
                    void *cls)
{
	return c->ops->job_claim(c, host, reclaim_us, cb, cls);
}

int store_job_unclaim(struct store_conn *c, int64_t id, const char *host)
{
	return c->ops->job_unclaim(c, id, host);
}

int store_job_set_state(struct store_conn *c, int64_t id, const char *host, const char *state,
                        const char *run_id, const char *message)
{
	return c->ops->job_set_state(c, id, host, state, run_id, message);
}

int store_job_get(struct store_conn *c, int64_t id, store_job_cb cb, store_job_host_cb hcb,
                  void *cls)
{
	return c->ops->job_get(c, id, cb, hcb, cls);
}

int store_job_list(struct store_conn *c, unsigned limit, store_job_cb cb, void *cls)
{
	return c->ops->job_list(c, limit, cb, cls);
}

int store_changepoints_replace(struct store_conn *c, const char *project, const char *host,
                               const char *ref, const struct store_changepoint *items, size_t n)
{
	return c->ops->changepoints_replace(c, project, host, ref, items, n);
}

int store_changepoints_list(struct store_conn *c, const char *project, const char *host,
                            const char *ref, const char *cell_key, store_changepoint_cb cb,
                            void *cls)
{
	return c->ops->changepoints_list(c, project, host, ref, cell_key, cb, cls);
}

int store_verdict_put(struct store_conn *c, const struct store_verdict *v)
{
	return c->ops->verdict_put(c, v);
}

int store_verdict_list(struct store_conn *c, const char *project, const char *commit,
                       const char *host, unsigned limit, store_verdict_cb cb, void *cls)
{
	if (limit < 1 || limit > 10000)
		return -EINVAL;
	return c->ops->verdict_list(c, project, commit, host, limit, cb, cls);
}

int store_verdict_statuses(struct store_conn *c, const char *project, const char *commit,
                           const char *host, unsigned limit, store_verdict_cb cb, void *cls)
{
	if (limit < 1 || limit > 10000)
		return -EINVAL;
	return c->ops->verdict_statuses(c, project, commit, host, limit, cb, cls);
}
