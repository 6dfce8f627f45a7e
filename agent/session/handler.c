/*
 * handler.c - the warm handler process (see handler.h).
 */
#include "agent/session/handler.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void schedule_restart(struct handler *h, const char *why);

static int on_split(void *ctx, enum lsplit_kind kind, const char *p, size_t n)
{
    struct handler *h = ctx;
    if (kind == LSPLIT_LINE) h->ops->on_line(h->ctx, p, n);
    else h->ops->on_too_large(h->ctx, p, n);
    return 0;
}

static void close_out(struct handler *h)
{
    if (h->out_fd < 0) return;
    ev_io_stop(h->loop, &h->rd);
    close(h->out_fd);
    h->out_fd = -1;
    if (lsplit_pending(&h->split)) {
        /* A last line without its newline: the handler died mid-write or
         * closed stdout; it is output, not a reply. */
        h->ops->on_line(h->ctx, h->split.part.data, h->split.part.len);
    }
    lsplit_reset(&h->split);
}

/* Read up to budget bytes (stopping at a pause when heed_pause); returns 1
 * at EOF or error (the pipe is closed). */
static int read_some(struct handler *h, size_t budget, int heed_pause)
{
    size_t got = 0;
    while (h->out_fd >= 0 && got < budget && !(heed_pause && h->read_paused)) {
        ssize_t r = read(h->out_fd, h->rbuf, HANDLER_READ_CHUNK);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) return 0;
            log_warn("reading the handler's stdout: %s", strerror(errno));
            close_out(h);
            return 1;
        }
        if (r == 0) {
            close_out(h);
            return 1;
        }
        got += (size_t)r;
        lsplit_feed(&h->split, h->rbuf, (size_t)r, on_split, h);
    }
    return 0;
}

static void on_read(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    read_some(w->data, HANDLER_READ_BUDGET, 1);
}

static void on_write(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    struct handler *h = w->data;
    h->ops->on_writable(h->ctx);
}

static void close_in(struct handler *h)
{
    if (h->in_fd < 0) return;
    ev_io_stop(h->loop, &h->wr);
    close(h->in_fd);
    h->in_fd = -1;
}

static void on_exit_status(struct ev_loop *loop, pid_t pid, int status, void *ctx)
{
    struct handler *h = ctx;
    int code = spawn_exit_code(status);
    ev_tstamp ran = ev_now(loop) - h->started;
    /* Replies it wrote before dying are in the pipe now: hand them on first,
     * so a request it answered is not also reported as lost. */
    if (h->out_fd >= 0) {
        read_some(h, HANDLER_DRAIN_MAX, 0);
        close_out(h);
    }
    close_in(h);
    h->pid = 0;
    if (ran >= h->base * HANDLER_HEALTHY_FACTOR) h->attempt = 0;
    char why[96];
    snprintf(why, sizeof why, "handler (pid %d) exited with code %d", (int)pid, code);
    if (h->no_restart) log_info("%s", why);
    h->ops->on_exit(h->ctx, status);
    if (!h->no_restart) schedule_restart(h, why);
}

static void on_restart(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct handler *h = w->data;
    int exec_errno;
    char err[ERR_LEN];
    if (h->no_restart || h->pid > 0) return;
    if (handler_start(h, &exec_errno, err) < 0) {
        log_error("cannot restart the handler: %s", err);
        schedule_restart(h, "no handler");
        return;
    }
    if (exec_errno)
        log_error("cannot run the handler '%s': %s", h->argv[0],
                  spawn_exec_reason(exec_errno));
}

static void schedule_restart(struct handler *h, const char *why)
{
    int step = h->attempt < HANDLER_BACKOFF_STEPS ? h->attempt : HANDLER_BACKOFF_STEPS - 1;
    double delay = h->base;
    for (int i = 0; i < step; i++) delay *= 4;
    if (h->attempt < HANDLER_BACKOFF_STEPS) h->attempt++;
    log_warn("%s; restarting it in %.3g s", why, delay);
    ev_timer_set(&h->restart, delay, 0.);
    ev_timer_start(h->loop, &h->restart);
}

