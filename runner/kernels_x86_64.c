/* x86-64 kernels: `incq` (what the kernel's this_cpu_inc is), the lock-prefixed RMWs, xchg,
 * prefetchw + lock inc, and cmpxchg16b (this_cpu_cmpxchg_double). Readers use the kernel's
 * barriers: smp_mb() is `lock addl $0,-4(%rsp)`, smp_mb__{before,after}_atomic() is a compiler
 * barrier because every lock-prefixed op is already a full barrier. */
#include <stdbool.h>
#include <string.h>

#include "kernels_gen.h"

#include "steps_x86_64.h"

AW_DEFINE_OP(plain, AW_X86_PLAIN)
AW_DEFINE_OP(lock_inc, AW_X86_LOCK_INC)
AW_DEFINE_OP(lock_xadd, AW_X86_LOCK_XADD)
AW_DEFINE_OP(cas, AW_X86_CAS)
AW_DEFINE_OP(xchg, AW_X86_XCHG)
AW_DEFINE_OP(prefetchw_lock_inc, AW_X86_PREFETCHW_LOCK_INC)
AW_DEFINE_OP(cmpxchg16b, AW_X86_CMPXCHG16B)

#define twin_plain              aw_twin_inc
#define twin_lock_inc           aw_twin_inc
#define twin_lock_xadd          aw_twin_inc
#define twin_cas                aw_twin_inc
#define twin_xchg               aw_twin_inc
#define twin_prefetchw_lock_inc aw_twin_inc
#define twin_cmpxchg16b         aw_twin_pair_inc

static const struct aw_kernel x86[] = {
    AW_KERNEL(plain, 0, 0),
    AW_KERNEL(lock_inc, AW_OP_ATOMIC, 1),
    AW_KERNEL(lock_xadd, AW_OP_ATOMIC, 1),
    AW_KERNEL(cas, AW_OP_ATOMIC, 1),
    AW_KERNEL(xchg, 0, 0),
    AW_KERNEL(prefetchw_lock_inc, AW_OP_ATOMIC, 1),
    AW_KERNEL(cmpxchg16b, AW_OP_ATOMIC | AW_OP_PAIR, 1),
};

const struct aw_kernel *aw_arch_kernels(unsigned *n)
{
	*n = sizeof(x86) / sizeof(x86[0]);
	return x86;
}

/* ---- readers ---- */

#define SMP_MB()           __asm__ __volatile__("lock addl $0, -4(%%rsp)" : : : "memory", "cc")
#define MB_AROUND_ATOMIC() AW_BARRIER()

#define READERS_ON(op, INC)                             \
	AW_DEFINE_READER(srcu, op, INC, SMP_MB, SMP_MB) \
	AW_DEFINE_READER(srcu_fast, op, INC, AW_BARRIER, AW_BARRIER)

#define NMISAFE_ON(op, INC) \
	AW_DEFINE_READER(srcu_nmisafe, op, INC, MB_AROUND_ATOMIC, MB_AROUND_ATOMIC)

READERS_ON(plain, AW_X86_PLAIN)
READERS_ON(lock_inc, AW_X86_LOCK_INC)
READERS_ON(lock_xadd, AW_X86_LOCK_XADD)
READERS_ON(c11_relaxed, AW_C11_RELAXED_STEP)
NMISAFE_ON(lock_inc, AW_X86_LOCK_INC)
NMISAFE_ON(lock_xadd, AW_X86_LOCK_XADD)
NMISAFE_ON(c11_relaxed, AW_C11_RELAXED_STEP)
NMISAFE_ON(c11_seqcst, AW_C11_SEQCST_STEP)

