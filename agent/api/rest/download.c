/*
 * download.c - GET /files?path=P[&username=U]: the bytes of a regular file
 * (see rest/files.h).
 *
 * The helper opens the file as the user with the file service's checks (a
 * FIFO, a device or a /proc stream is refused, the size is the one fstat
 * saw on the opened fd) and answers on its socket with a head:
 *   4-byte status (0, or the HTTP status of the refusal)
 *   status 0: 8-byte size; else: the message up to EOF
 * Then, for an identity response of a file on a local filesystem (tmpfs,
 * ext4, xfs, btrfs, overlayfs: sendfile.c), the open fd comes with the
 * head (SCM_RIGHTS) and the agent sends the file to the socket itself with
 * sendfile(2), a bounded burst per turn of the loop, at the socket's pace:
 * no copy through a helper. It checks the fd it got as the helper checked
 * the path (a regular file there; the helper is the user's process, who may
 * have taken it over), and never waits for the disk: what is not in the
 * page cache is read ahead and waited for (rest_sendfile_ready). Otherwise
 * (FUSE, NFS, ...) exactly that many bytes follow the head (fewer only if
 * the file shrank meanwhile), or with gzip the helper's deflate of them
 * (the compression is the helper's CPU, not the loop's), and the loop
 * copies them to the socket; the socket is not read while the
 * connection's queue is full, so a slow client holds the helper, never
 * memory. A file that shrinks cannot fill the Content-Length already
 * sent: the connection ends early; one that grows is sent as long as it
 * was. A gzip stream is ended only when its helper exited 0: one killed
 * midway leaves the body cut short, never a whole-looking gzip of part.
 */
#include "agent/api/rest/files.h"
#include "agent/api/asuser/job.h"
#include "agent/api/asuser/path.h"
#include "agent/api/rest/cond.h"
#include "agent/api/rest/dlhead.h"
#include "agent/api/rest/gz.h"
#include "agent/api/rest/range.h"
#include "agent/api/rest/sendfile.h"
#include "agent/api/http/hparam.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/files/files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GET_CHUNK (64 * 1024)
/* Compressed on the fly as nginx does by default (gzip_comp_level 1): the
 * fastest level, several times the default's speed, most of its gain on
 * text. The client asked for gzip (the SDK's fetch always does); it should
 * not wait for the agent's CPU. */
#define GET_GZIP_LEVEL Z_BEST_SPEED
/* The helper's read and its deflate's output, per call. */
#define GZIP_IN (256 * 1024)
#define GZIP_OUT (64 * 1024)
/* status 4, size 8, mtime 8 and its nanoseconds 4 */
#define HEAD_LEN 24
#define MSG_MAX 1024
/* sendfile: bytes per call, calls per turn of the loop (then the other
 * connections' turn), what is read ahead when a chunk is not cached, and
 * the wait for it: a poll every WAIT_SECONDS, at most WAITS_MAX times for
 * one chunk (then sendfile reads it: a disk that slow is the disk's). */
#define SEND_CHUNK (1024 * 1024)
#define SEND_BURST 4
#define READ_AHEAD (8 * 1024 * 1024)
#define WAIT_SECONDS 0.002
#define WAITS_MAX 250

struct get {
    struct conn *c;
    struct asuser_job *job;
    ev_io io;
    char *path;
    unsigned char head[HEAD_LEN + MSG_MAX];
    size_t head_len;
    int begun;                  /* the response head is out */
    int gzip;
    int exited, exit_ok;        /* the helper was reaped; it ended well */
    /* the request's Range and conditional headers (pointers into it) */
    const char *range;
    struct rest_cond_req cond;
    char boundary[REST_RANGE_BOUNDARY_LEN + 1];
    /* the file, and the plan: what the loop and the helper both send */
    uint64_t size;
    int64_t mtime;
    long mtime_ns;
    int status;                 /* 200, 206, 304, 412 or 416 */
    int unsatisfiable;          /* 416: no range overlaps (Content-Range: bytes * / size) */
    struct rest_range *ranges;  /* 206: n of them */
    size_t n;
    uint64_t length;            /* the body's length (identity) */
    uint64_t sent;              /* body bytes queued or sent */
    /* the file itself (sendfile), or -1: its bytes come through the helper */
    int fd;
    enum rest_sendfile_kind kind;
    size_t part;                /* sendfile: ranges begun */
    uint64_t off, left;         /* sendfile: the range being sent */
    ev_timer wait;              /* for the page cache */
    unsigned waits;
    char in[GET_CHUNK];
    size_t in_off, in_len;      /* read from the helper, not yet queued */
    int eof;
};

