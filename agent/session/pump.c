/*
 * pump.c - the session's bytes to and from the handler (see session_priv.h).
 *
 * Owns the writev pump that moves queued lines into the handler's stdin
 * (bounded by INFLIGHT_MAX requests in flight) and the matching of the
 * handler's reply lines to requests. Both directions are batched by one
 * ev_prepare: what a loop iteration queued goes to the handler in one writev
 * (no wait for an EV_WRITE round-trip, which is the latency of a lone
 * request), and its replies to stdout in one write (output.c).
 */
#include "agent/session/session_priv.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define WRITEV_MAX 512
/* Untrusted text is logged up to this many bytes a line. */
#define LOG_LINE_MAX 1000

void pump_log_text(const char *what, const char *p, size_t n)
{
    char clean[LOG_LINE_MAX + 1];
    size_t k = n < LOG_LINE_MAX ? n : LOG_LINE_MAX;
    for (size_t i = 0; i < k; i++) {
        unsigned char c = (unsigned char)p[i];
        clean[i] = (c < 0x20 && c != '\t') || c == 0x7f ? '?' : (char)c;
    }
    clean[k] = '\0';
    log_warn("%s: %s%s", what, clean, n > k ? " [...]" : "");
}

/* ---- the handler's stdin --------------------------------------------------- */

/* The next writev: the unwritten rest of queued lines, new ones only while
 * the in-flight bound allows. Returns the iovec count, *total the bytes. */
static int gather(struct session *s, struct iovec *iov, size_t *total)
{
    int k = 0;
    size_t budget = s->ninflight < INFLIGHT_MAX ? INFLIGHT_MAX - s->ninflight : 0;
    *total = 0;
    for (struct req *r = s->queue.head; r && k < WRITEV_MAX; r = r->next) {
        /* A new request counts against the bound; a started one already does. */
        if (!r->inflight) {
            if (!budget) break;
            budget--;
        }
        iov[k].iov_base = r->line + r->written;
        iov[k].iov_len = r->len - r->written;
        *total += iov[k].iov_len;
        k++;
    }
    return k;
}

/* w bytes of the queue went out, from its head. */
static void advance(struct session *s, size_t w)
{
    while (w && s->queue.head) {
        struct req *r = s->queue.head;
        requests_started(s, r);
        size_t need = r->len - r->written;
        size_t take = w < need ? w : need;
        r->written += take;
        w -= take;
        if (r->written < r->len) break;
        requests_sent(s, r);
    }
}

enum step { STEP_MORE, STEP_DONE, STEP_BLOCKED };

/* One writev. */
static enum step write_once(struct session *s)
{
    struct iovec iov[WRITEV_MAX];
    size_t total;
    int k = gather(s, iov, &total);
    if (!k) {
        handler_want_write(&s->h, 0);
        return STEP_DONE;
    }
    ssize_t w = writev(s->h.in_fd, iov, k);
    if (w < 0 && errno == EINTR) return STEP_MORE;
    if (w < 0 && errno == EAGAIN) {
        handler_want_write(&s->h, 1);
        return STEP_BLOCKED;
    }
    if (w < 0) {
        log_warn("the handler closed its stdin (%s); requests wait for its restart", strerror(errno));
        handler_close_stdin(&s->h);
        return STEP_DONE;
    }
    advance(s, (size_t)w);
    if ((size_t)w < total) { /* the pipe is full: wait for EV_WRITE */
        handler_want_write(&s->h, 1);
        return STEP_DONE;
    }
    return STEP_MORE;
}

void pump_writable(void *ctx)
{
    struct session *s = ctx;
    enum step st;
    while ((st = write_once(s)) == STEP_MORE) {}
    /* EAGAIN: the resume and shutdown checks wait for the EV_WRITE that
     * calls this again (as they always have). */
    if (st == STEP_BLOCKED) return;
    intake_resume(s);
    shutdown_progress(s);
}

/* Runs once per loop iteration, before it blocks. */
static void on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)revents;
    struct session *s = w->data;
    if (s->queue.head && s->h.in_fd >= 0 && s->ninflight < INFLIGHT_MAX) pump_writable(s);
    output_flush(s);
}

void pump_start(struct session *s)
{
    ev_prepare_init(&s->flush, on_prepare);
    s->flush.data = s;
    ev_prepare_start(s->loop, &s->flush);
    ev_unref(s->loop);
}

void pump_stop(struct session *s) { ev_prepare_stop(s->loop, &s->flush); }

/* ---- the handler's stdout -------------------------------------------------- */

void pump_reply(void *ctx, const char *p, size_t n)
{
    struct session *s = ctx;
    char id[MSG_ID_MAX + 1];
    size_t idlen;
    /* Carried as written, minus trailing whitespace (a CR of a CRLF). */
    while (n && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
    if (!msgline_parse_reply(p, n, id, &idlen)) {
        if (n) pump_log_text("handler output", p, n);
        return;
    }
    struct req *r = requests_find(s, id, idlen);
    if (!r || !r->inflight) {
        log_info("reply to %s dropped: no such request in flight (answered already?)", id);
        return;
    }
    output_emit(s, id, idlen, p, n);
    if (r->written < r->len) {
        requests_forget(s, r); /* answered before we finished writing it */
    } else {
        requests_drop(s, r, &s->inflight);
        if (s->queue.head && s->ninflight < INFLIGHT_MAX && s->h.in_fd >= 0) handler_want_write(&s->h, 1);
    }
    shutdown_progress(s);
}

void pump_reply_too_large(void *ctx, const char *head, size_t n)
{
    struct session *s = ctx;
    char id[MSG_ID_MAX + 1];
    size_t idlen;
    struct req *r = msgline_peek_id(head, n, id, &idlen) ? requests_find(s, id, idlen) : NULL;
    if (!r || !r->inflight || r->written < r->len) {
        log_warn("handler output over %u bytes dropped", HANDLER_REPLY_MAX);
        return;
    }
    log_warn("the handler's reply to %s is over %u bytes; answering " SESSION_ERR_TOO_LARGE, id,
             HANDLER_REPLY_MAX);
    requests_answer(s, id, idlen, SESSION_ERR_TOO_LARGE, "the handler's reply is over 64 MiB");
    requests_drop(s, r, &s->inflight);
    shutdown_progress(s);
}
