/* Which evidence decides `atomwatch-ci gate`: the commit's interleaved A/B document when one
 * exists (GET /api/v1/ab?project=P&head=SHA, the newest that is not an A/A document), else the
 * history-based verdict (GET /api/v1/gate). An A/B verdict of regressed fails the gate,
 * unchanged or improved passes it; an inconclusive one leaves the decision to the history. */
#ifndef AW_CI_EVIDENCE_H
#define AW_CI_EVIDENCE_H

#include <stdbool.h>
#include <stdio.h>

#include "aw/verdict.h"
#include "ci.h"

struct aw_ci_evidence {
	bool found;                          /* an A/B document of the commit exists */
	char *ab_id, *verdict, *page, *base; /* owned; NULL unless found */
	enum aw_ab_verdict ab_verdict;       /* `verdict` parsed (unknown for a newer word) */
	char *detail; /* e.g. "op=op cpu=0 x1.012 [1.008, 1.016]" of the deciding cell, or NULL */
};

/* Looks the commit's A/B document up. Returns 0 (ev->found false when there is none) or a
 * negative errno with *err (the collector unreachable, a reply of another shape). Release
 * with aw_ci_evidence_release(). */
int aw_ci_fetch_evidence(struct aw_ci_client *c, const char *project, const char *commit,
                         struct aw_ci_evidence *ev, char **err);
void aw_ci_evidence_release(struct aw_ci_evidence *ev);

/* The gate's exit status given the history's (`history`) and the evidence. */
enum aw_ci_exit aw_ci_evidence_exit(const struct aw_ci_evidence *ev, enum aw_ci_exit history);

/* Prints the line naming what decided, e.g.
 *   "evidence: interleaved A/B 61460e41-... (regressed; base 6b327ed01154): fail; the
 *    history-based verdict alone: pass"
 * with the page under `collector`. */
void aw_ci_evidence_print(FILE *f, const struct aw_ci_evidence *ev, enum aw_ci_exit history,
                          const char *collector);

#endif
