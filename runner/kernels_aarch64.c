/* aarch64 kernels: the plain and LL/SC increments, the LSE atomics (stadd, the ldadd family,
 * prefetch + stadd, cas, swp, casp) and ldxp/stxp, the ops whose cost differs by core and
 * firmware (DESIGN.md). Readers use arm64's kernel barriers, where every smp_mb*() is `dmb ish`. */
#include <stdbool.h>
#include <sys/auxv.h>
#include <asm/hwcap.h>

#include "kernels_gen.h"

/* The build targets plain armv8-a so that the binary starts on CPUs without LSE; each LSE asm
 * statement enables the extension for the assembler only (the compiler keeps emitting armv8-a
 * code), and the runner calls those kernels only where aw_cpu_has_lse(). */
#define LSE ".arch_extension lse\n\t"

/* What this_cpu_inc is without atomics: a load, an add and a store. */
#define PLAIN_STEP(p)                                     \
	do {                                              \
		uint64_t t_;                              \
		__asm__ __volatile__("ldr %0, [%1]\n\t"   \
		                     "add %0, %0, #1\n\t" \
		                     "str %0, [%1]"       \
		                     : "=&r"(t_)          \
		                     : "r"(p)             \
		                     : "memory");         \
	} while (0)

/* The kernel's LL/SC per-CPU add (no barriers); early clobbers keep the status register apart
 * from the data and address registers, which stxr requires. */
#define LLSC_STEP(p)                                           \
	do {                                                   \
		uint64_t t_;                                   \
		uint32_t fail_;                                \
		__asm__ __volatile__("1:\tldxr %0, [%2]\n\t"   \
		                     "add %0, %0, #1\n\t"      \
		                     "stxr %w1, %0, [%2]\n\t"  \
		                     "cbnz %w1, 1b"            \
		                     : "=&r"(t_), "=&r"(fail_) \
		                     : "r"(p)                  \
		                     : "memory");              \
	} while (0)

/* stadd is ldadd with xzr as destination: the CPU may execute it "far", at the interconnect. */
#define STADD_STEP(p) \
	__asm__ __volatile__(LSE "stadd %0, [%1]" : : "r"((uint64_t)1), "r"(p) : "memory")

/* The ldadd family returns the old value into a real register (never xzr, which would make it
 * stadd); needing the value is what lets cores such as Neoverse-V2 execute it near, in L1. */
#define LDADD_INSN_STEP(insn, p)                                \
	do {                                                    \
		uint64_t old_;                                  \
		__asm__ __volatile__(LSE insn " %1, %0, [%2]"   \
		                     : "=&r"(old_)              \
		                     : "r"((uint64_t)1), "r"(p) \
		                     : "memory");               \
	} while (0)

#define LDADD_STEP(p)   LDADD_INSN_STEP("ldadd", p)
#define LDADDA_STEP(p)  LDADD_INSN_STEP("ldadda", p)
#define LDADDL_STEP(p)  LDADD_INSN_STEP("ldaddl", p)
#define LDADDAL_STEP(p) LDADD_INSN_STEP("ldaddal", p)

/* A prefetch-for-store before stadd: the workaround that brought Neoverse-V2 back to ~8 ns. */
#define PRFM_STADD_STEP(hint, p)                           \
	__asm__ __volatile__(LSE "prfm " hint ", [%1]\n\t" \
	                         "stadd %0, [%1]"          \
	                     :                             \
	                     : "r"((uint64_t)1), "r"(p)    \
	                     : "memory")

#define PRFM_KEEP_STADD_STEP(p) PRFM_STADD_STEP("pstl1keep", p)
#define PRFM_STRM_STADD_STEP(p) PRFM_STADD_STEP("pstl1strm", p)

/* The CAS retry loop, entered with the expected value in %0: on failure cas leaves the value it
 * found in its compare register, which becomes the next expected value. */
#define CAS_LOOP                 \
	"1:\tadd %2, %0, #1\n\t" \
	"mov %1, %0\n\t"         \
	"cas %1, %2, [%3]\n\t"   \
	"cmp %1, %0\n\t"         \
	"mov %0, %1\n\t"         \
	"b.ne 1b"

