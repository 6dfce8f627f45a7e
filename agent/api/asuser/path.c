/*
 * path.c - the one resolver of a request's path and a Start's cwd (see
 * asuser/path.h).
 */
#include "agent/api/asuser/path.h"

#include <string.h>

/* One component of p starting at p[i] (no '/'): its end. */
static size_t comp_end(const char *p, size_t i)
{
    while (p[i] && p[i] != '/') i++;
    return i;
}

void asuser_path_clean(char *p)
{
    /* w is where the cleaned path ends; it always starts with '/'. */
    size_t w = 1, r = 0;
    p[0] = '/';
    while (p[r]) {
        while (p[r] == '/') r++;
        if (!p[r]) break;
        size_t e = comp_end(p, r), len = e - r;
        if (len == 1 && p[r] == '.') {
            r = e;
            continue;
        }
        if (len == 2 && p[r] == '.' && p[r + 1] == '.') {
            /* Back to the previous '/' (never above the root). */
            while (w > 1 && p[w - 1] != '/') w--;
            if (w > 1) w--;
            r = e;
            continue;
        }
        if (w > 1) p[w++] = '/';
        memmove(p + w, p + r, len);
        w += len;
        r = e;
    }
    p[w] = '\0';
}

const char *asuser_path_base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s && s[1] ? s + 1 : p;
}

int asuser_path_resolve(const char *home, const char *workdir, const char *path, struct buf *out,
                        const char **why)
{
    buf_reset(out);
    out->max = ASUSER_PATH_MAX;
    if (!path[0] && workdir && workdir[0]) path = workdir;
    if (path[0] == '/') {
        if (buf_puts(out, path) < 0 || !buf_cstr(out)) goto too_long;
        return 0;
    }
    if (path[0] == '~') {
        if (path[1] && path[1] != '/' && path[1] != '\\') {
            *why = "cannot expand another user's home (~user)";
            return -1;
        }
        path++;
    }
    if (home[0] != '/') {
        *why = "the user's home is not an absolute path";
        return -1;
    }
    if (buf_puts(out, home) < 0 || buf_putc(out, '/') < 0 || buf_puts(out, path) < 0 ||
        !buf_cstr(out))
        goto too_long;
    asuser_path_clean(out->data);
    out->len = strlen(out->data);
    return 0;
too_long:
    *why = "path too long";
    return -1;
}
