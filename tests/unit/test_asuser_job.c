/*
 * test_asuser_job.c - helper processes (agent/api/asuser_job.c): a collected frame,
 * a helper that dies without one or says too much, the raw pipe, the fds a
 * helper keeps (and those it must not), detach and cancel, and (as root)
 * acting as another user; frames read straight into their buffer at and
 * past the bound; an fd passed back on the socket; an exit callback that
 * cancels its own job.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/asuser/job.h"
#include "agent/core/err.h"
#include "agent/core/sig.h"
#include "agent/core/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct ev_loop *loop;
static struct {
    int done, exited;
    int32_t status;
    char data[256];
    size_t n;
} r;

static void on_done(void *ctx, int32_t status, const char *data, size_t n)
{
    r.done = 1;
    r.status = status;
    r.n = n < sizeof r.data ? n : sizeof r.data - 1;
    memcpy(r.data, data, r.n);
    r.data[r.n] = '\0';
}

static void on_exit_cb(void *ctx, int wstatus) { r.exited = 1; }

static void on_deadline(struct ev_loop *l, ev_timer *t, int revents) { fail_msg("the test's deadline passed"); }

/* Run the loop until *flag (10 s at most). */
static void run_until(const int *flag)
{
    ev_timer t;
    ev_timer_init(&t, on_deadline, 10, 0);
    ev_timer_start(loop, &t);
    while (!*flag) ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, &t);
}

/* Run the loop until every helper is reaped (10 s at most). */
static void run_until_idle(void)
{
    ev_timer t;
    ev_timer_init(&t, on_deadline, 10, 0);
    ev_timer_start(loop, &t);
    while (asuser_job_running()) ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, &t);
}

static struct asuser_job *start(asuser_job_fn fn, void *arg, const struct user_info *u, int in0)
{
    char err[ERR_LEN];
    struct asuser_job_opts o = {.user = u, .fn = fn, .arg = arg, .in_fds = {in0, -1}, .nin = in0 >= 0};
    memset(&r, 0, sizeof r);
    struct asuser_job *j = asuser_job_start(loop, &o, err);
    assert_non_null(j);
    return j;
}

static int reply_hello(void *arg) { return asuser_job_reply(7, "hello", 5) < 0; }
static int reply_nothing(void *arg) { return 3; }
static int reply_big(void *arg)
{
    static char big[100000];
    return asuser_job_reply(0, big, sizeof big) < 0;
}

/* A frame of *(size_t *)arg bytes of 'x'. */
static int reply_n(void *arg)
{
    size_t n = *(size_t *)arg;
    char *p = malloc(n);
    memset(p, 'x', n);
    return asuser_job_reply(0, p, n) < 0;
}

static size_t got_n;
static void on_done_n(void *ctx, int32_t status, const char *data, size_t n)
{
    r.done = 1;
    r.status = status;
    got_n = n;
    for (size_t i = 0; status == 0 && i < n; i++)
        if (data[i] != 'x') fail_msg("byte %zu of the frame is not ours", i);
}

/* A frame read straight into its buffer: exactly the bound, one past it,
 * and megabytes (many reads). */
static void test_collect_bounds(void **s)
{
    (void)s;
    size_t sizes[] = {1000, 1001, 65535, 65536, 65537, 3u << 20};
    size_t max[] = {1000, 1000, 65536, 65536, 65536, 4u << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        asuser_job_collect(start(reply_n, &sizes[i], NULL, -1), max[i], on_done_n, NULL);
        run_until(&r.done);
        if (sizes[i] <= max[i]) {
            assert_int_equal(r.status, 0);
            assert_int_equal(got_n, sizes[i]);
        } else {
            assert_int_equal(r.status, ASUSER_JOB_FAILED);
        }
        run_until_idle();
    }
}

static void test_collect(void **s)
{
    (void)s;
    asuser_job_collect(start(reply_hello, NULL, NULL, -1), 100, on_done, NULL);
    run_until(&r.done);
    assert_int_equal(r.status, 7);
    assert_string_equal(r.data, "hello");
    asuser_job_collect(start(reply_nothing, NULL, NULL, -1), 100, on_done, NULL);
    run_until(&r.done);
    assert_int_equal(r.status, ASUSER_JOB_FAILED);
    assert_non_null(strstr(r.data, "without a result (exit status 3)"));
    asuser_job_collect(start(reply_big, NULL, NULL, -1), 1000, on_done, NULL);
    run_until(&r.done);
    assert_int_equal(r.status, ASUSER_JOB_FAILED);
    run_until_idle();
}

/* The child reads its input (fd 4) and says whether fd *arg is closed in it. */
static int echo_input(void *arg)
{
    char in[64];
    ssize_t n = read(ASUSER_JOB_IN_FD0, in, sizeof in);
    int closed = fcntl(*(int *)arg, F_GETFD) < 0 && errno == EBADF;
    char out[128];
    int k = snprintf(out, sizeof out, "%.*s %s", (int)(n > 0 ? n : 0), in, closed ? "closed" : "OPEN");
    return asuser_job_reply(0, out, (size_t)k) < 0;
}