/* What to answer for a file of size bytes modified at mtime: g->status,
 * the ranges and the body's length. The loop and the helper compute it
 * each from the same request and the same file, so the helper copies
 * exactly what the loop framed. Returns 0, or -1 out of memory. */
static int plan(struct get *g, uint64_t size, int64_t mtime, long mtime_ns)
{
    static struct rest_range scratch[REST_RANGE_MAX];
    int range_ok;
    size_t n;
    g->size = size, g->mtime = mtime, g->mtime_ns = mtime_ns;
    g->status = 200;
    g->length = size;
    if (g->gzip) return 0;
    switch (rest_cond_eval(&g->cond, mtime, mtime_ns, &range_ok)) {
    case REST_COND_NOT_MODIFIED: g->status = 304; return 0;
    case REST_COND_FAILED: g->status = 412; return 0;
    case REST_COND_SERVE: break;
    }
    switch (rest_range_parse(range_ok ? g->range : NULL, size, scratch, &n)) {
    case REST_RANGE_WHOLE: return 0;
    case REST_RANGE_UNSATISFIABLE: g->unsatisfiable = 1; /* fall through */
    case REST_RANGE_INVALID: g->status = 416; return 0;
    case REST_RANGE_PARTS: break;
    }
    if (!(g->ranges = malloc(n * sizeof *g->ranges))) return -1;
    memcpy(g->ranges, scratch, n * sizeof *g->ranges);
    g->n = n;
    g->status = 206;
    g->length = n == 1 ? scratch[0].len
                       : rest_range_body_length(scratch, n, g->boundary, rest_dlhead_type(g->path), size);
    return 0;
}

/* The head's numbers, big-endian. */
static void put_be(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}

static uint64_t get_be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

/* ---- the helper ------------------------------------------------------------ */

/* The first f->size bytes of the file (fewer if it shrank), deflated, to
 * the agent: the compression is the helper's CPU, not the loop's. */
static int gzip_out(struct files_reader *f, struct gz *z)
{
    static char in[GZIP_IN], out[GZIP_OUT];
    uint64_t off = 0, size = (uint64_t)f->size;
    int last = 0;
    while (!z->finished) {
        ssize_t r = 0;
        size_t want = size - off < sizeof in ? (size_t)(size - off) : sizeof in;
        if (!last && want) {
            do r = pread(f->fd, in, want, (off_t)off);
            while (r < 0 && errno == EINTR);
            if (r < 0) return -1;
        }
        off += (uint64_t)r;
        last = last || r == 0 || off == size;
        for (size_t at = 0; at < (size_t)r || (last && !z->finished);) {
            size_t used, made;
            if (gz_deflate(z, in + at, (size_t)r - at, &used, last, out, sizeof out, &made) < 0 ||
                (made && io_write_all(ASUSER_JOB_OUT_FD, out, made) < 0))
                return -1;
            at += used;
        }
    }
    return 0;
}

/* len bytes at off to the agent; fewer (the file shrank) is a failure,
 * so that a multipart body is never shifted: the agent sees it short. */
static int copy_range(struct files_reader *f, uint64_t off, uint64_t len)
{
    struct files_err e;
    long long got;
    int eof;
    if (files_read_copy(f, off, (long long)len, ASUSER_JOB_OUT_FD, &got, &eof, &e) < 0) return -1;
    return (uint64_t)got == len ? 0 : -1;
}

