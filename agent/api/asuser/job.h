/*
 * asuser_job.h - one filesystem operation in a helper process that runs as the
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
 * the caller reads the pipe itself (a download's bytes). With `socket` the
 * channel is a Unix stream socket instead, which can also carry an fd the
 * helper opened as the user back to the agent (SCM_RIGHTS): the caller
 * must check what it gets as it would check the path (a helper is a process
 * of the user's, who may have taken it over).
 */
#ifndef SA_API_ASUSER_JOB_H
#define SA_API_ASUSER_JOB_H

#include "agent/core/user.h"

#include <ev.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The status given to `done` when the helper left no whole frame (it could
 * not become the user, or died); the payload then says why. */
#define ASUSER_JOB_FAILED INT32_MIN
/* The status given to `done` when the frame could not be held: the
 * agent's memory budget (core/budget.h) refused it, and the helper was
 * killed. Only a frame larger than ASUSER_JOB_SMALL can be refused. */
#define ASUSER_JOB_SPENT (INT32_MIN + 1)
#define ASUSER_JOB_SMALL (64u * 1024u)
/* The fds a child finds its inputs on (asuser_job_opts.in_fds, in order). */
#define ASUSER_JOB_OUT_FD 3
#define ASUSER_JOB_IN_FD0 4

/* In the child: do the work, write the result to ASUSER_JOB_OUT_FD (asuser_job_reply
 * in the collecting mode). The return value is the child's exit status. */
typedef int (*asuser_job_fn)(void *arg);

struct asuser_job_opts {
    const struct user_info *user; /* NULL: as the agent */
    asuser_job_fn fn;
    void *arg;                    /* the child's copy is the parent's memory at the fork */
    int in_fds[2];                /* fds for the child (ASUSER_JOB_IN_FD0, +1), nin of them */
    int nin;
    int deathsig;                 /* the child gets this signal if the agent dies (0: none) */
    int socket;                   /* the result channel is a Unix stream socket (asuser_job_recv) */
};

struct asuser_job;

/* Collecting: the frame's status and payload (a message for ASUSER_JOB_FAILED). */
typedef void (*asuser_job_done_fn)(void *ctx, int32_t status, const char *data, size_t n);
/* Raw: the helper was reaped (its wait status). */
typedef void (*asuser_job_exit_fn)(void *ctx, int wstatus);

/* Fork the helper. Returns the job, or NULL with a message in err and errno. */
struct asuser_job *asuser_job_start(struct ev_loop *loop, const struct asuser_job_opts *o, char *err);

/* Collect the frame (at most max payload bytes; more kills the helper and
 * is ASUSER_JOB_FAILED) and call done once the helper is gone. The job is freed
 * after done returns. */
void asuser_job_collect(struct asuser_job *j, size_t max, asuser_job_done_fn done, void *ctx);

/* Raw: the pipe's read end (non-blocking) for the caller to read; exit is
 * called when the helper is reaped (if not detached by then), and may
 * detach or cancel the job. */
int asuser_job_fd(const struct asuser_job *j);
void asuser_job_on_exit(struct asuser_job *j, asuser_job_exit_fn fn, void *ctx);

/* Forget the job: no callback runs any more, the pipe is closed (a helper
 * still writing gets SIGPIPE), and the record goes once it is reaped. */
void asuser_job_detach(struct asuser_job *j);

/* The same, and SIGKILL to a helper still running (for operations that
 * change nothing: cutting them short loses nothing). */
void asuser_job_cancel(struct asuser_job *j);

/* In the child (collecting mode): the frame. Returns 0, or -1 with errno. */
int asuser_job_reply(int32_t status, const char *data, size_t n);
/* In the child (socket): the frame's head and data in one message, with fd
 * (SCM_RIGHTS) riding on its first byte. Returns 0, or -1 with errno. */
int asuser_job_reply_fd(int32_t status, const char *data, size_t n, int fd);

/* Raw, socket: read up to n bytes as read(2) does (non-blocking); an fd
 * that came with them into *fd (close-on-exec; any more are closed), else
 * *fd is left as it is. Returns what read(2) would. */
ssize_t asuser_job_recv(struct asuser_job *j, void *p, size_t n, int *fd);

/* Helpers running now (for tests and logs). */
unsigned asuser_job_running(void);

#endif
