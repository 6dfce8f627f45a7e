/*
 * protocol.h - every string that another program parses, defined once.
 *
 * The sentinels, environment variable names, defaults and exit codes below are
 * the wire contract (README "Protocol"). Changing one is a compatibility break
 * with clients and log scanners already deployed, not a rename. No other file
 * spells these literals.
 */
#ifndef SA_CORE_PROTOCOL_H
#define SA_CORE_PROTOCOL_H

#define SA_NAME "sandbox-agent"
#ifndef SA_VERSION
#define SA_VERSION "0.1.0"
#endif

/* Sentinel prefixes: each starts a line on stdout (or stderr for `fs read`). */
#define SENTINEL_RESULT "__SANDBOX_RESULT__"
#define SENTINEL_REPLY "__SANDBOX_REPLY__"
#define SENTINEL_REPLY_SEP "__"
#define SENTINEL_FS "__SBX_FS__"
#define SENTINEL_WATCH "__SBX_WATCH__"
#define SENTINEL_WATCH_READY SENTINEL_WATCH "READY"
#define SENTINEL_EXEC "__SBX_EXEC__"

/* Environment of `run` and `session`. */
#define ENV_INNER_ENTRY "SANDBOX_JOB_INNER_ENTRY"
#define ENV_NONCE "SANDBOX_JOB_NONCE"
#define ENV_RESULT "SANDBOX_RESULT"
#define ENV_RESULT_MAX "SANDBOX_RESULT_MAX_BYTES"
#define ENV_WEBHOOK "SANDBOX_JOB_WEBHOOK"
#define ENV_JOB_ID "SANDBOX_JOB_ID"
/* The PEM bundle an https:// webhook's server is checked against. */
#define ENV_WEBHOOK_CA_FILE "SANDBOX_JOB_WEBHOOK_CA_FILE"
#define ENV_MAILBOX "SANDBOX_MAILBOX"

/* Environment that tunes the agent itself. */
#define ENV_LOG "SANDBOX_AGENT_LOG"
#define ENV_SIGNAL_TARGET "SANDBOX_AGENT_SIGNAL_TARGET"
#define ENV_GRACE "SANDBOX_AGENT_GRACE_SECONDS"
/* "A:B,...": forward signal A as B (0 drops it), as dumb-init's --rewrite. */
#define ENV_SIGNAL_REWRITE "SANDBOX_AGENT_SIGNAL_REWRITE"
/* run: how long the job's last output and the sentinel may wait for a
 * stalled stdout after the job exits before they are abandoned (the grace
 * period instead, when shorter and a stop signal ended the job). */
#define ENV_REPORT "SANDBOX_AGENT_REPORT_SECONDS"
#define DEFAULT_REPORT_SECONDS 30.0
/* session: restart delays are BASE * 1, 4, 16, 64 s, reset after BASE * 60 s
 * of healthy running; requests held while the handler is down. */
#define ENV_RESTART_BASE "SANDBOX_AGENT_RESTART_BASE_SECONDS"
#define DEFAULT_RESTART_BASE 1.0
#define ENV_QUEUE_MAX "SANDBOX_AGENT_QUEUE_MAX"
#define DEFAULT_QUEUE_MAX 1024

/* serve (README "sandbox-agent serve"): where it listens, the access token
 * (protected like the nonce), the connection bound, and how long a
 * connection may idle without sending a complete request. */
#define ENV_LISTEN "SANDBOX_AGENT_LISTEN"
#define ENV_TOKEN "SANDBOX_AGENT_TOKEN"
#define ENV_INSECURE "SANDBOX_AGENT_INSECURE"
#define ENV_MAX_CONNECTIONS "SANDBOX_AGENT_MAX_CONNECTIONS"
#define ENV_HTTP_TIMEOUT "SANDBOX_AGENT_HTTP_TIMEOUT_SECONDS"
/* A connection none of whose requests passed the token check yet has this
 * long to send a head (at most the HTTP timeout). */
