/* The spool: durable put, oldest-first listing that ignores temp files and strangers, removal,
 * rejection beside its .error file; and the fingerprint comparison of the daemon. */
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent.h"
#include "aw/util.h"
#include "spool.h"

static const char *id1 = "11111111-1111-4111-8111-111111111111";
static const char *id2 = "22222222-2222-4222-8222-222222222222";

static void touch_at(const char *path, time_t when)
{
	struct timespec ts[2] = {{when, 0}, {when, 0}};

	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void test_spool(void **state)
{
	char dir[] = "/tmp/aw-spool-XXXXXX", sub[300], *p1 = NULL, *p2 = NULL, *err = NULL, *text;
	char **paths = NULL;
	struct aw_spool s;
	size_t n, len;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/spool", dir);
	assert_int_equal(aw_spool_open(&s, sub, &err), 0);
	assert_int_equal(access(s.rejected_dir, W_OK), 0);
	assert_int_equal(access(s.log_dir, W_OK), 0);
	assert_int_equal(aw_spool_put(&s, "not-a-uuid", "{}", 2, NULL, &err), -EINVAL);
	aw_freep(&err);
	assert_int_equal(aw_spool_put(&s, id2, "{\"b\":2}", 7, &p2, &err), 0);
	assert_int_equal(aw_spool_put(&s, id1, "{\"a\":1}", 7, &p1, &err), 0);
	touch_at(p2, 1000); /* id2 is the older one */
	touch_at(p1, 2000);
	/* a temp file from a crash and a stranger: both ignored */
	snprintf(sub, sizeof(sub), "%s/result-%s.json.tmp.ABCDEF", s.dir, id1);
	f = fopen(sub, "w");
	fclose(f);
	snprintf(sub, sizeof(sub), "%s/notes.txt", s.dir);
	f = fopen(sub, "w");
	fclose(f);
	assert_int_equal(aw_spool_list(&s, &paths, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(paths[0], p2);
	assert_string_equal(paths[1], p1);
	aw_spool_list_free(&paths, &n);
	assert_int_equal(aw_spool_count(&s), 2);

	assert_int_equal(aw_spool_reject(&s, p2, "HTTP 400\nbad\n", 13, &err), 0);
	assert_int_equal(access(p2, F_OK), -1);
	snprintf(sub, sizeof(sub), "%s/result-%s.json.error", s.rejected_dir, id2);
	assert_int_equal(aw_read_file(sub, 100, &text, &len, &err), 0);
	assert_string_equal(text, "HTTP 400\nbad\n");
	free(text);
	snprintf(sub, sizeof(sub), "%s/result-%s.json", s.rejected_dir, id2);
	assert_int_equal(aw_read_file(sub, 100, &text, &len, &err), 0);
	assert_string_equal(text, "{\"b\":2}");
	free(text);

	assert_int_equal(aw_spool_remove(&s, p1, &err), 0);
	assert_int_equal(aw_spool_remove(&s, p1, &err), 0); /* already gone is fine */
	assert_int_equal(aw_spool_count(&s), 0);
	free(p1);
	free(p2);
	aw_spool_close(&s);

	/* not a directory */
	snprintf(sub, sizeof(sub), "%s/spool/notes.txt", dir);
	assert_int_equal(aw_spool_open(&s, sub, &err), -ENOTDIR);
	assert_non_null(strstr(err, "notes.txt"));
	aw_freep(&err);
	snprintf(sub, sizeof(sub), "rm -rf '%s'", dir);
	assert_int_equal(system(sub), 0);
}

static void test_fingerprint_changes(void **state)
{
	json_t *a = json_pack("{s:s, s:s, s:{s:s, s:s, s:n, s:f}}", "name", "h", "platform_hash",
	                      "aaaa", "changing", "kernel", "6.1.0", "governor", "performance",
	                      "microcode", "timer_hz", 1.0e9);
	json_t *b = json_deep_copy(a), *ch;
	char c1[41], c2[41];

	(void)state;
	json_object_set_new(json_object_get(b, "changing"), "timer_hz", json_real(1.0001e9));
	ch = aw_fingerprint_changes(a, b);
	assert_int_equal(json_object_size(ch), 0); /* timer_hz alone is noise */
	json_decref(ch);
	assert_int_equal(aw_platform_commit(a, c1), 0);
	assert_int_equal(aw_platform_commit(b, c2), 0);
	assert_string_equal(c1, c2);
	assert_int_equal(strlen(c1), 40);

	json_object_set_new(json_object_get(b, "changing"), "kernel", json_string("6.2.0"));
	json_object_set_new(json_object_get(b, "changing"), "microcode", json_string("0xa2"));
	json_object_set_new(b, "platform_hash", json_string("bbbb"));
	ch = aw_fingerprint_changes(a, b);
	assert_int_equal(json_object_size(ch), 3);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(ch, "kernel"), "from")), "6.1.0");
	assert_string_equal(json_string_value(json_object_get(json_object_get(ch, "kernel"), "to")),
	                    "6.2.0");
	assert_true(json_is_null(json_object_get(json_object_get(ch, "microcode"), "from")));
	assert_non_null(json_object_get(ch, "platform_hash"));
	json_decref(ch);
	assert_int_equal(aw_platform_commit(b, c2), 0);
	assert_string_not_equal(c1, c2);
	json_decref(a);
	json_decref(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_spool),
	    cmocka_unit_test(test_fingerprint_changes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
