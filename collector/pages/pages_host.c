/* "/hosts/{name}" (pages.h): a host's fingerprints, its recent runs with their verdicts, and
 * its trend charts on the refs it ran, with the per-CPU and contention charts of its newest
 * run. */
#include "pages_internal.h"

#include <errno.h>
#include <string.h>

#include "aw/util.h"

#define HOST_RUNS_SHOWN 50 /* recent runs on a host page */
#define HOST_REFS_SHOWN 3  /* refs whose trends a host page shows */

/* ---- "/hosts/{name}" ---- */

/* The cells of the host's newest verdict (of `commit`) that need a look: regressed and
 * inconclusive ones, in the verdict's order (regressed first). */
static int host_attention(const struct aw_site *s, struct aw_arena *a, const char *host,
                          const char *commit, struct aw_page_host *p)
{
	struct verdicts latest = {0};
	const struct aw_verdict_view *v;
	struct aw_page_cell_row *rows = NULL;
	size_t n = 0, cap = 0;
	int rc;

	rc = site_read_verdicts(s->conn, a, host, commit, true, 1, &latest);
	v = rc ? NULL : site_verdict_of(&latest, commit);
	for (size_t i = 0; v && i < v->n_cells; i++) {
		struct aw_page_cell_row row, *r;

		site_cell_row(&v->cells[i], &row);
		if (row.verdict != AW_VERDICT_REGRESSED && row.verdict != AW_VERDICT_INCONCLUSIVE)
			continue;
		r = aw_arena_push(a, &rows, &n, &cap, sizeof(*r));
		if (!r)
			break;
		*r = row;
	}
	site_verdicts_release(&latest);
	p->attention_commit = commit;
	p->attention = rows;
	p->n_attention = n;
	return rc ? rc : a->rc;
}

/* Trend, per-CPU and contention charts of a host: trends of each shown ref, the others of the
 * host's newest run. */
static int host_charts(const struct aw_site *s, struct aw_arena *a, const char *host,
                       const struct runs *runs, struct aw_page_host *p)
{
	const char *refs[HOST_REFS_SHOWN];
	struct aw_chart_ref *trends = NULL, *contention = NULL, *percpu;
	size_t n_refs = 0, n_trends = 0, trends_cap = 0, n_cont = 0, cont_cap = 0;
	int rc = 0;

	/* the baseline ref first, then the others by recency */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < runs->n && n_refs < HOST_REFS_SHOWN; i++) {
			const char *ref = runs->v[i].ref;
			bool dup = false;

			if ((pass == 0) != !strcmp(ref, s->baseline_ref))
				continue;
			for (size_t k = 0; k < n_refs; k++)
				dup = dup || !strcmp(refs[k], ref);
			if (!dup)
				refs[n_refs++] = ref;
		}
	for (size_t k = 0; k < n_refs && !rc; k++) {
		const struct run_copy *newest = NULL;
		const char **groups, **names;
		size_t n_groups, n_names;

		for (size_t i = 0; i < runs->n && !newest; i++)
			if (!strcmp(runs->v[i].ref, refs[k]))
				newest = &runs->v[i];
		rc = aw_run_chart_names(s->conn, a, p->host.arch, newest->seq, &groups, &n_groups,
		                        &names, &n_names);
		for (size_t g = 0; !rc && g < n_groups; g++) {
			struct aw_chart_ref *r =
			    aw_arena_push(a, &trends, &n_trends, &trends_cap, sizeof(*r));
			const struct aw_chart_id id = {.kind = AW_CHART_TREND,
			                               .host = host,
			                               .ref = refs[k],
			                               .name = groups[g]};

			if (r)
				*r = site_chart_ref(s, id,
				                    site_fmt(a, "%s: %s", refs[k], groups[g]));
		}
		/* the newest run's commit gives the per-CPU and contention charts */
		if (rc || newest != &runs->v[0] || !newest->commit)
			continue;
		percpu = aw_arena_alloc(a, sizeof(*percpu));
		if (percpu) {
			const struct aw_chart_id id = {
			    .kind = AW_CHART_PERCPU, .commit = newest->commit, .host = host};

			*percpu = site_chart_ref(
			    s, id, site_fmt(a, "p50 per CPU at %.12s", newest->commit));
			p->percpu = percpu;
		}
		for (size_t i = 0; i < n_names; i++) {
			struct aw_chart_ref *r =
			    aw_arena_push(a, &contention, &n_cont, &cont_cap, sizeof(*r));
			const struct aw_chart_id id = {.kind = AW_CHART_CONTENTION,
			                               .commit = newest->commit,
			                               .host = host,
			                               .name = names[i]};

			if (r)
				*r = site_chart_ref(s, id,
				                    site_fmt(a, "%s: contention x duty at %.12s",
				                             names[i], newest->commit));
		}
	}
	p->trends = trends;
	p->n_trends = n_trends;
	p->contention = contention;
	p->n_contention = n_cont;
	return rc ? rc : a->rc;
}

int aw_site_host(const struct aw_site *s, const char *host, struct aw_buf *out)
{
	struct store_run_filter f = {.host = host, .limit = HOST_RUNS_SHOWN};
	struct aw_arena a;
	struct hosts hosts = {.a = &a};
	struct verdicts verdicts = {0};
	struct aw_page_host p = {0};
	struct aw_page_run *page_runs = NULL;
	struct runs runs = {0};
	char now[AW_TIME_LEN];
	int rc;

	if (!aw_valid_name(host))
		return -EINVAL;
	aw_arena_init(&a, ARENA_LIMIT);
	rc = store_get_host(s->conn, host, site_on_host, site_on_fingerprint, &hosts);
	if (!rc && !hosts.n)
		rc = -ENOENT;
	if (!rc)
		rc = site_list_runs(s->conn, &a, &f, &runs);
	if (!rc)
		rc = site_read_verdicts(s->conn, &a, host, NULL, false, HOST_RUNS_SHOWN, &verdicts);
	if (rc)
		goto out;
	p.host = hosts.v[0];
	p.host.last_commit = runs.n ? runs.v[0].commit : NULL;
	p.host.last_verdict = verdicts.n ? verdicts.v[0].view.status : AW_VERDICT_UNKNOWN;
	p.fingerprints = hosts.fps;
	p.n_fingerprints = hosts.n_fps;
	if (runs.n)
		page_runs = aw_arena_alloc(&a, runs.n * sizeof(*page_runs));
	for (size_t i = 0; page_runs && i < runs.n; i++) {
		const struct aw_verdict_view *v = site_verdict_of(&verdicts, runs.v[i].commit);

		page_runs[i] = (struct aw_page_run){
		    runs.v[i].run_id,     runs.v[i].commit,  runs.v[i].ref,
		    runs.v[i].started_at, runs.v[i].trigger, v ? v->status : AW_VERDICT_UNKNOWN};
	}
	p.runs = page_runs;
	p.n_runs = runs.n;
	rc = runs.n ? host_charts(s, &a, host, &runs, &p) : 0;
	if (!rc && verdicts.n)
		rc = host_attention(s, &a, host, verdicts.v[0].name, &p);
	if (!rc)
		rc = a.rc;
	if (!rc) {
		aw_time_now(now);
		p.generated_at = now;
		rc = aw_html_host(out, s->links, &p);
	}
out:
	site_verdicts_release(&verdicts);
	aw_arena_release(&a);
	return rc;
}

int aw_site_host_page(const struct aw_site *s, const char *a, const char *b, struct aw_buf *out)
{
	(void)b;
	return aw_site_host(s, a, out);
}
