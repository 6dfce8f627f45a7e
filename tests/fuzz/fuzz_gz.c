/*
 * fuzz_gz.c - libFuzzer target: gzip streams (agent/api/rest/gz.c). Any bytes
 * inflate the same whole or in pieces into small buffers (or are refused as
 * corrupt both ways), within the output they claim; any bytes deflate and inflate back to
 * themselves. Never a crash, a leak or a hang.
 */
#include "agent/api/rest/gz.h"
#include "agent/core/buf.h"
#include "agent/core/hash.h"

#include <stdint.h>
#include <string.h>

#define OUT_MAX (4u << 20) /* stop a bomb here: the target is the parser */

/* Inflate in steps of `step` into buffers of `cap`: a digest of the output
 * and how it ended (0 whole members, 1 cut short, 2 corrupt, 3 too big). */
static uint64_t inflate_digest(const uint8_t *p, size_t n, size_t step, size_t cap, struct buf *keep)
{
    struct gz g;
    char out[4096];
    const char *why;
    uint64_t h = HASH_SEED;
    size_t total = 0;
    int end = 0;
    if (gz_inflate_init(&g) < 0) return 0;
    for (size_t off = 0; off < n && !end;) {
        size_t k = n - off < step ? n - off : step, used, made;
        if (gz_inflate(&g, (const char *)p + off, k, &used, out, cap, &made, &why) < 0) {
            end = 2;
            break;
        }
        off += used;
        for (;;) {
            if (made > cap) __builtin_trap();
            h = hash_bytes(h, out, made);
            if (keep) buf_append(keep, out, made);
            if ((total += made) > OUT_MAX) end = 3;
            if (made < cap || end) break;
            if (gz_inflate(&g, "", 0, &used, out, cap, &made, &why) < 0) end = 2;
        }
    }
    if (!end && !gz_inflate_complete(&g)) end = 1;
    gz_end(&g);
    /* A corrupt stream may give some output first, more or less of it
     * depending on the split: only the failure itself must agree. */
    return end == 3 ? 3 : end == 2 ? 2 : hash_bytes(h, &end, sizeof end);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    size_t step = 1 + data[0] % 64, cap = 1 + data[1] % 64;
    int level = 1 + data[0] % 9;
    data += 2;
    size -= 2;
    uint64_t whole = inflate_digest(data, size, size ? size : 1, sizeof(char[4096]), NULL);
    uint64_t split = inflate_digest(data, size, step, cap, NULL);
    if (whole != 3 && split != 3 && whole != split) __builtin_trap();
    /* Round trip. */
    struct gz g;
    struct buf z, back;
    char out[4096];
    buf_init(&z, 2 * size + 1024);
    buf_init(&back, size + 1);
    if (gz_deflate_init(&g, level) < 0) return 0;
    size_t off = 0;
    for (int r = 0; r != 1;) {
        size_t k = size - off < step ? size - off : step, used, made;
        r = gz_deflate(&g, (const char *)data + off, k, &used, off + k == size, out, cap, &made);
        if (r < 0) __builtin_trap();
        off += used;
        if (buf_append(&z, out, made) < 0) __builtin_trap();
    }
    gz_end(&g);
    inflate_digest((const uint8_t *)z.data, z.len, step, cap, &back);
    if (back.len != size || (size && memcmp(back.data, data, size))) __builtin_trap();
    buf_free(&z);
    buf_free(&back);
    return 0;
}
