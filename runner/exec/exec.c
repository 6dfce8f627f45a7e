/*
 * exec.c - `sandbox-agent exec [OPTIONS] -- CMD...`: run one command with a
 * deadline and bounded output, then print one `__SBX_EXEC__{json}` line.
 *
 * Owns the command's lifetime only: the command leads its own process group
 * (so a timeout reaches its grandchildren too), its stdout and stderr come
 * back through pipes into two ring buffers that keep the last N bytes each,
 * and the call returns as soon as the command itself exits: what is in the
 * pipes then is read (exactly that much, so a chatty background process
 * cannot hold us), and background processes are left running, as a shell
 * leaves them. Spawning and reaping go through agent/core/spawn.h; nothing
 * here calls wait*().
 *
 * Exit status: 0 whenever the result line was printed (the command's own
 * status is in it), 2 for a usage error, 1 when no result could be made.
 */
#include "runner/exec/exec.h"
#include "agent/core/buf.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/jsonw.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"
#include "agent/core/spawn.h"
#include "agent/core/num.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_KILL_AFTER 5.0
/* Per stream, when --max-output-bytes is not given. */
#define DEFAULT_MAX_OUTPUT (8u * 1024 * 1024)
#define MAX_MAX_OUTPUT (1024ull * 1024 * 1024)
/* A year: anything longer is a typo, and keeps timer arithmetic sane. */
#define MAX_SECONDS (365.0 * 24 * 3600)
#define SHELL "/bin/sh"
#define READ_CHUNK (64 * 1024)
/* How often to look whether the group is gone after a timeout killed its
 * leader (grandchildren are not our children: no exit event for them). */
#define GROUP_POLL 0.02

static const char exec_usage[] =
    "usage: " SA_NAME " exec [OPTIONS] [--] CMD [ARG...]\n"
    "\n"
    "Run a bounded command and print one " SENTINEL_EXEC "<json> line:\n"
    "{\"exit_code\", \"signal\", \"timed_out\", \"stdout\", \"stderr\",\n"
    " \"stdout_truncated\", \"stderr_truncated\", \"duration_ms\"}.\n"
    "\n"
    "options:\n"
    "  --timeout S            SIGTERM the command's process group after S seconds\n"
    "  --kill-after S         then SIGKILL it S seconds later (default 5)\n"
    "  --max-output-bytes N   keep the last N bytes of each stream (default 8388608)\n"
    "  --cwd DIR              run in DIR\n"
    "  --shell                run CMD (its words joined by spaces) with /bin/sh -c\n"
    "\n"
    "The command leads its own process group; background processes it starts\n"
    "keep running and do not hold the call open. Output that is not UTF-8 comes\n"
    "back with U+FFFD. Exit status: 0 when the line was printed, 2 usage error.\n";

/* The last `max` bytes of a stream. Grows as output arrives (a quiet command
 * costs nothing), never beyond max; then wraps. */
struct ring {
    char *data;
    size_t cap, max, head, len;
    uint64_t total;
};

static int ring_grow(struct ring *r, size_t need)
{
    if (need <= r->cap) return 0;
    size_t cap = r->cap ? r->cap : 4096;
    while (cap < need) cap *= 2;
    if (cap > r->max) cap = r->max;
    char *p = realloc(r->data, cap);
    if (!p) return -1;
    r->data = p;
    r->cap = cap;
    return 0;
}

static int ring_put(struct ring *r, const char *p, size_t n)
{
    r->total += n;
    if (r->max == 0 || n == 0) return 0;
    if (n >= r->max) {
        if (ring_grow(r, r->max) < 0) return -1;
        memcpy(r->data, p + (n - r->max), r->max);
        r->head = 0;
        r->len = r->max;
        return 0;
    }
    if (r->head == 0 && r->len + n <= r->max) {
        /* Still linear. */
        if (ring_grow(r, r->len + n) < 0) return -1;
        memcpy(r->data + r->len, p, n);
        r->len += n;
        return 0;
    }
    if (ring_grow(r, r->max) < 0) return -1;
    size_t pos = (r->head + r->len) % r->max;
    size_t first = r->max - pos < n ? r->max - pos : n;
    memcpy(r->data + pos, p, first);
    memcpy(r->data, p + first, n - first);
    if (r->len + n > r->max) {
        r->head = (r->head + (r->len + n - r->max)) % r->max;
        r->len = r->max;
    } else {
        r->len += n;
    }
    return 0;
}

/* The kept bytes as JSON text (invalid UTF-8 as U+FFFD). */
static int ring_json(struct buf *b, struct ring *r)
{
    if (r->head == 0) return jsonw_str(b, r->data ? r->data : "", r->len, JSONW_REPLACE);
    char *lin = malloc(r->len);
    if (!lin) return -1;
    size_t first = r->max - r->head < r->len ? r->max - r->head : r->len;
    memcpy(lin, r->data + r->head, first);
    memcpy(lin + first, r->data, r->len - first);
    int rc = jsonw_str(b, lin, r->len, JSONW_REPLACE);
    free(lin);
    return rc;
}

