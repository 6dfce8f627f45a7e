/*
 * sendfile.h - what lets the loop send a download's file itself (see
 * rest/download.c): which open files it may send from without waiting for
 * anyone (a regular file on a local filesystem: never a FIFO, a device, a
 * /proc stream, FUSE or a network filesystem, whose reads another process
 * or the network could hold), and whether a range is in the page cache,
 * so that sendfile(2) never waits for the disk (what is not is read ahead
 * first, and the loop waits for it with a timer, not in a read).
 */
#ifndef SA_API_REST_SENDFILE_H
#define SA_API_REST_SENDFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Where a servable file's pages are. */
enum rest_sendfile_kind {
    REST_SENDFILE_MEMORY,  /* tmpfs, ramfs: nothing to wait for */
    REST_SENDFILE_DISK,    /* ext4, xfs, btrfs, f2fs */
    REST_SENDFILE_STACKED, /* overlayfs: the pages are the file below's */
};

/* 1 when fd is a regular file on a local filesystem, its fstat into *st
 * and where it lives into *kind; else 0. */
int rest_sendfile_servable(int fd, struct stat *st, enum rest_sendfile_kind *kind);

/* 1 when fd's bytes [off, off + n) are in the page cache (always, in
 * memory), or past its end now (sendfile finds the end without reading);
 * else 0, after starting their read-ahead and that of the next `ahead`
 * bytes. n is at most 4 MiB. */
int rest_sendfile_ready(int fd, enum rest_sendfile_kind kind, uint64_t off, size_t n, size_t ahead);

#endif
