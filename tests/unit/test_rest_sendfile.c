/*
 * test_rest_sendfile.c - what the loop may send from itself
 * (agent/api/rest/sendfile.c): a regular file on tmpfs or a disk, never a
 * pipe, a directory, a device or a /proc file; whether a range is in the
 * page cache (always in memory; a disk file's evicted pages are not, and
 * asking reads them ahead; past the end there is nothing to wait for).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/rest/sendfile.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

static int make_file(const char *dir, char *path, size_t cap, size_t size)
{
    snprintf(path, cap, "%s/test_rest_sendfile.XXXXXX", dir);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    char block[65536];
    memset(block, 'x', sizeof block);
    for (size_t k = 0; k < size; k += sizeof block) assert_int_equal(write(fd, block, sizeof block), (ssize_t)sizeof block);
    return fd;
}

static void test_servable(void **s)
{
    (void)s;
    struct stat st = {0};
    enum rest_sendfile_kind kind;
    char path[128];
    int fd = make_file("/dev/shm", path, sizeof path, 65536);
    assert_int_equal(rest_sendfile_servable(fd, &st, &kind), 1);
    assert_int_equal(st.st_size, 65536);
    assert_int_equal(kind, REST_SENDFILE_MEMORY);
    assert_int_equal(rest_sendfile_ready(fd, kind, 0, 65536, 0), 1);
    close(fd);
    unlink(path);
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(rest_sendfile_servable(p[0], &st, &kind), 0);
    close(p[0]);
    close(p[1]);
    static const char *never[] = {"/proc/self/status", "/dev/null", "/tmp"};
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
        fd = open(never[i], O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(rest_sendfile_servable(fd, &st, &kind), 0);
        close(fd);
    }
}

/* A disk file whose pages were evicted: not ready, read ahead, then ready. */
static void test_cache(void **s)
{
    (void)s;
    struct stat st;
    enum rest_sendfile_kind kind;
    char path[128];
    int fd = make_file("/var/tmp", path, sizeof path, 4u << 20);
    if (!rest_sendfile_servable(fd, &st, &kind) || kind == REST_SENDFILE_MEMORY) {
        close(fd);
        unlink(path);
        skip(); /* /var/tmp on no disk filesystem the list knows */
    }
    assert_int_equal(fsync(fd), 0);
    assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    assert_int_equal(rest_sendfile_ready(fd, kind, 1u << 20, 1u << 20, 1u << 20), 0);
    int ready = 0;
    for (int i = 0; i < 5000 && !ready; i++) { /* the read ahead it asked for: 5 s at most */
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        ready = rest_sendfile_ready(fd, kind, 1u << 20, 1u << 20, 0);
    }
    assert_true(ready);
    /* Past the end (a file that shrank): nothing to wait for. */
    assert_int_equal(ftruncate(fd, 4096), 0);
    assert_int_equal(rest_sendfile_ready(fd, kind, 1u << 20, 1u << 20, 0), 1);
    close(fd);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_servable),
        cmocka_unit_test(test_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
