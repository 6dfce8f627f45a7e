/*
 * proc.h - the process table of `serve` (README "serve": processes): every
 * process a Start made, running or finished, with its config, its output
 * kept in retention rings, its input queue and its end.
 *
 * Owns the children it starts (each leads its own process group; with a pty
 * its own session, the pty as controlling terminal and fds 0-2; where the
 * table may make cgroups, each in a cgroup of its own), their pipes and pty
 * masters, their timeouts (TERM, grace, KILL) and their records: a
 * finished process is kept, its end and rings readable, until keep_sent
 * seconds after the last end event that went out for it (proc_end_sent;
 * one written into a socket its client had closed counts as sent, so it
 * is not dropped at once), but never more than keep_finished of them,
 * holding keep_bytes in all: past either bound the oldest goes first,
 * whatever its time left. A signal, a timeout, a
 * stop and the shutdown reach what a process started too: its cgroup's
 * members, or without one its leader's descendants (README "sandbox-agent
 * serve": what a process started goes with it). Knows nothing of HTTP,
 * JSON or base64.
 *
 * Never pushes data: a subscriber (an open Start or Connect stream) is told
 * "something is ready" and pulls with proc_read at its own pace, from its own
 * absolute offset; one that fell a whole ring behind jumps to the oldest
 * byte kept. A paced subscriber (proc_pace_sub) is waited for instead: the
 * child's output is not read past the point where it would fall a ring
 * behind (the child then blocks on its full pipe), unless it read nothing
 * for the table's stall time, or the table shuts down: then it is left to
 * skip, and the child goes on. Closing a subscriber never touches the
 * process.
 *
 * Errors follow err.h, and errno says which kind (for the caller's error
 * codes): EINVAL a bad request, EEXIST a tag already running, EPERM a user
 * switch without root, ESHUTDOWN the table is shutting down, ESRCH the
 * process is not running, ENOTTY no pty, EPIPE no stdin (off or closed),
 * ENOSPC the input queue is full; anything else is the system's.
 *
 * The agent must ignore SIGPIPE (sig_ignore_pipe): input to a child that
 * closed its stdin fails with EPIPE instead.
 */
#ifndef SA_PROC_PROC_H
#define SA_PROC_PROC_H

#include "agent/core/cgroup.h"
#include "agent/proc/status.h"
#include "agent/core/user.h"

#include <ev.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Input queued for one process and not yet taken by it: a SendInput that
 * would pass this is refused (ENOSPC), the queue never grows past it. Room
 * for any one unary request body. */
#define PROC_INPUT_MAX (16u << 20)
/* After the leader exited, its output pipes are read for at most this long
 * (a background child may hold them open forever); output held back for a
 * paced reader extends it by the table's stall time at most. */
#define PROC_DRAIN_SECONDS 0.1
/* The largest SANDBOX_AGENT_RETAIN_BYTES accepted. */
#define PROC_RETAIN_MAX (1ull << 30)
/* The largest SANDBOX_AGENT_KEEP_FINISHED_BYTES accepted. */
#define PROC_KEEP_BYTES_MAX (1ull << 40)

enum proc_chan { PROC_STDOUT = 0, PROC_STDERR = 1, PROC_PTY = 2, PROC_CHANS = 3 };

struct proc;
struct proc_table;

struct proc_table_opts {
    size_t retain;              /* bytes kept per channel */
    size_t keep_finished;       /* finished processes kept, at most */
    size_t keep_bytes;          /* what they hold in all (rings, config), at most, but the newest; 0: no bound */
    double keep_sent;           /* a finished process goes this long after an end event went out for it; 0: at once */
    double grace;               /* a timeout's or shutdown's TERM is followed by KILL after this */
    double stall;               /* a paced subscriber reading nothing this long is left to skip; 0: never waited for */
    enum cgroup_want cgroups;   /* cgroups for the processes: CGROUP_WANT_OFF (0) none */
    char *const *base_env;      /* every child's environment before its own; NULL: the agent's */
    void (*on_end)(struct proc *p, void *ctx); /* after each end is final (may be NULL) */
    void *ctx;
};

