/* The five chart types: each turns its plain data struct into a gnuplot script (strings and
 * numbers only through aw_gp_put_string/aw_gp_put_number), and all share the drawing step with
 * its cache: a chart is redrawn only when the SHA-256 of its script differs from the sidecar's. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aw/sha256.h"
#include "aw/util.h"

/* Bump when the look of the charts changes: every cached chart is then redrawn. */
#define CHART_STYLE_VERSION 1

#define SCRIPT_LIMIT  (32u << 20)
#define HASH_FILE_MAX 256

static const char *const series_colours[] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
    "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#843c39",
};
#define N_COLOURS (sizeof(series_colours) / sizeof(series_colours[0]))
#define RED       "#d62728"

/* A script under construction; the first error sticks and later appends do nothing. */
struct script {
	struct aw_buf b;
	int rc;
};

static void s_puts(struct script *s, const char *text)
{
	if (!s->rc)
		s->rc = aw_buf_puts(&s->b, text);
}

__attribute__((format(printf, 2, 3))) static void s_printf(struct script *s, const char *fmt, ...)
{
	va_list ap;

	if (s->rc)
		return;
	va_start(ap, fmt);
	s->rc = aw_buf_vprintf(&s->b, fmt, ap);
	va_end(ap);
}

/* Text shown in full (titles, key entries) or, `short_label`, cut for an axis. */
static void s_text(struct script *s, const char *text, bool short_label)
{
	if (!s->rc)
		s->rc = aw_gp_put_text(&s->b, text, short_label ? 32 : AW_GP_TEXT_MAX);
}

static void s_str(struct script *s, const char *text)
{
	s_text(s, text, false);
}

static void s_num(struct script *s, double v)
{
	if (!s->rc)
		s->rc = aw_gp_put_number(&s->b, v);
}

static bool positive(double v)
{
	return isfinite(v) && v > 0;
}

/* Running range of the values a log axis shows. */
struct range {
	double lo, hi;
};

static void range_add(struct range *r, double v)
{
	if (!positive(v))
		return;
	if (!(r->lo <= v))
		r->lo = v;
	if (!(r->hi >= v))
		r->hi = v;
}

static bool range_empty(const struct range *r)
{
	return !positive(r->lo);
}

/* Tics between the powers of ten of a log axis spanning less than two decades, where gnuplot
 * alone labels one power of ten or none (a series from 3.9 to 8.6 ns got a bare axis): 2 and
 * 5 per decade, and finer steps within one decade. */
static void put_log_tics(struct script *s, const char *axis, double lo, double hi)
{
	static const double coarse[] = {2, 5};
	static const double fine[] = {1.5, 2, 3, 4, 5, 6, 7, 8};
	const double decades = log10(hi / lo);
	const double *m = decades < 1 ? fine : coarse;
	const size_t n_m = decades < 1 ? sizeof(fine) / sizeof(*fine) : 2;
	bool any = false;

	if (!(decades < 2))
		return;
	for (double p = pow(10, floor(log10(lo))); p <= hi; p *= 10) {
		for (size_t i = 0; i < n_m; i++) {
			const double v = m[i] * p;

			if (v < lo || v > hi)
				continue;
			if (any)
				s_puts(s, ", ");
			else
				s_printf(s, "set %stics add (", axis);
			s_num(s, v);
			any = true;
		}
	}
	if (any)
		s_puts(s, ")\n");
}

/* Widens the range by a margin on the log scale and emits it for `axis` ("y", "cb"). */
static void put_log_range(struct script *s, const char *axis, const struct range *r, double margin)
{
	s_printf(s, "set logscale %s\nset %srange [", axis, axis);
	s_num(s, r->lo / margin);
	s_puts(s, ":");
	s_num(s, r->hi * margin);
	s_puts(s, "]\n");
	put_log_tics(s, axis, r->lo / margin, r->hi * margin);
}

static void put_title(struct script *s, const char *title)
{
	s_puts(s, "set title ");
	s_str(s, title ? title : "");
	s_puts(s, " font \",12\"\n");
}

/* The whole chart when there is nothing to show. */
static void put_no_data(struct script *s, const char *title)
{
	put_title(s, title);
	s_puts(s, "unset border\nunset tics\nunset key\nset xrange [0:1]\nset yrange [0:1]\n"
	          "set label 1 \"no data\" at graph 0.5, graph 0.5 center font \",16\"\n"
	          "plot 2 notitle\n");
}

