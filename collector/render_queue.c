/* The render workers of render.h: threads with a gnuplot each that take tasks from a bounded,
 * coalescing queue of two lists (the commits' charts first, host trends when nothing else
 * waits) and run them with a pooled database connection. */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "aw/log.h"
#include "aw/util.h"

enum task_kind {
	TASK_RUN,    /* aw_render_after_ingest(), then queue TASK_TRENDS */
	TASK_CHART,  /* one chart by id */
	TASK_TRENDS, /* aw_draw_trends() */
};

struct task {
	struct task *next;
	enum task_kind kind;
	enum aw_chart_kind chart;
	char *project, *commit, *base, *host, *ref, *name;
};

/* Two lists: commits' charts (runs, single charts) and, served only when the first is empty,
 * host trends, which cost the most and which nobody waits for. */
enum {
	LIST_NOW,
	LIST_LATER,
	N_LISTS
};

struct worker {
	struct aw_renderer *r;
	pthread_t tid;
	struct aw_gnuplot *gp;
	bool started;
};

struct aw_renderer {
	pthread_mutex_t lock;
	pthread_cond_t work;
	struct task *head[N_LISTS], *tail[N_LISTS];
	unsigned depth, queue_max;
	unsigned busy;    /* tasks a worker has in hand */
	uint64_t dropped; /* since the last warning */
	bool stopping;
	struct store *store;
	char *data_dir;
	const struct aw_analysis_opts *analysis;
	unsigned n_workers;
	struct worker *workers;
};

static void task_free(struct task *t)
{
	if (!t)
		return;
	free(t->project);
	free(t->commit);
	free(t->base);
	free(t->host);
	free(t->ref);
	free(t->name);
	free(t);
}

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool task_equal(const struct task *a, const struct task *b)
{
	return a->kind == b->kind && a->chart == b->chart && same(a->project, b->project) &&
	       same(a->commit, b->commit) && same(a->base, b->base) && same(a->host, b->host) &&
	       same(a->ref, b->ref) && same(a->name, b->name);
}

static int dup_field(char **dst, const char *src)
{
	*dst = src ? strdup(src) : NULL;
	return src && !*dst ? -ENOMEM : 0;
}

static struct task *task_new(enum task_kind kind, enum aw_chart_kind chart, const char *project,
                             const char *commit, const char *base, const char *host,
                             const char *ref, const char *name)
{
	struct task *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->kind = kind;
	t->chart = chart;
	if (dup_field(&t->project, project) || dup_field(&t->commit, commit) ||
	    dup_field(&t->base, base) || dup_field(&t->host, host) || dup_field(&t->ref, ref) ||
	    dup_field(&t->name, name)) {
		task_free(t);
		return NULL;
	}
	return t;
}

/* Queues `t` (taking it) unless an equal task waits already. */
static int push(struct aw_renderer *r, struct task *t)
{
	int list = t->kind == TASK_TRENDS ? LIST_LATER : LIST_NOW, rc = 0;
	uint64_t dropped = 0;

	pthread_mutex_lock(&r->lock);
	if (r->stopping) {
		rc = -ESHUTDOWN;
		goto out;
	}
	for (struct task *q = r->head[list]; q; q = q->next)
		if (task_equal(q, t))
			goto out; /* merged: the waiting one will see this data too */
	if (r->depth >= r->queue_max) {
		if (!r->dropped++)
			aw_warn("render queue full (%u tasks): dropping charts of '%s'; they are "
			        "drawn again with the host's next run, or by 'render'",
			        r->queue_max, t->commit ? t->commit : t->host);
		rc = -EAGAIN;
		goto out;
	}
	dropped = r->dropped;
	r->dropped = 0;
	if (r->tail[list])
		r->tail[list]->next = t;
	else
		r->head[list] = t;
	r->tail[list] = t;
	r->depth++;
	t = NULL;
	pthread_cond_signal(&r->work);
out:
	pthread_mutex_unlock(&r->lock);
	if (dropped > 1)
		aw_warn("render queue has room again; %" PRIu64 " tasks were dropped", dropped);
	task_free(t);
	return rc;
}

int aw_renderer_push_run(struct aw_renderer *r, const char *project, const char *commit,
                         const char *host, const char *ref)
{
	struct task *t =
	    task_new(TASK_RUN, AW_CHART_COMPARE, project, commit, NULL, host, ref, NULL);

	return t ? push(r, t) : -ENOMEM;
}

int aw_renderer_push_chart(struct aw_renderer *r, const struct aw_chart_id *id)
{
	struct task *t =
	    task_new(TASK_CHART, id->kind, NULL, id->commit, id->base, id->host, id->ref, id->name);

	return t ? push(r, t) : -ENOMEM;
}

unsigned aw_renderer_depth(struct aw_renderer *r)
{
	unsigned n;

	pthread_mutex_lock(&r->lock);
	n = r->depth + r->busy;
	pthread_mutex_unlock(&r->lock);
	return n;
}

