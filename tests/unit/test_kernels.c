/* Each kernel against its plain-C twin: after N ops (untimed, in the timed loop, with duty, and
 * from a contender thread) the counter holds exactly what the twin computes. Built twice, with
 * the kernels at -O0 and at -O2. On aarch64 without LSE the LSE kernels must not be called:
 * they are counted as skipped, and AW_EXPECT_LSE=0/1 pins what the CPU must report. The
 * reference kernels, asm and C, against their twins. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#include <cmocka.h>

#include "kernels.h"

#define N_ONCE 1000

static struct aw_slot *new_slot(void)
{
	struct aw_slot *s = aligned_alloc(128, sizeof(*s));

	assert_non_null(s);
	memset(s, 0, sizeof(*s));
	return s;
}

static int runnable(unsigned flags)
{
	return !(flags & AW_OP_LSE) || aw_cpu_has_lse();
}

#if defined(__aarch64__)
static sigjmp_buf probe_env;

static void probe_sigill(int sig)
{
	(void)sig;
	siglongjmp(probe_env, 1);
}

/* Whether this CPU (or the emulator's) executes an LSE instruction, asked of the CPU itself
 * rather than of HWCAP as aw_cpu_has_lse() does: an ldadd that raises SIGILL means no LSE. */
static bool cpu_executes_lse(void)
{
	static volatile uint64_t word;
	struct sigaction sa, old;
	volatile bool executed = false;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = probe_sigill;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGILL, &sa, &old), 0);
	if (!sigsetjmp(probe_env, 1)) {
		uint64_t before, one = 1;

		__asm__ __volatile__(".arch_extension lse\n\t"
		                     "ldadd %1, %0, [%2]"
		                     : "=r"(before)
		                     : "r"(one), "r"(&word)
		                     : "memory");
		(void)before;
		executed = true;
	}
	assert_int_equal(sigaction(SIGILL, &old, NULL), 0);
	return executed;
}
#endif

/* What aw_cpu_has_lse() reports is what the CPU does: off aarch64 never; on aarch64 exactly when
 * an LSE instruction executes; and what AW_EXPECT_LSE=0/1 pins (the aarch64 runs under
 * qemu -cpu cortex-a57 and -cpu max) when it is set. */
static void test_lse_expectation(void **state)
{
	const char *want = getenv("AW_EXPECT_LSE");

	(void)state;
	if (want && *want)
		assert_int_equal(aw_cpu_has_lse(), strcmp(want, "0") != 0);
#if defined(__aarch64__)
	assert_int_equal(aw_cpu_has_lse(), cpu_executes_lse());
#else
	assert_false(aw_cpu_has_lse());
#endif
}

static void test_ops_match_twins(void **state)
{
	unsigned n, ran = 0, skipped = 0;
	const struct aw_kernel *k = aw_kernels(&n);

	(void)state;
	assert_true(n >= 3);
	for (unsigned i = 0; i < n; i++) {
		struct aw_slot *a = new_slot(), *b = new_slot();
		uint64_t per_op = 1;

		if (!runnable(k[i].flags)) {
			skipped++;
			free(a);
			free(b);
			continue;
		}
		ran++;
		for (int j = 0; j < N_ONCE; j++) {
			k[i].once(a);
			k[i].twin(b);
		}
		if (a->value != b->value || a->pair_hi != b->pair_hi)
			fail_msg("op %s: asm gives {%llu,%llu}, twin {%llu,%llu}", k[i].name,
			         (unsigned long long)a->value, (unsigned long long)a->pair_hi,
			         (unsigned long long)b->value, (unsigned long long)b->pair_hi);
		assert_int_equal(a->value, N_ONCE * per_op);
		assert_int_equal(a->pair_hi, (k[i].flags & AW_OP_PAIR) ? N_ONCE : 0);
		assert_int_equal(a->unlocks, 0);
		free(a);
		free(b);
	}
	assert_int_equal(ran + skipped, n);
	if (!aw_cpu_has_lse()) {
		unsigned lse = 0;

		for (unsigned i = 0; i < n; i++)
			lse += !!(k[i].flags & AW_OP_LSE);
		assert_int_equal(skipped, lse);
	} else {
		assert_int_equal(skipped, 0);
	}
}

static void test_timed_loops_count(void **state)
{
	unsigned n;
	const struct aw_kernel *k = aw_kernels(&n);

	(void)state;
	for (unsigned i = 0; i < n; i++) {
		struct aw_slot *s = new_slot();
		struct aw_loop l = {.slot = s, .iters = 64 * AW_UNROLL};

		if (!runnable(k[i].flags)) {
			free(s);
			continue;
		}
		k[i].timed(&l);
		if (s->value != 64 * AW_UNROLL)
			fail_msg("op %s: timed loop left %llu, want %d", k[i].name,
			         (unsigned long long)s->value, 64 * AW_UNROLL);
		l.duty = 3;
		k[i].timed(&l);
		assert_int_equal(s->value, 128 * AW_UNROLL);
		k[i].empty(&l);
		assert_int_equal(s->value, 128 * AW_UNROLL);
		assert_int_equal(s->pair_hi, (k[i].flags & AW_OP_PAIR) ? 128 * AW_UNROLL : 0);
		free(s);
	}
}