/* "set xtics (...)" from labels; every `step`-th label is shown. `label(i, ctx)` may return
 * NULL for an unlabelled tick. */
static void put_tics(struct script *s, const char *axis, size_t n, size_t step,
                     const char *(*label)(size_t i, const void *ctx, char *tmp, size_t size),
                     const void *ctx)
{
	char tmp[64];
	bool first = true;

	s_printf(s, "set %stics (", axis);
	for (size_t i = 0; i < n; i += step) {
		const char *text = label(i, ctx, tmp, sizeof(tmp));

		s_puts(s, first ? "" : ", ");
		s_text(s, text ? text : "", true);
		s_printf(s, " %zu", i);
		first = false;
	}
	s_puts(s, ")\n");
}

static const char *label_from_array(size_t i, const void *ctx, char *tmp, size_t size)
{
	const char *const *names = ctx;

	(void)tmp;
	(void)size;
	return names ? names[i] : NULL;
}

/* A data block "$name" of rows of `cols` numbers. */
static void block_begin(struct script *s, const char *name)
{
	s_printf(s, "$%s << EOD\n", name);
}

static void block_row(struct script *s, const double *v, size_t cols)
{
	for (size_t i = 0; i < cols; i++) {
		if (i)
			s_puts(s, " ");
		s_num(s, v[i]);
	}
	s_puts(s, "\n");
}

static void block_end(struct script *s)
{
	s_puts(s, "EOD\n");
}

/* Appends ", " between the elements of one plot command. */
static void plot_next(struct script *s, bool *first)
{
	s_puts(s, *first ? "plot " : ", \\\n     ");
	*first = false;
}

/* ---- chart 1: compare ---- */

static void whisker(double p50, double p95, double p99, double out[3])
{
	double lo = positive(p95) ? p95 : p50, hi = positive(p99) ? p99 : p50;

	out[0] = p50;
	out[1] = lo < hi ? lo : hi;
	out[2] = lo < hi ? hi : lo;
}

static const char *label_compare(size_t i, const void *ctx, char *tmp, size_t size)
{
	const struct aw_chart_compare *c = ctx;

	(void)tmp;
	(void)size;
	return c->items[i].name;
}

static int script_compare(struct script *s, const struct aw_chart_compare *c)
{
	struct range r = {NAN, NAN};
	size_t n_base = 0, n_head = 0, n_reg = 0;
	bool first = true;

	if (c->n_items > AW_CHART_MAX_ITEMS)
		return -E2BIG;
	if (c->n_items && !c->items)
		return -EINVAL;
	for (size_t i = 0; i < c->n_items; i++) {
		const struct aw_chart_compare_item *it = &c->items[i];

		if (positive(it->base_p50)) {
			n_base++;
			range_add(&r, it->base_p50);
			range_add(&r, it->base_p95);
			range_add(&r, it->base_p99);
		}
		if (positive(it->head_p50)) {
			it->regressed ? n_reg++ : n_head++;
			range_add(&r, it->head_p50);
			range_add(&r, it->head_p95);
			range_add(&r, it->head_p99);
		}
	}
	if (range_empty(&r)) {
		put_no_data(s, c->title);
		return 0;
	}
	put_title(s, c->title);
	s_puts(s, "set ylabel \"ns per op: p50 marker, p95-p99 whisker (log scale)\"\n"
	          "set grid ytics mytics lc rgb \"#dddddd\"\nset format y \"%g\"\n"
	          "set key outside right top vertical\n"
	          "set bars small\n"
	          "set xtics nomirror rotate by 35 right\nset bmargin 9\n");
	put_log_range(s, "y", &r, 1.6);
	s_printf(s, "set xrange [-0.6:%zu.4]\n", c->n_items - 1);
	put_tics(s, "x", c->n_items, 1, label_compare, c);

	block_begin(s, "base");
	for (size_t i = 0; i < c->n_items; i++) {
		const struct aw_chart_compare_item *it = &c->items[i];
		double row[4];

		if (!positive(it->base_p50))
			continue;
		row[0] = (double)i - 0.17;
		whisker(it->base_p50, it->base_p95, it->base_p99, row + 1);
		block_row(s, row, 4);
	}
	block_end(s);
	for (int pass = 0; pass < 2; pass++) {
		block_begin(s, pass ? "reg" : "head");
		for (size_t i = 0; i < c->n_items; i++) {
			const struct aw_chart_compare_item *it = &c->items[i];
			double row[4];

			if (!positive(it->head_p50) || it->regressed != (pass == 1))
				continue;
			row[0] = (double)i + 0.17;
			whisker(it->head_p50, it->head_p95, it->head_p99, row + 1);
			block_row(s, row, 4);
		}
		block_end(s);
	}
	if (n_base) {
		plot_next(s, &first);
		s_puts(s,
		       "$base using 1:2:3:4 with yerrorbars pt 7 ps 0.8 lc rgb \"#7f7f7f\" title ");
		s_str(s, c->base_label ? c->base_label : "baseline");
	}
	if (n_head) {
		plot_next(s, &first);
		s_puts(s,
		       "$head using 1:2:3:4 with yerrorbars pt 7 ps 0.9 lc rgb \"#1f77b4\" title ");
		s_str(s, c->head_label ? c->head_label : "head");
	}
	if (n_reg) {
		plot_next(s, &first);
		s_puts(s,
		       "$reg using 1:2:3:4 with yerrorbars pt 7 ps 1.1 lc rgb \"" RED "\" title ");
		s_str(s, aw_verdict_name(AW_VERDICT_REGRESSED));
	}
	s_puts(s, "\n");
	return 0;
}

