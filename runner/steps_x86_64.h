/* The x86-64 ops as STEP(p) macros of inline asm, each one "add 1 to the counter at p" (pair
 * ops: the 16 bytes at p). Shared by the kernels (kernels_x86_64.c) and by the fidelity
 * benchmark, which times the very same instructions under Google Benchmark. Valid C and C++. */
#ifndef AW_STEPS_X86_64_H
#define AW_STEPS_X86_64_H

#include <stdint.h>

#define AW_X86_PLAIN(p) __asm__ __volatile__("incq (%0)" : : "r"(p) : "memory", "cc")

#define AW_X86_LOCK_INC(p) __asm__ __volatile__("lock incq (%0)" : : "r"(p) : "memory", "cc")

#define AW_X86_LOCK_XADD(p)                                \
	do {                                               \
		uint64_t one_ = 1;                         \
		__asm__ __volatile__("lock xaddq %0, (%1)" \
		                     : "+r"(one_)          \
		                     : "r"(p)              \
		                     : "memory", "cc");    \
	} while (0)

/* Load, then lock cmpxchg until it succeeds (the generic this_cpu_* fallback). */
#define AW_X86_CAS(p)                                        \
	__asm__ __volatile__("movq (%0), %%rax\n"            \
	                     "1:\tleaq 1(%%rax), %%rdx\n\t"  \
	                     "lock cmpxchgq %%rdx, (%0)\n\t" \
	                     "jne 1b"                        \
	                     :                               \
	                     : "r"(p)                        \
	                     : "rax", "rdx", "memory", "cc")

/* Load, add, exchange (xchg with memory is implicitly locked). Not an atomic increment as a
 * whole, so it never runs contended. */
#define AW_X86_XCHG(p)                                   \
	do {                                             \
		uint64_t t_;                             \
		__asm__ __volatile__("movq (%1), %0\n\t" \
		                     "incq %0\n\t"       \
		                     "xchgq %0, (%1)"    \
		                     : "=&r"(t_)         \
		                     : "r"(p)            \
		                     : "memory", "cc");  \
	} while (0)

#define AW_X86_PREFETCHW_LOCK_INC(p) \
	__asm__ __volatile__("prefetchw (%0)\n\tlock incq (%0)" : : "r"(p) : "memory", "cc")

/* {value, pair_hi} += {1, 1} with cmpxchg16b, as SLUB's this_cpu_cmpxchg_double does for
 * {freelist, tid}. rbx is free to clobber in x86-64 PIE code. */
#define AW_X86_CMPXCHG16B(p)                                \
	__asm__ __volatile__("movq (%0), %%rax\n\t"         \
	                     "movq 8(%0), %%rdx\n"          \
	                     "1:\tleaq 1(%%rax), %%rbx\n\t" \
	                     "leaq 1(%%rdx), %%rcx\n\t"     \
	                     "lock cmpxchg16b (%0)\n\t"     \
	                     "jne 1b"                       \
	                     :                              \
	                     : "r"(p)                       \
	                     : "rax", "rbx", "rcx", "rdx", "memory", "cc")

#endif
