"""`sandbox-agent serve`, process side (issues 8 and 12), timed from C
(build/bench/hclient: no node or Python in the timing loop) against anchors
timed the same way from C (build/bench/floor):

  1  Start `/bin/true` -> the stream's end, median and p90 of 200 on one
     kept-alive connection, against fork + execvp + waitpid of /bin/true
     from C (goal: at most 1.10 of it); beside it `true` through an ssh
     ControlMaster to a private loopback sshd, for information.
  2  1 GiB of stdout (`floor write`: 1 MiB writes) through a Start stream,
     the client decoding the base64 as the SDKs do, against loopback TCP
     (C writer -> C reader; goal: at least 0.55 of it) and a pipe; the
     agent's CPU seconds per GiB (/proc/PID/stat utime + stime; goal 0.8).
  7  a second client's Start `echo hi` round trip (median of 200) while
     another streams stdout at full speed, against the same agent idle
     (goal: at most 2.0 of it).
  8  50 connections (one epoll loop in hclient) each doing Start `true` ->
     end in a loop for 10 s, commands completed per second, against 50 processes each doing
     fork + execvp + waitpid of /bin/true for 10 s (goal: 0.9 of it).
  sys  syscalls per Start and per MiB streamed (strace -c on the agent's
     pid), against the floor's under strace: the optimizers' counts.
  rss  the agent's RSS idle, with 200 open connections and 100 running
     processes; the binary's size against its 480 KB goal (400 KB before BearSSL).

A binary that does not serve Start gets "n/a (not served)" rows.
Run alone: /usr/bin/python3 tests/bench/bench.py build/sandbox-agent serve_proc
(BENCH_SERVE_ROWS="1 7" for some rows only).
"""
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

from cbench import Missing, Ssh, cpu_seconds, run_json, row, strace_counts, strace_run, tool, top, wanted
from servelib import NOT_SERVED, PROCESS, HANG, Serve

GIB = 1 << 30
MIB = 1 << 20
RUNS = 200
FLOOR = "fork+execvp+waitpid (C)"
TRUE = '{"process": {"cmd": "/bin/true"}}'
ECHO = '{"process": {"cmd": "/bin/echo", "args": ["hi"]}}'


def writer(floor, nbytes):
    return '{"process": {"cmd": "%s", "args": ["write", "%d"]}}' % (floor, nbytes)


class NotServed(Exception):
    pass


def start(hc, addr, n, msg, warm=10):
    r = run_json([hc, "-t", str(HANG), "start", "-w", str(warm), addr, str(n), msg], ok=(0, 2))
    if r["rc"] == 2:
        if r.get("status") in (404, 501):
            raise NotServed()
        raise RuntimeError("Start failed: %r" % r)
    return r


def _row1(s, hc, fl):
    a = start(hc, s.addr, RUNS, TRUE)
    f = run_json([fl, "exec", str(RUNS), "/bin/true"])
    rows = [row("serve 1: Start `true` -> end, median", a["end_med_ms"], FLOOR, f["med_ms"], "ms", goal=1 / 1.10),
            row("serve 1: Start `true` -> end, p90", a["end_p90_ms"], FLOOR, f["p90_ms"], "ms"),
            row("serve 1: Start `true` -> start event, median", a["start_med_ms"], FLOOR, f["med_ms"], "ms")]
    try:
        with Ssh() as ssh:
            k = run_json([fl, "exec", "-w", "3", "50"] + ssh.argv("true"))
            assert not k["failed"], k
        rows.append(row("serve 1: `true` through an ssh ControlMaster, median", a["end_med_ms"],
                        "ssh -S, loopback sshd (shell %s)" % ssh.shell, k["med_ms"], "ms"))
    except Missing as e:
        rows.append(row("serve 1: `true` through an ssh ControlMaster, median", a["end_med_ms"],
                        "ssh (%s)" % e, None, "ms"))
    return rows


