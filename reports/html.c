/* The HTML pages (overview, host, commit, compare) built from plain data structs:
 * no JavaScript, one inline stylesheet allowed by its hash in the Content-Security-Policy, every
 * agent- or CI-provided value through aw_html_escape(), links through one URL builder. */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "aw/sha256.h"

/* The only stylesheet; its SHA-256 is in the CSP, so it must stay byte-for-byte what is sent. */
static const char page_css[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1b1f24;"
    "background:#f6f7f9}"
    "header{background:#1b2a3a;color:#fff;padding:.6em 1.5em;display:flex;gap:1.5em;"
    "align-items:baseline}"
    "header a{color:#fff;text-decoration:none}header .brand{font-weight:700;font-size:1.2em}"
    "main{padding:1em 1.5em;max-width:1400px}"
    "h1{font-size:1.5em;margin:.3em 0 .6em;word-break:break-all}"
    "h2{font-size:1.2em;margin:1.4em 0 .5em;border-bottom:1px solid #d0d7de}"
    "table{border-collapse:collapse;background:#fff;margin:.5em 0}"
    "th,td{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;vertical-align:top}"
    "th{background:#eef1f4}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "code{font-family:ui-monospace,monospace;font-size:.95em;word-break:break-all}"
    ".verdict{display:inline-block;padding:0 .5em;border-radius:3px;font-weight:600}"
    ".v-pass{background:#dafbe1;color:#116329}.v-fail{background:#ffebe9;color:#a40e26}"
    ".v-improved{background:#ddf4ff;color:#0a3069}.v-incomplete{background:#fff8c5;"
    "color:#7d4e00}.v-unknown{background:#eaeef2;color:#57606a}"
    ".v-regressed,.v-failed{background:#ffebe9;color:#a40e26}.v-inconclusive{background:"
    "#fff8c5;color:#7d4e00}.v-host-changed{background:#f3e8ff;color:#6639ba}"
    "tr.levels td{color:#57606a;font-size:.9em;border-top:0;padding-left:2em}"
    ".label{display:inline-block;background:#eaeef2;border-radius:3px;padding:0 .4em;"
    "margin:0 .2em .2em 0;word-break:break-all}"
    "figure.chart{margin:.5em 0 1.2em;background:#fff;border:1px solid #d0d7de;padding:.5em;"
    "display:inline-block;max-width:100%}"
    "figure.chart img{display:block;max-width:100%;height:auto}"
    "figure.chart .pending{width:480px;padding:3em 0;text-align:center;color:#57606a}"
    "figcaption{color:#57606a;font-size:.9em;margin-top:.3em}"
    "section.host{margin-bottom:2em}dl{display:grid;grid-template-columns:max-content auto;"
    "gap:.2em 1em}dt{font-weight:600}dd{margin:0;word-break:break-all}"
    "form{margin:.5em 0}input{font:inherit;padding:.15em .4em;width:22em}"
    "footer{color:#57606a;font-size:.85em;padding:1em 1.5em}"
    "p.empty{color:#57606a;font-style:italic}"
    "p.disturbed{background:#fff8c5;border:1px solid #d4a72c;padding:.3em .6em;"
    "display:inline-block}";

#define CSP_MAX 512

static pthread_once_t csp_once = PTHREAD_ONCE_INIT;
static char csp_header[CSP_MAX + 32];
static char csp_meta[CSP_MAX]; /* without frame-ancestors, which a <meta> cannot carry */

static void base64(const unsigned char *in, size_t len, char *out)
{
	static const char table[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;

	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)in[i] << 16;

		if (i + 1 < len)
			v |= (unsigned)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		out[o++] = table[(v >> 18) & 63];
		out[o++] = table[(v >> 12) & 63];
		out[o++] = i + 1 < len ? table[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < len ? table[v & 63] : '=';
	}
	out[o] = '\0';
}

static void csp_init(void)
{
	unsigned char digest[32];
	char b64[48];

	if (aw_sha256(page_css, sizeof(page_css) - 1, digest) != 0) {
		/* no hash, no inline style: pages still work, unstyled */
		snprintf(b64, sizeof(b64), "%s", "unavailable");
	} else {
		base64(digest, sizeof(digest), b64);
	}
	snprintf(csp_meta, sizeof(csp_meta),
	         "default-src 'none'; img-src 'self'; style-src 'sha256-%s'; form-action 'self'; "
	         "base-uri 'none'",
	         b64);
	snprintf(csp_header, sizeof(csp_header), "%s; frame-ancestors 'none'", csp_meta);
}

const char *aw_html_csp(void)
{
	pthread_once(&csp_once, csp_init);
	return csp_header;
}

/* A gauge in the header's colours. */
static const char favicon_svg[] =
    "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\">"
    "<rect width=\"16\" height=\"16\" rx=\"3\" fill=\"#1b2a3a\"/>"
    "<path d=\"M3 12a5 5 0 0 1 10 0\" fill=\"none\" stroke=\"#fff\" stroke-width=\"1.5\"/>"
    "<path d=\"M8 12l3-4\" stroke=\"#fc8d59\" stroke-width=\"1.5\"/></svg>\n";

const char *aw_html_favicon(size_t *len)
{
	*len = sizeof(favicon_svg) - 1;
	return favicon_svg;
}

int aw_html_escape(struct aw_buf *out, const char *s)
{
	static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	int rc = 0;

	while (*p && !rc) {
		const unsigned char *run = p;
		size_t n;

		/* copy the longest run that needs nothing */
		while (*p && (n = aw_utf8_seq_len(p)) != 0 &&
		       (n > 1 ||
		        (*p >= 0x20 && *p != 0x7f && *p != '&' && *p != '<' && *p != '>' &&
		         *p != '"' && *p != '\'') ||
		        *p == '\t' || *p == '\n'))
			p += n;
		if (p > run)
			rc = aw_buf_append(out, run, (size_t)(p - run));
		if (rc || !*p)
			break;
		switch (*p) {
		case '&':
			rc = aw_buf_puts(out, "&amp;");
			break;
		case '<':
			rc = aw_buf_puts(out, "&lt;");
			break;
		case '>':
			rc = aw_buf_puts(out, "&gt;");
			break;
		case '"':
			rc = aw_buf_puts(out, "&quot;");
			break;
		case '\'':
			rc = aw_buf_puts(out, "&#39;");
			break;
		default: /* control character or invalid UTF-8 byte */
			rc = aw_buf_puts(out, replacement);
			break;
		}
		p++;
	}
	return rc;
}

int aw_url_encode(struct aw_buf *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	int rc = 0;

	for (; *p && !rc; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
			rc = aw_buf_append(out, p, 1);
		} else {
			char enc[3] = {'%', hex[*p >> 4], hex[*p & 15]};

			rc = aw_buf_append(out, enc, 3);
		}
	}
	return rc;
}

