/*
 * gz.c - gzip through zlib (see rest/gz.h). windowBits 15 + 16 selects the gzip
 * wrapper both ways; zlib's own allocator (malloc) holds its state: about
 * 45 KiB inflating, about 270 KiB deflating at the default memory level.
 */
#include "agent/api/rest/gz.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#define GZ_WINDOW (15 + 16)

int gz_inflate_init(struct gz *g)
{
    memset(g, 0, sizeof *g);
    if (inflateInit2(&g->z, GZ_WINDOW) != Z_OK) return -1;
    g->live = 1;
    return 0;
}

static uInt clamp(size_t n) { return n > UINT_MAX ? UINT_MAX : (uInt)n; }

int gz_inflate(struct gz *g, const char *in, size_t n, size_t *used, char *out, size_t cap,
               size_t *made, const char **why)
{
    *used = *made = 0;
    if (g->member_end) { /* another member follows, or nothing */
        if (n == 0) return 0;
        if (inflateReset(&g->z) != Z_OK) goto corrupt;
        g->member_end = 0;
    }
    g->z.next_in = (Bytef *)(uintptr_t)in;
    g->z.avail_in = clamp(n);
    g->z.next_out = (Bytef *)out;
    g->z.avail_out = clamp(cap);
    int r = inflate(&g->z, Z_NO_FLUSH);
    *used = n - g->z.avail_in;
    *made = cap - g->z.avail_out;
    if (r == Z_STREAM_END) g->member_end = 1;
    else if (r != Z_OK && r != Z_BUF_ERROR) goto corrupt;
    /* Input and room, and neither moved: the stream is stuck. */
    if (n && cap && !*used && !*made && !g->member_end) goto corrupt;
    return 0;
corrupt:
    *why = g->z.msg ? g->z.msg : "corrupt gzip stream";
    return -1;
}

int gz_inflate_complete(const struct gz *g) { return g->member_end; }

int gz_deflate_init(struct gz *g, int level)
{
    memset(g, 0, sizeof *g);
    if (deflateInit2(&g->z, level, Z_DEFLATED, GZ_WINDOW, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -1;
    g->live = 1;
    g->deflating = 1;
    return 0;
}

int gz_deflate(struct gz *g, const char *in, size_t n, size_t *used, int finish, char *out,
               size_t cap, size_t *made)
{
    *used = *made = 0;
    if (g->finished) return 1;
    g->z.next_in = (Bytef *)(uintptr_t)in;
    g->z.avail_in = clamp(n);
    g->z.next_out = (Bytef *)out;
    g->z.avail_out = clamp(cap);
    int last = finish && g->z.avail_in == n;
    int r = deflate(&g->z, last ? Z_FINISH : Z_NO_FLUSH);
    *used = n - g->z.avail_in;
    *made = cap - g->z.avail_out;
    if (r == Z_STREAM_END) {
        g->finished = 1;
        return 1;
    }
    return r == Z_OK || r == Z_BUF_ERROR ? 0 : -1;
}

void gz_end(struct gz *g)
{
    if (!g->live) return;
    if (g->deflating) deflateEnd(&g->z);
    else inflateEnd(&g->z);
    g->live = 0;
}