/* Load, then CAS until it succeeds (the generic this_cpu_* fallback). */
#define CAS_STEP(p)                                                           \
	do {                                                                  \
		uint64_t old_, seen_, new_;                                   \
		__asm__ __volatile__(LSE "ldr %0, [%3]\n" CAS_LOOP            \
		                     : "=&r"(old_), "=&r"(seen_), "=&r"(new_) \
		                     : "r"(p)                                 \
		                     : "memory", "cc");                       \
	} while (0)

/* The first read is itself a CAS (compare 0, store 0: memory changes only when it already held
 * 0), so the line arrives for writing instead of shared; then the same loop. */
#define ICAS_STEP(p)                                                          \
	do {                                                                  \
		uint64_t old_, seen_, new_;                                   \
		__asm__ __volatile__(LSE "mov %0, #0\n\t"                     \
		                         "cas %0, %0, [%3]\n" CAS_LOOP        \
		                     : "=&r"(old_), "=&r"(seen_), "=&r"(new_) \
		                     : "r"(p)                                 \
		                     : "memory", "cc");                       \
	} while (0)

/* Load, add, swap the sum in. Not an atomic increment as a whole, so it never runs contended;
 * the old value goes to a real register for the same reason as ldadd's. */
#define SWP_STEP(p)                                           \
	do {                                                  \
		uint64_t t_, old_;                            \
		__asm__ __volatile__(LSE "ldr %0, [%2]\n\t"   \
		                         "add %0, %0, #1\n\t" \
		                         "swp %0, %1, [%2]"   \
		                     : "=&r"(t_), "=&r"(old_) \
		                     : "r"(p)                 \
		                     : "memory");             \
	} while (0)

/* {value, pair_hi} += {1, 1} with casp, as SLUB's this_cpu_cmpxchg_double does for
 * {freelist, tid}. casp needs even/odd register pairs, which no constraint expresses, so the
 * registers are named: x10:x11 compare (and receive what memory held), x12:x13 the new pair,
 * x14:x15 the expected pair. The ldp may tear; casp then fails and returns an untorn pair. */
#define CASP_STEP(p)                                                 \
	__asm__ __volatile__(LSE "ldp x14, x15, [%0]\n"              \
	                         "1:\tmov x10, x14\n\t"              \
	                         "mov x11, x15\n\t"                  \
	                         "add x12, x14, #1\n\t"              \
	                         "add x13, x15, #1\n\t"              \
	                         "casp x10, x11, x12, x13, [%0]\n\t" \
	                         "cmp x10, x14\n\t"                  \
	                         "ccmp x11, x15, #0, eq\n\t"         \
	                         "mov x14, x10\n\t"                  \
	                         "mov x15, x11\n\t"                  \
	                         "b.ne 1b"                           \
	                     :                                       \
	                     : "r"(p)                                \
	                     : "x10", "x11", "x12", "x13", "x14", "x15", "memory", "cc")

/* The same pair increment without LSE: an exclusive pair load/store loop. */
#define LDXP_STXP_STEP(p)                                                   \
	do {                                                                \
		uint64_t lo_, hi_;                                          \
		uint32_t fail_;                                             \
		__asm__ __volatile__("1:\tldxp %0, %1, [%3]\n\t"            \
		                     "add %0, %0, #1\n\t"                   \
		                     "add %1, %1, #1\n\t"                   \
		                     "stxp %w2, %0, %1, [%3]\n\t"           \
		                     "cbnz %w2, 1b"                         \
		                     : "=&r"(lo_), "=&r"(hi_), "=&r"(fail_) \
		                     : "r"(p)                               \
		                     : "memory");                           \
	} while (0)

AW_DEFINE_OP(plain, PLAIN_STEP)
AW_DEFINE_OP(llsc, LLSC_STEP)
AW_DEFINE_OP(stadd, STADD_STEP)
AW_DEFINE_OP(ldadd, LDADD_STEP)
AW_DEFINE_OP(ldadda, LDADDA_STEP)
AW_DEFINE_OP(ldaddl, LDADDL_STEP)
AW_DEFINE_OP(ldaddal, LDADDAL_STEP)
AW_DEFINE_OP(prfm_keep_stadd, PRFM_KEEP_STADD_STEP)
AW_DEFINE_OP(prfm_strm_stadd, PRFM_STRM_STADD_STEP)
AW_DEFINE_OP(cas, CAS_STEP)
AW_DEFINE_OP(icas, ICAS_STEP)
AW_DEFINE_OP(swp, SWP_STEP)
AW_DEFINE_OP(casp, CASP_STEP)
AW_DEFINE_OP(ldxp_stxp, LDXP_STXP_STEP)

