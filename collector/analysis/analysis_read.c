/* The runs of a verdict read from the store into one table: each run's references, each cell's
 * series of p50, p99 and reference values (history, base commit, head), each run's memory state
 * (docs/detection.md, "The model"). */
#include "analysis_internal.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aw/result.h"
#include "aw/stats.h"
#include "aw/util.h"

static void run_ref_release(struct run_ref *x)
{
	free(x->run_id);
	free(x->commit);
	free(x->matrix_hash);
	free(x->platform_hash);
	analysis_references_release(x);
}

int analysis_collect_run(const struct store_run *run, void *cls)
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
	    aw_set_str(&x->platform_hash, run->platform_hash)) {
		run_ref_release(x);
		return -ENOMEM;
	}
	x->has_reference = run->has_reference;
	l->n++;
	return 0;
}

int analysis_list_references(struct store_conn *c, struct run_list *l)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < l->n; i++)
		if (l->r[i].has_reference && !l->r[i].n_kernels)
			rc = analysis_run_references(c, l->r[i].seq, &l->r[i]);
	return rc;
}

void analysis_run_list_release(struct run_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		run_ref_release(&l->r[i]);
	free(l->r);
	memset(l, 0, sizeof(*l));
}

/* Keeps the runs measured like `like` (same matrix hash and platform), reversing them into
 * oldest-first order. */
void analysis_keep_comparable(struct run_list *l, const struct run_ref *like)
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

static void side_release(struct side *d)
{
	free(d->p50);
	memset(d, 0, sizeof(*d));
}

static void series_release(struct series *s)
{
	free(s->key);
	free(s->op);
	free(s->reader);
	free(s->subject);
	side_release(&s->hist);
	side_release(&s->head);
	side_release(&s->base);
	free(s->failed);
}

void analysis_table_release(struct table *t)
{
	for (size_t i = 0; i < t->n; i++)
		series_release(&t->s[i]);
	free(t->s);
	for (size_t k = 0; k < t->n_kernels; k++)
		free(t->kernel[k]);
	for (int m = 0; m < STATES; m++)
		for (int k = 0; k < 3; k++)
			free(t->memory[m][k]);
	aw_strmap_free(&t->index);
	store_cell_book_free(&t->book);
	memset(t, 0, sizeof(*t));
}

/* Room for run `run` in a side (runs read in order; values of runs that lack the cell NAN), at
 * least `want` at once (a history's runs: one allocation per side, not one per doubling).
 * Returns 0 or -ENOMEM. */
static int side_reserve(struct side *d, size_t run, size_t want)
{
	size_t cap = d->cap ? d->cap : want > 16 ? want : 16;
	double *m;

	if (run < d->cap)
		return 0;
	while (cap <= run)
		cap *= 2;
	m = malloc(cap * (3 + REFS) * sizeof(double));
	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < cap * (3 + REFS); i++)
		m[i] = NAN;
	for (int k = 0; k < 3 + REFS; k++) {
		double *old = k == 0 ? d->p50 : k == 1 ? d->p99 : k == 2 ? d->se : d->ref[k - 3];

		if (old)
			memcpy(m + (size_t)k * cap, old, d->cap * sizeof(double));
	}
	free(d->p50);
	d->p50 = m;
	d->p99 = m + cap;
	d->se = m + 2 * cap;
	for (int k = 0; k < REFS; k++)
		d->ref[k] = m + (size_t)(3 + k) * cap;
	d->cap = cap;
	return 0;
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
	if (aw_array_reserve(&t->s, t->n, &t->cap, sizeof(*t->s), 256)) {
		*rc = -ENOMEM;
		return NULL;
	}
	s = &t->s[t->n];
	memset(s, 0, sizeof(*s));
	s->cpu = c->cpu;
	s->kind = cell_kind(c);
	s->warn_only = (c->c != AW_NONE && c->c > 0) || c->contender_cpu != AW_NONE || c->d > 0;
	if (aw_set_str(&s->key, c->key) || aw_set_str(&s->op, c->op) ||
	    aw_set_str(&s->reader, c->reader) || aw_set_str(&s->subject, c->subject) ||
	    aw_strmap_put(t->index, c->key, (int64_t)t->n)) {
		series_release(s);
		*rc = -ENOMEM;
		return NULL;
	}
	t->n++;
	return s;
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
	struct side *d;
	size_t ord = t->ord++, at;
	int rc;

	/* The run's memory state is the memory walk beside its first AW_ANCHORS anchor cells, in
	 * the run's order, whichever cells are asked for: the very cells a confirmation
	 * re-measures beside its suspects (aw_result_anchors()), so that a confirmation's state is
	 * measured as its head's was. (Over all of a full run's anchors, a confirmation's state,
	 * from three, sat apart from its head's by as much as the walk varies along a run, and
	 * the hash shape's +10% heads read +4% once the reference had corrected them.) */
	for (int m = 0; m < STATES; m++)
		if (c->status == AW_CELL_OK && aw_cell_is_anchor(c) && t->state_kernel[m] >= 0 &&
		    t->n_anchor_mem[m] < AW_ANCHORS)
			for (size_t k = 0; t->ref && k < t->ref->n_kernels && k < KERNELS; k++)
				if (t->slot[k] == t->state_kernel[m] && ord < t->ref->n_ref[k] &&
				    isfinite(t->ref->ref[k][ord]))
					t->anchor_mem[m][t->n_anchor_mem[m]++] =
					    t->ref->ref[k][ord];
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
	d = t->reading == READ_HEAD ? &s->head : t->reading == READ_BASE ? &s->base : &s->hist;
	if (t->reading == READ_HISTORY) {
		at = t->run;
	} else {
		if (d->n >= MAX_HEAD_RUNS)
			return 0;
		at = d->n;
		if (t->reading == READ_HEAD) {
			s->head_run[at] = t->run;
			s->head_conf[at] = t->ref->confirmation;
		} else {
			s->base_run[at] = t->run;
		}
	}
	if (side_reserve(d, at, t->reading == READ_HISTORY ? t->runs : 0))
		return -ENOMEM;
	d->p50[at] = c->p50;
	d->p99[at] = c->p99;
	d->se[at] = se_of(c);
	for (size_t k = 0; t->ref && k < t->ref->n_kernels; k++)
		if (t->slot[k] >= 0 && ord < t->ref->n_ref[k])
			d->ref[t->slot[k]][at] = t->ref->ref[k][ord];
	if (at + 1 > d->n)
		d->n = at + 1;
	if (t->reading == READ_HEAD)
		s->in_head = true;
	return 0;
}

