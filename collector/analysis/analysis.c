/* Regression analysis over the store; see analysis.h. One host at a time: read the head runs
 * and up to `history` earlier runs with their cells, line the cells up by key, hand p50 and p99
 * of every cell to aw_detect() as one family, and rank the answers. */
#include "analysis.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/log.h"
#include "aw/stats.h"
#include "aw/strmap.h"
#include "aw/util.h"
#include "control.h"

#define MAX_HEAD_RUNS 16
#define MAX_CELLS     65536
#define MAX_CP        32

void aw_analysis_opts_default(struct aw_analysis_opts *o)
{
	const struct aw_detect_opts d = AW_DETECT_OPTS_DEFAULT;

	memset(o, 0, sizeof(*o));
	o->baseline_ref = "main";
	o->history = 40;
	o->detect = d;
	o->thresholds = NULL;
	o->confirm_runs = 2;
	o->suspect_p = 0.20;
	o->screen_noise = 0.01;
}

/* ---- reading runs ---- */

struct run_ref {
	int64_t seq;
	int64_t order_us;
	char *run_id, *commit, *matrix_hash, *platform_hash;
	double *ref; /* the reference kernel beside each cell, document order (NAN: none) */
	size_t n_ref;
	bool confirmation; /* re-measures another run's suspects */
};

static void run_ref_release(struct run_ref *x)
{
	free(x->run_id);
	free(x->commit);
	free(x->matrix_hash);
	free(x->platform_hash);
	free(x->ref);
}

/* The values of a stored reference series ({kernel, unit, values}); a series that does not
 * parse is no series (the run is judged without it). */
static int parse_reference(const char *text, struct run_ref *x)
{
	json_t *doc, *values;
	size_t i;
	json_t *v;

	if (!text)
		return 0;
	doc = json_loads(text, 0, NULL);
	values = doc ? json_object_get(doc, "values") : NULL;
	if (json_is_array(values) && json_array_size(values)) {
		x->ref = malloc(json_array_size(values) * sizeof(double));
		if (!x->ref) {
			json_decref(doc);
			return -ENOMEM;
		}
		json_array_foreach (values, i, v) {
			double d = json_is_number(v) ? json_number_value(v) : NAN;

			x->ref[i] = d > 0 ? d : NAN;
		}
		x->n_ref = json_array_size(values);
	}
	json_decref(doc);
	return 0;
}

struct run_list {
	struct run_ref *r;
	size_t n, cap, max;
	const char *skip_commit; /* leave out runs of this commit (the head's own) */
	bool firsts_only;        /* leave out confirmation runs (a history: they re-measure a
	                            commit's suspects, and are no further runs of its matrix) */
};

