/*
 * fwd.c - two minimal signal forwarders, for bench_signal.py only: the floor
 * of each way a supervisor can wait for a signal, so the table shows how much
 * of the agent's latency is its mechanism and how much is its own code.
 *
 *   fwd wait  CMD...   sigtimedwait(2), as tini waits (no event loop)
 *   fwd loop  CMD...   one signalfd read from a libev loop, as the agent waits
 *
 * Both start CMD in a process group of its own, forward every signal they
 * receive to that group, reap, and exit with CMD's status. Nothing else: no
 * relay, no report, no grace period. Not part of the agent.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ev.h>

static pid_t child;
static sigset_t caught;

static void reap(void)
{
    int st;
    pid_t p;
    while ((p = waitpid(-1, &st, WNOHANG)) > 0)
        if (p == child) _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

static void forward(int sig)
{
    if (sig == SIGCHLD) reap();
    else kill(-child, sig);
}

static void on_signalfd(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop, (void)revents;
    struct signalfd_siginfo si[32];
    ssize_t n = read(w->fd, si, sizeof si);
    for (ssize_t i = 0; i < n / (ssize_t)sizeof si[0]; i++) forward((int)si[i].ssi_signo);
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "wait") && strcmp(argv[1], "loop"))) {
        fprintf(stderr, "usage: fwd wait|loop CMD...\n");
        return 2;
    }
    sigfillset(&caught);
    sigdelset(&caught, SIGSEGV), sigdelset(&caught, SIGBUS), sigdelset(&caught, SIGFPE), sigdelset(&caught, SIGILL);
    sigprocmask(SIG_BLOCK, &caught, NULL);
    child = fork();
    if (child < 0) return perror("fork"), 1;
    if (child == 0) {
        sigset_t none;
        sigemptyset(&none);
        setpgid(0, 0);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execvp(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    setpgid(child, child);
    if (!strcmp(argv[1], "wait")) {
        for (;;) {
            struct timespec ts = {1, 0};
            int sig = sigtimedwait(&caught, NULL, &ts);
            if (sig > 0) forward(sig);
            reap();
        }
    }
    int fd = signalfd(-1, &caught, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0) return perror("signalfd"), 1;
    struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
    ev_io w;
    ev_io_init(&w, on_signalfd, fd, EV_READ);
    ev_io_start(loop, &w);
    ev_run(loop, 0);
    return 1;
}
