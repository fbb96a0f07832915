/* Charts from the store (see draw.h): each chart's data read with the store's queries into an
 * arena and handed to the reports library, each file drawn then stored in the database, and
 * the charts of a commit after an upload. The workers that draw them are in postingest.c. */
#include "draw.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
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

#define ARENA_LIMIT   (256u << 20) /* the data of one chart or task */
#define HEAD_RUNS_MAX 20           /* runs of one commit on one host read for a chart */
#define CELLS_MAX     60000        /* distinct cells in the runs of one chart */
#define HOST_RUNS_MAX 10000        /* runs of one commit read for the heat map */
#define GROUPS_MAX    256          /* trend groups of one host and ref */
#define LABEL_MAX     160
#define TABLE_MAX     (64u << 20) /* bytes of a compare chart's table */

/* ---- cached verdicts ---- */

int aw_verdict_view_parse(struct aw_arena *a, const struct store_verdict *v,
                          struct aw_verdict_view *out)
{
	json_t *doc = v->json ? json_loads(v->json, 0, NULL) : NULL;
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
	rc = aw_host_verdict_parse(doc, &hv, NULL);
	json_decref(doc);
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
		struct aw_verdict_cell *c =
		    aw_arena_push(a, &out->cells, &out->n_cells, &cap, sizeof(*c));

		if (!c)
			break;
		c->key = aw_arena_strdup(a, cv->key);
		c->verdict = cv->verdict;
		c->base_p50 = cv->p50.baseline;
		c->head_p50 = cv->p50.head;
		c->absolute = cv->p50.absolute;
	}
	aw_host_verdict_release(&hv);
	return a->rc;
}

/* ---- what the store gives ---- */

struct run_ref {
	int64_t seq, order_us;
	const char *run_id, *commit, *ref, *host;
};

struct run_list {
	struct aw_arena *a;
	struct run_ref *runs;
	size_t n, cap;
};

static int on_run(const struct store_run *r, void *cls)
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
	return l->a->rc;
}

struct triple {
	double p50, p95, p99;
};

/* One cell over the runs read: its identity and each run's ok values. */
struct cell_acc {
	const char *key, *op, *reader, *subject, *kernel, *placement;
	int cpu, contender_cpu;
	int64_t c, d;
	struct triple *v;
	size_t n, cap;
};

struct cellset {
	struct aw_arena *a;
	struct aw_strmap *index; /* key -> position in cells */
	struct cell_acc *cells;  /* in the order first seen */
	size_t n, cap;
};

static int cellset_init(struct cellset *s, struct aw_arena *a)
{
	memset(s, 0, sizeof(*s));
	s->a = a;
	s->index = aw_strmap_new(CELLS_MAX);
	return s->index ? 0 : -ENOMEM;
}

static void cellset_release(struct cellset *s)
{
	aw_strmap_free(&s->index);
}

static struct cell_acc *cellset_find(const struct cellset *s, const char *key)
{
	int64_t pos;

	return aw_strmap_get(s->index, key, &pos) ? NULL : &s->cells[pos];
}

