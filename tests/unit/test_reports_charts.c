/* Unit tests of the charts through the real gnuplot (/usr/bin/gnuplot): every chart type from
 * fixture data (the SVG parsed by python3's XML parser holds the expected series, the PNG has
 * the expected size), hostile strings in every text field, the cache, and the gnuplot handle's
 * recovery from a killed, failing or hanging gnuplot. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "aw/util.h"
#include "internal.h"
#include "reports.h"

static char tmp_root[64];
static char data_dir[128];
static struct aw_gnuplot *gp;

/* ---- helpers ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	char *err = NULL;

	(void)state;
	snprintf(tmp_root, sizeof(tmp_root), "/tmp/aw-reports-XXXXXX");
	if (!mkdtemp(tmp_root))
		return -1;
	snprintf(data_dir, sizeof(data_dir), "%s/data", tmp_root);
	gp = aw_gnuplot_new(NULL, &err);
	if (!gp) {
		fprintf(stderr, "%s\n", err);
		free(err);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	aw_gnuplot_free(&gp);
	if (getenv("AW_KEEP_CHARTS")) /* to look at what the tests drew */
		fprintf(stderr, "charts kept in %s\n", tmp_root);
	else
		nftw(tmp_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static char *path_of(const struct aw_chart_id *id, const char *ext)
{
	char rel[1024];

	assert_int_equal(aw_chart_path(id, ext, rel, sizeof(rel)), 0);
	return aw_asprintf("%s/%s", data_dir, rel);
}

/* Runs tests/unit/reports_svg_check.py on the chart's SVG; NULL when it does not parse. */
static json_t *svg_check(const struct aw_chart_id *id)
{
	const char *src = getenv("AW_SOURCE_DIR");
	char *script = aw_asprintf("%s/tests/unit/reports_svg_check.py", src ? src : ".");
	char *svg = path_of(id, "svg");
	/* Debian's python3 (as tests/cli uses), not whatever wrapper PATH finds first */
	const char *python = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
	char *argv[] = {(char *)python, script, svg, NULL};
	posix_spawn_file_actions_t fa;
	int pipefd[2], status = 0;
	char buf[1 << 16];
	size_t len = 0;
	pid_t pid;
	json_t *doc = NULL;

	assert_int_equal(pipe(pipefd), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	posix_spawn_file_actions_addclose(&fa, pipefd[0]);
	assert_int_equal(posix_spawnp(&pid, python, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	for (;;) {
		ssize_t n = read(pipefd[0], buf + len, sizeof(buf) - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	buf[len] = '\0';
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		doc = json_loads(buf, 0, NULL);
	free(script);
	free(svg);
	return doc;
}

static bool has_text(const json_t *texts, const char *want)
{
	size_t i;
	json_t *t;

	json_array_foreach (texts, i, t) {
		/* gnuplot pads tic labels with a space */
		const char *s = json_string_value(t);

		while (s && *s == ' ')
			s++;
		if (s && strcmp(s, want) == 0)
			return true;
	}
	return false;
}

static void assert_has_text(const json_t *doc, const char *want)
{
	if (!has_text(json_object_get(doc, "texts"), want))
		fail_msg("the SVG has no text '%s'", want);
}

static json_t *plot(const json_t *doc, size_t i)
{
	json_t *p = json_array_get(json_object_get(doc, "plots"), i);

	assert_non_null(p);
	return p;
}

static long long plot_count(const json_t *doc, size_t i, const char *what)
{
	return json_integer_value(json_object_get(plot(doc, i), what));
}

static void assert_png_size(const struct aw_chart_id *id, unsigned width, unsigned height)
{
	static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	char *png = path_of(id, "png");
	unsigned char h[24];
	int fd = open(png, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(read(fd, h, sizeof(h)), sizeof(h));
	close(fd);
	assert_memory_equal(h, sig, sizeof(sig));
	assert_memory_equal(h + 12, "IHDR", 4);
	assert_int_equal((unsigned)h[16] << 24 | h[17] << 16 | h[18] << 8 | h[19], width);
	assert_int_equal((unsigned)h[20] << 24 | h[21] << 16 | h[22] << 8 | h[23], height);
	free(png);
}

static void assert_sizes(const struct aw_chart_id *id, const json_t *doc)
{
	unsigned w, h;
	char ws[16], hs[16];

	aw_chart_size(id->kind, &w, &h);
	snprintf(ws, sizeof(ws), "%u", w);
	snprintf(hs, sizeof(hs), "%u", h);
	assert_string_equal(json_string_value(json_object_get(doc, "width")), ws);
	assert_string_equal(json_string_value(json_object_get(doc, "height")), hs);
	assert_png_size(id, w, h);
}

static void check_rc(int rc, char *err)
{
	if (rc < 0)
		fail_msg("draw failed: %d %s", rc, err ? err : "");
	free(err);
}

/* ---- fixtures ---- */

static const struct aw_chart_compare_item compare_items[] = {
    {"plain", 0.30, 0.31, 0.50, 0.29, 0.30, 0.45, false},
    {"llsc", 7.3, 7.5, 9.0, 7.2, 7.4, 9.1, false},
    {"stadd", 5.0, 6.0, 8.0, 50.1, 55.0, 70.0, true},
    {"ldadd", 4.6, 5.0, 27.7, 4.5, 5.2, 26.0, false},
    {"swp", NAN, NAN, NAN, 12.0, 13.0, 14.0, false},
};

static const struct aw_chart_compare compare_data = {
    .title = "graviton4: abc1234 against main",
    .base_label = "main, last 5 runs",
    .head_label = "abc1234",
    .items = compare_items,
    .n_items = 5,
};

static const struct aw_chart_id compare_id = {
    .kind = AW_CHART_COMPARE, .commit = "abc1234", .host = "graviton4", .base = "main"};

static void test_compare(void **state)
{
	char *err = NULL;
	json_t *doc;

	(void)state;
	check_rc(aw_chart_draw_compare(gp, data_dir, &compare_id, &compare_data, 0, &err), err);
	doc = svg_check(&compare_id);
	assert_non_null(doc);
	assert_sizes(&compare_id, doc);
	for (size_t i = 0; i < compare_data.n_items; i++)
		assert_has_text(doc, compare_items[i].name);
	assert_has_text(doc, compare_data.title);
	/* baseline (4 with a value), head (4 not regressed), regressed (1): each point is a
	 * marker and its whisker, plus the key's sample */
	assert_int_equal(json_array_size(json_object_get(doc, "plots")), 3);
	assert_string_equal(
	    json_string_value(json_array_get(json_object_get(plot(doc, 0), "texts"), 0)),
	    "main, last 5 runs");
	assert_int_equal(plot_count(doc, 0, "uses"), 2 * 4 + 1);
	assert_int_equal(plot_count(doc, 1, "uses"), 2 * 4 + 1);
	assert_int_equal(plot_count(doc, 2, "uses"), 2 * 1 + 1);
	assert_string_equal(
	    json_string_value(json_array_get(json_object_get(plot(doc, 2), "texts"), 0)),
	    "regressed");
	json_decref(doc);
}

/* A series within one decade (the prefetch ops of a Neoverse-V2 paste, 3.9 to 8.6 ns): gnuplot
 * alone puts no labelled tic on such a log axis; the chart adds them. */
static void test_trend_within_a_decade(void **state)
{
	static const double p50[] = {3.97, 3.98, 3.97}, q50[] = {7.89, 7.9, 8.6};
	static const char *const labels[] = {"a1b2c3d", "b2c3d4e", "c3d4e5f"};
	const struct aw_chart_trend_series series[] = {
	    {"prfm_keep_stadd", p50, NULL, NULL, NULL, 0, NULL, 0},
	    {"prfm_strm_stadd", q50, NULL, NULL, NULL, 0, NULL, 0},
	};
	const struct aw_chart_trend t = {"v2: prefetch", labels, 3, series, 2, NULL, 0};
	const struct aw_chart_id id = {
	    .kind = AW_CHART_TREND, .host = "v2", .ref = "main", .name = "prefetch"};
	char *err = NULL;
	json_t *doc;

	(void)state;
	check_rc(aw_chart_draw_trend(gp, data_dir, &id, &t, 0, &err), err);
	doc = svg_check(&id);
	assert_non_null(doc);
	for (int v = 4; v <= 8; v++) {
		char want[4];

		snprintf(want, sizeof(want), "%d", v);
		assert_has_text(doc, want);
	}
	json_decref(doc);
}

static void test_trend(void **state)
{
	static const double p50[] = {5.0, 5.1, 5.0, 50, 51, 49, NAN, 48, 50, 5.2};
	static const double p95[] = {6.0, 6.1, 6.0, 60, 61, 59, NAN, 58, 60, 6.1};
	static const double p99[] = {9.0, 9.1, 9.0, 90, 91, 89, NAN, 88, 90, 9.0};
	static const double q50[] = {4.0, 4.1, 4.0, 4.0, 4.1, 4.9, 4.0, 4.8, 4.0, 4.0};
	static const char *const labels[] = {"a1b2c3d", "b2c3d4e", "c3d4e5f", "d4e5f60", "e5f6071",
	                                     "f607182", "0718293", "1829304", "2930415", "3041526"};
	static const size_t cps[] = {3, 9}, regs[] = {3};
	const struct aw_chart_trend_series series[] = {
	    {"stadd", p50, p95, p99, cps, 2, regs, 1},
	    {"ldadd", q50, NULL, NULL, NULL, 0, NULL, 0},
	};
	const struct aw_chart_trend t = {
	    "graviton4: lse ops on main", labels, 10, series, 2, NULL, 0};
	const struct aw_chart_id id = {
	    .kind = AW_CHART_TREND, .host = "graviton4", .ref = "main", .name = "lse"};
	char *err = NULL;
	json_t *doc;

	(void)state;
	check_rc(aw_chart_draw_trend(gp, data_dir, &id, &t, 0, &err), err);
	doc = svg_check(&id);
	assert_non_null(doc);
	assert_sizes(&id, doc);
	for (size_t i = 0; i < 10; i++)
		assert_has_text(doc, labels[i]);
	/* stadd band, stadd p50, ldadd p50, change points, regressions */
	assert_int_equal(json_array_size(json_object_get(doc, "plots")), 5);
	assert_int_equal(plot_count(doc, 0, "uses"), 0);
	assert_true(plot_count(doc, 0, "paths") + plot_count(doc, 0, "polygons") >= 1);
	assert_int_equal(plot_count(doc, 1, "uses"), 9 + 1); /* one point has no value */
	assert_int_equal(plot_count(doc, 2, "uses"), 10 + 1);
	assert_int_equal(plot_count(doc, 3, "paths"), 2); /* one per change point */
	assert_int_equal(plot_count(doc, 4, "uses"), 1 + 1);
	assert_has_text(doc, "stadd");
	assert_has_text(doc, "ldadd");
	assert_has_text(doc, "change point");
	assert_has_text(doc, "regression");
	json_decref(doc);
}

static const char *const hm_rows[] = {"plain", "llsc", "stadd", "ldadd"};
static const char *const hm_cols[] = {"graviton2", "graviton4", "grace", "epyc"};
static const double hm_values[] = {0.30, 0.30, 0.30, 0.26, 7.3, 5.0, 5.1, NAN,
                                   5.0,  27.7, 50.2, NAN,  4.6, 4.6, 5.0, NAN};

static void test_heatmap(void **state)
{
	const struct aw_chart_heatmap h = {
	    "abc1234: p50 across hosts", hm_rows, 4, hm_cols, 4, hm_values};
	const struct aw_chart_id id = {.kind = AW_CHART_HEATMAP, .commit = "abc1234"};
	char *err = NULL;
	json_t *doc;

	(void)state;
	check_rc(aw_chart_draw_heatmap(gp, data_dir, &id, &h, 0, &err), err);
	doc = svg_check(&id);
	assert_non_null(doc);
	assert_sizes(&id, doc);
	for (size_t i = 0; i < 4; i++) {
		assert_has_text(doc, hm_rows[i]);
		assert_has_text(doc, hm_cols[i]);
	}
	/* cells, missing cells, their values, their "n/a" */
	assert_int_equal(json_array_size(json_object_get(doc, "plots")), 4);
	assert_int_equal(plot_count(doc, 0, "polygons"), 13);
	assert_int_equal(plot_count(doc, 1, "polygons"), 3);
	assert_int_equal(json_array_size(json_object_get(plot(doc, 2), "texts")), 13);
	assert_int_equal(json_array_size(json_object_get(plot(doc, 3), "texts")), 3);
	assert_has_text(doc, "50.2");
	assert_has_text(doc, "27.7");
	assert_has_text(doc, "n/a");
	json_decref(doc);
}

static void test_percpu(void **state)
{
	static const int cpus[] = {0, 1, 2, 3, 4, 5, 6, 7};
	static const double p50[] = {5, 5, 5, 5, 45,  45,  67,  67,  4,   4,   4,   4,
	                             6, 6, 6, 6, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
	static const char *const ops[] = {"stadd", "ldadd", "casp"};
	const struct aw_chart_percpu p = {"cix-p1: p50 per CPU", ops, 3, cpus, 8, p50};
	const struct aw_chart_id id = {.kind = AW_CHART_PERCPU, .commit = "abc1234", .host = "cix"};
	char *err = NULL;
	json_t *doc;

	(void)state;
	check_rc(aw_chart_draw_percpu(gp, data_dir, &id, &p, 0, &err), err);
	doc = svg_check(&id);
	assert_non_null(doc);
	assert_sizes(&id, doc);
	/* one line per op with values: casp has none and is left out */
	assert_int_equal(json_array_size(json_object_get(doc, "plots")), 2);
	assert_int_equal(plot_count(doc, 0, "uses"), 8 + 1);
	assert_int_equal(plot_count(doc, 1, "uses"), 8 + 1);
	assert_has_text(doc, "stadd");
	assert_has_text(doc, "ldadd");
	assert_has_text(doc, "7");
	json_decref(doc);
}

static void test_contention(void **state)
{
	static const int64_t c[] = {10, 100, 1000}, d[] = {0, 100};
	static const double p50[] = {80, 30, 40, 20, 20, NAN};
	const struct aw_chart_contention cd = {"cix-p1: llsc contention", c, 3, d, 2, p50};
	const struct aw_chart_id id = {
	    .kind = AW_CHART_CONTENTION, .commit = "abc1234", .host = "cix", .name = "llsc"};
	char *err = NULL;
	json_t *doc;

	(void)state;
	check_rc(aw_chart_draw_contention(gp, data_dir, &id, &cd, 0, &err), err);
	doc = svg_check(&id);
	assert_non_null(doc);
	assert_sizes(&id, doc);
	assert_has_text(doc, "1000");
	assert_has_text(doc, "100");
	assert_has_text(doc, "0");
	assert_int_equal(plot_count(doc, 0, "polygons"), 5);
	assert_int_equal(plot_count(doc, 1, "polygons"), 1);
	json_decref(doc);
}

static void assert_no_data(const struct aw_chart_id *id)
{
	json_t *doc = svg_check(id);

	assert_non_null(doc);
	assert_has_text(doc, "no data");
	assert_int_equal(json_array_size(json_object_get(doc, "plots")), 1);
	assert_sizes(id, doc);
	json_decref(doc);
}

static void test_no_data(void **state)
{
	static const double nans[] = {NAN, NAN, NAN, 0.0, -1.0, INFINITY};
	static const char *const names[] = {"a", "b", "c"};
	static const int cpus[] = {0, 1, 2};
	static const int64_t cd[] = {1, 2, 3};
	const struct aw_chart_compare_item item = {"x", NAN, NAN, NAN, 0, 0, 0, false};
	const struct aw_chart_compare c = {"empty", NULL, NULL, &item, 1};
	const struct aw_chart_trend_series se = {"x", nans, nans, nans, NULL, 0, NULL, 0};
	const struct aw_chart_trend t = {"empty", NULL, 6, &se, 1, NULL, 0};
	const struct aw_chart_trend t0 = {"empty", NULL, 0, NULL, 0, NULL, 0};
	const struct aw_chart_heatmap h = {"empty", names, 2, names, 3, nans};
	const struct aw_chart_percpu p = {"empty", names, 2, cpus, 3, nans};
	const struct aw_chart_contention k = {"empty", cd, 3, cd, 2, nans};
	struct aw_chart_id id = {
	    .commit = "e0e0e0e", .host = "h", .base = "main", .ref = "main", .name = "g"};
	char *err = NULL;

	(void)state;
	id.kind = AW_CHART_COMPARE;
	check_rc(aw_chart_draw_compare(gp, data_dir, &id, &c, 0, &err), err);
	assert_no_data(&id);
	id.kind = AW_CHART_TREND;
	check_rc(aw_chart_draw_trend(gp, data_dir, &id, &t, 0, &err), err);
	assert_no_data(&id);
	check_rc(aw_chart_draw_trend(gp, data_dir, &id, &t0, 0, &err), err);
	assert_no_data(&id);
	id.kind = AW_CHART_HEATMAP;
	check_rc(aw_chart_draw_heatmap(gp, data_dir, &id, &h, 0, &err), err);
	assert_no_data(&id);
	id.kind = AW_CHART_PERCPU;
	check_rc(aw_chart_draw_percpu(gp, data_dir, &id, &p, 0, &err), err);
	assert_no_data(&id);
	id.kind = AW_CHART_CONTENTION;
	check_rc(aw_chart_draw_contention(gp, data_dir, &id, &k, 0, &err), err);
	assert_no_data(&id);
}

/* ---- hostile strings ---- */

/* Strings that would run a command, end a string, start a macro or a data block, or drive
 * enhanced text, if anything reached gnuplot unescaped. PWNED stands for a file that must never
 * appear. */
static const char *const hostile_templates[] = {
    "x'; system(\"touch PWNED\"); '",
    "x\"; system(\"touch PWNED\"); \"",
    "`touch PWNED`",
    "a\\\"; system(\"touch PWNED\") #",
    "l1\nsystem(\"touch PWNED\")\nEOD",
    "EOD\n!touch PWNED\n$d << EOD",
    "@x {PWNED}^a_b &amp; <svg onload=alert(1)> \\U+0041 \\101",
    "\"; set output \"PWNED\"; plot 1; \"",
};
#define N_HOSTILE (sizeof(hostile_templates) / sizeof(hostile_templates[0]))

/* The template with its PWNED replaced by `path`. */
static char *fill_in(const char *template, const char *path)
{
	const char *at = strstr(template, "PWNED");

	assert_non_null(at);
	return aw_asprintf("%.*s%s%s", (int)(at - template), template, path, at + 5);
}

static void test_hostile_strings(void **state)
{
	char *pwned[N_HOSTILE], *s[N_HOSTILE];
	char *err = NULL;
	json_t *doc;

	(void)state;
	for (size_t i = 0; i < N_HOSTILE; i++) {
		pwned[i] = aw_asprintf("%s/pwned-%zu", tmp_root, i);
		s[i] = fill_in(hostile_templates[i], pwned[i]);
	}
	for (size_t i = 0; i < N_HOSTILE; i++) {
		const char *h = s[i];
		const struct aw_chart_compare_item items[] = {{h, 1, 2, 3, 4, 5, 6, true},
		                                              {h, 1, 2, 3, 1, 2, 3, false}};
		const struct aw_chart_compare c = {h, h, h, items, 2};
		const double v[] = {1, 2, 3, 4};
		const size_t idx[] = {1};
		const char *const labels[] = {h, h, h, h};
		const struct aw_chart_trend_series se = {h, v, v, v, idx, 1, idx, 1};
		const struct aw_chart_trend t = {h, labels, 4, &se, 1, NULL, 0};
		const struct aw_chart_heatmap hm = {h, labels, 2, labels, 2, v};
		const int cpus[] = {0, 1};
		const struct aw_chart_percpu p = {h, labels, 2, cpus, 2, v};
		const int64_t cd[] = {1, 2};
		const struct aw_chart_contention k = {h, cd, 2, cd, 2, v};
		struct aw_chart_id id = {
		    .commit = "badc0de", .host = h, .base = h, .ref = h, .name = h};
		char *want = strdup(h);

		/* what the title must read: control characters shown as spaces */
		for (char *q = want; *q; q++)
			*q = (*q == '\n') ? ' ' : *q;
		id.kind = AW_CHART_COMPARE;
		check_rc(aw_chart_draw_compare(gp, data_dir, &id, &c, 0, &err), err);
		doc = svg_check(&id);
		assert_non_null(doc);
		assert_has_text(doc, want);
		assert_int_equal(json_array_size(json_object_get(doc, "plots")), 3);
		json_decref(doc);

		id.kind = AW_CHART_TREND;
		check_rc(aw_chart_draw_trend(gp, data_dir, &id, &t, 0, &err), err);
		doc = svg_check(&id);
		assert_non_null(doc);
		assert_has_text(doc, want);
		json_decref(doc);

		id.kind = AW_CHART_HEATMAP;
		check_rc(aw_chart_draw_heatmap(gp, data_dir, &id, &hm, 0, &err), err);
		doc = svg_check(&id);
		assert_non_null(doc);
		assert_has_text(doc, want);
		json_decref(doc);

		id.kind = AW_CHART_PERCPU;
		check_rc(aw_chart_draw_percpu(gp, data_dir, &id, &p, 0, &err), err);
		doc = svg_check(&id);
		assert_non_null(doc);
		assert_has_text(doc, want);
		json_decref(doc);

		id.kind = AW_CHART_CONTENTION;
		check_rc(aw_chart_draw_contention(gp, data_dir, &id, &k, 0, &err), err);
		doc = svg_check(&id);
		assert_non_null(doc);
		assert_has_text(doc, want);
		assert_png_size(&id, 640, 480);
		json_decref(doc);
		free(want);
	}
	for (size_t i = 0; i < N_HOSTILE; i++) {
		if (access(pwned[i], F_OK) == 0)
			fail_msg("hostile string %zu created '%s'", i, pwned[i]);
		free(pwned[i]);
		free(s[i]);
	}
	/* one gnuplot did it all: nothing crashed it */
	assert_int_equal(aw_gnuplot_starts(gp), 1);
}

/* ---- the cache ---- */

static struct timespec mtime_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_mtim;
}

static bool same_time(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static void test_cache(void **state)
{
	struct aw_chart_compare_item items[2] = {compare_items[0], compare_items[1]};
	struct aw_chart_compare c = compare_data;
	const struct aw_chart_id id = {
	    .kind = AW_CHART_COMPARE, .commit = "cac4e00", .host = "h", .base = "main"};
	char *svg = path_of(&id, "svg"), *png = path_of(&id, "png"), *hash = path_of(&id, "hash");
	char *err = NULL, *h1 = NULL, *h2 = NULL;
	struct timespec t_svg, t_png;
	size_t len;

	(void)state;
	c.items = items;
	c.n_items = 2;
	assert_int_equal(aw_chart_draw_compare(gp, data_dir, &id, &c, 0, &err), 0);
	t_svg = mtime_of(svg);
	t_png = mtime_of(png);
	assert_int_equal(aw_read_file(hash, 256, &h1, &len, NULL), 0);
	assert_int_equal(len, 65);

	/* unchanged data: nothing drawn */
	usleep(20000);
	assert_int_equal(aw_chart_draw_compare(gp, data_dir, &id, &c, 0, &err), AW_DRAW_CACHED);
	assert_true(same_time(t_svg, mtime_of(svg)));
	assert_true(same_time(t_png, mtime_of(png)));

	/* changed data: drawn again, new hash */
	items[1].head_p50 = 9.5;
	assert_int_equal(aw_chart_draw_compare(gp, data_dir, &id, &c, 0, &err), 0);
	assert_false(same_time(t_svg, mtime_of(svg)));
	assert_int_equal(aw_read_file(hash, 256, &h2, &len, NULL), 0);
	assert_string_not_equal(h1, h2);
	assert_int_equal(aw_chart_draw_compare(gp, data_dir, &id, &c, 0, &err), AW_DRAW_CACHED);

	/* a missing output is drawn again even with the same data; FORCE always draws */
	assert_int_equal(unlink(png), 0);
	assert_int_equal(aw_chart_draw_compare(gp, data_dir, &id, &c, 0, &err), 0);
	assert_int_equal(access(png, F_OK), 0);
	t_svg = mtime_of(svg);
	usleep(20000);
	assert_int_equal(aw_chart_draw_compare(gp, data_dir, &id, &c, AW_DRAW_FORCE, &err), 0);
	assert_false(same_time(t_svg, mtime_of(svg)));
	assert_null(err);
	free(h1);
	free(h2);
	free(svg);
	free(png);
	free(hash);
}

/* ---- failures of gnuplot ---- */

/* No temp file is left in the chart's directory. */
static void assert_no_temps(const struct aw_chart_id *id)
{
	char *svg = path_of(id, "svg");
	char *cmd = aw_asprintf("test -z \"$(find '%.*s' -name '.*')\"",
	                        (int)(strrchr(svg, '/') - svg), svg);

	assert_int_equal(system(cmd), 0);
	free(cmd);
	free(svg);
}

static void test_restart_after_kill(void **state)
{
	const struct aw_chart_id id = {
	    .kind = AW_CHART_COMPARE, .commit = "dead000", .host = "h", .base = "main"};
	char *err = NULL;
	unsigned starts = aw_gnuplot_starts(gp);
	int pid = aw_gnuplot_pid(gp);

	(void)state;
	assert_true(pid > 0);
	assert_int_equal(kill(pid, SIGKILL), 0);
	check_rc(aw_chart_draw_compare(gp, data_dir, &id, &compare_data, 0, &err), err);
	assert_int_equal(aw_gnuplot_starts(gp), starts + 1);
	assert_int_not_equal(aw_gnuplot_pid(gp), pid);
	assert_png_size(&id, 960, 480);

	/* killed while idle long enough to be noticed as dead before the next chart */
	pid = aw_gnuplot_pid(gp);
	assert_int_equal(kill(pid, SIGKILL), 0);
	usleep(100000);
	check_rc(aw_chart_draw_compare(gp, data_dir, &id, &compare_data, AW_DRAW_FORCE, &err), err);
	assert_int_equal(aw_gnuplot_starts(gp), starts + 2);
	assert_no_temps(&id);
}

static void test_gnuplot_error(void **state)
{
	const struct aw_chart_id id = {
	    .kind = AW_CHART_COMPARE, .commit = "e7707e7", .host = "h", .base = "main"};
	char *svg = path_of(&id, "svg"), *png = path_of(&id, "png");
	static const char bad[] = "set nosuchoption\nplot x\n";
	struct aw_gp_job job = {bad,
	                        sizeof(bad) - 1,
	                        320,
	                        240,
	                        data_dir,
	                        svg + strlen(data_dir) + 1,
	                        png + strlen(data_dir) + 1};
	unsigned starts = aw_gnuplot_starts(gp);
	char *err = NULL;

	(void)state;
	check_rc(aw_chart_draw_compare(gp, data_dir, &id, &compare_data, 0, &err), err);
	assert_int_equal(unlink(svg), 0);
	assert_int_equal(unlink(png), 0);
	assert_int_equal(aw_gnuplot_draw(gp, &job, &err), -EIO);
	assert_non_null(err);
	if (!strcasestr(err, "unrecognized option"))
		fail_msg("unexpected error: %s", err);
	free(err);
	err = NULL;
	assert_int_not_equal(access(svg, F_OK), 0);
	assert_no_temps(&id);
	/* the same process goes on drawing */
	check_rc(aw_chart_draw_compare(gp, data_dir, &id, &compare_data, 0, &err), err);
	assert_int_equal(aw_gnuplot_starts(gp), starts);
	free(svg);
	free(png);
}

/* No symbolic link under the data dir is followed by a drawing: a directory of the charts
 * swapped for a link elsewhere makes the drawing fail and writes nothing there; a link
 * planted at a chart's or sidecar's own name is replaced, and what it pointed at is left as
 * it was. (Before, gnuplot opened its output by path and wrote through both.) */
static void test_no_link_followed(void **state)
{
	const struct aw_chart_id id = {
	    .kind = AW_CHART_COMPARE, .commit = "1eaf000", .host = "linked", .base = "main"};
	char *svg = path_of(&id, "svg"), *png = path_of(&id, "png"), *side = path_of(&id, "hash");
	char *host_dir = aw_asprintf("%.*s", (int)(strrchr(svg, '/') - svg), svg);
	char *outside = aw_asprintf("%s/outside", tmp_root);
	char *victim = aw_asprintf("%s/victim", outside), *cmd, *err = NULL, *data = NULL;
	size_t len = 0;
	struct stat st;

	(void)state;
	assert_int_equal(aw_make_dirs(outside, 0755), 0);
	assert_int_equal(aw_make_dirs(host_dir, 0755), 0);
	assert_int_equal(rmdir(host_dir), 0);
	assert_int_equal(symlink(outside, host_dir), 0);
	assert_int_equal(aw_chart_draw_compare(gp, data_dir, &id, &compare_data, 0, &err), -ELOOP);
	assert_non_null(err);
	aw_freep(&err);
	cmd = aw_asprintf("test -z \"$(ls -A '%s')\"", outside);
	assert_int_equal(system(cmd), 0); /* nothing written through the link */
	free(cmd);

	/* links at the files' own names: replaced by the drawing, their targets untouched */
	assert_int_equal(unlink(host_dir), 0);
	assert_int_equal(aw_write_file_atomic(victim, "keep\n", 5, NULL), 0);
	assert_int_equal(aw_make_dirs(host_dir, 0755), 0);
	assert_int_equal(symlink(victim, svg), 0);
	assert_int_equal(symlink(victim, png), 0);
	assert_int_equal(symlink(victim, side), 0);
	check_rc(aw_chart_draw_compare(gp, data_dir, &id, &compare_data, 0, &err), err);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(lstat(i == 0 ? svg : i == 1 ? png : side, &st), 0);
		assert_true(S_ISREG(st.st_mode));
	}
	assert_int_equal(aw_read_file(victim, 64, &data, &len, NULL), 0);
	assert_string_equal(data, "keep\n");
	free(data);
	assert_png_size(&id, 960, 480);
	assert_no_temps(&id);
	free(victim);
	free(outside);
	free(host_dir);
	free(side);
	free(png);
	free(svg);
}

/* A stand-in for gnuplot that answers the start-up probe, then hangs on the first chart. */
static char *write_fake_gnuplot(void)
{
	static const char script[] = "#!/bin/sh\n"
	                             "n=0\n"
	                             "while IFS= read -r line; do\n"
	                             "  case \"$line\" in\n"
	                             "  *'print sprintf(\"AW-DONE-'*)\n"
	                             "    n=$((n + 1))\n"
	                             "    [ \"$n\" -ge 2 ] && exec sleep 60\n"
	                             "    m=${line#*\\\"}; m=${m%% *}; echo \"$m 0\" >&2 ;;\n"
	                             "  esac\n"
	                             "done\n";
	char *path = aw_asprintf("%s/fake-gnuplot", tmp_root);

	assert_int_equal(aw_write_file_atomic(path, script, sizeof(script) - 1, NULL), 0);
	assert_int_equal(chmod(path, 0755), 0);
	return path;
}

static void test_timeout(void **state)
{
	char *fake = write_fake_gnuplot();
	struct aw_gnuplot_opts opts = {.program = fake, .timeout_ms = 400};
	const struct aw_chart_id id = {
	    .kind = AW_CHART_COMPARE, .commit = "51ee900", .host = "h", .base = "main"};
	struct aw_gnuplot *slow;
	char *err = NULL;
	uint64_t t0;
	int rc;

	(void)state;
	slow = aw_gnuplot_new(&opts, &err);
	if (!slow)
		fail_msg("fake gnuplot did not start: %s", err);
	assert_false(aw_gnuplot_has_pngcairo(slow));
	t0 = aw_monotonic_ns();
	rc = aw_chart_draw_compare(slow, data_dir, &id, &compare_data, 0, &err);
	assert_int_equal(rc, -ETIMEDOUT);
	assert_true(aw_monotonic_ns() - t0 < 3000000000ull);
	assert_non_null(strstr(err, "killed"));
	free(err);
	err = NULL;
	assert_int_equal(aw_gnuplot_pid(slow), 0);
	assert_no_temps(&id);
	aw_gnuplot_free(&slow);
	assert_null(slow);
	free(fake);
}

static void test_missing_program(void **state)
{
	struct aw_gnuplot_opts opts = {.program = "/nonexistent/gnuplot"};
	char *err = NULL;

	(void)state;
	assert_null(aw_gnuplot_new(&opts, &err));
	assert_non_null(err);
	assert_non_null(strstr(err, "/nonexistent/gnuplot"));
	free(err);
}

static void test_bad_arguments(void **state)
{
	const struct aw_chart_id wrong_kind = {.kind = AW_CHART_HEATMAP, .commit = "abc1234"};
	const struct aw_chart_id no_host = {
	    .kind = AW_CHART_COMPARE, .commit = "abc1234", .base = "main"};
	struct aw_chart_compare big = compare_data;
	char *err = NULL;

	(void)state;
	assert_int_equal(aw_chart_draw_compare(gp, data_dir, &wrong_kind, &compare_data, 0, &err),
	                 -EINVAL);
	free(err);
	err = NULL;
	assert_int_equal(aw_chart_draw_compare(gp, data_dir, &no_host, &compare_data, 0, &err),
	                 -EINVAL);
	free(err);
	err = NULL;
	big.n_items = AW_CHART_MAX_ITEMS + 1;
	assert_int_equal(aw_chart_draw_compare(gp, data_dir, &compare_id, &big, 0, &err), -E2BIG);
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_compare),
	    cmocka_unit_test(test_trend),
	    cmocka_unit_test(test_trend_within_a_decade),
	    cmocka_unit_test(test_heatmap),
	    cmocka_unit_test(test_percpu),
	    cmocka_unit_test(test_contention),
	    cmocka_unit_test(test_no_data),
	    cmocka_unit_test(test_hostile_strings),
	    cmocka_unit_test(test_cache),
	    cmocka_unit_test(test_restart_after_kill),
	    cmocka_unit_test(test_gnuplot_error),
	    cmocka_unit_test(test_no_link_followed),
	    cmocka_unit_test(test_timeout),
	    cmocka_unit_test(test_missing_program),
	    cmocka_unit_test(test_bad_arguments),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
