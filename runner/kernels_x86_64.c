/* x86-64 kernels: `incq` (what the kernel's this_cpu_inc is), the lock-prefixed RMWs, xchg,
 * prefetchw + lock inc, and cmpxchg16b (this_cpu_cmpxchg_double). Readers use the kernel's
 * barriers: smp_mb() is `lock addl $0,-4(%rsp)`, smp_mb__{before,after}_atomic() is a compiler
 * barrier because every lock-prefixed op is already a full barrier. */
#include <stdbool.h>
#include <string.h>

#include "kernels_gen.h"

#define PLAIN_STEP(p) __asm__ __volatile__("incq (%0)" : : "r"(p) : "memory", "cc")

#define LOCK_INC_STEP(p) __asm__ __volatile__("lock incq (%0)" : : "r"(p) : "memory", "cc")

#define LOCK_XADD_STEP(p)                                  \
	do {                                               \
		uint64_t one_ = 1;                         \
		__asm__ __volatile__("lock xaddq %0, (%1)" \
		                     : "+r"(one_)          \
		                     : "r"(p)              \
		                     : "memory", "cc");    \
	} while (0)

/* Load, then lock cmpxchg until it succeeds (the generic this_cpu_* fallback). */
#define CAS_STEP(p)                                          \
	__asm__ __volatile__("movq (%0), %%rax\n"            \
	                     "1:\tleaq 1(%%rax), %%rdx\n\t"  \
	                     "lock cmpxchgq %%rdx, (%0)\n\t" \
	                     "jne 1b"                        \
	                     :                               \
	                     : "r"(p)                        \
	                     : "rax", "rdx", "memory", "cc")

/* Load, add, exchange (xchg with memory is implicitly locked). Not an atomic increment as a
 * whole, so it never runs contended. */
#define XCHG_STEP(p)                                     \
	do {                                             \
		uint64_t t_;                             \
		__asm__ __volatile__("movq (%1), %0\n\t" \
		                     "incq %0\n\t"       \
		                     "xchgq %0, (%1)"    \
		                     : "=&r"(t_)         \
		                     : "r"(p)            \
		                     : "memory", "cc");  \
	} while (0)

#define PREFETCHW_LOCK_INC_STEP(p) \
	__asm__ __volatile__("prefetchw (%0)\n\tlock incq (%0)" : : "r"(p) : "memory", "cc")

/* {value, pair_hi} += {1, 1} with cmpxchg16b, as SLUB's this_cpu_cmpxchg_double does for
 * {freelist, tid}. rbx is free to clobber in x86-64 PIE code. */
#define CMPXCHG16B_STEP(p)                                  \
	__asm__ __volatile__("movq (%0), %%rax\n\t"         \
	                     "movq 8(%0), %%rdx\n"          \
	                     "1:\tleaq 1(%%rax), %%rbx\n\t" \
	                     "leaq 1(%%rdx), %%rcx\n\t"     \
	                     "lock cmpxchg16b (%0)\n\t"     \
	                     "jne 1b"                       \
	                     :                              \
	                     : "r"(p)                       \
	                     : "rax", "rbx", "rcx", "rdx", "memory", "cc")

AW_DEFINE_OP(plain, PLAIN_STEP)
AW_DEFINE_OP(lock_inc, LOCK_INC_STEP)
AW_DEFINE_OP(lock_xadd, LOCK_XADD_STEP)
AW_DEFINE_OP(cas, CAS_STEP)
AW_DEFINE_OP(xchg, XCHG_STEP)
AW_DEFINE_OP(prefetchw_lock_inc, PREFETCHW_LOCK_INC_STEP)
AW_DEFINE_OP(cmpxchg16b, CMPXCHG16B_STEP)

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

READERS_ON(plain, PLAIN_STEP)
READERS_ON(lock_inc, LOCK_INC_STEP)
READERS_ON(lock_xadd, LOCK_XADD_STEP)
READERS_ON(c11_relaxed, AW_C11_RELAXED_STEP)
NMISAFE_ON(lock_inc, LOCK_INC_STEP)
NMISAFE_ON(lock_xadd, LOCK_XADD_STEP)
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

const char *aw_build_arch(void)
{
	return "x86_64";
}

bool aw_cpu_has_lse(void)
{
	return false;
}
