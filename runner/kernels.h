/* The benchmark kernels: for every primitive a timed loop with the op inlined and unrolled, the
 * same loop with an empty body, a contender loop and a plain-C twin. One file per architecture
 * (kernels_x86_64.c, kernels_aarch64.c) plus the portable C11 ops (kernels_c11.c); all of them
 * fill the same table, so the engine never knows which instructions it times.
 * Rules for kernel code: no calls, stdio, malloc or logging between the two timer reads;
 * every asm statement lists all it clobbers ("memory" included). */
#ifndef AW_KERNELS_H
#define AW_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "aw/result.h"

#define AW_UNROLL 16 /* ops per loop iteration; every iteration count is a multiple of it */

/* One counter, alone on its 128-byte line (no false sharing with anything, including the
 * adjacent-line prefetcher's partner line). Pair ops (cmpxchg16b, casp, ldxp_stxp) use
 * {value, pair_hi} as one 16-byte aligned word pair, like SLUB's {freelist, tid}. Readers use
 * value as the lock count and unlocks beside it in the same line, as SRCU's srcu_ctrs do. */
struct aw_slot {
	_Alignas(128) uint64_t value;
	uint64_t pair_hi;
	uint64_t unlocks;
	uint64_t pad[13];
};

_Static_assert(sizeof(struct aw_slot) == 128, "a slot is one 128-byte line");

/* Function-pointer ops: subject libraries and external readers (liburcu). */
struct aw_call_ops {
	void (*op)(uint64_t *counter); /* one op on the counter */
	void (*lock)(void);            /* reader lock, or NULL */
	void (*unlock)(void);          /* reader unlock, or NULL */
};

/* Arguments of one timed batch. */
struct aw_loop {
	struct aw_slot *slot;
	uint64_t iters;                 /* ops to run; a multiple of AW_UNROLL */
	uint32_t duty;                  /* nop-loop iterations after each op (0: none) */
	const struct aw_call_ops *call; /* only for the call-through kernels */
};

/* Runs one batch and returns the elapsed timer ticks (aw_timer_read() units). */
typedef uint64_t (*aw_loop_fn)(const struct aw_loop *l);

/* Contender: runs the op on `slot` with `gap` nop-loop iterations between ops until *stop
 * becomes non-zero; sets *running to 1 after its first op. Returns the number of ops done. */
typedef uint64_t (*aw_contend_fn)(struct aw_slot *slot, uint32_t gap, const volatile int *stop,
                                  volatile int *running);

enum aw_op_flag {
	AW_OP_LSE = 1u << 0,    /* needs FEAT_LSE (HWCAP_ATOMICS); skipped where absent */
	AW_OP_ATOMIC = 1u << 1, /* a correct atomic RMW: may run under contention */
	AW_OP_PAIR = 1u << 2,   /* works on the 16-byte pair {value, pair_hi}: both grow by 1 */
};

/* A primitive: "add 1 to this CPU's counter". */
struct aw_kernel {
	const char *name; /* op name as in DESIGN.md, e.g. "ldadd" */
	unsigned flags;
	aw_loop_fn timed;
	aw_loop_fn empty;
	aw_contend_fn contend;              /* NULL when the op must not run contended */
	void (*once)(struct aw_slot *slot); /* one op, not timed (tests) */
	void (*twin)(struct aw_slot *slot); /* plain-C twin of one op */
};

/* A reader lock+unlock pair built on an op (counts both value and unlocks). */
struct aw_reader_kernel {
	const char *reader; /* "srcu", "srcu_fast", "srcu_nmisafe" */
	const char *op;
	unsigned flags; /* the op's flags */
	aw_loop_fn timed;
	aw_loop_fn empty;
	void (*once)(struct aw_slot *slot); /* one lock+unlock, not timed (tests) */
};

/* The tables of this build's architecture, C11 ops included. The arrays are static. */
const struct aw_kernel *aw_kernels(unsigned *n);
const struct aw_reader_kernel *aw_reader_kernels(unsigned *n);

/* Per-arch parts, concatenated by aw_kernels() (kernels_table.c); the arch file also builds
 * the readers on the C11 ops, so that they use the architecture's own barriers. */
