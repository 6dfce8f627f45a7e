"""Bench: `sandbox-agent session` against a Python tail loop doing the same job.

Both sides follow the same mailbox file, feed the same tiny C echo handler
(compiled here), and print the same `__SANDBOX_REPLY__<id>__<nonce>__<b64>`
lines. Measured in one run, side by side:
  - round-trip latency: append one request line, read its reply line from
    stdout; sequential, p50 and p99 over LAT_N requests;
  - throughput: THR_N requests appended in one burst, time until the last
    reply line has been read (median of THR_RUNS).
Target (issue 4): at least 10x the baseline's throughput, p50 under 1 ms.

Run alone: /usr/bin/python3 tests/bench/bench_session.py build/sandbox-agent
"""
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

LAT_N = 2000
LAT_WARM = 200
THR_N = 100000
THR_RUNS = 3
PY = "/usr/bin/python3"
NONCE = "bench-nonce"

ECHO_C = r"""
/* Echo handler: for each request line, {"id": ID, "result": "ok"}. Reads in
 * blocks and writes all replies of a block in one write. */
#include <string.h>
#include <unistd.h>
static char in[1 << 20], out[1 << 21];
int main(void) {
    size_t have = 0;
    for (;;) {
        ssize_t r = read(0, in + have, sizeof in - have);
        if (r <= 0) return 0;
        have += (size_t)r;
        size_t start = 0, o = 0;
        char *nl;
        while ((nl = memchr(in + start, '\n', have - start))) {
            char *p = strstr(in + start, "\"id\": \"");
            if (p && p < nl) {
                p += 7;
                char *q = memchr(p, '"', (size_t)(nl - p));
                if (q) {
                    memcpy(out + o, "{\"id\": \"", 8); o += 8;
                    memcpy(out + o, p, (size_t)(q - p)); o += (size_t)(q - p);
                    memcpy(out + o, "\", \"result\": \"ok\"}\n", 19); o += 19;
                }
            }
            start = (size_t)(nl - in) + 1;
            if (o > sizeof out - 512) {
                for (size_t w = 0; w < o;) { ssize_t k = write(1, out + w, o - w); if (k <= 0) return 1; w += (size_t)k; }
                o = 0;
            }
        }
        for (size_t w = 0; w < o;) { ssize_t k = write(1, out + w, o - w); if (k <= 0) return 1; w += (size_t)k; }
        memmove(in, in + start, have - start);
        have -= start;
    }
}
"""

BASELINE_PY = r'''
"""Baseline: the session loop in plain Python (stdlib only, inotify via ctypes)."""
import base64, ctypes, json, os, select, subprocess, sys
path, nonce = sys.argv[1], sys.argv[2].encode()
libc = ctypes.CDLL(None, use_errno=True)
ifd = libc.inotify_init1(os.O_NONBLOCK)
libc.inotify_add_watch(ifd, os.path.dirname(path).encode(), 0x2 | 0x8 | 0x80 | 0x100)
h = subprocess.Popen(sys.argv[3:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
hin, hout = h.stdin.fileno(), h.stdout.fileno()
os.set_blocking(hin, False)
out = sys.stdout.buffer
f = None
buf = b""
hbuf = b""
tosend = bytearray()
pending = set()
while True:
    if f is None:
        try:
            f = open(path, "rb")
        except FileNotFoundError:
            pass
    if f is not None:
        data = f.read()
        if data:
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                req = json.loads(line)
                pending.add(req["id"])
                tosend += line + b"\n"
    if tosend:
        try:
            n = os.write(hin, tosend)
            del tosend[:n]
        except BlockingIOError:
            pass
    r, _, _ = select.select([ifd, hout], [hin] if tosend else [], [], 1.0)
    if ifd in r:
        os.read(ifd, 65536)
    if hout in r:
        chunk = os.read(hout, 1 << 20)
        if not chunk:
            break
        hbuf += chunk
        *lines, hbuf = hbuf.split(b"\n")
        for line in lines:
            rep = json.loads(line)
            rid = rep.get("id")
            if rid in pending:
                pending.discard(rid)
                out.write(b"__SANDBOX_REPLY__" + rid.encode() + b"__" + nonce + b"__" + base64.b64encode(line) + b"\n")
        out.flush()
'''


