/*
 * fsjob.h - one filesystem operation in a helper process that runs as the
 * request's user (README "sandbox-agent serve": users): the agent forks,
 * the child takes the user's groups, gid and uid, does the operation with
 * the file service and writes its result to a pipe, which the loop reads as
 * it comes. So the kernel checks every access as the user, every file made
 * is the user's, and a big operation (a listing of 10,000 entries, a
 * recursive remove, an upload's fsync) never holds the loop.
 *
 * Why a process and not setfsuid around the call: the loop would block for
 * as long as the operation takes, and a credential left switched by a
 * failure would leak to every other client; a child cannot leak anything
 * back. The child keeps only fds 0-2, its result pipe (3) and the fds the
 * caller hands it (4, 5), so no other connection's pipe stays open in it.
 *
 * The result, in the collecting mode, is one frame: a 4-byte big-endian
 * status (the caller's meaning) and the payload up to EOF. In the raw mode
 * the caller reads the pipe itself (a download's bytes).
 */
#ifndef SA_API_FSJOB_H
#define SA_API_FSJOB_H

#include "agent/proc/user.h"

#include <ev.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The status given to `done` when the helper left no whole frame (it could
 * not become the user, or died); the payload then says why. */
#define FSJOB_FAILED INT32_MIN
/* The fds a child finds its inputs on (fsjob_opts.in_fds, in order). */
#define FSJOB_OUT_FD 3
#define FSJOB_IN_FD0 4

/* In the child: do the work, write the result to FSJOB_OUT_FD (fsjob_reply
 * in the collecting mode). The return value is the child's exit status. */
typedef int (*fsjob_fn)(void *arg);

struct fsjob_opts {
    const struct user_info *user; /* NULL: as the agent */
    fsjob_fn fn;
    void *arg;                    /* the child's copy is the parent's memory at the fork */
    int in_fds[2];                /* fds for the child (FSJOB_IN_FD0, +1), nin of them */
    int nin;
    int deathsig;                 /* the child gets this signal if the agent dies (0: none) */
};

struct fsjob;

/* Collecting: the frame's status and payload (a message for FSJOB_FAILED). */
typedef void (*fsjob_done_fn)(void *ctx, int32_t status, const char *data, size_t n);
/* Raw: the helper was reaped (its wait status). */
typedef void (*fsjob_exit_fn)(void *ctx, int wstatus);

/* Fork the helper. Returns the job, or NULL with a message in err and errno. */
struct fsjob *fsjob_start(struct ev_loop *loop, const struct fsjob_opts *o, char *err);

/* Collect the frame (at most max payload bytes; more kills the helper and
 * is FSJOB_FAILED) and call done once the helper is gone. The job is freed
 * after done returns. */
void fsjob_collect(struct fsjob *j, size_t max, fsjob_done_fn done, void *ctx);

/* Raw: the pipe's read end (non-blocking) for the caller to read; exit is
 * called when the helper is reaped (if not detached by then). */
int fsjob_fd(const struct fsjob *j);
void fsjob_on_exit(struct fsjob *j, fsjob_exit_fn fn, void *ctx);

/* Forget the job: no callback runs any more, the pipe is closed (a helper
 * still writing gets SIGPIPE), and the record goes once it is reaped. */
void fsjob_detach(struct fsjob *j);

/* The same, and SIGKILL to a helper still running (for operations that
 * change nothing: cutting them short loses nothing). */
void fsjob_cancel(struct fsjob *j);

/* In the child (collecting mode): the frame. Returns 0, or -1 with errno. */
int fsjob_reply(int32_t status, const char *data, size_t n);

/* Helpers running now (for tests and logs). */
unsigned fsjob_running(void);

#endif