/* ---- chart 2: trend ---- */

static const char *label_trend(size_t i, const void *ctx, char *tmp, size_t size)
{
	const struct aw_chart_trend *t = ctx;

	(void)tmp;
	(void)size;
	return t->labels ? t->labels[i] : NULL;
}

static int script_trend(struct script *s, const struct aw_chart_trend *t)
{
	struct range r = {NAN, NAN};
	size_t n_cp = 0, n_reg = 0, n_marks = 0, n_culprits = 0;
	bool first = true;
	char name[32];

	if (t->n_points > AW_CHART_MAX_POINTS || t->n_series > AW_CHART_MAX_SERIES ||
	    t->n_marks > AW_CHART_MAX_POINTS)
		return -E2BIG;
	if (t->n_marks && !t->marks)
		return -EINVAL;
	for (size_t j = 0; j < t->n_marks; j++)
		if (t->marks[j].point < t->n_points)
			*(t->marks[j].culprit ? &n_culprits : &n_marks) += 1;
	if (t->n_series && !t->series)
		return -EINVAL;
	for (size_t k = 0; k < t->n_series; k++) {
		const struct aw_chart_trend_series *se = &t->series[k];

		if (t->n_points && !se->p50)
			return -EINVAL;
		for (size_t i = 0; i < t->n_points; i++) {
			range_add(&r, se->p50[i]);
			if (se->p95 && se->p99) {
				range_add(&r, se->p95[i]);
				range_add(&r, se->p99[i]);
			}
		}
		for (size_t j = 0; j < se->n_change_points; j++)
			n_cp += se->change_points[j] < t->n_points;
		for (size_t j = 0; j < se->n_regressions; j++)
			n_reg += se->regressions[j] < t->n_points &&
			         positive(se->p50[se->regressions[j]]);
	}
	if (range_empty(&r)) {
		put_no_data(s, t->title);
		return 0;
	}
	r.lo /= 1.6;
	r.hi *= 1.6;
	put_title(s, t->title);
	s_puts(s, "set ylabel \"ns per op: p50 line, p95-p99 band (log scale)\"\n"
	          "set grid ytics mytics lc rgb \"#dddddd\"\nset format y \"%g\"\n"
	          "set key outside right top vertical\nset xtics nomirror rotate by 45 right\n"
	          "set style fill transparent solid 0.25 noborder\nset bmargin 5\n");
	put_log_range(s, "y", &r, 1.0);
	s_printf(s, "set xrange [-0.5:%zu.5]\n", t->n_points - 1);
	put_tics(s, "x", t->n_points, (t->n_points + 39) / 40, label_trend, t);

	for (size_t k = 0; k < t->n_series; k++) {
		const struct aw_chart_trend_series *se = &t->series[k];

		snprintf(name, sizeof(name), "band%zu", k);
		block_begin(s, name);
		for (size_t i = 0; se->p95 && se->p99 && i < t->n_points; i++) {
			double row[3] = {(double)i, se->p95[i], se->p99[i]};

			if (positive(row[1]) && positive(row[2]))
				block_row(s, row, 3);
		}
		block_end(s);
		snprintf(name, sizeof(name), "p50_%zu", k);
		block_begin(s, name);
		for (size_t i = 0; i < t->n_points; i++) {
			double row[2] = {(double)i, se->p50[i]};

			if (positive(row[1]))
				block_row(s, row, 2);
		}
		block_end(s);
	}
	block_begin(s, "cp");
	for (size_t k = 0; k < t->n_series; k++) {
		for (size_t j = 0; j < t->series[k].n_change_points; j++) {
			double row[3] = {(double)t->series[k].change_points[j], r.lo, r.hi - r.lo};

			if (t->series[k].change_points[j] < t->n_points)
				block_row(s, row, 3);
		}
	}
	block_end(s);
	/* the labelled marks: the host's changes and the culprits bisections named */
	for (int culprit = 0; culprit < 2; culprit++) {
		block_begin(s, culprit ? "culprits" : "marks");
		for (size_t j = 0; j < t->n_marks; j++) {
			const struct aw_chart_mark *m = &t->marks[j];
			double row[3] = {(double)m->point, r.lo, r.hi - r.lo};

			if (m->point < t->n_points && m->culprit == (culprit == 1))
				block_row(s, row, 3);
		}
		block_end(s);
	}
	for (size_t j = 0; j < t->n_marks; j++) {
		const struct aw_chart_mark *m = &t->marks[j];

		if (m->point >= t->n_points)
			continue;
		s_printf(s, "set label %zu ", 100 + j);
		s_str(s, m->label);
		s_printf(s, " at %zu, graph 0.98 rotate by 90 right font \",8\" tc rgb \"%s\"\n",
		         m->point, m->culprit ? RED : "#9467bd");
	}
	block_begin(s, "reg");
	for (size_t k = 0; k < t->n_series; k++) {
		const struct aw_chart_trend_series *se = &t->series[k];

		for (size_t j = 0; j < se->n_regressions; j++) {
			size_t i = se->regressions[j];

			if (i < t->n_points && positive(se->p50[i])) {
				double row[2] = {(double)i, se->p50[i]};

				block_row(s, row, 2);
			}
		}
	}
	block_end(s);

	for (size_t k = 0; k < t->n_series; k++) {
		const struct aw_chart_trend_series *se = &t->series[k];
		const char *colour = series_colours[k % N_COLOURS];
		bool has_band = false, has_p50 = false;

		for (size_t i = 0; i < t->n_points; i++) {
			has_p50 |= positive(se->p50[i]);
			has_band |=
			    se->p95 && se->p99 && positive(se->p95[i]) && positive(se->p99[i]);
		}
		if (has_band) {
			plot_next(s, &first);
			s_printf(s, "$band%zu using 1:2:3 with filledcurves fc rgb \"%s\" notitle",
			         k, colour);
		}
		if (has_p50) {
			plot_next(s, &first);
			/* markers while they can be told apart, a plain line beyond */
			s_printf(s, "$p50_%zu using 1:2 with %s lw 1.5 lc rgb \"%s\" title ", k,
			         t->n_points <= 60 ? "linespoints pt 7 ps 0.5" : "lines", colour);
			s_str(s, se->name);
		}
	}
	if (n_cp) {
		plot_next(s, &first);
		s_puts(s, "$cp using 1:2:(0):3 with vectors nohead dt 2 lw 1.5 lc rgb \"#ff7f0e\" "
		          "title \"change point\"");
	}
	if (n_marks) {
		plot_next(s, &first);
		s_puts(s,
		       "$marks using 1:2:(0):3 with vectors nohead dt 3 lw 1.5 lc rgb \"#9467bd\" "
		       "title \"host changed\"");
	}
	if (n_culprits) {
		plot_next(s, &first);
		s_puts(s, "$culprits using 1:2:(0):3 with vectors nohead lw 2 lc rgb \"" RED "\" "
		          "title \"culprit (bisection)\"");
	}
	if (n_reg) {
		plot_next(s, &first);
		s_puts(s, "$reg using 1:2 with points pt 6 ps 1.8 lw 2 lc rgb \"" RED "\" "
		          "title \"regression\"");
	}
	s_puts(s, "\n");
	return 0;
}