struct stream {
    ev_io w;
    int fd;
    struct ring ring;
};

struct exec_state {
    struct ev_loop *loop;
    pid_t pid;
    int exited, status, timed_out, oom;
    int killed; /* the kill-after SIGKILL has been sent */
    double kill_after;
    struct timespec start, end;
    struct stream out, err;
    ev_timer timeout, killer, poll;
    ev_signal sigs[3];
    struct reaper_watch rw;
};

static void stream_close(struct ev_loop *loop, struct stream *s)
{
    if (s->fd < 0) return;
    ev_io_stop(loop, &s->w);
    close(s->fd);
    s->fd = -1;
}

/* Read what the pipe holds, up to limit bytes (0: until EAGAIN). */
static void stream_read(struct exec_state *st, struct stream *s, size_t limit)
{
    static char chunk[READ_CHUNK];
    size_t got = 0;
    while (s->fd >= 0 && (limit == 0 || got < limit)) {
        size_t want = sizeof chunk;
        if (limit && limit - got < want) want = limit - got;
        ssize_t r = read(s->fd, chunk, want);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) stream_close(st->loop, s);
            return;
        }
        if (r == 0) {
            stream_close(st->loop, s);
            return;
        }
        if (ring_put(&s->ring, chunk, (size_t)r) < 0) st->oom = 1;
        got += (size_t)r;
        /* Let the other stream and the timers have a turn. */
        if (limit == 0 && got >= 16 * sizeof chunk) return;
    }
}

static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    struct exec_state *st = w->data;
    stream_read(st, (struct stream *)w, 0);
}

static void on_killer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    struct exec_state *st = w->data;
    log_debug("exec: kill-after expired; SIGKILL to group %d", (int)st->pid);
    st->killed = 1;
    kill(-st->pid, SIGKILL);
    if (!st->exited) kill(st->pid, SIGKILL);
    else ev_break(loop, EVBREAK_ALL);
}

static void on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    struct exec_state *st = w->data;
    st->timed_out = 1;
    log_debug("exec: timeout; SIGTERM to group %d", (int)st->pid);
    kill(-st->pid, SIGTERM);
    kill(st->pid, SIGTERM); /* in case it left its group */
    /* A stopped process cannot act on SIGTERM until continued. */
    kill(-st->pid, SIGCONT);
    ev_timer_init(&st->killer, on_killer, st->kill_after, 0);
    st->killer.data = st;
    ev_timer_start(loop, &st->killer);
}

/* After a timeout the leader may be gone while the rest of its group still
 * runs: wait for them, until kill-after has passed (on_killer then ends it). */
static void on_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    struct exec_state *st = w->data;
    if ((kill(-st->pid, 0) < 0 && errno == ESRCH) || st->killed) ev_break(loop, EVBREAK_ALL);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)loop;
    (void)revents;
    struct exec_state *st = w->data;
    /* Whoever stops us stops the command: pass it on to its group. */
    if (st->pid > 0) kill(-st->pid, w->signum);
}

static void on_exit_status(struct ev_loop *loop, pid_t pid, int status, void *ctx)
{
    (void)pid;
    struct exec_state *st = ctx;
    st->exited = 1;
    st->status = status;
    clock_gettime(CLOCK_MONOTONIC, &st->end);
    /* Everything it wrote before exiting is in the pipes now. Read exactly
     * that: a background writer must not keep us here. */
    struct stream *ss[2] = {&st->out, &st->err};
    for (int i = 0; i < 2; i++) {
        int avail = 0;
        if (ss[i]->fd >= 0 && ioctl(ss[i]->fd, FIONREAD, &avail) == 0 && avail > 0)
            stream_read(st, ss[i], (size_t)avail);
    }
    ev_timer_stop(loop, &st->timeout);
    /* Once SIGKILL has gone out there is nothing left to wait for: a group
     * member that lingers is a zombie nobody reaps or a process stuck in the
     * kernel, and neither may hold the call open. */
    if (st->timed_out && !st->killed && !(kill(-st->pid, 0) < 0 && errno == ESRCH)) {
        ev_timer_init(&st->poll, on_poll, GROUP_POLL, GROUP_POLL);
        st->poll.data = st;
        ev_timer_start(loop, &st->poll);
        return;
    }
    ev_break(loop, EVBREAK_ALL);
}

struct exec_opts {
    double timeout, kill_after;
    int has_timeout, shell;
    uint64_t max_output;
    const char *cwd;
    char **cmd;
};

