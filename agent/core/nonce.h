/*
 * nonce.h - taking the agent's secrets out of reach of the workload: the
 * per-run nonce (SANDBOX_JOB_NONCE) and serve's access token
 * (SANDBOX_AGENT_TOKEN).
 *
 * Owns the secrets' only copies. Must run before anything forks, logs the
 * environment or calls setenv: it wipes the kernel-visible environment block.
 */
#ifndef SA_CORE_NONCE_H
#define SA_CORE_NONCE_H

#include <stddef.h>

struct nonce {
    char *value; /* heap copy, "" when the variable was unset */
    size_t len;
};

/*
 * Make the process non-dumpable, copy every protected variable, overwrite
 * each occurrence of them in the environment block in place (what
 * /proc/PID/environ shows), and remove them from environ so no child
 * inherits them. The work happens once per process, on the first call of
 * either function; every call (main.c's, then the mode's) gets its own heap
 * copy of the value in n, to free ("" when the variable was unset).
 * Returns 0, or -1 with *err set.
 */
int nonce_take(struct nonce *n, const char **err);
/* The same for the protected variable `name` (ENV_NONCE or ENV_TOKEN). */
int nonce_take_secret(const char *name, struct nonce *n, const char **err);

/* Overwrite n bytes at p with zeros, in a way the compiler keeps: for every
 * buffer that held a secret (a copy of the nonce, a webhook body, a key). */
void nonce_overwrite(void *p, size_t n);
/* Overwrite a copy from nonce_take or nonce_take_secret, then free it. */
void nonce_wipe(struct nonce *n);
/* Overwrite the module's own copy of the secret `name` only (the API keeps
 * its token itself: agent/api/ops/token.h). Later calls for it get "". */
void nonce_forget_secret(const char *name);
/* Overwrite the module's own copies of every secret: for a fork of the agent
 * that must not hold them (with nonce_wipe of every copy it was handed).
 * Later calls get "". */
void nonce_forget(void);

#endif
