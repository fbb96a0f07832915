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

/* The reference kernels of one cell: each with its own state, its calibrated batch, and its
 * share of the batches timed between the cell's samples. */
struct references {
	const struct aw_reference_kernel *kernel[AW_REF_COUNT];
	struct aw_slot slot[AW_REF_COUNT];
	struct aw_loop loop[AW_REF_COUNT];
	unsigned n_kernels;
	uint32_t per_kernel; /* batches of each kernel */
	uint32_t total;      /* n_kernels * per_kernel */
	uint32_t next;       /* the next batch to time; batch r is kernel r % n_kernels's */
	uint64_t *ticks;     /* total, in timing order */
};

/* Picks the kernels of p->reference_kernels and allocates their batches. 0 or -ENOMEM. */
static int references_init(struct references *rf, const struct aw_measure_params *p)
{
	unsigned n;
	const struct aw_reference_kernel *family = aw_reference_kernels(&n);

	memset(rf, 0, sizeof(*rf));
	if (!p->reference_samples)
		return 0;
	for (unsigned k = 0; k < n; k++)
		if (p->reference_kernels & (1u << family[k].id))
			rf->kernel[rf->n_kernels++] = &family[k];
	rf->per_kernel = p->reference_samples;
	rf->total = rf->per_kernel * rf->n_kernels;
	if (rf->total && !(rf->ticks = calloc(rf->total, sizeof(*rf->ticks))))
		return -ENOMEM;
	return 0;
}

/* Each kernel's starting state, one untimed batch (a first run's cost, page faults or an
 * emulator translating the code, would otherwise end the calibration on a batch far too
 * short), then its batch calibrated like the cell's. On the measuring thread, after the
 * cell's calibration. 0 or -ENOMEM. */
static int references_calibrate(struct references *rf, const struct aw_measure_params *p)
{
	for (unsigned k = 0; k < rf->n_kernels; k++) {
		uint64_t steps = 0;
		int rc = rf->kernel[k]->start(&rf->slot[k]);

		if (rc)
			return rc;
		rf->loop[k] = (struct aw_loop){.slot = &rf->slot[k], .iters = START_ITERS};
		rf->kernel[k]->timed(&rf->loop[k]);
		calibrate(rf->kernel[k]->timed, p, &rf->loop[k], &steps);
	}
	return 0;
}

/* Times the next reference batch, the kernels taking turns. */
static void references_time_one(struct references *rf)
{
	unsigned k = rf->next % rf->n_kernels;

	rf->ticks[rf->next++] = rf->kernel[k]->timed(&rf->loop[k]);
}

/* Each kernel's median ns per step over its batches into the cell's ref_ns. */
static int references_summary(struct references *rf, struct cell_ctx *x)
{
	double *ns = malloc(rf->per_kernel * sizeof(*ns));
	struct aw_summary s;

	if (!ns)
		return -ENOMEM;
	for (unsigned k = 0; k < rf->n_kernels; k++) {
		for (uint32_t i = 0; i < rf->per_kernel; i++)
			ns[i] = (double)rf->ticks[i * rf->n_kernels + k] *
			        x->p->timer->ns_per_tick / (double)rf->loop[k].iters;
		aw_summarize(ns, rf->per_kernel, &s);
		/* 0 would mean batches shorter than a timer tick: no measurement, not an
		 * infinitely fast machine */
		x->cell->ref_ns[rf->kernel[k]->id] = s.p50 > 0 ? s.p50 : NAN;
	}
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
	struct references *rf = NULL;
	uint64_t *timed = NULL, *empty = NULL, ops = 0, t_end;
	uint32_t n_ref;
	pthread_t ct;
	int rc, con_started = 0;

	if (sched_getcpu() != job->cpu) {
		set_reason(x, "could not pin the measuring thread to CPU %d", job->cpu);
		return NULL;
	}
	l.slot = aligned_alloc(128, sizeof(*l.slot));
	timed = calloc(p->samples, sizeof(*timed));
	empty = calloc(p->samples, sizeof(*empty));
	rf = aligned_alloc(128, sizeof(*rf));
	if (rf)
		memset(rf, 0, sizeof(*rf));
	if (!l.slot || !timed || !empty || !rf || references_init(rf, p)) {
		x->rc = -ENOMEM;
		goto out;
	}
	n_ref = rf->total;
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
	x->rc = references_calibrate(rf, p);
	if (x->rc)
		goto out;
	/* Reference batch r goes before sample floor((2r + 1) * samples / (2 n_ref)), the middle
	 * of its share of the samples, the kernels taking turns (so each sees the whole cell);
	 * with fewer samples than reference batches the rest follow the last sample. */
	for (uint32_t i = 0; i < p->samples; i++) {
		while (rf->next < n_ref && (uint64_t)(2 * rf->next + 1) * p->samples <=
		                               (uint64_t)2 * i * n_ref + 2 * n_ref - 1)
			references_time_one(rf);
		empty[i] = job->empty(&l);
		timed[i] = job->timed(&l);
		ops += l.iters;
	}
	while (rf->next < n_ref)
		references_time_one(rf);
	if (con_started) {
		__atomic_store_n(&con.stop, 1, __ATOMIC_RELEASE);
		pthread_join(ct, NULL);
		con_started = 0;
	}
	check_count(x, l.slot, ops, job->contend ? con.done : 0);
	if (!x->reason[0])
		x->rc = summarize(x, timed, empty, l.iters);
	if (!x->rc && n_ref)
		x->rc = references_summary(rf, x);
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
	if (rf)
		free(rf->ticks);
	free(rf);
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