struct contender {
	const struct aw_kernel *k;
	struct aw_slot *slot;
	volatile int stop, running;
	uint64_t done;
};

static void *contend(void *arg)
{
	struct contender *c = arg;

	c->done = c->k->contend(c->slot, 5, &c->stop, &c->running);
	return NULL;
}

static void test_contenders_count(void **state)
{
	unsigned n;
	const struct aw_kernel *k = aw_kernels(&n);

	(void)state;
	for (unsigned i = 0; i < n; i++) {
		struct contender c = {.k = &k[i]};
		struct aw_loop l;
		pthread_t t;

		if (!runnable(k[i].flags) || !k[i].contend)
			continue;
		assert_true(k[i].flags & AW_OP_ATOMIC);
		c.slot = new_slot();
		assert_int_equal(pthread_create(&t, NULL, contend, &c), 0);
		while (!__atomic_load_n(&c.running, __ATOMIC_ACQUIRE))
			sched_yield();
		l = (struct aw_loop){.slot = c.slot, .iters = 256 * AW_UNROLL};
		k[i].timed(&l);
		__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
		pthread_join(t, NULL);
		if (c.slot->value != c.done + 256 * AW_UNROLL)
			fail_msg("op %s contended: counter %llu, ops %llu", k[i].name,
			         (unsigned long long)c.slot->value,
			         (unsigned long long)(c.done + 256 * AW_UNROLL));
		free(c.slot);
	}
}

static void test_readers_count(void **state)
{
	unsigned n;
	const struct aw_reader_kernel *r = aw_reader_kernels(&n);

	(void)state;
	assert_true(n >= 3);
	for (unsigned i = 0; i < n; i++) {
		struct aw_slot *s = new_slot();
		struct aw_loop l = {.slot = s, .iters = 32 * AW_UNROLL};

		if (!runnable(r[i].flags)) {
			free(s);
			continue;
		}
		for (int j = 0; j < N_ONCE; j++)
			r[i].once(s);
		assert_int_equal(s->value, N_ONCE);
		assert_int_equal(s->unlocks, N_ONCE);
		r[i].timed(&l);
		if (s->value != N_ONCE + 32 * AW_UNROLL || s->unlocks != s->value)
			fail_msg("reader %s on %s: locks %llu unlocks %llu", r[i].reader, r[i].op,
			         (unsigned long long)s->value, (unsigned long long)s->unlocks);
		free(s);
	}
}

static int calls;
static void count_op(uint64_t *c)
{
	*c += 1;
	calls++;
}
static void count_lock(void)
{
	calls++;
}

static void test_call_loops(void **state)
{
	struct aw_slot *s = new_slot();
	struct aw_call_ops ops = {.op = count_op, .lock = count_lock, .unlock = count_lock};
	struct aw_loop l = {.slot = s, .iters = 4 * AW_UNROLL, .call = &ops};

	(void)state;
	aw_call_op_timed(&l);
	assert_int_equal(s->value, 4 * AW_UNROLL);
	assert_int_equal(calls, 4 * AW_UNROLL);
	aw_call_op_empty(&l);
	assert_int_equal(s->value, 4 * AW_UNROLL);
	aw_call_reader_timed(&l);
	assert_int_equal(calls, 12 * AW_UNROLL);
	aw_call_reader_empty(&l);
	assert_int_equal(calls, 12 * AW_UNROLL);
	free(s);
}

/* The reference kernel, asm and C, computes exactly the twin's chain, batch after batch (the
 * value carries over), and never degenerates to a constant. */
static void test_reference_matches_twin(void **state)
{
	aw_loop_fn loops[] = {aw_reference_timed, aw_reference_portable};
	const char *names[] = {"aw_reference_timed", "aw_reference_portable"};

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		struct aw_slot *s = new_slot();
		struct aw_loop l = {.slot = s, .iters = 64 * AW_UNROLL, .duty = 7};
		uint64_t want = aw_reference_twin(AW_REFERENCE_SEED, 64 * AW_UNROLL);

		s->value = AW_REFERENCE_SEED;
		loops[i](&l);
		if (s->value != want)
			fail_msg("%s: chain gives %#llx, twin %#llx", names[i],
			         (unsigned long long)s->value, (unsigned long long)want);
		l.iters = 3 * AW_UNROLL;
		loops[i](&l);
		assert_int_equal(s->value, aw_reference_twin(want, 3 * AW_UNROLL));
		assert_true(s->value & 1);
		assert_int_equal(s->pair_hi, 0);
		assert_int_equal(s->unlocks, 0);
		free(s);
	}
	assert_int_equal(aw_reference_twin(AW_REFERENCE_SEED, 0), AW_REFERENCE_SEED);
	assert_int_equal(aw_reference_twin(1, 2), AW_REFERENCE_MUL * AW_REFERENCE_MUL);
}

