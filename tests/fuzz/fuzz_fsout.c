/*
 * fuzz_fsout.c - libFuzzer target: the `fs` mode's output (agent/fs/fsout.c).
 * Any bytes as name, path, link target and error message, any struct stat
 * numbers: the ENTRY and the error object are pure ASCII, valid JSON objects,
 * never a crash.
 */
#include "agent/core/buf.h"
#include "agent/core/jsoncheck.h"
#include "agent/fs/fsout.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void must_be_object(struct buf *b)
{
    struct jsoncheck jc;
    for (size_t i = 0; i < b->len; i++)
        if ((unsigned char)b->data[i] >= 0x80) __builtin_trap();
    if (jsoncheck(b->data, b->len, &jc) < 0 || jc.type != JSON_OBJECT) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The numbers first, then the bytes in three parts at the cut points. */
    struct stat st;
    memset(&st, 0, sizeof st);
    if (size < sizeof st + 2) return 0;
    memcpy(&st, data, sizeof st);
    data += sizeof st;
    size -= sizeof st;
    const char *bytes = (const char *)data + 2;
    size -= 2;
    size_t cut1 = data[0] % (size + 1);
    size_t cut2 = cut1 + data[1] % (size - cut1 + 1);

    struct files_entry ent = {bytes, cut1, bytes + cut1, cut2 - cut1, st, NULL, 0};
    if (S_ISLNK(st.st_mode)) {
        ent.target = (char *)bytes + cut2;
        ent.tlen = size - cut2;
    }
    struct buf b;
    buf_init(&b, 1 << 20);
    if (fsout_entry_json(&b, &ent) == 0) must_be_object(&b);

    /* The error object needs NUL-terminated text: the same bytes, cut at NULs. */
    char *msg = malloc(size + 1), *path = malloc(cut1 + 1);
    if (msg && path) {
        memcpy(msg, bytes, size);
        msg[size] = '\0';
        memcpy(path, bytes, cut1);
        path[cut1] = '\0';
        buf_reset(&b);
        int e = (int)(st.st_size % 200) - 1; /* FILES_ENOTREG, 0, errnos, unknown ones */
        if (buf_putc(&b, '{') == 0 && fsout_error_json(&b, e, size % 2 ? msg : NULL, path) == 0 &&
            buf_putc(&b, '}') == 0)
            must_be_object(&b);
    }
    free(msg);
    free(path);
    buf_free(&b);
    return 0;
}
