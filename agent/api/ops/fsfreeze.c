/*
 * fsfreeze.c - POST /fsfreeze, POST /fsthaw: the ioctl in a helper, the
 * answer when it is reaped, the log held while frozen (see ops/fsfreeze.h).
 */
#include "agent/api/ops/fsfreeze.h"
#include "agent/api/asuser/job.h"
#include "agent/api/connect/rpc.h"
#include "agent/api/ops/freeze.h"
#include "agent/core/err.h"
#include "agent/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define MSG_MAX 512
/* linux/fs.h's (musl has no kernel headers). */
#ifndef FIFREEZE
#define FIFREEZE _IOWR('X', 119, int)
#define FITHAW _IOWR('X', 120, int)
#endif

static struct {
    const char *disk;
    int frozen;       /* this agent froze it and has not thawed it */
    int want;         /* the helper's operation: 1 freeze, 0 thaw */
    struct conn *c;   /* the call waiting for the helper */
} S;

/* In the helper: the ioctl; the status is 0 or the errno. */
static int fs_child(void *arg)
{
    (void)arg;
    int fd = open(S.disk, O_RDONLY | O_CLOEXEC);
    int e = 0;
    if (fd < 0 || ioctl(fd, S.want ? FIFREEZE : FITHAW, 0) < 0) e = errno;
    /* Already frozen (EBUSY), or not frozen (EINVAL): what was asked holds. */
    if ((S.want && e == EBUSY) || (!S.want && e == EINVAL)) e = 0;
    return asuser_job_reply(e, e ? strerror(e) : "", e ? strlen(strerror(e)) : 0) < 0;
}

/* stderr is a file on the disk's filesystem: its lines would wait for the thaw. */
static int log_on_disk(void)
{
    struct stat a, b;
    return fstat(STDERR_FILENO, &a) == 0 && S_ISREG(a.st_mode) && stat(S.disk, &b) == 0 && a.st_dev == b.st_dev;
}

static void on_gone(struct conn *c, void *ctx) { S.c = NULL; }

static void on_done(void *ctx, int32_t status, const char *data, size_t n)
{
    struct conn *c = S.c;
    char why[ERR_LEN];
    S.c = NULL;
    ops_freeze_unlock();
    if (status == 0) {
        if (S.want && !S.frozen && log_on_disk()) log_hold(1);
        if (!S.want) {
            unsigned dropped = log_hold(0);
            if (dropped) log_warn("api: %u diagnostics dropped while the filesystem of %s was frozen", dropped, S.disk);
        }
        S.frozen = S.want;
        log_info("api: the filesystem of %s is %s", S.disk, S.want ? "frozen" : "thawed");
        if (c) conn_respond(c, 204, NULL, NULL, "", 0);
        return;
    }
    err_set(why, "cannot %s the filesystem of %s: %.*s", S.want ? "freeze" : "thaw", S.disk, (int)n, data);
    if (c) rpc_error_response(c, status == ASUSER_JOB_FAILED ? RPC_INTERNAL : connect_code_of_errno(status), why, NULL);
}

void ops_fsfreeze_respond(struct conn *c, int freeze)
{
    char err[ERR_LEN];
    if (!ops_freeze_lock()) {
        rpc_error_response(c, RPC_UNAVAILABLE, "another freeze, thaw or filesystem freeze is in flight", NULL);
        return;
    }
    S.want = freeze;
    struct asuser_job_opts o = {.fn = fs_child};
    struct asuser_job *j = asuser_job_start(conn_loop(c), &o, err);
    if (!j) {
        ops_freeze_unlock();
        rpc_error_response(c, RPC_INTERNAL, err, NULL);
        return;
    }
    S.c = c;
    struct conn_hooks h = {.gone = on_gone};
    conn_set_hooks(c, &h);
    asuser_job_collect(j, MSG_MAX, on_done, NULL);
}

void ops_fsfreeze_start(const char *disk)
{
    memset(&S, 0, sizeof S);
    S.disk = disk && *disk ? disk : "/";
}

void ops_fsfreeze_stop(void)
{
    if (S.frozen) {
        int fd = open(S.disk, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            (void)ioctl(fd, FITHAW, 0);
            close(fd);
        }
        log_hold(0);
    }
    memset(&S, 0, sizeof S);
}