/* ---- page building ---- */

/* A page under construction; the first error sticks. `depth` is how many directories below the
 * export root the page's file is (relative links climb that many). */
struct page {
	struct aw_buf *out;
	const struct aw_links *links;
	unsigned depth;
	int rc;
};

static void raw(struct page *pg, const char *text)
{
	if (!pg->rc)
		pg->rc = aw_buf_puts(pg->out, text);
}

__attribute__((format(printf, 2, 3))) static void rawf(struct page *pg, const char *fmt, ...)
{
	va_list ap;

	if (pg->rc)
		return;
	va_start(ap, fmt);
	pg->rc = aw_buf_vprintf(pg->out, fmt, ap);
	va_end(ap);
}

/* Escaped text (NULL and "" shown as `dash` when given). */
static void text(struct page *pg, const char *s)
{
	if (!pg->rc)
		pg->rc = aw_html_escape(pg->out, s);
}

static void text_or(struct page *pg, const char *s, const char *none)
{
	if (s && *s)
		text(pg, s);
	else
		raw(pg, none);
}

static bool served(const struct page *pg)
{
	return pg->links->mode == AW_LINKS_SERVED;
}

/* Writes the start of a link to the site root into `url`: the served prefix, or "../" per
 * level of the current page. */
static int url_root(const struct page *pg, struct aw_buf *url)
{
	int rc = 0;

	if (served(pg))
		return aw_buf_printf(url, "%s/", pg->links->prefix ? pg->links->prefix : "");
	for (unsigned i = 0; i < pg->depth && !rc; i++)
		rc = aw_buf_puts(url, "../");
	return rc;
}

/* The URL of a page, into `url`. */
static int page_url(const struct page *pg, enum aw_page_kind kind, const char *a, const char *b,
                    struct aw_buf *url)
{
	char path[512];
	int rc = url_root(pg, url);

	if (rc)
		return rc;
	if (!served(pg)) {
		rc = aw_page_path(kind, a, b, path, sizeof(path));
		return rc ? rc : aw_buf_puts(url, path);
	}
	switch (kind) {
	case AW_PAGE_OVERVIEW:
		return 0;
	case AW_PAGE_HOST:
	case AW_PAGE_COMMIT:
	case AW_PAGE_AB:
		rc = aw_segment_encode(a, path, sizeof(path));
		if (!rc)
			rc = aw_buf_printf(url, "%s/%s",
			                   kind == AW_PAGE_HOST     ? "hosts"
			                   : kind == AW_PAGE_COMMIT ? "commits"
			                                            : "ab",
			                   path);
		return rc;
	case AW_PAGE_COMPARE:
		if ((rc = aw_buf_puts(url, "compare?base=")) || (rc = aw_url_encode(url, a)) ||
		    (rc = aw_buf_puts(url, "&head=")) || (rc = aw_url_encode(url, b)))
			return rc;
		return 0;
	}
	return -EINVAL;
}

static int chart_url(const struct page *pg, const struct aw_chart_id *id, const char *ext,
                     struct aw_buf *url)
{
	char path[1024];
	int rc = aw_chart_path(id, ext, path, sizeof(path));

	if (!rc)
		rc = url_root(pg, url);
	return rc ? rc : aw_buf_puts(url, path);
}

/* Writes an escaped href/src attribute value from a built URL. */
static void attr_url(struct page *pg, struct aw_buf *url, int rc)
{
	if (!pg->rc && rc)
		pg->rc = rc;
	if (!pg->rc)
		pg->rc = aw_html_escape(pg->out, url->data ? url->data : "");
	aw_buf_release(url);
}

/* <a href="page">escaped label</a>; a page that cannot be named (an empty host name) is shown
 * as plain text. */
static void link_page(struct page *pg, enum aw_page_kind kind, const char *a, const char *b,
                      const char *label)
{
	struct aw_buf url;
	int rc;

	aw_buf_init(&url, 4096);
	rc = page_url(pg, kind, a, b, &url);
	if (rc == -EINVAL || rc == -ENAMETOOLONG) {
		aw_buf_release(&url);
		text(pg, label);
		return;
	}
	raw(pg, "<a href=\"");
	attr_url(pg, &url, rc);
	raw(pg, "\">");
	text(pg, label);
	raw(pg, "</a>");
}

/* A commit id shown short (12 characters) with the full id in its title. */
static void link_commit(struct page *pg, const char *sha)
{
	char shown[13];

	if (!sha || !*sha) {
		raw(pg, "&ndash;");
		return;
	}
	snprintf(shown, sizeof(shown), "%s", sha);
	raw(pg, "<code title=\"");
	text(pg, sha);
	raw(pg, "\">");
	link_page(pg, AW_PAGE_COMMIT, sha, NULL, shown);
	raw(pg, "</code>");
}

