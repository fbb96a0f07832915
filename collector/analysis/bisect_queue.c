/* The bisections the collector queues after a verdict; see bisect_queue.h. The collector knows
 * only the commits it measured: a finding carries the previous measured commit and the new one
 * as good and bad, and the agent lists the commits between them (a range of one commit is
 * confirmed in one step). */
#include "bisect_queue.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/log.h"
#include "aw/util.h"

#define HEAD_RUNS      16
#define RECENT_RUNS    10 /* a change point this recent on the ref may start a bisection */
#define FINDINGS_MAX   8
#define SUBJECT_PREFIX "subject="
#define RESERVED       "atomwatch-" /* the agent's own cells: the control, the macro check */

/* The head runs of the commit: whether a bisection measured it last, its platform, its
 * position. */
struct head {
	bool found, by_bisect;
	char platform[AW_SHA256_HEX_LEN + 1];
	int64_t order_us;
	int64_t first_seq; /* the commit's oldest run on the host */
};

static int on_head(const struct store_run *r, void *cls)
{
	struct head *h = cls;

	h->first_seq = r->seq; /* (newest first: the last one seen is the oldest) */
	if (h->found)
		return 0; /* newest first: the newest run decides */
	h->found = true;
	h->by_bisect = r->trigger && !strcmp(r->trigger, "bisect");
	snprintf(h->platform, sizeof(h->platform), "%s", r->platform_hash ? r->platform_hash : "");
	h->order_us = r->order_us;
	return 0;
}

/* The commit before a position on the ref (its newest earlier run's, not a confirmation). */
struct before {
	const char *skip;
	char commit[65];
	bool found;
};

static int on_before(const struct store_run *r, void *cls)
{
	struct before *b = cls;

	if (b->found || !r->commit || r->confirmation_of || !strcmp(r->commit, b->skip))
		return 0;
	snprintf(b->commit, sizeof(b->commit), "%s", r->commit);
	b->found = true;
	return 0;
}

/* (at `order_us` itself, commits whose times tie with it, those measured before `seq`: the
 * history's rule, analysis.c) */
static int commit_before(struct store_conn *c, const char *project, const char *host,
                         const char *ref, const char *commit, int64_t order_us, int64_t seq,
                         char *out)
{
	struct before b = {.skip = commit};
	int rc = store_ref_history(c, project, host, ref, order_us, seq, HEAD_RUNS, on_before, &b);

	out[0] = '\0';
	if (!rc && b.found)
		snprintf(out, 65, "%s", b.commit);
	return rc;
}

/* One finding: a subject (NULL: the step command's way) and its cells. */
struct finding {
	char subject[AW_NAME_MAX + 1];
	bool step;
	char good[65], bad[65];
	const char *reason;
	json_t *cells;
};

struct findings {
	struct finding f[FINDINGS_MAX];
	size_t n;
};

/* The subject of a cell key ("subject=NAME ..."), or "" for other cells. */
static void subject_of(const char *key, char *out, size_t size)
{
	size_t len;

	out[0] = '\0';
	if (strncmp(key, SUBJECT_PREFIX, strlen(SUBJECT_PREFIX)))
		return;
	key += strlen(SUBJECT_PREFIX);
	len = strcspn(key, " ");
	if (len < size)
		snprintf(out, size, "%.*s", (int)len, key);
}

static int add(struct findings *fs, const char *good, const char *bad, const char *reason,
               const char *key)
{
	char subject[AW_NAME_MAX + 1];
	struct finding *f = NULL;

	subject_of(key, subject, sizeof(subject));
	if (!strncmp(subject, RESERVED, strlen(RESERVED)))
		return 0;
	for (size_t i = 0; i < fs->n && !f; i++)
		if (!strcmp(fs->f[i].subject, subject) && !strcmp(fs->f[i].good, good) &&
		    !strcmp(fs->f[i].bad, bad))
			f = &fs->f[i];
	if (!f) {
		if (fs->n >= FINDINGS_MAX)
			return 0;
		f = &fs->f[fs->n++];
		memset(f, 0, sizeof(*f));
		snprintf(f->subject, sizeof(f->subject), "%s", subject);
		f->step = !subject[0];
		snprintf(f->good, sizeof(f->good), "%s", good);
		snprintf(f->bad, sizeof(f->bad), "%s", bad);
		f->reason = reason;
		f->cells = json_array();
		if (!f->cells)
			return -ENOMEM;
	}
	return json_array_append_new(f->cells, json_string(key)) ? -ENOMEM : 0;
}

/* The daemon host a finding's bisection goes to: the finding's own when it can run it, else
 * the first other one of the same platform that can. */
struct runner_pick {
	const struct finding *f;
	const char *host, *platform;
	char runner[AW_NAME_MAX + 1];
	bool own;
};

