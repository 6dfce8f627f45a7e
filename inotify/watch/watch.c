/*
 * watch.c - `sandbox-agent watch ROOT RECURSIVE01 [TIMEOUT_SECONDS]`: report
 * file-system events under ROOT, one sentinel line each (README "sandbox-agent
 * watch").
 *
 * A drop-in for the Python watcher program: same argv, same READY line, same
 * JSON lines byte for byte. What is watched and when, and what each event
 * means, is the tree service (inotify/tree/tree.h); this mode is its
 * front-end on stdout: the command line, the READY line, each event formatted
 * by wline.c into the output buffer and written, the timeout, SIGTERM/SIGINT
 * and the exit status. READY comes only once every directory is watched.
 *
 * Bounds owned here: the output buffer holds at most WATCH_OUT_MAX bytes
 * (only the initial walk, before READY, can approach it; past it, one
 * overflow line tells the client to re-list) and is written once the inotify
 * fd is drained or WATCH_FLUSH_AT bytes are pending. The read buffer (256 KiB)
 * and the directory bound (4,194,304) are the service's.
 *
 * Exit status: 0 at TIMEOUT, on SIGTERM/SIGINT or when stdout's reader has
 * gone; 2 usage; 3 ROOT cannot be watched (at start, or it was deleted or
 * moved away while watched); 1 stdout or the inotify fd failed otherwise.
 */
#include "inotify/watch/watch.h"
#include "inotify/watch/wline.h"
#include "inotify/tree/tree.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/num.h"
#include "agent/core/protocol.h"
#include "agent/core/sig.h"

#include <ev.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define WATCH_FLUSH_AT (64 * 1024)
#define WATCH_OUT_MAX (16u * 1024 * 1024)
/* How often to check whether stdout's reader has gone when nothing happens. */
#define WATCH_STDOUT_CHECK 0.5

static const char watch_usage[] =
    "usage: " SA_NAME " watch ROOT RECURSIVE01 [TIMEOUT_SECONDS]\n"
    "\n"
    "Watch ROOT (and every directory below it when RECURSIVE01 is 1) with\n"
    "inotify. Prints " SENTINEL_WATCH_READY " once every directory is watched,\n"
    "then one " SENTINEL_WATCH "{\"mask\": M, \"path\": P} line per event.\n"
    "A line with mask 16384 (IN_Q_OVERFLOW) means events were lost: re-list;\n"
    "with an \"error\" key it names a directory that could not be watched.\n"
    "\n"
    "TIMEOUT_SECONDS empty or absent: watch until stdout closes, SIGTERM or SIGINT.\n"
    "\n"
    "exit status: 0 done, 2 usage, 3 ROOT cannot be watched (or was deleted or\n"
    "moved away), 1 stdout or inotify failed.\n";

struct watch_args {
    const char *root;
    int recursive;
    int timed;             /* 0: TIMEOUT_SECONDS empty or absent, watch forever */
    double timeout;
};

struct watch {
    struct ev_loop *loop;
    const char *root;
    size_t root_len;
    struct tree *sync;
    struct buf out;        /* pending stdout, bounded by WATCH_OUT_MAX */
    int ready;             /* READY is out: lines may be flushed as they come */
    int lost;              /* a line did not fit WATCH_OUT_MAX */
    int out_dead;          /* stdout failed: write nothing more */
    int done;
    int rc;
    ev_timer timeout;
    ev_timer stdout_check;
};

static void finish(struct watch *w, int rc)
{
    if (!w->done) {
        w->done = 1;
        w->rc = rc;
    }
    if (w->sync) tree_halt(w->sync);
    ev_break(w->loop, EVBREAK_ALL);
}

/* ---- stdout -------------------------------------------------------------- */