#define twin_plain           aw_twin_inc
#define twin_llsc            aw_twin_inc
#define twin_stadd           aw_twin_inc
#define twin_ldadd           aw_twin_inc
#define twin_ldadda          aw_twin_inc
#define twin_ldaddl          aw_twin_inc
#define twin_ldaddal         aw_twin_inc
#define twin_prfm_keep_stadd aw_twin_inc
#define twin_prfm_strm_stadd aw_twin_inc
#define twin_cas             aw_twin_inc
#define twin_icas            aw_twin_inc
#define twin_swp             aw_twin_inc
#define twin_casp            aw_twin_pair_inc
#define twin_ldxp_stxp       aw_twin_pair_inc

#define LSE_ATOMIC (AW_OP_LSE | AW_OP_ATOMIC)

static const struct aw_kernel arm64[] = {
    AW_KERNEL(plain, 0, 0),
    AW_KERNEL(llsc, AW_OP_ATOMIC, 1),
    AW_KERNEL(stadd, LSE_ATOMIC, 1),
    AW_KERNEL(ldadd, LSE_ATOMIC, 1),
    AW_KERNEL(ldadda, LSE_ATOMIC, 1),
    AW_KERNEL(ldaddl, LSE_ATOMIC, 1),
    AW_KERNEL(ldaddal, LSE_ATOMIC, 1),
    AW_KERNEL(prfm_keep_stadd, LSE_ATOMIC, 1),
    AW_KERNEL(prfm_strm_stadd, LSE_ATOMIC, 1),
    AW_KERNEL(cas, LSE_ATOMIC, 1),
    AW_KERNEL(icas, LSE_ATOMIC, 1),
    AW_KERNEL(swp, AW_OP_LSE, 0),
    AW_KERNEL(casp, LSE_ATOMIC | AW_OP_PAIR, 1),
    AW_KERNEL(ldxp_stxp, AW_OP_ATOMIC | AW_OP_PAIR, 1),
};

const struct aw_kernel *aw_arch_kernels(unsigned *n)
{
	*n = sizeof(arm64) / sizeof(arm64[0]);
	return arm64;
}

/* ---- readers ---- */

/* arm64 defines no cheaper smp_mb__{before,after}_atomic(): its atomics without return value
 * are unordered, so both are smp_mb(). */
#define SMP_MB()           __asm__ __volatile__("dmb ish" : : : "memory")
#define MB_AROUND_ATOMIC() SMP_MB()

#define READERS_ON(op, INC)                             \
	AW_DEFINE_READER(srcu, op, INC, SMP_MB, SMP_MB) \
	AW_DEFINE_READER(srcu_fast, op, INC, AW_BARRIER, AW_BARRIER)

#define NMISAFE_ON(op, INC) \
	AW_DEFINE_READER(srcu_nmisafe, op, INC, MB_AROUND_ATOMIC, MB_AROUND_ATOMIC)

READERS_ON(plain, PLAIN_STEP)
READERS_ON(llsc, LLSC_STEP)
READERS_ON(stadd, STADD_STEP)
READERS_ON(ldadd, LDADD_STEP)
READERS_ON(prfm_keep_stadd, PRFM_KEEP_STADD_STEP)
READERS_ON(prfm_strm_stadd, PRFM_STRM_STADD_STEP)
READERS_ON(c11_relaxed, AW_C11_RELAXED_STEP)
NMISAFE_ON(llsc, LLSC_STEP)
NMISAFE_ON(stadd, STADD_STEP)
NMISAFE_ON(ldadd, LDADD_STEP)
NMISAFE_ON(c11_relaxed, AW_C11_RELAXED_STEP)
NMISAFE_ON(c11_seqcst, AW_C11_SEQCST_STEP)

