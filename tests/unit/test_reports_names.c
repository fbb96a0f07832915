/* Unit tests of the reports' naming and escaping rules: path segments, chart and page paths,
 * what the chart route may serve, the gnuplot string and number encoders, the HTML escaper and
 * the URL encoder. No gnuplot process is involved. */
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

#include "internal.h"
#include "reports.h"

static void roundtrip(const char *s)
{
	char enc[256], dec[256];

	assert_int_equal(aw_segment_encode(s, enc, sizeof(enc)), 0);
	for (const char *p = enc; *p; p++)
		assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		                       "0123456789._~-",
		                       *p));
	assert_true(enc[0] != '.');
	assert_int_equal(aw_segment_decode(enc, dec, sizeof(dec)), 0);
	assert_string_equal(dec, s);
}

static void test_segments(void **state)
{
	char out[256];

	(void)state;
	/* names and commits stay as they are */
	assert_int_equal(aw_segment_encode("graviton4-a.b_c", out, sizeof(out)), 0);
	assert_string_equal(out, "graviton4-a.b_c");
	assert_int_equal(aw_segment_encode("0123abcdef", out, sizeof(out)), 0);
	assert_string_equal(out, "0123abcdef");
	/* what a browser or a file system would interpret */
	assert_int_equal(aw_segment_encode("..", out, sizeof(out)), 0);
	assert_string_equal(out, "~2E.");
	assert_int_equal(aw_segment_encode(".hidden", out, sizeof(out)), 0);
	assert_string_equal(out, "~2Ehidden");
	assert_int_equal(aw_segment_encode("refs/heads/x", out, sizeof(out)), 0);
	assert_string_equal(out, "refs~2Fheads~2Fx");
	assert_int_equal(aw_segment_encode("a~b", out, sizeof(out)), 0);
	assert_string_equal(out, "a~7Eb");
	roundtrip("..");
	roundtrip("<script>alert(1)</script>\"'");
	roundtrip("x'; system(\"touch /tmp/pwned\"); '");
	roundtrip("ünïcødé %2F ~7E");
	/* errors */
	assert_int_equal(aw_segment_encode("", out, sizeof(out)), -EINVAL);
	assert_int_equal(aw_segment_encode(NULL, out, sizeof(out)), -EINVAL);
	assert_int_equal(aw_segment_encode("abcdef", out, 4), -ENAMETOOLONG);
	memset(out, 0, sizeof(out));
	char longname[100];
	memset(longname, '/', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(aw_segment_encode(longname, out, sizeof(out)), -ENAMETOOLONG);
	/* only canonical encodings decode */
	assert_int_equal(aw_segment_decode("~41", out, sizeof(out)), -EINVAL); /* 'A' */
	assert_int_equal(aw_segment_decode("~2e", out, sizeof(out)), -EINVAL); /* lowercase */
	assert_int_equal(aw_segment_decode("~00", out, sizeof(out)), -EINVAL);
	assert_int_equal(aw_segment_decode(".x", out, sizeof(out)), -EINVAL);
	assert_int_equal(aw_segment_decode("a/b", out, sizeof(out)), -EINVAL);
	assert_int_equal(aw_segment_decode("a~2", out, sizeof(out)), -EINVAL);
	assert_int_equal(aw_segment_decode("x.~2E", out, sizeof(out)), -EINVAL); /* '.' inside */
	assert_int_equal(aw_segment_decode("~2E~2E", out, sizeof(out)), -EINVAL);
}

static void test_chart_paths(void **state)
{
	char out[512];
	struct aw_chart_id id = {
	    .kind = AW_CHART_COMPARE, .commit = "abc1234", .host = "g4", .base = "main"};

	(void)state;
	assert_int_equal(aw_chart_path(&id, "svg", out, sizeof(out)), 0);
	assert_string_equal(out, "charts/commits/abc1234/hosts/g4/compare-main.svg");
	assert_true(aw_chart_path_servable(out));
	id.host = "..";
	assert_int_equal(aw_chart_path(&id, "png", out, sizeof(out)), 0);
	assert_string_equal(out, "charts/commits/abc1234/hosts/~2E./compare-main.png");
	assert_true(aw_chart_path_servable(out));
	assert_int_equal(aw_chart_path(&id, "hash", out, sizeof(out)), 0);
	assert_false(aw_chart_path_servable(out));
	assert_int_equal(aw_chart_path(&id, "html", out, sizeof(out)), -EINVAL);
	id.base = NULL;
	assert_int_equal(aw_chart_path(&id, "svg", out, sizeof(out)), -EINVAL);

	id = (struct aw_chart_id){.kind = AW_CHART_HEATMAP, .commit = "abc1234"};
	assert_int_equal(aw_chart_path(&id, "svg", out, sizeof(out)), 0);
	assert_string_equal(out, "charts/commits/abc1234/heatmap.svg");
	id = (struct aw_chart_id){.kind = AW_CHART_PERCPU, .commit = "abc1234", .host = "h"};
	assert_int_equal(aw_chart_path(&id, "svg", out, sizeof(out)), 0);
	assert_string_equal(out, "charts/commits/abc1234/hosts/h/percpu.svg");
	id = (struct aw_chart_id){
	    .kind = AW_CHART_CONTENTION, .commit = "abc1234", .host = "h", .name = "llsc"};
	assert_int_equal(aw_chart_path(&id, "svg", out, sizeof(out)), 0);
	assert_string_equal(out, "charts/commits/abc1234/hosts/h/contention-llsc.svg");
	id = (struct aw_chart_id){
	    .kind = AW_CHART_TREND, .host = "h", .ref = "refs/heads/main", .name = "lse"};
	assert_int_equal(aw_chart_path(&id, "svg", out, sizeof(out)), 0);
	assert_string_equal(out, "charts/hosts/h/refs/refs~2Fheads~2Fmain/trend-lse.svg");
	assert_int_equal(aw_chart_path(&id, "svg", out, 20), -ENAMETOOLONG);

	/* the route's guard */
	assert_false(aw_chart_path_servable("charts/../etc/passwd.svg"));
	assert_false(aw_chart_path_servable("charts/a/../b.svg"));
	assert_false(aw_chart_path_servable("charts/a/.x.svg.tmp"));
	assert_false(aw_chart_path_servable("charts/a/.heatmap.svg"));
	assert_false(aw_chart_path_servable("charts//a.svg"));
	assert_false(aw_chart_path_servable("charts/a.svg"));
	assert_false(aw_chart_path_servable("/charts/a/b.svg"));
	assert_false(aw_chart_path_servable("charts/a/b.svg/"));
	assert_false(aw_chart_path_servable("charts/a/b c.svg"));
	assert_false(aw_chart_path_servable("charts/a/b%2F.svg"));
	assert_false(aw_chart_path_servable("other/a/b.svg"));
	assert_true(aw_chart_path_servable("charts/commits/x/heatmap.png"));
}

static void test_page_paths(void **state)
{
	char out[512];

	(void)state;
	assert_int_equal(aw_page_path(AW_PAGE_OVERVIEW, NULL, NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "index.html");
	assert_int_equal(aw_page_path(AW_PAGE_HOST, "g4", NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "hosts/g4/index.html");
	assert_int_equal(aw_page_path(AW_PAGE_HOST, "<b>", NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "hosts/~3Cb~3E/index.html");
	assert_int_equal(aw_page_path(AW_PAGE_COMMIT, "abcdef0", NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "commits/abcdef0/index.html");
	assert_int_equal(aw_page_path(AW_PAGE_COMPARE, "aaaaaaa", "bbbbbbb", out, sizeof(out)), 0);
	assert_string_equal(out, "compare/aaaaaaa/bbbbbbb/index.html");
	assert_int_equal(aw_page_path(AW_PAGE_HOST, "", NULL, out, sizeof(out)), -EINVAL);
	assert_int_equal(aw_page_path(AW_PAGE_COMPARE, "a", NULL, out, sizeof(out)), -EINVAL);
}

/* Every byte of an encoded gnuplot string is a letter, a space, a backslash with three octal
 * digits, or the two quotes around it. */
static void assert_gp_alphabet(const char *enc)
{
	size_t len = strlen(enc);

	assert_true(len >= 2);
	assert_int_equal(enc[0], '"');
	assert_int_equal(enc[len - 1], '"');
	for (size_t i = 1; i < len - 1; i++) {
		char c = enc[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == ' ')
			continue;
		assert_int_equal(c, '\\');
		for (int k = 1; k <= 3; k++)
			assert_true(enc[i + k] >= '0' && enc[i + k] <= '7');
		i += 3;
	}
}

static void test_gnuplot_text(void **state)
{
	struct aw_buf b;
	char longtext[400];

	(void)state;
	aw_buf_init(&b, 1 << 16);
	assert_int_equal(aw_gp_put_text(&b, "ab 12", 0), 0);
	assert_string_equal(b.data, "\"ab \\061\\062\"");
	aw_buf_reset(&b);
	assert_int_equal(aw_gp_put_text(&b, "x'\"`@$\\{}^_&~;\n#", 0), 0);
	assert_string_equal(b.data,
	                    "\"x\\047\\042\\140\\100\\044\\134\\173\\175\\136\\137\\046\\176"
	                    "\\073 \\043\"");
	assert_gp_alphabet(b.data);
	aw_buf_reset(&b);
	/* UTF-8 kept byte for byte, invalid bytes shown as '?' */
	assert_int_equal(aw_gp_put_text(&b, "\xc3\xa9\xff", 0), 0);
	assert_string_equal(b.data, "\"\\303\\251\\077\"");
	aw_buf_reset(&b);
	assert_int_equal(aw_gp_put_text(&b, NULL, 0), 0);
	assert_string_equal(b.data, "\"\"");
	aw_buf_reset(&b);
	/* cut at `max` bytes, never inside a UTF-8 sequence */
	assert_int_equal(aw_gp_put_text(&b, "abcdef", 4), 0);
	assert_string_equal(b.data, "\"abcd\\056\\056\\056\"");
	aw_buf_reset(&b);
	assert_int_equal(aw_gp_put_text(&b, "abc\xc3\xa9", 4), 0);
	assert_string_equal(b.data, "\"abc\\056\\056\\056\"");
	aw_buf_reset(&b);
	memset(longtext, 'a', sizeof(longtext) - 1);
	longtext[sizeof(longtext) - 1] = '\0';
	assert_int_equal(aw_gp_put_text(&b, longtext, 0), 0);
	assert_int_equal(b.len, 2 + AW_GP_TEXT_MAX + 12);
	aw_buf_reset(&b);
	/* paths are never cut, and refuse control characters */
	assert_int_equal(aw_gp_put_path(&b, "/tmp/a b/.c-1.tmp"), 0);
	assert_string_equal(b.data, "\"\\057tmp\\057a b\\057\\056c\\055\\061\\056tmp\"");
	aw_buf_reset(&b);
	assert_int_equal(aw_gp_put_path(&b, "/tmp/a\nb"), -EINVAL);
	aw_buf_reset(&b);
	assert_int_equal(aw_gp_put_number(&b, 0.1), 0);
	assert_string_equal(b.data, "0.10000000000000001");
	aw_buf_reset(&b);
	assert_int_equal(aw_gp_put_number(&b, NAN), 0);
	assert_int_equal(aw_gp_put_number(&b, INFINITY), 0);
	assert_string_equal(b.data, "??");
	aw_buf_release(&b);
}

static void test_html_escape(void **state)
{
	struct aw_buf b;

	(void)state;
	aw_buf_init(&b, 1 << 16);
	assert_int_equal(aw_html_escape(&b, "<script>alert(1)</script>\"'&amp;"), 0);
	assert_string_equal(b.data, "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;amp;");
	aw_buf_reset(&b);
	/* UTF-8 kept; control characters and invalid bytes become U+FFFD; tab and newline kept */
	assert_int_equal(aw_html_escape(&b, "\xc3\xa9\x01\xff\t\n"), 0);
	assert_string_equal(b.data, "\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\t\n");
	aw_buf_reset(&b);
	/* an overlong '<' is not a '<' */
	assert_int_equal(aw_html_escape(&b, "\xc0\xbc"), 0);
	assert_string_equal(b.data, "\xef\xbf\xbd\xef\xbf\xbd");
	aw_buf_reset(&b);
	assert_int_equal(aw_html_escape(&b, NULL), 0);
	assert_int_equal(b.len, 0);
	aw_buf_release(&b);

	/* the buffer's limit is reported */
	aw_buf_init(&b, 8);
	assert_int_equal(aw_html_escape(&b, "<<<<"), -E2BIG);
	aw_buf_release(&b);
}

static void test_url_encode(void **state)
{
	struct aw_buf b;

	(void)state;
	aw_buf_init(&b, 1 << 16);
	assert_int_equal(aw_url_encode(&b, "a-b._~Z9 /?&=#%\"<\xc3\xa9"), 0);
	assert_string_equal(b.data, "a-b._~Z9%20%2F%3F%26%3D%23%25%22%3C%C3%A9");
	aw_buf_release(&b);
}

static void test_csp(void **state)
{
	const char *csp = aw_html_csp();

	(void)state;
	assert_non_null(strstr(csp, "default-src 'none'"));
	assert_non_null(strstr(csp, "img-src 'self'"));
	assert_non_null(strstr(csp, "style-src 'sha256-"));
	assert_non_null(strstr(csp, "frame-ancestors 'none'"));
	assert_null(strstr(csp, "script-src"));
	assert_null(strstr(csp, "unsafe"));
	assert_ptr_equal(csp, aw_html_csp());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_segments),    cmocka_unit_test(test_chart_paths),
	    cmocka_unit_test(test_page_paths),  cmocka_unit_test(test_gnuplot_text),
	    cmocka_unit_test(test_html_escape), cmocka_unit_test(test_url_encode),
	    cmocka_unit_test(test_csp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
