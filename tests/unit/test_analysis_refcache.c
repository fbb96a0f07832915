/* The process's cache of the runs' parsed references (collector/analysis/refcache.c): what it
 * serves is what parsing the text gives, a key met again is served without its text being read,
 * threads share it, and it holds no more than its budget, evicting the least recently used.
 * (test_collector_store.c's test_run_reference reads the texts from a store.) */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis_internal.h"

/* Whether a and b hold the same kernels and values (NAN where NAN), bit for bit. */
static bool same(const struct run_ref *a, const struct run_ref *b)
{
	if (a->n_kernels != b->n_kernels)
		return false;
	for (size_t k = 0; k < a->n_kernels; k++)
		if (strcmp(a->kernel[k], b->kernel[k]) || a->n_ref[k] != b->n_ref[k] ||
		    memcmp(a->ref[k], b->ref[k], a->n_ref[k] * sizeof(double)))
			return false;
	return true;
}

/* A stored reference text of `cells` values per kernel, as aw_result_reference_to_json()
 * writes it (mulchain-v1 alone, then the family), its values from `seed`; NULL values where
 * i % 7 == 3. The caller frees it. */
static char *text_of(size_t cells, unsigned seed)
{
	static const char *const kernels[] = {"mulchain-v1", "mulindep-v1", "atomicadd-v1",
	                                      "memchase-v1", "memgather-v1"};
	size_t cap = 64 + 6 * (cells * 16 + 64), n = 0;
	char *t = malloc(cap);

	assert_non_null(t);
	for (int k = -1; k < 5; k++) {
		const char *name = k < 0 ? kernels[0] : kernels[k];

		n += (size_t)snprintf(t + n, cap - n,
		                      "%s{\"kernel\":\"%s\",\"unit\":\"ns\",\"values\":[",
		                      k < 0    ? ""
		                      : k == 0 ? ",\"references\":["
		                               : ",",
		                      name);
		for (size_t i = 0; i < cells; i++) {
			seed = seed * 1103515245u + 12345u;
			if (i % 7 == 3)
				n += (size_t)snprintf(t + n, cap - n, "%snull", i ? "," : "");
			else
				n += (size_t)snprintf(t + n, cap - n, "%s%.6g", i ? "," : "",
				                      0.5 + (seed >> 8) % 100000 / 1000.0);
		}
		n += (size_t)snprintf(t + n, cap - n, "]%s", k < 0 ? "" : "}");
	}
	snprintf(t + n, cap - n, "]}");
	return t;
}

struct fetch {
	const char *text;
	int calls;
};

static int fetch_text(void *cls, char **text)
{
	struct fetch *f = cls;

	f->calls++;
	*text = f->text ? strdup(f->text) : NULL;
	return f->text && !*text ? -ENOMEM : 0;
}

/* The references under `key`, checked against the text's parse; whether the text was read. */
static bool check_run(const char *key, const char *text)
{
	struct run_ref want = {0}, got = {0};
	struct fetch f = {text, 0};

	assert_int_equal(analysis_parse_references(text, &want), 0);
	assert_int_equal(analysis_references(key, fetch_text, &f, &got), 0);
	assert_true(same(&want, &got));
	analysis_references_release(&want);
	analysis_references_release(&got);
	return f.calls == 1;
}

static int fetch_fails(void *cls, char **text)
{
	(void)cls;
	*text = NULL;
	return -EIO;
}

/* Served from the cache the second time, as parsed, its text not read again; no key is read
 * and parsed every time; no text or one that does not parse is no series; a failing read is
 * the call's failure. */
static void test_served_as_parsed(void **state)
{
	const char *key = "1:41";
	char *a = text_of(300, 1);
	uint64_t h0, m0, h, m;
	size_t bytes;
	struct run_ref x = {0};
	struct fetch none = {NULL, 0}, bad = {"{not json", 0};

	(void)state;
	analysis_refcache_counts(&h0, &m0, &bytes);
	assert_true(check_run(key, a));
	analysis_refcache_counts(&h, &m, &bytes);
	assert_int_equal(m, m0 + 1);
	assert_int_equal(h, h0);
	assert_true(bytes >= 5 * 300 * sizeof(double));
	assert_false(check_run(key, a));
	analysis_refcache_counts(&h, &m, &bytes);
	assert_int_equal(h, h0 + 1);
	assert_true(check_run(NULL, a));
	assert_true(check_run(NULL, a));
	assert_int_equal(analysis_references("1:42", fetch_text, &none, &x), 0);
	assert_int_equal(x.n_kernels, 0);
	assert_int_equal(analysis_references("1:43", fetch_text, &bad, &x), 0);
	assert_int_equal(x.n_kernels, 0);
	assert_int_equal(analysis_references("1:44", fetch_fails, NULL, &x), -EIO);
	assert_int_equal(x.n_kernels, 0);
	free(a);
}

struct worker {
	unsigned seed;
	char *texts[24];
};

static void *work(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 400; i++) {
		char key[40];
		unsigned r;

		w->seed = w->seed * 1103515245u + 12345u;
		r = (w->seed >> 8) % 24;
		snprintf(key, sizeof(key), "2:%u", r);
		check_run(key, w->texts[r]);
	}
	return NULL;
}

/* Four threads over 24 runs, each lookup checked against its own parse. */
static void test_threads(void **state)
{
	struct worker w[4];
	pthread_t t[4];

	(void)state;
	for (int i = 0; i < 4; i++) {
		w[i].seed = (unsigned)i + 1;
		for (int r = 0; r < 24; r++)
			w[i].texts[r] = text_of(60, 100 + (unsigned)r);
	}
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	for (int i = 0; i < 4; i++)
		for (int r = 0; r < 24; r++)
			free(w[i].texts[r]);
}

/* Runs of half the most one run may hold (2,048 cells at 10 MiB, 80 KB of values each) past
 * the budget: it holds no more than it may, the oldest is parsed again, the newest is served. */
static void test_budget(void **state)
{
	const size_t cells = AW_REFCACHE_BYTES / 64 / 2 / (5 * sizeof(double));
	char *t = text_of(cells, 7);
	uint64_t h0, m0, h, m;
	size_t bytes;
	int runs = (int)(AW_REFCACHE_BYTES / (5 * cells * sizeof(double))) + 8;

	(void)state;
	for (int i = 0; i < runs; i++) {
		char key[40];

		snprintf(key, sizeof(key), "3:%d", i);
		check_run(key, t);
		analysis_refcache_counts(&h, &m, &bytes);
		assert_true(bytes <= AW_REFCACHE_BYTES);
	}
	analysis_refcache_counts(&h0, &m0, &bytes);
	assert_true(check_run("3:0", t)); /* the oldest: evicted */
	analysis_refcache_counts(&h, &m, &bytes);
	assert_int_equal(m, m0 + 1);
	{
		char key[40];

		snprintf(key, sizeof(key), "3:%d", runs - 1);
		assert_false(check_run(key, t)); /* the newest: kept */
		analysis_refcache_counts(&h, &m, &bytes);
		assert_int_equal(h, h0 + 1);
	}
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_served_as_parsed),
	    cmocka_unit_test(test_threads),
	    cmocka_unit_test(test_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
