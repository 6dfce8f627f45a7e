/*
 * errpipe.c - a child's own stderr under `2>&1` (see errpipe.h).
 */
#include "agent/core/errpipe.h"
#include "agent/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

void errpipe_init(struct errpipe *e)
{
    memset(e, 0, sizeof *e);
    e->wfd = -1;
    e->relay.in_fd = e->relay.peek[0] = e->relay.peek[1] = -1;
}

void errpipe_open(struct errpipe *e, struct ev_loop *loop, struct outlet *out)
{
    int p[2];
    errpipe_init(e);
    if (!outlet_same_file(STDOUT_FILENO, STDERR_FILENO)) return;
    if (!out) {
        outlet_init(&e->own, STDERR_FILENO);
        out = &e->own;
    }
    if (pipe2(p, O_CLOEXEC) < 0) {
        log_warn("cannot create a stderr pipe for the child: %s; it shares stdout's", strerror(errno));
        return;
    }
    if (relay_start(&e->relay, loop, p[0], out, 1) < 0) {
        log_warn("cannot relay the child's stderr: out of memory; it shares stdout's");
        close(p[0]);
        close(p[1]);
        return;
    }
    e->active = 1;
    e->wfd = p[1];
    log_debug("stdout and stderr are one file: the child's stderr is relayed through a pipe");
}

int errpipe_child_fd(const struct errpipe *e) { return e->wfd; }

void errpipe_close_write(struct errpipe *e)
{
    if (e->wfd >= 0) close(e->wfd);
    e->wfd = -1;
}

void errpipe_close(struct errpipe *e)
{
    errpipe_close_write(e);
    if (e->active) relay_close(&e->relay);
    e->active = 0;
}
