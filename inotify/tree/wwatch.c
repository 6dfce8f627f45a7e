/*
 * wwatch.c - the tree service's watches (see wsync.h): adding one for a
 * directory that appeared, recognising a directory watched already under
 * another name, and dropping a subtree's watches with the IN_IGNORED each
 * one still owes. Decides, for every kernel answer, what the tree becomes.
 */
#include "inotify/tree/wsync_priv.h"
#include "agent/core/log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* ---- dropping watches ---------------------------------------------------- */

struct drop_ctx {
    struct wsync *s;
    int skip_wd;     /* this wd's watch is already gone in the kernel */
    int skip_pend;   /* ... and its IN_IGNORED has been read already */
};

static void drop_one(const struct wnode *n, void *p)
{
    struct drop_ctx *c = p;
    int wd = n->wd;
    c->s->removals++;
    if (n->relist) c->s->relist_marks--;
    if (wd == c->skip_wd) {
        if (c->skip_pend) return;
    } else {
        /* EINVAL when the kernel removed it first: its IN_IGNORED is then
         * still due all the same, exactly one either way. */
        inotify_rm_watch(c->s->fd, wd);
    }
    if (wtree_pend_add(&c->s->t, wd) < 0) log_warn("watch: out of memory tracking removed watches");
}

/* Forget n and everything below it. Their events still queued are recognised
 * by the IN_IGNORED due for each wd and dropped. */
void ws_drop(struct wsync *s, struct wnode *n, int skip_wd, int skip_pend)
{
    struct drop_ctx c = {s, skip_wd, skip_pend};
    wtree_remove(&s->t, n, drop_one, &c);
}

/* Remove the kernel's watch wd, which no node holds, and note its IN_IGNORED. */
static void unwatch(struct wsync *s, int wd)
{
    inotify_rm_watch(s->fd, wd);
    wtree_pend_add(&s->t, wd);
}

/* ---- adding watches ------------------------------------------------------ */

/* Give node n the name (parent, name), making room for it. Returns 0, or -1
 * when that is impossible (a loop: the caller then forgets n). */
int ws_place(struct wsync *s, struct wnode *n, struct wnode *parent, const char *name, size_t len)
{
    struct wnode *there = wtree_child(&s->t, parent, name, len);
    if (there == n) return 0;
    if (there) {
        if (wtree_is_ancestor(there, n)) return -1;
        /* Replaced (rename over an empty directory): the old one is gone. */
        ws_drop(s, there, -1, 0);
    }
    return wtree_move(&s->t, n, parent, name, len);
}

/* inotify_add_watch for the subdirectory at path p. *existing = 1 when the
 * kernel says the directory is watched already. Returns the wd or -1. */
static int add_watch(struct wsync *s, const char *p, int *existing)
{
    *existing = 0;
    int wd = inotify_add_watch(s->fd, p, WSYNC_SUB_FLAGS | s->extra | (s->mask_create ? IN_MASK_CREATE : 0));
    if (wd < 0 && errno == EINVAL && s->mask_create) {
        s->mask_create = 0; /* older kernel: cannot tell new from existing */
        wd = inotify_add_watch(s->fd, p, WSYNC_SUB_FLAGS | s->extra);
    }
    if (wd < 0 && errno == EEXIST) {
        *existing = 1;
        wd = inotify_add_watch(s->fd, p, WSYNC_SUB_FLAGS | s->extra);
    }
    return wd;
}

/* The watch on s->path failed with e. Gone already (ENOENT, ENOTDIR) or a
 * loop is silent; anything else is reported. */
static void add_failed(struct wsync *s, struct wnode *parent, int e)
{
    if (e == ENOENT || e == ENOTDIR) {
        /* Gone already, or the path is stale: a directory above was renamed
         * after this event and before we got to it. Then the parent's own
         * path is gone too, and once the rename's events give it its new name
         * the parent must be listed again. */
        buf_reset(&s->path);
        struct stat st;
        if (!parent->relist && wtree_path(&s->t, parent, NULL, 0, &s->path) == 0 && buf_cstr(&s->path) &&
            lstat(s->path.data, &st) < 0 && parent != s->t.root) {
            parent->relist = 1;
            s->relist_marks++;
        }
        return;
    }
    if (e == ELOOP) return;
    char msg[160];
    snprintf(msg, sizeof msg, "cannot watch: %s%s", strerror(e), e == ENOSPC ? " (inotify watch limit reached)" : "");
    ws_emit(s, IN_Q_OVERFLOW, s->path.data, s->path.len, msg);
}