/* ---- charts 3 and 5: heat maps ---- */

struct grid {
	const char *title, *xlabel, *ylabel;
	size_t n_rows, n_cols;
	const char *(*row_label)(size_t i, const void *ctx, char *tmp, size_t size);
	const char *(*col_label)(size_t i, const void *ctx, char *tmp, size_t size);
	const void *row_ctx, *col_ctx;
	const double *values; /* n_rows * n_cols */
};

static int script_grid(struct script *s, const struct grid *g)
{
	struct range r = {NAN, NAN};
	size_t n_missing = 0, n_cells = g->n_rows * g->n_cols;

	if (g->n_rows > AW_CHART_MAX_ITEMS || g->n_cols > AW_CHART_MAX_ITEMS)
		return -E2BIG;
	if (n_cells && !g->values)
		return -EINVAL;
	for (size_t i = 0; i < n_cells; i++) {
		range_add(&r, g->values[i]);
		n_missing += !positive(g->values[i]);
	}
	if (range_empty(&r)) {
		put_no_data(s, g->title);
		return 0;
	}
	put_title(s, g->title);
	s_puts(s, "unset key\nset tics scale 0\nset xtics nomirror\nset ytics nomirror\n"
	          "set palette defined (0 \"#91bfdb\", 0.5 \"#ffffbf\", 1 \"#fc8d59\")\n"
	          "set cblabel \"p50 ns per op (log scale)\" offset 1.5,0\nset format cb \"%g\"\n");
	if (g->n_cols > 8)
		s_puts(s, "set xtics rotate by 35 right\nset bmargin 6\n");
	s_puts(s, "set xlabel ");
	s_str(s, g->xlabel);
	s_puts(s, "\nset ylabel ");
	s_str(s, g->ylabel);
	s_puts(s, "\n");
	put_log_range(s, "cb", &r, r.lo == r.hi ? 1.5 : 1.0);
	if (r.hi < 10 * r.lo) { /* no power of ten inside: label the ends and the middle */
		s_puts(s, "set cbtics (");
		s_num(s, r.lo);
		s_puts(s, ", ");
		s_num(s, sqrt(r.lo * r.hi));
		s_puts(s, ", ");
		s_num(s, r.hi);
		s_puts(s, ")\nset format cb \"%.3g\"\n");
	}
	s_printf(s, "set xrange [-0.5:%zu.5]\nset yrange [%zu.5:-0.5]\n", g->n_cols - 1,
	         g->n_rows - 1);
	put_tics(s, "x", g->n_cols, 1, g->col_label, g->col_ctx);
	put_tics(s, "y", g->n_rows, 1, g->row_label, g->row_ctx);

	for (int pass = 0; pass < 2; pass++) {
		block_begin(s, pass ? "missing" : "cells");
		for (size_t i = 0; i < g->n_rows; i++) {
			for (size_t j = 0; j < g->n_cols; j++) {
				double v = g->values[i * g->n_cols + j];
				double row[3] = {(double)j, (double)i, v};

				if (positive(v) != (pass == 0))
					continue;
				block_row(s, row, pass ? 2 : 3);
			}
		}
		block_end(s);
	}
	s_puts(s, "plot $cells using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder "
	          "lc palette notitle");
	if (n_missing)
		s_puts(s, ", \\\n     $missing using 1:2:(0.5):(0.5) with boxxyerror fs solid 1.0 "
		          "noborder lc rgb \"#e0e0e0\" notitle");
	/* values printed in the cells while they stay legible */
	if (n_cells <= 800) {
		s_puts(s,
		       ", \\\n     $cells using 1:2:(sprintf(\"%.3g\", $3)) with labels notitle");
		if (n_missing)
			s_puts(s, ", \\\n     $missing using 1:2:(\"n/a\") with labels "
			          "tc rgb \"#777777\" notitle");
	}
	s_puts(s, "\n");
	return 0;
}