/* The table's slot of each of the run's kernels (a kernel met first gets the next one; beyond
 * REFS kernels, -1). Returns 0 or -ENOMEM. */
static int map_kernels(struct table *t, const struct run_ref *r)
{
	for (size_t k = 0; k < KERNELS; k++) {
		size_t j = 0;

		t->slot[k] = -1;
		if (k >= r->n_kernels)
			continue;
		while (j < t->n_kernels && strcmp(t->kernel[j], r->kernel[k]))
			j++;
		if (j == t->n_kernels) {
			if (j >= KERNELS)
				continue;
			t->kernel[j] = strdup(r->kernel[k]);
			if (!t->kernel[j])
				return -ENOMEM;
			t->n_kernels++;
			if (aw_ref_lookup(r->kernel[k]) == AW_REF_MEMCHASE)
				t->state_kernel[0] = (int)j;
			if (aw_ref_lookup(r->kernel[k]) == AW_REF_MEMGATHER)
				t->state_kernel[1] = (int)j;
		}
		t->slot[k] = (int)j;
	}
	return 0;
}

int analysis_read_runs(struct store_conn *c, struct table *t, const struct run_list *l, int reading)
{
	int rc = 0;

	t->reading = reading;
	t->runs = l->n;
	t->n_memory[reading] = l->n;
	for (int m = 0; m < STATES; m++) {
		free(t->memory[m][reading]);
		t->memory[m][reading] = malloc((l->n ? l->n : 1) * sizeof(double));
		if (!t->memory[m][reading])
			return -ENOMEM;
	}
	if (!t->book)
		t->book = store_cell_book_new();
	if (!t->book)
		return -ENOMEM;
	for (size_t i = 0; !rc && i < l->n; i++) {
		t->run = i;
		t->ord = 0;
		t->ref = &l->r[i];
		memset(t->n_anchor_mem, 0, sizeof(t->n_anchor_mem));
		rc = map_kernels(t, t->ref);
		if (!rc)
			rc = store_run_values(c, t->book, l->r[i].seq, read_cell, t);
		for (int m = 0; m < STATES; m++) {
			t->memory[m][reading][i] = NAN;
			if (t->n_anchor_mem[m]) {
				aw_sort_doubles(t->anchor_mem[m], t->n_anchor_mem[m]);
				t->memory[m][reading][i] =
				    aw_quantile_sorted(t->anchor_mem[m], t->n_anchor_mem[m], 0.5);
			}
		}
	}
	t->ref = NULL;
	return rc;
}

/* Every series' memory-state slots: its runs' memory states (analysis_read_runs()). */
void analysis_fill_memory(struct table *t)
{
	for (int m = 0; m < STATES; m++) {
		int q = m ? GATHER : MEMORY;
		double *const *st = t->memory[m];

		for (size_t i = 0; i < t->n; i++) {
			struct series *s = &t->s[i];

			for (size_t r = 0; r < s->hist.n && r < t->n_memory[READ_HISTORY]; r++)
				s->hist.ref[q][r] = st[READ_HISTORY][r];
			for (size_t h = 0; h < s->head.n; h++)
				s->head.ref[q][h] = s->head_run[h] < t->n_memory[READ_HEAD]
				                        ? st[READ_HEAD][s->head_run[h]]
				                        : NAN;
			for (size_t b = 0; b < s->base.n; b++)
				s->base.ref[q][b] = s->base_run[b] < t->n_memory[READ_BASE]
				                        ? st[READ_BASE][s->base_run[b]]
				                        : NAN;
		}
	}
}
