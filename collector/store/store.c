/* The storage interface: database URLs and the connection pool (the helpers shared by the row
 * layer and the drivers are common.c's, so that the drivers do not depend on this file). */
#include "driver.h"
#include "rows.h"

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
	const struct store_driver *drv;
	enum store_kind kind;
	char *target;
	struct store_options opt;
	pthread_mutex_t lock;
	pthread_cond_t idle_cond;
	struct store_conn *idle; /* connections ready to be taken */
	unsigned open;           /* pooled connections in existence (idle or taken) */
	uint64_t gen;            /* unique in the process: the key of what its connections keep
	                            (valcache.c) */
};

static _Atomic uint64_t generations;

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
	s->drv = u.kind == STORE_SQLITE ? &store_sqlite_driver : &store_pg_driver;
	s->target = u.target;
	s->opt = opt ? *opt : defaults;
	if (!s->opt.pool_size)
		s->opt.pool_size = 1;
	s->gen = ++generations;
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
		store_conn_close(c);
		closed++;
	}
	/* store.h: every connection taken with store_acquire() was released first */
	assert(closed == s->open);
	(void)closed;
	valcache_forget_store(s->gen);
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

/* A new connection with the row layer's part set up. */
static int conn_open(struct store *s, struct store_conn **out, char **err)
{
	int rc = s->drv->connect(s->target, &s->opt, out, err);

	if (rc)
		return rc;
	(*out)->gen = s->gen;
	rc = store_conn_init(*out);
	if (rc) {
		store_conn_close(*out);
		*out = NULL;
		return aw_errorf(err, rc, "out of memory");
	}
	return 0;
}

int store_connect(struct store *s, struct store_conn **out, char **err)
{
	return conn_open(s, out, err);
}

void store_disconnect(struct store_conn **c)
{
	if (!*c)
		return;
	store_conn_close(*c);
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
	rc = conn_open(s, &c, &err);
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
	if (c->drv->broken(c)) {
		store_conn_close(c);
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