static int script_heatmap(struct script *s, const struct aw_chart_heatmap *h)
{
	struct grid g = {
	    .title = h->title,
	    .xlabel = "host",
	    .ylabel = "op",
	    .n_rows = h->n_rows,
	    .n_cols = h->n_cols,
	    .row_label = label_from_array,
	    .col_label = label_from_array,
	    .row_ctx = h->rows,
	    .col_ctx = h->cols,
	    .values = h->p50,
	};

	return script_grid(s, &g);
}

static const char *label_int64(size_t i, const void *ctx, char *tmp, size_t size)
{
	snprintf(tmp, size, "%lld", (long long)((const int64_t *)ctx)[i]);
	return tmp;
}

static int script_contention(struct script *s, const struct aw_chart_contention *c)
{
	struct grid g = {
	    .title = c->title,
	    .xlabel = "duty d: nops between timed ops",
	    .ylabel = "contention c: contender nops between its ops",
	    .n_rows = c->n_c,
	    .n_cols = c->n_d,
	    .row_label = label_int64,
	    .col_label = label_int64,
	    .row_ctx = c->c,
	    .col_ctx = c->d,
	    .values = c->p50,
	};

	if ((c->n_c && !c->c) || (c->n_d && !c->d))
		return -EINVAL;
	return script_grid(s, &g);
}