class Side:
    def __init__(self, argv, mailbox, env):
        self.mailbox = mailbox
        self.p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.fd = self.p.stdout.fileno()
        self.rest = b""
        self.wfd = os.open(mailbox, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def read_lines(self, n, deadline):
        """Block until n more reply lines have arrived; returns the last one."""
        got = 0
        last = b""
        while True:
            cnt = self.rest.count(b"\n")
            if got + cnt >= n:
                # Keep what follows the n-th line.
                idx = -1
                for _ in range(n - got):
                    start = idx + 1
                    idx = self.rest.index(b"\n", start)
                last = self.rest[start:idx]
                self.rest = self.rest[idx + 1:]
                return last
            got += cnt
            self.rest = self.rest[self.rest.rfind(b"\n") + 1:] if cnt else self.rest
            if time.monotonic() > deadline:
                raise RuntimeError("bench: replies stopped arriving")
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise RuntimeError("bench: the session side exited")
            self.rest += chunk

    def roundtrip(self, rid):
        line = b'{"id": "%s", "method": "echo", "params": null}\n' % rid.encode()
        t0 = time.perf_counter()
        os.write(self.wfd, line)
        last = self.read_lines(1, time.monotonic() + 30)
        t1 = time.perf_counter()
        assert last.startswith(b"__SANDBOX_REPLY__" + rid.encode() + b"__"), last[:80]
        return t1 - t0

    def burst(self, prefix, n):
        lines = [b'{"id": "%s%d", "method": "echo", "params": null}\n' % (prefix.encode(), i) for i in range(n)]
        blob = b"".join(lines)
        t0 = time.perf_counter()
        # Whole lines per write, as several host-side appends would.
        step = 64 * 1024
        i = 0
        while i < len(blob):
            j = blob.rfind(b"\n", i, i + step) + 1 if i + step < len(blob) else len(blob)
            os.write(self.wfd, blob[i:j])
            i = j
        last = self.read_lines(n, time.monotonic() + 300)
        t1 = time.perf_counter()
        assert last.startswith(b"__SANDBOX_REPLY__%s%d__" % (prefix.encode(), n - 1)), last[:80]
        return n / (t1 - t0)

    def close(self):
        os.close(self.wfd)
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def measure(side):
    for i in range(LAT_WARM):
        side.roundtrip("warm%d" % i)
    lat = sorted(side.roundtrip("lat%d" % i) for i in range(LAT_N))
    p50 = lat[len(lat) // 2] * 1000
    p99 = lat[int(len(lat) * 0.99)] * 1000
    thr = statistics.median(side.burst("t%d-" % k, THR_N) for k in range(THR_RUNS))
    return p50, p99, thr


def bench(agent_path):
    tmp = tempfile.mkdtemp(prefix="bench-session-")
    try:
        echo = os.path.join(tmp, "echo")
        with open(echo + ".c", "w") as f:
            f.write(ECHO_C)
        subprocess.run(["gcc", "-O2", "-o", echo, echo + ".c"], check=True)
        base = os.path.join(tmp, "baseline.py")
        with open(base, "w") as f:
            f.write(BASELINE_PY)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SANDBOX_JOB_NONCE": NONCE}
        results = {}
        for name, argv in (("agent", [os.path.abspath(agent_path), "session", "--", echo]),
                           ("baseline", [PY, base, None, NONCE, echo])):
            d = os.path.join(tmp, name)
            os.mkdir(d)
            mb = os.path.join(d, "mailbox.jsonl")
            argv = [mb if a is None else a for a in argv]
            side = Side(argv, mb, dict(env, SANDBOX_MAILBOX=mb))
            try:
                results[name] = measure(side)
            finally:
                side.close()
        a, b = results["agent"], results["baseline"]
        bl = "python3 tail loop (same file, same echo handler)"
        return [
            {"what": "session round-trip p50", "agent": a[0], "baseline_name": bl, "baseline": b[0], "unit": "ms"},
            {"what": "session round-trip p99", "agent": a[1], "baseline_name": bl, "baseline": b[1], "unit": "ms"},
            {"what": "session throughput (%d-request burst)" % THR_N, "agent": a[2], "baseline_name": bl,
             "baseline": b[2], "unit": "req/s (higher is better)"},
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    for row in bench(sys.argv[1] if len(sys.argv) > 1 else "build/sandbox-agent"):
        print("%-42s agent %12.3f   %s %12.3f  %s" % (row["what"], row["agent"], "baseline", row["baseline"], row["unit"]))
