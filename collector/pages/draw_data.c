/* What every chart of draw.h is drawn from, and what becomes of it once drawn: the runs and
 * cells read from the store into an arena, the cached verdicts read back, how cells are grouped
 * into charts and labelled, the chart files stored in the database, the counters. */
#include "draw_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/log.h"
#include "aw/sha256.h"
#include "aw/stats.h"
#include "aw/strmap.h"
#include "aw/util.h"

/* ---- cached verdicts ---- */

int aw_verdict_view_parse(struct aw_arena *a, const struct store_verdict *v,
                          struct aw_verdict_view *out)
{
	struct aw_host_verdict hv;
	const struct aw_run_state *most;
	const char *kernel = NULL;
	size_t cap = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	out->status = aw_verdict_parse(v->status);
	out->baseline_ref = aw_arena_strdup(a, v->baseline_ref);
	out->baseline_runs = -1;
	out->disturbed.ratio = NAN;
	/* from the text: a jansson tree of a 300-cell verdict was half of a commit page */
	rc = v->json ? aw_host_verdict_parse_text(v->json, &hv) : -EINVAL;
	if (rc)
		return rc == -ENOMEM ? rc : -EINVAL;
	out->baseline_runs = (long)hv.n_baseline_runs;
	most = aw_host_verdict_most_disturbed(&hv, &kernel, &out->disturbed.ratio);
	if (most) {
		size_t h = (size_t)(most - hv.runs);

		out->disturbed.run_id =
		    aw_arena_strdup(a, h < hv.n_head_runs ? hv.head_runs[h] : "");
		out->disturbed.kernel = aw_arena_strdup(a, kernel);
	}
	for (size_t i = 0; i < hv.n_cells; i++) {
		const struct aw_cell_verdict *cv = &hv.cells[i];
		const struct aw_metric_verdict *m = aw_cell_verdict_deciding(cv);
		struct aw_verdict_cell *c =
		    aw_arena_push(a, &out->cells, &out->n_cells, &cap, sizeof(*c));
		char levels[512];

		if (!c)
			break;
		c->key = aw_arena_strdup(a, cv->key);
		c->verdict = cv->verdict;
		c->gate = cv->gate;
		c->base_p50 = cv->p50.baseline;
		c->head_p50 = cv->p50.head;
		c->absolute = cv->p50.absolute;
		c->note = aw_arena_strdup(a, m->note);
		c->n_levels = m->n_levels;
		if (aw_metric_verdict_levels_text(m, levels, sizeof(levels)))
			c->levels = aw_arena_strdup(a, levels);
	}
	aw_host_verdict_release(&hv);
	return a->rc;
}

/* ---- what the store gives ---- */

int draw_on_run(const struct store_run *r, void *cls)
{
	struct run_list *l = cls;
	struct run_ref *x = aw_arena_push(l->a, &l->runs, &l->n, &l->cap, sizeof(*x));

	if (!x)
		return l->a->rc;
	x->seq = r->seq;
	x->order_us = r->order_us;
	x->run_id = aw_arena_strdup(l->a, r->run_id);
	x->commit = aw_arena_strdup(l->a, r->commit);
	x->ref = aw_arena_strdup(l->a, r->ref);
	x->host = aw_arena_strdup(l->a, r->host);
	x->has_reference = r->has_reference;
	memset(&x->reference, 0, sizeof(x->reference));
	return l->a->rc;
}

int draw_read_references(struct store_conn *c, struct run_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		struct run_ref *x = &l->runs[i];
		uint8_t *packed = NULL;
		void *kept;
		size_t len = 0;
		int rc;

		if (!x->has_reference || x->reference.data)
			continue;
		rc = store_run_reference(c, x->seq, &packed, &len);
		if (rc == -ENOENT)
			continue; /* (gone since it was listed: drawn without) */
		if (rc)
			return rc;
		kept = packed ? aw_arena_alloc(l->a, len) : NULL;
		if (kept) {
			memcpy(kept, packed, len);
			if (aw_refblob_open(kept, len, &x->reference))
				memset(&x->reference, 0,
				       sizeof(x->reference)); /* (drawn without) */
		}
		free(packed);
		if (l->a->rc)
			return l->a->rc;
	}
	return 0;
}

int draw_cellset_init(struct cellset *s, struct aw_arena *a)
{
	memset(s, 0, sizeof(*s));
	s->a = a;
	s->index = aw_strmap_new(CELLS_MAX);
	return s->index ? 0 : -ENOMEM;
}

