/* The report pages from the store (see pages.h): each builder reads runs, hosts and cached
 * verdicts into an arena, fills the reports library's page struct, asks whether each chart's
 * files are there, and lets the library write (and escape) the HTML. */
#include "pages.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "aw/strmap.h"
#include "aw/util.h"
#include "draw.h"

#define ARENA_LIMIT     (128u << 20) /* the data of one page */
#define HOST_RUNS_SHOWN 50           /* recent runs on a host page */
#define HOST_REFS_SHOWN 3            /* refs whose trends a host page shows */
#define VERDICTS_READ   1000         /* cached verdicts read for one page */
#define COMMIT_RUNS_MAX 10000        /* runs of one commit read */
#define FIELDS_MAX      256          /* fingerprint fields shown */
#define LABELS_MAX      64
#define CELLS_MAX       60000
#define TABLE_MAX       (64u << 20) /* bytes of a compare chart's table */

/* ---- small helpers ---- */

bool aw_site_chart_exists(const char *data_dir, const struct aw_chart_id *id)
{
	static const char *const ext[2] = {"svg", "png"};
	char rel[1024];
	struct stat st;

	for (int i = 0; i < 2; i++) {
		if (aw_chart_path(id, ext[i], rel, sizeof(rel)) ||
		    aw_stat_beneath(data_dir, rel, &st) < 0 || !S_ISREG(st.st_mode) ||
		    st.st_size == 0)
			return false;
	}
	return true;
}

static bool chart_ready(const struct aw_site *s, const struct aw_chart_id *id)
{
	return s->chart_ready ? s->chart_ready(id, s->cls) : aw_site_chart_exists(s->data_dir, id);
}

static struct aw_chart_ref chart_ref(const struct aw_site *s, struct aw_chart_id id,
                                     const char *caption)
{
	struct aw_chart_ref r = {.id = id, .caption = caption};

	r.ready = chart_ready(s, &r.id);
	return r;
}

static const char *fmt(struct aw_arena *a, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* An arena copy of formatted text (at most 511 bytes). */
static const char *fmt(struct aw_arena *a, const char *format, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, format);
	vsnprintf(buf, sizeof(buf), format, ap);
	va_end(ap);
	return aw_arena_strdup(a, buf);
}

/* The gate's word for a commit over its hosts: fail beats incomplete beats unconfirmed beats
 * pass (as /api/v1/gate aggregates). */
static enum aw_verdict worst(enum aw_verdict a, enum aw_verdict b)
{
	static const enum aw_verdict order[] = {AW_VERDICT_FAIL, AW_VERDICT_INCOMPLETE,
	                                        AW_VERDICT_UNCONFIRMED, AW_VERDICT_PASS};

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (a == order[i] || b == order[i])
			return order[i];
	return AW_VERDICT_UNKNOWN;
}

/* ---- runs ---- */

struct run_copy {
	int64_t seq;
	const char *run_id, *commit, *ref, *host, *started_at, *commit_time, *trigger;
};

struct runs {
	struct aw_arena *a;
	struct run_copy *v;
	size_t n, cap;
};

/* Whether `list` ("a, b") holds `ref` as one of its items. */
static bool ref_listed(const char *list, const char *ref)
{
	const size_t len = strlen(ref);

	for (const char *p = list; p && *p;) {
		const char *end = strstr(p, ", ");
		const size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == len && !memcmp(p, ref, len))
			return true;
		p = end ? end + 2 : NULL;
	}
	return false;
}

/* `list` with `ref` appended unless it is there already ("harden, reference"): a commit measured
 * on a branch and imported under another ref shows both. A list grown past a line stays as it
 * is; the runs table names each run's ref. */
static const char *ref_join(struct aw_arena *a, const char *list, const char *ref)
{
	if (!ref || ref_listed(list, ref))
		return list;
	if (!list)
		return ref;
	if (strlen(list) + strlen(ref) > 200)
		return list;
	return fmt(a, "%s, %s", list, ref);
}

/* The distinct refs of a commit's runs, newest run first. */
static const char *refs_of(struct aw_arena *a, const struct runs *runs)
{
	const char *list = NULL;

	for (size_t i = 0; i < runs->n; i++)
		list = ref_join(a, list, runs->v[i].ref);
	return list;
}

static int on_run(const struct store_run *r, void *cls)
{
	struct runs *l = cls;
	struct run_copy *x = aw_arena_push(l->a, &l->v, &l->n, &l->cap, sizeof(*x));

	if (!x)
		return l->a->rc;
	x->seq = r->seq;
	x->run_id = aw_arena_strdup(l->a, r->run_id);
	x->commit = aw_arena_strdup(l->a, r->commit);
	x->ref = aw_arena_strdup(l->a, r->ref);
	x->host = aw_arena_strdup(l->a, r->host);
	x->started_at = aw_arena_strdup(l->a, r->started_at);
	x->commit_time = aw_arena_strdup(l->a, r->commit_time);
	x->trigger = aw_arena_strdup(l->a, r->trigger);
	return l->a->rc;
}

