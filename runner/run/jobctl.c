/*
 * jobctl.c - the job, the terminal and stopping (see jobctl.h).
 *
 * Every terminal call here may come from a background process group: the
 * job has the foreground, and may have set `stty tostop`. The agent blocks
 * SIGTTOU and SIGTTIN (it reads every caught signal from a signalfd), which
 * the kernel treats as ignored for job control: tcsetpgrp, tcflow and
 * writes then simply work, instead of raising SIGTTOU forever or failing
 * with EIO in an orphaned group (PID 1).
 */
#include "runner/run/jobctl.h"
#include "agent/core/log.h"
#include "agent/core/pid1.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

int jobctl_init(struct jobctl *jc)
{
    jc->job = 0;
    jc->stopped = 0;
    jc->tty = (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp()) ? STDIN_FILENO : -1;
    return jc->tty;
}

int jobctl_no_terminal(void)
{
    /* /dev/tty is the controlling terminal, whatever fds 0-2 are; ENXIO:
     * there is none. Without /dev/tty (a bare image), the 7th field of
     * /proc/self/stat, tty_nr, says; without either, assume a terminal. */
    int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    if (errno == ENXIO) return 1;
    char buf[512];
    fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    /* "pid (comm) state ppid pgrp session tty_nr": comm may hold anything,
     * so count from its last ')'. */
    char *p = strrchr(buf, ')');
    if (!p || *++p != ' ' || !*++p) return 0; /* p: the state */
    p++;
    for (int field = 0; field < 4; field++) { /* ppid pgrp session tty_nr */
        char *end;
        if (*p++ != ' ') return 0;
        long v = strtol(p, &end, 10);
        if (end == p) return 0;
        if (field == 3) return v == 0;
        p = end;
    }
    return 0;
}

void jobctl_started(struct jobctl *jc, pid_t job) { jc->job = job; }

/* kill(getpid(), SIGSTOP) returns once the agent is continued; the SIGCONT
 * that did it is then read from the signalfd (jobctl_continued). */
static void stop_self(struct jobctl *jc, const char *why)
{
    log_debug("%s; stopping the agent too", why);
    jc->stopped = 1;
    kill(getpid(), SIGSTOP);
}

void jobctl_job_stopped(struct jobctl *jc)
{
    /* Stopped again before our own SIGCONT was read: that SIGCONT will
     * continue the job; stopping twice would lose the shell's `fg`. */
    if (jc->tty < 0 || jc->stopped || pid1_is_init()) return;
    stop_self(jc, "the job stopped");
}

void jobctl_signal_stop(struct jobctl *jc)
{
    if (pid1_is_init()) return;
    stop_self(jc, "a terminal stop signal came");
}

void jobctl_continued(struct jobctl *jc)
{
    if (!jc->stopped) return;
    jc->stopped = 0;
    /* `fg` gave our group the foreground: pass it on to the job before it
     * runs again. After `bg` the shell keeps it. */
    if (jc->tty >= 0 && jc->job > 0 && tcgetpgrp(jc->tty) == getpgrp() && tcsetpgrp(jc->tty, jc->job) < 0)
        log_debug("cannot give the terminal back to the job: %s", strerror(errno));
}

void jobctl_flow_on(void)
{
    for (int fd = STDOUT_FILENO; fd <= STDERR_FILENO; fd++)
        if (isatty(fd)) tcflow(fd, TCOON);
}

void jobctl_reclaim(struct jobctl *jc)
{
    /* Only from the job's group: after Ctrl-Z and `bg` the shell has it.
     * As PID 1 under unshare our group is not visible (0): nothing to set. */
    pid_t ours = getpgrp();
    if (jc->tty >= 0 && ours > 0 && jc->job > 0 && tcgetpgrp(jc->tty) == jc->job && tcsetpgrp(jc->tty, ours) < 0)
        log_debug("cannot take the terminal back: %s", strerror(errno));
    jobctl_flow_on();
}
