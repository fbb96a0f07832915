/* The chart files of the database and a collector's bounded cache of them (chart_cache.h), over
 * a real SQLite store: a file drawn here is stored once per hash, a collector with an empty
 * cache fetches it, one whose copy is older fetches the new one, the cache never holds more than
 * its bound (oldest used dropped first, with the drawing sidecar), the files already there are
 * counted at start, and the export writes the database's copy. A page asked for while a worker
 * draws and publishes a chart waits for it: it never writes the database's older copy over the
 * new drawing (which was then published under the new hash). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "chart_cache.h"
#include "collector_fixture.h"
#include "internal.h"

#define REL(n) "charts/commits/badc0de1/hosts/grace/chart" n ".svg"

/* Writes `text` to <root>/<rel>, creating directories. */
static void put_file(const char *root, const char *rel, const char *text)
{
	char path[512], *slash;
	char *err = NULL;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	slash = strrchr(path, '/');
	*slash = '\0';
	assert_int_equal(aw_make_dirs(path, 0755), 0);
	*slash = '/';
	assert_int_equal(aw_write_file_atomic(path, text, strlen(text), &err), 0);
}

/* The file's text ("" when there is none). */
static const char *file_text(const char *root, const char *rel)
{
	static char buf[256];
	char path[512], *data = NULL;
	size_t len = 0;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	buf[0] = '\0';
	if (aw_read_file(path, sizeof(buf) - 1, &data, &len, NULL) == 0)
		snprintf(buf, sizeof(buf), "%.*s", (int)len, data);
	free(data);
	return buf;
}

static bool exists(const char *root, const char *rel)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return lstat(path, &st) == 0;
}

struct hash_of {
	char hash[80];
	size_t len;
};

static int on_chart(const struct store_chart *ch, void *cls)
{
	struct hash_of *h = cls;

	snprintf(h->hash, sizeof(h->hash), "%s", ch->hash);
	h->len = ch->len;
	return 0;
}

static void test_publish_fetch_refresh(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_chart_cache *a = NULL, *b = NULL;
	char dir_a[128], dir_b[128], dir_x[128], *err = NULL;
	struct hash_of h = {0};
	uint64_t bytes, files;

	(void)state;
	snprintf(dir_a, sizeof(dir_a), "%s/a", dir);
	snprintf(dir_b, sizeof(dir_b), "%s/b", dir);
	snprintf(dir_x, sizeof(dir_x), "%s/export", dir);
	assert_int_equal(aw_chart_cache_new(dir_a, 0, true, &a, &err), 0);
	assert_int_equal(aw_chart_cache_new(dir_b, 0, true, &b, &err), 0);
	/* drawn by A, stored for every collector */
	put_file(dir_a, REL("1"), "<svg>one</svg>");
	assert_int_equal(aw_chart_cache_publish(a, c, REL("1"), "h1"), 0);
	assert_int_equal(store_chart_stat(c, REL("1"), on_chart, &h), 0);
	assert_string_equal(h.hash, "h1");
	assert_int_equal(h.len, strlen("<svg>one</svg>"));
	aw_chart_cache_usage(a, &bytes, &files);
	assert_int_equal(files, 1);
	assert_int_equal(bytes, strlen("<svg>one</svg>"));
	/* B has none: it knows it is drawn, and fetches it to serve it */
	assert_false(exists(dir_b, REL("1")));
	assert_true(aw_chart_cache_has(b, c, REL("1")));
	assert_false(aw_chart_cache_has(b, NULL, REL("1")));
	assert_false(aw_chart_cache_has(b, c, REL("2")));
	assert_int_equal(aw_chart_cache_refresh(b, c, REL("1")), 0);
	assert_string_equal(file_text(dir_b, REL("1")), "<svg>one</svg>");
	/* A redraws it: B's copy is older, B fetches the new one */
	put_file(dir_a, REL("1"), "<svg>one, redrawn</svg>");
	assert_int_equal(aw_chart_cache_publish(a, c, REL("1"), "h1b"), 0);
	assert_int_equal(aw_chart_cache_refresh(b, c, REL("1")), 0);
	assert_string_equal(file_text(dir_b, REL("1")), "<svg>one, redrawn</svg>");
	/* the same again: nothing to fetch, nothing to store */
	assert_int_equal(aw_chart_cache_refresh(b, c, REL("1")), 0);
	assert_int_equal(aw_chart_cache_publish(a, c, REL("1"), "h1b"), 0);
	/* drawn alike by B: counted, not stored again */
	put_file(dir_b, REL("1"), "<svg>one, redrawn</svg>");
	assert_int_equal(aw_chart_cache_publish(b, c, REL("1"), "h1b"), 0);
	/* not in the database: what the cache holds is left alone (a planted symlink too) */
	put_file(dir_b, REL("3"), "<svg>local</svg>");
	assert_int_equal(aw_chart_cache_refresh(b, c, REL("3")), 0);
	assert_string_equal(file_text(dir_b, REL("3")), "<svg>local</svg>");
	/* a symlink where the database has a chart is replaced, never followed */
	{
		char path[512];

		snprintf(path, sizeof(path), "%s/%s", dir_b, REL("1"));
		unlink(path);
		assert_int_equal(symlink("/etc/hostname", path), 0);
		assert_int_equal(aw_chart_cache_refresh(b, c, REL("1")), 0);
		assert_string_equal(file_text(dir_b, REL("1")), "<svg>one, redrawn</svg>");
		assert_int_equal(access("/etc/hostname", F_OK), 0);
	}
	/* the export writes the database's copy */
	assert_int_equal(aw_chart_fetch(c, REL("1"), dir_x, &err), 0);
	assert_string_equal(file_text(dir_x, REL("1")), "<svg>one, redrawn</svg>");
	assert_int_equal(aw_chart_fetch(c, REL("2"), dir_x, &err), -ENOENT);
	/* publishing a file that is not there fails, and stores nothing */
	assert_int_equal(aw_chart_cache_publish(a, c, REL("9"), "h9"), -ENOENT);
	assert_int_equal(store_chart_stat(c, REL("9"), on_chart, &h), -ENOENT);
	aw_chart_cache_free(&a);
	aw_chart_cache_free(&b);
	assert_null(a);
	store_disconnect(&c);
	store_close(&s);
}

