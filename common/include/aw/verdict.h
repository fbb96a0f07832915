/* The one verdict vocabulary of atomwatch: what the regression analysis says about a cell
 * (unchanged ... missing), what the gate says about a host or a commit (pass, fail, incomplete),
 * and "unknown" for nothing decided yet. The collector writes these words into its JSON, its
 * verdict cache and its pages; atomwatch-ci reads them back. One enum and one name table, so
 * that a word is spelled in one place and every reader agrees on it. */
#ifndef AW_VERDICT_H
#define AW_VERDICT_H

#include <stdbool.h>

enum aw_verdict {
	AW_VERDICT_UNKNOWN, /* not decided yet, nothing to decide, or a word this build lacks */
	/* a host or a commit (the gate) */
	AW_VERDICT_PASS,       /* no cell regressed */
	AW_VERDICT_FAIL,       /* some cell regressed */
	AW_VERDICT_INCOMPLETE, /* some expected host did not report */
	/* a cell (the regression analysis); the JSON's "counts" lists them in this order */
	AW_VERDICT_UNCHANGED,
	AW_VERDICT_REGRESSED,
	AW_VERDICT_IMPROVED,
	AW_VERDICT_NOISY,   /* the baseline's noise (or its bimodality) cannot tell */
	AW_VERDICT_NEW,     /* no baseline for this cell */
	AW_VERDICT_MISSING, /* in the baseline but not in the head */
};

#define AW_VERDICT_COUNT      (AW_VERDICT_MISSING + 1) /* size of an array indexed by verdict */
#define AW_VERDICT_CELL_FIRST AW_VERDICT_UNCHANGED
#define AW_VERDICT_CELL_LAST  AW_VERDICT_MISSING

/* The word of a verdict: "unknown", "pass", "fail", "incomplete", "unchanged", "regressed",
 * "improved", "noisy", "new", "missing"; "unknown" for a value outside the enum. A static
 * string. */
const char *aw_verdict_name(enum aw_verdict v);

/* The verdict a word names (the inverse of aw_verdict_name()); NULL and any other word are
 * AW_VERDICT_UNKNOWN. Case-sensitive, as the collector writes them. */
enum aw_verdict aw_verdict_parse(const char *name);

/* Whether `v` is a verdict of a cell (unchanged ... missing). */
bool aw_verdict_is_cell(enum aw_verdict v);

/* Whether `v` is a verdict of a host or a commit (pass, fail, incomplete). */
bool aw_verdict_is_status(enum aw_verdict v);

#endif
