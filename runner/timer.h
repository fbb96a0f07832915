/* The timer of the timed loops: the architectural counter (TSC with lfence on x86-64,
 * CNTVCT_EL0 with isb on aarch64) calibrated against CLOCK_MONOTONIC_RAW, or
 * CLOCK_MONOTONIC_RAW itself where no usable counter exists. */
#ifndef AW_TIMER_H
#define AW_TIMER_H

#include <stdint.h>
#include <time.h>

enum aw_timer_kind {
	AW_TIMER_CLOCK,
	AW_TIMER_TSC,
	AW_TIMER_CNTVCT
};

struct aw_timer {
	enum aw_timer_kind kind;
	const char *name; /* "tsc", "cntvct_el0", "clock_monotonic_raw" */
	double hz;        /* ticks per second */
	double ns_per_tick;
};

/* Selected by aw_timer_init(); read by aw_timer_read() in every kernel. */
extern enum aw_timer_kind aw_timer_active;

/* Picks the best timer of this host and calibrates it (about 20 ms). `force_clock` selects
 * CLOCK_MONOTONIC_RAW. Returns 0 (it cannot fail: the clock is the fallback). */
int aw_timer_init(struct aw_timer *t, int force_clock);

static inline uint64_t aw_timer_read(void)
{
#if defined(__x86_64__)
	if (aw_timer_active == AW_TIMER_TSC) {
		uint32_t lo, hi;

		__asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
		return ((uint64_t)hi << 32) | lo;
	}
#elif defined(__aarch64__)
	if (aw_timer_active == AW_TIMER_CNTVCT) {
		uint64_t v;

		__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(v) : : "memory");
		return v;
	}
#endif
	{
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
		return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	}
}

#endif
