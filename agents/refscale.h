/* In-kernel readers: the agent runs the kernel's refscale module for each configured
 * scale_type (modprobe refscale scale_type=T loops=L nruns=N), reads its results from the
 * kernel log (/dev/kmsg, old messages skipped) with the importer's refscale parser, unloads it
 * and adds one cell per type ("kernel=srcu-fast"); where it cannot (not root, no module,
 * modprobe failing) the cell is skipped with the reason. A kernel without refscale (Debian's)
 * gets it built out of tree from a kernel source tree (kernel.refscale.source). */
#ifndef AW_AGENT_REFSCALE_H
#define AW_AGENT_REFSCALE_H

#include "aw/result.h"
#include "config.h"
#include "import.h"

/* Appends one cell per cfg->refscale_types entry to `res`. Where the running kernel lacks
 * refscale and kernel.refscale.source (or .modules) is set, refscale and torture are built out
 * of tree (build log in `log_dir`) or taken prebuilt and loaded with finit_module(2). Returns 0
 * (cells may be skipped or failed, with their reason), -EINTR when *stop was raised, or a
 * negative errno with *err (-ENOMEM; the out-of-tree build or torture failing). */
int aw_refscale_run(const struct aw_agent_config *cfg, const char *log_dir, struct aw_result *res,
                    volatile int *stop, char **err);

/* Decodes one /dev/kmsg record ("PRI,SEQ,USEC,FLAGS[,...];text" with \xHH escapes; a line
 * without that prefix is taken as plain text) in place and feeds its lines to the parser.
 * Dictionary lines (starting with a blank) are ignored. Returns 0 or -ENOMEM. */
int aw_kmsg_feed(struct aw_refscale_parser *p, char *record);

#endif
