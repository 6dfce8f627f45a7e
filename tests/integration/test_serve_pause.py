"""A pause is invisible to the clients (README "Pauses and the agent's
clocks"), black-box, both ways a platform pauses a sandbox:

- through the freeze routes (/freeze, then /unfreeze): a stream open across
  it delivers every byte after it, in order, with one end event; a client
  whose connection died during it reconnects by pid and by tag and gets
  the kept output from the offset it asks for, then the live output;
  SendSignal and the group's kill reach every descendant after the thaw.
  On cgroup v2, the v1 freezer, and SIGSTOP where neither can freeze.
- the whole sandbox stopped from outside for 30 s (SIGSTOP of the agent
  and every process below it, SIGCONT after; CLOCK_MONOTONIC runs on
  meanwhile, as it does for a container whose cgroup is frozen): no timer
  fires because of the stop alone. A Start `timeout`, the grace between
  its TERM and KILL, the first-head deadline of a connection with no
  request yet, the time a finished process is kept, each counts the time
  the sandbox ran; the stream and the reconnect promises hold across it.
  The stop is the premise (time passing while stopped), so this one test
  waits 30 s; everything else waits on observable state.
"""
import os
import signal
import time

import pytest

from cgroups import agent_group
from conftest import alive, descendants, proc_state, started_agents, stat_fields, wait_until
from connectc import ServeAgent, b64, end_of, head_bytes, output
from test_serve_freeze import KINDS, freezer_why, post

STOP_SECONDS = 30
BIG = 4 << 20  # more than the socket, the connection's queue and the ring hold


@pytest.fixture
def serve(agent):
    yield from started_agents(lambda **env: ServeAgent(agent, **env))


@pytest.fixture(params=sorted(KINDS))
def kind(request):
    why = freezer_why(request.param)
    if why:
        pytest.skip(why)
    return request.param


def send_input(a, pid, data):
    r = a.unary("process.Process/SendInput", {"process": {"pid": pid}, "input": {"stdin": b64(data)}})
    assert r.status == 200, r.body


def connect(a, selector, replay_from=None):
    h = {"Sandbox-Agent-Replay-From": str(replay_from)} if replay_from is not None else None
    s = a.stream("process.Process/Connect", {"process": selector}, headers=h)
    assert s.status == 200
    flags, first = s.next()
    assert "start" in first["event"], first
    return s


def until_output(s, want, got=b""):
    """Read s until its stdout so far ends with want; (events, stdout)."""
    events = []
    while not got.endswith(want):
        flags, m = s.next()
        assert not flags & 2, "the stream ended early: %r" % m
        events.append(m)
        got += output([m])
        assert "end" not in m.get("event", {}), "an end event before %r: %r" % (want, got)
    return events, got


# A process that prints a line, then one more per line of input, until EOF.
ECHOER = ["/bin/sh", "-c", 'echo first; while read x; do echo "got $x"; done; echo last']


def test_stream_and_reconnect_across_freeze(serve, kind):
    a = serve(SANDBOX_AGENT_CGROUPS=KINDS[kind][0])
    s1, pid = a.start(*ECHOER, msg={"tag": "echoer", "stdin": True})
    until_output(s1, b"first\n")
    gone = connect(a, {"tag": "echoer"})  # its connection dies during the freeze
    tree, tpid = a.start("/bin/sh", "-c", "sleep 600 & sleep 600 & echo up; wait")
    until_output(tree, b"up\n")
    kids = wait_until(lambda: len(descendants(tpid)) >= 2 and descendants(tpid), "the background sleeps")

    res = post(a, "/freeze?maxWaitMs=10000").json()
    assert res["notFrozen"] == 0 and res["frozen"] >= 2, res
    gone.close()
    assert post(a, "/unfreeze").status == 204

    send_input(a, pid, b"one\n")
    _, got = until_output(s1, b"got one\n", b"first\n")
    assert got == b"first\ngot one\n"
    # the reconnect by pid from offset 6 ("got one" on), then by tag from 0, then live
    by_pid = connect(a, {"pid": pid}, replay_from=6)
    _, kept = until_output(by_pid, b"got one\n")
    assert kept == b"got one\n"
    by_tag = connect(a, {"tag": "echoer"}, replay_from=0)
    _, kept = until_output(by_tag, b"got one\n")
    assert kept == b"first\ngot one\n"
    send_input(a, pid, b"two\n")
    r = a.unary("process.Process/CloseStdin", {"process": {"pid": pid}})
    assert r.status == 200, r.body
    for s, before in ((s1, got), (by_pid, b"got one\n"), (by_tag, b"first\ngot one\n")):
        events, end = s.collect()
        assert before + output(events) == before + b"got two\nlast\n"
        assert end_of(events)["exitCode"] == 0 if "exitCode" in end_of(events) else True
    # SendSignal after the thaw reaches the whole tree
    r = a.unary("process.Process/SendSignal", {"process": {"pid": tpid}, "signal": "SIGNAL_SIGKILL"})
    assert r.status == 200, r.body
    wait_until(lambda: not any(alive(k) for k in kids + [tpid]), "every process of the tree killed")
    tree.close()


