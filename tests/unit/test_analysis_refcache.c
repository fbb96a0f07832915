/* The process's cache of the runs' unpacked references (collector/analysis/refcache.c): what it
 * serves is what unpacking the stored bytes gives, and that is the series of the JSON text the
 * runs stored before schema 11 carry; a key met again is served without the store being read,
 * threads share it, and it holds no more than its budget, evicting the least recently used.
 * (test_collector_store.c's test_run_reference reads the series from a store.) */
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
#include <jansson.h>

#include "analysis_internal.h"
#include "aw/refblob.h"

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
	const char *text; /* packed as the store packs a run's JSON text */
	const char *raw;  /* else these bytes as they are */
	int calls;
};

static int fetch_packed(void *cls, uint8_t **packed, size_t *len)
{
	struct fetch *f = cls;

	f->calls++;
	*packed = NULL;
	*len = 0;
	if (f->raw) {
		*len = strlen(f->raw);
		*packed = (uint8_t *)strdup(f->raw);
		return *packed ? 0 : -ENOMEM;
	}
	return f->text ? aw_refblob_from_json(f->text, packed, len) : 0;
}

/* The references under `key`, checked against the text's own unpacking; whether the store
 * was read. */
static bool check_run(const char *key, const char *text)
{
	struct run_ref want = {0}, got = {0};
	struct fetch f = {text, NULL, 0};
	uint8_t *packed;
	size_t len;

	assert_int_equal(aw_refblob_from_json(text, &packed, &len), 0);
	assert_int_equal(analysis_unpack_references(packed, len, &want), 0);
	free(packed);
	assert_int_equal(analysis_references(key, fetch_packed, &f, &got), 0);
	assert_true(same(&want, &got));
	analysis_references_release(&want);
	analysis_references_release(&got);
	return f.calls == 1;
}

static int fetch_fails(void *cls, uint8_t **packed, size_t *len)
{
	(void)cls;
	*packed = NULL;
	*len = 0;
	return -EIO;
}

/* What a run's JSON text holds, packed and unpacked, is its series: the family's kernels in
 * their order (mulchain-v1 first), each value as the text had it, a null NAN. */
static void test_unpacked_as_the_text(void **state)
{
	char *text = text_of(50, 3);
	json_t *doc = json_loads(text, 0, NULL), *one;
	struct run_ref x = {0};
	uint8_t *packed;
	size_t len, k;

	(void)state;
	assert_non_null(doc);
	assert_int_equal(aw_refblob_from_json(text, &packed, &len), 0);
	assert_int_equal(len, AW_REFBLOB_HEADER + 5 * 50 * sizeof(double));
	assert_int_equal(analysis_unpack_references(packed, len, &x), 0);
	assert_int_equal(x.n_kernels, 5);
	json_array_foreach (json_object_get(doc, "references"), k, one) {
		const json_t *values = json_object_get(one, "values"), *v;
		size_t i;

		assert_string_equal(x.kernel[k], json_string_value(json_object_get(one, "kernel")));
		assert_int_equal(x.n_ref[k], 50);
		json_array_foreach (values, i, v) {
			if (json_is_null(v))
				assert_true(isnan(x.ref[k][i]));
			else
				assert_true(x.ref[k][i] == json_number_value(v));
		}
	}
	analysis_references_release(&x);
	free(packed);
	json_decref(doc);
	free(text);
}

/* Served from the cache the second time, as unpacked, the store not read again; no key is read
 * and unpacked every time; no series or bytes that do not open are no series; a failing read is
 * the call's failure. */
static void test_served_as_parsed(void **state)
{
	const char *key = "1:41";
	char *a = text_of(300, 1);
	uint64_t h0, m0, h, m;
	size_t bytes;
	struct run_ref x = {0};
	struct fetch none = {NULL, NULL, 0}, bad = {NULL, "{not packed", 0};

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
	assert_int_equal(analysis_references("1:42", fetch_packed, &none, &x), 0);
	assert_int_equal(x.n_kernels, 0);
	assert_int_equal(analysis_references("1:43", fetch_packed, &bad, &x), 0);
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

/* Four threads over 24 runs, each lookup checked against its own unpacking. */
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
 * the budget: it holds no more than it may, the oldest is read again, the newest is served. */
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
	    cmocka_unit_test(test_unpacked_as_the_text),
	    cmocka_unit_test(test_served_as_parsed),
	    cmocka_unit_test(test_threads),
	    cmocka_unit_test(test_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
