/* Test helpers for host fixture trees (tests/fixtures/hosts/): find them, copy one into a temp
 * directory, edit or delete its files, and remove the copy. Every helper fails the test on error.
 * Static inline so that a test file may use any subset of them. */
#ifndef AW_TEST_HOST_TREE_H
#define AW_TEST_HOST_TREE_H

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* cmocka.h must come before this header. */

/* The fixture tree `name` in the source directory (AW_SOURCE_DIR); the caller frees. */
static inline char *host_fixture(const char *name)
{
	const char *src = getenv("AW_SOURCE_DIR");
	char *path;

	assert_non_null(src);
	assert_true(asprintf(&path, "%s/tests/fixtures/hosts/%s", src, name) > 0);
	return path;
}

static inline char *host_join(const char *dir, const char *rel)
{
	char *path;

	assert_true(asprintf(&path, "%s/%s", dir, rel) > 0);
	return path;
}

/* A new empty temp directory; the caller removes it with host_rmtree() and frees the name. */
static inline char *host_tmpdir(void)
{
	const char *tmp = getenv("TMPDIR");
	char *path;

	assert_true(asprintf(&path, "%s/aw-host-XXXXXX", tmp && *tmp ? tmp : "/tmp") > 0);
	assert_non_null(mkdtemp(path));
	return path;
}

static inline void host_mkdirs(const char *path)
{
	char buf[PATH_MAX];

	assert_true(snprintf(buf, sizeof(buf), "%s", path) < (int)sizeof(buf));
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		assert_true(mkdir(buf, 0755) == 0 || errno == EEXIST);
		*p = '/';
	}
	assert_true(mkdir(buf, 0755) == 0 || errno == EEXIST);
}

/* Writes dir/rel (parents created), replacing what was there. */
static inline void host_write(const char *dir, const char *rel, const char *text)
{
	char *path = host_join(dir, rel), *parent = strdup(path);
	FILE *f;

	assert_non_null(parent);
	*strrchr(parent, '/') = '\0';
	host_mkdirs(parent);
	free(parent);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
	free(path);
}

static inline int host_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

/* Removes a file or a whole directory tree; a missing one is fine. */
static inline void host_rmtree(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0 && errno == ENOENT)
		return;
	assert_int_equal(nftw(path, host_rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static inline void host_remove(const char *dir, const char *rel)
{
	char *path = host_join(dir, rel);

	host_rmtree(path);
	free(path);
}

static inline void host_copy(const char *from, const char *to)
{
	DIR *d = opendir(from);
	struct dirent *e;

	assert_non_null(d);
	host_mkdirs(to);
	while ((e = readdir(d))) {
		char *src, *dst;
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		src = host_join(from, e->d_name);
		dst = host_join(to, e->d_name);
		assert_int_equal(lstat(src, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			host_copy(src, dst);
		} else if (S_ISREG(st.st_mode)) {
			char buf[8192];
			size_t n;
			FILE *in = fopen(src, "r"), *out = fopen(dst, "w");

			assert_non_null(in);
			assert_non_null(out);
			while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
				assert_int_equal(fwrite(buf, 1, n, out), n);
			assert_int_equal(ferror(in), 0);
			fclose(in);
			assert_int_equal(fclose(out), 0);
		}
		free(src);
		free(dst);
	}
	closedir(d);
}

/* A temp copy of fixture `name`; the caller removes it with host_rmtree(). */
static inline char *host_copy_fixture(const char *name)
{
	char *from = host_fixture(name), *dir = host_tmpdir();

	host_copy(from, dir);
	free(from);
	return dir;
}

#endif
