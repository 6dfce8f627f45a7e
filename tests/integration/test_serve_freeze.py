"""`serve`'s pause routes (README "Orchestrator routes": pauses), black-box:

POST /freeze freezes the groups the agent made for its processes (legacy)
on cgroup v2, on a v1 freezer hierarchy, and where neither can freeze
(SANDBOX_AGENT_CGROUPS=0) stops them with SIGSTOP instead, saying so; with
maxWaitMs it answers FreezeResult once they read frozen (envd.yaml's
fields), without it 204 at once. The agent answers /health, /metrics and
/unfreeze meanwhile. /unfreeze thaws what /freeze froze and leaves frozen
what was frozen before it; an /init thaws as well. A second call of the
family while a /freeze waits is 503. mode=hierarchy, in a cgroup namespace
of the test's own (the sweep must never see the host's groups), freezes a
group the agent did not make and not the agent's own, within maxCgroups.
/fsfreeze and /fsthaw on an ext4 image mounted for the test
(SANDBOX_AGENT_DISK_PATH: never the machine's /), idempotent, the agent
answering while frozen; /collapse answers CollapseResult.

Kinds the machine lacks are skipped with the reason (tests/lib/cgroups.py).
"""
import os
import shutil
import signal
import subprocess
import tempfile
import threading

import pytest

from cgroups import _own_line, agent_group, dir_of, why_not
from conftest import TIMEOUT, proc_state, started_agents, wait_until
from connectc import ServeAgent, head_bytes
from fuselib import FuseFile, Unavailable

FREEZE_KEYS = ["mode", "visited", "allowlisted", "truncated", "preFrozen", "requested", "frozen", "notFrozen",
               "failed", "unobservable", "sweepMs", "waitMs"]
COLLAPSE_KEYS = ["regions", "chunks", "collapsed", "alreadyHuge", "skipped", "elapsedMs"]
KINDS = {"v2": ("v2", "cgroup v2"), "v1": ("v1", "cgroup v1 freezer"), "none": ("0", "SIGSTOP")}


def freezer_why(kind):
    """None when the agent's groups of kind can freeze here, else why not."""
    if kind == "none":
        return None
    if os.geteuid() != 0:
        return "not root: no cgroup may be made"
    if kind == "v1":
        line = _own_line("freezer")
        own = dir_of(line) if line else None
        if own is None:
            return "no v1 freezer hierarchy reaches our group"
        return None if os.access(own, os.W_OK) else "the v1 freezer group %s is not writable" % own
    why = why_not("v2")
    if why:
        return why
    own = dir_of(_own_line("v2"))
    probe = os.path.join(own, "sa-test-freeze-%d" % os.getpid())
    os.mkdir(probe)
    try:
        return None if os.path.exists(os.path.join(probe, "cgroup.freeze")) else "cgroup v2 has no cgroup.freeze"
    finally:
        os.rmdir(probe)


@pytest.fixture
def serve(agent):
    yield from started_agents(lambda **env: ServeAgent(agent, **env))


def post(a, target, token=True):
    c = a.conn()
    h = {"Content-Length": "0"}
    if token:
        h["X-Access-Token"] = a.token
    c.send(head_bytes("POST", target, h))
    r = c.response()
    c.close()
    return r


def get(a, target):
    c = a.conn()
    c.send(head_bytes("GET", target, {"X-Access-Token": a.token}))
    r = c.response()
    c.close()
    return r


def group_of(pid):
    """The child joins its group between fork and exec: after the start event."""
    g = wait_until(lambda: agent_group(open("/proc/%d/cgroup" % pid).read()),
                   "process %d to join its group" % pid)
    return g[1]


def frozen(pid, kind):
    """The kernel's word, not the agent's: is pid frozen (stopped) now?"""
    if kind == "none":
        return proc_state(pid) in ("T", "t")
    d = group_of(pid)
    if kind == "v2":
        return "frozen 1" in open(os.path.join(d, "cgroup.events")).read()
    return open(os.path.join(d, "freezer.state")).read().strip() == "FROZEN"