/* ---- chart 4: per CPU ---- */

static int script_percpu(struct script *s, const struct aw_chart_percpu *p)
{
	struct range r = {NAN, NAN};
	int cpu_min = INT_MAX, cpu_max = INT_MIN;
	bool first = true;
	char name[32];

	if (p->n_ops > AW_CHART_MAX_ITEMS || p->n_cpus > AW_CHART_MAX_ITEMS)
		return -E2BIG;
	if ((p->n_ops && p->n_cpus && !p->p50) || (p->n_cpus && !p->cpus))
		return -EINVAL;
	for (size_t i = 0; i < p->n_ops * p->n_cpus; i++)
		range_add(&r, p->p50[i]);
	if (range_empty(&r)) {
		put_no_data(s, p->title);
		return 0;
	}
	for (size_t j = 0; j < p->n_cpus; j++) {
		cpu_min = p->cpus[j] < cpu_min ? p->cpus[j] : cpu_min;
		cpu_max = p->cpus[j] > cpu_max ? p->cpus[j] : cpu_max;
	}
	put_title(s, p->title);
	s_puts(s, "set ylabel \"p50 ns per op (log scale)\"\nset xlabel \"CPU\"\n"
	          "set grid xtics ytics mytics lc rgb \"#dddddd\"\nset format y \"%g\"\n"
	          "set key outside right top vertical\nset xtics nomirror\n");
	put_log_range(s, "y", &r, 1.6);
	s_puts(s, "set xrange [");
	s_num(s, cpu_min - 0.5);
	s_puts(s, ":");
	s_num(s, cpu_max + 0.5);
	s_puts(s, "]\n");
	if (cpu_max - cpu_min <= 64)
		s_puts(s, "set xtics 1\n");
	for (size_t k = 0; k < p->n_ops; k++) {
		snprintf(name, sizeof(name), "op%zu", k);
		block_begin(s, name);
		for (size_t j = 0; j < p->n_cpus; j++) {
			double row[2] = {(double)p->cpus[j], p->p50[k * p->n_cpus + j]};

			if (positive(row[1]))
				block_row(s, row, 2);
		}
		block_end(s);
	}
	for (size_t k = 0; k < p->n_ops; k++) {
		bool any = false;

		for (size_t j = 0; j < p->n_cpus; j++)
			any |= positive(p->p50[k * p->n_cpus + j]);
		if (!any)
			continue;
		plot_next(s, &first);
		if (p->n_cpus <= 32)
			s_printf(s, "$op%zu using 1:2 with linespoints pt %zu ps 0.7 lw 1.5 ", k,
			         5 + 2 * ((k / N_COLOURS) % 4));
		else /* a marker per CPU would hide the lines */
			s_printf(s, "$op%zu using 1:2 with lines lw 1.5 dt %zu ", k,
			         1 + (k / N_COLOURS) % 4);
		s_printf(s, "lc rgb \"%s\" title ", series_colours[k % N_COLOURS]);
		s_str(s, p->ops ? p->ops[k] : NULL);
	}
	s_puts(s, "\n");
	return 0;
}

