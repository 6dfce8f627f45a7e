/*
 * session.c - `sandbox-agent session -- HANDLER ARGV...`: PID 1 of a warm
 * sandbox. Follows the mailbox the host appends requests to, keeps one
 * handler process warm, matches its replies to requests by id and prints each
 * as an authenticated reply line on stdout.
 *
 * Owns the requests: the table by id, the queue of lines not yet written to
 * the handler, the in-flight list, timeouts, the agent's own error replies and
 * the shutdown sequence. The mailbox file (mailbox.c), the handler process
 * (handler.c), message parsing (msgline.c), the duplicate window (seen.c) and
 * every PID 1 duty (agent/core: nonce, signals, reaping) live elsewhere.
 *
 * Bounds: a request line is at most SESSION_LINE_MAX; at most INFLIGHT_MAX
 * requests are in flight. While the handler runs, the queue is held under
 * QUEUE_RUNNING_HIGH requests / QUEUE_BYTES_MAX bytes by pausing the mailbox
 * (the file keeps what is unread, nothing is lost); while it is down (restart
 * backoff), the queue holds queue_max requests (SANDBOX_AGENT_QUEUE_MAX) and
 * a request that finds it full is answered queue_full at once, so the host
 * is not left waiting out a 64 s backoff.
 */
#include "agent/session/session.h"
#include "agent/session/handler.h"
#include "agent/session/mailbox.h"
#include "agent/session/msgline.h"
#include "agent/session/seen.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/nonce.h"
#include "agent/core/pid1.h"
#include "agent/core/stop.h"
#include "agent/core/protocol.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define QUEUE_BYTES_MAX (64u * 1024u * 1024u)
#define INFLIGHT_MAX 65536
#define REQ_BUCKETS 65536 /* a power of two */
/* While the handler runs, reading pauses at this many queued requests (or
 * QUEUE_BYTES_MAX) and resumes below half of it. */
#define QUEUE_RUNNING_HIGH 4096
/* A line up to this size lives in its request's own allocation (one malloc
 * per request); a longer one is freed as soon as the handler has it. */
#define INLINE_LINE_MAX 4096
/* Replies are written in one write per loop iteration, or sooner past this. */
#define OUT_FLUSH_AT (1024u * 1024u)
#define WRITEV_MAX 512
/* Handler output is logged up to this many bytes a line. */
#define LOG_LINE_MAX 1000

static const char session_usage[] =
    "usage: " SA_NAME " session [--] HANDLER [ARG...]\n"
    "\n"
    "Be PID 1 of a warm sandbox: keep HANDLER running, hand it each request line\n"
    "appended to the mailbox (on its stdin), and print each of its replies as\n"
    SENTINEL_REPLY "<id>__<nonce>__<base64 JSON> on stdout.\n"
    "\n"
    "environment:\n"
    "  " ENV_MAILBOX "      the mailbox file (default " DEFAULT_MAILBOX ")\n"
    "  " ENV_NONCE "    secret printed in each reply; hidden from the handler\n"
    "  " ENV_GRACE " seconds in-flight requests get after SIGTERM (default 5)\n"
    "  " ENV_RESTART_BASE " restart delays are this times 1, 4, 16, 64 (default 1)\n"
    "  " ENV_QUEUE_MAX " requests held while the handler restarts (default 1024)\n"
    "  " ENV_SIGNAL_TARGET " 'group' (default) or 'child': where other signals go\n"
    "  " ENV_LOG "      debug | info | warn (default warn)\n"
    "\n"
    "exit status: 0 after SIGTERM/SIGINT, 126/127 when HANDLER cannot be run,\n"
    "2 usage or configuration error.\n";

struct req {
    struct req *hnext;          /* table chain */
    struct req *prev, *next;    /* queue or in-flight list */
    struct session *s;
    char *line;                 /* the line + '\n' until fully written */
    int line_inline;            /* line lives after this struct */
    size_t len, written;
    ev_timer tmo;
    double timeout;
    int has_tmo;
    int inflight;               /* some byte reached the handler */
    int dead;                   /* answered already (timed out mid-write) */
    size_t idlen;
    char id[MSG_ID_MAX + 1];
};