void draw_cellset_release(struct cellset *s)
{
	aw_strmap_free(&s->index);
}

struct cell_acc *draw_cellset_find(const struct cellset *s, const char *key)
{
	int64_t pos;

	return aw_strmap_get(s->index, key, &pos) ? NULL : &s->cells[pos];
}

static int on_cell(const struct aw_cell *cell, void *cls)
{
	struct cellset *s = cls;
	struct cell_acc *acc = draw_cellset_find(s, cell->key);
	struct triple *t;
	int rc;

	if (!acc) {
		rc = aw_strmap_put(s->index, cell->key, (int64_t)s->n);
		if (rc)
			return rc;
		acc = aw_arena_push(s->a, &s->cells, &s->n, &s->cap, sizeof(*acc));
		if (!acc)
			return s->a->rc;
		acc->key = aw_arena_strdup(s->a, cell->key);
		acc->op = aw_arena_strdup(s->a, cell->op);
		acc->reader = aw_arena_strdup(s->a, cell->reader);
		acc->subject = aw_arena_strdup(s->a, cell->subject);
		acc->kernel = aw_arena_strdup(s->a, cell->kernel);
		acc->placement = aw_arena_strdup(s->a, cell->placement);
		acc->cpu = cell->cpu;
		acc->contender_cpu = cell->contender_cpu;
		acc->c = cell->c;
		acc->d = cell->d;
	}
	if (cell->status != AW_CELL_OK || !isfinite(cell->p50))
		return s->a->rc; /* known, but no value */
	t = aw_arena_push(s->a, &acc->v, &acc->n, &acc->cap, sizeof(*t));
	if (t)
		*t = (struct triple){cell->p50, cell->p95, cell->p99};
	return s->a->rc;
}

int draw_cellset_add_runs(struct store_conn *c, struct cellset *s, const struct run_list *runs)
{
	int rc = 0;

	for (size_t i = 0; i < runs->n && !rc; i++)
		rc = store_run_cells(c, runs->runs[i].seq, on_cell, s);
	return rc;
}

/* The median over the runs of one statistic (0 p50, 1 p95, 2 p99); NAN when none. */
double draw_median(struct aw_arena *a, const struct cell_acc *c, int which)
{
	double *v;
	size_t n = 0;

	if (!c || !c->n)
		return NAN;
	v = aw_arena_alloc(a, c->n * sizeof(*v));
	if (!v)
		return NAN;
	for (size_t i = 0; i < c->n; i++) {
		double x = which == 0 ? c->v[i].p50 : which == 1 ? c->v[i].p95 : c->v[i].p99;

		if (isfinite(x))
			v[n++] = x;
	}
	if (!n)
		return NAN;
	aw_sort_doubles(v, n);
	return aw_quantile_sorted(v, n, 0.5);
}

/* The CPU whose uncontended cells are a commit's "ops" (the first one measured); -1: none. */
int draw_first_cpu(const struct cellset *s)
{
	int cpu = -1;

	for (size_t i = 0; i < s->n; i++)
		if (!grid_cell(&s->cells[i]) && s->cells[i].cpu >= 0 &&
		    (cpu < 0 || s->cells[i].cpu < cpu))
			cpu = s->cells[i].cpu;
	return cpu;
}

const char *draw_cell_label(struct aw_arena *a, const struct cell_acc *c)
{
	char buf[LABEL_MAX];

	if (c->kernel)
		snprintf(buf, sizeof(buf), "%s", c->kernel);
	else if (c->reader)
		snprintf(buf, sizeof(buf), "%s/%s", c->reader, c->op);
	else if (c->subject)
		snprintf(buf, sizeof(buf), "%s:%s", c->subject, c->op);
	else
		snprintf(buf, sizeof(buf), "%s", c->op);
	return aw_arena_strdup(a, buf);
}

struct op_group {
	const char *group;
	const char *ops[8];
};

/* Ops that answer the same question share a chart: LL/SC against the plain add, the LSE family
 * (the STADD story), the prefetch fixes, compare-and-swap and the C11 spellings. */
static const struct op_group arm64_groups[] = {
    {"llsc", {"plain", "llsc", "ldxp_stxp"}},
    {"lse", {"stadd", "ldadd", "ldadda", "ldaddl", "ldaddal", "swp"}},
    {"prefetch", {"prfm_keep_stadd", "prfm_strm_stadd"}},
    {"cas", {"cas", "icas", "casp", "c11_cas"}},
    {"c11", {"c11_relaxed", "c11_seqcst"}},
};