void handler_init(struct handler *h, struct ev_loop *loop, char **argv, double base,
                  const struct handler_ops *ops, void *ctx)
{
    memset(h, 0, sizeof *h);
    h->loop = loop;
    h->argv = argv;
    h->base = base;
    h->ops = ops;
    h->ctx = ctx;
    h->in_fd = h->out_fd = -1;
    lsplit_init(&h->split, HANDLER_REPLY_MAX);
    ev_init(&h->restart, on_restart);
    h->restart.data = h;
    h->rbuf = malloc(HANDLER_READ_CHUNK);
    errpipe_open(&h->err, loop, NULL);
}

int handler_start(struct handler *h, int *exec_errno, char *err)
{
    int in[2], out[2];
    *exec_errno = 0;
    if (!h->rbuf) {
        err_set(err, "out of memory");
        return -1;
    }
    if (pipe2(in, O_CLOEXEC) < 0) {
        err_set(err, "pipe: %s", strerror(errno));
        return -1;
    }
    if (pipe2(out, O_CLOEXEC) < 0) {
        err_set(err, "pipe: %s", strerror(errno));
        close(in[0]);
        close(in[1]);
        return -1;
    }
    /* Its own process group: shutdown signals reach what it started too.
     * No terminal: a daemon's handler is never in the foreground. */
    struct spawn_opts so = {.argv = h->argv, .new_pgrp = 1, .tty_fd = -1, .stdin_fd = in[0],
                            .stdout_fd = out[1], .stderr_fd = errpipe_child_fd(&h->err), .cwd = NULL};
    pid_t pid = spawn_child(&so, exec_errno, err);
    close(in[0]);
    close(out[1]);
    if (pid < 0) {
        close(in[1]);
        close(out[0]);
        return -1;
    }
    h->pid = pid;
    h->started = ev_now(h->loop);
    h->in_fd = in[1];
    h->out_fd = out[0];
    if (io_set_nonblock(h->in_fd, 1) < 0 || io_set_nonblock(h->out_fd, 1) < 0)
        log_warn("cannot make the handler pipes non-blocking: %s", strerror(errno));
    lsplit_reset(&h->split);
    ev_io_init(&h->rd, on_read, h->out_fd, EV_READ);
    h->rd.data = h;
    if (!h->read_paused) ev_io_start(h->loop, &h->rd);
    ev_io_init(&h->wr, on_write, h->in_fd, EV_WRITE);
    h->wr.data = h;
    reaper_watch(h->loop, &h->rw, pid, on_exit_status, h);
    log_info("handler started as pid %d", (int)pid);
    h->ops->on_started(h->ctx);
    return 0;
}

int handler_running(const struct handler *h) { return h->pid > 0; }

void handler_pause_read(struct handler *h, int on)
{
    h->read_paused = on;
    if (h->out_fd < 0) return;
    if (on) ev_io_stop(h->loop, &h->rd);
    else ev_io_start(h->loop, &h->rd);
}

void handler_want_write(struct handler *h, int on)
{
    if (on && h->in_fd >= 0) ev_io_start(h->loop, &h->wr);
    else if (!on) ev_io_stop(h->loop, &h->wr);
}

void handler_close_stdin(struct handler *h) { close_in(h); }

void handler_no_restart(struct handler *h)
{
    h->no_restart = 1;
    ev_timer_stop(h->loop, &h->restart);
}

void handler_free(struct handler *h)
{
    if (!h->loop) return; /* never initialised: its fds are not ours */
    close_in(h);
    if (h->out_fd >= 0) {
        ev_io_stop(h->loop, &h->rd);
        close(h->out_fd);
        h->out_fd = -1;
    }
    ev_timer_stop(h->loop, &h->restart);
    /* What the handler's family wrote to stderr last, as far as stderr
     * takes it right now. */
    if (h->err.active) relay_flush_now(&h->err.relay, HANDLER_DRAIN_MAX);
    errpipe_close(&h->err);
    lsplit_free(&h->split);
    free(h->rbuf);
    h->rbuf = NULL;
}