static int collect_run(const struct store_run *run, void *cls)
{
	struct run_list *l = cls;
	struct run_ref *x;

	if (l->skip_commit && run->commit && !strcmp(run->commit, l->skip_commit))
		return 0;
	if (l->firsts_only && run->confirmation_of)
		return 0;
	if (l->n >= l->max)
		return 0;
	if (aw_array_reserve(&l->r, l->n, &l->cap, sizeof(*l->r), 16))
		return -ENOMEM;
	x = &l->r[l->n];
	memset(x, 0, sizeof(*x));
	x->seq = run->seq;
	x->order_us = run->order_us;
	x->confirmation = run->confirmation_of != NULL;
	if (aw_set_str(&x->run_id, run->run_id) || aw_set_str(&x->commit, run->commit) ||
	    aw_set_str(&x->matrix_hash, run->matrix_hash) ||
	    aw_set_str(&x->platform_hash, run->platform_hash) ||
	    parse_reference(run->reference, x)) {
		run_ref_release(x);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

static void run_list_release(struct run_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		run_ref_release(&l->r[i]);
	free(l->r);
	memset(l, 0, sizeof(*l));
}

/* Keeps the runs measured like `like` (same matrix hash and platform), reversing them into
 * oldest-first order. */
static void keep_comparable(struct run_list *l, const struct run_ref *like)
{
	size_t k = 0;

	for (size_t i = 0; i < l->n; i++) {
		struct run_ref *x = &l->r[i];
		bool same = like &&
		            (!like->matrix_hash || !x->matrix_hash ||
		             !strcmp(like->matrix_hash, x->matrix_hash)) &&
		            (!like->platform_hash || !x->platform_hash ||
		             !strcmp(like->platform_hash, x->platform_hash));

		if (same || !like)
			l->r[k++] = *x;
		else
			run_ref_release(x);
	}
	l->n = k;
	for (size_t i = 0; i < k / 2; i++) {
		struct run_ref t = l->r[i];

		l->r[i] = l->r[k - 1 - i];
		l->r[k - 1 - i] = t;
	}
}

/* One cell across the runs read: baseline values per run (NAN where the run lacks it) and the
 * head's values. */
struct series {
	char *key, *op, *reader, *subject;
	int cpu;
	int kind;       /* pooling group: 0 op, 1 reader, 2 contended, 3 subject, 4 kernel */
	bool duty;      /* d > 0 */
	bool warn_only; /* contended or with duty: its default gate level is warn */
	double *p50, *p99, *se50;
	double *mn; /* the fastest batch, per baseline run */
	double *rf; /* log of the reference kernel beside the cell, per baseline run */
	double head50[MAX_HEAD_RUNS], head99[MAX_HEAD_RUNS], headse[MAX_HEAD_RUNS];
	double headmn[MAX_HEAD_RUNS];
	double headrf[MAX_HEAD_RUNS];
	size_t head_run[MAX_HEAD_RUNS]; /* which head run each head value is from */
	size_t n_head;
	double ref50[MAX_HEAD_RUNS], ref99[MAX_HEAD_RUNS]; /* a base commit's runs (compare) */
	size_t n_ref;
	bool in_head, tail_bimodal;
	char *failed; /* the head cell failed: why */
};

struct table {
	struct aw_strmap *index; /* key -> position */
	struct series *s;
	size_t n, cap;
	size_t n_runs; /* baseline runs: the length of p50/p99/se50 */
	const struct aw_detect_opts *detect;
	/* the common mode of each baseline and head run (log), NAN where too few cells */
	double *cm_hist, cm_head[MAX_HEAD_RUNS];
	/* the same of log(p99): how the run's tails went (a VM's reader tails swing tenfold
	 * between runs, every cell of a run together) */
	double *tm_hist, tm_head[MAX_HEAD_RUNS];
	size_t n_head_runs;
	const char *const *globs; /* only cells matching one of these (none: every cell) */
	size_t n_globs;
	uint64_t globs_matched; /* bit i: globs[i] matched a head cell */
	/* while reading one run */
	size_t run;
	size_t ord;                /* the cell's position in its document */
	const struct run_ref *ref; /* the run being read */
	enum {
		READ_HISTORY,
		READ_HEAD,
		READ_REFERENCE
	} reading;
};

static void series_release(struct series *s)
{
	free(s->key);
	free(s->op);
	free(s->reader);
	free(s->subject);
	free(s->p50);
	free(s->p99);
	free(s->se50);
	free(s->mn);
	free(s->rf);
	free(s->failed);
}

static void table_release(struct table *t)
{
	for (size_t i = 0; i < t->n; i++)
		series_release(&t->s[i]);
	free(t->s);
	free(t->cm_hist);
	free(t->tm_hist);
	aw_strmap_free(&t->index);
	memset(t, 0, sizeof(*t));
}

static int cell_kind(const struct aw_cell *c)
{
	if (c->kernel)
		return 4;
	if (c->subject)
		return 3;
	if (c->c != AW_NONE && c->c > 0)
		return 2;
	if (c->reader)
		return 1;
	return 0;
}

static struct series *series_for(struct table *t, const struct aw_cell *c, int *rc)
{
	struct series *s;
	int64_t at;

	*rc = 0;
	if (!aw_strmap_get(t->index, c->key, &at))
		return &t->s[at];
	if (aw_array_reserve(&t->s, t->n, &t->cap, sizeof(*t->s), 256))
		goto nomem;
	s = &t->s[t->n];
	memset(s, 0, sizeof(*s));
	s->cpu = c->cpu;
	s->kind = cell_kind(c);
	s->duty = c->d > 0;
	s->warn_only = (c->c != AW_NONE && c->c > 0) || c->contender_cpu != AW_NONE || c->d > 0;
	if (aw_set_str(&s->key, c->key) || aw_set_str(&s->op, c->op) ||
	    aw_set_str(&s->reader, c->reader) || aw_set_str(&s->subject, c->subject))
		goto fail;
	if (t->n_runs) {
		s->p50 = malloc(t->n_runs * sizeof(double));
		s->p99 = malloc(t->n_runs * sizeof(double));
		s->se50 = malloc(t->n_runs * sizeof(double));
		s->mn = malloc(t->n_runs * sizeof(double));
		s->rf = malloc(t->n_runs * sizeof(double));
		if (!s->p50 || !s->p99 || !s->se50 || !s->mn || !s->rf)
			goto fail;
		for (size_t i = 0; i < t->n_runs; i++)
			s->p50[i] = s->p99[i] = s->se50[i] = s->mn[i] = s->rf[i] = NAN;
	}
	*rc = aw_strmap_put(t->index, c->key, (int64_t)t->n);
	if (*rc) {
		series_release(s);
		return NULL;
	}
	t->n++;
	return s;
fail:
	series_release(s);
nomem:
	*rc = -ENOMEM;
	return NULL;
}

/* The run's own standard error of its median, from its 95% interval. */
static double se_of(const struct aw_cell *c)
{
	if (isnan(c->ci_lo) || isnan(c->ci_hi))
		return NAN;
	return (c->ci_hi - c->ci_lo) / (2 * 1.96);
}

/* Whether the cell is one of those asked for (every cell without globs); marks the globs that
 * matched a cell of a head run. */
static bool wanted(struct table *t, const char *key)
{
	bool any = !t->n_globs;

	for (size_t i = 0; i < t->n_globs; i++) {
		if (fnmatch(t->globs[i], key ? key : "", 0))
			continue;
		any = true;
		if (t->reading == READ_HEAD)
			t->globs_matched |= UINT64_C(1) << i;
	}
	return any;
}

static int read_cell(const struct aw_cell *c, void *cls)
{
	struct table *t = cls;
	struct series *s;
	size_t ord = t->ord++;
	double rf = t->ref && ord < t->ref->n_ref ? log(t->ref->ref[ord]) : NAN;
	int rc;

	if (c->status == AW_CELL_SKIPPED || !wanted(t, c->key))
		return 0;
	if (c->status == AW_CELL_FAILED && t->reading != READ_HEAD)
		return 0;
	s = series_for(t, c, &rc);
	if (!s)
		return rc;
	if (c->status == AW_CELL_FAILED) {
		if (!s->failed && aw_set_str(&s->failed, c->reason ? c->reason : "failed"))
			return -ENOMEM;
		return 0;
	}
	switch (t->reading) {
	case READ_HEAD:
		if (s->n_head < MAX_HEAD_RUNS) {
			s->head50[s->n_head] = c->p50;
			s->head99[s->n_head] = c->p99;
			s->headse[s->n_head] = se_of(c);
			s->headmn[s->n_head] = c->min;
			s->headrf[s->n_head] = rf;
			s->head_run[s->n_head] = t->run;
			s->n_head++;
		}
		s->in_head = true;
		break;
	case READ_REFERENCE:
		if (s->n_ref < MAX_HEAD_RUNS) {
			s->ref50[s->n_ref] = c->p50;
			s->ref99[s->n_ref] = c->p99;
			s->n_ref++;
		}
		break;
	case READ_HISTORY:
		s->p50[t->run] = c->p50;
		s->p99[t->run] = c->p99;
		s->se50[t->run] = se_of(c);
		s->mn[t->run] = c->min;
		s->rf[t->run] = rf;
		break;
	}
	if (isfinite(c->p99) && isfinite(c->p50) && c->p50 > 0 &&
	    c->p99 >= t->detect->bimodal_ratio * c->p50)
		s->tail_bimodal = true;
	return 0;
}

/* ---- verdicts ---- */

static double threshold_for(const struct aw_thresholds *th, int p99, const struct series *s)
{
	if (!th)
		return p99 ? 0.10 : 0.05;
	if (p99)
		return aw_threshold_for(th->p99_rules, th->n_p99_rules, s->op, s->reader, s->key,
		                        th->p99);
	return aw_threshold_for(th->p50_rules, th->n_p50_rules, s->op, s->reader, s->key, th->p50);
}

/* The gate level of a cell: the first rule with `gate:` that matches, else its default. */
static enum aw_gate gate_for(const struct aw_thresholds *th, const struct aw_cell_verdict *c,
                             bool warn_only)
{
	enum aw_gate def = warn_only ? AW_GATE_WARN : AW_GATE_FAIL;

	if (!th)
		return def;
	return (enum aw_gate)aw_threshold_for(th->gate_rules, th->n_gate_rules, c->op, c->reader,
	                                      c->key, (double)def);
}

/* How bad a verdict is, for ranking: regressed first. */
static int severity(enum aw_verdict v)
{
	switch (v) {
	case AW_VERDICT_REGRESSED:
		return 6;
	case AW_VERDICT_SUSPECT:
		return 5;
	case AW_VERDICT_IMPROVED:
		return 4;
	case AW_VERDICT_NOISY:
		return 3;
	case AW_VERDICT_NEW:
		return 2;
	case AW_VERDICT_MISSING:
		return 1;
	default:
		break;
	}
	return 0;
}

/* The size of the change behind a cell's verdict (the metric that gave it). */
static double magnitude(const struct aw_cell_verdict *c)
{
	double m = c->p50.verdict == c->verdict ? c->p50.change : c->p99.change;

	return isnan(m) ? 0 : fabs(m);
}

/* Regressed first, then suspect, improved, noisy, new, missing, unchanged; the largest change
 * first within a verdict, then by key. */
static int cmp_cells(const void *a, const void *b)
{
	const struct aw_cell_verdict *x = a, *y = b;
	int d = severity(y->verdict) - severity(x->verdict);
	double mx = magnitude(x), my = magnitude(y);

	if (d)
		return d;
	if (mx != my)
		return mx < my ? 1 : -1;
	return strcmp(x->key, y->key);
}

/* Compacts one cell's baseline values (and their errors and run factors, each optional) into
 * dense arrays. */
static size_t dense(const double *v, const double *se, size_t n, double *out, double *out_se,
                    const double *rf, double *out_rf, const double *cm, double *out_cm)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (!isfinite(v[i]))
			continue;
		out[k] = v[i];
		if (out_se)
			out_se[k] = se ? se[i] : NAN;
		if (out_rf)
			out_rf[k] = rf ? rf[i] : NAN;
		if (out_cm)
			out_cm[k] = cm ? cm[i] : NAN;
		k++;
	}
	return k;
}

