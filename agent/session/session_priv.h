/*
 * session_priv.h - the session mode's shared record and the calls between its
 * parts (README "`sandbox-agent session -- HANDLER ARGV...`"). Internal to
 * agent/session; session.h is the mode's entry point.
 *
 *   requests.c  the request records: the table by id, the queue, the
 *               in-flight list, timeouts, the agent's own error replies
 *   intake.c    mailbox lines -> requests: parsing, duplicates, the queue
 *               bounds (queue_full, pausing and resuming the mailbox)
 *   pump.c      bytes to and from the handler: the writev pump to its
 *               stdin, its reply lines
 *   output.c    the reply lines on stdout: the bounded buffer, non-blocking
 *               writes, pausing the producers while stdout is behind
 *   shutdown.c  SIGTERM/SIGINT: the grace period, stopping the handler;
 *               other signals forwarded to it
 *   session.c   session_main: usage, arguments, environment, wiring
 *
 * Bounds: a request line is at most SESSION_LINE_MAX; at most INFLIGHT_MAX
 * requests are in flight. While the handler runs, the queue is held under
 * QUEUE_RUNNING_HIGH requests / QUEUE_BYTES_MAX bytes by pausing the mailbox
 * (the file keeps what is unread, nothing is lost); while it is down (restart
 * backoff), the queue holds queue_max requests (SANDBOX_AGENT_QUEUE_MAX) and
 * a request that finds it full is answered queue_full at once, so the host
 * is not left waiting out a 64 s backoff. Reply lines waiting for stdout:
 * at OUT_HIGH bytes the handler's stdout and the mailbox pause, below OUT_LOW
 * they resume; what was in hand then (at most one handler line and one read
 * chunk, or a dead handler's last HANDLER_DRAIN_MAX) and the agent's own
 * short answers may go past it, never past OUT_MAX.
 */
#ifndef SA_SESSION_SESSION_PRIV_H
#define SA_SESSION_SESSION_PRIV_H

#include "agent/core/buf.h"
#include "agent/core/hash.h"
#include "agent/core/lsplit.h"
#include "agent/core/nonce.h"
#include "agent/core/pid1.h"
#include "agent/core/stop.h"
#include "agent/session/handler.h"
#include "agent/session/mailbox.h"
#include "agent/session/msgline.h"
#include "agent/session/seen.h"

#include <ev.h>
#include <stddef.h>

#define QUEUE_BYTES_MAX (64u * 1024u * 1024u)
#define INFLIGHT_MAX 65536
/* While the handler runs, reading pauses at this many queued requests (or
 * QUEUE_BYTES_MAX) and resumes below half of it. */
#define QUEUE_RUNNING_HIGH 4096
#define OUT_HIGH (64u * 1024u * 1024u)
#define OUT_LOW (OUT_HIGH / 2)
#define OUT_MAX (256u * 1024u * 1024u)

struct session;

struct req {
    struct hnode hn;            /* in the table by id while it can be answered */
    struct req *prev, *next;    /* queue or in-flight list */
    struct session *s;
    char *line;                 /* the line + '\n' until fully written */
    int line_inline;            /* line lives after this struct */
    size_t len, written;
    ev_timer tmo;
    double timeout;
    int has_tmo;
    int inflight;               /* some byte reached the handler */
    int dead;                   /* answered already, still being written */
    size_t idlen;
    char id[MSG_ID_MAX + 1];
};

struct reqlist {
    struct req *head, *tail;
    size_t count;
};

struct output {
    struct buf buf;             /* reply lines; data[done..len) not yet written */
    size_t done;
    ev_io w;                    /* stdout writable: active while a write would block */
    ev_timer linger;            /* at the end: the grace deadline for what is left */
    int flags, restore;         /* stdout's status flags before O_NONBLOCK, to give back */
    int started, broken, full, ending;
    unsigned long long dropped; /* bytes of reply lines never written */
};