/* The body of the plan, framed as the agent frames it. */
static int copy_out(struct get *g, struct files_reader *f)
{
    char head[REST_RANGE_HEAD_MAX];
    const char *ct = rest_dlhead_type(g->path);
    int k;
    if (g->status == 200) return copy_range(f, 0, g->size);
    if (g->status != 206) return 0;
    if (g->n == 1) return copy_range(f, g->ranges[0].start, g->ranges[0].len);
    for (size_t i = 0; i < g->n; i++)
        if ((k = rest_range_part_head(head, i, g->boundary, ct, &g->ranges[i], g->size)) < 0 ||
            io_write_all(ASUSER_JOB_OUT_FD, head, (size_t)k) < 0 ||
            copy_range(f, g->ranges[i].start, g->ranges[i].len) < 0)
            return -1;
    return (k = rest_range_tail(head, g->boundary)) < 0 || io_write_all(ASUSER_JOB_OUT_FD, head, (size_t)k) < 0;
}

static int get_child(void *arg)
{
    struct get *g = arg;
    struct files_reader f;
    struct files_err e;
    struct stat st;
    enum rest_sendfile_kind kind;
    if (files_read_open(g->path, &f, &e) < 0) {
        char msg[MSG_MAX];
        int n = snprintf(msg, sizeof msg, "%s: %s", g->path, e.message);
        asuser_job_reply(rest_files_status(e.errnum), msg, (size_t)(n < (int)sizeof msg ? n : (int)sizeof msg - 1));
        return 0;
    }
    /* The head: the size and the modification time, big-endian. */
    unsigned char h[HEAD_LEN - 4];
    if (fstat(f.fd, &st) < 0) st.st_mtim = (struct timespec){0, 0};
    put_be(h, (uint64_t)f.size, 8);
    put_be(h + 8, (uint64_t)st.st_mtim.tv_sec, 8);
    put_be(h + 16, (uint64_t)st.st_mtim.tv_nsec, 4);
    if (!g->gzip && rest_sendfile_servable(f.fd, &st, &kind))
        return asuser_job_reply_fd(0, (const char *)h, sizeof h, f.fd) < 0;
    if (g->gzip) {
        struct gz z;
        if (gz_deflate_init(&z, GET_GZIP_LEVEL) < 0) return asuser_job_reply(500, "out of memory", 13) < 0;
        int r = asuser_job_reply(0, (const char *)h, sizeof h) < 0 || gzip_out(&f, &z) < 0;
        gz_end(&z);
        return r;
    }
    if (asuser_job_reply(0, (const char *)h, sizeof h) < 0) return 1;
    return plan(g, (uint64_t)f.size, (int64_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec) < 0 || copy_out(g, &f) < 0;
}

/* ---- the loop ---------------------------------------------------------------- */

static void get_free(struct get *g)
{
    static const struct conn_hooks none;
    conn_set_hooks(g->c, &none);
    ev_io_stop(EV_DEFAULT, &g->io);
    ev_timer_stop(EV_DEFAULT, &g->wait);
    asuser_job_cancel(g->job);
    if (g->fd >= 0) close(g->fd);
    free(g->ranges);
    free(g->path);
    free(g);
}

static void on_gone(struct conn *c, void *ctx) { get_free(ctx); }

/* The response cannot go on: the connection goes (gone frees g). */
static void on_stop(struct conn *c, void *ctx) { conn_kill(c); }

/* The header lines of the answer, as envd's: Vary and Content-Disposition
 * always; Last-Modified unless 416 (or the file has no time); the ranges'
 * (Accept-Ranges on a 200 or 206, Content-Range on one range or none). */
static int head_lines(struct get *g, struct buf *h)
{
    char v[REST_COND_DATE_LEN + 80];
    if (buf_puts(h, g->gzip ? "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n" : "Vary: Accept-Encoding\r\n") < 0 ||
        rest_dlhead_disposition(h, g->path) < 0)
        return -1;
    if (g->status != 416 && rest_cond_has_time(g->mtime, g->mtime_ns) && rest_cond_format_date(g->mtime, v) == 0 &&
        buf_printf(h, "Last-Modified: %s\r\n", v) < 0)
        return -1;
    if ((g->status == 200 || g->status == 206) && buf_puts(h, "Accept-Ranges: bytes\r\n") < 0) return -1;
    if (g->status == 206 && g->n == 1 && (rest_range_content_range(v, sizeof v, g->ranges, g->size) < 0 ||
                                          buf_printf(h, "Content-Range: %s\r\n", v) < 0))
        return -1;
    if (g->unsatisfiable && buf_printf(h, "Content-Range: bytes */%llu\r\n", (unsigned long long)g->size) < 0)
        return -1;
    return buf_cstr(h) ? 0 : -1;
}

/* The response's head (or the whole of a 304, 412 or 416). Returns 0 to
 * send the body, -1 when there is none (answered, or the connection goes). */
static int respond(struct get *g)
{
    struct buf h;
    char ct[REST_RANGE_BOUNDARY_LEN + 64];
    int r = -1;
    buf_init(&h, 4096);
    if (head_lines(g, &h) < 0) {
        rest_files_error(g->c, 500, "the response's head is too large");
    } else if (g->status == 304) {
        conn_respond(g->c, 304, NULL, h.data, "", 0);
    } else if (g->status == 412) {
        rest_files_error_extra(g->c, 412, "a precondition (If-Match, If-Unmodified-Since) does not hold", h.data);
    } else if (g->status == 416) {
        rest_files_error_extra(g->c, 416, g->unsatisfiable ? "no range overlaps the file" : "invalid Range header",
                               h.data);
    } else {
        g->begun = 1;
        snprintf(ct, sizeof ct, "multipart/byteranges; boundary=%s", g->boundary);
        const char *type = g->n > 1 ? ct : rest_dlhead_type(g->path);
        r = g->gzip ? conn_stream_begin(g->c, 200, type, h.data)
                    : conn_stream_begin_length(g->c, g->status, type, h.data, g->length);
    }
    buf_free(&h);
    return r;
}

/* The head is in: an error, or the plan and the response's head. Returns
 * 0 to send the body. */
static int answer_head(struct get *g)
{
    const unsigned char *h = g->head;
    uint32_t status = (uint32_t)get_be(h, 4);
    struct stat st;
    if (status) {
        char msg[MSG_MAX + 1];
        size_t n = g->head_len - 4;
        memcpy(msg, h + 4, n);
        msg[n] = '\0';
        rest_files_error(g->c, status >= 400 && status < 600 ? (int)status : 500, msg);
        return -1;
    }
    st.st_size = (off_t)get_be(h + 4, 8);
    st.st_mtim = (struct timespec){(time_t)get_be(h + 12, 8), (long)get_be(h + 20, 4)};
    if (g->fd >= 0) {
        /* Sent from the file itself: what the agent checks of the fd is
         * what it sends, and the size and time its own fstat sees. */
        if (g->gzip || !rest_sendfile_servable(g->fd, &st, &g->kind)) {
            rest_files_error(g->c, 500, "the helper process sent something that is not a regular file");
            return -1;
        }
        ev_io_stop(EV_DEFAULT, &g->io);
        asuser_job_cancel(g->job); /* its work is done */
        g->job = NULL;
    }
    if (plan(g, (uint64_t)st.st_size, (int64_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec) < 0) {
        rest_files_error(g->c, 500, "out of memory");
        return -1;
    }
    return respond(g);
}

/* Read the head: the status, then the size and time (status 0) or the
 * message up to EOF. Returns 1 once it is in, 0 to wait, -1 when the
 * helper failed. */
static int read_head(struct get *g)
{
    int ok = g->head_len >= 4 && !memcmp(g->head, "\0\0\0\0", 4);
    size_t want = g->head_len < 4 ? 4 : ok ? HEAD_LEN : sizeof g->head;
    ssize_t r = asuser_job_recv(g->job, g->head + g->head_len, want - g->head_len, &g->fd);
    if (r < 0) return errno == EAGAIN || errno == EINTR ? 0 : -1;
    g->head_len += (size_t)r;
    if (g->head_len < 4) return r == 0 ? -1 : 0;
    ok = !memcmp(g->head, "\0\0\0\0", 4);
    if (ok && g->head_len < HEAD_LEN) return r == 0 ? -1 : 0;
    if (!ok && r > 0 && g->head_len < sizeof g->head) return 0;
    return 1;
}

/* Queue what was read. Returns 1 to read on, 0 when the connection is
 * full (more follows), -1 when it is gone. */
static int write_some(struct get *g)
{
    if (g->in_off == g->in_len) return 1;
    int r = conn_write(g->c, g->in + g->in_off, g->in_len - g->in_off);
    g->in_off = g->in_len = 0;
    return r;
}

static void finish(struct get *g)
{
    ev_io_stop(EV_DEFAULT, &g->io);
    /* A file that shrank cannot fill the Content-Length it was sent with,
     * and a gzip stream is whole only if its helper ended well: else the
     * connection goes, the body cut short (gone frees g). */
    if (g->gzip ? !g->exit_ok : g->sent != g->length) {
        conn_kill(g->c);
        return;
    }
    conn_stream_end(g->c);
    get_free(g); /* the response is complete: no hook runs any more */
}

/* At the helper's EOF: with gzip, its exit says whether the stream is whole. */
static void ended(struct get *g)
{
    if (g->gzip && !g->exited) ev_io_stop(EV_DEFAULT, &g->io); /* on_helper_exit finishes */
    else finish(g);
}

static void on_helper_exit(void *ctx, int wstatus)
{
    struct get *g = ctx;
    g->exited = 1;
    g->exit_ok = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
    if (g->eof && g->in_off == g->in_len) finish(g);
}

/* From the helper: its bytes as they come. */
static void pump(struct get *g)
{
    for (;;) {
        int r = write_some(g);
        if (r < 0) {
            conn_kill(g->c);
            return;
        }
        if (r == 0) {
            ev_io_stop(EV_DEFAULT, &g->io);
            return;
        }
        if (g->eof) {
            ended(g);
            return;
        }
        ssize_t k = read(asuser_job_fd(g->job), g->in, sizeof g->in);
        if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
            ev_io_start(EV_DEFAULT, &g->io);
            return;
        }
        if (k <= 0) g->eof = 1;
        else g->in_len = (size_t)k, g->sent += (uint64_t)k;
    }
}

/* From the file: the next range into g->off, g->left, its part's head
 * queued before it (several ranges), the tail after the last. Returns 1
 * with a range to send, 0 when the body is all queued, -1 when the
 * connection is gone. */
static int next_range(struct get *g)
{
    char head[REST_RANGE_HEAD_MAX];
    int k = 0;
    if (g->status == 200) {
        g->off = 0, g->left = g->part++ ? 0 : g->size;
        return g->left > 0;
    }
    if (g->part > g->n || (g->part == g->n && g->n == 1)) return 0;
    if (g->n > 1)
        k = g->part == g->n ? rest_range_tail(head, g->boundary)
                            : rest_range_part_head(head, g->part, g->boundary, rest_dlhead_type(g->path),
                                                   &g->ranges[g->part], g->size);
    if (k < 0 || (k > 0 && conn_write(g->c, head, (size_t)k) < 0)) return -1;
    g->sent += (uint64_t)k;
    if (g->part++ == g->n) return 0;
    g->off = g->ranges[g->part - 1].start, g->left = g->ranges[g->part - 1].len;
    return 1;
}

/* From the file: a burst, then the others' turn. */
static void send_file(struct get *g)
{
    for (int i = 0; i < SEND_BURST; i++) {
        int r = g->left ? 1 : next_range(g);
        if (r < 0) {
            conn_kill(g->c); /* gone frees g */
            return;
        }
        if (r == 0) {
            finish(g);
            return;
        }
        size_t want = g->left < SEND_CHUNK ? (size_t)g->left : SEND_CHUNK;
        if (g->waits < WAITS_MAX && !rest_sendfile_ready(g->fd, g->kind, g->off, want, READ_AHEAD)) {
            g->waits++;
            ev_timer_set(&g->wait, WAIT_SECONDS, 0);
            ev_timer_start(EV_DEFAULT, &g->wait);
            return;
        }
        g->waits = 0;
        uint64_t at = g->off;
        r = conn_send_file(g->c, g->fd, &g->off, want);
        g->left -= g->off - at, g->sent += g->off - at;
        if (r < 0) {
            conn_kill(g->c);
            return;
        }
        if (r == CONN_FILE_END) { /* it shrank: finish ends the connection */
            finish(g);
            return;
        }
        if (r == CONN_FILE_WAIT) return;
    }
    conn_send_file_later(g->c);
}

static void on_cached(struct ev_loop *loop, ev_timer *w, int revents) { send_file(w->data); }

static void on_more(struct conn *c, void *ctx)
{
    struct get *g = ctx;
    if (g->fd >= 0) send_file(g);
    else pump(g);
}

static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    struct get *g = w->data;
    if (g->begun) {
        pump(g);
        return;
    }
    int r = read_head(g);
    if (r == 0) return;
    if (r < 0) {
        rest_files_error(g->c, 500, "the helper process ended without a result");
        get_free(g);
    } else if (answer_head(g) < 0) {
        /* Answered whole (complete: free now), or a head that could not
         * be queued (the connection goes: gone frees). */
        if (!g->begun) get_free(g);
    } else if (g->fd >= 0) {
        send_file(g);
    } else {
        pump(g);
    }
}

