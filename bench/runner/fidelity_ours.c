/* The runner's side of the fidelity benchmark: one cell measured by the engine exactly as
 * atomwatch-run measures it, with the gross (unsubtracted) median exposed for comparison with a
 * harness that does not subtract its loop. */
#include <errno.h>
#include <string.h>

#include "aw/result.h"
#include "fidelity_ours.h"
#include "internal.h"

static struct aw_timer timer;

const char *aw_fid_init(void)
{
	aw_timer_init(&timer, 0);
	return timer.name;
}

int aw_fid_measure(const char *name, int cpu, struct aw_fid_result *out)
{
	struct aw_measure_params p = {.samples = 200,
	                              .batch_min_ns = 20000,
	                              .batch_min_ticks = 1000,
	                              .warmup_ns = 2000000,
	                              .timer = &timer};
	struct aw_measure_detail d = {0};
	struct aw_cell cell;
	struct aw_job job = {.cpu = cpu, .contender_cpu = -1, .check = AW_CHECK_VALUE};
	const struct aw_kernel *k;
	unsigned n;
	int rc;

	k = aw_kernels(&n);
	for (unsigned i = 0; i < n; i++) {
		if (!strcmp(k[i].name, name)) {
			job.timed = k[i].timed;
			job.empty = k[i].empty;
			if (k[i].flags & AW_OP_PAIR)
				job.check = AW_CHECK_PAIR;
		}
	}
	if (!job.timed)
		return -ENOENT;
	memset(&cell, 0, sizeof(cell));
	rc = aw_measure_ex(&job, &p, &cell, &d);
	if (!rc && cell.status != AW_CELL_OK)
		rc = -EIO;
	if (!rc) {
		out->net_p50 = cell.p50;
		out->gross_p50 = d.gross_p50;
		out->net_mean = cell.mean;
		out->gross_mean = d.gross_mean;
		out->baseline_p50 = d.baseline_p50;
		out->wall_ms = (double)d.wall_ns / 1e6;
		out->below_resolution = cell.below_resolution;
	}
	aw_cell_release(&cell);
	return rc;
}
