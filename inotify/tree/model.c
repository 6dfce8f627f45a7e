/*
 * model.c - the watched-tree model (see model.h): nodes, their two lookups
 * and the pending-IN_IGNORED ledger, on the core's hash table. Nothing here is
 * recursive, so a deep tree cannot exhaust the stack.
 */
#include "inotify/tree/model.h"
#include "agent/core/list.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct wpend {
    struct hnode node;             /* in tree_model.pend */
    struct wpend *next, *prev;     /* in tree_model.pend_list */
    int wd;
    unsigned due;
};

#define TREE_MODEL_MIN_CAP 64

static uint64_t wd_hash(int wd) { return hash_u64((uint32_t)wd); }

static uint64_t name_hash(const struct tree_node *parent, const char *s, size_t n)
{
    return hash_bytes(hash_bytes(HASH_SEED, &parent, sizeof parent), s, n);
}

int tree_model_init(struct tree_model *t, const char *root, size_t root_len, size_t max_nodes)
{
    memset(t, 0, sizeof *t);
    t->root_path = malloc(root_len + 1);
    if (!t->root_path || hash_init(&t->by_wd, TREE_MODEL_MIN_CAP, 1) < 0 ||
        hash_init(&t->by_name, TREE_MODEL_MIN_CAP, 1) < 0 || hash_init(&t->pend, TREE_MODEL_MIN_CAP, 1) < 0) {
        tree_model_free(t);
        return -1;
    }
    memcpy(t->root_path, root, root_len);
    t->root_path[root_len] = '\0';
    t->root_len = root_len;
    t->max_nodes = max_nodes;
    return 0;
}

void tree_model_free(struct tree_model *t)
{
    if (t->root) tree_model_remove(t, t->root, NULL, NULL);
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

struct tree_node *tree_model_by_wd(const struct tree_model *t, int wd)
{
    struct hnode *it;
    HASH_FOR_EACH(&t->by_wd, wd_hash(wd), it) {
        struct tree_node *n = HASH_ENTRY(it, struct tree_node, wd_node);
        if (n->wd == wd) return n;
    }
    return NULL;
}

struct tree_node *tree_model_child(const struct tree_model *t, const struct tree_node *parent, const char *name, size_t len)
{
    struct hnode *it;
    HASH_FOR_EACH(&t->by_name, name_hash(parent, name, len), it) {
        struct tree_node *n = HASH_ENTRY(it, struct tree_node, name_node);
        if (n->parent == parent && n->name_len == len && !memcmp(n->name, name, len)) return n;
    }
    return NULL;
}

/* Enter n under its parent: the name table and the parent's child list. */
static void name_link(struct tree_model *t, struct tree_node *n)
{
    if (!n->parent) return; /* the root has no name entry */
    hash_add(&t->by_name, &n->name_node, name_hash(n->parent, n->name, n->name_len));
    LIST_PUSH(n->parent->child, n);
}

static void name_unlink(struct tree_model *t, struct tree_node *n)
{
    if (!n->parent) return;
    hash_del(&t->by_name, &n->name_node);
    LIST_UNLINK(n->parent->child, n);
}

/* A copy of name[0..len) (never NUL-terminated, never a NULL for len 0). */
static char *name_dup(const char *name, size_t len)
{
    char *nm = malloc(len ? len : 1);
    if (nm && len) memcpy(nm, name, len);
    return nm;
}

struct tree_node *tree_model_add(struct tree_model *t, struct tree_node *parent, const char *name, size_t len, int wd)
{
    if (t->count >= t->max_nodes) {
        errno = ENOSPC;
        return NULL;
    }
    if (!parent && t->root) {
        errno = EINVAL;
        return NULL;
    }
    struct tree_node *n = calloc(1, sizeof *n);
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

int tree_model_is_ancestor(const struct tree_node *a, const struct tree_node *n)
{
    for (; n; n = n->parent)
        if (n == a) return 1;
    return 0;
}

int tree_model_move(struct tree_model *t, struct tree_node *n, struct tree_node *new_parent, const char *name, size_t len)
{
    if (!n->parent || !new_parent || tree_model_is_ancestor(n, new_parent)) {
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

void tree_model_remove(struct tree_model *t, struct tree_node *top, void (*fn)(const struct tree_node *n, void *ctx), void *ctx)
{
    /* Post-order without recursion: descend to a leaf, remove it, climb. */
    struct tree_node *n = top;
    for (;;) {
        while (n->child) n = n->child;
        struct tree_node *up = n->parent;
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

int tree_model_path(const struct tree_model *t, const struct tree_node *n, const char *name, size_t len, struct buf *out)
{
    /* Measure first, then fill from the end backwards: one pass up the
     * parent chain each, no recursion, no temporary array. */
    size_t rel = 0;
    for (const struct tree_node *p = n; p->parent; p = p->parent) rel += p->name_len + 1;
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
    for (const struct tree_node *p = n; p->parent; p = p->parent) {
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

static struct wpend *pend_find(const struct tree_model *t, int wd)
{
    struct hnode *it;
    HASH_FOR_EACH(&t->pend, wd_hash(wd), it) {
        struct wpend *p = HASH_ENTRY(it, struct wpend, node);
        if (p->wd == wd) return p;
    }
    return NULL;
}

int tree_model_pend_add(struct tree_model *t, int wd)
{
    struct wpend *p = pend_find(t, wd);
    if (p) {
        p->due++;
        return 0;
    }
    if (!(p = malloc(sizeof *p))) return -1;
    p->wd = wd;
    p->due = 1;
    LIST_PUSH(t->pend_list, p);
    hash_add(&t->pend, &p->node, wd_hash(wd));
    return 0;
}

int tree_model_pend_due(const struct tree_model *t, int wd) { return pend_find(t, wd) != NULL; }

int tree_model_pend_take(struct tree_model *t, int wd)
{
    struct wpend *p = pend_find(t, wd);
    if (!p) return 0;
    if (--p->due) return 1;
    hash_del(&t->pend, &p->node);
    LIST_UNLINK(t->pend_list, p);
    free(p);
    return 1;
}
