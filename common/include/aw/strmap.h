/* A string-keyed hash map of int64 values with a hard entry limit (open addressing, linear
 * probing): small caches such as "cell signature -> row id" that must never grow without
 * bound. Not thread-safe; keys are copied. */
#ifndef AW_STRMAP_H
#define AW_STRMAP_H

#include <stddef.h>
#include <stdint.h>

struct aw_strmap;

/* A new empty map that will refuse to hold more than `max_entries` keys. NULL on allocation
 * failure. Free with aw_strmap_free(). */
struct aw_strmap *aw_strmap_new(size_t max_entries);

/* Frees the map and its keys; sets *m to NULL. */
void aw_strmap_free(struct aw_strmap **m);

/* Looks `key` up. Returns 0 with *value set, or -ENOENT. */
int aw_strmap_get(const struct aw_strmap *m, const char *key, int64_t *value);

/* Inserts `key` or replaces its value. Returns 0, -ENOSPC when the map already holds
 * max_entries other keys, or -ENOMEM; on error the map is unchanged. */
int aw_strmap_put(struct aw_strmap *m, const char *key, int64_t value);

/* Removes every key, keeping the table's memory. */
void aw_strmap_clear(struct aw_strmap *m);

size_t aw_strmap_count(const struct aw_strmap *m);

#endif
