/* atomwatch reports: the charts (drawn by gnuplot into SVG and PNG files under a data dir, each
 * redrawn only when its data changed) and the HTML pages the server builds. Everything here takes
 * plain data structs, so the collector (served pages, post-ingest workers) and a static export call
 * the same functions; nothing here knows the database or HTTP.
 *
 * Conventions: int functions return 0 or a negative errno; `char **err`, when given, receives a
 * malloc'd lowercase message naming the subject (the caller frees it). Strings in the data
 * structs are borrowed for the duration of the call and may hold anything an agent sent: they
 * are escaped wherever they end up (gnuplot strings, HTML text and attributes, URLs, file
 * names). Statistics are ns per op; NAN (or a value <= 0, which a log axis cannot show) means
 * "no value". */
#ifndef AW_REPORTS_H
#define AW_REPORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aw/buf.h"
#include "aw/verdict.h"

/* ---- chart identity, file paths and URLs ---- */

enum aw_chart_kind {
	AW_CHART_COMPARE,    /* one commit against its baseline on one host */
	AW_CHART_TREND,      /* one op group on one host over commits of a ref */
	AW_CHART_HEATMAP,    /* op x host for one commit */
	AW_CHART_PERCPU,     /* op x CPU for one commit on one host */
	AW_CHART_CONTENTION, /* contention x duty for one op, commit and host */
	AW_CHART_AB,         /* the per-round ratios of an interleaved A/B document */
};

/* Which chart: the fields each kind uses must be non-NULL and non-empty, the others are
 * ignored. compare: commit, host, base; trend: host, ref, name (the op group); heatmap:
 * commit; percpu: commit, host; contention: commit, host, name (the op or cell); ab: name (the
 * document's ab_id). */
struct aw_chart_id {
	enum aw_chart_kind kind;
	const char *commit; /* the head commit */
	const char *base;   /* compare: what the head is compared with (a commit or a ref) */
	const char *host;
	const char *ref;
	const char *name;
};

/* Fixed pixel size of every chart of a kind (the <img> size and the PNG's). */
void aw_chart_size(enum aw_chart_kind kind, unsigned *width, unsigned *height);

/* The chart's file path relative to the data dir, which is also its URL path relative to the
 * site root; `ext` is "svg", "png" or "hash" (the cache sidecar). Layout:
 *   charts/commits/<commit>/heatmap.<ext>
 *   charts/commits/<commit>/hosts/<host>/compare-<base>.<ext>
 *   charts/commits/<commit>/hosts/<host>/percpu.<ext>
 *   charts/commits/<commit>/hosts/<host>/contention-<name>.<ext>
 *   charts/hosts/<host>/refs/<ref>/trend-<name>.<ext>
 *   charts/ab/<name>/ratios.<ext>
 * with every <field> passed through aw_segment_encode(), so the path is safe both as a file
 * name and as a URL. Returns 0, -EINVAL (a field the kind needs is missing, bad ext) or
 * -ENAMETOOLONG (does not fit `size`). */
int aw_chart_path(const struct aw_chart_id *id, const char *ext, char *out, size_t size);

/* Whether `path` (the part of a /charts/... URL after the leading '/', already percent-decoded)
 * is a chart file the HTTP route may serve from the data dir: "charts/" followed by segments
 * of the aw_segment_encode() alphabet, none empty or starting with '.', ending in ".svg" or
 * ".png". Temp files and .hash sidecars are never served. */
bool aw_chart_path_servable(const char *path);

/* Encodes any string into a path segment of [A-Za-z0-9._~-] that never starts with '.':
 * bytes outside [A-Za-z0-9._-], '~' itself and a leading '.' become "~XX" (uppercase hex).
 * Valid host names (aw_valid_name()) that do not start with '.' and commit ids map to
 * themselves. Returns 0, -EINVAL for an empty string, or -ENAMETOOLONG when the result would
 * need `size` bytes or more (or more than 200). */
int aw_segment_encode(const char *s, char *out, size_t size);

/* The inverse of aw_segment_encode() (the collector's /hosts/{name} route uses it). Returns 0,
 * -EINVAL for a string aw_segment_encode() cannot have produced, or -ENAMETOOLONG. */
int aw_segment_decode(const char *seg, char *out, size_t size);

/* ---- gnuplot ---- */

/* One long-lived gnuplot process (started with posix_spawn, never through a shell) that draws
 * many charts; restarted when it dies or hangs. Not thread-safe: use one per worker thread. */
struct aw_gnuplot;