struct list {
    struct req *head, *tail;
    size_t count;
};

struct session {
    struct ev_loop *loop;
    struct pid1_config cfg;
    struct nonce nonce;
    struct handler h;
    struct mailbox mb;
    struct seen *seen;
    struct req *table[REQ_BUCKETS];
    struct list queue;          /* not yet fully written, in order */
    struct list inflight;       /* fully written, waiting for a reply */
    size_t queue_bytes, queue_max, ninflight;
    int mailbox_on, paused;
    int stopping, handler_stopped, done;
    ev_tstamp deadline;
    ev_timer grace, killer;
    ev_prepare flush;
    struct buf out, tmp;
    int out_broken;
};

/* ---- output -------------------------------------------------------------- */

static void out_flush(struct session *s)
{
    if (!s->out.len) return;
    if (!s->out_broken && io_write_all(STDOUT_FILENO, s->out.data, s->out.len) < 0) {
        log_error("cannot write replies to stdout: %s; replies are lost from now on", strerror(errno));
        s->out_broken = 1;
    }
    buf_reset(&s->out);
    if (s->out.cap > 4 * OUT_FLUSH_AT) buf_free(&s->out);
}

static void h_writable(void *ctx);

/* Runs once per loop iteration, before it blocks: what this iteration queued
 * goes to the handler in one writev (no wait for an EV_WRITE round-trip, which
 * is the latency of a lone request), and its replies to stdout in one write. */
static void on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)revents;
    struct session *s = w->data;
    if (s->queue.head && s->h.in_fd >= 0 && s->ninflight < INFLIGHT_MAX) h_writable(s);
    out_flush(s);
}

static void emit(struct session *s, const char *id, size_t idlen, const char *json, size_t n)
{
    if (msg_reply_line(&s->out, id, idlen, s->nonce.value, s->nonce.len, json, n) < 0) {
        /* One huge reply cannot be added to a full buffer: flush and retry. */
        out_flush(s);
        if (msg_reply_line(&s->out, id, idlen, s->nonce.value, s->nonce.len, json, n) < 0)
            log_error("out of memory printing the reply to %s", id);
    }
    if (s->out.len >= OUT_FLUSH_AT) out_flush(s);
}

static void reply_error(struct session *s, const char *id, size_t idlen, const char *code, const char *msg)
{
    buf_reset(&s->tmp);
    if (msg_error_json(&s->tmp, id, idlen, code, msg) < 0) {
        log_error("out of memory answering %s", id);
        return;
    }
    log_debug("answering %s: %s (%s)", id, code, msg);
    emit(s, id, idlen, s->tmp.data, s->tmp.len);
}

/* ---- requests -------------------------------------------------------------- */

static uint32_t id_hash(const char *id, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)id[i]) * 16777619u;
    return h;
}

static struct req **slot_of(struct session *s, const char *id, size_t n)
{
    struct req **pp = &s->table[id_hash(id, n) & (REQ_BUCKETS - 1)];
    while (*pp && !((*pp)->idlen == n && !memcmp((*pp)->id, id, n))) pp = &(*pp)->hnext;
    return pp;
}

static void table_remove(struct session *s, struct req *r)
{
    struct req **pp = slot_of(s, r->id, r->idlen);
    if (*pp == r) *pp = r->hnext;
    r->hnext = NULL;
}

static void list_push(struct list *l, struct req *r)
{
    r->next = NULL;
    r->prev = l->tail;
    if (l->tail) l->tail->next = r;
    else l->head = r;
    l->tail = r;
    l->count++;
}

static void list_remove(struct list *l, struct req *r)
{
    if (r->prev) r->prev->next = r->next;
    else l->head = r->next;
    if (r->next) r->next->prev = r->prev;
    else l->tail = r->prev;
    r->prev = r->next = NULL;
    l->count--;
}

