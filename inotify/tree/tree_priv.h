/*
 * tree_priv.h - the inside of the tree service, shared by its five files and
 * by nothing else: tree.c (lifecycle, reading, dispatch), watch.c (adding
 * and dropping watches, following renames), list.c (listing directories),
 * probe.c (looking at the file system by inode), mark.c (the barrier that
 * tells when the model is in step with the events). Front-ends include
 * tree.h only.
 */
#ifndef SA_INOTIFY_TREE_TREE_PRIV_H
#define SA_INOTIFY_TREE_TREE_PRIV_H

#include "inotify/tree/event.h"
#include "inotify/tree/tree.h"
#include "inotify/tree/model.h"
#include "agent/core/buf.h"

#include <sys/inotify.h>
#include <sys/stat.h>

/* Plus what the bookkeeping needs: a watched directory renamed or deleted.
 * IN_EXCL_UNLINK: a file written through an fd after its unlink would
 * otherwise be reported under the name it no longer has. */
#define TREE_ROOT_FLAGS (TREE_EVENT_REPORTED | IN_MOVE_SELF | IN_DELETE_SELF | IN_EXCL_UNLINK)
/* Subdirectories: never through a symlink, never a non-directory. */
#define TREE_SUB_FLAGS (TREE_ROOT_FLAGS | IN_ONLYDIR | IN_DONT_FOLLOW)
#ifndef IN_MASK_CREATE
#define IN_MASK_CREATE 0x10000000
#endif

/* A wake-up reads at most TREE_READS_PER_WAKE times, so timers and signals
 * are not starved by a busy tree. A directory listing is read TREE_DENTS_BUF
 * bytes at a time. */
#define TREE_READS_PER_WAKE 16
#define TREE_DENTS_BUF (64 * 1024)
/* Directory renames whose IN_MOVED_TO may still come: it follows its
 * IN_MOVED_FROM closely in the queue, so a short ring suffices; a rename that
 * falls off it is treated as a move out then in (re-watched and re-listed). */
#define TREE_MOVERS 64

struct tree {
    const struct tree_ops *ops;
    void *ctx;
    struct ev_loop *loop;
    int fd;
    int recursive;
    uint32_t extra;        /* tree_set_extra: more events reported */
    uint32_t wextra;       /* more events on every watch: extra, and IN_ATTRIB for admit */
    tree_admit_fn admit;  /* tree_set_admit, or NULL: everything */
    int mask_create;       /* kernel knows IN_MASK_CREATE (Linux 4.18) */
    int no_proc;           /* no /proc/self/fd: watches are added by path */
    char *root;
    size_t root_len;
    struct tree_model t;
    int have_tree;
    struct buf path;       /* scratch for one path, bounded by TREE_PATH_MAX */
    char *rbuf;            /* TREE_READ_BUF */
    char *dents;           /* TREE_DENTS_BUF */
    int *stack;            /* directories still to list, by wd */
    size_t stack_len, stack_cap;
    unsigned long removals;
    size_t relist_marks;   /* nodes with `relist` set */
    int *relist;           /* scratch: the marked nodes of a renamed subtree */
    size_t relist_cap;
    struct {
        uint32_t cookie;
        int wd;
    } movers[TREE_MOVERS];
    unsigned mover_next;
    int bar[2];            /* mark.c: the barrier pipe (read, write), or -1 */
    int bar_wd;            /* its watch on the current fd, or -1: no barrier */
    unsigned long bar_sent, bar_done; /* barriers written, and read back */
    int bar_want;          /* a node waits for a barrier not written yet */
    int rebuild;           /* an overflow: start over with a fresh inotify fd */
    int halted;
    ev_io io;
};

/* tree.c: deliver an event for (n joined with name), or ROOT's end. */
void tree_emit(struct tree *s, uint32_t mask, const char *path, size_t n, const char *error);
void tree_emit_at(struct tree *s, uint32_t mask, const struct tree_node *n, const char *name, size_t len,
                const char *error);
void tree_root_gone(struct tree *s, const char *why);

/* watch.c */
/* Watch the directory `name` of parent, opened relative to pfd (parent's
 * checked fd) or, with pfd -1, through parent's checked path. Returns its
 * node, with *is_new = 1 when it was not watched before (then *fd_out, when
 * not NULL, gets the open directory to list, the caller's to close), or
 * NULL (gone, stale, not watchable: reported or marked as fits; refused by
 * the front-end's admit: silent). */
struct tree_node *tree_watch_add_dir(struct tree *s, struct tree_node *parent, int pfd, const char *name, size_t len,
                         int *is_new, int *fd_out);
