/*
 * compose.c - POST /files/compose (see rest/compose.h): the body, the user
 * (its "username", else the default one), the paths resolved as /files
 * resolves ?path=, then one helper as the user (files_compose) whose
 * answer is the reply.
 *
 * The helper tells each temporary name before the file exists
 * (rest/tmpreap.h): killed mid-write, another helper as the same user
 * removes what it left. A client that leaves does not stop a compose under
 * way (envd's does not either): the helper finishes, unheard.
 */
#include "agent/api/rest/compose.h"
#include "agent/api/rest/composereq.h"
#include "agent/api/rest/files.h"
#include "agent/api/rest/tmpreap.h"
#include "agent/api/asuser/asuser.h"
#include "agent/api/asuser/job.h"
#include "agent/api/asuser/defaults.h"
#include "agent/api/asuser/path.h"
#include "agent/api/filesystem/watch.h"
#include "agent/core/err.h"
#include "agent/core/jsonw.h"
#include "agent/files/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MSG_MAX 1024

struct compose {
    struct conn *c;
    struct user_info u;
    struct rest_composereq req; /* its paths resolved in place */
    struct asuser_job *job;
    int names_fd;               /* our end of the socket the helper tells its temporary names on */
};

static void compose_free(struct compose *cp)
{
    static const struct conn_hooks none;
    if (cp->c) conn_set_hooks(cp->c, &none);
    asuser_job_detach(cp->job); /* a compose under way finishes, unheard */
    if (cp->names_fd >= 0) close(cp->names_fd);
    rest_composereq_free(&cp->req);
    free(cp);
}

/* ---- the helper ---- */

static int named(void *ctx, const char *tmp) { return rest_tmpreap_tell(ASUSER_JOB_IN_FD0, tmp); }

static int compose_child(void *arg)
{
    const struct compose *cp = arg;
    struct files_write_hooks h = {.named = named};
    struct files_err e;
    long long bytes;
    if (files_compose((const char *const *)cp->req.sources, cp->req.n, cp->req.destination, &h, &bytes, &e) == 0)
        return asuser_job_reply(0, NULL, 0) < 0;
    char msg[MSG_MAX];
    int n = e.errnum == ENOSPC || e.errnum == EDQUOT
                ? snprintf(msg, sizeof msg, "not enough disk space available: %s: %s", e.path ? e.path : "", e.message)
                : snprintf(msg, sizeof msg, "%s: %s", e.path ? e.path : cp->req.destination, e.message);
    return asuser_job_reply(rest_files_status(e.errnum), msg, (size_t)(n < (int)sizeof msg ? n : (int)sizeof msg - 1)) < 0;
}

/* ---- the loop ---- */

static void on_done(void *ctx, int32_t status, const char *data, size_t n)
{
    struct compose *cp = ctx;
    cp->job = NULL;
    if (status == ASUSER_JOB_FAILED) rest_tmpreap_start(&cp->u, cp->names_fd);
    /* Watches see the composed file before its client can act on the answer. */
    filesystem_watch_settle();
    if (status != 0) {
        char msg[ERR_LEN];
        err_set(msg, "%.*s", (int)(n < ERR_LEN ? n : ERR_LEN - 1), n ? data : "the compose failed");
        rest_files_error(cp->c, status >= 400 && status < 600 ? status : 500, msg);
    } else {
        const char *dst = cp->req.destination;
        struct buf b;
        size_t nlen;
        const char *name = files_last_name(dst, &nlen);
        buf_init(&b, ASUSER_PATH_MAX * 8);
        if (buf_puts(&b, "{\"path\": ") < 0 || jsonw_cstr(&b, dst) < 0 || buf_puts(&b, ", \"name\": ") < 0 ||
            jsonw_str(&b, name, nlen, JSONW_SURROGATEESCAPE) < 0 || buf_puts(&b, ", \"type\": \"file\"}") < 0)
            rest_files_error(cp->c, 500, "out of memory");
        else
            conn_respond(cp->c, 200, "application/json", NULL, b.data, b.len);
        buf_free(&b);
    }
    compose_free(cp);
}

static void on_gone(struct conn *c, void *ctx)
{
    struct compose *cp = ctx;
    cp->c = NULL;
    compose_free(cp);
}

static void on_stop(struct conn *c, void *ctx)
{
    struct compose *cp = ctx;
    rest_files_error(c, 503, "the agent is shutting down");
    compose_free(cp);
}

/* Every path as /files resolves ?path=, in place. Returns 0, or -1 with *why. */
static int resolve(struct compose *cp, const char **why)
{
    struct buf p;
    buf_init(&p, ASUSER_PATH_MAX);
    for (size_t i = 0; i <= cp->req.n; i++) {
        char **s = i < cp->req.n ? &cp->req.sources[i] : &cp->req.destination;
        if (asuser_path_resolve(cp->u.home, asuser_defaults_workdir(), *s, &p, why) < 0) {
            buf_free(&p);
            return -1;
        }
        free(*s);
        *s = p.data;
        buf_init(&p, ASUSER_PATH_MAX);
    }
    return 0;
}

static int start(struct compose *cp, char *err)
{
    int s[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) < 0) {
        err_set(err, "cannot make a socket: %s", strerror(errno));
        return -1;
    }
    struct asuser_job_opts o = {.user = &cp->u, .fn = compose_child, .arg = cp, .in_fds = {s[0]}, .nin = 1};
    cp->job = asuser_job_start(EV_DEFAULT, &o, err);
    close(s[0]);
    cp->names_fd = s[1];
    if (!cp->job) return -1;
    asuser_job_collect(cp->job, MSG_MAX, on_done, cp);
    return 0;
}

void rest_compose_on_head(struct conn *c)
{
    struct httpreq *r = conn_req(c);
    if (httpreq_body_buffer(r, REST_COMPOSE_BODY_MAX) < 0) /* 413, or 429: the memory budget */
        rest_files_error(c, httpreq_status(r),
                         httpreq_status(r) == 413 ? "the body is larger than 2 MiB" : httpreq_why(r));
}

void rest_compose_on_request(struct conn *c)
{
    const struct buf *body = httpreq_body(conn_req(c));
    const char *why;
    char err[ERR_LEN];
    if (conn_responded(c)) return; /* refused at its head */
    struct compose *cp = calloc(1, sizeof *cp);
    if (!cp) {
        rest_files_error(c, 500, "out of memory");
        return;
    }
    cp->c = c;
    cp->names_fd = -1;
    if (rest_composereq_decode(body->data ? body->data : "", body->len, &cp->req, &why) < 0) {
        rest_files_error(c, 400, why);
    } else if (asuser_get(cp->req.username, &cp->u, err) < 0) {
        rest_files_error(c, errno == ENOENT ? 401 : rest_files_status(errno), err);
    } else if (resolve(cp, &why) < 0) {
        rest_files_error(c, 400, why);
    } else if (start(cp, err) < 0) {
        rest_files_error(c, 500, err);
    } else {
        struct conn_hooks h = {.gone = on_gone, .stop = on_stop, .ctx = cp};
        conn_set_hooks(c, &h);
        return;
    }
    compose_free(cp);
}
