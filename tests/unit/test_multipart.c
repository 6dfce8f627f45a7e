/*
 * test_multipart.c - the streaming multipart/form-data parser
 * (agent/api/rest/multipart.c): parts, names and filenames, data that looks like
 * a delimiter, every split of the input and every DATA bound giving the same
 * result, preamble and epilogue, malformed bodies, the Content-Type.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/rest/multipart.h"

#include <stdio.h>
#include <string.h>

enum { GOING, DONE, ERR };

/* Feed p[0..k) whole, noting each event in out. */
static void feed(struct mp *m, const char *p, size_t k, size_t max, struct buf *out, int *state)
{
    while (k > 0 && *state != ERR) {
        struct multipart_out o;
        size_t used = multipart_feed(m, p, k, max, &o);
        assert_true(used <= k);
        p += used;
        k -= used;
        if (o.ev == MP_PART) {
            buf_printf(out, "P%s|%s;", m->name, m->filename ? m->filename : "-");
        } else if (o.ev == MP_DATA) {
            assert_true(o.len > 0 && o.len <= max);
            buf_putc(out, '#');
            buf_append(out, o.data, o.len);
            buf_putc(out, ';');
        } else if (o.ev == MP_PART_END) {
            buf_puts(out, "E;");
        } else if (o.ev == MP_DONE) {
            *state = DONE;
        } else if (o.ev == MP_ERROR) {
            *state = ERR;
        } else {
            assert_int_equal(k, 0); /* MP_NEED: all used */
        }
    }
}

/* Everything a body cut in two at `cut` parses into, as text:
 * "P<name>|<filename>;" "#<data>;" "E;" ... then DONE, ERR or CUT. */
static void parse(const char *boundary, const char *body, size_t n, size_t cut, size_t max, struct buf *out)
{
    struct mp m;
    int state = GOING;
    assert_int_equal(multipart_init(&m, boundary, strlen(boundary)), 0);
    feed(&m, body, cut, max, out, &state);
    feed(&m, body + cut, n - cut, max, out, &state);
    if (state == ERR) buf_puts(out, "ERR");
    else if (multipart_finish(&m) == 0) buf_puts(out, "DONE");
    else buf_puts(out, "CUT");
    multipart_free(&m);
}

/* Merge adjacent data pieces, so results of different splits compare. */
static void merge(struct buf *b)
{
    char *s = b->data, *w = s;
    size_t n = b->len;
    for (size_t i = 0; i < n;) {
        if (s[i] == '#') {
            *w++ = '#';
            i++;
            for (;;) {
                while (i < n && s[i] != ';') *w++ = s[i++];
                i++;
                if (i < n && s[i] == '#') i++;
                else break;
            }
            *w++ = ';';
        } else {
            *w++ = s[i++];
        }
    }
    b->len = (size_t)(w - s);
}

static void expect(const char *boundary, const char *body, size_t n, const char *want)
{
    struct buf one, other;
    buf_init(&one, 1 << 20);
    parse(boundary, body, n, n, 1 << 20, &one);
    merge(&one);
    assert_true(buf_cstr(&one));
    if (want) assert_string_equal(one.data, want);
    for (size_t cut = 0; cut <= n; cut++) {
        for (size_t max = 1; max <= 8; max += 7) {
            buf_init(&other, 1 << 20);
            parse(boundary, body, n, cut, max, &other);
            merge(&other);
            assert_true(buf_cstr(&other));
            assert_string_equal(other.data, one.data);
            buf_free(&other);
        }
    }
    buf_free(&one);
}

#define EXPECT(b, body, want) expect(b, body, sizeof body - 1, want)

static void test_parts(void **s)
{
    (void)s;
    EXPECT("B", "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a/b.txt\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\nhello\r\n"
                "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c\"\r\n\r\n\r\n--B--\r\n",
           "Pfile|a/b.txt;#hello;E;Pfile|c;E;DONE");
    /* A preamble and an epilogue are dropped; headers need not be there. */
    EXPECT("xyz", "ignored\r\n--xyz\r\n\r\nno headers\r\n--xyz--garbage", "P|-;#no headers;E;DONE");
    /* Transport padding after a delimiter. */
    EXPECT("B", "--B \t\r\ncontent-disposition: FORM-DATA; NAME=note\r\n\r\nx\r\n--B--", "Pnote|-;#x;E;DONE");
}

