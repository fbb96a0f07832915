/* A subject built at one commit, for the commands that compare builds in one process: the
 * interleaved A/B (ab.c) and the bisection (bisect.c). A subject whose dir is in a git
 * repository is built in a worktree of its own per commit, so that several builds stand side
 * by side; one that is not is built in place, its library copied aside. The builds are the
 * agent owner's own commands (as for `run`); git runs with fixed arguments, never through a
 * shell. */
#ifndef AW_AGENT_AB_BUILD_H
#define AW_AGENT_AB_BUILD_H

#include <stdbool.h>

#include "agent.h"
#include "aw/ab.h"
#include "aw/buf.h"
#include "subjects.h"

/* Where the builds of one subject go, and the repository its dir is in. */
struct aw_ab_repo {
	struct aw_agent *a;               /* borrowed */
	const struct aw_agent_subject *s; /* borrowed */
	const char *project, *ref;        /* for the build's environment; ref may be NULL */
	const char *work;                 /* worktrees and library copies go under it (borrowed) */
	const char *tag;                  /* names the build logs: "ab", "bisect" (borrowed) */
	char *toplevel;                   /* the subject's git repository, or NULL */
	char *rel_dir, *rel_lib;          /* the subject's dir and library inside it */
};

/* Finds the git repository of the subject's dir (r->toplevel NULL when there is none, or no
 * git). Returns 0, or -EINVAL with *err when the library lies outside that repository (two
 * commits could not be built apart), -ENOMEM. Release with aw_ab_repo_release(). */
int aw_ab_repo_open(struct aw_ab_repo *r, char **err);
void aw_ab_repo_release(struct aw_ab_repo *r);

/* Runs git with `args` (at most 8) in the repository. Its output is captured into `out` (may
 * be NULL: appended to log_fd when >= 0, else dropped). Returns 0 with *code (git's exit
 * status), or a negative errno with *err (-EINTR: the agent was stopped). */
int aw_ab_git(const struct aw_ab_repo *r, const char *const *args, struct aw_buf *out, int log_fd,
              int *code, char **err);

/* The committer date of `commit` in the repository (git's %ct), as RFC 3339 into
 * out[AW_TIME_LEN]: what orders a run on its ref. Returns 0, -ENOENT when there is no
 * repository or git does not know the commit, or another negative errno with *err. */
int aw_ab_commit_time(const struct aw_ab_repo *r, const char *commit, char *out, char **err);

/* The commit time of `commit` in the repository of subject `s` (aw_ab_commit_time()), or ""
 * when there is none: best effort, for the runs of a subject (agent.c). */
void aw_subject_commit_time(struct aw_agent *a, const struct aw_agent_subject *s,
                            const char *commit, char *out);

/* One build of the subject: `name` and `commit` are set by the caller (borrowed); the rest is
 * filled by aw_ab_side_build(). */
struct aw_ab_side {
	const char *name; /* "base", "head", "good", "bad", "probe": unique among live builds */
	const char *commit;
	char *tree;    /* the worktree, or NULL when building in place */
	char *dir;     /* the build's working directory */
	char *library; /* the library to load (a copy when building in place) */
	char *log_path;
	double build_s;    /* every build of the side together */
	unsigned n_builds; /* code layouts built: 1, or the A/B's --builds */
	unsigned distinct; /* of them, libraries unlike every earlier one's (0: one build) */
	char *build_lib[AW_AB_MAX_BUILDS]; /* n_builds > 1: layout k's library, copied aside */
	struct aw_subject_lib lib;         /* its first load, made by the caller */
};

/* Checks out sd->commit in a worktree of its own (when in a repository) and builds it there,
 * or builds in place and copies the library aside. builds > 1: builds it that many times, once
 * per code layout (aw_subject_build()), each library copied aside. Returns 0, -EINTR when
 * stopped, or a negative errno with *err naming the commit (one that cannot be checked out or
 * built, with the log's last lines). Release with aw_ab_side_release() in every case. */
int aw_ab_side_build(struct aw_ab_repo *r, struct aw_ab_side *sd, unsigned builds, char **err);

/* The library of code layout k mod n_builds (the one build's when there is one). */
const char *aw_ab_side_library(const struct aw_ab_side *sd, unsigned k);

/* Closes the side's load, removes its worktree (or library copy) and frees its fields; the
 * caller's name and commit stay. */
void aw_ab_side_release(struct aw_ab_repo *r, struct aw_ab_side *sd);

/* Copies a built library to `to` (written atomically), so that each load is dlopened from a
 * path of its own. Returns 0 or a negative errno with *err. */
int aw_ab_copy_file(const char *from, const char *to, char **err);

/* The last lines of a log, for an error message; caller frees. Never NULL but on ENOMEM. */
char *aw_ab_log_tail(const char *path);

#endif
