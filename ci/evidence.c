/* The gate's evidence; see evidence.h. */
#include "evidence.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "aw/buf.h"
#include "aw/util.h"

#define LOOKUP 20 /* A/B documents of one head read to find the newest A/B (not A/A) one */

static char *dup_or_null(const char *s)
{
	return s ? aw_asprintf("%s", s) : NULL;
}

/* The cell that decides: the first regressed one, else the first improved, else the first. */
static char *deciding_cell(const json_t *judgment)
{
	const json_t *cells = json_object_get(judgment, "cells"), *c, *pick = NULL;
	static const enum aw_ab_verdict order[] = {AW_AB_VERDICT_REGRESSED, AW_AB_VERDICT_IMPROVED,
	                                           AW_AB_VERDICT_INCONCLUSIVE,
	                                           AW_AB_VERDICT_UNCHANGED};
	size_t i;

	for (size_t o = 0; o < sizeof(order) / sizeof(order[0]) && !pick; o++)
		json_array_foreach (cells, i, c)
			if (!pick && aw_ab_verdict_parse(json_string_value(
			                 json_object_get(c, "verdict"))) == order[o])
				pick = c;
	if (!pick || !json_is_number(json_object_get(pick, "ratio")))
		return NULL;
	return aw_asprintf("%s x%.4f [%.4f, %.4f], threshold %.2f%%",
	                   json_string_value(json_object_get(pick, "key")),
	                   json_number_value(json_object_get(pick, "ratio")),
	                   json_number_value(json_object_get(pick, "lo")),
	                   json_number_value(json_object_get(pick, "hi")),
	                   100 * json_number_value(json_object_get(pick, "threshold")));
}

int aw_ci_fetch_evidence(struct aw_ci_client *c, const char *project, const char *commit,
                         struct aw_ci_evidence *ev, char **err)
{
	struct aw_buf q;
	json_t *doc = NULL, *items, *it;
	size_t i;
	int rc;

	memset(ev, 0, sizeof(*ev));
	aw_buf_init(&q, 4096);
	rc = aw_buf_puts(&q, "/api/v1/ab?project=");
	if (!rc)
		rc = aw_ci_url_encode(&q, project);
	if (!rc)
		rc = aw_buf_puts(&q, "&head=");
	if (!rc)
		rc = aw_ci_url_encode(&q, commit);
	if (!rc)
		rc = aw_buf_printf(&q, "&limit=%d", LOOKUP);
	if (rc) {
		aw_buf_release(&q);
		return aw_errorf(err, rc, "out of memory");
	}
	rc = aw_ci_get_json(c, q.data, "the A/B lookup", &doc, err);
	aw_buf_release(&q);
	if (rc)
		return rc;
	items = json_object_get(doc, "items");
	if (!json_is_array(items)) {
		json_decref(doc);
		return aw_errorf(err, -EINVAL, "the collector's A/B list has no 'items' array");
	}
	json_array_foreach (items, i, it) {
		if (json_is_true(json_object_get(it, "aa")) ||
		    !json_is_string(json_object_get(it, "ab_id")))
			continue;
		ev->found = true;
		ev->ab_id = dup_or_null(json_string_value(json_object_get(it, "ab_id")));
		ev->verdict = dup_or_null(json_string_value(json_object_get(it, "verdict")));
		ev->ab_verdict = aw_ab_verdict_parse(ev->verdict);
		ev->page = dup_or_null(json_string_value(json_object_get(it, "page")));
		ev->base = dup_or_null(json_string_value(json_object_get(it, "base")));
		ev->detail = deciding_cell(json_object_get(it, "judgment"));
		if (!ev->ab_id || !ev->verdict) {
			aw_ci_evidence_release(ev);
			rc = aw_errorf(err, -EINVAL,
			               "the collector's A/B list item %zu lacks fields", i);
		}
		break;
	}
	json_decref(doc);
	return rc;
}

void aw_ci_evidence_release(struct aw_ci_evidence *ev)
{
	free(ev->ab_id);
	free(ev->verdict);
	free(ev->page);
	free(ev->base);
	free(ev->detail);
	memset(ev, 0, sizeof(*ev));
}

/* Whether the A/B document decides (an inconclusive one does not). */
static bool ab_decides(const struct aw_ci_evidence *ev)
{
	return ev->found && aw_ab_verdict_decides(ev->ab_verdict);
}

enum aw_ci_exit aw_ci_evidence_exit(const struct aw_ci_evidence *ev, enum aw_ci_exit history)
{
	if (history == AW_CI_EXIT_ERROR || !ab_decides(ev))
		return history;
	return ev->ab_verdict == AW_AB_VERDICT_REGRESSED ? AW_CI_EXIT_REGRESSION : AW_CI_EXIT_PASS;
}

static const char *exit_word(enum aw_ci_exit e)
{
	switch (e) {
	case AW_CI_EXIT_PASS:
		return "pass";
	case AW_CI_EXIT_REGRESSION:
		return "fail";
	case AW_CI_EXIT_INCOMPLETE:
		return "incomplete";
	case AW_CI_EXIT_INCONCLUSIVE:
		return "inconclusive";
	default:
		return "error";
	}
}

void aw_ci_evidence_print(FILE *f, const struct aw_ci_evidence *ev, enum aw_ci_exit history,
                          const char *collector)
{
	if (!ev->found) {
		fprintf(f, "evidence: the history-based verdict (no interleaved A/B document for "
		           "this commit)\n");
		return;
	}
	if (!ab_decides(ev)) {
		fprintf(f,
		        "evidence: the history-based verdict (%s); the interleaved A/B %s was %s\n",
		        exit_word(history), ev->ab_id, ev->verdict);
	} else {
		fprintf(f,
		        "evidence: interleaved A/B %s (%s against base %.12s): %s; the "
		        "history-based verdict alone: %s\n",
		        ev->ab_id, ev->verdict, ev->base ? ev->base : "?",
		        exit_word(aw_ci_evidence_exit(ev, history)), exit_word(history));
	}
	if (ev->detail)
		fprintf(f, "  deciding cell: %s\n", ev->detail);
	if (ev->page)
		fprintf(f, "  A/B report: %s%s\n", collector ? collector : "", ev->page);
}
