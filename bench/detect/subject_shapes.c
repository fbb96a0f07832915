/* The subject of the real-noise recordings of real code's shapes (bench/detect/record.py): one
 * library, one op per shape, each adding 1 to the counter as the subject ABI requires.
 *   overlap  `lock xadd` on the counter (an atomic fetch-add on aarch64), then a short run of
 *            arithmetic on the value it returned, four independent streams, that the next call
 *            does not wait for: consecutive calls overlap on an out-of-order core, so a few more
 *            instructions cost nothing while the core's ports are free and show when an SMT
 *            sibling or another tenant shares them (DESIGN.md, "Verdicts on real code").
 *   hash     a lookup in an open-addressing hash table of 2^18 16-byte slots (4 MiB), half full,
 *            built when the library is loaded; keys from a cheap generator (an LCG), so the
 *            lookups of consecutive calls overlap and miss the caches together; then the
 *            counter's plain increment (what the kernel's this_cpu_inc is on x86-64).
 *   branchy  three data-dependent branches on a pseudo-random stream (xorshift64), which no
 *            predictor learns, each arm a little work of its own; then the plain increment.
 *   chain    subject_chain.c's op: `lock xadd` and a serial chain of CHAIN multiplies that the
 *            next call waits for, the easy shape.
 * The variants of a recording differ in the EXTRA_<SHAPE> counts, each a real code change of
 * the kind natural to its shape: overlap, more independent adds dealt to its streams in turn;
 * hash, more steps of its hash function (a multiply and an xorshift in turn, the table built
 * with the same function); branchy, more adds in every arm (dealt to four registers); chain, more
 * dependent adds on its chain. Build: cc -O2 -shared -fPIC -I runner/include -DCHAIN=32
 * -DEXTRA_OVERLAP=0 -DEXTRA_HASH=0 -DEXTRA_BRANCHY=0 -DEXTRA_CHAIN=0 -o libshapes.so THIS */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "atomwatch/subject.h"

#ifndef EXTRA_OVERLAP
#define EXTRA_OVERLAP 0
#endif
#ifndef EXTRA_HASH
#define EXTRA_HASH 0
#endif
#ifndef EXTRA_BRANCHY
#define EXTRA_BRANCHY 0
#endif
#ifndef EXTRA_CHAIN
#define EXTRA_CHAIN 0
#endif

/* chain_op, with STR, REPT and MUL */
#define AW_SUBJECT_CHAIN_OP_ONLY
#define EXTRA EXTRA_CHAIN
#include "subject_chain.c"

/* ---- overlap ---- */

/* EXTRA_OVERLAP adds: rounds of one on each stream, the rest on the first */
#define OVERLAP_ROUNDS (EXTRA_OVERLAP / 4)
#define OVERLAP_REST   (EXTRA_OVERLAP - 4 * OVERLAP_ROUNDS)

static void overlap_op(uint64_t *counter)
{
	uint64_t x = 1, k = MUL, a, b, c, d;

#if defined(__x86_64__)
	__asm__ __volatile__("lock xaddq %0, (%1)" : "+r"(x) : "r"(counter) : "memory", "cc");
	a = x, b = x + 1, c = x + 2, d = x + 3;
	__asm__ __volatile__("imulq %4, %0\n\t"
	                     "imulq %4, %1\n\t"
	                     "imulq %4, %2\n\t"
	                     "imulq %4, %3\n\t"
	                     "xorq %4, %0\n\t"
	                     "xorq %4, %1\n\t"
	                     "xorq %4, %2\n\t"
	                     "xorq %4, %3\n\t"
	                     "addq %4, %0\n\t"
	                     "addq %4, %1\n\t"
	                     "addq %4, %2\n\t"
	                     "addq %4, %3\n\t" REPT(OVERLAP_ROUNDS, "addq %4, %0\n\t"
	                                                            "addq %4, %1\n\t"
	                                                            "addq %4, %2\n\t"
	                                                            "addq %4, %3")
	                         REPT(OVERLAP_REST, "addq %4, %0")
	                     : "+r"(a), "+r"(b), "+r"(c), "+r"(d)
	                     : "r"(k)
	                     : "cc");
#elif defined(__aarch64__)
	x = __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED); /* ldadd, or LL/SC without LSE */
	a = x, b = x + 1, c = x + 2, d = x + 3;
	__asm__ __volatile__("mul %0, %0, %4\n\t"
	                     "mul %1, %1, %4\n\t"
	                     "mul %2, %2, %4\n\t"
	                     "mul %3, %3, %4\n\t"
	                     "eor %0, %0, %4\n\t"
	                     "eor %1, %1, %4\n\t"
	                     "eor %2, %2, %4\n\t"
	                     "eor %3, %3, %4\n\t"
	                     "add %0, %0, %4\n\t"
	                     "add %1, %1, %4\n\t"
	                     "add %2, %2, %4\n\t"
	                     "add %3, %3, %4\n\t" REPT(OVERLAP_ROUNDS, "add %0, %0, %4\n\t"
	                                                               "add %1, %1, %4\n\t"
	                                                               "add %2, %2, %4\n\t"
	                                                               "add %3, %3, %4")
	                         REPT(OVERLAP_REST, "add %0, %0, %4")
	                     : "+r"(a), "+r"(b), "+r"(c), "+r"(d)
	                     : "r"(k));
