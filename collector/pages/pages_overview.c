/* "/", the overview (pages.h): every host with its last commit and verdict, and the newest
 * commits, each with the gate's word over its hosts. */
#include "pages_internal.h"

#include <string.h>

#include "aw/util.h"
#include "bisect_pages.h"

/* ---- "/" ---- */

static int last_commit(struct store_conn *c, struct aw_arena *a, const char *host, const char **out)
{
	struct store_run_filter f = {.host = host, .limit = 1};
	struct runs runs;
	int rc = site_list_runs(c, a, &f, &runs);

	*out = !rc && runs.n ? runs.v[0].commit : NULL;
	return rc;
}

struct status_only {
	enum aw_verdict v;
	bool any;
};

static int on_status(const struct store_verdict *sv, void *cls)
{
	struct status_only *s = cls;

	s->v =
	    s->any ? site_worst(s->v, aw_verdict_parse(sv->status)) : aw_verdict_parse(sv->status);
	s->any = true;
	return 0;
}

int aw_site_overview(const struct aw_site *s, struct aw_buf *out)
{
	struct aw_arena a;
	struct hosts hosts = {.a = &a};
	struct aw_recent_commit *recent = NULL;
	struct aw_page_commit_summary *commits = NULL;
	const struct aw_page_bisect *bisects = NULL;
	size_t n_recent = 0, n_bisects = 0;
	char now[AW_TIME_LEN];
	int rc;

	aw_arena_init(&a, ARENA_LIMIT);
	rc = store_list_hosts(s->conn, site_on_host, &hosts);
	for (size_t i = 0; !rc && i < hosts.n; i++) {
		struct status_only st = {AW_VERDICT_UNKNOWN, false};

		rc = last_commit(s->conn, &a, hosts.v[i].name, &hosts.v[i].last_commit);
		if (!rc)
			rc = store_verdict_statuses(s->conn, NULL, NULL, hosts.v[i].name, 1,
			                            on_status, &st);
		hosts.v[i].last_verdict = st.v;
	}
	if (!rc)
		rc = aw_site_recent_commits(s->conn, &a, AW_OVERVIEW_COMMITS, &recent, &n_recent);
	if (!rc && n_recent)
		commits = aw_arena_alloc(&a, n_recent * sizeof(*commits));
	for (size_t i = 0; !rc && !a.rc && i < n_recent; i++) {
		struct status_only st = {AW_VERDICT_UNKNOWN, false};

		rc = store_verdict_statuses(s->conn, NULL, recent[i].sha, NULL, VERDICTS_READ,
		                            on_status, &st);
		commits[i] = (struct aw_page_commit_summary){
		    recent[i].sha, recent[i].ref, recent[i].time, recent[i].hosts, 0, st.v};
	}
	if (!rc)
		rc = aw_site_bisects(s->conn, &a, NULL, &bisects, &n_bisects);
	if (!rc)
		rc = a.rc;
	if (!rc) {
		const struct aw_page_overview p = {hosts.v, hosts.n, commits,  n_recent,
		                                   now,     bisects, n_bisects};

		aw_time_now(now);
		rc = aw_html_overview(out, s->links, &p);
	}
	aw_arena_release(&a);
	return rc;
}

int aw_site_overview_page(const struct aw_site *s, const char *a, const char *b, struct aw_buf *out)
{
	(void)a, (void)b;
	return aw_site_overview(s, out);
}
