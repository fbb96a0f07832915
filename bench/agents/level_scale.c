/* How long this machine stays in one level (docs/benchmarks.md "The machine's levels"): a
 * throughput-bound kernel (independent multiply chains, which an out-of-order core overlaps, so
 * that it slows when another tenant shares the core's execution ports) and a latency-bound one
 * (one dependent chain) timed back to back in fine slices on one pinned CPU for tens of
 * seconds. Writes one binary record per slice for level_scale.py to read.
 * usage: level_scale [--cpu N] [--seconds S] [--slice-us U] --out FILE */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MUL UINT64_C(0x9e3779b97f4a7c15)

/* The record of one slice: when it began and each kernel's ticks. */
struct slice {
	uint64_t start;
	uint32_t throughput, latency;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
static inline uint64_t ticks(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
	return (uint64_t)hi << 32 | lo;
}
#else
static inline uint64_t ticks(void)
{
	return now_ns();
}
#endif

/* Independent multiply chains, enough of them to keep every multiplier busy: `steps` rounds of
 * one multiply per chain. Zen 5 has three 64-bit multipliers of 3-cycle latency, so four chains
 * are still latency-bound there (measured: 4 chains cost exactly what 1 does); twelve are
 * throughput-bound on any core with at most four multipliers. */
#if defined(__x86_64__)
#define CHAINS 12
static uint64_t throughput_kernel(uint64_t steps)
{
	uint64_t a = 1, b = 3, c = 5, d = 7, e = 9, f = 11, g = 13, h = 15, i = 17, j = 19, l = 21,
	         m = 23, k = MUL;

	for (uint64_t n = 0; n < steps; n++)
		__asm__ __volatile__("imulq %12, %0\n\timulq %12, %1\n\timulq %12, %2\n\t"
		                     "imulq %12, %3\n\timulq %12, %4\n\timulq %12, %5\n\t"
		                     "imulq %12, %6\n\timulq %12, %7\n\timulq %12, %8\n\t"
		                     "imulq %12, %9\n\timulq %12, %10\n\timulq %12, %11"
		                     : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f),
		                       "+r"(g), "+r"(h), "+r"(i), "+r"(j), "+r"(l), "+r"(m)
		                     : "r"(k));
	return a ^ b ^ c ^ d ^ e ^ f ^ g ^ h ^ i ^ j ^ l ^ m;
}
#else
#define CHAINS 4
static uint64_t throughput_kernel(uint64_t steps)
{
	uint64_t a = 1, b = 3, c = 5, d = 7, k = MUL;

	for (uint64_t i = 0; i < steps; i++) {
		a *= k;
		b *= k;
		c *= k;
		d *= k;
		__asm__ __volatile__("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
	}
	return a ^ b ^ c ^ d;
}
#endif

/* One dependent chain of `steps` multiplies. */
static uint64_t latency_kernel(uint64_t steps)
{
	uint64_t a = 1, k = MUL;

	for (uint64_t i = 0; i < steps; i++) {
		a *= k;
		__asm__ __volatile__("" : "+r"(a));
	}
	return a;
}

int main(int argc, char **argv)
{
	int cpu = 0;
	double seconds = 40, slice_us = 50;
	const char *out = NULL;
	cpu_set_t set;
	FILE *f;
	uint64_t steps = 64, t0, tick0, t_end, n = 0, sink = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--cpu"))
			cpu = (int)strtol(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = strtod(argv[i + 1], NULL);
		else if (!strcmp(argv[i], "--slice-us"))
			slice_us = strtod(argv[i + 1], NULL);
		else if (!strcmp(argv[i], "--out"))
			out = argv[i + 1];
	}
	if (!out || seconds <= 0 || slice_us <= 0) {
		fprintf(stderr, "usage: level_scale [--cpu N] [--seconds S] [--slice-us U] "
		                "--out FILE\n");
		return 2;
	}
	CPU_ZERO(&set);
	CPU_SET((size_t)cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "cannot pin to CPU %d: %s\n", cpu, strerror(errno));
		return 1;
	}
	f = fopen(out, "wb");
	if (!f) {
		fprintf(stderr, "cannot create '%s': %s\n", out, strerror(errno));
		return 1;
	}
	/* steps such that the throughput kernel lasts half a slice (the fastest of a few tries) */
	for (;;) {
		uint64_t a = now_ns();

		sink += throughput_kernel(steps);
		if ((double)(now_ns() - a) >= slice_us * 250 || steps > (UINT64_C(1) << 30))
			break;
		steps *= 2;
	}
	{
		uint64_t best = UINT64_MAX;

		for (int i = 0; i < 50; i++) {
			uint64_t a = now_ns(), d;

			sink += throughput_kernel(steps);
			d = now_ns() - a;
			best = d < best ? d : best;
		}
		steps = (uint64_t)((double)steps * slice_us * 500 / (double)(best ? best : 1));
		steps = steps ? steps : 1;
	}
	t0 = now_ns();
	tick0 = ticks();
	t_end = t0 + (uint64_t)(seconds * 1e9);
	while (now_ns() < t_end) {
		struct slice s;
		uint64_t a, b, c;

		a = ticks();
		sink += throughput_kernel(steps);
		b = ticks();
		sink += latency_kernel(steps);
		c = ticks();
		s.start = a - tick0;
		s.throughput = (uint32_t)(b - a);
		s.latency = (uint32_t)(c - b);
		if (fwrite(&s, sizeof(s), 1, f) != 1) {
			fprintf(stderr, "cannot write '%s'\n", out);
			return 1;
		}
		n++;
	}
	{
		uint64_t elapsed_ns = now_ns() - t0, elapsed_ticks = ticks() - tick0;

		/* the trailer: slices, steps per kernel, ticks per ns, chains */
		fprintf(stderr,
		        "%" PRIu64 " slices of %" PRIu64 " steps per kernel (%d chains), %.3f "
		        "ticks/ns%s\n",
		        n, steps, CHAINS, (double)elapsed_ticks / (double)elapsed_ns,
		        sink ? "" : " ");
		fprintf(f, "TRAILER %" PRIu64 " %" PRIu64 " %.9f %d\n", n, steps,
		        (double)elapsed_ticks / (double)elapsed_ns, CHAINS);
	}
	return fclose(f) ? 1 : 0;
}
