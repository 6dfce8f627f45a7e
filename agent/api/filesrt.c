/*
 * filesrt.c - the /files route (see filesrt.h): which method does what, who
 * the request acts as, where its path points, and its errors as envd's.
 */
#include "agent/api/filesrt.h"
#include "agent/api/fspath.h"
#include "agent/api/requser.h"
#include "agent/api/query.h"
#include "agent/core/err.h"
#include "agent/core/jsonw.h"
#include "agent/files/files.h"

#include <errno.h>
#include <string.h>

void files_error(struct conn *c, int status, const char *msg)
{
    struct buf b;
    buf_init(&b, 4096);
    if (buf_printf(&b, "{\"code\": %d, \"message\": ", status) < 0 ||
        jsonw_str(&b, msg, strnlen(msg, 1024), JSONW_REPLACE) < 0 || buf_putc(&b, '}') < 0)
        buf_reset(&b);
    conn_respond(c, status, "application/json", NULL, b.data ? b.data : "", b.len);
    buf_free(&b);
}

int files_status(int errnum)
{
    switch (errnum) {
    case ENOENT: case ENOTDIR: return 404;
    case EACCES: case EPERM: case EROFS: return 403;
    case EISDIR: case FILES_ENOTREG: case ENAMETOOLONG: case ELOOP: case EINVAL: case EEXIST: return 400;
    case ENOSPC: case EDQUOT: return 507;
    default: return 500;
    }
}

int files_target(struct conn *c, struct user_info *u, struct buf *path, int *have_path)
{
    const char *q = httpreq_query(conn_req(c)), *why;
    char err[ERR_LEN];
    struct buf v;
    int r;
    buf_init(&v, FSPATH_MAX);
    /* Refused before anything is acted on, whatever comes first. */
    if (query_get(q, "username", &v) == QUERY_REPEATED ||
        query_get(q, "path", &v) == QUERY_REPEATED) {
        files_error(c, 400, "a repeated username or path parameter");
        goto fail;
    }
    r = query_get(q, "username", &v);
    if (r < 0 || (r > 0 && memchr(v.data, '\0', v.len))) {
        files_error(c, 400, "bad username parameter");
        goto fail;
    }
    if (requser_get(r > 0 ? v.data : NULL, u, err) < 0) {
        files_error(c, errno == ENOENT ? 401 : errno == EPERM ? 403 : 500, err);
        goto fail;
    }
    r = query_get(q, "path", &v);
    if (r < 0 || (r > 0 && memchr(v.data, '\0', v.len))) {
        files_error(c, 400, "bad path parameter (a %XX escape, or a NUL)");
        goto fail;
    }
    *have_path = r > 0;
    if (fspath_resolve(u->home, r > 0 ? v.data : "", path, &why) < 0) {
        files_error(c, 400, why);
        goto fail;
    }
    buf_free(&v);
    return 0;
fail:
    buf_free(&v);
    return -1;
}

void files_on_head(struct conn *c)
{
    enum http_method m = httpreq_method(conn_req(c));
    if (m == HTTP_POST) files_put_head(c);
    else if (m != HTTP_GET)
        conn_respond(c, 405, "application/json", "Allow: GET, POST\r\n",
                     "{\"code\": 405, \"message\": \"only GET and POST\"}", 45);
}

void files_on_request(struct conn *c)
{
    if (httpreq_method(conn_req(c)) == HTTP_POST) files_put_done(c);
    else files_get(c);
}
