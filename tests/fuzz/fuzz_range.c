/*
 * fuzz_range.c - libFuzzer target: what a GET /files reads from its Range
 * and conditional headers (agent/api/rest/range.c, rest/cond.c) for any
 * bytes. The first 8 bytes are the file's size (the rest the header value):
 * every range returned lies inside the file, is not empty, adds up to at
 * most the size and fits REST_RANGE_MAX; the framing's length is what its
 * pieces add up to; a date parsed formats back to one that parses to the
 * same second; the evaluation of every header at once never crashes.
 */
#include "agent/api/rest/cond.h"
#include "agent/api/rest/range.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct rest_range r[REST_RANGE_MAX];

static void check_ranges(const char *v, uint64_t size)
{
    size_t n = 0;
    uint64_t sum = 0;
    enum rest_range_result k = rest_range_parse(v, size, r, &n);
    if (k != REST_RANGE_PARTS) {
        if (n) __builtin_trap();
        return;
    }
    if (!n || n > REST_RANGE_MAX) __builtin_trap();
    for (size_t i = 0; i < n; i++) {
        if (!r[i].len || r[i].start >= size || r[i].len > size - r[i].start) __builtin_trap();
        sum += r[i].len;
    }
    if (sum > size) __builtin_trap();
    char head[REST_RANGE_HEAD_MAX];
    uint64_t total = (uint64_t)rest_range_tail(head, "b");
    for (size_t i = 0; i < n; i++) {
        int h = rest_range_part_head(head, i, "b", "text/plain", &r[i], size);
        if (h <= 0) __builtin_trap();
        total += (uint64_t)h + r[i].len;
    }
    if (total != rest_range_body_length(r, n, "b", "text/plain", size)) __builtin_trap();
}

static void check_date(const char *v)
{
    int64_t t, back;
    char out[REST_COND_DATE_LEN];
    if (rest_cond_parse_date(v, &t) < 0) return;
    if (rest_cond_format_date(t, out) < 0 || rest_cond_parse_date(out, &back) < 0 || back != t) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t fsize = 0;
    if (size < 8) return 0;
    for (int i = 0; i < 8; i++) fsize = fsize << 8 | data[i];
    fsize >>= data[0] & 63; /* small sizes too */
    char *s = malloc(size - 8 + 1);
    if (!s) return 0;
    memcpy(s, data + 8, size - 8);
    s[size - 8] = '\0';
    check_ranges(s, fsize);
    check_date(s);
    int ok;
    struct rest_cond_req h = {s, s, s, s, s};
    (void)rest_cond_eval(&h, (int64_t)fsize, 0, &ok);
    h = (struct rest_cond_req){NULL, s, NULL, s, s};
    (void)rest_cond_eval(&h, (int64_t)(fsize >> 1), 1, &ok);
    free(s);
    return 0;
}
