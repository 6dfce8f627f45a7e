/*
 * asuser.c - the request's user (see asuser/asuser.h).
 */
#include "agent/api/asuser/asuser.h"
#include "agent/core/err.h"

#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *default_user; /* NULL: the agent's own */

void asuser_default(const char *name) { default_user = name && *name ? name : NULL; }

int asuser_get(const char *name, struct user_info *u, char *err)
{
    if (!name || !*name) name = default_user;
    if (!name) {
        user_self(USER_PASSWD, USER_GROUP, u);
        return 0;
    }
    if (user_lookup(name, USER_PASSWD, USER_GROUP, u, err) < 0) return -1;
    if (geteuid() != 0 && u->uid != geteuid()) {
        err_set(err, "acting as user '%s' needs the agent to run as root", name);
        errno = EPERM;
        return -1;
    }
    return 0;
}

int asuser_become(const struct user_info *u)
{
    if (geteuid() != 0) return 0;
    if (setgroups(u->ngroups, u->groups) < 0 || setgid(u->gid) < 0 || setuid(u->uid) < 0)
        return -1;
    return 0;
}
