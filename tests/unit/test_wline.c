/*
 * test_wline.c - the watch mode's output line (inotify/watch/wline.c): Python
 * json.dumps parity, surrogate escapes for bytes that are not UTF-8, all or
 * nothing at the buffer's bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "inotify/watch/wline.h"

#include <stdint.h>
#include <string.h>

static const char *line(uint32_t mask, const char *path, size_t n, const char *err)
{
    static struct buf b;
    buf_free(&b);
    buf_init(&b, 1 << 20);
    assert_int_equal(wline_event(&b, mask, path, n, err), 0);
    return buf_cstr(&b);
}

static void test_line_is_python_json_dumps(void **st)
{
    (void)st;
    assert_string_equal(line(256, "/r/a", 4, NULL), "__SBX_WATCH__{\"mask\": 256, \"path\": \"/r/a\"}\n");
    assert_string_equal(line(0x40000100u, "/r/d", 4, NULL),
                        "__SBX_WATCH__{\"mask\": 1073742080, \"path\": \"/r/d\"}\n");
    /* json.dumps({"mask": 2, "path": os.fsdecode(b'/r/q"\\\n\xff\xc3\xa9\xf0\x9f\x98\x80\x01')}) */
    const char raw[] = "/r/q\"\\\n\xff\xc3\xa9\xf0\x9f\x98\x80\x01";
    assert_string_equal(line(2, raw, sizeof raw - 1, NULL),
                        "__SBX_WATCH__{\"mask\": 2, \"path\": "
                        "\"/r/q\\\"\\\\\\n\\udcff\\u00e9\\ud83d\\ude00\\u0001\"}\n");
    assert_string_equal(line(16384, "/r/x", 4, "cannot watch: No space left on device"),
                        "__SBX_WATCH__{\"mask\": 16384, \"path\": \"/r/x\", "
                        "\"error\": \"cannot watch: No space left on device\"}\n");
    struct buf b;
    buf_init(&b, 30);
    assert_int_equal(wline_event(&b, 1, "/a/very/long/path/that/does/not/fit", 35, NULL), -1);
    assert_int_equal(b.len, 0); /* all or nothing */
    buf_free(&b);
}

static void test_ready_line(void **st)
{
    (void)st;
    struct buf b;
    buf_init(&b, 1 << 10);
    assert_int_equal(wline_ready(&b), 0);
    assert_string_equal(buf_cstr(&b), "__SBX_WATCH__READY\n");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_is_python_json_dumps),
        cmocka_unit_test(test_ready_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
