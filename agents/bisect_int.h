/* What the bisection's loop (bisect.c) shares with its ways of measuring a commit: building the
 * subject and comparing builds in one process (bisect.c), or the owner's step command and the
 * collector's verdicts (bisect_step.c). For agents/bisect*.c only. */
#ifndef AW_AGENT_BISECT_INT_H
#define AW_AGENT_BISECT_INT_H

#include <math.h>
#include <stdbool.h>

#include "ab_build.h"
#include "aw/verdict.h"
#include "bisect.h"

/* What one comparison said: the change head/base (log units, NAN unknown) and its verdict. */
struct bisect_cmp {
	double est, lo, hi;
	enum aw_ab_verdict verdict;
};

/* Where a probed commit lies. */
enum probe_verdict {
	PROBE_GOOD,         /* as fast as good: the culprit is after it */
	PROBE_BAD,          /* as slow as bad: it, or a commit before it, is the culprit */
	PROBE_INCONCLUSIVE, /* cannot tell: measured again within the budget */
	PROBE_SKIPPED,      /* did not build (or the step measured nothing): left out */
};

struct bisect_commit {
	char sha[41];
	bool skipped;
};

struct bisect;

/* A way of measuring (the subject's builds, or the step command). */
struct bisect_method {
	/* Measures the ends: the range's change (`range`) of the cell it chooses to follow,
	 * sets x->cell_key; writes what it found into `step`. *regressed false with *decided
	 * true: the range holds no regression. Returns 0 or a negative errno with *err. */
	int (*ends)(struct bisect *x, json_t *step, bool *decided, bool *regressed,
	            struct bisect_cmp *range, char **err);
	/* Measures commit x->c[pos - 1] against both ends: from good (`from_good`, probe /
	 * good) and to bad (`to_bad`, bad / probe); PROBE_SKIPPED with a reason in `step` when
	 * it could not be measured. Returns 0 or a negative errno with *err. */
	int (*probe)(struct bisect *x, size_t pos, json_t *step, enum probe_verdict *v,
	             struct bisect_cmp *from_good, struct bisect_cmp *to_bad, char **err);
	/* Uploads what the last ends() or probe() measured (the step is complete and was not
	 * cancelled); may be NULL (the step command uploads itself). */
	int (*commit)(struct bisect *x, json_t *step, char **err);
	/* Drops what the last call measured and was not committed. */
	void (*discard)(struct bisect *x);
};

struct bisect {
	struct aw_agent *a;
	const struct aw_bisect_req *req;
	const struct bisect_method *m;
	const char *project, *ref;
	char good[41], bad[41];
	struct bisect_commit *c; /* the commits after good, oldest first; c[n - 1] is bad */
	size_t n;
	char cell_key[512]; /* the cell followed */
	double
	    range_change; /* its change from good to bad (log), NAN until the ends are measured */
	unsigned builds;
	struct aw_ab_repo repo;
	char *work;   /* spool/bisect/<id> */
	void *method; /* the method's own state */
};

/* The step command's way (bisect_step.c): prepares x->method from the config's bisect
 * section. Returns 0 or a negative errno with *err (-EINVAL: not configured). */
extern const struct bisect_method bisect_step_method;
int bisect_step_open(struct bisect *x, char **err);
void bisect_step_close(struct bisect *x);

/* The verdict of a probe from its two comparisons: bad when it is slower than good and as fast
 * as bad, good when it is as fast as good and bad is slower; slower than good and faster than
 * bad, the side of the larger change (bad when the change from good is the larger). When a side
 * cannot tell (a wide interval: one run per commit on a noisy host), the range's own change
 * `range` (log, from good to bad; NAN unknown) decides between the two places one step puts
 * the probe, as fast as good or as slow as bad: a comparison whose bound lies beyond half of it
 * settles the side it points to, unless the other comparison points the other way. Otherwise
 * inconclusive. */
enum probe_verdict bisect_classify(const struct bisect_cmp *from_good,
                                   const struct bisect_cmp *to_bad, double range);

/* {"ratio", "lo", "hi", "verdict"} of a comparison. */
json_t *bisect_cmp_json(const struct bisect_cmp *c);

/* A reason short enough for the answer (size - 1 bytes at most): `why` itself, or its first
 * line and its end. */
void bisect_reason(const char *why, char *out, size_t size);

/* Whether a cell key matches the request's globs (every key without globs). */
bool bisect_wants(const struct bisect *x, const char *key);

/* Runs git in x->repo (a repository is required); see aw_ab_git(). */
int bisect_git(struct bisect *x, const char *const *args, struct aw_buf *out, int *code,
               char **err);

#endif
