/* The timed loops of the interleaved A/B (agents/ab_measure.c): a piece of calls into a subject
 * library, and the throughput reference that classifies each round's level. Built without
 * sanitizers (agents/CMakeLists.txt), like the runner's kernels. */
#ifndef AW_AGENT_AB_KERNELS_H
#define AW_AGENT_AB_KERNELS_H

#include <stdint.h>

/* What a piece calls: an op (`op` set) or a reader's lock and unlock (both set). */
struct ab_call {
	void (*op)(uint64_t *counter);
	void (*lock)(void), (*unlock)(void);
};

/* The empty call of the same kind as `c` (an op or a reader), whose piece is subtracted. */
struct ab_call ab_empty_call(const struct ab_call *c);

/* Calls `c` n times (op with `counter`), timed: the nanoseconds the n calls took. */
uint64_t ab_piece(const struct ab_call *c, uint64_t *counter, uint64_t n);

/* The throughput reference (AB_REFERENCE_KERNEL): `steps` rounds of one multiply on each of
 * twelve independent chains, which keep every multiplier of a core busy, so that it slows when
 * another tenant shares the core's ports while a dependent chain would not. Returns the
 * nanoseconds it took, and folds the chains into *sink so that they are not optimised away.
 * Private to the agent until the runner's family of reference kernels lands
 * (runner/kernels*.{c,h}); ab_reference_ns() in ab_measure.c is the one caller to switch. */
uint64_t ab_throughput_kernel(uint64_t steps, uint64_t *sink);

#define AB_REFERENCE_KERNEL "throughput12-v1" /* the documents' reference_kernel */

#endif
