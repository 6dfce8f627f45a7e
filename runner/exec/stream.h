/*
 * stream.h - the command's stdout and stderr on their way back: one pipe
 * each, read as the loop finds them readable into a ring (ring.h) that keeps
 * the last N bytes.
 *
 * Owns the pipes' read ends and their watchers. When the command exits, what
 * it wrote is in the pipes: exec_stream_read_pending reads exactly that much,
 * so a background process that keeps writing cannot hold the call (README,
 * "`sandbox-agent exec`").
 */
#ifndef SA_RUNNER_EXEC_STREAM_H
#define SA_RUNNER_EXEC_STREAM_H

#include "agent/core/ring.h"

#include <ev.h>

struct exec_stream {
    ev_io w;
    int fd;         /* the read end; -1 once closed */
    int wfd;        /* the write end, for the child; -1 once handed over */
    int oom;        /* some output was dropped: no memory to keep it */
    struct ring ring;
};

/* Not open yet, keeping at most max bytes. */
void exec_stream_init(struct exec_stream *s, size_t max);
/* Make the pipe (both ends close-on-exec). Returns 0, or -1 with err. */
int exec_stream_open(struct exec_stream *s, char *err);
/* The child has the write end now: close ours, and start reading. */
void exec_stream_start(struct ev_loop *loop, struct exec_stream *s);
/* Read what the pipe holds right now, and no more. */
void exec_stream_read_pending(struct ev_loop *loop, struct exec_stream *s);
/* Close both ends (if open) and free the ring. */
void exec_stream_free(struct ev_loop *loop, struct exec_stream *s);

#endif
