/*
 * hash.h - the agent's one hash table: intrusive, chained, power-of-two
 * buckets, FNV-1a for byte keys.
 *
 * Intrusive: the caller embeds a `struct hnode` in its own record and keeps
 * the key there; the table stores each node's full hash, so a lookup walks
 * only the nodes of equal hash and the caller compares keys itself
 * (HASH_FOR_EACH). Nothing is copied and nothing is freed here but the bucket
 * array. Growth doubles the buckets once there is one node per bucket; a table
 * made with grow = 0 keeps its size (fixed memory, for bounded windows). A
 * failed growth is not an error: the table keeps working at its current size.
 *
 * Used by the session's request table and duplicate window, the watcher's
 * tree (by watch descriptor, by parent and name) and mcp-status (duplicate
 * names).
 */
#ifndef SA_CORE_HASH_H
#define SA_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

struct hnode {
    struct hnode *next;
    uint64_t hash;
};

struct htab {
    struct hnode **b;
    size_t cap;    /* buckets, a power of two */
    size_t count;  /* nodes */
    int grow;
};

/* FNV-1a over p[0..n), continuing from h (start with HASH_SEED). */
#define HASH_SEED 14695981039346656037ull
uint64_t hash_bytes(uint64_t h, const void *p, size_t n);
/* A well-mixed hash of an integer key (watch descriptors, pointers). */
uint64_t hash_u64(uint64_t v);

/* Room for about `hint` nodes before the first growth. Returns 0, or -1
 * when out of memory. */
int hash_init(struct htab *t, size_t hint, int grow);
/* Frees the bucket array only; the nodes belong to the caller. */
void hash_free(struct htab *t);
/* Link n under hash h (duplicates are the caller's business). */
void hash_add(struct htab *t, struct hnode *n, uint64_t h);
/* Unlink n, which must be in the table. */
void hash_del(struct htab *t, struct hnode *n);
/* The first node of hash h, and the next one of the same hash after n. */
struct hnode *hash_first(const struct htab *t, uint64_t h);
struct hnode *hash_next(const struct hnode *n);

/* The record holding node pointer p, whose hnode member is `member`. */
#define HASH_ENTRY(p, type, member) ((type *)(void *)((char *)(p) - offsetof(type, member)))
/* Walk the nodes of hash h: `it` is a struct hnode * variable. */
#define HASH_FOR_EACH(t, h, it) for ((it) = hash_first((t), (h)); (it); (it) = hash_next(it))

#endif
