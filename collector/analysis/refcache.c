/* The runs' reference series: their parse from the stored text, and the process's cache of it;
 * see analysis_internal.h. Every verdict reads its history's 40 runs, and the next upload's
 * verdict the same runs less one plus one; a run's references (300 cells x 5 kernels in a 20 KB
 * JSON text) took jansson about half a millisecond to parse, each time. Runs never change once
 * stored, so the parsed series are kept, keyed by the run's id and checked against the text they
 * came from (its length and a hash of it: a run id is unique within a store, not across the
 * stores one process may open), and shared by every thread (the post-ingest workers, the HTTP
 * threads' gates) under one mutex. Least recently used first out, within CACHE_BYTES (a budget
 * below the runs in play thrashes: a host's runs come back only after every other host's). */
#include "analysis_internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_BYTES AW_REFCACHE_BYTES  /* the values, names and entries kept, at most */
#define ENTRY_MAX   (CACHE_BYTES / 64) /* a run larger than this is parsed every time */
#define BUCKETS     4096

struct entry {
	struct entry *chain;       /* the next in its bucket */
	struct entry *prev, *next; /* least recently used: head->next */
	char run_id[AW_UUID_LEN + 1];
	uint64_t text_hash;
	size_t text_len, bytes;
	struct run_ref refs; /* the kernels' names and values (nothing else of it) */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *buckets[BUCKETS];
static struct entry lru = {.prev = &lru, .next = &lru};
static size_t held;
static uint64_t hits, misses;

static uint64_t fnv1a(const char *s, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

/* The text's check: eight bytes a step, then the rest byte by byte (for a 20 KB text 4.4 us
 * on the development VM, where FNV-1a byte by byte took 24 us and jansson's parse 490 us). */
static uint64_t text_hash(const char *s, size_t n)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325) ^ n;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, s + i, 8);
		h = (h ^ w) * UINT64_C(0x9e3779b97f4a7c15);
		h ^= h >> 29;
	}
	return fnv1a(s + i, n - i, h);
}

/* One stored series {kernel, unit, values} into the run's next kernel slot. */
static int add_series(const json_t *doc, struct run_ref *x)
{
	const char *kernel = json_string_value(json_object_get(doc, "kernel"));
	const json_t *values = json_object_get(doc, "values"), *v;
	size_t i, k = x->n_kernels;

	if (!kernel || !json_is_array(values) || !json_array_size(values) || k >= KERNELS)
		return 0;
	x->kernel[k] = strdup(kernel);
	x->ref[k] = malloc(json_array_size(values) * sizeof(double));
	if (!x->kernel[k] || !x->ref[k]) {
		free(x->kernel[k]);
		free(x->ref[k]);
		return -ENOMEM;
	}
	json_array_foreach (values, i, v) {
		double d = json_is_number(v) ? json_number_value(v) : NAN;

		x->ref[k][i] = d > 0 ? d : NAN;
	}
	x->n_ref[k] = json_array_size(values);
	x->n_kernels++;
	return 0;
}

int analysis_parse_references(const char *text, struct run_ref *x)
{
	json_t *doc, *one;
	size_t i;
	int rc = 0;

	if (!text)
		return 0;
	doc = json_loads(text, 0, NULL);
	/* {kernel, unit, values} (mulchain-v1's, as before the family), with the whole family
	 * in "references" since there is one */
	if (json_is_array(json_object_get(doc, "references"))) {
		json_array_foreach (json_object_get(doc, "references"), i, one)
			if (!rc)
				rc = add_series(one, x);
	} else if (json_is_object(doc)) {
		rc = add_series(doc, x);
	}
	json_decref(doc);
	return rc;
}

void analysis_references_release(struct run_ref *x)
{
	for (size_t k = 0; k < x->n_kernels; k++) {
		free(x->kernel[k]);
		free(x->ref[k]);
		x->kernel[k] = NULL;
		x->ref[k] = NULL;
	}
	x->n_kernels = 0;
}

