/*
 * relay.h - copying the job's stdout to the agent's stdout while remembering
 * whether it ended a line, so the sentinel always starts one.
 *
 * Owns the read end of the job's stdout pipe. Reads only when the previous
 * chunk has been written, so a stalled log reader applies back-pressure to the
 * job instead of growing a buffer, and the event loop never blocks on stdout:
 * signals are still forwarded and children still reaped meanwhile.
 */
#ifndef SA_RELAY_H
#define SA_RELAY_H

#include <ev.h>
#include <stddef.h>

/* Writes of at most PIPE_BUF bytes to a writable pipe never block. */
#define RELAY_CHUNK 4096
/* After the job exits, at most this much more is copied before the sentinel:
 * a background process that never stops writing cannot delay the report. */
#define RELAY_DRAIN_MAX (1024 * 1024)

struct relay {
    struct ev_loop *loop;
    ev_io rd, wr;
    int in_fd, out_fd;
    char buf[RELAY_CHUNK];
    size_t len, off;
    int relayed;   /* any byte written */
    char last;     /* last byte written */
    int broken;    /* stdout failed: output is discarded from then on */
};

void relay_start(struct relay *r, struct ev_loop *loop, int in_fd, int out_fd);
/* The job has exited: copy what is already in the pipe (bounded), write it
 * out, stop, and close the pipe. */
void relay_finish(struct relay *r);
/* 1 when the next byte on stdout starts a line. */
int relay_at_line_start(const struct relay *r);

#endif
