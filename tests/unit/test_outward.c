/*
 * test_outward.c - the forwarder's outward addresses (agent/forward/outward.c):
 * SANDBOX_AGENT_FORWARD_ADDRS's grammar, what may not be outward, order and
 * duplicates, the text logged, and the interfaces of this machine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/forward/outward.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <string.h>

/* Two entries differ (the list has no duplicates). */
static int differ(const struct outward_addr *a, const struct outward_addr *b)
{
    return strcmp(a->text, b->text) != 0;
}

static void test_outward_parse(void **st)
{
    (void)st;
    struct outward a, b;
    char err[256], text[256];
    assert_int_equal(outward_parse("fd00::2,10.0.0.2,10.0.0.2", &a, err), 0);
    assert_int_equal(a.n, 2); /* sorted: IPv4 first; the duplicate gone */
    assert_string_equal(a.a[0].text, "10.0.0.2");
    assert_string_equal(a.a[1].text, "fd00::2");
    assert_int_equal(a.a[0].ss.ss_family, AF_INET);
    assert_int_equal(a.a[0].len, sizeof(struct sockaddr_in));
    assert_int_equal(((struct sockaddr_in *)&a.a[0].ss)->sin_port, 0);
    assert_int_equal(a.a[1].len, sizeof(struct sockaddr_in6));
    outward_text(&a, text, sizeof text);
    assert_string_equal(text, "10.0.0.2, fd00::2");
    assert_int_equal(outward_parse("10.0.0.2,fd00:0::2", &b, err), 0);
    assert_true(outward_equal(&a, &b));
    assert_int_equal(outward_parse("10.0.0.3,fd00::2", &b, err), 0);
    assert_false(outward_equal(&a, &b));
    assert_int_equal(outward_parse("169.254.0.21", &b, err), 0);
    assert_false(outward_equal(&a, &b));
    /* The text is cut to fit. */
    outward_text(&a, text, 5);
    assert_int_equal(strlen(text), 4);
    struct outward none = {0};
    outward_text(&none, text, sizeof text);
    assert_string_equal(text, "none");
}

static void test_outward_refuses(void **st)
{
    (void)st;
    struct outward o;
    char err[256];
    const char *bad[] = {"", ",", "10.0.0.1,", ",10.0.0.1", "10.0.0.256", "10.0.0", "localhost", " 10.0.0.1",
                         "127.0.0.1", "127.1.2.3", "::1", "0.0.0.0", "::", "224.0.0.1", "255.255.255.255",
                         "ff02::1", "::ffff:10.0.0.1", "fe80::1", "fe80::1%lo", "fd00::1%lo", "10.0.0.1%lo",
                         "10.0.0.1:80", "[fd00::1]", "0000:0000:0000:0000:0000:ffff:255.255.255.2559",
                         "0123456789012345678901234567890123456789012345678901234567890123456789", NULL};
    for (int i = 0; bad[i]; i++) {
        err[0] = '\0';
        assert_int_equal(outward_parse(bad[i], &o, err), -1);
        assert_true(err[0] != '\0');
    }
    outward_parse("127.0.0.1", &o, err);
    assert_non_null(strstr(err, "not outward"));
    outward_parse("fe80::1", &o, err);
    assert_non_null(strstr(err, "link-local"));
    /* At most OUTWARD_MAX addresses. */
    char list[OUTWARD_MAX * 16 + 32] = "";
    for (int i = 0; i <= OUTWARD_MAX; i++) sprintf(list + strlen(list), "%s10.0.1.%d", i ? "," : "", i + 1);
    assert_int_equal(outward_parse(list, &o, err), -1);
    assert_non_null(strstr(err, "more than"));
}

/* What getifaddrs (glibc's, here) says, less what may not be outward:
 * the same IPv4 addresses; the IPv6 ones but those in their duplicate
 * check, which getifaddrs cannot tell apart. */
static void test_outward_interfaces(void **st)
{
    (void)st;
    struct outward o, v4 = {0};
    char err[256];
    assert_int_equal(outward_interfaces(&o, err), 0);
    struct ifaddrs *all;
    assert_int_equal(getifaddrs(&all), 0);
    for (struct ifaddrs *i = all; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        char text[INET6_ADDRSTRLEN];
        inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, text, sizeof text);
        if (strncmp(text, "127.", 4)) v4.n++;
    }
    size_t n4 = 0;
    for (size_t i = 0; i < o.n; i++) {
        const struct sockaddr *sa = (const struct sockaddr *)&o.a[i].ss;
        int found = 0;
        for (struct ifaddrs *x = all; x; x = x->ifa_next) {
            if (!x->ifa_addr || x->ifa_addr->sa_family != sa->sa_family) continue;
            char text[INET6_ADDRSTRLEN];
            const void *b = sa->sa_family == AF_INET ? (const void *)&((struct sockaddr_in *)x->ifa_addr)->sin_addr
                                                     : (const void *)&((struct sockaddr_in6 *)x->ifa_addr)->sin6_addr;
            inet_ntop(sa->sa_family, b, text, sizeof text);
            found |= !strcmp(text, o.a[i].text);
        }
        assert_true(found);
        assert_null(strstr(o.a[i].text, "fe80:"));
        assert_true(strcmp(o.a[i].text, "::1") && strncmp(o.a[i].text, "127.", 4));
        n4 += sa->sa_family == AF_INET;
        if (i) assert_true(differ(&o.a[i - 1], &o.a[i]));
    }
    assert_int_equal(n4, v4.n);
    freeifaddrs(all);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outward_parse),
        cmocka_unit_test(test_outward_refuses),
        cmocka_unit_test(test_outward_interfaces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
