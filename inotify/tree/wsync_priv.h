/*
 * wsync_priv.h - the inside of the tree service, shared by its three files and
 * by nothing else: wsync.c (lifecycle, reading, dispatch), wwatch.c (adding
 * and dropping watches), wlist.c (listing directories). Front-ends include
 * wsync.h only.
 */
#ifndef SA_WSYNC_PRIV_H
#define SA_WSYNC_PRIV_H

#include "inotify/tree/wevent.h"
#include "inotify/tree/wsync.h"
#include "inotify/tree/wtree.h"
#include "agent/core/buf.h"

#include <sys/inotify.h>

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
    uint32_t extra;        /* wsync_set_extra: more events on every watch */
    int mask_create;       /* kernel knows IN_MASK_CREATE (Linux 4.18) */
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
struct wnode *ws_add_dir(struct wsync *s, struct wnode *parent, const char *name, size_t len, int *is_new);
int ws_place(struct wsync *s, struct wnode *n, struct wnode *parent, const char *name, size_t len);
void ws_drop(struct wsync *s, struct wnode *n, int skip_wd, int skip_pend);

/* wlist.c */
void ws_scan(struct wsync *s, struct wnode *top, int report);
void ws_relist_renamed(struct wsync *s, struct wnode *top);

#endif
