/* Shared utilities: RFC 3339 times, names, commits, refs, UUIDs, durations, numbers, bounded
 * buffers, files written atomically and mkdir -p. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "aw/buf.h"
#include "aw/util.h"

static void test_time(void **state)
{
	int64_t t;
	char out[AW_TIME_LEN];
	struct timespec ts = {.tv_sec = 1796000000, .tv_nsec = 123456789};

	(void)state;
	assert_int_equal(aw_time_parse("1970-01-01T00:00:00Z", &t), 0);
	assert_int_equal(t, 0);
	assert_int_equal(aw_time_parse("2026-11-29T19:19:00.5Z", &t), 0);
	assert_int_equal(t, INT64_C(1795979940500000));
	assert_int_equal(aw_time_parse("2026-11-29T21:19:00+02:00", &t), 0);
	assert_int_equal(t, INT64_C(1795979940000000));
	assert_int_equal(aw_time_parse("2000-02-29T00:00:00Z", &t), 0);
	assert_int_equal(aw_time_parse("2026-13-01T00:00:00Z", &t), -EINVAL);
	assert_int_equal(aw_time_parse("2026-11-29T19:19:00", &t), -EINVAL);
	assert_int_equal(aw_time_parse("2026-11-29T19:19:00Zjunk", &t), -EINVAL);
	assert_int_equal(aw_time_parse("", &t), -EINVAL);
	aw_time_format(&ts, out);
	assert_string_equal(out, "2026-11-30T00:53:20.123456Z");
	assert_int_equal(aw_time_parse(out, &t), 0);
	assert_int_equal(t, INT64_C(1796000000123456));
}

static void test_names(void **state)
{
	(void)state;
	assert_true(aw_valid_name("graviton4-a.1_x"));
	assert_false(aw_valid_name(""));
	assert_false(aw_valid_name("a b"));
	assert_false(aw_valid_name("<script>"));
	assert_true(
	    aw_valid_name("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
	assert_false(
	    aw_valid_name("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
	assert_true(aw_valid_commit("abcdef0"));
	assert_true(aw_valid_commit("ABCDEF0123"));
	assert_false(aw_valid_commit("abcde"));
	assert_false(aw_valid_commit("abcdefg"));
	assert_true(aw_valid_ref("main"));
	assert_true(aw_valid_ref("refs/heads/feature/x-1"));
	assert_false(aw_valid_ref("a b"));
	assert_false(aw_valid_ref("a..b"));
	assert_false(aw_valid_ref("-x"));
	assert_false(aw_valid_ref("x/"));
	assert_false(aw_valid_ref("x~1"));
	assert_true(aw_valid_uuid("123e4567-e89b-42d3-a456-426614174000"));
	assert_false(aw_valid_uuid("123E4567-e89b-42d3-a456-426614174000"));
	assert_false(aw_valid_uuid("123e4567e89b42d3a456426614174000"));
}

static void test_uuid(void **state)
{
	char a[AW_UUID_LEN + 1], b[AW_UUID_LEN + 1];

	(void)state;
	assert_int_equal(aw_uuid4(a), 0);
	assert_int_equal(aw_uuid4(b), 0);
	assert_true(aw_valid_uuid(a));
	assert_string_not_equal(a, b);
	assert_int_equal(a[14], '4');
}

static void test_numbers(void **state)
{
	uint64_t v;

	(void)state;
	{
		struct pair {
			int a, b;
		} *arr = NULL;
		size_t n = 0, cap = 0;

		for (int i = 0; i < 100; i++) {
			assert_int_equal(aw_array_reserve(&arr, n, &cap, sizeof(*arr), 4), 0);
			assert_true(n < cap);
			arr[n++] = (struct pair){i, -i};
		}
		assert_int_equal(cap, 128); /* 4, doubled five times */
		for (int i = 0; i < 100; i++)
			assert_true(arr[i].a == i && arr[i].b == -i);
		assert_int_equal(aw_array_reserve(&arr, 100, &cap, sizeof(*arr), 4), 0);
		assert_int_equal(cap, 128); /* room left: unchanged */
		assert_int_equal(aw_array_reserve(&arr, 128, &cap, SIZE_MAX / 64, 4), -ENOMEM);
		assert_int_equal(cap, 128);
		free(arr);
	}
	assert_int_equal(aw_hex_value('0'), 0);
	assert_int_equal(aw_hex_value('9'), 9);
	assert_int_equal(aw_hex_value('a'), 10);
	assert_int_equal(aw_hex_value('F'), 15);
	assert_int_equal(aw_hex_value('g'), -1);
	assert_int_equal(aw_hex_value('\0'), -1);
	assert_int_equal(aw_parse_u64("42", 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(aw_parse_u64("101", 100, &v), -ERANGE);
	/* one digit above a small max (the check once wrapped round and let 9 pass for 8) */
	assert_int_equal(aw_parse_u64("9", 8, &v), -ERANGE);
	assert_int_equal(aw_parse_u64("8", 8, &v), 0);
	assert_int_equal(v, 8);
	assert_int_equal(aw_parse_u64("09", 8, &v), -ERANGE);
	assert_int_equal(aw_parse_u64("0", 0, &v), 0);
	assert_int_equal(aw_parse_u64("18446744073709551616", UINT64_MAX, &v), -ERANGE);
	assert_int_equal(aw_parse_u64("4x", 100, &v), -EINVAL);
	assert_int_equal(aw_parse_u64("", 100, &v), -EINVAL);
	assert_int_equal(aw_parse_u64("-1", 100, &v), -EINVAL);
	assert_int_equal(aw_parse_duration_ms("30m", &v), 0);
	assert_int_equal(v, 1800000);
	assert_int_equal(aw_parse_duration_ms("90", &v), 0);
	assert_int_equal(v, 90000);
	assert_int_equal(aw_parse_duration_ms("250ms", &v), 0);
	assert_int_equal(v, 250);
	assert_int_equal(aw_parse_duration_ms("2h", &v), 0);
	assert_int_equal(v, 7200000);
	assert_int_equal(aw_parse_duration_ms("5 m", &v), -EINVAL);
	assert_int_equal(aw_parse_duration_ms("m", &v), -EINVAL);
	assert_int_equal(aw_parse_duration_ms("3d", &v), -EINVAL);
}

static void test_buf_limit(void **state)
{
	struct aw_buf b;

	(void)state;
	aw_buf_init(&b, 10);
	assert_int_equal(aw_buf_puts(&b, "hello"), 0);
	assert_int_equal(aw_buf_printf(&b, "%d", 12345), 0);
	assert_int_equal(b.len, 10);
	assert_string_equal(b.data, "hello12345");
	assert_int_equal(aw_buf_puts(&b, "x"), -E2BIG);
	assert_string_equal(b.data, "hello12345");
	aw_buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_int_equal(aw_buf_printf(&b, "%s", "0123456789a"), -E2BIG);
	aw_buf_release(&b);
	assert_null(b.data);
}

static void test_files(void **state)
{
	char dir[] = "/tmp/aw-util-XXXXXX", path[64], *data = NULL, *err = NULL;
	size_t len;
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f.json", dir);
	assert_int_equal(aw_write_file_atomic(path, "{}\n", 3, &err), 0);
	assert_int_equal(aw_read_file(path, 100, &data, &len, &err), 0);
	assert_int_equal(len, 3);
	assert_string_equal(data, "{}\n");
	free(data);
	assert_int_equal(aw_read_file(path, 2, &data, &len, &err), -E2BIG);
	assert_non_null(strstr(err, "larger than 2 bytes"));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(aw_read_file("/nonexistent/x", 100, &data, &len, &err), -ENOENT);
	assert_non_null(strstr(err, "cannot open '/nonexistent/x'"));
	assert_true(aw_write_file_atomic("/nonexistent/dir/x", "a", 1, &err) < 0);
	assert_non_null(strstr(err, "/nonexistent/dir/x"));
	free(err);
	unlink(path);
	rmdir(dir);
}

static void test_make_dirs(void **state)
{
	char dir[] = "/tmp/aw-util-XXXXXX", path[96], file[96];
	struct stat st;
	mode_t mask = umask(022);
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a/b//c/", dir);
	assert_int_equal(aw_make_dirs(path, 0750), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0750);
	assert_int_equal(aw_make_dirs(path, 0750), 0); /* all there: nothing to do */
	snprintf(file, sizeof(file), "%s/a/f", dir);
	f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/a/f/g", dir);
	assert_int_equal(aw_make_dirs(path, 0750), -ENOTDIR);
	assert_int_equal(aw_make_dirs("", 0750), -ENOENT);
	unlink(file);
	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/a/b", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/a", dir);
	rmdir(path);
	assert_int_equal(rmdir(dir), 0);
	umask(mask);
}

