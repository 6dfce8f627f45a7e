"""`sandbox-agent serve`, file side (issue 9), over loopback with a raw
Connect client (tests/sdk/connectc.py):

  - /files download and upload of 1 GiB, against `cat` through a raw pipe
    into (out of) the same Python;
  - ListDir of 10,000 entries, against `sandbox-agent fs list` of the same
    directory (median of 15 each);
  - WatchDir: one event's latency (create a file -> its event; median of 50)
    and the 20,000-file burst of bench_watch.py (files lost), against the
    `sandbox-agent watch` command on the same work;
  - the agent's peak RSS over a 2 GiB download and a 2 GiB upload.

A binary that does not serve a route or RPC gets "n/a (not served)" rows.
Run alone: /usr/bin/python3 tests/bench/bench_serve_fs.py build/sandbox-agent
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench_watch import BARRIER, BURST
from servelib import FILESYSTEM, HANG, NotServed, Serve, na_rows, row, served

MIB = 1 << 20
GIB = 1 << 30
PIECE = b"\0" * MIB
PIPE = "`cat` through a pipe"


def _pieces(total):
    for _ in range(total // MIB):
        yield PIECE


def _download_mb_s(c, path, size):
    t0 = time.perf_counter()
    n = served(c.get_file, path, lambda b: None)
    assert n == size, (n, size)
    return size / (time.perf_counter() - t0) / 1e6


def _upload_mb_s(c, path, size):
    t0 = time.perf_counter()
    served(c.post_file, path, _pieces(size))
    dt = time.perf_counter() - t0
    assert os.path.getsize(path) == size
    return size / dt / 1e6


def _pipe_read_mb_s(path, size):
    t0 = time.perf_counter()
    p = subprocess.Popen(["cat", path], stdout=subprocess.PIPE, bufsize=0)
    buf, n = bytearray(1 << 18), 0
    while True:
        k = p.stdout.readinto(buf)
        if not k:
            break
        n += k
    p.wait()
    assert n == size
    return size / (time.perf_counter() - t0) / 1e6


def _pipe_write_mb_s(path, size):
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        p = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=f, bufsize=0)
        for piece in _pieces(size):
            p.stdin.write(piece)
        p.stdin.close()
        p.wait()
    return size / (time.perf_counter() - t0) / 1e6


def _listdir_ms(c, agent, d, n):
    served(c.unary, FILESYSTEM + "ListDir", {"path": d, "depth": 1})
    a, b = [], []
    for _ in range(15):
        t0 = time.perf_counter()
        got = c.unary(FILESYSTEM + "ListDir", {"path": d, "depth": 1})
        a.append((time.perf_counter() - t0) * 1000)
        assert len(got.get("entries", [])) == n
        t0 = time.perf_counter()
        subprocess.run([agent, "fs", "list", d], stdout=subprocess.DEVNULL, check=True, timeout=HANG)
        b.append((time.perf_counter() - t0) * 1000)
    return statistics.median(a), statistics.median(b)


class WatchStream:
    """WatchDir as (event name, type) pairs; blocking reads on the stream."""

    def __init__(self, c, root, recursive):
        self.it = served(c.stream, FILESYSTEM + "WatchDir", {"path": root, "recursive": recursive},
                         timeout_ms=HANG * 1000)
        first = served(next, self.it)
        assert "start" in first, first

    def until(self, name):
        """Every (name, type) up to and including the first event for name."""
        out = []
        for m in self.it:
            ev = m.get("filesystem")
            if ev:
                out.append((ev.get("name", ""), ev.get("type")))
                if ev.get("name") == name:
                    return out
        raise RuntimeError("the watch stream ended before %s" % name)

    def close(self):
        self.it.close()


class WatchCmd:
    def __init__(self, agent, root):
        self.p = subprocess.Popen([agent, "watch", root, "1", ""], stdout=subprocess.PIPE)
        assert self.p.stdout.readline().strip() == b"__SBX_WATCH__READY"

    def until(self, path):
        out, key = [], ('"path": "%s"' % path).encode()
        for line in self.p.stdout:
            out.append(line)
            if key in line:
                return out
        raise RuntimeError("watch ended before %s" % path)

    def close(self):
        self.p.terminate()
        self.p.wait(timeout=30)


def _latency(w, root, to_name):
    out = []
    for i in range(50):
        name = "lat-%d-%d" % (id(w), i)
        t0 = time.perf_counter()
        open(os.path.join(root, name), "wb").close()
        w.until(to_name(os.path.join(root, name), name))
        out.append((time.perf_counter() - t0) * 1000)
    return statistics.median(out)


def _burst(w, root, to_name):
    subprocess.run([sys.executable, BURST, root], check=True, timeout=HANG)
    open(os.path.join(root, BARRIER), "wb").close()
    seen = w.until(to_name(os.path.join(root, BARRIER), BARRIER))
    names = set()
    for ev in seen:
        n = ev[0] if isinstance(ev, tuple) else ev.split(b'"path": "', 1)[1].rsplit(b'"', 1)[0].decode()
        if os.path.basename(n).startswith("f"):
            names.add(n)
    return 20000 - len(names)


def _watch_rows(s, agent, base):
    c = s.client(timeout=HANG)
    res = {}
    for side in ("api", "cmd"):
        root = os.path.join(base, "watch-" + side)
        os.mkdir(root)
        if side == "api":
            w, to_name = WatchStream(c, root, True), (lambda path, name: name)
        else:
            w, to_name = WatchCmd(agent, root), (lambda path, name: path)
        try:
            res[side] = (_latency(w, root, to_name), _burst(w, root, to_name))
        finally:
            w.close()
        shutil.rmtree(root)
    c.close()
    return [row("serve: WatchDir event latency", res["api"][0], "`watch` command", res["cmd"][0], "ms"),
            row("serve: WatchDir 20,000-file burst, files lost", res["api"][1], "`watch` command",
                res["cmd"][1], "lost (goal 0)")]


def _peak_rss(agent, fn):
    """The agent's VmHWM after fn(client) on a fresh agent."""
    with Serve(agent) as s:
        c = s.client(timeout=HANG)
        fn(c)
        c.close()
        return s.rss_kib("VmHWM")


