/*
 * session.h - `sandbox-agent session -- HANDLER ARGV...`: the warm session
 * daemon (PROTOCOL.md section 2), and the constants of its wire contract that
 * are not in agent/core/protocol.h yet.
 */
#ifndef SA_SESSION_H
#define SA_SESSION_H

/* TODO(lead): move these into agent/core/protocol.h (they are wire contract:
 * error codes the host parses, environment the operator sets). */
#define SESSION_ERR_BAD_REQUEST "bad_request"
#define SESSION_ERR_TOO_LARGE "too_large"
#define SESSION_ERR_TIMEOUT "timeout"
#define SESSION_ERR_HANDLER_EXITED "handler_exited"
#define SESSION_ERR_SHUTTING_DOWN "shutting_down"
/* Not in PROTOCOL.md yet: a request that arrives while the handler is down
 * and the restart queue is full. */
#define SESSION_ERR_QUEUE_FULL "queue_full"

/* Seconds; the restart delays are BASE * 1, 4, 16, 64 and the backoff resets
 * after BASE * 60 of healthy running (default 1: 1, 4, 16, 64 s and 60 s). */
#define ENV_RESTART_BASE "SANDBOX_AGENT_RESTART_BASE_SECONDS"
#define DEFAULT_RESTART_BASE 1.0
/* Requests held while the handler is down (default 1024). */
#define ENV_QUEUE_MAX "SANDBOX_AGENT_QUEUE_MAX"
#define DEFAULT_QUEUE_MAX 1024

/* A mailbox line longer than this (newline excluded) is answered too_large. */
#define SESSION_LINE_MAX (16u * 1024u * 1024u)
/* A handler stdout line longer than this is not a reply. */
#define SESSION_REPLY_MAX (64u * 1024u * 1024u)
/* Ids remembered to drop duplicates. */
#define SESSION_DEDUP_WINDOW 4096

/* argv[0] is "session". Returns the process exit code. */
int session_main(int argc, char **argv);

#endif
