/*
 * rewrite.c - parsing and applying SANDBOX_AGENT_SIGNAL_REWRITE (see rewrite.h).
 */
#include "agent/core/rewrite.h"
#include "agent/core/err.h"

#include <signal.h>
#include <string.h>

static const struct {
    const char *name;
    int sig;
} names[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},     {"QUIT", SIGQUIT},   {"ILL", SIGILL},   {"TRAP", SIGTRAP},
    {"ABRT", SIGABRT}, {"IOT", SIGIOT},     {"BUS", SIGBUS},     {"FPE", SIGFPE},   {"KILL", SIGKILL},
    {"USR1", SIGUSR1}, {"SEGV", SIGSEGV},   {"USR2", SIGUSR2},   {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},
    {"TERM", SIGTERM}, {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD}, {"CONT", SIGCONT}, {"STOP", SIGSTOP},
    {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN},   {"TTOU", SIGTTOU},   {"URG", SIGURG},   {"XCPU", SIGXCPU},
    {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
    {"POLL", SIGPOLL}, {"PWR", SIGPWR},     {"SYS", SIGSYS},
};

void rewrite_init(struct rewrite *r)
{
    for (int i = 0; i < REWRITE_NSIG; i++) {
        r->to[i] = (unsigned char)i;
        r->set[i] = 0;
    }
}

void rewrite_default(struct rewrite *r, int from, int to)
{
    if (from > 0 && from < REWRITE_NSIG && to >= 0 && to < REWRITE_NSIG && !r->set[from])
        r->to[from] = (unsigned char)to;
}

int rewrite_apply(const struct rewrite *r, int sig)
{
    return sig > 0 && sig < REWRITE_NSIG ? r->to[sig] : sig;
}

/* Digits only, 0..max; -1 otherwise. */
static int small_number(const char *s, unsigned long n, int max)
{
    int v = 0;
    if (n == 0 || n > 3) return -1;
    for (unsigned long i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v <= max ? v : -1;
}

static int realtime(const char *s, unsigned long n)
{
    int base, dir = 0;
    if (n >= 5 && !memcmp(s, "RTMIN", 5)) base = SIGRTMIN, dir = 1;
    else if (n >= 5 && !memcmp(s, "RTMAX", 5)) base = SIGRTMAX, dir = -1;
    else return -1;
    if (n == 5) return base;
    if (s[5] != (dir > 0 ? '+' : '-')) return -1;
    int off = small_number(s + 6, n - 6, 64);
    int sig = off < 0 ? -1 : base + dir * off;
    return sig >= SIGRTMIN && sig <= SIGRTMAX ? sig : -1;
}

int rewrite_signum(const char *s, unsigned long n)
{
    if (n && s[0] >= '0' && s[0] <= '9') return small_number(s, n, 64);
    if (n > 3 && !memcmp(s, "SIG", 3)) s += 3, n -= 3;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) == n && !memcmp(names[i].name, s, n)) return names[i].sig;
    return realtime(s, n);
}

/* One "A:B" pair of length n. */
static int parse_pair(struct rewrite *r, const char *p, unsigned long n, char *err)
{
    const char *colon = memchr(p, ':', n);
    if (!colon) {
        err_set(err, "'%.*s' is not FROM:TO", (int)(n > 40 ? 40 : n), p);
        return -1;
    }
    unsigned long ln = (unsigned long)(colon - p), rn = n - ln - 1;
    int from = rewrite_signum(p, ln), to = rewrite_signum(colon + 1, rn);
    if (from <= 0 || to < 0) {
        err_set(err, "'%.*s' names no signal", (int)(n > 40 ? 40 : n), p);
        return -1;
    }
    if (from == SIGKILL || from == SIGSTOP || from == SIGCHLD || to == SIGCHLD) {
        err_set(err, "'%.*s': %s cannot be rewritten", (int)(n > 40 ? 40 : n), p,
                from == SIGCHLD || to == SIGCHLD ? "SIGCHLD" : "an uncatchable signal");
        return -1;
    }
    r->to[from] = (unsigned char)to;
    r->set[from] = 1;
    return 0;
}

int rewrite_parse(struct rewrite *r, const char *text, char *err)
{
    rewrite_init(r);
    size_t len = strlen(text);
    if (len > REWRITE_MAX_TEXT) {
        err_set(err, "%zu bytes, over the %d byte limit", len, REWRITE_MAX_TEXT);
        return -1;
    }
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        while (p < stop && *p == ' ') p++;
        const char *e = stop;
        while (e > p && e[-1] == ' ') e--;
        if (e > p && parse_pair(r, p, (unsigned long)(e - p), err) < 0) return -1;
        p = stop + (comma ? 1 : 0);
    }
    return 0;
}
