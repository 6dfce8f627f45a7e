/*
 * nonce.h - taking the per-run secret out of reach of the workload.
 *
 * Owns the secret's only copy. Must run before anything forks, logs the
 * environment or calls setenv: it wipes the kernel-visible environment block.
 */
#ifndef SA_NONCE_H
#define SA_NONCE_H

#include <stddef.h>

struct nonce {
    char *value; /* heap copy, "" when the variable was unset */
    size_t len;
};

/*
 * Make the process non-dumpable, copy SANDBOX_JOB_NONCE, overwrite every
 * occurrence of it in the environment block in place (what /proc/PID/environ
 * shows), and remove it from environ so no child inherits it.
 * The work happens once per process; every call (main.c's, then the mode's)
 * gets its own heap copy of the value in n, to free.
 * Returns 0, or -1 with *err set.
 */
int nonce_take(struct nonce *n, const char **err);

/* Overwrite a copy from nonce_take, then free it. */
void nonce_wipe(struct nonce *n);
/* Overwrite the module's own copy: for a fork of the agent that must not
 * hold the secret (with nonce_wipe of every copy it was handed). Later
 * nonce_take calls get "". */
void nonce_forget(void);

#endif
