/*
 * asuser.h - who a request acts as (README "sandbox-agent serve": users):
 * the user it names (Authorization: Basic on an RPC, ?username= on /files)
 * or, when it names none, the default user (SANDBOX_AGENT_USER, read once
 * at start), or else the user the agent runs as; and, in a helper process,
 * becoming that user. The process and filesystem handlers both resolve
 * users here; each maps the failure to its own code (README).
 */
#ifndef SA_API_ASUSER_ASUSER_H
#define SA_API_ASUSER_ASUSER_H

#include "agent/core/user.h"

/* The user of a request that names none (NULL: the agent's own). name must
 * outlive the server; set once at start. */
void asuser_default(const char *name);

/*
 * Resolve name (NULL or "": the default user). Returns 0, or -1 with a
 * message in err (naming the user) and errno: ENOENT an unknown user, EPERM
 * another user while the agent is not root (it cannot become them), else
 * the errno of reading /etc/passwd.
 */
int asuser_get(const char *name, struct user_info *u, char *err);

/* In a helper process about to act for u: take its groups, gid and uid
 * (only when running as root; otherwise u is the agent's own user). Returns
 * 0, or -1 with errno. */
int asuser_become(const struct user_info *u);

#endif
