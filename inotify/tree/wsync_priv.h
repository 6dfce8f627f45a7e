/*
 * wsync_priv.h - the inside of the tree service, shared by its five files and
 * by nothing else: wsync.c (lifecycle, reading, dispatch), wwatch.c (adding
 * and dropping watches, following renames), wlist.c (listing directories),
 * wprobe.c (looking at the file system by inode), wbar.c (the barrier that
 * tells when the model is in step with the events). Front-ends include
 * wsync.h only.
 */
#ifndef SA_WSYNC_PRIV_H
#define SA_WSYNC_PRIV_H

#include "inotify/tree/wevent.h"
#include "inotify/tree/wsync.h"
#include "inotify/tree/wtree.h"
#include "agent/core/buf.h"

#include <sys/inotify.h>
#include <sys/stat.h>

/* Plus what the bookkeeping needs: a watched directory renamed or deleted.
 * IN_EXCL_UNLINK: a file written through an fd after its unlink would
 * otherwise be reported under the name it no longer has. */
#define WSYNC_ROOT_FLAGS (WEV_REPORTED | IN_MOVE_SELF | IN_DELETE_SELF | IN_EXCL_UNLINK)
/* Subdirectories: never through a symlink, never a non-directory. */
#define WSYNC_SUB_FLAGS (WSYNC_ROOT_FLAGS | IN_ONLYDIR | IN_DONT_FOLLOW)
#ifndef IN_MASK_CREATE
#define IN_MASK_CREATE 0x10000000
#endif

/* A wake-up reads at most WSYNC_READS_PER_WAKE times, so timers and signals
 * are not starved by a busy tree. A directory listing is read WSYNC_DENTS_BUF
 * bytes at a time. */
#define WSYNC_READS_PER_WAKE 16
#define WSYNC_DENTS_BUF (64 * 1024)
/* Directory renames whose IN_MOVED_TO may still come: it follows its
 * IN_MOVED_FROM closely in the queue, so a short ring suffices; a rename that
 * falls off it is treated as a move out then in (re-watched and re-listed). */
#define WSYNC_MOVERS 64

struct wsync {
    const struct wsync_ops *ops;
    void *ctx;
    struct ev_loop *loop;
    int fd;
    int recursive;
    uint32_t extra;        /* wsync_set_extra: more events reported */
    uint32_t wextra;       /* more events on every watch: extra, and IN_ATTRIB for admit */
    wsync_admit_fn admit;  /* wsync_set_admit, or NULL: everything */
    int mask_create;       /* kernel knows IN_MASK_CREATE (Linux 4.18) */
    int no_proc;           /* no /proc/self/fd: watches are added by path */
    char *root;
    size_t root_len;
    struct wtree t;
    int have_tree;
    struct buf path;       /* scratch for one path, bounded by WSYNC_PATH_MAX */
    char *rbuf;            /* WSYNC_READ_BUF */
    char *dents;           /* WSYNC_DENTS_BUF */
    int *stack;            /* directories still to list, by wd */
    size_t stack_len, stack_cap;
    unsigned long removals;
    size_t relist_marks;   /* nodes with `relist` set */
    int *relist;           /* scratch: the marked nodes of a renamed subtree */
    size_t relist_cap;
    struct {
        uint32_t cookie;
        int wd;
    } movers[WSYNC_MOVERS];
    unsigned mover_next;
    int bar[2];            /* wbar.c: the barrier pipe (read, write), or -1 */
    int bar_wd;            /* its watch on the current fd, or -1: no barrier */
    unsigned long bar_sent, bar_done; /* barriers written, and read back */
    int bar_want;          /* a node waits for a barrier not written yet */
    int rebuild;           /* an overflow: start over with a fresh inotify fd */
    int halted;
    ev_io io;
};

/* wsync.c: deliver an event for (n joined with name), or ROOT's end. */
void ws_emit(struct wsync *s, uint32_t mask, const char *path, size_t n, const char *error);
void ws_emit_at(struct wsync *s, uint32_t mask, const struct wnode *n, const char *name, size_t len,
                const char *error);
