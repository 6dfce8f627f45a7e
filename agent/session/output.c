/*
 * output.c - the reply lines on stdout (see session_priv.h; README "`sandbox-agent
 * session -- HANDLER ARGV...`", "Stdout").
 *
 * Owns the output buffer and every write to stdout. The loop never blocks on
 * a slow log reader: stdout is made non-blocking (a pipe, socket, terminal or
 * /dev/null; its flags are given back at exit; a regular file or block device
 * never blocks a write and epoll refuses it, so it is written as it is), a
 * write that would block waits for EV_WRITE, and what is not written waits
 * in the buffer. At OUT_HIGH bytes waiting the producers pause (the
 * handler's stdout and the mailbox: they keep what is unread), below OUT_LOW
 * they resume, so nothing is lost and memory stays bounded. At the end
 * (output_finish) what is left gets until the grace deadline; what stdout
 * still has not taken then is dropped and counted in one log line.
 */
#include "agent/session/session_priv.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Replies are written once per loop iteration, or sooner past this. */
#define OUT_FLUSH_AT (1024u * 1024u)

static size_t pending(const struct output *o) { return o->buf.len - o->done; }

/* Pause (or resume) what produces replies. */
static void set_full(struct session *s, int full)
{
    s->out.full = full;
    handler_pause_read(&s->h, full);
    if (full) {
        log_info("stdout is %zu bytes behind; pausing the handler's output and the mailbox",
                 pending(&s->out));
        return;
    }
    log_info("stdout caught up; reading the handler and the mailbox again");
    intake_resume(s);
}

static void lost(struct output *o, const char *why)
{
    log_error("cannot write replies to stdout: %s; replies are lost from now on", why);
    o->broken = 1;
    o->dropped += pending(o);
    o->done = o->buf.len;
}

/* Write until done or a write would block. Returns 1 when it would block. */
static int write_some(struct output *o)
{
    while (!o->broken && pending(o)) {
        ssize_t w = write(STDOUT_FILENO, o->buf.data + o->done, pending(o));
        if (w > 0) {
            o->done += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 1;
        lost(o, w < 0 ? strerror(errno) : "it takes no bytes");
    }
    return 0;
}

/* Written bytes out of the buffer: all of it, or (past half) by moving the
 * rest to the front, so each byte is moved at most about once. */
static void compact(struct output *o)
{
    if (!pending(o)) {
        buf_reset(&o->buf);
        o->done = 0;
        if (o->buf.cap > 4 * OUT_FLUSH_AT) buf_free(&o->buf);
    } else if (o->done >= OUT_FLUSH_AT && o->done >= o->buf.len / 2) {
        buf_consume(&o->buf, o->done);
        o->done = 0;
    }
}

static void flush_now(struct session *s)
{
    struct output *o = &s->out;
    int blocked = write_some(o);
    compact(o);
    if (blocked) ev_io_start(s->loop, &o->w);
    else ev_io_stop(s->loop, &o->w);
    if (o->full && pending(o) < OUT_LOW) set_full(s, 0);
    if (o->ending && !pending(o)) ev_break(s->loop, EVBREAK_ALL);
}

static void on_writable(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    flush_now(w->data);
}

static void on_linger(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)w;
    (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

void output_init(struct session *s)
{
    struct output *o = &s->out;
    struct stat st;
    buf_init(&o->buf, OUT_MAX);
    if (fstat(STDOUT_FILENO, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
        int fl = fcntl(STDOUT_FILENO, F_GETFL);
        if (fl >= 0 && !(fl & O_NONBLOCK) && fcntl(STDOUT_FILENO, F_SETFL, fl | O_NONBLOCK) == 0) {
            o->flags = fl;
            o->restore = 1;
        }
    }
    ev_io_init(&o->w, on_writable, STDOUT_FILENO, EV_WRITE);
    o->w.data = s;
    ev_timer_init(&o->linger, on_linger, 0., 0.);
    o->linger.data = s;
    o->started = 1;
}

/* The bytes of the reply line for an n-byte reply (to count a dropped one). */
static unsigned long long line_len(const struct session *s, size_t idlen, size_t n)
{
    return sizeof SENTINEL_REPLY - 1 + idlen + 2 * (sizeof SENTINEL_REPLY_SEP - 1) + s->nonce.len +
           4 * ((unsigned long long)n / 3 + (n % 3 != 0)) + 1;
}

static int add_line(struct session *s, const char *id, size_t idlen, const char *json, size_t n)
{
    struct output *o = &s->out;
    if (msgline_reply_line(&o->buf, id, idlen, s->nonce.value, s->nonce.len, json, n) == 0) return 0;
    if (!o->done) return -1;
    buf_consume(&o->buf, o->done); /* room taken by what was written already */
    o->done = 0;
    return msgline_reply_line(&o->buf, id, idlen, s->nonce.value, s->nonce.len, json, n);
}

void output_emit(struct session *s, const char *id, size_t idlen, const char *json, size_t n)
{
    struct output *o = &s->out;
    if (o->broken) {
        o->dropped += line_len(s, idlen, n);
        return;
    }
    if (add_line(s, id, idlen, json, n) < 0) {
        /* Only past OUT_MAX, which the pauses keep it far from, or out of memory. */
        log_error("no room for the reply to %s (%zu bytes wait for stdout); dropped", id, pending(o));
        o->dropped += line_len(s, idlen, n);
        return;
    }
    if (pending(o) >= OUT_FLUSH_AT) output_flush(s);
    if (!o->full && pending(o) >= OUT_HIGH) set_full(s, 1);
}

void output_flush(struct session *s)
{
    /* While a write would block, EV_WRITE says when to try again. */
    if (pending(&s->out) && !ev_is_active(&s->out.w)) flush_now(s);
}

void output_finish(struct session *s)
{
    struct output *o = &s->out;
    double left = s->deadline - ev_now(s->loop);
    output_flush(s);
    if (!pending(o) || left <= 0) {
        ev_break(s->loop, EVBREAK_ALL);
        return;
    }
    /* Until stdout has taken it all (flush_now breaks) or the grace is over. */
    o->ending = 1;
    ev_timer_set(&o->linger, left, 0.);
    ev_timer_start(s->loop, &o->linger);
}

void output_free(struct session *s)
{
    struct output *o = &s->out;
    if (!o->started) return;
    write_some(o); /* a last try, never a wait */
    o->dropped += pending(o);
    if (o->dropped)
        log_warn("%llu bytes of reply lines could not be written to stdout; dropped", o->dropped);
    ev_io_stop(s->loop, &o->w);
    ev_timer_stop(s->loop, &o->linger);
    if (o->restore) fcntl(STDOUT_FILENO, F_SETFL, o->flags);
    buf_free(&o->buf);
    o->started = 0;
}
