"""`sandbox-agent serve`'s port forwarder (README "Port forwarding"),
timed from C (build/bench/floor: the server and the clients), in two
network namespaces joined by a veth pair (tests/lib/netns.py): the agent
and the servers in the sandbox's, the clients in the other, so every
figure crosses the same veth.

  fwd  1 GiB read through the forward (a `floor tcpsrv` on 127.0.0.1,
       reached at 10.77.0.1), best of 3, against the same server listening
       on 10.77.0.1 itself (direct; goal: at least 0.5 of it) and against
       socat forwarding the same way (what envd runs per port; goal: at
       least 1.0 of it); the agent's CPU seconds per GiB.
       A one-byte round trip on an open connection, median of 2000, and a
       new connection with its first round trip, median of 500: through the
       forward, direct and through socat, every process on one CPU (as the
       signal rows: spread over CPUs, waking an idle one is most of a round
       trip, and varies from run to run); the latency the forward adds to
       a round trip, against socat's.
       The agent's RSS with 1,000 connections open through the forward
       (and one more whose client reads nothing of an endless answer),
       against the same agent forwarding nothing yet.

Needs root (ip netns); without, or without socat (make pkgs-bench), the
rows say why in place of a figure. Every process started here is ended
by its pid; the namespaces are deleted at the end.
Run alone: /usr/bin/python3 tests/bench/bench.py build/sandbox-agent serve_forward
"""
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time

from cbench import HANG, Missing, cpu_seconds, end_pid, row, run_json, tool, wanted, which
from benchlib import proc_status_kib
import netns

GIB = 1 << 30
FWD, DIRECT, SOCAT, HOLD = 9000, 9001, 9002, 9003
HOLD_PY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration", "workloads",
                       "holdserver.py")
CONNS = 1000


