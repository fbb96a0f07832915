/* The post-ingest workers of postingest.h: threads, each with a gnuplot when charts are on, that
 * take the charts pages asked for from a bounded, coalescing in-memory queue first, and else
 * claim the database's tasks (store_task_claim()) when this collector stored a run or when the
 * poll interval has passed, each run with a pooled database connection. */
#include "postingest.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "aw/log.h"
#include "aw/util.h"
#include "bisect_queue.h"

#define TASK_RUN    "run"    /* the verdict, change points, confirmation and bisections */
#define TASK_CHARTS "charts" /* the commit's charts on the host, after every verdict waiting */
#define TASK_TRENDS "trends" /* the host's trend charts on a ref, after its runs' tasks */
#define TASK_AB     "ab"     /* an A/B document's chart; its ab_id is the task's ref */
#define MESSAGE_MAX 512      /* of the last error kept with a failed task */
/* work of one retention task; more waits for the next, behind the uploads' tasks */
#define RETENTION_BUDGET_US (INT64_C(20) * 1000000)

/* ---- the work of one task ---- */

/* What the collector's confirmation jobs of a run need from the commit's runs on the host. */
struct first_run {
	char run_id[AW_UUID_LEN + 1];
	bool found;                   /* a first run */
	bool self_confirming;         /* some run's agent confirms it itself ("confirm": N) */
	bool by_bisect;               /* the newest first run is a bisection's step */
	size_t n_of;                  /* confirmation runs listed (newest first) */
	char of[64][AW_UUID_LEN + 1]; /* the first run each confirms */
};

static int find_first_run(const struct store_run *run, void *cls)
{
	struct first_run *f = cls;

	if (run->confirm > 0) {
		f->self_confirming = true;
	} else if (run->confirmation_of) {
		if (f->n_of < sizeof(f->of) / sizeof(f->of[0]))
			snprintf(f->of[f->n_of++], sizeof(f->of[0]), "%s", run->confirmation_of);
	} else if (!f->found) {
		snprintf(f->run_id, sizeof(f->run_id), "%s", run->run_id);
		f->found = true; /* runs come newest first: the newest first run */
		f->by_bisect = run->trigger && !strcmp(run->trigger, "bisect");
	}
	return 0;
}

/* How many of the listed confirmation runs re-measure the newest first run. */
static uint64_t confirmations_of_first(const struct first_run *f)
{
	uint64_t n = 0;

	for (size_t i = 0; i < f->n_of; i++)
		n += !strcmp(f->of[i], f->run_id);
	return n;
}

/* Whether verdict v has a suspect cell of gate level fail: what a confirmation re-measures. */
static bool fail_suspects(const struct aw_host_verdict *v)
{
	for (size_t i = 0; i < v->n_cells; i++)
		if (v->cells[i].verdict == AW_VERDICT_SUSPECT && v->cells[i].gate == AW_GATE_FAIL)
			return true;
	return false;
}

/* After the verdict `v` of (project, commit) on a daemon host: when it has fail-level
 * suspects, no run of the commit asks to confirm itself (its agent does), its newest first run
 * is no bisection's step (the bisection re-measures what it needs, and its daemon is busy with
 * it), and no round of confirmation of that run is still measuring, queue one for that host
 * only: re-measure those cells (with the run's anchor cells) up to o->confirm_jobs times, and
 * no more than the suspects' budget has left (a suspect is one that has some). A round is over
 * when its job has ended on the host, or when the confirmation runs stored reach what the jobs
 * asked for (the daemon reports the job's end after its last upload, whose task may come
 * first). So a cell the first round left undecided is re-measured again, a round at a time, as
 * `atomwatch-agent run --confirm` re-measures until its budget; it stops being suspect once its
 * head runs reach 1 + o->confirm_budget. Returns 0 or a store error (logged by the caller). */
