/* Timer selection and calibration; see timer.h. */
#include "timer.h"

#include <stdio.h>
#include <string.h>

enum aw_timer_kind aw_timer_active = AW_TIMER_CLOCK;

static uint64_t raw_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
/* The TSC is a usable clock only when it is invariant (constant_tsc and nonstop_tsc). */
static int tsc_usable(void)
{
	char line[4096];
	FILE *f = fopen("/proc/cpuinfo", "re");
	int ok = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "flags", 5)) {
			ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
			break;
		}
	}
	fclose(f);
	return ok;
}
#endif

/* Ticks of the active timer per second, measured over ~20 ms of CLOCK_MONOTONIC_RAW; the
 * best (shortest-bracketed) of three tries. */
static double calibrate(void)
{
	double best = 0, best_err = 1e30;

	for (int i = 0; i < 3; i++) {
		uint64_t a0 = raw_ns(), t0 = aw_timer_read(), a1 = raw_ns();
		uint64_t b0, t1, b1;

		do {
			b0 = raw_ns();
		} while (b0 - a1 < 20000000u);
		t1 = aw_timer_read();
		b1 = raw_ns();
		{
			double ns = (double)(b0 + b1) / 2 - (double)(a0 + a1) / 2;
			double err = (double)(a1 - a0) + (double)(b1 - b0);

			if (err < best_err) {
				best_err = err;
				best = (double)(t1 - t0) * 1e9 / ns;
			}
		}
	}
	return best;
}

int aw_timer_init(struct aw_timer *t, int force_clock)
{
	aw_timer_active = AW_TIMER_CLOCK;
	t->kind = AW_TIMER_CLOCK;
	t->name = "clock_monotonic_raw";
	t->hz = 1e9;
	if (!force_clock) {
#if defined(__x86_64__)
		if (tsc_usable()) {
			aw_timer_active = AW_TIMER_TSC;
			t->kind = AW_TIMER_TSC;
			t->name = "tsc";
			t->hz = calibrate();
		}
#elif defined(__aarch64__)
		{
			uint64_t frq;

			__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(frq));
			aw_timer_active = AW_TIMER_CNTVCT;
			t->kind = AW_TIMER_CNTVCT;
			t->name = "cntvct_el0";
			t->hz = calibrate();
			/* CNTFRQ_EL0 is exact where firmware set it right; trust it when the
			 * measurement agrees within 1%. */
			if (frq && t->hz > 0.99 * (double)frq && t->hz < 1.01 * (double)frq)
				t->hz = (double)frq;
		}
#endif
		if (t->hz <= 0) {
			aw_timer_active = AW_TIMER_CLOCK;
			t->kind = AW_TIMER_CLOCK;
			t->name = "clock_monotonic_raw";
			t->hz = 1e9;
		}
	}
	t->ns_per_tick = 1e9 / t->hz;
	return 0;
}
