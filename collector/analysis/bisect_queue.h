/* Bisections the collector starts (issue 33, docs/api.md "Bisections"): after the post-ingest
 * verdict of a commit of the baseline ref on a host, each finding that spans two measured
 * commits (a confirmed regression of the verdict, or a recent change point of the host's
 * series) is queued as a bisection of one subject, once per finding, for that host or another
 * daemon host of the same platform that reported the subject when it polled. A finding the
 * host's own change explains (`host changed`) starts none, nor do a bisection's own runs. */
#ifndef AW_COLLECTOR_BISECT_QUEUE_H
#define AW_COLLECTOR_BISECT_QUEUE_H

#include "analysis.h"
#include "store.h"

/* Queues the bisections of the findings of (project, commit) on `host` on `ref`, whose cached
 * verdict is `v`. Returns 0 or a store error (the caller logs it). */
int aw_bisect_queue(struct store_conn *c, const struct aw_analysis_opts *o, const char *project,
                    const char *commit, const char *host, const char *ref,
                    const struct aw_host_verdict *v);

#endif
