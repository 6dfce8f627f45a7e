/*
 * test_rest_range.c - the Range header of GET /files (agent/api/rest/range.c):
 * every form Go's ServeContent reads (first-last, first-, -suffix, several,
 * overlapping, past the end, blanks, signs), what it refuses (416: malformed
 * or nothing overlapping), what it ignores (200: no header, more than the
 * file, past REST_RANGE_MAX), the two places it departs from Go (-0, an
 * empty file), and the multipart/byteranges framing and its length.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/rest/range.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct rest_range r[REST_RANGE_MAX];

/* The parse of v over size, its ranges as "s+l s+l" into out. */
static enum rest_range_result parse(const char *v, uint64_t size, char *out)
{
    size_t n = 99;
    enum rest_range_result k = rest_range_parse(v, size, r, &n);
    if (k != REST_RANGE_PARTS) assert_int_equal(n, 0);
    if (!out) return k;
    out[0] = '\0';
    for (size_t i = 0; k == REST_RANGE_PARTS && i < n; i++)
        sprintf(out + strlen(out), "%s%llu+%llu", i ? " " : "", (unsigned long long)r[i].start,
                (unsigned long long)r[i].len);
    return k;
}

static void test_forms(void **s)
{
    (void)s;
    char o[256];
    assert_int_equal(parse("bytes=0-9", 100, o), REST_RANGE_PARTS);
    assert_string_equal(o, "0+10");
    assert_int_equal(parse("bytes=90-", 100, o), REST_RANGE_PARTS);
    assert_string_equal(o, "90+10");
    assert_int_equal(parse("bytes=-5", 100, o), REST_RANGE_PARTS);
    assert_string_equal(o, "95+5");
    assert_int_equal(parse("bytes=-500", 100, o), REST_RANGE_PARTS); /* a suffix longer than the file: all of it */
    assert_string_equal(o, "0+100");
    assert_int_equal(parse("bytes=50-500", 100, o), REST_RANGE_PARTS); /* last cut to the end */
    assert_string_equal(o, "50+50");
    assert_int_equal(parse("bytes= 0-1 , ,\t4 - 5,", 100, o), REST_RANGE_PARTS);
    assert_string_equal(o, "0+2 4+2");
    assert_int_equal(parse("bytes=0-5,3-8", 100, o), REST_RANGE_PARTS); /* overlaps kept, in order */
    assert_string_equal(o, "0+6 3+6");
    assert_int_equal(parse("bytes=+3-+4", 100, o), REST_RANGE_PARTS); /* ParseInt takes a sign */
    assert_string_equal(o, "3+2");
    assert_int_equal(parse("bytes=0--0", 100, o), REST_RANGE_PARTS); /* "-0" is 0 to ParseInt */
    assert_string_equal(o, "0+1");
    assert_int_equal(parse("bytes=200-300,0-0", 100, o), REST_RANGE_PARTS); /* the one past the end dropped */
    assert_string_equal(o, "0+1");
    assert_int_equal(parse("bytes=99-99", 100, o), REST_RANGE_PARTS);
    assert_string_equal(o, "99+1");
}

static void test_refused_and_ignored(void **s)
{
    (void)s;
    char o[64];
    static const char *invalid[] = {"bytes", "items=0-1", "Bytes=0-1", "bytes=5", "bytes=a-b", "bytes=5-3",
                                    "bytes=--5", "bytes=-", "bytes=-+", "bytes=1--5", "bytes=-5-",
                                    "bytes=0-1,x", "bytes=9223372036854775808-", "bytes=0-1 2"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++)
        assert_int_equal(parse(invalid[i], 100, o), REST_RANGE_INVALID);
    assert_int_equal(parse("bytes=100-", 100, o), REST_RANGE_UNSATISFIABLE);
    assert_int_equal(parse("bytes=100-abc", 100, o), REST_RANGE_UNSATISFIABLE); /* its end is never read, as Go */
    assert_int_equal(parse("bytes=-0", 100, o), REST_RANGE_UNSATISFIABLE);     /* Go: 206 "bytes 100-99/100" */
    assert_int_equal(parse(NULL, 100, o), REST_RANGE_WHOLE);
    assert_int_equal(parse("", 100, o), REST_RANGE_WHOLE);
    assert_int_equal(parse("bytes=", 100, o), REST_RANGE_WHOLE);
    assert_int_equal(parse("bytes=,,", 100, o), REST_RANGE_WHOLE);
    assert_int_equal(parse("bytes=0-", 0, o), REST_RANGE_WHOLE);   /* an empty file: whole */
    assert_int_equal(parse("bytes=-5", 0, o), REST_RANGE_WHOLE);
    assert_int_equal(parse("bytes=0-60,0-60", 100, o), REST_RANGE_WHOLE); /* more than the file */
    char *many = malloc(8 * (REST_RANGE_MAX + 1) + 8);
    strcpy(many, "bytes=");
    for (int i = 0; i <= REST_RANGE_MAX; i++) sprintf(many + strlen(many), "%d-%d,", i, i);
    assert_int_equal(parse(many, 100000, NULL), REST_RANGE_WHOLE); /* past REST_RANGE_MAX */
    many[strlen(many) - 1] = '\0';
    *strrchr(many, ',') = '\0';
    assert_int_equal(parse(many, 100000, NULL), REST_RANGE_PARTS); /* exactly REST_RANGE_MAX */
    free(many);
}

static void test_framing(void **s)
{
    (void)s;
    char head[REST_RANGE_HEAD_MAX], cr[64];
    const char *b = "B0";
    struct rest_range two[2] = {{0, 2}, {4, 2}};
    assert_int_equal(rest_range_content_range(cr, sizeof cr, &two[1], 11), 12);
    assert_string_equal(cr, "bytes 4-5/11");
    int k0 = rest_range_part_head(head, 0, b, "text/plain", &two[0], 11);
    assert_string_equal(head, "--B0\r\nContent-Range: bytes 0-1/11\r\nContent-Type: text/plain\r\n\r\n");
    int k1 = rest_range_part_head(head, 1, b, "text/plain", &two[1], 11);
    assert_string_equal(head, "\r\n--B0\r\nContent-Range: bytes 4-5/11\r\nContent-Type: text/plain\r\n\r\n");
    int kt = rest_range_tail(head, b);
    assert_string_equal(head, "\r\n--B0--\r\n");
    assert_int_equal(rest_range_body_length(two, 2, b, "text/plain", 11), (uint64_t)(k0 + k1 + kt + 4));
    char big[REST_RANGE_CTYPE_MAX + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(rest_range_part_head(head, 0, b, big, &two[0], 11), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_refused_and_ignored),
        cmocka_unit_test(test_framing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
