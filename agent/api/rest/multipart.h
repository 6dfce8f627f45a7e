/*
 * multipart.h - a streaming multipart/form-data parser (RFC 7578 over RFC
 * 2046) for POST /files: bytes in, in any split, events out: a part begins
 * (its form name and filename known), its data in pieces, it ends, the body
 * is done. Memory is bounded whatever the body: one part's header block
 * (MP_HEAD_MAX) and nothing else grows; data is handed out as it arrives,
 * except the few bytes that might begin a delimiter, held back until the
 * next byte tells.
 *
 * Pure: no fds, no allocation beyond the header block and the two names, so
 * the unit test and the fuzzer drive it with any input and any split.
 */
#ifndef SA_API_REST_MULTIPART_H
#define SA_API_REST_MULTIPART_H

#include "agent/core/buf.h"

#include <stddef.h>

/* RFC 2046: a boundary is 1 to 70 characters. */
#define MP_BOUNDARY_MAX 70
/* A part's header lines, all of them. */
#define MP_HEAD_MAX (16u * 1024u)
/* The most a DATA event may hand out of the parser's own bytes (a held-back
 * delimiter prefix that turned out to be data): max below this still works,
 * in several events. */
#define MP_HELD_MAX (MP_BOUNDARY_MAX + 4)
/* Blanks allowed after a delimiter (transport padding). */
#define MP_PADDING_MAX 256

enum multipart_event {
    MP_NEED,     /* every byte given was used: feed more */
    MP_PART,     /* a part's headers are in: mp->name, mp->filename */
    MP_DATA,     /* o->data[0..o->len) of the current part */
    MP_PART_END, /* the current part is complete */
    MP_DONE,     /* the close delimiter: the rest (epilogue) is ignored */
    MP_ERROR,    /* malformed: mp->why */
};

struct multipart_out {
    enum multipart_event ev;
    const char *data;
    size_t len;
};

struct mp {
    char delim[4 + MP_BOUNDARY_MAX + 1]; /* "\r\n--" boundary */
    size_t dlen;
    int state;
    size_t match;                 /* delimiter bytes matched (held back) */
    size_t held_off, held_end;    /* a failed match still to hand out as data */
    size_t pad;                   /* transport padding seen */
    int after_body, confirmed;    /* a delimiter just matched: after a part? is it one? */
    struct buf head;              /* the part's header block */
    char *name;                   /* the part's form name ("" when none) */
    char *filename;               /* its filename (filename* preferred), or NULL */
    size_t filename_len;
    int filename_nul;             /* the filename held a NUL byte */
    const char *why;              /* of MP_ERROR, static */
};

/* Returns 0, or -1 when boundary is not 1..70 of RFC 2046's characters
 * (ending in one that is not a space). */
int multipart_init(struct mp *m, const char *boundary, size_t len);
void multipart_free(struct mp *m);

/* Parse from p[0..n): returns the bytes used; the event is in *o. A DATA
 * event is at most max (>= 1) bytes. Call again with the rest until MP_NEED
 * (all used). After MP_DONE every byte is used; after MP_ERROR none. */
size_t multipart_feed(struct mp *m, const char *p, size_t n, size_t max, struct multipart_out *o);

/* The body ended. Returns 0 when the close delimiter was seen, else -1
 * with mp->why. */
int multipart_finish(struct mp *m);

/* The boundary parameter of a multipart/form-data Content-Type, into out
 * (MP_BOUNDARY_MAX + 1 bytes). Returns its length, 0 when the type is
 * another, -1 when it is multipart/form-data without a usable boundary. */
int multipart_content_type(const char *ctype, char *out);

#endif