static void test_delimiter_lookalikes(void **s)
{
    (void)s;
    EXPECT("boundary", "--boundary\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n"
                       "a\r\n--boundar\r\n-boundary\r\r\n--boundaryX\r\n--boundary--",
           "Pf|-;#a\r\n--boundar\r\n-boundary\r\r\n--boundaryX;E;DONE");
    /* A CR right before a delimiter's CR stays data. */
    EXPECT("Q", "--Q\r\n\r\n\r\r\n--Q--", "P|-;#\r;E;DONE");
}

static void test_filenames(void **s)
{
    (void)s;
    EXPECT("B", "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"q\\\"uo\\\\te;x\"\r\n\r\n\r\n--B--",
           "Pfile|q\"uo\\te;x;E;DONE");
    /* filename* (RFC 8187) wins, %XX decoded to any byte. */
    EXPECT("B", "--B\r\nContent-Disposition: form-data; name=file; filename=\"plain\"; "
                "filename*=UTF-8''sn%E2%98%83w%0Aline\r\n\r\n\r\n--B--",
           "Pfile|sn\xe2\x98\x83w\nline;E;DONE");
    struct mp m;
    const char *body = "--B\r\nContent-Disposition: form-data; name=file; filename*=x''a%00b\r\n\r\n";
    struct multipart_out o;
    assert_int_equal(multipart_init(&m, "B", 1), 0);
    multipart_feed(&m, body, strlen(body), 100, &o);
    assert_int_equal(o.ev, MP_PART);
    assert_int_equal(m.filename_len, 3);
    assert_true(m.filename_nul);
    multipart_free(&m);
}

static void test_malformed(void **s)
{
    (void)s;
    EXPECT("B", "--B\r\nContent-Disposition: attachment; name=\"x\"\r\n\r\n", "ERR");
    EXPECT("B", "--B\r\nContent-Disposition: form-data; name=\"unterminated\r\n\r\n", "ERR");
    EXPECT("B", "--Bx\r\n", "CUT"); /* not a delimiter: still the preamble */
    EXPECT("B", "--B-x", "ERR");
    EXPECT("B", "--B\r\n\r\ndata without an end", "P|-;#data without an end;CUT");
    EXPECT("B", "", "CUT");
    static char big[MP_HEAD_MAX + 64];
    memcpy(big, "--B\r\nX: ", 8);
    memset(big + 8, 'a', sizeof big - 8);
    struct buf out;
    buf_init(&out, 1 << 20);
    parse("B", big, sizeof big, sizeof big, 100, &out);
    assert_true(buf_cstr(&out));
    assert_string_equal(out.data, "ERR");
    buf_free(&out);
}

static void test_boundaries_and_content_type(void **s)
{
    (void)s;
    struct mp m;
    char b[MP_BOUNDARY_MAX + 1];
    assert_int_equal(multipart_init(&m, "", 0), -1);
    assert_int_equal(multipart_init(&m, "a\rb", 3), -1);
    assert_int_equal(multipart_init(&m, "ends with space ", 16), -1);
    char long_b[80];
    memset(long_b, 'x', sizeof long_b);
    assert_int_equal(multipart_init(&m, long_b, 71), -1);
    assert_int_equal(multipart_init(&m, long_b, 70), 0);
    multipart_free(&m);
    assert_int_equal(multipart_content_type("multipart/form-data; boundary=----formdata-undici-012", b), 23);
    assert_string_equal(b, "----formdata-undici-012");
    assert_int_equal(multipart_content_type(" Multipart/Form-Data ; charset=x; boundary=\"q b\"", b), 3);
    assert_string_equal(b, "q b");
    assert_int_equal(multipart_content_type("multipart/form-data", b), -1);
    assert_int_equal(multipart_content_type("application/octet-stream", b), 0);
    assert_int_equal(multipart_content_type(NULL, b), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts),      cmocka_unit_test(test_delimiter_lookalikes),
        cmocka_unit_test(test_filenames),  cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_boundaries_and_content_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
