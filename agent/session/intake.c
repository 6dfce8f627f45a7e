/*
 * intake.c - mailbox lines become requests (see session_priv.h).
 *
 * Owns the mailbox follower (mailbox.c) and the queue bounds, and fills the
 * duplicate window (seen.c, made at setup): each line is parsed (msgline.c),
 * an id seen before is dropped, a line that cannot be served is answered at
 * once (bad_request, too_large, queue_full), the rest is queued for the pump.
 * Reading pauses while the queue is at its running bound and resumes below
 * half of it, and pauses while stdout is behind (output.c).
 */
#include "agent/session/session_priv.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

#include <stdio.h>

static int queue_full(const struct session *s, size_t n)
{
    return s->queue.count >= s->queue_max || (s->queue.count && s->queue_bytes + n > QUEUE_BYTES_MAX);
}

static int running_full(const struct session *s)
{
    return s->queue.count >= QUEUE_RUNNING_HIGH || s->queue_bytes >= QUEUE_BYTES_MAX;
}

/* An id already answered, queued or in flight is not delivered again. */
static int duplicate(struct session *s, const char *id, size_t n)
{
    if (requests_find(s, id, n) || seen_check_add(s->seen, id, n)) {
        log_info("duplicate request id %s ignored", id);
        return 1;
    }
    return 0;
}

/* A request line for the handler. Returns 1 when reading must pause. */
static int accept_request(struct session *s, const struct msgline_request *m, const char *line, size_t n)
{
    if (!handler_running(&s->h) && queue_full(s, n + 1)) {
        log_warn("request queue full (%zu requests, %zu bytes) while the handler restarts; "
                 "answering %s " SESSION_ERR_QUEUE_FULL, s->queue.count, s->queue_bytes, m->id);
        requests_answer(s, m->id, m->idlen, SESSION_ERR_QUEUE_FULL,
                   "the request queue is full while the handler restarts");
        return 0;
    }
    if (!requests_add(s, m, line, n)) {
        log_error("out of memory queueing %s", m->id);
        requests_answer(s, m->id, m->idlen, SESSION_ERR_QUEUE_FULL, "out of memory");
        return 0;
    }
    /* Written by the pump at the end of this loop iteration. */
    return handler_running(&s->h) && running_full(s);
}

/* A line over SESSION_LINE_MAX: answered when its head shows an id. */
static void too_large(struct session *s, const char *head, size_t n)
{
    struct msgline_request m;
    if (!msgline_peek_id(head, n, m.id, &m.idlen)) {
        log_warn("mailbox: a line over %u bytes without a readable id dropped", SESSION_LINE_MAX);
        return;
    }
    if (duplicate(s, m.id, m.idlen)) return;
    log_warn("mailbox: request %s is over %u bytes; answering " SESSION_ERR_TOO_LARGE, m.id,
             SESSION_LINE_MAX);
    requests_answer(s, m.id, m.idlen, SESSION_ERR_TOO_LARGE, "the request line is over 16 MiB");
}

/* Not a request: answered bad_request when an id could be read. */
static void bad_request(struct session *s, const struct msgline_request *m, const char *p, size_t n)
{
    if (!m->idlen) {
        char what[96];
        snprintf(what, sizeof what, "mailbox: line dropped (%s, no readable id)", m->why);
        pump_log_text(what, p, n < 200 ? n : 200);
        return;
    }
    if (duplicate(s, m->id, m->idlen)) return;
    log_warn("mailbox: request %s is a bad request: %s", m->id, m->why);
    requests_answer(s, m->id, m->idlen, SESSION_ERR_BAD_REQUEST, m->why);
}

/* One mailbox line. Returns 1 when the queue is at its bound. */
static int take_line(struct session *s, enum lsplit_kind kind, const char *p, size_t n)
{
    struct msgline_request m;
    if (kind == LSPLIT_TOO_LARGE) {
        too_large(s, p, n);
        return 0;
    }
    switch (msgline_parse_request(p, n, &m)) {
    case MSG_BLANK:
        return 0;
    case MSG_BAD:
        bad_request(s, &m, p, n);
        return 0;
    case MSG_OK:
        break;
    }
    return !duplicate(s, m.id, m.idlen) && accept_request(s, &m, p, n);
}

/* The mailbox's line callback. Returns 1 when it paused reading: the queue
 * is at its bound or stdout is behind (output.c resumes it). */
static int on_line(void *ctx, enum lsplit_kind kind, const char *p, size_t n)
{
    struct session *s = ctx;
    int queue_at_bound = take_line(s, kind, p, n);
    if (!queue_at_bound && !s->out.full) return 0;
    log_debug("%s; pausing the mailbox", queue_at_bound ? "queue full" : "stdout is behind");
    s->paused = 1;
    mailbox_pause(&s->mb);
    return 1;
}

int intake_start(struct session *s, const char *path, char *err)
{
    if (mailbox_start(&s->mb, s->loop, path, SESSION_LINE_MAX, on_line, s, err) < 0) return -1;
    s->mailbox_on = 1;
    return 0;
}

void intake_stop(struct session *s)
{
    if (!s->mailbox_on) return;
    mailbox_stop(&s->mb);
    s->mailbox_on = 0;
}

void intake_resume(struct session *s)
{
    if (!s->paused || !s->mailbox_on || s->out.full) return;
    /* Resume below half, so reading is not toggled on every request. */
    if (handler_running(&s->h) &&
        (s->queue.count > QUEUE_RUNNING_HIGH / 2 || s->queue_bytes > QUEUE_BYTES_MAX / 2))
        return;
    s->paused = 0;
    mailbox_resume(&s->mb);
}
