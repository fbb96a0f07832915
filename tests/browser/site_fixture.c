/* Writes a static export of the reports (pages and charts) from a fixture data set of four hosts
 * and three commits, as the collector's `export` will, plus manifest.json: what the browser test
 * must find on each page. One host label and one CPU model are hostile.
 * Usage: aw_browser_site <out-dir> */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "aw/util.h"
#include "reports.h"

#define N_HOSTS   4
#define N_COMMITS 3
#define N_OPS     6
#define N_CPUS    8

#define HOSTILE_LABEL "<script>alert(1)</script>\"'"
#define HOSTILE_MODEL "Neoverse-V2 \"><img src=x onerror=window.__awPwned=1>"

static const char *const host_names[N_HOSTS] = {"graviton2", "graviton4", "grace-1", "epyc-dev"};
static const char *const host_arch[N_HOSTS] = {"aarch64", "aarch64", "aarch64", "x86_64"};
static const char *const host_model[N_HOSTS] = {"Neoverse-N1", "Neoverse-V2", HOSTILE_MODEL,
                                                "AMD EPYC 9R14"};
static const int host_cores[N_HOSTS] = {64, 96, 72, 2};
static const int host_lse[N_HOSTS] = {1, 1, 1, -1};
static const char *const commits[N_COMMITS] = {"1a2b3c4d5e6f708192a3b4c5d6e7f80912a3b4c5",
                                               "2b3c4d5e6f708192a3b4c5d6e7f80912a3b4c5d6",
                                               "3c4d5e6f708192a3b4c5d6e7f80912a3b4c5d6e7"};
static const char *const commit_time[N_COMMITS] = {"2026-11-27T09:00:00Z", "2026-11-28T09:00:00Z",
                                                   "2026-11-29T09:00:00Z"};
static const char *const ops[N_OPS] = {"plain", "llsc", "stadd", "ldadd", "swp", "cas"};
/* p50 ns of each op on each host (NAN: not on that arch), from the figures in DESIGN.md */
static const double base_ns[N_HOSTS][N_OPS] = {
    {0.30, 7.3, 5.0, 5.0, 5.1, 7.5},
    {0.30, 5.5, 4.6, 4.6, 4.7, 5.8},
    {0.30, 5.0, 50.0, 5.0, 5.2, 6.0},
    {0.26, NAN, NAN, NAN, NAN, 5.5},
};

static const struct aw_kv labels_ci[] = {{"role", "ci"}};
static const struct aw_kv labels_grace[] = {{"rack", HOSTILE_LABEL}, {"owner", "perf-team"}};

/* The head's p50: the last commit makes llsc 70% slower on the aarch64 hosts. */
static double head_ns(size_t h, size_t op, size_t commit)
{
	double v = base_ns[h][op] * (1.0 + 0.01 * (double)((h + op + commit) % 3));

	return commit == N_COMMITS - 1 && op == 1 ? v * 1.7 : v;
}

static bool regressed(size_t h, size_t op, size_t commit)
{
	return commit == N_COMMITS - 1 && op == 1 && isfinite(base_ns[h][op]);
}

static const char *out_dir;
static struct aw_gnuplot *gp;
static json_t *manifest_pages;

static void die(const char *what, int rc, char *err)
{
	fprintf(stderr, "aw_browser_site: %s: %s\n", what, err ? err : strerror(-rc));
	free(err);
	exit(1);
}

static void check_drawn(int rc, char *err)
{
	if (rc < 0)
		die("cannot draw a chart", rc, err);
	free(err);
}

static void write_page(const char *rel, const struct aw_buf *b)
{
	char *path = aw_asprintf("%s/%s", out_dir, rel), *err = NULL;
	int rc;

	for (char *p = path + strlen(out_dir) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			die(path, -errno, NULL);
		*p = '/';
	}
	rc = aw_write_file_atomic(path, b->data, b->len, &err);
	if (rc)
		die("cannot write a page", rc, err);
	free(path);
}

/* Records what the test must see on the page at `rel`. */
static json_t *expect(const char *rel, size_t images)
{
	json_t *page = json_pack("{s:s, s:I, s:{}, s:[]}", "path", rel, "images",
	                         (json_int_t)images, "rows", "texts");

	json_array_append_new(manifest_pages, page);
	return page;
}

static void expect_rows(json_t *page, const char *selector, size_t n)
{
	json_object_set_new(json_object_get(page, "rows"), selector, json_integer((json_int_t)n));
}