static int script_ab(struct script *s, const struct aw_chart_ab *c)
{
	double lo = 0, hi = 0;
	bool first = true, any = false;
	char name[32];

	if (c->n_series > AW_CHART_MAX_SERIES || c->n_rounds > AW_CHART_MAX_ITEMS)
		return -E2BIG;
	if (c->n_series && c->n_rounds && (!c->pct || !c->aa || !c->estimate))
		return -EINVAL;
	for (size_t i = 0; i < c->n_series * c->n_rounds; i++)
		if (isfinite(c->pct[i])) {
			lo = fmin(lo, c->pct[i]);
			hi = fmax(hi, c->pct[i]);
			any = true;
		}
	if (!any) {
		put_no_data(s, c->title);
		return 0;
	}
	put_title(s, c->title);
	s_puts(s, "set ylabel \"head / base - 1 (%)\"\nset xlabel \"round\"\n"
	          "set grid xtics ytics lc rgb \"#dddddd\"\nset format y \"%+.1f\"\n"
	          "set key outside right top vertical\nset xtics nomirror\n");
	s_puts(s, "set xrange [0.5:");
	s_num(s, (double)c->n_rounds + 0.5);
	s_puts(s, "]\nset yrange [");
	s_num(s, lo - 0.1 * (hi - lo) - 0.05);
	s_puts(s, ":");
	s_num(s, hi + 0.1 * (hi - lo) + 0.05);
	s_puts(s, "]\n");
	for (size_t k = 0; k < c->n_series; k++) {
		snprintf(name, sizeof(name), "s%zu", k);
		block_begin(s, name);
		for (size_t j = 0; j < c->n_rounds; j++) {
			double row[2] = {(double)(j + 1), c->pct[k * c->n_rounds + j]};

			if (isfinite(row[1]))
				block_row(s, row, 2);
		}
		block_end(s);
	}
	plot_next(s, &first);
	s_puts(s, "0 with lines lc rgb \"#888888\" dt 2 notitle");
	for (size_t k = 0; k < c->n_series; k++) {
		const char *colour = c->aa[k] ? "#999999" : series_colours[(k / 2) % N_COLOURS];

		plot_next(s, &first);
		s_printf(s, "$s%zu using 1:2 with points pt %d ps 0.9 lc rgb \"%s\" title ", k,
		         c->aa[k] ? 6 : 7, colour);
		s_str(s, c->series ? c->series[k] : NULL);
		if (isfinite(c->estimate[k])) {
			plot_next(s, &first);
			s_num(s, c->estimate[k]);
			s_printf(s, " with lines lc rgb \"%s\" lw 1.5 dt %d notitle", colour,
			         c->aa[k] ? 3 : 1);
		}
	}
	s_puts(s, "\n");
	return 0;
}

/* ---- drawing with the cache ---- */

