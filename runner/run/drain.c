/*
 * drain.c - the drain process (see drain.h).
 *
 * It works with blocking calls: it has nothing else to do, and a stalled
 * log reader only holds it (and so the orphans writing), never the agent.
 */
#include "runner/run/drain.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Close every fd but 0-2 and keep[0..n) (n <= DRAIN_MAX_FDS + 1). */
static void close_others(const int *keep, int n)
{
    int k[DRAIN_MAX_FDS + 1];
    memcpy(k, keep, sizeof k[0] * (size_t)n);
    for (int i = 1; i < n; i++) /* insertion sort: at most three */
        for (int j = i; j > 0 && k[j - 1] > k[j]; j--) {
            int t = k[j];
            k[j] = k[j - 1];
            k[j - 1] = t;
        }
    unsigned lo = 3;
    for (int i = 0; i < n; i++) {
        if (k[i] < (int)lo) continue;
        if (k[i] > (int)lo) io_close_range(lo, (unsigned)k[i] - 1, 0);
        lo = (unsigned)k[i] + 1;
    }
    io_close_range(lo, ~0U, 0);
}

/* Move what fd has to stdout; 0 at EOF, -1 when stdout is gone. */
static int copy_some(int fd)
{
    static char buf[64 * 1024];
    ssize_t n = splice(fd, NULL, STDOUT_FILENO, NULL, 1 << 20, 0);
    if (n >= 0) return n > 0;
    if (errno == EINTR) return 1;
    if (errno != EINVAL) return errno == EPIPE ? -1 : 0;
    n = read(fd, buf, sizeof buf); /* splice refused (an O_APPEND file) */
    if (n <= 0) return n < 0 && errno == EINTR;
    return io_write_all(STDOUT_FILENO, buf, (size_t)n) < 0 ? -1 : 1;
}

static void copy_until_eof(const int *fds, int n)
{
    struct pollfd p[DRAIN_MAX_FDS];
    int open = n;
    for (int i = 0; i < n; i++) {
        io_set_nonblock(fds[i], 0); /* ours alone now */
        p[i].fd = fds[i];
        p[i].events = POLLIN;
    }
    while (open > 0) {
        if (poll(p, (nfds_t)n, -1) < 0) {
            if (errno == EINTR) continue;
            return;
        }
        for (int i = 0; i < n; i++) {
            if (p[i].fd < 0 || !p[i].revents) continue;
            int r = copy_some(p[i].fd);
            if (r < 0) return;
            if (r == 0) {
                p[i].fd = -1;
                open--;
            }
        }
    }
}

static void child(const int *fds, int n, int ctl, struct nonce *secret)
{
    int keep[DRAIN_MAX_FDS + 1];
    char go;
    nonce_wipe(secret);
    nonce_forget();
    memcpy(keep, fds, sizeof keep[0] * (size_t)n);
    keep[n] = ctl;
    close_others(keep, n + 1);
    ssize_t r;
    do r = read(ctl, &go, 1);
    while (r < 0 && errno == EINTR);
    if (r == 1) copy_until_eof(fds, n);
    _exit(0);
}

int drain_fork(struct drain *d, const int *fds, int n, struct nonce *secret)
{
    int p[2];
    d->pid = 0;
    d->ctl = -1;
    if (n > DRAIN_MAX_FDS) n = DRAIN_MAX_FDS;
    if (pipe2(p, O_CLOEXEC) < 0) {
        log_warn("cannot make the drain process: pipe: %s", strerror(errno));
        return -1;
    }
    /* In the agent's process group, so whatever stops the agent's group
     * stops it too. */
    pid_t pid = spawn_fork(0);
    if (pid == 0) child(fds, n, p[0], secret);
    close(p[0]);
    if (pid < 0) {
        log_warn("cannot make the drain process: fork: %s", strerror(errno));
        close(p[1]);
        return -1;
    }
    d->pid = pid;
    d->ctl = p[1];
    log_debug("drain process %d waits to take over the job's output", (int)pid);
    return 0;
}

void drain_go(struct drain *d)
{
    if (d->ctl < 0) return;
    if (write(d->ctl, "g", 1) == 1)
        log_info("a leftover of the job still writes: drain process %d copies its output", (int)d->pid);
    close(d->ctl);
    d->ctl = -1;
}

void drain_cancel(struct drain *d)
{
    if (d->ctl >= 0) close(d->ctl);
    d->ctl = -1;
}
