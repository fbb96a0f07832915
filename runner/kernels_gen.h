/* Generators for kernel functions, included only by the kernels_*.c files. An op is a STEP
 * macro taking a `uint64_t *` (the slot's value; pair ops use value and the word after it) that
 * expands to one op as inline asm or C11 atomics. From it these macros build the timed loop
 * (AW_UNROLL steps per iteration, the duty nop loop after each step when duty > 0), the
 * contender loop, and one untimed step; readers are built from an INC step and two barriers. */
#ifndef AW_KERNELS_GEN_H
#define AW_KERNELS_GEN_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "timer.h"

#define AW_REP16(x) x x x x x x x x x x x x x x x x

/* A compiler barrier: emits nothing, orders memory accesses in the compiler only. */
#define AW_BARRIER() __asm__ __volatile__("" : : : "memory")

/* The empty body of the baseline loop. */
#define AW_EMPTY_STEP(p)      \
	do {                  \
		(void)(p);    \
		AW_BARRIER(); \
	} while (0)

/* `n` iterations of a nop loop: the duty (work between timed ops) and the contender's gap. */
static inline void aw_nops(uint32_t n)
{
	for (uint32_t k = n; k; k--)
		__asm__ __volatile__("nop");
}

/* A timed batch of l->iters steps of STEP on &slot->value. */
#define AW_DEFINE_LOOP(fname, STEP)                               \
	static uint64_t fname(const struct aw_loop *l)            \
	{                                                         \
		uint64_t *p = &l->slot->value;                    \
		uint64_t n = l->iters / AW_UNROLL, t0, t1;        \
		uint32_t duty = l->duty;                          \
                                                                  \
		if (!duty) {                                      \
			t0 = aw_timer_read();                     \
			for (; n; n--) {                          \
				AW_REP16(STEP(p);)                \
			}                                         \
			t1 = aw_timer_read();                     \
		} else {                                          \
			t0 = aw_timer_read();                     \
			for (; n; n--) {                          \
				AW_REP16(STEP(p); aw_nops(duty);) \
			}                                         \
			t1 = aw_timer_read();                     \
		}                                                 \
		return t1 - t0;                                   \
	}

/* The contender: STEP with `gap` nop-loop iterations between steps until *stop. */
#define AW_DEFINE_CONTEND(fname, STEP)                                                      \
	static uint64_t fname(struct aw_slot *slot, uint32_t gap, const volatile int *stop, \
	                      volatile int *running)                                        \
	{                                                                                   \
		uint64_t *p = &slot->value, done = 1;                                       \
                                                                                            \
		STEP(p);                                                                    \
		__atomic_store_n(running, 1, __ATOMIC_RELEASE);                             \
		while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {                          \
			for (int i_ = 0; i_ < 16; i_++) {                                   \
				STEP(p);                                                    \
				aw_nops(gap);                                               \
			}                                                                   \
			done += 16;                                                         \
		}                                                                           \
		return done;                                                                \
	}

/* One untimed step. */
#define AW_DEFINE_ONCE(fname, STEP)             \
	static void fname(struct aw_slot *slot) \
	{                                       \
		uint64_t *p = &slot->value;     \
		STEP(p);                        \
	}