const struct aw_kernel *aw_arch_kernels(unsigned *n);
const struct aw_reader_kernel *aw_arch_reader_kernels(unsigned *n);
const struct aw_kernel *aw_c11_kernels(unsigned *n);

/* Call-through loops for function-pointer ops (struct aw_loop.call): the op, a reader's
 * lock+unlock, and the matching empty loops that call an empty function the same way, so that
 * subtracting them removes the call overhead. */
uint64_t aw_call_op_timed(const struct aw_loop *l);
uint64_t aw_call_op_empty(const struct aw_loop *l);
uint64_t aw_call_reader_timed(const struct aw_loop *l);
uint64_t aw_call_reader_empty(const struct aw_loop *l);

/* The reference kernel: a chain of dependent 64-bit multiplies, x = x * AW_REFERENCE_MUL, that
 * no CPU can shorten (each multiply waits for the previous one) and that touches no memory, so
 * its time per step follows only the core's clock and how much of the core the run gets. It is
 * independent of every op and subject under test: measured beside each cell, it tells how fast
 * the machine was at that moment. Changing what a step is means a new name. */
#define AW_REFERENCE_KERNEL AW_REF_MULCHAIN_NAME
#define AW_REFERENCE_MUL    UINT64_C(0x9e3779b97f4a7c15) /* odd: an odd x never becomes 0 */
#define AW_REFERENCE_SEED   UINT64_C(0x2545f4914f6cdd1d)

/* A timed batch of l->iters steps (a multiple of AW_UNROLL) on l->slot->value, which holds the
 * chain's value before and after; returns the elapsed timer ticks. l->duty and l->call are
 * ignored. aw_reference_timed() is the architecture's asm (the C one where there is none);
 * aw_reference_portable() the plain C loop every build carries. */
uint64_t aw_reference_timed(const struct aw_loop *l);
uint64_t aw_reference_portable(const struct aw_loop *l);

/* The plain-C twin: x after `steps` steps. */
uint64_t aw_reference_twin(uint64_t x, uint64_t steps);

/* ---- the family of reference kernels ----
 *
 * Beside every cell the runner times several fixed kernels, each slowed by another way the
 * machine can be slower than usual (docs/result-schema.md, "references"): mulchain-v1 above by
 * the clock alone; mulindep-v1 by what shares the core's execution ports (an SMT sibling,
 * another tenant); atomicadd-v1 by what an atomic read-modify-write costs at the moment;
 * memchase-v1 and memgather-v1 by what shares the caches, the TLB and the memory (the walk
 * the latency of one miss, the gather the misses in flight together). Each works on its own state
 * in an aw_slot (never the cell's), l->duty and l->call are ignored, and each returns the
 * elapsed timer ticks of l->iters steps (a multiple of AW_UNROLL). Changing what a step is
 * means a new name (enum aw_ref in aw/result.h holds the names). */
struct aw_reference_kernel {
	enum aw_ref id;
	const char *name;    /* aw_ref_name(id), e.g. "mulchain-v1" */
	aw_loop_fn timed;    /* the architecture's asm (the C loop where there is none) */
	aw_loop_fn portable; /* the plain C loop every build carries */
	/* puts the state before the first batch into `slot`, on the measuring thread (the walk
	 * of memchase-v1 is that CPU's node's); 0, or -ENOMEM */
	int (*start)(struct aw_slot *slot);
};

/* The family, in enum aw_ref order (mulchain-v1 first); the array is static. */
const struct aw_reference_kernel *aw_reference_kernels(unsigned *n);

/* mulindep-v1: AW_MULINDEP_CHAINS independent chains x_i = x_i * AW_REFERENCE_MUL, their
 * values in the slot's first AW_MULINDEP_CHAINS words; a step is one multiply on every chain.
 * Twelve chains keep the multipliers busy on every core we know of (latency x multiplies per
 * cycle: 3 x 1 on Intel, 3 x 3 on AMD Zen 5 (eight chains still wait for their results there),
 * 2 x 2 on Neoverse-V2), so the step's time is the multipliers' throughput, which an SMT
 * sibling or a tenant on the same core shares, where mulchain-v1 waits for each result and
 * hardly notices. */