/* The defaults (DEFAULT_RETAIN_BYTES, DEFAULT_KEEP_FINISHED,
 * DEFAULT_KEEP_FINISHED_BYTES, DEFAULT_KEEP_FINISHED_SECONDS,
 * DEFAULT_GRACE_SECONDS, DEFAULT_STALL_SECONDS, cgroups where they may be
 * made) with SANDBOX_AGENT_RETAIN_BYTES, SANDBOX_AGENT_KEEP_FINISHED_BYTES,
 * SANDBOX_AGENT_KEEP_FINISHED_SECONDS, SANDBOX_AGENT_STALL_SECONDS and
 * SANDBOX_AGENT_CGROUPS read from the environment. Returns 0, or -1 with a
 * message in err for a bad value. */
int proc_table_opts_env(struct proc_table_opts *o, char *err);

struct proc_table *proc_table_new(struct ev_loop *loop, const struct proc_table_opts *o, char *err);
/* Frees every record, closing what is open; running children are left to
 * run (call proc_table_shutdown first and wait for their ends), except in
 * cgroups: what is left in one is killed, so that every cgroup is removed
 * (waiting outside the loop, PROC_GROUP_FREE_WAIT seconds at most). */
void proc_table_free(struct proc_table *t);

struct proc_start {
    char *const *argv;          /* argv[0]: the command, searched in PATH; NULL-terminated */
    char *const *defaults;      /* "NAME=VALUE" after the login variables (POST /init's); NULL-terminated
                                 * or NULL; used for the exec only, not kept in the record */
    char *const *envs;          /* "NAME=VALUE" set on top (later wins); NULL-terminated or NULL; kept */
    const char *cwd;            /* as the request asked it, for List only; NULL: none */
    const char *dir;            /* where it runs: a path the caller resolved (an absolute one,
                                 * README "Paths"), which must be a directory; NULL: the agent's own */
    const char *tag;            /* NULL: none; unique among running processes */
    const struct user_info *user; /* NULL: as the agent, without login variables */
    int stdin_pipe;             /* 1: a pipe fed by proc_send_input; 0: /dev/null (ignored with a pty) */
    int pty;                    /* 1: on a new pty of cols x rows */
    unsigned short cols, rows;
    double timeout;             /* > 0: seconds until the group is stopped */
};

/* Start a process. A command that cannot be executed still gets its record
 * (and pid), and ends with 127 or 126. Returns the record, or NULL with a
 * message in err and errno set. */
struct proc *proc_start(struct proc_table *t, const struct proc_start *s, char *err);

/* The environment a Start as u (NULL: as the agent) in directory cwd (NULL:
 * none known) with defaults and envs gets: a login's PATH unless the base
 * has one, the base (proc_table_opts.base_env), HOME, USER, LOGNAME, SHELL,
 * PWD, then defaults, then envs; the last of a name wins. A malloc'd array
 * of malloc'd strings (free with proc_launch_env_free), or NULL when out of
 * memory. */
char **proc_launch_env(const struct proc_table *t, const struct user_info *u, const char *cwd,
                char *const *defaults, char *const *envs);
void proc_launch_env_free(char **env);

/* What execve takes (spawn_arg_max, each string at SPAWN_ARG_COST) that is
 * left for a Start's defaults once room is kept for its own argv and envs
 * (a quarter of the kernel's bound) and for what every child of t gets
 * whatever it asks (the base environment, a login's PATH, HOME, USER,
 * LOGNAME, SHELL and PWD at their longest). Defaults within it leave
 * every Start whose own argv and envs fit in that quarter able to exec. */
size_t proc_launch_env_room(const struct proc_table *t);
/* The room kept for a Start's own argv and envs: a quarter of the bound. */
#define PROC_START_ROOM(arg_max) ((arg_max) / 4)

/* Lookups prefer the running process, else the most recently started. */
struct proc *proc_by_pid(struct proc_table *t, pid_t pid);
struct proc *proc_by_tag(struct proc_table *t, const char *tag);
/* Every record in start order (List). */
struct proc *proc_first(struct proc_table *t);
struct proc *proc_next(struct proc *p);
size_t proc_table_running(const struct proc_table *t);
/* The processes' cgroups (kind CGROUP_NONE: none): what POST /freeze's
 * legacy sweep freezes. */
const struct cgroup_base *proc_table_cgroups(const struct proc_table *t);

