/*
 * result.c - the result file reader (see result.h).
 */
#include "runner/run/result.h"
#include "agent/core/err.h"
#include "agent/core/jsoncheck.h"
#include "agent/core/protocol.h"
#include "agent/core/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void result_free(struct job_result *r)
{
    free(r->raw);
    r->raw = NULL;
    r->len = 0;
}

int result_max_bytes(size_t *out, char *err)
{
    const char *v = getenv(ENV_RESULT_MAX);
    *out = DEFAULT_RESULT_MAX;
    if (!v || !*v) return 0;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    /* 1 GiB is far past any sentinel a log pipeline carries; refuse more. */
    if (errno || *end || end == v || v[0] == '-' || n == 0 || n > (1ULL << 30)) {
        err_set(err, ENV_RESULT_MAX " must be a whole number of bytes from 1 to 1073741824, not '%.40s'", v);
        return -1;
    }
    *out = (size_t)n;
    return 0;
}

void result_accept(char *text, size_t n, struct job_result *out)
{
    struct jsoncheck jc;
    size_t bad = utf8_check((const unsigned char *)text, n);
    if (bad < n) {
        snprintf(out->error, sizeof out->error, "result file is not valid UTF-8 (byte %zu)", bad);
        return;
    }
    if (jsoncheck(text, n, &jc) < 0) {
        snprintf(out->error, sizeof out->error, "result file is not valid JSON: %s at byte %zu",
                 jc.err, jc.err_off);
        return;
    }
    if (jc.type != JSON_OBJECT) {
        snprintf(out->error, sizeof out->error, "result file holds %s, not a JSON object",
                 jsoncheck_type_name(jc.type));
        return;
    }
    out->raw = text;
    out->len = jc.end;
    /* Trim leading whitespace in place so raw is exactly the object. */
    if (jc.start) memmove(text, text + jc.start, jc.end - jc.start);
    out->len = jc.end - jc.start;
}

void result_read(const char *path, size_t max, struct job_result *out)
{
    struct stat st;
    out->raw = NULL;
    out->len = 0;
    out->error[0] = '\0';

    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT) return; /* no result written: not an error */
        if (errno == ELOOP)
            snprintf(out->error, sizeof out->error, "result file is a symbolic link");
        else
            snprintf(out->error, sizeof out->error, "cannot open result file: %s", strerror(errno));
        return;
    }
    if (fstat(fd, &st) < 0) {
        snprintf(out->error, sizeof out->error, "cannot stat result file: %s", strerror(errno));
        close(fd);
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(out->error, sizeof out->error, "result file is not a regular file");
        close(fd);
        return;
    }
    if ((unsigned long long)st.st_size > max) {
        snprintf(out->error, sizeof out->error, "result file is %lld bytes, over the %zu byte limit",
                 (long long)st.st_size, max);
        close(fd);
        return;
    }
    /* The file may still grow while we read: read at most max+1 bytes. */
    char *text = malloc(max + 1);
    size_t n = 0;
    if (!text) {
        snprintf(out->error, sizeof out->error, "result file: out of memory");
        close(fd);
        return;
    }
    while (n <= max) {
        ssize_t r = read(fd, text + n, max + 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            snprintf(out->error, sizeof out->error, "cannot read result file: %s", strerror(errno));
            break;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (!out->error[0] && n > max)
        snprintf(out->error, sizeof out->error, "result file is over the %zu byte limit", max);
    if (!out->error[0]) result_accept(text, n, out);
    if (!out->raw) free(text);
}
