/* Prometheus counters and their text exposition; see metrics.h. Fixed-size tables of atomics:
 * no allocation and no lock on the request path (GET /metrics itself reads the malloc
 * heap's figures, which locks each arena in turn). */
#include "metrics.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static const unsigned statuses[] = {200, 201, 204, 400, 401, 403, 404,
                                    405, 409, 413, 414, 500, 503, 0 /* other */};
#define N_STATUS (sizeof(statuses) / sizeof(statuses[0]))

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static const char *const methods[] = {"GET", "POST", "HEAD", "other"};
#define N_METHOD (sizeof(methods) / sizeof(methods[0]))

/* Upper bounds in seconds of the latency buckets (+Inf implied). */
static const double buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                 0.25,  0.5,    1,     2.5,  5,     10};
#define N_BUCKET (sizeof(buckets) / sizeof(buckets[0]))

static const char *const *route_names;
static unsigned n_routes;
static atomic_uint_fast64_t requests[AW_METRICS_ROUTES_MAX][N_METHOD][N_STATUS];
static atomic_uint_fast64_t latency[N_BUCKET + 1];
static atomic_uint_fast64_t latency_sum_ns, latency_count;
static atomic_uint_fast64_t runs[3];

void aw_metrics_init(const char *const *routes, unsigned n)
{
	route_names = routes;
	n_routes = n < AW_METRICS_ROUTES_MAX ? n : AW_METRICS_ROUTES_MAX;
}

static unsigned status_index(unsigned status)
{
	for (unsigned i = 0; i < N_STATUS - 1; i++)
		if (statuses[i] == status)
			return i;
	return N_STATUS - 1;
}

static unsigned method_index(const char *method)
{
	for (unsigned i = 0; i < N_METHOD - 1; i++)
		if (!strcmp(method, methods[i]))
			return i;
	return N_METHOD - 1;
}

void aw_metrics_request(unsigned route, const char *method, unsigned status)
{
	if (route >= n_routes)
		return;
	atomic_fetch_add_explicit(&requests[route][method_index(method)][status_index(status)], 1,
	                          memory_order_relaxed);
}

