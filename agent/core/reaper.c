/*
 * reaper.c - the one reaper (see reaper.h): libev's child watchers, one per
 * pid the agent waits for, and one for the orphans.
 */
#include "agent/core/reaper.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/log.h"

#include <sys/wait.h>

static void on_child(struct ev_loop *loop, ev_child *w, int revents)
{
    (void)revents;
    struct reaper_watch *rw = (struct reaper_watch *)w;
    /* One exit per watcher: stop before the callback may reuse it. A stop
     * or continue (traced watchers only) leaves it watching. */
    if (!WIFSTOPPED(w->rstatus) && !WIFCONTINUED(w->rstatus)) ev_child_stop(loop, w);
    rw->fn(loop, w->rpid, w->rstatus, rw->ctx);
}

static void watch(struct ev_loop *loop, struct reaper_watch *rw, pid_t pid, reaper_fn fn, void *ctx, int trace)
{
    rw->fn = fn;
    rw->ctx = ctx;
    ev_child_init(&rw->w, on_child, pid, trace);
    ev_child_start(loop, &rw->w);
}

void reaper_watch(struct ev_loop *loop, struct reaper_watch *rw, pid_t pid, reaper_fn fn, void *ctx)
{
    watch(loop, rw, pid, fn, ctx, 0);
}

void reaper_watch_traced(struct ev_loop *loop, struct reaper_watch *rw, pid_t pid, reaper_fn fn, void *ctx)
{
    watch(loop, rw, pid, fn, ctx, 1);
}

void reaper_unwatch(struct ev_loop *loop, struct reaper_watch *rw) { ev_child_stop(loop, &rw->w); }

static ev_child any_child;

static void on_any_child(struct ev_loop *loop, ev_child *w, int revents)
{
    (void)loop;
    (void)revents;
    log_debug("reaped pid %d (status 0x%x)", (int)w->rpid, (unsigned)w->rstatus);
}

struct ev_loop *reaper_loop(char *err)
{
    io_cloexec_inherited();
    struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
    if (!loop) {
        err_set(err, "cannot start the event loop");
        return NULL;
    }
    reaper_init(loop);
    return loop;
}

void reaper_init(struct ev_loop *loop)
{
    /* pid 0 matches every child: this watcher sees orphans that have no
     * watcher of their own. The reaping itself happens either way. */
    ev_child_init(&any_child, on_any_child, 0, 0);
    ev_child_start(loop, &any_child);
    /* It must not keep the loop running. */
    ev_unref(loop);
}
