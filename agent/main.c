/*
 * main.c - the command line: pick a mode and hand it argv. Nothing else lives
 * here; each mode parses its own options and returns its exit code.
 */
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/nonce.h"
#include "agent/core/protocol.h"
#include "agent/core/sig.h"
#include "agent/fs/fs.h"
#include "agent/mcp/mcpstatus.h"
#include "agent/serve/serve.h"
#include "inotify/watch/watch.h"
#include "runner/exec/exec.h"
#include "runner/run/run.h"
#include "agent/session/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: " SA_NAME " COMMAND [ARGS...]\n"
    "\n"
    "One static binary for code-execution sandboxes: the container's PID 1 and\n"
    "the helper a host platform execs for file operations and watches.\n"
    "\n"
    "commands:\n"
    "  run [-- CMD...]            run a job as PID 1 and report its outcome\n"
    "  session -- HANDLER...      warm session daemon over the mailbox file\n"
    "  fs OP ...                  file operations (list, stat, mkdir, remove, move, write, read)\n"
    "  watch ROOT RECURSIVE01 [TIMEOUT]   inotify watcher\n"
    "  exec [OPTIONS] -- CMD...   a bounded command, result as JSON\n"
    "  mcp-status [NAME]          MCP connector status from " MCP_STATUS_PATH "\n"
    "  serve                      serve E2B's envd API over HTTP as PID 1\n"
    "\n"
    "`" SA_NAME " COMMAND --help` describes each command; --version prints the version.\n";

struct mode {
    const char *name;
    int (*main)(int, char **);
};

static const struct mode modes[] = {
    {"run", run_main},       {"session", session_main}, {"fs", fs_main},
    {"watch", watch_main},   {"exec", exec_main},       {"mcp-status", mcpstatus_main},
    {"serve", serve_main},
};

int main(int argc, char **argv)
{
    /* Before anything else, in every mode: `docker exec` hands the helper
     * modes (fs, watch, exec) the container's whole -e environment, nonce
     * included, and a workload of the same uid could read it from their
     * /proc/PID/environ. run and session get their copy from nonce_take. */
    struct nonce n;
    const char *err;
    /* First of all: a closed 0, 1 or 2 must not become the event loop's
     * fd (`run -- cmd >&-`), and the signal state we were started with is
     * what every workload gets back. */
    if (io_ensure_std_fds() < 0) return EXIT_USAGE;
    sig_record_initial();
    if (nonce_take(&n, &err) < 0) {
        log_error("%s", err);
        return EXIT_USAGE;
    }
    nonce_wipe(&n);
    if (argc < 2) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        puts(SA_NAME " " SA_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (!strcmp(cmd, modes[i].name)) {
            int rc = modes[i].main(argc - 1, argv + 1);
            fflush(stdout);
            return rc;
        }
    fprintf(stderr, SA_NAME ": unknown command '%s' (see " SA_NAME " --help)\n", cmd);
    return EXIT_USAGE;
}
