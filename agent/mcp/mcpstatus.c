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
 * the first occurrence. Exit 0, or 2 for a usage error.
 */
#include "agent/mcp/mcpstatus.h"
#include "agent/core/buf.h"
#include "agent/core/io.h"
#include "agent/core/jsoncheck.h"
#include "agent/core/jsonw.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Far beyond a status file of any real number of connectors. */
#define STATUS_MAX_BYTES (4 * 1024 * 1024)

static const char mcp_usage[] =
    "usage: " SA_NAME " mcp-status [NAME] [--path FILE]\n"
    "\n"
    "Print the in-sandbox MCP connection status as JSON on stdout: one object\n"
    "{\"name\", \"status\", \"fqn\", \"gs_error_code\", \"detail\", \"last_checked_at\"}\n"
    "for NAME, else a list with one per server. status is live,\n"
    "reconnect_required or unknown (no file, no entry: unknown, never an error).\n"
    "FILE defaults to " MCP_STATUS_PATH ".\n";

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
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > STATUS_MAX_BYTES) {
        log_info("mcp-status: %s: not a regular file of at most %d bytes", path, STATUS_MAX_BYTES);
        goto out;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    if (!(p = malloc(cap + 1))) goto out;
    for (;;) {
        ssize_t r = read(fd, p + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            free(p);
            p = NULL;
            goto out;
        }
        if (r == 0) break;
        n += (size_t)r;
        if (n == cap) {
            /* Grew since the fstat: more than we were told, so refuse. */
            free(p);
            p = NULL;
            goto out;
        }
    }
    p[n] = '\0';
    *len = n;
out:
    close(fd);
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

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The entries of doc as Python's dict has them: each key once, in the place
 * of its first occurrence, with its last value. */
static int put_all(struct buf *b, const cJSON *doc)
{
    size_t n = 0;
    for (const cJSON *c = doc ? doc->child : NULL; c; c = c->next) n++;
    if (buf_putc(b, '[') < 0) return -1;
    if (n == 0) return buf_putc(b, ']');
    const cJSON **items = malloc(n * sizeof *items);
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    /* slot -> index of the first item with that key (+1; 0 is empty) */
    size_t *slots = calloc(cap, sizeof *slots);
    /* item index -> index of the last item with its key (for firsts) */
    size_t *last = malloc(n * sizeof *last);
    int rc = -1;
    if (!items || !slots || !last) goto out;
    size_t i = 0;
    for (const cJSON *c = doc->child; c; c = c->next) items[i++] = c;
    for (i = 0; i < n; i++) {
        const char *k = items[i]->string ? items[i]->string : "";
        size_t s = (size_t)hash(k) & (cap - 1);
        while (slots[s] && strcmp(items[slots[s] - 1]->string ? items[slots[s] - 1]->string : "", k))
            s = (s + 1) & (cap - 1);
        if (!slots[s]) {
            slots[s] = i + 1;
            last[i] = i;
        } else {
            last[slots[s] - 1] = i;
            last[i] = (size_t)-1; /* a repeat: not printed */
        }
    }
    int first = 1;
    for (i = 0; i < n; i++) {
        if (last[i] == (size_t)-1) continue;
        if (!first && buf_puts(b, ", ") < 0) goto out;
        first = 0;
        if (put_status(b, items[i]->string ? items[i]->string : "", items[last[i]]) < 0) goto out;
    }
    rc = buf_putc(b, ']');
out:
    free(items);
    free(slots);
    free(last);
    return rc;
}

int mcp_status_main(int argc, char **argv)
{
    const char *cerr = NULL;
    const char *name = NULL, *path = MCP_STATUS_PATH;
    int dashdash = 0;
    if (log_init(&cerr) < 0) {
        log_error("%s", cerr);
        return EXIT_USAGE;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!dashdash && !strcmp(a, "--")) {
            dashdash = 1;
        } else if (!dashdash && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
            fputs(mcp_usage, stdout);
            return 0;
        } else if (!dashdash && !strncmp(a, "--path", 6) && (a[6] == '=' || !a[6])) {
            if (a[6] == '=') {
                path = a + 7;
            } else if (i + 1 < argc) {
                path = argv[++i];
            } else {
                log_error("mcp-status: --path needs a value");
                return EXIT_USAGE;
            }
        } else if (!dashdash && a[0] == '-' && a[1]) {
            log_error("mcp-status: unknown option '%s' (see mcp-status --help)", a);
            return EXIT_USAGE;
        } else if (!name) {
            name = a;
        } else {
            log_error("mcp-status: too many arguments ('%s')", a);
            return EXIT_USAGE;
        }
    }

    size_t len = 0;
    char *text = read_doc(path, &len);
    cJSON *doc = NULL;
    struct json_check jc;
    /* Strict first (UTF-8, grammar), as Python's reader would refuse, then
     * cJSON for the values. Only an object is a document. */
    if (text && json_check(text, len, &jc) == 0 && jc.type == JSON_OBJECT)
        doc = cJSON_ParseWithLength(text, len);
    else if (text)
        log_info("mcp-status: %s is not a JSON object", path);
    free(text);

    struct buf b;
    buf_init(&b, (size_t)-1 / 2);
    int r;
    if (name) {
        const cJSON *raw = NULL;
        /* The last entry of that name, as a dict would keep it. */
        for (const cJSON *c = doc ? doc->child : NULL; c; c = c->next)
            if (c->string && !strcmp(c->string, name)) raw = c;
        r = put_status(&b, name, raw);
    } else {
        r = put_all(&b, doc);
    }
    cJSON_Delete(doc);
    if (r < 0 || buf_putc(&b, '\n') < 0) {
        log_error("mcp-status: out of memory");
        buf_free(&b);
        return 1;
    }
    int rc = 0;
    if (io_write_all(STDOUT_FILENO, b.data, b.len) < 0) {
        log_error("mcp-status: cannot write to stdout: %s", strerror(errno));
        rc = 1;
    }
    buf_free(&b);
    return rc;
}
