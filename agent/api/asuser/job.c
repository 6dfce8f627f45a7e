/*
 * asuser_job.c - helper processes for filesystem operations (see asuser_job.h).
 *
 * A job record lives until both ends are settled: the helper reaped (its
 * ev_child watcher must stay valid until then) and the caller done with it
 * (collected, or detached). Whichever comes last frees it.
 */
#include "agent/api/asuser/job.h"
#include "agent/api/asuser/asuser.h"
#include "agent/core/buf.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/protocol.h"
#include "agent/core/spawn.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define READ_CHUNK (64 * 1024)

struct asuser_job {
    struct ev_loop *loop;
    pid_t pid;
    int fd;                    /* the pipe's read end; -1 once closed */
    struct reaper_watch rw;
    int reaped, wstatus;
    int detached;              /* the caller is done with it */
    /* collecting */
    ev_io io;
    struct buf out;
    size_t max;
    int eof, collecting;
    int spent;                 /* the budget refused the frame's memory */
    asuser_job_done_fn done;
    asuser_job_exit_fn exited;
    void *ctx;
};

static unsigned running;

unsigned asuser_job_running(void) { return running; }
int asuser_job_fd(const struct asuser_job *j) { return j->fd; }

/* ---- the child ----------------------------------------------------------- */

/* Put the result pipe at 3 and the inputs at 4, 5; close the rest. */
static int child_fds(const struct asuser_job_opts *o, int out)
{
    int keep[3] = {out, o->nin > 0 ? o->in_fds[0] : -1, o->nin > 1 ? o->in_fds[1] : -1};
    int high[3];
    for (int i = 0; i < 3; i++)
        if ((high[i] = keep[i] < 0 ? -1 : fcntl(keep[i], F_DUPFD, 64)) < 0 && keep[i] >= 0) return -1;
    for (int i = 0; i < 3; i++)
        if (high[i] >= 0 && dup2(high[i], ASUSER_JOB_OUT_FD + i) < 0) return -1;
    io_close_range((unsigned)(ASUSER_JOB_OUT_FD + 1 + (o->nin > 2 ? 2 : o->nin)), ~0U, 0);
    return 0;
}

static void put_status(unsigned char *head, int32_t status)
{
    for (int i = 0; i < 4; i++) head[i] = (unsigned char)((uint32_t)status >> (24 - 8 * i));
}

int asuser_job_reply(int32_t status, const char *data, size_t n)
{
    unsigned char head[4];
    put_status(head, status);
    if (io_write_all(ASUSER_JOB_OUT_FD, head, 4) < 0) return -1;
    return n ? io_write_all(ASUSER_JOB_OUT_FD, data, n) : 0;
}

int asuser_job_reply_fd(int32_t status, const char *data, size_t n, int fd)
{
    unsigned char head[4];
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct iovec iov[2] = {{head, 4}, {(void *)(uintptr_t)data, n}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = n ? 2 : 1, .msg_control = ctl.space,
                       .msg_controllen = sizeof ctl.space};
    put_status(head, status);
    memset(&ctl, 0, sizeof ctl);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    ssize_t w;
    do w = sendmsg(ASUSER_JOB_OUT_FD, &m, MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    /* A frame this small goes whole into an empty socket, or not at all. */
    if (w >= 0 && (size_t)w != 4 + n) errno = EIO;
    return w >= 0 && (size_t)w == 4 + n ? 0 : -1;
}

static void child_main(const struct asuser_job_opts *o, int out, pid_t parent)
{
    if (child_fds(o, out) < 0) _exit(127);
    if (o->deathsig && (prctl(PR_SET_PDEATHSIG, o->deathsig) < 0 || getppid() != parent)) _exit(127);
    if (o->user && asuser_become(o->user) < 0) {
        char msg[ERR_LEN];
        int n = snprintf(msg, sizeof msg, "cannot act as user '%s': %s", o->user->name, strerror(errno));
        asuser_job_reply(ASUSER_JOB_FAILED, msg, (size_t)n);
        _exit(1);
    }
    _exit(o->fn(o->arg));
}

/* ---- the loop ------------------------------------------------------------ */

static void close_pipe(struct asuser_job *j)
{
    if (j->fd < 0) return;
    ev_io_stop(j->loop, &j->io);
    close(j->fd);
    j->fd = -1;
}

static void maybe_free(struct asuser_job *j)
{
    if (!j->reaped || !j->detached) return;
    close_pipe(j);
    buf_free(&j->out);
    free(j);
}

/* Collecting, once the pipe is at EOF and the helper reaped (the caller
 * then frees the record with maybe_free). */
static void deliver(struct asuser_job *j)
{
    if (!j->collecting || !j->eof || !j->reaped || j->detached) return;
    const char *d = j->out.data;
    size_t n = j->out.len;
    int32_t status = ASUSER_JOB_FAILED;
    char msg[ERR_LEN];
    if (j->spent) {
        status = ASUSER_JOB_SPENT;
        d = SERVE_BUDGET_SPENT;
        n = strlen(d);
    } else if (n >= 4) {
        const unsigned char *u = (const unsigned char *)d;
        status = (int32_t)((uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3]);
        d += 4;
        n -= 4;
    } else {
        int sig = WIFSIGNALED(j->wstatus) ? WTERMSIG(j->wstatus) : 0;
        n = (size_t)snprintf(msg, sizeof msg, "the helper process ended without a result (%s %d)",
                             sig ? "signal" : "exit status", sig ? sig : WEXITSTATUS(j->wstatus));
        d = msg;
    }
    j->detached = 1;
    j->done(j->ctx, status, d ? d : "", n);
}

static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    struct asuser_job *j = w->data;
    /* Read straight into the frame (a listing's megabytes are not copied
     * twice); one byte past the bound tells a frame too large. Its memory
     * is drawn from the budget: a small frame's whatever it says. */
    size_t left = j->out.max - j->out.len, want = left < READ_CHUNK ? left + 1 : READ_CHUNK;
    if (j->out.len + want <= ASUSER_JOB_SMALL) buf_reserve_force(&j->out, want - 1);
    int bad = buf_reserve(&j->out, want - 1) < 0;
    j->spent = bad && !buf_over(&j->out, want - 1);
    ssize_t r = bad ? 0 : read(j->fd, j->out.data + j->out.len, want);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (r > 0 && (j->out.len += (size_t)r) <= j->out.max) return;
    if (bad || r > 0) { /* past the bound, or no memory: not a frame we take */
        kill(j->pid, SIGKILL);
        buf_reset(&j->out);
    }
    j->eof = 1;
    close_pipe(j);
    deliver(j);
    maybe_free(j);
}