static void verdict(struct page *pg, enum aw_verdict v)
{
	const char *name = aw_verdict_name(v);
	char cls[32];

	/* a word of two ("host changed") is one class */
	snprintf(cls, sizeof(cls), "%s", name);
	for (char *c = cls; *c; c++)
		*c = *c == ' ' ? '-' : *c;
	rawf(pg, "<span class=\"verdict v-%s\">%s</span>", cls, name);
}

/* A host's most disturbed head run, as atomwatch-ci's Markdown says it. */
static void disturbance(struct page *pg, const struct aw_page_disturbance *d)
{
	if (!d->run_id)
		return;
	raw(pg, "<p class=\"disturbed\"><strong>Disturbed run:</strong> head run <code>");
	text(pg, d->run_id);
	raw(pg, "</code>");
	if (d->kernel && isfinite(d->ratio) && d->ratio > 0) {
		raw(pg, " (reference ");
		text(pg, d->kernel);
		rawf(pg, " &times;%.3f)", d->ratio);
	}
	raw(pg, " measured while the machine itself was unusually slow or fast; its cells are "
	        "judged against what that reference and the history show.</p>\n");
}

static void ns(struct page *pg, double v)
{
	if (!isfinite(v))
		raw(pg, "&ndash;");
	else if (fabs(v) >= 1000)
		rawf(pg, "%.0f", v);
	else
		rawf(pg, "%.3g", v);
}

static void labels(struct page *pg, const struct aw_kv *kv, size_t n)
{
	if (!n) {
		raw(pg, "&ndash;");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		raw(pg, "<span class=\"label\">");
		text(pg, kv[i].key);
		if (kv[i].value) {
			raw(pg, "=");
			text(pg, kv[i].value);
		}
		raw(pg, "</span>");
	}
}

static void chart(struct page *pg, const struct aw_chart_ref *ref)
{
	struct aw_buf url;
	unsigned width, height;
	int rc;

	aw_chart_size(ref->id.kind, &width, &height);
	if (!ref->ready) {
		raw(pg, "<figure class=\"chart\"><div class=\"pending\">chart not drawn yet</div>");
	} else {
		aw_buf_init(&url, 4096);
		rc = chart_url(pg, &ref->id, "svg", &url);
		raw(pg, "<figure class=\"chart\"><img src=\"");
		attr_url(pg, &url, rc);
		rawf(pg, "\" width=\"%u\" height=\"%u\" alt=\"", width, height);
		text_or(pg, ref->caption, "chart");
		raw(pg, "\">");
	}
	raw(pg, "<figcaption>");
	text_or(pg, ref->caption, "");
	if (ref->ready) {
		aw_buf_init(&url, 4096);
		rc = chart_url(pg, &ref->id, "png", &url);
		raw(pg, ref->caption && *ref->caption ? " &middot; " : "");
		raw(pg, "<a href=\"");
		attr_url(pg, &url, rc);
		raw(pg, "\">PNG</a>");
	}
	raw(pg, "</figcaption></figure>\n");
}

static void head(struct page *pg, const char *title_prefix, const char *title)
{
	struct aw_buf url;
	int rc;

	pthread_once(&csp_once, csp_init);
	raw(pg, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	        "<meta name=\"referrer\" content=\"no-referrer\">\n"
	        "<meta http-equiv=\"Content-Security-Policy\" content=\"");
	text(pg, csp_meta);
	/* our own icon, or the browser asks for /favicon.ico */
	aw_buf_init(&url, 4096);
	rc = url_root(pg, &url);
	if (!rc)
		rc = aw_buf_puts(&url, AW_HTML_FAVICON_PATH);
	raw(pg, "\">\n<link rel=\"icon\" type=\"image/svg+xml\" href=\"");
	attr_url(pg, &url, rc);
	raw(pg, "\">\n<title>");
	raw(pg, title_prefix);
	text(pg, title);
	raw(pg, " &middot; atomwatch</title>\n<style>");
	raw(pg, page_css);
	raw(pg, "</style></head>\n<body><header><span class=\"brand\">");
	link_page(pg, AW_PAGE_OVERVIEW, NULL, NULL, "atomwatch");
	raw(pg, "</span><nav>");
	link_page(pg, AW_PAGE_OVERVIEW, NULL, NULL, "hosts and commits");
	raw(pg, "</nav></header>\n<main>\n");
}

static void foot(struct page *pg, const char *generated_at)
{
	raw(pg, "</main>\n<footer>");
	if (generated_at && *generated_at) {
		raw(pg, "generated ");
		text(pg, generated_at);
	}
	raw(pg, "</footer></body></html>\n");
}

static void lse_cell(struct page *pg, int lse)
{
	raw(pg, lse > 0 ? "yes" : lse == 0 ? "no" : "&ndash;");
}

/* ---- "/" ---- */

static void bisects(struct page *pg, const struct aw_page_bisect *b, size_t n);

