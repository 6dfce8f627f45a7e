/*
 * test_sign.c - signed /files URLs (agent/api/http/sign.c): the parameters
 * as the client sent them, envd's signature (the known answers below were
 * computed with Python's hashlib and base64 over the same strings), the
 * expiration as Go's strconv.ParseInt reads it, and the verdicts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/http/sign.h"
#include "agent/core/err.h"
#include "agent/core/protocol.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define TOK "secret-access-token"

/* sha256("/a b/é.txt:read::secret-access-token"), and with ":1700000000";
 * as they go in a query: '+' escaped. */
#define SIG_READ "v1_3D0hWGMcBocPoRa%2Bb3AhV2uyiqF23YrGnRq2BixZJOU"
#define SIG_READ_EXP "v1_UUWgTg1Vwj0gKCEltzBf7e1pU5qRXB4Rn0tZS0a89QU"
/* sha256("/a b/é.txt:write:root:secret-access-token"). */
#define SIG_WRITE_ROOT "v1_iv2SYFAEewNuDL1PZ3ygoZZX7HJcyKJ1yyQUr5QX2%2Bo"

static struct sign_params p;
static char err[ERR_LEN];

static int parse(const char *q)
{
    sign_params_free(&p);
    err[0] = '\0';
    return sign_params_parse(q, &p, err);
}

static enum sign_verdict check(const char *q, const char *op, int64_t now)
{
    assert_int_equal(parse(q), 0);
    return sign_check(&p, op, TOK, strlen(TOK), now);
}

static void test_params(void **st)
{
    (void)st;
    assert_int_equal(parse("path=%2Fa+b%2F%C3%A9.txt&username=&signature=v1_x%2By&signature_expiration=%2B017"), 0);
    assert_string_equal(p.path.data, "/a b/é.txt");
    assert_int_equal(p.user.len, 0);
    assert_string_equal(p.signature.data, "v1_x+y");
    assert_true(p.has_signature && p.has_expiration && p.expiration == 17);
    assert_int_equal(parse(""), 0);
    assert_true(!p.has_signature && !p.has_expiration && p.path.len == 0 && p.user.len == 0);
    assert_int_equal(parse("signature_expiration=-9223372036854775808"), 0);
    assert_true(p.expiration == INT64_MIN);
    assert_int_equal(parse("signature_expiration=9223372036854775807"), 0);
    assert_true(p.expiration == INT64_MAX);
    static const char *const bad[] = {
        "signature_expiration=",     "signature_expiration=9223372036854775808",
        "signature_expiration=-9223372036854775809", "signature_expiration=1.0",
        "signature_expiration=+",    "signature_expiration=%201", "signature_expiration=0x1",
        "signature_expiration=1%00", "signature_expiration=1_000",  "signature=a&signature=b",
        "path=a&%70ath=b",           "username=a&username=a",     "signature_expiration=1&signature_expiration=1",
        "path=%zz",                  "signature=%4",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (parse(bad[i]) != -1) fail_msg("accepted: %s", bad[i]);
        assert_true(err[0] != '\0');
    }
    assert_int_equal(parse("signature=a&signature=b"), -1);
    assert_non_null(strstr(err, "repeated signature"));
}

