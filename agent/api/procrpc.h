/*
 * procrpc.h - the process.Process service of the API (README "sandbox-agent
 * serve": the process API): the handlers of the RPC table (routes.c) over
 * the process table (agent/proc), and the environment GET /envs shows.
 *
 *   procrpc.c    the table and the default user they serve, who a request
 *                runs as, errno to Connect codes, GET /envs
 *   procstream.c Start and Connect: a stream subscribed to one process,
 *                pulling from its rings as the socket drains
 *   procunary.c  List, SendInput, SendSignal, CloseStdin, Update, and the
 *                client-streaming StreamInput
 */
#ifndef SA_API_PROCRPC_H
#define SA_API_PROCRPC_H

#include "agent/api/connect.h"
#include "agent/api/procreq.h"
#include "agent/api/rpc.h"
#include "agent/core/buf.h"
#include "agent/proc/proc.h"

/* The table the handlers serve (NULL: every process RPC answers
 * `unavailable`); it must outlive the serving. */
void procrpc_init(struct proc_table *t);
struct proc_table *procrpc_table(void);

/* The user `name` names (NULL: the default one, requser.h). Returns 0, or
 * -1 with the code and a message in err. */
int procrpc_user(const char *name, struct user_info *u, enum rpc_code *code, char *err);
/* The Connect code of a process-table errno (proc.h). */
enum rpc_code procrpc_code(int e);
/* The process a selector names, or NULL after failing the call (not_found). */
struct proc *procrpc_find(struct rpc_call *call, const struct procreq_sel *sel);

/* GET /envs: what a Start as the default user with no envs gets. */
int procrpc_envs_json(struct buf *b);

/* The handlers (rpc.h). */
void procrpc_start(struct rpc_call *call, const cJSON *msg);
void procrpc_connect(struct rpc_call *call, const cJSON *msg);
void procrpc_list(struct rpc_call *call, const cJSON *msg);
void procrpc_send_input(struct rpc_call *call, const cJSON *msg);
void procrpc_stream_input(struct rpc_call *call, const cJSON *msg);
void procrpc_send_signal(struct rpc_call *call, const cJSON *msg);
void procrpc_close_stdin(struct rpc_call *call, const cJSON *msg);
void procrpc_update(struct rpc_call *call, const cJSON *msg);

#endif
