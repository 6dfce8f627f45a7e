/*
 * descendants.h - the agent's descendants as /proc lists them, and killing
 * the whole set (what a job left behind, before the report's helpers run).
 *
 * Owns reading /proc/PID/task/TID/children files (whole: thousands of
 * children do not fit any fixed buffer, and a pid cut at a buffer's end
 * would name another process) and the bounded kill loop. The reaping itself
 * stays the reaper's (spawn.h): the loop only runs the event loop while the
 * killed processes are reaped.
 */
#ifndef SA_CORE_DESCENDANTS_H
#define SA_CORE_DESCENDANTS_H

#include <ev.h>
#include <stddef.h>
#include <sys/types.h>

/* A growable list of pids; zero-initialise, free with descendants_list_free. */
struct pid_list {
    pid_t *pid;
    size_t n, cap;
};
void descendants_list_free(struct pid_list *l);

/* Append the pids of a children file's text ("PID PID ... "): only numbers
 * followed by a separator count, so text cut short never yields a partial
 * pid. Returns the number appended, or -1 when out of memory. */
int descendants_parse(const char *text, size_t len, struct pid_list *l);

/* Read one children file whole (at most 4 MiB, half a million children;
 * beyond that what was read is parsed) and append its pids. Returns the
 * number appended, or -1 when the file cannot be opened (gone, no /proc)
 * or memory is short. */
int descendants_read(const char *path, struct pid_list *l);
/* The same from an open fd (read to its end, not closed): -1 also when the
 * first read fails (errno set). */
int descendants_read_fd(int fd, struct pid_list *l);

/* Append the children of every thread of pid (0: ourselves). Returns 0, or
 * -1 when its task directory cannot be read (it is gone). */
int descendants_children(pid_t pid, struct pid_list *l);

/* The state letter ('R', 'S', 'Z', ...) and the start time (clock ticks
 * since boot: with the pid, it names one process for good) of pid (0:
 * ourselves), from /proc/PID/stat. Returns 0, or -1 when pid is gone. */
int descendants_stat(pid_t pid, char *state, unsigned long long *start);

/* SIGKILL every descendant of ours until none is left, reaping as they die
 * (the loop runs meanwhile), for at most `seconds`. As PID 1 that is every
 * other process of the PID namespace (kill(-1)); as a subreaper, the tree
 * under us, every level at once, as /proc shows it. Returns 0 when none is
 * left, or -1 (logged) when some survived the deadline or /proc could not be
 * read. */
int descendants_kill(struct ev_loop *loop, double seconds);

#endif
