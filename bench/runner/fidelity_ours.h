/* The runner's side of the fidelity benchmark, callable from C++. */
#ifndef AW_BENCH_FIDELITY_OURS_H
#define AW_BENCH_FIDELITY_OURS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct aw_fid_result {
	double net_p50;      /* the cell's p50: net ns per op */
	double gross_p50;    /* before subtracting the empty loop */
	double net_mean;     /* the cell's mean */
	double gross_mean;   /* the op loop's mean before subtracting */
	double baseline_p50; /* the empty loop */
	double wall_ms;      /* the cell's wall time */
	int below_resolution;
};

/* Prepares the timer; returns its name. */
const char *aw_fid_init(void);

/* Measures op `name` on `cpu` the way atomwatch-run does (default profile's parameters).
 * Returns 0 or a negative errno. */
int aw_fid_measure(const char *name, int cpu, struct aw_fid_result *out);

#ifdef __cplusplus
}
#endif

#endif