/* Copies the series of `from` into `to` (its own memory). 0 or -ENOMEM (to keeps none). */
static int refs_copy(struct run_ref *to, const struct run_ref *from)
{
	for (size_t k = 0; k < from->n_kernels; k++) {
		to->kernel[k] = strdup(from->kernel[k]);
		to->ref[k] = malloc((from->n_ref[k] ? from->n_ref[k] : 1) * sizeof(double));
		to->n_ref[k] = from->n_ref[k];
		to->n_kernels = k + 1;
		if (!to->kernel[k] || !to->ref[k]) {
			analysis_references_release(to);
			return -ENOMEM;
		}
		memcpy(to->ref[k], from->ref[k], from->n_ref[k] * sizeof(double));
	}
	return 0;
}

static size_t refs_bytes(const struct run_ref *x)
{
	size_t n = sizeof(struct entry);

	for (size_t k = 0; k < x->n_kernels; k++)
		n += x->n_ref[k] * sizeof(double) + strlen(x->kernel[k]) + 1;
	return n;
}

static struct entry **slot_of(const char *run_id)
{
	return &buckets[fnv1a(run_id, strlen(run_id), UINT64_C(0xcbf29ce484222325)) % BUCKETS];
}

static void lru_unlink(struct entry *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
}

static void lru_push(struct entry *e) /* as the most recently used */
{
	e->prev = lru.prev;
	e->next = &lru;
	lru.prev->next = e;
	lru.prev = e;
}

static void evict(struct entry *e)
{
	struct entry **p = slot_of(e->run_id);

	while (*p != e)
		p = &(*p)->chain;
	*p = e->chain;
	lru_unlink(e);
	held -= e->bytes;
	analysis_references_release(&e->refs);
	free(e);
}

int analysis_references(const char *run_id, const char *text, struct run_ref *x)
{
	size_t len = text ? strlen(text) : 0;
	uint64_t h;
	struct entry *e;
	int rc;

	if (!text || !run_id || strlen(run_id) > AW_UUID_LEN)
		return analysis_parse_references(text, x);
	h = text_hash(text, len);
	pthread_mutex_lock(&lock);
	for (e = *slot_of(run_id); e; e = e->chain)
		if (!strcmp(e->run_id, run_id) && e->text_len == len && e->text_hash == h)
			break;
	if (e) {
		hits++;
		lru_unlink(e);
		lru_push(e);
		rc = refs_copy(x, &e->refs);
		pthread_mutex_unlock(&lock);
		return rc;
	}
	misses++;
	pthread_mutex_unlock(&lock);
	rc = analysis_parse_references(text, x);
	if (rc || refs_bytes(x) > ENTRY_MAX || !(e = calloc(1, sizeof(*e))))
		return rc;
	if (refs_copy(&e->refs, x)) {
		free(e);
		return 0; /* (x has its series: only the cache goes without) */
	}
	snprintf(e->run_id, sizeof(e->run_id), "%s", run_id);
	e->text_len = len;
	e->text_hash = h;
	e->bytes = refs_bytes(&e->refs);
	pthread_mutex_lock(&lock);
	{
		struct entry *o, **p = slot_of(run_id);

		/* (another thread may have parsed the same run meanwhile) */
		for (o = *p; o; o = o->chain)
			if (!strcmp(o->run_id, run_id) && o->text_len == len && o->text_hash == h)
				break;
		if (o) {
			pthread_mutex_unlock(&lock);
			analysis_references_release(&e->refs);
			free(e);
			return 0;
		}
		while (held + e->bytes > CACHE_BYTES && lru.next != &lru)
			evict(lru.next);
		e->chain = *p;
		*p = e;
		lru_push(e);
		held += e->bytes;
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

void analysis_refcache_counts(uint64_t *hit, uint64_t *miss, size_t *bytes)
{
	pthread_mutex_lock(&lock);
	*hit = hits;
	*miss = misses;
	*bytes = held;
	pthread_mutex_unlock(&lock);
}
