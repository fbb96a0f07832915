/* atomwatch-ci, the CI side of atomwatch: the collector's gate (and compare) reply read into a
 * model, formatted as a console summary, Markdown (job summary, merge-request comment), JUnit
 * XML and GitHub annotations; the requests CI makes (queue a job, wait for hosts, ask the gate);
 * and the command line. Everything but main() is in the aw_ci library.
 *
 * Conventions: int functions return 0 or a negative errno; `char **err`, when given, receives a
 * malloc'd lowercase message naming the subject (the caller frees it). Strings in the model come
 * from the network: every format escapes them its own way. */
#ifndef AW_CI_H
#define AW_CI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aw/buf.h"
#include "aw/verdict.h"
#include "verdict_doc.h"

#define AW_CI_PROG "atomwatch-ci"

/* Exit statuses of `gate` (and `compare`); `wait` uses 0, 2 and 3, `trigger` 0 and 3. When
 * several apply, the first of regression, inconclusive, incomplete, unconfirmed with --strict
 * (1) wins; pass is 0. */
enum aw_ci_exit {
	AW_CI_EXIT_PASS = 0,         /* also unconfirmed without --strict */
	AW_CI_EXIT_REGRESSION = 1,   /* also unconfirmed with --strict */
	AW_CI_EXIT_INCOMPLETE = 2,   /* a host never reported (wait: timed out) */
	AW_CI_EXIT_ERROR = 3,        /* usage, or the collector unreachable, 5xx, a bad reply */
	AW_CI_EXIT_INCONCLUSIVE = 4, /* a cell of gate level fail the gate cannot vouch for: its
	                                change reaches its threshold, its evidence stayed split
	                                after the confirmation budget (a noisy cell, its change
	                                under the threshold, is not) */
};

/* Statuses (report, host) and verdicts (cell, metric) are the collector's words, read with
 * aw/verdict.h. A cell word this client does not know (a newer collector) is
 * AW_VERDICT_UNKNOWN: such a cell neither fails nor passes the gate by itself. */

/* One metric (p50 or p99) of a cell on a host. Numbers the reply left null are NAN; `window`
 * is -1 when absent. */
struct aw_ci_metric {
	bool present;
	enum aw_verdict verdict;
	double baseline, head;                   /* ns */
	double change, change_lo, change_hi;     /* relative: 0.25 is +25% */
	double noise, pvalue, qvalue, threshold; /* relative noise, p and q values, threshold */
	long window;                             /* baseline runs used */
	bool absolute;    /* judged in ns (at or through the resolution): change is change_ns over
	                     the cell's level above resolution, so it is told in ns */
	double change_ns; /* head - baseline in ns, NAN when the reply gave none */
	bool bimodal;
	char *note; /* or NULL */
	/* the same metric as the verdict document's parser read it (levels, level_by,
	 * decided_by, head_n), in the host's `doc`; NULL when the reply had none */
	const struct aw_metric_verdict *doc;
};

struct aw_ci_cell {
	char *key;               /* "subject=libpcpu op=inc cpu=0" */
	char *op;                /* or NULL */
	char *reader, *subject;  /* or NULL */
	int cpu;                 /* -1 when absent */
	enum aw_verdict verdict; /* the more severe of p50 and p99 */
	char *verdict_name;      /* as the collector spelled it */
	enum aw_gate gate;       /* "gate" (fail when absent: a collector before gate levels) */
	struct aw_ci_metric p50, p99;
	const struct aw_cell_verdict *doc; /* the same cell in the host's `doc` (its head runs),
	                                      or NULL */
};

/* A link the collector gave (a chart or a page): a path below the collector, or a URL. */
struct aw_ci_link {
	char *name;
	char *href;
};

struct aw_ci_host {
	char *name;
	enum aw_verdict status; /* pass, fail, incomplete, unconfirmed or inconclusive */
	char *reason;           /* why incomplete, or NULL */
	size_t n_head_runs;
	long baseline_runs;            /* -1 when absent */
	long counts[AW_VERDICT_COUNT]; /* cells per cell verdict; -1 when the reply gave none */
	struct aw_ci_cell *cells;      /* in the collector's order (regressed first) */
	size_t n_cells;
	struct aw_ci_link *charts; /* the host's "charts" object, in its order */
	size_t n_charts;
	/* a head run the collector found disturbed (a reference kernel beside its cells beyond
	 * what the history shows): the most disturbed one, the kernel that moved most and its
	 * ratio over its usual ns (NAN: unknown); disturbed_run NULL when none was */
	char *disturbed_run, *disturbed_kernel;
	double disturbed_ratio;
	/* the host as the verdict document's one parser (verdict_doc.h) reads it: what this
	 * model does not copy (levels, notes, head runs, confirm_budget); zeroed for a host
	 * the reply did not name */
	struct aw_host_verdict doc;
};

