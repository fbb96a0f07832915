/* The measurement engine: one cell in a pinned thread, its batches calibrated against the timer,
 * the empty loop measured beside the op and subtracted, the counter checked afterwards. */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/stats.h"
#include "aw/util.h"
#include "internal.h"

#define START_ITERS       (AW_UNROLL * 16)
#define MAX_ITERS         (UINT64_C(1) << 34)
#define CONTENDER_WAIT_NS UINT64_C(2000000000)

struct contender {
	const struct aw_job *job;
	struct aw_slot *slot;
	volatile int stop, running;
	uint64_t done;
};

struct cell_ctx {
	const struct aw_job *job;
	const struct aw_measure_params *p;
	struct aw_cell *cell;
	struct aw_measure_detail *detail; /* optional */
	int rc;                           /* machinery failure (negative errno) */
	char reason[256];                 /* measurement failure; "" when ok */
};

static void *contender_main(void *arg)
{
	struct contender *c = arg;

	c->done = c->job->contend(c->slot, c->job->gap, &c->stop, &c->running);
	return NULL;
}

static int pinned_thread(pthread_t *t, int cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int rc;

	rc = pthread_attr_init(&attr);
	if (rc)
		return -rc;
	CPU_ZERO(&set);
	CPU_SET((size_t)cpu, &set);
	rc = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	if (!rc)
		rc = pthread_create(t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return -rc;
}

/* Doubles (or more) the batch of `timed` until one batch lasts batch_min_ns and
 * batch_min_ticks; adds the steps it ran to *ops. */
static uint64_t calibrate(aw_loop_fn timed, const struct aw_measure_params *p, struct aw_loop *l,
                          uint64_t *ops)
{
	double tick_ns = p->timer->ns_per_tick;
	double need_ns = fmax((double)p->batch_min_ns, (double)p->batch_min_ticks * tick_ns);

	l->iters = START_ITERS;
	for (;;) {
		uint64_t ticks = timed(l);
		double ns = (double)ticks * tick_ns, grow;

		*ops += l->iters;
		if ((ns >= need_ns && ticks >= p->batch_min_ticks) || l->iters >= MAX_ITERS)
			break;
		grow = ns > 0 ? need_ns / ns * 1.25 : 16;
		grow = grow < 2 ? 2 : grow > 16 ? 16 : grow;
		l->iters = (uint64_t)((double)l->iters * grow);
		l->iters -= l->iters % AW_UNROLL;
		if (l->iters > MAX_ITERS)
			l->iters = MAX_ITERS;
	}
	return l->iters;
}

static void set_reason(struct cell_ctx *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set_reason(struct cell_ctx *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->reason, sizeof(x->reason), fmt, ap);
	va_end(ap);
}

static void check_count(struct cell_ctx *x, const struct aw_slot *s, uint64_t ops,
                        uint64_t contender_ops)
{
	uint64_t want = ops + contender_ops;

	switch (x->job->check) {
	case AW_CHECK_VALUE:
		if (s->value != want)
			set_reason(x, "counter is %llu after the cell, expected %llu",
			           (unsigned long long)s->value, (unsigned long long)want);
		break;
	case AW_CHECK_PAIR:
		if (s->value != want || s->pair_hi != want)
			set_reason(x, "pair is {%llu, %llu} after the cell, expected {%llu, %llu}",
			           (unsigned long long)s->value, (unsigned long long)s->pair_hi,
			           (unsigned long long)want, (unsigned long long)want);
		break;
	case AW_CHECK_READER:
		if (s->value != want || s->unlocks != want)
			set_reason(x, "locks %llu and unlocks %llu after the cell, expected %llu",
			           (unsigned long long)s->value, (unsigned long long)s->unlocks,
			           (unsigned long long)want);
		break;
	case AW_CHECK_NONE:
		break;
	}
}

/* Fills the cell's statistics from the per-sample timings. */
static int summarize(struct cell_ctx *x, const uint64_t *timed, const uint64_t *empty,
                     uint64_t iters)
{
	size_t n = x->p->samples;
	double tick_ns = x->p->timer->ns_per_tick;
	double *gross = malloc(n * sizeof(*gross)), *base = malloc(n * sizeof(*base));
	struct aw_summary g, b;
	struct aw_cell *c = x->cell;
	int rc = -ENOMEM;

	if (!gross || !base)
		goto out;
	for (size_t i = 0; i < n; i++) {
		gross[i] = (double)timed[i] * tick_ns / (double)iters;
		base[i] = (double)empty[i] * tick_ns / (double)iters;
	}
	rc = aw_cell_set_stats(c, gross, base, n, iters, &g, &b);
	if (rc)
		goto out;
	if (x->detail) {
		x->detail->gross_p50 = g.p50;
		x->detail->gross_mean = g.mean;
		x->detail->baseline_p50 = b.p50;
	}
	rc = 0;
out:
	free(gross);
	free(base);
	return rc;
}

/* The median ns per step of the reference batches. */
static int reference_summary(struct cell_ctx *x, const uint64_t *ticks, uint32_t n, uint64_t iters)
{
	double *ns = malloc(n * sizeof(*ns));
	struct aw_summary s;

	if (!ns)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		ns[i] = (double)ticks[i] * x->p->timer->ns_per_tick / (double)iters;
	aw_summarize(ns, n, &s);
	/* 0 would mean batches shorter than a timer tick: no measurement, not an infinitely fast
	 * machine */
	x->cell->reference_ns = s.p50 > 0 ? s.p50 : NAN;
	free(ns);
	return 0;
}

static void *cell_main(void *arg)
{
	struct cell_ctx *x = arg;
	const struct aw_job *job = x->job;
	const struct aw_measure_params *p = x->p;
	struct contender con = {.job = job};
	struct aw_loop l = {.call = job->call, .duty = job->duty};
	struct aw_slot ref_slot = {.value = AW_REFERENCE_SEED};
	struct aw_loop rl = {.slot = &ref_slot};
	uint64_t *timed = NULL, *empty = NULL, *ref = NULL, ops = 0, ref_steps = 0, t_end;
	uint32_t n_ref = p->reference_samples, r = 0;
	pthread_t ct;
	int rc, con_started = 0;

	if (sched_getcpu() != job->cpu) {
		set_reason(x, "could not pin the measuring thread to CPU %d", job->cpu);
		return NULL;
	}
	l.slot = aligned_alloc(128, sizeof(*l.slot));
	timed = calloc(p->samples, sizeof(*timed));
	empty = calloc(p->samples, sizeof(*empty));
	if (n_ref)
		ref = calloc(n_ref, sizeof(*ref));
	if (!l.slot || !timed || !empty || (n_ref && !ref)) {
		x->rc = -ENOMEM;
		goto out;
	}
	memset(l.slot, 0, sizeof(*l.slot));
	if (job->thread_init)
		job->thread_init(job->thread_ctx);
	if (job->contend) {
		con.slot = l.slot;
		rc = pinned_thread(&ct, job->contender_cpu, contender_main, &con);
		if (rc) {
			set_reason(x, "cannot start a contender on CPU %d: %s", job->contender_cpu,
			           strerror(-rc));
			goto out;
		}
		con_started = 1;
		t_end = aw_monotonic_ns() + CONTENDER_WAIT_NS;
		while (!__atomic_load_n(&con.running, __ATOMIC_ACQUIRE)) {
			if (aw_monotonic_ns() > t_end) {
				set_reason(x, "the contender on CPU %d did not start within 2 s",
				           job->contender_cpu);
				goto out;
			}
			sched_yield();
		}
	}
	/* Warm-up: caches, branch predictors, frequency. */
	l.iters = START_ITERS;
	t_end = aw_monotonic_ns() + p->warmup_ns;
	do {
		job->timed(&l);
		ops += l.iters;
	} while (aw_monotonic_ns() < t_end);
	calibrate(job->timed, p, &l, &ops);
	if (n_ref) {
		/* one untimed batch first: a first run's cost (page faults, an emulator translating
		 * the code) would otherwise end the calibration on a batch far too short */
		rl.iters = START_ITERS;
		aw_reference_timed(&rl);
		calibrate(aw_reference_timed, p, &rl, &ref_steps);
	}
	/* Reference batch r goes before sample floor((2r + 1) * samples / (2 n_ref)), the middle
	 * of its share of the samples; with fewer samples than reference batches the rest follow
	 * the last sample. */
	for (uint32_t i = 0; i < p->samples; i++) {
		while (r < n_ref && (uint64_t)(2 * r + 1) * p->samples <=
		                        (uint64_t)2 * i * n_ref + 2 * n_ref - 1)
			ref[r++] = aw_reference_timed(&rl);
		empty[i] = job->empty(&l);
		timed[i] = job->timed(&l);
		ops += l.iters;
	}
	while (r < n_ref)
		ref[r++] = aw_reference_timed(&rl);
	if (con_started) {
		__atomic_store_n(&con.stop, 1, __ATOMIC_RELEASE);
		pthread_join(ct, NULL);
		con_started = 0;
	}
	check_count(x, l.slot, ops, job->contend ? con.done : 0);
	if (!x->reason[0])
		x->rc = summarize(x, timed, empty, l.iters);
	if (!x->rc && n_ref)
		x->rc = reference_summary(x, ref, n_ref, rl.iters);
out:
	if (con_started) {
		__atomic_store_n(&con.stop, 1, __ATOMIC_RELEASE);
		pthread_join(ct, NULL);
	}
	if (job->thread_fini && l.slot && timed && empty)
		job->thread_fini(job->thread_ctx);
	free(l.slot);
	free(timed);
	free(empty);
	free(ref);
	return NULL;
}

int aw_measure(const struct aw_job *job, const struct aw_measure_params *p, struct aw_cell *cell)
{
	return aw_measure_ex(job, p, cell, NULL);
}

int aw_measure_ex(const struct aw_job *job, const struct aw_measure_params *p, struct aw_cell *cell,
                  struct aw_measure_detail *detail)
{
	struct cell_ctx x = {.job = job, .p = p, .cell = cell, .detail = detail};
	uint64_t t0 = aw_monotonic_ns();
	pthread_t t;
	int rc;

	if (p->samples == 0)
		return -EINVAL;
	rc = pinned_thread(&t, job->cpu, cell_main, &x);
	if (rc == -EINVAL) {
		set_reason(&x, "cannot pin a thread to CPU %d (not in this process's CPU set)",
		           job->cpu);
	} else if (rc) {
		return rc;
	} else {
		pthread_join(t, NULL);
	}
	if (detail)
		detail->wall_ns = aw_monotonic_ns() - t0;
	if (x.rc)
		return x.rc;
	if (x.reason[0]) {
		cell->status = AW_CELL_FAILED;
		return aw_set_str(&cell->reason, x.reason);
	}
	cell->status = AW_CELL_OK;
	return 0;
}