static void cell_release(struct aw_cell_verdict *c)
{
	free(c->key);
	free(c->op);
	free(c->reader);
	free(c->subject);
}

void aw_host_verdict_release(struct aw_host_verdict *v)
{
	for (size_t i = 0; i < v->n_cells; i++)
		cell_release(&v->cells[i]);
	free(v->cells);
	for (size_t i = 0; i < v->n_head_runs; i++)
		free(v->head_runs[i]);
	free(v->head_runs);
	free(v->runs);
	free(v->host);
	free(v->reason);
	free(v->host_changed);
	memset(v, 0, sizeof(*v));
}

/* ---- run factors ---- */

#define CM_MIN_CELLS 3 /* uncontended matrix cells a run needs for a common mode */

/* Whether a series takes part in the common mode: an uncontended, duty-free op or reader of
 * the matrix (never a subject's or the kernel's cell: a library change must not move the
 * factor its own cells are judged against). */
static bool in_common_mode(const struct series *s)
{
	return (s->kind == 0 || s->kind == 1) && !s->duty;
}

static double median_of(double *v, size_t n)
{
	if (!n)
		return NAN;
	aw_sort_doubles(v, n);
	return aw_quantile_sorted(v, n, 0.5);
}

/* Each run's common mode: a median polish of log(p50) (with `tail`, of log(p99)) over the
 * baseline runs and the uncontended matrix cells (row effect = the run's factor, column
 * effect = the cell's level), two rounds; head runs take their factor against the levels the
 * baseline gave. A run with fewer than CM_MIN_CELLS such cells has none (nor has a confirmation
 * run, whatever it holds: aw_analysis_host() clears its factors).
 * Fills *hist (malloc'd, n_runs) and head[MAX_HEAD_RUNS]. */
static int common_mode(const struct table *t, bool tail, double **hist, double *head)
{
	size_t nr = t->n_runs, most = t->n > nr ? t->n : nr;
	double *lvl = NULL, *v = NULL, *f = NULL;
	int rc = -ENOMEM;

	for (size_t h = 0; h < MAX_HEAD_RUNS; h++)
		head[h] = NAN;
	*hist = NULL;
	if (nr) {
		f = *hist = malloc(nr * sizeof(double));
		if (!f)
			goto out;
	}
	lvl = malloc((t->n ? t->n : 1) * sizeof(double));
	v = malloc((most ? most : 1) * sizeof(double));
	if (!lvl || !v)
		goto out;
	for (size_t j = 0; j < nr; j++)
		f[j] = 0;
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < t->n; i++) {
			const struct series *s = &t->s[i];
			const double *x = tail ? s->p99 : s->p50;
			size_t k = 0;

			lvl[i] = NAN;
			if (!in_common_mode(s))
				continue;
			for (size_t j = 0; j < nr; j++)
				if (x[j] > 0 && isfinite(f[j]))
					v[k++] = log(x[j]) - f[j];
			lvl[i] = k >= 3 ? median_of(v, k) : NAN;
		}
		for (size_t j = 0; j < nr; j++) {
			size_t k = 0;

			for (size_t i = 0; i < t->n; i++) {
				const double *x = tail ? t->s[i].p99 : t->s[i].p50;

				if (isfinite(lvl[i]) && x[j] > 0)
					v[k++] = log(x[j]) - lvl[i];
			}
			f[j] = k >= CM_MIN_CELLS ? median_of(v, k) : NAN;
			if (round == 0 && !isfinite(f[j]))
				f[j] = 0; /* (kept in the first round's levels) */
		}
	}
	for (size_t h = 0; h < t->n_head_runs && h < MAX_HEAD_RUNS; h++) {
		size_t k = 0;

		for (size_t i = 0; i < t->n; i++) {
			const struct series *s = &t->s[i];
			const double *x = tail ? s->head99 : s->head50;

			if (!isfinite(lvl[i]))
				continue;
			for (size_t y = 0; y < s->n_head; y++)
				if (s->head_run[y] == h && x[y] > 0)
					v[k++] = log(x[y]) - lvl[i];
		}
		head[h] = k >= CM_MIN_CELLS ? median_of(v, k) : NAN;
	}
	rc = 0;
