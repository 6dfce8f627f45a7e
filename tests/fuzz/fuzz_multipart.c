/*
 * fuzz_multipart.c - libFuzzer target: the streaming multipart parser
 * (agent/api/rest/multipart.c). The first bytes choose the boundary, a cut and a
 * DATA bound; the rest is the body. Parsed whole and cut in two, with any
 * bound, the body gives the same parts, names and data; no DATA event
 * passes its bound; memory stays within the header bound. Never a crash, a
 * leak or a hang.
 */
#include "agent/api/rest/multipart.h"
#include "agent/core/hash.h"

#include <stdint.h>
#include <string.h>

struct digest {
    uint64_t h;        /* of events, data merged across pieces */
    int in_data, state; /* 0 going, 1 done, 2 error */
};

static void note(struct digest *d, const char *tag, const void *p, size_t n)
{
    d->h = hash_bytes(d->h, tag, 1);
    d->h = hash_bytes(d->h, p, n);
}

static void feed(struct mp *m, const uint8_t *p, size_t k, size_t max, struct digest *d)
{
    while (k > 0 && d->state != 2) {
        struct multipart_out o;
        size_t used = multipart_feed(m, (const char *)p, k, max, &o);
        if (used > k) __builtin_trap();
        p += used;
        k -= used;
        if (m->head.len > MP_HEAD_MAX) __builtin_trap();
        switch (o.ev) {
        case MP_DATA:
            if (!o.len || o.len > max) __builtin_trap();
            d->h = hash_bytes(d->h, o.data, o.len); /* data hashes the same however split */
            break;
        case MP_PART:
            note(d, "P", m->name, strlen(m->name) + 1);
            if (m->filename) note(d, "F", m->filename, m->filename_len);
            break;
        case MP_PART_END: note(d, "E", "", 0); break;
        case MP_DONE: d->state = 1; break;
        case MP_ERROR: d->state = 2; break;
        case MP_NEED: if (k) __builtin_trap(); break;
        }
    }
}

static uint64_t run(const char *boundary, size_t blen, const uint8_t *p, size_t n, size_t cut, size_t max)
{
    struct mp m;
    struct digest d = {HASH_SEED, 0, 0};
    if (multipart_init(&m, boundary, blen) < 0) {
        multipart_free(&m);
        return 0;
    }
    feed(&m, p, cut, max, &d);
    feed(&m, p + cut, n - cut, max, &d);
    int fin = d.state == 2 ? 2 : multipart_finish(&m) == 0 ? 1 : 0;
    multipart_free(&m);
    return hash_bytes(d.h, &fin, sizeof fin);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    size_t blen = 1 + data[0] % 8, cut = data[1], max = 1 + data[2] % 80;
    static const char *const boundaries = "Bb0-_ '()+,./:=?xyzABC";
    char boundary[9];
    for (size_t i = 0; i < blen; i++) boundary[i] = boundaries[(data[1] + i * 7) % strlen(boundaries)];
    data += 3;
    size -= 3;
    if (cut > size) cut = size;
    uint64_t whole = run(boundary, blen, data, size, size, 1 << 20);
    if (run(boundary, blen, data, size, cut, max) != whole) __builtin_trap();
    /* With the boundary the body itself uses, when it starts like one. */
    if (size > 2 && data[0] == '-' && data[1] == '-') {
        size_t k = 2;
        while (k < size && k < 72 && data[k] != '\r') k++;
        uint64_t a = run((const char *)data + 2, k - 2, data, size, size, 1 << 20);
        if (run((const char *)data + 2, k - 2, data, size, cut, max) != a) __builtin_trap();
    }
    return 0;
}