static int parse_args(int argc, char **argv, struct exec_opts *o, int *help)
{
    o->timeout = 0;
    o->kill_after = DEFAULT_KILL_AFTER;
    o->has_timeout = o->shell = 0;
    o->max_output = DEFAULT_MAX_OUTPUT;
    o->cwd = NULL;
    o->cmd = NULL;
    *help = 0;
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = 1;
            return 0;
        }
        if (a[0] != '-') break;
        if (!strcmp(a, "--shell")) {
            o->shell = 1;
            continue;
        }
        size_t alen = strcspn(a, "=");
        const char *names[] = {"--timeout", "--kill-after", "--max-output-bytes", "--cwd"};
        int k;
        for (k = 0; k < 4; k++)
            if (strlen(names[k]) == alen && !strncmp(a, names[k], alen)) break;
        if (k == 4) {
            log_error("exec: unknown option '%s' (see exec --help)", a);
            return -1;
        }
        const char *v;
        if (a[alen] == '=') {
            v = a + alen + 1;
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            log_error("exec: %s needs a value", names[k]);
            return -1;
        }
        if (k == 0) {
            if (num_seconds(v, MAX_SECONDS, &o->timeout) < 0 || o->timeout <= 0) {
                log_error("exec: --timeout '%s' is not a positive number of seconds", v);
                return -1;
            }
            o->has_timeout = 1;
        } else if (k == 1) {
            if (num_seconds(v, MAX_SECONDS, &o->kill_after) < 0) {
                log_error("exec: --kill-after '%s' is not a number of seconds", v);
                return -1;
            }
        } else if (k == 2) {
            if (num_count(v, MAX_MAX_OUTPUT, &o->max_output) < 0) {
                log_error("exec: --max-output-bytes '%s' is not a byte count (at most %llu)", v,
                          (unsigned long long)MAX_MAX_OUTPUT);
                return -1;
            }
        } else {
            if (!*v) {
                log_error("exec: --cwd is empty");
                return -1;
            }
            o->cwd = v;
        }
    }
    if (i >= argc) {
        log_error("exec: no command (see exec --help)");
        return -1;
    }
    o->cmd = argv + i;
    return 0;
}

/* sh -c "the words joined by spaces". */
static char **shell_argv(char **cmd)
{
    size_t len = 1;
    for (char **c = cmd; *c; c++) len += strlen(*c) + 1;
    char *script = malloc(len);
    char **argv = malloc(4 * sizeof *argv);
    if (!script || !argv) {
        free(script);
        free(argv);
        return NULL;
    }
    script[0] = '\0';
    for (char **c = cmd; *c; c++) {
        if (c != cmd) strcat(script, " ");
        strcat(script, *c);
    }
    argv[0] = SHELL;
    argv[1] = "-c";
    argv[2] = script;
    argv[3] = NULL;
    return argv;
}

static void shell_free(char **sh)
{
    if (!sh) return;
    free(sh[2]);
    free(sh);
}

static int emit(struct exec_state *st)
{
    struct buf b;
    /* Two rings of at most 1 GiB, each byte at most 6 bytes of JSON. */
    buf_init(&b, (size_t)-1 / 2);
    int code = -1, sig = -1;
    if (WIFEXITED(st->status)) code = WEXITSTATUS(st->status);
    else if (WIFSIGNALED(st->status)) sig = WTERMSIG(st->status);
    long long ms = (long long)(st->end.tv_sec - st->start.tv_sec) * 1000 +
                   (st->end.tv_nsec - st->start.tv_nsec) / 1000000;
    if (ms < 0) ms = 0;
    int r = buf_puts(&b, SENTINEL_EXEC "{\"exit_code\": ");
    r = r < 0 ? r : code >= 0 ? buf_printf(&b, "%d", code) : buf_puts(&b, "null");
    r = r < 0 ? r : buf_puts(&b, ", \"signal\": ");
    r = r < 0 ? r : sig >= 0 ? buf_printf(&b, "%d", sig) : buf_puts(&b, "null");
    r = r < 0 ? r : buf_printf(&b, ", \"timed_out\": %s, \"stdout\": ", st->timed_out ? "true" : "false");
    r = r < 0 ? r : ring_json(&b, &st->out.ring);
    r = r < 0 ? r : buf_puts(&b, ", \"stderr\": ");
    r = r < 0 ? r : ring_json(&b, &st->err.ring);
    r = r < 0 ? r
              : buf_printf(&b, ", \"stdout_truncated\": %s, \"stderr_truncated\": %s, \"duration_ms\": %lld}\n",
                           st->out.ring.total > st->out.ring.len ? "true" : "false",
                           st->err.ring.total > st->err.ring.len ? "true" : "false", ms);
    if (r < 0) {
        log_error("exec: out of memory building the result");
        buf_free(&b);
        return 1;
    }
    if (io_write_all(STDOUT_FILENO, b.data, b.len) < 0) {
        log_error("exec: cannot write the result: %s", strerror(errno));
        buf_free(&b);
        return 1;
    }
    buf_free(&b);
    return 0;
}