int aw_html_overview(struct aw_buf *out, const struct aw_links *links,
                     const struct aw_page_overview *p)
{
	struct page pg = {.out = out, .links = links, .depth = 0};

	head(&pg, "", "overview");
	raw(&pg, "<h1>atomwatch</h1>\n<h2>Hosts</h2>\n");
	if (!p->n_hosts) {
		raw(&pg, "<p class=\"empty\">No host has reported yet.</p>\n");
	} else {
		raw(&pg, "<table class=\"hosts\"><thead><tr><th>Host</th><th>Arch</th>"
		         "<th>CPU model</th><th>CPUs</th><th>LSE</th><th>Labels</th>"
		         "<th>Last run</th><th>Last commit</th><th>Last verdict</th></tr></thead>"
		         "<tbody>\n");
		for (size_t i = 0; i < p->n_hosts; i++) {
			const struct aw_page_host_summary *h = &p->hosts[i];

			raw(&pg, "<tr><td>");
			link_page(&pg, AW_PAGE_HOST, h->name, NULL, h->name);
			raw(&pg, "</td><td>");
			text_or(&pg, h->arch, "&ndash;");
			raw(&pg, "</td><td>");
			text_or(&pg, h->cpu_model, "&ndash;");
			raw(&pg, "</td><td class=\"num\">");
			if (h->cores >= 0)
				rawf(&pg, "%d", h->cores);
			else
				raw(&pg, "&ndash;");
			raw(&pg, "</td><td>");
			lse_cell(&pg, h->lse);
			raw(&pg, "</td><td>");
			labels(&pg, h->labels, h->n_labels);
			raw(&pg, "</td><td>");
			text_or(&pg, h->last_run_at, "never");
			raw(&pg, "</td><td>");
			link_commit(&pg, h->last_commit);
			raw(&pg, "</td><td>");
			verdict(&pg, h->last_verdict);
			raw(&pg, "</td></tr>\n");
		}
		raw(&pg, "</tbody></table>\n");
	}
	if (p->n_bisects) {
		raw(&pg, "<h2>Regressions found by bisection</h2>\n");
		bisects(&pg, p->bisects, p->n_bisects);
	}
	raw(&pg, "<h2>Latest commits</h2>\n");
	if (!p->n_commits) {
		raw(&pg, "<p class=\"empty\">No commit has been measured yet.</p>\n");
	} else {
		raw(&pg, "<table class=\"commits\"><thead><tr><th>Commit</th><th>Ref</th>"
		         "<th>Time</th><th>Hosts</th><th>Verdict</th><th>Against the previous</th>"
		         "</tr></thead><tbody>\n");
		for (size_t i = 0; i < p->n_commits; i++) {
			const struct aw_page_commit_summary *c = &p->commits[i];

			raw(&pg, "<tr><td>");
			link_commit(&pg, c->sha);
			raw(&pg, "</td><td>");
			text_or(&pg, c->ref, "&ndash;");
			raw(&pg, "</td><td>");
			text_or(&pg, c->time, "&ndash;");
			rawf(&pg, "</td><td class=\"num\">%u", c->hosts_reported);
			if (c->hosts_expected)
				rawf(&pg, " of %u", c->hosts_expected);
			raw(&pg, "</td><td>");
			verdict(&pg, c->verdict);
			raw(&pg, "</td><td>");
			/* the list is newest first: the previous commit is the next row */
			if (i + 1 < p->n_commits && c->sha && p->commits[i + 1].sha)
				link_page(&pg, AW_PAGE_COMPARE, p->commits[i + 1].sha, c->sha,
				          "compare");
			else
				raw(&pg, "&ndash;");
			raw(&pg, "</td></tr>\n");
		}
		raw(&pg, "</tbody></table>\n");
	}
	foot(&pg, p->generated_at);
	return pg.rc;
}

/* ---- cells that need a look (the commit and host pages) ---- */

static void change_cell(struct page *pg, const struct aw_page_cell_row *r)
{
	char buf[64];

	text_or(pg, aw_change_text(buf, sizeof(buf), r->base_p50, r->head_p50, NAN, r->absolute),
	        "&ndash;");
}

/* Regressed cells first (they fail the gate), then those the gate cannot vouch for. */
static int look_rank(const struct aw_page_cell_row *r)
{
	if (r->verdict == AW_VERDICT_REGRESSED)
		return 1;
	if (r->verdict == AW_VERDICT_INCONCLUSIVE)
		return 2;
	return 0;
}

/* The line under a cell's row that tells its deciding metric's levels apart, with the note
 * behind its verdict; nothing for a cell without levels. */
static void levels_row(struct page *pg, const struct aw_page_cell_row *r, unsigned columns)
{
	if (!r->levels)
		return;
	rawf(pg, "<tr class=\"levels\"><td colspan=\"%u\">", columns);
	if (r->note) {
		text(pg, r->note);
		raw(pg, " &middot; ");
	}
	text(pg, r->levels);
	raw(pg, "</td></tr>\n");
}

static void look_head(struct page *pg, bool with_host)
{
	raw(pg, "<p>Regressed cells fail the gate; the gate can neither pass nor fail an "
	        "inconclusive one (its change reaches its threshold, its evidence stayed split "
	        "after the re-measurements).</p>\n<table class=\"look\"><thead><tr>");
	raw(pg, with_host ? "<th>Host</th>" : "");
	raw(pg, "<th>Cell</th><th>Baseline p50 (ns)</th><th>Head p50 (ns)</th><th>Change</th>"
	        "<th>Verdict</th></tr></thead><tbody>\n");
}

static void look_row(struct page *pg, const char *host, const struct aw_page_cell_row *r)
{
	raw(pg, "<tr>");
	if (host) {
		raw(pg, "<td>");
		link_page(pg, AW_PAGE_HOST, host, NULL, host);
		raw(pg, "</td>");
	}
	raw(pg, "<td><code>");
	text(pg, r->cell);
	raw(pg, "</code></td><td class=\"num\">");
	ns(pg, r->base_p50);
	raw(pg, "</td><td class=\"num\">");
	ns(pg, r->head_p50);
	raw(pg, "</td><td class=\"num\">");
	change_cell(pg, r);
	raw(pg, "</td><td>");
	verdict(pg, r->verdict);
	raw(pg, "</td></tr>\n");
	levels_row(pg, r, host ? 6 : 5);
}

/* "Needs a look" at the top of the commit page: across its hosts. */
static void commit_look(struct page *pg, const struct aw_page_commit *p)
{
	bool any = false;

	for (int rank = 1; rank <= 2; rank++)
		for (size_t i = 0; i < p->n_hosts; i++)
			for (size_t j = 0; j < p->hosts[i].n_rows; j++) {
				const struct aw_page_cell_row *r = &p->hosts[i].rows[j];

				if (look_rank(r) != rank)
					continue;
				if (!any) {
					raw(pg, "<h2>Needs a look</h2>\n");
					look_head(pg, true);
					any = true;
				}
				look_row(pg, p->hosts[i].host ? p->hosts[i].host : "", r);
			}
	if (any)
		raw(pg, "</tbody></table>\n");
}