# ---- the whole sandbox stopped from outside --------------------------------------

def _in_frozen_group(pid):
    """pid's group of the agent's is frozen now: the agent was stopped in
    the middle of a signal (it freezes the group around it), and a frozen
    task does not stop until it is thawed; it does not run either."""
    try:
        g = agent_group(open("/proc/%d/cgroup" % pid).read())
        if not g or not g[1]:
            return False
        ev = os.path.join(g[1], "cgroup.events")
        if os.path.exists(ev):
            return "frozen 1" in open(ev).read()
        return open(os.path.join(g[1], "freezer.state")).read().strip() == "FROZEN"
    except OSError:
        return False


def stop_sandbox(agent_pid):
    """SIGSTOP the agent, then everything below it until a walk finds
    nothing new (nothing forks once its parent is stopped); each seen
    stopped in /proc, or held by its frozen group. Returns the pids."""
    os.kill(agent_pid, signal.SIGSTOP)
    stopped = {agent_pid: _start(agent_pid)}
    while True:
        new = [p for p in descendants(agent_pid) if p not in stopped]
        if not new:
            break
        for p in new:
            stopped[p] = _start(p)
            if _in_frozen_group(p):
                continue
            try:
                os.kill(p, signal.SIGSTOP)
            except ProcessLookupError:
                pass
    for p, start in stopped.items():  # one that ended meanwhile (its pid maybe reused) is gone
        wait_until(lambda: proc_state(p) in ("T", "t", "Z", None) or _start(p) != start or _in_frozen_group(p),
                   "process %d stopped (%s: %s)" % (p, proc_state(p), _cmd(p)))
    return list(stopped)


def _start(pid):
    f = stat_fields(pid)
    return f[19] if f else None


def _syscall(pid):
    """The number of the system call pid waits in ("1": write), or None."""
    try:
        return open("/proc/%d/syscall" % pid).read().split()[0]
    except (OSError, IndexError):
        return None


def _cmd(pid):
    try:
        return open("/proc/%d/cmdline" % pid, "rb").read().replace(b"\0", b" ").decode()
    except OSError:
        return "gone"


def cont_sandbox(pids):
    for p in pids:
        try:
            os.kill(p, signal.SIGCONT)
        except ProcessLookupError:
            pass