/* One reference kernel of the family, asm or C, against its twin over two batches (the state
 * carries over), l->duty ignored. */
static void check_family_loop(const struct aw_reference_kernel *k, aw_loop_fn loop,
                              const char *which)
{
	struct aw_slot *s = new_slot(), *twin = new_slot();
	struct aw_loop l = {.slot = s, .iters = 64 * AW_UNROLL, .duty = 7};
	uintptr_t walk = 0;

	assert_int_equal(k->start(s), 0);
	assert_int_equal(k->start(twin), 0);
	for (int batch = 0; batch < 2; batch++) {
		uint64_t steps = l.iters;

		loop(&l);
		switch (k->id) {
		case AW_REF_MULCHAIN:
			twin->value = aw_reference_twin(twin->value, steps);
			break;
		case AW_REF_MULINDEP:
			aw_mulindep_twin(twin, steps);
			break;
		case AW_REF_ATOMICADD:
			twin->value += steps; /* the twin of an increment, steps times */
			break;
		case AW_REF_MEMCHASE:
			/* the walk's lines by index, from the walk's own start */
			walk = (uintptr_t)aw_memchase_walk();
			assert_true(twin->value == walk || batch);
			twin->value = aw_memchase_twin(
			    (uint32_t)((twin->value - walk) / AW_MEMCHASE_LINE), steps);
			assert_int_not_equal(twin->value, UINT32_MAX);
			twin->value = walk + twin->value * AW_MEMCHASE_LINE;
			break;
		case AW_REF_MEMGATHER:
			assert_int_equal(twin->pad[0], (uintptr_t)aw_memchase_walk());
			assert_int_equal(aw_memgather_twin(twin, steps), 0);
			break;
		case AW_REF_COUNT:
			fail();
		}
		if (memcmp(s, twin, sizeof(*s)))
			fail_msg("%s %s, batch %d: state %#llx %#llx ..., twin %#llx %#llx ...",
			         k->name, which, batch, (unsigned long long)s->value,
			         (unsigned long long)s->pair_hi, (unsigned long long)twin->value,
			         (unsigned long long)twin->pair_hi);
		l.iters = 3 * AW_UNROLL;
	}
	free(s);
	free(twin);
}

/* The family of reference kernels: named as the result document names them, in enum aw_ref
 * order, each asm and C loop matching its twin; mulindep-v1's chains stay odd and apart, the
 * walk of memchase-v1 is a single cycle through every line, and memgather-v1's lines scatter. */
static void test_reference_family(void **state)
{
	unsigned n;
	const struct aw_reference_kernel *k = aw_reference_kernels(&n);
	struct aw_slot *s = new_slot();
	const uintptr_t *walk, *p;
	uint32_t steps = 0;

	(void)state;
	assert_int_equal(n, AW_REF_COUNT);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(k[i].id, i);
		assert_string_equal(k[i].name, aw_ref_name(k[i].id));
		assert_int_equal(aw_ref_lookup(k[i].name), (int)i);
		check_family_loop(&k[i], k[i].timed, "asm");
		check_family_loop(&k[i], k[i].portable, "C");
	}
	assert_ptr_equal(k[AW_REF_MULCHAIN].timed, aw_reference_timed);
	assert_int_equal(k[AW_REF_MULINDEP].start(s), 0);
	aw_mulindep_timed(&(struct aw_loop){.slot = s, .iters = 5 * AW_UNROLL});
	for (unsigned i = 0; i < AW_MULINDEP_CHAINS; i++) {
		uint64_t v[AW_MULINDEP_CHAINS];

		memcpy(v, s, sizeof(v));
		assert_true(v[i] & 1);
		for (unsigned j = 0; j < i; j++)
			assert_true(v[i] != v[j]);
	}
	walk = aw_memchase_walk();
	assert_non_null(walk);
	assert_ptr_equal(aw_memchase_walk(), walk); /* once per process and node */
	p = walk;
	do {
		p = (const uintptr_t *)*p;
		steps++;
	} while (p != walk && steps <= AW_MEMCHASE_LINES);
	assert_int_equal(steps, AW_MEMCHASE_LINES);
	/* memgather-v1's lines scatter over the walk: 4,096 steps meet ~3,970 lines at random */
	{
		static uint8_t seen[AW_MEMCHASE_LINES];
		uint64_t x = AW_MEMGATHER_SEED;
		unsigned distinct = 0;

		for (unsigned i = 0; i < 4096; i++, x = x * AW_MEMGATHER_MUL + AW_MEMGATHER_ADD)
			if (!seen[x >> 48]++)
				distinct++;
		if (distinct < 3800)
			fail_msg("memgather-v1 met %u lines in 4096 steps", distinct);
	}
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lse_expectation),        cmocka_unit_test(test_ops_match_twins),
	    cmocka_unit_test(test_timed_loops_count),      cmocka_unit_test(test_contenders_count),
	    cmocka_unit_test(test_readers_count),          cmocka_unit_test(test_call_loops),
	    cmocka_unit_test(test_reference_matches_twin), cmocka_unit_test(test_reference_family),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
