/* Unit tests of the HTML pages: escaping of every agent-provided value in text and attributes,
 * links in served and exported mode, chart references that match aw_chart_path(), a CSP whose
 * style hash matches the inline stylesheet, and no script or external fetch anywhere. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aw/sha256.h"
#include "reports.h"

#define HOSTILE   "<script>alert(1)</script>\"'&"
#define HOSTILE_E "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"
#define ATTRY     "a\" onmouseover=\"alert(2)"

static const struct aw_kv labels[] = {{"rack", HOSTILE}, {"role", "ci"}};

static const struct aw_page_host_summary hosts[] = {
    {"graviton4", "aarch64", "Neoverse-V2 " HOSTILE, 96, 1, labels, 2, "2026-11-29T10:00:00Z",
     "abc1234def", AW_VERDICT_FAIL},
    {ATTRY, "x86_64", NULL, -1, -1, NULL, 0, NULL, NULL, AW_VERDICT_UNKNOWN},
    {"..", "x86_64", "EPYC", 2, -1, NULL, 0, NULL, NULL, AW_VERDICT_PASS},
};

static const struct aw_page_commit_summary commits[] = {
    {"abc1234def", "main", "2026-11-29T09:00:00Z", 2, 3, AW_VERDICT_FAIL},
    {"0123456789", HOSTILE, NULL, 1, 0, AW_VERDICT_PASS},
};

static const struct aw_page_overview overview = {hosts, 3, commits, 2, "2026-11-29T10:01:00Z",
                                                 NULL,  0};

static char *overview_html(const struct aw_links *links)
{
	struct aw_buf b;

	aw_buf_init(&b, 1 << 20);
	assert_int_equal(aw_html_overview(&b, links, &overview), 0);
	return aw_buf_detach(&b);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

#define assert_contains(hay, needle)                           \
	do {                                                   \
		if (!strstr((hay), (needle)))                  \
			fail_msg("page lacks '%s'", (needle)); \
	} while (0)

/* What every page must be: no script, no inline event handler from data, nothing fetched
 * from elsewhere, the hostile strings only in escaped form. */
static void assert_safe_page(const char *html)
{
	assert_null(strstr(html, "<script"));
	assert_null(strstr(html, "<SCRIPT"));
	assert_null(strstr(html, "\" onmouseover"));
	assert_null(strstr(html, "http:"));
	assert_null(strstr(html, "https:"));
	assert_null(strstr(html, "src=\"//"));
	assert_null(strstr(html, "href=\"//"));
	assert_null(strstr(html, "url("));
	assert_null(strstr(html, "style=\""));
	assert_true(strncmp(html, "<!DOCTYPE html>", 15) == 0);
	assert_contains(html, "</html>\n");
}

static void base64(const unsigned char *in, size_t len, char *out)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0, i = 0;

	for (; i + 2 < len; i += 3) {
		out[o++] = t[in[i] >> 2];
		out[o++] = t[((in[i] & 3) << 4) | (in[i + 1] >> 4)];
		out[o++] = t[((in[i + 1] & 15) << 2) | (in[i + 2] >> 6)];
		out[o++] = t[in[i + 2] & 63];
	}
	if (len - i == 2) {
		out[o++] = t[in[i] >> 2];
		out[o++] = t[((in[i] & 3) << 4) | (in[i + 1] >> 4)];
		out[o++] = t[(in[i + 1] & 15) << 2];
		out[o++] = '=';
	} else if (len - i == 1) {
		out[o++] = t[in[i] >> 2];
		out[o++] = t[(in[i] & 3) << 4];
		out[o++] = '=';
		out[o++] = '=';
	}
	out[o] = '\0';
}

