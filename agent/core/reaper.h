/*
 * reaper.h - the one reaper. The only waitpid() of the agent is libev's
 * SIGCHLD handler (waitpid(-1), all children, orphans included): it hands
 * each status to the watcher registered for that pid here, so no two code
 * paths can race for an exit status. Nothing else in the agent may call
 * wait*().
 */
#ifndef SA_CORE_REAPER_H
#define SA_CORE_REAPER_H

#include <ev.h>
#include <sys/types.h>

typedef void (*reaper_fn)(struct ev_loop *loop, pid_t pid, int status, void *ctx);

struct reaper_watch {
    ev_child w;
    reaper_fn fn;
    void *ctx;
};

/* Hand the exit status of pid to fn, once. Start it before the loop runs
 * again after the fork, so no status is missed. */
void reaper_watch(struct ev_loop *loop, struct reaper_watch *rw, pid_t pid, reaper_fn fn, void *ctx);
/* The same, and also hand fn each stop and continue of pid (WIFSTOPPED,
 * WIFCONTINUED statuses; job control), until its exit. */
void reaper_watch_traced(struct ev_loop *loop, struct reaper_watch *rw, pid_t pid, reaper_fn fn, void *ctx);
void reaper_unwatch(struct ev_loop *loop, struct reaper_watch *rw);

/* Log (at debug) every reaped process without its own watcher: orphans. */
void reaper_init(struct ev_loop *loop);

/* The first step of every mode that starts children: mark every fd the
 * agent inherited close-on-exec (nothing it was handed leaks into the
 * workload), make the one event loop and start the one reaper on it.
 * Returns the loop, or NULL with a message in err (ERR_LEN bytes). */
struct ev_loop *reaper_loop(char *err);

#endif