static void maybe_resume(struct session *s);
static void stop_handler(struct session *s);

/* Forget a request: out of the table, its list and its timer. */
static void req_drop(struct session *s, struct req *r, struct list *from)
{
    if (!r->dead) table_remove(s, r);
    if (r->has_tmo) ev_timer_stop(s->loop, &r->tmo);
    if (from) list_remove(from, r);
    if (from == &s->queue) s->queue_bytes -= r->len;
    if (r->inflight) s->ninflight--;
    if (!r->line_inline) free(r->line);
    free(r);
}

/* The last in-flight request is done during shutdown: stop the handler. */
static void shutdown_progress(struct session *s)
{
    if (s->stopping && !s->handler_stopped && s->ninflight == 0) stop_handler(s);
}

static void on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct req *r = w->data;
    struct session *s = r->s;
    char msg[96];
    snprintf(msg, sizeof msg, "no answer within %.6g s", r->timeout);
    reply_error(s, r->id, r->idlen, SESSION_ERR_TIMEOUT, msg);
    if (!r->inflight || r->written == r->len) {
        req_drop(s, r, r->written == r->len && r->inflight ? &s->inflight : &s->queue);
    } else {
        /* Half written: the rest must still go, or the handler's next line
         * is corrupt. It is answered; a late reply finds no request. */
        ev_timer_stop(s->loop, &r->tmo);
        r->has_tmo = 0;
        table_remove(s, r);
        r->dead = 1;
    }
    shutdown_progress(s);
}

static int queue_full(const struct session *s, size_t n)
{
    return s->queue.count >= s->queue_max || (s->queue.count && s->queue_bytes + n > QUEUE_BYTES_MAX);
}

static int running_full(const struct session *s)
{
    return s->queue.count >= QUEUE_RUNNING_HIGH || s->queue_bytes >= QUEUE_BYTES_MAX;
}

