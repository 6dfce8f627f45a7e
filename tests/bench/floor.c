/*
 * floor.c - the anchors of make bench's serve rows (bench_serve_*.py): what
 * the machine does with nothing between, timed from C the way hclient times
 * the agent. libc only. Not part of the agent.
 *
 *   floor [-t SECS] exec [-w W] [-q] N CMD [ARG...]
 *       fork + execvp + waitpid of CMD, N times after W warm-up runs (default
 *       10): median, p90 and mean ms. -q: the child's stdout is /dev/null
 *       (`CMD > /dev/null`); otherwise it is inherited.
 *   floor [-t SECS] execs P SECS CMD [ARG...]
 *       P processes, each doing fork + execvp + waitpid of CMD in a loop for
 *       SECS seconds: runs completed per second, all of them together.
 *   floor [-t SECS] tcp BYTES      a writer process sends BYTES over loopback
 *                                  TCP to this reader (1 MiB writes, 256 KiB reads)
 *   floor [-t SECS] pipe BYTES     the same through a pipe
 *   floor write BYTES              BYTES zero bytes to stdout in 1 MiB writes
 *                                  (0: until killed): the agent's fast writer
 *   floor tcpsrv HOST PORT         a TCP server (numeric IPv4 or IPv6 HOST),
 *                                  a process per connection, until killed:
 *                                  "s" and 8 bytes of a count get that many
 *                                  zero bytes (1 MiB writes), "e" an echo of
 *                                  everything after it; says "ready" once
 *                                  listening. The port forwarder's rows.
 *   floor [-t SECS] tcpget HOST PORT BYTES
 *                                  BYTES from a tcpsrv, read 256 KiB at a time
 *   floor [-t SECS] tcprtt [-c] HOST PORT N
 *                                  N one-byte round trips through a tcpsrv's
 *                                  echo after 100 warm-up ones: median, p90
 *                                  us; -c: each on a new connection
 *                                  (connect, the byte there and back, close)
 *
 * Each command but write prints one JSON line. -t bounds the run (default
 * 600 s): past it, exit 124.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WBUF (1 << 20)
#define RBUF (256 << 10)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "floor: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void on_alarm(int sig)
{
    static const char m[] = "floor: time limit reached\n";
    (void)sig;
    if (write(2, m, sizeof m - 1) < 0) _exit(124);
    _exit(124);
}

/* One fork + execvp + waitpid; returns the wait status. */
static int spawn(char **argv, int quiet)
{
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        if (quiet) {
            int fd = open("/dev/null", O_WRONLY);
            if (fd < 0 || dup2(fd, 1) < 0) _exit(126);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) die("waitpid");
    return st;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmd_exec(int argc, char **argv)
{
    int warm = 10, quiet = 0, o;
    while ((o = getopt(argc, argv, "+w:q")) != -1) {
        if (o == 'w') warm = atoi(optarg);
        else if (o == 'q') quiet = 1;
        else return -1;
    }
    if (argc - optind < 2 || atoi(argv[optind]) < 1) return -1;
    int n = atoi(argv[optind]), failed = 0;
    char **cmd = argv + optind + 1;
    double *t = calloc((size_t)n, sizeof *t), sum = 0;
    if (!t) die("calloc");
    for (int i = 0; i < warm + n; i++) {
        double t0 = now();
        int st = spawn(cmd, quiet);
        double dt = (now() - t0) * 1000;
        if (!WIFEXITED(st) || WEXITSTATUS(st)) failed++;
        if (i >= warm) t[i - warm] = dt, sum += dt;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    printf("{\"n\": %d, \"med_ms\": %.4f, \"p90_ms\": %.4f, \"mean_ms\": %.4f, \"min_ms\": %.4f, \"failed\": %d}\n", n,
           t[n / 2], t[(int)(0.9 * (n - 1) + 0.5)], sum / n, t[0], failed);
    return 0;
}

static int cmd_execs(int procs, double secs, char **cmd)
{
    int fds[2];
    if (pipe(fds) < 0) die("pipe");
    double end = now() + secs;
    for (int i = 0; i < procs; i++) {
        pid_t pid = fork();
        if (pid < 0) die("fork");
        if (pid) continue;
        close(fds[0]);
        long long done = 0, failed = 0;
        while (now() < end) {
            int st = spawn(cmd, 0);
            if (now() > end) break;
            if (WIFEXITED(st) && !WEXITSTATUS(st)) done++;
            else failed++;
        }
        long long r[2] = {done, failed};
        if (write(fds[1], r, sizeof r) != sizeof r) _exit(1);
        _exit(0);
    }
    close(fds[1]);
    long long done = 0, failed = 0, r[2];
    while (read(fds[0], r, sizeof r) == sizeof r) done += r[0], failed += r[1];
    while (wait(NULL) > 0 || errno == EINTR) {
    }
    printf("{\"completed\": %lld, \"seconds\": %.3f, \"per_s\": %.2f, \"failed\": %lld, \"procs\": %d}\n", done, secs,
           (double)done / secs, failed, procs);
    return 0;
}

static void write_all(int fd, long long bytes)
{
    static char buf[WBUF];
    for (;;) {
        size_t n = bytes == 0 || bytes > WBUF ? WBUF : (size_t)bytes;
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) _exit(errno == EPIPE ? 0 : 1);
        if (bytes) {
            bytes -= w;
            if (!bytes) break;
        }
    }
}

/* The reader: counts what fd brings until EOF. */
static int read_report(int fd, long long bytes, double t0, pid_t writer)
{
    static char buf[RBUF];
    long long got = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) die("read");
        if (!r) break;
        got += r;
    }
    double dt = now() - t0;
    if (writer > 0) waitpid(writer, NULL, 0);
    printf("{\"bytes\": %lld, \"seconds\": %.6f, \"mb_s\": %.1f}\n", got, dt, (double)got / dt / 1e6);
    return got == bytes ? 0 : 1;
}