static int on_cell(const struct aw_cell *cell, void *cls)
{
	struct cellset *s = cls;
	struct cell_acc *acc = cellset_find(s, cell->key);
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

static int cellset_add_runs(struct store_conn *c, struct cellset *s, const struct run_list *runs)
{
	int rc = 0;

	for (size_t i = 0; i < runs->n && !rc; i++)
		rc = store_run_cells(c, runs->runs[i].seq, on_cell, s);
	return rc;
}

/* The median over the runs of one statistic (0 p50, 1 p95, 2 p99); NAN when none. */
static double median(struct aw_arena *a, const struct cell_acc *c, int which)
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

/* A cell of a contention x duty grid rather than one of the host's ops: it has a contender, or
 * a duty cycle. The runner only measures duty beside a contender; an imported paste also has
 * duty rows with no contender (its "c 0") and contended rows whose contender CPU it never
 * names. */
static bool in_grid(int contender_cpu, int64_t c, int64_t d)
{
	return contender_cpu != AW_NONE || c != AW_NONE || d > 0;
}

static bool grid_cell(const struct cell_acc *c)
{
	return in_grid(c->contender_cpu, c->c, c->d);
}

/* The grid row of a grid cell: its contender's nops, 0 without a contender. */
static int64_t grid_c(const struct cell_acc *c)
{
	return c->c == AW_NONE ? 0 : c->c;
}

/* The CPU whose uncontended cells are a commit's "ops" (the first one measured); -1: none. */
static int first_cpu(const struct cellset *s)
{
	int cpu = -1;

	for (size_t i = 0; i < s->n; i++)
		if (!grid_cell(&s->cells[i]) && s->cells[i].cpu >= 0 &&
		    (cpu < 0 || s->cells[i].cpu < cpu))
			cpu = s->cells[i].cpu;
	return cpu;
}

/* Whether a cell is one item of the compare chart and the heat map: uncontended, on the first
 * CPU (or tied to none, as imported kernel figures are). */
static bool is_item(const struct cell_acc *c, int cpu)
{
	return !grid_cell(c) && (c->cpu < 0 || c->cpu == cpu);
}

static const char *cell_label(struct aw_arena *a, const struct cell_acc *c)
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

static const char *cell_group(const char *arch, const struct cell_acc *c, char *buf, size_t size)
{
	return aw_cell_group(arch, c->op, c->reader, c->subject, c->kernel, buf, size);
}

static const char *short_sha(struct aw_arena *a, const char *sha)
{
	return sha ? aw_arena_strndup(a, sha, 12) : NULL;
}

static void count_one(struct aw_draw *d, int rc)
{
	if (rc == AW_RENDER_CACHED)
		d->cached++;
	else if (rc == 0)
		d->drawn++;
	else
		d->failed++;
}

/* Counts a render outcome; failures keep the first message in *first_err. */
static int count(struct aw_draw *d, int rc, char **err, char **first_err, int *first)
{
	count_one(d, rc);
	if (rc < 0 && !*first) {
		*first = rc;
		*first_err = *err;
		*err = NULL;
	}
	aw_freep(err);
	return rc;
}

/* ---- one commit on one host ---- */

struct commit_host {
	const char *commit, *host;
	struct run_list runs; /* newest first */
	struct cellset cells;
	int first_cpu;
};

static int load_commit_host(struct aw_draw *d, struct aw_arena *a, const char *commit,
                            const char *host, struct commit_host *ch)
{
	struct store_run_filter f = {
	    .project = d->project, .host = host, .commit = commit, .limit = HEAD_RUNS_MAX};
	int rc;

	memset(ch, 0, sizeof(*ch));
	ch->commit = commit;
	ch->host = host;
	ch->runs.a = a;
	rc = cellset_init(&ch->cells, a);
	if (!rc)
		rc = store_list_runs(d->conn, &f, on_run, &ch->runs);
	if (!rc && !ch->runs.n)
		rc = -ENOENT;
	if (!rc)
		rc = cellset_add_runs(d->conn, &ch->cells, &ch->runs);
	ch->first_cpu = first_cpu(&ch->cells);
	return rc;
}

struct verdict_find {
	struct aw_arena *a;
	const char *baseline_ref; /* NULL: any */
	struct aw_verdict_view view;
	bool found;
};

static int on_verdict(const struct store_verdict *v, void *cls)
{
	struct verdict_find *f = cls;

	if (f->found ||
	    (f->baseline_ref && v->baseline_ref && strcmp(f->baseline_ref, v->baseline_ref)))
		return 0;
	if (aw_verdict_view_parse(f->a, v, &f->view) == -EINVAL)
		return 0; /* not usable: as if there were none */
	f->found = true;
	return f->a->rc;
}

/* The keys of the cells the cached verdict of (commit, host) against `base` says regressed;
 * an empty map when there is no such verdict. */
static int regressed_keys(struct aw_draw *d, struct aw_arena *a, const char *commit,
                          const char *host, const char *base, struct aw_strmap **out)
{
	struct verdict_find f = {.a = a, .baseline_ref = base};
	const struct aw_draw_verdict *dv = d->verdict;
	int rc = 0;

	*out = aw_strmap_new(CELLS_MAX);
	if (!*out)
		return -ENOMEM;
	if (dv && dv->v && !strcmp(dv->commit, commit) && !strcmp(dv->host, host) &&
	    dv->baseline_ref && !strcmp(dv->baseline_ref, base)) {
		/* the verdict this task just computed: no round trip through its JSON */
		for (size_t i = 0; !rc && i < dv->v->n_cells; i++)
			if (dv->v->cells[i].verdict == AW_VERDICT_REGRESSED)
				rc = aw_strmap_put(*out, dv->v->cells[i].key, 1);
		return rc;
	}
	rc = store_verdict_list(d->conn, d->project, commit, host, 1, on_verdict, &f);
	for (size_t i = 0; !rc && f.found && i < f.view.n_cells; i++)
		if (f.view.cells[i].verdict == AW_VERDICT_REGRESSED)
			rc = aw_strmap_put(*out, f.view.cells[i].key, 1);
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

/* Stores the files of chart `id` that were just drawn, or found unchanged (rc 0 or
 * AW_RENDER_CACHED), in the database; a failure there is kept in d->store_rc (the chart is on
 * this collector's disk, but not for the others). Returns rc. */
static int published(struct aw_draw *d, const struct aw_chart_id *id, int rc)
{
	char rel[3][1100], hash[AW_SHA256_HEX_LEN + 1];
	int n, one = 0;

	if (rc < 0 || !d->publish)
		return rc;
	n = chart_files(id, rel);
	for (int i = 0; i < n && !one; i++) {
		one = file_hash(d->data_dir, rel[i], i < 2, hash);
		if (one)
			aw_warn("cannot read the hash of '%s/%s': %s", d->data_dir, rel[i],
			        strerror(-one));
		else
			one = aw_chart_cache_publish(d->publish, d->conn, rel[i], hash);
	}
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

static json_t *json_value(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* Writes the compare chart's numbers for every cell, the head's then those only the baseline
 * has, unless the file already says the same (a redraw of unchanged data writes nothing). */
static int write_table(const char *data_dir, const struct aw_chart_id *id, struct aw_arena *a,
                       const struct cellset *head, const struct cellset *base, char **err)
{
	char rel[1100], *text = NULL, *old = NULL;
	json_t *cells = json_array(), *doc = json_pack("{s:o}", "cells", cells);
	size_t old_len = 0;
	int rc = doc ? 0 : -ENOMEM;

	for (int pass = 0; pass < 2 && !rc; pass++) {
		const struct cellset *from = pass ? base : head;

		for (size_t i = 0; i < from->n && !rc; i++) {
			const struct cell_acc *c = &from->cells[i];
			const struct cell_acc *h = pass ? NULL : c;
			const struct cell_acc *b = pass ? c : cellset_find(base, c->key);

			if (pass && cellset_find(head, c->key))
				continue;
			rc = json_array_append_new(cells, json_pack("[s, o, o]", c->key,
			                                            json_value(median(a, b, 0)),
			                                            json_value(median(a, h, 0))))
			         ? -ENOMEM
			         : 0;
		}
	}
	if (!rc)
		rc = aw_chart_table_rel(id, rel, sizeof(rel));
	if (!rc && !(text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(10))))
		rc = -ENOMEM;
	if (rc) {
		aw_errorf(err, rc, "cannot write the table of a compare chart: %s", strerror(-rc));
		goto out;
	}
	if (aw_read_beneath(data_dir, rel, TABLE_MAX, &old, &old_len) == 0 && !strcmp(old, text))
		goto out;
	rc = aw_write_beneath(data_dir, rel, text, strlen(text), true, err);
out:
	free(old);
	free(text);
	json_decref(doc);
	return rc;
}

/* The compare chart of `head` against `base`: the runs of commit `base` on the host when there
 * are some, else the baseline window of ref `base` (or -ENOENT when `pair_only`). */
static int draw_compare_with(struct aw_draw *d, struct aw_arena *a, struct commit_host *head,
                             const char *base, bool pair_only, char **err)
{
	const struct run_ref *oldest = &head->runs.runs[head->runs.n - 1];
	struct run_list base_runs = {.a = a};
	struct aw_strmap *regressed = NULL;
	struct aw_chart_compare_item *items = NULL;
	struct cellset baseline;
	size_t n_items = 0, cap = 0;
	char base_label[LABEL_MAX], title[2 * LABEL_MAX];
	bool pair = false;
	int rc;

	rc = cellset_init(&baseline, a);
	if (rc)
		return aw_errorf(err, rc, "out of memory");
	if (aw_valid_commit(base)) {
		struct store_run_filter f = {.project = d->project,
		                             .host = head->host,
		                             .commit = base,
		                             .limit = HEAD_RUNS_MAX};

		rc = store_list_runs(d->conn, &f, on_run, &base_runs);
		pair = !rc && base_runs.n;
	}
	if (!rc && !pair && pair_only) {
		rc = -ENOENT; /* quietly: the base commit never ran on this host */
		goto out;
	}
	if (!rc && pair) {
		snprintf(base_label, sizeof(base_label), "%.12s", base);
	} else if (!rc) {
		unsigned window = d->analysis && d->analysis->detect.window
		                      ? (unsigned)d->analysis->detect.window
		                      : 10;

		/* the baseline window: the newest runs of the ref before the commit */
		rc = store_ref_history(d->conn, d->project, head->host, base, oldest->order_us,
		                       oldest->seq, window, on_run, &base_runs);
		if (!rc)
			rc = regressed_keys(d, a, head->commit, head->host, base, &regressed);
		snprintf(base_label, sizeof(base_label), "%.64s, %zu earlier run%s", base,
		         base_runs.n, base_runs.n == 1 ? "" : "s");
	}
	if (!rc)
		rc = cellset_add_runs(d->conn, &baseline, &base_runs);
	if (rc) {
		aw_errorf(err, rc, "cannot read the runs of the compare chart of '%s' on '%s': %s",
		          head->commit, head->host, strerror(-rc));
		goto out;
	}
	/* the head's items, then those only the baseline has */
	for (int pass = 0; pass < 2; pass++) {
		const struct cellset *from = pass ? &baseline : &head->cells;

		for (size_t i = 0; i < from->n && n_items < AW_CHART_MAX_ITEMS; i++) {
			const struct cell_acc *c = &from->cells[i];
			const struct cell_acc *h = pass ? NULL : c;
			const struct cell_acc *b = pass ? c : cellset_find(&baseline, c->key);
			struct aw_chart_compare_item *it;
			int64_t flag;

			if (!is_item(c, head->first_cpu) ||
			    (pass && cellset_find(&head->cells, c->key)))
				continue;
			it = aw_arena_push(a, &items, &n_items, &cap, sizeof(*it));
			if (!it)
				break;
			it->name = cell_label(a, c);
			it->base_p50 = median(a, b, 0);
			it->base_p95 = median(a, b, 1);
			it->base_p99 = median(a, b, 2);
			it->head_p50 = median(a, h, 0);
			it->head_p95 = median(a, h, 1);
			it->head_p99 = median(a, h, 2);
			it->regressed = regressed && !aw_strmap_get(regressed, c->key, &flag);
		}
	}
	if (a->rc) {
		rc = aw_errorf(err, a->rc, "cannot gather the compare chart of '%s': %s",
		               head->commit, strerror(-a->rc));
		goto out;
	}
	snprintf(title, sizeof(title), "%.64s: %.12s against %s", head->host, head->commit,
	         base_label);
	const struct aw_chart_compare chart = {title, base_label, short_sha(a, head->commit), items,
	                                       n_items};
	const struct aw_chart_id id = {
	    .kind = AW_CHART_COMPARE, .commit = head->commit, .host = head->host, .base = base};

	rc = aw_render_compare(d->gp, d->data_dir, &id, &chart, d->flags, err);
	if (rc >= 0) {
		int table_rc = write_table(d->data_dir, &id, a, &head->cells, &baseline, err);

		rc = published(d, &id, table_rc ? table_rc : rc);
	}
out:
	aw_strmap_free(&regressed);
	cellset_release(&baseline);
	return rc;
}

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;

	return (a > b) - (a < b);
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return (a > b) - (a < b);
}

/* Sorts and removes duplicates; returns the new count. */
static size_t unique(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	unsigned char *p = v;
	size_t k = 0;

	if (!n)
		return 0;
	qsort(v, n, size, cmp);
	for (size_t i = 1; i < n; i++)
		if (cmp(p + i * size, p + k * size))
			memmove(p + ++k * size, p + i * size, size);
	return k + 1;
}

static bool plain_op(const struct cell_acc *c)
{
	return !grid_cell(c) && !c->reader && !c->subject && !c->kernel && c->cpu >= 0;
}

static int draw_percpu_with(struct aw_draw *d, struct aw_arena *a, struct commit_host *head,
                            char **err)
{
	const char **ops = NULL;
	int *cpus = NULL;
	double *p50;
	size_t n_ops = 0, ops_cap = 0, n_cpus = 0, cpus_cap = 0;
	struct aw_strmap *op_index = aw_strmap_new(AW_CHART_MAX_ITEMS);
	char title[LABEL_MAX];
	int64_t row;
	int rc = 0;

	if (!op_index)
		return aw_errorf(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < head->cells.n; i++) {
		const struct cell_acc *c = &head->cells.cells[i];
		const char **op;
		int *cpu;

		if (!plain_op(c))
			continue;
		if (aw_strmap_get(op_index, c->op, &row)) {
			if (aw_strmap_put(op_index, c->op, (int64_t)n_ops))
				continue; /* over the chart's limit */
			op = aw_arena_push(a, &ops, &n_ops, &ops_cap, sizeof(*op));
			if (op)
				*op = c->op;
		}
		cpu = aw_arena_push(a, &cpus, &n_cpus, &cpus_cap, sizeof(*cpu));
		if (cpu)
			*cpu = c->cpu;
	}
	n_cpus = unique(cpus, n_cpus, sizeof(*cpus), cmp_int);
	if (n_cpus > AW_CHART_MAX_ITEMS)
		n_cpus = AW_CHART_MAX_ITEMS;
	p50 = aw_arena_alloc(a, (n_ops * n_cpus + 1) * sizeof(*p50));
	if (a->rc) {
		rc = aw_errorf(err, a->rc, "cannot gather the per-CPU chart of '%s': %s",
		               head->commit, strerror(-a->rc));
		goto out;
	}
	for (size_t i = 0; i < n_ops * n_cpus; i++)
		p50[i] = NAN;
	for (size_t i = 0; i < head->cells.n; i++) {
		const struct cell_acc *c = &head->cells.cells[i];
		int *at;

		if (!plain_op(c) || aw_strmap_get(op_index, c->op, &row))
			continue;
		at = bsearch(&c->cpu, cpus, n_cpus, sizeof(*cpus), cmp_int);
		if (at)
			p50[(size_t)row * n_cpus + (size_t)(at - cpus)] = median(a, c, 0);
	}
	snprintf(title, sizeof(title), "%.64s: p50 per CPU at %.12s", head->host, head->commit);
	const struct aw_chart_percpu chart = {title, ops, n_ops, cpus, n_cpus, p50};
	const struct aw_chart_id id = {
	    .kind = AW_CHART_PERCPU, .commit = head->commit, .host = head->host};

	rc = published(d, &id, aw_render_percpu(d->gp, d->data_dir, &id, &chart, d->flags, err));
out:
	aw_strmap_free(&op_index);
	return rc;
}

static bool contention_of(const struct cell_acc *c, const char *name)
{
	char buf[LABEL_MAX];

	return grid_cell(c) &&
	       !strcmp(aw_cell_contention_name(c->op, c->reader, c->placement, buf, sizeof(buf)),
	               name);
}

static int draw_contention_with(struct aw_draw *d, struct aw_arena *a, struct commit_host *head,
                                const char *name, char **err)
{
	int64_t *cs = NULL, *ds = NULL;
	size_t n_c = 0, c_cap = 0, n_d = 0, d_cap = 0;
	int contender = AW_NONE, grid_cpu = AW_NONE;
	const char *grid_op = "", *grid_reader = "";
	bool have_contender = false;
	char title[2 * LABEL_MAX];
	double *p50;

	for (size_t i = 0; i < head->cells.n; i++) {
		const struct cell_acc *c = &head->cells.cells[i];
		int64_t *x;

		if (!contention_of(c, name))
			continue;
		/* one chart per contender: the first one seen */
		if (!have_contender) {
			contender = c->contender_cpu;
			grid_op = c->op;
			grid_reader = c->reader ? c->reader : "";
			have_contender = true;
		}
		if (c->contender_cpu != contender)
			continue;
		if ((x = aw_arena_push(a, &cs, &n_c, &c_cap, sizeof(*x))))
			*x = grid_c(c);
		if ((x = aw_arena_push(a, &ds, &n_d, &d_cap, sizeof(*x))))
			*x = c->d;
	}
	if (!n_c)
		return aw_errorf(err, -ENOENT, "no contended cell '%s' of '%s' on '%s'", name,
		                 head->commit, head->host);
	n_c = unique(cs, n_c, sizeof(*cs), cmp_i64);
	n_d = unique(ds, n_d, sizeof(*ds), cmp_i64);
	p50 = aw_arena_alloc(a, (n_c * n_d + 1) * sizeof(*p50));
	if (a->rc)
		return aw_errorf(err, a->rc, "cannot gather the contention chart of '%s': %s",
		                 head->commit, strerror(-a->rc));
	for (size_t i = 0; i < n_c * n_d; i++)
		p50[i] = NAN;
	for (size_t i = 0; i < head->cells.n; i++) {
		const struct cell_acc *c = &head->cells.cells[i];
		int64_t *ci, *di;

		if (!contention_of(c, name) || c->contender_cpu != contender)
			continue;
		const int64_t cv = grid_c(c);

		ci = bsearch(&cv, cs, n_c, sizeof(*cs), cmp_i64);
		di = bsearch(&c->d, ds, n_d, sizeof(*ds), cmp_i64);
		if (ci && di)
			p50[(size_t)(ci - cs) * n_d + (size_t)(di - ds)] = median(a, c, 0);
		if (grid_cpu == AW_NONE)
			grid_cpu = c->cpu;
	}
	/* A grid with a row of no contention and a column of no duty (a paste's "c 0, d 0") shows
	 * the op measured alone there: the reference the other cells are read against. */
	if (cs[0] == 0 && ds[0] == 0 && isnan(p50[0])) {
		for (size_t i = 0; i < head->cells.n; i++) {
			const struct cell_acc *c = &head->cells.cells[i];

			if (!grid_cell(c) && c->cpu == grid_cpu && !c->subject && !c->kernel &&
			    !strcmp(c->op, grid_op) &&
			    !strcmp(c->reader ? c->reader : "", grid_reader)) {
				p50[0] = median(a, c, 0);
				break;
			}
		}
	}
	if (contender != AW_NONE)
		snprintf(title, sizeof(title), "%.64s: %.64s with a contender on CPU %d at %.12s",
		         head->host, name, contender, head->commit);
	else
		snprintf(title, sizeof(title), "%.64s: %.64s under contention and duty at %.12s",
		         head->host, name, head->commit);
	const struct aw_chart_contention chart = {title, cs, n_c, ds, n_d, p50};
	const struct aw_chart_id id = {
	    .kind = AW_CHART_CONTENTION, .commit = head->commit, .host = head->host, .name = name};

	return published(d, &id,
	                 aw_render_contention(d->gp, d->data_dir, &id, &chart, d->flags, err));
}

/* The names of the contention charts of a commit on a host. */
static int contention_names(struct aw_arena *a, const struct commit_host *head, const char ***names,
                            size_t *n)
{
	struct aw_strmap *seen = aw_strmap_new(AW_CHART_MAX_ITEMS);
	size_t cap = 0;
	int64_t one;

	*names = NULL;
	*n = 0;
	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < head->cells.n && !a->rc; i++) {
		const struct cell_acc *c = &head->cells.cells[i];
		char buf[LABEL_MAX];
		const char **slot;

		if (!grid_cell(c))
			continue;
		aw_cell_contention_name(c->op, c->reader, c->placement, buf, sizeof(buf));
		if (!aw_strmap_get(seen, buf, &one) || aw_strmap_put(seen, buf, 1))
			continue;
		slot = aw_arena_push(a, names, n, &cap, sizeof(*slot));
		if (slot)
			*slot = aw_arena_strdup(a, buf);
	}
	aw_strmap_free(&seen);
	return a->rc;
}

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

/* ---- one commit on every host ---- */

static int cmp_run_host(const void *x, const void *y)
{
	return strcmp(((const struct run_ref *)x)->host, ((const struct run_ref *)y)->host);
}

static int draw_heatmap(struct aw_draw *d, struct aw_arena *a, const char *commit, char **err)
{
	struct store_run_filter f = {
	    .project = d->project, .commit = commit, .limit = HOST_RUNS_MAX};
	struct run_list all = {.a = a}, newest = {.a = a};
	struct aw_strmap *hosts = aw_strmap_new(HOST_RUNS_MAX), *rows = NULL;
	const char **row_names = NULL, **col_names = NULL;
	struct {
		size_t row, col;
		double v;
	} *values = NULL;
	size_t n_rows = 0, rows_cap = 0, n_values = 0, values_cap = 0;
	char title[LABEL_MAX];
	double *p50;
	int64_t pos;
	int rc;

	rows = aw_strmap_new(AW_CHART_MAX_ITEMS);
	if (!hosts || !rows) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	rc = store_list_runs(d->conn, &f, on_run, &all);
	/* the newest run of the commit on each host (the list is newest first) */
	for (size_t i = 0; !rc && i < all.n; i++) {
		struct run_ref *r;

		if (!aw_strmap_get(hosts, all.runs[i].host, &pos) || newest.n >= AW_CHART_MAX_ITEMS)
			continue;
		rc = aw_strmap_put(hosts, all.runs[i].host, 1);
		r = aw_arena_push(a, &newest.runs, &newest.n, &newest.cap, sizeof(*r));
		if (r)
			*r = all.runs[i];
	}
	if (!rc && !newest.n)
		rc = -ENOENT;
	if (rc || a->rc) {
		rc = aw_errorf(err, rc ? rc : a->rc, "cannot read the runs of '%s': %s", commit,
		               strerror(-(rc ? rc : a->rc)));
		goto out;
	}
	qsort(newest.runs, newest.n, sizeof(*newest.runs), cmp_run_host);
	col_names = aw_arena_alloc(a, newest.n * sizeof(*col_names));
	for (size_t h = 0; h < newest.n && !rc && !a->rc; h++) {
		struct run_list one = {.a = a, .runs = &newest.runs[h], .n = 1, .cap = 1};
		struct cellset cells;
		int cpu;

		col_names[h] = newest.runs[h].host;
		rc = cellset_init(&cells, a);
		if (!rc)
			rc = cellset_add_runs(d->conn, &cells, &one);
		cpu = first_cpu(&cells);
		for (size_t i = 0; !rc && i < cells.n; i++) {
			const struct cell_acc *c = &cells.cells[i];
			const char *label;

			if (!is_item(c, cpu) || !(label = cell_label(a, c)))
				continue;
			if (aw_strmap_get(rows, label, &pos)) {
				const char **slot;

				if (aw_strmap_put(rows, label, (int64_t)n_rows))
					continue; /* over the chart's limit */
				pos = (int64_t)n_rows;
				slot =
				    aw_arena_push(a, &row_names, &n_rows, &rows_cap, sizeof(*slot));
				if (slot)
					*slot = label;
			}
			if (aw_arena_push(a, &values, &n_values, &values_cap, sizeof(*values))) {
				values[n_values - 1].row = (size_t)pos;
				values[n_values - 1].col = h;
				values[n_values - 1].v = median(a, c, 0);
			}
		}
		cellset_release(&cells);
	}
	p50 = aw_arena_alloc(a, (n_rows * newest.n + 1) * sizeof(*p50));
	if (rc || a->rc) {
		rc = aw_errorf(err, rc ? rc : a->rc, "cannot gather the heat map of '%s': %s",
		               commit, strerror(-(rc ? rc : a->rc)));
		goto out;
	}
	for (size_t i = 0; i < n_rows * newest.n; i++)
		p50[i] = NAN;
	for (size_t i = 0; i < n_values; i++)
		p50[values[i].row * newest.n + values[i].col] = values[i].v;
	snprintf(title, sizeof(title), "p50 across hosts at %.12s", commit);
	const struct aw_chart_heatmap chart = {title, row_names, n_rows, col_names, newest.n, p50};
	const struct aw_chart_id id = {.kind = AW_CHART_HEATMAP, .commit = commit};

	rc = published(d, &id, aw_render_heatmap(d->gp, d->data_dir, &id, &chart, d->flags, err));
out:
	aw_strmap_free(&hosts);
	aw_strmap_free(&rows);
	return rc;
}

/* ---- a host's trends on a ref ---- */

struct trend_ctx {
	struct aw_draw *d;
	struct aw_arena *a;
	const char *host, *ref;
	struct run_list runs;        /* oldest first */
	struct aw_strmap *by_seq;    /* decimal seq -> point */
	struct aw_strmap *by_run;    /* run id -> point */
	struct aw_strmap *regressed; /* "commit key" -> 1 */
	const char **labels;         /* short shas */
	double *values;              /* scratch of one series */
	struct cellset cells;        /* of the newest run */
	int first_cpu;
	const char *arch; /* the host's, NULL: unknown (its trend groups, aw_cell_group()) */
};

static int on_trend_verdict(const struct store_verdict *v, void *cls)
{
	struct trend_ctx *t = cls;
	struct aw_verdict_view view;
	char key[512];
	int rc = 0;

	if (aw_verdict_view_parse(t->a, v, &view) == -EINVAL)
		return 0;
	for (size_t i = 0; i < view.n_cells && !rc; i++) {
		if (view.cells[i].verdict != AW_VERDICT_REGRESSED)
			continue;
		snprintf(key, sizeof(key), "%.64s %s", v->commit, view.cells[i].key);
		rc = aw_strmap_put(t->regressed, key, 1);
		if (rc == -ENOSPC)
			rc = 0; /* marks are a bonus */
	}
	return rc ? rc : t->a->rc;
}

struct series_fill {
	struct trend_ctx *t;
	double *out;
};

static int on_point(const struct store_point *p, void *cls)
{
	struct series_fill *s = cls;
	char seq[24];
	int64_t i;

	snprintf(seq, sizeof(seq), "%" PRId64, p->seq);
	if (!aw_strmap_get(s->t->by_seq, seq, &i))
		s->out[i] = p->value;
	return 0;
}

struct cp_fill {
	struct trend_ctx *t;
	size_t *points;
	size_t n, cap;
};

static int on_changepoint(const struct store_changepoint *cp, void *cls)
{
	struct cp_fill *f = cls;
	size_t *slot;
	int64_t i;

	if (!cp->metric || strcmp(cp->metric, "p50") || !cp->run_id ||
	    aw_strmap_get(f->t->by_run, cp->run_id, &i))
		return 0;
	slot = aw_arena_push(f->t->a, &f->points, &f->n, &f->cap, sizeof(*slot));
	if (slot)
		*slot = (size_t)i;
	return f->t->a->rc;
}

static int on_trend_host(const struct store_host *h, void *cls)
{
	struct trend_ctx *t = cls;

	t->arch = h->arch ? aw_arena_strdup(t->a, h->arch) : NULL;
	return t->a->rc;
}

static int trend_load(struct trend_ctx *t)
{
	struct aw_draw *d = t->d;
	struct run_list newest_first = {.a = t->a};
	char seq[24];
	int rc;

	t->runs.a = t->a;
	rc = cellset_init(&t->cells, t->a);
	if (rc)
		return rc;
	t->by_seq = aw_strmap_new(AW_TREND_POINTS);
	t->by_run = aw_strmap_new(AW_TREND_POINTS);
	t->regressed = aw_strmap_new(CELLS_MAX);
	if (!t->by_seq || !t->by_run || !t->regressed)
		return -ENOMEM;
	/* the host's arch names its groups; a host the store lacks keeps the arm64 names */
	rc = store_get_host(d->conn, t->host, on_trend_host, NULL, t);
	if (rc && rc != -ENOENT)
		return rc;
	rc = store_ref_history(d->conn, d->project, t->host, t->ref, INT64_MAX, INT64_MAX,
	                       AW_TREND_POINTS, on_run, &newest_first);
	if (rc)
		return rc;
	if (!newest_first.n)
		return -ENOENT;
	t->runs.runs = aw_arena_alloc(t->a, newest_first.n * sizeof(*t->runs.runs));
	t->labels = aw_arena_alloc(t->a, newest_first.n * sizeof(*t->labels));
	if (t->a->rc)
		return t->a->rc;
	t->runs.n = t->runs.cap = newest_first.n;
	for (size_t i = 0; i < newest_first.n && !rc; i++) {
		struct run_ref *r = &t->runs.runs[i];

		*r = newest_first.runs[newest_first.n - 1 - i];
		t->labels[i] = r->commit ? aw_arena_strndup(t->a, r->commit, 7) : NULL;
		snprintf(seq, sizeof(seq), "%" PRId64, r->seq);
		rc = aw_strmap_put(t->by_seq, seq, (int64_t)i);
		if (!rc)
			rc = aw_strmap_put(t->by_run, r->run_id, (int64_t)i);
	}
	/* the groups and cells come from the newest run */
	if (!rc) {
		struct run_list one = {.a = t->a, .runs = newest_first.runs, .n = 1, .cap = 1};

		rc = cellset_add_runs(d->conn, &t->cells, &one);
	}
	t->first_cpu = first_cpu(&t->cells);
	if (!rc)
		rc = store_verdict_list(d->conn, d->project, NULL, t->host, AW_TREND_POINTS,
		                        on_trend_verdict, t);
	return rc ? rc : t->a->rc;
}

static void trend_release(struct trend_ctx *t)
{
	aw_strmap_free(&t->by_seq);
	aw_strmap_free(&t->by_run);
	aw_strmap_free(&t->regressed);
	cellset_release(&t->cells);
}

/* Reads one metric of one cell into a fresh array of the chart's points (NAN where absent). */
static double *trend_series(struct trend_ctx *t, const char *key, enum store_metric metric, int *rc)
{
	const size_t n = t->runs.n;
	struct series_fill fill = {t, aw_arena_alloc(t->a, n * sizeof(double))};
	struct store_series_query q = {.host = t->host,
	                               .ref = t->ref,
	                               .cell_key = key,
	                               .project = t->d->project,
	                               .metric = metric,
	                               .limit = AW_TREND_POINTS};

	if (!fill.out) {
		*rc = t->a->rc;
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		fill.out[i] = NAN;
	*rc = store_series(t->d->conn, &q, on_point, &fill);
	return fill.out;
}

static int trend_draw_group(struct trend_ctx *t, const char *group, char **err)
{
	struct aw_chart_trend_series *series = NULL;
	size_t n_series = 0, cap = 0;
	char buf[LABEL_MAX], title[3 * LABEL_MAX], mark[512];
	int64_t one;
	int rc = 0;

	for (size_t i = 0; i < t->cells.n && !rc; i++) {
		const struct cell_acc *c = &t->cells.cells[i];
		struct aw_chart_trend_series *s;
		struct cp_fill cps = {t, NULL, 0, 0};
		size_t *regs = NULL, n_regs = 0, regs_cap = 0;

		if (!is_item(c, t->first_cpu) ||
		    strcmp(cell_group(t->arch, c, buf, sizeof(buf)), group) ||
		    n_series >= AW_CHART_MAX_SERIES)
			continue;
		s = aw_arena_push(t->a, &series, &n_series, &cap, sizeof(*s));
		if (!s)
			break;
		s->name = cell_label(t->a, c);
		s->p50 = trend_series(t, c->key, STORE_METRIC_P50, &rc);
		if (!rc)
			s->p95 = trend_series(t, c->key, STORE_METRIC_P95, &rc);
		if (!rc)
			s->p99 = trend_series(t, c->key, STORE_METRIC_P99, &rc);
		if (!rc)
			rc = store_changepoints_list(t->d->conn, t->d->project, t->host, t->ref,
			                             c->key, on_changepoint, &cps);
		for (size_t p = 0; !rc && p < t->runs.n; p++) {
			size_t *slot;

			if (!t->runs.runs[p].commit)
				continue;
			snprintf(mark, sizeof(mark), "%.64s %s", t->runs.runs[p].commit, c->key);
			if (aw_strmap_get(t->regressed, mark, &one))
				continue;
			slot = aw_arena_push(t->a, &regs, &n_regs, &regs_cap, sizeof(*slot));
			if (slot)
				*slot = p;
		}
		s->change_points = cps.points;
		s->n_change_points = cps.n;
		s->regressions = regs;
		s->n_regressions = n_regs;
	}
	if (rc || t->a->rc)
		return aw_errorf(err, rc ? rc : t->a->rc, "cannot read the trend '%s' of '%s': %s",
		                 group, t->host, strerror(-(rc ? rc : t->a->rc)));
	snprintf(title, sizeof(title), "%.64s on %.64s: %s (p50, p95-p99 band)", t->host, t->ref,
	         group);
	const struct aw_chart_trend chart = {title, t->labels, t->runs.n, series, n_series};
	const struct aw_chart_id id = {
	    .kind = AW_CHART_TREND, .host = t->host, .ref = t->ref, .name = group};

	return published(t->d, &id,
	                 aw_render_trend(t->d->gp, t->d->data_dir, &id, &chart, t->d->flags, err));
}

/* Draws the trend of `only` (a group name) or, NULL, of every group. */
static int draw_trends_of(struct aw_draw *d, const char *host, const char *ref, const char *only,
                          char **err_out)
{
	char *scratch = NULL, **err = err_out ? err_out : &scratch;
	struct aw_arena a;
	struct trend_ctx t = {.d = d, .a = &a, .host = host, .ref = ref};
	struct aw_strmap *done = NULL;
	char *first_err = NULL, buf[LABEL_MAX];
	int first = 0, rc;
	int64_t one;

	aw_arena_init(&a, ARENA_LIMIT);
	rc = trend_load(&t);
	if (rc) {
		aw_errorf(err, rc, "cannot read the trends of '%s' on '%s': %s", host, ref,
		          rc == -ENOENT ? "no run" : strerror(-rc));
		goto out;
	}
	done = aw_strmap_new(GROUPS_MAX);
	if (!done) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < t.cells.n; i++) {
		const struct cell_acc *c = &t.cells.cells[i];
		const char *group = cell_group(t.arch, c, buf, sizeof(buf));

		if (!is_item(c, t.first_cpu) || (only && strcmp(group, only)) ||
		    !aw_strmap_get(done, group, &one) || aw_strmap_put(done, group, 1))
			continue;
		count(d, trend_draw_group(&t, group, err), err, &first_err, &first);
	}
	if (only && !aw_strmap_count(done)) {
		rc = aw_errorf(err, -ENOENT, "no trend '%s' of '%s' on '%s'", only, host, ref);
		goto out;
	}
	rc = first;
	if (first)
		*err = first_err;
	first_err = NULL;
out:
	free(first_err);
	free(scratch);
	aw_strmap_free(&done);
	trend_release(&t);
	aw_arena_release(&a);
	return rc;
}

int aw_draw_trends(struct aw_draw *d, const char *host, const char *ref, char **err)
{
	if (!d->gp)
		return aw_errorf(err, -ENOSYS, "no gnuplot to draw with");
	return draw_trends_of(d, host, ref, NULL, err);
}

/* ---- by chart id, and after ingest ---- */

/* ---- the rounds of an interleaved A/B document ---- */

#define AB_SERIES_MAX (AW_CHART_MAX_SERIES / 2) /* cells drawn; each gives A/B and A/A */

struct ab_load {
	json_t *doc, *judgment;
};

static int on_ab(const struct store_ab *ab, void *cls)
{
	struct ab_load *l = cls;

	l->doc = json_loads(ab->doc ? ab->doc : "", 0, NULL);
	l->judgment = json_loads(ab->judgment ? ab->judgment : "", 0, NULL);
	return l->doc && l->judgment ? 0 : -EINVAL;
}

/* log-free percent change of one round, NAN for a bad one */
static double round_pct(const json_t *r)
{
	double b = json_number_value(json_object_get(r, "base"));
	double h = json_number_value(json_object_get(r, "head"));

	return b > 0 && h > 0 ? 100 * (h / b - 1) : NAN;
}

static double judged_pct(const json_t *cell, const char *which)
{
	const json_t *o = which ? json_object_get(cell, which) : cell;
	const json_t *r = json_object_get(o, "ratio");

	return json_is_number(r) ? 100 * (json_number_value(r) - 1) : NAN;
}

int aw_draw_ab(struct aw_draw *d, const char *ab_id, char **err)
{
	const struct aw_chart_id id = {.kind = AW_CHART_AB, .name = ab_id};
	struct ab_load l = {NULL, NULL};
	struct aw_chart_ab chart = {0};
	const char **names = NULL;
	double *pct = NULL, *est = NULL;
	bool *aa = NULL;
	size_t n_cells = 0, n_rounds = 0, i, k = 0;
	json_t *cells, *c;
	char *title = NULL;
	int rc;

	if (!d->gp)
		return aw_errorf(err, -ENOSYS, "no gnuplot to draw with");
	rc = store_ab_get(d->conn, ab_id, on_ab, &l);
	if (rc) {
		aw_errorf(err, rc, "cannot read A/B document '%s': %s", ab_id,
		          rc == -ENOENT ? "no such document" : strerror(-rc));
		goto out;
	}
	cells = json_object_get(l.doc, "cells");
	json_array_foreach (cells, i, c) {
		size_t n = json_array_size(json_object_get(c, "rounds"));
		size_t m = json_array_size(json_object_get(c, "aa_rounds"));

		if (!n || n_cells >= AB_SERIES_MAX)
			continue;
		n_cells++;
		n_rounds = n > n_rounds ? n : n_rounds;
		n_rounds = m > n_rounds ? m : n_rounds;
	}
	names = calloc(2 * n_cells + 1, sizeof(*names));
	aa = calloc(2 * n_cells + 1, sizeof(*aa));
	est = calloc(2 * n_cells + 1, sizeof(*est));
	pct = calloc(2 * n_cells * n_rounds + 1, sizeof(*pct));
	title = aw_asprintf(
	    "%s: %.12s (base) against %.12s (head), rounds in the order measured",
	    json_string_value(json_object_get(l.doc, "subject")),
	    json_string_value(json_object_get(json_object_get(l.doc, "base"), "commit")),
	    json_string_value(json_object_get(json_object_get(l.doc, "head"), "commit")));
	if (!names || !aa || !est || !pct || !title) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < 2 * n_cells * n_rounds; i++)
		pct[i] = NAN;
	json_array_foreach (cells, i, c) {
		const json_t *jc = json_array_get(json_object_get(l.judgment, "cells"), i);
		const char *key = json_string_value(json_object_get(c, "key"));

		if (!json_array_size(json_object_get(c, "rounds")) || k >= 2 * n_cells)
			continue;
		for (int side = 0; side < 2; side++, k++) {
			const json_t *rounds = json_object_get(c, side ? "aa_rounds" : "rounds"),
			             *r;
			size_t j;

			names[k] = aw_asprintf("%s %s", key ? key : "?", side ? "A/A" : "A/B");
			if (!names[k]) {
				rc = aw_errorf(err, -ENOMEM, "out of memory");
				goto out;
			}
			aa[k] = side == 1;
			/* the A/B rounds' own estimate (a judgment of before the A/A bias was
			 * removed has only the decision's, the same there) */
			est[k] = judged_pct(jc, side                        ? "aa"
			                        : json_object_get(jc, "ab") ? "ab"
			                                                    : NULL);
			json_array_foreach (rounds, j, r)
				if (j < n_rounds)
					pct[k * n_rounds + j] = round_pct(r);
		}
	}
	chart = (struct aw_chart_ab){
	    .title = title,
	    .series = names,
	    .aa = aa,
	    .estimate = est,
	    .n_series = k,
	    .n_rounds = n_rounds,
	    .pct = pct,
	};
	rc = published(d, &id, aw_render_ab(d->gp, d->data_dir, &id, &chart, d->flags, err));
out:
	count_one(d, rc);
	for (i = 0; names && i < 2 * n_cells; i++)
		free((void *)names[i]);
	free(names);
	free(aa);
	free(est);
	free(pct);
	free(title);
	json_decref(l.doc);
	json_decref(l.judgment);
	return rc;
}