static int list_runs(struct store_conn *c, struct aw_arena *a, const struct store_run_filter *f,
                     struct runs *out)
{
	memset(out, 0, sizeof(*out));
	out->a = a;
	return store_list_runs(c, f, on_run, out);
}

static int cmp_host(const void *x, const void *y)
{
	return strcmp((*(const struct run_copy *const *)x)->host,
	              (*(const struct run_copy *const *)y)->host);
}

/* The newest run of each host among `runs` (newest first), sorted by host name. */
static int newest_per_host(struct aw_arena *a, const struct runs *runs,
                           const struct run_copy ***out, size_t *n)
{
	struct aw_strmap *seen = aw_strmap_new(COMMIT_RUNS_MAX);
	const struct run_copy **v = NULL;
	size_t cap = 0;
	int64_t one;

	*n = 0;
	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < runs->n; i++) {
		const struct run_copy **slot;

		if (!aw_strmap_get(seen, runs->v[i].host, &one) ||
		    aw_strmap_put(seen, runs->v[i].host, 1))
			continue;
		slot = aw_arena_push(a, &v, n, &cap, sizeof(*slot));
		if (slot)
			*slot = &runs->v[i];
	}
	aw_strmap_free(&seen);
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_host);
	*out = v;
	return a->rc;
}

int aw_site_recent_commits(struct store_conn *c, struct aw_arena *a, size_t max,
                           struct aw_recent_commit **out, size_t *n)
{
	struct store_run_filter f = {.limit = AW_RECENT_RUNS};
	struct aw_strmap *index = NULL, *pairs = NULL;
	struct runs runs;
	size_t cap = 0;
	char pair[AW_COMMIT_MAX + AW_NAME_MAX + 2];
	int64_t pos, one;
	int rc;

	*out = NULL;
	*n = 0;
	index = aw_strmap_new(AW_RECENT_RUNS);
	pairs = aw_strmap_new(AW_RECENT_RUNS);
	rc = index && pairs ? list_runs(c, a, &f, &runs) : -ENOMEM;
	for (size_t i = 0; !rc && i < runs.n; i++) {
		const struct run_copy *r = &runs.v[i];
		struct aw_recent_commit *rc_slot;

		if (!r->commit)
			continue;
		if (aw_strmap_get(index, r->commit, &pos)) {
			if (*n >= max)
				continue;
			pos = (int64_t)*n;
			rc_slot = aw_arena_push(a, out, n, &cap, sizeof(*rc_slot));
			if (!rc_slot)
				break;
			rc_slot->sha = r->commit;
			rc_slot->ref = r->ref;
			rc_slot->time = r->commit_time ? r->commit_time : r->started_at;
			rc = aw_strmap_put(index, r->commit, pos);
		}
		(*out)[pos].ref = ref_join(a, (*out)[pos].ref, r->ref);
		snprintf(pair, sizeof(pair), "%s %s", r->commit, r->host);
		if (!rc && aw_strmap_get(pairs, pair, &one)) {
			(*out)[pos].hosts++;
			rc = aw_strmap_put(pairs, pair, 1);
		}
	}
	aw_strmap_free(&index);
	aw_strmap_free(&pairs);
	return rc ? rc : a->rc;
}

/* ---- host fingerprints ---- */

static const char *json_text(struct aw_arena *a, const json_t *j)
{
	char *text;
	const char *copy;

	if (json_is_string(j))
		return aw_arena_strdup(a, json_string_value(j));
	text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	copy = aw_arena_strdup(a, text ? text : "?");
	free(text);
	return copy;
}

struct kvs {
	struct aw_kv *v;
	size_t n, cap;
};

/* Objects become dotted keys ("stable.cpus", "labels.rack"); anything else one value. */
static void flatten(struct aw_arena *a, const char *prefix, const json_t *j, struct kvs *out)
{
	const char *key;
	json_t *value;

	if (!json_is_object(j)) {
		struct aw_kv *kv;

		if (out->n >= FIELDS_MAX ||
		    !(kv = aw_arena_push(a, &out->v, &out->n, &out->cap, sizeof(*kv))))
			return;
		kv->key = prefix;
		kv->value = json_text(a, j);
		return;
	}
	json_object_foreach ((json_t *)j, key, value) {
		flatten(a, *prefix ? fmt(a, "%s.%s", prefix, key) : aw_arena_strdup(a, key), value,
		        out);
	}
}

