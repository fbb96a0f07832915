/* The verdict document: what the analysis says of one commit on one host, as structs, as JSON
 * (docs/api.md, "The verdict document") and back. One writer (aw_host_verdict_json) and one
 * parser (aw_host_verdict_parse): the analysis writes it into the store's cache and the gate's
 * and compare's replies; pages and atomwatch-ci read it back. A library of its own (aw_verdict)
 * over common/ alone, so that atomwatch-ci links it without the collector. */
#ifndef AW_ANALYSIS_VERDICT_DOC_H
#define AW_ANALYSIS_VERDICT_DOC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aw/verdict.h"

/* The most levels a metric's history is split into. */
#define AW_VERDICT_LEVELS 4

/* One level of a metric's baseline: a cluster of its runs, the machine in one state. */
struct aw_level {
	double share;                /* of the baseline's runs */
	double base, head;           /* ns; head NAN without head runs in it */
	double change;               /* head / base - 1 (NAN without head runs) */
	double change_lo, change_hi; /* one-sided 95% bounds */
	double noise;                /* relative */
	double pvalue;               /* one-sided, of the direction it moved */
	size_t n_base, n_head;       /* runs */
	enum aw_verdict verdict;     /* unchanged, regressed, improved; unknown: undecided or no
	                                head run */
};

/* The most reference kernels a run state lists, or a combination holds. */
#define AW_VERDICT_REFS 5

/* p50 or p99 of one cell. Numbers are NAN and strings NULL where unknown. */
struct aw_metric_verdict {
	enum aw_verdict verdict; /* unchanged ... suspect, inconclusive */
	double baseline, head;   /* ns of the deciding level (adjusted to the reference) */
	double change;           /* head / baseline - 1 */
	double change_lo, change_hi;
	double change_ns; /* head - baseline, ns as measured */
	bool absolute;    /* the baseline is below resolution: read change_ns, not change */
	double noise;     /* relative run-to-run noise */
	double pvalue, qvalue;
	double threshold; /* relative */
	size_t window;    /* baseline runs */
	size_t head_n;    /* head runs */
	size_t agree_n;   /* of a regression: head runs that each show it */
	bool bimodal;     /* two levels of 20% or more, or a bimodal tail within runs */
	char *reference;  /* the reference kernel the values were adjusted by, or NULL; several
	                     joined by '+' when they corrected it together */
	double ref_slope, ref_gain;
	double ref_terms[AW_VERDICT_REFS]; /* of several: each one's slope, in the name's order */
	size_t n_ref_terms;
	char *level_by; /* the reference kernel whose clusters are the levels, or NULL */
	struct aw_level levels[AW_VERDICT_LEVELS];
	size_t n_levels;
	size_t dominant; /* index of the level the host spends most of its runs in */
	int decided_by;  /* the level that decided, -1 when none did */
	char *note;      /* why, or NULL */
};

/* One cell of one host. */
struct aw_cell_verdict {
	char *key, *op, *reader, *subject; /* reader/subject may be NULL */
	int cpu;                           /* -1 when none */
	enum aw_verdict verdict;           /* the more severe of p50 and p99 */
	size_t n_head;                     /* head runs that measured the cell */
	enum aw_gate gate;                 /* how its regression weighs */
	struct aw_metric_verdict p50, p99;
};

/* One head run: each reference kernel beside its cells over its baseline median (1 = as
 * usual), and whether one of them moved beyond what the baseline's runs show. */
struct aw_run_state {
	char *kernel[AW_VERDICT_REFS];
	double ratio[AW_VERDICT_REFS];
	size_t n;
	bool disturbed;
};

/* A commit on one host. */
struct aw_host_verdict {
	char *host;
	enum aw_verdict
	    status;       /* fail: a fail-level cell regressed (confirmed); else inconclusive:
	                     one's evidence stayed split after its confirmation; else
	                     unconfirmed: one is suspect; else pass; incomplete: no head run */
	char *reason;     /* why incomplete, else NULL */
	char **head_runs; /* run ids of the commit on this host, newest first */
	size_t n_head_runs;
	struct aw_run_state *runs; /* one per head run, in head_runs order */
	size_t n_runs;
	bool disturbed;                /* some head run was disturbed */
	size_t n_baseline_runs;        /* earlier runs read (baseline ref or base commit) */
	struct aw_cell_verdict *cells; /* regressed first, then inconclusive, suspect, improved,
	                                  noisy, new, missing, unchanged */
	size_t n_cells;
	size_t counts[AW_VERDICT_COUNT]; /* cells per verdict (cell verdicts only) */
	size_t warnings;                 /* regressed or suspect cells of gate level warn */
	unsigned confirm_budget;         /* re-measurements a suspect may get (0: unknown) */
	uint64_t globs_matched;          /* bit i: the asked globs[i] matched a head cell (not in
	                                    the JSON) */
	/* what changed on the host when a regression was the host's (its cells are "host
	 * changed", control.h), else NULL */
	char *host_changed;
};

/* Frees everything `v` holds and zeroes it. */
void aw_host_verdict_release(struct aw_host_verdict *v);

/* The JSON (docs/api.md): {"host", "status", "reason", "head_runs", "baseline_runs", "counts",
 * "warnings", "confirm_budget", "disturbed", "host_changed", "runs", "cells": [...]}, unchanged
 * cells only when `all_cells`. NULL on allocation failure. Caller owns the reference. */
json_t *aw_host_verdict_json(const struct aw_host_verdict *v, bool all_cells);

/* Reads a host verdict back (unknown fields ignored, fields an older collector did not write
 * left unknown). Returns 0 (release *out), -EINVAL with *err naming the field, or -ENOMEM. */
int aw_host_verdict_parse(const json_t *doc, struct aw_host_verdict *out, char **err);

/* The same from the document's text, without a jansson tree (verdict_text.c): what
 * json_loads(text, 0) then aw_host_verdict_parse() give, several times faster. Returns 0
 * (release *out), -EINVAL (not JSON, or not a verdict) or -ENOMEM. */
int aw_host_verdict_parse_text(const char *text, struct aw_host_verdict *out);

/* The head run whose references moved most (|log ratio|) among those marked disturbed, or NULL;
 * *kernel and *ratio (may be NULL) name that reference. */
const struct aw_run_state *aw_host_verdict_most_disturbed(const struct aw_host_verdict *v,
                                                          const char **kernel, double *ratio);

/* The metric that gave a cell its verdict: p50, unless only p99 carries it. Never NULL. */
const struct aw_metric_verdict *aw_cell_verdict_deciding(const struct aw_cell_verdict *c);

/* The line that tells a metric's levels apart, for people, e.g.
 *   "levels by mulblock-v1: L1 (60%) +0.3% unchanged, L2 (40%) +7.1% regressed (deciding)"
 * (per level: its share of the baseline's runs, its change, its verdict: "no head run" without
 * one, "undecided" when it decided nothing). Writes it into buf (cut to `size`) and returns
 * buf; returns NULL, buf then being "", when the metric has fewer than two levels. */
const char *aw_metric_verdict_levels_text(const struct aw_metric_verdict *m, char *buf,
                                          size_t size);

#endif