static void test_overview_served(void **state)
{
	const struct aw_links links = {AW_LINKS_SERVED, ""};
	char *html = overview_html(&links);

	(void)state;
	assert_safe_page(html);
	assert_contains(html, "<a href=\"/hosts/graviton4\">graviton4</a>");
	/* a name an attacker chose: encoded in the link, escaped in the text */
	assert_contains(html, "<a href=\"/hosts/a~22~20onmouseover~3D~22alert~282~29\">"
	                      "a&quot; onmouseover=&quot;alert(2)</a>");
	/* a host named ".." cannot make a link climb */
	assert_contains(html, "<a href=\"/hosts/~2E.\">..</a>");
	assert_contains(html, "<span class=\"label\">rack=" HOSTILE_E "</span>");
	assert_contains(html, "Neoverse-V2 " HOSTILE_E);
	assert_contains(html, "<td>" HOSTILE_E "</td>");
	assert_contains(html,
	                "<code title=\"abc1234def\"><a href=\"/commits/abc1234def\">abc1234def"
	                "</a></code>");
	assert_contains(html, "<span class=\"verdict v-fail\">fail</span>");
	assert_contains(html, "2 of 3");
	/* header + 3 hosts, header + 2 commits */
	assert_int_equal(count(html, "<tr>"), 4 + 3);
	/* the first commit against the second; the last has none */
	assert_contains(html, "<a href=\"/compare?base=0123456789&amp;head=abc1234def\">compare</a>"
	                      "</td></tr>");
	assert_int_equal(count(html, ">compare</a>"), 1);
	assert_contains(html, "<td class=\"num\">96</td><td>yes</td>");
	free(html);

	/* under a prefix */
	const struct aw_links prefixed = {AW_LINKS_SERVED, "/aw"};
	html = overview_html(&prefixed);
	assert_contains(html, "<a href=\"/aw/hosts/graviton4\">");
	assert_contains(html, "<a href=\"/aw/\">atomwatch</a>");
	assert_contains(html,
	                "<link rel=\"icon\" type=\"image/svg+xml\" href=\"/aw/favicon.svg\">");
	free(html);
}

static void test_overview_export(void **state)
{
	const struct aw_links links = {AW_LINKS_EXPORT, "/ignored"};
	char *html = overview_html(&links);

	(void)state;
	assert_safe_page(html);
	assert_contains(html, "<a href=\"hosts/graviton4/index.html\">graviton4</a>");
	assert_contains(html, "<a href=\"hosts/~2E./index.html\">..</a>");
	assert_contains(html, "<a href=\"commits/abc1234def/index.html\">");
	assert_contains(html, "<a href=\"index.html\">atomwatch</a>");
	assert_contains(html, "<a href=\"compare/0123456789/abc1234def/index.html\">compare</a>");
	assert_null(strstr(html, "/ignored"));
	assert_null(strstr(html, "href=\"/"));
	free(html);
}

static void test_csp_matches_style(void **state)
{
	const struct aw_links links = {AW_LINKS_SERVED, ""};
	char *html = overview_html(&links);
	const char *start = strstr(html, "<style>"), *end = strstr(html, "</style>");
	unsigned char digest[32];
	char b64[64], want[128];

	(void)state;
	assert_non_null(start);
	assert_non_null(end);
	start += strlen("<style>");
	assert_int_equal(aw_sha256(start, (size_t)(end - start), digest), 0);
	base64(digest, sizeof(digest), b64);
	snprintf(want, sizeof(want), "style-src 'sha256-%s'", b64);
	assert_non_null(strstr(aw_html_csp(), want));
	/* and the page repeats it, escaped, in a <meta> (without frame-ancestors) */
	snprintf(want, sizeof(want), "style-src &#39;sha256-%s&#39;", b64);
	assert_contains(html, "<meta http-equiv=\"Content-Security-Policy\" content=\"");
	assert_contains(html, want);
	assert_null(strstr(html, "frame-ancestors"));
	free(html);
}

static const struct aw_kv fp_old[] = {
    {"kernel", "6.1.0"}, {"cpu_model", "Neoverse-V2"}, {"governor", "performance"}};
static const struct aw_kv fp_new[] = {
    {"kernel", "6.5.0 " HOSTILE}, {"cpu_model", "Neoverse-V2"}, {"microcode", "0x42"}};

