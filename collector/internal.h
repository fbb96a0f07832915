/* What the collector's modules share: the running service, the context of one API request
 * (the helpers handlers reply with are reply.h's), the route handlers and the router's hooks.
 * Not for use outside collector/. */
#ifndef AW_COLLECTOR_INTERNAL_H
#define AW_COLLECTOR_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>

#include "analysis.h"
#include "auth.h"
#include "aw/result.h"
#include "config.h"
#include "httpd.h"
#include "reply.h" /* every handler replies with it */
#include "store.h"

struct aw_writer;
struct aw_jobs;
struct aw_postingest;
struct aw_chart_cache;

/* The running service. */
struct aw_collector {
	const struct aw_collector_config *cfg;
	struct store *store;
	struct aw_writer *writer;
	struct aw_jobs *jobs;
	struct aw_auth *auth;
	struct aw_httpd_server *http;
	struct aw_result_limits limits;
	struct aw_postingest *postingest; /* NULL when postingest.workers is 0 */
	struct aw_chart_cache *charts;    /* the chart files served here (chart_cache.h) */
	struct aw_thresholds thresholds;  /* detection.thresholds, or the defaults */
	struct aw_analysis_opts analysis; /* what verdicts and change points are computed with */
	struct store_retention retention; /* retention.* (raw_days 0: off) */
};

/* Fills col->thresholds and col->analysis from the configuration (reading the thresholds file
 * it names). Returns 0 or a negative errno with *err; release with
 * aw_collector_analysis_release(). */
int aw_collector_analysis_setup(struct aw_collector *col, char **err);
void aw_collector_analysis_release(struct aw_collector *col);

/* One API request as a route handler sees it. */
struct aw_ctx {
	struct aw_collector *col;
	struct aw_httpd_req *req;
	bool authenticated;
	struct aw_principal who; /* when authenticated */
	const char *param;       /* the {name} or {id} segment of the path, or what "*" matched,
	                          * decoded */
	struct store_conn *conn; /* taken by aw_ctx_conn(), returned by the router */
};

/* The content hash of a validated result (hex SHA-256 into hex[65]): equal for two documents
 * exactly when they carry the same values. Returns 0, -ENOMEM or -EIO. */
int aw_ingest_content_hash(const struct aw_result *r, char *hex);

/* Route handlers (ingest.c, api.c, jobs.c). */
void aw_ingest_post(struct aw_ctx *x);
void aw_api_hosts(struct aw_ctx *x);
void aw_api_run_suspects(struct aw_ctx *x);
void aw_api_host(struct aw_ctx *x);
void aw_api_runs(struct aw_ctx *x);
void aw_api_run(struct aw_ctx *x);
void aw_api_series(struct aw_ctx *x);
void aw_api_healthz(struct aw_ctx *x);
void aw_api_metrics(struct aw_ctx *x);
void aw_jobs_post(struct aw_ctx *x);
void aw_jobs_next(struct aw_ctx *x);
void aw_jobs_status(struct aw_ctx *x);
void aw_jobs_get(struct aw_ctx *x);
void aw_jobs_list(struct aw_ctx *x);
void aw_api_gate(struct aw_ctx *x);
void aw_api_compare(struct aw_ctx *x);
void aw_api_changepoints(struct aw_ctx *x);
/* A/B documents (api_ab.c): the upload of a parsed atomwatch.ab document (aw_ingest_post()
 * hands it over; the reference stays the caller's), one document, the list. */
void aw_ab_post(struct aw_ctx *x, json_t *doc);
void aw_api_ab(struct aw_ctx *x);
void aw_api_ab_list(struct aw_ctx *x);
/* Adds the gate reply's "evidence" ({"decided_by": "ab"|"history", ...}) for the commit's
 * newest A/B document (not A/A), and sets "status" from it when its verdict decides
 * (regressed: fail; unchanged, improved: pass), unless the query says evidence=history.
 * Returns 0 or a store error. */
int aw_ab_gate_evidence(struct aw_ctx *x, const char *project, const char *commit, json_t *reply);
/* Bisections (api_bisect.c, docs/api.md "Bisections"): the list, one, the runner agent's
 * progress, cancelling; and one bisection's JSON (with the agent's answer when `answer`), NULL
 * on allocation failure. */
void aw_api_bisects(struct aw_ctx *x);
void aw_api_bisect(struct aw_ctx *x);
void aw_api_bisect_progress(struct aw_ctx *x);
void aw_api_bisect_cancel(struct aw_ctx *x);
json_t *aw_bisect_json(const struct store_bisect *b, bool answer);
/* The HTML reports (web.c). */
void aw_web_overview(struct aw_ctx *x);
void aw_web_host(struct aw_ctx *x);
void aw_web_commit(struct aw_ctx *x);
void aw_web_compare(struct aw_ctx *x);
void aw_web_ab(struct aw_ctx *x);
void aw_web_chart(struct aw_ctx *x);
void aw_web_favicon(struct aw_ctx *x);

/* Called by the router when a request ends (jobs.c releases a claim whose reply was lost). */
void aw_jobs_request_done(struct aw_httpd_req *req, bool sent);

/* The long-poll service (jobs.c): a thread that hands queued jobs to waiting agents. */
int aw_jobs_start(struct aw_collector *col, struct aw_jobs **out, char **err);
/* Wakes every waiter (a job was posted here). */
void aw_jobs_kick(struct aw_jobs *j);
/* Answers every waiting long-poll (204) and refuses new ones; the thread keeps running. */
void aw_jobs_close(struct aw_jobs *j);
/* Stops the thread (after aw_jobs_close() and the HTTP drain); sets *j to NULL. */
void aw_jobs_stop(struct aw_jobs **j);
unsigned aw_jobs_waiting(struct aw_jobs *j);

/* The route template a request goes to ("/api/v1/runs/{id}"), NULL when none: then
 * *path_known tells a wrong method from an unknown path. *param receives the template's
 * wildcard segment (into buf, `len` bytes), if any. For the fuzz target of the routing. */
const char *aw_collector_route(const char *method, const char *path, char *buf, size_t len,
                               const char **param, bool *path_known);

/* serve's exit status when the listening address is in use (man/atomwatch-collector.8). */
#define AW_EXIT_ADDR_IN_USE 3

/* The service: runs until SIGTERM/SIGINT, then drains. Returns a process exit status: 0 after
 * a clean stop, AW_EXIT_ADDR_IN_USE, or 1 for any other failure. */
int aw_collector_serve(const struct aw_collector_config *cfg);

#endif