static int write_out(struct watch *w)
{
    if (w->out.len == 0 || w->out_dead) {
        buf_reset(&w->out);
        return w->out_dead ? -1 : 0;
    }
    int r = io_write_all(STDOUT_FILENO, w->out.data, w->out.len);
    buf_reset(&w->out);
    if (r == 0) return 0;
    w->out_dead = 1;
    /* The client closing its end is how an untimed watch normally ends. */
    if (errno == EPIPE) {
        finish(w, 0);
    } else {
        log_error("watch: cannot write to stdout: %s", strerror(errno));
        finish(w, 1);
    }
    return -1;
}

static int flush_out(struct watch *w)
{
    if (write_out(w) < 0) return -1;
    if (w->lost) {
        /* Lines were dropped for want of buffer: the client must re-list. */
        w->lost = 0;
        wline_event(&w->out, IN_Q_OVERFLOW, w->root, w->root_len, "too many lines to buffer");
        return write_out(w);
    }
    return 0;
}

/* ---- the service's ops --------------------------------------------------- */

static void on_event(void *ctx, uint32_t mask, const char *path, size_t n, const char *error)
{
    struct watch *w = ctx;
    if (w->out_dead) return;
    if (wline_event(&w->out, mask, path, n, error) < 0) w->lost = 1;
    if (w->ready && w->out.len >= WATCH_FLUSH_AT) flush_out(w);
}

static void on_lost(void *ctx) { ((struct watch *)ctx)->lost = 1; }

/* Hold the overflow line and the re-walk's errors back until every watch is
 * in place again. */
static void on_settling(void *ctx, int on) { ((struct watch *)ctx)->ready = !on; }

static void on_drained(void *ctx) { flush_out(ctx); }

static void on_end(void *ctx, enum tree_end why, const char *msg)
{
    struct watch *w = ctx;
    if (why == TREE_ROOT_GONE) {
        log_error("watch: %s: %s", msg, w->root);
        finish(w, EXIT_WATCH_ROOT);
    } else {
        log_error("watch: %s", msg);
        finish(w, 1);
    }
}

static const struct tree_ops watch_ops = {on_event, on_lost, on_settling, on_drained, on_end};

/* ---- the loop's other watchers ------------------------------------------- */

static void on_timeout(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct watch *w = t->data;
    /* What happened before the deadline is still reported. */
    tree_drain(w->sync);
    flush_out(w);
    finish(w, w->done ? w->rc : 0);
}

static void on_stop_signal(struct ev_loop *loop, int sig, void *ctx)
{
    (void)loop;
    (void)sig;
    struct watch *w = ctx;
    flush_out(w);
    finish(w, 0);
}

/* An idle untimed watch would never write, so never learn that its reader has
 * gone: ask the pipe directly. poll() with no events still reports POLLERR on
 * a pipe without readers and POLLHUP on a socket whose peer closed. */
static void on_stdout_check(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct watch *w = t->data;
    struct pollfd pf = {STDOUT_FILENO, 0, 0};
    if (poll(&pf, 1, 0) == 1 && (pf.revents & (POLLERR | POLLHUP))) {
        w->out_dead = 1;
        finish(w, 0);
    }
}

/* The deadline, and the reader check when stdout is a pipe or a socket. */
static void start_timers(struct watch *w, const struct watch_args *a)
{
    if (a->timed) {
        ev_timer_init(&w->timeout, on_timeout, a->timeout, 0);
        w->timeout.data = w;
        ev_timer_start(w->loop, &w->timeout);
    }
    struct stat st;
    if (fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
        ev_timer_init(&w->stdout_check, on_stdout_check, WATCH_STDOUT_CHECK, WATCH_STDOUT_CHECK);
        w->stdout_check.data = w;
        ev_timer_start(w->loop, &w->stdout_check);
    }
}

static void stop_timers(struct watch *w, const struct watch_args *a)
{
    ev_timer_stop(w->loop, &w->stdout_check);
    if (a->timed) ev_timer_stop(w->loop, &w->timeout);
}

/* ---- the run ------------------------------------------------------------- */

