/*
 * cli.c - exec's options, usage and result line (see cli.h).
 */
#include "runner/exec/cli.h"
#include "agent/core/buf.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/num.h"
#include "agent/core/protocol.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEFAULT_KILL_AFTER 5.0
/* Per stream, when --max-output-bytes is not given. */
#define DEFAULT_MAX_OUTPUT (8u * 1024 * 1024)
#define MAX_MAX_OUTPUT (1024ull * 1024 * 1024)
#define SHELL "/bin/sh"

static const char exec_usage[] =
    "usage: " SA_NAME " exec [OPTIONS] [--] CMD [ARG...]\n"
    "\n"
    "Run a bounded command and print one " SENTINEL_EXEC "<json> line:\n"
    "{\"exit_code\", \"signal\", \"timed_out\", \"stdout\", \"stderr\",\n"
    " \"stdout_truncated\", \"stderr_truncated\", \"duration_ms\"}.\n"
    "\n"
    "options:\n"
    "  --timeout S            SIGTERM the command's process group after S seconds\n"
    "  --kill-after S         then SIGKILL it S seconds later (default 5)\n"
    "  --max-output-bytes N   keep the last N bytes of each stream (default 8388608)\n"
    "  --cwd DIR              run in DIR\n"
    "  --shell                run CMD (its words joined by spaces) with /bin/sh -c\n"
    "\n"
    "The command leads its own process group; background processes it starts\n"
    "keep running and do not hold the call open. Output that is not UTF-8 comes\n"
    "back with U+FFFD. Exit status: 0 when the line was printed, 2 usage error.\n";

/* The options that take a value, as --name V or --name=V. */
enum { OPT_TIMEOUT, OPT_KILL_AFTER, OPT_MAX_OUTPUT, OPT_CWD, OPT_COUNT };
static const char *const opt_names[OPT_COUNT] = {"--timeout", "--kill-after", "--max-output-bytes",
                                                 "--cwd"};

static int opt_lookup(const char *a, size_t alen)
{
    for (int k = 0; k < OPT_COUNT; k++)
        if (strlen(opt_names[k]) == alen && !strncmp(a, opt_names[k], alen)) return k;
    return -1;
}

/* Store option k's value v. Returns 0, or -1 (logged). */
static int opt_value(int k, const char *v, struct exec_opts *o)
{
    uint64_t max;
    switch (k) {
    case OPT_TIMEOUT:
        if (num_seconds(v, NUM_MAX_SECONDS, &o->spec.timeout) == 0 && o->spec.timeout > 0) return 0;
        log_error("exec: --timeout '%s' is not a positive number of seconds", v);
        return -1;
    case OPT_KILL_AFTER:
        if (num_seconds(v, NUM_MAX_SECONDS, &o->spec.kill_after) == 0) return 0;
        log_error("exec: --kill-after '%s' is not a number of seconds", v);
        return -1;
    case OPT_MAX_OUTPUT:
        if (num_count(v, MAX_MAX_OUTPUT, &max) == 0) {
            o->spec.max_output = (size_t)max;
            return 0;
        }
        log_error("exec: --max-output-bytes '%s' is not a byte count (at most %llu)", v,
                  (unsigned long long)MAX_MAX_OUTPUT);
        return -1;
    default:
        if (*v) {
            o->spec.cwd = v;
            return 0;
        }
        log_error("exec: --cwd is empty");
        return -1;
    }
}

/* The option at argv[*i], and its value (which may be the next word: *i
 * moves past it). Returns 0, or -1 (logged). */
static int parse_option(int argc, char **argv, int *i, struct exec_opts *o)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--shell")) {
        o->shell = 1;
        return 0;
    }
    size_t alen = strcspn(a, "=");
    int k = opt_lookup(a, alen);
    if (k < 0) {
        log_error("exec: unknown option '%s' (see exec --help)", a);
        return -1;
    }
    if (a[alen] == '=') return opt_value(k, a + alen + 1, o);
    if (*i + 1 < argc) return opt_value(k, argv[++*i], o);
    log_error("exec: %s needs a value", opt_names[k]);
    return -1;
}

/* Options up to "--" or the first word that is not one, then the command.
 * Returns 0 (*help set for --help), or -1 (logged). */