out:
	free(lvl);
	free(v);
	return rc;
}

/* A run's reference kernel: the median log of its first 64 values (NAN without a series);
 * `buf` holds 64. */
static double run_reference(const struct run_ref *r, double *buf)
{
	size_t m = 0;

	for (size_t i = 0; i < r->n_ref && m < 64; i++)
		if (isfinite(r->ref[i]))
			buf[m++] = log(r->ref[i]);
	return median_of(buf, m);
}

/* The host's head runs against its baseline: each head run's common mode, reference kernel
 * (the median over its cells) and tails (the common mode of its p99s) over the median of the
 * last `window` baseline runs, and whether one moved beyond what those runs show (the rule of
 * aw_detect()). */
static void run_states(const struct table *t, const struct run_list *base,
                       const struct run_list *head, const struct aw_detect_opts *o,
                       struct aw_host_verdict *v)
{
	double f[3][64], hf[3][MAX_HEAD_RUNS];
	size_t from = base->n > o->window ? base->n - o->window : 0;

	for (int k = 0; k < 3; k++) { /* common mode, reference, tails */
		double buf[64], center, spread, d;
		size_t n = 0;

		for (size_t j = from; j < base->n && n < 64; j++) {
			double x = k == 0   ? (t->cm_hist ? t->cm_hist[j] : NAN)
			           : k == 2 ? (t->tm_hist ? t->tm_hist[j] : NAN)
			                    : run_reference(&base->r[j], buf);

			if (isfinite(x))
				f[k][n++] = x;
		}
		for (size_t h = 0; h < head->n && h < MAX_HEAD_RUNS; h++)
			hf[k][h] = k == 0   ? t->cm_head[h]
			           : k == 2 ? t->tm_head[h]
			                    : run_reference(&head->r[h], buf);
		if (n < 3)
			continue;
		memcpy(buf, f[k], n * sizeof(double));
		aw_sort_doubles(buf, n);
		center = aw_quantile_sorted(buf, n, 0.5);
		spread = 1.4826 * aw_mad_sorted(buf, n, f[k]);
		for (size_t h = 0; h < v->n_runs; h++) {
			d = hf[k][h] - center;
			if (!isfinite(d))
				continue;
			if (k == 0)
				v->runs[h].common = exp(d);
			else if (k == 2)
				v->runs[h].tails = exp(d);
			else
				v->runs[h].reference = exp(d);
			if (fabs(d) > o->disturb_min && fabs(d) > o->disturb_k * spread)
				v->runs[h].disturbed = true;
		}
	}
	for (size_t h = 0; h < v->n_runs; h++)
		v->disturbed = v->disturbed || v->runs[h].disturbed;
}

/* A regression of one disturbed run that the reference kernel's move explains: noisy. */
static void explained_noisy(struct aw_detect_result *r)
{
	if ((r->verdict == AW_VERDICT_REGRESSED || r->verdict == AW_VERDICT_IMPROVED) &&
	    r->explained && r->by_reference)
		r->verdict = AW_VERDICT_NOISY;
}

/* The screen of a first run: a slowdown that could reach the threshold (its one-sided upper
 * bound does) and whose own p-value is below suspect_p, before the false discovery correction
 * over the host's hundreds of cells, is a suspect too. One run is a screen, not a verdict: the
 * re-measurement decides, in a family of its own (judge()), so that a subject cell alone in its
 * noise group, +5% on a host whose runs spread 1%, is re-measured rather than passed. The bound
 * is widened to a noise of at least screen_noise: a history steady to 0.04% says nothing of
 * how far one run of another build strays from its own level (a real +5.1% subject read +4.8%
 * in one run there), and a screen that errs costs a re-measurement of one cell, not a gate. */
static void screen(struct aw_detect_result *r, double threshold, const struct aw_analysis_opts *o)
{
	double hi = r->change_hi;

	if (r->verdict != AW_VERDICT_UNCHANGED || r->head_n >= o->confirm_runs || r->absolute ||
	    r->seen_before || !(r->change > 0) || !(r->pvalue < o->suspect_p))
		return;
	/* (the bound is change + z se, and se is proportional to the noise) */
	if (r->noise > 0 && r->noise < o->screen_noise && isfinite(hi))
		hi = r->change + (r->change_hi - r->change) * o->screen_noise / r->noise;
	if (!(hi >= threshold))
		return;
	r->verdict = AW_VERDICT_SUSPECT;
	if (!r->note[0])
		snprintf(r->note, sizeof(r->note),
		         "one run's %+.3g%% (p %.2g before the correction over the host's cells): "
		         "re-measure it",
		         100 * r->change, r->pvalue);
}