static int queue_confirmation(struct store_conn *c, const struct aw_analysis_opts *o,
                              const char *project, const char *commit, const char *host,
                              const char *ref, const struct aw_host_verdict *v)
{
	struct store_run_filter f = {
	    .project = project, .host = host, .commit = commit, .limit = 64};
	struct store_job_spec spec = {0};
	struct store_confirm_jobs jobs;
	struct first_run *first = NULL;
	struct aw_result *r = NULL;
	json_t *cells = NULL, *anchors = NULL, *job = NULL;
	const char *subject = NULL, *anchor[AW_ANCHORS];
	size_t n_anchors, head_n = 0, runs;
	char *text = NULL;
	int64_t id;
	uint64_t samples = 0;
	bool polls = false;
	int rc;

	if (!o->confirm_jobs || !commit || !fail_suspects(v))
		return 0; /* (whatever the host's status: another cell's regression decides
		             nothing of a suspect, which the agent's --confirm re-measures too) */
	first = calloc(1, sizeof(*first));
	if (!first)
		return -ENOMEM;
	rc = store_list_runs(c, &f, find_first_run, first);
	if (rc || !first->found || first->self_confirming || first->by_bisect)
		goto out; /* a bisection judges its own steps (as it starts no bisection) */
	rc = store_job_polls(c, host, o->confirm_ttl_us, &polls);
	if (rc || !polls)
		goto out; /* not a daemon host: its CI job runs the agent with --confirm */
	rc = store_job_confirmations(c, first->run_id, host, &jobs);
	if (rc || (jobs.open && confirmations_of_first(first) < jobs.asked))
		goto out; /* a round is still measuring */
	rc = store_get_run(c, first->run_id, &r);
	if (rc) {
		rc = rc == -ENOENT ? 0 : rc;
		goto out;
	}
	cells = json_array();
	rc = cells ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < v->n_cells; i++) {
		const struct aw_cell_verdict *cv = &v->cells[i];

		if (cv->verdict != AW_VERDICT_SUSPECT || cv->gate != AW_GATE_FAIL)
			continue;
		if (cv->n_head > head_n)
			head_n = cv->n_head;
		for (size_t k = 0; k < r->n_cells; k++)
			if (!strcmp(r->cells[k].key, cv->key) && r->cells[k].n > samples)
				samples = r->cells[k].n;
		if (json_array_append_new(cells, json_string(cv->key)))
			rc = -ENOMEM;
	}
	/* (a suspect has budget left: aw_analysis_budget_left()) */
	runs = 1 + (size_t)o->confirm_budget > head_n ? 1 + (size_t)o->confirm_budget - head_n : 0;
	if (runs > o->confirm_jobs)
		runs = o->confirm_jobs;
	if (rc || !json_array_size(cells) || !runs)
		goto out;
	n_anchors = aw_result_anchors(r, anchor, AW_ANCHORS);
	anchors = json_array();
	for (size_t i = 0; !rc && anchors && i < n_anchors; i++)
		if (json_array_append_new(anchors, json_string(anchor[i])))
			rc = -ENOMEM;
	if (rc || !anchors) {
		rc = -ENOMEM;
		goto out;
	}
	subject = json_string_value(json_object_get(json_object_get(r->meta, "subject"), "name"));
	job = json_pack("{s:s, s:O, s:O, s:I, s:I}", "of", first->run_id, "cells", cells, "anchors",
	                anchors, "runs", (json_int_t)runs, "samples", (json_int_t)samples);
	text = job ? json_dumps(job, JSON_COMPACT) : NULL;
	if (!text) {
		rc = -ENOMEM;
		goto out;
	}
	spec =
	    (struct store_job_spec){.project = project,
	                            .commit = commit,
	                            .ref = r->ref ? r->ref : ref,
	                            .subject = subject && aw_valid_name(subject) ? subject : NULL,
	                            .hosts = &host,
	                            .n_hosts = 1,
	                            .ttl_us = o->confirm_ttl_us,
	                            .confirm = text,
	                            .confirmation_of = first->run_id};
	rc = store_job_create(c, &spec, &id);
	if (!rc)
		aw_info("postingest: queued confirmation job %" PRId64
		        " for host '%s': %zu suspect cell%s of run %s, %zu runs (round %zu)",
		        id, host, json_array_size(cells), json_array_size(cells) == 1 ? "" : "s",
		        first->run_id, runs, jobs.jobs + 1);
out:
	free(text);
	json_decref(job);
	json_decref(anchors);
	json_decref(cells);
	aw_result_free(&r);
	free(first);
	return rc;
}

