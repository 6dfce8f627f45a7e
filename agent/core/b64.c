/*
 * b64.c - unwrapped base64 encoding and strict decoding with libb64.
 *
 * libb64's encoder counts complete 3-byte groups in state.stepcount and emits
 * '\n' when the count reaches 18 (72 output characters); its blockend adds a
 * trailing '\n' too. We start the counter far below zero (STEP_FLOOR) before
 * each call of at most CHUNK bytes, so it never climbs to 18 and no newline
 * is ever produced; the trailing one from blockend is dropped. The encoding
 * state (step, partial byte) carries across calls untouched, so chunking does
 * not change the output. (One call per CHUNK, not per 17 groups: the calls
 * themselves were a tenth of the time.)
 */
#include "agent/core/b64.h"

#include <b64/cdecode.h>
#include <b64/cencode.h>

/* CHUNK / 3 increments from STEP_FLOOR stay far below 18 and far from
 * overflowing an int. */
#define CHUNK (3u << 24)
#define STEP_FLOOR (-(1 << 30))
/* Characters translated to the standard alphabet per decoding call. */
#define DECODE_CHUNK 4096

size_t b64_encoded_len(size_t n) { return (n + 2) / 3 * 4; }

int b64_encode(struct buf *out, const void *data, size_t n)
{
    const char *p = data;
    base64_encodestate st;
    size_t need = b64_encoded_len(n);

    /* blockend writes up to 3 chars plus its newline; keep room for both. */
    if (buf_reserve(out, need + 4) < 0) return -1;
    base64_init_encodestate(&st);
    char *dst = out->data + out->len;
    size_t w = 0;
    while (n > 0) {
        size_t k = n < CHUNK ? n : CHUNK;
        st.stepcount = STEP_FLOOR;
        w += (size_t)base64_encode_block(p, (int)k, dst + w, &st);
        p += k;
        n -= k;
    }
    int tail = base64_encode_blockend(dst + w, &st);
    /* blockend always ends with '\n'; the protocol wants none. */
    if (tail > 0 && dst[w + (size_t)tail - 1] == '\n') tail--;
    w += (size_t)tail;
    out->len += w;
    return 0;
}

/* 1 for a character of either alphabet. libb64's own table must only ever
 * see these: it reads past its end for '{' and above. */
static int b64_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '+' || c == '/' || c == '-' || c == '_';
}

/* The length of s[0..n) without its padding, or -1 when s is not base64. */
static long b64_data_len(const char *s, size_t n)
{
    size_t pad = 0;
    while (pad < n && pad < 2 && s[n - 1 - pad] == '=') pad++;
    if (pad && n % 4 != 0) return -1;
    size_t len = n - pad;
    if (len % 4 == 1) return -1;
    for (size_t i = 0; i < len; i++)
        if (!b64_char((unsigned char)s[i])) return -1;
    return (long)len;
}

int b64_decode(struct buf *out, const char *s, size_t n)
{
    long len = b64_data_len(s, n);
    if (len < 0) return -1;
    size_t tail = (size_t)len % 4;
    /* libb64 also stores the partial byte of a group, one past the decoded
     * bytes: buf_reserve's room for a terminator holds it. */
    if (buf_reserve(out, (size_t)len / 4 * 3 + (tail ? tail - 1 : 0)) < 0) return -1;
    base64_decodestate st;
    base64_init_decodestate(&st);
    char chunk[DECODE_CHUNK];
    size_t w = 0;
    for (long i = 0; i < len;) {
        size_t k = 0;
        /* The URL-safe alphabet, in the standard one libb64 knows. */
        for (; i < len && k < sizeof chunk; i++, k++)
            chunk[k] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
        w += (size_t)base64_decode_block(chunk, (int)k, out->data + out->len + w, &st);
    }
    out->len += w;
    return 0;
}
