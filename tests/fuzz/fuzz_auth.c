/*
 * fuzz_auth.c - libFuzzer target: Basic credentials and the strict base64
 * decoder under them (agent/serve/auth.c, agent/core/b64.c). Any header
 * value gives a plain user name or a refusal; what decodes re-encodes to the
 * same bytes (padding and alphabet aside).
 */
#include "agent/api/http/auth.h"
#include "agent/core/b64.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    char user[AUTH_USER_MAX + 1];
    if (auth_basic_user(s, user) == 0) {
        size_t n = strlen(user);
        if (n == 0 || n > AUTH_USER_MAX) __builtin_trap();
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)user[i] < 0x20 || user[i] == 0x7f) __builtin_trap();
    }
    struct buf dec, enc;
    buf_init(&dec, size);
    buf_init(&enc, 2 * size + 8);
    if (b64_decode(&dec, s, size) == 0) {
        if (dec.len > size / 4 * 3 + 2) __builtin_trap();
        if (b64_encode(&enc, dec.data, dec.len) < 0) __builtin_trap();
        /* Same text once the URL-safe alphabet and the padding are undone. */
        size_t k = size;
        while (k && s[k - 1] == '=') k--;
        for (size_t i = 0; i < k; i++) {
            char c = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
            /* The last character may carry bits the decoder drops. */
            if (i + 1 < k && enc.data[i] != c) __builtin_trap();
        }
    }
    buf_free(&dec);
    buf_free(&enc);
    free(s);
    return 0;
}
