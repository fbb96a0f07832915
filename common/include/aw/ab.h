/* The A/B document (`atomwatch.ab/1`, docs/result-schema.md "The A/B document"): one interleaved
 * comparison of a subject built at two commits, measured by `atomwatch-agent ab` and judged by
 * the collector. Both sides validate with this code. */
#ifndef AW_AB_H
#define AW_AB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "aw/result.h"
#include "aw/verdict.h"

#define AW_AB_SCHEMA        "atomwatch.ab/1"
#define AW_AB_SCHEMA_PREFIX "atomwatch.ab/"
#define AW_AB_MAX_ROUNDS    1000 /* rounds of each kind per cell */
#define AW_AB_MAX_CELLS     4096
#define AW_AB_MAX_LAYOUTS   16 /* loads of each side live at once (--layouts) */
#define AW_AB_MAX_BUILDS    8  /* code layouts: builds of each side (--builds) */
/* Loads of each side one cell measures in all: fresh copies replace the live ones as it runs
 * (docs/detection.md "Interleaved A/B"), each a layout of its own in the rounds. */
#define AW_AB_MAX_LOADS 128
/* The error rate of an A/B's decision per cell (both directions, every look): an A/A of 30 tries
 * with 4 cells is to show no false verdict (docs/detection.md), so 120 tests expect 1.2 false
 * ones at 1% and 6 at 5%; 1%. The agent stops and the collector judges at this rate. */
#define AW_AB_ALPHA 0.01

/* Whether `doc` says it is an A/B document (its schema is atomwatch.ab/N, any N): the upload
 * route hands such documents to the A/B ingest. */
bool aw_ab_is_ab(const json_t *doc);

/* Validates `doc` against the schema: the fields and their types, names, commit ids, times,
 * at most lim->max_cells cells with unique keys, rounds of finite positive medians (reference
 * values positive or null), no unknown fields. Returns 0, or -EINVAL with *e naming the first
 * problem (e->field like "cells[2].rounds[5].head"). */
int aw_ab_validate(const json_t *doc, const struct aw_result_limits *lim, struct aw_verr *e);

/* ---- the decision (docs/detection.md "Interleaved A/B"), shared by the agent, which stops
 * measuring a cell once it is decided, and the collector, which judges the document ---- */

/* The level a round fell in, by the throughput reference measured within it. */
enum aw_ab_level {
	AW_AB_LEVEL_NONE,   /* not classified: a document from before levels */
	AW_AB_LEVEL_ALONE,  /* the reference at the floor: the core's ports to itself */
	AW_AB_LEVEL_SHARED, /* the reference slower: the ports shared (another tenant, SMT) */
	AW_AB_LEVEL_MIXED,  /* the reference before and after disagree: set aside, never stored */
};

#define AW_AB_LEVEL_COUNT (AW_AB_LEVEL_MIXED + 1)

/* "alone", "shared", "mixed"; NULL for AW_AB_LEVEL_NONE or a value outside the enum. */
const char *aw_ab_level_name(enum aw_ab_level l);

/* The level a word names ("alone", "shared"); AW_AB_LEVEL_NONE for NULL or another word. */
enum aw_ab_level aw_ab_level_parse(const char *name);

/* A round's level from the throughput reference measured just before and just after it (ns per
 * step), against the floor (the reference's level when the core runs alone): alone when both
 * lie within `ratio` (e.g. 1.05) of the floor, shared when both lie above, mixed otherwise or
 * when a value is not positive. */
enum aw_ab_level aw_ab_classify(double ref_before, double ref_after, double floor, double ratio);

/* One round as the decision reads it. */
struct aw_ab_round {
	double ab;              /* log(head / base) */
	double aa;              /* log(base's second load / base): the A/A round; 0 when none */
	enum aw_ab_level level; /* AW_AB_LEVEL_NONE when not classified */
	int layout;             /* the loads' index, 0 ... AW_AB_MAX_LOADS - 1; -1 unknown */
};