/* Judges every series of the table (p50 and p99 as one family). */
static int judge(struct table *t, const struct aw_analysis_opts *o, struct aw_host_verdict *v)
{
	struct aw_detect_input *in = NULL;
	struct aw_detect_result *out = NULL;
	double *buf = NULL;
	size_t n = t->n, w = t->n_runs ? t->n_runs : 1;
	int rc = -ENOMEM;

	if (!n)
		return 0;
	in = calloc(2 * n, sizeof(*in));
	out = calloc(2 * n, sizeof(*out));
	/* p50, se50, p99, the reference and common-mode factors of p50's and p99's runs and the
	 * p50 runs' fastest batches, dense per series; then the head's factors */
	buf = malloc((9 * w + 4 * MAX_HEAD_RUNS) * n * sizeof(double));
	v->cells = calloc(n, sizeof(*v->cells));
	if (!in || !out || !buf || !v->cells)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct series *s = &t->s[i];
		double *h50 = buf + (9 * w + 4 * MAX_HEAD_RUNS) * i, *hse = h50 + w, *h99 = hse + w;
		double *rf50 = h99 + w, *cm50 = rf50 + w, *rf99 = cm50 + w, *cm99 = rf99 + w;
		double *hmn = cm99 + w, *xrf = hmn + w, *xcm = xrf + MAX_HEAD_RUNS;
		double *xrf99 = xcm + MAX_HEAD_RUNS, *xcm99 = xrf99 + MAX_HEAD_RUNS;
		size_t n50 = t->n_runs ? dense(s->p50, s->se50, t->n_runs, h50, hse, s->rf, rf50,
		                               t->cm_hist, cm50)
		                       : 0;
		size_t n99 = t->n_runs ? dense(s->p99, NULL, t->n_runs, h99, NULL, s->rf, rf99,
		                               t->tm_hist, cm99)
		                       : 0;
		size_t nh99 = 0;
		bool strict =
		    (s->kind == 0 || s->kind == 1 || s->kind == 3 || s->kind == 4) && !s->duty;

		/* (the fastest batches, aligned with the p50s) */
		if (t->n_runs)
			dense(s->p50, s->mn, t->n_runs, h50, hmn, NULL, NULL, NULL, NULL);

		for (size_t k = 0; k < s->n_head; k++) {
			xrf[k] = xrf99[k] = s->headrf[k];
			xcm[k] = t->cm_head[s->head_run[k]];
			xcm99[k] = t->tm_head[s->head_run[k]]; /* p99: against the run's tails */
		}

		/* heads without a p99 (imports) leave that metric out */
		for (size_t k = 0; k < s->n_head; k++)
			nh99 += isfinite(s->head99[k]);
		in[2 * i] =
		    (struct aw_detect_input){.history = h50,
		                             .history_se = hse,
		                             .n_history = n50,
		                             .head = s->head50,
		                             .head_se = s->headse,
		                             .n_head = s->n_head,
		                             .reference = s->ref50,
		                             .n_reference = s->n_ref,
		                             .history_factor = {rf50, cm50},
		                             .head_factor = {xrf, xcm},
		                             .strict_resolution = strict,
		                             .threshold = threshold_for(o->thresholds, 0, s),
		                             .tail_bimodal = s->tail_bimodal,
		                             .group = 2 * s->kind,
		                             .history_min = hmn,
		                             .head_min = s->headmn};
		in[2 * i + 1] =
		    (struct aw_detect_input){.history = h99,
		                             .n_history = n99,
		                             .head = s->head99,
		                             .n_head = nh99 == s->n_head ? s->n_head : 0,
		                             .reference = s->ref99,
		                             .n_reference = s->n_ref,
		                             .history_factor = {rf99, cm99},
		                             .head_factor = {xrf99, xcm99},
		                             .strict_resolution = strict,
		                             .threshold = threshold_for(o->thresholds, 1, s),
		                             .tail_bimodal = s->tail_bimodal,
		                             .tail = true,
		                             .group = 2 * s->kind + 1};
	}
	/* The cells re-measured (as many head runs as a confirmation needs, where the others
	 * have one) are a family of their own: the first run selected them, their confirmation
	 * tests them, and the hundreds of cells that one run cleared do not dilute it. A head
	 * whose every cell has that many runs is one family, as without confirmation. */
	if (o->confirm_runs > 1)
		for (size_t i = 0; i < n; i++)
			in[2 * i].family = in[2 * i + 1].family = t->s[i].n_head >= o->confirm_runs;
	rc = aw_detect(in, 2 * n, &o->detect, out);
	if (rc)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct series *s = &t->s[i];
		struct aw_cell_verdict *c = &v->cells[i];

		c->key = s->key;
		c->op = s->op;
		c->reader = s->reader;
		c->subject = s->subject;
		s->key = s->op = s->reader = s->subject = NULL;
		c->cpu = s->cpu;
		c->p50 = out[2 * i];
		c->p99 = out[2 * i + 1];
		c->p50_threshold = in[2 * i].threshold;
		c->p99_threshold = in[2 * i + 1].threshold;
		c->gate = gate_for(o->thresholds, c, s->warn_only);
		c->n_head = s->n_head;
		/* one run is a suspicion: the re-measurements of confirmation decide */
		/* (the head runs judged: a disturbed run set aside beside quiet ones confirms
		 * nothing) */
		/* (a disturbed run set aside still confirms a change far beyond its disturbance:
		 * agree_n) */
		if (c->p50.verdict == AW_VERDICT_REGRESSED && c->p50.agree_n < o->confirm_runs)
			c->p50.verdict = AW_VERDICT_SUSPECT;
		if (c->p99.verdict == AW_VERDICT_REGRESSED && c->p99.agree_n < o->confirm_runs)
			c->p99.verdict = AW_VERDICT_SUSPECT;
		/* nor do disturbed runs clear a threshold-sized change that their regime's spread
		 * hid: re-measured, the quiet runs decide */
		if (c->p50.hidden && c->p50.head_n < o->confirm_runs)
			c->p50.verdict = AW_VERDICT_SUSPECT;
		if (c->p99.hidden && c->p99.head_n < o->confirm_runs)
			c->p99.verdict = AW_VERDICT_SUSPECT;
		if (o->confirm_runs > 1) {
			screen(&c->p50, c->p50_threshold, o);
			screen(&c->p99, c->p99_threshold, o);
		}
		/* with no confirmation to come (confirm_runs 1), a change that the reference
		 * kernel's own slowdown explains is the machine's, never a regression */
		if (o->confirm_runs <= 1) {
			explained_noisy(&c->p50);
			explained_noisy(&c->p99);
		}
		if (s->failed && !s->in_head) {
			c->p50.verdict = AW_VERDICT_MISSING;
			snprintf(c->p50.note, sizeof(c->p50.note), "the head's cell failed: %.100s",
			         s->failed);
		}
		/* p99 alone cannot make a cell new or missing when p50 is judged */
		if (c->p99.verdict == AW_VERDICT_MISSING || c->p99.verdict == AW_VERDICT_NEW)
			c->verdict = c->p50.verdict;
		else
			c->verdict = severity(c->p99.verdict) > severity(c->p50.verdict)
			                 ? c->p99.verdict
			                 : c->p50.verdict;
		v->counts[c->verdict]++;
		v->n_cells++;
		if ((c->verdict == AW_VERDICT_REGRESSED || c->verdict == AW_VERDICT_SUSPECT) &&
		    c->gate == AW_GATE_WARN)
			v->warnings++;
	}
	qsort(v->cells, v->n_cells, sizeof(*v->cells), cmp_cells);
	rc = 0;
