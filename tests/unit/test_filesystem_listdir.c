/*
 * test_filesystem_listdir.c - ListDir's walk (agent/api/filesystem/listdir.c):
 * the name sort against qsort + memcmp (random bytes, prefixes, in order,
 * reversed), and the walk itself: byte order at each level, a directory's
 * contents right after it, symlinks never entered, metadata only where
 * there is some, the error of the top directory, and no fd left open; a
 * directory whose lstats are split between two processes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/filesystem/filesystem.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static const char *cmp_arena;

static int by_memcmp(const void *a, const void *b)
{
    const struct filesystem_listdir_name *x = a, *y = b;
    int c = memcmp(cmp_arena + x->off, cmp_arena + y->off, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* n random names (distinct offsets; equal names allowed), sorted both ways. */
static void sort_case(size_t n, unsigned seed, int shape)
{
    char *arena = malloc(n * 32 + 1);
    struct filesystem_listdir_name *v = malloc((n + 1) * sizeof *v), *w = malloc((n + 1) * sizeof *w),
                                   *tmp = malloc((n + 1) * sizeof *tmp);
    size_t at = 0;
    srand(seed);
    for (size_t i = 0; i < n; i++) {
        size_t len = 1 + (size_t)rand() % 20;
        /* A few shared prefixes, and bytes above 0x7f (unsigned order). */
        for (size_t k = 0; k < len; k++)
            arena[at + k] = k < 6 && rand() % 4 ? "entry-"[k] : (char)(rand() % 4 ? 'a' + rand() % 3 : 0x80 + rand() % 3);
        arena[at + len] = '\0';
        v[i] = (struct filesystem_listdir_name){(uint32_t)at, (uint32_t)len};
        at += len + 1;
    }
    cmp_arena = arena;
    if (shape) { /* in order, or reversed */
        qsort(v, n, sizeof *v, by_memcmp);
        if (shape < 0)
            for (size_t i = 0; i < n / 2; i++) {
                struct filesystem_listdir_name t = v[i];
                v[i] = v[n - 1 - i];
                v[n - 1 - i] = t;
            }
    }
    memcpy(w, v, n * sizeof *v);
    filesystem_listdir_sort(v, n, arena, tmp);
    qsort(w, n, sizeof *w, by_memcmp);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(v[i].len, w[i].len);
        assert_memory_equal(arena + v[i].off, arena + w[i].off, v[i].len);
    }
    free(arena);
    free(v);
    free(w);
    free(tmp);
}

static void test_sort(void **s)
{
    (void)s;
    static const size_t sizes[] = {0, 1, 2, 3, 15, 16, 17, 31, 33, 100, 1000, 5003};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int shape = -1; shape <= 1; shape++)
            for (unsigned seed = 1; seed <= 3; seed++) sort_case(sizes[i], seed * 7919 + (unsigned)i, shape);
}

static char dir[] = "/tmp/test_listdir.XXXXXX";

static void touch(const char *rel)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    close(fd);
}

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    while (d && readdir(d)) n++;
    if (d) closedir(d);
    return n;
}

/* The entries' names (relative to dir) in the reply, one per line. */
static void names_of(const struct buf *out, char *got, size_t cap)
{
    size_t k = 0, dl = strlen(dir);
    const char *p = out->data, *end = out->data + out->len;
    got[0] = '\0';
    while ((p = memmem(p, (size_t)(end - p), "\"path\": \"", 9))) {
        p += 9 + dl + 1;
        const char *q = memchr(p, '"', (size_t)(end - p));
        k += (size_t)snprintf(got + k, cap - k, "%.*s\n", (int)(q - p), p);
        p = q;
    }
}