static const struct aw_reader_kernel readers[] = {
    AW_READER(srcu, plain, 0),
    AW_READER(srcu, lock_inc, AW_OP_ATOMIC),
    AW_READER(srcu, lock_xadd, AW_OP_ATOMIC),
    AW_READER(srcu, c11_relaxed, AW_OP_ATOMIC),
    AW_READER(srcu_fast, plain, 0),
    AW_READER(srcu_fast, lock_inc, AW_OP_ATOMIC),
    AW_READER(srcu_fast, lock_xadd, AW_OP_ATOMIC),
    AW_READER(srcu_fast, c11_relaxed, AW_OP_ATOMIC),
    AW_READER(srcu_nmisafe, lock_inc, AW_OP_ATOMIC),
    AW_READER(srcu_nmisafe, lock_xadd, AW_OP_ATOMIC),
    AW_READER(srcu_nmisafe, c11_relaxed, AW_OP_ATOMIC),
    AW_READER(srcu_nmisafe, c11_seqcst, AW_OP_ATOMIC),
};

const struct aw_reader_kernel *aw_arch_reader_kernels(unsigned *n)
{
	*n = sizeof(readers) / sizeof(readers[0]);
	return readers;
}

/* ---- the reference kernel ---- */

/* imul r64, r64: one multiply on the chain (3 cycles of latency on every recent x86-64 core).
 * It writes the flags and touches no memory. */
#define REFERENCE_STEP(x, k) __asm__ __volatile__("imulq %1, %0" : "+r"(x) : "r"(k) : "cc")

AW_DEFINE_REFERENCE(aw_reference_timed, REFERENCE_STEP)

/* mulindep-v1: one imul on each of twelve independent chains. */
#define MULINDEP_STEP(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, k)           \
	__asm__ __volatile__(                                                        \
	    "imulq %12, %0\n\t"                                                      \
	    "imulq %12, %1\n\t"                                                      \
	    "imulq %12, %2\n\t"                                                      \
	    "imulq %12, %3\n\t"                                                      \
	    "imulq %12, %4\n\t"                                                      \
	    "imulq %12, %5\n\t"                                                      \
	    "imulq %12, %6\n\t"                                                      \
	    "imulq %12, %7\n\t"                                                      \
	    "imulq %12, %8\n\t"                                                      \
	    "imulq %12, %9\n\t"                                                      \
	    "imulq %12, %10\n\t"                                                     \
	    "imulq %12, %11"                                                         \
	    : AW_MULINDEP_OPERANDS(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11) \
	    : "r"(k)                                                                 \
	    : "cc")

AW_DEFINE_MULINDEP(aw_mulindep_timed, MULINDEP_STEP)

/* atomicadd-v1: the lock_xadd op's own loop. */
uint64_t aw_atomicadd_timed(const struct aw_loop *l)
{
	struct aw_loop plain = *l;

	plain.duty = 0;
	return timed_lock_xadd(&plain);
}

/* memchase-v1: one load whose result is the next address. */
#define MEMCHASE_STEP(p) __asm__ __volatile__("movq (%0), %0" : "+r"(p) : : "memory")

AW_DEFINE_MEMCHASE(aw_memchase_timed, MEMCHASE_STEP)

/* memgather-v1: the line the LCG's top 16 bits name, its word added to sum, the LCG's step. */
#define MEMGATHER_STEP(x, sum, walk, mul, add)                          \
	do {                                                            \
		uint64_t line_;                                         \
                                                                        \
		__asm__ __volatile__("movq %0, %2\n\t"                  \
		                     "shrq $48, %2\n\t"                 \
		                     "shlq $6, %2\n\t"                  \
		                     "addq (%3,%2), %1\n\t"             \
		                     "imulq %4, %0\n\t"                 \
		                     "addq %5, %0"                      \
		                     : "+r"(x), "+r"(sum), "=&r"(line_) \
		                     : "r"(walk), "r"(mul), "r"(add)    \
		                     : "cc", "memory");                 \
	} while (0)

AW_DEFINE_MEMGATHER(aw_memgather_timed, MEMGATHER_STEP)

const char *aw_build_arch(void)
{
	return "x86_64";
}

bool aw_cpu_has_lse(void)
{
	return false;
}
