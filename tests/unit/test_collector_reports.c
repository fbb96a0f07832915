/* The collector's report side over a real SQLite store: cached verdicts read back (whole and
 * as statuses only), the names of the charts a run gives, compare tables, the pages built from
 * the store (bad names, unknown commits, pending charts, escaping), all without gnuplot, and the
 * trend charts of an x86-64 and an arm64 host drawn through the real one. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "collector_fixture.h"
#include "pages.h"
#include "draw.h"

#define SHA1 "badc0de1badc0de1badc0de1badc0de1badc0de1"
#define SHA2 "c0ffee07c0ffee07c0ffee07c0ffee07c0ffee07"

static struct aw_cell *add(struct aw_result *r, const char *op, const char *reader, int cpu,
                           int contender, int64_t c, int64_t d, const char *placement, double p50)
{
	struct aw_cell *cell = aw_result_add_cell(r);

	assert_non_null(cell);
	assert_int_equal(aw_set_str(&cell->op, op), 0);
	assert_int_equal(aw_set_str(&cell->reader, reader), 0);
	assert_int_equal(aw_set_str(&cell->placement, placement), 0);
	cell->cpu = cpu;
	cell->contender_cpu = contender;
	cell->c = c;
	cell->d = d;
	cell->n = 200;
	cell->batch = 4096;
	cell->min = cell->p50 = cell->ci_lo = cell->ci_hi = cell->mean = p50;
	cell->p95 = p50 * 1.1;
	cell->p99 = cell->max = p50 * 1.5;
	cell->stddev = 0;
	cell->baseline_ns = 0.3;
	assert_int_equal(aw_cell_make_key(cell), 0);
	return cell;
}

/* A run of `host` at `commit`: ops on CPUs 1 and 2 (CPU 1 is the first), a reader, a
 * contended cell near and far, a hostile host label. */
static struct aw_result *run_of(const char *host, const char *commit, int day, double llsc)
{
	struct aw_result *r = aw_result_new();
	char when[32];

	assert_non_null(r);
	assert_int_equal(aw_set_str(&r->project, "linux"), 0);
	assert_int_equal(aw_set_str(&r->commit, commit), 0);
	assert_int_equal(aw_set_str(&r->ref, "main"), 0);
	snprintf(when, sizeof(when), "2026-11-%02dT10:00:00Z", day);
	assert_int_equal(aw_set_str(&r->commit_time, when), 0);
	snprintf(r->started_at, sizeof(r->started_at), "%s", when);
	snprintf(r->finished_at, sizeof(r->finished_at), "%s", when);
	r->trigger = AW_TRIGGER_CI;
	r->host = json_pack("{s:s, s:s, s:s, s:{s:s}, s:{s:i, s:b}}", "name", host, "arch",
	                    "aarch64", "cpu_model", "Neoverse-V2", "labels", "rack",
	                    "<script>alert(1)</script>", "stable", "cpus", 2, "lse", 1);
	assert_non_null(r->host);
	assert_int_equal(aw_set_str(&r->matrix_name, "default"), 0);
	assert_int_equal(aw_set_str(&r->matrix_hash, "9a8b7c6d"), 0);
	r->matrix_version = 1;
	for (int cpu = 1; cpu <= 2; cpu++) {
		add(r, "llsc", NULL, cpu, AW_NONE, AW_NONE, 0, NULL, llsc);
		add(r, "stadd", NULL, cpu, AW_NONE, AW_NONE, 0, NULL, 50.0);
	}
	add(r, "ldadd", "srcu", 1, AW_NONE, AW_NONE, 0, NULL, 9.0);
	add(r, "stadd", NULL, 1, 2, 100, 0, "near", 60.0);
	add(r, "stadd", NULL, 1, 3, 100, 0, "far", 90.0);
	return r;
}

static int64_t put(struct store_conn *c, struct aw_result *r)
{
	int64_t seq;

	put_one(c, r, STORE_CREATED, &seq);
	aw_result_free(&r);
	return seq;
}

struct seen {
	int n;
	bool any_json;
	char status[16];
};

static int on_verdict(const struct store_verdict *v, void *cls)
{
	struct seen *s = cls;

	s->n++;
	s->any_json = s->any_json || v->json || v->computed_at;
	snprintf(s->status, sizeof(s->status), "%s", v->status);
	return 0;
}