/* ---- "/hosts/{name}" ---- */

static const char *kv_find(const struct aw_page_fingerprint *f, const char *key)
{
	for (size_t i = 0; i < f->n_fields; i++) {
		if (f->fields[i].key && strcmp(f->fields[i].key, key) == 0)
			return f->fields[i].value ? f->fields[i].value : "";
	}
	return NULL;
}

/* The fields of `cur` that differ from `prev` (or were added or removed). */
static void fingerprint_diff(struct page *pg, const struct aw_page_fingerprint *prev,
                             const struct aw_page_fingerprint *cur)
{
	bool any = false;

	raw(pg, "<ul>");
	for (size_t i = 0; i < cur->n_fields; i++) {
		const char *key = cur->fields[i].key, *now = cur->fields[i].value;
		const char *before = key ? kv_find(prev, key) : NULL;

		if (!key || (before && strcmp(before, now ? now : "") == 0))
			continue;
		raw(pg, "<li><code>");
		text(pg, key);
		raw(pg, "</code>: ");
		text_or(pg, before, "(none)");
		raw(pg, " &rarr; ");
		text_or(pg, now, "(empty)");
		raw(pg, "</li>");
		any = true;
	}
	for (size_t i = 0; i < prev->n_fields; i++) {
		const char *key = prev->fields[i].key;

		if (!key || kv_find(cur, key))
			continue;
		raw(pg, "<li><code>");
		text(pg, key);
		raw(pg, "</code>: ");
		text_or(pg, prev->fields[i].value, "(empty)");
		raw(pg, " &rarr; (none)</li>");
		any = true;
	}
	if (!any)
		raw(pg, "<li>no field changed</li>");
	raw(pg, "</ul>");
}

int aw_html_host(struct aw_buf *out, const struct aw_links *links, const struct aw_page_host *p)
{
	struct page pg = {.out = out, .links = links, .depth = 2};
	const struct aw_page_host_summary *h = &p->host;

	if (!h->name || !*h->name)
		return -EINVAL;
	head(&pg, "host ", h->name);
	raw(&pg, "<h1>Host ");
	text(&pg, h->name);
	raw(&pg, "</h1>\n<dl class=\"host\"><dt>Arch</dt><dd>");
	text_or(&pg, h->arch, "&ndash;");
	raw(&pg, "</dd><dt>CPU model</dt><dd>");
	text_or(&pg, h->cpu_model, "&ndash;");
	raw(&pg, "</dd><dt>CPUs</dt><dd>");
	if (h->cores >= 0)
		rawf(&pg, "%d", h->cores);
	else
		raw(&pg, "&ndash;");
	raw(&pg, "</dd><dt>LSE</dt><dd>");
	lse_cell(&pg, h->lse);
	raw(&pg, "</dd><dt>Labels</dt><dd>");
	labels(&pg, h->labels, h->n_labels);
	raw(&pg, "</dd><dt>Last run</dt><dd>");
	text_or(&pg, h->last_run_at, "never");
	raw(&pg, "</dd><dt>Last verdict</dt><dd>");
	verdict(&pg, h->last_verdict);
	raw(&pg, "</dd></dl>\n");
	if (p->n_attention) {
		raw(&pg, "<h2>Needs a look at ");
		link_commit(&pg, p->attention_commit);
		raw(&pg, "</h2>\n");
		look_head(&pg, false);
		for (int rank = 1; rank <= 2; rank++)
			for (size_t i = 0; i < p->n_attention; i++)
				if (look_rank(&p->attention[i]) == rank)
					look_row(&pg, NULL, &p->attention[i]);
		raw(&pg, "</tbody></table>\n");
	}
	raw(&pg, "<h2>Trends</h2>\n");
	if (!p->n_trends)
		raw(&pg, "<p class=\"empty\">No trend yet.</p>\n");
	for (size_t i = 0; i < p->n_trends; i++)
		chart(&pg, &p->trends[i]);
	raw(&pg, "<h2>Per CPU</h2>\n");
	if (p->percpu)
		chart(&pg, p->percpu);
	else
		raw(&pg, "<p class=\"empty\">No per-CPU data yet.</p>\n");
	if (p->n_contention) {
		raw(&pg, "<h2>Contention and duty</h2>\n");
		for (size_t i = 0; i < p->n_contention; i++)
			chart(&pg, &p->contention[i]);
	}

	raw(&pg, "<h2>Fingerprint</h2>\n");
	if (!p->n_fingerprints) {
		raw(&pg, "<p class=\"empty\">No fingerprint recorded.</p>\n");
	} else {
		const struct aw_page_fingerprint *cur = &p->fingerprints[p->n_fingerprints - 1];

		raw(&pg, "<table class=\"fingerprint\"><thead><tr><th>Field</th><th>Value</th></tr>"
		         "</thead><tbody>\n");
		for (size_t i = 0; i < cur->n_fields; i++) {
			raw(&pg, "<tr><td><code>");
			text(&pg, cur->fields[i].key);
			raw(&pg, "</code></td><td>");
			text(&pg, cur->fields[i].value);
			raw(&pg, "</td></tr>\n");
		}
		raw(&pg, "</tbody></table>\n<h2>Fingerprint changes</h2>\n"
		         "<table class=\"changes\"><thead><tr><th>First seen</th><th>Last seen</th>"
		         "<th>Platform</th><th>Changes</th></tr></thead><tbody>\n");
		for (size_t i = p->n_fingerprints; i-- > 0;) {
			const struct aw_page_fingerprint *f = &p->fingerprints[i];

			raw(&pg, "<tr><td>");
			text_or(&pg, f->first_seen, "&ndash;");
			raw(&pg, "</td><td>");
			text_or(&pg, f->last_seen, "&ndash;");
			raw(&pg, "</td><td><code>");
			text_or(&pg, f->platform_hash, "&ndash;");
			raw(&pg, "</code></td><td>");
			if (i == 0)
				raw(&pg, "first fingerprint");
			else
				fingerprint_diff(&pg, &p->fingerprints[i - 1], f);
			raw(&pg, "</td></tr>\n");
		}
		raw(&pg, "</tbody></table>\n");
	}

	raw(&pg, "<h2>Recent runs</h2>\n");
	if (!p->n_runs) {
		raw(&pg, "<p class=\"empty\">No run yet.</p>\n");
	} else {
		raw(&pg, "<table class=\"runs\"><thead><tr><th>Started</th><th>Commit</th>"
		         "<th>Ref</th><th>Trigger</th><th>Run</th><th>Verdict</th></tr></thead>"
		         "<tbody>\n");
		for (size_t i = 0; i < p->n_runs; i++) {
			const struct aw_page_run *r = &p->runs[i];

			raw(&pg, "<tr><td>");
			text_or(&pg, r->started_at, "&ndash;");
			raw(&pg, "</td><td>");
			link_commit(&pg, r->commit);
			raw(&pg, "</td><td>");
			text_or(&pg, r->ref, "&ndash;");
			raw(&pg, "</td><td>");
			text_or(&pg, r->trigger, "&ndash;");
			raw(&pg, "</td><td><code>");
			text_or(&pg, r->run_id, "&ndash;");
			raw(&pg, "</code></td><td>");
			verdict(&pg, r->verdict);
			raw(&pg, "</td></tr>\n");
		}
		raw(&pg, "</tbody></table>\n");
	}
	foot(&pg, p->generated_at);
	return pg.rc;
}

