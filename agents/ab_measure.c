/* The measuring of one interleaved A/B cell; see ab_measure.h. The timed loops are in
 * ab_kernels.c; here is everything around them: the pinned thread, the slices and their order,
 * the levels, the rounds and the sequential test. */
#include "ab_measure.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/stats.h"
#include "aw/util.h"

#define WARMUP_NS  UINT64_C(20000000) /* slices measured and dropped first */
#define PAGE       4096
#define MAX_LOOKS  32
#define SIDES      3 /* in a slice: the reference load, the layout's base, its head */
#define SLICE_ROOM 4 /* slices kept per round of the budget: rounds lose slices to levels */
#define LOAD_REF   0
#define LOAD_BASE  1
#define LOAD_HEAD  2

/* One slice: ns per call of each load and of the empty call, the reference before and after
 * (ns per step), the layout (the loads' index in the rounds) and the order. */
struct slice {
	double ns[SIDES], empty, ref_before, ref_after;
	unsigned layout, build;
	unsigned char order[SIDES];
};

struct cell_ctx {
	const struct ab_cell_plan *p;
	struct ab_cell_result *out;
	struct slice *slices;
	size_t n_slices, cap_slices, cap_blocks;
	uint64_t *counters; /* one slot per load: the reference load, then per layout base, head */
	uint64_t *calls_made;
	/* the live loads: layout k's calls, and the index in the rounds of the loads behind them */
	struct ab_call base[AW_AB_MAX_LAYOUTS], head[AW_AB_MAX_LAYOUTS];
	unsigned load_id[AW_AB_MAX_LAYOUTS], next_id;
	unsigned load_turns; /* turns each load is measured before fresh ones replace it */
	bool fresh;          /* the loads are replaced as the cell runs */
	uint64_t rng, steps, sink;
	unsigned looks_at[MAX_LOOKS], n_looks;
	/* between looks, rounds are counted as slices come, against the last look's floor */
	double floor_ns;
	size_t fill[2 * AW_AB_MAX_LOADS]; /* slices waiting per layout and level */
	size_t rounds_counted;
	int rc;
};

const char *ab_stop_name(enum ab_stop s)
{
	switch (s) {
	case AB_STOP_DECIDED:
		return "decided";
	case AB_STOP_ROUNDS:
		return "rounds";
	case AB_STOP_SECONDS:
		return "seconds";
	}
	return "decided";
}

static uint64_t next_random(uint64_t *x)
{
	/* xorshift64*: the orders need no more than unpredictability to the subject */
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * UINT64_C(0x2545f4914f6cdd1d);
}

/* The reference's ns per step. The one place that runs the throughput reference: switch it to
 * the runner's kernel when that lands. */
static double ab_reference_ns(struct cell_ctx *x)
{
	return (double)ab_throughput_kernel(x->steps, &x->sink) / (double)x->steps;
}

/* Slot of load `load` (0: the reference load; 1 + 2k: layout k's base; 2 + 2k: its head): a
 * page of its own per load, at an offset within the page that differs per layout, so that the
 * layouts' counters fall in different cache sets. */
static uint64_t *slot(struct cell_ctx *x, unsigned load)
{
	unsigned layout = load ? (load - 1) / 2 : 0;

	return x->counters + (size_t)load * (PAGE / sizeof(uint64_t)) +
	       (size_t)((layout * 5) % 32) * (128 / sizeof(uint64_t));
}

static const struct ab_call *call_of(const struct cell_ctx *x, unsigned side, unsigned layout)
{
	return side == LOAD_REF    ? x->p->base_ref
	       : side == LOAD_BASE ? &x->base[layout]
	                           : &x->head[layout];
}

static unsigned load_of(unsigned side, unsigned layout)
{
	return side == LOAD_REF ? 0 : 1 + 2 * layout + (side == LOAD_HEAD);
}

