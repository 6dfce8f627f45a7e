/*
 * defaults.h - what a request gets when it names nothing, as POST /init set
 * it (README "sandbox-agent serve": orchestrator routes): the variables
 * every later process gets (envVars: after the user's HOME, USER and the
 * rest, before the request's own envs, which win), the working directory
 * of a Start that names none (defaultWorkdir, in place of the user's
 * home), and the default user (defaultUser, in place of
 * SANDBOX_AGENT_USER: asuser_default).
 *
 * Owns the copies, the one copy of the variables every Start uses (a
 * process's record keeps only its own envs). A new set is made whole and
 * bounded first (asuser_defaults_merge: in count, and in the bytes execve
 * leaves for it, so that no set /init accepts keeps a process from
 * starting),
 * then swapped in at once (asuser_defaults_commit), so /init applies all
 * or nothing. One API per process: cleared by api_free.
 */
#ifndef SA_API_ASUSER_DEFAULTS_H
#define SA_API_ASUSER_DEFAULTS_H

#include <stddef.h>

struct asuser_defaults {
    char **env;       /* "NAME=VALUE", NULL-terminated; NULL: none */
    char *workdir;    /* NULL: the user's home */
    char *user;       /* NULL: SANDBOX_AGENT_USER (or the agent's) */
};

/* Into next: the variables now with add[0..n) merged in (a name set again
 * takes the new value; at most max in all, taking at most the room, below),
 * and copies of workdir and user (NULL: the current ones kept). Returns 0,
 * or -1 with a message in err: out of memory (errno ENOMEM), or more than
 * max variables or than the room (errno E2BIG); next is then empty. */
int asuser_defaults_merge(struct asuser_defaults *next, char *const *add, size_t n, size_t max,
                          const char *workdir, const char *user, char *err);
/* The room the variables may take in all, each "NAME=VALUE" counted as
 * execve counts it (SPAWN_ARG_COST: its bytes, its NUL, its pointer): what
 * a process has left for them under the kernel's bound (the process
 * service's proc_launch_env_room). SIZE_MAX (the start): no bound. */
void asuser_defaults_room(size_t bytes);
/* Make next the defaults (taking its memory; the old set is freed). */
void asuser_defaults_commit(struct asuser_defaults *next);
/* Free a set that was not committed. */
void asuser_defaults_drop(struct asuser_defaults *d);
/* Forget every default (api_free). */
void asuser_defaults_clear(void);

/* The variables (NULL-terminated; never NULL) and the working directory
 * (NULL: none) now. */
char *const *asuser_defaults_env(void);
const char *asuser_defaults_workdir(void);

#endif