static const struct aw_reader_kernel readers[] = {
    AW_READER(srcu, plain, 0),
    AW_READER(srcu, llsc, AW_OP_ATOMIC),
    AW_READER(srcu, stadd, LSE_ATOMIC),
    AW_READER(srcu, ldadd, LSE_ATOMIC),
    AW_READER(srcu, prfm_keep_stadd, LSE_ATOMIC),
    AW_READER(srcu, prfm_strm_stadd, LSE_ATOMIC),
    AW_READER(srcu, c11_relaxed, AW_OP_ATOMIC),
    AW_READER(srcu_fast, plain, 0),
    AW_READER(srcu_fast, llsc, AW_OP_ATOMIC),
    AW_READER(srcu_fast, stadd, LSE_ATOMIC),
    AW_READER(srcu_fast, ldadd, LSE_ATOMIC),
    AW_READER(srcu_fast, prfm_keep_stadd, LSE_ATOMIC),
    AW_READER(srcu_fast, prfm_strm_stadd, LSE_ATOMIC),
    AW_READER(srcu_fast, c11_relaxed, AW_OP_ATOMIC),
    AW_READER(srcu_nmisafe, llsc, AW_OP_ATOMIC),
    AW_READER(srcu_nmisafe, stadd, LSE_ATOMIC),
    AW_READER(srcu_nmisafe, ldadd, LSE_ATOMIC),
    AW_READER(srcu_nmisafe, c11_relaxed, AW_OP_ATOMIC),
    AW_READER(srcu_nmisafe, c11_seqcst, AW_OP_ATOMIC),
};

const struct aw_reader_kernel *aw_arch_reader_kernels(unsigned *n)
{
	*n = sizeof(readers) / sizeof(readers[0]);
	return readers;
}

/* ---- the reference kernel ---- */

/* mul x, x, k: one multiply on the chain (plain armv8-a; neither flags nor memory). */
#define REFERENCE_STEP(x, k) __asm__ __volatile__("mul %0, %0, %1" : "+r"(x) : "r"(k))

AW_DEFINE_REFERENCE(aw_reference_timed, REFERENCE_STEP)

/* mulindep-v1: one mul on each of twelve independent chains. */
#define MULINDEP_STEP(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, k)           \
	__asm__ __volatile__(                                                        \
	    "mul %0, %0, %12\n\t"                                                    \
	    "mul %1, %1, %12\n\t"                                                    \
	    "mul %2, %2, %12\n\t"                                                    \
	    "mul %3, %3, %12\n\t"                                                    \
	    "mul %4, %4, %12\n\t"                                                    \
	    "mul %5, %5, %12\n\t"                                                    \
	    "mul %6, %6, %12\n\t"                                                    \
	    "mul %7, %7, %12\n\t"                                                    \
	    "mul %8, %8, %12\n\t"                                                    \
	    "mul %9, %9, %12\n\t"                                                    \
	    "mul %10, %10, %12\n\t"                                                  \
	    "mul %11, %11, %12"                                                      \
	    : AW_MULINDEP_OPERANDS(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11) \
	    : "r"(k))

AW_DEFINE_MULINDEP(aw_mulindep_timed, MULINDEP_STEP)

/* atomicadd-v1: the ldadd op's loop where the CPU has LSE, the llsc op's loop otherwise (the
 * choice is made before the timer is read). */
uint64_t aw_atomicadd_timed(const struct aw_loop *l)
{
	struct aw_loop plain = *l;

	plain.duty = 0;
	return aw_cpu_has_lse() ? timed_ldadd(&plain) : timed_llsc(&plain);
}

/* memchase-v1: one load whose result is the next address. */
#define MEMCHASE_STEP(p) __asm__ __volatile__("ldr %0, [%0]" : "+r"(p) : : "memory")

AW_DEFINE_MEMCHASE(aw_memchase_timed, MEMCHASE_STEP)

/* memgather-v1: the line the LCG's top 16 bits name, its word added to sum, the LCG's step. */
#define MEMGATHER_STEP(x, sum, walk, mul, add)                          \
	do {                                                            \
		uint64_t line_;                                         \
                                                                        \
		__asm__ __volatile__("lsr %2, %0, #48\n\t"              \
		                     "add %2, %3, %2, lsl #6\n\t"       \
		                     "ldr %2, [%2]\n\t"                 \
		                     "add %1, %1, %2\n\t"               \
		                     "madd %0, %0, %4, %5"              \
		                     : "+r"(x), "+r"(sum), "=&r"(line_) \
		                     : "r"(walk), "r"(mul), "r"(add)    \
		                     : "memory");                       \
	} while (0)

AW_DEFINE_MEMGATHER(aw_memgather_timed, MEMGATHER_STEP)

const char *aw_build_arch(void)
{
	return "aarch64";
}

bool aw_cpu_has_lse(void)
{
	return (getauxval(AT_HWCAP) & HWCAP_ATOMICS) != 0;
}
