/*
 * range.h - the Range header of GET /files and the multipart/byteranges
 * body that answers several ranges (README "filesystem.Filesystem and
 * /files": ranges), as envd answers them (Go's http.ServeContent over RFC
 * 9110 §14). Pure: a header value and a size in, ranges out; the part
 * heads and the body's length out of ranges and a boundary, so the loop
 * (sending from the file) and a helper (copying it) frame the same bytes.
 */
#ifndef SA_API_REST_RANGE_H
#define SA_API_REST_RANGE_H

#include <stddef.h>
#include <stdint.h>

/* Ranges one response answers: a request for more gets the whole file
 * (RFC 9110 lets a server ignore a Range). */
#define REST_RANGE_MAX 1024
/* A multipart/byteranges boundary: 60 hex digits (30 random bytes). */
#define REST_RANGE_BOUNDARY_LEN 60
/* The most a part's head takes, whatever the Content-Type (bounded below). */
#define REST_RANGE_CTYPE_MAX 128
#define REST_RANGE_HEAD_MAX (REST_RANGE_BOUNDARY_LEN + REST_RANGE_CTYPE_MAX + 128)

struct rest_range {
    uint64_t start, len; /* len > 0, start + len <= the size */
};

enum rest_range_result {
    REST_RANGE_WHOLE,         /* no Range, or one ignored: 200 and the whole file */
    REST_RANGE_PARTS,         /* *n ranges: one is a 206 with Content-Range; more, multipart/byteranges */
    REST_RANGE_INVALID,       /* not a bytes range set Go reads: 416 */
    REST_RANGE_UNSATISFIABLE, /* no range overlaps the file: 416 with Content-Range: bytes * / size */
};

/*
 * The Range header value (NULL or "": none) of a file of size bytes into
 * out[0..REST_RANGE_MAX), *n of them, in the order asked (overlaps kept).
 * As Go reads it: "bytes=" then comma-separated first-last, first- or
 * -suffix (numbers as strconv.ParseInt reads them, blanks around each
 * trimmed, empty elements skipped); a range starting past the end is
 * dropped, a last past the end is cut to it; ranges adding up to more
 * than the file, or more than REST_RANGE_MAX of them, are ignored (the
 * whole file). Two differences, each where Go's answer is no valid
 * response: a suffix of 0 (-0) overlaps nothing, and an empty file is
 * sent whole whatever the range.
 */
enum rest_range_result rest_range_parse(const char *value, uint64_t size, struct rest_range *out, size_t *n);

/* "bytes FIRST-LAST/SIZE" of r into out (cap bytes). Returns its length, or -1. */
int rest_range_content_range(char *out, size_t cap, const struct rest_range *r, uint64_t size);

/*
 * The multipart/byteranges framing (Go's mime/multipart writer: the
 * delimiter, then Content-Range and Content-Type, a blank line): the head
 * of part i into out (REST_RANGE_HEAD_MAX bytes), the tail after the last
 * part, and the whole body's length. ctype is at most REST_RANGE_CTYPE_MAX
 * bytes. Each returns the length (-1 when it does not fit).
 */
int rest_range_part_head(char *out, size_t i, const char *boundary, const char *ctype,
                         const struct rest_range *r, uint64_t size);
int rest_range_tail(char *out, const char *boundary);
uint64_t rest_range_body_length(const struct rest_range *r, size_t n, const char *boundary, const char *ctype,
                                uint64_t size);

#endif
