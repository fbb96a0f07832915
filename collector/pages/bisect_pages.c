/* What the pages and charts show of bisections and of the hosts' own changes (issue 33): the
 * bisections of a commit (the commit page) or the newest ones (the overview), and the marks of
 * a host's trend charts: where its fingerprint changed (kernel, microcode, firmware, governor,
 * ...) and where a bisection named the culprit. See bisect_pages.h. */
#include "bisect_pages.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "aw/stats.h"
#include "aw/strmap.h"
#include "aw/util.h"

#define OVERVIEW_BISECTS 20
#define COMMIT_BISECTS   20
#define HOST_BISECTS     200
#define LABEL_MAX        96

struct bisect_list {
	struct aw_arena *a;
	struct aw_page_bisect *v;
	size_t n, cap;
};

static long opt_long(int64_t v)
{
	return v == AW_NONE ? -1 : (long)v;
}

static int on_bisect(const struct store_bisect *b, void *cls)
{
	struct bisect_list *l = cls;
	struct aw_page_bisect *p = aw_arena_push(l->a, &l->v, &l->n, &l->cap, sizeof(*p));

	if (!p)
		return l->a->rc;
	*p = (struct aw_page_bisect){
	    .id = (long long)b->id,
	    .state = aw_arena_strdup(l->a, b->state),
	    .host = aw_arena_strdup(l->a, b->host),
	    .runner = aw_arena_strdup(l->a, b->runner),
	    .subject = b->subject && b->subject[0] ? aw_arena_strdup(l->a, b->subject) : NULL,
	    .good = aw_arena_strdup(l->a, b->good),
	    .bad = aw_arena_strdup(l->a, b->bad),
	    .culprit = b->culprit ? aw_arena_strdup(l->a, b->culprit) : NULL,
	    .cell = b->cell ? aw_arena_strdup(l->a, b->cell) : NULL,
	    .outcome = b->outcome ? aw_arena_strdup(l->a, b->outcome) : NULL,
	    .message = b->message ? aw_arena_strdup(l->a, b->message) : NULL,
	    .range_good = b->range_good ? aw_arena_strdup(l->a, b->range_good) : NULL,
	    .range_bad = b->range_bad ? aw_arena_strdup(l->a, b->range_bad) : NULL,
	    .steps_done = (long)b->steps_done,
	    .expected_steps = opt_long(b->expected_steps),
	    .range_commits = opt_long(b->range_commits),
	    .change = b->change,
	    .lo = b->change_lo,
	    .hi = b->change_hi,
	};
	return l->a->rc;
}

int aw_site_bisects(struct store_conn *c, struct aw_arena *a, const char *commit,
                    const struct aw_page_bisect **out, size_t *n)
{
	struct bisect_list l = {.a = a};
	struct store_bisect_filter f = {.commit = commit,
	                                .limit = commit ? COMMIT_BISECTS : OVERVIEW_BISECTS};
	int rc = store_bisect_list(c, &f, on_bisect, &l);

	*out = l.v;
	*n = rc ? 0 : l.n;
	return rc ? rc : a->rc;
}

/* ---- the marks of a host's trend charts ---- */

/* The comparable part of a host object: its platform and its changing fields (timer_hz, which
 * moves with every calibration, left out). */
static json_t *changing_of(const char *doc)
{
	json_t *host = doc ? json_loads(doc, 0, NULL) : NULL;
	json_t *out = json_object(), *changing = json_object_get(host, "changing");

	if (out && json_object_get(host, "platform_hash"))
		json_object_set(out, "platform", json_object_get(host, "platform_hash"));
	if (out && json_is_object(changing))
		json_object_update(out, changing);
	if (out)
		json_object_del(out, "timer_hz");
	json_decref(host);
	return out;
}

static int on_fingerprint(const char *doc, void *cls)
{
	json_t **out = cls;

	*out = changing_of(doc);
	return *out ? 0 : -ENOMEM;
}

/* "kernel 6.1.0-58-amd64" (the first field that differs, its new value) and "+N" for the
 * others that did, into buf; "" when nothing did. */
static void change_label(const json_t *before, const json_t *after, char *buf, size_t size)
{
	const char *k, *first = NULL;
	json_t *v;
	char value[48] = "";
	unsigned more = 0;

	buf[0] = '\0';
	json_object_foreach ((json_t *)after, k, v) {
		if (json_equal(json_object_get(before, k), v))
			continue;
		if (!first) {
			first = k;
			if (json_is_string(v))
				snprintf(value, sizeof(value), " %s", json_string_value(v));
			else if (json_is_null(v))
				snprintf(value, sizeof(value), " (none)");
		} else {
			more++;
		}
	}
	json_object_foreach ((json_t *)before, k, v) {
		if (json_object_get(after, k))
			continue;
		if (!first)
			first = k;
		else
			more++;
	}
	if (first)
		snprintf(buf, size, "host: %s%s%s", first, value, more ? " +" : "");
	if (first && more)
		snprintf(buf + strlen(buf), size - strlen(buf), "%u", more);
}

