/* The on-disk spool of result documents; see spool.h. Every change is durable before the
 * function returns (file and directory fsync), so a crash or kill -9 never loses a document
 * and never leaves a half-written one where flush looks. */
#include "spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "aw/util.h"

#define DOC_PREFIX    "result-"
#define DOC_SUFFIX    ".json"
#define STALE_TMP_SEC 3600

static int make_dir(const char *path, char **err)
{
	struct stat st;

	if (mkdir(path, 0750) < 0 && errno != EEXIST)
		return aw_errorf(err, -errno, "cannot create the spool directory '%s': %s", path,
		                 strerror(errno));
	if (stat(path, &st) < 0)
		return aw_errorf(err, -errno, "cannot use the spool directory '%s': %s", path,
		                 strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return aw_errorf(err, -ENOTDIR, "the spool '%s' is not a directory", path);
	if (access(path, W_OK | X_OK) < 0)
		return aw_errorf(err, -errno, "cannot write to the spool directory '%s': %s", path,
		                 strerror(errno));
	return 0;
}

static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0 && errno != EINVAL)
		rc = -errno;
	close(fd);
	return rc;
}

int aw_spool_open(struct aw_spool *s, const char *dir, char **err)
{
	int rc;

	memset(s, 0, sizeof(*s));
	s->dir = strdup(dir);
	s->rejected_dir = aw_asprintf("%s/rejected", dir);
	s->log_dir = aw_asprintf("%s/logs", dir);
	if (!s->dir || !s->rejected_dir || !s->log_dir) {
		aw_spool_close(s);
		return aw_errorf(err, -ENOMEM, "out of memory");
	}
	rc = make_dir(s->dir, err);
	if (!rc)
		rc = make_dir(s->rejected_dir, err);
	if (!rc)
		rc = make_dir(s->log_dir, err);
	if (rc)
		aw_spool_close(s);
	return rc;
}

void aw_spool_close(struct aw_spool *s)
{
	aw_freep(&s->dir);
	aw_freep(&s->rejected_dir);
	aw_freep(&s->log_dir);
}

int aw_spool_put(struct aw_spool *s, const char *run_id, const char *text, size_t len, char **path,
                 char **err)
{
	char *p;
	int rc;

	if (!aw_valid_uuid(run_id))
		return aw_errorf(err, -EINVAL, "bad run id '%.40s'", run_id);
	p = aw_asprintf("%s/" DOC_PREFIX "%s" DOC_SUFFIX, s->dir, run_id);
	if (!p)
		return aw_errorf(err, -ENOMEM, "out of memory");
	rc = aw_write_file_atomic(p, text, len, err);
	if (!rc && path) {
		*path = p;
		p = NULL;
	}
	free(p);
	return rc;
}

static bool is_doc(const char *name)
{
	size_t n = strlen(name), pre = strlen(DOC_PREFIX), suf = strlen(DOC_SUFFIX);

	return n > pre + suf && !strncmp(name, DOC_PREFIX, pre) &&
	       !strcmp(name + n - suf, DOC_SUFFIX);
}

struct entry {
	char *path;
	struct timespec mtime;
};

static int by_mtime(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->path, y->path);
}

int aw_spool_list(struct aw_spool *s, char ***paths, size_t *n, char **err)
{
	struct entry *v = NULL;
	size_t count = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	*paths = NULL;
	*n = 0;
	d = opendir(s->dir);
	if (!d)
		return aw_errorf(err, -errno, "cannot read the spool '%s': %s", s->dir,
		                 strerror(errno));
	while ((errno = 0, de = readdir(d))) {
		struct stat st;
		char *p;

		if (strncmp(de->d_name, DOC_PREFIX, strlen(DOC_PREFIX)))
			continue;
		p = aw_asprintf("%s/%s", s->dir, de->d_name);
		if (!p) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			goto out;
		}
		if (stat(p, &st) < 0 || !S_ISREG(st.st_mode)) {
			free(p);
			continue;
		}
		if (!is_doc(de->d_name)) {
			/* a temp file of aw_write_file_atomic() that a crash left behind */
			if (strstr(de->d_name, ".tmp.") && time(NULL) - st.st_mtime > STALE_TMP_SEC)
				unlink(p);
			free(p);
			continue;
		}
		if (aw_array_reserve(&v, count, &cap, sizeof(*v), 16)) {
			free(p);
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			goto out;
		}
		v[count].path = p;
		v[count].mtime = st.st_mtim;
		count++;
	}
	if (errno) {
		rc = aw_errorf(err, -errno, "cannot read the spool '%s': %s", s->dir,
		               strerror(errno));
		goto out;
	}
	if (count)
		qsort(v, count, sizeof(*v), by_mtime);
	*paths = calloc(count + 1, sizeof(**paths));
	if (!*paths) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < count; i++) {
		(*paths)[i] = v[i].path;
		v[i].path = NULL;
	}
	*n = count;
out:
	for (size_t i = 0; i < count; i++)
		free(v[i].path);
	free(v);
	closedir(d);
	return rc;
}

void aw_spool_list_free(char ***paths, size_t *n)
{
	for (size_t i = 0; *paths && i < *n; i++)
		free((*paths)[i]);
	aw_freep(paths);
	*n = 0;
}

int aw_spool_remove(struct aw_spool *s, const char *path, char **err)
{
	int rc;

	if (unlink(path) < 0 && errno != ENOENT)
		return aw_errorf(err, -errno, "cannot remove '%s' from the spool: %s", path,
		                 strerror(errno));
	rc = sync_dir(s->dir);
	if (rc)
		return aw_errorf(err, rc, "cannot sync the spool '%s': %s", s->dir, strerror(-rc));
	return 0;
}

int aw_spool_reject(struct aw_spool *s, const char *path, const char *why, size_t len, char **err)
{
	char *copy = strdup(path), *dst = NULL, *error_path = NULL;
	const char *name;
	int rc;

	if (!copy)
		return aw_errorf(err, -ENOMEM, "out of memory");
	name = basename(copy);
	dst = aw_asprintf("%s/%s", s->rejected_dir, name);
	error_path = aw_asprintf("%s/%s.error", s->rejected_dir, name);
	if (!dst || !error_path) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	rc = aw_write_file_atomic(error_path, why, len, err);
	if (rc)
		goto out;
	if (rename(path, dst) < 0) {
		rc = errno == ENOENT ? 0
		                     : aw_errorf(err, -errno, "cannot move '%s' to '%s': %s", path,
		                                 dst, strerror(errno));
		goto out;
	}
	rc = sync_dir(s->rejected_dir);
	if (!rc)
		rc = sync_dir(s->dir);
	if (rc)
		aw_errorf(err, rc, "cannot sync the spool '%s': %s", s->dir, strerror(-rc));
out:
	free(error_path);
	free(dst);
	free(copy);
	return rc;
}

size_t aw_spool_count(struct aw_spool *s)
{
	char **paths = NULL;
	size_t n = 0, count;

	if (aw_spool_list(s, &paths, &n, NULL))
		return 0;
	count = n;
	aw_spool_list_free(&paths, &n);
	return count;
}
