/* "/ab/{id}" (pages.h): an interleaved A/B document, its judgment cell by cell and its
 * chart. */
#include "pages_internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>

#include "aw/util.h"

/* ---- interleaved A/B documents ---- */

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
		    .loads_sd = jnum(json_object_get(c, "loads"), "sd"),
		    .layouts = (long)json_array_size(json_object_get(c, "layouts")),
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
		    .chart = site_chart_ref(s, id,
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