static void test_host_page(void **state)
{
	const struct aw_page_fingerprint fps[] = {
	    {"2026-01-01T00:00:00Z", "2026-06-01T00:00:00Z", "aaaa", fp_old, 3},
	    {"2026-06-02T00:00:00Z", "2026-11-29T00:00:00Z", "bbbb", fp_new, 3},
	};
	const struct aw_chart_ref trends[] = {
	    {{.kind = AW_CHART_TREND, .host = hosts[1].name, .ref = "main", .name = "lse"},
	     "lse ops " HOSTILE,
	     true},
	    {{.kind = AW_CHART_TREND, .host = hosts[1].name, .ref = "main", .name = "llsc"},
	     NULL,
	     false},
	};
	const struct aw_chart_ref percpu = {
	    {.kind = AW_CHART_PERCPU, .host = hosts[1].name, .commit = "abc1234def"},
	    "per CPU",
	    true};
	const struct aw_page_run runs[] = {
	    {"0f0e0d0c-0000-4000-8000-000000000001", "abc1234def", "main", "2026-11-29T10:00:00Z",
	     "ci", AW_VERDICT_FAIL},
	    {"0f0e0d0c-0000-4000-8000-000000000002", NULL, NULL, "2026-11-28T10:00:00Z", "schedule",
	     AW_VERDICT_UNKNOWN},
	};
	const struct aw_page_host page = {hosts[1], fps,  2, trends, 2,    &percpu, NULL,
	                                  0,        runs, 2, NULL,   NULL, NULL,    0};
	const struct aw_links served = {AW_LINKS_SERVED, NULL};
	const struct aw_links exported = {AW_LINKS_EXPORT, NULL};
	struct aw_buf b;
	char *html;

	(void)state;
	aw_buf_init(&b, 1 << 20);
	assert_int_equal(aw_html_host(&b, &served, &page), 0);
	html = b.data;
	assert_safe_page(html);
	assert_contains(html, "<h1>Host a&quot; onmouseover=&quot;alert(2)</h1>");
	assert_contains(html, "<title>host a&quot; onmouseover=&quot;alert(2) &middot; atomwatch"
	                      "</title>");
	assert_contains(html,
	                "<img src=\"/charts/hosts/a~22~20onmouseover~3D~22alert~282~29/refs/"
	                "main/trend-lse.svg\" width=\"960\" height=\"400\" alt=\"lse ops " HOSTILE_E
	                "\">");
	assert_contains(html, "<a href=\"/charts/hosts/a~22~20onmouseover~3D~22alert~282~29/refs/"
	                      "main/trend-lse.png\">PNG</a>");
	assert_contains(html, "chart not drawn yet");
	assert_int_equal(count(html, "<img "), 2);
	assert_contains(html, "percpu.svg\" width=\"960\" height=\"480\"");
	/* fingerprint changes: what changed, what appeared, what went away */
	assert_contains(html, "<code>kernel</code>: 6.1.0 &rarr; 6.5.0 " HOSTILE_E);
	assert_contains(html, "<code>microcode</code>: (none) &rarr; 0x42");
	assert_contains(html, "<code>governor</code>: performance &rarr; (none)");
	assert_null(strstr(html, "<code>cpu_model</code>: "));
	assert_contains(html, "first fingerprint");
	assert_contains(html, "<a href=\"/commits/abc1234def\">abc1234def</a>");
	assert_contains(html, "<td>schedule</td>");

	aw_buf_reset(&b);
	assert_int_equal(aw_html_host(&b, &exported, &page), 0);
	html = b.data;
	assert_safe_page(html);
	assert_contains(html, "<img src=\"../../charts/hosts/a~22~20onmouseover~3D~22alert~282~29/"
	                      "refs/main/trend-lse.svg\"");
	assert_contains(html, "<a href=\"../../commits/abc1234def/index.html\">");
	assert_contains(html, "<a href=\"../../index.html\">atomwatch</a>");
	assert_contains(html,
	                "<link rel=\"icon\" type=\"image/svg+xml\" href=\"../../favicon.svg\">");
	aw_buf_release(&b);

	/* a page needs its host */
	struct aw_page_host nameless = page;
	nameless.host.name = "";
	aw_buf_init(&b, 1 << 20);
	assert_int_equal(aw_html_host(&b, &served, &nameless), -EINVAL);
	aw_buf_release(&b);
}