#define ENV_FIRST_HEAD "SANDBOX_AGENT_FIRST_HEAD_SECONDS"
#define DEFAULT_LISTEN_PUBLIC "0.0.0.0:49983"  /* with a token */
#define DEFAULT_LISTEN_LOCAL "127.0.0.1:49983" /* without one */
#define DEFAULT_MAX_CONNECTIONS 256
#define DEFAULT_HTTP_TIMEOUT 60.0
#define DEFAULT_FIRST_HEAD 10.0
#define SERVE_HEAD_MAX (64u * 1024u)         /* request line + headers */
#define SERVE_BODY_MAX (16u * 1024u * 1024u) /* a unary request body */
#define HEADER_ACCESS_TOKEN "X-Access-Token"
#define ROUTE_HEALTH "/health"
#define ROUTE_ENVS "/envs"
/* serve's orchestrator routes (README "sandbox-agent serve"): the sandbox's
 * figures, and what the orchestrator sends it at the start or a resume;
 * with AWAIT_TOKEN=1 and no token, only /health and /init answer until an
 * /init sets one; DISK_PATH picks the filesystem /metrics reports. */
#define ROUTE_METRICS "/metrics"
#define ROUTE_INIT "/init"
/* The pause family (README "Orchestrator routes": pauses): the workload's
 * cgroups, the filesystem of DISK_PATH, the agent's own memory. */
#define ROUTE_FREEZE "/freeze"
#define ROUTE_UNFREEZE "/unfreeze"
#define ROUTE_FSFREEZE "/fsfreeze"
#define ROUTE_FSTHAW "/fsthaw"
#define ROUTE_COLLAPSE "/collapse"
#define ENV_AWAIT_TOKEN "SANDBOX_AGENT_AWAIT_TOKEN"
#define ENV_DISK_PATH "SANDBOX_AGENT_DISK_PATH"
/* serve's file transfer (README "sandbox-agent serve", the filesystem API):
 * the route, the metadata headers of an upload, the default user. */
#define ROUTE_FILES "/files"
#define ROUTE_FILES_COMPOSE "/files/compose"
#define HEADER_METADATA_PREFIX "X-Metadata-"
#define ENV_USER "SANDBOX_AGENT_USER"
/* /files's query parameters, and those of a signed URL (README "Signed
 * URLs"): the signature ("v1_" and the digest), its optional expiration,
 * and the operation it grants, one per method. */
#define QUERY_PATH "path"
#define QUERY_USERNAME "username"
#define QUERY_SIGNATURE "signature"
#define QUERY_SIGNATURE_EXPIRATION "signature_expiration"
#define SIGNATURE_V1 "v1_"
#define SIGNATURE_READ "read"
#define SIGNATURE_WRITE "write"

/* session: error codes of the replies the agent makes itself. */
#define SESSION_ERR_BAD_REQUEST "bad_request"
#define SESSION_ERR_TOO_LARGE "too_large"
#define SESSION_ERR_TIMEOUT "timeout"
#define SESSION_ERR_HANDLER_EXITED "handler_exited"
#define SESSION_ERR_SHUTTING_DOWN "shutting_down"
/* Beyond the contract: the restart queue is full (documented in the README). */
#define SESSION_ERR_QUEUE_FULL "queue_full"
/* A mailbox line longer than this (newline excluded) is answered too_large. */
#define SESSION_LINE_MAX (16u * 1024u * 1024u)
/* Ids remembered to drop duplicates. */
#define SESSION_DEDUP_WINDOW 4096

#define DEFAULT_RESULT_PATH "/sandbox/result.json"
#define FALLBACK_RESULT_PATH "/tmp/_sandbox_result.json"
#define DEFAULT_RESULT_MAX (1024L * 1024L)
#define DEFAULT_MAILBOX "/tmp/sandbox_mailbox.jsonl"
#define DEFAULT_GRACE_SECONDS 5.0
#define WEBHOOK_BUDGET_SECONDS 10.0
/* Debian's (and Ubuntu's, Alpine's) bundle of the system's CAs. */
#define DEFAULT_CA_FILE "/etc/ssl/certs/ca-certificates.crt"
#define MCP_STATUS_PATH "/snowflake/mcp/status.json"

