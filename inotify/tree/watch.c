/*
 * watch.c - the tree service's watches (see tree.h): adding one for a
 * directory that appeared, recognising a directory watched already under
 * another name, following a rename only once the inode at the new name is
 * the one renamed, and dropping a subtree's watches with the IN_IGNORED each
 * one still owes. Decides, for every kernel answer, what the tree becomes;
 * asks the front-end's admit (tree_set_admit) before a directory is watched.
 */
#include "inotify/tree/tree_priv.h"
#include "agent/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- dropping watches ---------------------------------------------------- */

struct drop_ctx {
    struct tree *s;
    int skip_wd;     /* this wd's watch is already gone in the kernel */
    int skip_pend;   /* ... and its IN_IGNORED has been read already */
};

static void drop_one(const struct tree_node *n, void *p)
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
    if (tree_model_pend_add(&c->s->t, wd) < 0) log_warn("watch: out of memory tracking removed watches");
}

/* Forget n and everything below it. Their events still queued are recognised
 * by the IN_IGNORED due for each wd and dropped. */
void tree_watch_drop(struct tree *s, struct tree_node *n, int skip_wd, int skip_pend)
{
    struct drop_ctx c = {s, skip_wd, skip_pend};
    tree_model_remove(&s->t, n, drop_one, &c);
}

/* Remove the kernel's watch wd, which no node holds, and note its IN_IGNORED. */
static void unwatch(struct tree *s, int wd)
{
    inotify_rm_watch(s->fd, wd);
    tree_model_pend_add(&s->t, wd);
}

/* ---- adding watches ------------------------------------------------------ */

/* Give node n the name (parent, name), making room for it. Returns 0, or -1
 * when that is impossible (a loop: the caller then forgets n). */
int tree_watch_place(struct tree *s, struct tree_node *n, struct tree_node *parent, const char *name, size_t len)
{
    struct tree_node *there = tree_model_child(&s->t, parent, name, len);
    if (there == n) return 0;
    if (there) {
        if (tree_model_is_ancestor(there, n)) return -1;
        /* Replaced (rename over an empty directory): the old one is gone. */
        tree_watch_drop(s, there, -1, 0);
    }
    return tree_model_move(&s->t, n, parent, name, len);
}

/* inotify_add_watch for the directory open as fd, (parent, name). *existing
 * = 1 when the kernel says it is watched already. Returns the wd or -1. */
static int add_watch(struct tree *s, int fd, const struct tree_node *parent, const char *name, size_t len,
                     int *existing)
{
    *existing = 0;
    int wd = tree_probe_watch_fd(s, fd, parent, name, len, TREE_SUB_FLAGS | s->wextra | (s->mask_create ? IN_MASK_CREATE : 0));
    if (wd < 0 && errno == EINVAL && s->mask_create) {
        s->mask_create = 0; /* older kernel: the inode tells new from existing */
        wd = tree_probe_watch_fd(s, fd, parent, name, len, TREE_SUB_FLAGS | s->wextra);
    }
    if (wd < 0 && errno == EEXIST) {
        *existing = 1;
        wd = tree_probe_watch_fd(s, fd, parent, name, len, TREE_SUB_FLAGS | s->wextra);
    }
    if (wd < 0 && errno == ENOSPC && tree_mark_drop(s)) /* the watch limit: a directory first */
        return add_watch(s, fd, parent, name, len, existing);
    return wd;
}

/* Why a directory could not be opened or watched (e), into msg; 0 when that
 * is silent: gone already (ENOENT, ENOTDIR), a symlink or a loop. */
static int failure(int e, char *msg, size_t cap)
{
    if (e == ENOENT || e == ENOTDIR || e == ELOOP) return 0;
    snprintf(msg, cap, "cannot watch: %s%s", strerror(e), e == ENOSPC ? " (inotify watch limit reached)" : "");
    return 1;
}

/* (parent, name) could not be opened: e, reported unless silent. */
static void add_failed(struct tree *s, const struct tree_node *parent, const char *name, size_t len, int e)
{
    char msg[160];
    if (failure(e, msg, sizeof msg)) tree_emit_at(s, IN_Q_OVERFLOW, parent, name, len, msg);
}