/* The summary fields a host's fingerprint gives: cores, LSE and labels. */
static void summary_from_fingerprint(struct aw_arena *a, const char *doc,
                                     struct aw_page_host_summary *h)
{
	json_t *fp = doc ? json_loads(doc, 0, NULL) : NULL;
	json_t *stable = json_object_get(fp, "stable"), *cpus = json_object_get(stable, "cpus");
	json_t *lse = json_object_get(stable, "lse"), *labels = json_object_get(fp, "labels");
	struct kvs kv = {0};
	const char *key;
	json_t *value;

	h->cores = json_is_integer(cpus) ? (int)json_integer_value(cpus) : -1;
	h->lse =
	    json_is_boolean(lse) && h->arch && !strcmp(h->arch, "aarch64") ? json_is_true(lse) : -1;
	json_object_foreach (labels, key, value) {
		struct aw_kv *slot;

		if (kv.n >= LABELS_MAX ||
		    !(slot = aw_arena_push(a, &kv.v, &kv.n, &kv.cap, sizeof(*slot))))
			break;
		slot->key = aw_arena_strdup(a, key);
		slot->value = json_text(a, value);
	}
	h->labels = kv.v;
	h->n_labels = kv.n;
	json_decref(fp);
}

struct hosts {
	struct aw_arena *a;
	struct aw_page_host_summary *v;
	size_t n, cap;
	struct aw_page_fingerprint *fps;
	size_t n_fps, fps_cap;
};

static int on_host(const struct store_host *h, void *cls)
{
	struct hosts *l = cls;
	struct aw_page_host_summary *x = aw_arena_push(l->a, &l->v, &l->n, &l->cap, sizeof(*x));

	if (!x)
		return l->a->rc;
	x->name = aw_arena_strdup(l->a, h->name);
	x->arch = aw_arena_strdup(l->a, h->arch);
	x->cpu_model = aw_arena_strdup(l->a, h->cpu_model);
	x->last_run_at = aw_arena_strdup(l->a, h->last_seen);
	summary_from_fingerprint(l->a, h->fingerprint, x);
	return l->a->rc;
}

static int on_fingerprint(const struct store_fingerprint *f, void *cls)
{
	struct hosts *l = cls;
	struct aw_page_fingerprint *x =
	    aw_arena_push(l->a, &l->fps, &l->n_fps, &l->fps_cap, sizeof(*x));
	json_t *doc = f->doc ? json_loads(f->doc, 0, NULL) : NULL;
	struct kvs kv = {0};

	if (!x) {
		json_decref(doc);
		return l->a->rc;
	}
	x->first_seen = aw_arena_strdup(l->a, f->first_seen);
	x->last_seen = aw_arena_strdup(l->a, f->last_seen);
	x->platform_hash = aw_arena_strdup(l->a, f->platform_hash);
	if (doc)
		flatten(l->a, "", doc, &kv);
	x->fields = kv.v;
	x->n_fields = kv.n;
	json_decref(doc);
	return l->a->rc;
}

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

static int on_verdict(const struct store_verdict *sv, void *cls)
{
	struct verdicts *l = cls;
	const char *name = l->host ? sv->commit : sv->host;
	int64_t pos;
	int rc;

	if (!name || !aw_strmap_get(l->index, name, &pos))
		return 0; /* the newest verdict of each wins */
	if (!aw_arena_push(l->a, &l->v, &l->n, &l->cap, sizeof(*l->v)))
		return l->a->rc;
	rc = aw_strmap_put(l->index, name, (int64_t)(l->n - 1));
	if (rc)
		return rc == -ENOSPC ? 0 : rc;
	l->v[l->n - 1].name = aw_arena_strdup(l->a, name);
	if (l->parse && aw_verdict_view_parse(l->a, sv, &l->v[l->n - 1].view) == 0) {
		l->v[l->n - 1].parsed = true;
	} else {
		l->v[l->n - 1].view.status = aw_verdict_parse(sv->status);
		l->v[l->n - 1].view.baseline_runs = -1;
	}
	return l->a->rc;
}

/* Reads the newest `limit` cached verdicts of a host (by commit) or of a commit (by host). */
static int read_verdicts(struct store_conn *c, struct aw_arena *a, const char *host,
                         const char *commit, bool parse, unsigned limit, struct verdicts *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	out->a = a;
	out->host = host;
	out->parse = parse;
	out->index = aw_strmap_new(limit);
	if (!out->index)
		return -ENOMEM;
	rc = (parse ? store_verdict_list : store_verdict_statuses)(c, NULL, commit, host, limit,
	                                                           on_verdict, out);
	return rc ? rc : a->rc;
}

