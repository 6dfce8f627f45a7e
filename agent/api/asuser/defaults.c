/*
 * defaults.c - a request's defaults as POST /init set them (see
 * asuser/defaults.h).
 */
#include "agent/api/asuser/defaults.h"
#include "agent/api/asuser/asuser.h"
#include "agent/core/err.h"
#include "agent/core/spawn.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct asuser_defaults cur;
static char *const none[] = {NULL};
static size_t room = SIZE_MAX;

void asuser_defaults_room(size_t bytes) { room = bytes; }

static size_t count(char *const *v)
{
    size_t n = 0;
    while (v && v[n]) n++;
    return n;
}

/* 1 when "NAME=..." a and b name the same variable. */
static int same_name(const char *a, const char *b)
{
    size_t n = strcspn(a, "=");
    return strncmp(a, b, n) == 0 && b[n] == '=';
}

void asuser_defaults_drop(struct asuser_defaults *d)
{
    for (size_t i = 0; d->env && d->env[i]; i++) free(d->env[i]);
    free(d->env);
    free(d->workdir);
    free(d->user);
    memset(d, 0, sizeof *d);
}

static int no_memory(char *err)
{
    err_set(err, "out of memory");
    errno = ENOMEM;
    return -1;
}

/* next->env: the current variables not set again by add, then add; within
 * max and the room. */
static int merge_env(struct asuser_defaults *next, char *const *add, size_t n, size_t max, char *err)
{
    size_t have = count(cur.env), k = 0, bytes = 0;
    if (!(next->env = calloc(have + n + 1, sizeof *next->env))) return no_memory(err);
    for (size_t i = 0; i < have; i++) {
        int again = 0;
        for (size_t j = 0; j < n && !again; j++) again = same_name(cur.env[i], add[j]);
        if (!again && !(next->env[k++] = strdup(cur.env[i]))) return no_memory(err);
    }
    for (size_t j = 0; j < n; j++)
        if (!(next->env[k++] = strdup(add[j]))) return no_memory(err);
    for (size_t i = 0; i < k; i++) bytes += SPAWN_ARG_COST(strlen(next->env[i]));
    if (k > max) {
        err_set(err, "'envVars': more than %zu variables in all", max);
        errno = E2BIG;
        return -1;
    }
    if (bytes > room) {
        err_set(err, "'envVars': %zu bytes in all once merged, over the %zu a process has room for "
                "(of the kernel's %zu for arguments and environment)", bytes, room, spawn_arg_max());
        errno = E2BIG;
        return -1;
    }
    return 0;
}

static int dup_or_keep(char **dst, const char *v, const char *keep)
{
    const char *s = v ? v : keep;
    return !s || (*dst = strdup(s)) ? 0 : -1;
}

int asuser_defaults_merge(struct asuser_defaults *next, char *const *add, size_t n, size_t max,
                          const char *workdir, const char *user, char *err)
{
    memset(next, 0, sizeof *next);
    if (merge_env(next, add, n, max, err) < 0 ||
        (dup_or_keep(&next->workdir, workdir, cur.workdir) < 0 && no_memory(err)) ||
        (dup_or_keep(&next->user, user, cur.user) < 0 && no_memory(err))) {
        int e = errno;
        asuser_defaults_drop(next);
        errno = e;
        return -1;
    }
    return 0;
}

void asuser_defaults_commit(struct asuser_defaults *next)
{
    asuser_defaults_drop(&cur);
    cur = *next;
    memset(next, 0, sizeof *next);
    if (cur.user) asuser_default(cur.user);
}

void asuser_defaults_clear(void) { asuser_defaults_drop(&cur); }

char *const *asuser_defaults_env(void) { return cur.env ? cur.env : none; }

const char *asuser_defaults_workdir(void) { return cur.workdir; }
