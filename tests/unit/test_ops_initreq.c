/*
 * test_ops_initreq.c - the POST /init body (agent/api/ops/initreq.c): every
 * field as envd's orchestrator sends it, the bounds, the malformed bodies,
 * and RFC 3339 timestamps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/ops/initreq.h"
#include "agent/core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int decode(const char *body, struct ops_initreq *r, char *why)
{
    why[0] = '\0';
    return ops_initreq_decode(body, strlen(body), r, why);
}

static void test_full(void **st)
{
    (void)st;
    struct ops_initreq r;
    char why[ERR_LEN];
    assert_int_equal(decode("{\"envVars\": {\"A\": \"1\", \"B_2\": \"x=y\"}, \"accessToken\": \"t0k-3n\", "
                            "\"defaultUser\": \"user\", \"defaultWorkdir\": \"/home/user\", "
                            "\"timestamp\": \"2024-05-01T12:00:00.5Z\", \"hyperloopIP\": \"10.0.0.1\", "
                            "\"volumeMounts\": [{\"nfs_target\": \"a\", \"path\": \"/m\"}], \"unknown\": 1}",
                            &r, why),
                     0);
    assert_int_equal(r.nenv, 2);
    assert_string_equal(r.env[0], "A=1");
    assert_string_equal(r.env[1], "B_2=x=y");
    assert_null(r.env[2]);
    assert_string_equal(r.token, "t0k-3n");
    assert_int_equal(r.token_len, 6);
    assert_string_equal(r.user, "user");
    assert_string_equal(r.workdir, "/home/user");
    assert_int_equal(r.has_time, 1);
    assert_int_equal(r.time.tv_sec, 1714564800);
    assert_int_equal(r.time.tv_nsec, 500000000);
    assert_int_equal(r.unsupported, INITREQ_HYPERLOOP_IP | INITREQ_VOLUME_MOUNTS);
    ops_initreq_free(&r);
}

static void test_empty(void **st)
{
    (void)st;
    struct ops_initreq r;
    char why[ERR_LEN];
    static const char *const nothing[] = {"", "  \n", "{}", "null", "{\"envVars\": null, \"accessToken\": \"\", "
                                                                  "\"defaultUser\": \"\", \"timestamp\": null}"};
    for (size_t i = 0; i < sizeof nothing / sizeof nothing[0]; i++) {
        assert_int_equal(decode(nothing[i], &r, why), 0);
        assert_null(r.env);
        assert_null(r.token);
        assert_null(r.user);
        assert_null(r.workdir);
        assert_int_equal(r.has_time, 0);
        ops_initreq_free(&r);
    }
    assert_int_equal(decode("{\"envVars\": {}}", &r, why), 0);
    assert_non_null(r.env);
    assert_int_equal(r.nenv, 0);
    ops_initreq_free(&r);
}

static void test_refused(void **st)
{
    (void)st;
    static const char *const bad[] = {
        "{", "[]", "\"x\"", "{\"envVars\": []}", "{\"envVars\": {\"A\": 1}}", "{\"envVars\": {\"A\": null}}",
        "{\"envVars\": {\"\": \"x\"}}", "{\"envVars\": {\"A=B\": \"x\"}}", "{\"accessToken\": 5}",
        "{\"accessToken\": \"has space\"}", "{\"accessToken\": \"t\\u00e9\"}", "{\"defaultUser\": \"a:b\"}",
        "{\"defaultUser\": \"a\\nb\"}", "{\"defaultWorkdir\": \"relative\"}", "{\"defaultWorkdir\": 1}",
        "{\"timestamp\": \"yesterday\"}", "{\"timestamp\": 1714564800}", "{\"envVars\": {\"A\": \"a\\u0000b\"}}",
        "{\"a\": 1,}", "{} {}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ops_initreq r;
        char why[ERR_LEN];
        if (decode(bad[i], &r, why) != -1) fail_msg("accepted: %s", bad[i]);
        assert_true(why[0] != '\0');
        ops_initreq_free(&r);
    }
}

/* A body of n variables of value size vsize. */
static char *env_body(int n, size_t vsize)
{
    size_t cap = (size_t)n * (vsize + 32) + 64;
    char *b = malloc(cap), *p = b;
    p += sprintf(p, "{\"envVars\": {");
    for (int i = 0; i < n; i++) {
        p += sprintf(p, "%s\"V%d\": \"", i ? ", " : "", i);
        memset(p, 'x', vsize);
        p += vsize;
        *p++ = '"';
    }
    strcpy(p, "}}");
    return b;
}