static void test_walk(void **s)
{
    (void)s;
    char p[256], got[1024];
    snprintf(p, sizeof p, "%s/b", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/b/c", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    touch("b/c/deep");
    touch("b/z");
    touch("a\xff");
    touch("a");
    touch("B");
    snprintf(p, sizeof p, "%s/a", dir);
    int meta = setxattr(p, "user.e2b.k", "v", 1, 0) == 0;
    snprintf(p, sizeof p, "%s/ln", dir);
    assert_int_equal(symlink("b", p), 0);
    struct filesystem_op op = {.path = dir, .depth = 5};
    struct buf out;
    buf_init(&out, FILESYSTEM_REPLY_MAX);
    int fds = open_fds();
    assert_int_equal(filesystem_listdir_child(&op, &out), 0);
    assert_int_equal(open_fds(), fds);
    assert_true(buf_cstr(&out));
    names_of(&out, got, sizeof got);
    assert_string_equal(got, "B\na\na\\udcff\nb\nb/c\nb/c/deep\nb/z\nln\n");
    /* The metadata of the one file that has some, and of no other. */
    const char *m = strstr(out.data, "\"metadata\": {\"k\": \"v\"}");
    if (meta) {
        assert_non_null(m);
        assert_null(strstr(m + 1, "\"metadata\""));
        assert_true(m < strstr(out.data, "a\\udcff\""));
    }
    buf_free(&out);
    op.depth = 1;
    buf_init(&out, FILESYSTEM_REPLY_MAX);
    assert_int_equal(filesystem_listdir_child(&op, &out), 0);
    names_of(&out, got, sizeof got);
    assert_string_equal(got, "B\na\na\\udcff\nb\nln\n");
    buf_free(&out);
    /* The top directory must be one, and be there. */
    snprintf(p, sizeof p, "%s/nope", dir);
    op.path = p;
    buf_init(&out, FILESYSTEM_REPLY_MAX);
    assert_int_equal(filesystem_listdir_child(&op, &out), RPC_NOT_FOUND);
    buf_free(&out);
    snprintf(p, sizeof p, "%s/a", dir);
    buf_init(&out, FILESYSTEM_REPLY_MAX);
    assert_int_equal(filesystem_listdir_child(&op, &out), RPC_INVALID_ARGUMENT);
    buf_free(&out);
    /* A link to a directory lists what it points to. */
    snprintf(p, sizeof p, "%s/ln", dir);
    buf_init(&out, FILESYSTEM_REPLY_MAX);
    assert_int_equal(filesystem_listdir_child(&op, &out), 0);
    assert_true(buf_cstr(&out));
    assert_non_null(strstr(out.data, "/ln/c\""));
    buf_free(&out);
}

/* A directory large enough that its lstats are split between two
 * processes: every entry there once, in order, with its own size. */
static void test_split(void **s)
{
    (void)s;
    char d[300], p[400];
    snprintf(d, sizeof d, "%s/many", dir);
    assert_int_equal(mkdir(d, 0755), 0);
    enum { N = 5001 };
    for (int i = N - 1; i >= 0; i--) { /* made in reverse: the sort has work */
        snprintf(p, sizeof p, "%s/f%05d", d, i);
        int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "1234567", (size_t)(i % 7)), i % 7);
        close(fd);
    }
    struct filesystem_op op = {.path = d, .depth = 1};
    struct buf out;
    buf_init(&out, FILESYSTEM_REPLY_MAX);
    assert_int_equal(filesystem_listdir_child(&op, &out), 0);
    assert_true(buf_cstr(&out));
    const char *at = out.data;
    for (int i = 0; i < N; i++) {
        char want[64];
        snprintf(want, sizeof want, "{\"name\": \"f%05d\", \"type\": \"FILE_TYPE_FILE\"", i);
        at = strstr(at, want);
        assert_non_null(at);
        snprintf(want, sizeof want, "\"size\": \"%d\"", i % 7);
        const char *size = strstr(at, "\"size\": ");
        assert_int_equal(strncmp(size, want, strlen(want)), 0);
    }
    assert_null(strstr(at + 1, "{\"name\""));
    buf_free(&out);
}

static int setup(void **s)
{
    (void)s;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_walk),
        cmocka_unit_test(test_split),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
