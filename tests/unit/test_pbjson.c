/*
 * test_pbjson.c - the one reader of request message fields
 * (agent/api/connect/pbjson.c): both names of a protobuf field and one
 * name of a plain one, null as absent, the caller's default kept, each
 * type and bound, and errors naming the field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/connect/pbjson.h"
#include "agent/core/err.h"

#include <string.h>

static cJSON *tree;
static char err[ERR_LEN];

static struct pbjson msg(const char *json, int proto_names)
{
    cJSON_Delete(tree);
    tree = cJSON_Parse(json);
    assert_non_null(tree);
    err[0] = '\0';
    return (struct pbjson){tree, proto_names, err};
}

static void says(const char *word)
{
    if (!strstr(err, word)) fail_msg("'%s' does not say '%s'", err, word);
}

static void test_names(void **st)
{
    (void)st;
    struct pbjson m = msg("{\"include_entry\": true, \"watcherId\": \"a\", \"watcher_id\": \"b\"}", 1);
    int b = 0;
    const char *s = NULL;
    assert_int_equal(pbjson_bool(&m, "includeEntry", &b), 1);
    assert_int_equal(b, 1);
    assert_int_equal(pbjson_string(&m, "watcherId", PBJSON_UNBOUNDED, &s), 1);
    assert_string_equal(s, "a"); /* the JSON name first */
    m.proto_names = 0;            /* a plain JSON body: one name per field */
    b = 0;
    assert_int_equal(pbjson_bool(&m, "includeEntry", &b), 0);
    assert_int_equal(b, 0);
    assert_null(pbjson_field(&m, "include"));
}

static void test_absent_keeps_the_default(void **st)
{
    (void)st;
    struct pbjson m = msg("{\"path\": null, \"depth\": null}", 1);
    const char *s = "dflt";
    uint32_t u = 7;
    int b = 1;
    const cJSON *a = NULL;
    struct pbjson o;
    assert_int_equal(pbjson_string(&m, "path", PBJSON_UNBOUNDED, &s), 0);
    assert_string_equal(s, "dflt");
    assert_int_equal(pbjson_uint(&m, "depth", 10, &u), 0);
    assert_int_equal(u, 7);
    assert_int_equal(pbjson_bool(&m, "recursive", &b), 0);
    assert_int_equal(b, 1);
    assert_int_equal(pbjson_array(&m, "args", 3, &a), 0);
    assert_null(a);
    assert_int_equal(pbjson_object(&m, "process", &o), 0);
    assert_null(o.obj);
    /* A message that is not an object has no fields. */
    struct pbjson arr = msg("[1]", 1);
    assert_int_equal(pbjson_string(&arr, "path", PBJSON_UNBOUNDED, &s), 0);
    struct pbjson none = {NULL, 1, err};
    assert_int_equal(pbjson_uint(&none, "pid", 10, &u), 0);
}

static void test_types(void **st)
{
    (void)st;
    struct pbjson m = msg("{\"n\": 42, \"s\": \"17\", \"big\": 65536, \"neg\": -1, \"frac\": 1.5, \"sp\": \" 1\","
                          " \"str\": \"abc\", \"num\": 1, \"t\": false, \"o\": {\"x\": 1}, \"a\": [1, 2, 3],"
                          " \"env\": {\"A\": \"1\", \"B\": 2}, \"env2\": {\"A\": \"1\"}}",
                          0);
    uint32_t u = 0;
    const char *s = NULL;
    int b = 1;
    const cJSON *c = NULL;
    struct pbjson o;
    assert_int_equal(pbjson_uint(&m, "n", 65535, &u), 1);
    assert_int_equal(u, 42);
    assert_int_equal(pbjson_uint(&m, "s", 65535, &u), 1);
    assert_int_equal(u, 17);
    assert_int_equal(pbjson_uint(&m, "big", 65535, &u), -1);
    says("'big' must be a whole number from 0 to 65535");
    assert_int_equal(pbjson_uint(&m, "neg", 65535, &u), -1);
    assert_int_equal(pbjson_uint(&m, "frac", 65535, &u), -1);
    assert_int_equal(pbjson_uint(&m, "sp", 65535, &u), -1);
    assert_int_equal(pbjson_uint(&m, "str", 65535, &u), -1);
    assert_int_equal(pbjson_string(&m, "str", 3, &s), 1);
    assert_string_equal(s, "abc");
    assert_int_equal(pbjson_string(&m, "str", 2, &s), -1);
    says("'str' is longer than 2 bytes");
    assert_int_equal(pbjson_string(&m, "num", PBJSON_UNBOUNDED, &s), -1);
    says("'num' must be a string");
    assert_int_equal(pbjson_bool(&m, "t", &b), 1);
    assert_int_equal(b, 0);
    assert_int_equal(pbjson_bool(&m, "num", &b), -1);
    says("'num' must be true or false");
    assert_int_equal(pbjson_object(&m, "o", &o), 1);
    assert_int_equal(pbjson_uint(&o, "x", 1, &u), 1);
    assert_ptr_equal(o.err, err); /* the reason goes where the message's goes */
    assert_int_equal(pbjson_object(&m, "a", &o), -1);
    says("'a' must be an object");
    assert_int_equal(pbjson_array(&m, "a", 3, &c), 1);
    assert_int_equal(cJSON_GetArraySize(c), 3);
    assert_int_equal(pbjson_array(&m, "a", 2, &c), -1);
    says("'a' has more than 2 entries");
    assert_int_equal(pbjson_array(&m, "o", 2, &c), -1);
    says("'o' must be an array");
    assert_int_equal(pbjson_map(&m, "env", 5, &c), -1);
    says("'B'");
    assert_int_equal(pbjson_map(&m, "env2", 1, &c), 1);
    assert_int_equal(pbjson_map(&m, "env", 1, &c), -1);
    says("more than 1");
    assert_int_equal(pbjson_map(&m, "a", 5, &c), -1);
    says("'a' must be an object of strings");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_absent_keeps_the_default),
        cmocka_unit_test(test_types),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    cJSON_Delete(tree);
    return rc;
}
