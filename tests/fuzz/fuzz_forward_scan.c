/*
 * fuzz_forward_scan.c - libFuzzer target: the reader of /proc/net/tcp and
 * tcp6 (agent/forward/scan.c) for any bytes, fed whole and in pieces the
 * input's first byte sizes, as both families. A socket it reports is of
 * the family asked for; a line it counts refused has a reason; never a
 * crash, a leak or a hang.
 */
#include "agent/forward/scan.h"

#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

struct seen {
    int family;
    unsigned long n;
};

static void check(void *ctx, const struct scan_sock *s)
{
    struct seen *x = ctx;
    if (s->family != x->family) __builtin_trap();
    x->n++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int fams[2] = {AF_INET, AF_INET6};
    size_t step = size ? (size_t)data[0] % 97 + 1 : 1;
    for (int f = 0; f < 2; f++) {
        struct seen whole = {fams[f], 0}, pieces = {fams[f], 0};
        struct scan a, b;
        scan_init(&a, fams[f], check, &whole);
        scan_init(&b, fams[f], check, &pieces);
        scan_feed(&a, (const char *)data, size);
        for (size_t at = 0; at < size; at += step)
            scan_feed(&b, (const char *)data + at, size - at < step ? size - at : step);
        /* Where the input is cut changes nothing. */
        if (whole.n != pieces.n || a.lines != b.lines || a.bad != b.bad) __builtin_trap();
        if (a.bad && !a.bad_why) __builtin_trap();
        scan_free(&a);
        scan_free(&b);
        /* The whole input as one line. */
        struct scan_sock s;
        const char *why = NULL;
        int r = scan_line((const char *)data, size, fams[f], &s, &why);
        if (r < 0 ? !why : (r > 1 || s.family != fams[f])) __builtin_trap();
    }
    return 0;
}