struct aw_ci_report {
	bool compare;              /* a compare reply (base/head) rather than a gate reply */
	char *project;             /* or NULL (compare) */
	char *commit;              /* the commit judged (compare: head) */
	char *baseline;            /* the baseline ref (compare: the base commit) */
	enum aw_verdict status;    /* pass, fail, incomplete, unconfirmed or inconclusive */
	bool strict;               /* unconfirmed fails (--strict) */
	char *report;              /* the commit's page, e.g. "/commits/<sha>", or NULL */
	struct aw_ci_link *charts; /* top-level "charts", e.g. the cross-host heat map */
	size_t n_charts;
	struct aw_ci_host *hosts;
	size_t n_hosts;
};

/* Reads a gate reply {"project","commit","baseline_ref","status","hosts":[...],"report"} or,
 * with `compare`, a compare reply {"project","base","head","status","hosts":[...]}; each host as
 * verdict_doc.h's aw_host_verdict_json() writes it, with an optional "charts" object of
 * name -> path. Each host is checked field by field here (the errors name the field), then read
 * by the verdict document's own parser, aw_host_verdict_parse(), into its `doc` for the fields
 * this model does not copy. Unknown fields are ignored. Returns 0 (release `out` with
 * aw_ci_report_release()), -EINVAL with *err naming the field for a reply of another shape, or
 * -ENOMEM. */
int aw_ci_report_parse(const char *text, size_t len, bool compare, struct aw_ci_report *out,
                       char **err);
void aw_ci_report_release(struct aw_ci_report *r);

/* Adds a host the reply did not mention as incomplete with `reason` (copied): a host CI expected
 * is never silently dropped. Returns 0 or -ENOMEM. */
int aw_ci_report_add_missing(struct aw_ci_report *r, const char *host, const char *reason);

/* The exit status for a report, the first that applies:
 *   1 the report or any host failed, or a cell of gate level fail regressed (a regressed cell
 *     of level warn or off never fails);
 *   4 the report or a host is inconclusive, or a cell of gate level fail is;
 *   2 a host is incomplete, the report says incomplete, or it has no host at all;
 *   1 with r->strict: the report or a host is unconfirmed, or a fail-level cell is suspect;
 *   0 otherwise. */
enum aw_ci_exit aw_ci_exit_for(const struct aw_ci_report *r);

/* ---- formats; `base_url` (no trailing slash) makes the collector's paths absolute ---- */

/* A console summary: the status line, every regressed metric, every inconclusive one (a cell of
 * gate level fail the gate cannot vouch for), every suspect (unconfirmed) cell, every warning
 * (a regressed cell of gate level warn), the report's address. A metric with levels has the
 * line that tells them apart under it. */
int aw_ci_format_text(const struct aw_ci_report *r, const char *base_url, struct aw_buf *out);

/* Markdown for GitHub's job summary or a merge-request comment: regressions first with their
 * numbers (baseline, head, change, interval or p-value) and chart links, then the inconclusive
 * cells (change and bounds, threshold, head runs, note), the unconfirmed ones and the warnings,
 * then a table of hosts, then the other cells that are not unchanged. */
int aw_ci_format_markdown(const struct aw_ci_report *r, const char *base_url, struct aw_buf *out);

/* JUnit XML: a testsuite per host, a testcase per host x cell x metric (classname the host,
 * name "<cell key> [p50]"), a <failure> per regressed metric of gate level fail with its
 * numbers, a <failure type="inconclusive"> per inconclusive metric of a fail-level cell, a
 * passing testcase with a <system-out> note for a warning or a suspect (unconfirmed) metric,
 * <skipped> for new and missing cells, an <error> testcase for a host without a run. */
int aw_ci_format_junit(const struct aw_ci_report *r, const char *base_url, struct aw_buf *out);

/* GitHub Actions workflow commands: "::error title=...::..." per regressed metric, per
 * inconclusive metric of a fail-level cell and per host without a run; "::warning" per suspect
 * and per warning. */
int aw_ci_format_annotations(const struct aw_ci_report *r, const char *base_url,
                             struct aw_buf *out);

/* ---- escaping (exported for the tests); each appends to `out`, returns 0 or a buf error ---- */

/* XML text and attribute values: & < > " ' as entities; characters XML 1.0 forbids (controls
 * other than tab, newline, carriage return) as U+FFFD. */
int aw_ci_xml_escape(struct aw_buf *out, const char *s);

/* Markdown text, also inside a table cell: HTML-significant characters as entities, '|' as
 * &#124;, Markdown punctuation backslash-escaped, line breaks and controls as spaces. */
int aw_ci_md_escape(struct aw_buf *out, const char *s);

/* GitHub workflow command data (`property` false: % CR LF encoded) or a property value
 * (`property` true: also ':' and ','); other controls become spaces. */
