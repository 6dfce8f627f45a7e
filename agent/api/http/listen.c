/*
 * listen.c - the listening address and socket (see http/listen.h).
 *
 * Hosts are numeric (or `localhost`): resolving a name at start would block
 * on DNS, and a name that resolves to several addresses would make "is it
 * loopback" ambiguous.
 */
#include "agent/api/http/listen.h"
#include "agent/core/err.h"
#include "agent/core/num.h"
#include "agent/core/protocol.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HOST_MAX 64 /* longer than any numeric address */
/* Clients waiting to be accepted (the kernel caps it at net.core.somaxconn);
 * musl's SOMAXCONN is 128, less than an SDK's connection pool. */
#define BACKLOG 1024

static int parse_unix(const char *path, struct listen_addr *a, char *err)
{
    struct sockaddr_un *un = (struct sockaddr_un *)&a->ss;
    size_t n = strlen(path);
    if (n == 0 || path[0] != '/') {
        err_set(err, "unix: needs an absolute path, not '%.80s'", path);
        return -1;
    }
    if (n >= sizeof a->path) {
        err_set(err, "unix socket path longer than %zu bytes", sizeof a->path - 1);
        return -1;
    }
    a->is_unix = 1;
    a->loopback = 1;
    memcpy(a->path, path, n + 1);
    un->sun_family = AF_UNIX;
    memcpy(un->sun_path, path, n + 1);
    a->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    return 0;
}

/* Split "HOST:PORT" or "[HOST]:PORT" into host (brackets dropped) and port. */
static int split_host_port(const char *s, char *host, uint64_t *port, int *bracketed)
{
    const char *colon;
    *bracketed = s[0] == '[';
    if (*bracketed) {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':') return -1;
        colon = close + 1;
        s++;
    } else {
        colon = strrchr(s, ':');
        if (!colon || memchr(s, ':', (size_t)(colon - s))) return -1; /* bare IPv6 */
    }
    size_t hl = (size_t)(colon - s) - (size_t)*bracketed;
    if (hl == 0 || hl >= HOST_MAX) return -1;
    memcpy(host, s, hl);
    host[hl] = '\0';
    return num_count(colon + 1, 65535, port) < 0 || *port == 0 ? -1 : 0;
}

static int parse_inet(const char *s, struct listen_addr *a, char *err)
{
    char host[HOST_MAX];
    uint64_t port;
    int v6;
    if (split_host_port(s, host, &port, &v6) < 0) {
        err_set(err, "'%.80s' is not HOST:PORT, [IPV6]:PORT or unix:/PATH (port 1-65535)", s);
        return -1;
    }
    if (!v6 && !strcmp(host, "localhost")) strcpy(host, "127.0.0.1");
    if (v6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a->ss;
        if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1) goto bad_host;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        a->len = sizeof *in6;
        const unsigned char *b = in6->sin6_addr.s6_addr;
        a->loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
                      (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && b[12] == 127);
        return 0;
    }
    struct sockaddr_in *in4 = (struct sockaddr_in *)&a->ss;
    if (inet_pton(AF_INET, host, &in4->sin_addr) != 1) goto bad_host;
    in4->sin_family = AF_INET;
    in4->sin_port = htons((uint16_t)port);
    a->len = sizeof *in4;
    a->loopback = (ntohl(in4->sin_addr.s_addr) >> 24) == 127;
    return 0;
bad_host:
    err_set(err, "'%.64s' is not a numeric IPv4 or IPv6 address (or localhost)", host);
    return -1;
}

int listen_parse(const char *s, struct listen_addr *a, char *err)
{
    memset(a, 0, sizeof *a);
    if (!strncmp(s, "unix:", 5)) return parse_unix(s + 5, a, err);
    return parse_inet(s, a, err);
}

int listen_check(const char *text, const struct listen_addr *a, int has_token, int insecure,
                 int *warn, char *err)
{
    *warn = 0;
    if (a->loopback || has_token) return 0;
    if (insecure) {
        *warn = 1;
        return 0;
    }
    err_set(err, ENV_LISTEN "=%.80s is not a loopback address and " ENV_TOKEN
            " is not set: set a token, listen on 127.0.0.1, set " ENV_AWAIT_TOKEN
            "=1 (POST /init sets it) or " ENV_INSECURE "=1", text);
    return -1;
}

/* A Unix socket file left by an earlier run would make bind fail. Only a
 * socket is removed, never another kind of file. */
static void remove_stale_socket(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) (void)unlink(path);
}

int listen_open(const struct listen_addr *a, char *err)
{
    int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        err_set(err, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    if (!a->is_unix && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0) {
        err_set(err, "SO_REUSEADDR: %s", strerror(errno));
        goto fail;
    }
    if (a->is_unix) remove_stale_socket(a->path);
    if (bind(fd, (const struct sockaddr *)&a->ss, a->len) < 0) {
        err_set(err, "bind: %s", strerror(errno));
        goto fail;
    }
    if (listen(fd, BACKLOG) < 0) {
        err_set(err, "listen: %s", strerror(errno));
        goto fail;
    }
    return fd;
fail:
    close(fd);
    return -1;
}
