/*
 * test_rest_dlhead.c - a download's Content-Type and Content-Disposition
 * (agent/api/rest/dlhead.c): a token name as it is, a name with blanks or
 * tspecials quoted (quotes and backslashes escaped), a name with bytes
 * outside printable ASCII as RFC 2231's utf-8'' form, never a raw CR or LF.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/rest/dlhead.h"

#include <string.h>

static const char *disp(const char *path)
{
    static struct buf b;
    buf_free(&b);
    buf_init(&b, 4096);
    assert_int_equal(rest_dlhead_disposition(&b, path), 0);
    return buf_cstr(&b);
}

static void test_disposition(void **s)
{
    (void)s;
    assert_string_equal(disp("/home/user/a.txt"), "Content-Disposition: inline; filename=a.txt\r\n");
    assert_string_equal(disp("/x/my file (1).txt"), "Content-Disposition: inline; filename=\"my file (1).txt\"\r\n");
    assert_string_equal(disp("/x/q\"u\\o"), "Content-Disposition: inline; filename=\"q\\\"u\\\\o\"\r\n");
    assert_string_equal(disp("/x/caf\xc3\xa9 1.txt"),
                        "Content-Disposition: inline; filename*=utf-8''caf%C3%A9%201.txt\r\n");
    assert_string_equal(disp("/x/a\r\nSet-Cookie: x"),
                        "Content-Disposition: inline; filename*=utf-8''a%0D%0ASet-Cookie%3A%20x\r\n");
    assert_string_equal(disp("/"), "Content-Disposition: inline; filename=\"/\"\r\n");
    struct buf small;
    buf_init(&small, 16);
    assert_int_equal(rest_dlhead_disposition(&small, "/x/a.txt"), -1);
    buf_free(&small);
}

static void test_type(void **s)
{
    (void)s;
    assert_string_equal(rest_dlhead_type("/a/b.TXT"), "text/plain; charset=utf-8");
    assert_string_equal(rest_dlhead_type("/a.d/noext"), "application/octet-stream");
    assert_string_equal(rest_dlhead_type("/a/b.tar.gz"), "application/gzip");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_disposition),
        cmocka_unit_test(test_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
