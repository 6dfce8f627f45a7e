/*
 * fuzz_forward_scan.c - libFuzzer target: what the port forwarder reads
 * from the kernel, for any bytes: the /proc/net/tcp and tcp6 reader
 * (agent/forward/scan.c), fed whole and in pieces the input's first byte
 * sizes, as both families; a sock_diag answer; an rtnetlink address dump
 * (agent/forward/outward.c, through forward/nl.c). A socket reported is of
 * the family asked for, a refused line has a reason, an address kept is an
 * outward one and kept once; never a crash, a leak or a hang.
 */
#include "agent/forward/outward.h"
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
        /* The input as a part of a sock_diag answer. */
        struct seen diag = {fams[f], 0};
        scan_diag_part((const char *)data, size, fams[f], check, &diag);
        /* The whole input as one line. */
        struct scan_sock s;
        const char *why = NULL;
        int r = scan_line((const char *)data, size, fams[f], &s, &why);
        if (r < 0 ? !why : (r > 1 || s.family != fams[f])) __builtin_trap();
    }
    /* ... and of an rtnetlink address dump: only outward addresses, sorted. */
    struct outward o;
    memset(&o, 0, sizeof o);
    outward_dump_part(&o, (const char *)data, size);
    if (o.n > OUTWARD_MAX) __builtin_trap();
    for (size_t i = 0; i < o.n; i++) {
        int fam = o.a[i].ss.ss_family;
        if ((fam != AF_INET && fam != AF_INET6) || !o.a[i].text[0] || !strcmp(o.a[i].text, "::1") ||
            !strncmp(o.a[i].text, "127.", 4) || (i && !strcmp(o.a[i - 1].text, o.a[i].text)))
            __builtin_trap();
    }
    return 0;
}
