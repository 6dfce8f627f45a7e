/*
 * io.c - fd and path helpers (see io.h).
 */
#include "agent/core/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int io_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                struct pollfd pf = {fd, POLLOUT, 0};
                poll(&pf, 1, -1);
                continue;
            }
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int io_set_nonblock(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0) return -1;
    fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
    return fcntl(fd, F_SETFL, fl);
}

double io_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int io_wait(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - io_now();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd p = {fd, events, 0};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r > 0) return 0;
    }
}

int io_mkdir_p(const char *path, mode_t mode)
{
    size_t n = strlen(path);
    char *p = malloc(n + 1);
    if (!p) return -1;
    memcpy(p, path, n + 1);
    /* Strip trailing slashes, then create each prefix in turn. */
    while (n > 1 && p[n - 1] == '/') p[--n] = '\0';
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0') continue;
        char saved = p[i];
        p[i] = '\0';
        if (mkdir(p, mode) < 0 && errno != EEXIST) {
            int e = errno;
            free(p);
            errno = e;
            return -1;
        }
        p[i] = saved;
    }
    struct stat st;
    int r = stat(p, &st);
    int e = errno;
    free(p);
    if (r < 0) {
        errno = e;
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

void io_close_range(unsigned lo, unsigned hi, int cloexec)
{
#ifdef SYS_close_range
    /* CLOSE_RANGE_CLOEXEC (Linux 5.11) marks the range instead. */
    if (syscall(SYS_close_range, lo, hi, cloexec ? 4U /* CLOSE_RANGE_CLOEXEC */ : 0U) == 0) return;
#endif
    /* Older kernels: the fds that are open, else every number up to a bound. */
    DIR *d = opendir("/proc/self/fd");
    if (!d) {
        for (unsigned fd = lo; fd <= hi && fd < IO_FD_SCAN_MAX; fd++)
            cloexec ? fcntl((int)fd, F_SETFD, FD_CLOEXEC) : close((int)fd);
        return;
    }
    int dfd = dirfd(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        long fd = atol(de->d_name);
        if (de->d_name[0] < '0' || de->d_name[0] > '9' || fd < (long)lo || fd > (long)hi || fd == dfd) continue;
        if (cloexec) fcntl((int)fd, F_SETFD, FD_CLOEXEC);
        else close((int)fd);
    }
    closedir(d);
}

void io_cloexec_inherited(void) { io_close_range(3, ~0U, 1); }

int io_ensure_std_fds(void)
{
    /* A closed 0, 1 or 2 would be the next fd anything opens (the event
     * loop's epoll fd, a pipe to the job), and the first write to "stdout"
     * would land there. /dev/null keeps each slot taken; a closed stdout
     * then fails writes as EBADF would not, but nothing is misdirected. */
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
        int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (n < 0) return -1;
        if (n != fd) { /* a lower slot was free too: it is filled next round */
            int d = dup2(n, fd);
            close(n);
            if (d < 0) return -1;
        }
    }
    return 0;
}

int io_write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t n = strlen(text);
    ssize_t w = write(fd, text, n);
    int e = errno;
    close(fd);
    errno = e;
    return w == (ssize_t)n ? 0 : -1;
}
