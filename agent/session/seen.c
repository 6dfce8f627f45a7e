/*
 * seen.c - a fixed window of recent ids (see seen.h).
 */
#include "agent/session/seen.h"
#include "agent/session/msgline.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct seen_slot {
    char id[MSG_ID_MAX];
    uint8_t len;
    int32_t next;   /* next slot in the same bucket, -1 ends */
    uint32_t hash;
};

struct seen {
    size_t window, count, oldest, nbuckets;
    int32_t *buckets;
    struct seen_slot *slots;
};

static uint32_t hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

struct seen *seen_new(size_t window)
{
    if (window == 0 || window >= 32768) return NULL;
    struct seen *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->window = window;
    s->nbuckets = 1;
    while (s->nbuckets < window * 2) s->nbuckets <<= 1;
    s->buckets = malloc(s->nbuckets * sizeof *s->buckets);
    s->slots = calloc(window, sizeof *s->slots);
    if (!s->buckets || !s->slots) {
        seen_free(s);
        return NULL;
    }
    for (size_t i = 0; i < s->nbuckets; i++) s->buckets[i] = -1;
    return s;
}

void seen_free(struct seen *s)
{
    if (!s) return;
    free(s->buckets);
    free(s->slots);
    free(s);
}

static int32_t find(const struct seen *s, const char *id, size_t n, uint32_t h)
{
    for (int32_t k = s->buckets[h & (s->nbuckets - 1)]; k >= 0; k = s->slots[k].next) {
        const struct seen_slot *e = &s->slots[k];
        if (e->hash == h && e->len == n && !memcmp(e->id, id, n)) return k;
    }
    return -1;
}

int seen_contains(const struct seen *s, const char *id, size_t n)
{
    if (n == 0 || n > MSG_ID_MAX) return 0;
    return find(s, id, n, hash(id, n)) >= 0;
}

static void unlink_slot(struct seen *s, int32_t k)
{
    int32_t *pp = &s->buckets[s->slots[k].hash & (s->nbuckets - 1)];
    while (*pp >= 0 && *pp != k) pp = &s->slots[*pp].next;
    if (*pp == k) *pp = s->slots[k].next;
}

int seen_check_add(struct seen *s, const char *id, size_t n)
{
    if (n == 0 || n > MSG_ID_MAX) return 0;
    uint32_t h = hash(id, n);
    if (find(s, id, n, h) >= 0) return 1;
    int32_t k;
    if (s->count < s->window) {
        k = (int32_t)s->count++;
    } else {
        /* Full: the oldest slot is reused; the ring order is slot order. */
        k = (int32_t)s->oldest;
        unlink_slot(s, k);
        s->oldest = (s->oldest + 1) % s->window;
    }
    struct seen_slot *e = &s->slots[k];
    memcpy(e->id, id, n);
    e->len = (uint8_t)n;
    e->hash = h;
    size_t b = h & (s->nbuckets - 1);
    e->next = s->buckets[b];
    s->buckets[b] = k;
    return 0;
}