def _transfer_rows(s, agent, base):
    c = s.client(timeout=HANG)
    big = os.path.join(base, "one-gib")
    up = os.path.join(base, "uploaded")
    rows = [row("serve: /files upload 1 GiB", _upload_mb_s(c, up, GIB), PIPE,
                _pipe_write_mb_s(up + ".pipe", GIB), "MB/s")]
    os.rename(up, big)
    os.unlink(up + ".pipe")
    _pipe_read_mb_s(big, GIB)  # page cache warm for both
    rows.append(row("serve: /files download 1 GiB", _download_mb_s(c, big, GIB), PIPE,
                    _pipe_read_mb_s(big, GIB), "MB/s"))
    os.unlink(big)
    c.close()
    two = os.path.join(base, "two-gib")
    with open(two, "wb") as f:
        f.truncate(2 * GIB)
    rows.append(row("serve: peak RSS over a 2 GiB download", _peak_rss(agent, lambda k: k.get_file(
        two, lambda b: None)), "", None, "KiB"))
    os.unlink(two)
    rows.append(row("serve: peak RSS over a 2 GiB upload", _peak_rss(agent, lambda k: k.post_file(
        two, _pieces(2 * GIB))), "", None, "KiB"))
    os.unlink(two)
    return rows


def _try(rows, fn, na):
    try:
        rows.extend(fn())
    except NotServed:
        rows.extend(na_rows(na))


def bench(agent):
    rows = []
    base = tempfile.mkdtemp(prefix="bench-serve-fs-", dir="/tmp")
    try:
        with Serve(agent) as s:
            _try(rows, lambda: _transfer_rows(s, agent, base), [
                ("serve: /files upload 1 GiB", PIPE, "MB/s"), ("serve: /files download 1 GiB", PIPE, "MB/s"),
                ("serve: peak RSS over a 2 GiB download", "", "KiB"),
                ("serve: peak RSS over a 2 GiB upload", "", "KiB")])
            d = os.path.join(base, "ten-thousand")
            os.mkdir(d)
            for i in range(10000):
                open(os.path.join(d, "entry-%05d" % i), "wb").close()

            def listdir():
                c = s.client(timeout=HANG)
                a, b = _listdir_ms(c, agent, d, 10000)
                c.close()
                return [row("serve: ListDir of 10,000 entries", a, "`fs list`", b, "ms")]
            _try(rows, listdir, [("serve: ListDir of 10,000 entries", "`fs list`", "ms")])
            shutil.rmtree(d)
            _try(rows, lambda: _watch_rows(s, agent, base), [
                ("serve: WatchDir event latency", "`watch` command", "ms"),
                ("serve: WatchDir 20,000-file burst, files lost", "`watch` command", "lost (goal 0)")])
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return rows


if __name__ == "__main__":
    from bench_serve_proc import show
    show(bench(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/sandbox-agent")))