static int cmd_tcp(long long bytes)
{
    signal(SIGPIPE, SIG_IGN);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&sa, &len) < 0)
        die("listen");
    double t0 = now();
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        close(l);
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) _exit(1);
        write_all(s, bytes);
        _exit(0);
    }
    int s = accept(l, NULL, NULL);
    if (s < 0) die("accept");
    close(l);
    return read_report(s, bytes, t0, pid);
}

static int cmd_pipe(long long bytes)
{
    int fds[2];
    if (pipe(fds) < 0) die("pipe");
    double t0 = now();
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        close(fds[0]);
        write_all(fds[1], bytes);
        _exit(0);
    }
    close(fds[1]);
    return read_report(fds[0], bytes, t0, pid);
}

/* ---- a TCP server and its clients (the port forwarder's rows) ---- */

static socklen_t addr_of(const char *host, const char *port, struct sockaddr_storage *ss)
{
    struct sockaddr_in *s4 = (void *)ss;
    struct sockaddr_in6 *s6 = (void *)ss;
    memset(ss, 0, sizeof *ss);
    if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((unsigned short)atoi(port));
        return sizeof *s4;
    }
    if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1) die("host");
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((unsigned short)atoi(port));
    return sizeof *s6;
}

static int dial(const char *host, const char *port)
{
    struct sockaddr_storage ss;
    socklen_t len = addr_of(host, port, &ss);
    int one = 1, s = socket(ss.ss_family, SOCK_STREAM, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&ss, len) < 0) die("connect");
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return s;
}

static void read_full(int fd, void *p, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (char *)p + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) _exit(1);
        got += (size_t)r;
    }
}

static void serve_one(int c)
{
    static char buf[RBUF];
    char cmd;
    read_full(c, &cmd, 1);
    if (cmd == 's') {
        long long n;
        read_full(c, &n, sizeof n);
        write_all(c, n);
        _exit(0);
    }
    for (;;) {
        ssize_t r = read(c, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0 || write(c, buf, (size_t)r) != r) _exit(0);
    }
}

