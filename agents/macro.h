/* The macro check (issue 33): whether a per-CPU op's regression reaches a real workload. When
 * the run's matrix profile has a `macro` section (configs/matrix.yaml), each of its tools runs
 * `runs` times with fixed groups and loops, and its seconds per run become a cell of its own,
 * `subject=atomwatch-macro op=<tool>` (in ns, as every cell), judged like the others with its
 * own thresholds (configs/thresholds.yaml): hackbench from Debian's rt-tests, and
 * `perf bench sched messaging` where linux-perf is installed. A host without a tool skips its
 * cell with the reason; it never fails the run. */
#ifndef AW_AGENT_MACRO_H
#define AW_AGENT_MACRO_H

#include "atomwatch/runner.h"
#include "aw/result.h"

#define AW_MACRO_SUBJECT "atomwatch-macro"

/* The seconds a tool's output reports ("Time: 0.436" of hackbench, "Total time: 0.850 [sec]"
 * of perf bench), or a negative value when it holds none. */
double aw_macro_seconds(const char *tool, const char *output);

/* Appends one cell per tool of the runner's profile to `res` (none without a macro section,
 * or when the runner's selection leaves them out). Returns 0 (cells may be skipped, with a
 * reason), -EINTR when stopped, or a negative errno with *err. */
int aw_macro_measure(struct aw_runner *r, struct aw_result *res, volatile int *stop, char **err);

#endif