static void expect_text(json_t *page, const char *text)
{
	json_array_append_new(json_object_get(page, "texts"), json_string(text));
}

/* ---- charts ---- */

static void draw_commit_charts(size_t k)
{
	static const int cpus[N_CPUS] = {0, 1, 2, 3, 4, 5, 6, 7};
	static const int64_t c_values[3] = {10, 100, 1000}, d_values[2] = {0, 100};
	double heat[N_OPS * N_HOSTS], percpu[N_OPS * N_CPUS], contention[6];
	char *err = NULL;

	for (size_t op = 0; op < N_OPS; op++)
		for (size_t h = 0; h < N_HOSTS; h++)
			heat[op * N_HOSTS + h] = head_ns(h, op, k);
	const struct aw_chart_heatmap hm = {"p50 across hosts", ops,     N_OPS,
	                                    host_names,         N_HOSTS, heat};
	const struct aw_chart_id hm_id = {.kind = AW_CHART_HEATMAP, .commit = commits[k]};
	check_drawn(aw_chart_draw_heatmap(gp, out_dir, &hm_id, &hm, 0, &err), err);

	for (size_t h = 0; h < N_HOSTS; h++) {
		struct aw_chart_compare_item items[N_OPS];

		for (size_t base = 0; base < 2; base++) {
			if (base == 1 && k == 0)
				break;
			for (size_t op = 0; op < N_OPS; op++) {
				double b = base ? head_ns(h, op, k - 1) : base_ns[h][op];
				double v = head_ns(h, op, k);

				items[op] = (struct aw_chart_compare_item){
				    ops[op], b,       b * 1.1, b * 1.6,
				    v,       v * 1.1, v * 1.6, regressed(h, op, k)};
			}
			const struct aw_chart_compare c = {
			    host_names[h], base ? "previous commit" : "main, last 5 runs", "head",
			    items, N_OPS};
			const struct aw_chart_id id = {.kind = AW_CHART_COMPARE,
			                               .commit = commits[k],
			                               .host = host_names[h],
			                               .base = base ? commits[k - 1] : "main"};
			check_drawn(aw_chart_draw_compare(gp, out_dir, &id, &c, 0, &err), err);
		}

		for (size_t op = 0; op < N_OPS; op++)
			for (size_t cpu = 0; cpu < N_CPUS; cpu++) /* two clusters */
				percpu[op * N_CPUS + cpu] =
				    head_ns(h, op, k) * (cpu < 4 ? 1.0 : 1.4);
		const struct aw_chart_percpu p = {host_names[h], ops, N_OPS, cpus, N_CPUS, percpu};
		const struct aw_chart_id p_id = {
		    .kind = AW_CHART_PERCPU, .commit = commits[k], .host = host_names[h]};
		check_drawn(aw_chart_draw_percpu(gp, out_dir, &p_id, &p, 0, &err), err);

		if (!isfinite(base_ns[h][1]))
			continue;
		for (size_t i = 0; i < 6; i++)
			contention[i] = head_ns(h, 1, k) * (8.0 - (double)i);
		const struct aw_chart_contention cd = {"llsc",   c_values, 3,
		                                       d_values, 2,        contention};
		const struct aw_chart_id cd_id = {.kind = AW_CHART_CONTENTION,
		                                  .commit = commits[k],
		                                  .host = host_names[h],
		                                  .name = "llsc"};
		check_drawn(aw_chart_draw_contention(gp, out_dir, &cd_id, &cd, 0, &err), err);
	}
}

static const char *const group_names[2] = {"lse", "llsc"};
static const size_t group_ops[2][3] = {{2, 3, 4}, {1, 5, 0}};
static const size_t group_size[2] = {3, 2};