/* The analysis of a new run: the verdict, cached in the store (into *v, its baseline ref into
 * dv), the change points, and the confirmation and bisections it asks for. A store failure is
 * kept in d->store_rc. Returns 0 or the analysis' failure, with *err. */
static int after_ingest_verdict(struct aw_draw *d, const char *project, const char *commit,
                                const char *host, const char *ref, struct aw_draw_verdict *dv,
                                struct aw_host_verdict *v, char **err)
{
	int rc = 0;

	if (d->analysis) {
		uint64_t t0 = aw_monotonic_ns();

		rc = aw_analysis_after_ingest_verdict(d->conn, d->analysis, project, commit, host,
		                                      ref, v, err);
		aw_debug("postingest: analysis of '%s' on '%s': %.1f ms", commit ? commit : "-",
		         host, (double)(aw_monotonic_ns() - t0) / 1e6);
		if (rc && !d->store_rc)
			d->store_rc = rc;
		dv->baseline_ref = d->analysis->baseline_ref;
		if (!rc) {
			int qrc =
			    queue_confirmation(d->conn, d->analysis, project, commit, host, ref, v);

			if (qrc)
				aw_warn(
				    "postingest: cannot queue the confirmation of '%s' on '%s': %s",
				    commit, host, strerror(-qrc));
			qrc = aw_bisect_queue(d->conn, d->analysis, project, commit, host, ref, v);
			if (qrc)
				aw_warn(
				    "postingest: cannot queue the bisection of '%s' on '%s': %s",
				    commit, host, strerror(-qrc));
		}
	}
	return rc;
}

/* The charts of the commit on the host, with the verdict `dv` when the caller has it in memory
 * (NULL: the compare chart reads the store's). A store failure is kept in d->store_rc. */
static int draw_commit_charts(struct aw_draw *d, const char *project, const char *commit,
                              const char *host, const struct aw_draw_verdict *dv, char **err)
{
	struct aw_draw dp = *d;
	int rc;

	dp.verdict = dv;
	rc = aw_draw_commit(&dp, project, commit, host, err);
	d->drawn = dp.drawn;
	d->cached = dp.cached;
	d->failed = dp.failed;
	if (!d->store_rc)
		d->store_rc = dp.store_rc;
	return rc;
}

int aw_postingest_after_ingest(struct aw_draw *d, const char *project, const char *commit,
                               const char *host, const char *ref, char **err_out)
{
	struct aw_host_verdict v = {0};
	struct aw_draw_verdict dv = {.commit = commit, .host = host, .v = &v};
	char *err = NULL, *draw_err = NULL;
	int rc, draw_rc = 0;

	rc = after_ingest_verdict(d, project, commit, host, ref, &dv, &v, &err);
	if (d->gp && commit)
		draw_rc = draw_commit_charts(d, project, commit, host, rc ? NULL : &dv, &draw_err);
	aw_host_verdict_release(&v);
	if (!rc && draw_rc) {
		rc = draw_rc;
		err = draw_err;
		draw_err = NULL;
	}
	if (rc && err_out)
		*err_out = err;
	else
		free(err);
	free(draw_err);
	return rc;
}

/* ---- the workers ---- */

/* A chart a page asked for. */
struct chart_task {
	struct chart_task *next;
	enum aw_chart_kind kind;
	char *commit, *base, *host, *ref, *name;
};

/* A claimed task, copied out of the store's callback. */
struct task {
	int64_t id, generation;
	int attempts;
	char *kind, *project, *commit, *host, *ref;
};

struct worker {
	struct aw_postingest *p;
	pthread_t tid;
	struct aw_gnuplot *gp;
	unsigned index;
	bool started;
};

struct aw_postingest {
	pthread_mutex_t lock;
	pthread_cond_t work;
	struct chart_task *head, *tail; /* charts asked for, oldest first */
	unsigned depth, queue_max;
	unsigned charts_busy; /* charts workers have in hand */
	unsigned running;     /* database tasks workers have in hand */
	unsigned kicks;       /* uploads here not looked for yet (at most one per worker) */
	uint64_t dropped;     /* charts dropped since the last warning */
	uint64_t next_poll_ns;
	bool stopping;
	struct store *store;
	struct aw_postingest_opts o;
	char *data_dir;
	char owner[128]; /* this collector's name in the claims it makes */
	unsigned n_workers;
	struct worker *workers;
	atomic_uint_fast64_t done, failed;
};

