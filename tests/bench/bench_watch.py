"""`sandbox-agent watch` against `inotifywait -m -r` (Debian inotify-tools).

Measured side by side in the same run, on the same trees:
  - time from start to ready on a tree of 10,000 directories (the agent's
    READY line; inotifywait's "Watches established." on stderr), median of
    several alternating runs;
  - the 20,000-file burst of the integration test (200 fresh nested
    directories, 100 files each): files whose creation was reported, CPU time
    the watcher spent, its peak RSS.

Start-to-ready is timed here rather than with hyperfine: neither watcher exits
once ready, so the clock stops at the ready line it prints.

Run alone: /usr/bin/python3 tests/bench/bench_watch.py build/sandbox-agent
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

READY = b"__SBX_WATCH__READY"
ESTABLISHED = b"Watches established."
BARRIER = "zz-barrier"
HANG = 120  # seconds: a run that takes longer has hung
CLK = os.sysconf("SC_CLK_TCK")

# The integration test's burst (tests/integration/workloads/burst.py).
BURST = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration", "workloads",
                     "burst.py")


def _agent_cmd(agent, root):
    return [agent, "watch", root, "1", ""]


def _inotifywait_cmd(root):
    return ["inotifywait", "-m", "-r", "-e", "create,moved_to,delete,moved_from,modify,close_write",
            "--format", "%e %w%f", root]


class Run:
    """A watcher process; its ready line and output lines are collected by threads."""

    def __init__(self, cmd, ready_on_stderr):
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.ready_at = None
        self.lines = []
        self.cv = threading.Condition()
        self.ready_on_stderr = ready_on_stderr
        threading.Thread(target=self._out, daemon=True).start()
        threading.Thread(target=self._err, daemon=True).start()

    def _mark_ready(self):
        with self.cv:
            if self.ready_at is None:
                self.ready_at = time.perf_counter()
            self.cv.notify_all()

    def _out(self):
        for line in self.p.stdout:
            if not self.ready_on_stderr and line.rstrip(b"\n") == READY:
                self._mark_ready()
                continue
            with self.cv:
                self.lines.append(line)
                self.cv.notify_all()

    def _err(self):
        for line in self.p.stderr:
            if self.ready_on_stderr and ESTABLISHED in line:
                self._mark_ready()

    def wait(self, pred):
        deadline = time.monotonic() + HANG
        with self.cv:
            while not pred():
                if time.monotonic() > deadline or self.p.poll() is not None:
                    raise RuntimeError("watcher hung or died: %r" % self.p.args[:3])
                self.cv.wait(0.5)

    def ready_seconds(self):
        self.wait(lambda: self.ready_at is not None)
        return self.ready_at - self.t0

    def cpu_seconds(self):
        with open("/proc/%d/stat" % self.p.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK

    def hwm_kib(self):
        with open("/proc/%d/status" % self.p.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(timeout=HANG)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def _tree(root):
    """10,000 directories: 100 chains 10 deep, each chain directory holding 9 leaves."""
    for a in range(100):
        d = root
        for k in range(10):
            d = os.path.join(d, "t%02d" % a if k == 0 else "n%d" % k)
            os.mkdir(d)
            for leaf in range(9):
                os.mkdir(os.path.join(d, "l%d" % leaf))


def _count_dirs(root):
    return sum(len(ds) for _, ds, _ in os.walk(root)) + 1


def _ready_times(agent, root, reps):
    a, b = [], []
    for _ in range(reps):
        for cmd, on_err, out in ((_agent_cmd(agent, root), False, a), (_inotifywait_cmd(root), True, b)):
            r = Run(cmd, on_err)
            try:
                out.append(r.ready_seconds())
            finally:
                r.stop()
    return statistics.median(a), statistics.median(b)


def _burst(cmd, on_err, root, agent_side):
    r = Run(cmd, on_err)
    try:
        r.ready_seconds()
        subprocess.run([sys.executable, BURST, root], check=True, timeout=HANG)
        open(os.path.join(root, BARRIER), "wb").close()
        key = BARRIER.encode()
        r.wait(lambda: any(key in ln for ln in r.lines[-50:]))
        cpu, hwm = r.cpu_seconds(), r.hwm_kib()
    finally:
        r.stop()
    created = set()
    overflow = False
    for ln in r.lines:
        if agent_side:
            if b'"mask": 256,' in ln:
                created.add(ln.split(b'"path": "', 1)[1].rsplit(b'"', 1)[0])
            overflow |= b'"mask": 16384' in ln
        else:
            ev, _, path = ln.rstrip(b"\n").partition(b" ")
            if ev == b"CREATE":
                created.add(path)
            overflow |= ev.startswith(b"Q_OVERFLOW")
    files = sum(1 for p in created if os.path.basename(p).startswith(b"f"))
    return files, cpu, hwm, overflow


def bench(agent_path):
    if not shutil.which("inotifywait"):
        raise RuntimeError("inotifywait not installed (Debian inotify-tools)")
    rows = []
    base = tempfile.mkdtemp(prefix="bench-watch-")
    try:
        tree = os.path.join(base, "tree")
        os.mkdir(tree)
        _tree(tree)
        ndirs = _count_dirs(tree) - 1  # below the root
        ta, tb = _ready_times(agent_path, tree, 9)
        rows.append({"what": "watch: start to ready, %d directories" % ndirs, "agent": ta * 1000,
                     "baseline_name": "inotifywait -m -r", "baseline": tb * 1000, "unit": "ms"})
        # Peak memory once ready on the big tree.
        hw = []
        for cmd, on_err in ((_agent_cmd(agent_path, tree), False), (_inotifywait_cmd(tree), True)):
            r = Run(cmd, on_err)
            try:
                r.ready_seconds()
                hw.append(r.hwm_kib())
            finally:
                r.stop()
        rows.append({"what": "watch: peak RSS ready on %d directories" % ndirs, "agent": hw[0],
                     "baseline_name": "inotifywait -m -r", "baseline": hw[1], "unit": "KiB"})

        res = []
        for side, cmd_of, on_err in (("agent", lambda r: _agent_cmd(agent_path, r), False),
                                     ("inotifywait", _inotifywait_cmd, True)):
            root = os.path.join(base, "burst-" + side)
            os.mkdir(root)
            res.append(_burst(cmd_of(root), on_err, root, side == "agent"))
            shutil.rmtree(root)
        (fa, ca, ha, oa), (fb, cb, hb, ob) = res
        note = lambda o: " (overflow reported)" if o else ""
        rows.append({"what": "watch: burst, files reported of 20000" + note(oa), "agent": fa,
                     "baseline_name": "inotifywait -m -r" + note(ob), "baseline": fb,
                     "unit": "files (higher is better)"})
        rows.append({"what": "watch: burst, watcher CPU time", "agent": ca * 1000,
                     "baseline_name": "inotifywait -m -r", "baseline": cb * 1000, "unit": "ms"})
        rows.append({"what": "watch: burst, watcher peak RSS", "agent": ha,
                     "baseline_name": "inotifywait -m -r", "baseline": hb, "unit": "KiB"})
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return rows


if __name__ == "__main__":
    for row in bench(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/sandbox-agent")):
        print("%-52s %12.1f  %-28s %12.1f  %s" % (row["what"], row["agent"], row["baseline_name"], row["baseline"],
                                                 row["unit"]))
