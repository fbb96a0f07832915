/* The interleaved A/B's timed loops; see ab_kernels.h. Nothing here allocates, logs or prints. */
#include "ab_kernels.h"

#include "aw/util.h"

#define MUL UINT64_C(0x9e3779b97f4a7c15) /* odd: a chain never reaches 0 */

static void empty_op(uint64_t *counter)
{
	(void)counter;
	__asm__ __volatile__("" ::: "memory");
}

static void empty_fn(void)
{
	__asm__ __volatile__("" ::: "memory");
}

/* Read through volatile pointers, so that the compiler cannot call the empty functions
 * directly (or inline them) where the subject's are called through a pointer. */
static void (*volatile empty_op_ptr)(uint64_t *) = empty_op;
static void (*volatile empty_fn_ptr)(void) = empty_fn;

struct ab_call ab_empty_call(const struct ab_call *c)
{
	if (c->op)
		return (struct ab_call){.op = empty_op_ptr};
	return (struct ab_call){.lock = empty_fn_ptr, .unlock = empty_fn_ptr};
}

uint64_t ab_piece(const struct ab_call *c, uint64_t *counter, uint64_t n)
{
	void (*op)(uint64_t *) = c->op;
	void (*lock)(void) = c->lock, (*unlock)(void) = c->unlock;
	uint64_t t0;

	t0 = aw_monotonic_ns();
	if (op)
		for (uint64_t i = 0; i < n; i++)
			op(counter);
	else
		for (uint64_t i = 0; i < n; i++) {
			lock();
			unlock();
		}
	return aw_monotonic_ns() - t0;
}

/* TO BE REPLACED by the runner's throughput reference kernel once it lands. In C with an empty
 * asm per step that pins each chain to a register, so that it runs the same on every
 * architecture: twelve chains are throughput-bound on cores of up to four multipliers (Zen 5
 * has three of 3-cycle latency; four chains are latency-bound there). */
uint64_t ab_throughput_kernel(uint64_t steps, uint64_t *sink)
{
	uint64_t a = 1, b = 3, c = 5, d = 7, e = 9, f = 11, g = 13, h = 15, i = 17, j = 19, l = 21,
	         m = 23, k = MUL, t0;

	t0 = aw_monotonic_ns();
	for (uint64_t s = 0; s < steps; s++) {
		a *= k;
		b *= k;
		c *= k;
		d *= k;
		e *= k;
		f *= k;
		g *= k;
		h *= k;
		i *= k;
		j *= k;
		l *= k;
		m *= k;
		__asm__ __volatile__(""
		                     : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f),
		                       "+r"(g), "+r"(h), "+r"(i), "+r"(j), "+r"(l), "+r"(m));
	}
	t0 = aw_monotonic_ns() - t0;
	*sink += a ^ b ^ c ^ d ^ e ^ f ^ g ^ h ^ i ^ j ^ l ^ m;
	return t0;
}