int tree_watch_place(struct tree *s, struct tree_node *n, struct tree_node *parent, const char *name, size_t len);
void tree_watch_drop(struct tree *s, struct tree_node *n, int skip_wd, int skip_pend);
/* IN_MOVED_TO (parent, name) paired with m's IN_MOVED_FROM: 1 when m was
 * renamed there (it is moved), 0 when the caller must treat the entry as a
 * directory moved in (m stayed where it was, or was forgotten). */
int tree_watch_follow_move(struct tree *s, struct tree_node *m, struct tree_node *parent, const char *name, size_t len);

/* list.c */
/* List what top holds (fd: top open already, taken; or -1) and below. */
void tree_list_scan(struct tree *s, struct tree_node *top, int fd, int report);
void tree_list_renamed(struct tree *s, struct tree_node *top);
/* n appeared (created or moved in) and is watched: it is listed by
 * tree_list_announced, once every directory the events read by then
 * announced is watched too (a watch is not spent on what one of them holds
 * before its siblings are watched). */
void tree_list_later(struct tree *s, struct tree_node *n);
void tree_list_announced(struct tree *s);
/* The directory (parent, name), open as fd (the caller's), could not be
 * watched: report it with msg, and every directory below it as well (the
 * front-end's admit permitting), none of which is watched either. */
void tree_list_unwatched(struct tree *s, const struct tree_node *parent, const char *name, size_t len, int fd,
                         const char *msg);

/* mark.c */
void tree_mark_init(struct tree *s);   /* tree_new: the pipe (none without /proc) */
void tree_mark_arm(struct tree *s);    /* arm: watch it on the fresh fd */
void tree_mark_close(struct tree *s);
/* n was placed by looking at the file system: its renames are checked by
 * inode until the next barrier (written by tree_mark_flush) is read. */
void tree_mark_need(struct tree *s, struct tree_node *n);
/* n's place in the model is in step with the events read so far. */
int tree_mark_sure(const struct tree *s, const struct tree_node *n);
/* Write the barrier a node waits for, unless one is in flight. */
void tree_mark_flush(struct tree *s);
/* Give the barrier's watch up (the watch limit): 1 if it had one. What waits
 * for a barrier is checked by inode from then on. */
int tree_mark_drop(struct tree *s);
/* 1 when ev is the barrier's (consumed), 0 for any other event. */
int tree_mark_event(struct tree *s, const struct inotify_event *ev);

/* probe.c */
#define TREE_PROBE_STALE (-2)
enum tree_probe {
    TREE_PROBE_FOUND,   /* a directory, *st filled */
    TREE_PROBE_ABSENT,  /* the parent checked out, and no directory has the name */
    TREE_PROBE_UNKNOWN, /* the parent's path is stale, or an error */
};
/* n is this directory (ROOT always is). */
int tree_probe_same(const struct tree_model *t, const struct tree_node *n, const struct stat *st);
/* Set n->relist (not for ROOT), counted in s->relist_marks. */
void tree_probe_mark_relist(struct tree *s, struct tree_node *n);
/* n's directory opened through its path, checked to be n's inode. Returns the
 * fd, TREE_PROBE_STALE (gone or another directory has the path: a rename's events
 * will bring n's new name), or -1 with errno. */
int tree_probe_open_node(struct tree *s, const struct tree_node *n);
/* n's path still names n (lstat). */
int tree_probe_path_holds(struct tree *s, const struct tree_node *n);
/* The subdirectory name[0..len) of pfd, never through a symlink, fstat'ed
 * into st. Returns the fd or -1 with errno. */
int tree_probe_open_child(int pfd, const char *name, size_t len, struct stat *st);
/* What directory (parent, name) is now. */
enum tree_probe tree_probe(struct tree *s, const struct tree_node *parent, const char *name, size_t len,
                       struct stat *st);
/* The directory at path (relative to dfd; its last component never a
 * symlink), checked to be the one found as (dev, ino); st filled. Returns
 * the fd, TREE_PROBE_STALE (gone, or another one has the path now), or -1
 * with errno. */
int tree_probe_open_found(int dfd, const char *path, dev_t dev, ino_t ino, struct stat *st);
/* 1 when the front-end's admit refuses the directory at path (relative to
 * dfd), which the service may not open (EACCES), judged from its lstat alone:
 * then it is left out as silently as one admit refuses. */
int tree_probe_refused(struct tree *s, int dfd, const char *path);
/* inotify_add_watch for exactly the directory open as fd, (parent, name). */
int tree_probe_watch_fd(struct tree *s, int fd, const struct tree_node *parent, const char *name, size_t len,
                uint32_t mask);

#endif
