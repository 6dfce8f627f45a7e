"""`sandbox-agent serve`, file side (issues 9 and 12), timed from C
(build/bench/hclient) against nginx and the machine's own tools on the same
work:

  3  GET /files of a 1 GiB file on tmpfs (/dev/shm), against Debian's nginx
     with `sendfile on` serving the same file from a loopback port (goal: at
     least as fast); best of 3 each, taken in turns.
  3r GET /files of the same file with `Range: bytes=0-536870911` (its first
     512 MiB, a 206 sent by sendfile as a whole file is) against the whole
     1 GiB GET, MB/s each, best of 3 in turns (goal: as fast).
  4  POST /files of 1 GiB, application/octet-stream with a Content-Length,
     against nginx's WebDAV PUT (`dav_methods PUT`, client_max_body_size 0,
     its body temporary files on the same tmpfs) (goal: at least as fast).
  5  GET /files of 256 MiB of text (.txt: text/plain; charset=utf-8) with
     `Accept-Encoding: gzip`, against nginx `gzip on; gzip_comp_level 1;
     gzip_types text/plain` (goal: 0.9 of it). The client counts the gzip
     bytes without inflating them (MB/s are of the file's 256 MiB); one
     download of the agent's is inflated by Python outside the timing and
     checked against the file.
  6  ListDir of 10,000 files (depth 1), median of 15, against `ls -la DIR >
     /dev/null` (process start included; goal: 0.8 of it) and Python's
     os.scandir + os.lstat of every entry timed inside Python (goal: 1.5 of
     it); beside them `sandbox-agent fs list DIR`.
  watch  WatchDir: one event's latency (create a file -> its event; median of
     50) and the 20,000-file burst of bench_watch.py (files lost), against
     the `sandbox-agent watch` command on the same work (Python client).
  rss  the agent's peak RSS over a 2 GiB download and a 2 GiB upload.

nginx is one process (master_process off), as the agent is one loop; without
nginx its rows' anchor reads "-" with the reason. A binary that does not
serve a route or RPC gets "n/a (not served)" rows.
Run alone: /usr/bin/python3 tests/bench/bench.py build/sandbox-agent serve_fs
(BENCH_SERVE_ROWS="3 4" for some rows only).
"""
import hashlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import zlib

from bench_watch import BARRIER, BURST
from cbench import HANG, SHM, Missing, Nginx, row, run_json, tool, wanted
from servelib import FILESYSTEM, NOT_SERVED, NotServed, Serve, served

MIB = 1 << 20
GIB = 1 << 30
TEXT = 256 * MIB
NGINX = "nginx (one process)"


def files(path):
    return "/files?" + urllib.parse.urlencode({"path": path})


def req(hc, addr, target, *opts):
    """hclient req: its JSON; NotServed on a 404/501 of a route."""
    r = run_json([hc, "-t", str(HANG), "req"] + list(opts) + [addr, target], ok=(0, 2))
    if r["rc"] == 2:
        raise RuntimeError("%s answered %d" % (target, r["status"]))
    return r


def _fill(path, size, block):
    with open(path, "wb") as f:
        for _ in range(size // len(block)):
            f.write(block)


def _text_block():
    """1 MiB of words and numbers, the same every run."""
    rnd = random.Random(12)
    words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9)))
             for _ in range(3000)]
    out, n = [], 0
    while n < MIB:
        line = " ".join(rnd.choice(words) for _ in range(rnd.randint(4, 14))) + " %d\n" % rnd.randint(0, 99999)
        out.append(line)
        n += len(line)
    return "".join(out).encode()[:MIB]


def _turns(runs, fns):
    """Each fn of fns run `runs` times, taking turns: each one's results."""
    out = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            out[i].append(fn())
    return out


def _versus(base, what, unit, goal, anchor, agent_fn, nginx_fn):
    """Best of 3 of agent_fn() and of nginx_fn(nginx), taking turns; without
    nginx the anchor reads "-" with the reason."""
    try:
        n = Nginx(base)
    except Missing as e:
        return row(what, max(agent_fn() for _ in range(3)), "nginx (%s)" % e, None, unit)
    try:
        a, b = _turns(3, [agent_fn, lambda: nginx_fn(n)])
    finally:
        n.stop()
    return row(what, max(a), anchor, max(b), unit, goal=goal)


