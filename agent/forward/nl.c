/*
 * nl.c - netlink dumps (see forward/nl.h).
 */
#include "agent/forward/nl.h"
#include "agent/core/err.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NL_ERROR 2
#define NL_DONE 3
#define NL_REQUEST_DUMP 0x301 /* NLM_F_REQUEST | NLM_F_DUMP */

int nl_walk(const char *p, size_t n, nl_msg_fn fn, void *ctx)
{
    struct nl_hdr h;
    for (size_t at = 0; n - at >= sizeof h; at += NL_ALIGN(h.len)) {
        memcpy(&h, p + at, sizeof h);
        if (h.len < sizeof h || h.len > n - at) break;
        if (h.type == NL_DONE) return 1;
        if (h.type == NL_ERROR) {
            int32_t e = 0;
            if (h.len >= sizeof h + sizeof e) memcpy(&e, p + at + sizeof h, sizeof e);
            errno = e < 0 ? -e : EPROTO;
            return -1;
        }
        fn(ctx, h.type, p + at + sizeof h, h.len - sizeof h);
        if (NL_ALIGN(h.len) >= n - at) break;
    }
    return 0;
}

const void *nl_attr(const char *p, size_t n, unsigned type, size_t need)
{
    struct nl_attr a;
    for (size_t at = 0; n - at >= sizeof a; at += NL_ALIGN(a.len)) {
        memcpy(&a, p + at, sizeof a);
        if (a.len < sizeof a || a.len > n - at) return NULL;
        if (a.type == type && a.len - sizeof a >= need) return p + at + sizeof a;
        if (NL_ALIGN(a.len) >= n - at) break;
    }
    return NULL;
}

int nl_dump(int proto, void *req, size_t len, nl_msg_fn fn, void *ctx, char *err)
{
    static char part[NL_PART_MAX] __attribute__((aligned(8)));
    struct nl_hdr *h = req;
    h->flags = NL_REQUEST_DUMP;
    h->seq = 1;
    int r = -1, fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, proto);
    if (fd >= 0 && send(fd, req, len, 0) == (ssize_t)len) {
        for (r = 0; r == 0;) {
            ssize_t got = recv(fd, part, sizeof part, MSG_DONTWAIT | MSG_TRUNC);
            if (got < 0 && errno == EINTR) continue;
            if (got > (ssize_t)sizeof part) errno = EMSGSIZE;
            r = got < 0 || got > (ssize_t)sizeof part ? -1 : nl_walk(part, (size_t)got, fn, ctx);
        }
    }
    if (r < 0) err_set(err, "%s", strerror(errno));
    if (fd >= 0) close(fd);
    return r < 0 ? -1 : 0;
}
