/*
 * request.h - the request messages of process.Process, decoded from their
 * JSON (README "sandbox-agent serve": the process API): StartRequest,
 * ConnectRequest, SendInputRequest, SendSignalRequest, CloseStdinRequest,
 * UpdateRequest and each StreamInputRequest envelope.
 *
 * Protobuf's JSON mapping, as the E2B SDK writes it: lowerCamelCase names
 * (the proto names of these messages are the same words), unknown fields
 * ignored, null as the default, uint32 as a number or a decimal string,
 * bytes as base64 (standard or URL-safe, padding optional), enums as names
 * or numbers. A field of the wrong type is an error naming it.
 *
 * Pure functions (no I/O, no process table): any input is safe, which
 * tests/fuzz/fuzz_procreq.c checks. A decoded request points into the cJSON
 * tree it came from (strings) or owns what it holds (argv, envs, input
 * bytes): free it with its *_free, whatever the result.
 */
#ifndef SA_API_PROCESS_REQUEST_H
#define SA_API_PROCESS_REQUEST_H

#include "agent/core/buf.h"

#include <cJSON.h>
#include <stdint.h>

/* The most args or envs of one Start. */
#define PROCREQ_ARGS_MAX 65536
/* The largest pty side accepted (the kernel's winsize holds 16 bits). */
#define PROCREQ_PTY_MAX 65535
/* The largest input of one SendInput or StreamInput envelope, decoded. */
#define PROCREQ_INPUT_MAX (16u << 20)

/* A ProcessSelector: by pid, else by tag. */
struct process_request_sel {
    int has_pid;
    uint32_t pid;
    const char *tag;      /* NULL: none */
};

struct process_request_start {
    char **argv;          /* cmd then args, NULL-terminated (owned; the strings are the tree's) */
    char **envs;          /* "NAME=VALUE", NULL-terminated (owned, with the strings) */
    size_t nenvs;
    const char *cwd;      /* NULL: none given */
    const char *tag;      /* NULL: none */
    int pty;              /* a pty was asked for */
    unsigned short cols, rows;
    int stdin_pipe;       /* "stdin": true, or absent without a pty (as envd) */
    double timeout;       /* "timeout" (seconds, beyond envd); 0: none */
};

struct process_request_input {
    struct process_request_sel sel;
    int to_pty;           /* the input is "pty" (else "stdin") */
    struct buf data;      /* the decoded bytes (owned) */
};

struct process_request_signal {
    struct process_request_sel sel;
    int sig;              /* the signal number */
};

struct process_request_update {
    struct process_request_sel sel;
    unsigned short cols, rows;
};

/* One StreamInputRequest: start (the selector), data (the input), keepalive. */
enum process_request_stream_kind { PROCREQ_STREAM_START, PROCREQ_STREAM_DATA, PROCREQ_STREAM_KEEPALIVE };
struct process_request_stream {
    enum process_request_stream_kind kind;
    struct process_request_input in; /* sel for START; to_pty and data for DATA */
};

/* Each returns 0, or -1 with a message in err (ERR_LEN bytes). */
int process_request_start(const cJSON *msg, struct process_request_start *r, char *err);
void process_request_start_free(struct process_request_start *r);

/* ConnectRequest and CloseStdinRequest: {"process": selector}. */
int process_request_selector(const cJSON *msg, struct process_request_sel *r, char *err);

int process_request_input(const cJSON *msg, struct process_request_input *r, char *err);
void process_request_input_free(struct process_request_input *r);

int process_request_signal(const cJSON *msg, struct process_request_signal *r, char *err);
int process_request_update(const cJSON *msg, struct process_request_update *r, char *err);

int process_request_stream(const cJSON *msg, struct process_request_stream *r, char *err);
void process_request_stream_free(struct process_request_stream *r);

/* The signal an enum name ("SIGNAL_SIGKILL") or number names, or 0. */
int process_request_signal_number(const cJSON *v);

#endif