static void test_commit_and_compare_pages(void **state)
{
	const struct aw_page_cell_row rows[] = {
	    {"op=stadd cpu=0", 5.0, 50.0, AW_VERDICT_REGRESSED, NAN, false, NULL, NULL},
	    {"op=ldadd cpu=0", 4.6, 4.5, AW_VERDICT_UNCHANGED, NAN, false, NULL, NULL},
	    {"op=" HOSTILE, NAN, 1234.5, AW_VERDICT_NEW, NAN, false, NULL, NULL},
	    {"op=stadd cpu=0 contender=1 c=100 d=100", 0, 3.25, AW_VERDICT_UNCHANGED, 41.5, true,
	     NULL, NULL},
	    /* plain incq, below resolution, hardened into lock xadd: never "+63954.1%" */
	    {"subject=libpcpu op=inc cpu=0", 0.037, 23.7, AW_VERDICT_REGRESSED, NAN, false, NULL,
	     NULL},
	    /* a cell judged in ns from a level above resolution: its change in ns too */
	    {"op=stadd cpu=1 contender=0 c=10 d=100", 3.1, 5.2, AW_VERDICT_NOISY, NAN, true, NULL,
	     NULL},
	};
	const struct aw_page_host_result results[] = {
	    {"graviton4",
	     "main, last 5 runs",
	     {{.kind = AW_CHART_COMPARE,
	       .commit = "abc1234def",
	       .host = "graviton4",
	       .base = "main"},
	      "graviton4 against main",
	      true},
	     rows,
	     6,
	     AW_VERDICT_FAIL,
	     {"7c3e-run", "mulchain-v1", 1.3314}},
	    {ATTRY,
	     HOSTILE,
	     {{.kind = AW_CHART_COMPARE}, NULL, false},
	     NULL,
	     0,
	     AW_VERDICT_PASS,
	     {HOSTILE, NULL, NAN}},
	};
	const struct aw_chart_ref heatmap = {
	    {.kind = AW_CHART_HEATMAP, .commit = "abc1234def"}, "p50 across hosts", true};
	struct aw_page_commit page = {
	    "abc1234def", NULL, "main", "main", AW_VERDICT_FAIL, results, 2, &heatmap, "now",
	    NULL,         0,    NULL,   0};
	const struct aw_links served = {AW_LINKS_SERVED, ""};
	const struct aw_links exported = {AW_LINKS_EXPORT, NULL};
	struct aw_buf b;
	char *html;

	(void)state;
	aw_buf_init(&b, 1 << 20);
	assert_int_equal(aw_html_commit(&b, &served, &page), 0);
	html = b.data;
	assert_safe_page(html);
	assert_contains(html, "<h1>Commit <code>abc1234def</code></h1>");
	assert_contains(html, "<img src=\"/charts/commits/abc1234def/heatmap.svg\" width=\"960\" "
	                      "height=\"600\"");
	assert_contains(html, "<img src=\"/charts/commits/abc1234def/hosts/graviton4/"
	                      "compare-main.svg\" width=\"960\" height=\"480\"");
	assert_contains(html, "<td class=\"num\">5</td><td class=\"num\">50</td>"
	                      "<td class=\"num\">+900.0%</td>");
	assert_contains(html, "<td class=\"num\">4.6</td><td class=\"num\">4.5</td>"
	                      "<td class=\"num\">-2.2%</td>");
	assert_contains(html, "<code>op=" HOSTILE_E "</code></td><td class=\"num\">&ndash;</td>"
	                      "<td class=\"num\">1234</td><td class=\"num\">&ndash;</td>");
	assert_contains(html, "<p>compared with " HOSTILE_E "</p>");
	/* the disturbed head runs: their factors when known, the hostile id escaped */
	assert_contains(html,
	                "<p class=\"disturbed\"><strong>Disturbed run:</strong> head run "
	                "<code>7c3e-run</code> (reference mulchain-v1 &times;1.331) measured while "
	                "the machine itself was unusually slow or fast");
	assert_contains(html, "head run <code>" HOSTILE_E "</code> measured while");
	assert_int_equal(count(html, "class=\"disturbed\""), 2);
	assert_contains(html, "<span class=\"verdict v-regressed\">regressed</span>");
	assert_contains(html, "<span class=\"verdict v-new\">new</span>");
	assert_contains(html, "<a href=\"/hosts/a~22~20onmouseover~3D~22alert~282~29\">");
	/* header + 6 rows in the host's table; header + its 2 regressed cells in "Needs a look",
	 * which lists them before the charts */
	assert_int_equal(count(html, "<tr>"), 7 + 3);
	assert_int_equal(count(html, "<h2>Needs a look</h2>"), 1);
	assert_true(strstr(html, "<h2>Needs a look</h2>") < strstr(html, "<h2>Across hosts</h2>"));
	/* a table with a duty cell shows its gross time per iteration, once, in a column of
	 * its own (a dash for the other cells) */
	assert_int_equal(count(html, "Head gross per iteration (ns)</th>"), 1);
	/* a baseline below resolution: the change in ns, never a percentage */
	assert_contains(html, "<td class=\"num\">0</td><td class=\"num\">3.25</td>"
	                      "<td class=\"num\">below resolution -&gt; 3.25 ns</td>");
	assert_contains(html, "<td class=\"num\">0.037</td><td class=\"num\">23.7</td>"
	                      "<td class=\"num\">below resolution -&gt; 23.7 ns</td>");
	assert_contains(html, "<td class=\"num\">3.1</td><td class=\"num\">5.2</td>"
	                      "<td class=\"num\">+2.10 ns</td>");
	assert_null(strstr(html, "63954"));
	assert_contains(html, "<span class=\"verdict v-unchanged\">unchanged</span></td>"
	                      "<td class=\"num\">41.5</td></tr>");
	assert_contains(html, "<span class=\"verdict v-regressed\">regressed</span></td>"
	                      "<td class=\"num\">&ndash;</td></tr>");
	assert_null(strstr(html, "<form"));

	/* the compare page: a form in served mode only, links to both commits */
	page.base = "0123456789";
	aw_buf_reset(&b);
	assert_int_equal(aw_html_commit(&b, &served, &page), 0);
	html = b.data;
	assert_safe_page(html);
	assert_contains(html, "<form method=\"get\" action=\"/compare\">");
	assert_contains(html, "name=\"base\" value=\"0123456789\"");
	assert_contains(html, "<a href=\"/commits/0123456789\">");

	aw_buf_reset(&b);
	assert_int_equal(aw_html_commit(&b, &exported, &page), 0);
	html = b.data;
	assert_safe_page(html);
	assert_null(strstr(html, "<form"));
	assert_contains(html, "<a href=\"../../../commits/0123456789/index.html\">");
	assert_contains(html, "<img src=\"../../../charts/commits/abc1234def/heatmap.svg\"");

	page.base = "";
	aw_buf_reset(&b);
	assert_int_equal(aw_html_commit(&b, &served, &page), -EINVAL);
	page.base = NULL;
	page.sha = NULL;
	assert_int_equal(aw_html_commit(&b, &served, &page), -EINVAL);
	aw_buf_release(&b);

	/* the output's limit is an error, not a cut page */
	page.sha = "abc1234def";
	aw_buf_init(&b, 512);
	assert_int_equal(aw_html_commit(&b, &served, &page), -E2BIG);
	aw_buf_release(&b);
}

