/*
 * pio.c - a running process's fds and its end (see pimpl.h).
 *
 * Output is read whenever it is there, into the channel's ring, as far as
 * the paced subscribers have room for it (ppace.c); the rest waits in the
 * pipe, and the child with it.
 * Input is a bounded queue written when the child's stdin (or the pty) is
 * writable, never blocking the loop. The end is final when the leader has
 * exited and its output has reached EOF, or PROC_DRAIN_SECONDS after the exit
 * when something else (a background child) still holds it open (held output
 * adds at most the stall time: ppace.c).
 */
#include "agent/proc/proc_priv.h"
#include "agent/core/budget.h"
#include "agent/core/err.h"
#include "agent/core/log.h"
#include "agent/core/pause.h"
#include "agent/core/protocol.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

/* A read into the ring's tail takes up to READ_MAX; a ring still growing
 * is filled through a chunk of READ_CHUNK. */
#define READ_CHUNK 65536
#define READ_MAX (1u << 20)
/* Bytes read per wakeup, so one chatty process cannot starve the loop. */
#define READ_BUDGET (1u << 20)
/* Reads per wakeup at most (a trickle of small writes). */
#define READ_ROUNDS 16
/* A pipe a read found full (its writer was waiting) grows to this, once:
 * the writer then blocks 16 times less often (1 MiB is the size a user
 * may set without privilege, /proc/sys/fs/pipe-max-size's default). */
#define PIPE_BIG (1 << 20)
#define PIPE_DEFAULT 65536
/* A drained input queue whose buffer grew past this gives the memory back. */
#define INQ_KEEP_CAP 65536

static void finish(struct proc *p);

void proc_io_notify(struct proc *p)
{
    /* A callback may unsubscribe itself: take the next one first. */
    for (struct proc_sub *s = p->subs, *next; s; s = next) {
        next = s->next;
        s->fn(s, s->ctx);
    }
}

static void chan_close(struct proc *p, struct proc_chan_io *c)
{
    if (c->fd < 0) return;
    ev_io_stop(p->t->loop, &c->w);
    close(c->fd);
    c->fd = -1;
}

static int chans_open(const struct proc *p)
{
    for (int i = 0; i < PROC_CHANS; i++)
        if (p->ch[i].fd >= 0) return 1;
    return 0;
}

/* c's ring could not grow (the memory budget, or memory): said once, until
 * it grows again. */
static void say_refused(const struct proc *p, const struct proc_chan_io *c, int was, const char *then)
{
    if (was || !c->ring.refused) return;
    log_warn("process %d: its output kept stays at %zu bytes for now (the memory budget, " ENV_MEMORY_BUDGET
             ", or memory): %s", (int)p->pid, c->ring.cap, then);
}

/* One read of at most max bytes into c's ring: straight into its tail once
 * it has grown, else through a chunk. Returns what read(2) did. */
static ssize_t read_once(struct proc *p, struct proc_chan_io *c, size_t max)
{
    static char chunk[READ_CHUNK];
    size_t span;
    char *tail = ring_tail(&c->ring, &span);
    if (tail) {
        ssize_t r = read(c->fd, tail, max < span ? max : span);
        if (r > 0) ring_commit(&c->ring, (size_t)r);
        return r;
    }
    ssize_t r = read(c->fd, chunk, max < sizeof chunk ? max : sizeof chunk);
    int was = c->ring.refused;
    if (r > 0) ring_write(&c->ring, chunk, (size_t)r);
    say_refused(p, c, was, "older output is dropped");
    return r;
}

/* The writer filled the pipe: a bigger one, once (a pty or a refusal: as is). */
static void pipe_grow(struct proc_chan_io *c)
{
    if (c->grown) return;
    c->grown = 1;
    fcntl(c->fd, F_SETPIPE_SZ, PIPE_BIG);
}

/* Read what c holds, for a bounded number of bytes and reads and, when
 * paced, as far as the paced subscribers have room (else c is held).
 * Returns the bytes read; EOF (or EIO: a pty whose last slave closed)
 * closes c. */
