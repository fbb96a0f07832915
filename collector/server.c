/* The service: the route table with each route's access rule, token checks, JSON replies,
 * per-request metrics, and the life cycle (migrate, start, wait for SIGTERM/SIGINT, stop
 * accepting, drain, close the database). */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/log.h"
#include "aw/util.h"
#include "internal.h"
#include "metrics.h"
#include "chart_cache.h"
#include "postingest.h"
#include "writer.h"

enum access {
	ACCESS_OPEN,  /* no token needed, none checked (health checks) */
	ACCESS_READ,  /* open unless auth.read_requires_token; a token given must be valid */
	ACCESS_AGENT, /* agent (its own host) or admin */
	ACCESS_CI,    /* ci or admin */
	ACCESS_ANY,   /* any valid token: agent (the handler checks its host), ci or admin */
};

struct route {
	const char *method;
	const char *path; /* "{...}": one non-empty segment; a final "*": the non-empty rest */
	void (*fn)(struct aw_ctx *x);
	enum access access;
};

/* First match wins: /api/v1/jobs/next comes before /api/v1/jobs/{id}. An upload is a run
 * created: POST /api/v1/runs, and /api/v1/results where agents have always sent it. */
static const struct route routes[] = {
    {"POST", "/api/v1/results", aw_ingest_post, ACCESS_AGENT},
    {"GET", "/api/v1/hosts", aw_api_hosts, ACCESS_READ},
    {"GET", "/api/v1/hosts/{name}", aw_api_host, ACCESS_READ},
    {"GET", "/api/v1/runs", aw_api_runs, ACCESS_READ},
    {"POST", "/api/v1/runs", aw_ingest_post, ACCESS_AGENT},
    {"GET", "/api/v1/runs/{id}/suspects", aw_api_run_suspects, ACCESS_ANY},
    {"GET", "/api/v1/runs/{id}", aw_api_run, ACCESS_READ},
    {"GET", "/api/v1/series", aw_api_series, ACCESS_READ},
    {"POST", "/api/v1/jobs", aw_jobs_post, ACCESS_CI},
    {"GET", "/api/v1/jobs", aw_jobs_list, ACCESS_READ},
    {"GET", "/api/v1/jobs/next", aw_jobs_next, ACCESS_AGENT},
    {"GET", "/api/v1/jobs/{id}", aw_jobs_get, ACCESS_READ},
    {"POST", "/api/v1/jobs/{id}/status", aw_jobs_status, ACCESS_AGENT},
    {"GET", "/healthz", aw_api_healthz, ACCESS_OPEN},
    {"GET", "/metrics", aw_api_metrics, ACCESS_READ},
    {"GET", "/api/v1/gate", aw_api_gate, ACCESS_READ},
    {"GET", "/api/v1/compare", aw_api_compare, ACCESS_READ},
    {"GET", "/api/v1/changepoints", aw_api_changepoints, ACCESS_READ},
    {"GET", "/api/v1/ab", aw_api_ab_list, ACCESS_READ},
    {"GET", "/api/v1/ab/{id}", aw_api_ab, ACCESS_READ},
    {"GET", "/api/v1/bisects", aw_api_bisects, ACCESS_READ},
    {"GET", "/api/v1/bisects/{id}", aw_api_bisect, ACCESS_READ},
    {"POST", "/api/v1/bisects/{id}/progress", aw_api_bisect_progress, ACCESS_AGENT},
    {"POST", "/api/v1/bisects/{id}/cancel", aw_api_bisect_cancel, ACCESS_CI},
    {"GET", "/", aw_web_overview, ACCESS_READ},
    {"GET", "/hosts/{name}", aw_web_host, ACCESS_READ},
    {"GET", "/commits/{sha}", aw_web_commit, ACCESS_READ},
    {"GET", "/compare", aw_web_compare, ACCESS_READ},
    {"GET", "/ab/{id}", aw_web_ab, ACCESS_READ},
    {"GET", "/charts/*", aw_web_chart, ACCESS_READ},
    {"GET", "/favicon.svg", aw_web_favicon, ACCESS_READ},
};
#define N_ROUTES    (sizeof(routes) / sizeof(routes[0]))
#define ROUTE_OTHER N_ROUTES /* metrics label of unmatched requests */

static const char *route_names[N_ROUTES + 1];