/* ---- "/commits/{sha}" and "/compare" ---- */

static void compare_form(struct page *pg, const struct aw_page_commit *p)
{
	struct aw_buf url;
	int rc;

	aw_buf_init(&url, 4096);
	rc = url_root(pg, &url);
	if (!rc)
		rc = aw_buf_puts(&url, "compare");
	raw(pg, "<form method=\"get\" action=\"");
	attr_url(pg, &url, rc);
	raw(pg, "\"><label>base <input name=\"base\" value=\"");
	text(pg, p->base);
	raw(pg,
	    "\" pattern=\"[0-9a-fA-F]{7,64}\" required></label> <label>head <input name=\"head\" "
	    "value=\"");
	text(pg, p->sha);
	raw(pg, "\" pattern=\"[0-9a-fA-F]{7,64}\" required></label> "
	        "<button type=\"submit\">compare</button></form>\n");
}

/* An A/B verdict word (regressed, improved, unchanged, inconclusive, new, missing, failed):
 * the same classes as the analysis' words where they exist. */
static void ab_word(struct page *pg, enum aw_ab_verdict v)
{
	const char *w = aw_ab_verdict_name(v);

	rawf(pg, "<span class=\"verdict v-%s\">", w);
	if (v == AW_AB_VERDICT_UNKNOWN)
		raw(pg, "&ndash;");
	else
		text(pg, w);
	raw(pg, "</span>");
}

/* A ratio as a signed percent change, e.g. "+1.02%". */
static void change_pct(struct page *pg, double ratio)
{
	if (!isfinite(ratio))
		raw(pg, "&ndash;");
	else
		rawf(pg, "%+.2f%%", 100 * (ratio - 1));
}

static void interval_pct(struct page *pg, double lo, double hi)
{
	if (!isfinite(lo) || !isfinite(hi)) {
		raw(pg, "&ndash;");
		return;
	}
	raw(pg, "[");
	change_pct(pg, lo);
	raw(pg, ", ");
	change_pct(pg, hi);
	raw(pg, "]");
}