struct aw_gnuplot_opts {
	const char *program; /* NULL: /usr/bin/gnuplot */
	unsigned timeout_ms; /* most time one chart may take; 0: 20000 */
};

/* Starts gnuplot (`opts` may be NULL for the defaults). Returns the handle (free with
 * aw_gnuplot_free()) or NULL with *err. */
struct aw_gnuplot *aw_gnuplot_new(const struct aw_gnuplot_opts *opts, char **err);

/* Ends gnuplot (EOF on its input, then SIGKILL after a second) and frees the handle; sets
 * *gp to NULL. */
void aw_gnuplot_free(struct aw_gnuplot **gp);

/* The running gnuplot's process id (0 when none is running; tests kill it). */
int aw_gnuplot_pid(const struct aw_gnuplot *gp);

/* How many gnuplot processes this handle has started. */
unsigned aw_gnuplot_starts(const struct aw_gnuplot *gp);

/* Whether PNGs come from the pngcairo terminal (else from libgd's png). */
bool aw_gnuplot_has_pngcairo(const struct aw_gnuplot *gp);

/* ---- chart data ---- */

/* Chart 1: every item (op or cell) on x, baseline and head side by side on a log y axis, a
 * marker at p50 with a whisker from p95 to p99; regressed items' head marker in red. */
struct aw_chart_compare_item {
	const char *name;
	double base_p50, base_p95, base_p99;
	double head_p50, head_p95, head_p99;
	bool regressed;
};

struct aw_chart_compare {
	const char *title;
	const char *base_label; /* e.g. "main (last 5 runs)"; NULL: "baseline" */
	const char *head_label; /* e.g. a short sha; NULL: "head" */
	const struct aw_chart_compare_item *items;
	size_t n_items;
};

/* Chart 2: one or more series (ops of a group) over points in commit order: p50 line with a
 * p95-p99 band, change points as dashed vertical lines, regressions as red markers. */
struct aw_chart_trend_series {
	const char *name;
	const double *p50;           /* n_points values */
	const double *p95;           /* n_points values, or NULL: no band */
	const double *p99;           /* n_points values, or NULL: no band */
	const size_t *change_points; /* indices into the points */
	size_t n_change_points;
	const size_t *regressions; /* indices into the points */
	size_t n_regressions;
};

/* A labelled vertical mark at one point of a trend: the host changed there (its kernel,
 * microcode, firmware, governor...), or a bisection named that commit the culprit. */
struct aw_chart_mark {
	size_t point;
	const char *label;
	bool culprit; /* drawn in red; else a host change, in purple */
};

struct aw_chart_trend {
	const char *title;
	const char *const *labels; /* n_points x-axis labels (short shas), entries may be NULL */
	size_t n_points;
	const struct aw_chart_trend_series *series;
	size_t n_series;
	const struct aw_chart_mark *marks; /* may be NULL */
	size_t n_marks;
};

/* Chart 3: rows (ops) x columns (hosts), the colour the p50 on a log scale, the value printed
 * in each cell; missing cells grey with "n/a". */
struct aw_chart_heatmap {
	const char *title;
	const char *const *rows; /* n_rows names */
	size_t n_rows;
	const char *const *cols; /* n_cols names */
	size_t n_cols;
	const double *p50; /* n_rows * n_cols, row-major */
};

/* Chart 4: p50 of each op on each CPU, one line per op, CPU number on x. */
struct aw_chart_percpu {
	const char *title;
	const char *const *ops; /* n_ops names */
	size_t n_ops;
	const int *cpus; /* n_cpus CPU numbers, the x positions */
	size_t n_cpus;
	const double *p50; /* n_ops * n_cpus, row-major */
};

/* Chart 5: one op's p50 over contention (the contender's nops between ops, rows) x duty (nops
 * between timed ops, columns), drawn as chart 3 is. */
struct aw_chart_contention {
	const char *title;
	const int64_t *c; /* n_c contention values */
	size_t n_c;
	const int64_t *d; /* n_d duty values */
	size_t n_d;
	const double *p50; /* n_c * n_d, row-major */
};

/* Chart 6: an interleaved A/B document's rounds: per series (a cell's A/B rounds, its A/A
 * rounds) the change head/base - 1 of each round in percent, the round number on x; a dashed
 * line per series at its estimate (NAN: none). */