def test_timers_count_the_time_the_sandbox_ran(serve):
    """Every deadline below would pass during the 30 s stop if it counted
    the stop: each must still be running right after the resume, and the
    Start timeout end at its time counted without the stop."""
    a = serve(SANDBOX_AGENT_FIRST_HEAD_SECONDS="12", SANDBOX_AGENT_GRACE_SECONDS="12",
              SANDBOX_AGENT_KEEP_FINISHED_SECONDS="12", SANDBOX_AGENT_STALL_SECONDS="12",
              SANDBOX_AGENT_RETAIN_BYTES="65536", SANDBOX_AGENT_LOG="info")
    t0 = time.monotonic()
    # a stream that reads nothing while the output waits for it: 12 s before it is left to skip
    slow, wpid = a.start("/bin/sh", "-c", "head -c %d /dev/zero | tr '\\0' x; echo end" % BIG)
    writer = wait_until(lambda: [k for k in descendants(wpid) if _cmd(k).startswith("tr ")], "the writer")[0]
    wait_until(lambda: _syscall(writer) == "1", "the writer held in write(2)")
    # a Start timeout of 16 s: TERM at 16 s of the sandbox's time
    sleeper, spid = a.start("/bin/sleep", "600", msg={"timeout": 16})
    # a Start timeout of 1 s whose TERM is ignored: KILL after the 12 s grace
    stubborn, gpid = a.start("/bin/sh", "-c", "trap 'echo term' TERM; echo ready; while :; do sleep 1; done",
                             msg={"timeout": 1})
    _, sofar = until_output(stubborn, b"ready\n")
    # a finished process, kept 12 s after its end event went out
    done, dpid = a.start("/bin/echo", "done")
    events, _ = done.collect()
    assert end_of(events)
    # a stream open across the stop, and one that dies during it
    s1, epid = a.start(*ECHOER, msg={"tag": "echoer", "stdin": True})
    until_output(s1, b"first\n")
    gone = connect(a, {"tag": "echoer"})
    # a connection with no request yet: 12 s to send one
    idle = a.sock()
    until_output(stubborn, b"term\n", sofar)  # the 1 s timeout's TERM, ignored: the grace runs
    assert alive(gpid)

    pids = stop_sandbox(a.pid)
    stopped_at = time.monotonic()
    assert stopped_at - t0 < 8, "setting up took %.1f s: the deadlines would pass anyway" % (stopped_at - t0)
    gone.close()
    deadline = stopped_at + STOP_SECONDS
    while time.monotonic() < deadline:  # the premise: time passes while the sandbox is stopped
        time.sleep(deadline - time.monotonic())
    cont_sandbox(pids)
    resumed = time.monotonic()

    broken = []  # every promise is checked, each failure named (main breaks several)

    def check(what, fn):
        try:
            fn()
        except (AssertionError, OSError, EOFError, TimeoutError, KeyError) as e:
            broken.append("%s: %s: %s" % (what, type(e).__name__, e))

    def first_head():  # the idle connection may still send its first request
        idle.sendall(head_bytes("GET", "/health", {}))
        assert idle.recv(64).startswith(b"HTTP/1.1 204"), "closed"

    def kept():  # the finished process is still kept
        events, _ = connect(a, {"pid": dpid}, replay_from=0).collect()
        assert output(events) == b"done\n" and end_of(events)

    def stream():  # the stream goes on; the reconnect gets what was kept, then the live output
        send_input(a, epid, b"after\n")
        _, got = until_output(s1, b"got after\n", b"first\n")
        assert got == b"first\ngot after\n"
        _, kept_out = until_output(connect(a, {"tag": "echoer"}, replay_from=6), b"got after\n")
        assert kept_out == b"got after\n"

    def stall():  # the output waited for the stream: all of it comes, nothing skipped
        events, _ = slow.collect()
        got = output(events)
        assert got == b"x" * BIG + b"end\n", "%d bytes of %d" % (len(got), BIG + 4)

    check("the first-head deadline counted the stop", first_head)
    check("the stall timer counted the stop", stall)
    check("the finished process was not kept", kept)
    check("the stream or the reconnect", stream)
    idle.close()
    # neither the timeout nor the grace fired at the resume
    wait_until(lambda: time.monotonic() - resumed > 3, "3 s after the resume", interval=0.1)
    if not alive(spid):
        broken.append("the Start timeout fired at the resume")
    if not alive(gpid):
        broken.append("the grace ended at the resume")

    def timeout_time():  # the sleeper ends 16 s into the sandbox's time: ~13 s after the resume
        sleeper.collect()
        took = time.monotonic() - resumed
        assert 16 - (stopped_at - t0) - 2 <= took <= 16 - (stopped_at - t0) + 10, "after %.1f s" % took

    def grace():
        assert end_of(stubborn.collect()[0])["status"] == "signal: killed"

    check("the Start timeout's time", timeout_time)
    check("the grace's KILL", grace)
    assert not broken, broken
    assert "pause: the agent was stopped for" in a.stderr()