static const struct aw_verdict_view *verdict_of(const struct verdicts *l, const char *name)
{
	int64_t pos;

	if (!name || aw_strmap_get(l->index, name, &pos))
		return NULL;
	return &l->v[pos].view;
}

static void verdicts_release(struct verdicts *l)
{
	aw_strmap_free(&l->index);
}

/* ---- "/" ---- */

static int last_commit(struct store_conn *c, struct aw_arena *a, const char *host, const char **out)
{
	struct store_run_filter f = {.host = host, .limit = 1};
	struct runs runs;
	int rc = list_runs(c, a, &f, &runs);

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

	s->v = s->any ? worst(s->v, aw_verdict_parse(sv->status)) : aw_verdict_parse(sv->status);
	s->any = true;
	return 0;
}

int aw_site_overview(const struct aw_site *s, struct aw_buf *out)
{
	struct aw_arena a;
	struct hosts hosts = {.a = &a};
	struct aw_recent_commit *recent = NULL;
	struct aw_page_commit_summary *commits = NULL;
	size_t n_recent = 0;
	char now[AW_TIME_LEN];
	int rc;

	aw_arena_init(&a, ARENA_LIMIT);
	rc = store_list_hosts(s->conn, on_host, &hosts);
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
		rc = a.rc;
	if (!rc) {
		const struct aw_page_overview p = {hosts.v, hosts.n, commits, n_recent, now};

		aw_time_now(now);
		rc = aw_html_overview(out, s->links, &p);
	}
	aw_arena_release(&a);
	return rc;
}

/* ---- "/hosts/{name}" ---- */

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
				*r = chart_ref(s, id, fmt(a, "%s: %s", refs[k], groups[g]));
		}
		/* the newest run's commit gives the per-CPU and contention charts */
		if (rc || newest != &runs->v[0] || !newest->commit)
			continue;
		percpu = aw_arena_alloc(a, sizeof(*percpu));
		if (percpu) {
			const struct aw_chart_id id = {
			    .kind = AW_CHART_PERCPU, .commit = newest->commit, .host = host};

			*percpu = chart_ref(s, id, fmt(a, "p50 per CPU at %.12s", newest->commit));
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
				*r = chart_ref(s, id,
				               fmt(a, "%s: contention x duty at %.12s", names[i],
				                   newest->commit));
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
	rc = store_get_host(s->conn, host, on_host, on_fingerprint, &hosts);
	if (!rc && !hosts.n)
		rc = -ENOENT;
	if (!rc)
		rc = list_runs(s->conn, &a, &f, &runs);
	if (!rc)
		rc = read_verdicts(s->conn, &a, host, NULL, false, HOST_RUNS_SHOWN, &verdicts);
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
		const struct aw_verdict_view *v = verdict_of(&verdicts, runs.v[i].commit);

		page_runs[i] = (struct aw_page_run){
		    runs.v[i].run_id,     runs.v[i].commit,  runs.v[i].ref,
		    runs.v[i].started_at, runs.v[i].trigger, v ? v->status : AW_VERDICT_UNKNOWN};
	}
	p.runs = page_runs;
	p.n_runs = runs.n;
	rc = runs.n ? host_charts(s, &a, host, &runs, &p) : 0;
	if (!rc)
		rc = a.rc;
	if (!rc) {
		aw_time_now(now);
		p.generated_at = now;
		rc = aw_html_host(out, s->links, &p);
	}
out:
	verdicts_release(&verdicts);
	aw_arena_release(&a);
	return rc;
}

/* ---- "/commits/{sha}" and "/compare" ---- */

struct cell_copy {
	const char *key;
	double p50;
	double duty_ns; /* a duty cell's empty loop (the duty alone), NAN for other cells */
};

struct cells {
	struct aw_arena *a;
	struct cell_copy *v;
	size_t n, cap;
};

static int on_cell(const struct aw_cell *cell, void *cls)
{
	struct cells *l = cls;
	struct cell_copy *x;

	if (l->n >= CELLS_MAX)
		return 0;
	x = aw_arena_push(l->a, &l->v, &l->n, &l->cap, sizeof(*x));
	if (!x)
		return l->a->rc;
	x->key = aw_arena_strdup(l->a, cell->key);
	x->p50 = cell->status == AW_CELL_OK ? cell->p50 : NAN;
	x->duty_ns = cell->d > 0 && isfinite(cell->baseline_ns) ? cell->baseline_ns : NAN;
	return l->a->rc;
}

static int run_cells(struct store_conn *c, struct aw_arena *a, int64_t seq, struct cells *out)
{
	memset(out, 0, sizeof(*out));
	out->a = a;
	return store_run_cells(c, seq, on_cell, out);
}

/* key -> position, for cells or verdict cells */
static struct aw_strmap *index_keys(const void *items, size_t n, size_t size, size_t key_offset)
{
	struct aw_strmap *m = aw_strmap_new(n + 1);

