/*
 * tunnel.h - one forwarded connection (README "Port forwarding"): a client
 * accepted on an outward address, joined both ways to a new connection to
 * the loopback listener it was meant for.
 *
 * Each direction moves its bytes inside the event loop, non-blocking
 * everywhere, in bounded memory: a direction reads its source only while
 * its pipe is empty. Until it proves bulk it copies: one read of at most
 * TUNNEL_COPY bytes into a buffer every tunnel shares, one send, and what
 * the destination does not take into the pipe (for a small message two
 * system calls cheaper than splicing through the pipe). Once a read fills
 * that buffer it splices, socket -> pipe -> socket, never through the
 * agent's memory, through a pipe enlarged to TUNNEL_PIPE_BULK. A
 * destination that does not read stops its direction's reading, and TCP's
 * windows then stop the sender: nothing grows. An EOF is passed on as the
 * destination's shutdown(SHUT_WR), once the pipe is empty; the tunnel
 * closes when both directions have passed theirs on, and at once, with a
 * reset to both ends, on an error on either (the loopback listener refused
 * the connection, a peer reset it).
 *
 * Six fds each (two sockets, two pipes), all O_CLOEXEC | O_NONBLOCK.
 */
#ifndef SA_FORWARD_TUNNEL_H
#define SA_FORWARD_TUNNEL_H

#include <ev.h>
#include <stddef.h>
#include <sys/socket.h>

#define TUNNEL_COPY (16 * 1024)        /* a read of a direction not bulk (yet) */
#define TUNNEL_PIPE_SMALL (64 * 1024)  /* a pipe's size when the kernel does not say (> TUNNEL_COPY) */
#define TUNNEL_PIPE_BULK (1024 * 1024) /* a bulk direction's pipe (pipe-max-size's default) */
#define TUNNEL_ROUNDS 16               /* reads per wake-up at most ... */
#define TUNNEL_TURN_BYTES (1024 * 1024) /* ... and bytes: one busy tunnel cannot starve the loop */
#define TUNNEL_FDS 6

struct tunnel;
/* A tunnel closed itself; called from the loop right before it is freed. */
typedef void (*tunnel_gone_fn)(struct tunnel *t, void *ctx);

struct tunnel_half {
    int pipe[2];
    size_t cap;   /* the pipe's size: the most one splice asks for */
    int grown;    /* bulk: splicing, the pipe enlarged to TUNNEL_PIPE_BULK (or tried) */
    size_t held;  /* bytes in the pipe */
    int eof;      /* the source sent its FIN */
    int done;     /* ... and it went on: the destination's writing side is shut */
    ev_io rd, wr; /* the source readable, the destination writable */
};

struct tunnel {
    struct ev_loop *loop;
    int fd[2];               /* [0] the client, [1] the upstream (the loopback listener) */
    struct tunnel_half h[2]; /* h[d] moves fd[d] -> fd[!d] */
    ev_io connect_w;         /* the upstream's connect, until it is made */
    ev_timer free_w;         /* a closed tunnel is freed from the loop */
    int closed;
    tunnel_gone_fn gone;
    void *ctx;
    struct tunnel *prev, *next; /* the owner's list */
};

/* Forward client (an accepted socket, now the tunnel's) to the listener at
 * to. Returns the tunnel, or NULL with errno when a socket, a pipe or the
 * memory could not be had (client is then still the caller's). A connect
 * that fails ends the tunnel as any other error does, through gone. */
struct tunnel *tunnel_open(struct ev_loop *loop, int client, const struct sockaddr *to, socklen_t len,
                           tunnel_gone_fn gone, void *ctx);

/* Close t now and free it, without calling gone (the owner's stop). */
void tunnel_close(struct tunnel *t);

/* Reset fd's connection as it closes (SO_LINGER 0): the peer sees a reset,
 * never an EOF it could take for the end of a whole answer. */
void tunnel_reset_fd(int fd);

#endif