/* A request line for the handler. Returns 1 when reading must pause. */
static int accept_request(struct session *s, const struct msg_request *m, const char *line, size_t n)
{
    if (!handler_running(&s->h) && queue_full(s, n + 1)) {
        log_warn("request queue full (%zu requests, %zu bytes) while the handler restarts; "
                 "answering %s " SESSION_ERR_QUEUE_FULL, s->queue.count, s->queue_bytes, m->id);
        reply_error(s, m->id, m->idlen, SESSION_ERR_QUEUE_FULL,
                    "the request queue is full while the handler restarts");
        return 0;
    }
    int inl = n + 1 <= INLINE_LINE_MAX;
    struct req *r = malloc(sizeof *r + (inl ? n + 1 : 0));
    char *copy = r && inl ? (char *)(r + 1) : malloc(n + 1);
    if (!r || !copy) {
        free(r);
        if (!inl) free(copy);
        log_error("out of memory queueing %s", m->id);
        reply_error(s, m->id, m->idlen, SESSION_ERR_QUEUE_FULL, "out of memory");
        return 0;
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
    struct req **pp = slot_of(s, r->id, r->idlen);
    *pp = r;
    list_push(&s->queue, r);
    s->queue_bytes += r->len;
    if (m->timeout > 0) {
        ev_timer_init(&r->tmo, on_timeout, m->timeout, 0.);
        r->timeout = m->timeout;
        r->tmo.data = r;
        r->has_tmo = 1;
        ev_timer_start(s->loop, &r->tmo);
    }
    /* Written from on_prepare at the end of this loop iteration. */
    return handler_running(&s->h) && running_full(s);
}

/* An id already answered, queued or in flight is not delivered again. */
static int duplicate(struct session *s, const char *id, size_t n)
{
    if (*slot_of(s, id, n) || seen_check_add(s->seen, id, n)) {
        log_info("duplicate request id %s ignored", id);
        return 1;
    }
    return 0;
}

static void log_output(const char *what, const char *p, size_t n)
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

static int on_mailbox(void *ctx, enum lsplit_kind kind, const char *p, size_t n)
{
    struct session *s = ctx;
    struct msg_request m;
    if (kind == LSPLIT_TOO_LARGE) {
        if (!msg_peek_id(p, n, m.id, &m.idlen)) {
            log_warn("mailbox: a line over %u bytes without a readable id dropped", SESSION_LINE_MAX);
            return 0;
        }
        if (duplicate(s, m.id, m.idlen)) return 0;
        log_warn("mailbox: request %s is over %u bytes; answering " SESSION_ERR_TOO_LARGE, m.id,
                 SESSION_LINE_MAX);
        reply_error(s, m.id, m.idlen, SESSION_ERR_TOO_LARGE, "the request line is over 16 MiB");
        return 0;
    }
    switch (msg_parse_request(p, n, &m)) {
    case MSG_BLANK:
        return 0;
    case MSG_BAD:
        if (!m.idlen) {
            char what[96];
            snprintf(what, sizeof what, "mailbox: line dropped (%s, no readable id)", m.why);
            log_output(what, p, n < 200 ? n : 200);
            return 0;
        }
        if (duplicate(s, m.id, m.idlen)) return 0;
        log_warn("mailbox: request %s is a bad request: %s", m.id, m.why);
        reply_error(s, m.id, m.idlen, SESSION_ERR_BAD_REQUEST, m.why);
        return 0;
    case MSG_OK:
        break;
    }
    if (duplicate(s, m.id, m.idlen)) return 0;
    if (accept_request(s, &m, p, n)) {
        log_debug("queue full (%zu requests); pausing the mailbox", s->queue.count);
        s->paused = 1;
        mailbox_pause(&s->mb);
        return 1;
    }
    return 0;
}

static void maybe_resume(struct session *s)
{
    if (!s->paused || !s->mailbox_on) return;
    /* Resume below half, so reading is not toggled on every request. */
    if (handler_running(&s->h) &&
        (s->queue.count > QUEUE_RUNNING_HIGH / 2 || s->queue_bytes > QUEUE_BYTES_MAX / 2))
        return;
    s->paused = 0;
    mailbox_resume(&s->mb);
}

/* ---- the handler ----------------------------------------------------------- */

static void h_writable(void *ctx)
{
    struct session *s = ctx;
    struct iovec iov[WRITEV_MAX];
    for (;;) {
        int k = 0;
        size_t total = 0;
        size_t budget = s->ninflight < INFLIGHT_MAX ? INFLIGHT_MAX - s->ninflight : 0;
        for (struct req *r = s->queue.head; r && k < WRITEV_MAX; r = r->next) {
            /* A new request counts against the in-flight bound; a started
             * one is already counted. */
            if (!r->inflight) {
                if (!budget) break;
                budget--;
            }
            iov[k].iov_base = r->line + r->written;
            iov[k].iov_len = r->len - r->written;
            total += iov[k].iov_len;
            k++;
        }
        if (!k) {
            handler_want_write(&s->h, 0);
            break;
        }
        ssize_t w = writev(s->h.in_fd, iov, k);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                handler_want_write(&s->h, 1);
                return;
            }
            log_warn("the handler closed its stdin (%s); requests wait for its restart", strerror(errno));
            handler_stdin_broken(&s->h);
            break;
        }
        size_t left = (size_t)w;
        while (left && s->queue.head) {
            struct req *r = s->queue.head;
            if (!r->inflight) {
                r->inflight = 1;
                s->ninflight++;
            }
            size_t need = r->len - r->written;
            size_t take = left < need ? left : need;
            r->written += take;
            left -= take;
            if (r->written < r->len) break;
            list_remove(&s->queue, r);
            s->queue_bytes -= r->len;
            if (!r->line_inline) free(r->line);
            r->line = NULL;
            if (r->dead) {
                s->ninflight--;
                free(r);
            } else {
                list_push(&s->inflight, r);
            }
        }
        if ((size_t)w < total) { /* the pipe is full: wait for EV_WRITE */
            handler_want_write(&s->h, 1);
            break;
        }
    }
    maybe_resume(s);
    shutdown_progress(s);
}