/* Everything an op needs: timed_<name>, contend_<name>, once_<name>. */
#define AW_DEFINE_OP(name, STEP)                \
	AW_DEFINE_LOOP(timed_##name, STEP)      \
	AW_DEFINE_CONTEND(contend_##name, STEP) \
	AW_DEFINE_ONCE(once_##name, STEP)

/* A table entry for an op defined with AW_DEFINE_OP and a twin function twin_<name>. */
#define AW_KERNEL(name, flags, contended)                                                       \
	{                                                                                       \
#name, flags, timed_##name, aw_empty_loop, (contended) ? contend_##name : NULL, \
		    once_##name, twin_##name                                                    \
	}

/* A reader lock+unlock pair: INC(locks); LOCK_FENCE; (empty critical section); UNLOCK_FENCE;
 * INC(unlocks). */
#define AW_READER_STEP(INC, LOCK_FENCE, UNLOCK_FENCE, p)     \
	do {                                                 \
		uint64_t *locks_ = (p), *unlocks_ = (p) + 2; \
		INC(locks_);                                 \
		LOCK_FENCE();                                \
		UNLOCK_FENCE();                              \
		INC(unlocks_);                               \
	} while (0)

_Static_assert(__builtin_offsetof(struct aw_slot, unlocks) == 2 * sizeof(uint64_t),
               "readers find unlocks two words after value");

#define AW_DEFINE_READER(rname, opname, INC, LOCK_FENCE, UNLOCK_FENCE)      \
	static inline void rstep_##rname##_##opname(uint64_t *p)            \
	{                                                                   \
		AW_READER_STEP(INC, LOCK_FENCE, UNLOCK_FENCE, p);           \
	}                                                                   \
	AW_DEFINE_LOOP(rtimed_##rname##_##opname, rstep_##rname##_##opname) \
	AW_DEFINE_ONCE(ronce_##rname##_##opname, rstep_##rname##_##opname)

#define AW_READER(rname, opname, flags)                                           \
	{                                                                         \
#rname, #opname, flags, rtimed_##rname##_##opname, aw_empty_loop, \
		    ronce_##rname##_##opname                                      \
	}

/* C11 atomics as the compiler emits them (on aarch64 this includes -moutline-atomics calls);
 * the barrier keeps the compiler from merging the unrolled adds. */
#define AW_C11_RELAXED_STEP(p)                                                               \
	do {                                                                                 \
		atomic_fetch_add_explicit((_Atomic uint64_t *)(p), 1, memory_order_relaxed); \
		AW_BARRIER();                                                                \
	} while (0)

#define AW_C11_SEQCST_STEP(p)                                                                \
	do {                                                                                 \
		atomic_fetch_add_explicit((_Atomic uint64_t *)(p), 1, memory_order_seq_cst); \
		AW_BARRIER();                                                                \
	} while (0)

#define AW_C11_CAS_STEP(p)                                                      \
	do {                                                                    \
		_Atomic uint64_t *a_ = (_Atomic uint64_t *)(p);                 \
		uint64_t old_ = atomic_load_explicit(a_, memory_order_relaxed); \
		while (!atomic_compare_exchange_weak(a_, &old_, old_ + 1))      \
			;                                                       \
		AW_BARRIER();                                                   \
	} while (0)

/* A timed batch of the reference kernel (kernels.h) with STEP(x, k) as one dependent multiply;
 * the chain's value lives in a register between the two timer reads. */
#define AW_DEFINE_REFERENCE(fname, STEP)                           \
	uint64_t fname(const struct aw_loop *l)                    \
	{                                                          \
		uint64_t x = l->slot->value, k = AW_REFERENCE_MUL; \
		uint64_t n = l->iters / AW_UNROLL, t0, t1;         \
                                                                   \
		t0 = aw_timer_read();                              \
		for (; n; n--) {                                   \
			AW_REP16(STEP(x, k);)                      \
		}                                                  \
		t1 = aw_timer_read();                              \
		l->slot->value = x;                                \
		return t1 - t0;                                    \
	}

/* The reference step in C. The empty asm makes x opaque after each multiply, so the compiler
 * can neither fold the sixteen multiplies of an iteration into one by k^16 nor drop the chain;
 * it emits no instruction. */
#define AW_REFERENCE_C_STEP(x, k)                   \
	do {                                        \
		(x) *= (k);                         \
		__asm__ __volatile__("" : "+r"(x)); \
	} while (0)

/* A timed batch of mulindep-v1 (kernels.h) with STEP(v0, ..., v11, k) as one multiply on
 * each of the twelve chains; the chains live in registers between the timer reads and in the
 * slot's first twelve words before and after. */
#define AW_DEFINE_MULINDEP(fname, STEP)                                                         \
	uint64_t fname(const struct aw_loop *l)                                                 \
	{                                                                                       \
		uint64_t x[AW_MULINDEP_CHAINS], k = AW_REFERENCE_MUL, t0, t1;                   \
		uint64_t n = l->iters / AW_UNROLL, v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, \
		         v11;                                                                   \
                                                                                                \
		_Static_assert(AW_MULINDEP_CHAINS == 12, "one register per chain");             \
		memcpy(x, l->slot, sizeof(x));                                                  \
		v0 = x[0], v1 = x[1], v2 = x[2], v3 = x[3], v4 = x[4], v5 = x[5];               \
		v6 = x[6], v7 = x[7], v8 = x[8], v9 = x[9], v10 = x[10], v11 = x[11];           \
		t0 = aw_timer_read();                                                           \
		for (; n; n--) {                                                                \
			AW_REP16(STEP(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, k);)    \
		}                                                                               \
		t1 = aw_timer_read();                                                           \
		x[0] = v0, x[1] = v1, x[2] = v2, x[3] = v3, x[4] = v4, x[5] = v5;               \
		x[6] = v6, x[7] = v7, x[8] = v8, x[9] = v9, x[10] = v10, x[11] = v11;           \
		memcpy(l->slot, x, sizeof(x));                                                  \
		return t1 - t0;                                                                 \
	}

/* The operands of a mulindep-v1 step's asm: the twelve chains, in and out. */
#define AW_MULINDEP_OPERANDS(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11)                    \
	"+r"(v0), "+r"(v1), "+r"(v2), "+r"(v3), "+r"(v4), "+r"(v5), "+r"(v6), "+r"(v7), "+r"(v8), \
	    "+r"(v9), "+r"(v10), "+r"(v11)

/* The mulindep-v1 step in C, each chain made opaque after its multiply as in
 * AW_REFERENCE_C_STEP. */
#define AW_MULINDEP_C_STEP(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, k)                \
	do {                                                                                   \
		(v0) *= (k), (v1) *= (k), (v2) *= (k), (v3) *= (k), (v4) *= (k);               \
		(v5) *= (k), (v6) *= (k), (v7) *= (k), (v8) *= (k), (v9) *= (k);               \
		(v10) *= (k), (v11) *= (k);                                                    \
		__asm__ __volatile__(                                                          \
		    ""                                                                         \
		    : AW_MULINDEP_OPERANDS(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11)); \
	} while (0)

/* A timed batch of memchase-v1 (kernels.h) with STEP(p) as one load p = *p; p lives in a
 * register between the timer reads and in slot->value before and after. */
#define AW_DEFINE_MEMCHASE(fname, STEP)                    \
	uint64_t fname(const struct aw_loop *l)            \
	{                                                  \
		uintptr_t p = (uintptr_t)l->slot->value;   \
		uint64_t n = l->iters / AW_UNROLL, t0, t1; \
                                                           \
		t0 = aw_timer_read();                      \
		for (; n; n--) {                           \
			AW_REP16(STEP(p);)                 \
		}                                          \
		t1 = aw_timer_read();                      \
		l->slot->value = p;                        \
		return t1 - t0;                            \
	}

/* The memchase-v1 step in C: the next address is the one loaded. */
#define AW_MEMCHASE_C_STEP(p)                       \
	do {                                        \
		(p) = *(const uintptr_t *)(p);      \
		__asm__ __volatile__("" : "+r"(p)); \
	} while (0)

/* A timed batch of memgather-v1 (kernels.h) with STEP(x, sum, walk, mul, add) as one load
 * added to sum and one LCG step; the state lives in registers between the timer reads and in
 * the slot before and after. */
#define AW_DEFINE_MEMGATHER(fname, STEP)                                     \
	uint64_t fname(const struct aw_loop *l)                              \
	{                                                                    \
		uint64_t x = l->slot->value, sum = l->slot->pair_hi, t0, t1; \
		uint64_t mul = AW_MEMGATHER_MUL, add = AW_MEMGATHER_ADD;     \
		uintptr_t walk = (uintptr_t)l->slot->pad[0];                 \
		uint64_t n = l->iters / AW_UNROLL;                           \
                                                                             \
		t0 = aw_timer_read();                                        \
		for (; n; n--) {                                             \
			AW_REP16(STEP(x, sum, walk, mul, add);)              \
		}                                                            \
		t1 = aw_timer_read();                                        \
		l->slot->value = x;                                          \
		l->slot->pair_hi = sum;                                      \
		return t1 - t0;                                              \
	}

/* The memgather-v1 step in C: the line the LCG's top 16 bits name, then the LCG's step; the
 * empty asm keeps the compiler from batching the loads of several steps. */
#define AW_MEMGATHER_C_STEP(x, sum, walk, mul, add)                                    \
	do {                                                                           \
		(sum) += *(const uint64_t *)((walk) + ((x) >> 48) * AW_MEMCHASE_LINE); \
		(x) = (x) * (mul) + (add);                                             \
		__asm__ __volatile__("" : "+r"(x), "+r"(sum));                         \
	} while (0)

/* The shared baseline loop (kernels_table.c). */
uint64_t aw_empty_loop(const struct aw_loop *l);

/* The twin of every single-word increment op, and of the pair ops. */
static inline void aw_twin_inc(struct aw_slot *s)
{
	s->value += 1;
}

static inline void aw_twin_pair_inc(struct aw_slot *s)
{
	s->value += 1;
	s->pair_hi += 1;
}

#endif