int aw_html_ab(struct aw_buf *out, const struct aw_links *links, const struct aw_page_ab *p)
{
	struct page pg = {.out = out, .links = links, .depth = 2};

	if (!p->ab_id || !*p->ab_id || !p->base || !p->head)
		return -EINVAL;
	head(&pg, p->aa ? "A/A " : "A/B ", p->ab_id);
	raw(&pg, p->aa ? "<h1>A/A <code>" : "<h1>A/B <code>");
	link_commit(&pg, p->base);
	raw(&pg, "</code> &rarr; <code>");
	link_commit(&pg, p->head);
	raw(&pg, "</code></h1>\n<dl class=\"commit\"><dt>Verdict</dt><dd>");
	ab_word(&pg, p->verdict);
	raw(&pg, "</dd><dt>Subject</dt><dd>");
	text(&pg, p->subject);
	raw(&pg, "</dd><dt>Project</dt><dd>");
	text(&pg, p->project);
	raw(&pg, "</dd><dt>Host</dt><dd>");
	link_page(&pg, AW_PAGE_HOST, p->host, NULL, p->host ? p->host : "");
	if (p->ref) {
		raw(&pg, "</dd><dt>Ref</dt><dd>");
		text(&pg, p->ref);
	}
	raw(&pg, "</dd><dt>Measured</dt><dd>");
	text_or(&pg, p->started_at, "&ndash;");
	raw(&pg, " &ndash; ");
	text_or(&pg, p->finished_at, "&ndash;");
	if (isfinite(p->base_build_s) && isfinite(p->head_build_s))
		rawf(&pg, " (builds: base %.1f s, head %.1f s)", p->base_build_s, p->head_build_s);
	raw(&pg, "</dd><dt>Document</dt><dd><code>");
	text(&pg, p->ab_id);
	raw(&pg, "</code></dd></dl>\n<p>Base and head loaded into one process and measured "
	         "alternately on the same CPU; the A/A rounds measure base against a second "
	         "load of itself, the bias between two loads. The change is head/base with that "
	         "bias removed, its interval the Hodges-Lehmann estimate's Wilcoxon signed-rank "
	         "interval (at the level the sequential test's looks leave each interval); "
	         "alone and shared are the rounds the throughput reference put in each level, "
	         "the layouts' sd how far the loads' layouts disagree on their own (fresh "
	         "loads replace the first every few rounds; in brackets how many layouts); no "
	         "interval is narrower than that spread makes it.</p>\n");
	chart(&pg, &p->chart);
	if (!p->n_rows)
		raw(&pg, "<p class=\"empty\">No cells.</p>\n");
	else
		raw(&pg, "<table class=\"cells\"><thead><tr><th>Cell</th><th>Change</th>"
		         "<th>Interval</th><th>A/A</th><th>A/A interval</th><th>Alone</th>"
		         "<th>Shared</th><th>Layouts' sd</th><th>Threshold</th><th>q</th>"
		         "<th>Rounds</th><th>Seconds</th><th>Verdict</th></tr></thead><tbody>\n");
	for (size_t i = 0; i < p->n_rows; i++) {
		const struct aw_page_ab_row *r = &p->rows[i];

		raw(&pg, "<tr><td><code>");
		text(&pg, r->cell);
		raw(&pg, "</code></td><td class=\"num\">");
		change_pct(&pg, r->ratio);
		raw(&pg, "</td><td class=\"num\">");
		interval_pct(&pg, r->lo, r->hi);
		raw(&pg, "</td><td class=\"num\">");
		change_pct(&pg, r->aa_ratio);
		raw(&pg, "</td><td class=\"num\">");
		interval_pct(&pg, r->aa_lo, r->aa_hi);
		raw(&pg, "</td><td class=\"num\">");
		change_pct(&pg, r->alone);
		raw(&pg, "</td><td class=\"num\">");
		change_pct(&pg, r->shared);
		raw(&pg, "</td><td class=\"num\">");
		if (isfinite(r->loads_sd))
			rawf(&pg, "%.2f%% (%ld)", 100 * r->loads_sd, r->layouts);
		else
			raw(&pg, "&ndash;");
		raw(&pg, "</td><td class=\"num\">");
		if (isfinite(r->threshold))
			rawf(&pg, "%.2f%%", 100 * r->threshold);
		else
			raw(&pg, "&ndash;");
		raw(&pg, "</td><td class=\"num\">");
		if (isfinite(r->q))
			rawf(&pg, "%.2g", r->q);
		else
			raw(&pg, "&ndash;");
		raw(&pg, "</td><td class=\"num\">");
		if (r->rounds > 0)
			rawf(&pg, "%ld", r->rounds);
		else
			raw(&pg, "&ndash;");
		raw(&pg, "</td><td class=\"num\">");
		if (isfinite(r->seconds))
			rawf(&pg, "%.2f", r->seconds);
		else
			raw(&pg, "&ndash;");
		raw(&pg, "</td><td>");
		ab_word(&pg, r->verdict);
		if (r->reason) {
			raw(&pg, " <small>");
			text(&pg, r->reason);
			raw(&pg, "</small>");
		}
		raw(&pg, "</td></tr>\n");
	}
	if (p->n_rows)
		raw(&pg, "</tbody></table>\n");
	foot(&pg, p->generated_at);
	return pg.rc;
}

/* Bisections (docs/api.md "Bisections"): each one's finding, state and progress, and the
 * culprit it named with the change it measured. */
static void bisects(struct page *pg, const struct aw_page_bisect *b, size_t n)
{
	raw(pg, "<table class=\"bisects\"><thead><tr><th>Bisection</th><th>Host</th>"
	        "<th>Range</th><th>State</th><th>Steps</th><th>Culprit</th><th>Change</th>"
	        "</tr></thead><tbody>\n");
	for (size_t i = 0; i < n; i++, b++) {
		rawf(pg, "<tr><td class=\"num\">%lld</td><td>", b->id);
		link_page(pg, AW_PAGE_HOST, b->host, NULL, b->host ? b->host : "");
		if (b->runner && b->host && strcmp(b->runner, b->host)) {
			raw(pg, " (on ");
			text(pg, b->runner);
			raw(pg, ")");
		}
		raw(pg, "</td><td><code>");
		link_commit(pg, b->good);
		raw(pg, "</code>..<code>");
		link_commit(pg, b->bad);
		raw(pg, "</code>");
		if (b->subject) {
			raw(pg, " subject ");
			text(pg, b->subject);
		}
		raw(pg, "</td><td>");
		text_or(pg, b->state, "&ndash;");
		if (b->outcome && b->culprit == NULL) {
			raw(pg, ": ");
			text(pg, b->outcome);
		}
		raw(pg, "</td><td class=\"num\">");
		rawf(pg, "%ld", b->steps_done);
		if (b->expected_steps >= 0)
			rawf(pg, " of ~%ld", b->expected_steps);
		if (!b->culprit && b->range_commits > 0)
			rawf(pg, "; %ld commit%s left", b->range_commits,
			     b->range_commits == 1 ? "" : "s");
		raw(pg, "</td><td>");
		if (b->culprit) {
			raw(pg, "culprit <code>");
			link_commit(pg, b->culprit);
			raw(pg, "</code>");
		} else {
			text_or(pg, b->message, "&ndash;");
		}
		raw(pg, "</td><td class=\"num\">");
		change_pct(pg, b->change);
		raw(pg, " ");
		interval_pct(pg, b->lo, b->hi);
		if (b->cell) {
			raw(pg, " <code>");
			text(pg, b->cell);
			raw(pg, "</code>");
		}
		raw(pg, "</td></tr>\n");
	}
	raw(pg, "</tbody></table>\n");
}

