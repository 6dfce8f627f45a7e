/*
 * requests.c - the session's request records (see session_priv.h).
 *
 * Owns every struct req: the table by id (agent/core/hash.h), the queue of
 * lines not yet fully written to the handler, the in-flight list, the
 * per-request timeout timers and the agent's own error replies. A request is
 * in the table while it can be answered; one answered while still being
 * written ("dead") stays on the queue until its last byte is out.
 */
#include "agent/session/session_priv.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Buckets before the table first grows. */
#define REQ_TABLE_HINT 4096
/* A line up to this size lives in its request's own allocation (one malloc
 * per request); a longer one is freed as soon as the handler has it. */
#define INLINE_LINE_MAX 4096

int requests_init(struct session *s) { return hash_init(&s->table, REQ_TABLE_HINT, 1); }

static uint64_t id_hash(const char *id, size_t n) { return hash_bytes(HASH_SEED, id, n); }

struct req *requests_find(struct session *s, const char *id, size_t n)
{
    struct hnode *it;
    HASH_FOR_EACH(&s->table, id_hash(id, n), it) {
        struct req *r = HASH_ENTRY(it, struct req, hn);
        if (r->idlen == n && !memcmp(r->id, id, n)) return r;
    }
    return NULL;
}

static void list_push(struct reqlist *l, struct req *r)
{
    r->next = NULL;
    r->prev = l->tail;
    if (l->tail) l->tail->next = r;
    else l->head = r;
    l->tail = r;
    l->count++;
}

static void list_remove(struct reqlist *l, struct req *r)
{
    if (r->prev) r->prev->next = r->next;
    else l->head = r->next;
    if (r->next) r->next->prev = r->prev;
    else l->tail = r->prev;
    r->prev = r->next = NULL;
    l->count--;
}

static void free_line(struct req *r)
{
    if (!r->line_inline) free(r->line);
    r->line = NULL;
}

void requests_drop(struct session *s, struct req *r, struct reqlist *from)
{
    if (!r->dead) hash_del(&s->table, &r->hn);
    if (r->has_tmo) ev_timer_stop(s->loop, &r->tmo);
    if (from) list_remove(from, r);
    if (from == &s->queue) s->queue_bytes -= r->len;
    if (r->inflight) s->ninflight--;
    free_line(r);
    free(r);
}

void requests_forget(struct session *s, struct req *r)
{
    if (r->has_tmo) ev_timer_stop(s->loop, &r->tmo);
    r->has_tmo = 0;
    hash_del(&s->table, &r->hn);
    r->dead = 1;
}

void requests_started(struct session *s, struct req *r)
{
    if (r->inflight) return;
    r->inflight = 1;
    s->ninflight++;
}

void requests_sent(struct session *s, struct req *r)
{
    list_remove(&s->queue, r);
    s->queue_bytes -= r->len;
    free_line(r);
    if (r->dead) {
        s->ninflight--;
        free(r);
    } else {
        list_push(&s->inflight, r);
    }
}

void requests_answer(struct session *s, const char *id, size_t idlen, const char *code, const char *msg)
{
    buf_reset(&s->tmp);
    if (msgline_error_json(&s->tmp, id, idlen, code, msg) < 0) {
        log_error("out of memory answering %s", id);
        return;
    }
    log_debug("answering %s: %s (%s)", id, code, msg);
    output_emit(s, id, idlen, s->tmp.data, s->tmp.len);
}

static void on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct req *r = w->data;
    struct session *s = r->s;
    char msg[96];
    snprintf(msg, sizeof msg, "no answer within %.6g s", r->timeout);
    requests_answer(s, r->id, r->idlen, SESSION_ERR_TIMEOUT, msg);
    if (!r->inflight || r->written == r->len)
        requests_drop(s, r, r->written == r->len && r->inflight ? &s->inflight : &s->queue);
    else
        requests_forget(s, r); /* half written */
    shutdown_progress(s);
}

static void start_timer(struct session *s, struct req *r, double timeout)
{
    ev_timer_init(&r->tmo, on_timeout, timeout, 0.);
    r->timeout = timeout;
    r->tmo.data = r;
    r->has_tmo = 1;
    ev_timer_start(s->loop, &r->tmo);
}

struct req *requests_add(struct session *s, const struct msgline_request *m, const char *line, size_t n)
{
    int inl = n + 1 <= INLINE_LINE_MAX;
    struct req *r = malloc(sizeof *r + (inl ? n + 1 : 0));
    if (!r) return NULL;
    char *copy = inl ? (char *)(r + 1) : malloc(n + 1);
    if (!copy) {
        free(r);
        return NULL;
    }
    memset(r, 0, sizeof *r);
    r->line_inline = inl;
    memcpy(copy, line, n);
    copy[n] = '\n';
    r->s = s;
    r->line = copy;
    r->len = n + 1;
    r->idlen = m->idlen;
    memcpy(r->id, m->id, m->idlen + 1);
    hash_add(&s->table, &r->hn, id_hash(r->id, r->idlen));
    list_push(&s->queue, r);
    s->queue_bytes += r->len;
    if (m->timeout > 0) start_timer(s, r, m->timeout);
    return r;
}

size_t requests_answer_started(struct session *s, const char *code, const char *msg)
{
    size_t n = 0;
    while (s->inflight.head) {
        struct req *r = s->inflight.head;
        requests_answer(s, r->id, r->idlen, code, msg);
        requests_drop(s, r, &s->inflight);
        n++;
    }
    /* Only the queue's head can have been written in part. */
    struct req *r = s->queue.head;
    if (r && r->inflight) {
        if (!r->dead) requests_answer(s, r->id, r->idlen, code, msg);
        requests_drop(s, r, &s->queue);
        n++;
    }
    return n;
}

void requests_answer_unstarted(struct session *s, const char *code, const char *msg)
{
    struct req *r = s->queue.head;
    while (r) {
        struct req *next = r->next;
        if (!r->inflight) {
            requests_answer(s, r->id, r->idlen, code, msg);
            requests_drop(s, r, &s->queue);
        }
        r = next;
    }
}

void requests_free_all(struct session *s)
{
    while (s->queue.head) requests_drop(s, s->queue.head, &s->queue);
    while (s->inflight.head) requests_drop(s, s->inflight.head, &s->inflight);
    hash_free(&s->table);
}
