/* The control: code that never changes, measured in every run of the agent beside the cells
 * (docs/detection.md "The host's own changes"). A fixed chain of dependent multiplies built into
 * the agent, timed through a call as subject ops are, on the run's first CPU: its cell
 * `subject=atomwatch-control op=chain cpu=N` moves only when the host does (a kernel, microcode,
 * firmware, governor or a noisy neighbour), never with a commit. With the reference kernels
 * measured beside every cell it is the host's control series. */
#ifndef AW_AGENT_CONTROL_H
#define AW_AGENT_CONTROL_H

#include <stdint.h>

#include "atomwatch/runner.h"
#include "aw/result.h"
#include "config.h" /* AW_RESERVED_SUBJECT_PREFIX */

#define AW_CONTROL_SUBJECT "atomwatch-control" /* the reserved subject name of its cell */
#define AW_CONTROL_OP      "chain"

/* The control op: eight dependent multiplies and an add on a carried value, then the counter
 * incremented by one. Built without sanitizers, at the agent's optimisation level. */
void aw_control_chain(uint64_t *counter);

/* Appends the control cell, measured on the runner's first CPU, to `res` (nothing when the
 * runner's selection leaves it out: a confirmation run). Returns 0 (the cell may be failed,
 * with a reason) or a negative errno with *err. */
int aw_control_measure(struct aw_runner *r, struct aw_result *res, char **err);

/* The key of the control cell on `cpu` into out[size]. Returns 0 or -ENAMETOOLONG. */
int aw_control_key(int cpu, char *out, size_t size);

#endif
