/* Interleaved A/B (`atomwatch-agent ab`): a subject built at two commits, both libraries loaded
 * into this process and measured alternately on the same CPU in randomised ABBA rounds, plus
 * A/A rounds (base against a second load of base) that measure the floor. The result is one
 * document of schema atomwatch.ab/1 (docs/result-schema.md "The A/B document"), spooled and
 * uploaded like a run. */
#ifndef AW_AGENT_AB_H
#define AW_AGENT_AB_H

#include <jansson.h>
#include <stdbool.h>

#include "agent.h"

/* The fewest rounds that can give a two-sided 95% Wilcoxon signed-rank interval: with n rounds
 * the most extreme outcome has probability 2 / 2^n, below 0.05 from n = 6 on. */
#define AW_AB_MIN_ROUNDS     6
#define AW_AB_DEFAULT_ROUNDS 20
#define AW_AB_MAX_ROUNDS     1000

struct aw_agent_ab {
	const char *project, *ref; /* ref may be NULL */
	const char *subject;       /* a subject of the config */
	const char *base, *head;   /* commit ids */
	const char *cpus;          /* NULL: the subject's (default first-per-type) */
	unsigned rounds;           /* A/B rounds per cell (and as many A/A rounds) */
	bool aa;                   /* base == head on purpose: an A/A document */
	const char *profile;       /* NULL: the config's */
};

/* Builds both sides (a git worktree per commit when the subject's dir is in a git repository,
 * else in place one after the other, each library copied aside), measures every op and reader
 * cell of either side and returns the document (*out, caller decrefs). Returns 0, or a negative
 * errno with *err: -EINVAL for a bad request (unknown subject, base == head without aa, rounds
 * out of range, bad CPUs: exit status 2), -EINTR when stopped, others (a commit that cannot
 * be checked out or built, with the log's last lines; a library that does not load or speaks
 * another ABI) for failures. Nothing is spooled here. */
int aw_agent_ab(struct aw_agent *a, const struct aw_agent_ab *ab, json_t **out, char **err);

#endif