/* Both ways of opening beneath a directory refuse every symlink on the way and any way out. */
static void test_open_beneath(void **state)
{
	char dir[] = "/tmp/aw-util-XXXXXX", out[] = "/tmp/aw-util-XXXXXX", p[128], q[128];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_non_null(mkdtemp(out));
	snprintf(p, sizeof(p), "%s/real/sub", dir);
	assert_int_equal(aw_make_dirs(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/real/sub/f.svg", dir);
	fclose(fopen(p, "w"));
	snprintf(p, sizeof(p), "%s/secret.svg", out);
	fclose(fopen(p, "w"));
	snprintf(p, sizeof(p), "%s/linked", dir); /* a directory link */
	assert_int_equal(symlink(out, p), 0);
	snprintf(p, sizeof(p), "%s/real/file-link.svg", dir); /* a file link */
	snprintf(q, sizeof(q), "%s/secret.svg", out);
	assert_int_equal(symlink(q, p), 0);
	for (int walk = 0; walk < 2; walk++) {
#define OPEN(rel)                                                  \
	(walk ? aw_open_beneath_walk(dir, rel, O_RDONLY, 0, false) \
	      : aw_open_beneath(dir, rel, O_RDONLY, 0))
		fd = OPEN("real/sub/f.svg");
		assert_true(fd >= 0);
		close(fd);
		fd = OPEN("real//sub/f.svg");
		assert_true(fd >= 0);
		close(fd);
		assert_int_equal(OPEN("linked/secret.svg"), -ELOOP);
		/* a link as the directory opened itself (O_DIRECTORY says ENOTDIR) */
		assert_int_equal(
		    walk ? aw_open_beneath_walk(dir, "linked", O_RDONLY | O_DIRECTORY, 0, false)
		         : aw_open_beneath(dir, "linked", O_RDONLY | O_DIRECTORY, 0),
		    -ELOOP);
		assert_int_equal(OPEN("real/file-link.svg"), -ELOOP);
		/* openat2 resolves the ".." (inside) and meets the link; the walk refuses ".." */
		fd = OPEN("real/../linked/secret.svg");
		assert_true(fd == -ELOOP || fd == -EXDEV);
		assert_int_equal(OPEN("../x"), -EXDEV);
		assert_int_equal(OPEN("/etc/passwd"), -EXDEV);
		assert_int_equal(OPEN("real/none.svg"), -ENOENT);
#undef OPEN
	}
	/* with mkdirs: directories created on the way, a link on the way refused */
	fd = aw_open_beneath_walk(dir, "new/a/b", 0, 0, true);
	assert_true(fd >= 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/new/a/b", dir);
	assert_int_equal(access(p, F_OK), 0);
	assert_int_equal(aw_open_beneath_walk(dir, "linked/x", 0, 0, true), -ELOOP);
	snprintf(p, sizeof(p), "%s/x", out);
	assert_int_equal(access(p, F_OK), -1); /* nothing made outside */
	snprintf(p, sizeof(p), "rm -rf '%s' '%s'", dir, out);
	assert_int_equal(system(p), 0);
}

/* The file helpers built on it: read, stat, write and unlink beneath a directory. */
static void test_files_beneath(void **state)
{
	char dir[] = "/tmp/aw-util-XXXXXX", out[] = "/tmp/aw-util-XXXXXX", p[128], q[128];
	char *data = NULL, *err = NULL;
	size_t len = 0;
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_non_null(mkdtemp(out));
	snprintf(q, sizeof(q), "%s/secret", out);
	assert_int_equal(aw_write_file_atomic(q, "secret", 6, NULL), 0);
	snprintf(p, sizeof(p), "%s/linked", dir);
	assert_int_equal(symlink(out, p), 0);

	/* written with the directories on the way, read back; a second write replaces it */
	assert_int_equal(aw_write_beneath(dir, "a/b/f.json", "{}", 2, true, &err), 0);
	assert_int_equal(aw_write_beneath(dir, "a/b/f.json", "[1]", 3, false, &err), 0);
	assert_int_equal(aw_read_beneath(dir, "a/b/f.json", 64, &data, &len), 0);
	assert_int_equal(len, 3);
	assert_string_equal(data, "[1]");
	free(data);
	assert_int_equal(aw_read_beneath(dir, "a/b/f.json", 2, &data, &len), -E2BIG);
	assert_null(data);
	assert_int_equal(aw_stat_beneath(dir, "a/b/f.json", &st), 0);
	assert_int_equal(st.st_size, 3);

	/* a link on the way: nothing read, written or removed through it */
	assert_int_equal(aw_read_beneath(dir, "linked/secret", 64, &data, &len), -ELOOP);
	assert_int_equal(aw_stat_beneath(dir, "linked/secret", &st), -ELOOP);
	assert_int_equal(aw_write_beneath(dir, "linked/secret", "x", 1, false, &err), -ELOOP);
	assert_non_null(strstr(err, "linked"));
	aw_freep(&err);
	assert_int_equal(aw_unlink_beneath(dir, "linked/secret"), -ELOOP);
	assert_int_equal(aw_read_file(q, 64, &data, &len, NULL), 0);
	assert_string_equal(data, "secret");
	free(data);

	/* a link at the name itself is replaced by the write, its target untouched */
	snprintf(p, sizeof(p), "%s/a/b/g.json", dir);
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(aw_read_beneath(dir, "a/b/g.json", 64, &data, &len), -ELOOP);
	assert_int_equal(aw_write_beneath(dir, "a/b/g.json", "new", 3, false, &err), 0);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(aw_read_file(q, 64, &data, &len, NULL), 0);
	assert_string_equal(data, "secret");
	free(data);

	/* a FIFO is no file, and reading it does not block */
	snprintf(p, sizeof(p), "%s/a/fifo", dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	assert_int_equal(aw_read_beneath(dir, "a/fifo", 64, &data, &len), -ENOENT);

	assert_int_equal(aw_unlink_beneath(dir, "a/b/g.json"), 0);
	assert_int_equal(aw_unlink_beneath(dir, "a/b/g.json"), -ENOENT);
	assert_int_equal(aw_unlink_beneath(dir, "../x"), -EXDEV);
	snprintf(p, sizeof(p), "rm -rf '%s' '%s'", dir, out);
	assert_int_equal(system(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_time),          cmocka_unit_test(test_names),
	    cmocka_unit_test(test_uuid),          cmocka_unit_test(test_numbers),
	    cmocka_unit_test(test_buf_limit),     cmocka_unit_test(test_files),
	    cmocka_unit_test(test_make_dirs),     cmocka_unit_test(test_open_beneath),
	    cmocka_unit_test(test_files_beneath),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