#define TRIM_EVERY_S 30 /* seconds between two malloc_trim() calls */

_Static_assert(AW_RETENTION_KEEP_MIN == AW_TREND_POINTS,
               "retention keeps the trend charts' window by default");

/* Hands the free pages of every malloc arena back to the kernel (they stay mapped, and are
 * faulted in again when used). */
static void trim_heap(void)
{
	uint64_t t0 = aw_monotonic_ns();
	int released = malloc_trim(0);

	aw_debug("heap: trimmed in %.1f ms%s", (double)(aw_monotonic_ns() - t0) / 1e6,
	         released ? ", free pages released" : "");
}

/* Queues a pass of retention when one is due: at the start, then every retention.interval.
 * Any collector's workers run it; the tasks of several collectors merge into one. */
static void queue_retention(struct aw_collector *col, uint64_t *due_ns)
{
	uint64_t now = aw_monotonic_ns();
	struct store_conn *c = NULL;
	int rc;

	if (!col->retention.raw_days || now < *due_ns)
		return;
	*due_ns = now + col->cfg->retention_interval_ms * 1000000;
	rc = store_acquire(col->store, &c);
	if (!rc)
		rc = store_task_enqueue(c, AW_TASK_RETENTION, "", NULL, "", "");
	store_release(col->store, &c);
	if (rc)
		aw_warn("retention: cannot queue its pass: %s", strerror(-rc));
	else if (col->postingest)
		aw_postingest_kick(col->postingest);
}

/* Set once the service has drained: late requests on kept-alive connections get 503 at once,
 * never a suspension that would outlive the HTTP server. */
static atomic_bool refusing;

/* ---- routing ---- */

/* Whether `path` fits `pattern`; *param receives the wildcard segment (into buf). */
static bool path_matches(const char *pattern, const char *path, char *buf, size_t len,
                         const char **param)
{
	while (*pattern && *path) {
		if (*pattern == '*' && !pattern[1]) {
			size_t n = strlen(path);

			if (n >= len)
				return false;
			memcpy(buf, path, n + 1);
			*param = buf;
			return true;
		}
		if (*pattern == '{') {
			size_t n = strcspn(path, "/");

			if (!n || n >= len)
				return false;
			memcpy(buf, path, n);
			buf[n] = '\0';
			*param = buf;
			path += n;
			pattern = strchr(pattern, '}');
			if (!pattern)
				return false;
			pattern++;
			continue;
		}
		if (*pattern++ != *path++)
			return false;
	}
	return !*pattern && !*path;
}

/* The route of a request: its index, or ROUTE_OTHER with *path_known telling a wrong method
 * (405) from an unknown path (404). */
static unsigned find_route(const char *method, const char *path, char *buf, size_t len,
                           const char **param, bool *path_known)
{
	bool head = !strcmp(method, "HEAD");

	*path_known = false;
	for (unsigned i = 0; i < N_ROUTES; i++) {
		if (!path_matches(routes[i].path, path, buf, len, param))
			continue;
		*path_known = true;
		if (!strcmp(method, routes[i].method) || (head && !strcmp(routes[i].method, "GET")))
			return i;
	}
	return ROUTE_OTHER;
}

const char *aw_collector_route(const char *method, const char *path, char *buf, size_t len,
                               const char **param, bool *path_known)
{
	unsigned route = find_route(method, path, buf, len, param, path_known);

	return route < N_ROUTES ? routes[route].path : NULL;
}

static void method_not_allowed(struct aw_httpd_req *req, const char *path)
{
	char allow[64] = "", buf[256];
	const char *param;

	for (unsigned i = 0; i < N_ROUTES; i++) {
		if (path_matches(routes[i].path, path, buf, sizeof(buf), &param) &&
		    !strstr(allow, routes[i].method))
			snprintf(allow + strlen(allow), sizeof(allow) - strlen(allow), "%s%s",
			         *allow ? ", " : "", routes[i].method);
	}
	aw_httpd_add_header(req, "Allow", allow);
	aw_reply_error(req, 405, "method_not_allowed", "", "use %s on '%s'", allow, path);
}

