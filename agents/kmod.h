/* The kernel modules the agent builds and loads itself: the atomwatch module (runner/kmod/,
 * the kernel's own per-CPU ops, atomics and SRCU readers measured in kernel context, one cell
 * "kernel=<primitive> cpu=N" each) and, where the running kernel lacks them, refscale and
 * torture built out of tree from a kernel source tree. Modules are loaded and unloaded with
 * finit_module(2) and delete_module(2) directly (no kmod tools needed on the host). */
#ifndef AW_AGENT_KMOD_H
#define AW_AGENT_KMOD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "atomwatch/runner.h"
#include "aw/result.h"
#include "config.h"

#define AW_KMOD_NAME   "atomwatch"
#define AW_KMOD_FORMAT 1 /* the results format this agent reads (runner/kmod/README.md) */

/* The primitives the module measures, in its order (cells of a run that could not load it are
 * skipped under these names). */
extern const char *const aw_kmod_prims[];
extern const size_t aw_kmod_n_prims;

/* The build tree of the running kernel's modules: cfg->kmod_tree, or
 * /lib/modules/$(uname -r)/build. Returns a new string or NULL (out of memory). */
char *aw_kmod_tree(const struct aw_agent_config *cfg);

/* Builds atomwatch.ko from cfg->kmod_source (default: the installed runner/kmod sources)
 * against `tree` in `out_dir` (created; the sources are copied there), with cfg->kmod_make and
 * cfg->kmod_make_vars, the output going to `log_path`. Returns 0 (out_dir/atomwatch.ko exists),
 * -EINTR when stopped, or a negative errno with *err: no build tree at `tree` (-ENOENT, naming
 * the headers package to install), missing sources, or the build failing (-EIO, with the
 * last lines of the log). */
int aw_kmod_build(const struct aw_agent_config *cfg, const char *tree, const char *out_dir,
                  const char *log_path, volatile int *stop, char **err);

/* The same for torture.ko and refscale.ko from the kernel source tree `source`
 * (kernel/torture.c, kernel/rcu/refscale.c and kernel/rcu/rcu.h). */
int aw_refscale_build(const struct aw_agent_config *cfg, const char *source, const char *tree,
                      const char *out_dir, const char *log_path, volatile int *stop, char **err);

/* Loads the module file `path` with `params` ("key=value ..."), waiting for its init to end
 * (atomwatch measures in its init) at most timeout_ms (0: no limit) or until *stop: then the
 * loading is killed, which ends the module's init. Returns 0, -ETIMEDOUT, -EINTR, or a negative
 * errno with *err saying why the kernel refused it, with what it logged about the module
 * (read from `kmsg_path`, may be NULL). */
int aw_kmod_load(const char *path, const char *name, const char *params, uint64_t timeout_ms,
                 volatile int *stop, const char *kmsg_path, char **err);

/* Unloads module `name`. Returns 0, or a negative errno with *err. */
int aw_kmod_unload(const char *name, char **err);

/* Turns the module's debugfs files (results and samples, format AW_KMOD_FORMAT) into cells
 * appended to `res` (op "kmod", kernel "<primitive>", cpu N; statistics computed from the
 * samples as the runner does) and sets what the module reported about the kernel in `info`
 * (release, version, machine, lse, percpu_ops, insn{primitive: instructions}, ...). Returns 0,
 * -ENOMEM, or -EPROTO with *err naming the line that is not in the format. */
int aw_kmod_parse(const char *results, size_t results_len, const char *samples, size_t samples_len,
                  struct aw_result *res, json_t *info, char **err);

/* The module's cells of one run: builds the module (unless cfg->kmod_file names a prebuilt
 * one) with its log in `log_dir`, makes sure debugfs is mounted, loads it, reads and keeps its
 * results (log_dir/kmod-<time>.results), unloads it. Not root, or the module already loaded:
 * every cell is skipped with the reason. Fills `info` (see aw_kmod_parse()). Returns 0, -EINTR
 * when stopped, or a negative errno with *err when it could not be built, loaded or read: the
 * run must then fail, as nothing of it is whole. `runner` gives the CPUs of skipped cells. */
int aw_kmod_run(const struct aw_agent_config *cfg, struct aw_runner *runner, const char *log_dir,
                struct aw_result *res, json_t *info, volatile int *stop, char **err);

/* `atomwatch-agent kernel-build`: builds atomwatch.ko (and torture.ko and refscale.ko when
 * kernel.refscale.source is set) into `out_dir` against cfg's build tree, for hosts that load
 * prebuilt modules (kernel.module_file, kernel.refscale.modules). Returns 0 or a negative errno
 * with *err. */
int aw_kmod_build_all(const struct aw_agent_config *cfg, const char *out_dir, volatile int *stop,
                      char **err);

#endif
