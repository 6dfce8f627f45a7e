/*
 * nonce.c - protecting SANDBOX_JOB_NONCE (see nonce.h).
 *
 * The bash runner did `unset`, which only edits the shell's copy: the kernel
 * keeps serving the original bytes through /proc/PID/environ for the life of
 * the process. Here the bytes themselves are overwritten. PR_SET_DUMPABLE=0
 * then makes /proc/PID/mem, environ, fd/N and ptrace need CAP_SYS_PTRACE, so
 * the same uid and a root without that capability (Docker's default) get
 * EACCES/EPERM, and no core dump is written.
 */
#include "agent/core/nonce.h"
#include "agent/core/protocol.h"

#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

extern char **environ;

/* The value taken by the first call; later calls get a copy of it. */
static char *taken;
static size_t taken_len;
static int taken_done;

static int take(const char **err);

int nonce_take(struct nonce *n, const char **err)
{
    if (!taken_done && take(err) < 0) return -1;
    n->value = malloc(taken_len + 1);
    if (!n->value) {
        *err = "out of memory";
        return -1;
    }
    memcpy(n->value, taken, taken_len + 1);
    n->len = taken_len;
    return 0;
}

static void overwrite(char *p, size_t n)
{
    /* explicit_bzero is not in every libc; a volatile write loop is not
     * optimised away either. */
    volatile char *v = p;
    for (size_t i = 0; i < n; i++) v[i] = '\0';
}

void nonce_wipe(struct nonce *n)
{
    if (n->value) overwrite(n->value, n->len);
    free(n->value);
    n->value = NULL;
    n->len = 0;
}

void nonce_forget(void)
{
    if (taken) overwrite(taken, taken_len);
    taken_len = 0;
}

static int take(const char **err)
{
    static const char name[] = ENV_NONCE "=";
    const size_t nl = sizeof name - 1;
    struct nonce one = {NULL, 0};
    struct nonce *n = &one;

    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        *err = "cannot make the process non-dumpable (prctl PR_SET_DUMPABLE)";
        return -1;
    }
    n->value = NULL;
    n->len = 0;
    /* Walk environ by hand: a duplicated entry must be wiped too. The first
     * one wins, as getenv would return it. */
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, name, nl) != 0) continue;
        if (!n->value) {
            n->value = strdup(*e + nl);
            if (!n->value) {
                *err = "out of memory";
                return -1;
            }
            n->len = strlen(n->value);
        }
        overwrite(*e, strlen(*e));
    }
    /* The wiped strings are now "" and no longer match; drop the slots so no
     * child sees an empty name. */
    char **w = environ;
    for (char **r = environ; r && *r; r++)
        if (**r) *w++ = *r;
    if (w) *w = NULL;
    if (!n->value) {
        n->value = strdup("");
        if (!n->value) {
            *err = "out of memory";
            return -1;
        }
    }
    taken = n->value;
    taken_len = n->len;
    taken_done = 1;
    return 0;
}
