/*
 * test_listen.c - SANDBOX_AGENT_LISTEN's grammar and the token rule
 * (agent/serve/listen.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/http/listen.h"
#include "agent/core/err.h"
#include "agent/core/protocol.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static void test_inet(void **s)
{
    (void)s;
    struct listen_addr a;
    char err[ERR_LEN];
    assert_int_equal(listen_parse("127.0.0.1:49983", &a, err), 0);
    assert_int_equal(a.ss.ss_family, AF_INET);
    assert_int_equal(ntohs(((struct sockaddr_in *)&a.ss)->sin_port), 49983);
    assert_int_equal(a.loopback, 1);
    assert_int_equal(a.is_unix, 0);
    assert_int_equal(listen_parse("127.1.2.3:1", &a, err), 0);
    assert_int_equal(a.loopback, 1);
    assert_int_equal(listen_parse("0.0.0.0:65535", &a, err), 0);
    assert_int_equal(a.loopback, 0);
    assert_int_equal(listen_parse("10.0.0.1:80", &a, err), 0);
    assert_int_equal(a.loopback, 0);
    assert_int_equal(listen_parse("localhost:8080", &a, err), 0);
    assert_int_equal(a.loopback, 1);
    assert_int_equal(a.ss.ss_family, AF_INET);
}

static void test_inet6(void **s)
{
    (void)s;
    struct listen_addr a;
    char err[ERR_LEN];
    assert_int_equal(listen_parse("[::1]:49983", &a, err), 0);
    assert_int_equal(a.ss.ss_family, AF_INET6);
    assert_int_equal(ntohs(((struct sockaddr_in6 *)&a.ss)->sin6_port), 49983);
    assert_int_equal(a.loopback, 1);
    assert_int_equal(listen_parse("[::]:80", &a, err), 0);
    assert_int_equal(a.loopback, 0);
    assert_int_equal(listen_parse("[::ffff:127.0.0.1]:80", &a, err), 0);
    assert_int_equal(a.loopback, 1);
    assert_int_equal(listen_parse("[fe80::1]:80", &a, err), 0);
    assert_int_equal(a.loopback, 0);
}

static void test_unix(void **s)
{
    (void)s;
    struct listen_addr a;
    char err[ERR_LEN];
    assert_int_equal(listen_parse("unix:/tmp/agent.sock", &a, err), 0);
    assert_int_equal(a.is_unix, 1);
    assert_int_equal(a.loopback, 1);
    assert_string_equal(a.path, "/tmp/agent.sock");
    char longp[200] = "unix:/";
    memset(longp + 6, 'x', 150);
    longp[156] = '\0';
    assert_int_equal(listen_parse(longp, &a, err), -1);
    assert_int_equal(listen_parse("unix:", &a, err), -1);
    assert_int_equal(listen_parse("unix:rel/path", &a, err), -1);
}

static void test_refused(void **s)
{
    (void)s;
    struct listen_addr a;
    char err[ERR_LEN];
    const char *bad[] = {"", "1.2.3.4", "1.2.3.4:", ":80", "1.2.3.4:0", "1.2.3.4:65536",
                         "1.2.3.4:-1", "1.2.3.4:8o", "1.2.3.4: 80", "::1:80", "[::1]80", "[::1]:",
                         "[::1", "host.example:80", "1.2.3:80", "[1.2.3.4]:80", "256.0.0.1:80",
                         "[]:80", NULL};
    for (int i = 0; bad[i]; i++) {
        err[0] = '\0';
        assert_int_equal(listen_parse(bad[i], &a, err), -1);
        assert_true(err[0] != '\0');
    }
}

static void test_token_rule(void **s)
{
    (void)s;
    struct listen_addr pub, lo;
    char err[ERR_LEN];
    int warn;
    assert_int_equal(listen_parse("0.0.0.0:49983", &pub, err), 0);
    assert_int_equal(listen_parse("127.0.0.1:49983", &lo, err), 0);
    assert_int_equal(listen_check("127.0.0.1:49983", &lo, 0, 0, &warn, err), 0);
    assert_int_equal(warn, 0);
    assert_int_equal(listen_check("0.0.0.0:49983", &pub, 1, 0, &warn, err), 0);
    assert_int_equal(warn, 0);
    assert_int_equal(listen_check("0.0.0.0:49983", &pub, 0, 1, &warn, err), 0);
    assert_int_equal(warn, 1);
    assert_int_equal(listen_check("0.0.0.0:49983", &pub, 0, 0, &warn, err), -1);
    assert_non_null(strstr(err, ENV_LISTEN));
    assert_non_null(strstr(err, ENV_TOKEN));
    assert_null(strchr(err, '\n'));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inet),    cmocka_unit_test(test_inet6),
        cmocka_unit_test(test_unix),    cmocka_unit_test(test_refused),
        cmocka_unit_test(test_token_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
