/* The measuring of one interleaved A/B cell (agents/ab.c): short slices, each the base's
 * reference load, the base and the head of one layout called in a random order between two
 * measurements of a throughput reference that classify the slice's level; slices of one level
 * and layout grouped into the document's rounds; a sequential test that stops once the cell is
 * decided, within a budget of rounds and seconds (docs/detection.md "Interleaved A/B"). */
#ifndef AW_AGENT_AB_MEASURE_H
#define AW_AGENT_AB_MEASURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ab_kernels.h"
#include "aw/ab.h"

/* A slice's calls into one load last about this long, so that a slice (three loads, the empty
 * call and the reference twice) lasts about 60 us: under a quarter of the spells this 2-vCPU VM
 * stays in one level (docs/benchmarks.md "The machine's levels"). */
#define AB_PIECE_NS UINT64_C(15000)
#define AB_REF_NS   UINT64_C(4000) /* one measurement of the reference */
/* Slices per round: a round's medians are steady (their spread over rounds is a few times the
 * spread within one), and 1000 rounds still hold a minute of slices. */
#define AB_SLICES_PER_ROUND 64
#define AB_LEVEL_RATIO      1.05 /* a reference this much above its floor is not alone */
/* A level this common among the slices must have an interval before the cell is called
 * unchanged: a change that costs nothing alone must not pass because the rounds of the level
 * where it costs were too few to judge. */
#define AB_LEVEL_SEEN 0.05
/* Fresh loads: the live loads of every layout are replaced by fresh copies (addresses and memory
 * of their own) once each has been measured for AB_LOAD_TURNS rounds' worth of slices (enough
 * for a level seen an eighth of the time to fill half a round), or for as long as the last
 * reload took when that is longer, so that loading takes at most about half of the cell's time:
 * where the loads differ on their own, more loads narrow the interval more than more rounds of
 * the same loads. Each load is a layout of its own in the rounds, up to AW_AB_MAX_LOADS; then
 * the last loads stay. */
#define AB_LOAD_TURNS 4

struct ab_cell_plan {
	int cpu;
	unsigned layouts;               /* N, 1 ... AW_AB_MAX_LAYOUTS */
	const struct ab_call *base_ref; /* the base's first load, which every slice measures */
	const struct ab_call *base;     /* [layouts] the base's other loads, one per layout */
	const struct ab_call *head;     /* [layouts] the head's loads */
	unsigned builds;     /* code layouts: layout k's loads are build k mod builds (0, 1: one) */
	unsigned max_rounds; /* rounds at most (AW_AB_MIN_ROUNDS ...) */
	double budget_s;     /* seconds of measuring at most */
	struct aw_ab_rule rule; /* threshold and alpha; looks and levels set here */
	uint64_t seed;          /* the orders' randomness */
	volatile int *stop;     /* raised: stop between slices */
	/* Replaces layout k's two loads with fresh copies and points *base and *head at them;
	 * 0, or a negative errno when none could be loaded (the old loads stay, and the cell goes
	 * on with them, replacing no more). Called on the measuring thread. NULL: the loads stay
	 * for the whole cell (--keep-loads). */
	int (*reload)(void *ctx, unsigned k, struct ab_call *base, struct ab_call *head);
	void *reload_ctx;
};

/* One round of the document: the medians over its slices. */
struct ab_block {
	double base;    /* the base's reference load, net ns per call */
	double head;    /* base x the median of the slices' head / base */
	double aa_head; /* base x the median of the slices' base of the layout / base */
	double ref;     /* the throughput reference, ns per step */
	enum aw_ab_level level;
	unsigned layout;
	unsigned build; /* the code layout of its loads */
	unsigned slices;
	bool head_first;    /* in the first slice, head before the reference load */
	bool aa_head_first; /* and the layout's base load before it */
};

enum ab_stop {
	AB_STOP_DECIDED, /* the sequential test decided */
	AB_STOP_ROUNDS,  /* the rounds ran out undecided */
	AB_STOP_SECONDS, /* the seconds ran out undecided */
};

const char *ab_stop_name(enum ab_stop s);

struct ab_cell_result {
	char *reason; /* set: the cell failed (the counter, a CPU); caller frees */
	struct ab_block *blocks;
	size_t n_blocks;
	size_t slices, set_aside; /* measured; of them not in a round (mixed level, too fast) */
	size_t level_slices[AW_AB_LEVEL_COUNT]; /* the slices of each level, at the last look */
	double seconds;                         /* spent measuring (warm-up and looks included) */
	enum ab_stop stop;
	unsigned looks;  /* looks taken */
	double floor_ns; /* the reference's floor, ns per step */
	uint64_t calls;  /* calls per piece */
	unsigned loads;  /* loads of each side measured (the layouts of the rounds) */
	double reload_s; /* spent loading fresh copies */
	struct aw_ab_decision decision; /* at the last look: what the collector will find */
};

/* Measures one cell on plan->cpu in a thread pinned there. Returns 0 (out->reason set when the
 * cell failed), -EINTR when *plan->stop was raised, or a negative errno (-ENOMEM, a thread that
 * cannot start). Release *out with ab_cell_result_release() in every case. */
int ab_measure_cell(const struct ab_cell_plan *plan, struct ab_cell_result *out);

void ab_cell_result_release(struct ab_cell_result *r);

#endif
