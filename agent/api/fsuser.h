/*
 * fsuser.h - who a filesystem request acts as (README "sandbox-agent serve":
 * users): the user it names (Authorization: Basic on an RPC, ?username= on
 * /files) or, when it names none, SANDBOX_AGENT_USER or else the user the
 * agent runs as; and, in a helper process, becoming that user.
 */
#ifndef SA_API_FSUSER_H
#define SA_API_FSUSER_H

#include "agent/proc/user.h"

/*
 * Resolve name (NULL or "": the default user). Returns 0, or -1 with a
 * message in err and errno: ENOENT an unknown user, EPERM another user
 * while the agent is not root (it cannot become them), else the errno of
 * reading /etc/passwd.
 */
int fsuser_get(const char *name, struct user_info *u, char *err);

/* In a helper process about to act for u: take its groups, gid and uid
 * (only when running as root; otherwise u is the agent's own user). Returns
 * 0, or -1 with errno. */
int fsuser_become(const struct user_info *u);

#endif
