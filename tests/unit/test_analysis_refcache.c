/* The process's cache of the runs' parsed references (collector/analysis/refcache.c): what it
 * serves is what parsing the text gives, a run id met again with another text is parsed again,
 * threads share it, and it holds no more than its budget, evicting the least recently used. */
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

static void check_run(const char *run_id, const char *text)
{
	struct run_ref want = {0}, got = {0};

	assert_int_equal(analysis_parse_references(text, &want), 0);
	assert_int_equal(analysis_references(run_id, text, &got), 0);
	assert_true(same(&want, &got));
	analysis_references_release(&want);
	analysis_references_release(&got);
}

/* Served from the cache the second time, as parsed; another text under the same id (another
 * store's run) is parsed again; no id or no text is parsed as it is. */
static void test_served_as_parsed(void **state)
{
	const char *id = "0b7c1f52-6a51-4c1b-9d43-2f1d7c0e9a01";
	char *a = text_of(300, 1), *b = text_of(300, 2);
	uint64_t h0, m0, h, m;
	size_t bytes;
	struct run_ref x = {0};

	(void)state;
	analysis_refcache_counts(&h0, &m0, &bytes);
	check_run(id, a);
	analysis_refcache_counts(&h, &m, &bytes);
	assert_int_equal(m, m0 + 1);
	assert_int_equal(h, h0);
	assert_true(bytes >= 5 * 300 * sizeof(double));
	check_run(id, a);
	analysis_refcache_counts(&h, &m, &bytes);
	assert_int_equal(h, h0 + 1);
	check_run(id, b);
	analysis_refcache_counts(&h, &m, &bytes);
	assert_int_equal(m, m0 + 2);
	check_run(id, a);
	check_run(NULL, a);
	assert_int_equal(analysis_references(id, NULL, &x), 0);
	assert_int_equal(x.n_kernels, 0);
	assert_int_equal(analysis_references(id, "{not json", &x), 0);
	assert_int_equal(x.n_kernels, 0);
	free(a);
	free(b);
}

struct worker {
	unsigned seed;
	char *texts[24];
};

static void *work(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 400; i++) {
		char id[40];
		unsigned r;

		w->seed = w->seed * 1103515245u + 12345u;
		r = (w->seed >> 8) % 24;
		snprintf(id, sizeof(id), "5d2a9c40-0000-4000-8000-%012u", r);
		check_run(id, w->texts[r]);
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
		char id[40];

		snprintf(id, sizeof(id), "9e4d1b7a-0000-4000-8000-%012d", i);
		check_run(id, t);
		analysis_refcache_counts(&h, &m, &bytes);
		assert_true(bytes <= AW_REFCACHE_BYTES);
	}
	analysis_refcache_counts(&h0, &m0, &bytes);
	check_run("9e4d1b7a-0000-4000-8000-000000000000", t); /* the oldest: evicted */
	analysis_refcache_counts(&h, &m, &bytes);
	assert_int_equal(m, m0 + 1);
	{
		char id[40];

		snprintf(id, sizeof(id), "9e4d1b7a-0000-4000-8000-%012d", runs - 1);
		check_run(id, t); /* the newest: kept */
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