struct session {
    struct ev_loop *loop;
    struct pid1_config cfg;
    struct nonce nonce;
    struct handler h;
    /* requests.c */
    struct htab table;          /* requests by id that can still be answered */
    struct reqlist queue;       /* not yet fully written, in order */
    struct reqlist inflight;    /* fully written, waiting for a reply */
    size_t queue_bytes, ninflight;
    /* intake.c */
    struct mailbox mb;
    struct seen *seen;
    size_t queue_max;
    int mailbox_on, paused;
    /* shutdown.c */
    int stopping, handler_stopped, done;
    ev_tstamp deadline;
    ev_timer grace;
    struct stop stop;
    /* pump.c */
    ev_prepare flush;
    struct buf tmp;
    /* output.c */
    struct output out;
};

/* ---- requests.c ---- */
/* The table; -1 when out of memory. */
int requests_init(struct session *s);
/* Every request forgotten, unanswered; the table freed. */
void requests_free_all(struct session *s);
/* A new request for line[0..n), queued (with '\n' added) and its timer
 * started; NULL when out of memory. */
struct req *requests_add(struct session *s, const struct msgline_request *m, const char *line, size_t n);
/* The request of this id that can still be answered, or NULL. */
struct req *requests_find(struct session *s, const char *id, size_t n);
/* Forget a request: out of the table, list `from` (or none) and its timer. */
void requests_drop(struct session *s, struct req *r, struct reqlist *from);
/* Answered while still being written: the rest must still go, or the
 * handler's next line is corrupt; a late reply finds no request. */
void requests_forget(struct session *s, struct req *r);
/* Its first byte reached the handler: it counts as in flight. */
void requests_started(struct session *s, struct req *r);
/* Its last byte reached the handler: off the queue, onto the in-flight list
 * (or freed when it was answered already). */
void requests_sent(struct session *s, struct req *r);
/* The agent's own error reply {"id", "error": {code, message}}. */
void requests_answer(struct session *s, const char *id, size_t idlen, const char *code, const char *msg);
/* Answer and drop every request that reached the handler (the in-flight
 * list and a half-written queue head). Returns how many there were. */
size_t requests_answer_started(struct session *s, const char *code, const char *msg);
/* Answer and drop every queued request the handler has not seen a byte of. */
void requests_answer_unstarted(struct session *s, const char *code, const char *msg);

/* ---- intake.c ---- */
/* Start following the mailbox; -1 with err (ERR_LEN bytes). */
int intake_start(struct session *s, const char *path, char *err);
void intake_stop(struct session *s);
/* Read again if paused and the queue has room (or the handler is down). */
void intake_resume(struct session *s);

/* ---- pump.c ---- */
/* The per-iteration flush (an ev_prepare, not keeping the loop alive). */
void pump_start(struct session *s);
void pump_stop(struct session *s);
/* The handler's stdin can take more (handler_ops.on_writable). */
void pump_writable(void *ctx);
/* A line, and the head of a too-long line, of the handler's stdout. */
void pump_reply(void *ctx, const char *p, size_t n);
void pump_reply_too_large(void *ctx, const char *head, size_t n);
/* Log untrusted bytes as one warn line: control characters masked, the
 * first LOG_LINE_MAX bytes only. */
void pump_log_text(const char *what, const char *p, size_t n);

/* ---- output.c ---- */
/* The buffer, and stdout made non-blocking unless it is a regular file. */
void output_init(struct session *s);
/* The reply line for json[0..n) to stdout (buffered until the flush). */
void output_emit(struct session *s, const char *id, size_t idlen, const char *json, size_t n);
/* Write what is waiting, as far as stdout takes it without blocking. */
void output_flush(struct session *s);
/* The loop is to end: at once, or when stdout has taken what is left, or at
 * the grace deadline, whichever comes first. */
void output_finish(struct session *s);
/* A last non-blocking try; what is left dropped and logged; stdout's flags
 * given back. Harmless before output_init. */
void output_free(struct session *s);

/* ---- shutdown.c ---- */
void shutdown_init(struct session *s);
/* pid1_init's signal callback. */
void shutdown_on_signal(struct ev_loop *loop, int sig, void *ctx);
/* A request is done: during shutdown, the last one stops the handler. */
void shutdown_progress(struct session *s);
/* The handler exited during shutdown: the loop ends. */
void shutdown_finish(struct session *s);

#endif
