/*
 * fuzz_connect.c - libFuzzer target: the Connect envelope
 * (agent/serve/connect.c). Any bytes decode to a message that lies inside
 * them, within the bound, or to a clean refusal; what the encoder writes
 * decodes back to itself; a request body is one message or an error.
 */
#include "agent/api/connect/connect.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t max = size ? (size_t)data[0] << 4 : 0;
    size_t off = 0;
    /* A stream of envelopes, as a client would read the agent's. */
    while (off < size) {
        struct connect_envelope e;
        const char *why = NULL;
        long k = connect_envelope_get(data + off, size - off, max, &e, &why);
        if (k < 0) {
            if (!why) __builtin_trap();
            break;
        }
        if (k == 0) break;
        if ((size_t)k > size - off || e.len > max || (size_t)k != e.len + CONNECT_ENVELOPE_HEAD)
            __builtin_trap();
        if ((const uint8_t *)e.msg < data + off || (const uint8_t *)e.msg + e.len > data + size)
            __builtin_trap();
        off += (size_t)k;
    }
    struct connect_envelope e;
    const char *why = NULL;
    if (connect_request_message(data, size, &e, &why) == 0) {
        if (e.flags || e.len + CONNECT_ENVELOPE_HEAD != size) __builtin_trap();
    } else if (!why) {
        __builtin_trap();
    }
    /* Round trip. */
    struct buf b;
    buf_init(&b, size + CONNECT_ENVELOPE_HEAD);
    unsigned flags = size ? data[0] & 3 : 0;
    if (connect_envelope_put(&b, flags, data, size) < 0) __builtin_trap();
    if (connect_envelope_get(b.data, b.len, size, &e, &why) != (long)b.len || e.flags != flags ||
        e.len != size || (size && memcmp(e.msg, data, size)))
        __builtin_trap();
    buf_free(&b);
    return 0;
}
