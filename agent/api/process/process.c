/*
 * process.c - what the process handlers share (see process/process.h): the table,
 * the default user, who a request runs as and where a Start runs, the error
 * codes, GET /envs.
 */
#include "agent/api/process/process.h"
#include "agent/api/asuser/asuser.h"
#include "agent/api/asuser/defaults.h"
#include "agent/api/asuser/path.h"
#include "agent/core/err.h"
#include "agent/core/jsonw.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
    struct proc_table *t;
} g;

void process_init(struct proc_table *t)
{
    g.t = t;
    /* What /init's variables may take: a Start whose own argv and envs
     * fit in the room kept for them can always exec. */
    asuser_defaults_room(t ? proc_launch_env_room(t) : SIZE_MAX);
}

struct proc_table *process_table(void) { return g.t; }

int process_user(const char *name, struct user_info *u, enum rpc_code *code, char *err)
{
    if (asuser_get(name, u, err) == 0) return 0;
    /* The and the README's word for a process: an unknown user is
     * a bad argument (the filesystem side answers unauthenticated, as
     * envd's does). */
    *code = errno == ENOENT ? RPC_INVALID_ARGUMENT : connect_code_of_errno(errno);
    return -1;
}

struct proc *process_find(struct rpc_call *call, const struct process_request_sel *sel)
{
    char msg[ERR_LEN];
    struct proc *p = sel->has_pid ? proc_by_pid(g.t, (pid_t)sel->pid) : proc_by_tag(g.t, sel->tag);
    if (p) return p;
    if (sel->has_pid) snprintf(msg, sizeof msg, "process with pid %u not found", (unsigned)sel->pid);
    else snprintf(msg, sizeof msg, "process with tag '%.64s' not found", sel->tag);
    rpc_fail(call, RPC_NOT_FOUND, msg);
    return NULL;
}

int process_defaults(const struct process_request_start *r, const struct user_info *u, struct proc_start *s,
                     struct buf *dir, char *err)
{
    const char *why;
    s->defaults = asuser_defaults_env();
    s->cwd = r->cwd;
    buf_init(dir, ASUSER_PATH_MAX);
    if (asuser_path_resolve(u->home, asuser_defaults_workdir(), r->cwd ? r->cwd : "", dir, &why) < 0) {
        err_set(err, "cwd '%.200s': %s", r->cwd ? r->cwd : "", why);
        errno = EINVAL;
        return -1;
    }
    s->dir = dir->data;
    return 0;
}

int process_envs_json(struct buf *b)
{
    struct user_info u;
    enum rpc_code code;
    char err[ERR_LEN];
    if (!g.t || process_user(NULL, &u, &code, err) < 0) return -1;
    struct buf dir;
    const char *why;
    buf_init(&dir, ASUSER_PATH_MAX);
    char **env = asuser_path_resolve(u.home, asuser_defaults_workdir(), "", &dir, &why) < 0
                     ? NULL
                     : proc_launch_env(g.t, &u, dir.data, asuser_defaults_env(), NULL);
    buf_free(&dir);
    if (!env) return -1;
    int rc = jsonw_env(b, env);
    proc_launch_env_free(env);
    return rc;
}