static void on_reaped(struct ev_loop *loop, pid_t pid, int status, void *ctx)
{
    struct asuser_job *j = ctx;
    j->reaped = 1;
    j->wstatus = status;
    running--;
    if (j->exited && !j->detached) {
        /* It may detach (or cancel) the job, which frees it then: j is not
         * touched after (a raw job has nothing to deliver). */
        j->exited(j->ctx, status);
        return;
    }
    deliver(j);
    maybe_free(j);
}

ssize_t asuser_job_recv(struct asuser_job *j, void *p, size_t n, int *fd)
{
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(4 * sizeof(int))];
    } ctl;
    struct iovec iov = {p, n};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space, .msg_controllen = sizeof ctl.space};
    ssize_t r = recvmsg(j->fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (r < 0) return r;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int got;
            memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
            if (*fd < 0) *fd = got; /* the first; a helper has no business sending more */
            else close(got);
        }
    }
    return r;
}

struct asuser_job *asuser_job_start(struct ev_loop *loop, const struct asuser_job_opts *o, char *err)
{
    int p[2];
    struct asuser_job *j = calloc(1, sizeof *j);
    if (!j || (o->socket ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) : pipe2(p, O_CLOEXEC)) < 0) {
        int e = j ? errno : ENOMEM;
        free(j);
        err_set(err, "cannot start a helper process: %s", strerror(e));
        errno = e;
        return NULL;
    }
    pid_t parent = getpid();
    pid_t pid = spawn_fork(0);
    if (pid == 0) child_main(o, p[1], parent);
    int e = errno;
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        free(j);
        err_set(err, "cannot start a helper process: %s", strerror(e));
        errno = e;
        return NULL;
    }
    j->loop = loop;
    j->pid = pid;
    j->fd = p[0];
    io_set_nonblock(j->fd, 1);
    buf_init_budget(&j->out, 0);
    ev_io_init(&j->io, on_readable, j->fd, EV_READ);
    j->io.data = j;
    reaper_watch(loop, &j->rw, pid, on_reaped, j);
    running++;
    return j;
}

void asuser_job_collect(struct asuser_job *j, size_t max, asuser_job_done_fn done, void *ctx)
{
    j->collecting = 1;
    j->out.max = max + 4;
    j->done = done;
    j->ctx = ctx;
    ev_io_start(j->loop, &j->io);
}

void asuser_job_on_exit(struct asuser_job *j, asuser_job_exit_fn fn, void *ctx)
{
    j->exited = fn;
    j->ctx = ctx;
}

void asuser_job_detach(struct asuser_job *j)
{
    if (!j) return;
    j->detached = 1;
    j->done = NULL;
    j->exited = NULL;
    close_pipe(j);
    maybe_free(j);
}

void asuser_job_cancel(struct asuser_job *j)
{
    if (!j) return;
    if (!j->reaped) kill(j->pid, SIGKILL);
    asuser_job_detach(j);
}