/* Cells the gate cannot vouch for: an inconclusive cell (v-inconclusive) listed in "Needs a
 * look" after the regressed ones, on the commit page (across hosts) and on the host page (its
 * newest verdict), a noisy cell never, whatever its host; the line that tells a cell's levels
 * apart, with its note, under its row in every table it is in. */
static void test_inconclusive_rows(void **state)
{
	const struct aw_page_cell_row rows[] = {
	    {"op=ldadd cpu=0", 4.6, 4.5, AW_VERDICT_UNCHANGED, NAN, false, NULL, NULL},
	    {"subject=libpcpu op=inc cpu=0", 1.02, 1.1, AW_VERDICT_INCONCLUSIVE, NAN, false,
	     "unchanged alone, +7% " HOSTILE,
	     "levels by mulblock-v1: L1 (60%) +0.3% unchanged, L2 (40%) +7.1% undecided"},
	    /* noisy, of gate level fail, on the inconclusive host: its change under its threshold
	     * is its own noise, not the commit's; it needs no look */
	    {"op=lock_xadd cpu=0", 5.81, 6.1, AW_VERDICT_NOISY, NAN, false,
	     "the runs cannot bound the change within 5%", NULL},
	    {"op=stadd cpu=0", 5.0, 50.0, AW_VERDICT_REGRESSED, NAN, false, NULL, NULL},
	    /* a noisy cell the gate vouches for (its host passed): not listed */
	    {"op=cas cpu=0", 3.0, 3.2, AW_VERDICT_NOISY, NAN, false, NULL, NULL},
	};
	const struct aw_page_host_result results[] = {
	    {"x86-ci",
	     "main, last 10 runs",
	     {{.kind = AW_CHART_COMPARE, .commit = "abc1234def", .host = "x86-ci", .base = "main"},
	      "x86-ci against main",
	      true},
	     rows,
	     5,
	     AW_VERDICT_INCONCLUSIVE,
	     {NULL, NULL, NAN}},
	};
	const struct aw_page_commit page = {
	    "abc1234def", NULL, "main", "main", AW_VERDICT_INCONCLUSIVE, results, 1, NULL, "now",
	    NULL,         0,    NULL,   0};
	const struct aw_page_host host = {hosts[2], NULL, 0,    NULL,         0,    NULL, NULL, 0,
	                                  NULL,     0,    NULL, "abc1234def", rows, 5};
	const struct aw_links served = {AW_LINKS_SERVED, ""};
	const char *look, *cells, *p;
	struct aw_buf b;
	char *html;

	(void)state;
	aw_buf_init(&b, 1 << 20);
	assert_int_equal(aw_html_commit(&b, &served, &page), 0);
	html = b.data;
	assert_safe_page(html);
	assert_contains(html, "<dt>Verdict</dt><dd><span class=\"verdict v-inconclusive\">"
	                      "inconclusive</span></dd>");
	look = strstr(html, "<h2>Needs a look</h2>");
	cells = strstr(html, "<table class=\"cells\">");
	assert_non_null(look);
	assert_non_null(cells);
	assert_true(look < cells);
	/* regressed first, then inconclusive; never the others */
	p = strstr(look, "<code>op=stadd cpu=0</code>");
	assert_non_null(p);
	p = strstr(p, "<code>subject=libpcpu op=inc cpu=0</code>");
	assert_non_null(p);
	assert_true(p < cells);
	assert_true(strstr(look, "<code>op=lock_xadd cpu=0</code>") > cells);
	assert_true(strstr(look, "<code>op=cas cpu=0</code>") > cells);
	assert_true(strstr(look, "<code>op=ldadd cpu=0</code>") > cells);
	assert_contains(look, "<td><a href=\"/hosts/x86-ci\">x86-ci</a></td><td><code>subject="
	                      "libpcpu op=inc cpu=0</code></td><td class=\"num\">1.02</td><td "
	                      "class=\"num\">1.1</td><td class=\"num\">+7.8%</td><td><span "
	                      "class=\"verdict v-inconclusive\">inconclusive</span></td></tr>\n");
	/* the levels line, under the row in both tables, the note escaped */
	assert_int_equal(count(html, "<tr class=\"levels\">"), 2);
	assert_contains(look,
	                "<tr class=\"levels\"><td colspan=\"6\">unchanged alone, +7% " HOSTILE_E
	                " &middot; levels by mulblock-v1: L1 (60%) +0.3% unchanged, L2 (40%) "
	                "+7.1% undecided</td></tr>\n");
	assert_contains(cells,
	                "v-inconclusive\">inconclusive</span></td></tr>\n<tr class=\"levels\">"
	                "<td colspan=\"5\">unchanged alone");
	/* a note without levels stays off the page's tables */
	assert_null(strstr(html, "cannot bound the change"));

	aw_buf_reset(&b);
	assert_int_equal(aw_html_host(&b, &served, &host), 0);
	html = b.data;
	assert_safe_page(html);
	look = strstr(html, "<h2>Needs a look at <code title=\"abc1234def\"><a "
	                    "href=\"/commits/abc1234def\">abc1234def</a></code></h2>");
	assert_non_null(look);
	assert_true(look < strstr(html, "<h2>Trends</h2>"));
	assert_true(strstr(look, "<code>op=stadd cpu=0</code>") <
	            strstr(look, "<code>subject=libpcpu op=inc cpu=0</code>"));
	assert_null(strstr(html, "<code>op=lock_xadd cpu=0</code>"));
	assert_null(strstr(html, "<code>op=cas cpu=0</code>"));
	assert_contains(look, "<tr class=\"levels\"><td colspan=\"5\">unchanged alone");
	assert_int_equal(count(look, "<tr>"), 1 + 2);
	aw_buf_release(&b);
}