struct aw_chart_ab {
	const char *title;
	const char *const *series; /* n_series names, e.g. "op=op cpu=0 A/B" */
	const bool *aa;            /* n_series: an A/A series (drawn hollow, in grey) */
	const double *estimate;    /* n_series, percent */
	size_t n_series;
	size_t n_rounds;
	const double *pct; /* n_series * n_rounds, row-major; NAN: no round */
};

/* Limits on the data of one chart, beyond which drawing fails with -E2BIG. */
#define AW_CHART_MAX_ITEMS  2048  /* items, rows, columns, ops, CPUs, c or d values */
#define AW_CHART_MAX_POINTS 10000 /* trend points */
#define AW_CHART_MAX_SERIES 64    /* trend series */

/* ---- drawing ---- */

#define AW_DRAW_FORCE 1u /* draw even when the cached chart's data is unchanged */

/* The aw_chart_draw_*() functions draw the chart `id` (whose kind must match the function) from the
 * data into <data_dir>/<aw_chart_path(id)> as SVG and PNG, creating directories as needed. A chart
 * with no value shows "no data". Each file appears atomically (written under a temp name in
 * its directory, renamed when gnuplot confirmed it). The hash of the chart's script (its data
 * and the style version) is kept in the .hash sidecar: when it matches and both files exist,
 * nothing is drawn.
 * Return: 0 drawn, 1 (AW_DRAW_CACHED) unchanged and skipped, or a negative errno with *err:
 * -EINVAL (bad id or data), -E2BIG (over a limit), -EIO (gnuplot reported an error),
 * -ETIMEDOUT, -EPIPE (gnuplot died; it is restarted on the next call), or a file error. */
#define AW_DRAW_CACHED 1

int aw_chart_draw_compare(struct aw_gnuplot *gp, const char *data_dir, const struct aw_chart_id *id,
                          const struct aw_chart_compare *c, unsigned flags, char **err);
int aw_chart_draw_trend(struct aw_gnuplot *gp, const char *data_dir, const struct aw_chart_id *id,
                        const struct aw_chart_trend *t, unsigned flags, char **err);
int aw_chart_draw_heatmap(struct aw_gnuplot *gp, const char *data_dir, const struct aw_chart_id *id,
                          const struct aw_chart_heatmap *h, unsigned flags, char **err);
int aw_chart_draw_percpu(struct aw_gnuplot *gp, const char *data_dir, const struct aw_chart_id *id,
                         const struct aw_chart_percpu *p, unsigned flags, char **err);
int aw_chart_draw_contention(struct aw_gnuplot *gp, const char *data_dir,
                             const struct aw_chart_id *id, const struct aw_chart_contention *c,
                             unsigned flags, char **err);
int aw_chart_draw_ab(struct aw_gnuplot *gp, const char *data_dir, const struct aw_chart_id *id,
                     const struct aw_chart_ab *c, unsigned flags, char **err);

/* ---- HTML pages ---- */

/* How pages link to each other and to charts. Served: absolute paths under `prefix` ("" at the
 * site root, else e.g. "/atomwatch", no trailing '/'): "/", "/hosts/<h>", "/commits/<c>",
 * "/compare?base=&head=", "/charts/...". Export: relative links that work from a plain file
 * server or file:// ("index.html", "hosts/<h>/index.html", "commits/<c>/index.html",
 * "compare/<base>/<head>/index.html", "charts/..."), see aw_page_path(). */
enum aw_link_mode {
	AW_LINKS_SERVED,
	AW_LINKS_EXPORT,
};

struct aw_links {
	enum aw_link_mode mode;
	const char *prefix; /* served mode only; NULL means "" */
};

enum aw_page_kind {
	AW_PAGE_OVERVIEW,
	AW_PAGE_HOST,    /* a: host name */
	AW_PAGE_COMMIT,  /* a: commit */
	AW_PAGE_COMPARE, /* a: base commit, b: head commit */
	AW_PAGE_AB,      /* a: an A/B document's ab_id */
};

/* The file a static export writes page (kind, a, b) to, relative to the export root, e.g.
 * "hosts/<aw_segment_encode(a)>/index.html". Returns 0, -EINVAL or -ENAMETOOLONG. */
int aw_page_path(enum aw_page_kind kind, const char *a, const char *b, char *out, size_t size);

/* The Content-Security-Policy every page must be sent with (also repeated in a <meta> element
 * for exported pages): nothing but same-origin images and the page's own inline stylesheet
 * (allowed by its hash), no scripts, no frames. A static string. */
const char *aw_html_csp(void);

/* The site's icon (SVG), which every page links at <site root>/favicon.svg: the collector serves
 * it there and a static export writes it there. Returns the static bytes and their length. */