pid_t proc_pid(const struct proc *p);
const char *proc_tag(const struct proc *p);          /* NULL: none */
char *const *proc_argv(const struct proc *p);
char *const *proc_envs(const struct proc *p);        /* its own, as asked ("NAME=VALUE"), not its defaults; never NULL */
const char *proc_cwd(const struct proc *p);          /* as asked; NULL when none was */
int proc_has_pty(const struct proc *p);
int proc_running(const struct proc *p);              /* its end is not final yet */
/* The end, once final; NULL before. */
const struct proc_end *proc_end(const struct proc *p);

/* Output: the channels are PROC_STDOUT and PROC_STDERR, or PROC_PTY alone
 * with a pty. As ring_read: up to max bytes from *offset, 0 at the live end,
 * *skipped (may be NULL) the bytes jumped over when *offset was older than
 * the oldest kept. */
size_t proc_read(const struct proc *p, enum proc_chan ch, uint64_t *offset, char *dst, size_t max,
                 uint64_t *skipped);
/* proc_read in place (ring_peek): the bytes, or NULL with *n > 0 when they
 * must be copied with proc_read (*offset not advanced then). Valid until the
 * loop runs again. */
const char *proc_peek(const struct proc *p, enum proc_chan ch, uint64_t *offset, size_t max, size_t *n,
                      uint64_t *skipped);
/* The absolute offset just past the newest byte of ch. */
uint64_t proc_read_end(const struct proc *p, enum proc_chan ch);
int proc_has_chan(const struct proc *p, enum proc_chan ch);

/* Queue input for stdin (to_pty 0) or the pty (to_pty 1); written as the
 * child takes it, never blocking. Returns 0, or -1 (err, errno). */
int proc_send_input(struct proc *p, int to_pty, const void *data, size_t n, char *err);
/* EOF to the child's stdin once the queued input is written. */
int proc_close_stdin(struct proc *p, char *err);
/* sig to the process group, then to what else it started (its cgroup's
 * other members, or its leader's other descendants). */
int proc_signal(struct proc *p, int sig, char *err);
/* Its timeout ran out now (whatever proc_start's timeout said): SIGTERM
 * (and SIGCONT) to all it started, SIGKILL after the table's grace; once
 * (the timeout's own expiry, or a second call, does nothing more). Nothing
 * once the leader has exited (its background children run on). */
void proc_stop(struct proc *p);
/* Its cgroup's directory while it has one, else NULL. */
const char *proc_cgroup(const struct proc *p);
/* New pty size: TIOCSWINSZ and SIGWINCH to the group. */
int proc_resize(struct proc *p, unsigned short cols, unsigned short rows, char *err);

struct proc_sub;
/* Called when p has new output or its end became final. It may call
 * proc_unsubscribe on its own sub, nothing else of the table. */
typedef void (*proc_ready_fn)(struct proc_sub *s, void *ctx);
struct proc_sub {
    struct proc_sub *prev, *next;
    struct proc *p;
    proc_ready_fn fn;
    void *ctx;
    /* Pacing (proc_pace_sub); the table's own, zero from proc_subscribe. */
    const uint64_t *pos;        /* its read offsets, one per channel; NULL: not paced */
    ev_tstamp moved;            /* when it last read */
    int stalled;                /* read nothing for the stall time: left to skip */
};
/* Register s (the caller's memory) on p. A record is never dropped while it
 * has subscribers (nor counted out by the caps: it goes once they leave). */
void proc_subscribe(struct proc *p, struct proc_sub *s, proc_ready_fn fn, void *ctx);
/* Ask that p's output wait for s (see the top): pos[0..PROC_CHANS) are s's
 * read offsets, the caller's memory for as long as s is subscribed. */
void proc_pace_sub(struct proc_sub *s, const uint64_t *pos);
/* s read (its offsets moved): output held back for it may flow again. */
void proc_pace_moved(struct proc_sub *s);
/* Unregister; the record may be dropped right away (finished, over the
 * cap): do not use s->p after this. Never signals the process. */
void proc_unsubscribe(struct proc_sub *s);

/* An end event of a finished record went out: it is dropped keep_sent
 * seconds from now (counted again from each later call; 0: now), or once
 * its last subscriber leaves after that (proc_unsubscribe), unless the
 * caps drop it first. No-op for a running one. May be called from a
 * subscriber's callback while the end is being told. */
void proc_end_sent(struct proc *p);

/* Stop every running group: TERM now, KILL after grace; refuse new starts.
 * Each end is reported as usual; proc_table_running() reaches 0. */
void proc_table_shutdown(struct proc_table *t, double grace);

#endif
