/*
 * nonce.c - protecting SANDBOX_JOB_NONCE and SANDBOX_AGENT_TOKEN (see nonce.h).
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

/* Every variable kept from the workload; the first call takes them all. */
static const char *const secret_names[] = {ENV_NONCE, ENV_TOKEN};
#define NSECRETS (sizeof secret_names / sizeof secret_names[0])

/* The values taken by the first call; later calls get a copy. */
static struct nonce taken[NSECRETS];
static int taken_done;

static int take_all(const char **err);

int nonce_take_secret(const char *name, struct nonce *n, const char **err)
{
    if (!taken_done && take_all(err) < 0) return -1;
    for (size_t i = 0; i < NSECRETS; i++) {
        if (strcmp(secret_names[i], name) != 0) continue;
        n->value = malloc(taken[i].len + 1);
        if (!n->value) {
            *err = "out of memory";
            return -1;
        }
        memcpy(n->value, taken[i].value, taken[i].len + 1);
        n->len = taken[i].len;
        return 0;
    }
    *err = "not a protected variable";
    return -1;
}

int nonce_take(struct nonce *n, const char **err) { return nonce_take_secret(ENV_NONCE, n, err); }

void nonce_overwrite(void *p, size_t n)
{
    /* explicit_bzero is not in every libc; a volatile write loop is not
     * optimised away either. */
    volatile char *v = p;
    for (size_t i = 0; i < n; i++) v[i] = '\0';
}

void nonce_wipe(struct nonce *n)
{
    if (n->value) nonce_overwrite(n->value, n->len);
    free(n->value);
    n->value = NULL;
    n->len = 0;
}

void nonce_forget_secret(const char *name)
{
    for (size_t i = 0; i < NSECRETS; i++)
        if (!strcmp(secret_names[i], name) && taken[i].value) {
            nonce_overwrite(taken[i].value, taken[i].len);
            taken[i].len = 0;
        }
}

void nonce_forget(void)
{
    for (size_t i = 0; i < NSECRETS; i++) {
        if (taken[i].value) nonce_overwrite(taken[i].value, taken[i].len);
        taken[i].len = 0;
    }
}

/* Copy NAME's first value into n and overwrite every NAME=... entry in place
 * (a duplicated entry must be wiped too; the first one wins, as getenv would
 * return it). */
static int take_one(const char *name, struct nonce *n, const char **err)
{
    const size_t nl = strlen(name);
    n->value = NULL;
    n->len = 0;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, name, nl) != 0 || (*e)[nl] != '=') continue;
        if (!n->value) {
            n->value = strdup(*e + nl + 1);
            if (!n->value) {
                *err = "out of memory";
                return -1;
            }
            n->len = strlen(n->value);
        }
        nonce_overwrite(*e, strlen(*e));
    }
    if (!n->value && !(n->value = strdup(""))) {
        *err = "out of memory";
        return -1;
    }
    return 0;
}

static int take_all(const char **err)
{
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        *err = "cannot make the process non-dumpable (prctl PR_SET_DUMPABLE)";
        return -1;
    }
    for (size_t i = 0; i < NSECRETS; i++)
        if (take_one(secret_names[i], &taken[i], err) < 0) return -1;
    /* The wiped strings are now "" and no longer match; drop the slots so no
     * child sees an empty name. */
    char **w = environ;
    for (char **r = environ; r && *r; r++)
        if (**r) *w++ = *r;
    if (w) *w = NULL;
    taken_done = 1;
    return 0;
}
