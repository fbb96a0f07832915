/* The running kernel's identity: the commit it was built from, for runs filed with
 * `--commit kernel` (project linux) and for the daemon's `schedule.commit: kernel`. */
#ifndef AW_AGENT_KERNEL_H
#define AW_AGENT_KERNEL_H

#include <stdbool.h>

#include "aw/util.h"

#define AW_KERNEL_COMMIT "kernel" /* the --commit value that asks for the kernel's own */

struct aw_kernel_id {
	char commit[AW_COMMIT_MAX + 1]; /* the hex digits after "-g" */
	bool dirty;                     /* the tree had local changes ("-dirty") */
	const char *from;               /* "uname -r" or "/proc/version" (static) */
};

/* Finds the commit in a kernel release string (`uname -r`, e.g.
 * "6.18.0-rc6-00012-g535fdfc5a228-dirty" from CONFIG_LOCALVERSION_AUTO), else in the text of
 * /proc/version (may be NULL). Returns 0 with *id, or -ENOENT with *err naming the release and
 * what to do when neither names one. */
int aw_kernel_commit_of(const char *release, const char *proc_version, struct aw_kernel_id *id,
                        char **err);

/* The same for the running kernel (uname(2) and /proc/version). */
int aw_kernel_commit(struct aw_kernel_id *id, char **err);

#endif
