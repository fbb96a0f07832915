/* Call-through loops for ops reached by function pointer (subject libraries, liburcu). The empty
 * loops call an empty function the same way, so the difference is the op alone. */
#include "kernels_gen.h"

static void empty_op(uint64_t *counter)
{
	(void)counter;
	AW_BARRIER();
}

static void empty_fn(void)
{
	AW_BARRIER();
}

/* Read through volatile pointers so the compiler cannot inline the empty functions. */
static void (*volatile empty_op_ptr)(uint64_t *) = empty_op;
static void (*volatile empty_fn_ptr)(void) = empty_fn;

#define CALL_LOOP(STEP)                                          \
	do {                                                     \
		uint64_t n = l->iters / AW_UNROLL, t0, t1;       \
		uint32_t duty = l->duty;                         \
                                                                 \
		t0 = aw_timer_read();                            \
		for (; n; n--) {                                 \
			AW_REP16(STEP; if (duty) aw_nops(duty);) \
		}                                                \
		t1 = aw_timer_read();                            \
		return t1 - t0;                                  \
	} while (0)

uint64_t aw_call_op_timed(const struct aw_loop *l)
{
	void (*op)(uint64_t *) = l->call->op;
	uint64_t *p = &l->slot->value;

	CALL_LOOP(op(p));
}

uint64_t aw_call_op_empty(const struct aw_loop *l)
{
	void (*op)(uint64_t *) = empty_op_ptr;
	uint64_t *p = &l->slot->value;

	CALL_LOOP(op(p));
}

uint64_t aw_call_reader_timed(const struct aw_loop *l)
{
	void (*lock)(void) = l->call->lock, (*unlock)(void) = l->call->unlock;

	CALL_LOOP(lock(); unlock());
}

uint64_t aw_call_reader_empty(const struct aw_loop *l)
{
	void (*lock)(void) = empty_fn_ptr, (*unlock)(void) = empty_fn_ptr;

	CALL_LOOP(lock(); unlock());
}
