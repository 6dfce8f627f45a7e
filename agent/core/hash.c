/*
 * hash.c - the intrusive hash table (see hash.h).
 */
#include "agent/core/hash.h"

#include <stdlib.h>

uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

uint64_t hash_u64(uint64_t v)
{
    /* splitmix64's finaliser: every input bit reaches every output bit. */
    v ^= v >> 30;
    v *= 0xbf58476d1ce4e5b9ull;
    v ^= v >> 27;
    v *= 0x94d049bb133111ebull;
    return v ^ (v >> 31);
}

int hash_init(struct htab *t, size_t hint, int grow)
{
    size_t cap = 16;
    while (cap < hint && cap < ((size_t)1 << 40)) cap <<= 1;
    t->b = calloc(cap, sizeof *t->b);
    if (!t->b) return -1;
    t->cap = cap;
    t->count = 0;
    t->grow = grow;
    return 0;
}

void hash_free(struct htab *t)
{
    free(t->b);
    t->b = NULL;
    t->cap = t->count = 0;
}

static void rehash(struct htab *t)
{
    size_t cap = t->cap * 2;
    struct hnode **b = calloc(cap, sizeof *b);
    if (!b) return; /* keep working at the current size */
    for (size_t i = 0; i < t->cap; i++) {
        struct hnode *n = t->b[i], *next;
        for (; n; n = next) {
            next = n->next;
            struct hnode **head = &b[n->hash & (cap - 1)];
            n->next = *head;
            *head = n;
        }
    }
    free(t->b);
    t->b = b;
    t->cap = cap;
}

void hash_add(struct htab *t, struct hnode *n, uint64_t h)
{
    if (t->grow && t->count >= t->cap) rehash(t);
    struct hnode **head = &t->b[h & (t->cap - 1)];
    n->hash = h;
    n->next = *head;
    *head = n;
    t->count++;
}

void hash_del(struct htab *t, struct hnode *n)
{
    struct hnode **pp = &t->b[n->hash & (t->cap - 1)];
    while (*pp && *pp != n) pp = &(*pp)->next;
    if (!*pp) return;
    *pp = n->next;
    n->next = NULL;
    t->count--;
}

static struct hnode *same_hash(struct hnode *n, uint64_t h)
{
    while (n && n->hash != h) n = n->next;
    return n;
}

struct hnode *hash_first(const struct htab *t, uint64_t h)
{
    return same_hash(t->b[h & (t->cap - 1)], h);
}

struct hnode *hash_next(const struct hnode *n) { return same_hash(n->next, n->hash); }