/* Calls per piece, and reference steps, so that each lasts about its target. */
static void calibrate(struct cell_ctx *x)
{
	const struct ab_call *c = x->p->base_ref;
	uint64_t n = 16, best = UINT64_MAX, t;

	while ((t = ab_piece(c, slot(x, 0), n)) < AB_PIECE_NS / 4 && n < (UINT64_C(1) << 32)) {
		x->calls_made[0] += n;
		n *= 2;
	}
	x->calls_made[0] += n;
	for (int i = 0; i < 5; i++) {
		t = ab_piece(c, slot(x, 0), n);
		x->calls_made[0] += n;
		best = t && t < best ? t : best;
	}
	x->out->calls = best == UINT64_MAX ? n : (uint64_t)((double)n * AB_PIECE_NS / (double)best);
	if (!x->out->calls)
		x->out->calls = 1;
	x->steps = 16;
	while (ab_throughput_kernel(x->steps, &x->sink) < AB_REF_NS / 4 &&
	       x->steps < (UINT64_C(1) << 32))
		x->steps *= 2;
	best = UINT64_MAX;
	for (int i = 0; i < 5; i++) {
		t = ab_throughput_kernel(x->steps, &x->sink);
		best = t && t < best ? t : best;
	}
	if (best != UINT64_MAX)
		x->steps = (uint64_t)((double)x->steps * AB_REF_NS / (double)best);
	if (!x->steps)
		x->steps = 1;
}

/* One slice of `layout`, its three loads in `order`, stored. */
static int measure_slice(struct cell_ctx *x, unsigned layout, const unsigned char *order)
{
	const struct ab_cell_plan *p = x->p;
	struct ab_call empty = ab_empty_call(p->base_ref);
	uint64_t n = x->out->calls, scratch[2] = {0, 0};
	struct slice s;

	s.layout = x->load_id[layout];
	s.build = p->builds > 1 ? layout % p->builds : 0;
	memcpy(s.order, order, sizeof(s.order));
	s.ref_before = ab_reference_ns(x);
	for (int i = 0; i < SIDES; i++) {
		unsigned side = order[i], load = load_of(side, layout);

		s.ns[side] =
		    (double)ab_piece(call_of(x, side, layout), slot(x, load), n) / (double)n;
		x->calls_made[load] += n;
	}
	s.empty = (double)ab_piece(&empty, scratch, n) / (double)n;
	s.ref_after = ab_reference_ns(x);
	if (aw_array_reserve(&x->slices, x->n_slices, &x->cap_slices, sizeof(*x->slices), 4096))
		return -ENOMEM;
	x->slices[x->n_slices++] = s;
	return 0;
}

/* The reference's floor: the 5th percentile of every reference measured so far, its level when
 * the core runs alone (the fastest few percent are that level unless the core is never alone). */
static int reference_floor(struct cell_ctx *x, double *floor_ns)
{
	size_t n = 2 * x->n_slices;
	double *v = malloc((n ? n : 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < x->n_slices; i++) {
		v[2 * i] = x->slices[i].ref_before;
		v[2 * i + 1] = x->slices[i].ref_after;
	}
	aw_sort_doubles(v, n);
	*floor_ns = n ? aw_quantile_sorted(v, n, 0.05) : NAN;
	free(v);
	return 0;
}

static double median_of(double *v, size_t n)
{
	aw_sort_doubles(v, n);
	return aw_quantile_sorted(v, n, 0.5);
}

/* A round from the slices at idx[0 .. n). */
static int make_block(struct cell_ctx *x, const size_t *idx, size_t n, enum aw_ab_level level,
                      struct ab_block *b)
{
	double *base = malloc(n * sizeof(*base)), *ab = malloc(n * sizeof(*ab)),
	       *aa = malloc(n * sizeof(*aa)), *ref = malloc(2 * n * sizeof(*ref));
	const struct slice *first = &x->slices[idx[0]];
	int rc = -ENOMEM;

	if (!base || !ab || !aa || !ref)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct slice *s = &x->slices[idx[i]];
		double b0 = s->ns[LOAD_REF] - s->empty;

		base[i] = b0;
		ab[i] = log((s->ns[LOAD_HEAD] - s->empty) / b0);
		aa[i] = log((s->ns[LOAD_BASE] - s->empty) / b0);
		ref[2 * i] = s->ref_before;
		ref[2 * i + 1] = s->ref_after;
	}
	b->base = median_of(base, n);
	b->head = b->base * exp(median_of(ab, n));
	b->aa_head = b->base * exp(median_of(aa, n));
	b->ref = median_of(ref, 2 * n);
	b->level = level;
	b->layout = first->layout;
	b->build = first->build;
	b->slices = (unsigned)n;
	b->head_first = b->aa_head_first = false;
	for (int i = 0; i < SIDES && first->order[i] != LOAD_REF; i++) {
		b->head_first |= first->order[i] == LOAD_HEAD;
		b->aa_head_first |= first->order[i] == LOAD_BASE;
	}
	rc = 0;
out:
	free(base);
	free(ab);
	free(aa);
	free(ref);
	return rc;
}

