/*
 * fsops.c - `sandbox-agent fs OP ...`: parse the command line and hand each op
 * to its file (fslist.c, fsread.c, fswrite.c, fsremove.c, fsmove.c).
 *
 * Owns the `fs` command line only: options, their values, usage errors
 * (exit 2). The result line of each op is printed by the op itself through
 * fsout.c; paths are taken as given, as bytes.
 */
#include "agent/fs/fs.h"
#include "agent/core/num.h"
#include "agent/files/fsimpl.h"
#include "agent/files/fsout.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "a/b//" -> "a/b"; "/" and "//" stay "/". In place: argv strings are ours. */
static void strip_trailing_slashes(char *p)
{
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') p[--n] = '\0';
}

static const char fs_usage[] =
    "usage: " SA_NAME " fs OP [OPTIONS] [--] PATH...\n"
    "\n"
    "One file operation; the result is one line " SENTINEL_FS "<json> on stdout\n"
    "(on stderr for read, whose stdout carries the file's bytes).\n"
    "\n"
    "ops:\n"
    "  list PATH                               entries of a directory (streamed)\n"
    "  stat PATH [--follow]                    one entry (lstat unless --follow)\n"
    "  mkdir PATH [--parents] [--mode OCTAL]   create a directory\n"
    "  remove PATH [--recursive]               remove a file, a directory, a tree; never /\n"
    "  move SRC DST [--overwrite]              rename, across filesystems too\n"
    "  write PATH [--mode OCTAL] [--parents] [--append]\n"
    "                                          stdin to the file, atomically unless --append\n"
    "  read PATH [--offset N] [--max-bytes N]  the file's bytes on stdout\n"
    "\n"
    "A path that starts with '-' goes after `--`.\n"
    "\n"
    "exit status: 0 ok, 66 missing or unreadable, 67 a directory where a file was\n"
    "needed, 68 not a regular file, 69 over --max-bytes, 1 anything else, 2 usage.\n";

enum {
    O_FOLLOW = 1 << 0,
    O_PARENTS = 1 << 1,
    O_MODE = 1 << 2,
    O_RECURSIVE = 1 << 3,
    O_OVERWRITE = 1 << 4,
    O_APPEND_ = 1 << 5,
    O_OFFSET = 1 << 6,
    O_MAXBYTES = 1 << 7,
};

struct op {
    const char *name;
    int npaths;
    unsigned allowed;
};

static const struct op ops[] = {
    {"list", 1, 0},
    {"stat", 1, O_FOLLOW},
    {"mkdir", 1, O_PARENTS | O_MODE},
    {"remove", 1, O_RECURSIVE},
    {"move", 2, O_OVERWRITE},
    {"write", 1, O_MODE | O_PARENTS | O_APPEND_},
    {"read", 1, O_OFFSET | O_MAXBYTES},
};

static const struct {
    const char *flag;
    unsigned bit;
    int takes_value;
} flags[] = {
    {"--follow", O_FOLLOW, 0},       {"--parents", O_PARENTS, 0},     {"--mode", O_MODE, 1},
    {"--recursive", O_RECURSIVE, 0}, {"--overwrite", O_OVERWRITE, 0}, {"--append", O_APPEND_, 0},
    {"--offset", O_OFFSET, 1},       {"--max-bytes", O_MAXBYTES, 1},
};

char *fs_join(const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name);
    int slash = dl > 0 && dir[dl - 1] != '/';
    char *p = malloc(dl + (size_t)slash + nl + 1);
    if (!p) return NULL;
    memcpy(p, dir, dl);
    if (slash) p[dl] = '/';
    memcpy(p + dl + slash, name, nl + 1);
    return p;
}