static void test_known_answers(void **st)
{
    (void)st;
    const char *q = "path=%2Fa%20b%2F%C3%A9.txt&signature=" SIG_READ;
    assert_int_equal(check("path=%2Fa+b%2F%C3%A9.txt&signature=v1_3D0hWGMcBocPoRa%2Bb3AhV2uyiqF23YrGnRq2BixZJOU",
                           SIGNATURE_READ, 0),
                     SIGN_OK); /* the path decoded however it was escaped */
    assert_int_equal(check("path=%2Fa%20b%2F%C3%A9.txt&signature=v1_3D0hWGMcBocPoRa+b3AhV2uyiqF23YrGnRq2BixZJOU",
                           SIGNATURE_READ, 0),
                     SIGN_INVALID); /* '+' is a space */
    assert_int_equal(check(q, SIGNATURE_READ, 0), SIGN_OK);
    assert_int_equal(check(q, SIGNATURE_WRITE, 0), SIGN_INVALID);
    assert_int_equal(check("path=%2Fa%20b%2F%C3%A9.txt&signature=" SIG_READ_EXP "&signature_expiration=1700000000",
                           SIGNATURE_READ, 1700000000),
                     SIGN_OK); /* the second itself is still in time */
    assert_int_equal(check("path=%2Fa%20b%2F%C3%A9.txt&signature=" SIG_READ_EXP "&signature_expiration=1700000000",
                           SIGNATURE_READ, 1700000001),
                     SIGN_EXPIRED);
    assert_int_equal(check("path=%2Fa%20b%2F%C3%A9.txt&signature=" SIG_READ_EXP "&signature_expiration=%2B01700000000",
                           SIGNATURE_READ, 1700000001),
                     SIGN_EXPIRED); /* the number signed, whatever its spelling */
    assert_int_equal(check("path=%2Fa%20b%2F%C3%A9.txt&signature=" SIG_READ_EXP "&signature_expiration=1700000000",
                           SIGNATURE_READ, INT64_MIN),
                     SIGN_OK); /* the expiration not looked at */
    assert_int_equal(check("path=%2Fa%20b%2F%C3%A9.txt&signature=" SIG_READ_EXP, SIGNATURE_READ, 0), SIGN_INVALID);
    assert_int_equal(check("path=%2Fa%20b%2F%C3%A9.txt&username=root&signature=" SIG_WRITE_ROOT, SIGNATURE_WRITE, 0),
                     SIGN_OK);
    assert_int_equal(check("path=%2Fa%20b%2F%C3%A9.txt&signature=" SIG_WRITE_ROOT, SIGNATURE_WRITE, 0), SIGN_INVALID);
    assert_int_equal(check("path=%2Fa%20b%2F%C3%A9.txt&username=user&signature=" SIG_WRITE_ROOT, SIGNATURE_WRITE, 0),
                     SIGN_INVALID);
}

static void test_verdicts(void **st)
{
    (void)st;
    const char *base = "path=%2Fa%20b%2F%C3%A9.txt&signature=";
    char q[256];
    assert_int_equal(check("path=%2Fa", SIGNATURE_READ, 0), SIGN_MISSING);
    static const char *const wrong[] = {
        "",                                        /* empty */
        SIG_READ "A",                              /* longer */
        "v1_3D0hWGMcBocPoRa%2Bb3AhV2uyiqF23YrGnRq2BixZJO",    /* shorter */
        SIG_READ "%3D",                                      /* padded */
        "v2_3D0hWGMcBocPoRa%2Bb3AhV2uyiqF23YrGnRq2BixZJOU",   /* another version */
        "3D0hWGMcBocPoRa%2Bb3AhV2uyiqF23YrGnRq2BixZJOU",      /* none */
        "v1_3D0hWGMcBocPoRa%2Bb3AhV2uyiqF23YrGnRq2BixZJOV",   /* the last character */
        "V1_3D0hWGMcBocPoRa%2Bb3AhV2uyiqF23YrGnRq2BixZJOU",   /* the prefix's case */
        SIG_READ "%00more",                        /* a NUL, then more */
    };
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        snprintf(q, sizeof q, "%s%s", base, wrong[i]);
        if (check(q, SIGNATURE_READ, 0) != SIGN_INVALID) fail_msg("accepted: %s", wrong[i]);
    }
    /* The token matters: the same signature under another one is wrong. */
    snprintf(q, sizeof q, "%s%s", base, SIG_READ);
    assert_int_equal(parse(q), 0);
    assert_int_equal(sign_check(&p, SIGNATURE_READ, TOK "x", strlen(TOK) + 1, 0), SIGN_INVALID);
    assert_int_equal(sign_check(&p, SIGNATURE_READ, TOK, strlen(TOK) - 1, 0), SIGN_INVALID);
    assert_string_equal(sign_message(SIGN_MISSING), "missing signature query parameter");
    assert_string_equal(sign_message(SIGN_INVALID), "invalid signature");
    assert_string_equal(sign_message(SIGN_EXPIRED), "signature is already expired");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_verdicts),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    sign_params_free(&p);
    return rc;
}
