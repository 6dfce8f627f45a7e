/*
 * ppace.c - holding a process's output back for its paced subscribers (see
 * proc.h, and the README, "sandbox-agent serve": slow readers).
 *
 * A channel is not read past the point where a paced subscriber would fall a
 * whole ring behind: it is held (its watcher stopped), the pipe fills, and
 * the child blocks on its next write, as a child writing to a slow terminal
 * would. It flows again once every paced subscriber has room for a quarter
 * of the ring (bigger reads than a trickle), or once the ones in the way are
 * left to skip: a subscriber that read nothing for the table's stall time
 * since the hold or its last read (a client that stopped reading must not
 * stop the workload), or all of them when the table shuts down. A stalled
 * subscriber is waited for again from its next read. After the leader's
 * exit, held output waits for at most the stall time too (pio.c).
 *
 * A ring is as large as the memory budget lets it grow (ring_limit): while
 * it cannot, a paced subscriber has the room of the ring as it is, so the
 * child waits rather than a reader losing output; the hold tries to grow
 * it again at each check.
 */
#include "agent/proc/proc_priv.h"
#include "agent/core/log.h"
#include "agent/core/pause.h"

#include <stdint.h>

/* How often, while a channel is held, the stalled subscribers are looked
 * for: a tenth of the stall time, within these bounds. */
#define CHECK_MIN 0.05
#define CHECK_MAX 1.0

static int paces(const struct proc *p, const struct proc_sub *s)
{
    return s->pos && !s->stalled && p->t->o.stall > 0 && !p->t->shutting;
}

/* How far behind s is on ch. */
static uint64_t lag(const struct proc *p, const struct proc_sub *s, int ch)
{
    uint64_t end = p->ch[ch].ring.end;
    return s->pos[ch] >= end ? 0 : end - s->pos[ch];
}

size_t proc_pace_room(const struct proc *p, int ch)
{
    size_t room = SIZE_MAX, max = ring_limit(&p->ch[ch].ring);
    if (p->ch[ch].ring.max == 0) return room; /* nothing is kept: nothing to wait for */
    for (const struct proc_sub *s = p->subs; s; s = s->next) {
        if (!paces(p, s)) continue;
        uint64_t l = lag(p, s, ch);
        size_t r = l >= max ? 0 : max - (size_t)l;
        if (r < room) room = r;
    }
    return room;
}

static void on_check(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    struct proc *p = w->data;
    ev_tstamp now = pause_now();
    for (struct proc_sub *s = p->subs; s; s = s->next) {
        if (!paces(p, s)) continue;
        for (int ch = 0; ch < PROC_CHANS; ch++) {
            const struct proc_chan_io *c = &p->ch[ch];
            /* The stall time runs from the later of its last read and the
             * hold: a stream full through a quiet spell gets it whole. */
            ev_tstamp since = s->moved > c->held_since ? s->moved : c->held_since;
            if (!c->held || now - since < p->t->o.stall || lag(p, s, ch) * 4 <= ring_limit(&c->ring) * 3) continue;
            s->stalled = 1;
            log_warn("proc: process %d: a stream read nothing for %.3g s while its output waited; "
                     "the process goes on and the stream skips what it misses",
                     (int)p->pid, p->t->o.stall);
            break;
        }
    }
    proc_pace_check(p);
}

void proc_pace_init(struct proc *p)
{
    double every = p->t->o.stall / 10;
    ev_timer_init(&p->pace, on_check, 0., every < CHECK_MIN ? CHECK_MIN : every > CHECK_MAX ? CHECK_MAX : every);
    p->pace.data = p;
}

void proc_pace_hold(struct proc *p, struct proc_chan_io *c)
{
    if (c->held || c->fd < 0) return;
    c->held = 1;
    c->held_since = pause_now();
    ev_io_stop(p->t->loop, &c->w);
    if (!ev_is_active(&p->pace)) ev_timer_again(p->t->loop, &p->pace);
}

void proc_pace_check(struct proc *p)
{
    int held = 0;
    for (int ch = 0; ch < PROC_CHANS; ch++) {
        struct proc_chan_io *c = &p->ch[ch];
        if (!c->held) continue;
        /* A ring the memory budget kept from growing tries again once full. */
        if (c->ring.refused) ring_reserve(&c->ring, 1);
        size_t room = proc_pace_room(p, ch);
        if (c->fd >= 0 && (room == 0 || room < ring_limit(&c->ring) / 4)) {
            held = 1;
            continue;
        }
        c->held = 0;
        if (c->fd >= 0) ev_io_start(p->t->loop, &c->w);
    }
    if (!held) ev_timer_stop(p->t->loop, &p->pace);
}

void proc_pace_release(struct proc *p)
{
    ev_timer_stop(p->t->loop, &p->pace);
    for (int ch = 0; ch < PROC_CHANS; ch++) p->ch[ch].held = 0;
}

void proc_pace_sub(struct proc_sub *s, const uint64_t *pos)
{
    s->pos = pos;
    s->moved = pause_now();
    s->stalled = 0;
}

void proc_pace_moved(struct proc_sub *s)
{
    struct proc *p = s->p;
    if (!p || !s->pos) return;
    s->moved = pause_now();
    /* Reading again after a stall (it has just jumped over what it missed):
     * it is waited for again from here. */
    s->stalled = 0;
    proc_pace_check(p);
}
