/*
 * event.h - what one inotify event means, given the watched tree: which
 * watched directory it is about, under which name, and what the service must
 * do with it (deliver it, forget a directory, end because ROOT is gone, ...).
 *
 * Pure: no system calls. It reads the tree and settles the IN_IGNORED ledger
 * (an IN_IGNORED for a watch the service removed itself is consumed here), and
 * changes nothing else. inotify/tree/tree.c acts on the answer.
 */
#ifndef SA_INOTIFY_TREE_EVENT_H
#define SA_INOTIFY_TREE_EVENT_H

#include "inotify/tree/model.h"

#include <stdint.h>
#include <sys/inotify.h>

/* The events a client sees (README "sandbox-agent watch"). */
#define TREE_EVENT_REPORTED (IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_MODIFY | IN_CLOSE_WRITE)
/* What a front-end may ask for beyond them (tree_set_extra, kept in the
 * tree's `extra`): attribute changes (serve's CHMOD). `watch` never asks, so
 * an IN_ATTRIB is skipped for it as ever. */
#define TREE_EVENT_OPTIONAL IN_ATTRIB

enum tree_event_kind {
    TREE_EVENT_SKIP,       /* nothing to do: unknown or stale wd, our own IN_IGNORED, an event nobody asked for */
    TREE_EVENT_OVERFLOW,   /* the kernel's queue overflowed: events were lost */
    TREE_EVENT_ROOT_GONE,  /* ROOT was deleted or moved (why says which) */
    TREE_EVENT_FORGET,     /* n was deleted or unmounted: the kernel dropped its watch */
    TREE_EVENT_UNMOUNT,    /* the file system holding n was unmounted */
    TREE_EVENT_MOVED_OUT,  /* n, renamed away, went somewhere not watched */
    TREE_EVENT_REPORT,     /* deliver (mask, path of n joined with name) */
};

struct tree_event {
    enum tree_event_kind kind;
    struct tree_node *n;   /* the watched directory (not for SKIP, OVERFLOW, ROOT_GONE) */
    uint32_t mask;     /* the event's mask */
    const char *name;  /* the entry in n (TREE_EVENT_REPORT), name_len bytes, may be 0 */
    size_t name_len;
    uint32_t cookie;
    int subdir;        /* TREE_EVENT_REPORT of a directory entry the tree must follow */
    const char *why;   /* TREE_EVENT_ROOT_GONE: "ROOT was deleted" or "ROOT was moved" */
};

/* Map ev (whose name is ev->len bytes, NUL-padded) against t. recursive: the
 * tree follows subdirectories. Returns out->kind. */
enum tree_event_kind tree_event_map(struct tree_model *t, const struct inotify_event *ev, int recursive, struct tree_event *out);

#endif
