/* The host's own changes in a commit's verdict (issue 33, docs/detection.md "The host's own
 * changes"): every run carries a control, code that never changes (the agent's control cell
 * `subject=atomwatch-control op=chain cpu=N` and the reference kernels beside each cell). A
 * regression that coincides with a shift of the control, or with a change of the host's
 * fingerprint between the newest baseline run and the head run (kernel, microcode, firmware,
 * governor, compiler...), is the host's and not the commit's: its cell is `host changed`
 * (AW_VERDICT_HOST_CHANGED), the verdict names what changed, and it fails no gate and starts
 * no bisection. A control shift with the fingerprint unchanged is a moment of the host: while
 * the cell may still be re-measured it is suspect instead (measured again), and host changed
 * only once the budget is spent with every head run still shifted. The control cell
 * itself never gates. analysis.c calls this after judging,
 * before the host's status is decided. */
#ifndef AW_COLLECTOR_CONTROL_H
#define AW_COLLECTOR_CONTROL_H

#include <jansson.h>

#include "analysis.h"
#include "store.h"

/* The control's cell subject (the agent's reserved name, agents/control.h). */
#define AW_CONTROL_SUBJECT "atomwatch-control"

/* The least shift of the control (in log units: 3%) that can explain a regression; a
 * regression is the host's when the control as a whole (the median of its series' shifts)
 * moved at least this much and at least half as much as the cell did (in log). */
#define AW_CONTROL_SHIFT_MIN 0.03

/* A series of the control shifted only when its move exceeds this many times its own noise in
 * the baseline runs (the robust spread of its logs): on a shared host one reference kernel (the
 * memory chase) may swing by half between quiet runs, and a swing within that explains
 * nothing. */
#define AW_CONTROL_NOISE_K 3.0

/* Decides which would-be regressions of `v` (cells whose p50 or p99 regressed, is suspect or
 * is inconclusive, in the verdict of `commit` on `host` against o->baseline_ref, just judged)
 * are the host's, judged by the least shifted head run (re-measurements included): sets their
 * verdicts (cell and metrics) to AW_VERDICT_HOST_CHANGED, or to AW_VERDICT_SUSPECT (with a
 * note) for a moment that may still be re-measured, moves their counts, and sets
 * v->host_changed to what changed
 * ("kernel 6.1.0-57-amd64 -> 6.1.0-58-amd64", "the control moved +12.4% (the median of
 * its 5 series; the most, mulchain-v1 +12.9%)"). The control cell gets gate level off.
 * Returns 0 or a store errno with *err. */
int aw_control_check(struct store_conn *c, const struct aw_analysis_opts *o, const char *project,
                     const char *commit, const char *host, struct aw_host_verdict *v, char **err);

#endif
