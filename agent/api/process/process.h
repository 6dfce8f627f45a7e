/*
 * process.h - the process.Process service of the API (README "sandbox-agent
 * serve": the process API): the handlers of the RPC table (routes.c) over
 * the process table (agent/proc), and the environment GET /envs shows.
 *
 *   process/process.c    the table and the default user they serve, who a request
 *                runs as, errno to Connect codes, GET /envs
 *   process/stream.c Start and Connect: a stream subscribed to one process,
 *                pulling from its rings as the socket drains
 *   process/control.c  List, SendInput, SendSignal, CloseStdin, Update, and the
 *                client-streaming StreamInput
 */
#ifndef SA_API_PROCESS_PROCESS_H
#define SA_API_PROCESS_PROCESS_H

#include "agent/api/connect/connect.h"
#include "agent/api/process/request.h"
#include "agent/api/connect/rpc.h"
#include "agent/core/buf.h"
#include "agent/proc/proc.h"

/* The table the handlers serve (NULL: every process RPC answers
 * `unavailable`); it must outlive the serving. Bounds what POST /init's
 * variables may take by what the table's children have room for
 * (proc_launch_env_room, asuser_defaults_room). */
void process_init(struct proc_table *t);
struct proc_table *process_table(void);

/* The user `name` names (NULL: the default one, asuser/asuser.h). Returns 0, or
 * -1 with the code and a message in err. */
int process_user(const char *name, struct user_info *u, enum rpc_code *code, char *err);
/* The process a selector names, or NULL after failing the call (not_found). */
struct proc *process_find(struct rpc_call *call, const struct process_request_sel *sel);

/* What POST /init set for a Start (asuser/defaults.h): its variables into
 * s (before r's envs, which win; used for the exec, never copied into the
 * record); and where the Start runs as user u: r's cwd (kept in s as
 * asked) resolved as every path is (asuser/path.h: defaultWorkdir for none)
 * into dir (initialised here; the caller frees it), s->dir pointing at it.
 * Returns 0, or -1 with a message in err (errno EINVAL) for a cwd refused. */
int process_defaults(const struct process_request_start *r, const struct user_info *u, struct proc_start *s,
                     struct buf *dir, char *err);

/* GET /envs: what a Start as the default user with no envs gets. */
int process_envs_json(struct buf *b);

/* The handlers (connect/rpc.h). */
void process_stream_start(struct rpc_call *call, const cJSON *msg);
void process_stream_connect(struct rpc_call *call, const cJSON *msg);
void process_control_list(struct rpc_call *call, const cJSON *msg);
void process_control_send_input(struct rpc_call *call, const cJSON *msg);
void process_control_stream_input(struct rpc_call *call, const cJSON *msg);
void process_control_send_signal(struct rpc_call *call, const cJSON *msg);
void process_control_close_stdin(struct rpc_call *call, const cJSON *msg);
void process_control_update(struct rpc_call *call, const cJSON *msg);

#endif