static void h_line(void *ctx, const char *p, size_t n)
{
    struct session *s = ctx;
    char id[MSG_ID_MAX + 1];
    size_t idlen;
    /* Carried as written, minus trailing whitespace (a CR of a CRLF). */
    while (n && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
    if (!msg_parse_reply(p, n, id, &idlen)) {
        if (n) log_output("handler output", p, n);
        return;
    }
    struct req *r = *slot_of(s, id, idlen);
    if (!r || !r->inflight) {
        log_info("reply to %s dropped: no such request in flight (answered already?)", id);
        return;
    }
    emit(s, id, idlen, p, n);
    if (r->written < r->len) {
        /* Answered before we finished writing it: keep writing, forget it. */
        if (r->has_tmo) ev_timer_stop(s->loop, &r->tmo);
        r->has_tmo = 0;
        table_remove(s, r);
        r->dead = 1;
    } else {
        req_drop(s, r, &s->inflight);
        if (s->queue.head && s->ninflight < INFLIGHT_MAX && s->h.in_fd >= 0) handler_want_write(&s->h, 1);
    }
    shutdown_progress(s);
}

static void h_too_large(void *ctx, const char *head, size_t n)
{
    struct session *s = ctx;
    char id[MSG_ID_MAX + 1];
    size_t idlen;
    struct req *r = msg_peek_id(head, n, id, &idlen) ? *slot_of(s, id, idlen) : NULL;
    if (!r || !r->inflight || r->written < r->len) {
        log_warn("handler output over %u bytes dropped", SESSION_REPLY_MAX);
        return;
    }
    log_warn("the handler's reply to %s is over %u bytes; answering " SESSION_ERR_TOO_LARGE, id,
             SESSION_REPLY_MAX);
    reply_error(s, id, idlen, SESSION_ERR_TOO_LARGE, "the handler's reply is over 64 MiB");
    req_drop(s, r, &s->inflight);
    shutdown_progress(s);
}

static void h_started(void *ctx)
{
    struct session *s = ctx;
    if (s->queue.head) handler_want_write(&s->h, 1);
}

static void h_exit(void *ctx, int status)
{
    struct session *s = ctx;
    size_t lost = 0;
    (void)status;
    /* Everything that reached it, even in part, is lost with it. */
    while (s->inflight.head) {
        struct req *r = s->inflight.head;
        reply_error(s, r->id, r->idlen, SESSION_ERR_HANDLER_EXITED, "the handler exited before answering");
        req_drop(s, r, &s->inflight);
        lost++;
    }
    struct req *r = s->queue.head;
    if (r && r->inflight) {
        if (!r->dead)
            reply_error(s, r->id, r->idlen, SESSION_ERR_HANDLER_EXITED, "the handler exited before answering");
        req_drop(s, r, &s->queue);
        lost++;
    }
    if (lost) log_warn("the handler exited with %zu requests in flight; answered " SESSION_ERR_HANDLER_EXITED, lost);
    if (s->stopping) {
        s->done = 1;
        ev_break(s->loop, EVBREAK_ALL);
        return;
    }
    /* Down: read on, into the bounded queue. */
    if (s->paused) {
        s->paused = 0;
        mailbox_resume(&s->mb);
    }
}

static const struct handler_ops ops = {h_line, h_too_large, h_writable, h_started, h_exit};

/* ---- shutdown -------------------------------------------------------------- */

static void on_kill(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct session *s = w->data;
    log_warn("the handler is still running after SIGTERM; sending SIGKILL");
    handler_signal(&s->h, SIGKILL);
}

static void stop_handler(struct session *s)
{
    if (s->handler_stopped) return;
    s->handler_stopped = 1;
    ev_timer_stop(s->loop, &s->grace);
    if (!handler_running(&s->h)) {
        s->done = 1;
        ev_break(s->loop, EVBREAK_ALL);
        return;
    }
    /* EOF first (a well-behaved handler exits on it), SIGTERM for the rest;
     * SIGKILL when the grace period is over, but never sooner than
     * min(grace, 1 s) after the SIGTERM. */
    handler_close_stdin(&s->h);
    handler_signal(&s->h, SIGTERM);
    double left = s->deadline - ev_now(s->loop);
    double floor = s->cfg.grace < 1.0 ? s->cfg.grace : 1.0;
    ev_timer_init(&s->killer, on_kill, left > floor ? left : floor, 0.);
    s->killer.data = s;
    ev_timer_start(s->loop, &s->killer);
}

static void on_grace(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct session *s = w->data;
    size_t n = 0;
    while (s->inflight.head) {
        struct req *r = s->inflight.head;
        reply_error(s, r->id, r->idlen, SESSION_ERR_SHUTTING_DOWN, "the session is shutting down");
        req_drop(s, r, &s->inflight);
        n++;
    }
    struct req *r = s->queue.head;
    if (r) {
        if (!r->dead) reply_error(s, r->id, r->idlen, SESSION_ERR_SHUTTING_DOWN, "the session is shutting down");
        req_drop(s, r, &s->queue);
        n++;
    }
    if (n) log_warn("grace period over: %zu requests answered " SESSION_ERR_SHUTTING_DOWN, n);
    stop_handler(s);
}

static void begin_shutdown(struct session *s, int sig)
{
    if (s->stopping) return;
    s->stopping = 1;
    log_info("signal %d: shutting down (grace %.3g s)", sig, s->cfg.grace);
    s->deadline = ev_now(s->loop) + s->cfg.grace;
    if (s->mailbox_on) {
        mailbox_stop(&s->mb);
        s->mailbox_on = 0;
    }
    handler_no_restart(&s->h);
    /* What the handler has not started on is answered now; only what is in
     * flight gets the grace period. */
    struct req *r = s->queue.head;
    while (r) {
        struct req *next = r->next;
        if (!r->inflight) {
            reply_error(s, r->id, r->idlen, SESSION_ERR_SHUTTING_DOWN, "the session is shutting down");
            req_drop(s, r, &s->queue);
        }
        r = next;
    }
    if (!handler_running(&s->h) || s->ninflight == 0) {
        stop_handler(s);
        return;
    }
    ev_timer_init(&s->grace, on_grace, s->cfg.grace, 0.);
    s->grace.data = s;
    ev_timer_start(s->loop, &s->grace);
}

static void on_signal(struct ev_loop *loop, int sig, void *ctx)
{
    (void)loop;
    struct session *s = ctx;
    if (sig == SIGTERM || sig == SIGINT) {
        begin_shutdown(s, sig);
        return;
    }
    /* Anything else is the handler's business, as with any init. */
    if (handler_running(&s->h)) pid1_forward(&s->cfg, s->h.pid, sig);
}

/* ---- setup ----------------------------------------------------------------- */

static int parse_positive(const char *name, const char *v, double min, double max, double *out,
                          char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(d >= min) || d > max) {
        snprintf(err, errlen, "%s must be a number from %g to %g, not '%.40s'", name, min, max, v);
        return -1;
    }
    *out = d;
    return 0;
}