/* x86-64's own: the plain incq (what this_cpu_inc is) against the locked increments, where the
 * arm64 table would put it alone on a chart named after LL/SC, which x86 does not have. */
static const struct op_group x86_groups[] = {
    {"x86", {"plain", "lock_inc", "lock_xadd", "xchg"}},
    {"prefetch", {"prefetchw_lock_inc"}},
    {"cas", {"cas", "cmpxchg16b", "c11_cas"}},
    {"c11", {"c11_relaxed", "c11_seqcst"}},
};

static bool is_x86(const char *arch)
{
	return arch && (!strcmp(arch, "x86_64") || !strcmp(arch, "amd64"));
}

#define N_ARM64_GROUPS (sizeof(arm64_groups) / sizeof(arm64_groups[0]))
#define N_X86_GROUPS   (sizeof(x86_groups) / sizeof(x86_groups[0]))

const char *aw_cell_group(const char *arch, const char *op, const char *reader, const char *subject,
                          const char *kernel, char *buf, size_t size)
{
	/* the host's own table first; the other one still places an op only it has (a host
	 * whose arch is unknown) */
	const struct op_group *own = is_x86(arch) ? x86_groups : arm64_groups;
	const struct op_group *other = is_x86(arch) ? arm64_groups : x86_groups;
	size_t n_own = is_x86(arch) ? N_X86_GROUPS : N_ARM64_GROUPS;
	size_t n_other = is_x86(arch) ? N_ARM64_GROUPS : N_X86_GROUPS;

	/* the atomwatch module's cells by the question they answer: the per-CPU ops themselves,
	 * the SRCU readers built on them, the atomic and the interrupt/preemption workarounds;
	 * refscale's scale types stay "kernel" */
	if (kernel && op && !strcmp(op, "kmod"))
		snprintf(buf, size, "kernel-%s",
		         !strncmp(kernel, "this_cpu_", 9) ? "percpu"
		         : !strncmp(kernel, "srcu", 4)    ? "srcu"
		                                          : "sync");
	else if (kernel)
		snprintf(buf, size, "kernel");
	else if (reader)
		snprintf(buf, size, "reader-%s", reader);
	else if (subject && !strcmp(subject, AW_TREND_CONTROL_SUBJECT))
		snprintf(buf, size, "control"); /* the host's control, with its reference kernels */
	else if (subject)
		snprintf(buf, size, "subject-%s", subject);
	else
		snprintf(buf, size, "other");
	if (kernel || reader || subject || !op)
		return buf;
	for (size_t g = 0; g < n_own + n_other; g++) {
		const struct op_group *grp = g < n_own ? &own[g] : &other[g - n_own];

		for (size_t i = 0; i < 8 && grp->ops[i]; i++)
			if (!strcmp(op, grp->ops[i])) {
				snprintf(buf, size, "%s", grp->group);
				return buf;
			}
	}
	return buf;
}

const char *aw_cell_contention_name(const char *op, const char *reader, const char *placement,
                                    char *buf, size_t size)
{
	snprintf(buf, size, "%s%s%s%s%s", reader ? reader : "", reader ? "-" : "", op ? op : "",
	         placement ? "-" : "", placement ? placement : "");
	return buf;
}

void draw_count_one(struct aw_draw *d, int rc)
{
	if (rc == AW_DRAW_CACHED)
		d->cached++;
	else if (rc == 0)
		d->drawn++;
	else
		d->failed++;
}

/* Counts a draw outcome; failures keep the first message in *first_err. */
int draw_count(struct aw_draw *d, int rc, char **err, char **first_err, int *first)
{
	draw_count_one(d, rc);
	if (rc < 0 && !*first) {
		*first = rc;
		*first_err = *err;
		*err = NULL;
	}
	aw_freep(err);
	return rc;
}

/* ---- one commit on one host ---- */

int draw_load_commit_host(struct aw_draw *d, struct aw_arena *a, const char *commit,
                          const char *host, struct commit_host *ch)
{
	struct store_run_filter f = {
	    .project = d->project, .host = host, .commit = commit, .limit = HEAD_RUNS_MAX};
	int rc;

	memset(ch, 0, sizeof(*ch));
	ch->commit = commit;
	ch->host = host;
	ch->runs.a = a;
	rc = draw_cellset_init(&ch->cells, a);
	if (!rc)
		rc = store_list_runs(d->conn, &f, draw_on_run, &ch->runs);
	if (!rc && !ch->runs.n)
		rc = -ENOENT;
	if (!rc)
		rc = draw_cellset_add_runs(d->conn, &ch->cells, &ch->runs);
	ch->first_cpu = draw_first_cpu(&ch->cells);
	return rc;
}