/* The macro check beside a host's micro verdict: each macro cell's change and verdict. */
static void macro_line(struct page *pg, const struct aw_page_host_result *h)
{
	static const char prefix[] = "subject=atomwatch-macro op=";
	bool any = false;

	for (size_t j = 0; j < h->n_rows; j++) {
		const struct aw_page_cell_row *r = &h->rows[j];

		if (!r->cell || strncmp(r->cell, prefix, sizeof(prefix) - 1))
			continue;
		raw(pg, any ? "; " : "<p class=\"macro\">macro check: ");
		any = true;
		text(pg, r->cell + sizeof(prefix) - 1);
		if (isfinite(r->head_p50))
			rawf(pg, " %.3f s", r->head_p50 / 1e9);
		if (isfinite(r->base_p50) && isfinite(r->head_p50) && r->base_p50 > 0)
			rawf(pg, " (%+.1f%% against %.3f s)", 100 * (r->head_p50 / r->base_p50 - 1),
			     r->base_p50 / 1e9);
		raw(pg, " ");
		verdict(pg, r->verdict);
	}
	if (any)
		raw(pg, "</p>\n");
}

int aw_html_commit(struct aw_buf *out, const struct aw_links *links, const struct aw_page_commit *p)
{
	bool compare = p->base != NULL, gross;
	struct page pg = {.out = out, .links = links, .depth = compare ? 3 : 2};

	if (!p->sha || !*p->sha || (compare && !*p->base))
		return -EINVAL;
	if (compare) {
		char title[160];

		snprintf(title, sizeof(title), "%.64s vs %.64s", p->sha, p->base);
		head(&pg, "compare ", title);
		raw(&pg, "<h1>Compare <code>");
		link_commit(&pg, p->base);
		raw(&pg, "</code> &rarr; <code>");
		link_commit(&pg, p->sha);
		raw(&pg, "</code></h1>\n");
		if (served(&pg))
			compare_form(&pg, p);
	} else {
		head(&pg, "commit ", p->sha);
		raw(&pg, "<h1>Commit <code>");
		text(&pg, p->sha);
		raw(&pg, "</code></h1>\n");
	}
	raw(&pg, "<dl class=\"commit\">");
	if (p->ref) {
		raw(&pg, "<dt>Ref</dt><dd>");
		text(&pg, p->ref);
		raw(&pg, "</dd>");
	}
	if (!compare && p->baseline_ref) {
		raw(&pg, "<dt>Baseline</dt><dd>");
		text(&pg, p->baseline_ref);
		raw(&pg, "</dd>");
	}
	raw(&pg, "<dt>Verdict</dt><dd>");
	verdict(&pg, p->verdict);
	raw(&pg, "</dd></dl>\n");
	commit_look(&pg, p);

	if (p->n_ab) {
		raw(&pg, "<h2>Interleaved A/B</h2>\n<ul class=\"ab\">");
		for (size_t i = 0; i < p->n_ab; i++) {
			const struct aw_page_ab_link *l = &p->ab[i];

			raw(&pg, "<li>");
			link_page(&pg, AW_PAGE_AB, l->ab_id, NULL, l->aa ? "A/A" : "A/B");
			raw(&pg, " against <code>");
			text(&pg, l->base);
			raw(&pg, "</code> ");
			ab_word(&pg, l->verdict);
			raw(&pg, "</li>");
		}
		raw(&pg, "</ul>\n");
	}
	if (p->n_bisects) {
		raw(&pg, "<h2>Bisection</h2>\n");
		bisects(&pg, p->bisects, p->n_bisects);
	}
	raw(&pg, "<h2>Across hosts</h2>\n");
	if (p->heatmap)
		chart(&pg, p->heatmap);
	else
		raw(&pg, "<p class=\"empty\">No cross-host view yet.</p>\n");

	if (!p->n_hosts)
		raw(&pg, "<p class=\"empty\">No host has reported this commit yet.</p>\n");
	for (size_t i = 0; i < p->n_hosts; i++) {
		const struct aw_page_host_result *h = &p->hosts[i];

		raw(&pg, "<section class=\"host\"><h2>");
		link_page(&pg, AW_PAGE_HOST, h->host, NULL, h->host ? h->host : "");
		raw(&pg, " ");
		verdict(&pg, h->verdict);
		raw(&pg, "</h2>\n");
		if (h->baseline) {
			raw(&pg, "<p>compared with ");
			text(&pg, h->baseline);
			raw(&pg, "</p>\n");
		}
		disturbance(&pg, &h->disturbed);
		macro_line(&pg, h);
		chart(&pg, &h->chart);
		gross = false;
		for (size_t j = 0; j < h->n_rows && !gross; j++)
			gross = isfinite(h->rows[j].head_gross);
		if (!h->n_rows) {
			raw(&pg, "<p class=\"empty\">No cells.</p>\n");
		} else {
			raw(&pg, "<table class=\"cells\"><thead><tr><th>Cell</th>"
			         "<th>Baseline p50 (ns)</th><th>Head p50 (ns)</th><th>Change</th>"
			         "<th>Verdict</th>");
			raw(&pg, gross ? "<th title=\"a duty cell's head p50 plus its duty's own "
			                 "time: the op and the duty together\">Head gross per "
			                 "iteration (ns)</th>"
			               : "");
			raw(&pg, "</tr></thead><tbody>\n");
		}
		for (size_t j = 0; j < h->n_rows; j++) {
			const struct aw_page_cell_row *r = &h->rows[j];

			raw(&pg, "<tr><td><code>");
			text(&pg, r->cell);
			raw(&pg, "</code></td><td class=\"num\">");
			ns(&pg, r->base_p50);
			raw(&pg, "</td><td class=\"num\">");
			ns(&pg, r->head_p50);
			raw(&pg, "</td><td class=\"num\">");
			change_cell(&pg, r);
			raw(&pg, "</td><td>");
			verdict(&pg, r->verdict);
			if (gross) {
				raw(&pg, "</td><td class=\"num\">");
				ns(&pg, r->head_gross);
			}
			raw(&pg, "</td></tr>\n");
			levels_row(&pg, r, gross ? 6 : 5);
		}
		if (h->n_rows)
			raw(&pg, "</tbody></table>\n");
		raw(&pg, "</section>\n");
	}
	foot(&pg, p->generated_at);
	return pg.rc;
}