static size_t chan_read_paced(struct proc *p, struct proc_chan_io *c, int paced)
{
    size_t got = 0, room = !paced ? SIZE_MAX : c->held ? 0 : proc_pace_room(p, (int)(c - p->ch));
    for (int round = 0; c->fd >= 0 && round < READ_ROUNDS && got < READ_BUDGET; round++) {
        if (room == 0) {
            proc_pace_hold(p, c);
            break;
        }
        size_t max = READ_MAX < room ? READ_MAX : room;
        /* A paced read fits in what the ring may keep: when it cannot grow
         * (the memory budget), no further than the ring is now (ppace.c). */
        /* A paced read fits in what the ring may keep: where the memory
         * budget might refuse the ring's growth, it grows first (by what one
         * read through the chunk takes), and when it cannot the read goes no
         * further than the ring is now (ppace.c). */
        int was = c->ring.refused;
        if (room != SIZE_MAX && budget_room() < c->ring.max &&
            ring_reserve(&c->ring, max < READ_CHUNK ? max : READ_CHUNK) < 0) {
            say_refused(p, c, was, "the process waits for its readers");
            room = proc_pace_room(p, (int)(c - p->ch));
            if (room == 0) continue; /* held, above */
            if (room < max) max = room;
        }
        ssize_t r = read_once(p, c, max);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EAGAIN) break;
        if (r <= 0) {
            chan_close(p, c);
            break;
        }
        if ((size_t)r >= PIPE_DEFAULT) pipe_grow(c);
        got += (size_t)r;
        if (room != SIZE_MAX) room -= (size_t)r;
    }
    return got;
}

static size_t chan_read(struct proc *p, struct proc_chan_io *c) { return chan_read_paced(p, c, 1); }

static void maybe_finish(struct proc *p)
{
    if (p->leader_exited && !chans_open(p)) finish(p);
}

static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    struct proc_chan_io *c = w->data;
    struct proc *p = c->p;
    if (chan_read(p, c)) proc_io_notify(p);
    maybe_finish(p);
}

static void on_drain_over(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct proc *p = w->data;
    size_t got = 0;
    /* Output held back for a reader is not dropped yet: look again later,
     * for at most the stall time after the exit (a background child that
     * writes on must not keep the end away from a reader that reads on). */
    for (int i = 0; i < PROC_CHANS; i++)
        if (p->ch[i].held && pause_now() - p->exited_at < p->t->o.stall) {
            ev_timer_set(&p->drain, PROC_DRAIN_SECONDS, 0.);
            ev_timer_start(loop, &p->drain);
            return;
        }
    /* What is there now is the last of it (a paced reader skips what it has
     * no room for); whoever holds the pipes now writes into the void. */
    for (int i = 0; i < PROC_CHANS; i++) {
        got += chan_read_paced(p, &p->ch[i], 0);
        chan_close(p, &p->ch[i]);
    }
    if (got) proc_io_notify(p);
    finish(p);
}

/* The child's report (core/spawn.h): exec's errno for the end; a failed cgroup
 * join gives cgroups up, as proc_group_started says at the start. */
static void report_in(struct proc *p)
{
    struct spawn_result res;
    if (!p->report || !spawn_report_poll(p->report, &res)) return;
    p->exec_errno = res.exec_errno;
    p->cwd_failed = res.cwd_failed;
    ev_io_stop(p->t->loop, &p->report_w);
    spawn_report_free(p->report);
    p->report = NULL;
    if (res.cgroup_errno && !p->leader_exited) proc_group_started(p->g, p->pid, res.cgroup_errno);
}

static void on_report(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    report_in(w->data);
}

static void on_exit_status(struct ev_loop *loop, pid_t pid, int status, void *ctx)
{
    (void)pid;
    struct proc *p = ctx;
    size_t got = 0;
    report_in(p); /* complete once the child is gone */
    p->leader_exited = 1;
    p->exited_at = pause_now();
    p->status = status;
    ev_timer_stop(loop, &p->deadline);
    proc_group_leader_exited(p->g); /* its background children run on */
    /* Everything the leader wrote is in the pipes by now. */
    for (int i = 0; i < PROC_CHANS; i++) got += chan_read(p, &p->ch[i]);
    if (got) proc_io_notify(p);
    if (!chans_open(p)) {
        finish(p);
        return;
    }
    ev_timer_set(&p->drain, PROC_DRAIN_SECONDS, 0.);
    ev_timer_start(loop, &p->drain);
}

static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    proc_stop(w->data);
}

static void input_close(struct proc *p)
{
    if (p->in_fd >= 0) {
        ev_io_stop(p->t->loop, &p->in_w);
        close(p->in_fd);
        p->in_fd = -1;
    }
    p->in_close = 0;
    buf_free(&p->inq);
    p->inq_off = 0;
}

/* Write what the queue holds. Returns 0, or -1 (with errno) when the child's
 * end is gone (the queue is then dropped and the input closed). */
static int input_flush(struct proc *p)
{
    while (p->inq_off < p->inq.len) {
        ssize_t w = write(p->in_fd, p->inq.data + p->inq_off, p->inq.len - p->inq_off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == EAGAIN) {
            ev_io_start(p->t->loop, &p->in_w);
            return 0;
        }
        if (w < 0) {
            int e = errno;
            log_debug("process %d: input: %s; dropping %zu bytes", (int)p->pid, strerror(e),
                      p->inq.len - p->inq_off);
            input_close(p);
            errno = e;
            return -1;
        }
        p->inq_off += (size_t)w;
    }
    ev_io_stop(p->t->loop, &p->in_w);
    if (p->inq.cap > INQ_KEEP_CAP) buf_free(&p->inq);
    else buf_reset(&p->inq);
    p->inq_off = 0;
    if (p->in_close) input_close(p);
    return 0;
}

