/* The report pages built from the store: what the collector serves at /, /hosts/{name},
 * /commits/{sha} and /compare, and what `atomwatch-collector export` writes. A page reads only
 * what is stored (runs, hosts, cached verdicts) and which chart files exist; it never draws a
 * chart or judges a commit.
 *
 * Conventions: int functions return 0 or a negative errno (-ENOENT: no such host or commit,
 * -EINVAL: a bad name, a store error, or the buffer's -ENOMEM / -E2BIG). */
#ifndef AW_COLLECTOR_PAGES_H
#define AW_COLLECTOR_PAGES_H

#include <stdbool.h>
#include <stddef.h>

#include "aw/arena.h"
#include "aw/buf.h"
#include "reports.h"
#include "store.h"

/* How many commits the overview lists. */
#define AW_OVERVIEW_COMMITS 30

/* Where a page's data comes from and how it links; everything is borrowed. */
struct aw_site {
	struct store_conn *conn;
	const struct aw_links *links;
	const char *data_dir;     /* chart files are looked for under it */
	const char *baseline_ref; /* what commit pages compare with */
	/* Whether chart `id` can be shown; NULL: whether its SVG and PNG exist in data_dir. */
	bool (*chart_ready)(const struct aw_chart_id *id, void *cls);
	void *cls;
};

/* Whether both files of chart `id` exist under `data_dir` (stat only). */
bool aw_site_chart_exists(const char *data_dir, const struct aw_chart_id *id);

/* A commit as the overview lists it. */
struct aw_recent_commit {
	const char *sha, *ref, *time;
	unsigned hosts; /* hosts with a run of it among the newest AW_RECENT_RUNS runs */
};

/* The overview's commits (at most `max`, newest first by their newest run), copied into `a`.
 * Returns 0 or a store error. */
int aw_site_recent_commits(struct store_conn *c, struct aw_arena *a, size_t max,
                           struct aw_recent_commit **out, size_t *n);

/* Append the whole page to `out`. */
int aw_site_overview(const struct aw_site *s, struct aw_buf *out);
int aw_site_host(const struct aw_site *s, const char *host, struct aw_buf *out);
int aw_site_commit(const struct aw_site *s, const char *commit, struct aw_buf *out);
int aw_site_compare(const struct aw_site *s, const char *base, const char *head,
                    struct aw_buf *out);

/* Every page under one signature, for the HTTP routes and the export: `a` and `b` are the
 * page's parameters (a host, a commit, or base and head for aw_site_compare; NULL where the page
 * takes none). */
typedef int (*aw_site_page_fn)(const struct aw_site *s, const char *a, const char *b,
                               struct aw_buf *out);
int aw_site_overview_page(const struct aw_site *s, const char *a, const char *b,
                          struct aw_buf *out);
int aw_site_host_page(const struct aw_site *s, const char *a, const char *b, struct aw_buf *out);
int aw_site_commit_page(const struct aw_site *s, const char *a, const char *b, struct aw_buf *out);
/* "/ab/{id}": an interleaved A/B document, its judgment and its chart (-ENOENT: unknown id,
 * -EINVAL: not a UUID). */
int aw_site_ab(const struct aw_site *s, const char *ab_id, struct aw_buf *out);
int aw_site_ab_page(const struct aw_site *s, const char *a, const char *b, struct aw_buf *out);

#endif
