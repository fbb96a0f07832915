/* Bisections and the hosts' own changes on the pages and charts (issue 33): the bisections a
 * commit page and the overview list, and the labelled marks of a host's trend charts (where
 * the host changed, where a bisection named the culprit). Strings are copied into the arena. */
#ifndef AW_COLLECTOR_BISECT_PAGES_H
#define AW_COLLECTOR_BISECT_PAGES_H

#include <stddef.h>

#include "aw/arena.h"
#include "aw/refblob.h"
#include "reports.h"
#include "store.h"

/* The bisections with `commit` as their good or bad end or their culprit, or (commit NULL) the
 * newest ones, newest first. Returns 0 or a store error. */
int aw_site_bisects(struct store_conn *c, struct aw_arena *a, const char *commit,
                    const struct aw_page_bisect **out, size_t *n);

/* The marks of a trend chart of `host` whose points are the runs run_ids[n_points] of the
 * commits commits[n_points] (oldest first; entries may be NULL): a "host: kernel ..." mark
 * where a run's host object differs from the previous point's in its platform or a changing
 * field (timer_hz left out), and a "culprit <sha> +x%" mark at each commit a finished
 * bisection of (project, host) named. Returns 0 or a store error. */
int aw_trend_marks(struct store_conn *c, struct aw_arena *a, const char *project, const char *host,
                   const char *const *run_ids, const char *const *commits, size_t n_points,
                   const struct aw_chart_mark **out, size_t *n_out);

/* The control chart's reference kernels: for each kernel some point's run carries, a series
 * of its median over the run's cells (ns per step), appended to *series (aw_arena_push()).
 * The bytes at refs + i * stride are point i's opened reference series (data NULL: none). Returns 0
 * or the arena's error. */
int aw_reference_series(struct aw_arena *a, const struct aw_refblob *refs, size_t stride, size_t n,
                        struct aw_chart_trend_series **series, size_t *n_series, size_t *cap);

#endif
