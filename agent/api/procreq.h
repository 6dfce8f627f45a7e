/*
 * procreq.h - the request messages of process.Process, decoded from their
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
#ifndef SA_API_PROCREQ_H
#define SA_API_PROCREQ_H

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
struct procreq_sel {
    int has_pid;
    uint32_t pid;
    const char *tag;      /* NULL: none */
};

struct procreq_start {
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

struct procreq_input {
    struct procreq_sel sel;
    int to_pty;           /* the input is "pty" (else "stdin") */
    struct buf data;      /* the decoded bytes (owned) */
};

struct procreq_signal {
    struct procreq_sel sel;
    int sig;              /* the signal number */
};

struct procreq_update {
    struct procreq_sel sel;
    unsigned short cols, rows;
};

/* One StreamInputRequest: start (the selector), data (the input), keepalive. */
enum procreq_stream_kind { PROCREQ_STREAM_START, PROCREQ_STREAM_DATA, PROCREQ_STREAM_KEEPALIVE };
struct procreq_stream {
    enum procreq_stream_kind kind;
    struct procreq_input in; /* sel for START; to_pty and data for DATA */
};

/* Each returns 0, or -1 with a message in err (ERR_LEN bytes). */
int procreq_start(const cJSON *msg, struct procreq_start *r, char *err);
void procreq_start_free(struct procreq_start *r);

/* ConnectRequest and CloseStdinRequest: {"process": selector}. */
int procreq_selector(const cJSON *msg, struct procreq_sel *r, char *err);

int procreq_input(const cJSON *msg, struct procreq_input *r, char *err);
void procreq_input_free(struct procreq_input *r);

int procreq_signal(const cJSON *msg, struct procreq_signal *r, char *err);
int procreq_update(const cJSON *msg, struct procreq_update *r, char *err);

int procreq_stream(const cJSON *msg, struct procreq_stream *r, char *err);
void procreq_stream_free(struct procreq_stream *r);

/* The signal an enum name ("SIGNAL_SIGKILL") or number names, or 0. */
int procreq_signal_number(const cJSON *v);

#endif