	for (size_t i = 0; m && i < n; i++) {
		const char *key =
		    *(const char *const *)((const char *)items + i * size + key_offset);

		if (key && aw_strmap_put(m, key, (int64_t)i) == -ENOMEM)
			aw_strmap_free(&m);
	}
	return m;
}

/* A compare chart's table (aw_chart_table_rel()): the medians it was drawn from. */
struct table {
	struct aw_strmap *index; /* key -> position */
	double *base, *head;
	size_t n, cap_base, cap_head;
};

static double json_number(const json_t *j)
{
	return json_is_number(j) ? json_number_value(j) : NAN;
}

/* Reads the table of chart `id`; an absent or unreadable one leaves *t empty (the page then
 * shows what the runs and the verdict say). Returns 0 or -ENOMEM. */
static int read_table(struct aw_arena *a, const char *data_dir, const struct aw_chart_id *id,
                      struct table *t)
{
	char rel[1100], *text = NULL;
	json_t *doc = NULL, *row;
	size_t len, i, n_head = 0;
	int rc = 0;

	memset(t, 0, sizeof(*t));
	if (aw_chart_table_rel(id, rel, sizeof(rel)) ||
	    aw_read_beneath(data_dir, rel, TABLE_MAX, &text, &len))
		return 0;
	doc = json_loadb(text, len, 0, NULL);
	free(text);
	t->index = aw_strmap_new(CELLS_MAX);
	if (!t->index) {
		rc = -ENOMEM;
		goto out;
	}
	json_array_foreach (json_object_get(doc, "cells"), i, row) {
		const char *key = json_string_value(json_array_get(row, 0));
		double *b, *h;

		if (!key || aw_strmap_put(t->index, key, (int64_t)t->n))
			continue;
		b = aw_arena_push(a, &t->base, &t->n, &t->cap_base, sizeof(*b));
		h = aw_arena_push(a, &t->head, &n_head, &t->cap_head, sizeof(*h));
		if (!b || !h)
			break;
		*b = json_number(json_array_get(row, 1));
		*h = json_number(json_array_get(row, 2));
	}
	rc = a->rc;
out:
	json_decref(doc);
	return rc;
}

static void table_release(struct table *t)
{
	aw_strmap_free(&t->index);
}

/* The table of one host: its head run's cells with the medians of the compare chart's table
 * (else the head run's values and, compare, the base run's), and what the cached verdict says
 * of the cells it lists. */
static int host_rows(struct aw_arena *a, const struct cells *head, const struct cells *base,
                     const struct table *t, const struct aw_verdict_view *v,
                     struct aw_page_host_result *out)
{
	struct aw_strmap *base_index = NULL, *verdict_index = NULL;
	struct aw_page_cell_row *rows = NULL;
	size_t n = 0, cap = 0;
	int64_t pos;
	int rc = 0;

	if (base)
		base_index =
		    index_keys(base->v, base->n, sizeof(*base->v), offsetof(struct cell_copy, key));
	if (v)
		verdict_index = index_keys(v->cells, v->n_cells, sizeof(*v->cells),
		                           offsetof(struct aw_verdict_cell, key));
	if ((base && !base_index) || (v && !verdict_index)) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < head->n; i++) {
		struct aw_page_cell_row *r = aw_arena_push(a, &rows, &n, &cap, sizeof(*r));

		if (!r)
			break;
		r->cell = head->v[i].key;
		r->head_p50 = head->v[i].p50;
		r->base_p50 = NAN;
		r->verdict = AW_VERDICT_UNKNOWN;
		if (base_index && !aw_strmap_get(base_index, r->cell, &pos))
			r->base_p50 = base->v[pos].p50;
		if (t->index && !aw_strmap_get(t->index, r->cell, &pos)) {
			r->base_p50 = t->base[pos];
			if (isfinite(t->head[pos]))
				r->head_p50 = t->head[pos]; /* the median over the commit's runs */
		}
		if (v && !aw_strmap_get(verdict_index, r->cell, &pos)) {
			const struct aw_verdict_cell *c = &v->cells[pos];

			r->verdict = c->verdict;
			r->base_p50 = c->base_p50;
			r->absolute = c->absolute;
			if (isfinite(c->head_p50))
				r->head_p50 = c->head_p50; /* the median over the commit's runs */
		} else if (v && (v->status == AW_VERDICT_PASS || v->status == AW_VERDICT_FAIL ||
		                 v->status == AW_VERDICT_UNCONFIRMED)) {
			r->verdict =
			    AW_VERDICT_UNCHANGED; /* the verdict lists changed cells only */
		}
		/* the net figure shown, plus the duty's own time */
		r->head_gross = r->head_p50 + head->v[i].duty_ns;
	}
	/* cells of the baseline the head lacks */
	for (size_t i = 0; v && i < v->n_cells && !a->rc; i++) {
		const struct aw_verdict_cell *c = &v->cells[i];
		struct aw_page_cell_row *r;

		if (c->verdict != AW_VERDICT_MISSING)
			continue;
		r = aw_arena_push(a, &rows, &n, &cap, sizeof(*r));
		if (r)
			*r = (struct aw_page_cell_row){c->key,     c->base_p50, NAN,
			                               c->verdict, NAN,         c->absolute};
	}
	out->rows = rows;
	out->n_rows = n;
	rc = a->rc;
