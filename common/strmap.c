/* Bounded string -> int64 hash map; see strmap.h. FNV-1a hashing, linear probing, the table
 * doubled at 70% load, so a lookup touches few slots and never allocates. */
#include "aw/strmap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct slot {
	char *key; /* NULL: empty */
	uint64_t hash;
	int64_t value;
};

struct aw_strmap {
	struct slot *slots;
	size_t cap; /* power of two, or 0 before the first put */
	size_t count;
	size_t max_entries;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

struct aw_strmap *aw_strmap_new(size_t max_entries)
{
	struct aw_strmap *m = calloc(1, sizeof(*m));

	if (m)
		m->max_entries = max_entries;
	return m;
}

void aw_strmap_clear(struct aw_strmap *m)
{
	for (size_t i = 0; i < m->cap; i++) {
		free(m->slots[i].key);
		m->slots[i].key = NULL;
	}
	m->count = 0;
}

void aw_strmap_free(struct aw_strmap **mp)
{
	struct aw_strmap *m = *mp;

	if (!m)
		return;
	aw_strmap_clear(m);
	free(m->slots);
	free(m);
	*mp = NULL;
}

size_t aw_strmap_count(const struct aw_strmap *m)
{
	return m->count;
}

/* The slot holding `key`, or the empty slot where it would go. cap must be > 0. */
static struct slot *find(struct slot *slots, size_t cap, const char *key, uint64_t h)
{
	size_t i = (size_t)h & (cap - 1);

	for (;;) {
		struct slot *s = &slots[i];

		if (!s->key || (s->hash == h && !strcmp(s->key, key)))
			return s;
		i = (i + 1) & (cap - 1);
	}
}

int aw_strmap_get(const struct aw_strmap *m, const char *key, int64_t *value)
{
	struct slot *s;
	uint64_t h;

	if (!m->count)
		return -ENOENT;
	h = hash_str(key);
	s = find(m->slots, m->cap, key, h);
	if (!s->key)
		return -ENOENT;
	*value = s->value;
	return 0;
}

static int grow(struct aw_strmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->slots[i].key)
			*find(slots, cap, m->slots[i].key, m->slots[i].hash) = m->slots[i];
	}
	free(m->slots);
	m->slots = slots;
	m->cap = cap;
	return 0;
}

int aw_strmap_put(struct aw_strmap *m, const char *key, int64_t value)
{
	uint64_t h = hash_str(key);
	struct slot *s;
	int rc;

	if (m->cap) {
		s = find(m->slots, m->cap, key, h);
		if (s->key) {
			s->value = value;
			return 0;
		}
	}
	if (m->count >= m->max_entries)
		return -ENOSPC;
	if ((m->count + 1) * 10 > m->cap * 7) {
		rc = grow(m);
		if (rc)
			return rc;
	}
	s = find(m->slots, m->cap, key, h);
	s->key = strdup(key);
	if (!s->key)
		return -ENOMEM;
	s->hash = h;
	s->value = value;
	m->count++;
	return 0;
}
