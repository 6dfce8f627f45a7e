"""Signal forwarding latency: SIGUSR1 sent to the supervisor -> the job
seeing it, for `run` and the inits users would pick instead (tini,
dumb-init, catatonit).

Both ends read CLOCK_MONOTONIC: the sender just before kill(), the job (a
small Python program) first thing once the signal is delivered to it
(sigwaitinfo: a Python-level handler around pause() can miss a signal that
lands between the two), which it writes back through a FIFO (the agent
passes no other fd to a job). One signal at a
time, the next only once the previous was seen, so each is the full path
from an idle supervisor to an idle job. The supervisors take turns in
rounds, each first in turn, so drift in the machine's load and the cost of
being first hit them alike.

Everything runs on one CPU (the sender's affinity, inherited): what is
measured is then the path itself, its system calls and context switches.
Spread over CPUs, waking an idle one dominates (in a VM tens of
microseconds, varying from run to run) and hides the supervisors'
differences. dumb-init's lead is mostly not its path: it starts the job in a
session of its own (setsid), which with the scheduler's autogroups
(sched_autogroup_enabled) changes who preempts whom on a wake-up; a minimal
sigwait forwarder measured 15.1 us with setpgid and 13.9 us with setsid. The
agent keeps the job in its session (the terminal's job control needs it)."""
import os
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROUNDS = 30
PER_ROUND = 30  # 900 signals per supervisor in all
WARMUP = 30     # per start: the previous job's exit is still being torn down

JOB = r"""
import os, signal, struct, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
os.write(fd, struct.pack("q", os.getpid()))  # ready: who to clean up
while True:
    signal.sigwaitinfo({signal.SIGUSR1})
    t = time.monotonic_ns()
    os.write(fd, struct.pack("q", t))
"""
# A lost signal or a dead job must not hang the bench.
ACK_TIMEOUT = 10


def read_exact(fd, n):
    """n bytes from the non-blocking fd, waiting at most ACK_TIMEOUT each."""
    data = b""
    while len(data) < n:
        if not select.select([fd], [], [], ACK_TIMEOUT)[0]:
            raise RuntimeError("no answer from the job within %d s" % ACK_TIMEOUT)
        try:
            chunk = os.read(fd, n - len(data))
        except BlockingIOError:
            continue
        if not chunk:
            raise RuntimeError("the job went away")
        data += chunk
    return data


def latencies(argv, n, env):
    """n latencies in microseconds of SIGUSR1 through the supervisor argv."""
    d = tempfile.mkdtemp(prefix="sa-bench-sig-")
    fifo = os.path.join(d, "acks")
    os.mkfifo(fifo)
    p = subprocess.Popen(argv + [sys.executable, "-c", JOB, fifo], env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    job = None
    try:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        (job,) = struct.unpack("q", read_exact(fd, 8))
        out = []
        for i in range(n + WARMUP):
            t0 = time.monotonic_ns()
            os.kill(p.pid, signal.SIGUSR1)
            (t1,) = struct.unpack("q", read_exact(fd, 8))
            if i >= WARMUP:
                out.append((t1 - t0) / 1000.0)
        os.close(fd)
        return out
    finally:
        # The job is in a process group of its own under some supervisors:
        # killing the supervisor alone would leave it running.
        for pid in (job, p.pid):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        p.wait()
        os.unlink(fifo)
        os.rmdir(d)


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.99 * (len(xs) - 1))))]


def measure(sups, env):
    """{name: latencies} for [(name, argv prefix)], taking turns in rounds."""
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {max(saved)})
    try:
        return _measure(sups, env)
    finally:
        os.sched_setaffinity(0, saved)


def _measure(sups, env):
    got = {name: [] for name, _ in sups}
    for r in range(ROUNDS):
        # Each takes every place in the order in turn: the first of a round
        # measured slower, the same binary included.
        for name, argv in sups[r % len(sups):] + sups[:r % len(sups)]:
            got[name].extend(latencies(argv, PER_ROUND, env))
    return got


SUPERVISORS = [("tini", ["/usr/bin/tini", "-s", "--"]),
               ("dumb-init", ["/usr/bin/dumb-init"]),
               ("catatonit", ["/usr/bin/catatonit", "--"])]


def floors(agent):
    """The two minimal forwarders of tests/bench/fwd.c (built beside the
    agent by `make bench`): what waiting for a signal costs by itself, with
    sigtimedwait as tini waits and with a signalfd read from a libev loop as
    the agent waits. The agent's distance to the second is its own code's;
    the distance between the two is the mechanism's."""
    fwd = os.path.join(os.path.dirname(agent), "bench", "fwd")
    if not os.access(fwd, os.X_OK):
        return []
    return [("floor: sigtimedwait", [fwd, "wait"]), ("floor: signalfd+libev", [fwd, "loop"])]


def bench(agent):
    env = dict(os.environ, SANDBOX_RESULT="/tmp/sa-bench-sig/result.json")
    sups = [("sandbox-agent", [agent, "run", "--"])] + SUPERVISORS + floors(agent)
    got = measure(sups, env)
    rows = []
    a = got["sandbox-agent"]
    for name, _ in sups[1:]:
        b = got[name]
        rows.append({"what": "SIGUSR1 -> job, latency median", "agent": statistics.median(a), "baseline_name": name,
                     "baseline": statistics.median(b), "unit": "us"})
        rows.append({"what": "SIGUSR1 -> job, latency p99", "agent": p99(a), "baseline_name": name,
                     "baseline": p99(b), "unit": "us"})
    return rows


if __name__ == "__main__" and len(sys.argv) > 2:
    # bench_signal.py --compare NAME=BINARY...: `run` builds side by side.
    env = dict(os.environ, SANDBOX_RESULT="/tmp/sa-bench-sig/result.json")
    sups = [(a.split("=", 1)[0], [a.split("=", 1)[1], "run", "--"]) for a in sys.argv[2:]] + SUPERVISORS[:1]
    for name, xs in measure(sups, env).items():
        print("%-14s median %6.1f us  p99 %7.1f us" % (name, statistics.median(xs), p99(xs)))
elif __name__ == "__main__":
    for r in bench(os.path.abspath(sys.argv[1])):
        print("%-32s %-10s agent %8.1f  baseline %8.1f %s" % (r["what"], r["baseline_name"], r["agent"],
                                                           r["baseline"], r["unit"]))
