/* Subjects: how CI benchmarks a library at a commit. A subject named in the agent's own config
 * is built with its command (the commit, ref and project in the environment, output in the
 * spool's log directory), dlopened, checked against the ABI of runner/include/atomwatch/
 * subject.h, and each of its ops and readers measured through the runner as extra cells
 * ("subject=NAME op=OP cpu=N"). */
#ifndef AW_AGENT_SUBJECTS_H
#define AW_AGENT_SUBJECTS_H

#include "atomwatch/runner.h"
#include "atomwatch/subject.h"
#include "config.h"

/* Runs the subject's build command (sh -c) in its directory with ATOMWATCH_PROJECT,
 * ATOMWATCH_COMMIT, ATOMWATCH_REF, ATOMWATCH_LAYOUT, ATOMWATCH_LAYOUT_CFLAGS and the configured
 * env, its output going to `log_path`. `layout` >= 0: code layout k of an A/B side (docs/
 * detection.md "Code layouts"), ATOMWATCH_LAYOUT=k and ATOMWATCH_LAYOUT_CFLAGS the compiler flags
 * that start every function aw_subject_layout_shift(k) bytes past a 64-byte line; -1: a plain
 * build, both empty. Returns 0 (also when there is nothing to build), -EINTR when stopped, or a
 * negative errno with *err saying why, the log's last lines included when the build failed. */
int aw_subject_build(const struct aw_agent_subject *s, const char *project, const char *commit,
                     const char *ref, int layout, const char *log_path, volatile int *stop,
                     char **err);

/* The bytes code layout k's functions start past a 64-byte line: 40k mod 64 (0, 40, 16, 56,
 * 32, 8, 48, 24: eight layouts, eight different offsets, any first few spread over the line). */
unsigned aw_subject_layout_shift(unsigned k);

/* A loaded subject library whose description passed the ABI and name checks. */
struct aw_subject_lib {
	void *handle;
	const struct atomwatch_subject *d; /* borrowed from the library */
	size_t n_ops, n_readers;
};

/* dlopens `library` (RTLD_LOCAL: two builds of one subject each keep their own statics) and
 * checks that it exports the subject ABI with valid, unique names. Returns 0 with *lib (close
 * with aw_subject_close()), -ENOENT (cannot load, no symbol), -EPROTO (another ABI) or -EINVAL
 * (bad names), with *err naming the library. */
int aw_subject_open(const struct aw_agent_subject *s, const char *library,
                    struct aw_subject_lib *lib, char **err);
void aw_subject_close(struct aw_subject_lib *lib);

/* The CPUs to measure the subject on: `selection` (NULL: the subject's cpus, default
 * first-per-type). Returns how many (at most 4096) with *cpus (caller frees), or a negative
 * errno with *err. */
int aw_subject_cpus(struct aw_runner *r, const struct aw_agent_subject *s, const char *selection,
                    int **cpus, char **err);

/* Loads the subject's library and appends one measured cell per op (and reader) and CPU to
 * `res` (the subject's CPUs, default the first of each core type). `progress` (may be NULL)
 * gets the cells as they finish. Returns 0 (cells may be failed, with a reason), -EINTR when
 * stopped between cells, or a negative errno with *err (cannot load, wrong ABI, bad names). */
int aw_subject_measure(struct aw_runner *r, const struct aw_agent_subject *s, struct aw_result *res,
                       struct aw_progress *progress, volatile int *stop, char **err);

#endif
