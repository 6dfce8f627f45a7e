/*
 * upload_file.c - one file of an upload (see upload.h): its helper, the
 * pipe and the socket it is driven by, the child that writes the file as the user with files_write_hooked, the
 * duplicate check, and the clean-up after a helper that died mid-write.
 *
 * The helper tells each temporary name on its verdict socket before the
 * file of that name exists. The loop never reads them: when the helper
 * ended without a result (killed: it could not remove its file), another
 * helper, as the same user, reads what it told from the socket and removes
 * those files (rest/tmpreap.h); never the agent itself.
 */
#include "agent/api/rest/upload.h"
#include "agent/api/rest/files.h"
#include "agent/api/rest/tmpreap.h"
#include "agent/api/filesystem/entry.h"
#include "agent/api/asuser/path.h"
#include "agent/api/http/hparam.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"
#include "agent/files/files.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#define VERDICT_FD (ASUSER_JOB_IN_FD0 + 1)
/* fsetxattr's ENOSPC with this much room left on the filesystem is the
 * filesystem's bound on attributes, not a full disk. */
#define XATTR_ROOM_MIN (1024u * 1024u)

/* ---- the helper (in the child) ------------------------------------------------ */

/* The value fsetxattr refused, for the message. */
static const struct upload_meta *refused;

/* E2BIG when the filesystem refused a value for its size (ext4 keeps about
 * 4 KiB of attributes per file, and says ENOSPC even with the disk far from
 * full), else en. */
static int xattr_errno(int fd, int en, size_t vlen)
{
    struct statvfs sv;
    if (en == ERANGE) return E2BIG;
    if (en != ENOSPC || fstatvfs(fd, &sv) < 0) return en;
    unsigned long long room = (unsigned long long)(geteuid() == 0 ? sv.f_bfree : sv.f_bavail) * sv.f_frsize;
    return room >= vlen + XATTR_ROOM_MIN ? E2BIG : en;
}

/* files_write's prepare: the metadata (exactly this upload's: a replaced file's
 * attributes go with it), then the verdict. */
static int prepare(void *ctx, int fd, const char *replaced)
{
    const struct upload *up = ctx;
    (void)replaced;
    for (size_t i = 0; i < up->nmeta; i++)
        if (fsetxattr(fd, up->meta[i].name, up->meta[i].value, up->meta[i].vlen, 0) < 0) {
            refused = &up->meta[i];
            return xattr_errno(fd, errno, up->meta[i].vlen);
        }
    char v = 0;
    ssize_t r;
    do r = read(VERDICT_FD, &v, 1);
    while (r < 0 && errno == EINTR);
    return r == 1 && v == 'C' ? 0 : ECANCELED;
}

/* files_write's named: the temporary path to the loop, NUL-terminated, without
 * ever waiting (the loop reads it only if this helper dies). */
static int named(void *ctx, const char *tmp) { return rest_tmpreap_tell(VERDICT_FD, tmp); }

static int fail_message(const struct upload_file *f, const struct files_err *e, char *msg, size_t cap, int *status)
{
    size_t plen = strlen(FILESYSTEM_XATTR_PREFIX);
    *status = e->errnum == ECANCELED ? 499 : rest_files_status(e->errnum);
    if (e->at_fd) return snprintf(msg, cap, "reading the upload: %s", e->message);
    if (refused && e->errnum == E2BIG) {
        *status = 400;
        return snprintf(msg, cap, "%s: metadata %.100s: a value of %zu bytes is more than this filesystem keeps "
                        "in an extended attribute (at most %u bytes, ext4 about 4 KiB per file)",
                        f->path, refused->name + plen, refused->vlen, FILESYSTEM_XATTR_VALUE_MAX);
    }
    return snprintf(msg, cap, "%s: %s", e->path ? e->path : f->path,
                    e->errnum == ENOTSUP ? "extended attributes (metadata) not supported here" : e->message);
}

