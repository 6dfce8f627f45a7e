/*
 * model.h - the watched tree's model: one node per watched directory, found
 * by inotify watch descriptor or by (parent, name), each knowing its parent
 * so that its path is rebuilt from ROOT when an event is delivered. A rename
 * is then one pointer and one name change, and every descendant follows
 * without being touched.
 *
 * Pure bookkeeping: no system calls. inotify/tree/tree.c owns the inotify fd
 * and decides when nodes are added, moved and dropped.
 *
 * The lookups are the core's intrusive table (agent/core/hash.h): each node
 * embeds one hnode per table, hashed with hash_u64 (wd) and with hash_bytes
 * seeded with the parent pointer (name).
 *
 * Bounds: at most `max_nodes` nodes (tree_model_add fails past it); the tables
 * grow with the node count; the pending-IN_IGNORED table holds at most one
 * entry per watch ever removed and not yet acknowledged by the kernel, so it is
 * bounded by the kernel's own watch limit.
 */
#ifndef SA_INOTIFY_TREE_MODEL_H
#define SA_INOTIFY_TREE_MODEL_H

#include "agent/core/buf.h"
#include "agent/core/hash.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tree_node {
    int wd;
    struct hnode wd_node;          /* in tree_model.by_wd */
    struct hnode name_node;        /* in tree_model.by_name (not the root) */
    struct tree_node *parent;          /* NULL for the root only */
    struct tree_node *child;           /* first child */
    struct tree_node *next, *prev;     /* siblings */
    char *name;                    /* not NUL-terminated; the root's is empty */
    size_t name_len;
    dev_t dev;                     /* the directory's identity (not the root's: */
    ino_t ino;                     /* ROOT is taken as named); set by the caller */
    uint32_t cookie;               /* IN_MOVED_FROM cookie while `moving` */
    unsigned char moving;          /* renamed away, destination not seen yet */
    unsigned char move_sure;       /* ... while its place was in step (sure_at) */
    unsigned long sure_at;         /* its place is in step with the events once
                                    * the service's barrier number sure_at is
                                    * read (0 after tree_model_add; set by the caller) */
    unsigned char relist;          /* a subdirectory could not be watched, or the
                                    * listing was cut short, because the path was
                                    * stale: list again once renamed */
};

struct wpend; /* a wd whose IN_IGNORED is still due */

struct tree_model {
    struct tree_node *root;
    char *root_path;
    size_t root_len;
    struct htab by_wd;             /* every node */
    struct htab by_name;           /* every node but the root */
    struct htab pend;              /* struct wpend, by wd; .count entries */
    struct wpend *pend_list;       /* the same entries, for tree_model_free */
    size_t count;
    size_t max_nodes;
    uint32_t extra;                /* events watched for beyond TREE_EVENT_REPORTED (tree_set_extra,
                                    * tree_set_admit; 0 after tree_model_init) */
};

/* Empty tree whose root directory is spelt `root` (kept byte for byte: paths
 * are joined from it as os.path.join does). Returns 0 or -1 (no memory; the
 * tree is then zeroed, and tree_model_free is a no-op on it). */
int tree_model_init(struct tree_model *t, const char *root, size_t root_len, size_t max_nodes);
void tree_model_free(struct tree_model *t);

struct tree_node *tree_model_by_wd(const struct tree_model *t, int wd);
struct tree_node *tree_model_child(const struct tree_model *t, const struct tree_node *parent, const char *name, size_t n);

/* Add a node. parent NULL adds the root (only once). The caller has made sure
 * that neither `wd` nor (parent, name) is taken. Returns the node, or NULL when
 * the tree is full (errno ENOSPC) or memory ran out (ENOMEM). */
struct tree_node *tree_model_add(struct tree_model *t, struct tree_node *parent, const char *name, size_t n, int wd);

/* Rename: n becomes the child `name` of new_parent. The caller has made sure
 * (new_parent, name) is free. Returns 0, or -1 when new_parent lies inside n's
 * own subtree (EINVAL) or memory ran out (ENOMEM); n is unchanged then. */
int tree_model_move(struct tree_model *t, struct tree_node *n, struct tree_node *new_parent, const char *name, size_t len);

/* 1 when `a` is n or one of its ancestors. */
int tree_model_is_ancestor(const struct tree_node *a, const struct tree_node *n);

/* Remove n and its whole subtree, calling fn(node, ctx) for each node just
 * before it is freed (descendants first; the node is already out of both
 * tables). Removing the root is allowed and leaves t->root NULL. */
void tree_model_remove(struct tree_model *t, struct tree_node *n, void (*fn)(const struct tree_node *n, void *ctx), void *ctx);

/* Append the path of n, joined with `name` when n > 0 (os.path.join rules:
 * one "/" between parts unless the left part already ends with one).
 * Returns 0 or -1 (the buffer's bound). */
int tree_model_path(const struct tree_model *t, const struct tree_node *n, const char *name, size_t len, struct buf *out);

/* The IN_IGNORED bookkeeping: a removed watch whose IN_IGNORED has not been
 * read yet. While one is due for a wd, events carrying that wd belong to the
 * old watch (the kernel queues the IN_IGNORED before it can hand the number
 * out again). pend_add returns 0 or -1 (no memory). pend_due tells whether one
 * is due; pend_take consumes one and returns 1 if there was one. */
int tree_model_pend_add(struct tree_model *t, int wd);
int tree_model_pend_due(const struct tree_model *t, int wd);
int tree_model_pend_take(struct tree_model *t, int wd);

#endif