/* Applies the route's access rule. Returns 0 to go on, or non-zero once it has replied. */
static int check_access(struct aw_ctx *x, enum access access)
{
	const char *header = aw_httpd_header(x->req, "Authorization");
	struct store_conn *c;
	const char *token;
	int rc;

	if (access == ACCESS_OPEN)
		return 0;
	if (header) {
		token = aw_bearer_token(header);
		if (!token) {
			aw_reply_error(x->req, 401, "unauthorized", "",
			               "the Authorization header must be 'Bearer <token>'");
			return -EACCES;
		}
		rc = aw_ctx_conn(x, &c);
		if (!rc)
			rc = aw_auth_check(x->col->auth, c, token, &x->who);
		if (rc == -EACCES) {
			aw_reply_error(x->req, 401, "unauthorized", "",
			               "the token is unknown or revoked");
			return rc;
		}
		if (rc) {
			aw_reply_store_error(x->req, rc);
			return rc;
		}
		x->authenticated = true;
	}
	if (access == ACCESS_READ) {
		if (!x->authenticated && x->col->cfg->read_requires_token) {
			aw_reply_error(x->req, 401, "unauthorized", "",
			               "this collector needs a token");
			return -EACCES;
		}
		return 0;
	}
	if (!x->authenticated) {
		aw_reply_error(x->req, 401, "unauthorized", "", "a token is required");
		return -EACCES;
	}
	if (x->who.role == STORE_ROLE_ADMIN || access == ACCESS_ANY ||
	    (access == ACCESS_AGENT && x->who.role == STORE_ROLE_AGENT) ||
	    (access == ACCESS_CI && x->who.role == STORE_ROLE_CI))
		return 0;
	aw_reply_error(x->req, 403, "forbidden", "", "a %s token cannot do this",
	               store_role_name(x->who.role));
	return -EPERM;
}

static void handle(struct aw_httpd_req *req, void *cls)
{
	struct aw_collector *col = cls;
	struct aw_ctx x = {.col = col, .req = req};
	const char *path = aw_httpd_path(req);
	char param[1024]; /* httpd.c refuses longer paths */
	bool path_known;
	unsigned route;

	route = find_route(aw_httpd_method(req), path, param, sizeof(param), &x.param, &path_known);
	aw_httpd_set_tag(req, (int)route);
	if (atomic_load(&refusing)) {
		aw_reply_error(req, 503, "shutting_down", "", "the collector is shutting down");
		return;
	}
	if (route == ROUTE_OTHER) {
		if (path_known)
			method_not_allowed(req, path);
		else
			aw_reply_error(req, 404, "not_found", "", "no such endpoint");
		return;
	}
	if (!check_access(&x, routes[route].access))
		routes[route].fn(&x);
	store_release(col->store, &x.conn);
}

static void request_done(struct aw_httpd_req *req, bool sent, void *cls)
{
	int tag = aw_httpd_tag(req);
	unsigned route = tag < 0 ? ROUTE_OTHER : (unsigned)tag;

	(void)cls;
	if (tag < 0) {
		/* Refused before routing (body too large): still count it by route. */
		char buf[256];
		const char *param;
		bool known;

		route = find_route(aw_httpd_method(req), aw_httpd_path(req), buf, sizeof(buf),
		                   &param, &known);
	}
	aw_metrics_request(route, aw_httpd_method(req), aw_httpd_status(req));
	aw_debug("%s %s %u %.1f ms%s", aw_httpd_method(req), aw_httpd_path(req),
	         aw_httpd_status(req), (double)(aw_monotonic_ns() - aw_httpd_started_ns(req)) / 1e6,
	         sent ? "" : " (not delivered)");
	if (route < N_ROUTES && routes[route].fn == aw_ingest_post)
		aw_metrics_ingest_latency(aw_monotonic_ns() - aw_httpd_started_ns(req));
	if (route < N_ROUTES && routes[route].fn == aw_jobs_next)
		aw_jobs_request_done(req, sent);
}

/* ---- life cycle ---- */

static int migrate(struct store *store, char **err)
{
	struct store_conn *c = NULL;
	int from = 0, to = 0, rc;

	rc = store_connect(store, &c, err);
	if (rc)
		return rc;
	rc = store_migrate(c, &from, &to, err);
	if (!rc && from != to)
		aw_info("database schema migrated from version %d to %d", from, to);
	store_disconnect(&c);
	return rc;
}

