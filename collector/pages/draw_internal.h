/* What the chart files of collector/pages/ share and nobody else uses: the runs and cells of a
 * chart read from the store into an arena (draw_data.c), how a cell is placed on the charts,
 * the bookkeeping of a chart drawn, and each kind's drawing for draw.c (draw_compare.c,
 * draw_grid.c, draw_trend.c). Everything read is copied into the caller's arena; int functions
 * return 0 or a negative errno, `char **err` as in draw.h. */
#ifndef AW_COLLECTOR_DRAW_INTERNAL_H
#define AW_COLLECTOR_DRAW_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aw/refblob.h"
#include "draw.h"

#define ARENA_LIMIT   (256u << 20) /* the data of one chart or task */
#define HEAD_RUNS_MAX 20           /* runs of one commit on one host read for a chart */
#define CELLS_MAX     60000        /* distinct cells in the runs of one chart */
#define HOST_RUNS_MAX 10000        /* runs of one commit read for the heat map */
#define GROUPS_MAX    256          /* trend groups of one host and ref */
#define LABEL_MAX     160
#define TABLE_MAX     (64u << 20) /* bytes of a compare chart's table */

/* ---- what the store gives ---- */

struct run_ref {
	int64_t seq, order_us;
	const char *run_id, *commit, *ref, *host;
	bool has_reference; /* the run has reference series */
	/* them, opened over the arena's copy once draw_read_references() read them (data NULL:
	 * not read, or none) */
	struct aw_refblob reference;
};

struct run_list {
	struct aw_arena *a;
	struct run_ref *runs;
	size_t n, cap;
};

/* The reference series of every run of l that has some (store_run_reference(); a listing
 * carries none), into its arena. 0 or a negative errno. */
int draw_read_references(struct store_conn *c, struct run_list *l);

/* A store_list_runs() callback: appends the run to the struct run_list `cls`. */
int draw_on_run(const struct store_run *r, void *cls);

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

/* An empty set over the arena `a` (-ENOMEM); draw_cellset_release() frees its index. */
int draw_cellset_init(struct cellset *s, struct aw_arena *a);
void draw_cellset_release(struct cellset *s);
/* The cell of `key`, NULL when the set has none. */
struct cell_acc *draw_cellset_find(const struct cellset *s, const char *key);
/* Adds the cells of every run of `runs`. Returns 0 or a store error. */
int draw_cellset_add_runs(struct store_conn *c, struct cellset *s, const struct run_list *runs);

/* The median over the runs of one statistic (0 p50, 1 p95, 2 p99); NAN when none. */
double draw_median(struct aw_arena *a, const struct cell_acc *c, int which);

/* ---- where a cell goes ---- */

/* A cell of a contention x duty grid rather than one of the host's ops: it has a contender, or
 * a duty cycle. The runner only measures duty beside a contender; an imported paste also has
 * duty rows with no contender (its "c 0") and contended rows whose contender CPU it never
 * names. */
static inline bool in_grid(int contender_cpu, int64_t c, int64_t d)
{
	return contender_cpu != AW_NONE || c != AW_NONE || d > 0;
}

static inline bool grid_cell(const struct cell_acc *c)
{
	return in_grid(c->contender_cpu, c->c, c->d);
}

/* The grid row of a grid cell: its contender's nops, 0 without a contender. */
static inline int64_t grid_c(const struct cell_acc *c)
{
	return c->c == AW_NONE ? 0 : c->c;
}

/* The CPU whose uncontended cells are a commit's "ops" (the first one measured); -1: none. */
int draw_first_cpu(const struct cellset *s);

/* Whether a cell is one item of the compare chart and the heat map: uncontended, on the first
 * CPU (or tied to none, as imported kernel figures are). */
static inline bool is_item(const struct cell_acc *c, int cpu)
{
	return !grid_cell(c) && (c->cpu < 0 || c->cpu == cpu);
}

/* The name a cell has on a chart ("srcu/llsc", "libpcpu:inc"), copied into `a`. */
const char *draw_cell_label(struct aw_arena *a, const struct cell_acc *c);

static inline const char *cell_group(const char *arch, const struct cell_acc *c, char *buf,
                                     size_t size)
{
	return aw_cell_group(arch, c->op, c->reader, c->subject, c->kernel, buf, size);
}

static inline const char *short_sha(struct aw_arena *a, const char *sha)
{
	return sha ? aw_arena_strndup(a, sha, 12) : NULL;
}

/* ---- a chart drawn ---- */

/* Counts the outcome `rc` of drawing one chart in d. */
void draw_count_one(struct aw_draw *d, int rc);
/* The same; a failure keeps the first message in *first_err (and *first), *err is freed.
 * Returns rc. */
int draw_count(struct aw_draw *d, int rc, char **err, char **first_err, int *first);

/* Holds chart `id`'s files against the cache's refresh (aw_chart_cache_hold()) before it is
 * drawn; draw_published() lets them go. Nothing when d publishes nothing. */
void draw_hold(struct aw_draw *d, const struct aw_chart_id *id);

/* Stores the files of chart `id` that were just drawn, or found unchanged (rc 0 or
 * AW_DRAW_CACHED), in the database; a failure there is kept in d->store_rc (the chart is on
 * this collector's disk, but not for the others). Called after draw_hold() whatever the draw's
 * outcome: it lets the files go. Returns rc. */
int draw_published(struct aw_draw *d, const struct aw_chart_id *id, int rc);

/* ---- the charts of one commit ---- */

struct commit_host {
	const char *commit, *host;
	struct run_list runs; /* newest first */
	struct cellset cells;
	int first_cpu;
};

/* Reads the runs of `commit` on `host` (at most HEAD_RUNS_MAX, of d->project) and their cells
 * into *ch. Returns 0, -ENOENT (no run) or a store error; release ch->cells either way. */
int draw_load_commit_host(struct aw_draw *d, struct aw_arena *a, const char *commit,
                          const char *host, struct commit_host *ch);

/* The compare chart of `head` against `base` (draw_compare.c): the runs of commit `base` on the
 * host when there are some, else the baseline window of ref `base` (or -ENOENT when
 * `pair_only`). */
int draw_compare_with(struct aw_draw *d, struct aw_arena *a, struct commit_host *head,
                      const char *base, bool pair_only, char **err);

/* The per-CPU chart, the contention chart `name` and the names of a commit's contention charts
 * on a host, and the commit's heat map across hosts (draw_grid.c). */
int draw_percpu_with(struct aw_draw *d, struct aw_arena *a, struct commit_host *head, char **err);
int draw_contention_with(struct aw_draw *d, struct aw_arena *a, struct commit_host *head,
                         const char *name, char **err);
int draw_contention_names(struct aw_arena *a, const struct commit_host *head, const char ***names,
                          size_t *n);
int draw_heatmap(struct aw_draw *d, struct aw_arena *a, const char *commit, char **err);

/* The trend of group `only` or, NULL, of every group of `host` on `ref` (draw_trend.c). */
int draw_trends_of(struct aw_draw *d, const char *host, const char *ref, const char *only,
                   char **err_out);

#endif