static void run_task(struct worker *w, struct store_conn *conn, struct task *t)
{
	struct aw_renderer *r = w->r;
	struct aw_draw d = {.conn = conn,
	                    .gp = w->gp,
	                    .data_dir = r->data_dir,
	                    .analysis = r->analysis,
	                    .project = t->project};
	uint64_t t0 = aw_monotonic_ns();
	char *err = NULL;
	int rc = 0;

	switch (t->kind) {
	case TASK_RUN:
		rc = aw_render_after_ingest(&d, t->project, t->commit, t->host, t->ref, &err);
		if (w->gp) {
			struct task *next = task_new(TASK_TRENDS, AW_CHART_TREND, t->project, NULL,
			                             NULL, t->host, t->ref, NULL);

			if (next)
				push(r, next);
		}
		break;
	case TASK_TRENDS:
		rc = aw_draw_trends(&d, t->host, t->ref, &err);
		break;
	case TASK_CHART: {
		const struct aw_chart_id id = {.kind = t->chart,
		                               .commit = t->commit,
		                               .base = t->base,
		                               .host = t->host,
		                               .ref = t->ref,
		                               .name = t->name};

		rc = aw_draw_chart(&d, &id, &err);
		break;
	}
	}
	if (rc < 0 && rc != -ENOSYS)
		aw_warn("render: %s", err ? err : strerror(-rc));
	aw_debug("render: %s of '%s' on '%s': %u drawn, %u unchanged, %u failed, %.1f ms",
	         t->kind == TASK_RUN      ? "run"
	         : t->kind == TASK_TRENDS ? "trends"
	                                  : "chart",
	         t->commit ? t->commit : "-", t->host ? t->host : "-", d.drawn, d.cached, d.failed,
	         (double)(aw_monotonic_ns() - t0) / 1e6);
	free(err);
}

/* Render workers, and the gnuplot each spawns (a child inherits its thread's nice value), yield
 * the CPUs to the HTTP threads: on a busy collector uploads are answered first and the charts
 * follow. Linux keeps a nice value per thread. */
#define WORKER_NICE 10

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct aw_renderer *r = w->r;

	if (setpriority(PRIO_PROCESS, (id_t)gettid(), WORKER_NICE))
		aw_debug("render worker: cannot lower its priority: %s", strerror(errno));

	for (;;) {
		struct store_conn *conn = NULL;
		struct task *t = NULL;
		int rc;

		pthread_mutex_lock(&r->lock);
		while (!r->stopping && !r->head[LIST_NOW] && !r->head[LIST_LATER])
			pthread_cond_wait(&r->work, &r->lock);
		if (r->stopping) {
			pthread_mutex_unlock(&r->lock);
			break;
		}
		for (int list = 0; list < N_LISTS && !t; list++) {
			t = r->head[list];
			if (t) {
				r->head[list] = t->next;
				if (!r->head[list])
					r->tail[list] = NULL;
				r->depth--;
			}
		}
		r->busy++;
		pthread_mutex_unlock(&r->lock);
		/* A pooled connection per task: one whose link broke is replaced by the pool. */
		rc = store_acquire(r->store, &conn);
		if (rc)
			aw_warn("render: no database connection (%s); task dropped", strerror(-rc));
		else
			run_task(w, conn, t);
		store_release(r->store, &conn);
		task_free(t);
		pthread_mutex_lock(&r->lock);
		r->busy--;
		pthread_mutex_unlock(&r->lock);
	}
	return NULL;
}

int aw_renderer_start(struct store *store, const struct aw_renderer_opts *o,
                      struct aw_renderer **out, char **err)
{
	struct aw_renderer *r = calloc(1, sizeof(*r));
	const struct aw_gnuplot_opts gopt = {.program = o->gnuplot, .timeout_ms = o->timeout_ms};
	int rc = 0;

	*out = NULL;
	if (!r)
		return aw_errorf(err, -ENOMEM, "out of memory");
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->work, NULL);
	r->store = store;
	r->analysis = o->analysis;
	r->queue_max = o->queue_max ? o->queue_max : 1;
	r->data_dir = strdup(o->data_dir);
	r->workers = calloc(o->workers ? o->workers : 1, sizeof(*r->workers));
	if (!r->data_dir || !r->workers) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto fail;
	}
	for (unsigned i = 0; i < (o->workers ? o->workers : 1); i++) {
		struct worker *w = &r->workers[i];
		char *gp_err = NULL;

		r->n_workers++;
		w->r = r;
		w->gp = aw_gnuplot_new(&gopt, &gp_err);
		if (!w->gp) {
			/* The analysis is still worth running; pages show charts as pending. */
			aw_warn("render worker %u draws no charts: %s", i + 1,
			        gp_err ? gp_err : "cannot start gnuplot");
			free(gp_err);
		}
		rc = -pthread_create(&w->tid, NULL, worker_main, w);
		if (rc) {
			aw_errorf(err, rc, "cannot start a render worker: %s", strerror(-rc));
			goto fail;
		}
		w->started = true;
	}
	*out = r;
	return 0;
fail:
	aw_renderer_stop(&r);
	return rc;
}

void aw_renderer_stop(struct aw_renderer **rp)
{
	struct aw_renderer *r = *rp;
	unsigned left = 0;

	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	pthread_cond_broadcast(&r->work);
	pthread_mutex_unlock(&r->lock);
	for (unsigned i = 0; i < r->n_workers; i++) {
		if (r->workers[i].started)
			pthread_join(r->workers[i].tid, NULL);
		aw_gnuplot_free(&r->workers[i].gp);
	}
	for (int list = 0; list < N_LISTS; list++) {
		while (r->head[list]) {
			struct task *t = r->head[list];

			r->head[list] = t->next;
			task_free(t);
			left++;
		}
	}
	if (left)
		aw_info("render: %u queued task(s) not done at shutdown ('render --commit' draws "
		        "them)",
		        left);
	free(r->workers);
	free(r->data_dir);
	pthread_cond_destroy(&r->work);
	pthread_mutex_destroy(&r->lock);
	free(r);
	*rp = NULL;
}
