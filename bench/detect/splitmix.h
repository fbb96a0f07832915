/* splitmix64 (Steele, Lea and Flood): the seeded pseudo-random stream of the detection benches,
 * the same on every platform and run. Advances *state and returns the next 64 bits. */
#ifndef AW_BENCH_SPLITMIX_H
#define AW_BENCH_SPLITMIX_H

#include <stdint.h>

static inline uint64_t aw_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15u);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

#endif