void aw_metrics_ingest_latency(uint64_t ns)
{
	unsigned i = 0;

	while (i < N_BUCKET && (double)ns / 1e9 > buckets[i])
		i++;
	atomic_fetch_add_explicit(&latency[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&latency_sum_ns, ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&latency_count, 1, memory_order_relaxed);
}

void aw_metrics_run(enum store_outcome outcome)
{
	if ((unsigned)outcome < 3)
		atomic_fetch_add_explicit(&runs[outcome], 1, memory_order_relaxed);
}

static uint64_t load(atomic_uint_fast64_t *a)
{
	return atomic_load_explicit(a, memory_order_relaxed);
}

int aw_metrics_format(struct aw_buf *out, const struct aw_metrics_gauges *g)
{
	static const char *const outcomes[] = {"created", "duplicate", "conflict"};
	uint64_t cumulative = 0;
	int rc;

	rc = aw_buf_puts(out, "# HELP atomwatch_http_requests_total HTTP requests by route "
	                      "template, method and status.\n"
	                      "# TYPE atomwatch_http_requests_total counter\n");
	for (unsigned r = 0; !rc && r < n_routes; r++) {
		for (unsigned m = 0; !rc && m < N_METHOD; m++) {
			for (unsigned s = 0; !rc && s < N_STATUS; s++) {
				uint64_t v = load(&requests[r][m][s]);
				char code[16] = "other";

				if (!v)
					continue;
				if (statuses[s])
					snprintf(code, sizeof(code), "%u", statuses[s]);
				rc = aw_buf_printf(out,
				                   "atomwatch_http_requests_total{route=\"%s\","
				                   "method=\"%s\",status=\"%s\"} %llu\n",
				                   route_names[r], methods[m], code,
				                   (unsigned long long)v);
			}
		}
	}
	if (!rc)
		rc =
		    aw_buf_puts(out, "# HELP atomwatch_ingest_duration_seconds Time from the start "
		                     "of an upload to its reply (after the commit).\n"
		                     "# TYPE atomwatch_ingest_duration_seconds histogram\n");
	for (unsigned i = 0; !rc && i <= N_BUCKET; i++) {
		cumulative += load(&latency[i]);
		if (i < N_BUCKET)
			rc = aw_buf_printf(out,
			                   "atomwatch_ingest_duration_seconds_bucket{le=\"%g\"} "
			                   "%llu\n",
			                   buckets[i], (unsigned long long)cumulative);
		else
			rc = aw_buf_printf(out,
			                   "atomwatch_ingest_duration_seconds_bucket{le=\"+Inf\"} "
			                   "%llu\n",
			                   (unsigned long long)cumulative);
	}
	if (!rc)
		rc = aw_buf_printf(out,
		                   "atomwatch_ingest_duration_seconds_sum %.6f\n"
		                   "atomwatch_ingest_duration_seconds_count %llu\n",
		                   (double)load(&latency_sum_ns) / 1e9,
		                   (unsigned long long)load(&latency_count));
	if (!rc)
		rc = aw_buf_puts(out, "# HELP atomwatch_runs_stored_total Uploaded documents by "
		                      "outcome (created: a new run was committed).\n"
		                      "# TYPE atomwatch_runs_stored_total counter\n");
	for (unsigned i = 0; !rc && i < 3; i++)
		rc = aw_buf_printf(out, "atomwatch_runs_stored_total{outcome=\"%s\"} %llu\n",
		                   outcomes[i], (unsigned long long)load(&runs[i]));
	if (!rc)
		rc = aw_buf_printf(
		    out,
		    "# HELP atomwatch_db_errors_total Database errors seen by this process.\n"
		    "# TYPE atomwatch_db_errors_total counter\n"
		    "atomwatch_db_errors_total %llu\n"
		    "# HELP atomwatch_db_disk_full_total Database statements that failed because "
		    "its disk was full.\n"
		    "# TYPE atomwatch_db_disk_full_total counter\n"
		    "atomwatch_db_disk_full_total %llu\n"
		    "# HELP atomwatch_http_requests_in_flight Requests being handled.\n"
		    "# TYPE atomwatch_http_requests_in_flight gauge\n"
		    "atomwatch_http_requests_in_flight %llu\n"
		    "# HELP atomwatch_jobs_waiting Agents long-polling for a job.\n"
		    "# TYPE atomwatch_jobs_waiting gauge\n"
		    "atomwatch_jobs_waiting %llu\n"
		    "# HELP atomwatch_ingest_queue_depth Documents waiting for a database writer.\n"
		    "# TYPE atomwatch_ingest_queue_depth gauge\n"
		    "atomwatch_ingest_queue_depth %llu\n"
		    "# HELP atomwatch_postingest_tasks Post-ingest tasks (verdicts, change points and "
		    "charts after an upload) waiting or running, of every collector on the "
		    "database, and charts asked of this collector not drawn yet.\n"
		    "# TYPE atomwatch_postingest_tasks gauge\n"
		    "atomwatch_postingest_tasks %llu\n"
		    "# HELP atomwatch_render_tasks Deprecated name of atomwatch_postingest_tasks.\n"
		    "# TYPE atomwatch_render_tasks gauge\n"
		    "atomwatch_render_tasks %llu\n"
		    "# HELP atomwatch_postingest_tasks_running Post-ingest tasks this collector's "
		    "workers are running.\n"
		    "# TYPE atomwatch_postingest_tasks_running gauge\n"
		    "atomwatch_postingest_tasks_running %llu\n"
		    "# HELP atomwatch_postingest_charts_asked Charts asked of this collector by "
		    "pages, waiting or being drawn (counted in atomwatch_postingest_tasks too).\n"
		    "# TYPE atomwatch_postingest_charts_asked gauge\n"
		    "atomwatch_postingest_charts_asked %llu\n"
		    "# HELP atomwatch_postingest_tasks_dead Post-ingest tasks given up after their "
		    "last attempt failed.\n"
		    "# TYPE atomwatch_postingest_tasks_dead gauge\n"
		    "atomwatch_postingest_tasks_dead %llu\n"
		    "# HELP atomwatch_postingest_tasks_total Post-ingest tasks run by this process, "
		    "by outcome (failed: tried again later).\n"
		    "# TYPE atomwatch_postingest_tasks_total counter\n"
		    "atomwatch_postingest_tasks_total{outcome=\"done\"} %llu\n"
		    "atomwatch_postingest_tasks_total{outcome=\"failed\"} %llu\n"
		    "# HELP atomwatch_chart_cache_bytes Bytes of chart files in this collector's "
		    "cache.\n"
		    "# TYPE atomwatch_chart_cache_bytes gauge\n"
		    "atomwatch_chart_cache_bytes %llu\n"
		    "# HELP atomwatch_chart_cache_files Chart files in this collector's cache.\n"
		    "# TYPE atomwatch_chart_cache_files gauge\n"
		    "atomwatch_chart_cache_files %llu\n",
		    (unsigned long long)store_errors_total(),
		    (unsigned long long)store_disk_full_total(), (unsigned long long)g->in_flight,
		    (unsigned long long)g->waiters, (unsigned long long)g->queue_depth,
		    (unsigned long long)g->postingest.tasks,
		    (unsigned long long)g->postingest.tasks,
		    (unsigned long long)g->postingest.running,
		    (unsigned long long)g->postingest.charts,
		    (unsigned long long)g->postingest.dead, (unsigned long long)g->postingest.done,
		    (unsigned long long)g->postingest.failed,
		    (unsigned long long)g->postingest.chart_cache_bytes,
		    (unsigned long long)g->postingest.chart_cache_files);
	if (!rc && !SANITIZED) { /* a sanitizer's allocator replaces glibc's: nothing to say */
		struct mallinfo2 heap = mallinfo2(); /* (takes each arena's lock in turn) */

		rc = aw_buf_printf(
		    out,
		    "# HELP atomwatch_heap_bytes The collector's malloc heap: bytes in use, and bytes "
		    "free in its arenas (their whole pages handed back to the kernel every 30 s).\n"
		    "# TYPE atomwatch_heap_bytes gauge\n"
		    "atomwatch_heap_bytes{state=\"in_use\"} %llu\n"
		    "atomwatch_heap_bytes{state=\"free\"} %llu\n",
		    (unsigned long long)(heap.uordblks + heap.hblkhd),
		    (unsigned long long)heap.fordblks);
	}
	return rc;
}
