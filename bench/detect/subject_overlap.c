/* A subject whose calls overlap on an out-of-order core (bench/agents/ab_bench.py): one op, an
 * atomic fetch-and-add (`lock xadd` on x86-64) followed by a run of RUN + EXTRA dependent adds
 * that starts from a constant, so that it depends neither on the fetch-and-add nor on the
 * previous call. Consecutive calls overlap as far as the core's window lets them, so a change's
 * cost depends on how much of the window the core has to itself: what a sibling thread or
 * another tenant sharing the core takes changes it (docs/detection.md "Interleaved A/B"). On
 * the 2-vCPU Zen 5 VM of docs/benchmarks.md a call costs about 10.8 ns with RUN 80 (the run
 * longer than the window hides), and each further add 0.1 to 0.3 ns.
 * Build: cc -O2 -shared -fPIC -I runner/include -DRUN=80 -DEXTRA=0 -o liboverlap.so THIS */
#include <stddef.h>
#include <stdint.h>

#include "atomwatch/subject.h"

#ifndef RUN
#define RUN 80
#endif
#ifndef EXTRA
#define EXTRA 0
#endif

#define STR_(x) #x
#define STR(x)  STR_(x)

/* `n` copies of one instruction, by the assembler (.rept 0 emits nothing). */
#define REPT(n, insn) ".rept " STR(n) "\n\t" insn "\n\t.endr\n\t"

static void overlap_op(uint64_t *counter)
{
	uint64_t y = 3, k = 5;

#if defined(__x86_64__)
	uint64_t x = 1;

	__asm__ __volatile__("lock xaddq %0, (%1)" : "+r"(x) : "r"(counter) : "memory", "cc");
	/* the adds take k from a register: an add of an immediate might be folded at rename */
	__asm__ __volatile__(REPT(RUN, "addq %1, %0") REPT(EXTRA, "addq %1, %0")
	                     : "+r"(y)
	                     : "r"(k)
	                     : "cc");
#elif defined(__aarch64__)
	__atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST);
	__asm__ __volatile__(REPT(RUN, "add %0, %0, %1") REPT(EXTRA, "add %0, %0, %1")
	                     : "+r"(y)
	                     : "r"(k));
#else
	__atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < RUN + EXTRA; i++) {
		y += k;
		__asm__ __volatile__("" : "+r"(y));
	}
#endif
}

static const struct atomwatch_subject_op ops[] = {{"op", overlap_op}, {0, 0}};
static const struct atomwatch_subject desc = {ATOMWATCH_SUBJECT_ABI, "overlap", ops, NULL};

const struct atomwatch_subject *atomwatch_subject(void);

const struct atomwatch_subject *atomwatch_subject(void)
{
	return &desc;
}
