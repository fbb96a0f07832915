/* Interleaved A/B (`atomwatch-agent ab`): a subject built at two commits, each library loaded
 * into this process once per layout (and the base once more), and measured in short slices on
 * one CPU: the base's first load, the base and the head of one layout in a random order, so that
 * every slice holds an A/B and an A/A comparison (the bias between two loads of one library),
 * classified by a throughput reference measured within it; measured until a sequential test
 * decides, within a budget (ab_measure.h). The result is one document of schema
 * atomwatch.ab/1 (docs/result-schema.md "The A/B document"), spooled and uploaded like a run. */
#ifndef AW_AGENT_AB_H
#define AW_AGENT_AB_H

#include <jansson.h>
#include <stdbool.h>

#include "agent.h"
#include "aw/ab.h" /* AW_AB_MAX_ROUNDS, AW_AB_MAX_LAYOUTS */

/* The fewest rounds whose last look can give an interval: with at most 11 rounds the
 * sequential test looks once, each of its three estimands (every round, each level) at
 * AW_AB_ALPHA / 3, and with n rounds the most extreme outcome of the Wilcoxon signed-rank test
 * has probability 2 / 2^n, below 0.01 / 3 from n = 10 on. */
#define AW_AB_MIN_ROUNDS       10
#define AW_AB_DEFAULT_ROUNDS   400 /* at most, per cell: a test that decides stops sooner */
#define AW_AB_DEFAULT_LAYOUTS  4   /* the loads are a sample: aw_ab_decide() */
#define AW_AB_DEFAULT_BUDGET_S 20  /* seconds of measuring for the whole document */
#define AW_AB_MAX_BUDGET_S     3600
/* The agent's stopping rule: the collector's default threshold (detection.ab_threshold) and
 * its error rate (AW_AB_ALPHA), so that a cell the agent calls decided is one the collector
 * decides alike. */
#define AW_AB_STOP_THRESHOLD 0.005

struct aw_agent_ab {
	const char *project, *ref; /* ref may be NULL */
	const char *subject;       /* a subject of the config */
	const char *base, *head;   /* commit ids */
	const char *cpus;          /* NULL: the subject's (default first-per-type) */
	unsigned rounds;           /* A/B rounds per cell at most (and as many A/A rounds) */
	unsigned layouts;          /* loads of each side, 1 ... AW_AB_MAX_LAYOUTS; 0: the default
	                            * (AW_AB_DEFAULT_LAYOUTS, or the builds when more) */
	unsigned builds;           /* code layouts of each side, 1 ... AW_AB_MAX_BUILDS and at
	                            * most layouts; 0: the subject's ab_builds */
	double budget_s;           /* seconds of measuring at most, every cell together */
	bool aa;                   /* base == head on purpose: an A/A document */
	bool keep_loads;           /* --keep-loads: no fresh copies as a cell runs */
	const char *profile;       /* NULL: the config's */
};

/* Builds both sides (a git worktree per commit when the subject's dir is in a git repository,
 * else in place one after the other, each library copied aside), loads them per layout,
 * measures every op and reader cell of either side and returns the document (*out, caller
 * decrefs). Returns 0, or a negative errno with *err: -EINVAL for a bad request (unknown
 * subject, base == head without aa, rounds, layouts, builds or budget out of range, more
 * builds than layouts, more layouts than
 * the library can be loaded, bad CPUs: exit status 2), -EINTR when stopped, others (a commit
 * that cannot be checked out or built, with the log's last lines; a library that does not load
 * or speaks another ABI) for failures. Nothing is spooled here. */
int aw_agent_ab(struct aw_agent *a, const struct aw_agent_ab *ab, json_t **out, char **err);

#endif