static void draw_trends(size_t h)
{
	double v[3][3][N_COMMITS];
	static const size_t cp[1] = {N_COMMITS - 1};
	char *err = NULL;

	for (size_t g = 0; g < 2; g++) {
		struct aw_chart_trend_series series[3];

		for (size_t s = 0; s < group_size[g]; s++) {
			size_t op = group_ops[g][s];

			for (size_t k = 0; k < N_COMMITS; k++) {
				v[s][0][k] = head_ns(h, op, k);
				v[s][1][k] = v[s][0][k] * 1.1;
				v[s][2][k] = v[s][0][k] * 1.6;
			}
			series[s] = (struct aw_chart_trend_series){
			    ops[op],
			    v[s][0],
			    v[s][1],
			    v[s][2],
			    regressed(h, op, N_COMMITS - 1) ? cp : NULL,
			    regressed(h, op, N_COMMITS - 1) ? 1 : 0,
			    regressed(h, op, N_COMMITS - 1) ? cp : NULL,
			    regressed(h, op, N_COMMITS - 1) ? 1 : 0};
		}
		const char *labels[N_COMMITS];
		char shorts[N_COMMITS][8];

		for (size_t k = 0; k < N_COMMITS; k++) {
			snprintf(shorts[k], sizeof(shorts[k]), "%.7s", commits[k]);
			labels[k] = shorts[k];
		}
		const struct aw_chart_trend t = {group_names[g], labels, N_COMMITS, series,
		                                 group_size[g],  NULL,   0};
		const struct aw_chart_id id = {.kind = AW_CHART_TREND,
		                               .host = host_names[h],
		                               .ref = "main",
		                               .name = group_names[g]};
		check_drawn(aw_chart_draw_trend(gp, out_dir, &id, &t, 0, &err), err);
	}
}

/* ---- pages ---- */

static enum aw_verdict host_verdict(size_t h, size_t k)
{
	return regressed(h, 1, k) ? AW_VERDICT_FAIL : AW_VERDICT_PASS;
}

static struct aw_page_host_summary summary(size_t h)
{
	bool grace = h == 2;

	return (struct aw_page_host_summary){
	    host_names[h],
	    host_arch[h],
	    host_model[h],
	    host_cores[h],
	    host_lse[h],
	    grace ? labels_grace : labels_ci,
	    grace ? 2 : 1,
	    "2026-11-29T09:30:00Z",
	    commits[N_COMMITS - 1],
	    host_verdict(h, N_COMMITS - 1),
	};
}

static void write_overview(const struct aw_links *links, struct aw_buf *b)
{
	struct aw_page_host_summary hosts[N_HOSTS];
	struct aw_page_commit_summary cs[N_COMMITS];
	char rel[512];

	for (size_t h = 0; h < N_HOSTS; h++)
		hosts[h] = summary(h);
	for (size_t i = 0; i < N_COMMITS; i++) {
		size_t k = N_COMMITS - 1 - i; /* newest first */

		cs[i] = (struct aw_page_commit_summary){
		    commits[k], "main",  commit_time[k],
		    N_HOSTS,    N_HOSTS, k == N_COMMITS - 1 ? AW_VERDICT_FAIL : AW_VERDICT_PASS};
	}
	const struct aw_page_overview p = {hosts, N_HOSTS, cs, N_COMMITS, "2026-11-29T09:31:00Z",
	                                   NULL,  0};

	aw_buf_reset(b);
	if (aw_html_overview(b, links, &p))
		die("overview", -EIO, NULL);
	aw_page_path(AW_PAGE_OVERVIEW, NULL, NULL, rel, sizeof(rel));
	write_page(rel, b);
	json_t *e = expect(rel, 0);
	expect_rows(e, "table.hosts tbody tr", N_HOSTS);
	expect_rows(e, "table.commits tbody tr", N_COMMITS);
	expect_text(e, "rack=" HOSTILE_LABEL);
	expect_text(e, HOSTILE_MODEL);
}