class Bed:
    """The namespaces, the agent and the servers; closed in one place."""

    def __init__(self, agent, floor):
        self.procs = []
        self.net = netns.NetPair()
        self.floor = floor
        self.tmp = tempfile.mkdtemp(prefix="bench-fwd-")
        try:
            self.start(self.net.sandbox, [floor, "tcpsrv", "127.0.0.1", str(FWD)], "ready")
            self.start(self.net.sandbox, [floor, "tcpsrv", netns.SANDBOX_V4, str(DIRECT)], "ready")
            self.start(self.net.sandbox, ["/usr/bin/python3", HOLD_PY, "127.0.0.1", str(HOLD)], "ready")
            self.err = open(os.path.join(self.tmp, "agent.err"), "wb")
            env = {"PATH": "/usr/bin:/bin", "SANDBOX_AGENT_LISTEN": "0.0.0.0:49983",
                   "SANDBOX_AGENT_TOKEN": "bench", "SANDBOX_AGENT_LOG": "info"}
            self.agent = subprocess.Popen(netns.NetPair.argv(self.net.sandbox) + [agent, "serve"], env=env,
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.err)
            self.procs.append(self.agent)
            self.wait_open(FWD)
        except Exception:
            self.close()
            raise

    def start(self, ns, argv, ready=None):
        """argv in ns; with ready, once its first line says so."""
        p = subprocess.Popen(netns.NetPair.argv(ns) + argv, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE if ready else subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(p)
        if ready:
            line = p.stdout.readline()  # the server's first line, or EOF when it failed
            if ready.encode() not in line:
                raise RuntimeError("%s did not start: %r" % (argv[0], line))
        return p

    def connect(self, port, timeout=10):
        with self.net.inside(self.net.client):
            return socket.create_connection((netns.SANDBOX_V4, port), timeout=timeout)

    def wait_open(self, port, probe=b"e\x01", answer=b"\x01"):
        """Until a connection to port is answered (the forward's poll ran):
        a tcpsrv's echo, or holdserver's PING."""
        end = time.monotonic() + 30
        while True:
            try:
                with self.connect(port) as s:
                    s.sendall(probe)
                    if s.recv(len(answer)) == answer:
                        return
            except OSError:
                pass
            if time.monotonic() > end or self.agent.poll() is not None:
                raise RuntimeError("nothing answers at %s:%d" % (netns.SANDBOX_V4, port))
            time.sleep(0.05)  # polling the port, bounded

    def hold_written(self):
        """What holdserver wrote to its endless answers so far."""
        with self.net.inside(self.net.sandbox):
            s = socket.create_connection(("127.0.0.1", HOLD), timeout=10)
        with s:
            s.sendall(b"STAT\n")
            return int(s.recv(64).split()[0])

    def stalled(self):
        """Once the endless answer stops growing: what it wrote."""
        end, last = time.monotonic() + 60, -1
        while True:
            w = self.hold_written()
            if w == last and w > 0:
                return w
            if time.monotonic() > end:
                raise RuntimeError("the endless answer did not stall: %d bytes" % w)
            last = w
            time.sleep(0.3)  # the interval a rate is measured over

    def client(self, *args):
        return run_json(netns.NetPair.argv(self.net.client) + [self.floor, "-t", str(HANG)] + list(args))

    def close(self):
        for p in reversed(self.procs):
            end_pid(p)
            if p.stdout:
                p.stdout.close()
        self.procs = []
        if getattr(self, "err", None):
            self.err.close()
        self.net.close()
        subprocess.run(["rm", "-rf", self.tmp], timeout=60)


def best_get(bed, port, runs=3):
    return max(bed.client("tcpget", netns.SANDBOX_V4, str(port), str(GIB))["mb_s"] for _ in range(runs))


def rtt(bed, port, fresh):
    args = ["tcprtt"] + (["-c"] if fresh else []) + [netns.SANDBOX_V4, str(port), "500" if fresh else "2000"]
    return bed.client(*args)["med_us"]


def on_one_cpu(bed, fn):
    """fn() with every process of the bed and the clients (this process's
    children) on one CPU, as the signal rows run: spread over CPUs, waking
    an idle one dominates a round trip (in a VM tens of microseconds, from
    run to run) and hides what the forward itself adds."""
    saved = os.sched_getaffinity(0)
    cpu = {max(saved)}
    try:
        for p in bed.procs:
            os.sched_setaffinity(p.pid, cpu)
        os.sched_setaffinity(0, cpu)
        return fn()
    finally:
        os.sched_setaffinity(0, saved)
        for p in bed.procs:
            if p.poll() is None:
                os.sched_setaffinity(p.pid, saved)


def rss_rows(bed):
    """The agent's RSS before and with CONNS connections (and a reader that
    never reads) through the forward."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < CONNS + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    bed.wait_open(HOLD, b"PING\n", b"PONG\n")
    idle = proc_status_kib(bed.agent.pid, "VmRSS")
    conns = []
    try:
        for _ in range(CONNS):
            conns.append(bed.connect(HOLD))
        for c in conns:
            c.sendall(b"PING\n")
        for c in conns:
            if c.recv(5) != b"PONG\n":
                raise RuntimeError("no answer through the forward")
        sink = bed.connect(HOLD)
        sink.sendall(b"BIG\n")  # and never read
        conns.append(sink)
        stalled = bed.stalled()
        held = proc_status_kib(bed.agent.pid, "VmRSS")
    finally:
        for c in conns:
            c.close()
    return [row("forward: agent RSS, %d connections + 1 not read" % CONNS, held, "the agent idle", idle, "KiB",
                note="forward rss: the reader that reads nothing stalled its server %d KiB in (kernel buffers)"
                     % (stalled >> 10))]


def bench(agent):
    if not wanted("fwd"):
        return []
    why = netns.unavailable()
    try:
        floor = tool(agent, "floor")
        socat = which("socat")
    except Missing as e:
        why = why or str(e)
    if why:
        return [row("forward: 1 GiB, best of 3", "-", "direct", None, "MB/s", note="forward rows: %s" % why)]
    bed = Bed(agent, floor)
    try:
        sp = bed.start(bed.net.sandbox, [socat, "TCP4-LISTEN:%d,bind=%s,reuseaddr,fork" % (SOCAT, netns.SANDBOX_V4),
                                         "TCP4:127.0.0.1:%d" % FWD])
        bed.wait_open(SOCAT)
        cpu0 = cpu_seconds(bed.agent.pid)
        fwd = best_get(bed, FWD)
        cpu = (cpu_seconds(bed.agent.pid) - cpu0) / 3
        direct, via_socat = best_get(bed, DIRECT), best_get(bed, SOCAT)
        lat = on_one_cpu(bed, lambda: {k: (rtt(bed, p, False), rtt(bed, p, True))
                                       for k, p in (("fwd", FWD), ("direct", DIRECT), ("socat", SOCAT))})
        rows = [
            row("forward: 1 GiB, best of 3", fwd, "direct over the veth", direct, "MB/s", goal=0.5),
            row("forward: 1 GiB, best of 3", fwd, "socat (envd's forward)", via_socat, "MB/s", goal=1.0),
            row("forward: agent CPU per GiB", cpu, "-", None, "s"),
            row("forward: 1-byte round trip, median of 2000", lat["fwd"][0], "direct", lat["direct"][0], "us"),
            row("forward: round trip, added to direct", lat["fwd"][0] - lat["direct"][0], "socat's",
                lat["socat"][0] - lat["direct"][0], "us", goal=1.0),
            row("forward: connect + round trip, median of 500", lat["fwd"][1], "direct", lat["direct"][1], "us"),
            row("forward: connect + round trip, added to direct", lat["fwd"][1] - lat["direct"][1], "socat's",
                lat["socat"][1] - lat["direct"][1], "us", goal=1.0),
        ]
        end_pid(sp)
        return rows + rss_rows(bed)
    finally:
        bed.close()


if __name__ == "__main__":
    from bench_serve_proc import show
    show(bench(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/sandbox-agent")))
