/*
 * fuzz_httpreq.c - libFuzzer target: a connection's request parsing
 * (agent/serve/httpreq.c). Any bytes, fed as one piece and cut at every
 * boundary (a sample of them for long inputs), give the same requests with
 * the same heads, bodies and errors, within the bounds; requests follow one
 * another as on a keep-alive connection. Never a crash, a leak or a hang.
 */
#include "agent/api/http/httpreq.h"
#include "agent/core/hash.h"
#include "agent/core/protocol.h"

#include <stdint.h>
#include <string.h>

#define BODY_MAX 4096 /* small, so the 413 path is reached */
#define MAX_REQUESTS 64

static uint64_t digest_request(uint64_t h, const struct httpreq *r)
{
    enum http_method m = httpreq_method(r);
    h = hash_bytes(h, &m, sizeof m);
    const char *path = httpreq_path(r), *query = httpreq_query(r);
    h = hash_bytes(h, path, strlen(path) + 1);
    h = hash_bytes(h, query, strlen(query) + 1);
    if (r->nhdr > HTTPREQ_MAX_HEADERS || r->text.len > SERVE_HEAD_MAX + 2 * HTTPREQ_MAX_HEADERS + 2)
        __builtin_trap();
    for (unsigned i = 0; i < r->nhdr; i++) {
        const char *name, *value;
        httpreq_header_at(r, i, &name, &value);
        h = hash_bytes(h, name, strlen(name) + 1);
        h = hash_bytes(h, value, strlen(value) + 1);
        if (!httpreq_header_count(r, name)) __builtin_trap();
    }
    const struct buf *b = httpreq_body(r);
    if (b->len > BODY_MAX) __builtin_trap();
    h = hash_bytes(h, b->data ? b->data : "", b->len);
    int ka = httpreq_keep_alive(r);
    return hash_bytes(h, &ka, sizeof ka);
}

/* Parse p[0..n) as a connection would, cutting the input at `cut` (and at
 * every request boundary). Returns a digest of everything parsed. */
static uint64_t parse(const uint8_t *p, size_t n, size_t cut)
{
    struct httpreq r;
    uint64_t h = HASH_SEED;
    size_t off = 0;
    int requests = 0;
    httpreq_init(&r);
    while (off < n && requests < MAX_REQUESTS) {
        size_t end = off < cut ? cut : n, used;
        enum httpreq_event ev = httpreq_feed(&r, (const char *)p + off, end - off, &used);
        if (used > end - off) __builtin_trap();
        off += used;
        if (ev != HTTPREQ_MORE) h = hash_bytes(h, &off, sizeof off); /* where each event falls */
        if (ev == HTTPREQ_HEAD) {
            if (httpreq_body_buffer(&r, BODY_MAX) < 0) ev = HTTPREQ_ERROR;
            else continue;
        }
        if (ev == HTTPREQ_ERROR) {
            int st = httpreq_status(&r);
            if (st < 400 || st > 599) __builtin_trap();
            h = hash_bytes(h, &st, sizeof st);
            break;
        }
        if (ev == HTTPREQ_DONE) {
            h = digest_request(h, &r);
            httpreq_reset(&r);
            requests++;
        }
    }
    httpreq_free(&r);
    return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t whole = parse(data, size, size);
    size_t step = size <= 512 ? 1 : size / 64;
    for (size_t cut = 0; cut < size; cut += step)
        if (parse(data, size, cut) != whole) __builtin_trap();
    return 0;
}