static void on_writable(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    input_flush(w->data);
}

int proc_io_input(struct proc *p, const void *data, size_t n, char *err)
{
    if (p->in_fd < 0 || p->in_close) {
        err_set(err, "process %d: stdin is closed", (int)p->pid);
        errno = EPIPE;
        return -1;
    }
    size_t pending = p->inq.len - p->inq_off;
    if (n > PROC_INPUT_MAX - pending) {
        err_set(err, "process %d: input queue full (%zu bytes not taken yet)", (int)p->pid, pending);
        errno = ENOSPC;
        return -1;
    }
    /* Keep what is pending at the front, so the queue holds at most the bound.
     * Its memory is drawn from the budget; a little whatever it says. */
    buf_consume(&p->inq, p->inq_off);
    p->inq_off = 0;
    if (p->inq.len + n <= INQ_KEEP_CAP) buf_reserve_force(&p->inq, n);
    if (buf_append(&p->inq, data, n) < 0) {
        err_set(err, "process %d: input not queued: %s", (int)p->pid, SERVE_BUDGET_SPENT);
        errno = ENOMEM;
        return -1;
    }
    if (input_flush(p) < 0) {
        err_set(err, "process %d: stdin: %s", (int)p->pid, strerror(errno));
        errno = EPIPE;
        return -1;
    }
    return 0;
}

int proc_io_close_input(struct proc *p)
{
    if (p->in_fd < 0) return 0;
    if (p->inq_off < p->inq.len) p->in_close = 1;
    else input_close(p);
    return 0;
}

void proc_io_start(struct proc *p, double timeout)
{
    struct ev_loop *loop = p->t->loop;
    /* First, before the loop runs again: no exit status may be missed. */
    reaper_watch(loop, &p->rw, p->pid, on_exit_status, p);
    ev_io_init(&p->report_w, on_report, spawn_report_fd(p->report), EV_READ);
    p->report_w.data = p;
    if (spawn_report_fd(p->report) >= 0) ev_io_start(loop, &p->report_w);
    else report_in(p); /* complete at once (a child that was waited for) */
    for (int i = 0; i < PROC_CHANS; i++) {
        struct proc_chan_io *c = &p->ch[i];
        c->p = p;
        if (c->fd < 0) continue;
        ev_io_init(&c->w, on_readable, c->fd, EV_READ);
        c->w.data = c;
        ev_io_start(loop, &c->w);
    }
    ev_io_init(&p->in_w, on_writable, p->in_fd, EV_WRITE);
    p->in_w.data = p;
    proc_pace_init(p);
    ev_timer_init(&p->drain, on_drain_over, PROC_DRAIN_SECONDS, 0.);
    p->drain.data = p;
    ev_timer_init(&p->deadline, on_deadline, timeout > 0 ? timeout : 0., 0.);
    p->deadline.data = p;
    if (timeout > 0) ev_timer_start(loop, &p->deadline);
}

static void finish(struct proc *p)
{
    struct ev_loop *loop = p->t->loop;
    if (p->exec_errno) proc_status_from_exec_error(p->cwd_failed ? NULL : p->argv[0], p->exec_errno, &p->end);
    else proc_status_from_wait(p->status, &p->end);
    if (!p->exec_errno && proc_group_oom_killed(p->g, p->status)) proc_status_oom(&p->end);
    p->ended = 1;
    proc_pace_release(p); /* its fds are closed: nothing is held any more */
    ev_timer_stop(loop, &p->drain);
    ev_timer_stop(loop, &p->deadline);
    for (int i = 0; i < PROC_CHANS; i++) {
        chan_close(p, &p->ch[i]);
        ring_shrink(&p->ch[i].ring); /* kept for a long time: no slack */
    }
    input_close(p);
    log_debug("process %d: %s", (int)p->pid, p->end.status);
    proc_io_notify(p);
    proc_finished(p);
}

void proc_io_release(struct proc *p)
{
    struct ev_loop *loop = p->t->loop;
    if (!p->leader_exited && p->pid > 0) reaper_unwatch(loop, &p->rw);
    if (p->report) ev_io_stop(loop, &p->report_w);
    spawn_report_free(p->report);
    p->report = NULL;
    ev_timer_stop(loop, &p->drain);
    ev_timer_stop(loop, &p->deadline);
    proc_pace_release(p);
    for (int i = 0; i < PROC_CHANS; i++) {
        chan_close(p, &p->ch[i]);
        ring_free(&p->ch[i].ring);
    }
    input_close(p);
}