/* serve: output kept per channel of each process, and finished processes
 * kept: at most so many, holding at most so many bytes in all, each until
 * so long after an end event went out for it. */
#define ENV_RETAIN_BYTES "SANDBOX_AGENT_RETAIN_BYTES"
#define DEFAULT_RETAIN_BYTES (8u * 1024u * 1024u)
#define DEFAULT_KEEP_FINISHED 1024
#define ENV_KEEP_FINISHED_BYTES "SANDBOX_AGENT_KEEP_FINISHED_BYTES"
#define DEFAULT_KEEP_FINISHED_BYTES (64u * 1024u * 1024u)
#define ENV_KEEP_FINISHED_SECONDS "SANDBOX_AGENT_KEEP_FINISHED_SECONDS"
#define DEFAULT_KEEP_FINISHED_SECONDS 30.0
/* serve: how long a process's output waits for a stream that reads nothing
 * while it is a ring behind, before that stream is left to skip. */
#define ENV_STALL_SECONDS "SANDBOX_AGENT_STALL_SECONDS"
#define DEFAULT_STALL_SECONDS 10.0
/* serve: whether each process gets a cgroup of its own (README "sandbox-agent
 * serve": what a process started goes with it): unset or "1" where the
 * agent may make one, "0" never (its descendants are found through /proc),
 * "v2" or "v1" only that kind. */
#define ENV_CGROUPS "SANDBOX_AGENT_CGROUPS"
/* serve: the memory budget every growing buffer draws from, in bytes (README
 * "sandbox-agent serve": the memory budget; the default: core/budget.h). */
#define ENV_MEMORY_BUDGET "SANDBOX_AGENT_MEMORY_BUDGET"
/* The error message of a request the budget refused (429 resource_exhausted). */
#define SERVE_BUDGET_SPENT "the agent's memory budget is spent (" ENV_MEMORY_BUDGET "): try again later"
/* serve: a Connect's replay (the default user, ENV_USER, is above). */
#define HEADER_REPLAY_FROM "Sandbox-Agent-Replay-From"
/* serve: the port forwarder (README "Port forwarding"): on or off (unset:
 * on when the API listens on an address other than loopback), the outward
 * addresses (unset: the interfaces'), the connection bound, the poll. */
#define ENV_FORWARD "SANDBOX_AGENT_FORWARD"
#define ENV_FORWARD_ADDRS "SANDBOX_AGENT_FORWARD_ADDRS"
#define ENV_FORWARD_MAX_CONNECTIONS "SANDBOX_AGENT_FORWARD_MAX_CONNECTIONS"
#define ENV_FORWARD_SECONDS "SANDBOX_AGENT_FORWARD_SECONDS"
#define DEFAULT_FORWARD_MAX_CONNECTIONS 1024
#define DEFAULT_FORWARD_SECONDS 1.0

/* Job status words. */
#define STATUS_SUCCEEDED "succeeded"
#define STATUS_FAILED "failed"

/* Exit codes. */
#define EXIT_USAGE 2        /* usage or configuration error */
#define EXIT_NOEXEC 126     /* command found but not executable */
#define EXIT_NOTFOUND 127   /* command not found */
#define EXIT_SIGNAL_BASE 128
#define EXIT_WATCH_ROOT 3   /* watch: ROOT cannot be watched */
/* fs: the reserved statuses of the backend contract. */
#define EXIT_FS_FAILED 1      /* anything else */
#define EXIT_FS_MISSING 66    /* missing or unreadable */
#define EXIT_FS_ISDIR 67      /* a directory where a file was needed */
#define EXIT_FS_NOTREG 68     /* not a regular file */
#define EXIT_FS_TOO_LARGE 69  /* over --max-bytes */

#endif
