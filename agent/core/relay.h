/*
 * relay.h - copying a pipe the agent owns (a child's stdout or stderr) to an
 * outlet (outlet.h), inside the event loop, at pipe speed, in bounded memory.
 *
 * Owns the pipe's read end and, in the fast path, a small peek pipe. Moves
 * only what the outlet takes, so a stalled reader slows the child down
 * (back-pressure) instead of growing a buffer, and never blocks the loop:
 * signals are still forwarded and children still reaped meanwhile.
 *
 * Three ways to move, chosen per outlet:
 * - splice: tee(2) the head of the pipe into the peek pipe, splice(2) it to
 *   the outlet (a pipe, a file, /dev/null: no copy through user space), then
 *   read the one byte of the peek copy that was the last one moved, so the
 *   outlet knows whether the output ended a line. Refused by the kernel
 *   (EINVAL): copy instead, for good.
 * - copy: read(2) into a 64 KiB buffer, write through the outlet (a socket,
 *   an O_APPEND file).
 * - lines (a stderr relay sharing its file with protocol lines): only whole
 *   lines are written, each write at most PIPE_BUF bytes and so never split
 *   by another writer. A line longer than RELAY_LINE_MAX - 1 bytes is cut
 *   into pieces of that size, and an unterminated last line is ended when
 *   the pipe closes or is drained, each with an added newline: whatever the
 *   child writes, the agent's next protocol line starts a line.
 */
#ifndef SA_CORE_RELAY_H
#define SA_CORE_RELAY_H

#include "agent/core/outlet.h"

#include <ev.h>
#include <stddef.h>

#define RELAY_LINE_MAX 4096          /* = PIPE_BUF: a line write is atomic */
#define RELAY_COPY_BUF (64 * 1024)
/* Moves per wakeup, so one busy relay cannot starve the other watchers. */
#define RELAY_ROUNDS 8

enum relay_mode { RELAY_SPLICE, RELAY_COPY, RELAY_LINES };

struct relay {
    struct ev_loop *loop;
    ev_io rd, wr;
    int in_fd;
    struct outlet *out;
    enum relay_mode mode;
    int peek[2];        /* splice mode: the tee copy, read for its last byte */
    char *buf;          /* copy and line modes */
    size_t cap, len, off;
    int eof;            /* every writer has closed the pipe */
    int draining;       /* relay_drain is running */
    int finishing;      /* line mode: end a pending partial line */
    size_t budget;      /* bytes the drain may still take from the pipe */
    unsigned long long moved;
};

/* Start relaying in_fd (a pipe read end, now owned: made non-blocking and
 * enlarged) to out; lines selects line mode. Returns 0, or -1 with errno
 * when no memory could be had (in_fd is then left alone). */
int relay_start(struct relay *r, struct ev_loop *loop, int in_fd, struct outlet *out, int lines);
/* Copy what is in the pipe now, at most max more bytes of it, write out
 * what is buffered, then stop. relay_draining() is 1 until that is done. */
void relay_drain(struct relay *r, size_t max);
int relay_draining(const struct relay *r);
/* The same without the loop: move what the outlet takes right now (at most
 * max bytes from the pipe) and return; for a last flush before exit. */
void relay_flush_now(struct relay *r, size_t max);
/* Stop moving (watchers off; the pipe stays open). Returns how many bytes
 * were not delivered: what the pipe and the buffer still hold. */
size_t relay_halt(struct relay *r);
/* 1 while a writer (the child, or what it left behind) holds the pipe. */
int relay_writers(const struct relay *r);
/* 1 while the pipe can still yield bytes: a writer holds it or it is not
 * empty. */
int relay_live(const struct relay *r);
/* Stop and close the read end and the peek pipe; free the buffer. */
void relay_close(struct relay *r);

#endif
