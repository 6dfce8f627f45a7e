/*
 * download.c - GET /files?path=P[&username=U]: the bytes of a regular file
 * (see rest/files.h).
 *
 * The helper opens the file as the user with the file service's checks (a
 * FIFO, a device or a /proc stream is refused, the size is the one fstat
 * saw on the opened fd) and writes to its pipe a head, then the bytes:
 *   4-byte status (0, or the HTTP status of the refusal)
 *   status 0: 8-byte size, then exactly that many bytes (fewer only if the
 *             file shrank meanwhile); else: the message
 * The loop answers from the head (Content-Length: size, or gzip chunked
 * when Accept-Encoding has gzip) and copies the pipe to the socket at the
 * socket's pace: the pipe is not read while the connection's queue is
 * full, so a slow client holds the helper, never memory.
 */
#include "agent/api/rest/files.h"
#include "agent/api/asuser/job.h"
#include "agent/api/asuser/path.h"
#include "agent/api/rest/gz.h"
#include "agent/api/http/hparam.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/files/files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define GET_CHUNK (64 * 1024)
/* Compressed on the fly as nginx does by default (gzip_comp_level 1): the
 * fastest level, several times the default's speed, most of its gain on
 * text. The client asked for gzip (the SDK's fetch always does); it should
 * not wait for the agent's CPU. */
#define GET_GZIP_LEVEL Z_BEST_SPEED
#define HEAD_LEN 12
#define MSG_MAX 1024

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
    struct gz gz;
    char in[GET_CHUNK], out[GET_CHUNK];
    size_t in_off, in_len;      /* read from the pipe, not yet deflated */
    int eof;
};

/* ---- the helper ------------------------------------------------------------ */

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
    asuser_job_cancel(g->job);
    gz_end(&g->gz);
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
    ssize_t r = read(asuser_job_fd(g->job), g->head + g->head_len, want - g->head_len);
    if (r < 0) return errno == EAGAIN || errno == EINTR ? 0 : -1;
    g->head_len += (size_t)r;
    if (g->head_len < 4) return r == 0 ? -1 : 0;
    ok = !memcmp(g->head, "\0\0\0\0", 4);
    if (ok && g->head_len < HEAD_LEN) return r == 0 ? -1 : 0;
    if (!ok && r > 0 && g->head_len < sizeof g->head) return 0;
    return 1;
}

/* Write what was read (deflated, with gzip). Returns 1 to read on, 0 when
 * the connection is full (more follows), -1 when it is gone. */
static int write_some(struct get *g)
{
    while (g->in_off < g->in_len || (g->gzip && g->eof && !g->gz.finished)) {
        const char *p = g->in + g->in_off;
        size_t n = g->in_len - g->in_off, used = n, made = n;
        if (g->gzip && gz_deflate(&g->gz, p, n, &used, g->eof, g->out, sizeof g->out, &made) < 0) return -1;
        g->in_off += used;
        if (!made) continue;
        int r = conn_write(g->c, g->gzip ? g->out : p, made);
        if (r <= 0) return r;
    }
    g->in_off = g->in_len = 0;
    return 1;
}

static void finish(struct get *g)
{
    ev_io_stop(EV_DEFAULT, &g->io);
    /* A file that shrank cannot fill the Content-Length it was sent with:
     * the connection goes (and gone frees g). */
    if (!g->gzip && g->sent != g->size) {
        conn_kill(g->c);
        return;
    }
    conn_stream_end(g->c);
    get_free(g); /* the response is complete: no hook runs any more */
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
            finish(g);
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

static void on_more(struct conn *c, void *ctx) { pump(ctx); }

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
    const char *ae = httpreq_header(conn_req(c), "Accept-Encoding");
    g->gzip = ae && hparam_accepts(ae, "gzip") && gz_deflate_init(&g->gz, GET_GZIP_LEVEL) == 0;
    struct asuser_job_opts o = {.user = &u, .fn = get_child, .arg = g, .deathsig = SIGKILL};
    if (!(g->job = asuser_job_start(EV_DEFAULT, &o, err))) {
        rest_files_error(c, 500, err);
        get_free(g);
        return;
    }
    ev_io_init(&g->io, on_readable, asuser_job_fd(g->job), EV_READ);
    g->io.data = g;
    ev_io_start(EV_DEFAULT, &g->io);
    struct conn_hooks h = {.more = on_more, .gone = on_gone, .stop = on_stop, .ctx = g};
    conn_set_hooks(c, &h);
}