#else
	x = __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
	a = (x * k ^ k) + k, b = ((x + 1) * k ^ k) + k, c = ((x + 2) * k ^ k) + k;
	d = ((x + 3) * k ^ k) + k;
	for (int i = 0; i < EXTRA_OVERLAP; i++) {
		a += k;
		__asm__ __volatile__("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
	}
	__asm__ __volatile__("" : : "r"(a), "r"(b), "r"(c), "r"(d));
#endif
}

/* ---- hash ---- */

#define HASH_BITS 18 /* 2^18 slots of 16 bytes: 4 MiB */
#define HASH_MASK ((1u << HASH_BITS) - 1)
#define HASH_KEYS (1u << (HASH_BITS - 1)) /* keys 1..HASH_KEYS: half full */

struct hash_slot {
	uint64_t key; /* 0: empty */
	uint64_t value;
};

static struct hash_slot *table;
static uint64_t hash_lcg = 1; /* the key generator's state */

/* The slot a key hashes to: splitmix64's finalizer (a hash whose slots look random even for
 * consecutive keys, so that another hash leaves the table's probe lengths as they were: 1.50
 * probes per lookup on average, within 0.4%, for 0 to 13 extra steps), then EXTRA_HASH more
 * steps, a multiply and an xorshift in turn, each a bijection (no worse a hash) and a cycle or
 * three more before the lookup's load; the slot is the low bits. */
