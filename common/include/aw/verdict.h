/* The one verdict vocabulary of atomwatch: what the regression analysis says about a cell
 * (unchanged ... missing, suspect), what the gate says about a host or a commit (pass, fail,
 * incomplete, unconfirmed), "unknown" for nothing decided yet, and how loudly a cell gates
 * (fail, warn, off). The collector writes these words into its JSON, its
 * verdict cache and its pages; atomwatch-ci reads them back. One enum and one name table, so
 * that a word is spelled in one place and every reader agrees on it. */
#ifndef AW_VERDICT_H
#define AW_VERDICT_H

#include <stdbool.h>
#include <stddef.h>

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
	/* words added later (only the words are stored, never these values) */
	AW_VERDICT_SUSPECT, /* a cell: undecided, or moved on fewer head runs than confirmation
	                       needs: re-measure it */
	/* a cell: its evidence stayed split after the confirmation budget; a host or a commit:
	 * no confirmed regression, but such a cell (never a pass) */
	AW_VERDICT_INCONCLUSIVE,
	AW_VERDICT_UNCONFIRMED, /* a host or a commit: no confirmed regression, but a suspect */
	/* a cell whose regression coincides with a change of the host itself (its control moved,
	 * or its fingerprint: kernel, microcode, firmware, governor): the host's, not the
	 * commit's; it fails no gate and starts no bisection (collector/analysis/control.c) */
	AW_VERDICT_HOST_CHANGED,
};

#define AW_VERDICT_COUNT      (AW_VERDICT_HOST_CHANGED + 1) /* size of an array indexed by verdict */
#define AW_VERDICT_CELL_FIRST AW_VERDICT_UNCHANGED
#define AW_VERDICT_CELL_LAST  AW_VERDICT_INCONCLUSIVE /* cells are CELL_FIRST ... CELL_LAST */

/* The word of a verdict: "unknown", "pass", "fail", "incomplete", "unchanged", "regressed",
 * "improved", "noisy", "new", "missing", "suspect", "inconclusive", "unconfirmed", "host
 * changed"; "unknown" for a value outside the enum. A static string. */
const char *aw_verdict_name(enum aw_verdict v);

/* The verdict a word names (the inverse of aw_verdict_name()); NULL and any other word are
 * AW_VERDICT_UNKNOWN. Case-sensitive, as the collector writes them. */
enum aw_verdict aw_verdict_parse(const char *name);

/* Whether `v` is a verdict of a cell (unchanged ... missing, suspect, inconclusive, host
 * changed). */
bool aw_verdict_is_cell(enum aw_verdict v);

/* Whether `v` is a verdict of a host or a commit (pass, fail, incomplete, unconfirmed,
 * inconclusive). */
bool aw_verdict_is_status(enum aw_verdict v);

/* How a cell's regression weighs in the gate (thresholds.yaml's `gate:`): fail makes the host
 * fail, warn is listed as a warning and never changes the gate's status, off is left out of the
 * gate (the cell is still judged and shown). Zero is fail, so a zeroed cell gates as before. */
enum aw_gate {
	AW_GATE_FAIL,
	AW_GATE_WARN,
	AW_GATE_OFF,
};

#define AW_GATE_COUNT (AW_GATE_OFF + 1)

/* "fail", "warn", "off"; "fail" for a value outside the enum. A static string. */
const char *aw_gate_name(enum aw_gate g);

/* The level a word names. Returns 0, or -EINVAL (*out untouched) for NULL or any other word. */
int aw_gate_parse(const char *name, enum aw_gate *out);

/* How a change reads to people. Below the resolution a relative change measures the timer, not
 * the op: 0.037 ns to 23.7 ns is "+64000%", a number that says nothing. So a metric whose
 * baseline is below AW_RESOLUTION_NS (0 included: the runner could not tell the op from the
 * empty loop, `below_resolution` in the result document) is told as an absolute change, and so
 * is one the analysis judged in ns (the verdict's `absolute`, docs/detection.md part 7).
 * AW_RESOLUTION_NS is the analysis' min_abs_ns: half a cycle at 5 GHz. */
#define AW_RESOLUTION_NS 0.1

/* Whether a metric's change is told in ns: its baseline (ns) is below AW_RESOLUTION_NS, or the
 * analysis judged it in ns (`absolute`). */
bool aw_change_in_ns(double baseline, bool absolute);

/* Writes the change from `baseline` to `head` (ns; NAN: unknown) into buf, one of:
 *   "below resolution -> 23.7 ns"  the baseline below the resolution;
 *   "below resolution"             ... and the head too;
 *   "+2.10 ns"                     judged in ns (`absolute`) from a baseline above it;
 *   "+12.3%"                       otherwise: `change` (head / baseline - 1; NAN: computed from
 *                                  baseline and head).
 * Returns buf, or NULL when nothing can be said (a value unknown), buf then being "". */
const char *aw_change_text(char *buf, size_t size, double baseline, double head, double change,
                           bool absolute);

/* The verdict of an interleaved A/B document and of each of its cells (docs/detection.md
 * "Interleaved A/B"): the collector's judgment writes these words, its pages and atomwatch-ci
 * read them back. Apart from the history's verdicts: an A/B verdict comes from a paired
 * comparison within one process, and "inconclusive" (more rounds would tell) is its own. */
enum aw_ab_verdict {
	AW_AB_VERDICT_UNKNOWN,      /* no verdict, or a word this build lacks */
	AW_AB_VERDICT_UNCHANGED,    /* any change is within the threshold */
	AW_AB_VERDICT_REGRESSED,    /* head slower beyond the threshold */
	AW_AB_VERDICT_IMPROVED,     /* head faster beyond the threshold */
	AW_AB_VERDICT_INCONCLUSIVE, /* the rounds cannot tell (or the levels disagree) */
	AW_AB_VERDICT_NEW,          /* a cell only the head has */
	AW_AB_VERDICT_MISSING,      /* a cell only the base has */
	AW_AB_VERDICT_FAILED,       /* a cell whose measurement failed */
};

#define AW_AB_VERDICT_COUNT (AW_AB_VERDICT_FAILED + 1)

/* "unknown", "unchanged", "regressed", "improved", "inconclusive", "new", "missing", "failed";
 * "unknown" for a value outside the enum. A static string. */
const char *aw_ab_verdict_name(enum aw_ab_verdict v);

/* The A/B verdict a word names; NULL and any other word are AW_AB_VERDICT_UNKNOWN. */
enum aw_ab_verdict aw_ab_verdict_parse(const char *name);

/* Whether an A/B verdict decides (regressed, improved, unchanged): the gate follows such a
 * document; an inconclusive one (or a word it does not know) leaves the gate to the history. */
bool aw_ab_verdict_decides(enum aw_ab_verdict v);

#endif