int exec_main(int argc, char **argv)
{
    const char *cerr = NULL;
    struct exec_opts o;
    int help;
    char err[ERR_LEN];

    if (log_init(&cerr) < 0) {
        log_error("%s", cerr);
        return EXIT_USAGE;
    }
    if (parse_args(argc, argv, &o, &help) < 0) return EXIT_USAGE;
    if (help) {
        fputs(exec_usage, stdout);
        return 0;
    }
    if (o.cwd) {
        /* Checked here so a bad --cwd is not mistaken for "command not found". */
        int dfd = open(o.cwd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
            log_error("exec: --cwd %s: %s", o.cwd, strerror(errno));
            return EXIT_USAGE;
        }
        close(dfd);
    }
    char **cmd = o.cmd, **sh = NULL;
    if (o.shell && !(cmd = sh = shell_argv(o.cmd))) {
        log_error("exec: out of memory");
        return 1;
    }

    static struct exec_state st;
    memset(&st, 0, sizeof st);
    st.kill_after = o.kill_after;
    st.out.fd = st.err.fd = -1;
    st.out.ring.max = st.err.ring.max = (size_t)o.max_output;
    signal(SIGPIPE, SIG_IGN);
    io_cloexec_inherited();
    st.loop = ev_default_loop(EVFLAG_AUTO);
    if (!st.loop) {
        log_error("exec: cannot start the event loop");
        shell_free(sh);
        return 1;
    }
    reaper_init(st.loop);

    /* Before the spawn: a stop signal that arrives the moment the command
     * runs must be passed on, not kill us with the default action. */
    static const int fwd[3] = {SIGTERM, SIGINT, SIGHUP};
    for (int i = 0; i < 3; i++) {
        ev_signal_init(&st.sigs[i], on_signal, fwd[i]);
        st.sigs[i].data = &st;
        ev_signal_start(st.loop, &st.sigs[i]);
        ev_unref(st.loop); /* they must not keep the loop alive */
    }

    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
        log_error("exec: pipe: %s", strerror(errno));
        shell_free(sh);
        return 1;
    }
    struct spawn_opts so = {.argv = cmd, .new_pgrp = 1, .tty_fd = -1, .stdin_fd = -1,
                            .stdout_fd = po[1], .stderr_fd = pe[1], .cwd = o.cwd};
    int exec_errno;
    clock_gettime(CLOCK_MONOTONIC, &st.start);
    st.pid = spawn_child(&so, &exec_errno, err);
    close(po[1]);
    close(pe[1]);
    if (st.pid < 0) {
        log_error("exec: cannot start the command: %s", err);
        close(po[0]);
        close(pe[0]);
        shell_free(sh);
        return 1;
    }
    reaper_watch(st.loop, &st.rw, st.pid, on_exit_status, &st);
    if (exec_errno) {
        /* The command's own stderr is where a caller looks for why. */
        char msg[512];
        int n = snprintf(msg, sizeof msg, SA_NAME ": exec: cannot run '%s': %s\n", cmd[0],
                         spawn_exec_reason(exec_errno));
        if (n > 0) ring_put(&st.err.ring, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    }
    struct stream *ss[2] = {&st.out, &st.err};
    int fds[2] = {po[0], pe[0]};
    for (int i = 0; i < 2; i++) {
        ss[i]->fd = fds[i];
        io_set_nonblock(fds[i], 1);
        ev_io_init(&ss[i]->w, on_readable, fds[i], EV_READ);
        ss[i]->w.data = &st;
        ev_io_start(st.loop, &ss[i]->w);
    }
    if (o.has_timeout) {
        ev_timer_init(&st.timeout, on_timeout, o.timeout, 0);
        st.timeout.data = &st;
        ev_timer_start(st.loop, &st.timeout);
    }

    ev_run(st.loop, 0);

    if (!st.exited) {
        /* Cannot happen (the child watcher keeps the loop running); be safe. */
        log_error("exec: event loop ended before the command");
        shell_free(sh);
        return 1;
    }
    if (st.oom) log_warn("exec: out of memory keeping output; some was dropped");
    int rc = emit(&st);
    for (int i = 0; i < 2; i++) {
        stream_close(st.loop, ss[i]);
        free(ss[i]->ring.data);
    }
    for (int i = 0; i < 3; i++) {
        ev_ref(st.loop);
        ev_signal_stop(st.loop, &st.sigs[i]);
    }
    ev_timer_stop(st.loop, &st.killer);
    ev_timer_stop(st.loop, &st.poll);
    shell_free(sh);
    return rc;
}
