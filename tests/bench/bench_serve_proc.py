"""`sandbox-agent serve`, process side (issue 8), over loopback with a raw
Connect client (tests/sdk/connectc.py: no node in the timing loop):

  - Start -> the `start` event, and Start -> the `end` event, for `true`
    (median of 200, one kept-alive connection), against a bare
    posix_spawn + waitpid of `true` from the same Python;
  - 1 GiB of stdout (`head -c 1G /dev/zero`) through Start, against `cat`
    through a raw pipe, both read by node (stream_reader.mjs), and how many
    bytes a reader that fell behind did not get;
  - the agent's RSS idle, with 100 running processes (`sleep`), and with 200
    open connections;
  - the binary's size against the 400 KB goal.

A binary that does not serve Start gets "n/a (not served)" rows.
Run alone: /usr/bin/python3 tests/bench/bench_serve_proc.py build/sandbox-agent
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time

from servelib import HANG, PROCESS, NotServed, Serve, na_rows, row, served

HERE = os.path.dirname(os.path.abspath(__file__))

LAT_RUNS = 200
GIB = 1 << 30
SPAWN = "fork/exec/wait of `true`"


def _true_latency(c, n):
    """(median ms to the start event, median ms to the end event)."""
    to_start, to_end = [], []
    msg = {"process": {"cmd": "/bin/true"}}
    for i in range(n + 10):
        t0 = time.perf_counter()
        it = c.stream(PROCESS + "Start", msg)
        first = served(next, it)
        t1 = time.perf_counter()
        assert "start" in first.get("event", {}), first
        end = None
        for m in it:
            end = m.get("event", {}).get("end", end)
        t2 = time.perf_counter()
        assert end is not None, "no end event"
        if i >= 10:  # warm-up
            to_start.append((t1 - t0) * 1000)
            to_end.append((t2 - t0) * 1000)
    return statistics.median(to_start), statistics.median(to_end)


def _spawn_latency(n):
    out = []
    for i in range(n + 10):
        t0 = time.perf_counter()
        pid = os.posix_spawn("/bin/true", ["true"], os.environ)
        os.waitpid(pid, 0)
        if i >= 10:
            out.append((time.perf_counter() - t0) * 1000)
    return statistics.median(out)


def _node_reader(*args):
    p = subprocess.run(["node", os.path.join(HERE, "stream_reader.mjs")] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=HANG)
    r = json.loads(p.stdout.strip().splitlines()[-1])
    if "bytes" not in r:
        raise RuntimeError("stream_reader.mjs: %r %s" % (r, p.stderr[-500:]))
    return r


def _stream_rows(s):
    """1 GiB through Start, read by node (Python's base64 is slower than the
    agent); against the same reader on a pipe from `cat`. Bytes the reader
    did not get were skipped by the retention ring (a slow reader's gap)."""
    if not shutil.which("node"):
        return na_rows([("serve: 1 GiB stdout through Start (needs node)", "`cat` through a pipe", "MB/s")])
    runs = [_node_reader("start", s.addr, GIB) for _ in range(3)]
    best = max(runs, key=lambda r: r["bytes"] / r["seconds"])
    assert best["end"] and best["end"].get("exitCode", 0) == 0, best
    pipe = max((_node_reader("pipe", GIB) for _ in range(3)), key=lambda r: r["bytes"] / r["seconds"])
    assert pipe["bytes"] == GIB
    return [row("serve: 1 GiB stdout through Start (best of 3)", best["bytes"] / best["seconds"] / 1e6,
                "`cat` through a pipe", GIB / pipe["seconds"] / 1e6, "MB/s"),
            row("serve: 1 GiB stdout through Start, MB not delivered (of 3 runs, most)",
                max(GIB - r["bytes"] for r in runs) / 1e6, "`cat` through a pipe", 0, "MB")]


def _rss_with_sleepers(s, count):
    """RSS with `count` running `sleep`s whose streams were closed."""
    c = s.client()
    pids = []
    try:
        for _ in range(count):
            it = c.stream(PROCESS + "Start", {"process": {"cmd": "/bin/sleep", "args": ["600"]}})
            pids.append(next(it)["event"]["start"]["pid"])
            it.close()  # drops the connection; the process keeps running
        time.sleep(0.3)  # let the agent settle after the last close
        return s.rss_kib()
    finally:
        for pid in pids:
            try:
                c.unary(PROCESS + "SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
            except Exception:  # noqa: BLE001 - the stop below ends them anyway
                pass
        c.close()


def _rss_with_connections(s, count):
    socks = []
    try:
        for _ in range(count):
            k = socket.create_connection(("127.0.0.1", s.port), timeout=10)
            k.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            socks.append(k)
        for k in socks:  # every one answered and still open
            assert k.recv(4096).startswith(b"HTTP/1.1 204")
        time.sleep(0.3)
        return s.rss_kib()
    finally:
        for k in socks:
            k.close()


def bench(agent):
    rows = [row("serve: binary size", os.stat(agent).st_size / 1000, "goal", 400, "KB")]
    with Serve(agent) as s:
        rows.append(row("serve: RSS idle", s.rss_kib(), "", None, "KiB"))
        rows.append(row("serve: RSS, 200 open connections", _rss_with_connections(s, 200), "", None, "KiB"))
        c = s.client()
        try:
            a_start, a_end = _true_latency(c, LAT_RUNS)
        except NotServed:
            return rows + na_rows([
                ("serve: Start -> start event (`true`)", SPAWN, "ms"),
                ("serve: Start -> end event (`true`)", SPAWN, "ms"),
                ("serve: 1 GiB stdout through Start (best of 3)", "`cat` through a pipe", "MB/s"),
                ("serve: RSS, 100 running processes", "", "KiB")])
        spawn = _spawn_latency(LAT_RUNS)
        rows.append(row("serve: Start -> start event (`true`)", a_start, SPAWN, spawn, "ms"))
        rows.append(row("serve: Start -> end event (`true`)", a_end, SPAWN, spawn, "ms"))
        rows.extend(_stream_rows(s))
        c.close()
        rows.append(row("serve: RSS, 100 running processes", _rss_with_sleepers(s, 100), "", None, "KiB"))
    return rows


def show(rows):
    for r in rows:
        a, b = r["agent"], r["baseline"]
        print("%-46s %16s  %-26s %10s  %s" % (r["what"], a if isinstance(a, str) else "%.2f" % a,
                                              r["baseline_name"], "-" if b is None else "%.2f" % b, r["unit"]))


if __name__ == "__main__":
    show(bench(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/sandbox-agent")))