int aw_ci_gh_escape(struct aw_buf *out, const char *s, bool property);

/* Percent-encodes every byte outside [A-Za-z0-9._~-] (a query value). */
int aw_ci_url_encode(struct aw_buf *out, const char *s);

/* `href` made absolute: a path starting with '/' is appended to base_url; an http(s) URL is
 * kept; anything else is refused (-EINVAL, nothing appended). Characters that would end a
 * Markdown link or break an attribute are percent-encoded. */
int aw_ci_link_url(struct aw_buf *out, const char *base_url, const char *href);

/* ---- the collector ---- */

struct aw_ci_client;

/* A client for `base_url` ("http://host:port", no trailing slash) sending `token` (copied,
 * never logged) when it is not NULL. Returns NULL with *err. Free with aw_ci_client_free(). */
struct aw_ci_client *aw_ci_client_new(const char *base_url, const char *token, char **err);
void aw_ci_client_free(struct aw_ci_client **c);

struct aw_ci_job {
	const char *project, *commit, *ref;
	const char *subject;      /* or NULL */
	const char *ab_base;      /* an A/B job from this base commit to `commit`, or NULL */
	const char *const *hosts; /* NULL: every host ("all") */
	size_t n_hosts;
};

/* POST /api/v1/jobs. Returns 0 with the job's id in *id, or a negative errno with *err: the
 * collector's own message for a refusal (-EINVAL for 4xx, -EACCES for 401/403), -EIO for 5xx or
 * a bad reply, the transport's errno when it did not answer. */
int aw_ci_trigger(struct aw_ci_client *c, const struct aw_ci_job *job, int64_t *id, char **err);

/* Whether `host` has stored a run of (project, commit): GET /api/v1/runs?project=&commit=
 * &host=&limit=1. Returns 0 with *reported, or a negative errno with *err as aw_ci_trigger(). */
int aw_ci_reported(struct aw_ci_client *c, const char *project, const char *commit,
                   const char *host, bool *reported, char **err);

struct aw_ci_wait_opts {
	uint64_t timeout_ms;  /* give up after this long */
	uint64_t poll_ms;     /* first delay between polls (default 2 s); doubles */
	uint64_t poll_max_ms; /* the longest delay (default 30 s) */
	unsigned max_errors;  /* transport errors and 5xx in a row tolerated (default 5) */
	bool quiet;           /* no progress lines on stderr */
};

/* Polls until every host in hosts[n] reported a run of (project, commit), sleeping between
 * rounds with doubling delays (never past the deadline); reported[i] says which did. Returns 0
 * (all reported), -ETIMEDOUT (the deadline passed), or another negative errno with *err when
 * the collector refused a request or stayed unreachable for max_errors polls in a row. */
int aw_ci_wait(struct aw_ci_client *c, const char *project, const char *commit,
               const char *const *hosts, size_t n, const struct aw_ci_wait_opts *o, bool *reported,
               char **err);

/* The delay before poll number `round` (0-based) under `o`, before the deadline cap. */
uint64_t aw_ci_poll_delay_ms(const struct aw_ci_wait_opts *o, unsigned round);

struct aw_ci_gate_query {
	const char *project, *commit, *baseline_ref;
	const char *const *hosts; /* NULL: the collector decides */
	size_t n_hosts;
	bool all_cells;           /* also the unchanged cells (the JUnit needs them) */
	const char *const *cells; /* globs on cell keys (repeated "cells="); NULL: every cell */
	size_t n_cells;
};

/* GET /api/v1/gate, read with aw_ci_report_parse(). Transport errors and 5xx are retried
 * twice. Returns 0 with *out, or a negative errno with *err (as aw_ci_trigger(); -EINVAL also
 * for a reply of the wrong shape). */
int aw_ci_fetch_gate(struct aw_ci_client *c, const struct aw_ci_gate_query *q,
                     struct aw_ci_report *out, char **err);

/* GET /api/v1/compare?project=&base=&head=[&host=][&cells=...], as aw_ci_fetch_gate(); the
 * query's `commit` is the head, `baseline_ref` unused. */
int aw_ci_fetch_compare(struct aw_ci_client *c, const struct aw_ci_gate_query *q, const char *base,
                        const char *host, struct aw_ci_report *out, char **err);

/* ---- the command line ---- */

/* Runs `atomwatch-ci` with argv (argv[0] the program); returns the exit status. Reentrant
 * enough for tests: getopt is reset on entry. */
int aw_ci_main(int argc, char **argv);

/* GETs `path` (retried like the other queries) and parses the 2xx reply as JSON into *out
 * (caller decrefs). Returns 0 or a negative errno with *err naming `what`. */
int aw_ci_get_json(struct aw_ci_client *c, const char *path, const char *what, json_t **out,
                   char **err);

#endif
