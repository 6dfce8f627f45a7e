/*
 * seen.c - a fixed window of recent ids (see seen.h).
 *
 * Owns the ring of slots (one allocation of `window` slots) and the index
 * over it; the index's buckets are sized once, for two per slot.
 */
#include "agent/session/seen.h"
#include "agent/core/hash.h"
#include "agent/session/msgline.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct seen_slot {
    struct hnode hn;
    uint8_t len;
    char id[MSG_ID_MAX];
};

struct seen {
    size_t window, count, oldest;
    struct htab index;
    struct seen_slot *slots;
};

static uint64_t id_hash(const char *id, size_t n) { return hash_bytes(HASH_SEED, id, n); }

struct seen *seen_new(size_t window)
{
    if (window == 0 || window >= 32768) return NULL;
    struct seen *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->window = window;
    s->slots = calloc(window, sizeof *s->slots);
    if (!s->slots || hash_init(&s->index, window * 2, 0) < 0) {
        seen_free(s);
        return NULL;
    }
    return s;
}

void seen_free(struct seen *s)
{
    if (!s) return;
    hash_free(&s->index);
    free(s->slots);
    free(s);
}

static const struct seen_slot *find(const struct seen *s, const char *id, size_t n, uint64_t h)
{
    struct hnode *it;
    HASH_FOR_EACH(&s->index, h, it) {
        const struct seen_slot *e = HASH_ENTRY(it, struct seen_slot, hn);
        if (e->len == n && !memcmp(e->id, id, n)) return e;
    }
    return NULL;
}

int seen_contains(const struct seen *s, const char *id, size_t n)
{
    if (n == 0 || n > MSG_ID_MAX) return 0;
    return find(s, id, n, id_hash(id, n)) != NULL;
}

int seen_check_add(struct seen *s, const char *id, size_t n)
{
    if (n == 0 || n > MSG_ID_MAX) return 0;
    uint64_t h = id_hash(id, n);
    if (find(s, id, n, h)) return 1;
    struct seen_slot *e;
    if (s->count < s->window) {
        e = &s->slots[s->count++];
    } else {
        /* Full: the oldest slot is reused; the ring order is slot order. */
        e = &s->slots[s->oldest];
        hash_del(&s->index, &e->hn);
        s->oldest = (s->oldest + 1) % s->window;
    }
    memcpy(e->id, id, n);
    e->len = (uint8_t)n;
    hash_add(&s->index, &e->hn, h);
    return 0;
}
