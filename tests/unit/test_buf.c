/*
 * test_buf.c - bounded buffers (agent/core/buf.c): the bound holds, a refused
 * append leaves the buffer as it was, consume, the integer writers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/buf.h"

#include <string.h>

static void test_bound(void **st)
{
    (void)st;
    struct buf b;
    buf_init(&b, 8);
    assert_int_equal(buf_append(&b, "12345678", 8), 0);
    assert_int_equal(buf_putc(&b, '9'), -1);
    assert_int_equal(buf_append(&b, "x", 1), -1);
    assert_int_equal(buf_printf(&b, "%d", 1), -1);
    assert_int_equal(b.len, 8);
    assert_memory_equal(b.data, "12345678", 8);
    assert_string_equal(buf_cstr(&b), "12345678");
    /* An append that would overflow size_t arithmetic is refused too. */
    assert_int_equal(buf_reserve(&b, (size_t)-1), -1);
    buf_free(&b);
}

static void test_consume_reset(void **st)
{
    (void)st;
    struct buf b;
    buf_init(&b, 1024);
    assert_int_equal(buf_puts(&b, "hello world"), 0);
    buf_consume(&b, 6);
    assert_string_equal(buf_cstr(&b), "world");
    buf_consume(&b, 100);
    assert_int_equal(b.len, 0);
    assert_int_equal(buf_printf(&b, "%s-%03d", "n", 7), 0);
    assert_string_equal(buf_cstr(&b), "n-007");
    buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(buf_cstr(&b), "");
    buf_free(&b);
}

static void test_buf_integers(void **st)
{
    (void)st;
    struct buf b;
    buf_init(&b, 1024);
    assert_int_equal(buf_put_u64(&b, 0, 0), 0);
    assert_int_equal(buf_putc(&b, ' '), 0);
    assert_int_equal(buf_put_u64(&b, 18446744073709551615ULL, 0), 0);
    assert_int_equal(buf_putc(&b, ' '), 0);
    assert_int_equal(buf_put_u64(&b, 42, 6), 0);
    assert_int_equal(buf_putc(&b, ' '), 0);
    assert_int_equal(buf_put_i64(&b, -9223372036854775807LL - 1), 0);
    assert_int_equal(buf_putc(&b, ' '), 0);
    assert_int_equal(buf_put_i64(&b, -7), 0);
    assert_string_equal(buf_cstr(&b), "0 18446744073709551615 000042 -9223372036854775808 -7");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound),
        cmocka_unit_test(test_consume_reset),
        cmocka_unit_test(test_buf_integers),
    };
    return cmocka_run_group_tests_name("buf", tests, NULL, NULL);
}
