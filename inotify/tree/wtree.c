/*
 * wtree.c - the watched-tree model (see wtree.h): nodes, their two lookups
 * and the pending-IN_IGNORED ledger, on the core's hash table. Nothing here is
 * recursive, so a deep tree cannot exhaust the stack.
 */
#include "inotify/tree/wtree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct wpend {
    struct hnode node;             /* in wtree.pend */
    struct wpend *next, *prev;     /* in wtree.pend_list */
    int wd;
    unsigned due;
};

#define WTREE_MIN_CAP 64

static uint64_t wd_hash(int wd) { return hash_u64((uint32_t)wd); }

static uint64_t name_hash(const struct wnode *parent, const char *s, size_t n)
{
    return hash_bytes(hash_bytes(HASH_SEED, &parent, sizeof parent), s, n);
}

int wtree_init(struct wtree *t, const char *root, size_t root_len, size_t max_nodes)
{
    memset(t, 0, sizeof *t);
    t->root_path = malloc(root_len + 1);
    if (!t->root_path || hash_init(&t->by_wd, WTREE_MIN_CAP, 1) < 0 ||
        hash_init(&t->by_name, WTREE_MIN_CAP, 1) < 0 || hash_init(&t->pend, WTREE_MIN_CAP, 1) < 0) {
        wtree_free(t);
        return -1;
    }
    memcpy(t->root_path, root, root_len);
    t->root_path[root_len] = '\0';
    t->root_len = root_len;
    t->max_nodes = max_nodes;
    return 0;
}

void wtree_free(struct wtree *t)
{
    if (t->root) wtree_remove(t, t->root, NULL, NULL);
    while (t->pend_list) {
        struct wpend *p = t->pend_list;
        t->pend_list = p->next;
        free(p);
    }
    hash_free(&t->by_wd);
    hash_free(&t->by_name);
    hash_free(&t->pend);
    free(t->root_path);
    memset(t, 0, sizeof *t);
}

struct wnode *wtree_by_wd(const struct wtree *t, int wd)
{
    struct hnode *it;
    HASH_FOR_EACH(&t->by_wd, wd_hash(wd), it) {
        struct wnode *n = HASH_ENTRY(it, struct wnode, wd_node);
        if (n->wd == wd) return n;
    }
    return NULL;
}

struct wnode *wtree_child(const struct wtree *t, const struct wnode *parent, const char *name, size_t len)
{
    struct hnode *it;
    HASH_FOR_EACH(&t->by_name, name_hash(parent, name, len), it) {
        struct wnode *n = HASH_ENTRY(it, struct wnode, name_node);
        if (n->parent == parent && n->name_len == len && !memcmp(n->name, name, len)) return n;
    }
    return NULL;
}

/* Enter n under its parent: the name table and the parent's child list. */
static void name_link(struct wtree *t, struct wnode *n)
{
    if (!n->parent) return; /* the root has no name entry */
    hash_add(&t->by_name, &n->name_node, name_hash(n->parent, n->name, n->name_len));
    n->prev = NULL;
    n->next = n->parent->child;
    if (n->next) n->next->prev = n;
    n->parent->child = n;
}

static void name_unlink(struct wtree *t, struct wnode *n)
{
    if (!n->parent) return;
    hash_del(&t->by_name, &n->name_node);
    if (n->prev) n->prev->next = n->next;
    else n->parent->child = n->next;
    if (n->next) n->next->prev = n->prev;
    n->next = n->prev = NULL;
}

/* A copy of name[0..len) (never NUL-terminated, never a NULL for len 0). */
static char *name_dup(const char *name, size_t len)
{
    char *nm = malloc(len ? len : 1);
    if (nm && len) memcpy(nm, name, len);
    return nm;
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
    struct wnode *n = calloc(1, sizeof *n);
    char *nm = name_dup(name, len);
    if (!n || !nm) {
        free(n);
        free(nm);
        errno = ENOMEM;
        return NULL;
    }
    n->name = nm;
    n->name_len = parent ? len : 0;
    n->wd = wd;
    n->parent = parent;
    hash_add(&t->by_wd, &n->wd_node, wd_hash(wd));
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
    char *nm = name_dup(name, len);
    if (!nm) {
        errno = ENOMEM;
        return -1;
    }
    name_unlink(t, n);
    free(n->name);
    n->name = nm;
    n->name_len = len;
    n->parent = new_parent;
    name_link(t, n);
    return 0;
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
        hash_del(&t->by_wd, &n->wd_node);
        if (n == t->root) t->root = NULL;
        t->count--;
        if (fn) fn(n, ctx);
        free(n->name);
        free(n);
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

/* ---- the IN_IGNORED ledger ------------------------------------------------ */

static struct wpend *pend_find(const struct wtree *t, int wd)
{
    struct hnode *it;
    HASH_FOR_EACH(&t->pend, wd_hash(wd), it) {
        struct wpend *p = HASH_ENTRY(it, struct wpend, node);
        if (p->wd == wd) return p;
    }
    return NULL;
}

int wtree_pend_add(struct wtree *t, int wd)
{
    struct wpend *p = pend_find(t, wd);
    if (p) {
        p->due++;
        return 0;
    }
    if (!(p = malloc(sizeof *p))) return -1;
    p->wd = wd;
    p->due = 1;
    p->prev = NULL;
    p->next = t->pend_list;
    if (p->next) p->next->prev = p;
    t->pend_list = p;
    hash_add(&t->pend, &p->node, wd_hash(wd));
    return 0;
}

int wtree_pend_due(const struct wtree *t, int wd) { return pend_find(t, wd) != NULL; }

int wtree_pend_take(struct wtree *t, int wd)
{
    struct wpend *p = pend_find(t, wd);
    if (!p) return 0;
    if (--p->due) return 1;
    hash_del(&t->pend, &p->node);
    if (p->prev) p->prev->next = p->next;
    else t->pend_list = p->next;
    if (p->next) p->next->prev = p->prev;
    free(p);
    return 1;
}
