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
#include "agent/api/rest/gz.h"
#include "agent/api/rest/sendfile.h"
#include "agent/api/http/hparam.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/files/files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
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
#define HEAD_LEN 12
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
    uint64_t size, sent;
    int gzip;
    int exited, exit_ok;        /* the helper was reaped; it ended well */
    /* the file itself (sendfile), or -1: its bytes come through the helper */
    int fd;
    enum rest_sendfile_kind kind;
    ev_timer wait;              /* for the page cache */
    unsigned waits;
    char in[GET_CHUNK];
    size_t in_off, in_len;      /* read from the helper, not yet queued */
    int eof;
};

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

static int get_child(void *arg)
{
    struct get *g = arg;
    struct files_reader f;
    struct files_err e;
    if (files_read_open(g->path, &f, &e) < 0) {
        char msg[MSG_MAX];
        int n = snprintf(msg, sizeof msg, "%s: %s", g->path, e.message);
        asuser_job_reply(rest_files_status(e.errnum), msg, (size_t)(n < (int)sizeof msg ? n : (int)sizeof msg - 1));
        return 0;
    }
    unsigned char size[8];
    for (int i = 0; i < 8; i++) size[i] = (unsigned char)((uint64_t)f.size >> (56 - 8 * i));
    uint64_t sz;
    enum rest_sendfile_kind kind;
    if (!g->gzip && rest_sendfile_servable(f.fd, &sz, &kind))
        return asuser_job_reply_fd(0, (const char *)size, 8, f.fd) < 0;
    if (g->gzip) {
        struct gz z;
        if (gz_deflate_init(&z, GET_GZIP_LEVEL) < 0) return asuser_job_reply(500, "out of memory", 13) < 0;
        int r = asuser_job_reply(0, (const char *)size, 8) < 0 || gzip_out(&f, &z) < 0;
        gz_end(&z);
        return r;
    }
    long long len;
    int eof;
    if (asuser_job_reply(0, (const char *)size, 8) < 0 ||
        files_read_copy(&f, 0, f.size, ASUSER_JOB_OUT_FD, &len, &eof, &e) < 0)
        return 1;
    return 0;
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
    free(g->path);
    free(g);
}

static void on_gone(struct conn *c, void *ctx) { get_free(ctx); }

/* The response cannot go on: the connection goes (gone frees g). */
static void on_stop(struct conn *c, void *ctx) { conn_kill(c); }

static const char *content_type(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".txt", "text/plain; charset=utf-8"}, {".html", "text/html; charset=utf-8"},
        {".htm", "text/html; charset=utf-8"},  {".css", "text/css; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"}, {".json", "application/json"},
        {".xml", "text/xml; charset=utf-8"},   {".csv", "text/csv; charset=utf-8"},
        {".md", "text/markdown; charset=utf-8"}, {".svg", "image/svg+xml"},
        {".png", "image/png"},                 {".jpg", "image/jpeg"},
        {".jpeg", "image/jpeg"},               {".gif", "image/gif"},
        {".webp", "image/webp"},               {".pdf", "application/pdf"},
        {".zip", "application/zip"},           {".gz", "application/gzip"},
        {".tar", "application/x-tar"},         {".wasm", "application/wasm"},
    };
    const char *base = asuser_path_base(path), *dot = strrchr(base, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (!strcasecmp(dot, types[i].ext)) return types[i].type;
    return "application/octet-stream";
}

/* The head is in: an error, or the response's head. Returns 0 to stream. */
static int answer_head(struct get *g)
{
    const unsigned char *h = g->head;
    uint32_t status = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
    if (status) {
        char msg[MSG_MAX + 1];
        size_t n = g->head_len - 4;
        memcpy(msg, h + 4, n);
        msg[n] = '\0';
        rest_files_error(g->c, status >= 400 && status < 600 ? (int)status : 500, msg);
        return -1;
    }
    for (int i = 4; i < HEAD_LEN; i++) g->size = g->size << 8 | h[i];
    if (g->fd >= 0) {
        /* Sent from the file itself: what the agent checks of the fd is
         * what it sends, and the size its own fstat sees. */
        if (g->gzip || !rest_sendfile_servable(g->fd, &g->size, &g->kind)) {
            rest_files_error(g->c, 500, "the helper process sent something that is not a regular file");
            return -1;
        }
        ev_io_stop(EV_DEFAULT, &g->io);
        asuser_job_cancel(g->job); /* its work is done */
        g->job = NULL;
    }
    g->begun = 1;
    const char *ct = content_type(g->path);
    if (g->gzip)
        return conn_stream_begin(g->c, 200, ct, "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n");
    return conn_stream_begin_length(g->c, 200, ct, "Vary: Accept-Encoding\r\n", g->size);
}

/* Read the head: the status, then the size (status 0) or the message up to
 * EOF. Returns 1 once it is answered, 0 to wait, -1 when the helper failed. */
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
    if (g->gzip ? !g->exit_ok : g->sent != g->size) {
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

/* From the file: a burst, then the others' turn. */
static void send_file(struct get *g)
{
    for (int i = 0; i < SEND_BURST; i++) {
        if (g->sent == g->size) {
            finish(g);
            return;
        }
        uint64_t left = g->size - g->sent;
        size_t want = left < SEND_CHUNK ? (size_t)left : SEND_CHUNK;
        if (g->waits < WAITS_MAX && !rest_sendfile_ready(g->fd, g->kind, g->sent, want, READ_AHEAD)) {
            g->waits++;
            ev_timer_set(&g->wait, WAIT_SECONDS, 0);
            ev_timer_start(EV_DEFAULT, &g->wait);
            return;
        }
        g->waits = 0;
        int r = conn_send_file(g->c, g->fd, &g->sent, want);
        if (r < 0) {
            conn_kill(g->c); /* gone frees g */
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
        /* An error answered (complete: free now), or a head that could not be
         * queued (the connection goes: gone frees). */
        if (!g->begun) get_free(g);
    } else if (g->fd >= 0) {
        send_file(g);
    } else {
        pump(g);
    }
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
    const char *ae = httpreq_header(conn_req(c), "Accept-Encoding");
    g->gzip = ae && hparam_accepts(ae, "gzip");
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