def freeze_by_hand(pid, kind, on):
    """The guest's own freeze (docker pause), not the agent's."""
    if kind == "none":
        os.kill(pid, signal.SIGSTOP if on else signal.SIGCONT)
    elif kind == "v2":
        open(os.path.join(group_of(pid), "cgroup.freeze"), "w").write("1" if on else "0")
    else:
        open(os.path.join(group_of(pid), "freezer.state"), "w").write("FROZEN" if on else "THAWED")


def sleepers(a, n):
    """n processes started through the agent: (stream, pid) each."""
    return [a.start("/bin/sleep", "600") for _ in range(n)]


@pytest.fixture(params=sorted(KINDS))
def kind(request):
    why = freezer_why(request.param)
    if why:
        pytest.skip(why)
    return request.param


def test_freeze_waits_then_unfreeze(serve, kind):
    a = serve(SANDBOX_AGENT_CGROUPS=KINDS[kind][0])
    procs = sleepers(a, 3)
    r = post(a, "/freeze?maxWaitMs=10000")
    assert r.status == 200, r.body
    res = r.json()
    assert list(res)[:len(FREEZE_KEYS)] == FREEZE_KEYS
    assert res["mode"] == "legacy" and res["method"] == KINDS[kind][1], res
    assert res["requested"] == 3 and res["frozen"] == 3 and res["notFrozen"] == 0 and res["failed"] == 0, res
    assert res["preFrozen"] == 0 and res["truncated"] is False
    for _, pid in procs:
        assert frozen(pid, kind), pid
    # the agent itself runs on, and answers
    assert post(a, "/freeze", token=False).status == 401
    assert get(a, "/health").status == 204
    assert get(a, "/metrics").status == 200
    assert a.unary("process.Process/List", {}).status == 200
    assert post(a, "/unfreeze").status == 204
    for _, pid in procs:
        wait_until(lambda: not frozen(pid, kind), "process %d thawed" % pid)
    for s, _ in procs:
        s.close()


def test_unfreeze_leaves_what_was_frozen_before(serve, kind):
    a = serve(SANDBOX_AGENT_CGROUPS=KINDS[kind][0])
    (s1, mine), (s2, guests) = sleepers(a, 2)
    freeze_by_hand(guests, kind, True)
    wait_until(lambda: frozen(guests, kind), "the guest's own freeze")
    try:
        res = post(a, "/freeze?maxWaitMs=10000").json()
        assert res["preFrozen"] == 1 and res["requested"] == 1 and res["frozen"] == 1, res
        assert post(a, "/unfreeze").status == 204
        wait_until(lambda: not frozen(mine, kind), "the agent's freeze undone")
        assert frozen(guests, kind), "the guest's own freeze was undone"
        # a second /unfreeze has nothing left to thaw
        assert post(a, "/unfreeze").status == 204
        assert frozen(guests, kind)
    finally:
        freeze_by_hand(guests, kind, False)
    s1.close()
    s2.close()


def test_freeze_without_wait_is_204_and_init_thaws(serve, kind):
    a = serve(SANDBOX_AGENT_CGROUPS=KINDS[kind][0])
    (s, pid), = sleepers(a, 1)
    r = post(a, "/freeze")
    assert r.status == 204 and r.body == b""
    wait_until(lambda: frozen(pid, kind), "the freeze to take")
    c = a.conn()
    c.send(head_bytes("POST", "/init", {"X-Access-Token": a.token, "Content-Type": "application/json",
                                        "Content-Length": "2"}) + b"{}")
    assert c.response().status == 204
    wait_until(lambda: not frozen(pid, kind), "/init to thaw")
    s.close()


def test_bad_query_is_400(serve):
    a = serve()
    for q in ("mode=all", "maxWaitMs=soon", "maxCgroups=1.5", "mode=legacy&mode=hierarchy"):
        r = post(a, "/freeze?" + q)
        assert r.status == 400 and r.json()["code"] == "invalid_argument", (q, r.body)
    c = a.conn()
    c.send(head_bytes("GET", "/freeze", {"X-Access-Token": a.token}))
    assert c.response().status == 405


