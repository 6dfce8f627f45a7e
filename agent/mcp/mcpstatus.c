/*
 * mcpstatus.c - `sandbox-agent mcp-status [NAME] [--path P]`: the per-connector
 * MCP status the platform publishes in /snowflake/mcp/status.json, read as the
 * Python SDK's mcp_server_status() reads it, for workloads that are not Python.
 *
 * Fail-soft like the SDK: a missing, unreadable, oversized, non-UTF-8 or
 * malformed file is "no document"; a missing entry (or a null one) or one that
 * is not an object gives status "unknown"; each field is kept only when it is
 * a non-empty string, and status is clamped to live | reconnect_required |
 * unknown. Output on stdout, one line of json.dumps-style JSON:
 *   with NAME: {"name", "status", "fqn", "gs_error_code", "detail", "last_checked_at"}
 *   without:   a list of those, one per entry in file order ([] for no document).
 * A duplicate key behaves as in Python's json: the last value, at the place of
 * the first occurrence.
 *
 * Exit 0, or 2 for a usage error (README, section "sandbox-agent
 * mcp-status"): not even an answer that cannot be written (out of memory,
 * stdout gone) changes the status; it is said on stderr.
 */
#include "agent/mcp/mcpstatus.h"
#include "agent/core/buf.h"
#include "agent/core/hash.h"
#include "agent/core/io.h"
#include "agent/core/jsoncheck.h"
#include "agent/core/jsonw.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Far beyond a status file of any real number of connectors. */
#define STATUS_MAX_BYTES (4 * 1024 * 1024)
/* The answer: each entry of at least 5 bytes of input ("a":0,) gives about
 * 115 bytes, and no string byte is escaped to more than 6: under 32x. */
#define OUT_MAX (32 * (size_t)STATUS_MAX_BYTES)

static const char mcp_usage[] =
    "usage: " SA_NAME " mcp-status [NAME] [--path FILE]\n"
    "\n"
    "Print the in-sandbox MCP connection status as JSON on stdout: one object\n"
    "{\"name\", \"status\", \"fqn\", \"gs_error_code\", \"detail\", \"last_checked_at\"}\n"
    "for NAME, else a list with one per server. status is live,\n"
    "reconnect_required or unknown (no file, no entry: unknown, never an error).\n"
    "FILE defaults to " MCP_STATUS_PATH ".\n";

/* Read fd to its end into p (cap bytes). Returns the bytes read, or -1
 * when reading fails or the file holds cap bytes or more. */
static ssize_t read_upto(int fd, char *p, size_t cap)
{
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, p + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) return (ssize_t)n;
        n += (size_t)r;
        /* Grew since the fstat: more than we were told, so refuse. */
        if (n == cap) return -1;
    }
}

/* The file's text, NUL-terminated, or NULL (fail-soft: logged at info). */
static char *read_doc(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        log_info("mcp-status: %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    char *p = NULL;
    ssize_t n = -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > STATUS_MAX_BYTES)
        log_info("mcp-status: %s: not a regular file of at most %d bytes", path, STATUS_MAX_BYTES);
    else if ((p = malloc((size_t)st.st_size + 2)))
        n = read_upto(fd, p, (size_t)st.st_size + 1);
    close(fd);
    if (n < 0) {
        free(p);
        return NULL;
    }
    p[n] = '\0';
    *len = (size_t)n;
    return p;
}

static int put_field(struct buf *b, const char *key, const cJSON *obj, int clamp)
{
    const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    const char *s = cJSON_IsString(v) && v->valuestring && v->valuestring[0] ? v->valuestring : NULL;
    if (buf_puts(b, ", ") < 0 || jsonw_key(b, key) < 0) return -1;
    if (clamp) {
        if (!s || (strcmp(s, "live") && strcmp(s, "reconnect_required"))) s = "unknown";
    }
    if (!s) return buf_puts(b, "null");
    return jsonw_str(b, s, strlen(s), JSONW_REPLACE);
}

/* One status object; raw NULL or not an object: unknown. */
static int put_status(struct buf *b, const char *name, const cJSON *raw)
{
    const cJSON *obj = cJSON_IsObject(raw) ? raw : NULL;
    if (buf_putc(b, '{') < 0 || jsonw_key(b, "name") < 0 || jsonw_str(b, name, strlen(name), JSONW_SURROGATEESCAPE) < 0)
        return -1;
    if (put_field(b, "status", obj, 1) < 0) return -1;
    static const char *fields[] = {"fqn", "gs_error_code", "detail", "last_checked_at"};
    for (int i = 0; i < 4; i++)
        if (put_field(b, fields[i], obj, 0) < 0) return -1;
    return buf_putc(b, '}');
}

/* One key of the document: where it first occurs, its last value. */
struct key {
    struct hnode node;
    const char *name;
    const cJSON *last;
};

static const char *key_of(const cJSON *c) { return c->string ? c->string : ""; }