static void write_host(const struct aw_links *links, struct aw_buf *b, size_t h)
{
	static const struct aw_kv fp_old[] = {{"arch", NULL}, {"kernel", "6.1.0-18-arm64"}};
	static const struct aw_kv fp_new[] = {{"arch", NULL}, {"kernel", "6.12.9-arm64"}};
	struct aw_kv old_fields[2], new_fields[2];
	struct aw_chart_ref trends[2], percpu, contention;
	struct aw_page_run runs[N_COMMITS];
	char run_ids[N_COMMITS][AW_UUID_LEN + 1], rel[512];
	bool contended = isfinite(base_ns[h][1]);

	memcpy(old_fields, fp_old, sizeof(fp_old));
	memcpy(new_fields, fp_new, sizeof(fp_new));
	old_fields[0].value = new_fields[0].value = host_arch[h];
	const struct aw_page_fingerprint fps[2] = {
	    {"2026-10-01T00:00:00Z", "2026-11-27T09:30:00Z", "5f0d1e2c", old_fields, 2},
	    {"2026-11-28T09:30:00Z", "2026-11-29T09:30:00Z", "8a9b0c1d", new_fields, 2},
	};
	for (size_t g = 0; g < 2; g++)
		trends[g] = (struct aw_chart_ref){{.kind = AW_CHART_TREND,
		                                   .host = host_names[h],
		                                   .ref = "main",
		                                   .name = group_names[g]},
		                                  group_names[g],
		                                  true};
	percpu = (struct aw_chart_ref){
	    {.kind = AW_CHART_PERCPU, .commit = commits[N_COMMITS - 1], .host = host_names[h]},
	    "p50 per CPU, latest commit",
	    true};
	contention = (struct aw_chart_ref){{.kind = AW_CHART_CONTENTION,
	                                    .commit = commits[N_COMMITS - 1],
	                                    .host = host_names[h],
	                                    .name = "llsc"},
	                                   "llsc: contention x duty",
	                                   true};
	for (size_t i = 0; i < N_COMMITS; i++) {
		size_t k = N_COMMITS - 1 - i;

		snprintf(run_ids[i], sizeof(run_ids[i]), "00000000-0000-4000-8000-%012zu",
		         h * 100 + k);
		runs[i] = (struct aw_page_run){run_ids[i],     commits[k], "main",
		                               commit_time[k], "ci",       host_verdict(h, k)};
	}
	const struct aw_page_host p = {summary(h),
	                               fps,
	                               2,
	                               trends,
	                               2,
	                               &percpu,
	                               contended ? &contention : NULL,
	                               contended ? 1 : 0,
	                               runs,
	                               N_COMMITS,
	                               "2026-11-29T09:31:00Z",
	                               NULL,
	                               NULL,
	                               0};

	aw_buf_reset(b);
	if (aw_html_host(b, links, &p))
		die("host page", -EIO, NULL);
	aw_page_path(AW_PAGE_HOST, host_names[h], NULL, rel, sizeof(rel));
	write_page(rel, b);
	json_t *e = expect(rel, 2 + 1 + (contended ? 1 : 0));
	expect_rows(e, "table.runs tbody tr", N_COMMITS);
	expect_rows(e, "table.changes tbody tr", 2);
	expect_rows(e, "table.fingerprint tbody tr", 2);
	expect_text(e, host_names[h]);
	if (h == 2)
		expect_text(e, "rack=" HOSTILE_LABEL);
}

/* The commit page of commit k (base_k < 0) or its compare page against commit base_k. */
#define DUTY_NS 40.0 /* the duty cell's nops alone */

/* The host tables of commit k with a gross column: those whose duty cell was measured. */
static size_t gross_tables(size_t k)
{
	size_t n = 0;

	for (size_t h = 0; h < N_HOSTS; h++)
		n += isfinite(head_ns(h, N_OPS - 1, k));
	return n;
}