def test_second_call_while_one_waits_is_503(serve, kind):
    """A reader held in a FUSE read cannot freeze or stop: the /freeze
    waits out its budget, and every call of the family meanwhile is 503."""
    gate = threading.Event()
    try:
        fuse = FuseFile(b"x" * 4096, gate=gate)
    except Unavailable as e:
        pytest.skip(str(e))
    with fuse:
        a = serve(SANDBOX_AGENT_CGROUPS=KINDS[kind][0], SANDBOX_AGENT_LOG="info")
        s, pid = a.start("/bin/cat", fuse.path)
        assert fuse.reads.wait(TIMEOUT), "cat never read"
        c = a.conn()
        c.send(head_bytes("POST", "/freeze?maxWaitMs=3000", {"X-Access-Token": a.token, "Content-Length": "0"}))
        try:
            wait_until(lambda: "api: /freeze: legacy" in a.stderr(), "the sweep")
            busy = [post(a, p).status for p in ("/freeze", "/unfreeze", "/fsfreeze", "/fsthaw")]
            r = c.response()
        finally:
            gate.set()
        res = r.json()
        if res["notFrozen"] == 0:
            pytest.skip("this kernel freezes a task waiting in a FUSE read (%s): nothing to wait for" % kind)
        assert busy == [503, 503, 503, 503], busy
        assert r.status == 200 and res["requested"] == 1 and res["notFrozen"] == 1 and res["waitMs"] >= 2900, res
        assert post(a, "/unfreeze").status == 204
        s.close()


# ---- mode=hierarchy, in a cgroup namespace of the test's own ----------------------

def test_hierarchy_freezes_other_groups_not_the_agents(agent, tmp_path):
    """The agent is PID 1 of a cgroup namespace whose root is a group made
    for the test, with the hierarchy mounted afresh: the sweep sees that
    root, a sibling group the test made ("guest", a process in it), and
    the agent's own group; it freezes the sibling and the agent's
    processes, never the agent."""
    why = freezer_why("v2") or (None if shutil.which("unshare") else "no unshare")
    if why:
        pytest.skip(why)
    own = dir_of(_own_line("v2"))
    top = os.path.join(own, "sa-test-hier-%d" % os.getpid())
    os.mkdir(top)
    for d in ("agent", "guest", "guest/inner"):
        os.mkdir(os.path.join(top, d))
    guest = subprocess.Popen(["/bin/sleep", "600"])
    open(os.path.join(top, "guest/inner/cgroup.procs"), "w").write(str(guest.pid))
    mnt = "/sys/fs/cgroup/unified" if os.path.isdir("/sys/fs/cgroup/unified") else "/sys/fs/cgroup"
    # the namespace's root is the group of the process that unshares: top;
    # the agent then moves to top/agent, below it
    script = ('echo $$ > "$1/cgroup.procs" && exec unshare --cgroup --mount --propagation private sh -c '
              '"umount -l %s && mount -t cgroup2 none %s && echo \\$\\$ > %s/agent/cgroup.procs && '
              'exec \\"\\$0\\" serve" "$2"' % (mnt, mnt, mnt))
    a = ServeAgent(agent, wrap=["/bin/sh", "-c", script, "sh", top], SANDBOX_AGENT_LOG="debug")
    try:
        wait_until(lambda: "sandbox-agent-" in "".join(os.listdir(os.path.join(top, "agent"))), "the agent's groups")
        (s, pid), = sleepers(a, 1)
        r = post(a, "/freeze?mode=hierarchy&maxWaitMs=10000")
        res = r.json()
        assert r.status == 200 and res["mode"] == "hierarchy" and res["method"] == "cgroup v2", (res, a.stderr())
        events = lambda d: open(os.path.join(top, d, "cgroup.events")).read()
        assert "frozen 1" in events("guest") and "frozen 1" in events("guest/inner"), (res, a.stderr())
        assert "frozen 1" not in events("agent"), "the agent's own group was frozen"
        assert frozen(pid, "v2")
        # visited: the root's children (agent, guest), the agent's group's (its directory)
        assert res["visited"] == 3 and res["requested"] == 2 and res["frozen"] == 2, res
        assert get(a, "/health").status == 204
        assert post(a, "/unfreeze").status == 204
        assert "frozen 0" in events("guest") and "frozen 0" in events("guest/inner")
        # the bound: one group looked at, the walk says it stopped short
        res = post(a, "/freeze?mode=hierarchy&maxCgroups=1&maxWaitMs=10000").json()
        assert res["visited"] == 1 and res["truncated"] is True, res
        assert post(a, "/unfreeze").status == 204
        s.close()
    finally:
        a.stop()
        guest.kill()
        guest.wait()
        for d in ("guest/inner", "guest", "agent", ""):
            wait_until(lambda: _rmdir(os.path.join(top, d)), "removing " + d, timeout=10)