int fs_main(int argc, char **argv)
{
    const char *cerr = NULL;
    if (log_init(&cerr) < 0) {
        log_error("%s", cerr);
        return EXIT_USAGE;
    }
    if (argc < 2) {
        fputs(fs_usage, stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        fputs(fs_usage, stdout);
        return 0;
    }
    const struct op *op = NULL;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(argv[1], ops[i].name)) op = &ops[i];
    if (!op) {
        log_error("fs: unknown op '%s' (see fs --help)", argv[1]);
        return EXIT_USAGE;
    }

    unsigned seen = 0;
    char *paths[2] = {NULL, NULL}; /* argv strings: ours to edit */
    const char *mode_s = NULL, *offset_s = NULL, *max_s = NULL;
    int npaths = 0, dashdash = 0;
    for (int i = 2; i < argc; i++) {
        char *a = argv[i];
        if (!dashdash && !strcmp(a, "--")) {
            dashdash = 1;
            continue;
        }
        if (!dashdash && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
            fputs(fs_usage, stdout);
            return 0;
        }
        if (!dashdash && a[0] == '-' && a[1]) {
            size_t k, nf = sizeof flags / sizeof flags[0];
            const char *val = NULL;
            size_t alen = strcspn(a, "=");
            for (k = 0; k < nf; k++)
                if (strlen(flags[k].flag) == alen && !strncmp(a, flags[k].flag, alen)) break;
            if (k == nf || !(op->allowed & flags[k].bit)) {
                log_error("fs %s: unknown option '%s' (a path starting with '-' goes after --)",
                          op->name, a);
                return EXIT_USAGE;
            }
            if (flags[k].takes_value) {
                if (a[alen] == '=') {
                    val = a + alen + 1;
                } else if (i + 1 < argc) {
                    val = argv[++i];
                } else {
                    log_error("fs %s: %s needs a value", op->name, flags[k].flag);
                    return EXIT_USAGE;
                }
            } else if (a[alen] == '=') {
                log_error("fs %s: %s takes no value", op->name, flags[k].flag);
                return EXIT_USAGE;
            }
            seen |= flags[k].bit;
            if (flags[k].bit == O_MODE) mode_s = val;
            if (flags[k].bit == O_OFFSET) offset_s = val;
            if (flags[k].bit == O_MAXBYTES) max_s = val;
            continue;
        }
        if (npaths >= op->npaths) {
            log_error("fs %s: too many arguments ('%s')", op->name, a);
            return EXIT_USAGE;
        }
        paths[npaths++] = a;
    }
    if (npaths != op->npaths) {
        log_error("fs %s: expected %s", op->name, op->npaths == 2 ? "SRC and DST" : "a PATH");
        return EXIT_USAGE;
    }
    mode_t mode = 0;
    uint64_t offset = 0, max = 0;
    if (mode_s && num_mode(mode_s, &mode) < 0) {
        log_error("fs %s: --mode '%s' is not an octal mode (0 to 7777)", op->name, mode_s);
        return EXIT_USAGE;
    }
    /* Both fit an off_t. */
    if (offset_s && num_count(offset_s, INT64_MAX, &offset) < 0) {
        log_error("fs %s: --offset '%s' is not a byte count", op->name, offset_s);
        return EXIT_USAGE;
    }
    if (max_s && num_count(max_s, INT64_MAX, &max) < 0) {
        log_error("fs %s: --max-bytes '%s' is not a byte count", op->name, max_s);
        return EXIT_USAGE;
    }
    for (int i = 0; i < npaths; i++)
        if (!paths[i][0]) {
            /* The kernel's answer for "", reported like any other. */
            if (!strcmp(op->name, "read")) fsout_set_fd(2);
            return fs_fail(op->name, ENOENT, NULL, paths[i]);
        }

    /* A client that goes away must give us EPIPE to report, not kill us
     * halfway through a write or a removal. */
    signal(SIGPIPE, SIG_IGN);

    const char *name = op->name;
    if (!strcmp(name, "list")) return fs_op_list(paths[0]);
    if (!strcmp(name, "stat")) return fs_op_stat(paths[0], !!(seen & O_FOLLOW));
    if (!strcmp(name, "mkdir")) return fs_op_mkdir(paths[0], !!(seen & O_PARENTS), !!mode_s, mode);
    /* remove and move act on the named entry itself: "link/" must name the
     * symlink, not the directory it points to (the kernel follows a final
     * symlink when the path ends in '/', O_NOFOLLOW or not). */
    if (!strcmp(name, "remove")) {
        strip_trailing_slashes(paths[0]);
        return fs_op_remove(paths[0], !!(seen & O_RECURSIVE));
    }
    if (!strcmp(name, "move")) {
        strip_trailing_slashes(paths[0]);
        strip_trailing_slashes(paths[1]);
        return fs_op_move(paths[0], paths[1], !!(seen & O_OVERWRITE));
    }
    if (!strcmp(name, "write"))
        return fs_op_write(paths[0], !!mode_s, mode, !!(seen & O_PARENTS), !!(seen & O_APPEND_));
    return fs_op_read(paths[0], offset, !!max_s, max);
}