static void test_bounds(void **st)
{
    (void)st;
    struct ops_initreq r;
    char why[ERR_LEN];
    char *b = env_body(INITREQ_ENV_MAX, 1);
    assert_int_equal(decode(b, &r, why), 0);
    assert_int_equal(r.nenv, INITREQ_ENV_MAX);
    ops_initreq_free(&r);
    free(b);
    b = env_body(INITREQ_ENV_MAX + 1, 1);
    assert_int_equal(decode(b, &r, why), -1);
    ops_initreq_free(&r);
    free(b);
    b = env_body(1, INITREQ_VAR_MAX - 3); /* "V0=" + value: exactly the bound */
    assert_int_equal(decode(b, &r, why), 0);
    ops_initreq_free(&r);
    free(b);
    b = env_body(1, INITREQ_VAR_MAX - 2);
    assert_int_equal(decode(b, &r, why), -1);
    ops_initreq_free(&r);
    free(b);
    b = env_body(10, 120 * 1024); /* 1.2 MiB in all */
    assert_int_equal(decode(b, &r, why), -1);
    assert_non_null(strstr(why, "1 MiB"));
    ops_initreq_free(&r);
    free(b);
    char tok[INITREQ_TOKEN_MAX + 40];
    snprintf(tok, sizeof tok, "{\"accessToken\": \"%0*d\"}", INITREQ_TOKEN_MAX + 1, 0);
    assert_int_equal(decode(tok, &r, why), -1);
    ops_initreq_free(&r);
    snprintf(tok, sizeof tok, "{\"accessToken\": \"%0*d\"}", INITREQ_TOKEN_MAX, 0);
    assert_int_equal(decode(tok, &r, why), 0);
    assert_int_equal(r.token_len, INITREQ_TOKEN_MAX);
    ops_initreq_free(&r);
}

static long long t(const char *s, long *ns)
{
    struct timespec ts;
    if (ops_initreq_time(s, strlen(s), &ts) < 0) return -1;
    if (ns) *ns = ts.tv_nsec;
    return (long long)ts.tv_sec;
}

static void test_time(void **st)
{
    (void)st;
    long ns;
    assert_int_equal(t("1970-01-01T00:00:00Z", &ns), 0);
    assert_int_equal(t("2000-02-29T23:59:59Z", NULL), 951868799);
    assert_int_equal(t("2024-05-01T14:00:00+02:00", NULL), 1714564800);
    assert_int_equal(t("2024-05-01T09:30:00-02:30", NULL), 1714564800);
    assert_int_equal(t("2024-05-01t12:00:00z", NULL), 1714564800);
    assert_int_equal(t("2024-05-01T12:00:00.123456789Z", &ns), 1714564800);
    assert_int_equal(ns, 123456789);
    assert_int_equal(t("2024-05-01T12:00:00.1Z", &ns), 1714564800);
    assert_int_equal(ns, 100000000);
    assert_int_equal(t("2016-12-31T23:59:60Z", NULL), 1483228799); /* a leap second */
    static const char *const bad[] = {
        "2024-05-01T12:00:00",       "2024-05-01 12:00:00Z",     "2024-13-01T12:00:00Z", "2023-02-29T12:00:00Z",
        "2024-05-01T24:00:00Z",      "2024-05-01T12:00:00.Z",    "1969-12-31T23:59:59Z", "2024-05-01T12:00:00+2:00",
        "2024-05-01T12:00:00.1234567890Z", "2024-05-01T12:00:00+02:00x", "abcd-05-01T12:00:00Z",
        "1970-01-01T00:00:00+00:01",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (t(bad[i], NULL) != -1) fail_msg("accepted: %s", bad[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full),   cmocka_unit_test(test_empty), cmocka_unit_test(test_refused),
        cmocka_unit_test(test_bounds), cmocka_unit_test(test_time),
    };
    return cmocka_run_group_tests_name("ops_initreq", tests, NULL, NULL);
}
