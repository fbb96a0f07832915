/* The HTML side of the collector: the report pages (built by pages.h from stored data and
 * cached verdicts, never drawing or judging on the request path), the chart files under the
 * data dir, and the site's icon. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aw/buf.h"
#include "chart_cache.h"
#include "internal.h"
#include "pages.h"
#include "postingest.h"

#define PAGE_LIMIT (64u << 20) /* bytes of one page */

/* Images only, no script, no style sheet: an SVG opened on its own is shown and runs nothing. */
#define CHART_CSP "default-src 'none'; style-src 'unsafe-inline'; sandbox"

static bool served_chart_ready(const struct aw_chart_id *id, void *cls)
{
	struct aw_ctx *x = cls;
	struct store_conn *c = NULL;

	/* drawn here or by another collector: in this one's cache, or in the database */
	if (aw_ctx_conn(x, &c))
		c = NULL;
	if (aw_draw_chart_ready(x->col->charts, c, id))
		return true;
	/* Only the overview's pairs are drawn after ingest: a compare page asks for its own, which
	 * shows on a reload. Queuing never blocks and merges repeated asks. */
	if (id->kind == AW_CHART_COMPARE && x->col->postingest && aw_valid_commit(id->base))
		aw_postingest_push_chart(x->col->postingest, id);
	return false;
}

static void reply_page(struct aw_ctx *x, aw_site_page_fn build, const char *a, const char *b,
                       const char *what)
{
	const struct aw_links links = {AW_LINKS_SERVED, NULL};
	struct aw_site site = {.links = &links,
	                       .data_dir = x->col->cfg->data_dir,
	                       .baseline_ref = x->col->analysis.baseline_ref,
	                       .chart_ready = served_chart_ready,
	                       .cls = x};
	struct aw_buf page;
	size_t len;
	int rc;

	aw_buf_init(&page, PAGE_LIMIT);
	rc = aw_ctx_conn(x, &site.conn);
	if (!rc)
		rc = build(&site, a, b, &page);
	switch (rc) {
	case 0:
		len = page.len;
		aw_httpd_add_header(x->req, "Content-Security-Policy", aw_html_csp());
		aw_httpd_add_header(x->req, "X-Content-Type-Options", "nosniff");
		aw_httpd_add_header(x->req, "Cache-Control", "no-cache");
		aw_httpd_reply(x->req, 200, "text/html; charset=utf-8", aw_buf_detach(&page), len);
		break;
	case -ENOENT:
		aw_reply_error(x->req, 404, "not_found", "", "no %s '%.80s'", what, a ? a : "");
		break;
	case -EINVAL:
		aw_reply_error(x->req, 400, "invalid", "", "'%.80s' is not a valid %s", a ? a : "",
		               what);
		break;
	case -E2BIG:
		aw_reply_error(x->req, 500, "internal", "", "the page is too large");
		break;
	case -ENOMEM:
		aw_reply_error(x->req, 500, "internal", "", "out of memory");
		break;
	default:
		aw_reply_store_error(x->req, rc);
		break;
	}
	aw_buf_release(&page);
}

void aw_web_overview(struct aw_ctx *x)
{
	reply_page(x, aw_site_overview_page, NULL, NULL, "page");
}

void aw_web_host(struct aw_ctx *x)
{
	char name[AW_NAME_MAX + 1];

	/* the segment as pages link it (aw_segment_encode); valid names map to themselves */
	if (aw_segment_decode(x->param, name, sizeof(name)) || !aw_valid_name(name)) {
		aw_reply_error(x->req, 400, "invalid", "name",
		               "host names are 1 to 64 characters from [A-Za-z0-9._-]");
		return;
	}
	reply_page(x, aw_site_host_page, name, NULL, "host");
}

void aw_web_commit(struct aw_ctx *x)
{
	reply_page(x, aw_site_commit_page, x->param, NULL, "commit");
}

void aw_web_ab(struct aw_ctx *x)
{
	reply_page(x, aw_site_ab_page, x->param, NULL, "A/B document");
}

void aw_web_compare(struct aw_ctx *x)
{
	const char *base = aw_httpd_query(x->req, "base"), *head = aw_httpd_query(x->req, "head");

	if (!base || !head || !aw_valid_commit(base) || !aw_valid_commit(head)) {
		aw_reply_error(x->req, 400, "invalid",
		               base && aw_valid_commit(base) ? "head" : "base",
		               "'base' and 'head' must be commit ids (7 to 64 hex digits)");
		return;
	}
	reply_page(x, aw_site_compare, base, head, "commit");
}

void aw_web_chart(struct aw_ctx *x)
{
	char rel[1100];
	struct store_conn *c = NULL;
	bool svg;
	char *data = NULL;
	size_t len = 0;
	int rc;

	/* x->param is what follows "/charts/", already percent-decoded */
	if (snprintf(rel, sizeof(rel), "charts/%s", x->param) >= (int)sizeof(rel) ||
	    !aw_chart_path_servable(rel)) {
		aw_reply_error(x->req, 404, "not_found", "", "no such chart");
		return;
	}
	/* the database's copy when this collector's cache has none, or an older one */
	if (!aw_ctx_conn(x, &c))
		aw_chart_cache_refresh(x->col->charts, c, rel);
	rc = aw_chart_read_file(x->col->cfg->data_dir, rel, &data, &len);
	if (rc == -ENOENT || rc == -ELOOP || rc == -ENOTDIR || rc == -EXDEV) {
		aw_reply_error(x->req, 404, "not_found", "", "no such chart (not drawn yet?)");
		return;
	}
	if (rc) {
		aw_reply_error(x->req, 500, "internal", "", "cannot read the chart: %s",
		               strerror(-rc));
		return;
	}
	svg = !strcmp(rel + strlen(rel) - 4, ".svg");
	if (svg)
		aw_httpd_add_header(x->req, "Content-Security-Policy", CHART_CSP);
	aw_httpd_add_header(x->req, "X-Content-Type-Options", "nosniff");
	aw_httpd_add_header(x->req, "Cache-Control", "no-cache");
	aw_httpd_reply(x->req, 200, svg ? "image/svg+xml" : "image/png", data, len);
}

void aw_web_favicon(struct aw_ctx *x)
{
	size_t len;
	const char *icon = aw_html_favicon(&len);
	char *copy = malloc(len);

	if (!copy) {
		aw_reply_error(x->req, 500, "internal", "", "out of memory");
		return;
	}
	memcpy(copy, icon, len);
	aw_httpd_add_header(x->req, "X-Content-Type-Options", "nosniff");
	aw_httpd_add_header(x->req, "Cache-Control", "max-age=86400");
	aw_httpd_reply(x->req, 200, "image/svg+xml", copy, len);
}
