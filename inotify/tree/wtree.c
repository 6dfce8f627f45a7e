/*
 * wtree.c - the watched-tree model (see wtree.h). Chained hash tables that
 * double when they reach one entry per bucket; nothing here is recursive, so a
 * deep tree cannot exhaust the stack.
 */
#include "inotify/tree/wtree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct wpend {
    int wd;
    unsigned due;
    struct wpend *next;
};

#define WTREE_MIN_CAP 64

static size_t wd_hash(int wd) { return (size_t)((uint32_t)wd * 2654435761u); }

static size_t name_hash(const struct wnode *parent, const char *s, size_t n)
{
    /* FNV-1a over the name, seeded with the parent's address. */
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)parent;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return (size_t)(h ^ (h >> 29));
}

int wtree_init(struct wtree *t, const char *root, size_t root_len, size_t max_nodes)
{
    memset(t, 0, sizeof *t);
    t->root_path = malloc(root_len + 1);
    t->by_wd = calloc(WTREE_MIN_CAP, sizeof *t->by_wd);
    t->by_name = calloc(WTREE_MIN_CAP, sizeof *t->by_name);
    t->pend = calloc(WTREE_MIN_CAP, sizeof *t->pend);
    if (!t->root_path || !t->by_wd || !t->by_name || !t->pend) {
        wtree_free(t);
        return -1;
    }
    memcpy(t->root_path, root, root_len);
    t->root_path[root_len] = '\0';
    t->root_len = root_len;
    t->wd_cap = t->name_cap = t->pend_cap = WTREE_MIN_CAP;
    t->max_nodes = max_nodes;
    return 0;
}

static void free_node(struct wnode *n)
{
    free(n->name);
    free(n);
}

void wtree_free(struct wtree *t)
{
    if (t->by_wd) {
        for (size_t i = 0; i < t->wd_cap; i++) {
            struct wnode *n = t->by_wd[i];
            while (n) {
                struct wnode *nx = n->wd_next;
                free_node(n);
                n = nx;
            }
        }
    }
    if (t->pend) {
        for (size_t i = 0; i < t->pend_cap; i++) {
            struct wpend *p = t->pend[i];
            while (p) {
                struct wpend *nx = p->next;
                free(p);
                p = nx;
            }
        }
    }
    free(t->by_wd);
    free(t->by_name);
    free(t->pend);
    free(t->root_path);
    memset(t, 0, sizeof *t);
}

struct wnode *wtree_by_wd(const struct wtree *t, int wd)
{
    struct wnode *n = t->by_wd[wd_hash(wd) & (t->wd_cap - 1)];
    while (n && n->wd != wd) n = n->wd_next;
    return n;
}

struct wnode *wtree_child(const struct wtree *t, const struct wnode *parent, const char *name, size_t len)
{
    struct wnode *n = t->by_name[name_hash(parent, name, len) & (t->name_cap - 1)];
    for (; n; n = n->name_next)
        if (n->parent == parent && n->name_len == len && !memcmp(n->name, name, len)) return n;
    return NULL;
}

/* Both tables are rebuilt at twice the size once they hold one node per bucket. */
static int grow(struct wtree *t)
{
    if (t->count < t->wd_cap) return 0;
    size_t cap = t->wd_cap * 2;
    struct wnode **w = calloc(cap, sizeof *w), **nm = calloc(cap, sizeof *nm);
    if (!w || !nm) {
        free(w);
        free(nm);
        return -1;
    }
    for (size_t i = 0; i < t->wd_cap; i++) {
        struct wnode *n = t->by_wd[i];
        while (n) {
            struct wnode *nx = n->wd_next;
            size_t h = wd_hash(n->wd) & (cap - 1);
            n->wd_next = w[h];
            w[h] = n;
            n = nx;
        }
    }
    for (size_t i = 0; i < t->name_cap; i++) {
        struct wnode *n = t->by_name[i];
        while (n) {
            struct wnode *nx = n->name_next;
            size_t h = name_hash(n->parent, n->name, n->name_len) & (cap - 1);
            n->name_next = nm[h];
            nm[h] = n;
            n = nx;
        }
    }
    free(t->by_wd);
    free(t->by_name);
    t->by_wd = w;
    t->by_name = nm;
    t->wd_cap = t->name_cap = cap;
    return 0;
}

static void name_link(struct wtree *t, struct wnode *n)
{
    if (!n->parent) return; /* the root has no name entry */
    size_t h = name_hash(n->parent, n->name, n->name_len) & (t->name_cap - 1);
    n->name_next = t->by_name[h];
    t->by_name[h] = n;
    n->prev = NULL;
    n->next = n->parent->child;
    if (n->next) n->next->prev = n;
    n->parent->child = n;
}

static void name_unlink(struct wtree *t, struct wnode *n)
{
    if (!n->parent) return;
    struct wnode **pp = &t->by_name[name_hash(n->parent, n->name, n->name_len) & (t->name_cap - 1)];
    while (*pp && *pp != n) pp = &(*pp)->name_next;
    if (*pp) *pp = n->name_next;
    n->name_next = NULL;
    if (n->prev) n->prev->next = n->next;
    else n->parent->child = n->next;
    if (n->next) n->next->prev = n->prev;
    n->next = n->prev = NULL;
}

