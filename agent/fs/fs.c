/*
 * fs.c - `sandbox-agent fs OP ...`: parse the command line and hand the op
 * to its runner (fsrun.c), which calls the file service (agent/files) and
 * prints the result line (fsout.c).
 *
 * Owns the `fs` command line only: ops, options, their values, usage errors
 * (exit 2). Paths are taken as given, as bytes.
 */
#include "agent/fs/fs.h"
#include "agent/core/log.h"
#include "agent/core/num.h"
#include "agent/core/protocol.h"
#include "agent/core/sig.h"
#include "agent/fs/fsrun.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

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
    "  read PATH [--offset N] [--length N] [--max-bytes N]\n"
    "                                          the file's bytes on stdout: from the\n"
    "                                          offset, at most --length of them; none\n"
    "                                          when more than --max-bytes remain\n"
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
    O_LENGTH = 1 << 8,
};

struct op {
    const char *name;
    int npaths;
    unsigned allowed;
    int (*run)(const struct fs_args *a);
};

static const struct op ops[] = {
    {"list", 1, 0, fsrun_list},
    {"stat", 1, O_FOLLOW, fsrun_stat},
    {"mkdir", 1, O_PARENTS | O_MODE, fsrun_mkdir},
    {"remove", 1, O_RECURSIVE, fsrun_remove},
    {"move", 2, O_OVERWRITE, fsrun_move},
    {"write", 1, O_MODE | O_PARENTS | O_APPEND_, fsrun_write},
    {"read", 1, O_OFFSET | O_LENGTH | O_MAXBYTES, fsrun_read},
};

static const struct flag {
    const char *flag;
    unsigned bit;
    int takes_value;
} flags[] = {
    {"--follow", O_FOLLOW, 0},       {"--parents", O_PARENTS, 0},     {"--mode", O_MODE, 1},
    {"--recursive", O_RECURSIVE, 0}, {"--overwrite", O_OVERWRITE, 0}, {"--append", O_APPEND_, 0},
    {"--offset", O_OFFSET, 1},       {"--max-bytes", O_MAXBYTES, 1},  {"--length", O_LENGTH, 1},
};

/* The command line as written, before the values are parsed. */
struct words {
    unsigned seen;
    const char *mode_s, *offset_s, *max_s, *length_s;
    const char *paths[2];
    int npaths;
};

enum { PARSED = 0, HELP = 1, USAGE = -1 };

static int is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

static const struct op *find_op(const char *name)
{
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(name, ops[i].name)) return &ops[i];
    return NULL;
}

/* The option argv[*i] ("--flag", "--flag=VALUE" or "--flag VALUE"). */
static int take_option(const struct op *op, int argc, char **argv, int *i, struct words *w)
{
    const char *a = argv[*i], *val = NULL;
    size_t k, nf = sizeof flags / sizeof flags[0], alen = strcspn(a, "=");
    for (k = 0; k < nf; k++)
        if (strlen(flags[k].flag) == alen && !strncmp(a, flags[k].flag, alen)) break;
    if (k == nf || !(op->allowed & flags[k].bit)) {
        log_error("fs %s: unknown option '%s' (a path starting with '-' goes after --)", op->name, a);
        return USAGE;
    }
    if (flags[k].takes_value && a[alen] == '=') {
        val = a + alen + 1;
    } else if (flags[k].takes_value && *i + 1 < argc) {
        val = argv[++*i];
    } else if (flags[k].takes_value) {
        log_error("fs %s: %s needs a value", op->name, flags[k].flag);
        return USAGE;
    } else if (a[alen] == '=') {
        log_error("fs %s: %s takes no value", op->name, flags[k].flag);
        return USAGE;
    }
    w->seen |= flags[k].bit;
    if (flags[k].bit == O_MODE) w->mode_s = val;
    if (flags[k].bit == O_OFFSET) w->offset_s = val;
    if (flags[k].bit == O_MAXBYTES) w->max_s = val;
    if (flags[k].bit == O_LENGTH) w->length_s = val;
    return PARSED;
}

/* Options anywhere, paths in order; `--` ends the options. */
static int split_words(const struct op *op, int argc, char **argv, struct words *w)
{
    int dashdash = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!dashdash && !strcmp(a, "--")) {
            dashdash = 1;
        } else if (!dashdash && is_help(a)) {
            return HELP;
        } else if (!dashdash && a[0] == '-' && a[1]) {
            if (take_option(op, argc, argv, &i, w) < 0) return USAGE;
        } else if (w->npaths >= op->npaths) {
            log_error("fs %s: too many arguments ('%s')", op->name, a);
            return USAGE;
        } else {
            w->paths[w->npaths++] = a;
        }
    }
    if (w->npaths != op->npaths) {
        log_error("fs %s: expected %s", op->name, op->npaths == 2 ? "SRC and DST" : "a PATH");
        return USAGE;
    }
    return PARSED;
}

/* The option values, each in the one number grammar of num.h. */
static int parse_values(const struct op *op, const struct words *w, struct fs_args *a)
{
    if (w->mode_s && num_mode(w->mode_s, &a->mode) < 0) {
        log_error("fs %s: --mode '%s' is not an octal mode (0 to 7777)", op->name, w->mode_s);
        return USAGE;
    }
    /* All three fit an off_t. */
    if (w->offset_s && num_count(w->offset_s, INT64_MAX, &a->offset) < 0) {
        log_error("fs %s: --offset '%s' is not a byte count", op->name, w->offset_s);
        return USAGE;
    }
    if (w->max_s && num_count(w->max_s, INT64_MAX, &a->max) < 0) {
        log_error("fs %s: --max-bytes '%s' is not a byte count", op->name, w->max_s);
        return USAGE;
    }
    if (w->length_s && num_count(w->length_s, INT64_MAX, &a->length) < 0) {
        log_error("fs %s: --length '%s' is not a byte count", op->name, w->length_s);
        return USAGE;
    }
    a->paths[0] = w->paths[0];
    a->paths[1] = w->paths[1];
    a->follow = !!(w->seen & O_FOLLOW);
    a->parents = !!(w->seen & O_PARENTS);
    a->recursive = !!(w->seen & O_RECURSIVE);
    a->overwrite = !!(w->seen & O_OVERWRITE);
    a->append = !!(w->seen & O_APPEND_);
    a->has_mode = !!w->mode_s;
    a->has_max = !!w->max_s;
    a->has_length = !!w->length_s;
    return PARSED;
}

static int parse_args(const struct op *op, int argc, char **argv, struct fs_args *a)
{
    struct words w = {0, NULL, NULL, NULL, NULL, {NULL, NULL}, 0};
    int r = split_words(op, argc, argv, &w);
    return r != PARSED ? r : parse_values(op, &w, a);
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
    if (is_help(argv[1]) || !strcmp(argv[1], "help")) {
        fputs(fs_usage, stdout);
        return 0;
    }
    const struct op *op = find_op(argv[1]);
    if (!op) {
        log_error("fs: unknown op '%s' (see fs --help)", argv[1]);
        return EXIT_USAGE;
    }
    struct fs_args a = {{NULL, NULL}, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    int r = parse_args(op, argc, argv, &a);
    if (r == HELP) fputs(fs_usage, stdout);
    if (r != PARSED) return r == HELP ? 0 : EXIT_USAGE;
    /* A client that goes away must give us EPIPE to report, not kill us
     * halfway through a write or a removal. */
    sig_ignore_pipe();
    return op->run(&a);
}
