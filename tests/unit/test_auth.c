/*
 * test_auth.c - the access token comparison and Basic credentials
 * (agent/serve/auth.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/http/auth.h"

#include <string.h>

static void test_token(void **s)
{
    (void)s;
    const char *t = "s3cret";
    assert_int_equal(auth_token_ok(t, 6, "s3cret"), 1);
    assert_int_equal(auth_token_ok(t, 6, "s3cre"), 0);
    assert_int_equal(auth_token_ok(t, 6, "s3crett"), 0);
    assert_int_equal(auth_token_ok(t, 6, "S3cret"), 0);
    assert_int_equal(auth_token_ok(t, 6, "s3creT"), 0);
    assert_int_equal(auth_token_ok(t, 6, ""), 0);
    assert_int_equal(auth_token_ok(t, 6, NULL), 0);
    /* A token that is a prefix of the given one, or the other way round. */
    assert_int_equal(auth_token_ok(t, 3, "s3c"), 1);
    assert_int_equal(auth_token_ok(t, 3, "s3cret"), 0);
    /* No token configured matches nothing. */
    assert_int_equal(auth_token_ok("", 0, ""), 0);
}

static void test_basic(void **s)
{
    (void)s;
    char user[AUTH_USER_MAX + 1];
    assert_int_equal(auth_basic_user("Basic cm9vdDo=", user), 0); /* "root:" */
    assert_string_equal(user, "root");
    assert_int_equal(auth_basic_user("basic  dXNlcjpwYXNz", user), 0); /* "user:pass" */
    assert_string_equal(user, "user");
    assert_int_equal(auth_basic_user("BASIC cm9vdDo", user), 0); /* padding left out */
    assert_string_equal(user, "root");
    assert_int_equal(auth_basic_user("Basic dTo6", user), 0); /* "u::" */
    assert_string_equal(user, "u");
    const char *bad[] = {
        "Bearer cm9vdDo=",  "Basic",           "Basic ",        "Basiccm9vdDo=",
        "Basic cm9vdDo=x",  "Basic cm9v dDo=", "Basic !!!!",    "Basic dXNlcg==", /* "user" */
        "Basic OnBhc3M=",   /* ":pass" */      "Basic AAE6",    /* "\0\1:" */
        "Basic cm9vdDo===", "Basic cm9vdDo=\n", NULL,
    };
    for (int i = 0; bad[i]; i++) assert_int_equal(auth_basic_user(bad[i], user), -1);
    /* A user of AUTH_USER_MAX bytes is fine, one more is not. */
    char raw[AUTH_USER_MAX + 3], hdr[2 * AUTH_USER_MAX];
    for (int extra = 0; extra <= 1; extra++) {
        static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        size_t n = AUTH_USER_MAX + (size_t)extra;
        memset(raw, 'a', n);
        raw[n] = ':';
        size_t len = n + 1, o = 6;
        memcpy(hdr, "Basic ", 6);
        for (size_t i = 0; i < len; i += 3) {
            unsigned v = (unsigned char)raw[i] << 16 | (i + 1 < len ? (unsigned char)raw[i + 1] << 8 : 0) |
                         (i + 2 < len ? (unsigned char)raw[i + 2] : 0);
            hdr[o++] = al[v >> 18 & 63];
            hdr[o++] = al[v >> 12 & 63];
            hdr[o++] = i + 1 < len ? al[v >> 6 & 63] : '=';
            hdr[o++] = i + 2 < len ? al[v & 63] : '=';
        }
        hdr[o] = '\0';
        assert_int_equal(auth_basic_user(hdr, user), extra ? -1 : 0);
        if (!extra) assert_int_equal(strlen(user), AUTH_USER_MAX);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_token), cmocka_unit_test(test_basic)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
