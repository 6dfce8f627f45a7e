/*
 * log.c - stderr diagnostics. Each message is formatted into one buffer and
 * written with a single write(2), so lines from the agent and from the
 * workload (which shares stderr) never interleave mid-line, and never waits
 * long for a stderr nobody reads.
 */
#include "agent/core/log.h"
#include "agent/core/protocol.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long one diagnostic may wait for room on stderr. */
#define LOG_WAIT_MS 500

static enum log_level threshold = LOG_WARN;
static int held;
static unsigned dropped;

unsigned log_hold(int on)
{
    unsigned n = dropped;
    held = on;
    dropped = 0;
    return n;
}

int log_init(const char **err)
{
    const char *v = getenv(ENV_LOG);
    if (!v || !*v || !strcmp(v, "warn")) threshold = LOG_WARN;
    else if (!strcmp(v, "info")) threshold = LOG_INFO;
    else if (!strcmp(v, "debug")) threshold = LOG_DEBUG;
    else {
        *err = ENV_LOG " must be one of debug, info, warn";
        return -1;
    }
    return 0;
}

int log_enabled(enum log_level level) { return level >= threshold; }

void log_msg(enum log_level level, const char *fmt, ...)
{
    /* Bounded: a diagnostic longer than this is cut, never split into two lines. */
    char line[1024];
    size_t n, prefix = sizeof(SA_NAME ": ") - 1;
    int saved = errno;
    va_list ap;

    if (level < threshold) return;
    if (held) {
        dropped++;
        return;
    }
    memcpy(line, SA_NAME ": ", prefix);
    va_start(ap, fmt);
    int w = vsnprintf(line + prefix, sizeof line - prefix - 1, fmt, ap);
    va_end(ap);
    n = prefix + (w < 0 ? 0 : (size_t)w);
    if (n > sizeof line - 2) n = sizeof line - 2;
    /* A message must stay one line even when it quotes untrusted text. */
    for (size_t i = prefix; i < n; i++)
        if (line[i] == '\n' || line[i] == '\r') line[i] = ' ';
    line[n++] = '\n';
    /* A stalled stderr must not hold the agent: a line that finds no room
     * within LOG_WAIT_MS is dropped. It is shorter than PIPE_BUF, so a pipe
     * with room takes it whole. */
    struct pollfd p = {STDERR_FILENO, POLLOUT, 0};
    int ready;
    do ready = poll(&p, 1, LOG_WAIT_MS);
    while (ready < 0 && errno == EINTR);
    if (ready == 0) {
        errno = saved;
        return;
    }
    for (size_t off = 0; off < n;) {
        ssize_t r = write(STDERR_FILENO, line + off, n - off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        off += (size_t)r;
    }
    errno = saved;
}
