/* The verdict of an interleaved A/B document (aw/ab.h): each cell decided by aw_ab_decide() on
 * its rounds (the A/B log ratio less the A/A one, with the Hodges-Lehmann estimate and its
 * Wilcoxon signed-rank interval, per level as well), and Benjamini-Hochberg over the
 * document's cells (docs/detection.md "Interleaved A/B"). */
#ifndef AW_ANALYSIS_AB_JUDGE_H
#define AW_ANALYSIS_AB_JUDGE_H

#include <jansson.h>

#include "aw/ab.h" /* AW_AB_ALPHA */

struct aw_ab_opts {
	double threshold; /* the smallest relative change that counts, e.g. 0.005 for 0.5% */
	double alpha;     /* two-sided level of the intervals and the false discovery rate */
};

#define AW_AB_OPTS_DEFAULT                               \
	{                                                \
		.threshold = 0.005, .alpha = AW_AB_ALPHA \
	}

/* Judges a validated A/B document (aw_ab_validate()). Returns a new object (caller decrefs)
 *   {"verdict": "regressed"|"improved"|"unchanged"|"inconclusive", "threshold", "alpha",
 *    "looks", "cells": [{"key", "verdict", "ratio", "lo", "hi", "p", "q", "threshold",
 *    "rounds", "aa": {"ratio", "lo", "hi", "rounds"}, "reason", "ab": {"ratio", "lo", "hi",
 *    "rounds"}, "levels": {"alone": {... "verdict"}, "shared": {...}}, "layouts": [{"layout",
 *    "rounds", "ratio", "aa"}], "layout_spread", "alpha_each"}]}
 * (words from enum aw_ab_verdict) where "ratio", "lo" and "hi" are the decision's (head/base
 * with the A/A bias removed), "levels" only for documents whose rounds carry levels, "looks"
 * the agent's (1 for a document measured without a sequential test); a cell's verdict is also
 * "new", "missing" or "failed" for cells without rounds; the document's verdict is regressed
 * when a cell is, else improved when a cell is, else inconclusive when a measured cell is (or
 * failed), else unchanged. NULL on allocation failure. */
json_t *aw_ab_judge(const json_t *doc, const struct aw_ab_opts *opts);

#endif
