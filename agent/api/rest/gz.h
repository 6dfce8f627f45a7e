/*
 * gz.h - gzip streams (RFC 1952, zlib) for /files: an upload's
 * `Content-Encoding: gzip` inflated as it arrives, a download deflated as it
 * is sent. Each call works on what it is given into a caller's buffer of
 * fixed size, so a small input that inflates to gigabytes costs one buffer
 * at a time, never more memory.
 */
#ifndef SA_API_REST_GZ_H
#define SA_API_REST_GZ_H

#include <stddef.h>
#include <zlib.h>

struct gz {
    z_stream z;
    int live;        /* initialised */
    int deflating;
    int member_end;  /* inflate: the input so far ends at a member's end */
    int finished;    /* deflate: the trailer is out */
};

int gz_inflate_init(struct gz *g);
/* Inflate in[0..n) into out[0..cap): *used input bytes taken, *made output
 * bytes written (either may be 0 while the other is not; with n 0, what
 * zlib still holds comes out: call so while *made == cap). Concatenated
 * members are one stream, as gunzip reads them. Returns 0 (progress, or n
 * and the held output both 0), or -1 for a corrupt stream with a static
 * reason in *why. */
int gz_inflate(struct gz *g, const char *in, size_t n, size_t *used, char *out, size_t cap,
               size_t *made, const char **why);
/* 1 when the input so far is whole members (an upload may end here). */
int gz_inflate_complete(const struct gz *g);

/* level: zlib's 1..9, or Z_DEFAULT_COMPRESSION. */
int gz_deflate_init(struct gz *g, int level);
/* Deflate in[0..n) into out[0..cap) as gz_inflate does; with finish (the
 * input ends with this call's) the trailer follows once everything is in.
 * Returns 1 when the stream is complete, 0 to go on (call again with the
 * rest, or with room), -1 on a zlib error. */
int gz_deflate(struct gz *g, const char *in, size_t n, size_t *used, int finish, char *out,
               size_t cap, size_t *made);

/* Free zlib's state (either direction). Safe twice and on a zeroed gz. */
void gz_end(struct gz *g);

#endif