static inline uint32_t hash_of(uint64_t key)
{
	uint64_t h = key;

	h = (h ^ (h >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	h = (h ^ (h >> 27)) * UINT64_C(0x94d049bb133111eb);
	h ^= h >> 31;
	for (int i = 0; i < EXTRA_HASH; i++) {
		if (i % 2 == 0)
			h *= UINT64_C(0x9e3779b97f4a7c15);
		else
			h ^= h >> 29;
	}
	return (uint32_t)(h & HASH_MASK);
}

/* Builds the table when the library is loaded (linear probing). Out of memory: no table, and
 * the op only counts. */
static void hash_build(void) __attribute__((constructor));

static void hash_build(void)
{
	table = calloc((size_t)1 << HASH_BITS, sizeof(*table));
	if (!table)
		return;
	for (uint64_t key = 1; key <= HASH_KEYS; key++) {
		uint32_t i = hash_of(key);

		while (table[i].key)
			i = (i + 1) & HASH_MASK;
		table[i].key = key;
		table[i].value = key * 3;
	}
}

/* Frees the table when the library is unloaded: an agent loads and unloads a subject once per
 * run, and under LeakSanitizer a table left behind is a leak. */
static void hash_free(void) __attribute__((destructor));

static void hash_free(void)
{
	free(table);
	table = NULL;
}

static void hash_op(uint64_t *counter)
{
	uint64_t key, value = 0;

	/* the top bits of a 64-bit LCG: every key in turn, in a scrambled order */
	hash_lcg = hash_lcg * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
	key = (hash_lcg >> (64 - (HASH_BITS - 1))) + 1;
	if (table) {
		uint32_t i = hash_of(key);

		while (table[i].key != key)
			i = (i + 1) & HASH_MASK;
		value = table[i].value;
	}
	__asm__ __volatile__("" : : "r"(value));
	*counter += 1;
}

/* ---- branchy ---- */

static uint64_t branchy_state = MUL;

/* One arm: its own instruction on acc, then EXTRA_BRANCHY adds dealt to acc, b, c and d in
 * turn (four short chains rather than one long one, so that each add costs a fraction of a
 * cycle). An asm statement of its own in each arm keeps the compiler from turning the branch
 * into a conditional move. */
#define BRANCHY_ROUNDS (EXTRA_BRANCHY / 4)
#define BRANCHY_REST   (EXTRA_BRANCHY - 4 * BRANCHY_ROUNDS)
#if defined(__x86_64__)
#define ARM(insn, acc, b, c, d, k)                                                     \
	__asm__ __volatile__(insn " %4, %0\n\t" REPT(BRANCHY_ROUNDS, "addq %4, %0\n\t" \
	                                                             "addq %4, %1\n\t" \
	                                                             "addq %4, %2\n\t" \
	                                                             "addq %4, %3")    \
	                         REPT(BRANCHY_REST, "addq %4, %0")                     \
	                     : "+r"(acc), "+r"(b), "+r"(c), "+r"(d)                    \
	                     : "r"(k)                                                  \
	                     : "cc")
#define ARM_ADD(acc, b, c, d, k) ARM("addq", acc, b, c, d, k)
#define ARM_SUB(acc, b, c, d, k) ARM("subq", acc, b, c, d, k)
#define ARM_XOR(acc, b, c, d, k) ARM("xorq", acc, b, c, d, k)
#elif defined(__aarch64__)
#define ARM(insn, acc, b, c, d, k)                                                            \
	__asm__ __volatile__(insn " %0, %0, %4\n\t" REPT(BRANCHY_ROUNDS, "add %0, %0, %4\n\t" \
	                                                                 "add %1, %1, %4\n\t" \
	                                                                 "add %2, %2, %4\n\t" \
	                                                                 "add %3, %3, %4")    \
	                         REPT(BRANCHY_REST, "add %0, %0, %4")                         \
	                     : "+r"(acc), "+r"(b), "+r"(c), "+r"(d)                           \
	                     : "r"(k))
#define ARM_ADD(acc, b, c, d, k) ARM("add", acc, b, c, d, k)
#define ARM_SUB(acc, b, c, d, k) ARM("sub", acc, b, c, d, k)
#define ARM_XOR(acc, b, c, d, k) ARM("eor", acc, b, c, d, k)
#else
#define ARM(op, acc, b, c, d, k)                                                 \
	do {                                                                     \
		(acc) op(k);                                                     \
		for (int i_ = 0; i_ < EXTRA_BRANCHY; i_++)                       \
			(acc) += (k);                                            \
		__asm__ __volatile__("" : "+r"(acc), "+r"(b), "+r"(c), "+r"(d)); \
	} while (0)
#define ARM_ADD(acc, b, c, d, k) ARM(+=, acc, b, c, d, k)
#define ARM_SUB(acc, b, c, d, k) ARM(-=, acc, b, c, d, k)
#define ARM_XOR(acc, b, c, d, k) ARM(^=, acc, b, c, d, k)
#endif

static void branchy_op(uint64_t *counter)
{
	uint64_t s = branchy_state, acc, b, c, d, k = MUL;

	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	branchy_state = s;
	acc = s, b = s + 1, c = s + 2, d = s + 3;
	if (s >> 63)
		ARM_ADD(acc, b, c, d, k);
	else
		ARM_SUB(acc, b, c, d, k);
	if ((s >> 62) & 1)
		ARM_XOR(acc, b, c, d, k);
	else
		ARM_ADD(acc, b, c, d, k);
	if ((s >> 61) & 1)
		ARM_SUB(acc, b, c, d, k);
	else
		ARM_XOR(acc, b, c, d, k);
	__asm__ __volatile__("" : : "r"(acc), "r"(b), "r"(c), "r"(d));
	*counter += 1;
}

static const struct atomwatch_subject_op shape_ops[] = {{"overlap", overlap_op},
                                                        {"hash", hash_op},
                                                        {"branchy", branchy_op},
                                                        {"chain", chain_op},
                                                        {0, 0}};
static const struct atomwatch_subject shapes = {ATOMWATCH_SUBJECT_ABI, "shapes", shape_ops, NULL};

const struct atomwatch_subject *atomwatch_subject(void);

const struct atomwatch_subject *atomwatch_subject(void)
{
	return &shapes;
}