struct page_ask {
	struct store *s;
	struct aw_chart_cache *cc;
	atomic_int done;
	int rc;
};

/* A page's request for the chart, on its own connection, as the HTTP threads make it. */
static void *ask_page(void *cls)
{
	struct page_ask *p = cls;
	struct store_conn *c = NULL;
	char *err = NULL;

	p->rc = store_connect(p->s, &c, &err);
	if (!p->rc)
		p->rc = aw_chart_cache_refresh(p->cc, c, REL("1"));
	store_disconnect(&c);
	free(err);
	atomic_store(&p->done, 1);
	return NULL;
}

static void test_refresh_waits_for_a_draw(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_chart_cache *a = NULL;
	struct page_ask ask = {.s = s};
	struct timespec pause = {0, 300 * 1000 * 1000};
	char dir_a[128], dir_x[128], *err = NULL;
	struct hash_of h = {0};
	pthread_t t;

	(void)state;
	snprintf(dir_a, sizeof(dir_a), "%s/held", dir);
	snprintf(dir_x, sizeof(dir_x), "%s/held-export", dir);
	assert_int_equal(aw_chart_cache_new(dir_a, 0, true, &a, &err), 0);
	ask.cc = a;
	put_file(dir_a, REL("1"), "<svg>old</svg>");
	assert_int_equal(aw_chart_cache_publish(a, c, REL("1"), "h-old"), 0);
	/* a worker draws it again (a file of another size), then publishes it; a page asks for
	 * it in between */
	aw_chart_cache_hold(a, REL("1"));
	put_file(dir_a, REL("1"), "<svg>new, with the culprit</svg>");
	assert_int_equal(pthread_create(&t, NULL, ask_page, &ask), 0);
	nanosleep(&pause, NULL); /* time enough to fetch the database's copy, were it let */
	assert_int_equal(atomic_load(&ask.done), 0);
	assert_string_equal(file_text(dir_a, REL("1")), "<svg>new, with the culprit</svg>");
	assert_int_equal(aw_chart_cache_publish(a, c, REL("1"), "h-new"), 0);
	aw_chart_cache_unhold(a, REL("1"));
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(ask.rc, 0);
	/* the page got the new drawing, and the database holds it under its hash */
	assert_string_equal(file_text(dir_a, REL("1")), "<svg>new, with the culprit</svg>");
	assert_int_equal(store_chart_stat(c, REL("1"), on_chart, &h), 0);
	assert_string_equal(h.hash, "h-new");
	assert_int_equal(aw_chart_fetch(c, REL("1"), dir_x, &err), 0);
	assert_string_equal(file_text(dir_x, REL("1")), "<svg>new, with the culprit</svg>");
	aw_chart_cache_free(&a);
	store_disconnect(&c);
	store_close(&s);
}