int aw_collector_serve(const struct aw_collector_config *cfg)
{
	struct aw_collector col = {
	    .cfg = cfg,
	    .limits = AW_RESULT_LIMITS_DEFAULT,
	    .retention = {cfg->retention_raw_days, cfg->retention_keep_runs}};
	struct store_options sopt = STORE_OPTIONS_DEFAULT;
	uint64_t retention_due = 0;
	struct aw_httpd_options hopt = {0};
	char host[256], *err = NULL;
	sigset_t signals;
	int sig = 0, rc, status = 1;
	unsigned port;

	/* Upload bodies and their parsed trees are a few hundred KiB each: above glibc's default
	 * mmap threshold, every upload would map and unmap fresh pages (page faults, zeroing).
	 * Keep such blocks in the heap for reuse, and bound the number of arenas so that idle
	 * memory is not spread over one arena per thread. A verdict of 300 cells frees a few MiB
	 * at once: at the default trim threshold (128 KiB) free() handed them back to the kernel
	 * after every verdict and the next one faulted them in again (a tenth of an uncached
	 * gate's CPU); trim_heap() still gives free pages back every TRIM_EVERY_S. */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 8 << 20);
	mallopt(M_ARENA_MAX, 4);

	for (unsigned i = 0; i < N_ROUTES; i++)
		route_names[i] = routes[i].path;
	route_names[ROUTE_OTHER] = "other";
	aw_metrics_init(route_names, N_ROUTES + 1);
	col.limits.max_cells = cfg->max_cells;

	/* Block the stop signals in every thread; this one waits for them with sigwait(). */
	sigemptyset(&signals);
	sigaddset(&signals, SIGTERM);
	sigaddset(&signals, SIGINT);
	pthread_sigmask(SIG_BLOCK, &signals, NULL);
	signal(SIGPIPE, SIG_IGN);

	rc = aw_parse_listen(cfg->listen, host, sizeof(host), &port, &err);
	if (rc)
		goto out;
	rc = aw_make_dirs(cfg->data_dir, 0750);
	if (rc) {
		aw_errorf(&err, rc, "cannot create data directory '%s': %s", cfg->data_dir,
		          strerror(-rc));
		goto out;
	}
	sopt.pool_size = cfg->pool_size;
	sopt.sqlite_sync_full = cfg->sqlite_sync_full;
	sopt.busy_timeout_ms = (unsigned)cfg->busy_timeout_ms;
	sopt.sqlite_cache = cfg->sqlite_cache;
	rc = store_open(cfg->db, &sopt, &col.store, &err);
	if (!rc)
		rc = migrate(col.store, &err);
	if (!rc)
		rc = aw_writer_start(col.store,
		                     store_kind(col.store) == STORE_SQLITE ? 1 : cfg->writers,
		                     cfg->batch_max, cfg->queue_max_cells, &col.writer, &err);
	if (!rc) {
		col.auth = aw_auth_new();
		rc = col.auth ? 0 : aw_errorf(&err, -ENOMEM, "out of memory");
	}
	if (!rc)
		rc = aw_jobs_start(&col, &col.jobs, &err);
	if (!rc)
		rc = aw_collector_analysis_setup(&col, &err);
	if (!rc)
		rc = aw_chart_cache_new(cfg->data_dir, cfg->chart_cache_bytes, true, &col.charts,
		                        &err);
	if (!rc && cfg->postingest_workers) {
		const struct aw_postingest_opts popt = {
		    .data_dir = cfg->data_dir,
		    .gnuplot = cfg->gnuplot,
		    .timeout_ms = (unsigned)cfg->chart_timeout_ms,
		    .workers = cfg->postingest_workers,
		    .charts = cfg->charts,
		    .queue_max = cfg->chart_queue_max,
		    .lease_ms = cfg->task_lease_ms,
		    .poll_ms = cfg->task_poll_ms,
		    .attempts = cfg->task_attempts,
		    .trends_rest_ms = cfg->trends_interval_ms,
		    .analysis = &col.analysis,
		    .retention = col.retention.raw_days ? &col.retention : NULL,
		    .cache = col.charts};

		rc = aw_postingest_start(col.store, &popt, &col.postingest, &err);
	}
	if (rc)
		goto out;
	hopt.host = host;
	hopt.port = port;
	hopt.threads = cfg->http_threads;
	hopt.max_body = cfg->max_body;
	hopt.max_buffered = cfg->max_buffered;
	hopt.max_connections = cfg->max_connections;
	hopt.max_per_client = cfg->max_per_client;
	hopt.timeout_s = cfg->http_timeout_s;
	hopt.request_timeout_ms = cfg->request_timeout_ms;
	hopt.handle = handle;
	hopt.done = request_done;
	hopt.cls = &col;
	rc = aw_httpd_start(&hopt, &col.http, &err);
	if (rc == -EADDRINUSE)
		status = AW_EXIT_ADDR_IN_USE;
	if (rc)
		goto out;
	aw_info(
	    "listening on http://%s%s%s:%u (database %s, schema %d)", strchr(host, ':') ? "[" : "",
	    *host ? host : "0.0.0.0", strchr(host, ':') ? "]" : "", aw_httpd_port(col.http),
	    store_kind(col.store) == STORE_SQLITE ? "sqlite" : "postgres", store_schema_version());

	/* Between the signals, idle heap pages go back to the kernel twice a minute: the charts'
	 * cache index and the store's caches are long-lived blocks spread among the requests'
	 * short-lived ones, and the pages freed around them would otherwise stay resident
	 * (docs/benchmarks.md, "Soak"). Retention's pass is queued at the start and when due. */
	queue_retention(&col, &retention_due);
	for (;;) {
		struct timespec tick = {TRIM_EVERY_S, 0};

		sig = sigtimedwait(&signals, NULL, &tick);
		if (sig == SIGTERM || sig == SIGINT)
			break;
		if (sig < 0 && errno == EAGAIN) {
			trim_heap();
			queue_retention(&col, &retention_due);
		}
	}
	aw_info("%s: no new connections; finishing %llu request(s) in flight",
	        sig == SIGTERM ? "SIGTERM" : "SIGINT",
	        (unsigned long long)aw_httpd_in_flight(col.http));
	aw_httpd_quiesce(col.http);
	aw_jobs_close(col.jobs);
	if (aw_httpd_drain(col.http, cfg->drain_timeout_ms))
		aw_warn("requests still in flight after %llu ms; closing them",
		        (unsigned long long)cfg->drain_timeout_ms);
	atomic_store(&refusing, true);
	aw_httpd_drain(col.http, 2000);
	status = 0;