/* Watch every directory, then READY and whatever could not be watched go out
 * together: READY goes first into the buffer, which nothing writes before
 * `ready`, and is dropped with it when ROOT cannot be watched. Returns 0 to
 * run the loop, or -1 with the exit code in *rc. */
static int begin(struct watch *w, const struct watch_args *a, int *rc)
{
    char err[ERR_LEN];
    *rc = 1;
    if (!(w->sync = tree_new(a->root, a->recursive, &watch_ops, w, err))) {
        log_error("watch: %s", err);
        return -1;
    }
    if (wline_ready(&w->out) < 0) w->lost = 1;
    if (tree_start(w->sync, w->loop, err) < 0) {
        log_error("watch: cannot watch %s: %s", w->root, err);
        *rc = EXIT_WATCH_ROOT;
        return -1;
    }
    w->ready = 1;
    if (flush_out(w) < 0 || w->done) {
        *rc = w->rc;
        return -1;
    }
    return 0;
}

static int run(struct watch *w, const struct watch_args *a)
{
    int rc;
    char err[ERR_LEN];
    if (!(w->loop = ev_default_loop(EVFLAG_AUTO))) {
        log_error("watch: out of memory");
        return 1;
    }
    /* Before anything is written: a closed stdout must be an EPIPE we end on
     * cleanly, not our death (sig_catch ignores SIGPIPE). A stop signal that
     * comes during the initial walk is handled once the loop runs. */
    if (sig_catch(w->loop, (int[]){SIGTERM, SIGINT, 0}, on_stop_signal, w, err) < 0) {
        log_error("watch: %s", err);
        return 1;
    }
    if (begin(w, a, &rc) < 0) return rc;
    start_timers(w, a);
    ev_run(w->loop, 0);
    flush_out(w);
    stop_timers(w, a);
    return w->done ? w->rc : 0;
}

/* ---- command line -------------------------------------------------------- */

/* ROOT, RECURSIVE01 ("0" or "1") and TIMEOUT_SECONDS: empty or absent for
 * none, else a decimal number of seconds up to a year (num_seconds). Returns
 * 0, or -1 with a message in err. */
static int parse_args(int argc, char **argv, struct watch_args *a, char *err)
{
    if (argc < 3 || argc > 4) {
        err_set(err, "expected ROOT RECURSIVE01 [TIMEOUT_SECONDS] (see watch --help)");
        return -1;
    }
    if (strcmp(argv[2], "0") && strcmp(argv[2], "1")) {
        err_set(err, "RECURSIVE01 must be 0 or 1, not '%s'", argv[2]);
        return -1;
    }
    a->root = argv[1];
    a->recursive = argv[2][0] == '1';
    /* A zero deadline ends the watch right after READY, as the Python
     * program's loop did. */
    a->timed = argc == 4 && argv[3][0];
    if (a->timed && num_seconds(argv[3], NUM_MAX_SECONDS, &a->timeout) < 0) {
        err_set(err, "TIMEOUT_SECONDS must be a number of seconds or empty, not '%s'", argv[3]);
        return -1;
    }
    return 0;
}

int watch_main(int argc, char **argv)
{
    const char *cerr = NULL;
    if (log_init(&cerr) < 0) {
        log_error("%s", cerr);
        return EXIT_USAGE;
    }
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(watch_usage, stdout);
        return 0;
    }
    struct watch_args a = {0};
    char err[ERR_LEN];
    if (parse_args(argc, argv, &a, err) < 0) {
        log_error("watch: %s", err);
        return EXIT_USAGE;
    }
    struct watch w = {0};
    w.root = a.root;
    w.root_len = strlen(a.root);
    buf_init(&w.out, WATCH_OUT_MAX);
    int rc = run(&w, &a);
    if (w.loop) sig_release(w.loop);
    tree_free(w.sync);
    buf_free(&w.out);
    return rc;
}