static struct key *find_key(const struct htab *t, const char *name, uint64_t h)
{
    struct hnode *it;
    HASH_FOR_EACH(t, h, it) {
        struct key *k = HASH_ENTRY(it, struct key, node);
        if (!strcmp(k->name, name)) return k;
    }
    return NULL;
}

/* The keys of doc as Python's dict has them: each once, in the place of its
 * first occurrence, with its last value. keys has room for every member. */
static size_t dict_keys(const cJSON *doc, struct key *keys, struct htab *t)
{
    size_t nk = 0;
    for (const cJSON *c = doc->child; c; c = c->next) {
        const char *name = key_of(c);
        uint64_t h = hash_bytes(HASH_SEED, name, strlen(name));
        struct key *k = find_key(t, name, h);
        if (k) {
            k->last = c;
            continue;
        }
        keys[nk] = (struct key){{NULL, 0}, name, c};
        hash_add(t, &keys[nk++].node, h);
    }
    return nk;
}

/* Every entry of doc, as a list. */
static int put_all(struct buf *b, const cJSON *doc)
{
    size_t n = 0;
    for (const cJSON *c = doc ? doc->child : NULL; c; c = c->next) n++;
    if (buf_putc(b, '[') < 0) return -1;
    if (n == 0) return buf_putc(b, ']');
    struct key *keys = malloc(n * sizeof *keys);
    struct htab t;
    if (!keys || hash_init(&t, n, 0) < 0) {
        free(keys);
        return -1;
    }
    size_t nk = dict_keys(doc, keys, &t);
    int rc = 0;
    for (size_t i = 0; i < nk && rc == 0; i++)
        if ((i && buf_puts(b, ", ") < 0) || put_status(b, keys[i].name, keys[i].last) < 0) rc = -1;
    hash_free(&t);
    free(keys);
    return rc < 0 ? -1 : buf_putc(b, ']');
}

/* One entry: the last of that name, as a dict would keep it (unknown when none). */
static int put_one(struct buf *b, const char *name, const cJSON *doc)
{
    const cJSON *raw = NULL;
    for (const cJSON *c = doc ? doc->child : NULL; c; c = c->next)
        if (c->string && !strcmp(c->string, name)) raw = c;
    return put_status(b, name, raw);
}

enum { PARSED = 0, HELP = 1, USAGE = -1 };

/* [NAME] [--path P | --path=P], options anywhere before `--`. */
static int parse_args(int argc, char **argv, const char **name, const char **path)
{
    int dashdash = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!dashdash && !strcmp(a, "--")) {
            dashdash = 1;
        } else if (!dashdash && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
            return HELP;
        } else if (!dashdash && !strncmp(a, "--path", 6) && (a[6] == '=' || !a[6])) {
            if (a[6] == '=') {
                *path = a + 7;
            } else if (i + 1 < argc) {
                *path = argv[++i];
            } else {
                log_error("mcp-status: --path needs a value");
                return USAGE;
            }
        } else if (!dashdash && a[0] == '-' && a[1]) {
            log_error("mcp-status: unknown option '%s' (see mcp-status --help)", a);
            return USAGE;
        } else if (!*name) {
            *name = a;
        } else {
            log_error("mcp-status: too many arguments ('%s')", a);
            return USAGE;
        }
    }
    return PARSED;
}

/* The document, or NULL for none. Strict first (UTF-8, grammar), as
 * Python's reader would refuse, then cJSON for the values. Only an object
 * is a document. */
static cJSON *load_doc(const char *path)
{
    size_t len = 0;
    char *text = read_doc(path, &len);
    cJSON *doc = NULL;
    struct jsoncheck jc;
    if (text && jsoncheck(text, len, &jc) == 0 && jc.type == JSON_OBJECT)
        doc = cJSON_ParseWithLength(text, len);
    else if (text)
        log_info("mcp-status: %s is not a JSON object", path);
    free(text);
    return doc;
}

int mcpstatus_main(int argc, char **argv)
{
    const char *cerr = NULL, *name = NULL, *path = MCP_STATUS_PATH;
    if (log_init(&cerr) < 0) {
        log_error("%s", cerr);
        return EXIT_USAGE;
    }
    int r = parse_args(argc, argv, &name, &path);
    if (r == HELP) fputs(mcp_usage, stdout);
    if (r != PARSED) return r == HELP ? 0 : EXIT_USAGE;

    cJSON *doc = load_doc(path);
    struct buf b;
    buf_init(&b, OUT_MAX);
    if ((name ? put_one(&b, name, doc) : put_all(&b, doc)) < 0 || buf_putc(&b, '\n') < 0)
        log_error("mcp-status: out of memory");
    else if (io_write_all(STDOUT_FILENO, b.data, b.len) < 0)
        log_error("mcp-status: cannot write to stdout: %s", strerror(errno));
    cJSON_Delete(doc);
    buf_free(&b);
    /* Fail-soft to the end: the status says only whether the call was valid. */
    return 0;
}
