/*
 * test_output.c - the session's reply lines on stdout (agent/session/output.c)
 * with fd 1 on a small pipe this test reads at its own pace: no write ever
 * blocks; the producers pause at OUT_HIGH bytes waiting and resume below
 * OUT_LOW; every byte arrives in order; what stdout never took is counted at
 * the end and fd 1's flags are given back. alarm() bounds a test that would
 * block.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/session/session_priv.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REPLY (1024 * 1024) /* JSON bytes per reply: a 1.4 MiB line */

struct fixture {
    struct session s;
    int saved_out, rd;
    char *json;
    size_t line_len;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    int p[2];
    assert_non_null(f);
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    fcntl(p[1], F_SETPIPE_SZ, 4096);
    assert_true(fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
    f->saved_out = dup(STDOUT_FILENO);
    assert_true(f->saved_out >= 0);
    assert_int_equal(dup2(p[1], STDOUT_FILENO), STDOUT_FILENO);
    close(p[1]);
    f->rd = p[0];
    f->s.loop = ev_loop_new(EVFLAG_AUTO);
    assert_non_null(f->s.loop);
    f->s.h.loop = f->s.loop; /* no handler process: pausing it only sets its flag */
    f->s.h.in_fd = f->s.h.out_fd = -1;
    f->s.nonce.value = (char *)"N";
    f->s.nonce.len = 1;
    f->json = malloc(REPLY);
    assert_non_null(f->json);
    memset(f->json, 'j', REPLY);
    /* __SANDBOX_REPLY__ id __ N __ base64 \n */
    f->line_len = 17 + 2 + 2 + 1 + 2 + (REPLY + 2) / 3 * 4 + 1;
    alarm(60);
    output_init(&f->s);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    output_free(&f->s);
    dup2(f->saved_out, STDOUT_FILENO);
    close(f->saved_out);
    close(f->rd);
    ev_loop_destroy(f->s.loop);
    free(f->json);
    free(f);
    alarm(0);
    return 0;
}

static size_t drain_pipe(int fd)
{
    static char b[65536];
    size_t got = 0;
    ssize_t r;
    while ((r = read(fd, b, sizeof b)) > 0) got += (size_t)r;
    return got;
}

static size_t waiting(const struct session *s) { return s->out.buf.len - s->out.done; }

static void test_bounded_never_blocks_nothing_lost(void **state)
{
    struct fixture *f = *state;
    struct session *s = &f->s;
    assert_true(fcntl(STDOUT_FILENO, F_GETFL) & O_NONBLOCK);
    int n = 0;
    while (!s->out.full) {
        output_emit(s, "r1", 2, f->json, REPLY);
        n++;
        assert_true(n < 100);
    }
    /* Paused exactly when OUT_HIGH bytes were waiting. */
    assert_true(waiting(s) >= OUT_HIGH && waiting(s) < OUT_HIGH + f->line_len);
    assert_int_equal(s->h.read_paused, 1);
    size_t got = 0;
    while (s->out.full) {
        got += drain_pipe(f->rd);
        ev_run(s->loop, EVRUN_NOWAIT);
    }
    assert_true(waiting(s) < OUT_LOW);
    assert_int_equal(s->h.read_paused, 0);
    while (waiting(s)) {
        got += drain_pipe(f->rd);
        ev_run(s->loop, EVRUN_NOWAIT);
    }
    got += drain_pipe(f->rd);
    assert_int_equal(got, (size_t)n * f->line_len);
    assert_false(ev_is_active(&s->out.w));
}

static void test_what_stdout_never_took_is_counted(void **state)
{
    struct fixture *f = *state;
    struct session *s = &f->s;
    for (int i = 0; i < 3; i++) output_emit(s, "r2", 2, f->json, REPLY);
    output_flush(s);
    assert_true(ev_is_active(&s->out.w)); /* waiting for EV_WRITE, not blocked */
    output_free(s);
    size_t in_pipe = drain_pipe(f->rd);
    assert_int_equal(s->out.dropped + in_pipe, 3 * f->line_len);
    assert_false(fcntl(STDOUT_FILENO, F_GETFL) & O_NONBLOCK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bounded_never_blocks_nothing_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_what_stdout_never_took_is_counted, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