static int read_config(struct session *s, double *base, char *err, size_t errlen)
{
    const char *v;
    double q = DEFAULT_QUEUE_MAX;
    *base = DEFAULT_RESTART_BASE;
    if (pid1_config_read(&s->cfg, err) < 0) return -1;
    if ((v = getenv(ENV_RESTART_BASE)) && *v &&
        parse_positive(ENV_RESTART_BASE, v, 0.001, 3600, base, err, errlen) < 0)
        return -1;
    if ((v = getenv(ENV_QUEUE_MAX)) && *v) {
        if (parse_positive(ENV_QUEUE_MAX, v, 1, 1000000, &q, err, errlen) < 0) return -1;
        if (q != (double)(long)q) {
            snprintf(err, errlen, ENV_QUEUE_MAX " must be a whole number, not '%.40s'", v);
            return -1;
        }
    }
    s->queue_max = (size_t)q;
    return 0;
}

static int parse_args(int argc, char **argv, char ***cmd, int *help)
{
    int i = 1;
    *cmd = NULL;
    *help = 0;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            *help = 1;
            return 0;
        }
        if (argv[i][0] == '-') {
            log_error("session: unknown option '%s' (see session --help)", argv[i]);
            return -1;
        }
        break;
    }
    if (i >= argc) {
        log_error("session: no handler command (usage: session -- HANDLER [ARG...])");
        return -1;
    }
    *cmd = argv + i;
    return 0;
}

