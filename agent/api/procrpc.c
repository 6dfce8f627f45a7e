/*
 * procrpc.c - what the process handlers share (see procrpc.h): the table,
 * the default user, who a request runs as, the error codes, GET /envs.
 */
#include "agent/api/procrpc.h"
#include "agent/api/requser.h"
#include "agent/core/err.h"
#include "agent/core/jsonw.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct {
    struct proc_table *t;
} g;

void procrpc_init(struct proc_table *t) { g.t = t; }

struct proc_table *procrpc_table(void) { return g.t; }

int procrpc_user(const char *name, struct user_info *u, enum rpc_code *code, char *err)
{
    if (requser_get(name, u, err) == 0) return 0;
    /* The and the README's word for a process: an unknown user is
     * a bad argument (the filesystem side answers unauthenticated, as
     * envd's does). */
    *code = errno == ENOENT ? RPC_INVALID_ARGUMENT : errno == EPERM ? RPC_PERMISSION_DENIED : RPC_INTERNAL;
    return -1;
}

enum rpc_code procrpc_code(int e)
{
    switch (e) {
    case EINVAL: case ENOENT: return RPC_INVALID_ARGUMENT;
    case EEXIST: return RPC_ALREADY_EXISTS;
    case EPERM: case EACCES: return RPC_PERMISSION_DENIED;
    case ESHUTDOWN: return RPC_UNAVAILABLE;
    case ESRCH: return RPC_NOT_FOUND;
    case ENOTTY: case EPIPE: return RPC_FAILED_PRECONDITION;
    case ENOSPC: case ENOMEM: case EAGAIN: case EMFILE: case ENFILE:
        return RPC_RESOURCE_EXHAUSTED;
    default: return RPC_INTERNAL;
    }
}

struct proc *procrpc_find(struct rpc_call *call, const struct procreq_sel *sel)
{
    char msg[ERR_LEN];
    struct proc *p = sel->has_pid ? proc_by_pid(g.t, (pid_t)sel->pid) : proc_by_tag(g.t, sel->tag);
    if (p) return p;
    if (sel->has_pid) snprintf(msg, sizeof msg, "process with pid %u not found", (unsigned)sel->pid);
    else snprintf(msg, sizeof msg, "process with tag '%.64s' not found", sel->tag);
    rpc_fail(call, RPC_NOT_FOUND, msg);
    return NULL;
}

int procrpc_envs_json(struct buf *b)
{
    struct user_info u;
    enum rpc_code code;
    char err[ERR_LEN];
    if (!g.t || procrpc_user(NULL, &u, &code, err) < 0) return -1;
    char **env = proc_env(g.t, &u, u.home, NULL);
    if (!env) return -1;
    int rc = buf_putc(b, '{');
    for (size_t i = 0; rc == 0 && env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        size_t kn = (size_t)(eq - env[i]);
        if ((i && buf_puts(b, ", ") < 0) || jsonw_str(b, env[i], kn, JSONW_SURROGATEESCAPE) < 0 ||
            buf_puts(b, ": ") < 0 || jsonw_cstr(b, eq + 1) < 0)
            rc = -1;
    }
    if (rc == 0) rc = buf_putc(b, '}');
    proc_env_free(env);
    return rc;
}
