/* Subjects: how CI benchmarks a library at a commit. A subject named in the agent's own config
 * is built with its command (the commit, ref and project in the environment, output in the
 * spool's log directory), dlopened, checked against the ABI of runner/include/atomwatch/
 * subject.h, and each of its ops and readers measured through the runner as extra cells
 * ("subject=NAME op=OP cpu=N"). */
#ifndef AW_AGENT_SUBJECTS_H
#define AW_AGENT_SUBJECTS_H

#include "atomwatch/runner.h"
#include "config.h"

/* Runs the subject's build command (sh -c) in its directory with ATOMWATCH_PROJECT,
 * ATOMWATCH_COMMIT, ATOMWATCH_REF and the configured env, its output going to `log_path`.
 * Returns 0 (also when there is nothing to build), -EINTR when stopped, or a negative errno with
 * *err saying why, the log's last lines included when the build failed. */
int aw_subject_build(const struct aw_agent_subject *s, const char *project, const char *commit,
                     const char *ref, const char *log_path, volatile int *stop, char **err);

/* Loads the subject's library and appends one measured cell per op (and reader) and CPU to
 * `res` (the subject's CPUs, default the first of each core type). `progress` (may be NULL)
 * gets the cells as they finish. Returns 0 (cells may be failed, with a reason), -EINTR when
 * stopped between cells, or a negative errno with *err (cannot load, wrong ABI, bad names). */
int aw_subject_measure(struct aw_runner *r, const struct aw_agent_subject *s, struct aw_result *res,
                       struct aw_progress *progress, volatile int *stop, char **err);

#endif
