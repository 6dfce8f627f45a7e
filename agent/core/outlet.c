/*
 * outlet.c - non-blocking writes to the agent's own output (see outlet.h).
 */
#include "agent/core/outlet.h"
#include "agent/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const char *fd_name(int fd)
{
    return fd == 1 ? "stdout" : fd == 2 ? "stderr" : "an output";
}

void outlet_grow_pipe(int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode)) return;
    int size = fcntl(fd, F_GETPIPE_SZ);
    if (size >= 0 && size < OUTLET_PIPE_SIZE && fcntl(fd, F_SETPIPE_SZ, OUTLET_PIPE_SIZE) < 0)
        log_debug("cannot enlarge the pipe on fd %d: %s", fd, strerror(errno));
}

void outlet_init(struct outlet *o, int fd)
{
    struct stat st;
    memset(o, 0, sizeof *o);
    o->fd = fd;
    o->kind = OUTLET_OTHER;
    o->chunk = OUTLET_PIPE_SIZE;
    if (fstat(fd, &st) < 0) return;
    if (S_ISFIFO(st.st_mode)) {
        o->kind = OUTLET_PIPE;
        o->can_splice = 1;
        int size = fcntl(fd, F_GETPIPE_SZ);
        if (size > 0) o->chunk = (size_t)size;
    } else if (S_ISSOCK(st.st_mode)) {
        /* splice(2) into a blocking socket blocks, SPLICE_F_NONBLOCK or not. */
        o->kind = OUTLET_SOCKET;
    } else if (S_ISREG(st.st_mode)) {
        int fl = fcntl(fd, F_GETFL);
        o->kind = OUTLET_FILE;
        o->can_splice = fl >= 0 && !(fl & O_APPEND); /* the kernel refuses O_APPEND */
    } else if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3) {
        o->kind = OUTLET_FILE; /* /dev/null */
        o->can_splice = 1;
    }
}

void outlet_note(struct outlet *o, const char *p, size_t n)
{
    if (!n) return;
    o->wrote = 1;
    o->last = p[n - 1];
}

void outlet_fail(struct outlet *o, int e)
{
    if (o->broken) return;
    o->broken = 1;
    log_warn("writing to %s: %s; output to it is discarded from now on", fd_name(o->fd), strerror(e));
}

int outlet_at_line_start(const struct outlet *o) { return !o->wrote || o->last == '\n'; }

size_t outlet_atomic_max(const struct outlet *o)
{
    return o->kind == OUTLET_PIPE || o->kind == OUTLET_OTHER ? PIPE_BUF : o->chunk;
}

/* poll says there is room (or an error that write will report). */
static int room_now(int fd)
{
    struct pollfd p = {fd, POLLOUT, 0};
    int r;
    do r = poll(&p, 1, 0);
    while (r < 0 && errno == EINTR);
    return r > 0;
}

ssize_t outlet_write(struct outlet *o, const void *p, size_t n)
{
    ssize_t w;
    if (o->broken) return -1;
    if (!n) return 0;
    switch (o->kind) {
    case OUTLET_SOCKET:
        w = send(o->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        break;
    case OUTLET_FILE:
        w = write(o->fd, p, n);
        break;
    default:
        /* A pipe with room for one page takes up to PIPE_BUF bytes whole. */
        if (!room_now(o->fd)) return 0;
        w = write(o->fd, p, n < PIPE_BUF ? n : PIPE_BUF);
        break;
    }
    if (w < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
        outlet_fail(o, errno);
        return -1;
    }
    outlet_note(o, p, (size_t)w);
    return w;
}

int outlet_same_file(int a, int b)
{
    struct stat sa, sb;
    if (fstat(a, &sa) < 0 || fstat(b, &sb) < 0) return 0;
    if (sa.st_dev != sb.st_dev || sa.st_ino != sb.st_ino) return 0;
    return S_ISFIFO(sa.st_mode) || S_ISREG(sa.st_mode);
}
