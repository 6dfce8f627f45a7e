/*
 * test_fsout.c - the `fs` mode's output (agent/fs/fsout.c): errno names and
 * exit statuses, the error object, ENTRY JSON for crafted entries
 * (surrogateescape names, link targets, mtime), the result line on its fd.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/buf.h"
#include "agent/core/protocol.h"
#include "agent/fs/fsout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* b's contents as a NUL-terminated string (b stays usable). */
static const char *text(struct buf *b)
{
    const char *s = buf_cstr(b);
    assert_non_null(s);
    return s;
}

static void test_errno_names(void **s)
{
    (void)s;
    assert_string_equal(fsout_errno_name(ENOENT), "ENOENT");
    assert_string_equal(fsout_errno_name(EACCES), "EACCES");
    assert_string_equal(fsout_errno_name(ERFKILL), "ERFKILL");
    /* Aliases as Python's errno.errorcode names them. */
    assert_string_equal(fsout_errno_name(EWOULDBLOCK), "EAGAIN");
    assert_string_equal(fsout_errno_name(EDEADLK), "EDEADLOCK");
    assert_string_equal(fsout_errno_name(EOPNOTSUPP), "ENOTSUP");
    assert_null(fsout_errno_name(0));
    assert_null(fsout_errno_name(4000));
}

static void test_status(void **s)
{
    (void)s;
    const int missing[] = {ENOENT, ENOTDIR, EACCES, EPERM, ELOOP, ENAMETOOLONG};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++)
        assert_int_equal(fsout_status(missing[i]), EXIT_FS_MISSING);
    assert_int_equal(fsout_status(EISDIR), EXIT_FS_ISDIR);
    assert_int_equal(fsout_status(FILES_ENOTREG), EXIT_FS_NOTREG);
    assert_int_equal(fsout_status(EFBIG), EXIT_FS_TOO_LARGE);
    assert_int_equal(fsout_status(ENOSPC), EXIT_FS_FAILED);
    assert_int_equal(fsout_status(EBUSY), EXIT_FS_FAILED);
    assert_int_equal(fsout_status(4000), EXIT_FS_FAILED);
}

static void test_error_json(void **s)
{
    (void)s;
    struct buf b;
    buf_init(&b, 4096);
    assert_int_equal(fsout_error_json(&b, ENOENT, NULL, "/a b"), 0);
    assert_string_equal(text(&b), "\"error\": {\"code\": \"ENOENT\", \"errno\": 2, \"message\": "
                                  "\"No such file or directory\", \"path\": \"/a b\"}");
    buf_reset(&b);
    assert_int_equal(fsout_error_json(&b, FILES_ENOTREG, NULL, "/dev/null"), 0);
    assert_string_equal(text(&b), "\"error\": {\"code\": \"ENOTREG\", \"errno\": null, \"message\": "
                                  "\"Not a regular file\", \"path\": \"/dev/null\"}");
    /* An errno newer than the table; a message that is not UTF-8 (U+FFFD);
     * a path that is not (surrogateescape); no path. */
    buf_reset(&b);
    assert_int_equal(fsout_error_json(&b, 4000, "caf\xc3\xa9 \xff", "bad\xff\"q"), 0);
    assert_string_equal(text(&b), "\"error\": {\"code\": \"E4000\", \"errno\": 4000, \"message\": "
                                  "\"caf\\u00e9 \\ufffd\", \"path\": \"bad\\udcff\\\"q\"}");
    buf_reset(&b);
    assert_int_equal(fsout_error_json(&b, EBUSY, "Refusing to remove /", NULL), 0);
    assert_string_equal(text(&b), "\"error\": {\"code\": \"EBUSY\", \"errno\": 16, \"message\": "
                                  "\"Refusing to remove /\", \"path\": \"\"}");
    buf_free(&b);
}

static struct files_entry entry(const char *name, const char *path, mode_t mode)
{
    struct files_entry e;
    memset(&e, 0, sizeof e);
    e.name = name;
    e.nlen = strlen(name);
    e.path = path;
    e.plen = strlen(path);
    e.st.st_mode = mode;
    e.st.st_size = 5;
    e.st.st_uid = 1000;
    e.st.st_gid = 65534;
    e.st.st_mtim.tv_sec = 1700000000;
    e.st.st_mtim.tv_nsec = 500000000;
    return e;
}

static void test_entry_json(void **s)
{
    (void)s;
    struct buf b;
    buf_init(&b, 4096);
    struct files_entry e = entry("f", "/d/f", S_IFREG | 04755);
    assert_int_equal(fsout_entry_json(&b, &e), 0);
    assert_string_equal(text(&b), "{\"name\": \"f\", \"path\": \"/d/f\", \"type\": \"file\", \"size\": 5, "
                                  "\"mode\": 2541, \"mtime\": 1700000000.5, \"uid\": 1000, \"gid\": 65534}");
    /* A symlink: its target, bytes as given (only tlen of them). */
    buf_reset(&b);
    e = entry("l", "l", S_IFLNK | 0777);
    e.st.st_size = 0;
    e.st.st_mtim.tv_nsec = 0;
    e.target = (char *)"t\xfe/xyz";
    e.tlen = 3;
    assert_int_equal(fsout_entry_json(&b, &e), 0);
    assert_string_equal(text(&b), "{\"name\": \"l\", \"path\": \"l\", \"type\": \"symlink\", \"size\": 0, "
                                  "\"mode\": 511, \"mtime\": 1700000000.0, \"uid\": 1000, \"gid\": 65534, "
                                  "\"target\": \"t\\udcfe/\"}");
    buf_free(&b);
}