static void test_favicon(void **state)
{
	size_t len = 0;
	const char *svg = aw_html_favicon(&len);

	(void)state;
	assert_true(len > 100);
	assert_int_equal(strlen(svg), len);
	assert_true(strncmp(svg, "<svg ", 5) == 0);
	assert_null(strstr(svg, "<script"));
}

static void test_empty_overview(void **state)
{
	const struct aw_page_commit_summary c[] = {{"abc1234def", NULL, NULL, 0, 0, 0}};
	const struct aw_page_overview p = {NULL, 0, c, 1, NULL, NULL, 0};
	const struct aw_links links = {AW_LINKS_SERVED, ""};
	struct aw_buf b;

	(void)state;
	aw_buf_init(&b, 1 << 20);
	assert_int_equal(aw_html_overview(&b, &links, &p), 0);
	assert_contains(b.data, "No host has reported yet.");
	assert_contains(b.data, "<td>&ndash;</td>");
	assert_contains(b.data, "<span class=\"verdict v-unknown\">unknown</span>");
	aw_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_overview_served),
	    cmocka_unit_test(test_overview_export),
	    cmocka_unit_test(test_csp_matches_style),
	    cmocka_unit_test(test_host_page),
	    cmocka_unit_test(test_commit_and_compare_pages),
	    cmocka_unit_test(test_inconclusive_rows),
	    cmocka_unit_test(test_empty_overview),
	    cmocka_unit_test(test_favicon),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
