"""`sandbox-agent serve`'s pause routes (issue 17), timed from C
(build/bench/hclient), beside the floor (build/bench/freezefloor: the
cgroup files written and read back by a minimal C loop, no server):

  17a POST /freeze?maxWaitMs=10000 of 100 running processes (each in its
      cgroup): the time until all read frozen, median of ROUNDS
  17b POST /unfreeze of them, median of ROUNDS

Once with the agent's groups on cgroup v2, once on the v1 freezer
(SANDBOX_AGENT_CGROUPS); a kind the machine lacks gives a "-" row (SIGSTOP
has no floor). /unfreeze answers once it has written every group, while
the floor waits until each reads thawed.

Run alone: /usr/bin/python3 tests/bench/bench.py build/sandbox-agent serve_freeze
"""
import json
import os
import socket
import statistics
import sys

from cbench import HANG, row, run_json, tool, wanted
from cgroups import agent_group
from connectc import Conn, Stream, envelope, head_bytes
from servelib import Serve
from testlib import wait_until

PROCS = 100
ROUNDS = 10


def _start(addr, host_port):
    c = Conn(socket.create_connection(host_port, timeout=HANG))
    body = envelope({"process": {"cmd": "/bin/sleep", "args": ["600"]}})
    c.send(head_bytes("POST", "/process.Process/Start",
                      {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
                       "Content-Length": str(len(body))}) + body)
    s = Stream(c)
    _, first = s.next(HANG)
    return c, first["event"]["start"]["pid"]


def _post(hc, addr, target):
    return run_json([hc, "-t", str(HANG), "req", "-X", "POST", addr, target])["med_ms"]


def bench(agent):
    if not (wanted("17a") or wanted("17b")):
        return []
    return _kind(agent, "v2") + _kind(agent, "v1")


def _kind(agent, cgroups):
    hc, floor = tool(agent, "hclient"), tool(agent, "freezefloor")
    with Serve(agent, SANDBOX_AGENT_CGROUPS=cgroups) as s:
        host, port = s.addr.rsplit(":", 1)
        started = [_start(s.addr, (host, int(port))) for _ in range(PROCS)]
        try:
            groups = []
            for _, pid in started:  # its exec done, it joined its group (between fork and exec)
                wait_until(lambda: os.readlink("/proc/%d/exe" % pid).endswith("sleep"), "process %d's exec" % pid)
                g = agent_group(open("/proc/%d/cgroup" % pid).read())
                if not g:
                    return [row("serve 17: /freeze of %d processes (%s)" % (PROCS, cgroups), "-",
                                note="serve 17: the agent may make no %s cgroups here: /freeze stops processes "
                                     "with SIGSTOP, which has no floor" % cgroups)]
                groups.append(g[1])
            kind = "v2" if os.path.exists(os.path.join(groups[0], "cgroup.freeze")) else "v1"
            c = Conn(socket.create_connection((host, int(port)), timeout=HANG))
            c.send(head_bytes("POST", "/freeze?maxWaitMs=10000", {"Content-Length": "0"}))
            res = json.loads(c.response(HANG).body)
            c.close()
            assert res["frozen"] == PROCS and res["notFrozen"] == 0, res
            _post(hc, s.addr, "/unfreeze")
            fz, th = [], []
            for _ in range(ROUNDS):
                fz.append(_post(hc, s.addr, "/freeze?maxWaitMs=10000"))
                th.append(_post(hc, s.addr, "/unfreeze"))
            fl = run_json([floor, kind, str(ROUNDS)] + groups)
        finally:
            for c, _ in started:
                c.close()
    base = "C loop writing %s" % ("cgroup.freeze" if kind == "v2" else "freezer.state")
    return [row("serve 17a: /freeze of %d processes, all frozen (%s)" % (PROCS, kind), statistics.median(fz),
                base, fl["freeze_ms"], "ms"),
            row("serve 17b: /unfreeze of %d processes (%s)" % (PROCS, kind), statistics.median(th), base,
                fl["thaw_ms"], "ms")]


if __name__ == "__main__":
    from bench_serve_proc import show
    show(bench(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/sandbox-agent")))
