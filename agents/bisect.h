/* Bisection of a commit range (`atomwatch-agent bisect`, and the daemon's bisect jobs): the
 * commits between a good and a bad one are listed from the subject's repository (first-parent),
 * and the range is halved the way `git bisect` does, each step an interleaved A/B (ab_measure.h)
 * of the probed commit against both ends in one process, re-measured within a budget where it
 * cannot tell. A commit that does not build is skipped (the answer may then be a range of
 * candidates). Every commit measured is uploaded as a run marked "trigger": "bisect", filed
 * under its commit on the ref. Kernel ranges, which the agent cannot build and boot itself, go
 * through the owner's step command (bisect.step in the config, bisect_step.c), each step's
 * verdicts read back from the collector. docs/detection.md "Finding the commit". */
#ifndef AW_AGENT_BISECT_H
#define AW_AGENT_BISECT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "agent.h"

#define AW_BISECT_MAX_BUDGET  1000   /* steps */
#define AW_BISECT_MAX_COMMITS 100000 /* commits in a range */
#define AW_BISECT_MAX_GLOBS   32

/* How a bisection ended (its exit status in brackets). */
enum aw_bisect_outcome {
	AW_BISECT_CULPRIT,    /* one commit named (0) */
	AW_BISECT_CANDIDATES, /* commits that did not build hide it among a few candidates (0) */
	AW_BISECT_NONE,       /* the range holds no regression (4) */
	AW_BISECT_BUDGET,     /* the budget ran out before one commit was left (4) */
};

/* "culprit", "candidates", "no regression", "budget" (static). */
const char *aw_bisect_outcome_name(enum aw_bisect_outcome o);

struct aw_bisect_req {
	const char *subject;      /* a subject of the config, or the bisect.subject name */
	const char *good, *bad;   /* commit ids (any unambiguous prefix git knows) */
	const char *project;      /* NULL: the subject's name */
	const char *ref;          /* NULL: "main" */
	const char *const *cells; /* fnmatch globs of the cells followed; none: every cell */
	size_t n_cells;
	unsigned budget; /* steps at most (re-measurements included); 0: default */
	int64_t id;      /* the collector's bisection, for the runs' meta; 0: none */
	/* After each step, with the state so far (the JSON of the answer, "outcome": "running";
	 * borrowed): 0 goes on, -ECANCELED stops before that step's runs are uploaded. NULL:
	 * none. */
	int (*progress)(void *cls, const json_t *state);
	void *progress_cls;
};

/* Runs the bisection. Returns 0 with *out (caller decrefs):
 *   {"culprit": SHA or null, "candidates": [SHA...], "change": ratio, "lo", "hi", "cell",
 *    "steps": [{"commit", "verdict", "ratio", ...}], "builds": N, "seconds": S,
 *    "outcome": "culprit" | "candidates" | "no regression" | "budget", "message", ...}
 * or a negative errno with *err: -EINVAL for a bad request, nothing measured (unknown subject
 * or commit, --good not an ancestor of --bad, an empty range, a budget out of range: exit
 * status 2), -EINTR when stopped, -ECANCELED when `progress` cancelled it, others (an end that
 * does not build, a measurement that fails, an upload refused: exit status 1). */
int aw_agent_bisect(struct aw_agent *a, const struct aw_bisect_req *req, json_t **out, char **err);

/* The exit status of an answer: 0 for a culprit or candidates, 4 otherwise. */
int aw_bisect_exit_status(const json_t *answer);

/* The answer as text, a line per step and the conclusion, for `--format text`. Returns a new
 * string (caller frees) or NULL. */
char *aw_bisect_text(const json_t *answer);

#endif
