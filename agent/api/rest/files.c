/*
 * files.c - the /files route (see rest/files.h): which method does what, who
 * the request acts as, where its path points, and its errors as envd's.
 */
#include "agent/api/rest/files.h"
#include "agent/api/asuser/defaults.h"
#include "agent/api/asuser/path.h"
#include "agent/api/asuser/asuser.h"
#include "agent/api/http/query.h"
#include "agent/core/err.h"
#include "agent/core/jsonw.h"
#include "agent/core/protocol.h"
#include "agent/files/files.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

void rest_files_error_extra(struct conn *c, int status, const char *msg, const char *extra)
{
    struct buf b;
    buf_init(&b, 4096);
    if (buf_printf(&b, "{\"code\": %d, \"message\": ", status) < 0 ||
        jsonw_str(&b, msg, strnlen(msg, 1024), JSONW_REPLACE) < 0 || buf_putc(&b, '}') < 0)
        buf_reset(&b);
    conn_respond(c, status, "application/json", extra, b.data ? b.data : "", b.len);
    buf_free(&b);
}

void rest_files_error(struct conn *c, int status, const char *msg) { rest_files_error_extra(c, status, msg, NULL); }

const char *rest_files_header(struct conn *c, const char *name)
{
    const struct httpreq *r = conn_req(c);
    for (unsigned i = 0; i < r->nhdr; i++) {
        const char *n, *v;
        httpreq_header_at(r, i, &n, &v);
        if (!strcasecmp(n, name)) return v;
    }
    return NULL;
}

int rest_files_status(int errnum)
{
    switch (errnum) {
    case ENOENT: case ENOTDIR: return 404;
    case EACCES: case EPERM: case EROFS: return 403;
    case EISDIR: case FILES_ENOTREG: case ENAMETOOLONG: case ELOOP: case EINVAL: case EEXIST: return 400;
    case ENOSPC: case EDQUOT: return 507;
    default: return 500;
    }
}

int rest_files_target(struct conn *c, struct user_info *u, struct buf *path, int *have_path)
{
    const char *q = httpreq_query(conn_req(c)), *why;
    char err[ERR_LEN];
    struct buf v;
    int r;
    buf_init(&v, ASUSER_PATH_MAX);
    /* Refused before anything is acted on, whatever comes first. */
    if (query_get(q, QUERY_USERNAME, &v) == QUERY_REPEATED || query_get(q, QUERY_PATH, &v) == QUERY_REPEATED) {
        rest_files_error(c, 400, "a repeated username or path parameter");
        goto fail;
    }
    r = query_get(q, QUERY_USERNAME, &v);
    if (r < 0 || (r > 0 && memchr(v.data, '\0', v.len))) {
        rest_files_error(c, 400, "bad username parameter");
        goto fail;
    }
    if (asuser_get(r > 0 ? v.data : NULL, u, err) < 0) {
        rest_files_error(c, errno == ENOENT ? 401 : rest_files_status(errno), err);
        goto fail;
    }
    r = query_get(q, QUERY_PATH, &v);
    if (r < 0 || (r > 0 && memchr(v.data, '\0', v.len))) {
        rest_files_error(c, 400, "bad path parameter (a %XX escape, or a NUL)");
        goto fail;
    }
    *have_path = r > 0;
    if (asuser_path_resolve(u->home, asuser_defaults_workdir(), r > 0 ? v.data : "", path, &why) < 0) {
        rest_files_error(c, 400, why);
        goto fail;
    }
    buf_free(&v);
    return 0;
fail:
    buf_free(&v);
    return -1;
}

void rest_files_on_head(struct conn *c)
{
    if (httpreq_method(conn_req(c)) == HTTP_POST) rest_upload_head(c);
}

void rest_files_on_request(struct conn *c)
{
    if (httpreq_method(conn_req(c)) == HTTP_POST) rest_upload_done(c);
    else rest_download(c);
}