static void write_commit(const struct aw_links *links, struct aw_buf *b, size_t k, int base_k)
{
	struct aw_page_cell_row rows[N_HOSTS][N_OPS];
	struct aw_page_host_result results[N_HOSTS];
	char cells[N_OPS][64], rel[512];
	const struct aw_chart_ref heatmap = {
	    {.kind = AW_CHART_HEATMAP, .commit = commits[k]}, "p50 across hosts", true};

	/* the last op as a duty cell: its table shows the gross time per iteration */
	for (size_t op = 0; op < N_OPS; op++)
		snprintf(cells[op], sizeof(cells[op]), "op=%s cpu=0%s", ops[op],
		         op == N_OPS - 1 ? " contender=1 c=100 d=100" : "");
	for (size_t h = 0; h < N_HOSTS; h++) {
		for (size_t op = 0; op < N_OPS; op++) {
			double base = base_k < 0 ? base_ns[h][op] : head_ns(h, op, (size_t)base_k);
			double head = head_ns(h, op, k);

			rows[h][op] =
			    (struct aw_page_cell_row){cells[op],
			                              base,
			                              head,
			                              !isfinite(head)       ? AW_VERDICT_MISSING
			                              : regressed(h, op, k) ? AW_VERDICT_REGRESSED
			                                                    : AW_VERDICT_UNCHANGED,
			                              op == N_OPS - 1 ? head + DUTY_NS : NAN,
			                              false,
			                              NULL,
			                              NULL};
		}
		results[h] = (struct aw_page_host_result){
		    host_names[h],
		    base_k < 0 ? "main, last 5 runs" : "the base commit",
		    {{.kind = AW_CHART_COMPARE,
		      .commit = commits[k],
		      .host = host_names[h],
		      .base = base_k < 0 ? "main" : commits[base_k]},
		     host_names[h],
		     true},
		    rows[h],
		    N_OPS,
		    host_verdict(h, k),
		    {NULL, NULL, NAN}};
	}
	/* the newest commit's head run on graviton4 was disturbed (its page says so, once) */
	if (k == N_COMMITS - 1 && base_k < 0)
		results[1].disturbed =
		    (struct aw_page_disturbance){"run-graviton4-3", "mulchain-v1", 1.48};
	const struct aw_page_commit p = {commits[k],
	                                 base_k < 0 ? NULL : commits[base_k],
	                                 "main",
	                                 "main",
	                                 k == N_COMMITS - 1 ? AW_VERDICT_FAIL : AW_VERDICT_PASS,
	                                 results,
	                                 N_HOSTS,
	                                 &heatmap,
	                                 "2026-11-29T09:31:00Z",
	                                 NULL,
	                                 0,
	                                 NULL,
	                                 0};

	aw_buf_reset(b);
	if (aw_html_commit(b, links, &p))
		die("commit page", -EIO, NULL);
	if (base_k < 0)
		aw_page_path(AW_PAGE_COMMIT, commits[k], NULL, rel, sizeof(rel));
	else
		aw_page_path(AW_PAGE_COMPARE, commits[base_k], commits[k], rel, sizeof(rel));
	write_page(rel, b);
	json_t *e = expect(rel, 1 + N_HOSTS);
	expect_rows(e, "table.cells tbody tr", N_HOSTS * N_OPS);
	expect_rows(e, "section.host", N_HOSTS);
	expect_text(e, "op=llsc cpu=0");
	/* the gross column: in each host's table whose duty cell has a head */
	expect_rows(e, "table.cells th[title]", gross_tables(k));
	expect_rows(e, "section.host p.disturbed", k == N_COMMITS - 1 && base_k < 0 ? 1 : 0);
	if (k == N_COMMITS - 1 && base_k < 0)
		expect_text(e,
		            "Disturbed run: head run run-graviton4-3 (reference mulchain-v1 "
		            "\u00d71.480) measured while the machine itself was unusually slow or "
		            "fast");
}

int main(int argc, char **argv)
{
	const struct aw_links links = {AW_LINKS_EXPORT, NULL};
	struct aw_buf b;
	char *err = NULL;
	json_t *manifest;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s <out-dir>\n", argv[0]);
		return 2;
	}
	out_dir = argv[1];
	if (mkdir(out_dir, 0755) < 0 && errno != EEXIST)
		die(out_dir, -errno, NULL);
	gp = aw_gnuplot_new(NULL, &err);
	if (!gp)
		die("cannot start gnuplot", -EIO, err);
	manifest_pages = json_array();
	aw_buf_init(&b, 4 << 20);

	for (size_t k = 0; k < N_COMMITS; k++)
		draw_commit_charts(k);
	for (size_t h = 0; h < N_HOSTS; h++)
		draw_trends(h);
	write_overview(&links, &b);
	for (size_t h = 0; h < N_HOSTS; h++)
		write_host(&links, &b, h);
	for (size_t k = 0; k < N_COMMITS; k++) {
		write_commit(&links, &b, k, -1);
		if (k > 0)
			write_commit(&links, &b, k, (int)k - 1);
	}

	size_t icon_len;
	const char *icon = aw_html_favicon(&icon_len);
	char *icon_path = aw_asprintf("%s/%s", out_dir, AW_HTML_FAVICON_PATH);

	if ((rc = aw_write_file_atomic(icon_path, icon, icon_len, &err)))
		die("cannot write the icon", rc, err);
	free(icon_path);
	manifest = json_pack("{s:s, s:s, s:o}", "hostile_label", HOSTILE_LABEL, "csp",
	                     aw_html_csp(), "pages", manifest_pages);
	char *text = json_dumps(manifest, JSON_INDENT(2));
	char *path = aw_asprintf("%s/manifest.json", out_dir);

	rc = aw_write_file_atomic(path, text, strlen(text), &err);
	if (rc)
		die("cannot write the manifest", rc, err);
	free(path);
	free(text);
	json_decref(manifest);
	aw_buf_release(&b);
	aw_gnuplot_free(&gp);
	return 0;
}