#define AW_HTML_FAVICON_PATH "favicon.svg"
const char *aw_html_favicon(size_t *len);

/* What a page says about a host, a commit, a run or a cell is an enum aw_verdict (aw/verdict.h):
 * cells use the regression analysis' words (unchanged ... missing, suspect, inconclusive), hosts
 * and commits the gate's (pass, fail, inconclusive, incomplete, unconfirmed), and
 * AW_VERDICT_UNKNOWN (0) what is not decided yet. The commit and host pages list the cells that
 * need a look (regressed, inconclusive) at the top. */

struct aw_kv {
	const char *key, *value;
};

/* A chart on a page. `ready` false (not drawn yet) shows a placeholder instead of an <img>. */
struct aw_chart_ref {
	struct aw_chart_id id;
	const char *caption; /* NULL: none */
	bool ready;
};

struct aw_page_host_summary {
	const char *name, *arch, *cpu_model; /* arch, cpu_model may be NULL */
	int cores;                           /* online CPUs; < 0 unknown */
	int lse;                             /* 1 yes, 0 no, < 0 unknown or not arm64 */
	const struct aw_kv *labels;
	size_t n_labels;
	const char *last_run_at; /* NULL: never */
	const char *last_commit; /* NULL: none */
	enum aw_verdict last_verdict;
};

struct aw_page_commit_summary {
	const char *sha, *ref, *time; /* ref, time may be NULL */
	unsigned hosts_reported;
	unsigned hosts_expected; /* 0: unknown */
	enum aw_verdict verdict;
};

/* "/": hosts and latest commits, each commit linked to its comparison with the one after it
 * in the list (a static export writes those compare pages). */
/* A bisection as the overview and the commit pages list it (docs/api.md "Bisections"). */
struct aw_page_bisect {
	long long id;
	const char *state;         /* queued, running, done, failed, cancelled */
	const char *host, *runner; /* whose finding; who bisects */
	const char *subject;       /* NULL: the agent's step command */
	const char *good, *bad, *culprit, *cell, *outcome, *message; /* may be NULL */
	const char *range_good, *range_bad;                          /* the range left */
	long steps_done, expected_steps, range_commits;              /* -1: not known yet */
	double change, lo, hi;                                       /* ratios; NAN: none */
};

struct aw_page_overview {
	const struct aw_page_host_summary *hosts;
	size_t n_hosts;
	const struct aw_page_commit_summary *commits; /* newest first */
	size_t n_commits;
	const char *generated_at;             /* NULL: not shown */
	const struct aw_page_bisect *bisects; /* the regressions bisections found, newest first */
	size_t n_bisects;
};

/* One version of a host's fingerprint, flattened into key/value pairs (e.g. "kernel",
 * "cpu_model", "labels.rack"). */
struct aw_page_fingerprint {
	const char *first_seen, *last_seen, *platform_hash; /* any may be NULL */
	const struct aw_kv *fields;
	size_t n_fields;
};

struct aw_page_run {
	const char *run_id, *commit, *ref, *started_at, *trigger; /* commit, ref may be NULL */
	enum aw_verdict verdict;
};

/* "/hosts/{name}". */
struct aw_page_host {
	struct aw_page_host_summary host;
	const struct aw_page_fingerprint *fingerprints; /* oldest first; the last is current */
	size_t n_fingerprints;
	const struct aw_chart_ref *trends; /* one per op group */
	size_t n_trends;
	const struct aw_chart_ref *percpu; /* NULL: none */
	const struct aw_chart_ref *contention;
	size_t n_contention;
	const struct aw_page_run *runs; /* newest first */
	size_t n_runs;
	const char *generated_at;
	/* the cells of the newest verdict (of commit `attention_commit`) that regressed, are
	 * inconclusive: listed at the top */
	const char *attention_commit;
	const struct aw_page_cell_row *attention;
	size_t n_attention;
};

struct aw_page_cell_row {
	const char *cell;          /* the cell key, e.g. "op=stadd cpu=0" */
	double base_p50, head_p50; /* NAN: none */
	enum aw_verdict verdict;
	double head_gross;  /* a duty cell's gross ns per iteration (op and duty: head_p50 plus
	                       the duty's own time); NAN for other cells. A table with one shows
	                       the column (result-schema.md, "Duty cells on an out-of-order core") */
	bool absolute;      /* the verdict judged the p50 in ns: its change is shown in ns, as a
	                       change from a baseline below resolution is (aw_change_text()) */
	const char *note;   /* the sentence behind the verdict, or NULL */
	const char *levels; /* the line that tells the deciding metric's levels apart, e.g.
	                       "levels by mulblock-v1: L1 (60%) +0.3% unchanged, L2 (40%) +7.1%
	                       regressed", or NULL: shown under the row with the note */
};

