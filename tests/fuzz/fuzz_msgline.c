/*
 * fuzz_msgline.c - libFuzzer target: the session's message lines (msgline.c)
 * on untrusted bytes, as the mailbox path meets them (mailbox.c itself, the
 * file follower, is not fuzzed here). The input is split into lines by lsplit
 * (fed in chunks whose sizes come from the input, with a small line bound so
 * the too-long path runs), each line is read as a request and as a handler
 * reply, and every id that comes out must be a valid id; the error and reply
 * lines built from it must be one line of valid JSON / base64. Every valid id
 * goes through the duplicate window (seen.c).
 */
#include "agent/core/jsoncheck.h"
#include "agent/core/lsplit.h"
#include "agent/session/msgline.h"
#include "agent/session/seen.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct seen *seen;

static void check_id(const char *id, size_t n)
{
    if (n && (!msgline_id_valid(id, n) || strlen(id) != n)) __builtin_trap();
    if (n) seen_check_add(seen, id, n);
}

static int on_line(void *ctx, enum lsplit_kind kind, const char *p, size_t n)
{
    (void)ctx;
    char id[MSG_ID_MAX + 1];
    size_t idlen;
    if (kind == LSPLIT_TOO_LARGE) {
        if (n > LSPLIT_HEAD) __builtin_trap();
        if (msgline_peek_id(p, n, id, &idlen)) check_id(id, idlen);
        return 0;
    }
    if (memchr(p, '\n', n)) __builtin_trap();
    struct msgline_request m;
    enum msgline_kind k = msgline_parse_request(p, n, &m);
    if (k == MSG_OK && !m.idlen) __builtin_trap();
    if (k == MSG_OK && !(m.timeout >= 0)) __builtin_trap();
    check_id(m.id, m.idlen);
    if (m.idlen) {
        struct buf b, line;
        struct jsoncheck jc;
        buf_init(&b, 1 << 20);
        buf_init(&line, 1 << 22);
        if (msgline_error_json(&b, m.id, m.idlen, "bad_request", m.why ? m.why : "x") < 0) __builtin_trap();
        if (jsoncheck(b.data, b.len, &jc) != 0 || jc.type != JSON_OBJECT) __builtin_trap();
        if (msgline_reply_line(&line, m.id, m.idlen, "nonce", 5, b.data, b.len) < 0) __builtin_trap();
        if (memchr(line.data, '\n', line.len) != line.data + line.len - 1) __builtin_trap();
        buf_free(&b);
        buf_free(&line);
    }
    if (msgline_parse_reply(p, n, id, &idlen)) check_id(id, idlen);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!seen) seen = seen_new(64);
    if (size < 1) return 0;
    struct lsplit s;
    lsplit_init(&s, 64 + (data[0] & 0x3f) * 64);
    size_t step = 1 + (data[0] >> 4) * 7, i = 1;
    while (i < size) {
        size_t k = size - i < step ? size - i : step;
        if (lsplit_feed(&s, (const char *)data + i, k, on_line, NULL) != k) __builtin_trap();
        i += k;
    }
    /* The whole input as one line too (no bound). */
    on_line(NULL, LSPLIT_LINE, (const char *)data, strnlen((const char *)data, size) == size &&
            !memchr(data, '\n', size) ? size : 0);
    lsplit_free(&s);
    return 0;
}