static void free_all(struct session *s)
{
    while (s->queue.head) req_drop(s, s->queue.head, &s->queue);
    while (s->inflight.head) req_drop(s, s->inflight.head, &s->inflight);
    if (s->mailbox_on) mailbox_stop(&s->mb);
    handler_free(&s->h);
    seen_free(s->seen);
    buf_free(&s->out);
    buf_free(&s->tmp);
    free(s->nonce.value);
}

int session_main(int argc, char **argv)
{
    static struct session st; /* large (the id table); one per process */
    struct session *s = &st;
    char err[512];
    char **cmd;
    int help;
    double base;

    memset(s, 0, sizeof *s);
    if (pid1_begin(&s->nonce) < 0) return EXIT_USAGE;
    if (parse_args(argc, argv, &cmd, &help) < 0) return EXIT_USAGE;
    if (help) {
        fputs(session_usage, stdout);
        return 0;
    }
    if (read_config(s, &base, err, sizeof err) < 0) {
        log_error("%s", err);
        return EXIT_USAGE;
    }
    const char *path = getenv(ENV_MAILBOX);
    if (!path || !*path) path = DEFAULT_MAILBOX;
    io_cloexec_inherited();

    s->loop = ev_default_loop(EVFLAG_AUTO);
    s->seen = seen_new(SESSION_DEDUP_WINDOW);
    if (!s->loop || !s->seen) {
        log_error("cannot start: %s", s->loop ? "out of memory" : "no event loop");
        return EXIT_USAGE;
    }
    buf_init(&s->out, (size_t)-1 / 4);
    buf_init(&s->tmp, 64 * 1024);
    reaper_init(s->loop);
    if (pid1_init(s->loop, on_signal, s, err) < 0) {
        log_error("%s", err);
        return EXIT_USAGE;
    }
    ev_prepare_init(&s->flush, on_prepare);
    s->flush.data = s;
    ev_prepare_start(s->loop, &s->flush);
    ev_unref(s->loop);

    handler_init(&s->h, s->loop, cmd, base, &ops, s);
    int exec_errno;
    if (handler_start(&s->h, &exec_errno, err) < 0) {
        log_error("cannot start the handler: %s", err);
        free_all(s);
        return EXIT_NOEXEC;
    }
    if (exec_errno) {
        /* A handler that cannot be run at all is a configuration error the
         * operator must see, not something to retry forever. */
        log_error("cannot run the handler '%s': %s", cmd[0],
                  spawn_exec_reason(exec_errno));
        handler_no_restart(&s->h);
        return spawn_exec_exit_code(exec_errno);
    }
    if (mailbox_start(&s->mb, s->loop, path, SESSION_LINE_MAX, on_mailbox, s, err, sizeof err) < 0) {
        log_error("%s", err);
        handler_no_restart(&s->h);
        handler_signal(&s->h, SIGKILL);
        return EXIT_USAGE;
    }
    s->mailbox_on = 1;
    log_info("session: mailbox %s, handler %s", path, cmd[0]);

    ev_run(s->loop, 0);
    if (!s->done) log_error("session: nothing left to wait for; exiting"); /* a bug: never spin */
    out_flush(s);
    /* As PID 1 the kernel kills everything left when we exit; do it now so
     * nothing of the handler outlives the last reply line. */
    if (pid1_is_init()) kill(-1, SIGKILL);
    pid1_stop(s->loop);
    ev_prepare_stop(s->loop, &s->flush);
    free_all(s);
    return 0;
}