/* A head run whose reference kernels moved beyond what the host's history shows: the one that
 * moved most, and by how much (reference over its usual ns). */
struct aw_page_disturbance {
	const char *run_id; /* NULL: no head run was disturbed */
	const char *kernel; /* the reference kernel that moved most */
	double ratio;
};

struct aw_page_host_result {
	const char *host;
	const char *baseline;      /* what the head was compared with, e.g. "main, 5 runs" */
	struct aw_chart_ref chart; /* the compare chart */
	const struct aw_page_cell_row *rows;
	size_t n_rows;
	enum aw_verdict verdict;
	struct aw_page_disturbance disturbed; /* the most disturbed head run (run_id NULL: none) */
};

/* An interleaved A/B document of the commit, as the commit page links it. */
struct aw_page_ab_link {
	const char *ab_id, *base;
	enum aw_ab_verdict verdict;
	bool aa;
};

/* "/commits/{sha}" (base NULL: compared with the baseline ref) and "/compare?base=&head="
 * (base set). */
struct aw_page_commit {
	const char *sha;          /* the head commit */
	const char *base;         /* compare page: the base commit; commit page: NULL */
	const char *ref;          /* the head's ref; may be NULL */
	const char *baseline_ref; /* commit page: the baseline ref; may be NULL */
	enum aw_verdict verdict;
	const struct aw_page_host_result *hosts;
	size_t n_hosts;
	const struct aw_chart_ref *heatmap; /* NULL: none */
	const char *generated_at;
	const struct aw_page_ab_link *ab; /* the commit's A/B documents as head, newest first */
	size_t n_ab;
	const struct aw_page_bisect *bisects; /* bisections with the commit as an end or culprit */
	size_t n_bisects;
};

/* One cell of "/ab/{id}": ratios are head/base (NAN: none; `ratio`, `lo`, `hi` the decision's,
 * the A/A bias removed), `threshold` and `loads_sd` (the layouts' own spread, NAN under two)
 * fractions, `alone` and `shared` the levels' ratios (NAN: a document without levels, or none of
 * that level), `layouts` how many layouts had rounds. */
struct aw_page_ab_row {
	const char *cell, *reason; /* reason may be NULL */
	enum aw_ab_verdict verdict;
	double ratio, lo, hi, aa_ratio, aa_lo, aa_hi, threshold, q;
	double alone, shared, loads_sd, seconds;
	long rounds, layouts;
};

/* "/ab/{id}": an interleaved A/B document and its judgment. */
struct aw_page_ab {
	const char *ab_id, *project, *subject, *host, *base, *head, *ref; /* ref may be NULL */
	enum aw_ab_verdict verdict;
	bool aa;
	double base_build_s, head_build_s; /* NAN: unknown */
	const char *started_at, *finished_at;
	struct aw_chart_ref chart;
	const struct aw_page_ab_row *rows;
	size_t n_rows;
	const char *generated_at;
};

/* Append a whole HTML document to `out`. Every string from the data is HTML-escaped and every
 * link built by aw_chart_path()/aw_page_path() rules for `links`. Return 0, -EINVAL (missing
 * required field: host name, commit sha, compare base), -ENOMEM or -E2BIG (out's limit); on
 * error `out` may hold a partial page. */
int aw_html_overview(struct aw_buf *out, const struct aw_links *links,
                     const struct aw_page_overview *p);
int aw_html_host(struct aw_buf *out, const struct aw_links *links, const struct aw_page_host *p);
int aw_html_commit(struct aw_buf *out, const struct aw_links *links,
                   const struct aw_page_commit *p);
int aw_html_ab(struct aw_buf *out, const struct aw_links *links, const struct aw_page_ab *p);

/* The one HTML escaper: & < > " ' become entities, control characters and invalid UTF-8
 * become U+FFFD; safe in text and in double- or single-quoted attributes. Returns 0 or the
 * buffer's error. */
int aw_html_escape(struct aw_buf *out, const char *s);

/* Percent-encodes every byte outside [A-Za-z0-9._~-] (for a path segment or a query value).
 * Returns 0 or the buffer's error. */
int aw_url_encode(struct aw_buf *out, const char *s);

#endif