int aw_chart_table_rel(const struct aw_chart_id *id, char *out, size_t size)
{
	char rel[1024];
	int rc = aw_chart_path(id, "svg", rel, sizeof(rel)), n;

	if (rc)
		return rc;
	rel[strlen(rel) - 4] = '\0';
	n = snprintf(out, size, "%s.cells.json", rel);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* ---- charts in the database ---- */

#define HASH_FILE_MAX 256

/* The files of chart `id` relative to the data dir: SVG, PNG and, for a compare chart, its
 * table. Returns how many, or a negative errno. */
static int chart_files(const struct aw_chart_id *id, char rel[3][1100])
{
	int rc = aw_chart_path(id, "svg", rel[0], sizeof(rel[0]));

	if (!rc)
		rc = aw_chart_path(id, "png", rel[1], sizeof(rel[1]));
	if (!rc && id->kind == AW_CHART_COMPARE)
		rc = aw_chart_table_rel(id, rel[2], sizeof(rel[2]));
	return rc ? rc : id->kind == AW_CHART_COMPARE ? 3 : 2;
}

/* The hash of the data a chart's pair was drawn from (the reports library's sidecar), or of a
 * table's text, into hex. Returns 0 or a file error. */
static int file_hash(const char *data_dir, const char *rel, bool sidecar, char *hex)
{
	char path[PATH_MAX], *text = NULL;
	size_t len = 0;
	int rc;

	if (snprintf(path, sizeof(path), "%s", rel) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (sidecar) {
		size_t n = strlen(path);

		if (n < 4)
			return -EINVAL;
		snprintf(path + n - 4, sizeof(path) - (n - 4), ".hash");
	}
	rc = aw_read_beneath(data_dir, path, sidecar ? HASH_FILE_MAX : TABLE_MAX, &text, &len);
	if (!rc && sidecar) {
		len = strcspn(text, "\n");
		rc = len == AW_SHA256_HEX_LEN ? 0 : -EINVAL;
		if (!rc)
			snprintf(hex, AW_SHA256_HEX_LEN + 1, "%.*s", (int)len, text);
	} else if (!rc) {
		rc = aw_sha256_hex(text, len, hex);
	}
	free(text);
	return rc;
}

void draw_hold(struct aw_draw *d, const struct aw_chart_id *id)
{
	char rel[1100];

	/* a chart without a path is held by nothing: its draw fails on the path */
	if (d->publish && !aw_chart_path(id, "svg", rel, sizeof(rel)))
		aw_chart_cache_hold(d->publish, rel);
}

static void draw_unhold(struct aw_draw *d, const struct aw_chart_id *id)
{
	char rel[1100];

	if (d->publish && !aw_chart_path(id, "svg", rel, sizeof(rel)))
		aw_chart_cache_unhold(d->publish, rel);
}

/* Stores the files of chart `id` that were just drawn, or found unchanged (rc 0 or
 * AW_DRAW_CACHED), in the database; a failure there is kept in d->store_rc (the chart is on
 * this collector's disk, but not for the others). Lets the files go (draw_hold()). Returns
 * rc. */
int draw_published(struct aw_draw *d, const struct aw_chart_id *id, int rc)
{
	char rel[3][1100], hash[AW_SHA256_HEX_LEN + 1];
	int n, one = 0;

	if (rc < 0 || !d->publish) {
		draw_unhold(d, id);
		return rc;
	}
	n = chart_files(id, rel);
	for (int i = 0; i < n && !one; i++) {
		one = file_hash(d->data_dir, rel[i], i < 2, hash);
		if (one)
			aw_warn("cannot read the hash of '%s/%s': %s", d->data_dir, rel[i],
			        strerror(-one));
		else
			one = aw_chart_cache_publish(d->publish, d->conn, rel[i], hash);
	}
	draw_unhold(d, id);
	if (n < 0)
		one = n;
	if (one && !d->store_rc)
		d->store_rc = one;
	return rc;
}

bool aw_draw_chart_ready(struct aw_chart_cache *cache, struct store_conn *c,
                         const struct aw_chart_id *id)
{
	char rel[3][1100];
	int n = chart_files(id, rel);

	if (n < 0 || !aw_chart_cache_has(cache, c, rel[0]) || !aw_chart_cache_has(cache, c, rel[1]))
		return false;
	if (n == 3)
		aw_chart_cache_refresh(cache, c, rel[2]); /* read by the page being built */
	return true;
}

int aw_draw_fetch_chart(struct store_conn *c, const struct aw_chart_id *id, const char *dir,
                        char **err)
{
	char rel[3][1100];
	int n = chart_files(id, rel), rc = n < 0 ? n : 0;

	for (int i = 0; i < n && !rc; i++)
		rc = aw_chart_fetch(c, rel[i], dir, err);
	return rc;
}

/* ---- the charts a run gives, for the pages ---- */

/* What aw_run_chart_names() gathers in one pass over a run's cells, copying no cell: each trend
 * group with the lowest CPU of its cells (a group is drawn when that is the run's first CPU),
 * and the contention chart names. */
struct names_scan {
	struct aw_arena *a;
	const char *arch;
	struct aw_strmap *groups; /* name -> position in group_names */
	const char **group_names;
	int *group_cpu; /* lowest CPU of the group's uncontended cells; -1: one has none */
	size_t n_groups, cap_groups, cap_cpu, n_cpu;
	struct aw_strmap *contention;
	const char **contention_names;
	size_t n_contention, cap_contention;
	int first_cpu;
};

static int scan_names(const struct aw_cell *cell, void *cls)
{
	struct names_scan *s = cls;
	char buf[LABEL_MAX];
	int64_t pos;
	int rc = 0;

	if (in_grid(cell->contender_cpu, cell->c, cell->d)) {
		const char **slot;

		aw_cell_contention_name(cell->op, cell->reader, cell->placement, buf, sizeof(buf));
		if (!aw_strmap_get(s->contention, buf, &pos))
			return 0;
		rc = aw_strmap_put(s->contention, buf, 1);
		slot = rc ? NULL
		          : aw_arena_push(s->a, &s->contention_names, &s->n_contention,
		                          &s->cap_contention, sizeof(*slot));
		if (slot)
			*slot = aw_arena_strdup(s->a, buf);
		return rc == -ENOSPC ? 0 : rc ? rc : s->a->rc;
	}
	if (cell->cpu >= 0 && (s->first_cpu < 0 || cell->cpu < s->first_cpu))
		s->first_cpu = cell->cpu;
	aw_cell_group(s->arch, cell->op, cell->reader, cell->subject, cell->kernel, buf,
	              sizeof(buf));
	if (aw_strmap_get(s->groups, buf, &pos)) {
		const char **slot;
		int *cpu;

		rc = aw_strmap_put(s->groups, buf, (int64_t)s->n_groups);
		if (rc)
			return rc == -ENOSPC ? 0 : rc;
		slot = aw_arena_push(s->a, &s->group_names, &s->n_groups, &s->cap_groups,
		                     sizeof(*slot));
		cpu = aw_arena_push(s->a, &s->group_cpu, &s->n_cpu, &s->cap_cpu, sizeof(*cpu));
		if (!slot || !cpu)
			return s->a->rc;
		*slot = aw_arena_strdup(s->a, buf);
		*cpu = cell->cpu < 0 ? -1 : cell->cpu;
		return s->a->rc;
	}
	if (s->group_cpu[pos] >= 0 && (cell->cpu < 0 || cell->cpu < s->group_cpu[pos]))
		s->group_cpu[pos] = cell->cpu < 0 ? -1 : cell->cpu;
	return 0;
}

int aw_run_chart_names(struct store_conn *c, struct aw_arena *a, const char *arch, int64_t seq,
                       const char ***groups, size_t *n_groups, const char ***contention,
                       size_t *n_contention)
{
	struct names_scan s = {.a = a, .arch = arch, .first_cpu = -1};
	size_t n = 0;
	int rc;

	*groups = *contention = NULL;
	*n_groups = *n_contention = 0;
	s.groups = aw_strmap_new(GROUPS_MAX);
	s.contention = aw_strmap_new(AW_CHART_MAX_ITEMS);
	rc = s.groups && s.contention ? store_run_cells(c, seq, scan_names, &s) : -ENOMEM;
	/* the groups with a cell on the first CPU (or on none), as the trend task draws them */
	for (size_t i = 0; !rc && i < s.n_groups; i++)
		if (s.group_cpu[i] < 0 || s.group_cpu[i] == s.first_cpu)
			s.group_names[n++] = s.group_names[i];
	if (!rc) {
		*groups = s.group_names;
		*n_groups = n;
		*contention = s.contention_names;
		*n_contention = s.n_contention;
	}
	aw_strmap_free(&s.groups);
	aw_strmap_free(&s.contention);
	return rc ? rc : a->rc;
}
