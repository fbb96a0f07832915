/* What the page files of collector/pages/ share and nobody else uses (pages.c defines it): how a
 * chart is shown, the runs, hosts and cached verdicts a page reads, copied into the page's
 * arena. Int functions return 0 or a negative errno (a store error, the arena's -ENOMEM). */
#ifndef AW_COLLECTOR_PAGES_INTERNAL_H
#define AW_COLLECTOR_PAGES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "draw.h"
#include "pages.h"

#define ARENA_LIMIT   (128u << 20) /* the data of one page */
#define VERDICTS_READ 1000         /* cached verdicts read for one page */

/* ---- small helpers ---- */

/* Chart `id` on a page, with `caption` (borrowed), ready when s->chart_ready says so. */
struct aw_chart_ref site_chart_ref(const struct aw_site *s, struct aw_chart_id id,
                                   const char *caption);

/* An arena copy of formatted text (at most 511 bytes). */
const char *site_fmt(struct aw_arena *a, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* The gate's word for a commit over its hosts: fail beats inconclusive beats incomplete beats
 * unconfirmed beats pass (as /api/v1/gate aggregates). */
enum aw_verdict site_worst(enum aw_verdict a, enum aw_verdict b);

/* ---- runs ---- */

struct run_copy {
	int64_t seq;
	const char *run_id, *commit, *ref, *host, *started_at, *commit_time, *trigger;
	bool confirmation; /* re-measures another run's suspects: a subset of its cells */
};

struct runs {
	struct aw_arena *a;
	struct run_copy *v;
	size_t n, cap;
};

/* The distinct refs of a commit's runs, newest run first ("harden, reference"). */
const char *site_refs_of(struct aw_arena *a, const struct runs *runs);

/* The runs `f` selects, newest first, into *out. */
int site_list_runs(struct store_conn *c, struct aw_arena *a, const struct store_run_filter *f,
                   struct runs *out);

/* ---- host fingerprints ---- */

struct hosts {
	struct aw_arena *a;
	struct aw_page_host_summary *v;
	size_t n, cap;
	struct aw_page_fingerprint *fps;
	size_t n_fps, fps_cap;
};

/* store_list_hosts() and store_get_host() callbacks appending to the struct hosts `cls`: a
 * host's summary (cores, LSE and labels from its fingerprint), and one version of its
 * fingerprint flattened into key/value pairs. */
int site_on_host(const struct store_host *h, void *cls);
int site_on_fingerprint(const struct store_fingerprint *f, void *cls);

/* ---- cached verdicts ---- */

struct verdicts {
	struct aw_arena *a;
	const char *host;        /* set: keep the view of each commit; NULL: of each host */
	struct aw_strmap *index; /* commit (or host) -> position */
	struct {
		const char *name;
		struct aw_verdict_view view;
		bool parsed;
	} * v;
	size_t n, cap;
	bool parse; /* parse the JSON (cells) too, else only the status */
};

/* Reads the newest `limit` cached verdicts of a host (by commit) or of a commit (by host);
 * site_verdicts_release() frees the index, also after a failure. */
int site_read_verdicts(struct store_conn *c, struct aw_arena *a, const char *host,
                       const char *commit, bool parse, unsigned limit, struct verdicts *out);
/* The verdict of commit (or host) `name`, NULL when none was read. */
const struct aw_verdict_view *site_verdict_of(const struct verdicts *l, const char *name);

/* A page's row of verdict cell `c` (strings borrowed from its view): its numbers, its note and
 * levels. No duty time: head_gross NAN. */
void site_cell_row(const struct aw_verdict_cell *c, struct aw_page_cell_row *r);
void site_verdicts_release(struct verdicts *l);

#endif
