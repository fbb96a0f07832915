/* Builds of a subject at one commit each, side by side; see ab_build.h. */
#include "ab_build.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aw/ab.h"
#include "aw/log.h"
#include "aw/util.h"
#include "proc.h"

#define GIT_TIMEOUT_MS UINT64_C(120000)
#define GIT_OUTPUT_MAX 4096
#define GIT_ARGS_MAX   8

/* git -C dir args..., see aw_ab_git(). */
static int git_in(const struct aw_ab_repo *r, const char *dir, const char *const *args,
                  struct aw_buf *out, int log_fd, int *code, char **err)
{
	const char *argv[GIT_ARGS_MAX + 4] = {"git", "-C", dir};
	struct aw_proc p = {0};
	size_t n = 3;

	for (size_t i = 0; args[i] && i < GIT_ARGS_MAX; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	p.argv = argv;
	p.output = out;
	p.log_fd = out ? -1 : log_fd;
	p.timeout_ms = GIT_TIMEOUT_MS;
	p.stop = r->a->stop;
	return aw_proc_run(&p, code, err);
}

int aw_ab_git(const struct aw_ab_repo *r, const char *const *args, struct aw_buf *out, int log_fd,
              int *code, char **err)
{
	return git_in(r, r->toplevel ? r->toplevel : r->s->dir, args, out, log_fd, code, err);
}

int aw_ab_repo_open(struct aw_ab_repo *r, char **err)
{
	const char *args[] = {"rev-parse", "--show-toplevel", NULL};
	const struct aw_agent_subject *s = r->s;
	struct aw_buf out;
	size_t len_top;
	int code = 0, rc;

	aw_buf_init(&out, GIT_OUTPUT_MAX);
	rc = git_in(r, s->dir, args, &out, -1, &code, err);
	if (rc || code || !out.len)
		goto out; /* no git, or not a repository: build in place */
	while (out.len && (out.data[out.len - 1] == '\n' || out.data[out.len - 1] == '\r'))
		out.data[--out.len] = '\0';
	r->toplevel = realpath(out.data, NULL);
	if (!r->toplevel)
		goto out;
	len_top = strlen(r->toplevel);
	/* dir and library as paths inside the repository, so that each worktree has its own */
	if (strncmp(s->dir, r->toplevel, len_top) || (s->dir[len_top] && s->dir[len_top] != '/') ||
	    strncmp(s->library, r->toplevel, len_top) || s->library[len_top] != '/') {
		rc = aw_errorf(err, -EINVAL,
		               "subject '%s': its library '%s' is not inside its repository '%s', "
		               "so the two commits cannot be built apart",
		               s->name, s->library, r->toplevel);
		goto out;
	}
	r->rel_dir = aw_asprintf("%s", s->dir[len_top] ? s->dir + len_top + 1 : "");
	r->rel_lib = aw_asprintf("%s", s->library + len_top + 1);
	if (!r->rel_dir || !r->rel_lib)
		rc = aw_errorf(err, -ENOMEM, "out of memory");
out:
	aw_buf_release(&out);
	return rc;
}

void aw_ab_repo_release(struct aw_ab_repo *r)
{
	aw_freep(&r->toplevel);
	aw_freep(&r->rel_dir);
	aw_freep(&r->rel_lib);
}

int aw_ab_commit_time(const struct aw_ab_repo *r, const char *commit, char *out, char **err)
{
	char *spec = aw_asprintf("%s^{commit}", commit), *end = NULL;
	const char *args[] = {"show", "-s", "--format=%ct", spec, NULL};
	struct timespec ts = {0};
	struct aw_buf text;
	long long secs;
	int code = 0, rc;

	out[0] = '\0';
	if (!spec)
		return aw_errorf(err, -ENOMEM, "out of memory");
	if (!r->toplevel) {
		free(spec);
		return -ENOENT;
	}
	aw_buf_init(&text, GIT_OUTPUT_MAX);
	rc = aw_ab_git(r, args, &text, -1, &code, err);
	if (!rc && (code || !text.len))
		rc = -ENOENT;
	if (!rc) {
		errno = 0;
		secs = strtoll(text.data, &end, 10);
		if (errno || end == text.data || secs < 0)
			rc = -ENOENT;
		ts.tv_sec = (time_t)secs;
	}
	if (!rc)
		aw_time_format(&ts, out);
	aw_buf_release(&text);
	free(spec);
	return rc;
}

void aw_subject_commit_time(struct aw_agent *a, const struct aw_agent_subject *s,
                            const char *commit, char *out)
{
	struct aw_ab_repo r = {.a = a, .s = s, .tag = "run"};
	char *err = NULL;

	out[0] = '\0';
	if (commit && !aw_ab_repo_open(&r, &err) && r.toplevel)
		aw_ab_commit_time(&r, commit, out, &err);
	aw_ab_repo_release(&r);
	free(err);
}

char *aw_ab_log_tail(const char *path)
{
	char *text = NULL, *why = NULL, *tail;
	size_t len = 0;

	if (aw_read_file(path, 1u << 20, &text, &len, &why)) {
		free(why);
		return aw_asprintf("(the log cannot be read)");
	}
	tail = aw_asprintf("%s", aw_text_tail(text, len, 15, 2048));
	free(text);
	return tail;
}

/* Checks out the side's commit in its own worktree. */
static int checkout(struct aw_ab_repo *r, struct aw_ab_side *sd, char **err)
{
	char *spec = aw_asprintf("%s^{commit}", sd->commit), *tail;
	const char *verify[] = {"rev-parse", "--verify", "--quiet", spec, NULL};
	const char *add[] = {"worktree", "add", "--detach", "--force", sd->tree, sd->commit, NULL};
	int fd = -1, code = 0, rc;

	if (!spec)
		return aw_errorf(err, -ENOMEM, "out of memory");
	fd = open(sd->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0) {
		rc = aw_errorf(err, -errno, "cannot create the build log '%s': %s", sd->log_path,
		               strerror(errno));
		goto out;
	}
	dprintf(fd, "# atomwatch-agent %s: %s %s in %s\n$ git worktree add --detach %s %s\n",
	        r->tag, sd->name, sd->commit, r->toplevel, sd->tree, sd->commit);
	rc = aw_ab_git(r, verify, NULL, fd, &code, err);
	if (!rc && !code)
		rc = aw_ab_git(r, add, NULL, fd, &code, err);
	if (rc)
		goto out;
	if (code) {
		close(fd);
		fd = -1;
		tail = aw_ab_log_tail(sd->log_path);
		rc = aw_errorf(err, -EIO,
		               "subject '%s': cannot check out the %s commit %s in %s; the last "
		               "lines of %s:\n%s",
		               r->s->name, sd->name, sd->commit, r->toplevel, sd->log_path,
		               tail ? tail : "");
		free(tail);
	}
out:
	if (fd >= 0)
		close(fd);
	free(spec);
	return rc;
}

int aw_ab_copy_file(const char *from, const char *to, char **err)
{
	char *data = NULL, *why = NULL;
	size_t len = 0;
	int rc = aw_read_file(from, 1u << 30, &data, &len, &why);

	if (rc) {
		rc = aw_errorf(err, rc, "%s", why ? why : "cannot read the library");
		free(why);
		return rc;
	}
	rc = aw_write_file_atomic(to, data, len, err);
	free(data);
	return rc;
}

/* Whether two files hold the same bytes (false when either cannot be read). */
static bool same_bytes(const char *a, const char *b)
{
	char *da = NULL, *db = NULL, *why = NULL;
	size_t la = 0, lb = 0;
	bool same = !aw_read_file(a, 1u << 30, &da, &la, &why) &&
	            !aw_read_file(b, 1u << 30, &db, &lb, &why) && la == lb && !memcmp(da, db, la);

	free(da);
	free(db);
	free(why);
	return same;
}

/* Build k of the side (code layout k; -1: the one plain build), its library copied aside when
 * there are several or the build is in place. */
static int build_one(struct aw_ab_repo *r, struct aw_ab_side *sd, const struct aw_agent_subject *s,
                     int k, char **err)
{
	char *log = k > 0 ? aw_asprintf("%s/%s-%s-%s-%.12s-layout%d.log", r->a->spool.log_dir,
	                                r->s->name, r->tag, sd->name, sd->commit, k)
	                  : sd->log_path;
	char *why = NULL;
	uint64_t t0 = aw_monotonic_ns();
	int rc;

	if (!log)
		return aw_errorf(err, -ENOMEM, "out of memory");
	rc = aw_subject_build(s, r->project, sd->commit, r->ref, k, log, r->a->stop, &why);
	sd->build_s += (double)(aw_monotonic_ns() - t0) / 1e9;
	if (rc && k > 0)
		rc = aw_errorf(err, rc, "the %s commit %s, code layout %d: %s", sd->name,
		               sd->commit, k, why ? why : "the build failed");
	else if (rc)
		rc = aw_errorf(err, rc, "the %s commit %s: %s", sd->name, sd->commit,
		               why ? why : "the build failed");
	free(why);
	if (log != sd->log_path)
		free(log);
	if (rc)
		return rc;
	if (k < 0)
		return r->toplevel ? 0 : aw_ab_copy_file(r->s->library, sd->library, err);
	sd->build_lib[k] = aw_asprintf("%s/%s-layout%d.so", r->work, sd->name, k);
	if (!sd->build_lib[k])
		return aw_errorf(err, -ENOMEM, "out of memory");
	rc = aw_ab_copy_file(r->toplevel ? sd->library : r->s->library, sd->build_lib[k], err);
	if (rc)
		return rc;
	sd->distinct++;
	for (int j = 0; j < k; j++)
		if (same_bytes(sd->build_lib[j], sd->build_lib[k])) {
			sd->distinct--;
			break;
		}
	return 0;
}

int aw_ab_side_build(struct aw_ab_repo *r, struct aw_ab_side *sd, unsigned builds, char **err)
{
	struct aw_agent_subject s = *r->s;
	int rc = 0;

	sd->log_path = aw_asprintf("%s/%s-%s-%s-%.12s.log", r->a->spool.log_dir, r->s->name, r->tag,
	                           sd->name, sd->commit);
	if (r->toplevel) {
		sd->tree = aw_asprintf("%s/%s", r->work, sd->name);
		sd->dir = aw_asprintf("%s/%s", sd->tree ? sd->tree : "", r->rel_dir);
		sd->library = aw_asprintf("%s/%s", sd->tree ? sd->tree : "", r->rel_lib);
	} else {
		sd->dir = aw_asprintf("%s", r->s->dir);
		sd->library = aw_asprintf("%s/%s.so", r->work, sd->name);
	}
	if (!sd->log_path || !sd->dir || !sd->library || (r->toplevel && !sd->tree))
		return aw_errorf(err, -ENOMEM, "out of memory");
	if (r->toplevel) {
		rc = checkout(r, sd, err);
		if (rc)
			return rc;
	}
	s.dir = sd->dir;
	s.library = sd->library;
	if (r->s->build)
		aw_info("building the %s (%.12s) of subject '%s'%s (log: %s)", sd->name, sd->commit,
		        r->s->name, builds > 1 ? " in its code layouts" : "", sd->log_path);
	sd->n_builds = builds > 1 ? (builds < AW_AB_MAX_BUILDS ? builds : AW_AB_MAX_BUILDS) : 1;
	sd->distinct = 0;
	sd->build_s = 0;
	if (sd->n_builds == 1)
		return build_one(r, sd, &s, -1, err);
	for (unsigned k = 0; k < sd->n_builds && !rc; k++)
		rc = build_one(r, sd, &s, (int)k, err);
	return rc;
}

const char *aw_ab_side_library(const struct aw_ab_side *sd, unsigned k)
{
	return sd->n_builds > 1 ? sd->build_lib[k % sd->n_builds] : sd->library;
}

static void remove_worktree(struct aw_ab_repo *r, struct aw_ab_side *sd)
{
	const char *args[] = {"worktree", "remove", "--force", sd->tree, NULL};
	char *err = NULL;
	int code = 0;

	if (!sd->tree || access(sd->tree, F_OK))
		return;
	if (aw_ab_git(r, args, NULL, -1, &code, &err) || code)
		aw_warn("cannot remove the worktree %s (git worktree prune removes it later)",
		        sd->tree);
	free(err);
}

void aw_ab_side_release(struct aw_ab_repo *r, struct aw_ab_side *sd)
{
	aw_subject_close(&sd->lib);
	remove_worktree(r, sd);
	if (!r->toplevel && sd->library)
		unlink(sd->library);
	aw_freep(&sd->tree);
	aw_freep(&sd->dir);
	aw_freep(&sd->library);
	aw_freep(&sd->log_path);
	for (unsigned k = 0; k < AW_AB_MAX_BUILDS; k++)
		if (sd->build_lib[k]) {
			unlink(sd->build_lib[k]);
			aw_freep(&sd->build_lib[k]);
		}
	sd->n_builds = sd->distinct = 0;
	sd->build_s = 0;
}
