/* `atomwatch-collector render` and `export` (see export.h): the post-ingest work of one commit
 * done on demand, and the page builders of pages.h with export links, each chart a page shows
 * taken from the database (or drawn from the store) before the page is written. */
#include "export.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/log.h"
#include "aw/strmap.h"
#include "aw/util.h"
#include "pages.h"
#include "postingest.h"

#define PAGE_LIMIT  (64u << 20)
#define ARENA_LIMIT (256u << 20)
#define RUNS_PAGE   10000   /* runs read per query while listing every commit */
#define COMMITS_MAX 1000000 /* distinct commits an export may hold */
#define HOSTS_MAX   100000

struct host_run {
	const char *project, *host, *ref;
};

struct commit_hosts {
	struct aw_arena *a;
	struct aw_strmap *seen;
	struct host_run *v;
	size_t n, cap;
};

static int on_commit_run(const struct store_run *r, void *cls)
{
	struct commit_hosts *l = cls;
	struct host_run *x;
	int64_t one;

	if (!aw_strmap_get(l->seen, r->host, &one))
		return 0; /* an older run of a host already listed */
	x = aw_arena_push(l->a, &l->v, &l->n, &l->cap, sizeof(*x));
	if (!x)
		return l->a->rc;
	x->project = aw_arena_strdup(l->a, r->project);
	x->host = aw_arena_strdup(l->a, r->host);
	x->ref = aw_arena_strdup(l->a, r->ref);
	return l->a->rc ? l->a->rc : aw_strmap_put(l->seen, r->host, 1);
}

static void add_counts(struct aw_export_stats *st, const struct aw_draw *d)
{
	st->drawn += d->drawn;
	st->cached += d->cached;
	st->failed += d->failed;
}

int aw_export_commit(struct store_conn *c, struct aw_gnuplot *gp, const char *data_dir,
                     const struct aw_analysis_opts *analysis, const char *project,
                     const char *commit, struct aw_export_stats *st, char **err)
{
	struct store_run_filter f = {.project = project, .commit = commit, .limit = RUNS_PAGE};
	struct aw_chart_cache *cache = NULL;
	struct aw_arena a;
	struct commit_hosts hosts = {.a = &a};
	char *first_err = NULL;
	int rc, first = 0;

	memset(st, 0, sizeof(*st));
	aw_arena_init(&a, ARENA_LIMIT);
	hosts.seen = aw_strmap_new(HOSTS_MAX);
	/* what is drawn is stored in the database for every collector, as the workers do; the
	 * files stay in data_dir, which is no cache to bound */
	rc = aw_chart_cache_new(data_dir, 0, false, &cache, err);
	if (rc)
		goto out;
	rc = hosts.seen ? store_list_runs(c, &f, on_commit_run, &hosts) : -ENOMEM;
	if (rc) {
		aw_errorf(err, rc, "cannot list the runs of '%s': %s", commit, strerror(-rc));
		goto out;
	}
	if (!hosts.n) {
		rc = aw_errorf(err, -ENOENT, "no run of commit '%s'%s%s", commit,
		               project ? " in project " : "", project ? project : "");
		goto out;
	}
	for (size_t i = 0; i < hosts.n; i++) {
		struct aw_draw d = {.conn = c,
		                    .gp = gp,
		                    .data_dir = data_dir,
		                    .analysis = analysis,
		                    .publish = cache};
		char *one_err = NULL;

		rc = aw_postingest_after_ingest(&d, hosts.v[i].project, commit, hosts.v[i].host,
		                                hosts.v[i].ref, &one_err);
		if (rc && !first) {
			first = rc;
			first_err = one_err;
			one_err = NULL;
		}
		free(one_err);
		d.project = hosts.v[i].project;
		rc = aw_draw_trends(&d, hosts.v[i].host, hosts.v[i].ref, &one_err);
		if (rc && !first) {
			first = rc;
			first_err = one_err;
			one_err = NULL;
		}
		free(one_err);
		if (d.store_rc && !first) {
			first = d.store_rc;
			aw_errorf(&first_err, first, "cannot store the charts of '%s' on '%s': %s",
			          commit, hosts.v[i].host, strerror(-first));
		}
		add_counts(st, &d);
		st->hosts++;
	}
	rc = first;
	*err = first_err;
	first_err = NULL;
out:
	free(first_err);
	aw_chart_cache_free(&cache);
	aw_strmap_free(&hosts.seen);
	aw_arena_release(&a);
	return rc;
}

/* ---- export ---- */

struct exporter {
	struct store_conn *conn;
	const char *out_dir;
	struct aw_draw draw;
	struct aw_export_stats *st;
};

/* Charts come from the database, where the workers stored them, as the export's pages ask for
 * them; one that is not there is drawn into the export. */
static bool export_chart_ready(const struct aw_chart_id *id, void *cls)
{
	struct exporter *x = cls;
	char *err = NULL;
	int rc = aw_draw_fetch_chart(x->conn, id, x->out_dir, &err);

	if (!rc) {
		x->st->fetched++;
		return true;
	}
	if (rc != -ENOENT)
		aw_warn("export: %s", err ? err : strerror(-rc));
	aw_freep(&err);
	if (!x->draw.gp)
		return false; /* shown as pending */
	rc = aw_draw_chart(&x->draw, id, &err);

	if (rc < 0)
		aw_warn("export: %s", err ? err : strerror(-rc));
	free(err);
	return rc >= 0;
}

