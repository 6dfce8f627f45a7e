/*
 * b64.c - unwrapped base64 encoding with libb64.
 *
 * libb64's encoder counts complete 3-byte groups in state.stepcount and emits
 * '\n' when the count reaches 18 (72 output characters); its blockend adds a
 * trailing '\n' too. We feed it at most 17 groups per call and clear the
 * counter before each call, so the count never reaches 18 and no newline is
 * ever produced; the trailing one from blockend is dropped. The encoding state
 * (step, partial byte) carries across calls untouched, so chunking does not
 * change the output.
 */
#include "agent/core/b64.h"

#include <b64/cencode.h>

#define GROUPS_PER_CALL 17
#define CHUNK (3 * GROUPS_PER_CALL)

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
        st.stepcount = 0;
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
