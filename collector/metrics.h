/* Process-wide counters for GET /metrics in the Prometheus text format (version 0.0.4):
 * requests by route template, method and status; an ingest latency histogram; runs stored by
 * outcome; database errors; a few gauges. Counting is lock-free and safe from any thread. */
#ifndef AW_COLLECTOR_METRICS_H
#define AW_COLLECTOR_METRICS_H

#include <stdint.h>

#include "aw/buf.h"
#include "postingest.h"
#include "store.h"

/* Names the routes (label values, e.g. "/api/v1/runs/{id}"); call once before counting. At
 * most AW_METRICS_ROUTES_MAX; the array must outlive the process's use of metrics. */
#define AW_METRICS_ROUTES_MAX 32
void aw_metrics_init(const char *const *routes, unsigned n);

/* Counts one finished request. `route` indexes the names given to aw_metrics_init(). */
void aw_metrics_request(unsigned route, const char *method, unsigned status);

/* Records how long one POST /api/v1/results took, request start to reply. */
void aw_metrics_ingest_latency(uint64_t ns);

/* Counts one stored document by outcome. */
void aw_metrics_run(enum store_outcome outcome);

struct aw_metrics_gauges {
	uint64_t in_flight;                     /* requests being handled */
	uint64_t waiters;                       /* suspended long-polls */
	uint64_t queue_depth;                   /* documents waiting for a writer */
	struct aw_postingest_gauges postingest; /* the work after uploads, and its charts */
};

/* Appends the exposition text. Returns 0 or the aw_buf error. */
int aw_metrics_format(struct aw_buf *out, const struct aw_metrics_gauges *g);

#endif