static int write_file(struct exporter *x, const char *rel, const void *data, size_t len, char **err)
{
	char path[PATH_MAX];
	char *slash;
	int rc;

	if (snprintf(path, sizeof(path), "%s/%s", x->out_dir, rel) >= (int)sizeof(path))
		return aw_errorf(err, -ENAMETOOLONG, "path too long: '%s/%s'", x->out_dir, rel);
	slash = strrchr(path, '/');
	*slash = '\0';
	rc = aw_make_dirs(path, 0755); /* a file server reads them */
	*slash = '/';
	if (rc)
		return aw_errorf(err, rc, "cannot create the directory of '%s': %s", path,
		                 strerror(-rc));
	return aw_write_file_atomic(path, data, len, err);
}

static int export_page(struct exporter *x, const struct aw_site *site, aw_site_page_fn build,
                       enum aw_page_kind kind, const char *a, const char *b, char **err)
{
	char rel[1024];
	struct aw_buf page;
	int rc;

	rc = aw_page_path(kind, a, b, rel, sizeof(rel));
	if (rc)
		return aw_errorf(err, rc, "cannot name the page of '%s': %s", a ? a : "index",
		                 strerror(-rc));
	aw_buf_init(&page, PAGE_LIMIT);
	rc = build(site, a, b, &page);
	if (rc)
		aw_errorf(err, rc, "cannot build '%s': %s", rel, strerror(-rc));
	else
		rc = write_file(x, rel, page.data, page.len, err);
	if (!rc)
		x->st->pages++;
	aw_buf_release(&page);
	return rc;
}

struct names {
	struct aw_arena *a;
	struct aw_strmap *seen;
	const char **v;
	size_t n, cap;
	int64_t last_seq;
	unsigned rows;
};

static int add_name(struct names *l, const char *name)
{
	const char **slot;
	int64_t one;

	if (!name || !aw_strmap_get(l->seen, name, &one))
		return 0;
	slot = aw_arena_push(l->a, &l->v, &l->n, &l->cap, sizeof(*slot));
	if (!slot)
		return l->a->rc;
	*slot = aw_arena_strdup(l->a, name);
	return l->a->rc ? l->a->rc : aw_strmap_put(l->seen, name, 1);
}

static int on_any_run(const struct store_run *r, void *cls)
{
	struct names *l = cls;

	l->last_seq = r->seq;
	l->rows++;
	return add_name(l, r->commit);
}

static int on_any_host(const struct store_host *h, void *cls)
{
	return add_name(cls, h->name);
}

int aw_export_site(struct store_conn *c, struct aw_gnuplot *gp, const char *out_dir,
                   const char *baseline_ref, struct aw_export_stats *st, char **err)
{
	const struct aw_links links = {AW_LINKS_EXPORT, NULL};
	struct exporter x = {.conn = c,
	                     .out_dir = out_dir,
	                     .draw = {.conn = c, .gp = gp, .data_dir = out_dir},
	                     .st = st};
	const struct aw_site site = {.conn = c,
	                             .links = &links,
	                             .data_dir = out_dir,
	                             .baseline_ref = baseline_ref,
	                             .chart_ready = export_chart_ready,
	                             .cls = &x};
	struct aw_arena a;
	struct names hosts = {.a = &a}, commits = {.a = &a};
	struct aw_recent_commit *recent = NULL;
	size_t n_recent = 0, len;
	const char *icon;
	int rc;

	memset(st, 0, sizeof(*st));
	aw_arena_init(&a, ARENA_LIMIT);
	hosts.seen = aw_strmap_new(HOSTS_MAX);
	commits.seen = aw_strmap_new(COMMITS_MAX);
	rc = aw_make_dirs(out_dir, 0755);
	if (rc) {
		aw_errorf(err, rc, "cannot create '%s': %s", out_dir, strerror(-rc));
		goto out;
	}
	if (!hosts.seen || !commits.seen) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	/* every host and every commit, newest first */
	rc = store_list_hosts(c, on_any_host, &hosts);
	for (int64_t before = 0; !rc;) {
		struct store_run_filter f = {.before_seq = before, .limit = RUNS_PAGE};

		commits.rows = 0;
		rc = store_list_runs(c, &f, on_any_run, &commits);
		if (commits.rows < RUNS_PAGE)
			break;
		before = commits.last_seq;
	}
	if (!rc)
		rc = aw_site_recent_commits(c, &a, AW_OVERVIEW_COMMITS, &recent, &n_recent);
	if (rc) {
		aw_errorf(err, rc, "cannot list what to export: %s", strerror(-rc));
		goto out;
	}
	rc = export_page(&x, &site, aw_site_overview_page, AW_PAGE_OVERVIEW, NULL, NULL, err);
	for (size_t i = 0; !rc && i < hosts.n; i++)
		rc = export_page(&x, &site, aw_site_host_page, AW_PAGE_HOST, hosts.v[i], NULL, err);
	for (size_t i = 0; !rc && i < commits.n; i++)
		rc = export_page(&x, &site, aw_site_commit_page, AW_PAGE_COMMIT, commits.v[i], NULL,
		                 err);
	/* the overview links each commit to the one listed after it */
	for (size_t i = 0; !rc && i + 1 < n_recent; i++)
		rc = export_page(&x, &site, aw_site_compare, AW_PAGE_COMPARE, recent[i + 1].sha,
		                 recent[i].sha, err);
	icon = aw_html_favicon(&len);
	if (!rc)
		rc = write_file(&x, AW_HTML_FAVICON_PATH, icon, len, err);
	st->hosts = (unsigned)hosts.n;
out:
	add_counts(st, &x.draw);
	aw_strmap_free(&hosts.seen);
	aw_strmap_free(&commits.seen);
	aw_arena_release(&a);
	return rc;
}
