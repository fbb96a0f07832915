/* libpcpu, the demo's library under test: per-CPU counters. pcpu_inc() adds 1 to the calling
 * CPU's counter the way the kernel's this_cpu_inc() does on x86-64, with one non-locked `incq`
 * on memory: the caller is pinned, no other CPU writes this counter. Exported to atomwatch
 * through the subject ABI (runner/include/atomwatch/subject.h). */
#include <stdint.h>

#include "atomwatch/subject.h"

void pcpu_inc(uint64_t *counter);

void pcpu_inc(uint64_t *counter)
{
#if defined(__x86_64__)
	__asm__ __volatile__("incq %0" : "+m"(*counter) : : "cc");
#else
	(*counter)++; /* a plain add elsewhere */
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