/* Whether the loads with index `id` in the rounds are still measured. */
static bool live(const struct cell_ctx *x, size_t id)
{
	for (unsigned k = 0; k < x->p->layouts; k++)
		if (x->load_id[k] == id)
			return true;
	return false;
}

/* The rounds from every slice so far: each slice classified against the reference's floor, the
 * slices of one level and layout grouped in time order, AB_SLICES_PER_ROUND to a round; a group
 * of at least half a round that is left over makes a round too once no more slices will come to
 * it (its loads replaced, or `last`). Mixed slices and slices whose calls cannot be told from
 * the empty call are set aside. */
static int make_rounds(struct cell_ctx *x, bool last)
{
	size_t groups = 2 * (size_t)x->next_id, *fill = x->fill;
	size_t *idx = malloc(groups * AB_SLICES_PER_ROUND * sizeof(*idx));
	struct ab_cell_result *out = x->out;
	double floor_ns = NAN;
	int rc = reference_floor(x, &floor_ns);

	out->n_blocks = 0;
	memset(out->level_slices, 0, sizeof(out->level_slices));
	out->floor_ns = x->floor_ns = floor_ns;
	memset(x->fill, 0, sizeof(x->fill));
	if (!rc && !idx)
		rc = -ENOMEM;
	for (size_t i = 0; i < x->n_slices && !rc; i++) {
		const struct slice *s = &x->slices[i];
		enum aw_ab_level level =
		    aw_ab_classify(s->ref_before, s->ref_after, floor_ns, AB_LEVEL_RATIO);
		size_t g = 2 * s->layout + (level == AW_AB_LEVEL_SHARED);
		bool resolved = true;

		for (int k = 0; k < SIDES; k++)
			resolved &= s->ns[k] - s->empty > 0;
		out->level_slices[level]++;
		if (level == AW_AB_LEVEL_MIXED || !resolved)
			continue; /* set aside */
		idx[g * AB_SLICES_PER_ROUND + fill[g]++] = i;
		if (fill[g] < AB_SLICES_PER_ROUND)
			continue;
		rc = aw_array_reserve(&out->blocks, out->n_blocks, &x->cap_blocks,
		                      sizeof(*out->blocks), 64);
		if (!rc)
			rc = make_block(x, idx + g * AB_SLICES_PER_ROUND, fill[g], level,
			                &out->blocks[out->n_blocks++]);
		fill[g] = 0;
	}
	for (size_t g = 0; g < groups && !rc; g++) {
		bool done = last || !live(x, g / 2);

		if (!done || fill[g] < AB_SLICES_PER_ROUND / 2)
			continue;
		rc = aw_array_reserve(&out->blocks, out->n_blocks, &x->cap_blocks,
		                      sizeof(*out->blocks), 64);
		if (!rc)
			rc = make_block(x, idx + g * AB_SLICES_PER_ROUND, fill[g],
			                g % 2 ? AW_AB_LEVEL_SHARED : AW_AB_LEVEL_ALONE,
			                &out->blocks[out->n_blocks++]);
	}
	x->rounds_counted = out->n_blocks;
	if (!rc && out->n_blocks > x->p->max_rounds)
		out->n_blocks = x->p->max_rounds; /* the rounds beyond the budget: set aside */
	free(idx);
	return rc;
}