def _rmdir(d):
    try:
        os.rmdir(d)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


# ---- /fsfreeze, /fsthaw on a filesystem made for the test --------------------------

@pytest.fixture
def ext4(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("not root: no filesystem may be mounted")
    for tool in ("mkfs.ext4", "mount", "umount", "fsfreeze"):
        if not shutil.which(tool):
            pytest.skip("no " + tool)
    img, mnt = str(tmp_path / "fs.img"), tempfile.mkdtemp(prefix="sa-fsfreeze-")
    subprocess.run(["truncate", "-s", "32M", img], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True)
    r = subprocess.run(["mount", "-o", "loop", img, mnt], capture_output=True, text=True)
    if r.returncode:
        os.rmdir(mnt)
        pytest.skip("cannot mount an ext4 image: " + r.stderr.strip())
    yield mnt
    subprocess.run(["fsfreeze", "-u", mnt], capture_output=True)  # whatever the test left
    subprocess.run(["umount", mnt], check=True)
    os.rmdir(mnt)


def frozen_fs(mnt):
    """FIFREEZE of a frozen filesystem is EBUSY: fsfreeze -f fails then."""
    r = subprocess.run(["fsfreeze", "-f", mnt], capture_output=True)
    if r.returncode == 0:
        subprocess.run(["fsfreeze", "-u", mnt], check=True)
        return False
    return True


def test_fsfreeze_fsthaw(serve, ext4):
    a = serve(SANDBOX_AGENT_DISK_PATH=ext4, SANDBOX_AGENT_LOG="info")
    assert post(a, "/fsfreeze").status == 204
    assert post(a, "/fsfreeze").status == 204  # idempotent
    assert frozen_fs(ext4)
    # a write to it waits in the kernel; the agent answers meanwhile
    w = subprocess.Popen(["/bin/sh", "-c", 'echo data > "$0/f"', ext4])
    wait_until(lambda: proc_state(w.pid) == "D", "the writer to wait on the frozen filesystem")
    assert get(a, "/health").status == 204 and get(a, "/metrics").status == 200
    assert post(a, "/freeze").status == 204 and post(a, "/unfreeze").status == 204
    assert post(a, "/fsthaw").status == 204
    assert w.wait(TIMEOUT) == 0 and open(os.path.join(ext4, "f")).read() == "data\n"
    assert post(a, "/fsthaw").status == 204  # idempotent
    assert not frozen_fs(ext4)


def test_fsfreeze_with_the_log_on_it(agent, ext4):
    """stderr a file on the frozen filesystem: the agent's diagnostics are
    dropped while it is frozen (a write would hold the loop until the
    thaw), and counted at the thaw."""
    log = os.path.join(ext4, "agent.err")
    a = ServeAgent(agent, wrap=["/bin/sh", "-c", 'exec "$@" 2>>"$0"', log], SANDBOX_AGENT_DISK_PATH=ext4,
                   SANDBOX_AGENT_LOG="info")
    try:
        assert post(a, "/fsfreeze").status == 204
        (s, pid), = sleepers(a, 1)  # logs at info: dropped, not waited on
        assert post(a, "/freeze?maxWaitMs=5000").status == 200
        assert get(a, "/health").status == 204
        assert post(a, "/unfreeze").status == 204
        assert post(a, "/fsthaw").status == 204
        s.close()
        wait_until(lambda: "diagnostics dropped while the filesystem" in open(log).read(), "the count at the thaw")
    finally:
        a.stop()


def test_collapse(serve):
    a = serve()
    r = post(a, "/collapse")
    assert r.status == 200, r.body
    res = r.json()
    assert list(res) == COLLAPSE_KEYS, res
    assert res["regions"] >= 1 and all(isinstance(res[k], int) and res[k] >= 0 for k in COLLAPSE_KEYS), res
    assert res["chunks"] == res["collapsed"] + res["alreadyHuge"] + res["skipped"], res