out:
	free(in);
	free(out);
	free(buf);
	return rc;
}

/* fail when a cell of gate level fail regressed (confirmed), else unconfirmed when one is
 * suspect, else pass; warn and off cells never change it */
static enum aw_verdict host_status(const struct aw_host_verdict *v)
{
	enum aw_verdict st = AW_VERDICT_PASS;

	for (size_t i = 0; i < v->n_cells; i++) {
		if (v->cells[i].gate != AW_GATE_FAIL)
			continue;
		if (v->cells[i].verdict == AW_VERDICT_REGRESSED)
			return AW_VERDICT_FAIL;
		if (v->cells[i].verdict == AW_VERDICT_SUSPECT)
			st = AW_VERDICT_UNCONFIRMED;
	}
	return st;
}

static int read_runs(struct store_conn *c, struct table *t, const struct run_list *l, int reading)
{
	int rc = 0;

	t->reading = reading;
	for (size_t i = 0; !rc && i < l->n; i++) {
		t->run = i;
		t->ord = 0;
		t->ref = &l->r[i];
		rc = store_run_cells(c, l->r[i].seq, read_cell, t);
	}
	t->ref = NULL;
	if (reading == READ_HEAD)
		t->n_head_runs = l->n;
	return rc;
}

int aw_analysis_host(struct store_conn *c, const struct aw_analysis_opts *o, const char *project,
                     const char *commit, const char *base_commit, const char *host,
                     struct aw_host_verdict *out, char **err)
{
	struct run_list head = {.max = MAX_HEAD_RUNS},
	                base = {.max = o->history, .firsts_only = true};
	struct run_list ref = {.max = MAX_HEAD_RUNS};
	struct table t = {.detect = &o->detect,
	                  .globs = o->globs,
	                  .n_globs = o->n_globs < AW_ANALYSIS_MAX_GLOBS ? o->n_globs
	                                                                : AW_ANALYSIS_MAX_GLOBS};
	struct store_run_filter f = {
	    .project = project, .host = host, .commit = commit, .limit = MAX_HEAD_RUNS};
	int rc;

	memset(out, 0, sizeof(*out));
	if (aw_set_str(&out->host, host)) {
		rc = -ENOMEM;
		goto out;
	}
	rc = store_list_runs(c, &f, collect_run, &head);
	if (rc)
		goto fail;
	if (!head.n) {
		out->status = AW_VERDICT_INCOMPLETE;
		out->reason = aw_asprintf("no run of commit %s on host %s", commit, host);
		rc = out->reason ? 0 : -ENOMEM;
		goto out;
	}
	out->head_runs = calloc(head.n, sizeof(char *));
	if (!out->head_runs) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < head.n; i++) {
		out->head_runs[i] = head.r[i].run_id;
		head.r[i].run_id = NULL;
	}
	out->n_head_runs = head.n;
	if (base_commit) {
		struct store_run_filter bf = {.project = project,
		                              .host = host,
		                              .commit = base_commit,
		                              .limit = MAX_HEAD_RUNS};

		rc = store_list_runs(c, &bf, collect_run, &ref);
		if (rc)
			goto fail;
		keep_comparable(&ref, &head.r[0]);
	}
	/* strictly earlier commits on the baseline ref; (order, 0) leaves out every run of the
	 * head's own position, and skip_commit the head's runs wherever they are. With a base
	 * commit the history only measures the noise. */
	base.skip_commit = commit;
	rc = store_ref_history(c, project, host, o->baseline_ref, head.r[0].order_us, 0, o->history,
	                       collect_run, &base);
	if (rc)
		goto fail;
	keep_comparable(&base, &head.r[0]);
	out->n_baseline_runs = base_commit ? ref.n : base.n;
	t.n_runs = base.n;
	t.index = aw_strmap_new(MAX_CELLS);
	if (!t.index) {
		rc = -ENOMEM;
		goto out;
	}
	rc = read_runs(c, &t, &base, READ_HISTORY);
	if (!rc)
		rc = read_runs(c, &t, &ref, READ_REFERENCE);
	if (!rc)
		rc = read_runs(c, &t, &head, READ_HEAD);
	if (rc)
		goto fail;
	out->globs_matched = t.globs_matched;
	rc = common_mode(&t, false, &t.cm_hist, t.cm_head);
	if (!rc)
		rc = common_mode(&t, true, &t.tm_hist, t.tm_head);
	if (rc)
		goto out;
	/* A confirmation run carries only the suspects, the very cells that moved: a factor
	 * over them would explain their move by itself. It is judged by its reference. */
	for (size_t h = 0; h < head.n && h < MAX_HEAD_RUNS; h++)
		if (head.r[h].confirmation)
			t.cm_head[h] = t.tm_head[h] = NAN;
	out->runs = calloc(head.n, sizeof(*out->runs));
	if (!out->runs) {
		rc = -ENOMEM;
		goto out;
	}
	out->n_runs = head.n;
	for (size_t i = 0; i < head.n; i++)
		out->runs[i].common = out->runs[i].reference = out->runs[i].tails = NAN;
	if (!base_commit)
		run_states(&t, &base, &head, &o->detect, out);
	rc = judge(&t, o, out);
	if (!rc && !base_commit) /* the host's own changes (control.c) */
		rc = aw_control_check(c, o, project, commit, host, out, err);
	if (rc)
		goto out;
	out->status = host_status(out);
	goto out;
