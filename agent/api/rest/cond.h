/*
 * cond.h - the conditional headers of GET /files (RFC 9110 §13), judged as
 * envd judges them (Go's http.ServeContent, which envd gives no ETag):
 * If-Match, If-Unmodified-Since, If-None-Match, If-Modified-Since and
 * If-Range against the file's modification time, and the HTTP-dates they
 * carry and Last-Modified states (README "filesystem.Filesystem and
 * /files": conditional requests). Pure.
 */
#ifndef SA_API_REST_COND_H
#define SA_API_REST_COND_H

#include <stdint.h>

/* "Sun, 06 Nov 1994 08:49:37 GMT" and its NUL. */
#define REST_COND_DATE_LEN 30

/* The first value of each header, or NULL when absent. */
struct rest_cond_req {
    const char *if_match, *if_unmodified_since, *if_none_match, *if_modified_since, *if_range;
};

enum rest_cond_result {
    REST_COND_SERVE,        /* 200 (or 206) */
    REST_COND_NOT_MODIFIED, /* 304 */
    REST_COND_FAILED,       /* 412 */
};

/*
 * The answer to a GET of a file modified at mtime (seconds, nanoseconds):
 * RFC 9110 §13.2.2's order. With no ETag, If-Match holds only for "*",
 * If-None-Match fails only for "*" (and, present, makes If-Modified-Since
 * ignored); the dates compare whole seconds and are ignored when they do
 * not parse or when mtime is the epoch (Go's "no modification time").
 * *range_ok: whether a Range applies (If-Range, absent or matching: an
 * entity tag never matches, a date only the exact second).
 */
enum rest_cond_result rest_cond_eval(const struct rest_cond_req *h, int64_t mtime, long mtime_ns, int *range_ok);

/* 1 when a file modified at mtime has a Last-Modified (not the epoch). */
int rest_cond_has_time(int64_t mtime, long mtime_ns);

/* An HTTP-date in any of its three forms (IMF-fixdate, RFC 850, asctime;
 * GMT, as Go's http.ParseTime reads them) into seconds since the epoch.
 * Returns 0, or -1. */
int rest_cond_parse_date(const char *s, int64_t *t);
/* t as an IMF-fixdate (Last-Modified) into out. Years 0 to 9999. Returns 0, or -1. */
int rest_cond_format_date(int64_t t, char out[REST_COND_DATE_LEN]);

#endif