static void test_verdict_statuses_and_view(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	const char *doc = "{\"host\":\"grace\",\"status\":\"fail\",\"baseline_runs\":7,\"cells\":["
	                  "{\"key\":\"op=llsc cpu=1\",\"verdict\":\"regressed\","
	                  "\"p50\":{\"baseline\":5.0,\"head\":10.0}},"
	                  "{\"key\":\"op=cas cpu=1\",\"verdict\":\"missing\","
	                  "\"p50\":{\"baseline\":6.0,\"head\":null}},"
	                  /* inconclusive through its p99 alone, split in two levels */
	                  "{\"key\":\"op=ldadd cpu=1\",\"verdict\":\"inconclusive\","
	                  "\"gate\":\"warn\",\"p50\":{\"verdict\":\"unchanged\","
	                  "\"baseline\":4.0,\"head\":4.0,\"note\":\"p50 note\"},"
	                  "\"p99\":{\"verdict\":\"inconclusive\",\"baseline\":9.0,"
	                  "\"head\":9.9,\"note\":\"unchanged alone, +10% shared\","
	                  "\"level_by\":\"mulblock-v1\",\"decided_by\":null,\"levels\":["
	                  "{\"share\":0.6,\"change\":0.001,\"n_head\":2,"
	                  "\"verdict\":\"unchanged\"},"
	                  "{\"share\":0.4,\"change\":0.1,\"n_head\":2,"
	                  "\"verdict\":\"unknown\"}]}}]}";
	struct store_verdict v = {.project = "linux",
	                          .commit = SHA1,
	                          .host = "grace",
	                          .baseline_ref = "main",
	                          .status = "fail",
	                          .json = doc,
	                          .computed_at = "2026-11-29T10:00:00Z",
	                          .order_us = 1};
	struct aw_verdict_view view;
	struct seen seen = {0};
	struct aw_arena a;

	(void)state;
	assert_int_equal(store_verdict_put(c, &v), 0);
	assert_int_equal(store_verdict_statuses(c, NULL, NULL, "grace", 10, on_verdict, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_false(seen.any_json);
	assert_string_equal(seen.status, "fail");
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(store_verdict_list(c, NULL, SHA1, NULL, 10, on_verdict, &seen), 0);
	assert_true(seen.any_json);
	assert_int_equal(store_verdict_statuses(c, NULL, NULL, NULL, 0, on_verdict, &seen),
	                 -EINVAL);

	aw_arena_init(&a, 1u << 20);
	assert_int_equal(aw_verdict_view_parse(&a, &v, &view), 0);
	assert_int_equal(view.status, AW_VERDICT_FAIL);
	assert_int_equal(view.baseline_runs, 7);
	assert_string_equal(view.cells[0].key, "op=llsc cpu=1");
	assert_int_equal(view.cells[0].verdict, AW_VERDICT_REGRESSED);
	assert_true(view.cells[0].base_p50 == 5.0 && view.cells[0].head_p50 == 10.0);
	assert_int_equal(view.cells[1].verdict, AW_VERDICT_MISSING);
	assert_true(isnan(view.cells[1].head_p50));
	assert_int_equal(view.cells[0].gate, AW_GATE_FAIL);
	assert_null(view.cells[0].note);
	assert_null(view.cells[0].levels);
	/* the note and levels of the metric that decided (p99), the p50's numbers */
	assert_int_equal(view.n_cells, 3);
	assert_int_equal(view.cells[2].verdict, AW_VERDICT_INCONCLUSIVE);
	assert_int_equal(view.cells[2].gate, AW_GATE_WARN);
	assert_true(view.cells[2].base_p50 == 4.0);
	assert_string_equal(view.cells[2].note, "unchanged alone, +10% shared");
	assert_int_equal(view.cells[2].n_levels, 2);
	assert_string_equal(view.cells[2].levels,
	                    "levels by mulblock-v1: L1 (60%) +0.1% unchanged, "
	                    "L2 (40%) +10.0% undecided");
	v.json = "[1, 2]";
	assert_int_equal(aw_verdict_view_parse(&a, &v, &view), -EINVAL);
	aw_arena_release(&a);
	assert_int_equal(aw_verdict_parse("incomplete"), AW_VERDICT_INCOMPLETE);
	assert_int_equal(aw_verdict_parse("frobnicated"), AW_VERDICT_UNKNOWN);
	assert_int_equal(aw_verdict_parse(NULL), AW_VERDICT_UNKNOWN);
	store_disconnect(&c);
	store_close(&s);
}

static void test_names(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	const char **groups, **contention;
	size_t n_groups, n_contention;
	struct aw_arena a;
	char buf[64], path[256];
	int64_t seq;

	(void)state;
	assert_string_equal(aw_cell_group("aarch64", "stadd", NULL, NULL, NULL, buf, sizeof(buf)),
	                    "lse");
	assert_string_equal(aw_cell_group("aarch64", "plain", NULL, NULL, NULL, buf, sizeof(buf)),
	                    "llsc");
	assert_string_equal(aw_cell_group("aarch64", "ldadd", "srcu", NULL, NULL, buf, sizeof(buf)),
	                    "reader-srcu");
	assert_string_equal(
	    aw_cell_group("aarch64", "inc", NULL, "libpcpu", NULL, buf, sizeof(buf)),
	    "subject-libpcpu");
	assert_string_equal(
	    aw_cell_group("aarch64", "nop", NULL, NULL, "srcu-fast", buf, sizeof(buf)), "kernel");
	assert_string_equal(aw_cell_group("aarch64", "frob", NULL, NULL, NULL, buf, sizeof(buf)),
	                    "other");
	/* the atomwatch module's cells: a group per question, refscale's stay "kernel" */
	assert_string_equal(
	    aw_cell_group("aarch64", "kmod", NULL, NULL, "this_cpu_inc_dec", buf, sizeof(buf)),
	    "kernel-percpu");
	assert_string_equal(
	    aw_cell_group("aarch64", "kmod", NULL, NULL, "srcu_read_lock", buf, sizeof(buf)),
	    "kernel-srcu");
	assert_string_equal(
	    aw_cell_group("aarch64", "kmod", NULL, NULL, "local_irq_save_inc", buf, sizeof(buf)),
	    "kernel-sync");
	assert_string_equal(
	    aw_cell_group("aarch64", "refscale", NULL, NULL, "srcu", buf, sizeof(buf)), "kernel");
	assert_string_equal(aw_cell_contention_name("stadd", NULL, "far", buf, sizeof(buf)),
	                    "stadd-far");
	assert_string_equal(aw_cell_contention_name("llsc", "srcu", NULL, buf, sizeof(buf)),
	                    "srcu-llsc");

	seq = put(c, run_of("grace", SHA1, 1, 5.0));
	aw_arena_init(&a, 1u << 20);
	assert_int_equal(aw_run_chart_names(c, &a, "aarch64", seq, &groups, &n_groups, &contention,
	                                    &n_contention),
	                 0);
	/* groups of the first CPU's uncontended cells, in the order first seen */
	assert_int_equal(n_groups, 3);
	assert_string_equal(groups[0], "llsc");
	assert_string_equal(groups[1], "lse");
	assert_string_equal(groups[2], "reader-srcu");
	assert_int_equal(n_contention, 2);
	assert_string_equal(contention[0], "stadd-near");
	assert_string_equal(contention[1], "stadd-far");
	aw_arena_release(&a);

	/* an imported contention paste: duty rows without a contender, contended rows whose
	 * contender CPU is unknown: one grid, and the plain row alone is an op */
	struct aw_result *r = run_of("palmer", SHA2, 2, 5.0);

	for (size_t i = 0; i < r->n_cells; i++)
		aw_cell_release(&r->cells[i]);
	r->n_cells = 0;
	add(r, "stadd", NULL, 0, AW_NONE, AW_NONE, 0, NULL, 63.65);
	add(r, "stadd", NULL, 0, AW_NONE, AW_NONE, 300, NULL, 98.96);
	add(r, "stadd", NULL, 0, AW_NONE, 10, 0, NULL, 115.33);
	add(r, "llsc", NULL, 0, AW_NONE, AW_NONE, 20, NULL, 7.35);
	seq = put(c, r);
	aw_arena_init(&a, 1u << 20);
	assert_int_equal(aw_run_chart_names(c, &a, "aarch64", seq, &groups, &n_groups, &contention,
	                                    &n_contention),
	                 0);
	assert_int_equal(n_groups, 1);
	assert_string_equal(groups[0], "lse");
	assert_int_equal(n_contention, 2);
	assert_string_equal(contention[0], "stadd");
	assert_string_equal(contention[1], "llsc");
	aw_arena_release(&a);

	/* a kernel run: the module's cells on both CPUs and refscale's on none; the trends are
	 * the first CPU's, in their own groups */
	r = run_of("kvm-arm64", SHA2, 3, 5.0);
	for (size_t i = 0; i < r->n_cells; i++)
		aw_cell_release(&r->cells[i]);
	r->n_cells = 0;
	{
		static const char *const kprims[] = {"this_cpu_inc", "this_cpu_inc_dec",
		                                     "srcu_read_lock", "atomic_long_inc"};

		for (int cpu = 0; cpu <= 1; cpu++)
			for (size_t i = 0; i < 4; i++) {
				struct aw_cell *kc = add(r, "kmod", NULL, cpu, AW_NONE, AW_NONE, 0,
				                         NULL, 10.0 + (double)i);

				assert_int_equal(aw_set_str(&kc->kernel, kprims[i]), 0);
				assert_int_equal(aw_cell_make_key(kc), 0);
			}
		struct aw_cell *rc_cell =
		    add(r, "refscale", NULL, AW_NONE, AW_NONE, AW_NONE, 0, NULL, 42.0);

		assert_int_equal(aw_set_str(&rc_cell->kernel, "srcu"), 0);
		assert_int_equal(aw_cell_make_key(rc_cell), 0);
		assert_string_equal(r->cells[1].key, "kernel=this_cpu_inc_dec cpu=0");
	}
	seq = put(c, r);
	aw_arena_init(&a, 1u << 20);
	assert_int_equal(aw_run_chart_names(c, &a, "aarch64", seq, &groups, &n_groups, &contention,
	                                    &n_contention),
	                 0);
	assert_int_equal(n_groups, 4);
	assert_string_equal(groups[0], "kernel-percpu");
	assert_string_equal(groups[1], "kernel-srcu");
	assert_string_equal(groups[2], "kernel-sync");
	assert_string_equal(groups[3], "kernel");
	assert_int_equal(n_contention, 0);
	aw_arena_release(&a);

	const struct aw_chart_id id = {
	    .kind = AW_CHART_COMPARE, .commit = SHA1, .host = "grace", .base = "main"};
	assert_int_equal(aw_chart_table_rel(&id, path, sizeof(path)), 0);
	assert_string_equal(path, "charts/commits/" SHA1 "/hosts/grace/compare-main.cells.json");
	assert_false(aw_chart_path_servable(path));
	assert_int_equal(aw_chart_table_rel(&id, path, 20), -ENAMETOOLONG);
	store_disconnect(&c);
	store_close(&s);
}

/* A run of an x86-64 host: x86's own ops on CPU 0, the plain incq beside the locked ones. */
static struct aw_result *x86_run_of(const char *host, const char *commit, int day)
{
	static const char *const ops[] = {"plain", "lock_inc", "lock_xadd", "cas", "c11_relaxed"};
	struct aw_result *r = run_of(host, commit, day, 5.0);

	for (size_t i = 0; i < r->n_cells; i++)
		aw_cell_release(&r->cells[i]);
	r->n_cells = 0;
	json_decref(r->host);
	r->host = json_pack("{s:s, s:s, s:s, s:{}}", "name", host, "arch", "x86_64", "cpu_model",
	                    "AMD EPYC", "labels");
	assert_non_null(r->host);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		add(r, ops[i], NULL, 0, AW_NONE, AW_NONE, 0, NULL, 1.0 + (double)i + 0.1 * day);
	return r;
}

/* The SVG of a trend chart drawn under `data_dir`, or NULL when there is none. */
static char *trend_svg(const char *data_dir, const char *host, const char *group)
{
	const struct aw_chart_id id = {
	    .kind = AW_CHART_TREND, .host = host, .ref = "main", .name = group};
	char rel[512], path[1024], *svg = NULL;
	size_t len;

	assert_int_equal(aw_chart_path(&id, "svg", rel, sizeof(rel)), 0);
	snprintf(path, sizeof(path), "%s/%s", data_dir, rel);
	if (aw_read_file(path, 1u << 24, &svg, &len, NULL))
		return NULL;
	return svg;
}

/* A trend chart's title and legend name its host's own ops: an x86-64 host's plain incq is
 * drawn beside the locked increments on the "x86" chart, never alone on one named after
 * arm64's LL/SC ("llsc" titled, "plain" in the legend); an arm64 host keeps its "llsc" chart
 * of plain beside llsc. Drawn through the real gnuplot. */
static void test_trends_name_the_arch_ops(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_analysis_opts o;
	struct aw_draw d = {.conn = c, .analysis = &o, .project = "linux"};
	const char **groups, **contention;
	size_t n_groups, n_contention;
	struct aw_arena a;
	char buf[64], charts[300], *err = NULL, *svg;
	int64_t seq = 0;

	(void)state;
	aw_analysis_opts_default(&o);
	/* a data dir of its own: the pages of test_pages() have no chart drawn */
	snprintf(charts, sizeof(charts), "%s/trends", dir);
	assert_int_equal(mkdir(charts, 0700), 0);
	d.data_dir = charts;
	assert_string_equal(aw_cell_group("x86_64", "plain", NULL, NULL, NULL, buf, sizeof(buf)),
	                    "x86");
	assert_string_equal(
	    aw_cell_group("x86_64", "lock_xadd", NULL, NULL, NULL, buf, sizeof(buf)), "x86");
	assert_string_equal(
	    aw_cell_group("x86_64", "prefetchw_lock_inc", NULL, NULL, NULL, buf, sizeof(buf)),
	    "prefetch");
	assert_string_equal(
	    aw_cell_group("x86_64", "cmpxchg16b", NULL, NULL, NULL, buf, sizeof(buf)), "cas");
	/* an unknown arch: arm64's names, and x86's for the ops only x86 has */
	assert_string_equal(aw_cell_group(NULL, "plain", NULL, NULL, NULL, buf, sizeof(buf)),
	                    "llsc");
	assert_string_equal(aw_cell_group(NULL, "lock_inc", NULL, NULL, NULL, buf, sizeof(buf)),
	                    "x86");

	for (int day = 1; day <= 3; day++) {
		char sha[48];

		snprintf(sha, sizeof(sha), "%040d", day);
		int64_t x86 = put(c, x86_run_of("epyc", sha, day));

		seq = seq ? seq : x86;
		put(c, run_of("grace", sha, day, 5.0 + day));
	}
	aw_arena_init(&a, 1u << 20);
	assert_int_equal(aw_run_chart_names(c, &a, "x86_64", seq, &groups, &n_groups, &contention,
	                                    &n_contention),
	                 0);
	assert_int_equal(n_groups, 3);
	assert_string_equal(groups[0], "x86");
	assert_string_equal(groups[1], "cas");
	assert_string_equal(groups[2], "c11");
	aw_arena_release(&a);

	d.gp = aw_gnuplot_new(NULL, &err);
	if (!d.gp)
		fail_msg("gnuplot: %s", err);
	assert_int_equal(aw_draw_trends(&d, "epyc", "main", &err), 0);
	assert_null(err);
	assert_null(trend_svg(charts, "epyc", "llsc"));
	svg = trend_svg(charts, "epyc", "x86");
	assert_non_null(svg);
	assert_non_null(strstr(svg, "epyc on main: x86 (p50, p95-p99 band)"));
	assert_non_null(strstr(svg, ">plain<"));
	assert_non_null(strstr(svg, ">lock_inc<"));
	assert_non_null(strstr(svg, ">lock_xadd<"));
	assert_null(strstr(svg, "llsc"));
	free(svg);

	assert_int_equal(aw_draw_trends(&d, "grace", "main", &err), 0);
	assert_null(err);
	assert_null(trend_svg(charts, "grace", "x86"));
	svg = trend_svg(charts, "grace", "llsc");
	assert_non_null(svg);
	assert_non_null(strstr(svg, "grace on main: llsc (p50, p95-p99 band)"));
	assert_non_null(strstr(svg, ">llsc<"));
	free(svg);
	aw_gnuplot_free(&d.gp);
	store_disconnect(&c);
	store_close(&s);
}

static void test_pages(void **state)
{
	const struct aw_links links = {AW_LINKS_SERVED, NULL};
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_site site = {
	    .links = &links, .data_dir = dir, .baseline_ref = "main", .chart_ready = NULL};
	struct aw_buf out;
	struct store_verdict v = {.project = "linux",
	                          .commit = SHA2,
	                          .host = "grace",
	                          .baseline_ref = "main",
	                          .status = "fail",
	                          .json = "{\"host\":\"grace\",\"status\":\"fail\","
	                                  "\"baseline_runs\":1,\"cells\":[{\"key\":\"op=llsc "
	                                  "cpu=1\",\"verdict\":\"regressed\",\"p50\":{"
	                                  "\"baseline\":5.0,\"head\":20.0}},{\"key\":\"op=stadd "
	                                  "cpu=2\",\"verdict\":\"noisy\",\"p50\":{\"baseline\":"
	                                  "40.0,\"head\":50.0,\"absolute\":true}}]}",
	                          .computed_at = "2026-11-29T10:00:00Z",
	                          .order_us = 2};

	(void)state;
	site.conn = c;
	aw_buf_init(&out, 1u << 24);
	assert_int_equal(aw_site_overview(&site, &out), 0);
	assert_non_null(strstr(out.data, "No host has reported yet."));
	aw_buf_reset(&out);
	assert_int_equal(aw_site_host(&site, "grace", &out), -ENOENT);
	assert_int_equal(aw_site_host(&site, "../etc", &out), -EINVAL);
	assert_int_equal(aw_site_commit(&site, SHA1, &out), -ENOENT);
	assert_int_equal(aw_site_commit(&site, "xyz", &out), -EINVAL);
	assert_int_equal(aw_site_compare(&site, SHA1, "nope", &out), -EINVAL);

	put(c, run_of("grace", SHA1, 1, 5.0));
	put(c, run_of("grace", SHA2, 2, 20.0));
	assert_int_equal(store_verdict_put(c, &v), 0);
	/* the same commit imported on another host under another ref */
	struct aw_result *imported = run_of("altra", SHA2, 2, 6.0);

	assert_int_equal(aw_set_str(&imported->ref, "reference"), 0);
	put(c, imported);

	aw_buf_reset(&out);
	assert_int_equal(aw_site_overview(&site, &out), 0);
	assert_non_null(strstr(out.data, "rack=&lt;script&gt;alert(1)&lt;/script&gt;"));
	assert_null(strstr(out.data, "<script>"));
	assert_non_null(strstr(out.data, "/compare?base=" SHA1 "&amp;head=" SHA2));
	/* the commit's row names both refs, once each */
	assert_true(strstr(out.data, "<td>reference, main</td>") ||
	            strstr(out.data, "<td>main, reference</td>"));
	aw_buf_reset(&out);
	assert_int_equal(aw_site_host(&site, "grace", &out), 0);
	/* nothing drawn: every chart pending, none linked */
	assert_null(strstr(out.data, "<img"));
	assert_non_null(strstr(out.data, "chart not drawn yet"));
	assert_non_null(strstr(out.data, "v-fail"));
	aw_buf_reset(&out);
	assert_int_equal(aw_site_commit(&site, SHA2, &out), 0);
	assert_true(strstr(out.data, "<dt>Ref</dt><dd>reference, main</dd>") ||
	            strstr(out.data, "<dt>Ref</dt><dd>main, reference</dd>"));
	assert_non_null(strstr(out.data, "<tr><td><code>op=llsc cpu=1</code></td>"
	                                 "<td class=\"num\">5</td><td class=\"num\">20</td>"
	                                 "<td class=\"num\">+300.0%</td>"));
	/* a cell the verdict judged in ns shows its change in ns */
	assert_non_null(strstr(out.data, "<tr><td><code>op=stadd cpu=2</code></td>"
	                                 "<td class=\"num\">40</td><td class=\"num\">50</td>"
	                                 "<td class=\"num\">+10.0 ns</td>"));
	assert_non_null(strstr(out.data, "v-regressed"));
	/* a cell the verdict does not list is unchanged */
	assert_non_null(strstr(out.data, "<tr><td><code>op=stadd cpu=1</code></td>"));
	assert_non_null(strstr(out.data, "v-unchanged"));
	aw_buf_reset(&out);
	assert_int_equal(aw_site_compare(&site, SHA1, SHA2, &out), 0);
	assert_non_null(strstr(out.data, "<td class=\"num\">5</td><td class=\"num\">20</td>"));
	aw_buf_release(&out);
	store_disconnect(&c);
	store_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_verdict_statuses_and_view),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_trends_name_the_arch_ops),
	    cmocka_unit_test(test_pages),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