struct wnode *wtree_add(struct wtree *t, struct wnode *parent, const char *name, size_t len, int wd)
{
    if (t->count >= t->max_nodes) {
        errno = ENOSPC;
        return NULL;
    }
    if (!parent && t->root) {
        errno = EINVAL;
        return NULL;
    }
    if (grow(t) < 0) {
        errno = ENOMEM;
        return NULL;
    }
    struct wnode *n = calloc(1, sizeof *n);
    char *nm = malloc(len ? len : 1);
    if (!n || !nm) {
        free(n);
        free(nm);
        errno = ENOMEM;
        return NULL;
    }
    if (len) memcpy(nm, name, len);
    n->name = nm;
    n->name_len = parent ? len : 0;
    n->wd = wd;
    n->parent = parent;
    size_t h = wd_hash(wd) & (t->wd_cap - 1);
    n->wd_next = t->by_wd[h];
    t->by_wd[h] = n;
    name_link(t, n);
    if (!parent) t->root = n;
    t->count++;
    return n;
}

int wtree_is_ancestor(const struct wnode *a, const struct wnode *n)
{
    for (; n; n = n->parent)
        if (n == a) return 1;
    return 0;
}

int wtree_move(struct wtree *t, struct wnode *n, struct wnode *new_parent, const char *name, size_t len)
{
    if (!n->parent || !new_parent || wtree_is_ancestor(n, new_parent)) {
        errno = EINVAL;
        return -1;
    }
    char *nm = malloc(len ? len : 1);
    if (!nm) {
        errno = ENOMEM;
        return -1;
    }
    if (len) memcpy(nm, name, len);
    name_unlink(t, n);
    free(n->name);
    n->name = nm;
    n->name_len = len;
    n->parent = new_parent;
    name_link(t, n);
    return 0;
}

static void wd_unlink(struct wtree *t, struct wnode *n)
{
    struct wnode **pp = &t->by_wd[wd_hash(n->wd) & (t->wd_cap - 1)];
    while (*pp && *pp != n) pp = &(*pp)->wd_next;
    if (*pp) *pp = n->wd_next;
}

void wtree_remove(struct wtree *t, struct wnode *top, void (*fn)(const struct wnode *n, void *ctx), void *ctx)
{
    /* Post-order without recursion: descend to a leaf, remove it, climb. */
    struct wnode *n = top;
    for (;;) {
        while (n->child) n = n->child;
        struct wnode *up = n->parent;
        int last = n == top;
        name_unlink(t, n);
        wd_unlink(t, n);
        if (n == t->root) t->root = NULL;
        t->count--;
        if (fn) fn(n, ctx);
        free_node(n);
        if (last) return;
        n = up;
    }
}

int wtree_path(const struct wtree *t, const struct wnode *n, const char *name, size_t len, struct buf *out)
{
    /* Measure first, then fill from the end backwards: one pass up the
     * parent chain each, no recursion, no temporary array. */
    size_t rel = 0;
    for (const struct wnode *p = n; p->parent; p = p->parent) rel += p->name_len + 1;
    if (len) rel += len + 1;
    if (rel == 0) return buf_append(out, t->root_path, t->root_len);
    int slash = t->root_len > 0 && t->root_path[t->root_len - 1] == '/';
    size_t total = t->root_len + rel - (slash ? 1 : 0);
    if (buf_reserve(out, total) < 0) return -1;
    char *base = out->data + out->len;
    char *e = base + total;
    if (len) {
        e -= len;
        memcpy(e, name, len);
        *--e = '/';
    }
    for (const struct wnode *p = n; p->parent; p = p->parent) {
        e -= p->name_len;
        memcpy(e, p->name, p->name_len);
        *--e = '/';
    }
    /* With slash, the first '/' written lands on the root's own trailing
     * slash, which the copy below writes again. */
    memcpy(base, t->root_path, t->root_len);
    out->len += total;
    return 0;
}

static struct wpend **pend_slot(const struct wtree *t, int wd)
{
    struct wpend **pp = &t->pend[wd_hash(wd) & (t->pend_cap - 1)];
    while (*pp && (*pp)->wd != wd) pp = &(*pp)->next;
    return pp;
}

int wtree_pend_add(struct wtree *t, int wd)
{
    struct wpend **pp = pend_slot(t, wd);
    if (*pp) {
        (*pp)->due++;
        return 0;
    }
    if (t->pend_count >= t->pend_cap) {
        size_t cap = t->pend_cap * 2;
        struct wpend **np = calloc(cap, sizeof *np);
        if (!np) return -1;
        for (size_t i = 0; i < t->pend_cap; i++) {
            struct wpend *p = t->pend[i];
            while (p) {
                struct wpend *nx = p->next;
                size_t h = wd_hash(p->wd) & (cap - 1);
                p->next = np[h];
                np[h] = p;
                p = nx;
            }
        }
        free(t->pend);
        t->pend = np;
        t->pend_cap = cap;
        pp = pend_slot(t, wd);
    }
    struct wpend *p = malloc(sizeof *p);
    if (!p) return -1;
    p->wd = wd;
    p->due = 1;
    p->next = NULL;
    *pp = p;
    t->pend_count++;
    return 0;
}

int wtree_pend_due(const struct wtree *t, int wd) { return *pend_slot(t, wd) != NULL; }

int wtree_pend_take(struct wtree *t, int wd)
{
    struct wpend **pp = pend_slot(t, wd);
    struct wpend *p = *pp;
    if (!p) return 0;
    if (--p->due == 0) {
        *pp = p->next;
        free(p);
        t->pend_count--;
    }
    return 1;
}
