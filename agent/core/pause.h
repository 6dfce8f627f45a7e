/*
 * pause.h - the time the sandbox ran (README "Pauses and the agent's
 * clocks"): stops of the whole agent seen from inside, and the clock every
 * deadline of the API counts on.
 *
 * A sandbox paused as a VM sees nothing: CLOCK_MONOTONIC does not advance
 * while the VM is paused. A sandbox stopped from outside (SIGSTOP of every
 * process, a frozen cgroup) does see the stop: CLOCK_MONOTONIC, libev's
 * clock, runs on, and on the resume every ev_timer whose time passed
 * would fire at once. So the loop watches for a gap: a heartbeat timer
 * (PAUSE_BEAT seconds) bounds every wait of the loop, and a wait that took
 * more than PAUSE_BEAT + PAUSE_SLACK seconds (or a turn of callbacks that
 * took more than PAUSE_SLACK) is a stop. Then every ev_timer of the loop is
 * moved later by the gap (libev's ev_resume, called before the timers are
 * looked at), and pause_now() leaves it out. A timer is never early
 * because of a stop; it may be late by at most the wait the stop
 * interrupted (PAUSE_BEAT). Stops shorter than PAUSE_BEAT + PAUSE_SLACK are
 * not told from a loaded machine and count as run time.
 *
 * pause_now() is CLOCK_MONOTONIC less the stops seen: what a deadline kept
 * as a time stamp (a connection's last progress, a stream's last read)
 * compares against, rather than ev_now(), which follows CLOCK_REALTIME and
 * so jumps with a stop and with a clock set by POST /init.
 * The gap arithmetic is pure (pause_gap), unit-tested in
 * tests/unit/test_pause.c.
 */
#ifndef SA_CORE_PAUSE_H
#define SA_CORE_PAUSE_H

#include <ev.h>

/* The heartbeat: the longest the loop waits without looking at the clock. */
#define PAUSE_BEAT 1.0
/* What a wait (or a turn of callbacks) may take past its bound before it
 * counts as a stop. */
#define PAUSE_SLACK 1.0

/* The stop (seconds) that a stretch of `took` seconds, expected to take at
 * most `bound`, holds: took itself when took > bound + PAUSE_SLACK (the
 * timers were due no later than bound; all of took is moved, so none is
 * early), else 0. */
double pause_gap(double took, double bound);

/* Watch loop for stops (a heartbeat, a prepare watcher and the loop's
 * release/acquire callbacks, none of which keeps the loop alive). Once per
 * loop; pause_stop undoes it. */
void pause_start(struct ev_loop *loop);
void pause_stop(struct ev_loop *loop);

/* CLOCK_MONOTONIC less every stop seen, in seconds. */
double pause_now(void);
/* The stops seen since pause_start: how many, and their seconds in all. */
unsigned pause_count(void);
double pause_total(void);

#endif