struct aw_ab_rule {
	double threshold; /* the smallest relative change that counts, e.g. 0.005 */
	double alpha;     /* the error rate of the whole sequential procedure, e.g. 0.05 */
	unsigned looks;   /* how many looks the sequential test may take (1: a fixed count) */
	bool levels;      /* the rounds are classified: judge each level as well */
};

/* An estimate of a centre in log units, with its interval and its verdict. */
struct aw_ab_estimate {
	size_t rounds;
	double estimate, lo, hi; /* NAN when no rounds; lo, hi NAN when too few for an interval */
	double p;                /* the signed-rank test of no change */
	enum aw_ab_verdict verdict;
};

/* The per-layout figures: the decision's centre, the A/B's and the A/A's (medians, log units),
 * and the layout's own verdict (an estimate of its rounds at the decision's alpha_each;
 * reported). */
struct aw_ab_layout {
	size_t rounds;
	double diff, ab, aa;
	double offset; /* the median of its rounds' diff less their level's estimate */
	enum aw_ab_verdict verdict;
	bool interval; /* its rounds gave an interval (enough of them to speak) */
};

struct aw_ab_decision {
	struct aw_ab_estimate diff;   /* decides: ab - aa, every classified round */
	struct aw_ab_estimate ab, aa; /* reported: the A/B and the A/A (the bias) alone */
	struct aw_ab_estimate level[AW_AB_LEVEL_COUNT]; /* diff of each level's rounds */
	struct aw_ab_layout layout[AW_AB_MAX_LOADS];
	size_t n_layouts;           /* layouts with rounds (index of the highest + 1) */
	double layout_spread;       /* max - min of the layouts' diff; NAN with < 2 layouts */
	double loads_sd;            /* the loads' own spread (log): aw_ab_decide(); NAN < 2 */
	double loads_hw;            /* the half-width it gives every interval; 0 with < 2 */
	double alpha_each;          /* the level of each interval */
	enum aw_ab_verdict verdict; /* of the cell */
	char reason[160];           /* why, when not plain (a level, too few rounds...); "" */
};

/* Decides a cell from its rounds: for each round d = ab - aa (the A/B log ratio less the A/A
 * one: the bias between two loads of one library is measured, then removed), the Hodges-Lehmann
 * estimate of d and its Wilcoxon signed-rank interval at level 1 - alpha_each, where alpha_each
 * = alpha / (looks x estimands), the estimands being every round and, with rule->levels, the
 * rounds of each level: by Bonferroni every interval of every look covers its centre at once
 * with probability >= 1 - alpha. Each estimand is regressed when lo > 0 and the estimate
 * exceeds log(1 + threshold), improved symmetrically, unchanged when its interval lies within
 * +-log(1 + threshold), else inconclusive (an estimand without an interval is left out). The
 * cell is regressed when an estimand is, improved when one is and none regressed (both:
 * inconclusive, the levels disagree), unchanged when every estimand with an interval is,
 * inconclusive otherwise or when no estimand has an interval. The loads are a sample too: each
 * copy of a library sits at addresses and on memory of its own, and a memory-bound op reads a
 * copy 1-3% apart from another of the same build (its table's pages), which no count of rounds
 * averages away. So with two layouts or more every interval is widened to at least the
 * estimate +- t x sd / sqrt(L): sd the spread of the L layouts' offsets (each one's median of
 * its rounds' ab - aa less their level's estimate) about their mean, on L - 1 degrees of
 * freedom, t Student's at the same alpha_each (loads_sd, loads_hw). Returns 0
 * or -ENOMEM. */
int aw_ab_decide(const struct aw_ab_round *rounds, size_t n, const struct aw_ab_rule *rule,
                 struct aw_ab_decision *out);

/* The looks of the sequential test, in rounds: 12, 16, 24, 32, 48, 64, 96, ... each about 1.5
 * times the one before, the last `max_rounds` itself. Writes up to `cap` into `at` (may be
 * NULL) and returns how many there are. */
unsigned aw_ab_looks(unsigned max_rounds, unsigned *at, unsigned cap);

#endif