def _stream(hc, addr, msg):
    """One Start stream read by hclient: (its result, the client's CPU s)."""
    p = subprocess.Popen([hc, "-t", str(HANG), "stream", addr, msg], stdout=subprocess.PIPE, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    lines = out.strip().splitlines()
    if p.returncode or len(lines) < 2:
        raise RuntimeError("hclient stream exited %d: %s" % (p.returncode, out[-300:]))
    return json.loads(lines[-1]), ru.ru_utime + ru.ru_stime


def _row2(s, hc, fl):
    msg = writer(fl, GIB)
    runs = []
    for _ in range(3):
        c0 = cpu_seconds(s.p.pid)
        r, client_cpu = _stream(hc, s.addr, msg)
        r["agent_cpu"] = cpu_seconds(s.p.pid) - c0
        r["client_cpu"] = client_cpu
        runs.append(r)
    best = max(runs, key=lambda r: r["bytes"] / r["seconds"])
    assert best["ended"] and best["exit_code"] == 0, best
    tcp = max((run_json([fl, "tcp", str(GIB)]) for _ in range(3)), key=lambda r: r["mb_s"])
    pipe = max((run_json([fl, "pipe", str(GIB)]) for _ in range(3)), key=lambda r: r["mb_s"])
    mbs = best["bytes"] / best["seconds"] / 1e6
    cpu = min(r["agent_cpu"] * GIB / r["bytes"] for r in runs)
    note = ("serve 2: the client (hclient) decoded 1 GiB with %.2f CPU s; the agent sent %.0f MB on the wire in %d "
            "messages (%.0f KiB of output each)" % (best["client_cpu"], best["wire_bytes"] / 1e6, best["messages"],
                                                     best["bytes"] / best["messages"] / 1024))
    return [row("serve 2: 1 GiB stdout through Start, decoded (best of 3)", mbs, "loopback TCP (C)", tcp["mb_s"],
                "MB/s", goal=0.55, note=note),
            row("serve 2: 1 GiB stdout through Start, decoded (best of 3)", mbs, "pipe (C)", pipe["mb_s"], "MB/s"),
            row("serve 2: agent CPU per GiB streamed (least of 3)", cpu, "goal", 0.8, "CPU s/GiB", goal=1.0),
            row("serve 2: MB not delivered (of 3 runs, most)", max(GIB - r["bytes"] for r in runs) / 1e6, "goal", 0,
                "MB")]


def _row7(s, hc, fl):
    idle = start(hc, s.addr, RUNS, ECHO)
    p = subprocess.Popen([hc, "-t", str(HANG), "stream", s.addr, writer(fl, 0)], stdout=subprocess.PIPE, text=True)
    pid = None
    try:
        if not select.select([p.stdout], [], [], 30)[0]:
            raise RuntimeError("the streaming client got no start event in 30 s")
        pid = json.loads(p.stdout.readline())["pid"]
        time.sleep(0.5)  # at full speed
        busy = start(hc, s.addr, RUNS, ECHO)
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)  # the agent's child (we are its user); the stream then ends
        try:
            out, _ = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
    res = json.loads(out.strip().splitlines()[-1])
    assert idle["stdout_bytes"] == busy["stdout_bytes"] == 3 * RUNS, (idle, busy)
    note = "serve 7: the other client streamed %.0f MB/s meanwhile (%.0f MB)" % (
        res["bytes"] / res["seconds"] / 1e6, res["bytes"] / 1e6)
    return [row("serve 7: `echo hi` round trip beside a full-speed stream, median", busy["end_med_ms"],
                "the same agent idle", idle["end_med_ms"], "ms", goal=0.5, note=note),
            row("serve 7: `echo hi` round trip beside a full-speed stream, p90", busy["end_p90_ms"],
                "the same agent idle", idle["end_p90_ms"], "ms")]


def _row8(s, hc, fl):
    a = run_json([hc, "-t", str(HANG), "swarm", s.addr, "50", "10", TRUE])
    assert not a["errors"], a
    f = run_json([fl, "execs", "50", "10", "/bin/true"])
    return [row("serve 8: 50 clients Start `true` in a loop, 10 s", a["per_s"], "50 procs fork+exec+wait (C)",
                f["per_s"], "cmds/s", goal=0.9)]


def _syscalls(s, hc, fl):
    """strace -c on the agent (with -f: the children it forks too, up to and
    after their exec) over 200 Starts and a 256 MiB stream."""
    n = RUNS
    rows = []
    for follow, what, base in ((True, "agent + its children, strace -f", "the fork floor (C), strace -f"),
                               (False, "the agent process only", "the fork floor (C), parent only")):
        tot, counts = strace_counts(s.p.pid, lambda: start(hc, s.addr, n, TRUE, warm=0), follow)
        ftot, fcounts = strace_run([fl, "exec", "-w", "0", str(n), "/bin/true"], follow)
        rows.append(row("serve sys: syscalls per Start `true` (%s)" % what, tot / n, base, ftot / n,
                        "calls", note="serve sys: per Start, %s: %s; the floor: %s" % (
                            what, top(counts, n), top(fcounts, n))))
    size = 256 * MIB
    tot, counts = strace_counts(s.p.pid, lambda: _stream(hc, s.addr, writer(fl, size)), False)
    ftot, fcounts = strace_run([fl, "tcp", str(size)], True)
    rows.append(row("serve sys: syscalls per MiB streamed through Start (agent)", tot / 256,
                    "loopback TCP writer + reader (C)", ftot / 256, "calls/MiB",
                    note="serve sys: per MiB streamed, the agent: %s" % top(counts, 256)))
    return rows


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


def _rss(s, agent):
    return [row("serve: binary size", os.stat(agent).st_size / 1000, "goal", 480, "KB"),
            row("serve: RSS idle", s.rss_kib(), "", None, "KiB"),
            row("serve: RSS, 200 open connections", _rss_with_connections(s, 200), "", None, "KiB"),
            row("serve: RSS, 100 running processes", _rss_with_sleepers(s, 100), "", None, "KiB")]


STEPS = [("1", _row1), ("2", _row2), ("7", _row7), ("8", _row8), ("sys", _syscalls)]


def bench(agent):
    rows = []
    hc, fl = tool(agent, "hclient"), tool(agent, "floor")
    with Serve(agent) as s:
        if wanted("rss"):
            rows += _rss(s, agent)
        try:
            start(hc, s.addr, 1, TRUE, warm=0)
        except NotServed:
            return rows + [row("serve %s: Start" % k, NOT_SERVED, "", None, "") for k, _ in STEPS if wanted(k)]
        for key, fn in STEPS:
            if not wanted(key):
                continue
            try:
                rows += fn(s, hc, fl)
            except Missing as e:
                rows.append(row("serve %s: (a tool is missing)" % key, "-", str(e), None, ""))
    return rows


def show(rows):
    for r in rows:
        a, b = r["agent"], r["baseline"]
        print("%-62s %12s  %-32s %10s  %s" % (r["what"], a if isinstance(a, str) else "%.3f" % a,
                                              r["baseline_name"], "-" if b is None else "%.3f" % b, r["unit"]))
        if r.get("note"):
            print("    " + r["note"])


if __name__ == "__main__":
    show(bench(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/sandbox-agent")))
