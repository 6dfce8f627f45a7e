/*
 * test_rest_composereq.c - the POST /files/compose body (agent/api/rest/
 * composereq.c): envd's ComposeRequest, member names without case, the last
 * of a repeated one, null as absent, bytes by \udcXX; and each refusal: not
 * JSON, not an object, no sources, no destination, a wrong type, \u0000,
 * past the bounds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/rest/composereq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int decode(const char *s, struct rest_composereq *r, const char **why)
{
    return rest_composereq_decode(s, strlen(s), r, why);
}

static void test_decode(void **st)
{
    (void)st;
    struct rest_composereq r;
    const char *why = NULL;
    assert_int_equal(decode("{\"source_paths\": [\"a\", \"/b\"], \"destination\": \"d\", \"username\": \"u\", \"x\": 1}", &r, &why), 0);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.sources[0], "a");
    assert_string_equal(r.sources[1], "/b");
    assert_string_equal(r.destination, "d");
    assert_string_equal(r.username, "u");
    rest_composereq_free(&r);
    assert_int_equal(decode("{\"Source_Paths\": [\"x\"], \"source_paths\": [\"a\", null, \"\\udcff\"], "
                            "\"DESTINATION\": \"d\", \"username\": null}", &r, &why), 0);
    assert_int_equal(r.n, 3); /* the last of a repeated member */
    assert_string_equal(r.sources[1], "");
    assert_string_equal(r.sources[2], "\xff");
    assert_null(r.username);
    rest_composereq_free(&r);
}

static void test_refusals(void **st)
{
    (void)st;
    struct rest_composereq r;
    const char *why;
    static const struct {
        const char *body, *why;
    } bad[] = {
        {"", "not JSON"},
        {"{\"source_paths\": [\"a\"], \"destination\": \"d\"} x", "not JSON"},
        {"[]", "not a JSON object"},
        {"null", "must not be empty"},
        {"{}", "must not be empty"},
        {"{\"source_paths\": [], \"destination\": \"d\"}", "must not be empty"},
        {"{\"source_paths\": [\"a\"]}", "destination is required"},
        {"{\"source_paths\": [\"a\"], \"destination\": \"\"}", "destination is required"},
        {"{\"source_paths\": \"a\", \"destination\": \"d\"}", "not an array"},
        {"{\"source_paths\": [1], \"destination\": \"d\"}", "not an array"},
        {"{\"source_paths\": [\"a\"], \"destination\": 7}", "destination is not a string"},
        {"{\"source_paths\": [\"a\"], \"destination\": \"d\", \"username\": []}", "username is not a string"},
        {"{\"source_paths\": [\"a\\u0000b\"], \"destination\": \"d\"}", "\\u0000"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        assert_int_equal(decode(bad[i].body, &r, &why), -1);
        assert_non_null(why);
        assert_non_null(strstr(why, bad[i].why));
        rest_composereq_free(&r);
    }
    /* More than REST_COMPOSE_SOURCES_MAX sources. */
    size_t cap = 16 + 4 * (REST_COMPOSE_SOURCES_MAX + 1) + 32;
    char *many = malloc(cap), *p = many;
    p += sprintf(p, "{\"source_paths\": [");
    for (int i = 0; i <= REST_COMPOSE_SOURCES_MAX; i++) p += sprintf(p, "%s\"\"", i ? "," : "");
    sprintf(p, "], \"destination\": \"d\"}");
    assert_int_equal(decode(many, &r, &why), -1);
    assert_non_null(strstr(why, "65536"));
    rest_composereq_free(&r);
    free(many);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