static bool lists(const char *list, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = list; p && *p;) {
		size_t n = strcspn(p, ",");

		if (n == len && !strncmp(p, name, len))
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

static int on_daemon(const struct store_daemon_host *d, void *cls)
{
	struct runner_pick *p = cls;
	bool can;

	if (!d->platform_hash || strcmp(d->platform_hash, p->platform) || p->own)
		return 0;
	can = p->f->step ? d->step != NULL : lists(d->subjects, p->f->subject);
	if (!can)
		return 0;
	if (!strcmp(d->host, p->host) || !p->runner[0]) {
		snprintf(p->runner, sizeof(p->runner), "%s", d->host);
		p->own = !strcmp(d->host, p->host);
	}
	return 0;
}

/* The change points of the host's series on the ref among its most recent runs, slower after
 * than before, as findings. */
struct recent {
	char run_id[RECENT_RUNS][AW_UUID_LEN + 1];
	size_t n;
};

static int on_recent(const struct store_run *r, void *cls)
{
	struct recent *rc = cls;

	if (rc->n < RECENT_RUNS)
		snprintf(rc->run_id[rc->n++], AW_UUID_LEN + 1, "%s", r->run_id);
	return 0;
}

struct cp_scan {
	struct store_conn *c;
	const char *project, *host, *ref;
	struct recent recent;
	struct findings *fs;
	int rc;
};

/* Whether the commit's cached verdict on the host says the host changed. */
static int on_verdict_json(const struct store_verdict *v, void *cls)
{
	bool *changed = cls;

	*changed = v->json && strstr(v->json, "\"host_changed\"") != NULL;
	return 0;
}

static int on_cp(const struct store_changepoint *cp, void *cls)
{
	struct cp_scan *s = cls;
	char good[65];
	bool recent = false, host_changed = false;
	int rc;

	if (!cp->commit || !cp->run_id || strcmp(cp->metric, "p50") || !(cp->after > cp->before))
		return 0;
	for (size_t i = 0; i < s->recent.n && !recent; i++)
		recent = !strcmp(s->recent.run_id[i], cp->run_id);
	if (!recent)
		return 0;
	rc = store_verdict_list(s->c, s->project, cp->commit, s->host, 1, on_verdict_json,
	                        &host_changed);
	if (!rc && !host_changed)
		rc = commit_before(s->c, s->project, s->host, s->ref, cp->commit, cp->order_us, 0,
		                   good);
	if (!rc && !host_changed && good[0])
		rc = add(s->fs, good, cp->commit, "changepoint", cp->cell_key);
	return rc;
}

static int queue_one(struct store_conn *c, const struct aw_analysis_opts *o, const char *project,
                     const char *host, const char *ref, const char *platform,
                     const struct finding *f)
{
	struct runner_pick pick = {.f = f, .host = host, .platform = platform};
	struct store_bisect_spec spec;
	char *cells = NULL;
	bool covered = false, created = false;
	int64_t id = 0;
	int rc;

	rc = store_bisect_covered(c, project, platform, f->good, f->bad, &covered);
	if (rc || covered)
		return rc;
	rc = store_daemon_hosts(c, o->confirm_ttl_us, on_daemon, &pick);
	if (rc)
		return rc;
	if (!pick.runner[0]) {
		aw_debug("postingest: no daemon host of platform %s can bisect %s %.12s..%.12s%s%s",
		         platform, project, f->good, f->bad, f->step ? "" : " of subject ",
		         f->step ? "" : f->subject);
		return 0;
	}
	cells = json_dumps(f->cells, JSON_COMPACT);
	if (!cells)
		return -ENOMEM;
	spec = (struct store_bisect_spec){.project = project,
	                                  .platform_hash = platform,
	                                  .subject = f->subject,
	                                  .ref = ref,
	                                  .good = f->good,
	                                  .bad = f->bad,
	                                  .host = host,
	                                  .runner = pick.runner,
	                                  .cells = cells,
	                                  .reason = f->reason,
	                                  .ttl_us = o->confirm_ttl_us};
	rc = store_bisect_create(c, &spec, &id, &created);
	if (rc == -EAGAIN)
		rc = 0; /* another collector queued the same finding: one runs */
	if (!rc && created)
		aw_info("postingest: queued bisection %" PRId64 " of %s %.12s..%.12s on '%s' for "
		        "host '%s' (%s, %zu cell%s)",
		        id, project, f->good, f->bad, pick.runner, host, f->reason,
		        json_array_size(f->cells), json_array_size(f->cells) == 1 ? "" : "s");
	free(cells);
	return rc;
}

int aw_bisect_queue(struct store_conn *c, const struct aw_analysis_opts *o, const char *project,
                    const char *commit, const char *host, const char *ref,
                    const struct aw_host_verdict *v)
{
	struct store_run_filter f = {
	    .project = project, .host = host, .commit = commit, .limit = HEAD_RUNS};
	struct findings fs = {.n = 0};
	struct cp_scan scan = {.c = c, .project = project, .host = host, .ref = ref, .fs = &fs};
	struct head head = {0};
	char good[65];
	int rc;

	if (!commit || !ref || strcmp(ref, o->baseline_ref))
		return 0;
	rc = store_list_runs(c, &f, on_head, &head);
	if (rc || !head.found || head.by_bisect || !head.platform[0])
		return rc; /* a bisection's own runs start none */
	/* the verdict's confirmed regressions (host changed is not one) */
	rc = commit_before(c, project, host, ref, commit, head.order_us, head.first_seq, good);
	for (size_t i = 0; !rc && good[0] && i < v->n_cells; i++)
		if (v->cells[i].verdict == AW_VERDICT_REGRESSED && v->cells[i].gate == AW_GATE_FAIL)
			rc = add(&fs, good, commit, "verdict", v->cells[i].key);
	/* the recent change points of the host's series */
	if (!rc)
		rc = store_ref_history(c, project, host, ref, INT64_MAX, INT64_MAX, RECENT_RUNS,
		                       on_recent, &scan.recent);
	if (!rc)
		rc = store_changepoints_list(c, project, host, ref, NULL, on_cp, &scan);
	for (size_t i = 0; !rc && i < fs.n; i++)
		rc = queue_one(c, o, project, host, ref, head.platform, &fs.f[i]);
	for (size_t i = 0; i < fs.n; i++)
		json_decref(fs.f[i].cells);
	return rc;
}
