/*
 * proc_priv.h - inside the process table (agent/proc only): the record and
 * the table, and how the parts meet: proc.c (the table: start, lookups,
 * keeping and dropping records, signals, shutdown), launch.c (making the
 * child: environment, working directory, user, pipes or pty, cgroup,
 * spawn), io.c (the child's fds: output into the rings, the input queue,
 * the end), pace.c (holding the output back for a paced subscriber) and
 * group.c with tree.c (what the process started, signalled and stopped
 * as one: group.h).
 */
#ifndef SA_PROC_PROC_PRIV_H
#define SA_PROC_PROC_PRIV_H

#include "agent/core/buf.h"
#include "agent/core/cgroup.h"
#include "agent/core/hash.h"
#include "agent/core/spawn.h"
#include "agent/proc/group.h"
#include "agent/proc/proc.h"
#include "agent/core/ring.h"

struct proc_chan_io {
    ev_io w;
    int fd;             /* our end; -1 once closed (or never opened) */
    int used;           /* the process has this channel */
    int held;           /* not read for now: a paced subscriber is a ring behind (pace.c) */
    int grown;          /* its pipe was made bigger (or that was tried) */
    ev_tstamp held_since;
    struct ring ring;
    struct proc *p;
};

struct proc {
    struct hnode by_pid, by_tag;
    int pid_indexed;    /* in t->pids (a newer record with the same pid takes it over) */
    struct proc *prev, *next;   /* every record, in start order */
    struct proc *fprev, *fnext; /* finished records, oldest first */
    struct proc_table *t;

    pid_t pid;
    char *tag;
    char **argv, **envs, *cwd;  /* as asked, for List */
    int pty;

    struct proc_chan_io ch[PROC_CHANS];
    int in_fd;          /* stdin pipe or a dup of the pty master; -1: none or closed */
    int in_close;       /* close in_fd once the queue is written */
    ev_io in_w;
    struct buf inq;     /* pending input, at most PROC_INPUT_MAX */
    size_t inq_off;     /* bytes of inq already written */

    struct reaper_watch rw;
    struct spawn_report *report; /* its child's, until complete (core/spawn.h) */
    ev_io report_w;
    struct proc_group *g;   /* what it started: signals and stops go through it */
    ev_timer deadline;  /* the request's timeout */
    int timed_out;      /* its timeout ran out (proc_stop): stopped once */
    ev_timer drain;     /* the output's last moments after the leader exited */
    ev_timer pace;      /* while a channel is held: who stalled (pace.c) */
    int exec_errno;     /* from its report: the step that failed, 0 when it exec'd */
    int cwd_failed;     /* that step was the chdir into its directory */
    int leader_exited, status;
    ev_tstamp exited_at;  /* when the leader's exit was seen */
    int ended;
    int kept;           /* in the finished list */
    size_t bytes;       /* what it holds once finished (rings, config): counted in t->fbytes */
    ev_timer keep;      /* from its last end event sent: keep_sent, then it may go */
    int forget;         /* its time is over: drop it once no subscriber is left */
    uint64_t seq;       /* start order */
    struct proc_end end;
    struct proc_sub *subs;
};

struct proc_table {
    struct ev_loop *loop;
    struct proc_table_opts o;
    struct htab pids, tags;
    struct proc *first, *last;
    struct proc *ffirst, *flast;
    size_t nfinished, nrunning;
    size_t fbytes;      /* what the finished records hold (their ->bytes) */
    uint64_t seq;       /* records started */
    int shutting;
    struct cgroup_base cg; /* the processes' cgroups (kind CGROUP_NONE: none) */
    unsigned cg_seq;    /* cgroups made */
    int cg_lost;        /* a child could not join its cgroup: no more are made */
    struct proc_group *groups; /* every group, its record's or left behind (group.h) */
};

/* launch.c: fill p's pid, exec_errno, channel fds and in_fd from s.
 * Returns 0, or -1 with err and errno (nothing left open). */
int proc_launch(struct proc *p, const struct proc_start *s, char *err);

/* pace.c: pacing the output to paced subscribers (proc.h). */
void proc_pace_init(struct proc *p);
/* Bytes of channel ch that may be read now (SIZE_MAX: no limit). */
size_t proc_pace_room(const struct proc *p, int ch);
/* Stop reading c until there is room again. */
void proc_pace_hold(struct proc *p, struct proc_chan_io *c);
/* Something changed (a read, a subscriber gone, a shutdown): resume what may
 * flow; stop the stall timer when nothing is held. */
void proc_pace_check(struct proc *p);
/* Nothing is held any more (the end): stop the timer, clear every hold. */
void proc_pace_release(struct proc *p);

/* io.c */
/* Watch the exit, the fds and the timeout (> 0: seconds), right after the spawn. */
void proc_io_start(struct proc *p, double timeout);
void proc_io_release(struct proc *p);          /* stop every watcher, close every fd, free the rings */
void proc_io_notify(struct proc *p);           /* tell the subscribers something is ready */
int proc_io_input(struct proc *p, const void *data, size_t n, char *err);
int proc_io_close_input(struct proc *p);

/* proc.c: p's end became final (after its subscribers were told). */
void proc_finished(struct proc *p);

#endif