static void chart_task_free(struct chart_task *t)
{
	if (!t)
		return;
	free(t->commit);
	free(t->base);
	free(t->host);
	free(t->ref);
	free(t->name);
	free(t);
}

static void task_release(struct task *t)
{
	free(t->kind);
	free(t->project);
	free(t->commit);
	free(t->host);
	free(t->ref);
	memset(t, 0, sizeof(*t));
}

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool chart_equal(const struct chart_task *a, const struct chart_task *b)
{
	return a->kind == b->kind && same(a->commit, b->commit) && same(a->base, b->base) &&
	       same(a->host, b->host) && same(a->ref, b->ref) && same(a->name, b->name);
}

static int dup_field(char **dst, const char *src)
{
	*dst = src ? strdup(src) : NULL;
	return src && !*dst ? -ENOMEM : 0;
}

int aw_postingest_push_chart(struct aw_postingest *p, const struct aw_chart_id *id)
{
	struct chart_task *t = calloc(1, sizeof(*t));
	uint64_t dropped = 0;
	int rc = 0;

	if (!t || dup_field(&t->commit, id->commit) || dup_field(&t->base, id->base) ||
	    dup_field(&t->host, id->host) || dup_field(&t->ref, id->ref) ||
	    dup_field(&t->name, id->name)) {
		chart_task_free(t);
		return -ENOMEM;
	}
	t->kind = id->kind;
	pthread_mutex_lock(&p->lock);
	if (p->stopping) {
		rc = -ESHUTDOWN;
		goto out;
	}
	for (struct chart_task *q = p->head; q; q = q->next)
		if (chart_equal(q, t))
			goto out; /* merged: the waiting one draws the same */
	if (p->depth >= p->queue_max) {
		if (!p->dropped++)
			aw_warn("chart queue full (%u charts): dropping a chart of '%s'; a reload "
			        "of its page asks again",
			        p->queue_max, t->commit ? t->commit : t->host);
		rc = -EAGAIN;
		goto out;
	}
	dropped = p->dropped;
	p->dropped = 0;
	if (p->tail)
		p->tail->next = t;
	else
		p->head = t;
	p->tail = t;
	p->depth++;
	t = NULL;
	pthread_cond_signal(&p->work);
out:
	pthread_mutex_unlock(&p->lock);
	if (dropped > 1)
		aw_warn("chart queue has room again; %" PRIu64 " charts were dropped", dropped);
	chart_task_free(t);
	return rc;
}

void aw_postingest_kick(struct aw_postingest *p)
{
	pthread_mutex_lock(&p->lock);
	if (p->kicks < p->n_workers)
		p->kicks++;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->lock);
}

void aw_postingest_gauges(struct aw_postingest *p, struct aw_chart_cache *cache,
                          struct store_conn *c, struct aw_postingest_gauges *g)
{
	int64_t pending = 0, dead = 0;

	if (c && store_task_count(c, &pending, &dead) == 0) {
		g->tasks = (uint64_t)pending;
		g->dead = (uint64_t)dead;
	}
	if (p) {
		pthread_mutex_lock(&p->lock);
		/* charts of the in-memory queue: waiting, or in hand */
		g->charts = p->depth + p->charts_busy;
		g->tasks += g->charts;
		g->running = p->running;
		pthread_mutex_unlock(&p->lock);
		g->done = atomic_load(&p->done);
		g->failed = atomic_load(&p->failed);
	}
	if (cache)
		aw_chart_cache_usage(cache, &g->chart_cache_bytes, &g->chart_cache_files);
}

static int copy_task(const struct store_task *st, void *cls)
{
	struct task *t = cls;

	t->id = st->id;
	t->generation = st->generation;
	t->attempts = st->attempts;
	if (dup_field(&t->kind, st->kind) || dup_field(&t->project, st->project) ||
	    dup_field(&t->commit, st->commit) || dup_field(&t->host, st->host) ||
	    dup_field(&t->ref, st->ref))
		return -ENOMEM;
	return 0;
}

static struct aw_draw draw_of(struct worker *w, struct store_conn *conn, const char *project)
{
	struct aw_postingest *p = w->p;

