/* The runs' reference series: unpacked from the store's packed form (aw/refblob.h), and the
 * process's cache of them; see analysis_internal.h. Every verdict reads its history's 40 runs,
 * and the next upload's verdict the same runs less one plus one; a run's references (300 cells
 * x 5 kernels: 12 KB packed, a 20 KB JSON text before schema 11 that jansson took half a
 * millisecond to parse) cost a read of the store each time. Runs never change once stored, so
 * the unpacked series are kept, keyed by the store's generation and the run's sequence
 * (store_conn_generation(): a sequence is unique within a store, not across the stores one
 * process may open), and shared by every thread (the post-ingest workers, the HTTP threads'
 * gates) under one mutex; the store is read only for a run not kept. Least recently used first
 * out, within CACHE_BYTES (a budget below the runs in play thrashes: a host's runs come back
 * only after every other host's). */
#include "analysis_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "aw/lru.h"
#include "aw/refblob.h"

#define CACHE_BYTES AW_REFCACHE_BYTES  /* the values, names and entries kept, at most */
#define ENTRY_MAX   (CACHE_BYTES / 64) /* a run larger than this is parsed every time */
#define BUCKETS     4096

struct entry {
	struct aw_lru node;  /* first: in the least recently used order */
	struct entry *chain; /* the next in its bucket */
	char key[REFCACHE_KEY_LEN];
	size_t bytes;
	struct run_ref refs; /* the kernels' names and values (nothing else of it) */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *buckets[BUCKETS];
static AW_LRU_HEAD(lru);
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

int analysis_unpack_references(const uint8_t *packed, size_t len, struct run_ref *x)
{
	struct aw_refblob b;

	if (!packed || aw_refblob_open(packed, len, &b) || !b.n_cells)
		return 0;
	for (int k = 0; k < AW_REF_COUNT && x->n_kernels < KERNELS; k++) {
		size_t at = x->n_kernels;

		if (!(b.carried >> k & 1u))
			continue;
		x->kernel[at] = strdup(aw_ref_name((enum aw_ref)k));
		x->ref[at] = malloc(b.n_cells * sizeof(double));
		if (!x->kernel[at] || !x->ref[at]) {
			free(x->kernel[at]);
			free(x->ref[at]);
			x->kernel[at] = NULL;
			x->ref[at] = NULL;
			return -ENOMEM;
		}
		for (size_t i = 0; i < b.n_cells; i++) {
			double d = aw_refblob_value(&b, (enum aw_ref)k, i);

			x->ref[at][i] = d > 0 ? d : NAN;
		}
		x->n_ref[at] = b.n_cells;
		x->n_kernels++;
	}
	return 0;
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

static struct entry **slot_of(const char *key)
{
	return &buckets[fnv1a(key, strlen(key), UINT64_C(0xcbf29ce484222325)) % BUCKETS];
}

static struct entry *find(const char *key)
{
	struct entry *e;

	for (e = *slot_of(key); e; e = e->chain)
		if (!strcmp(e->key, key))
			break;
	return e;
}

/* The entry of a node of the order (node is its first member). */
static struct entry *of(struct aw_lru *n)
{
	return (struct entry *)(void *)n;
}

static void evict(struct entry *e)
{
	struct entry **p = slot_of(e->key);

	while (*p != e)
		p = &(*p)->chain;
	*p = e->chain;
	aw_lru_unlink(&e->node);
	held -= e->bytes;
	analysis_references_release(&e->refs);
	free(e);
}

int analysis_references(const char *key, analysis_ref_fetch_fn fetch, void *cls, struct run_ref *x)
{
	struct entry *e;
	uint8_t *packed = NULL;
	size_t len = 0;
	int rc;

	if (!key || strlen(key) >= REFCACHE_KEY_LEN) {
		rc = fetch(cls, &packed, &len);
		if (!rc)
			rc = analysis_unpack_references(packed, len, x);
		free(packed);
		return rc;
	}
	pthread_mutex_lock(&lock);
	e = find(key);
	if (e) {
		hits++;
		aw_lru_unlink(&e->node);
		aw_lru_push(&lru, &e->node);
		rc = refs_copy(x, &e->refs);
		pthread_mutex_unlock(&lock);
		return rc;
	}
	misses++;
	pthread_mutex_unlock(&lock);
	rc = fetch(cls, &packed, &len);
	if (!rc)
		rc = analysis_unpack_references(packed, len, x);
	free(packed);
	if (rc || refs_bytes(x) > ENTRY_MAX || !(e = calloc(1, sizeof(*e))))
		return rc;
	if (refs_copy(&e->refs, x)) {
		free(e);
		return 0; /* (x has its series: only the cache goes without) */
	}
	snprintf(e->key, sizeof(e->key), "%s", key);
	e->bytes = refs_bytes(&e->refs);
	pthread_mutex_lock(&lock);
	if (find(key)) { /* (another thread may have parsed the same run meanwhile) */
		pthread_mutex_unlock(&lock);
		analysis_references_release(&e->refs);
		free(e);
		return 0;
	}
	while (held + e->bytes > CACHE_BYTES && !aw_lru_empty(&lru))
		evict(of(lru.next));
	e->chain = *slot_of(key);
	*slot_of(key) = e;
	aw_lru_push(&lru, &e->node);
	held += e->bytes;
	pthread_mutex_unlock(&lock);
	return 0;
}

struct run_packed {
	struct store_conn *c;
	int64_t seq;
};

static int run_packed(void *cls, uint8_t **packed, size_t *len)
{
	const struct run_packed *r = cls;
	int rc = store_run_reference(r->c, r->seq, packed, len);

	return rc == -ENOENT ? 0 : rc; /* (a run gone since it was listed: judged without) */
}

int analysis_run_references(struct store_conn *c, int64_t seq, struct run_ref *x)
{
	struct run_packed r = {c, seq};
	char key[REFCACHE_KEY_LEN];

	snprintf(key, sizeof(key), "%" PRIx64 ":%" PRId64, store_conn_generation(c), seq);
	return analysis_references(key, run_packed, &r, x);
}

void analysis_refcache_counts(uint64_t *hit, uint64_t *miss, size_t *bytes)
{
	pthread_mutex_lock(&lock);
	*hit = hits;
	*miss = misses;
	*bytes = held;
	pthread_mutex_unlock(&lock);
}
