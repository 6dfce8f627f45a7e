/*
 * outlet.h - writing to one of the agent's own output fds (stdout, stderr)
 * without ever blocking the event loop, and remembering whether what was
 * written so far ended a line (a protocol line must start one).
 *
 * Owns no fd: the outlet writes to an fd it was given and never changes its
 * flags, because the open file description is shared with whoever handed it
 * to the agent (a shell, the container runtime) and O_NONBLOCK on it would
 * break their own writes. Instead each kind of file gets a way that cannot
 * block: a pipe takes a write of at most PIPE_BUF bytes whole once poll says
 * it has room (the agent is its only writer), a socket takes MSG_DONTWAIT,
 * a regular file and /dev/null never block. A terminal is written like a
 * pipe; a stopped terminal can still hold such a write (README, "Where the
 * contract is silent").
 */
#ifndef SA_CORE_OUTLET_H
#define SA_CORE_OUTLET_H

#include <stddef.h>
#include <sys/types.h>

enum outlet_kind { OUTLET_PIPE, OUTLET_SOCKET, OUTLET_FILE, OUTLET_OTHER };

/* The size the agent asks for its relay pipes and a pipe on its stdout
 * (F_SETPIPE_SZ): fewer, larger moves; the unprivileged limit by default. */
#define OUTLET_PIPE_SIZE (1024 * 1024)

struct outlet {
    int fd;
    enum outlet_kind kind;
    int can_splice;   /* splice(2) into it may be tried (cleared on EINVAL) */
    size_t chunk;     /* most bytes worth moving in one splice */
    int broken;       /* a write failed for good: everything is discarded */
    int wrote;        /* any byte written */
    char last;        /* the last byte written */
};

/* Look at what fd is (fstat) and pick the way to write it. */
void outlet_init(struct outlet *o, int fd);
/* Ask for a larger pipe when fd is one (OUTLET_PIPE_SIZE); best effort. */
void outlet_grow_pipe(int fd);

/* Write up to n bytes now. Returns the bytes taken (0: it would block, try
 * when writable), or -1 when the outlet is broken (logged once). */
ssize_t outlet_write(struct outlet *o, const void *p, size_t n);
/* The most outlet_write takes in one call (PIPE_BUF for a pipe: taken whole
 * or not at all, so a line of that size is never split by another writer). */
size_t outlet_atomic_max(const struct outlet *o);
/* Record bytes that reached the outlet some other way (splice). */
void outlet_note(struct outlet *o, const char *p, size_t n);
/* A write to it failed with errno e: discard from now on (logged once). */
void outlet_fail(struct outlet *o, int e);
/* 1 when the next byte written starts a line. */
int outlet_at_line_start(const struct outlet *o);

/* 1 when fds a and b are the same pipe or the same regular file (fstat):
 * a child given one could read back what is written to the other. */
int outlet_same_file(int a, int b);

#endif