static void test_entry_names(void **s)
{
    (void)s;
    struct buf b;
    buf_init(&b, 4096);
    /* Names as Python's json.dumps(os.fsdecode(name)) writes them; a
     * directory's name may be a prefix of a longer buffer (nlen counts). */
    struct files_entry e = entry("bad\xff\xfe\n\t\x01\xc3\xa9\\", "d/bad", S_IFDIR | 0755);
    e.plen = 1;
    assert_int_equal(fsout_entry_json(&b, &e), 0);
    assert_non_null(strstr(text(&b), "{\"name\": \"bad\\udcff\\udcfe\\n\\t\\u0001\\u00e9\\\\\", "
                                     "\"path\": \"d\", \"type\": \"dir\""));
    static const struct {
        mode_t m;
        const char *want;
    } kinds[] = {{S_IFIFO, "fifo"}, {S_IFSOCK, "socket"}, {S_IFCHR, "char"}, {S_IFBLK, "block"}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        buf_reset(&b);
        e = entry("x", "x", kinds[i].m | 0600);
        assert_int_equal(fsout_entry_json(&b, &e), 0);
        char want[64] = "\"type\": \"";
        strcat(strcat(want, kinds[i].want), "\"");
        assert_non_null(strstr(text(&b), want));
    }
    /* A bound too small for the entry fails, never truncates silently. */
    struct buf small;
    buf_init(&small, 16);
    e = entry("f", "/d/f", S_IFREG | 0644);
    assert_int_equal(fsout_entry_json(&small, &e), -1);
    buf_free(&small);
    buf_free(&b);
}

/* Everything written to the read end of p so far (p[1] closed first). */
static char *drain(int p[2])
{
    static char got[4096];
    close(p[1]);
    ssize_t n = read(p[0], got, sizeof got - 1);
    assert_true(n >= 0);
    got[n] = '\0';
    close(p[0]);
    return got;
}

static void test_result_lines(void **s)
{
    (void)s;
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    fsout_set_fd(p[1]);
    assert_int_equal(fsout_ok(), 0);
    assert_int_equal(fsout_fail("read", FILES_ENOTREG, NULL, "/dev/zero"), EXIT_FS_NOTREG);
    assert_int_equal(fsout_fail("stat", ENOENT, NULL, "x"), EXIT_FS_MISSING);
    assert_string_equal(drain(p),
                        SENTINEL_FS "{\"ok\": true}\n" SENTINEL_FS
                                    "{\"ok\": false, \"error\": {\"code\": \"ENOTREG\", \"errno\": null, "
                                    "\"message\": \"Not a regular file\", \"path\": \"/dev/zero\"}}\n" SENTINEL_FS
                                    "{\"ok\": false, \"error\": {\"code\": \"ENOENT\", \"errno\": 2, "
                                    "\"message\": \"No such file or directory\", \"path\": \"x\"}}\n");

    /* A service failure: its message and path; an fd's failure by the fd's name. */
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    fsout_set_fd(p[1]);
    struct files_err e = {EIO, 0, strdup("/t/a/b"), "Copied, but the source could not be removed"};
    assert_int_equal(fsout_fail_err("move", &e, NULL), EXIT_FS_FAILED);
    assert_null(e.path);
    struct files_err f = {EPIPE, 1, NULL, "Broken pipe"};
    assert_int_equal(fsout_fail_err("read", &f, "<stdout>"), EXIT_FS_FAILED);
    assert_string_equal(drain(p),
                        SENTINEL_FS "{\"ok\": false, \"error\": {\"code\": \"EIO\", \"errno\": 5, \"message\": "
                                    "\"Copied, but the source could not be removed\", \"path\": \"/t/a/b\"}}\n"
                        SENTINEL_FS "{\"ok\": false, \"error\": {\"code\": \"EPIPE\", \"errno\": 32, \"message\": "
                                    "\"Broken pipe\", \"path\": \"<stdout>\"}}\n");
    /* Over --max-bytes: the error carries the file's size, after "path". */
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    fsout_set_fd(p[1]);
    assert_int_equal(fsout_fail_size("read", EFBIG, "too large", "/big", 1099511627776LL), EXIT_FS_TOO_LARGE);
    assert_string_equal(drain(p), SENTINEL_FS "{\"ok\": false, \"error\": {\"code\": \"EFBIG\", \"errno\": 27, "
                                  "\"message\": \"too large\", \"path\": \"/big\", \"size\": 1099511627776}}\n");
    fsout_set_fd(STDOUT_FILENO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errno_names),  cmocka_unit_test(test_status),
        cmocka_unit_test(test_error_json),   cmocka_unit_test(test_entry_json),
        cmocka_unit_test(test_entry_names),  cmocka_unit_test(test_result_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
