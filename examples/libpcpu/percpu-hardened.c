/* libpcpu, the demo's library under test: per-CPU counters. pcpu_inc() adds 1 to the calling
 * CPU's counter, "hardened": atomic against every CPU and fully ordered, with `lock xadd`
 * followed by `mfence` on x86-64 (a sequentially consistent add and fence elsewhere). Correct,
 * and many times slower than the plain increment it replaced: the regression the gate stops.
 * Exported to atomwatch through the subject ABI (runner/include/atomwatch/subject.h). */
#include <stdint.h>

#include "atomwatch/subject.h"

void pcpu_inc(uint64_t *counter);

void pcpu_inc(uint64_t *counter)
{
#if defined(__x86_64__)
	uint64_t one = 1;

	__asm__ __volatile__("lock xaddq %0, %1\n\tmfence"
	                     : "+r"(one), "+m"(*counter)
	                     :
	                     : "memory", "cc");
#else
	__atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

static const struct atomwatch_subject_op ops[] = {
    {"inc", pcpu_inc},
    {0, 0},
};

static const struct atomwatch_subject subject = {ATOMWATCH_SUBJECT_ABI, "libpcpu", ops, 0};

const struct atomwatch_subject *atomwatch_subject(void)
{
	return &subject;
}