/* Whether <dir>/<rel> is a regular file with something in it, reached without a link. */
static bool file_there(const char *dir, const char *rel)
{
	struct stat st;

	return aw_stat_beneath(dir, rel, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

/* Whether the sidecar <dir>/<rel[2]> says `hash` and both drawings are there. */
static bool cache_fresh(const char *dir, char rel[3][PATH_MAX], const char *hash)
{
	char *data = NULL;
	size_t len = 0;
	bool fresh = false;

	if (aw_read_beneath(dir, rel[2], HASH_FILE_MAX, &data, &len) < 0)
		return false;
	while (len && (data[len - 1] == '\n' || data[len - 1] == ' '))
		data[--len] = '\0';
	fresh = strcmp(data, hash) == 0 && file_there(dir, rel[0]) && file_there(dir, rel[1]);
	free(data);
	return fresh;
}

static const char *kind_name(enum aw_chart_kind k)
{
	switch (k) {
	case AW_CHART_COMPARE:
		return "compare";
	case AW_CHART_TREND:
		return "trend";
	case AW_CHART_HEATMAP:
		return "heatmap";
	case AW_CHART_PERCPU:
		return "percpu";
	case AW_CHART_CONTENTION:
		return "contention";
	case AW_CHART_AB:
		return "ab";
	}
	return "?";
}

static int draw_script(struct aw_gnuplot *gp, const char *data_dir, const struct aw_chart_id *id,
                       struct script *s, unsigned flags, char **err)
{
	char rel[3][PATH_MAX]; /* svg, png, hash */
	static const char *const ext[3] = {"svg", "png", "hash"};
	char hash[AW_SHA256_HEX_LEN + 1], line[AW_SHA256_HEX_LEN + 2];
	unsigned width, height;
	int rc = 0;

	aw_chart_size(id->kind, &width, &height);
	for (int i = 0; i < 3; i++) {
		rc = aw_chart_path(id, ext[i], rel[i], sizeof(rel[i]));
		if (rc)
			return aw_errorf(err, rc, "bad %s chart id: %s", kind_name(id->kind),
			                 rc == -EINVAL ? "a field it needs is missing"
			                               : strerror(-rc));
	}
	rc = aw_sha256_hex(s->b.data, s->b.len, hash);
	if (rc)
		return aw_errorf(err, rc, "cannot hash the data of '%s'", rel[0]);
	if (!(flags & AW_DRAW_FORCE) && cache_fresh(data_dir, rel, hash))
		return AW_DRAW_CACHED;
	struct aw_gp_job job = {
	    .script = s->b.data,
	    .script_len = s->b.len,
	    .width = width,
	    .height = height,
	    .dir = data_dir,
	    .svg_rel = rel[0],
	    .png_rel = rel[1],
	};
	rc = aw_gnuplot_draw(gp, &job, err);
	if (rc)
		return rc;
	/* no fsync: a lost sidecar only costs a redraw */
	snprintf(line, sizeof(line), "%s\n", hash);
	return aw_write_beneath(data_dir, rel[2], line, strlen(line), false, err);
}

/* The part every draw function shares: check the kind, build the script, draw it. */
static int draw_kind(struct aw_gnuplot *gp, const char *data_dir, const struct aw_chart_id *id,
                     enum aw_chart_kind kind, int (*build)(struct script *, const void *),
                     const void *data, unsigned flags, char **err)
{
	struct script s = {.rc = 0};
	unsigned width, height;
	int rc;

	if (!gp || !data_dir || !id || !data || id->kind != kind)
		return aw_errorf(err, -EINVAL, "bad arguments to draw a %s chart", kind_name(kind));
	aw_buf_init(&s.b, SCRIPT_LIMIT);
	aw_chart_size(kind, &width, &height);
	/* the first line makes the style version and size part of the hashed script */
	s_printf(&s, "# atomwatch %s chart, style %d, %ux%u\n", kind_name(kind),
	         CHART_STYLE_VERSION, width, height);
	rc = build(&s, data);
	if (!rc)
		rc = s.rc;
	if (rc) {
		aw_errorf(err, rc, "cannot build the %s chart: %s", kind_name(kind),
		          rc == -E2BIG ? "too much data" : strerror(-rc));
		goto out;
	}
	rc = draw_script(gp, data_dir, id, &s, flags, err);
out:
	aw_buf_release(&s.b);
	return rc;
}

static int build_compare(struct script *s, const void *d)
{
	return script_compare(s, d);
}

static int build_trend(struct script *s, const void *d)
{
	return script_trend(s, d);
}

static int build_heatmap(struct script *s, const void *d)
{
	return script_heatmap(s, d);
}

static int build_percpu(struct script *s, const void *d)
{
	return script_percpu(s, d);
}

static int build_contention(struct script *s, const void *d)
{
	return script_contention(s, d);
}

int aw_chart_draw_compare(struct aw_gnuplot *gp, const char *data_dir, const struct aw_chart_id *id,
                          const struct aw_chart_compare *c, unsigned flags, char **err)
{
	return draw_kind(gp, data_dir, id, AW_CHART_COMPARE, build_compare, c, flags, err);
}

int aw_chart_draw_trend(struct aw_gnuplot *gp, const char *data_dir, const struct aw_chart_id *id,
                        const struct aw_chart_trend *t, unsigned flags, char **err)
{
	return draw_kind(gp, data_dir, id, AW_CHART_TREND, build_trend, t, flags, err);
}

int aw_chart_draw_heatmap(struct aw_gnuplot *gp, const char *data_dir, const struct aw_chart_id *id,
                          const struct aw_chart_heatmap *h, unsigned flags, char **err)
{
	return draw_kind(gp, data_dir, id, AW_CHART_HEATMAP, build_heatmap, h, flags, err);
}

int aw_chart_draw_percpu(struct aw_gnuplot *gp, const char *data_dir, const struct aw_chart_id *id,
                         const struct aw_chart_percpu *p, unsigned flags, char **err)
{
	return draw_kind(gp, data_dir, id, AW_CHART_PERCPU, build_percpu, p, flags, err);
}

static int build_ab(struct script *s, const void *d)
{
	return script_ab(s, d);
}

int aw_chart_draw_ab(struct aw_gnuplot *gp, const char *data_dir, const struct aw_chart_id *id,
                     const struct aw_chart_ab *c, unsigned flags, char **err)
{
	return draw_kind(gp, data_dir, id, AW_CHART_AB, build_ab, c, flags, err);
}

int aw_chart_draw_contention(struct aw_gnuplot *gp, const char *data_dir,
                             const struct aw_chart_id *id, const struct aw_chart_contention *c,
                             unsigned flags, char **err)
{
	return draw_kind(gp, data_dir, id, AW_CHART_CONTENTION, build_contention, c, flags, err);
}