struct culprit_find {
	struct aw_arena *a;
	struct aw_strmap *points; /* commit -> point */
	struct aw_chart_mark **marks;
	size_t *n, *cap;
};

static int on_culprit(const struct store_bisect *b, void *cls)
{
	struct culprit_find *f = cls;
	struct aw_chart_mark *m;
	char label[LABEL_MAX];
	int64_t at;

	if (!b->culprit || strcmp(b->state, "done") || aw_strmap_get(f->points, b->culprit, &at))
		return 0;
	if (isfinite(b->change))
		snprintf(label, sizeof(label), "culprit %.7s %+.1f%%", b->culprit,
		         100 * (b->change - 1));
	else
		snprintf(label, sizeof(label), "culprit %.7s", b->culprit);
	m = aw_arena_push(f->a, f->marks, f->n, f->cap, sizeof(*m));
	if (m)
		*m = (struct aw_chart_mark){(size_t)at, aw_arena_strdup(f->a, label), true};
	return f->a->rc;
}

int aw_trend_marks(struct store_conn *c, struct aw_arena *a, const char *project, const char *host,
                   const char *const *run_ids, const char *const *commits, size_t n_points,
                   const struct aw_chart_mark **out, size_t *n_out)
{
	struct aw_chart_mark *marks = NULL;
	size_t n = 0, cap = 0;
	struct aw_strmap *points = aw_strmap_new(n_points + 1);
	struct store_bisect_filter bf = {.project = project, .host = host, .limit = HOST_BISECTS};
	struct culprit_find cf = {a, points, &marks, &n, &cap};
	json_t *prev = NULL;
	char label[LABEL_MAX];
	int rc = points ? 0 : -ENOMEM;

	*out = NULL;
	*n_out = 0;
	for (size_t i = 0; !rc && i < n_points; i++) {
		json_t *now = NULL;

		if (commits[i])
			rc = aw_strmap_put(points, commits[i], (int64_t)i);
		if (rc == -ENOSPC)
			rc = 0;
		if (!rc && run_ids[i])
			rc = store_run_fingerprint(c, run_ids[i], on_fingerprint, &now);
		if (rc == -ENOENT)
			rc = 0;
		if (!rc && prev && now) {
			change_label(prev, now, label, sizeof(label));
			if (label[0]) {
				struct aw_chart_mark *m =
				    aw_arena_push(a, &marks, &n, &cap, sizeof(*m));

				if (m)
					*m = (struct aw_chart_mark){i, aw_arena_strdup(a, label),
					                            false};
			}
		}
		if (now) {
			json_decref(prev);
			prev = now;
		}
	}
	json_decref(prev);
	if (!rc)
		rc = store_bisect_list(c, &bf, on_culprit, &cf);
	aw_strmap_free(&points);
	if (rc || a->rc)
		return rc ? rc : a->rc;
	*out = marks;
	*n_out = n;
	return 0;
}

/* The median of reference kernel k's positive values in an opened reference series, NAN when
 * the run carries none. */
static double kernel_median(const struct aw_refblob *b, enum aw_ref k)
{
	double buf[512], out = NAN;
	size_t n = 0;

	for (size_t i = 0; b->data && i < b->n_cells && n < 512; i++) {
		double v = aw_refblob_value(b, k, i);

		if (v > 0)
			buf[n++] = v;
	}
	if (n) {
		aw_sort_doubles(buf, n);
		out = aw_quantile_sorted(buf, n, 0.5);
	}
	return out;
}

int aw_reference_series(struct aw_arena *a, const struct aw_refblob *refs, size_t stride, size_t n,
                        struct aw_chart_trend_series **series, size_t *n_series, size_t *cap)
{
	for (int k = 0; k < AW_REF_COUNT && *n_series < AW_CHART_MAX_SERIES; k++) {
		const char *kernel = aw_ref_name((enum aw_ref)k);
		double *v = aw_arena_alloc(a, (n + 1) * sizeof(*v));
		struct aw_chart_trend_series *s;
		bool any = false;

		for (size_t i = 0; v && i < n; i++) {
			const struct aw_refblob *b =
			    (const struct aw_refblob *)(const void *)((const char *)refs +
			                                              i * stride);

			v[i] = kernel_median(b, (enum aw_ref)k);
			any = any || isfinite(v[i]);
		}
		if (!v || !any)
			continue;
		s = aw_arena_push(a, series, n_series, cap, sizeof(*s));
		if (s)
			*s = (struct aw_chart_trend_series){.name = aw_arena_strdup(a, kernel),
			                                    .p50 = v};
	}
	return a->rc;
}
