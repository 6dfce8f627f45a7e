/*
 * wevent.h - what one inotify event means, given the watched tree: which
 * watched directory it is about, under which name, and what the service must
 * do with it (deliver it, forget a directory, end because ROOT is gone, ...).
 *
 * Pure: no system calls. It reads the tree and settles the IN_IGNORED ledger
 * (an IN_IGNORED for a watch the service removed itself is consumed here), and
 * changes nothing else. inotify/tree/wsync.c acts on the answer.
 */
#ifndef SA_WEVENT_H
#define SA_WEVENT_H

#include "inotify/tree/wtree.h"

#include <stdint.h>
#include <sys/inotify.h>

/* The events a client sees (README "sandbox-agent watch"). */
#define WEV_REPORTED (IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_MODIFY | IN_CLOSE_WRITE)
/* What a front-end may ask for beyond them (wsync_set_extra, kept in the
 * tree's `extra`): attribute changes (serve's CHMOD). `watch` never asks, so
 * an IN_ATTRIB is skipped for it as ever. */
#define WEV_OPTIONAL IN_ATTRIB

enum wev_kind {
    WEV_SKIP,       /* nothing to do: unknown or stale wd, our own IN_IGNORED, an event nobody asked for */
    WEV_OVERFLOW,   /* the kernel's queue overflowed: events were lost */
    WEV_ROOT_GONE,  /* ROOT was deleted or moved (why says which) */
    WEV_FORGET,     /* n was deleted or unmounted: the kernel dropped its watch */
    WEV_UNMOUNT,    /* the file system holding n was unmounted */
    WEV_MOVED_OUT,  /* n, renamed away, went somewhere not watched */
    WEV_REPORT,     /* deliver (mask, path of n joined with name) */
};

struct wev {
    enum wev_kind kind;
    struct wnode *n;   /* the watched directory (not for SKIP, OVERFLOW, ROOT_GONE) */
    uint32_t mask;     /* the event's mask */
    const char *name;  /* the entry in n (WEV_REPORT), name_len bytes, may be 0 */
    size_t name_len;
    uint32_t cookie;
    int subdir;        /* WEV_REPORT of a directory entry the tree must follow */
    const char *why;   /* WEV_ROOT_GONE: "ROOT was deleted" or "ROOT was moved" */
};

/* Map ev (whose name is ev->len bytes, NUL-padded) against t. recursive: the
 * tree follows subdirectories. Returns out->kind. */
enum wev_kind wev_map(struct wtree *t, const struct inotify_event *ev, int recursive, struct wev *out);

#endif