/* The kernel handed out wd, which node `old` holds already. Returns old when
 * it is the same directory found again (moved to (parent, name)), or NULL:
 * nothing to add (a loop, or ROOT or the parent is the dead one), or, with
 * *fresh = 1, old was a dead watch's leftover, dropped: add a node. */
static struct wnode *reuse(struct wsync *s, struct wnode *old, int wd, int existing, struct wnode *parent,
                           const char *name, size_t len, int *fresh)
{
    *fresh = 0;
    if (existing || !s->mask_create) {
        /* The same directory, already watched: under this name already (its
         * parent's listing and its IN_CREATE both found it), or renamed
         * without our seeing the pair of events. Never a loop (bind mounts). */
        if (old == s->t.root || wtree_is_ancestor(old, parent)) return NULL;
        if (ws_place(s, old, parent, name, len) < 0) return NULL;
        old->moving = 0;
        return old;
    }
    /* A fresh watch reusing the number of one the kernel has dropped (its
     * directory was deleted; the IN_IGNORED is still queued). */
    if (old == s->t.root) {
        inotify_rm_watch(s->fd, wd);
        ws_root_gone(s, "ROOT was deleted");
        return NULL;
    }
    if (wtree_is_ancestor(old, parent)) {
        /* The parent itself is the dead one: nothing to attach to. */
        ws_drop(s, old, wd, 0);
        unwatch(s, wd);
        return NULL;
    }
    ws_drop(s, old, wd, 0);
    *fresh = 1;
    return NULL;
}

/* A new node (parent, name) for the fresh watch wd, or NULL (reported). */
static struct wnode *attach(struct wsync *s, struct wnode *parent, const char *name, size_t len, int wd)
{
    struct wnode *there = wtree_child(&s->t, parent, name, len);
    if (there) ws_drop(s, there, -1, 0); /* a stale entry under the same name */
    struct wnode *n = wtree_add(&s->t, parent, name, len, wd);
    if (n) return n;
    int e = errno;
    unwatch(s, wd);
    char msg[160];
    if (e == ENOSPC)
        snprintf(msg, sizeof msg, "cannot watch: more than %u directories", (unsigned)WSYNC_MAX_NODES);
    else
        snprintf(msg, sizeof msg, "cannot watch: out of memory");
    buf_reset(&s->path);
    if (wtree_path(&s->t, parent, name, len, &s->path) == 0)
        ws_emit(s, IN_Q_OVERFLOW, s->path.data, s->path.len, msg);
    else
        s->ops->lost(s->ctx);
    return NULL;
}

/* Watch the directory `name` in parent. Returns its node and *is_new = 1 when
 * it was not watched before (the caller lists it), the existing node when the
 * kernel says the directory is watched already (found again under a new name:
 * it is moved there), or NULL: vanished (its parent reports that), not a
 * directory, or not watchable (reported, with the reason). */
struct wnode *ws_add_dir(struct wsync *s, struct wnode *parent, const char *name, size_t len, int *is_new)
{
    *is_new = 0;
    buf_reset(&s->path);
    if (wtree_path(&s->t, parent, name, len, &s->path) < 0 || !buf_cstr(&s->path)) {
        s->ops->lost(s->ctx);
        return NULL;
    }
    int existing;
    int wd = add_watch(s, s->path.data, &existing);
    if (wd < 0) {
        add_failed(s, parent, errno);
        return NULL;
    }
    struct wnode *old = wtree_by_wd(&s->t, wd);
    if (old) {
        int fresh;
        struct wnode *same = reuse(s, old, wd, existing, parent, name, len, &fresh);
        if (!fresh) return same;
    }
    struct wnode *n = attach(s, parent, name, len, wd);
    if (n) *is_new = 1;
    return n;
}
