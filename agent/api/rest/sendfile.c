/*
 * sendfile.c - the files the loop may send from, and whether a range is
 * cached (see rest/sendfile.h).
 *
 * Residency is asked with cachestat(2) (Linux 6.5: one call, no mapping),
 * else mincore(2) on a mapping of the range made for the question. Either
 * only looks; a page not there is read ahead with posix_fadvise(WILLNEED),
 * which queues the reads and returns.
 */
#include "agent/api/rest/sendfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The filesystems whose reads wait for nobody but the local disk. */
#define TMPFS_MAGIC 0x01021994
#define RAMFS_MAGIC 0x858458f6
#define EXT4_MAGIC 0xEF53 /* ext2, ext3 too */
#define XFS_MAGIC 0x58465342
#define BTRFS_MAGIC 0x9123683E
#define OVERLAYFS_MAGIC 0x794c7630
#define F2FS_MAGIC 0xF2F52010

#ifndef SYS_cachestat
#define SYS_cachestat 451 /* the same on every architecture */
#endif

struct cs_range {
    uint64_t off, len;
};
struct cs {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

int rest_sendfile_servable(int fd, struct stat *st, enum rest_sendfile_kind *kind)
{
    struct statfs sfs;
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || fstatfs(fd, &sfs) < 0) return 0;
    switch ((unsigned long)sfs.f_type & 0xffffffffUL) {
    case TMPFS_MAGIC: case RAMFS_MAGIC: *kind = REST_SENDFILE_MEMORY; break;
    case EXT4_MAGIC: case XFS_MAGIC: case BTRFS_MAGIC: case F2FS_MAGIC: *kind = REST_SENDFILE_DISK; break;
    case OVERLAYFS_MAGIC: *kind = REST_SENDFILE_STACKED; break;
    default: return 0;
    }
    return 1;
}

/* mincore of a mapping made for the question: an overlayfs file maps the
 * file below, whose pages these are. 1 all there, 0 not, -1 cannot tell. */
static int mapped_cached(int fd, uint64_t first, uint64_t pages, long page)
{
    size_t len = (size_t)pages * (size_t)page;
    unsigned char vec[1024];
    if (pages > sizeof vec) return -1;
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)(first * (uint64_t)page));
    if (m == MAP_FAILED) return -1;
    int all = mincore(m, len, vec) == 0;
    for (size_t i = 0; all && i < pages; i++) all = vec[i] & 1;
    munmap(m, len);
    return all;
}

/* Pages of [off, off + n) in the page cache: 1 all, 0 not all, -1 cannot tell. */
static int cached(int fd, enum rest_sendfile_kind kind, uint64_t off, size_t n, long page)
{
    static int no_cachestat;
    uint64_t first = off / (uint64_t)page, last = (off + n + (uint64_t)page - 1) / (uint64_t)page;
    if (kind == REST_SENDFILE_DISK && !no_cachestat) {
        struct cs_range r = {first * (uint64_t)page, (last - first) * (uint64_t)page};
        struct cs c;
        if (syscall(SYS_cachestat, fd, &r, &c, 0) == 0) return c.nr_cache >= last - first;
        if (errno != ENOSYS) return -1;
        no_cachestat = 1;
    }
    return mapped_cached(fd, first, last - first, page);
}

int rest_sendfile_ready(int fd, enum rest_sendfile_kind kind, uint64_t off, size_t n, size_t ahead)
{
    long page = sysconf(_SC_PAGESIZE);
    struct stat st;
    if (kind == REST_SENDFILE_MEMORY || page <= 0) return 1;
    /* A file that shrank has no pages past its end: sendfile finds the end. */
    if (fstat(fd, &st) < 0 || (uint64_t)st.st_size <= off) return 1;
    if ((uint64_t)st.st_size < off + n) n = (size_t)((uint64_t)st.st_size - off);
    if (cached(fd, kind, off, n, page) != 0) return 1; /* there, or nothing to tell it by: send */
    posix_fadvise(fd, (off_t)off, (off_t)(n + ahead), POSIX_FADV_WILLNEED);
    return 0;
}
