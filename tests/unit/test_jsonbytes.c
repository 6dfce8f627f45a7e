/*
 * test_jsonbytes.c - surrogateescape escapes back to bytes (agent/core/jsonbytes.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/jsonbytes.h"

#include <string.h>

static void check(const char *in, const char *want, size_t want_len)
{
    char buf[256];
    size_t n = strlen(in);
    memcpy(buf, in, n);
    size_t got = jsonbytes_unescape(buf, n);
    assert_int_equal(got, want_len);
    assert_memory_equal(buf, want, want_len);
}

#define CHECK(in, want) check(in, want, sizeof want - 1)

static void test_unescape(void **s)
{
    (void)s;
    CHECK("{\"p\": \"a\\udcffb\"}", "{\"p\": \"a\xff" "b\"}");
    CHECK("{\"p\": \"\\udc80\\udcFF\"}", "{\"p\": \"\x80\xff\"}");
    CHECK("{\"p\": \"\\udc7f\"}", "{\"p\": \"\\udc7f\"}");            /* not a byte of ours */
    CHECK("{\"p\": \"\\ud83d\\udc80\"}", "{\"p\": \"\\ud83d\\udc80\"}"); /* a pair stays */
    CHECK("{\"p\": \"\\\\udcff\"}", "{\"p\": \"\\\\udcff\"}");          /* an escaped backslash */
    CHECK("{\"\\udcff\": 1, \"x\": \"\\\"\\udcfe\"}", "{\"\xff\": 1, \"x\": \"\\\"\xfe\"}");
    CHECK("[\\udcff]", "[\\udcff]");                                  /* not in a string */
    CHECK("\"\\n\\u0041\\udcc3\"", "\"\\n\\u0041\xc3\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_unescape)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