static int parse_args(int argc, char **argv, struct exec_opts *o, int *help)
{
    memset(o, 0, sizeof *o);
    o->spec.kill_after = DEFAULT_KILL_AFTER;
    o->spec.max_output = DEFAULT_MAX_OUTPUT;
    *help = 0;
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = 1;
            return 0;
        }
        if (a[0] != '-') break;
        if (parse_option(argc, argv, &i, o) < 0) return -1;
    }
    if (i >= argc) {
        log_error("exec: no command (see exec --help)");
        return -1;
    }
    o->spec.argv = argv + i;
    return 0;
}

/* Checked before the spawn, so a bad --cwd is not mistaken for "command not
 * found". Returns 0, or -1 (logged). */
static int check_cwd(const char *cwd)
{
    int dfd = open(cwd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        log_error("exec: --cwd %s: %s", cwd, strerror(errno));
        return -1;
    }
    close(dfd);
    return 0;
}

int exec_cli_parse(int argc, char **argv, struct exec_opts *o)
{
    const char *lerr = NULL;
    int help;
    if (log_init(&lerr) < 0) {
        log_error("%s", lerr);
        return EXIT_USAGE;
    }
    if (parse_args(argc, argv, o, &help) < 0) return EXIT_USAGE;
    if (help) {
        fputs(exec_usage, stdout);
        return 0;
    }
    if (o->spec.cwd && check_cwd(o->spec.cwd) < 0) return EXIT_USAGE;
    return EXEC_GO;
}

char **exec_cli_shell_argv(char *const *cmd)
{
    size_t len = 1;
    for (char *const *c = cmd; *c; c++) len += strlen(*c) + 1;
    char *script = malloc(len);
    char **argv = malloc(4 * sizeof *argv);
    if (!script || !argv) {
        free(script);
        free(argv);
        return NULL;
    }
    script[0] = '\0';
    for (char *const *c = cmd; *c; c++) {
        if (c != cmd) strcat(script, " ");
        strcat(script, *c);
    }
    argv[0] = SHELL;
    argv[1] = "-c";
    argv[2] = script;
    argv[3] = NULL;
    return argv;
}

void exec_cli_shell_free(char **sh)
{
    if (!sh) return;
    free(sh[2]);
    free(sh);
}

static int put_int_or_null(struct buf *b, int v) { return v >= 0 ? buf_printf(b, "%d", v) : buf_puts(b, "null"); }
static const char *json_bool(int v) { return v ? "true" : "false"; }

/* The line, keys in the README's order, json.dumps shaped. */
static int result_line(struct buf *b, const struct exec_cmd *c)
{
    int code = WIFEXITED(c->status) ? WEXITSTATUS(c->status) : -1;
    int sig = WIFSIGNALED(c->status) ? WTERMSIG(c->status) : -1;
    if (buf_puts(b, SENTINEL_EXEC "{\"exit_code\": ") < 0 || put_int_or_null(b, code) < 0) return -1;
    if (buf_puts(b, ", \"signal\": ") < 0 || put_int_or_null(b, sig) < 0) return -1;
    if (buf_printf(b, ", \"timed_out\": %s, \"stdout\": ", json_bool(c->timed_out)) < 0) return -1;
    if (ring_json(b, &c->out.ring) < 0 || buf_puts(b, ", \"stderr\": ") < 0) return -1;
    if (ring_json(b, &c->err.ring) < 0) return -1;
    if (buf_printf(b, ", \"stdout_truncated\": %s, \"stderr_truncated\": %s, \"duration_ms\": %lld",
                   json_bool(ring_truncated(&c->out.ring)), json_bool(ring_truncated(&c->err.ring)),
                   exec_cmd_duration_ms(c)) < 0)
        return -1;
    /* Only when true, last: every other line stays as it was. */
    if (exec_cmd_oom_killed(c) && buf_puts(b, ", \"oom_killed\": true") < 0) return -1;
    return buf_puts(b, "}\n");
}

int exec_cli_report(const struct exec_cmd *c)
{
    struct buf b;
    /* Two rings of at most 1 GiB, each byte at most 6 bytes of JSON. */
    buf_init(&b, (size_t)-1 / 2);
    int rc = 0;
    if (result_line(&b, c) < 0) {
        log_error("exec: out of memory building the result");
        rc = 1;
    } else if (io_write_all(STDOUT_FILENO, b.data, b.len) < 0) {
        log_error("exec: cannot write the result: %s", strerror(errno));
        rc = 1;
    }
    buf_free(&b);
    return rc;
}