int aw_draw_chart(struct aw_draw *d, const struct aw_chart_id *id, char **err)
{
	struct aw_arena a;
	struct commit_host head;
	int rc;

	if (!d->gp)
		return aw_errorf(err, -ENOSYS, "no gnuplot to draw with");
	if (id->kind == AW_CHART_TREND)
		return draw_trends_of(d, id->host, id->ref, id->name, err);
	if (id->kind == AW_CHART_AB)
		return aw_draw_ab(d, id->name, err);
	aw_arena_init(&a, ARENA_LIMIT);
	memset(&head, 0, sizeof(head));
	if (id->kind == AW_CHART_HEATMAP) {
		rc = draw_heatmap(d, &a, id->commit, err);
		goto out;
	}
	rc = load_commit_host(d, &a, id->commit, id->host, &head);
	if (rc) {
		aw_errorf(err, rc, "cannot read the runs of '%s' on '%s': %s", id->commit, id->host,
		          rc == -ENOENT ? "no run" : strerror(-rc));
		goto out;
	}
	switch (id->kind) {
	case AW_CHART_COMPARE:
		rc = draw_compare_with(d, &a, &head, id->base, false, err);
		break;
	case AW_CHART_PERCPU:
		rc = draw_percpu_with(d, &a, &head, err);
		break;
	case AW_CHART_CONTENTION:
		rc = draw_contention_with(d, &a, &head, id->name, err);
		break;
	default:
		rc = aw_errorf(err, -EINVAL, "bad chart kind");
		break;
	}
out:
	count_one(d, rc);
	cellset_release(&head.cells);
	aw_arena_release(&a);
	return rc;
}

