/* A region allocator for the data of one page or one chart: the strings and arrays copied out of
 * store callbacks (valid only during the call) live until the page or chart is done, and are
 * freed at once. A hard limit bounds what one request or task may hold. */
#ifndef AW_ARENA_H
#define AW_ARENA_H

#include <stddef.h>

struct aw_arena_block;

struct aw_arena {
	struct aw_arena_block *blocks;
	size_t used;  /* bytes handed out and wasted in blocks, headers included */
	size_t limit; /* most bytes of blocks the arena may hold */
	int rc;       /* the first failure (-ENOMEM, -E2BIG), sticky; 0 while all went well */
};

/* Prepares an empty arena that will refuse to hold more than `limit` bytes. */
void aw_arena_init(struct aw_arena *a, size_t limit);

/* Frees every block; the arena is empty (and reusable with the same limit, its rc cleared). */
void aw_arena_release(struct aw_arena *a);

/* `size` zeroed bytes aligned for any type, valid until the release. Returns NULL (and sets
 * a->rc) when out of memory or over the limit. */
void *aw_arena_alloc(struct aw_arena *a, size_t size);

/* A copy of `s`; NULL for NULL, or (with a->rc set) on failure. */
char *aw_arena_strdup(struct aw_arena *a, const char *s);

/* A copy of at most `n` bytes of `s`; NULL for NULL, or (with a->rc set) on failure. */
char *aw_arena_strndup(struct aw_arena *a, const char *s, size_t n);

/* Appends a zeroed element of `size` bytes to the array *items holding *n of *cap, moving it
 * to a twice larger allocation when full (the old one stays in the arena until the release).
 * Returns the new element (and counts it in *n), or NULL with a->rc set. */
void *aw_arena_push(struct aw_arena *a, void *items, size_t *n, size_t *cap, size_t size);

#endif