static void test_fds(void **s)
{
    (void)s;
    int in[2], other[2];
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(other, O_CLOEXEC), 0);
    assert_int_equal(write(in[1], "data", 4), 4);
    close(in[1]);
    struct asuser_job *j = start(echo_input, &other[1], NULL, in[0]);
    close(in[0]);
    asuser_job_collect(j, 100, on_done, NULL);
    run_until(&r.done);
    assert_string_equal(r.data, "data closed"); /* another pipe's end never reaches a helper */
    close(other[0]);
    close(other[1]);
    run_until_idle();
}

static int raw_bytes(void *arg)
{
    return write(ASUSER_JOB_OUT_FD, "raw!", 4) != 4;
}

static void test_raw(void **s)
{
    (void)s;
    struct asuser_job *j = start(raw_bytes, NULL, NULL, -1);
    asuser_job_on_exit(j, on_exit_cb, NULL);
    run_until(&r.exited);
    char b[8];
    assert_int_equal(read(asuser_job_fd(j), b, sizeof b), 4);
    assert_memory_equal(b, "raw!", 4);
    asuser_job_detach(j);
    run_until_idle();
}

/* An fd (the read end of a pipe holding "via fd"), with its frame. */
static int reply_with_fd(void *arg)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0 || write(p[1], "via fd", 6) != 6) return 1;
    close(p[1]);
    return asuser_job_reply_fd(0, "12345678", 8, p[0]) < 0;
}

static int done_flag;
static struct asuser_job *cancel_me;
static void cancel_on_exit(void *ctx, int wstatus)
{
    asuser_job_cancel(cancel_me); /* frees the job inside its own callback */
    done_flag = 1;
}

/* The socket: the frame and the fd that came with it, close-on-exec; the
 * exit callback may cancel its job. */
static void test_socket_fd(void **s)
{
    (void)s;
    char err[ERR_LEN];
    struct asuser_job_opts o = {.fn = reply_with_fd, .socket = 1};
    struct asuser_job *j = asuser_job_start(loop, &o, err);
    assert_non_null(j);
    cancel_me = j;
    done_flag = 0;
    asuser_job_on_exit(j, cancel_on_exit, NULL);
    char head[12];
    size_t got = 0;
    int fd = -1;
    while (got < sizeof head) {
        ssize_t n = asuser_job_recv(j, head + got, sizeof head - got, &fd);
        if (n < 0 && errno == EAGAIN) {
            /* Waited for outside the loop: the loop would reap the helper
             * and the callback free the job before the frame is read. */
            struct pollfd pf = {asuser_job_fd(j), POLLIN, 0};
            assert_true(poll(&pf, 1, 30000) == 1); /* a lost frame fails, never hangs */
            continue;
        }
        assert_true(n > 0);
        got += (size_t)n;
    }
    assert_memory_equal(head, "\0\0\0\0" "12345678", 12);
    assert_true(fd >= 0);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    char b[8];
    assert_int_equal(read(fd, b, sizeof b), 6);
    assert_memory_equal(b, "via fd", 6);
    close(fd);
    run_until(&done_flag);
    run_until_idle();
}

static int wait_input(void *arg)
{
    char c;
    return (int)read(ASUSER_JOB_IN_FD0, &c, 1);
}

static int forever(void *arg)
{
    while (pause() < 0) continue;
    return 0;
}

static void test_detach_and_cancel(void **s)
{
    (void)s;
    int in[2];
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    struct asuser_job *j = start(wait_input, NULL, NULL, in[0]);
    close(in[0]);
    asuser_job_collect(j, 100, on_done, NULL);
    asuser_job_detach(j); /* done never runs; the record goes once reaped */
    close(in[1]);
    run_until_idle();
    assert_false(r.done);
    asuser_job_cancel(start(forever, NULL, NULL, -1));
    run_until_idle();
}

static int who(void *arg)
{
    char out[64];
    int k = snprintf(out, sizeof out, "%u %u", (unsigned)geteuid(), (unsigned)getegid());
    return asuser_job_reply(0, out, (size_t)k) < 0;
}

static void test_user(void **s)
{
    (void)s;
    if (geteuid() != 0) skip();
    struct user_info u = {.uid = 65534, .gid = 65534, .ngroups = 1, .groups = {65534}, .name = "nobody"};
    asuser_job_collect(start(who, NULL, &u, -1), 100, on_done, NULL);
    run_until(&r.done);
    assert_string_equal(r.data, "65534 65534");
    run_until_idle();
}

int main(void)
{
    sig_ignore_pipe();
    loop = ev_default_loop(0);
    reaper_init(loop);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collect), cmocka_unit_test(test_collect_bounds), cmocka_unit_test(test_fds),
        cmocka_unit_test(test_raw), cmocka_unit_test(test_socket_fd),
        cmocka_unit_test(test_detach_and_cancel), cmocka_unit_test(test_user),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