/* Counts the newest slice towards a round, against the last look's floor. */
static void count_slice(struct cell_ctx *x)
{
	const struct slice *s = &x->slices[x->n_slices - 1];
	enum aw_ab_level level =
	    aw_ab_classify(s->ref_before, s->ref_after, x->floor_ns, AB_LEVEL_RATIO);
	size_t g = 2 * s->layout + (level == AW_AB_LEVEL_SHARED);
	bool resolved = true;

	for (int k = 0; k < SIDES; k++)
		resolved &= s->ns[k] - s->empty > 0;
	if (level == AW_AB_LEVEL_MIXED || !resolved)
		return;
	if (++x->fill[g] == AB_SLICES_PER_ROUND) {
		x->fill[g] = 0;
		x->rounds_counted++;
	}
}

/* The decision on the rounds so far. */
static int decide(struct cell_ctx *x, bool last)
{
	struct ab_cell_result *out = x->out;
	struct aw_ab_round *r;
	int rc = make_rounds(x, last);

	if (rc)
		return rc;
	r = malloc((out->n_blocks ? out->n_blocks : 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < out->n_blocks; i++) {
		const struct ab_block *b = &out->blocks[i];

		r[i] = (struct aw_ab_round){log(b->head / b->base), log(b->aa_head / b->base),
		                            b->level, (int)b->layout};
	}
	rc = aw_ab_decide(r, out->n_blocks, &x->p->rule, &out->decision);
	free(r);
	out->looks++;
	return rc;
}

/* Whether a level is common among the slices but has too few rounds for an interval: an
 * "unchanged" must wait for it (AB_LEVEL_SEEN). */
static bool level_pending(const struct ab_cell_result *out)
{
	size_t seen = out->level_slices[AW_AB_LEVEL_ALONE] + out->level_slices[AW_AB_LEVEL_SHARED];

	for (int l = AW_AB_LEVEL_ALONE; l <= AW_AB_LEVEL_SHARED; l++)
		if ((double)out->level_slices[l] >= AB_LEVEL_SEEN * (double)seen &&
		    isnan(out->decision.level[l].lo))
			return true;
	return false;
}

/* The six orders of the three loads, each once per six slices in a random order (a
 * Fisher-Yates shuffle), so that no load is favoured by going first or last. */
static void next_orders(struct cell_ctx *x, unsigned char orders[6][SIDES])
{
	static const unsigned char all[6][SIDES] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
	                                            {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};

	memcpy(orders, all, sizeof(all));
	for (int i = 5; i > 0; i--) {
		int j = (int)(next_random(&x->rng) % (uint64_t)(i + 1));
		unsigned char t[SIDES];

		memcpy(t, orders[i], SIDES);
		memcpy(orders[i], orders[j], SIDES);
		memcpy(orders[j], t, SIDES);
	}
}

static int check_counters(struct cell_ctx *x)
{
	unsigned loads = 1 + 2 * x->p->layouts;

	if (!x->p->base_ref->op)
		return 0; /* readers keep their own state */
	for (unsigned l = 0; l < loads; l++)
		if (*slot(x, l) != x->calls_made[l]) {
			x->out->reason = aw_asprintf(
			    "the %s's counter is %llu after the cell, expected %llu",
			    l == 0  ? "base"
			    : l % 2 ? "base (a layout's load)"
			            : "head",
			    (unsigned long long)*slot(x, l), (unsigned long long)x->calls_made[l]);
			return x->out->reason ? 0 : -ENOMEM;
		}
	return 0;
}

/* Warms a fresh load with pieces that are not kept: its code and data come into the caches
 * and predictors as the loads it replaces had them. */
static void warm_load(struct cell_ctx *x, unsigned k)
{
	uint64_t n = x->out->calls;

	for (int i = 0; i < 2; i++)
		for (unsigned side = LOAD_BASE; side <= LOAD_HEAD; side++) {
			unsigned load = load_of(side, k);

			ab_piece(call_of(x, side, k), slot(x, load), n);
			x->calls_made[load] += n;
		}
}

/* Replaces every layout's loads with fresh copies, each a layout of its own in the rounds from
 * here on (AB_LOAD_TURNS); turn_ns: how long the last turn of the layouts took. */
static void fresh_loads(struct cell_ctx *x, uint64_t turn_ns)
{
	const struct ab_cell_plan *p = x->p;
	uint64_t t0 = aw_monotonic_ns(), took;

	if (x->next_id + p->layouts > AW_AB_MAX_LOADS) {
		x->fresh = false;
		return;
	}
	for (unsigned k = 0; k < p->layouts; k++) {
		if (p->reload(p->reload_ctx, k, &x->base[k], &x->head[k])) {
			x->fresh = false;
			break;
		}
		x->load_id[k] = x->next_id++;
		warm_load(x, k);
	}
	took = aw_monotonic_ns() - t0;
	x->out->reload_s += (double)took / 1e9;
	/* the loads it made measured at least as long as loading them took */
	x->load_turns = AB_LOAD_TURNS;
	if (turn_ns && took > AB_LOAD_TURNS * turn_ns)
		x->load_turns = (unsigned)((took + turn_ns - 1) / turn_ns);
}

static void run_cell(struct cell_ctx *x)
{
	const struct ab_cell_plan *p = x->p;
	struct ab_cell_result *out = x->out;
	unsigned char orders[6][SIDES];
	unsigned layout_order[AW_AB_MAX_LAYOUTS], next_look = 0, at = 0, turns = 0;
	uint64_t t0 = aw_monotonic_ns(), end, warm_end, turn_t0 = t0;
	size_t slice_cap = (size_t)p->max_rounds * AB_SLICES_PER_ROUND * SLICE_ROOM;
	bool decided = false, warm = true;

	calibrate(x);
	warm_end = aw_monotonic_ns() + WARMUP_NS;
	end = t0 + (uint64_t)(fmax(0, p->budget_s) * 1e9);
	out->stop = AB_STOP_ROUNDS;
	for (unsigned l = 0; l < p->layouts; l++)
		layout_order[l] = l;
	while (!x->rc) {
		unsigned layout;

		if (p->stop && *p->stop) {
			x->rc = -EINTR;
			break;
		}
		if (warm && aw_monotonic_ns() >= warm_end) {
			/* the warm-up's slices give the first floor, then go */
			x->rc = reference_floor(x, &x->floor_ns);
			x->n_slices = 0;
			warm = false;
			if (x->rc)
				break;
		}
		/* the layouts take turns a round's worth of slices at a time, in a random order
		 * per turn; every load_turns turns, fresh loads */
		if (at % (AB_SLICES_PER_ROUND * p->layouts) == 0) {
			if (at && x->fresh && ++turns >= x->load_turns) {
				fresh_loads(x, aw_monotonic_ns() - turn_t0);
				turns = 0;
			}
			turn_t0 = aw_monotonic_ns();
			for (unsigned i = p->layouts - 1; i > 0; i--) {
				unsigned j = (unsigned)(next_random(&x->rng) % (i + 1)), t;

				t = layout_order[i];
				layout_order[i] = layout_order[j];
				layout_order[j] = t;
			}
		}
		layout = layout_order[(at / AB_SLICES_PER_ROUND) % p->layouts];
		if (at % 6 == 0)
			next_orders(x, orders);
		x->rc = measure_slice(x, layout, orders[at % 6]);
		if (x->rc || warm)
			continue;
		at++;
		count_slice(x);
		if (aw_monotonic_ns() >= end) {
			out->stop = AB_STOP_SECONDS;
			break;
		}
		if (x->n_slices >= slice_cap)
			break;
		if (x->rounds_counted < x->looks_at[next_look])
			continue;
		/* a look: every slice classified again against the floor of all of them */
		x->rc = decide(x, false);
		if (x->rc)
			break;
		if (out->n_blocks < x->looks_at[next_look])
			continue; /* so classified, fewer rounds: the look waits for them */
		if (aw_ab_verdict_decides(out->decision.verdict) &&
		    !(out->decision.verdict == AW_AB_VERDICT_UNCHANGED && level_pending(out))) {
			decided = true;
			out->stop = AB_STOP_DECIDED;
			break;
		}
		if (++next_look >= x->n_looks)
			break; /* the last look: the rounds ran out */
	}
	if (x->rc)
		return;
	/* the document's rounds: those of the look that decided (what the collector will find
	 * is what decided), else every slice, a left-over group of half a round included */
	if (!decided)
		x->rc = decide(x, true);
	out->slices = x->n_slices;
	out->set_aside = x->n_slices; /* in no round: a mixed level, too fast, left over */
	for (size_t b = 0; b < out->n_blocks; b++)
		out->set_aside -= out->blocks[b].slices;
	out->loads = x->next_id;
	out->seconds = (double)(aw_monotonic_ns() - t0) / 1e9;
	if (!x->rc)
		x->rc = check_counters(x);
}

static void *cell_main(void *arg)
{
	struct cell_ctx *x = arg;

	if (sched_getcpu() != x->p->cpu) {
		x->out->reason =
		    aw_asprintf("could not pin the measuring thread to CPU %d", x->p->cpu);
		x->rc = x->out->reason ? 0 : -ENOMEM;
		return NULL;
	}
	run_cell(x);
	return NULL;
}

int ab_measure_cell(const struct ab_cell_plan *plan, struct ab_cell_result *out)
{
	struct ab_cell_plan p = *plan;
	struct cell_ctx x = {.p = &p, .out = out, .rng = plan->seed | 1};
	unsigned loads = 1 + 2 * plan->layouts;
	pthread_attr_t attr;
	cpu_set_t set;
	pthread_t t;
	int rc;

	memset(out, 0, sizeof(*out));
	p.rule.levels = true;
	x.n_looks = aw_ab_looks(p.max_rounds, x.looks_at, MAX_LOOKS);
	if (x.n_looks > MAX_LOOKS)
		x.n_looks = MAX_LOOKS;
	p.rule.looks = x.n_looks;
	for (unsigned k = 0; k < plan->layouts; k++) {
		x.base[k] = plan->base[k];
		x.head[k] = plan->head[k];
		x.load_id[k] = k;
	}
	x.next_id = plan->layouts;
	x.load_turns = AB_LOAD_TURNS;
	x.fresh = plan->reload != NULL;
	x.counters = aligned_alloc(PAGE, (size_t)loads * PAGE);
	x.calls_made = calloc(loads, sizeof(*x.calls_made));
	if (!x.counters || !x.calls_made) {
		rc = -ENOMEM;
		goto out;
	}
	memset(x.counters, 0, (size_t)loads * PAGE);
	rc = -pthread_attr_init(&attr);
	if (rc)
		goto out;
	CPU_ZERO(&set);
	CPU_SET((size_t)plan->cpu, &set);
	rc = -pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	if (!rc)
		rc = -pthread_create(&t, &attr, cell_main, &x);
	pthread_attr_destroy(&attr);
	if (rc == -EINVAL) {
		out->reason =
		    aw_asprintf("cannot pin a thread to CPU %d (not in this process's CPU "
		                "set)",
		                plan->cpu);
		rc = out->reason ? 0 : -ENOMEM;
		goto out;
	}
	if (rc)
		goto out;
	pthread_join(t, NULL);
	rc = x.rc;
out:
	free(x.slices);
	free(x.counters);
	free(x.calls_made);
	return rc;
}

void ab_cell_result_release(struct ab_cell_result *r)
{
	free(r->reason);
	free(r->blocks);
	memset(r, 0, sizeof(*r));
}