	return (struct aw_draw){.conn = conn,
	                        .gp = w->gp,
	                        .data_dir = p->data_dir,
	                        .analysis = p->o.analysis,
	                        .project = project,
	                        .publish = p->o.cache};
}

static void run_chart(struct worker *w, struct store_conn *conn, const struct chart_task *t)
{
	struct aw_draw d = draw_of(w, conn, NULL);
	const struct aw_chart_id id = {.kind = t->kind,
	                               .commit = t->commit,
	                               .base = t->base,
	                               .host = t->host,
	                               .ref = t->ref,
	                               .name = t->name};
	char *err = NULL;
	int rc = aw_draw_chart(&d, &id, &err);

	if (rc < 0 && rc != -ENOSYS)
		aw_warn("postingest: %s", err ? err : strerror(-rc));
	free(err);
}

/* A pass of retention, RETENTION_BUDGET_US of work at most. Returns 0 or the store's
 * failure. */
static int retention(struct aw_postingest *p, struct store_conn *conn)
{
	struct store_retention_stats st;
	struct timespec now;
	int rc;

	if (!p->o.retention)
		return 0;
	clock_gettime(CLOCK_REALTIME, &now);
	rc = store_retention_run(conn, p->o.retention,
	                         (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000,
	                         RETENTION_BUDGET_US, &st);
	if (!rc && st.runs)
		aw_info("retention: %" PRId64 " runs older than %u days thinned into %" PRId64
		        " aggregates%s",
		        st.runs, p->o.retention->raw_days, st.aggregates,
		        st.more ? "; more next time" : "");
	if (!rc && st.more)
		rc = store_task_enqueue(conn, AW_TASK_RETENTION, "", NULL, "", "");
	return rc;
}

/* Runs a claimed task and tells the store how it went: done, or failed when a step that a
 * retry may fix (the database) failed. */
static void run_task(struct worker *w, struct store_conn *conn, const struct task *t)
{
	struct aw_postingest *p = w->p;
	struct aw_draw d = draw_of(w, conn, t->project);
	uint64_t t0 = aw_monotonic_ns();
	char *err = NULL, message[MESSAGE_MAX];
	int rc = 0;

	if (!strcmp(t->kind, TASK_RUN)) {
		struct aw_host_verdict v = {0};
		struct aw_draw_verdict dv = {.commit = t->commit, .host = t->host, .v = &v};

		/* The verdict now, the drawing later: every verdict waiting (what gates merges) is
		 * cached before any chart is drawn, however many uploads arrive. */
		rc =
		    after_ingest_verdict(&d, t->project, t->commit, t->host, t->ref, &dv, &v, &err);
		aw_host_verdict_release(&v);
		if (w->gp && !d.store_rc && t->commit)
			d.store_rc = store_task_enqueue(conn, TASK_CHARTS, t->project, t->commit,
			                                t->host, t->ref);
		if (w->gp && !d.store_rc)
			d.store_rc = store_task_enqueue(conn, TASK_TRENDS, t->project, NULL,
			                                t->host, t->ref);
	} else if (!strcmp(t->kind, TASK_CHARTS)) {
		if (w->gp && t->commit)
			rc = draw_commit_charts(&d, t->project, t->commit, t->host, NULL, &err);
	} else if (!strcmp(t->kind, TASK_TRENDS)) {
		if (w->gp) /* a collector with charts off leaves trends undrawn */
			rc = aw_draw_trends(&d, t->host, t->ref, &err);
	} else if (!strcmp(t->kind, TASK_AB)) {
		if (w->gp)
			rc = aw_draw_ab(&d, t->ref, &err);
	} else if (!strcmp(t->kind, AW_TASK_RETENTION)) {
		d.store_rc = retention(p, conn);
	} else {
		aw_warn("postingest: task %" PRId64 " of unknown kind '%.32s' dropped", t->id,
		        t->kind);
	}
	if (rc < 0 && rc != -ENOSYS)
		aw_warn("postingest: %s", err ? err : strerror(-rc));
	aw_debug("postingest: %s of '%s' on '%s' (attempt %d): %u drawn, %u unchanged, %u "
	         "failed, %.1f ms",
	         t->kind, t->commit ? t->commit : "-", t->host, t->attempts, d.drawn, d.cached,
	         d.failed, (double)(aw_monotonic_ns() - t0) / 1e6);
	if (d.store_rc) {
		snprintf(message, sizeof(message), "%s", err ? err : strerror(-d.store_rc));
		rc = store_task_fail(conn, t->id, message);
		atomic_fetch_add(&p->failed, 1);
		if (t->attempts >= (int)p->o.attempts)
			aw_error("postingest: giving up on the %s task of '%s' on '%s' after %d "
			         "attempts: %s",
			         t->kind, t->commit ? t->commit : "-", t->host, t->attempts,
			         message);
	} else if (!strcmp(t->kind, TASK_TRENDS) && p->o.trends_rest_ms) {
		struct timespec now;

		/* uploads meanwhile merge into the resting task: one redraw at its end */
		clock_gettime(CLOCK_REALTIME, &now);
		rc = store_task_done_rest(conn, t->id, t->generation,
		                          (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000 +
		                              (int64_t)p->o.trends_rest_ms * 1000);
		atomic_fetch_add(&p->done, 1);
	} else {
		rc = store_task_done(conn, t->id, t->generation);
		atomic_fetch_add(&p->done, 1);
	}
	if (rc && rc != -ENOENT)
		aw_warn("postingest: cannot report task %" PRId64 ": %s (its lease runs out)",
		        t->id, strerror(-rc));
	free(err);
}

/* Claims one task and runs it. Returns 0 (one was run), -ENOENT (nothing to do) or another
 * negative errno. */
static int claim_and_run(struct worker *w)
{
	struct aw_postingest *p = w->p;
	struct store_conn *conn = NULL;
	struct task t = {0};
	int rc;

	/* a pooled connection per task: one whose link broke is replaced by the pool */
	rc = store_acquire(p->store, &conn);
	if (rc)
		return rc;
	rc = store_task_claim(conn, p->owner, (int64_t)p->o.lease_ms * 1000, (int)p->o.attempts,
	                      copy_task, &t);
	if (!rc) {
		pthread_mutex_lock(&p->lock);
		p->running++;
		/* there may be more: let an idle worker look too */
		if (p->kicks < p->n_workers)
			p->kicks++;
		pthread_cond_signal(&p->work);
		pthread_mutex_unlock(&p->lock);
		run_task(w, conn, &t);
		pthread_mutex_lock(&p->lock);
		p->running--;
		pthread_mutex_unlock(&p->lock);
	} else if (rc != -ENOENT) {
		aw_warn("postingest: cannot claim a task: %s", strerror(-rc));
	}
	task_release(&t);
	store_release(p->store, &conn);
	return rc;
}

/* Workers, and the gnuplot each spawns (a child inherits its thread's nice value), yield the
 * CPUs to the HTTP threads: on a busy collector uploads are answered first and the charts
 * follow. Linux keeps a nice value per thread. */
#define WORKER_NICE 10

static void wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t mono_ns)
{
	struct timespec now, ts;
	uint64_t at = aw_monotonic_ns(), left;

	if (mono_ns <= at)
		return;
	left = mono_ns - at;

	clock_gettime(CLOCK_REALTIME, &now); /* the condition's clock */
	ts.tv_sec = now.tv_sec + (time_t)(left / 1000000000u);
	ts.tv_nsec = now.tv_nsec + (long)(left % 1000000000u);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cond, lock, &ts);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct aw_postingest *p = w->p;
	bool again = false; /* the last claim ran a task: look for the next at once */

	if (setpriority(PRIO_PROCESS, (id_t)gettid(), WORKER_NICE))
		aw_debug("postingest worker: cannot lower its priority: %s", strerror(errno));

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct chart_task *chart;
		uint64_t now = aw_monotonic_ns();

		if (!p->stopping && !p->head && !p->kicks && !again && now < p->next_poll_ns) {
			wait_until(&p->work, &p->lock, p->next_poll_ns);
			continue;
		}
		if (p->stopping)
			break;
		chart = p->head;
		if (chart) {
			struct store_conn *conn = NULL;
			int rc;

			p->head = chart->next;
			if (!p->head)
				p->tail = NULL;
			p->depth--;
			p->charts_busy++;
			pthread_mutex_unlock(&p->lock);
			rc = store_acquire(p->store, &conn);
			if (rc)
				aw_warn("postingest: no database connection (%s); chart dropped",
				        strerror(-rc));
			else
				run_chart(w, conn, chart);
			store_release(p->store, &conn);
			chart_task_free(chart);
			pthread_mutex_lock(&p->lock);
			p->charts_busy--;
			continue;
		}
		if (p->kicks)
			p->kicks--;
		else if (!again)
			p->next_poll_ns = now + p->o.poll_ms * 1000000u;
		pthread_mutex_unlock(&p->lock);
		again = claim_and_run(w) == 0;
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* A name for this collector's claims that no other process shares: host, process and a random
 * part (a restarted collector on the same host with a recycled pid is another claimer). */
static void make_owner(char *out, size_t size)
{
	char host[64] = "unknown";
	unsigned char rnd[4] = {0};

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	aw_random_bytes(rnd, sizeof(rnd));
	snprintf(out, size, "%s/%ld/%02x%02x%02x%02x", host, (long)getpid(), rnd[0], rnd[1], rnd[2],
	         rnd[3]);
}

int aw_postingest_start(struct store *store, const struct aw_postingest_opts *o,
                        struct aw_postingest **out, char **err)
{
	struct aw_postingest *p = calloc(1, sizeof(*p));
	const struct aw_gnuplot_opts gopt = {.program = o->gnuplot, .timeout_ms = o->timeout_ms};
	unsigned n = o->workers ? o->workers : 1;
	int rc = 0;

	*out = NULL;
	if (!p)
		return aw_errorf(err, -ENOMEM, "out of memory");
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	p->store = store;
	p->o = *o;
	if (!p->o.lease_ms)
		p->o.lease_ms = 600000;
	if (!p->o.poll_ms)
		p->o.poll_ms = 500;
	if (!p->o.attempts)
		p->o.attempts = 5;
	p->queue_max = o->queue_max ? o->queue_max : 1;
	p->data_dir = strdup(o->data_dir);
	p->workers = calloc(n, sizeof(*p->workers));
	if (!p->data_dir || !p->workers) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto fail;
	}
	p->o.data_dir = p->data_dir;
	p->o.gnuplot = NULL; /* not kept: only the workers' gnuplots need it, now */
	make_owner(p->owner, sizeof(p->owner));
	/* the first look for tasks left by others (or by this collector before a crash) is now */
	p->kicks = n;
	for (unsigned i = 0; i < n; i++) {
		struct worker *w = &p->workers[i];
		char *gp_err = NULL;

		p->n_workers++;
		w->p = p;
		w->index = i;
		if (o->charts) {
			w->gp = aw_gnuplot_new(&gopt, &gp_err);
			if (!w->gp) {
				/* the analysis is still worth running; pages show charts as pending
				 */
				aw_warn("post-ingest worker %u draws no charts: %s", i + 1,
				        gp_err ? gp_err : "cannot start gnuplot");
				free(gp_err);
			}
		}
		rc = -pthread_create(&w->tid, NULL, worker_main, w);
		if (rc) {
			aw_errorf(err, rc, "cannot start a post-ingest worker: %s", strerror(-rc));
			goto fail;
		}
		w->started = true;
	}
	aw_info("post-ingest: %u worker(s) as '%s'%s", n, p->owner,
	        o->charts ? "" : " (charts off: verdicts and change points only)");
	*out = p;
	return 0;
fail:
	aw_postingest_stop(&p);
	return rc;
}

void aw_postingest_stop(struct aw_postingest **pp)
{
	struct aw_postingest *p = *pp;
	unsigned left = 0;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->n_workers; i++) {
		if (p->workers[i].started)
			pthread_join(p->workers[i].tid, NULL);
		aw_gnuplot_free(&p->workers[i].gp);
	}
	while (p->head) {
		struct chart_task *t = p->head;

		p->head = t->next;
		chart_task_free(t);
		left++;
	}
	if (left)
		aw_info("post-ingest: %u chart(s) asked for by pages not drawn at shutdown", left);
	free(p->workers);
	free(p->data_dir);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p);
	*pp = NULL;
}