fail:
	aw_errorf(err, rc, "cannot read the runs of %s on %s: %s", commit, host, strerror(-rc));
out:
	if (rc == -ENOMEM)
		aw_errorf(err, rc, "out of memory judging %s on %s", commit, host);
	if (rc)
		aw_host_verdict_release(out);
	table_release(&t);
	run_list_release(&head);
	run_list_release(&base);
	run_list_release(&ref);
	return rc;
}

/* ---- JSON ---- */

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *metric_json(const struct aw_detect_result *r, double threshold)
{
	json_t *o = json_pack(
	    "{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:b, s:b, "
	    "s:o, s:o}",
	    "verdict", aw_verdict_name(r->verdict), "baseline", num(r->baseline), "head",
	    num(r->head), "change", num(r->change), "change_lo", num(r->change_lo), "change_hi",
	    num(r->change_hi), "noise", num(r->noise), "pvalue", num(r->pvalue), "qvalue",
	    num(r->qvalue), "mw_pvalue", num(r->mw_pvalue), "window", (json_int_t)r->window_n,
	    "bimodal", r->bimodal, "seen_before", r->seen_before, "note",
	    r->note[0] ? json_string(r->note) : json_null(), "threshold", num(threshold));
	const char *adj = aw_result_factor_name(r, r->matched),
	           *by = aw_result_factor_name(r, r->disturbed_by);

	/* what the judgement rested on: regimes, ns, a run factor, a disturbance */
	if (o &&
	    json_object_update_new(
	        o, json_pack("{s:b, s:b, s:o, s:o, s:I, s:I, s:b, s:o, s:b, s:b, s:b}", "regimes",
	                     r->regimes, "absolute", r->absolute, "change_ns", num(r->change_ns),
	                     "matched", adj ? json_string(adj) : json_null(), "head_n",
	                     (json_int_t)r->head_n, "agree_n", (json_int_t)r->agree_n, "disturbed",
	                     r->disturbed, "disturb", r->disturbed ? num(r->disturb) : json_null(),
	                     "explained", r->explained, "by_reference", r->by_reference, "hidden",
	                     r->hidden))) {
		json_decref(o);
		return NULL;
	}
	if (o && json_object_set_new(o, "on_reference", json_boolean(r->on_reference))) {
		json_decref(o);
		return NULL;
	}
	if (o && by && json_object_set_new(o, "disturbed_by", json_string(by))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The head runs' states: [{run_id, common, reference, tails, disturbed}]. */
static json_t *runs_json(const struct aw_host_verdict *v)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < v->n_runs && i < v->n_head_runs; i++) {
		const struct aw_run_state *r = &v->runs[i];

		if (json_array_append_new(a, json_pack("{s:s, s:o, s:o, s:o, s:b}", "run_id",
		                                       v->head_runs[i], "common", num(r->common),
		                                       "reference", num(r->reference), "tails",
		                                       num(r->tails), "disturbed", r->disturbed))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

json_t *aw_host_verdict_json(const struct aw_host_verdict *v, bool all_cells)
{
	json_t *o = NULL, *cells = NULL, *runs = NULL, *counts = NULL;

	cells = json_array();
	runs = json_array();
	counts = json_object();
	if (!cells || !runs || !counts)
		goto fail;
	for (size_t i = 0; i < v->n_head_runs; i++)
		if (json_array_append_new(runs, json_string(v->head_runs[i])))
			goto fail;
	for (int k = AW_VERDICT_CELL_FIRST; k <= AW_VERDICT_CELL_LAST; k++)
		if (json_object_set_new(counts, aw_verdict_name((enum aw_verdict)k),
		                        json_integer((json_int_t)v->counts[k])))
			goto fail;
	for (size_t i = 0; i < v->n_cells; i++) {
		const struct aw_cell_verdict *c = &v->cells[i];
		json_t *cj;

		if (!all_cells && c->verdict == AW_VERDICT_UNCHANGED)
			continue;
		cj = json_pack(
		    "{s:s, s:s, s:o, s:o, s:o, s:s, s:s, s:I, s:o, s:o}", "key", c->key, "op",
		    c->op, "reader", c->reader ? json_string(c->reader) : json_null(), "subject",
		    c->subject ? json_string(c->subject) : json_null(), "cpu",
		    c->cpu == AW_NONE ? json_null() : json_integer(c->cpu), "verdict",
		    aw_verdict_name(c->verdict), "gate", aw_gate_name(c->gate), "head_runs",
		    (json_int_t)c->n_head, "p50", metric_json(&c->p50, c->p50_threshold), "p99",
		    metric_json(&c->p99, c->p99_threshold));
		if (!cj || json_array_append_new(cells, cj))
			goto fail;
	}
	o = json_pack("{s:s, s:s, s:o, s:o, s:I, s:o, s:I, s:o, s:b, s:o}", "host", v->host,
	              "status", aw_verdict_name(v->status), "reason",
	              v->reason ? json_string(v->reason) : json_null(), "head_runs", runs,
	              "baseline_runs", (json_int_t)v->n_baseline_runs, "counts", counts, "warnings",
	              (json_int_t)v->warnings, "cells", cells, "disturbed", v->disturbed, "runs",
	              runs_json(v));
	if (o && aw_control_json(v, o)) {
		json_decref(o);
		o = NULL;
	}
	return o;
fail:
	json_decref(cells);
	json_decref(runs);
	json_decref(counts);
	return NULL;
}

/* ---- change points ---- */

struct cp_set {
	struct store_changepoint *p;
	size_t n, cap;
};

static int cp_add(struct cp_set *s, const struct store_changepoint *p)
{
	if (aw_array_reserve(&s->p, s->n, &s->cap, sizeof(*s->p), 64))
		return -ENOMEM;
	s->p[s->n++] = *p;
	return 0;
}

int aw_analysis_changepoints(struct store_conn *c, const struct aw_analysis_opts *o,
                             const char *project, const char *host, const char *ref, char **err)
{
	struct run_list runs = {.max = o->history, .firsts_only = true};
	struct table t = {.detect = &o->detect};
	struct cp_set set = {0};
	struct aw_changepoint cps[MAX_CP];
	char now[AW_TIME_LEN];
	double *x = NULL;
	size_t *at = NULL;
	int rc;

	aw_time_now(now);
	rc = store_ref_history(c, project, host, ref, INT64_MAX, INT64_MAX, o->history, collect_run,
	                       &runs);
	if (rc)
		goto fail;
	keep_comparable(&runs, runs.n ? &runs.r[0] : NULL);
	if (runs.n < 2 * o->detect.cp.min_segment)
		goto store; /* too short for any change: clear what was there */
	t.n_runs = runs.n;
	t.index = aw_strmap_new(MAX_CELLS);
	x = malloc(runs.n * sizeof(*x));
	at = malloc(runs.n * sizeof(*at));
	if (!t.index || !x || !at) {
		rc = -ENOMEM;
		goto out;
	}
	rc = read_runs(c, &t, &runs, READ_HISTORY);
	if (rc)
		goto fail;
	for (size_t i = 0; !rc && i < t.n; i++) {
		for (int m = 0; !rc && m < 2; m++) {
			const double *v = m ? t.s[i].p99 : t.s[i].p50;
			double threshold = threshold_for(o->thresholds, m, &t.s[i]);
			size_t n = 0;
			int k;

			for (size_t r = 0; r < runs.n; r++) {
				if (!isfinite(v[r]))
					continue;
				x[n] = v[r];
				at[n++] = r;
			}
			k = aw_changepoints(x, n, &o->detect.cp, cps, MAX_CP);
			for (int j = 0; !rc && j < k; j++) {
				const struct run_ref *run = &runs.r[at[cps[j].index]];
				double move = fabs(cps[j].after - cps[j].before);

				/* A move the verdict would never call a change (under the cell's
				 * threshold, or under min_abs_ns) is no news on a chart either. */
				if (!(move >= threshold * fabs(cps[j].before)) ||
				    move < o->detect.min_abs_ns)
					continue;
				struct store_changepoint p = {.cell_key = t.s[i].key,
				                              .metric = m ? "p99" : "p50",
				                              .commit = run->commit,
				                              .run_id = run->run_id,
				                              .order_us = run->order_us,
				                              .before = cps[j].before,
				                              .after = cps[j].after,
				                              .pvalue = cps[j].pvalue,
				                              .computed_at = now};

				rc = cp_add(&set, &p);
			}
			if (k < 0)
				rc = k;
		}
	}
	if (rc)
		goto out;
store:
	rc = store_changepoints_replace(c, project, host, ref, set.p, set.n);
	if (rc)
		goto fail;
	goto out;
fail:
	aw_errorf(err, rc, "cannot compute the change points of %s on %s: %s", host, ref,
	          strerror(-rc));
out:
	if (rc == -ENOMEM)
		aw_errorf(err, rc, "out of memory computing change points of %s", host);
	free(set.p);
	free(x);
	free(at);
	table_release(&t);
	run_list_release(&runs);
	return rc;
}

/* ---- after ingest ---- */

struct order_of {
	int64_t order_us;
};

static int take_order(const struct store_run *run, void *cls)
{
	((struct order_of *)cls)->order_us = run->order_us;
	return 1;
}

int aw_analysis_after_ingest(struct store_conn *c, const struct aw_analysis_opts *o,
                             const char *project, const char *commit, const char *host,
                             const char *ref, char **err)
{
	return aw_analysis_after_ingest_verdict(c, o, project, commit, host, ref, NULL, err);
}

int aw_analysis_after_ingest_verdict(struct store_conn *c, const struct aw_analysis_opts *o,
                                     const char *project, const char *commit, const char *host,
                                     const char *ref, struct aw_host_verdict *keep, char **err)
{
	struct aw_host_verdict v;
	struct store_run_filter f = {
	    .project = project, .host = host, .commit = commit, .limit = 1};
	struct order_of ord = {0};
	struct store_verdict sv;
	char now[AW_TIME_LEN], *text = NULL;
	json_t *doc = NULL;
	int rc;

	if (keep)
		memset(keep, 0, sizeof(*keep));
	rc = aw_analysis_changepoints(c, o, project, host, ref, err);
	if (rc)
		return rc;
	if (!commit)
		return 0;
	rc = aw_analysis_host(c, o, project, commit, NULL, host, &v, err);
	if (rc)
		return rc;
	rc = store_list_runs(c, &f, take_order, &ord);
	if (rc < 0)
		goto fail;
	doc = aw_host_verdict_json(&v, false);
	text = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
	if (!text) {
		rc = aw_errorf(err, -ENOMEM, "out of memory caching the verdict of %s", commit);
		goto out;
	}
	aw_time_now(now);
	sv = (struct store_verdict){.project = project,
	                            .commit = commit,
	                            .host = host,
	                            .baseline_ref = o->baseline_ref,
	                            .status = aw_verdict_name(v.status),
	                            .json = text,
	                            .computed_at = now,
	                            .order_us = ord.order_us};
	rc = store_verdict_put(c, &sv);
	if (!rc)
		goto out;
fail:
	aw_errorf(err, rc, "cannot cache the verdict of %s on %s: %s", commit, host, strerror(-rc));
out:
	free(text);
	json_decref(doc);
	if (keep && !rc)
		*keep = v; /* handed over */
	else
		aw_host_verdict_release(&v);
	return rc;
}
