/* Generators for kernel functions, included only by the kernels_*.c files. An op is a STEP
 * macro taking a `uint64_t *` (the slot's value; pair ops use value and the word after it) that
 * expands to one op as inline asm or C11 atomics. From it these macros build the timed loop
 * (AW_UNROLL steps per iteration, the duty nop loop after each step when duty > 0), the
 * contender loop, and one untimed step; readers are built from an INC step and two barriers. */
#ifndef AW_KERNELS_GEN_H
#define AW_KERNELS_GEN_H

#include <stdatomic.h>

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
