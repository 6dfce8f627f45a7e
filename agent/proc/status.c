/*
 * pstatus.c - the texts of a process's end (see pstatus.h).
 */
#include "agent/proc/status.h"
#include "agent/core/spawn.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

/* Go's syscall signal table for Linux, which envd's status text uses. */
static const struct {
    int sig;
    const char *name;
} names[] = {
    {SIGHUP, "hangup"},
    {SIGINT, "interrupt"},
    {SIGQUIT, "quit"},
    {SIGILL, "illegal instruction"},
    {SIGTRAP, "trace/breakpoint trap"},
    {SIGABRT, "aborted"},
    {SIGBUS, "bus error"},
    {SIGFPE, "floating point exception"},
    {SIGKILL, "killed"},
    {SIGUSR1, "user defined signal 1"},
    {SIGSEGV, "segmentation fault"},
    {SIGUSR2, "user defined signal 2"},
    {SIGPIPE, "broken pipe"},
    {SIGALRM, "alarm clock"},
    {SIGTERM, "terminated"},
#ifdef SIGSTKFLT
    {SIGSTKFLT, "stack fault"},
#endif
    {SIGCHLD, "child exited"},
    {SIGCONT, "continued"},
    {SIGSTOP, "stopped (signal)"},
    {SIGTSTP, "stopped"},
    {SIGTTIN, "stopped (tty input)"},
    {SIGTTOU, "stopped (tty output)"},
    {SIGURG, "urgent I/O condition"},
    {SIGXCPU, "CPU time limit exceeded"},
    {SIGXFSZ, "file size limit exceeded"},
    {SIGVTALRM, "virtual timer expired"},
    {SIGPROF, "profiling timer expired"},
    {SIGWINCH, "window changed"},
    {SIGIO, "I/O possible"},
#ifdef SIGPWR
    {SIGPWR, "power failure"},
#endif
    {SIGSYS, "bad system call"},
};

const char *proc_status_signal_name(int sig)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].sig == sig) return names[i].name;
    return NULL;
}

void proc_status_from_wait(int wstatus, struct proc_end *e)
{
    memset(e, 0, sizeof *e);
    if (WIFSIGNALED(wstatus)) {
        int sig = WTERMSIG(wstatus);
        const char *name = proc_status_signal_name(sig);
        const char *core = WCOREDUMP(wstatus) ? " (core dumped)" : "";
        e->exit_code = -1;
        if (name) snprintf(e->status, sizeof e->status, "signal: %s%s", name, core);
        else snprintf(e->status, sizeof e->status, "signal: signal %d%s", sig, core);
    } else {
        e->exited = 1;
        e->exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : spawn_exit_code(wstatus);
        snprintf(e->status, sizeof e->status, "exit status %d", e->exit_code);
    }
    if (e->exit_code != 0) snprintf(e->error, sizeof e->error, "%s", e->status);
}

void proc_status_oom(struct proc_end *e)
{
    e->oom_killed = 1;
    snprintf(e->error, sizeof e->error, "%s (out of memory)", e->status);
}

void proc_status_from_exec_error(const char *cmd, int exec_errno, struct proc_end *e)
{
    memset(e, 0, sizeof *e);
    e->exited = 1;
    e->exit_code = spawn_exec_exit_code(exec_errno);
    snprintf(e->status, sizeof e->status, "exit status %d", e->exit_code);
    /* The command may be long: its head is enough to know it. */
    if (cmd) snprintf(e->error, sizeof e->error, "cannot run '%.160s': %s", cmd, spawn_exec_reason(exec_errno));
    else snprintf(e->error, sizeof e->error, "cannot enter the working directory: %s", strerror(exec_errno));
}
