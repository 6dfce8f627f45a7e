/*
 * test_filesystem_entry.c - EntryInfo (agent/api/filesystem/entry.c): Go's permission text,
 * the Timestamp's fraction digits, the type names and a symlink's type and
 * bits (its target's), owner and group names
 * from passwd and group files of the test's own, and a whole entry.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/filesystem/entry.h"
#include "agent/core/jsonbytes.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

static void test_permissions(void **s)
{
    (void)s;
    char p[24];
    struct { mode_t m; const char *want; } cases[] = {
        {S_IFREG | 0644, "-rw-r--r--"}, {S_IFDIR | 0755, "drwxr-xr-x"},
        {S_IFLNK | 0777, "Lrwxrwxrwx"}, {S_IFDIR | 01777, "dtrwxrwxrwx"},
        {S_IFREG | 04755, "urwxr-xr-x"}, {S_IFREG | 02700, "grwx------"},
        {S_IFCHR | 0666, "Dcrw-rw-rw-"}, {S_IFBLK | 0660, "Drw-rw----"},
        {S_IFIFO | 0600, "prw-------"}, {S_IFSOCK | 0777, "Srwxrwxrwx"},
        {S_IFREG, "----------"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        filesystem_entry_permissions(cases[i].m, p);
        assert_string_equal(p, cases[i].want);
    }
    assert_string_equal(filesystem_entry_type(S_IFREG), "FILE_TYPE_FILE");
    assert_string_equal(filesystem_entry_type(S_IFDIR), "FILE_TYPE_DIRECTORY");
    /* Never FILE_TYPE_SYMLINK: SDKs before mid-2026 cannot parse it. */
    assert_string_equal(filesystem_entry_type(S_IFLNK), "FILE_TYPE_UNSPECIFIED");
    assert_string_equal(filesystem_entry_type(S_IFIFO), "FILE_TYPE_UNSPECIFIED");
}

static void kind_is(mode_t own, const mode_t *target, const char *type, unsigned mode)
{
    struct filesystem_entry_kind k;
    filesystem_entry_kind(own, target, &k);
    assert_string_equal(k.type, type);
    assert_int_equal(k.mode, mode);
}

static void test_kind(void **s)
{
    (void)s;
    mode_t reg = S_IFREG | 0600, dirm = S_IFDIR | 0755, fifo = S_IFIFO | 0644;
    kind_is(S_IFREG | 0640, NULL, "FILE_TYPE_FILE", 0640);
    kind_is(S_IFDIR | 01777, NULL, "FILE_TYPE_DIRECTORY", 0777);
    /* A symlink that resolves: its target's type and bits, as envd. */
    kind_is(S_IFLNK | 0777, &reg, "FILE_TYPE_FILE", 0600);
    kind_is(S_IFLNK | 0777, &dirm, "FILE_TYPE_DIRECTORY", 0755);
    kind_is(S_IFLNK | 0777, &fifo, "FILE_TYPE_UNSPECIFIED", 0644);
    /* One that dangles, loops or cannot be followed: UNSPECIFIED, its own bits. */
    kind_is(S_IFLNK | 0777, NULL, "FILE_TYPE_UNSPECIFIED", 0777);
    /* target is a symlink's only. */
    kind_is(S_IFREG | 0644, &dirm, "FILE_TYPE_FILE", 0644);
}