static int file_child(void *arg)
{
    const struct upload_file *f = arg;
    struct files_write_opts o = {.parents = 1};
    struct files_write_hooks h = {.prepare = prepare, .named = named, .ctx = f->up};
    struct files_err e;
    long long bytes;
    if (files_write_hooked(f->path, ASUSER_JOB_IN_FD0, &o, &h, &bytes, &e) == 0) return asuser_job_reply(0, NULL, 0) < 0;
    char msg[1024];
    int status;
    int n = fail_message(f, &e, msg, sizeof msg, &status);
    if (n >= (int)sizeof msg) n = (int)sizeof msg - 1;
    return asuser_job_reply(status, msg, (size_t)n) < 0;
}

/* ---- one file (in the loop) ---------------------------------------------------- */

/* 1 when path was written by this request already; else it is noted. */
static int seen_before(struct upload *up, const char *path)
{
    size_t len = strlen(path);
    uint64_t h = hash_bytes(HASH_SEED, path, len);
    struct hnode *it;
    HASH_FOR_EACH(&up->seen, h, it) {
        struct upload_seen *s = HASH_ENTRY(it, struct upload_seen, node);
        if (s->len == len && !memcmp(s->path, path, len)) return 1;
    }
    struct upload_seen *s = malloc(sizeof *s + len + 1);
    if (!s) return 0;
    s->len = len;
    memcpy(s->path, path, len + 1);
    s->next = up->seen_list;
    up->seen_list = s;
    hash_add(&up->seen, &s->node, h);
    return 0;
}

void rest_upload_file_seen_free(struct upload *up)
{
    while (up->seen_list) {
        struct upload_seen *s = up->seen_list;
        up->seen_list = s->next;
        free(s);
    }
    hash_free(&up->seen);
}

/* The helper with its data pipe (fd 4) and verdict socket (fd 5: the
 * verdict to it, its temporary names from it). */
static int spawn(struct upload *up, struct upload_file *f, char *err)
{
    int d[2], v[2];
    if (pipe2(d, O_CLOEXEC) < 0) goto fail_errno;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, v) < 0) {
        close(d[0]);
        close(d[1]);
        goto fail_errno;
    }
    (void)fcntl(d[1], F_SETPIPE_SZ, UPLOAD_PIPE_SIZE); /* fewer wake-ups when allowed */
    io_set_nonblock(d[1], 1);
    io_set_nonblock(v[1], 1);
    struct asuser_job_opts o = {.user = &up->u, .fn = file_child, .arg = f, .in_fds = {d[0], v[0]}, .nin = 2};
    f->job = asuser_job_start(EV_DEFAULT, &o, err);
    close(d[0]);
    close(v[0]);
    f->data_fd = d[1];
    f->verdict_fd = v[1];
    return f->job ? 0 : -1;
fail_errno:
    err_set(err, "cannot make a pipe: %s", strerror(errno));
    return -1;
}

void rest_upload_file_reap(struct upload *up, struct upload_file *f) { rest_tmpreap_start(&up->u, f->verdict_fd); }

int rest_upload_file_start(struct upload *up, const char *path)
{
    char err[ERR_LEN];
    if (++up->files > UPLOAD_FILES_MAX) {
        rest_upload_fail(up, 400, "too many files in one request (65536 at most)");
        return -1;
    }
    if (seen_before(up, path)) {
        err_set(err, "cannot upload two files to the same path in one request: %.200s", path);
        rest_upload_fail(up, 400, err);
        return -1;
    }
    struct upload_file *f = calloc(1, sizeof *f);
    if (f) f->path = strdup(path);
    if (!f || !f->path) {
        free(f);
        rest_upload_fail(up, 500, "out of memory");
        return -1;
    }
    f->up = up;
    f->data_fd = f->verdict_fd = -1;
    up->cur = f;
    if (spawn(up, f, err) < 0) {
        rest_upload_fail(up, 500, err); /* frees f as up->cur */
        return -1;
    }
    asuser_job_collect(f->job, 4096, rest_upload_file_done, up);
    rest_upload_watch_pipe(up, f->data_fd);
    return 0;
}

/* ---- the head ------------------------------------------------------------------- */

void rest_upload_file_meta_free(struct upload *up)
{
    for (size_t i = 0; i < up->nmeta; i++) {
        free(up->meta[i].name);
        free(up->meta[i].value);
    }
    free(up->meta);
}