out:
	aw_strmap_free(&base_index);
	aw_strmap_free(&verdict_index);
	return rc;
}

static int commit_runs(const struct aw_site *s, struct aw_arena *a, const char *commit,
                       struct runs *runs, const struct run_copy ***hosts, size_t *n_hosts)
{
	struct store_run_filter f = {.commit = commit, .limit = COMMIT_RUNS_MAX};
	int rc = list_runs(s->conn, a, &f, runs);

	if (!rc && !runs->n)
		rc = -ENOENT;
	return rc ? rc : newest_per_host(a, runs, hosts, n_hosts);
}

/* ---- interleaved A/B documents ---- */

struct ab_links {
	struct aw_arena *a;
	struct aw_page_ab_link *items;
	size_t n, cap;
};

static int on_ab_link(const struct store_ab *ab, void *cls)
{
	struct ab_links *l = cls;
	struct aw_page_ab_link *it = aw_arena_push(l->a, &l->items, &l->n, &l->cap, sizeof(*it));

	if (!it)
		return l->a->rc;
	it->ab_id = aw_arena_strdup(l->a, ab->ab_id);
	it->base = aw_arena_strdup(l->a, ab->base);
	it->verdict = aw_ab_verdict_parse(ab->verdict);
	it->aa = ab->aa;
	return l->a->rc;
}

/* The A/B documents whose head is `commit`, newest first (at most 20). */
static int ab_links_of(const struct aw_site *s, struct aw_arena *a, const char *commit,
                       struct ab_links *out)
{
	*out = (struct ab_links){.a = a};
	return store_ab_list(s->conn, NULL, commit, NULL, 20, on_ab_link, out);
}

struct ab_read {
	struct aw_arena *a;
	json_t *doc, *judgment;
	struct store_ab ab; /* strings copied into the arena */
};

static int on_ab_page(const struct store_ab *ab, void *cls)
{
	struct ab_read *r = cls;

	r->ab = *ab;
	r->ab.ab_id = aw_arena_strdup(r->a, ab->ab_id);
	r->ab.project = aw_arena_strdup(r->a, ab->project);
	r->ab.host = aw_arena_strdup(r->a, ab->host);
	r->ab.subject = aw_arena_strdup(r->a, ab->subject);
	r->ab.base = aw_arena_strdup(r->a, ab->base);
	r->ab.head = aw_arena_strdup(r->a, ab->head);
	r->ab.ref = ab->ref ? aw_arena_strdup(r->a, ab->ref) : NULL;
	r->ab.verdict = aw_arena_strdup(r->a, ab->verdict);
	r->doc = json_loads(ab->doc ? ab->doc : "", 0, NULL);
	r->judgment = json_loads(ab->judgment ? ab->judgment : "", 0, NULL);
	return r->doc && r->judgment ? 0 : -EIO;
}