/* The commit listed after `commit` on the overview (the newest runs' commits, newest first):
 * the base of the compare page the overview links. NULL when there is none. */
static const char *previous_commit(struct aw_draw *d, struct aw_arena *a, const char *commit)
{
	struct store_run_filter f = {.limit = AW_RECENT_RUNS};
	struct run_list runs = {.a = a};
	bool seen = false;

	if (store_list_runs(d->conn, &f, on_run, &runs))
		return NULL;
	for (size_t i = 0; i < runs.n; i++) {
		const char *c = runs.runs[i].commit;

		if (!c)
			continue;
		if (!strcmp(c, commit))
			seen = true;
		else if (seen)
			return c;
	}
	return NULL;
}

int aw_draw_commit(struct aw_draw *d, const char *project, const char *commit, const char *host,
                   char **err_out)
{
	char *scratch = NULL, **err = &scratch; /* the steps below always report into one */
	struct aw_draw dp = *d;
	struct aw_arena a;
	struct commit_host head;
	const char **names = NULL, *prev;
	char *first_err = NULL;
	size_t n_names = 0;
	int first = 0, rc;

	dp.project = project;
	memset(&head, 0, sizeof(head));
	aw_arena_init(&a, ARENA_LIMIT);
	if (!d->gp)
		goto out;
	rc = load_commit_host(&dp, &a, commit, host, &head);
	if (rc) {
		count(d,
		      aw_errorf(err, rc, "cannot read the runs of '%s' on '%s': %s", commit, host,
		                rc == -ENOENT ? "no run" : strerror(-rc)),
		      err, &first_err, &first);
		goto out;
	}
	/* the commit's own charts first: they are what a reader of its page waits for */
	count(d,
	      draw_compare_with(&dp, &a, &head,
	                        d->analysis && d->analysis->baseline_ref ? d->analysis->baseline_ref
	                                                                 : "main",
	                        false, err),
	      err, &first_err, &first);
	count(d, draw_percpu_with(&dp, &a, &head, err), err, &first_err, &first);
	rc = contention_names(&a, &head, &names, &n_names);
	for (size_t i = 0; !rc && i < n_names; i++)
		count(d, draw_contention_with(&dp, &a, &head, names[i], err), err, &first_err,
		      &first);
	dp.project = NULL; /* the heat map and the overview's pairs span projects, as pages do */
	count(d, draw_heatmap(&dp, &a, commit, err), err, &first_err, &first);
	prev = previous_commit(&dp, &a, commit);
	if (prev) {
		struct aw_draw pair = dp;
		char *pair_err = NULL;

		pair.project = project;
		rc = draw_compare_with(&pair, &a, &head, prev, true, &pair_err);
		if (rc != -ENOENT)
			count(d, rc, &pair_err, &first_err, &first);
		free(pair_err);
		if (!dp.store_rc)
			dp.store_rc = pair.store_rc;
	}
out:
	if (!d->store_rc)
		d->store_rc = dp.store_rc;
	cellset_release(&head.cells);
	aw_arena_release(&a);
	free(scratch);
	if (first && err_out)
		*err_out = first_err;
	else
		free(first_err);
	return first;
}