static void test_time(void **s)
{
    (void)s;
    struct { long sec, ns; const char *want; } cases[] = {
        {1704164645, 0, "\"2024-01-02T03:04:05Z\""},
        {1704164645, 678000000, "\"2024-01-02T03:04:05.678Z\""},
        {1704164645, 678900000, "\"2024-01-02T03:04:05.678900Z\""},
        {1704164645, 1, "\"2024-01-02T03:04:05.000000001Z\""},
        {0, 0, "\"1970-01-01T00:00:00Z\""},
        /* The second's text is kept between calls: never the last one's. */
        {1704164645, 5, "\"2024-01-02T03:04:05.000000005Z\""},
        {1704164646, 5, "\"2024-01-02T03:04:06.000000005Z\""},
        {-1, 999999999, "\"1969-12-31T23:59:59.999999999Z\""},
        {253402300799, 0, "\"9999-12-31T23:59:59Z\""},
        {253402300800, 0, "\"+10000-01-01T00:00:00Z\""},
        {-62135596800, 0, "\"0001-01-01T00:00:00Z\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct buf b;
        struct timespec ts = {cases[i].sec, cases[i].ns};
        buf_init(&b, 64);
        assert_int_equal(filesystem_entry_time(&b, &ts), 0);
        assert_true(buf_cstr(&b));
        assert_string_equal(b.data, cases[i].want);
        buf_free(&b);
    }
}

static char dir[] = "/tmp/test_fsentry.XXXXXX";

/* An entry's JSON, decoded (its \\udcXX bytes undone first: cJSON refuses
 * a lone surrogate). */
static cJSON *parse(struct buf *b)
{
    b->len = jsonbytes_unescape(b->data, b->len);
    assert_true(buf_cstr(b));
    cJSON *e = cJSON_Parse(b->data);
    assert_non_null(e);
    return e;
}

static void test_entry(void **s)
{
    (void)s;
    char path[256], link[256];
    snprintf(path, sizeof path, "%s/fi\nle", dir);
    snprintf(link, sizeof link, "%s/ln", dir);
    FILE *f = fopen(path, "w");
    fputs("1234", f);
    fclose(f);
    chmod(path, 0640);
    int have_xattr = setxattr(path, "user.e2b.k", "v\xff", 2, 0) == 0;
    assert_int_equal(symlink("fi\nle", link), 0);
    struct user_names n;
    user_names_init(&n, "/nonexistent", "/nonexistent");
    struct buf b;
    buf_init(&b, 1 << 16);
    assert_int_equal(filesystem_entry_stat_json(&b, path, &n), 0);
    assert_true(buf_cstr(&b));
    if (have_xattr) assert_non_null(strstr(b.data, "\"metadata\": {\"k\": \"v\\udcff\"}"));
    cJSON *e = parse(&b);
    assert_string_equal(cJSON_GetObjectItem(e, "name")->valuestring, "fi\nle");
    assert_string_equal(cJSON_GetObjectItem(e, "type")->valuestring, "FILE_TYPE_FILE");
    assert_string_equal(cJSON_GetObjectItem(e, "size")->valuestring, "4");
    assert_int_equal(cJSON_GetObjectItem(e, "mode")->valueint, 0640);
    assert_string_equal(cJSON_GetObjectItem(e, "permissions")->valuestring, "-rw-r-----");
    char uid[16];
    snprintf(uid, sizeof uid, "%u", (unsigned)getuid());
    assert_string_equal(cJSON_GetObjectItem(e, "owner")->valuestring, uid); /* no passwd: the number */
    cJSON_Delete(e);
    buf_reset(&b);
    assert_int_equal(filesystem_entry_stat_json(&b, link, &n), 0);
    e = parse(&b);
    assert_string_equal(cJSON_GetObjectItem(e, "type")->valuestring, "FILE_TYPE_FILE"); /* its target's */
    assert_string_equal(cJSON_GetObjectItem(e, "symlinkTarget")->valuestring, path);
    assert_int_equal(cJSON_GetObjectItem(e, "mode")->valueint, 0640);
    assert_string_equal(cJSON_GetObjectItem(e, "permissions")->valuestring, "Lrwxrwxrwx"); /* the link's */
    cJSON_Delete(e);
    unlink(path);
    buf_reset(&b);
    assert_int_equal(filesystem_entry_stat_json(&b, link, &n), 0); /* dangling: its text, made absolute */
    e = parse(&b);
    assert_string_equal(cJSON_GetObjectItem(e, "type")->valuestring, "FILE_TYPE_UNSPECIFIED");
    assert_string_equal(cJSON_GetObjectItem(e, "symlinkTarget")->valuestring, path);
    assert_int_equal(cJSON_GetObjectItem(e, "mode")->valueint, 0777);
    cJSON_Delete(e);
    unlink(link);
    /* A link to a directory is a DIRECTORY. */
    assert_int_equal(symlink(dir, link), 0);
    buf_reset(&b);
    assert_int_equal(filesystem_entry_stat_json(&b, link, &n), 0);
    e = parse(&b);
    assert_string_equal(cJSON_GetObjectItem(e, "type")->valuestring, "FILE_TYPE_DIRECTORY");
    assert_string_equal(cJSON_GetObjectItem(e, "symlinkTarget")->valuestring, dir);
    cJSON_Delete(e);
    unlink(link);
    assert_int_equal(filesystem_entry_stat_json(&b, link, &n), -1);
    buf_free(&b);
}

static int setup(void **s)
{
    (void)s;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    return rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_permissions), cmocka_unit_test(test_time),
        cmocka_unit_test(test_entry),
        cmocka_unit_test(test_kind),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