static double jnum(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

int aw_site_ab(const struct aw_site *s, const char *ab_id, struct aw_buf *out)
{
	struct aw_arena a;
	struct ab_read r = {.a = &a};
	struct aw_page_ab_row *rows = NULL;
	const json_t *cells, *c;
	char now[AW_TIME_LEN];
	size_t n = 0, i;
	int rc;

	if (!aw_valid_uuid(ab_id))
		return -EINVAL;
	aw_arena_init(&a, ARENA_LIMIT);
	rc = store_ab_get(s->conn, ab_id, on_ab_page, &r);
	if (!rc)
		rc = a.rc;
	if (rc)
		goto out;
	cells = json_object_get(r.judgment, "cells");
	rows = aw_arena_alloc(&a, (json_array_size(cells) + 1) * sizeof(*rows));
	if (!rows) {
		rc = -ENOMEM;
		goto out;
	}
	json_array_foreach (cells, i, c) {
		const json_t *aa = json_object_get(c, "aa");
		const char *reason = json_string_value(json_object_get(c, "reason"));
		const json_t *jr = json_object_get(c, "rounds");

		const json_t *levels = json_object_get(c, "levels");
		const json_t *dc = json_array_get(json_object_get(r.doc, "cells"), i);

		rows[n++] = (struct aw_page_ab_row){
		    .cell = aw_arena_strdup(&a, json_string_value(json_object_get(c, "key"))),
		    .verdict =
		        aw_ab_verdict_parse(json_string_value(json_object_get(c, "verdict"))),
		    .reason = reason ? aw_arena_strdup(&a, reason) : NULL,
		    .ratio = jnum(c, "ratio"),
		    .lo = jnum(c, "lo"),
		    .hi = jnum(c, "hi"),
		    .aa_ratio = jnum(aa, "ratio"),
		    .aa_lo = jnum(aa, "lo"),
		    .aa_hi = jnum(aa, "hi"),
		    .threshold = jnum(c, "threshold"),
		    .q = jnum(c, "q"),
		    .alone = jnum(json_object_get(levels, "alone"), "ratio"),
		    .shared = jnum(json_object_get(levels, "shared"), "ratio"),
		    .layout_spread = jnum(c, "layout_spread"),
		    .seconds = jnum(dc, "seconds"),
		    .rounds = json_is_integer(jr) ? (long)json_integer_value(jr) : -1,
		};
	}
	rc = a.rc;
	if (!rc) {
		const struct aw_chart_id id = {.kind = AW_CHART_AB, .name = r.ab.ab_id};
		struct aw_page_ab p = {
		    .ab_id = r.ab.ab_id,
		    .project = r.ab.project,
		    .subject = r.ab.subject,
		    .host = r.ab.host,
		    .base = r.ab.base,
		    .head = r.ab.head,
		    .ref = r.ab.ref,
		    .verdict = aw_ab_verdict_parse(r.ab.verdict),
		    .aa = r.ab.aa,
		    .base_build_s = jnum(json_object_get(r.doc, "base"), "build_s"),
		    .head_build_s = jnum(json_object_get(r.doc, "head"), "build_s"),
		    .started_at = json_string_value(json_object_get(r.doc, "started_at")),
		    .finished_at = json_string_value(json_object_get(r.doc, "finished_at")),
		    .chart = chart_ref(s, id,
		                       "head / base - 1 of each round: A/B filled, A/A hollow "
		                       "grey, lines at the estimates"),
		    .rows = rows,
		    .n_rows = n,
		    .generated_at = now,
		};

		aw_time_now(now);
		rc = aw_html_ab(out, s->links, &p);
	}
out:
	json_decref(r.doc);
	json_decref(r.judgment);
	aw_arena_release(&a);
	return rc;
}

int aw_site_ab_page(const struct aw_site *s, const char *a, const char *b, struct aw_buf *out)
{
	(void)b;
	return aw_site_ab(s, a, out);
}

int aw_site_commit(const struct aw_site *s, const char *commit, struct aw_buf *out)
{
	struct aw_arena a;
	struct runs runs;
	struct verdicts verdicts = {0};
	const struct run_copy **hosts = NULL;
	struct aw_page_host_result *results = NULL;
	struct aw_chart_ref heatmap;
	enum aw_verdict overall = AW_VERDICT_UNKNOWN;
	size_t n_hosts = 0;
	char now[AW_TIME_LEN];
	int rc;

	if (!aw_valid_commit(commit))
		return -EINVAL;
	aw_arena_init(&a, ARENA_LIMIT);
	rc = commit_runs(s, &a, commit, &runs, &hosts, &n_hosts);
	if (!rc)
		rc = read_verdicts(s->conn, &a, NULL, commit, true, VERDICTS_READ, &verdicts);
	if (!rc)
		results = aw_arena_alloc(&a, n_hosts * sizeof(*results) + 1);
	for (size_t i = 0; !rc && results && i < n_hosts; i++) {
		const struct run_copy *run = hosts[i];
		const struct aw_verdict_view *v = verdict_of(&verdicts, run->host);
		struct aw_page_host_result *r = &results[i];
		const struct aw_chart_id id = {.kind = AW_CHART_COMPARE,
		                               .commit = commit,
		                               .host = run->host,
		                               .base = s->baseline_ref};
		struct cells head;
		struct table t;

		/* first: an export draws the chart, and its table, here */
		r->chart = chart_ref(s, id, fmt(&a, "%s against %s", run->host, s->baseline_ref));
		rc = run_cells(s->conn, &a, run->seq, &head);
		if (!rc)
			rc = read_table(&a, s->data_dir, &id, &t);
		if (!rc)
			rc = host_rows(&a, &head, NULL, &t, v, r);
		table_release(&t);
		r->host = run->host;
		r->verdict = v ? v->status : AW_VERDICT_UNKNOWN;
		if (v)
			r->disturbed = v->disturbed;
		if (v && v->baseline_runs >= 0)
			r->baseline = fmt(&a, "%s, %ld earlier run%s",
			                  v->baseline_ref ? v->baseline_ref : s->baseline_ref,
			                  v->baseline_runs, v->baseline_runs == 1 ? "" : "s");
		overall = i ? worst(overall, r->verdict) : r->verdict;
	}
	if (!rc)
		rc = a.rc;
	if (!rc) {
		const struct aw_chart_id hid = {.kind = AW_CHART_HEATMAP, .commit = commit};
		struct aw_page_commit p = {.sha = commit,
		                           .ref = refs_of(&a, &runs),
		                           .baseline_ref = s->baseline_ref,
		                           .verdict = overall,
		                           .hosts = results,
		                           .n_hosts = n_hosts,
		                           .heatmap = &heatmap,
		                           .generated_at = now};

		struct ab_links abl;

		heatmap = chart_ref(s, hid, "p50 of each op on each host");
		aw_time_now(now);
		rc = ab_links_of(s, &a, commit, &abl);
		p.ab = abl.items;
		p.n_ab = abl.n;
		if (!rc)
			rc = aw_html_commit(out, s->links, &p);
	}
	verdicts_release(&verdicts);
	aw_arena_release(&a);
	return rc;
}

int aw_site_compare(const struct aw_site *s, const char *base, const char *head, struct aw_buf *out)
{
	struct aw_arena a;
	struct runs head_runs, base_runs;
	const struct run_copy **head_hosts = NULL, **base_hosts = NULL;
	struct aw_page_host_result *results = NULL;
	struct aw_chart_ref heatmap;
	size_t n_head = 0, n_base = 0, n = 0;
	char now[AW_TIME_LEN];
	int rc;

	if (!aw_valid_commit(base) || !aw_valid_commit(head))
		return -EINVAL;
	aw_arena_init(&a, ARENA_LIMIT);
	rc = commit_runs(s, &a, head, &head_runs, &head_hosts, &n_head);
	if (!rc)
		rc = commit_runs(s, &a, base, &base_runs, &base_hosts, &n_base);
	if (!rc)
		results = aw_arena_alloc(&a, n_head * sizeof(*results) + 1);
	/* the hosts that ran both (both lists are sorted by host) */
	for (size_t i = 0, j = 0; !rc && results && i < n_head && j < n_base;) {
		int order = strcmp(head_hosts[i]->host, base_hosts[j]->host);
		struct aw_page_host_result *r = &results[n];
		const char *host = head_hosts[i]->host;
		const struct aw_chart_id id = {
		    .kind = AW_CHART_COMPARE, .commit = head, .host = host, .base = base};
		struct cells head_cells, base_cells;
		struct table t = {0};

		if (order) {
			order < 0 ? i++ : j++;
			continue;
		}
		r->chart = chart_ref(s, id, fmt(&a, "%s: %.12s against %.12s", host, head, base));
		rc = run_cells(s->conn, &a, head_hosts[i]->seq, &head_cells);
		if (!rc)
			rc = run_cells(s->conn, &a, base_hosts[j]->seq, &base_cells);
		if (!rc)
			rc = read_table(&a, s->data_dir, &id, &t);
		if (!rc)
			rc = host_rows(&a, &head_cells, &base_cells, &t, NULL, r);
		table_release(&t);
		r->host = host;
		r->verdict = AW_VERDICT_UNKNOWN;
		r->baseline = fmt(&a, "the runs of %.12s on %s", base, host);
		n++;
		i++;
		j++;
	}
	if (!rc)
		rc = a.rc;
	if (!rc) {
		const struct aw_chart_id hid = {.kind = AW_CHART_HEATMAP, .commit = head};
		struct aw_page_commit p = {.sha = head,
		                           .base = base,
		                           .ref = refs_of(&a, &head_runs),
		                           .verdict = AW_VERDICT_UNKNOWN,
		                           .hosts = results,
		                           .n_hosts = n,
		                           .heatmap = &heatmap,
		                           .generated_at = now};

		heatmap = chart_ref(s, hid, fmt(&a, "p50 of each op on each host at %.12s", head));
		aw_time_now(now);
		rc = aw_html_commit(out, s->links, &p);
	}
	aw_arena_release(&a);
	return rc;
}

int aw_site_overview_page(const struct aw_site *s, const char *a, const char *b, struct aw_buf *out)
{
	(void)a, (void)b;
	return aw_site_overview(s, out);
}

int aw_site_host_page(const struct aw_site *s, const char *a, const char *b, struct aw_buf *out)
{
	(void)b;
	return aw_site_host(s, a, out);
}

int aw_site_commit_page(const struct aw_site *s, const char *a, const char *b, struct aw_buf *out)
{
	(void)b;
	return aw_site_commit(s, a, out);
}