#define AW_MULINDEP_CHAINS 12
uint64_t aw_mulindep_timed(const struct aw_loop *l);
uint64_t aw_mulindep_portable(const struct aw_loop *l);
/* The twin: the chains in the slot's first words after `steps` more steps. */
void aw_mulindep_twin(struct aw_slot *s, uint64_t steps);

/* atomicadd-v1: slot->value += 1 per step, atomically, on the slot's own line: `lock xadd` on
 * x86-64; on aarch64 `ldadd` (the old value into a register, LSE's "near" form) where
 * HWCAP_ATOMICS says the CPU has LSE, the ldxr/add/stxr/cbnz loop otherwise (the host's
 * fingerprint says which: host.stable.lse); a relaxed C11 fetch-add elsewhere. Its twin: value
 * + steps. */
uint64_t aw_atomicadd_timed(const struct aw_loop *l);
uint64_t aw_atomicadd_portable(const struct aw_loop *l);

/* memchase-v1: a dependent pointer chase, p = *p, through AW_MEMCHASE_LINES lines of
 * AW_MEMCHASE_LINE bytes (4 MiB) linked in one random cycle (Sattolo's shuffle of a fixed
 * splitmix64 stream, so the same on every host and run); slot->value holds p. The walk is
 * built once per process and NUMA node, on first use, by the measuring thread (so in its
 * node's memory), with 4 KiB pages (transparent huge pages refused: a run must not depend on
 * whether the kernel found a huge page). Each step waits for a load that misses the L1 and
 * the L2 and most TLBs, so its time follows what shares the last-level cache and the memory. */
#define AW_MEMCHASE_LINE  64
#define AW_MEMCHASE_LINES (UINT32_C(1) << 16)
#define AW_MEMCHASE_SEED  UINT64_C(0x6d656d6368617365)
uint64_t aw_memchase_timed(const struct aw_loop *l);
uint64_t aw_memchase_portable(const struct aw_loop *l);
/* The walk of the calling thread's NUMA node (built on first use); NULL when out of memory. */
const void *aw_memchase_walk(void);
/* The twin: the line index after `steps` steps from line `index`, from the permutation alone
 * (not the walk's pointers); UINT32_MAX when out of memory. */
uint32_t aw_memchase_twin(uint32_t index, uint64_t steps);

/* memgather-v1: independent loads of pseudo-random lines of memchase-v1's walk (the same 4 MiB,
 * the same pages). A step takes the line the top 16 bits of a 64-bit LCG name (x = x *
 * AW_MEMGATHER_MUL + AW_MEMGATHER_ADD, Knuth's MMIX constants), adds the word there to a sum and
 * steps the LCG; no load waits for another, so a step's time is how many misses the core keeps in
 * flight at once and what each costs: what a hash table's lookups feel, where the walk waits for
 * each miss in turn and feels only its latency. The state: the LCG in slot->value, the sum in
 * slot->pair_hi, the walk's address in slot->pad[0]. */
#define AW_MEMGATHER_MUL  UINT64_C(6364136223846793005)
#define AW_MEMGATHER_ADD  UINT64_C(1442695040888963407)
#define AW_MEMGATHER_SEED UINT64_C(0x6d656d6761746872)
_Static_assert(AW_MEMCHASE_LINES == UINT32_C(1) << 16, "memgather-v1 names a line in 16 bits");
uint64_t aw_memgather_timed(const struct aw_loop *l);
uint64_t aw_memgather_portable(const struct aw_loop *l);
/* The twin: the LCG and the sum after `steps` more steps, from the permutation alone (the walk's
 * line i holds the address of line permutation[i]); -ENOMEM, or 0. */
int aw_memgather_twin(struct aw_slot *s, uint64_t steps);

/* The architecture this build measures: "x86_64", "aarch64" or another uname machine. */
const char *aw_build_arch(void);

/* Whether the CPU has the LSE atomics (always false off aarch64). */
bool aw_cpu_has_lse(void);

#endif
