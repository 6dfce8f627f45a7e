/*
 * fuzz_query.c - libFuzzer target: what /files reads from a request's
 * target and headers (agent/api/http/query.c, http/hparam.c, rest/multipart.c's
 * Content-Type, asuser/path.c): query parameters, header parameters, codings,
 * boundaries and paths, for any bytes. Every result stays within its
 * bound, a resolved path is absolute, and never a crash, a leak or a hang.
 */
#include "agent/api/asuser/path.h"
#include "agent/api/http/hparam.h"
#include "agent/api/rest/multipart.h"
#include "agent/api/http/query.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    struct buf b;
    buf_init(&b, 4096);
    static const char *const names[] = {"path", "username", "", "a", "filename*", "boundary", "name"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int r = query_get(s, names[i], &b);
        if (r > 0 && (b.len > 4096 || b.data[b.len] != '\0')) __builtin_trap();
        r = hparam_get(s, names[i], &b);
        if (r > 0 && (b.len > 4096 || b.data[b.len] != '\0')) __builtin_trap();
    }
    (void)hparam_accepts(s, "gzip");
    (void)hparam_type_is(s, "multipart/form-data");
    char boundary[MP_BOUNDARY_MAX + 1];
    int n = multipart_content_type(s, boundary);
    if (n > MP_BOUNDARY_MAX || (n > 0 && strlen(boundary) != (size_t)n)) __builtin_trap();
    const char *why;
    struct buf p;
    buf_init(&p, ASUSER_PATH_MAX);
    if (asuser_path_resolve("/home/user", NULL, s, &p, &why) == 0) {
        if (p.data[0] != '/' || p.len > ASUSER_PATH_MAX) __builtin_trap();
        /* Cleaning a clean relative result changes nothing. */
        if (s[0] != '/') {
            char *again = strdup(p.data);
            asuser_path_clean(again);
            if (strcmp(again, p.data)) __builtin_trap();
            free(again);
        }
    }
    buf_free(&p);
    buf_free(&b);
    free(s);
    return 0;
}
