/* What the report pages of pages.h share: whether a chart can be shown, the runs, hosts and
 * fingerprints read from the store into an arena, and the cached verdicts read back. Each page
 * is built in a file of its own (pages_overview.c, pages_host.c, pages_commit.c, pages_ab.c),
 * which fills the reports library's page struct and lets the library write (and escape) it. */
#include "pages_internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "aw/strmap.h"
#include "aw/util.h"

#define FIELDS_MAX 256 /* fingerprint fields shown */
#define LABELS_MAX 64

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

struct aw_chart_ref site_chart_ref(const struct aw_site *s, struct aw_chart_id id,
                                   const char *caption)
{
	struct aw_chart_ref r = {.id = id, .caption = caption};

	r.ready = chart_ready(s, &r.id);
	return r;
}

/* An arena copy of formatted text (at most 511 bytes). */
const char *site_fmt(struct aw_arena *a, const char *format, ...)
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
enum aw_verdict site_worst(enum aw_verdict a, enum aw_verdict b)
{
	static const enum aw_verdict order[] = {AW_VERDICT_FAIL, AW_VERDICT_INCONCLUSIVE,
	                                        AW_VERDICT_INCOMPLETE, AW_VERDICT_UNCONFIRMED,
	                                        AW_VERDICT_PASS};

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (a == order[i] || b == order[i])
			return order[i];
	return AW_VERDICT_UNKNOWN;
}

/* ---- runs ---- */

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
	return site_fmt(a, "%s, %s", list, ref);
}

/* The distinct refs of a commit's runs, newest run first. */
const char *site_refs_of(struct aw_arena *a, const struct runs *runs)
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
	x->confirmation = r->confirmation_of != NULL;
	return l->a->rc;
}

int site_list_runs(struct store_conn *c, struct aw_arena *a, const struct store_run_filter *f,
                   struct runs *out)
{
	memset(out, 0, sizeof(*out));
	out->a = a;
	return store_list_runs(c, f, on_run, out);
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
	rc = index && pairs ? site_list_runs(c, a, &f, &runs) : -ENOMEM;
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
		flatten(a, *prefix ? site_fmt(a, "%s.%s", prefix, key) : aw_arena_strdup(a, key),
		        value, out);
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

int site_on_host(const struct store_host *h, void *cls)
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

int site_on_fingerprint(const struct store_fingerprint *f, void *cls)
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

void site_cell_row(const struct aw_verdict_cell *c, struct aw_page_cell_row *r)
{
	*r = (struct aw_page_cell_row){
	    .cell = c->key,
	    .base_p50 = c->base_p50,
	    .head_p50 = c->head_p50,
	    .verdict = c->verdict,
	    .head_gross = NAN,
	    .absolute = c->absolute,
	    .note = c->note,
	    .levels = c->levels,
	};
}

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
int site_read_verdicts(struct store_conn *c, struct aw_arena *a, const char *host,
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

const struct aw_verdict_view *site_verdict_of(const struct verdicts *l, const char *name)
{
	int64_t pos;

	if (!name || aw_strmap_get(l->index, name, &pos))
		return NULL;
	return &l->v[pos].view;
}

void site_verdicts_release(struct verdicts *l)
{
	aw_strmap_free(&l->index);
}