out:
	if (err) {
		aw_error("%s", err);
		free(err);
	}
	aw_httpd_stop(&col.http);
	aw_writer_stop(&col.writer);
	aw_postingest_stop(&col.postingest); /* after the writer, which wakes it */
	aw_chart_cache_free(&col.charts);
	if (col.jobs) {
		aw_jobs_close(col.jobs);
		aw_jobs_stop(&col.jobs);
	}
	aw_auth_free(&col.auth);
	store_close(&col.store);
	aw_collector_analysis_release(&col);
	if (!status)
		aw_info("stopped");
	return status;
}

int aw_collector_analysis_setup(struct aw_collector *col, char **err)
{
	const struct aw_collector_config *cfg = col->cfg;
	struct aw_analysis_opts *o = &col->analysis;
	int rc;

	aw_thresholds_release(&col->thresholds); /* the defaults: 5% and 10% */
	if (cfg->thresholds_file) {
		rc = aw_thresholds_load(&col->thresholds, cfg->thresholds_file, err);
		if (rc)
			return rc;
	}
	aw_analysis_opts_default(o);
	if (cfg->baseline_ref)
		o->baseline_ref = cfg->baseline_ref;
	o->history = cfg->detect_history;
	o->detect.window = cfg->detect_window;
	o->detect.fdr = cfg->detect_fdr;
	o->detect.cp.min_segment = cfg->cp_min_segment;
	o->confirm_runs = cfg->confirm_runs;
	o->confirm_budget = cfg->confirm_budget;
	o->detect.screen_noise = cfg->screen_noise;
	o->detect.level_share = cfg->level_share;
	o->confirm_jobs = cfg->confirm_jobs;
	o->confirm_ttl_us = (int64_t)cfg->jobs_default_ttl_ms * 1000;
	o->thresholds = &col->thresholds;
	return 0;
}

void aw_collector_analysis_release(struct aw_collector *col)
{
	aw_thresholds_release(&col->thresholds);
	col->analysis.thresholds = NULL;
}