void ws_root_gone(struct wsync *s, const char *why);

/* wwatch.c */
/* Watch the directory `name` of parent, opened relative to pfd (parent's
 * checked fd) or, with pfd -1, through parent's checked path. Returns its
 * node, with *is_new = 1 when it was not watched before (then *fd_out, when
 * not NULL, gets the open directory to list, the caller's to close), or
 * NULL (gone, stale, not watchable: reported or marked as fits; refused by
 * the front-end's admit: silent). */
struct wnode *ws_add_dir(struct wsync *s, struct wnode *parent, int pfd, const char *name, size_t len,
                         int *is_new, int *fd_out);
int ws_place(struct wsync *s, struct wnode *n, struct wnode *parent, const char *name, size_t len);
void ws_drop(struct wsync *s, struct wnode *n, int skip_wd, int skip_pend);
/* IN_MOVED_TO (parent, name) paired with m's IN_MOVED_FROM: 1 when m was
 * renamed there (it is moved), 0 when the caller must treat the entry as a
 * directory moved in (m stayed where it was, or was forgotten). */
int ws_follow_move(struct wsync *s, struct wnode *m, struct wnode *parent, const char *name, size_t len);

/* wlist.c */
/* List what top holds (fd: top open already, taken; or -1) and below. */
void ws_scan(struct wsync *s, struct wnode *top, int fd, int report);
void ws_relist_renamed(struct wsync *s, struct wnode *top);

/* wbar.c */
void ws_bar_init(struct wsync *s);   /* wsync_new: the pipe (none without /proc) */
void ws_bar_arm(struct wsync *s);    /* arm: watch it on the fresh fd */
void ws_bar_close(struct wsync *s);
/* n was placed by looking at the file system: its renames are checked by
 * inode until the next barrier (written by ws_bar_flush) is read. */
void ws_bar_need(struct wsync *s, struct wnode *n);
/* n's place in the model is in step with the events read so far. */
int ws_bar_sure(const struct wsync *s, const struct wnode *n);
/* Write the barrier a node waits for, unless one is in flight. */
void ws_bar_flush(struct wsync *s);
/* Give the barrier's watch up (the watch limit): 1 if it had one. What waits
 * for a barrier is checked by inode from then on. */
int ws_bar_drop(struct wsync *s);
/* 1 when ev is the barrier's (consumed), 0 for any other event. */
int ws_bar_event(struct wsync *s, const struct inotify_event *ev);

/* wprobe.c */
#define WS_STALE (-2)
enum ws_probe {
    WS_FOUND,   /* a directory, *st filled */
    WS_ABSENT,  /* the parent checked out, and no directory has the name */
    WS_UNKNOWN, /* the parent's path is stale, or an error */
};
/* n is this directory (ROOT always is). */
int ws_same(const struct wtree *t, const struct wnode *n, const struct stat *st);
/* Set n->relist (not for ROOT), counted in s->relist_marks. */
void ws_mark_relist(struct wsync *s, struct wnode *n);
/* n's directory opened through its path, checked to be n's inode. Returns the
 * fd, WS_STALE (gone or another directory has the path: a rename's events
 * will bring n's new name), or -1 with errno. */
int ws_open_node(struct wsync *s, const struct wnode *n);
/* n's path still names n (lstat). */
int ws_path_holds(struct wsync *s, const struct wnode *n);
/* The subdirectory name[0..len) of pfd, never through a symlink, fstat'ed
 * into st. Returns the fd or -1 with errno. */
int ws_open_child(int pfd, const char *name, size_t len, struct stat *st);
/* What directory (parent, name) is now. */
enum ws_probe ws_probe(struct wsync *s, const struct wnode *parent, const char *name, size_t len,
                       struct stat *st);
/* inotify_add_watch for exactly the directory open as fd, (parent, name). */
int ws_watch_fd(struct wsync *s, int fd, const struct wnode *parent, const char *name, size_t len,
                uint32_t mask);

#endif
