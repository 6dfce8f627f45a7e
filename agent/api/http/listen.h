/*
 * listen.h - where `serve` listens: parsing SANDBOX_AGENT_LISTEN
 * (`HOST:PORT` with a numeric IPv4 host, `[IPv6]:PORT`, `localhost:PORT`, or
 * `unix:/path`), the rule that a network address other than loopback needs
 * a token, and opening the listening socket.
 */
#ifndef SA_API_HTTP_LISTEN_H
#define SA_API_HTTP_LISTEN_H

#include <sys/socket.h>
#include <sys/un.h>

struct listen_addr {
    int is_unix;
    int loopback;                 /* 127.0.0.0/8, ::1, ::ffff:127.x, or a Unix socket */
    struct sockaddr_storage ss;
    socklen_t len;
    char path[sizeof ((struct sockaddr_un *)0)->sun_path]; /* of a Unix socket */
};

/* Parse s. Returns 0, or -1 with a message in err (ERR_LEN bytes). Pure. */
int listen_parse(const char *s, struct listen_addr *a, char *err);

/* A network address other than loopback is refused without a token, unless
 * insecure. Returns 0 (*warn set when serving without a token anyway), or -1
 * with a message naming both variables in err. Pure. */
int listen_check(const char *text, const struct listen_addr *a, int has_token, int insecure,
                 int *warn, char *err);

/* A listening socket for a: SO_REUSEADDR, non-blocking, close-on-exec; a
 * stale Unix socket file at the path is replaced. Returns the fd, or -1 with
 * a message in err. */
int listen_open(const struct listen_addr *a, char *err);

#endif