def _get_mb_s(hc, addr, target, size, *opts):
    r = req(hc, addr, target, *opts)
    if "-H" not in opts:
        assert r["bytes"] == size, r
    return r, size / r["med_ms"] * 1000 / 1e6


def _range_mb_s(hc, addr, target, size):
    r = req(hc, addr, target, "-H", "Range: bytes=0-%d" % (size - 1))
    assert r["status"] == 206 and r["bytes"] == size, r
    return size / r["med_ms"] * 1000 / 1e6


def _row3(s, hc, base):
    big = os.path.join(base, "one-gib.bin")
    _fill(big, GIB, os.urandom(MIB))
    try:
        rows = [_versus(base, "serve 3: GET /files 1 GiB from tmpfs (best of 3)", "MB/s", 1.0, NGINX + " sendfile",
                        lambda: _get_mb_s(hc, s.addr, files(big), GIB)[1],
                        lambda n: _get_mb_s(hc, n.addr, "/one-gib.bin", GIB)[1])]
        if wanted("3r"):
            part, whole = _turns(3, [lambda: _range_mb_s(hc, s.addr, files(big), GIB // 2),
                                     lambda: _get_mb_s(hc, s.addr, files(big), GIB)[1]])
            rows.append(row("serve 3r: GET /files Range bytes=0-(512 MiB-1) of 1 GiB on tmpfs (best of 3)",
                            max(part), "the whole 1 GiB GET", max(whole), "MB/s", goal=1.0))
        return rows
    finally:
        os.unlink(big)


def _put_mb_s(hc, addr, target, path, *opts):
    r = req(hc, addr, target, "-B", str(GIB), *opts)
    assert os.path.getsize(path) == GIB, (path, os.path.getsize(path))
    os.unlink(path)
    return GIB / r["med_ms"] * 1000 / 1e6


def _row4(s, hc, base):
    up = os.path.join(base, "up-agent.bin")
    dav = os.path.join(base, "dav", "up-nginx.bin")
    return [_versus(base, "serve 4: POST /files 1 GiB to tmpfs, octet-stream (best of 3)", "MB/s", 1.0,
                    NGINX + " WebDAV PUT",
                    lambda: _put_mb_s(hc, s.addr, files(up), up, "-H", "Content-Type: application/octet-stream"),
                    lambda n: _put_mb_s(hc, n.addr, "/dav/up-nginx.bin", dav, "-X", "PUT", "-H",
                                        "Content-Type: application/octet-stream"))]


def _gzip_checked(hc, s, path, base):
    """One gzip download of the agent's, inflated here and compared."""
    out = os.path.join(base, "check.gz")
    req(hc, s.addr, files(path), "-H", "Accept-Encoding: gzip", "-o", out)
    z, h = zlib.decompressobj(16 + zlib.MAX_WBITS), hashlib.sha256()
    with open(out, "rb") as f:
        for piece in iter(lambda: f.read(MIB), b""):
            h.update(z.decompress(piece))
    h.update(z.flush())
    os.unlink(out)
    with open(path, "rb") as f:
        want = hashlib.sha256(f.read()).hexdigest()
    assert h.hexdigest() == want, "the agent's gzip of %s inflates to something else" % path


def _row5(s, hc, base):
    path = os.path.join(base, "text.txt")
    _fill(path, TEXT, _text_block())
    sizes = {}

    def get(name, addr, target):
        r, mbs = _get_mb_s(hc, addr, target, TEXT, "-H", "Accept-Encoding: gzip")
        assert r["encoding"] == "gzip", "%s did not gzip: %r" % (name, r)
        sizes[name] = r["bytes"]
        return mbs
    try:
        _gzip_checked(hc, s, path, base)
        r = _versus(base, "serve 5: GET /files 256 MiB text, gzip (best of 3)", "MB/s", 0.9,
                    NGINX + " gzip level 1", lambda: get("agent", s.addr, files(path)),
                    lambda n: get("nginx", n.addr, "/text.txt"))
        r["note"] = ("serve 5: MB/s of the file's 256 MiB; the client counts the gzip bytes, it does not inflate them "
                     "(one agent download inflated and checked apart); gzip sizes: %s" %
                     ", ".join("%s %.1f MB" % (k, v / 1e6) for k, v in sorted(sizes.items())))
        return [r]
    finally:
        os.unlink(path)


def _scandir_ms(d):
    """os.scandir + os.lstat of every entry, timed inside Python."""
    t0 = time.perf_counter()
    out = []
    with os.scandir(d) as it:
        for e in it:
            st = os.lstat(e.path)
            out.append((e.name, st.st_mode, st.st_size, st.st_mtime_ns, st.st_uid, st.st_gid))
    dt = (time.perf_counter() - t0) * 1000
    assert len(out) == 10000
    return dt


def _row6(s, hc, agent, fl, base):
    d = os.path.join(base, "ten-thousand")
    os.mkdir(d)
    for i in range(10000):
        open(os.path.join(d, "entry-%05d" % i), "wb").close()
    try:
        r = run_json([hc, "-t", str(HANG), "req", "-X", "POST", "-H", "Content-Type: application/json", "-H",
                      "Connect-Protocol-Version: 1", "-d", '{"path": "%s", "depth": 1}' % d, "-c", '"name"',
                      "-n", "15", "-w", "2", s.addr, FILESYSTEM + "ListDir"], ok=(0, 2))
        if r["rc"] == 2 and r.get("status") in (404, 501):
            raise NotServed()
        assert r["status"] == 200 and r["count"] == 10000, r
        ls = run_json([fl, "exec", "-q", "-w", "2", "15", "ls", "-la", d])
        fs = run_json([fl, "exec", "-q", "-w", "2", "15", agent, "fs", "list", d])
        py = statistics.median([_scandir_ms(d) for _ in range(17)][2:])
        what = "serve 6: ListDir of 10,000 files, median"
        return [row(what, r["med_ms"], "`ls -la DIR > /dev/null`", ls["med_ms"], "ms", goal=1 / 0.8),
                row(what, r["med_ms"], "Python scandir + lstat", py, "ms", goal=1 / 1.5),
                row(what, r["med_ms"], "`sandbox-agent fs list DIR`", fs["med_ms"], "ms")]
    finally:
        shutil.rmtree(d)


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


def _rss_rows(agent, base):
    two = os.path.join(base, "two-gib")
    with open(two, "wb") as f:
        f.truncate(2 * GIB)
    rows = [row("serve: peak RSS over a 2 GiB download", _peak_rss(agent, lambda k: served(
        k.get_file, two, lambda b: None)), "", None, "KiB")]
    os.unlink(two)

    def pieces():
        piece = b"\0" * MIB
        for _ in range(2 * 1024):
            yield piece
    rows.append(row("serve: peak RSS over a 2 GiB upload", _peak_rss(agent, lambda k: served(
        k.post_file, two, pieces())), "", None, "KiB"))
    os.unlink(two)
    return rows


def bench(agent):
    hc, fl = tool(agent, "hclient"), tool(agent, "floor")
    rows = []
    base = tempfile.mkdtemp(prefix="bench-serve-fs-", dir=SHM if os.path.isdir(SHM) else "/tmp")
    os.chmod(base, 0o755)
    steps = [("3", lambda s: _row3(s, hc, base), "GET /files"), ("4", lambda s: _row4(s, hc, base), "POST /files"),
             ("5", lambda s: _row5(s, hc, base), "GET /files gzip"),
             ("6", lambda s: _row6(s, hc, agent, fl, base), "ListDir"),
             ("watch", lambda s: _watch_rows(s, agent, base), "WatchDir"),
             ("rss", lambda s: _rss_rows(agent, base), "/files")]
    try:
        with Serve(agent) as s:
            for key, fn, what in steps:
                if not wanted(key):
                    continue
                try:
                    rows += fn(s)
                except NotServed:
                    rows.append(row("serve %s: %s" % (key, what), NOT_SERVED, "", None, ""))
                except RuntimeError as e:
                    if "answered 404" not in str(e) and "answered 501" not in str(e):
                        raise
                    rows.append(row("serve %s: %s" % (key, what), NOT_SERVED, "", None, ""))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return rows


if __name__ == "__main__":
    from bench_serve_proc import show
    show(bench(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/sandbox-agent")))