static void test_bound_and_scan(void **state)
{
	struct store_conn *c;
	struct store *s = open_fresh(&c);
	struct aw_chart_cache *cc = NULL;
	char root[128], rel[128], *err = NULL;
	uint64_t bytes, files;

	(void)state;
	snprintf(root, sizeof(root), "%s/bounded", dir);
	/* already there at start: counted, the oldest first */
	put_file(root, "charts/old.svg", "0123456789");
	put_file(root, "charts/.hidden.svg", "0123456789");
	put_file(root, "charts/notes.txt", "0123456789");
	assert_int_equal(aw_chart_cache_new(root, 35, true, &cc, &err), 0);
	aw_chart_cache_usage(cc, &bytes, &files);
	assert_int_equal(files, 1);
	assert_int_equal(bytes, 10);
	/* each file 10 bytes, at most 35 bytes: three stay */
	for (int i = 0; i < 5; i++) {
		snprintf(rel, sizeof(rel), "charts/commits/c%d/heatmap.svg", i);
		put_file(root, rel, "abcdefghij");
		snprintf(rel, sizeof(rel), "charts/commits/c%d/heatmap.hash", i);
		put_file(root, rel, "hash");
		snprintf(rel, sizeof(rel), "charts/commits/c%d/heatmap.svg", i);
		assert_int_equal(aw_chart_cache_publish(cc, c, rel, "h"), 0);
		if (i == 3) /* c0 used since: c1 and c2 are the oldest then */
			assert_int_equal(
			    aw_chart_cache_refresh(cc, c, "charts/commits/c0/heatmap.svg"), 0);
	}
	aw_chart_cache_usage(cc, &bytes, &files);
	assert_int_equal(files, 3);
	assert_true(bytes <= 35);
	assert_false(exists(root, "charts/old.svg"));
	assert_false(exists(root, "charts/commits/c1/heatmap.svg"));
	assert_false(exists(root, "charts/commits/c1/heatmap.hash")); /* never trusted half gone */
	assert_false(exists(root, "charts/commits/c2/heatmap.svg"));
	assert_true(exists(root, "charts/commits/c0/heatmap.svg"));
	assert_true(exists(root, "charts/commits/c3/heatmap.svg"));
	assert_true(exists(root, "charts/commits/c4/heatmap.svg"));
	assert_true(exists(root, "charts/.hidden.svg")); /* never the cache's */
	/* an evicted chart is still in the database: fetched back on demand */
	assert_true(aw_chart_cache_has(cc, c, "charts/commits/c1/heatmap.svg"));
	assert_int_equal(aw_chart_cache_refresh(cc, c, "charts/commits/c1/heatmap.svg"), 0);
	assert_string_equal(file_text(root, "charts/commits/c1/heatmap.svg"), "abcdefghij");
	aw_chart_cache_usage(cc, &bytes, &files);
	assert_int_equal(files, 3);
	aw_chart_cache_free(&cc);
	/* a restart counts what is there */
	assert_int_equal(aw_chart_cache_new(root, 35, true, &cc, &err), 0);
	aw_chart_cache_usage(cc, &bytes, &files);
	assert_int_equal(files, 3);
	/* a cached directory swapped for a link to another with the same file in it: evicting
	 * that chart never removes what the link points at */
	{
		char from[256], to[256], outside[256];

		snprintf(outside, sizeof(outside), "%s/outside", dir);
		put_file(outside, "heatmap.svg", "not the cache's");
		put_file(outside, "heatmap.hash", "not the cache's");
		snprintf(from, sizeof(from), "%s/charts/commits/c4", root);
		snprintf(to, sizeof(to), "%s/charts/commits/c4.moved", root);
		assert_int_equal(rename(from, to), 0);
		assert_int_equal(symlink(outside, from), 0);
		for (int i = 5; i < 9; i++) { /* evicts all three cached before, c4 among them */
			snprintf(rel, sizeof(rel), "charts/commits/c%d/heatmap.svg", i);
			put_file(root, rel, "abcdefghij");
			assert_int_equal(aw_chart_cache_publish(cc, c, rel, "h"), 0);
		}
		assert_string_equal(file_text(outside, "heatmap.svg"), "not the cache's");
		assert_string_equal(file_text(outside, "heatmap.hash"), "not the cache's");
		assert_false(exists(root, "charts/commits/c1/heatmap.svg")); /* evicted */
		aw_chart_cache_usage(cc, &bytes, &files);
		assert_int_equal(files, 3);
	}
	aw_chart_cache_free(&cc);
	store_disconnect(&c);
	store_close(&s);
}

int main(void)
{
	(void)put_one; /* the fixture's, for tests that store runs */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_publish_fetch_refresh),
	    cmocka_unit_test(test_bound_and_scan),
	    cmocka_unit_test(test_refresh_waits_for_a_draw),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
