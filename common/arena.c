/* The region allocator of arena.h: blocks of at least 64 KiB carved front to back, larger
 * requests in blocks of their own. */
#include "aw/arena.h"

#include <errno.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_MIN (64u << 10)
#define ALIGN     (alignof(max_align_t))

struct aw_arena_block {
	struct aw_arena_block *next;
	size_t size, off; /* usable bytes after the header, bytes handed out */
	alignas(max_align_t) unsigned char data[];
};

void aw_arena_init(struct aw_arena *a, size_t limit)
{
	a->blocks = NULL;
	a->used = 0;
	a->limit = limit;
	a->rc = 0;
}

void aw_arena_release(struct aw_arena *a)
{
	while (a->blocks) {
		struct aw_arena_block *next = a->blocks->next;

		free(a->blocks);
		a->blocks = next;
	}
	a->used = 0;
	a->rc = 0;
}

static void *fail(struct aw_arena *a, int rc)
{
	if (!a->rc)
		a->rc = rc;
	return NULL;
}

void *aw_arena_alloc(struct aw_arena *a, size_t size)
{
	struct aw_arena_block *b = a->blocks;
	size_t need = (size + ALIGN - 1) & ~(ALIGN - 1), block;
	void *p;

	if (a->rc)
		return NULL;
	if (size > SIZE_MAX / 2)
		return fail(a, -E2BIG);
	if (!need)
		need = ALIGN;
	if (!b || b->size - b->off < need) {
		block = need > BLOCK_MIN ? need : BLOCK_MIN;
		if (a->used + block + sizeof(*b) > a->limit)
			return fail(a, -E2BIG);
		b = malloc(sizeof(*b) + block);
		if (!b)
			return fail(a, -ENOMEM);
		b->size = block;
		b->off = 0;
		a->used += sizeof(*b) + block;
		if (a->blocks && need > BLOCK_MIN) {
			/* a large one-off: keep carving the current block afterwards */
			b->next = a->blocks->next;
			a->blocks->next = b;
		} else {
			b->next = a->blocks;
			a->blocks = b;
		}
	}
	p = b->data + b->off;
	b->off += need;
	memset(p, 0, size);
	return p;
}

char *aw_arena_strndup(struct aw_arena *a, const char *s, size_t n)
{
	size_t len;
	char *copy;

	if (!s)
		return NULL;
	len = strnlen(s, n);
	copy = aw_arena_alloc(a, len + 1);
	if (copy)
		memcpy(copy, s, len);
	return copy;
}

char *aw_arena_strdup(struct aw_arena *a, const char *s)
{
	return aw_arena_strndup(a, s, SIZE_MAX);
}

void *aw_arena_push(struct aw_arena *a, void *items, size_t *n, size_t *cap, size_t size)
{
	unsigned char **array = items;

	if (*n == *cap) {
		size_t grown = *cap ? *cap * 2 : 8;
		unsigned char *moved;

		if (grown > SIZE_MAX / 2 / size)
			return fail(a, -E2BIG);
		moved = aw_arena_alloc(a, grown * size);
		if (!moved)
			return NULL;
		if (*n)
			memcpy(moved, *array, *n * size);
		*array = moved;
		*cap = grown;
	}
	return memset(*array + (*n)++ * size, 0, size);
}