/* (parent, name), open as fd, could not be watched: e. Reported unless
 * silent, with every directory below it: nothing below an unwatched
 * directory is watched, and none of it may go unnamed. */
static void watch_failed(struct tree *s, const struct tree_node *parent, const char *name, size_t len, int fd, int e)
{
    char msg[160];
    if (failure(e, msg, sizeof msg)) tree_list_unwatched(s, parent, name, len, fd, msg);
}

/* The subdirectory name of pfd, which the agent may not open (EACCES): 1
 * when the front-end's admit refuses it too (tree_probe_refused). */
static int refused_unopened(struct tree *s, int pfd, const char *name, size_t len)
{
    char nm[NAME_MAX + 1];
    if (len > NAME_MAX) return 0;
    memcpy(nm, name, len);
    nm[len] = '\0';
    return tree_probe_refused(s, pfd, nm);
}

/* The subdirectory (parent, name), opened relative to pfd or, with pfd -1,
 * to parent's checked path. Returns the fd, or -1: nothing to watch (gone,
 * reported, refused, or parent's path is stale: then parent is listed again
 * once the rename's events give it its new name). */
static int open_new(struct tree *s, struct tree_node *parent, int pfd, const char *name, size_t len, struct stat *st)
{
    int own = pfd < 0;
    if (own && (pfd = tree_probe_open_node(s, parent)) < 0) {
        if (pfd == TREE_PROBE_STALE) tree_probe_mark_relist(s, parent);
        else add_failed(s, parent, name, len, errno);
        return -1;
    }
    int fd = tree_probe_open_child(pfd, name, len, st);
    int e = errno;
    int quiet = fd < 0 && e == EACCES && refused_unopened(s, pfd, name, len);
    if (own) close(pfd);
    if (fd < 0 && !quiet) add_failed(s, parent, name, len, e);
    return fd;
}

/* The kernel handed out wd, which node `old` holds already. Returns old when
 * it is the same directory found again (moved to (parent, name)), or NULL:
 * nothing to add (a loop, or ROOT or the parent is the dead one), or, with
 * *fresh = 1, old was a dead watch's leftover, dropped: add a node. */
static struct tree_node *reuse(struct tree *s, struct tree_node *old, int wd, int existing, const struct stat *st,
                           struct tree_node *parent, const char *name, size_t len, int *fresh)
{
    *fresh = 0;
    if (existing || (!s->mask_create && tree_probe_same(&s->t, old, st))) {
        /* The same directory, already watched: under this name already (its
         * parent's listing and its IN_CREATE both found it), or renamed
         * without our seeing the pair of events. Never a loop (bind mounts). */
        if (old == s->t.root || tree_model_is_ancestor(old, parent)) return NULL;
        int here = tree_model_child(&s->t, parent, name, len) == old;
        if (tree_watch_place(s, old, parent, name, len) < 0) return NULL;
        if (!here) tree_mark_need(s, old); /* placed by looking: checked by inode a while */
        old->moving = 0;
        return old;
    }
    /* A fresh watch reusing the number of one the kernel has dropped (its
     * directory was deleted; the IN_IGNORED is still queued). */
    if (old == s->t.root) {
        inotify_rm_watch(s->fd, wd);
        tree_root_gone(s, "ROOT was deleted");
        return NULL;
    }
    if (tree_model_is_ancestor(old, parent)) {
        /* The parent itself is the dead one: nothing to attach to. */
        tree_watch_drop(s, old, wd, 0);
        unwatch(s, wd);
        return NULL;
    }
    tree_watch_drop(s, old, wd, 0);
    *fresh = 1;
    return NULL;
}

/* A new node (parent, name) for the fresh watch wd of directory st (open as
 * fd), or NULL (reported, with what it holds). */
static struct tree_node *attach(struct tree *s, struct tree_node *parent, const char *name, size_t len, int wd,
                            int fd, const struct stat *st)
{
    struct tree_node *there = tree_model_child(&s->t, parent, name, len);
    if (there) tree_watch_drop(s, there, -1, 0); /* a stale entry under the same name */
    struct tree_node *n = tree_model_add(&s->t, parent, name, len, wd);
    if (n) {
        n->dev = st->st_dev;
        n->ino = st->st_ino;
        tree_mark_need(s, n);
        return n;
    }
    int e = errno;
    unwatch(s, wd);
    char msg[160];
    if (e == ENOSPC)
        snprintf(msg, sizeof msg, "cannot watch: more than %u directories", (unsigned)TREE_MAX_NODES);
    else
        snprintf(msg, sizeof msg, "cannot watch: out of memory");
    tree_list_unwatched(s, parent, name, len, fd, msg);
    return NULL;
}

