/*
 * io.h - small fd and path helpers shared by the modes: full writes, flags,
 * mkdir -p, and closing what the agent inherited.
 */
#ifndef SA_CORE_IO_H
#define SA_CORE_IO_H

#include <stddef.h>
#include <sys/types.h>

/* Write all n bytes (retrying EINTR and short writes, waiting out EAGAIN).
 * Returns 0, or -1 with errno set. */
int io_write_all(int fd, const void *p, size_t n);
int io_set_nonblock(int fd, int on);
/* CLOCK_MONOTONIC in seconds: the clock of every deadline below. */
double io_now(void);
/* Wait until fd is ready for events (POLLIN, POLLOUT) or the deadline
 * (io_now's clock) passes, retrying EINTR. Returns 0 when ready (or in
 * error: the next read or write says which), or -1 with errno (ETIMEDOUT).
 * For a helper process of its own that may block: never in the loop. */
int io_wait(int fd, short events, double deadline);
/* Write text to the file at path (opened for writing, not created) in one
 * write: a kernel knob (cgroup, /proc). Returns 0, or -1 with errno. */
int io_write_text(const char *path, const char *text);
/* mkdir -p; mode for the directories it creates. Returns 0 or -1 with errno. */
int io_mkdir_p(const char *path, mode_t mode);
/* Mark every fd >= 3 close-on-exec: nothing the agent was handed leaks into
 * the workload. */
void io_cloexec_inherited(void);
/* Close (or, with cloexec, mark close-on-exec) every fd from lo to hi:
 * close_range(2), else the open ones /proc/self/fd lists, else every number
 * below IO_FD_SCAN_MAX. For a child before exec, and the start-up above. */
#define IO_FD_SCAN_MAX 65536u
void io_close_range(unsigned lo, unsigned hi, int cloexec);
/* Open /dev/null on whichever of fds 0, 1, 2 is closed, before anything else
 * opens an fd (which would otherwise take the free slot). Returns 0 or -1. */
int io_ensure_std_fds(void);

#endif
