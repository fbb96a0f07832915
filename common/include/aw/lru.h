/* A least-recently-used order for the process's caches (collector/analysis/refcache.c,
 * collector/store/cache.c): an intrusive doubly linked list, its head a node of its own
 * (AW_LRU_HEAD), the least recently used at head.next. The caller holds whatever lock guards
 * the cache. */
#ifndef AW_LRU_H
#define AW_LRU_H

#include <stdbool.h>

struct aw_lru {
	struct aw_lru *prev, *next;
};

#define AW_LRU_HEAD(name) struct aw_lru name = {&name, &name}

static inline void aw_lru_unlink(struct aw_lru *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
}

/* Appends n as the most recently used. */
static inline void aw_lru_push(struct aw_lru *head, struct aw_lru *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline bool aw_lru_empty(const struct aw_lru *head)
{
	return head->next == head;
}

#endif