struct tree_node *tree_watch_add_dir(struct tree *s, struct tree_node *parent, int pfd, const char *name, size_t len,
                         int *is_new, int *fd_out)
{
    *is_new = 0;
    if (fd_out) *fd_out = -1;
    struct stat st;
    int fd = open_new(s, parent, pfd, name, len, &st);
    if (fd < 0) return NULL;
    if (s->admit && !s->admit(s->ctx, fd, &st)) {
        close(fd); /* not for this front-end: as though absent */
        return NULL;
    }
    int existing;
    int wd = add_watch(s, fd, parent, name, len, &existing);
    struct tree_node *n = NULL;
    if (wd < 0) {
        watch_failed(s, parent, name, len, fd, errno);
    } else {
        struct tree_node *old = tree_model_by_wd(&s->t, wd);
        int fresh = 1;
        if (old) n = reuse(s, old, wd, existing, &st, parent, name, len, &fresh);
        if (fresh && (n = attach(s, parent, name, len, wd, fd, &st))) *is_new = 1;
    }
    if (*is_new && fd_out) *fd_out = fd;
    else close(fd);
    return n;
}

/* ---- following renames --------------------------------------------------- */

/* Move m to (parent, name); `looked`: decided by looking at the file
 * system, not by the events alone (then checked by inode a while). */
static int place_moved(struct tree *s, struct tree_node *m, struct tree_node *parent, const char *name, size_t len,
                       int looked)
{
    if (tree_watch_place(s, m, parent, name, len) == 0) {
        m->moving = 0;
        if (looked) tree_mark_need(s, m);
        return 1;
    }
    tree_watch_drop(s, m, -1, 0); /* a loop: forget it */
    return 0;
}

/* The events alone tell: m was the directory at the old name when its
 * IN_MOVED_FROM was read, and so was whatever the model holds at the new
 * name (the directory the rename replaced), both in step with the events. */
static int in_step(struct tree *s, const struct tree_node *m, const struct tree_node *parent, const char *name, size_t len)
{
    const struct tree_node *there = tree_model_child(&s->t, parent, name, len);
    return m->move_sure && tree_mark_sure(s, m) && (!there || (there != m && tree_mark_sure(s, there)));
}

int tree_watch_follow_move(struct tree *s, struct tree_node *m, struct tree_node *parent, const char *name, size_t len)
{
    /* The cookie pairs the names. A model in step with the events names the
     * directory that moved: its watch descriptor is its identity, and its
     * events read from now on carry the new path. */
    if (in_step(s, m, parent, name, len)) return place_moved(s, m, parent, name, len, 0);
    /* Otherwise the inode says whether m is what moved: the IN_MOVED_FROM
     * may have named an earlier directory of m's name. */
    struct stat at, was;
    enum tree_probe to = tree_probe(s, parent, name, len, &at);
    if ((to == TREE_PROBE_FOUND && tree_probe_same(&s->t, m, &at)) || to == TREE_PROBE_UNKNOWN)
        return place_moved(s, m, parent, name, len, 1); /* seen there, or cannot tell: the events say so */
    enum tree_probe from = tree_probe(s, m->parent, m->name, m->name_len, &was);
    if (from == TREE_PROBE_FOUND && tree_probe_same(&s->t, m, &was)) {
        m->moving = 0; /* still where it was: another directory moved */
        tree_mark_need(s, m);
        return 0;
    }
    /* Neither here nor there: renamed on since (the later events follow
     * it), unless another directory holds the new name now. */
    if (to == TREE_PROBE_ABSENT) return place_moved(s, m, parent, name, len, 1);
    if (from == TREE_PROBE_UNKNOWN) tree_probe_mark_relist(s, m->parent); /* m may still be in it */
    tree_watch_drop(s, m, -1, 0); /* where it went, later events tell */
    return 0;
}
