/* The subject of the real-noise recordings (bench/detect/record.py): one op, an atomic
 * fetch-and-add (`lock xadd` on x86-64) followed by a chain of CHAIN dependent multiplies and then
 * EXTRA dependent adds. The chain starts from what the previous call's chain ended with (kept in
 * `carry`), so consecutive calls cannot overlap on an out-of-order core: every call waits for the
 * whole chain of the one before, and each add lengthens that serial path by exactly one cycle on
 * every x86-64 and arm64 core we know of. The variants of a recording differ only in EXTRA, a
 * real code change of known kind whose size the recorder measures. (Without the carry, calls
 * overlap by a varying amount and a few more adds can cost nothing or 20%.)
 * Build: cc -O2 -shared -fPIC -I runner/include -DCHAIN=32 -DEXTRA=0 -o libchain.so THIS */
#include <stddef.h>
#include <stdint.h>

#include "atomwatch/subject.h"

#ifndef CHAIN
#define CHAIN 32
#endif
#ifndef EXTRA
#define EXTRA 0
#endif

#define STR_(x) #x
#define STR(x)  STR_(x)

/* `n` copies of one instruction, by the assembler (.rept 0 emits nothing). */
#define REPT(n, insn) ".rept " STR(n) "\n\t" insn "\n\t.endr\n\t"

/* The reference kernel's multiplier (runner/kernels.h): odd, so the chain never reaches 0. */
#define MUL UINT64_C(0x9e3779b97f4a7c15)

/* The end of the previous call's chain; one op runs on one thread at a time. */
static uint64_t carry = 1;

static void chain_op(uint64_t *counter)
{
	uint64_t x = 1, k = MUL;

#if defined(__x86_64__)
	__asm__ __volatile__("lock xaddq %0, (%1)" : "+r"(x) : "r"(counter) : "memory", "cc");
	/* the load of carry cannot pass the locked op, which waits for the previous store */
	x += carry;
	/* the adds take k from a register: an add of an immediate might be folded at rename */
	__asm__ __volatile__(REPT(CHAIN, "imulq %1, %0") REPT(EXTRA, "addq %1, %0")
	                     : "+r"(x)
	                     : "r"(k)
	                     : "cc");
#elif defined(__aarch64__)
	x = __atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST); /* ldaddal, or LL/SC without LSE */
	x += carry;
	__asm__ __volatile__(REPT(CHAIN, "mul %0, %0, %1") REPT(EXTRA, "add %0, %0, %1")
	                     : "+r"(x)
	                     : "r"(k));
#else
	/* Elsewhere the same chain in C; the empty asm keeps each step from being folded. */
	x = __atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST) + carry;
	for (int i = 0; i < CHAIN; i++) {
		x *= k;
		__asm__ __volatile__("" : "+r"(x));
	}
	for (int i = 0; i < EXTRA; i++) {
		x += k;
		__asm__ __volatile__("" : "+r"(x));
	}
#endif
	carry = x;
}

/* subject_shapes.c includes this file for chain_op alone */
#ifndef AW_SUBJECT_CHAIN_OP_ONLY
static const struct atomwatch_subject_op ops[] = {{"op", chain_op}, {0, 0}};
static const struct atomwatch_subject desc = {ATOMWATCH_SUBJECT_ABI, "chain", ops, NULL};

const struct atomwatch_subject *atomwatch_subject(void);

const struct atomwatch_subject *atomwatch_subject(void)
{
	return &desc;
}
#endif