/* A boundary of random hex digits, for a multipart/byteranges answer
 * (the clock's when the kernel has no randomness yet: early boot). */
static void make_boundary(char *out)
{
    unsigned char r[REST_RANGE_BOUNDARY_LEN / 2];
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30;
        for (size_t i = 0; i < sizeof r; i++) x = x * 6364136223846793005u + 1442695040888963407u, r[i] = (unsigned char)(x >> 56);
    }
    for (size_t i = 0; i < sizeof r; i++) out[2 * i] = "0123456789abcdef"[r[i] >> 4], out[2 * i + 1] = "0123456789abcdef"[r[i] & 15];
    out[REST_RANGE_BOUNDARY_LEN] = '\0';
}

void rest_download(struct conn *c)
{
    struct user_info u;
    struct buf path;
    int have_path;
    char err[ERR_LEN];
    buf_init(&path, ASUSER_PATH_MAX);
    if (rest_files_target(c, &u, &path, &have_path) < 0) {
        buf_free(&path);
        return;
    }
    struct get *g = calloc(1, sizeof *g);
    if (!g) {
        buf_free(&path);
        rest_files_error(c, 500, "out of memory");
        return;
    }
    g->c = c;
    g->path = path.data;
    g->fd = -1;
    ev_init(&g->wait, on_cached);
    g->wait.data = g;
    g->range = rest_files_header(c, "Range");
    g->cond = (struct rest_cond_req){rest_files_header(c, "If-Match"), rest_files_header(c, "If-Unmodified-Since"),
                                     rest_files_header(c, "If-None-Match"), rest_files_header(c, "If-Modified-Since"),
                                     rest_files_header(c, "If-Range")};
    /* A Range or a conditional request is answered in identity, as envd
     * does (If-Match and If-Unmodified-Since aside, which its gzip path
     * does not read). */
    const char *ae = rest_files_header(c, "Accept-Encoding");
    g->gzip = ae && hparam_accepts(ae, "gzip") && !(g->range && *g->range) &&
              !(g->cond.if_modified_since && *g->cond.if_modified_since) &&
              !(g->cond.if_none_match && *g->cond.if_none_match) && !(g->cond.if_range && *g->cond.if_range);
    if (g->range && *g->range) make_boundary(g->boundary);
    struct asuser_job_opts o = {.user = &u, .fn = get_child, .arg = g, .deathsig = SIGKILL, .socket = 1};
    if (!(g->job = asuser_job_start(EV_DEFAULT, &o, err))) {
        rest_files_error(c, 500, err);
        get_free(g);
        return;
    }
    asuser_job_on_exit(g->job, on_helper_exit, g);
    ev_io_init(&g->io, on_readable, asuser_job_fd(g->job), EV_READ);
    g->io.data = g;
    ev_io_start(EV_DEFAULT, &g->io);
    struct conn_hooks h = {.more = on_more, .gone = on_gone, .stop = on_stop, .ctx = g};
    conn_set_hooks(c, &h);
}