static int cmd_tcpsrv(const char *host, const char *port)
{
    struct sockaddr_storage ss;
    socklen_t len = addr_of(host, port, &ss);
    int one = 1, l = socket(ss.ss_family, SOCK_STREAM, 0);
    signal(SIGCHLD, SIG_IGN); /* children reaped by the kernel */
    signal(SIGPIPE, SIG_IGN);
    if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(l, (struct sockaddr *)&ss, len) < 0 || listen(l, 4096) < 0)
        die("listen");
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        int c = accept(l, NULL, NULL);
        if (c < 0) continue;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pid_t pid = fork();
        if (pid == 0) {
            close(l);
            serve_one(c);
        }
        close(c);
    }
    return 0;
}

static int cmd_tcpget(const char *host, const char *port, long long bytes)
{
    char cmd[1 + sizeof bytes] = "s";
    memcpy(cmd + 1, &bytes, sizeof bytes);
    double t0 = now();
    int s = dial(host, port);
    if (write(s, cmd, sizeof cmd) != (ssize_t)sizeof cmd) die("write");
    return read_report(s, bytes, t0, 0);
}

static int cmd_tcprtt(int argc, char **argv)
{
    int fresh = argc > 1 && !strcmp(argv[1], "-c");
    if (argc - fresh != 4 || atoi(argv[3 + fresh]) < 1) return -1;
    const char *host = argv[1 + fresh], *port = argv[2 + fresh];
    int n = atoi(argv[3 + fresh]), warm = 100, s = -1;
    double *t = calloc((size_t)n, sizeof *t);
    if (!t) die("calloc");
    for (int i = 0; i < warm + n; i++) {
        char b = 'x';
        double t0 = now();
        if (s < 0) {
            s = dial(host, port);
            if (write(s, "e", 1) != 1) die("write");
        }
        if (write(s, &b, 1) != 1) die("write");
        read_full(s, &b, 1);
        if (fresh) close(s), s = -1;
        if (i >= warm) t[i - warm] = (now() - t0) * 1e6;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    printf("{\"n\": %d, \"med_us\": %.2f, \"p90_us\": %.2f, \"min_us\": %.2f}\n", n, t[n / 2],
           t[(int)(0.9 * (n - 1) + 0.5)], t[0]);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: floor [-t SECS] exec [-w W] [-q] N CMD [ARG...]\n"
                    "       floor [-t SECS] execs PROCS SECS CMD [ARG...]\n"
                    "       floor [-t SECS] tcp BYTES | pipe BYTES\n"
                    "       floor write BYTES   (0: until killed)\n"
                    "       floor tcpsrv HOST PORT\n"
                    "       floor [-t SECS] tcpget HOST PORT BYTES | tcprtt [-c] HOST PORT N\n");
    return 64;
}

int main(int argc, char **argv)
{
    int limit = 600, i = 1;
    if (argc > 2 && !strcmp(argv[1], "-t")) limit = atoi(argv[2]), i = 3;
    if (i >= argc) return usage();
    const char *cmd = argv[i++];
    argc -= i - 1;
    argv += i - 1;
    if (!strcmp(cmd, "write") && argc == 2) {
        write_all(1, atoll(argv[1]));
        return 0;
    }
    if (!strcmp(cmd, "tcpsrv") && argc == 3) return cmd_tcpsrv(argv[1], argv[2]);
    signal(SIGALRM, on_alarm);
    alarm((unsigned)limit);
    optind = 1;
    if (!strcmp(cmd, "exec")) {
        int r = cmd_exec(argc, argv);
        return r < 0 ? usage() : r;
    }
    if (!strcmp(cmd, "execs") && argc >= 4 && atoi(argv[1]) > 0) return cmd_execs(atoi(argv[1]), atof(argv[2]), argv + 3);
    if (!strcmp(cmd, "tcp") && argc == 2) return cmd_tcp(atoll(argv[1]));
    if (!strcmp(cmd, "pipe") && argc == 2) return cmd_pipe(atoll(argv[1]));
    if (!strcmp(cmd, "tcpget") && argc == 4) return cmd_tcpget(argv[1], argv[2], atoll(argv[3]));
    if (!strcmp(cmd, "tcprtt")) {
        int r = cmd_tcprtt(argc, argv);
        return r < 0 ? usage() : r;
    }
    return usage();
}
