"""`sandbox-agent serve`: per-process cgroups against a root workload that
makes groups of its own inside its cgroup (README "sandbox-agent serve":
what a process started goes with it), and the agent's directory of groups
across agents that were killed or run side by side.

Each test runs its agents in a cgroup of its own (cgroups.AgentCgroup, v2
or v1, each skipped with the reason where this machine cannot make one),
so the agents' groups are made where no other agent's are; at the end every
process left in it or below it is killed by pid and every group removed.
"""
import fcntl
import os
import signal

import pytest

import cgroups
from conftest import agent_pid, alive, started_agents, wait_until
from connectc import ServeAgent, end_of, output
from jobs import UNSHARE

KINDS = ["v2", "v1"]
# Bound of the waits for what the agent does at once (a signal, a removal
# tried at the leader's exit and again after 0.05 s, 0.1 s, ...).
WAIT = 20
# What the agent logs when it leaves a group behind.
LEFT = ("left behind", "still have members", "survived", "is left after")


@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


@pytest.fixture
def parent(kind):
    cg = cgroups.AgentCgroup(kind)
    if cg.why:
        pytest.skip("cgroups (%s) not available on this machine: %s" % (kind, cg.why))
    yield cg
    cg.close()


def agent_in(agent, parent, kind, wrap=(), **env):
    """An agent run in the test's cgroup, asked for groups of its kind."""
    env.setdefault("SANDBOX_AGENT_GRACE_SECONDS", "2")
    return ServeAgent(agent, wrap=parent.wrap + list(wrap), SANDBOX_AGENT_CGROUPS=kind,
                      SANDBOX_AGENT_LOG="info", **env)


@pytest.fixture
def serve(agent, parent, kind):
    """Agents in the test's cgroup, stopped (exit 0, no sanitizer report)
    before it is closed."""
    yield from started_agents(lambda **env: agent_in(agent, parent, kind, **env))


def bases(parent):
    """The names of the agents' directories in the test's cgroup."""
    return sorted(n for n in os.listdir(parent.dir) if n.startswith(cgroups.AGENT_DIR))


def read_when_written(path):
    wait_until(lambda: os.path.exists(path), "the workload to write %s" % path, timeout=WAIT)
    with open(path) as f:
        return f.read()


def levels(depth):
    return "/".join("l%d" % i for i in range(1, depth + 1))


def start_sub_daemon(a, parent, d, depth=1, msg=None, freeze=False):
    """Start a root shell that makes `depth` nested groups inside its own
    cgroup and a daemon (setsid: outside its process group) that moves
    itself into the deepest, then forks `sleep 300`: d/D the daemon's pid,
    d/F the sleep's, d/C the daemon's /proc/self/cgroup after the move, d/G
    "term" when SIGTERM reaches it. freeze: the leader then freezes that
    group (d/Z once it did). The leader waits. Returns (stream, leader's
    pid, daemon's pid, sleep's pid, the process's own group)."""
    inner = ('echo $$ > "$0/cgroup.procs" || exit 1; trap "echo term >> {d}/G; exit 0" TERM; '
             'cat /proc/self/cgroup > {d}/C; echo $$ > {d}/D; sleep 300 & echo $! > {d}/F.tmp; '
             'mv {d}/F.tmp {d}/F; wait').format(d=d)
    sub = levels(depth)
    then = ""
    if freeze:
        knob = "cgroup.freeze" if parent.kind == "v2" else "freezer.state"
        then = ('until [ -e {d}/F ]; do sleep 0.01; done; echo {v} > "$d/{sub}/{k}" && echo > {d}/Z; '
                .format(d=d, sub=sub, k=knob, v="1" if parent.kind == "v2" else "FROZEN"))
    cmd = parent.own_dir_sh() + 'mkdir -p "$d/{sub}" && setsid sh -c \'{inner}\' "$d/{sub}" & {then}wait'.format(
        sub=sub, inner=inner, then=then)
    s, pid = a.start("/bin/sh", "-c", cmd, msg=msg or {})
    sleeper = int(read_when_written(os.path.join(d, "F")))
    daemon = int(read_when_written(os.path.join(d, "D")))
    found = cgroups.agent_group(read_when_written(os.path.join(d, "C")))
    assert found, "the daemon is in no group of the agent's"
    line, deepest = found
    assert deepest.endswith("/" + sub), (line, deepest)
    own = deepest[:-len(sub) - 1]
    assert os.path.dirname(own).startswith(parent.dir + "/" + cgroups.AGENT_DIR), own
    assert alive(sleeper) and alive(daemon)
    return s, pid, daemon, sleeper, own


def no_leftover_logged(err):
    assert not [w for w in LEFT if w in err], err


# ---- a signal reaches the members of every group below the process's -----------

@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL", "timeout"])
def test_signal_reaches_a_daemon_in_a_group_the_process_made(serve, parent, tmp_path, how):
    # A root process makes `l1` inside its own cgroup and moves a daemon
    # there: the signal goes to the members of the whole subtree.
    a = serve()
    msg = {"timeout": 3, "stdin": False} if how == "timeout" else {}
    s, pid, daemon, sleeper, own = start_sub_daemon(a, parent, tmp_path, msg=msg)
    if how != "timeout":
        r = a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_" + how})
        assert r.status == 200, r.body
    e = end_of(s.collect()[0])
    assert e["status"] == ("signal: killed" if how == "SIGKILL" else "signal: terminated")
    wait_until(lambda: not alive(daemon) and not alive(sleeper), "the daemon in the group below to die",
               timeout=WAIT)
    if how != "SIGKILL":
        assert (tmp_path / "G").read_text() == "term\n"
    wait_until(lambda: not os.path.exists(own), "its cgroup and the group below to be removed", timeout=WAIT)
    rc, err = a.stop()
    assert rc == 0, err
    no_leftover_logged(err)


def test_sigkill_reaches_a_daemon_in_a_group_the_process_froze(serve, parent, tmp_path):
    # v1 holds a frozen member's SIGKILL until its group thaws: the agent
    # thaws every group below before each pass (v2's cgroup.kill ends
    # frozen members as they are).
    if parent.kind == "pids":
        pytest.skip("a v1 pids hierarchy cannot freeze")
    a = serve()
    s, pid, daemon, sleeper, own = start_sub_daemon(a, parent, tmp_path, freeze=True)
    read_when_written(os.path.join(tmp_path, "Z"))
    r = a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    assert r.status == 200, r.body
    assert end_of(s.collect()[0])["status"] == "signal: killed"
    wait_until(lambda: not alive(daemon) and not alive(sleeper), "the frozen daemon to die", timeout=WAIT)
    wait_until(lambda: not os.path.exists(own), "its cgroup and the group below to be removed", timeout=WAIT)
    rc, err = a.stop()
    assert rc == 0, err
    no_leftover_logged(err)


def test_agent_stop_reaches_a_daemon_at_the_bottom_of_12_levels(serve, parent, tmp_path):
    # The agent's stop: SIGTERM to every member of the subtree, then every
    # group removed, the deepest first.
    a = serve()
    s, pid, daemon, sleeper, own = start_sub_daemon(a, parent, tmp_path, depth=12)
    rc, err = a.stop()
    assert rc == 0, err
    assert not alive(daemon) and not alive(sleeper), "the daemon outlived the agent"
    assert (tmp_path / "G").read_text() == "term\n"
    assert bases(parent) == [], "groups left behind"
    no_leftover_logged(err)


# ---- nested groups go, whatever their depth ----------------------------------------

@pytest.mark.parametrize("depth", [12, 300])
def test_nested_empty_groups_are_removed_at_the_leaders_exit(serve, parent, depth):
    # 300 levels: deeper than any path the agent could build for them.
    a = serve()
    s, pid = a.start("/bin/sh", "-c", parent.own_dir_sh() + 'mkdir -p "$d/%s" && echo "$d"' % levels(depth))
    msgs, _ = s.collect()
    assert end_of(msgs)["exitCode"] == 0, msgs
    own = output(msgs).decode().strip()
    assert os.path.dirname(own).startswith(parent.dir + "/" + cgroups.AGENT_DIR), own
    wait_until(lambda: not os.path.exists(own), "its cgroup and the %d below to be removed" % depth, timeout=WAIT)
    rc, err = a.stop()
    assert rc == 0, err
    assert bases(parent) == []
    no_leftover_logged(err)


def test_a_tree_larger_than_one_walk_is_removed_a_walk_at_a_time(serve, parent):
    # 4200 empty groups: more than one walk visits (4096, or 0.25 s). The
    # log says so, once, and each retry removes what its walk reaches.
    a = serve()
    s, pid = a.start("/bin/sh", "-c", parent.own_dir_sh() +
                     'cd "$d" && mkdir $(seq -f g%g 4200) && echo "$d"')
    msgs, _ = s.collect()
    assert end_of(msgs)["exitCode"] == 0, msgs
    own = output(msgs).decode().strip()
    wait_until(lambda: not os.path.exists(own), "its cgroup and the 4200 below to be removed", timeout=WAIT)
    rc, err = a.stop()
    assert rc == 0, err
    told = [line for line in err.splitlines() if own in line]
    assert len(told) == 1 and ("more than 4096 groups" in told[0] or "took more than" in told[0]), err


# ---- the agents' directories: killed agents', running agents' ----------------------

def start_in_group(a, parent, d, name, then=""):
    """Start a root shell that writes its own group's directory to d/name,
    runs `then` there ($d) and becomes `sleep 300`: (its pid, the group)."""
    s, pid = a.start("/bin/sh", "-c", parent.own_dir_sh() + then +
                     'echo "$d" > {p}.tmp && mv {p}.tmp {p} && exec sleep 300'.format(p=os.path.join(d, name)))
    return pid, read_when_written(os.path.join(d, name)).strip()


def kill_and_wait(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    wait_until(lambda: not alive(pid), "process %d to die" % pid, timeout=WAIT)


def test_a_killed_agents_empty_groups_are_reclaimed(agent, parent, kind, tmp_path, serve):
    # Agent A is killed by SIGKILL (a runtime's kill, the OOM killer) with
    # two processes running, one of which made two empty groups below its
    # own. The next agent in the same place removes what A left empty; the
    # group with a member stays, and so does its member; the one after that,
    # once the member is gone, the rest.
    a = agent_in(agent, parent, kind)
    leaders = []
    try:
        p1, own1 = start_in_group(a, parent, tmp_path, "one", then='mkdir -p "$d/l1/l2" && ')
        leaders.append(p1)
        p2, own2 = start_in_group(a, parent, tmp_path, "two")
        leaders.append(p2)
        base = os.path.dirname(own1)
        assert bases(parent) == [os.path.basename(base)] and os.path.dirname(own2) == base
        a.proc.kill()
        a.proc.wait(WAIT)
        kill_and_wait(p2)  # its group is empty now
        assert os.path.isdir(own2) and os.path.isdir(own1 + "/l1/l2"), "A removed them itself"

        b = serve()
        assert not os.path.exists(own2), "the next agent left a killed agent's empty group"
        assert not os.path.exists(own1 + "/l1"), "the next agent left a killed agent's empty groups"
        assert os.path.isdir(own1) and alive(p1), "a group with a member was taken"
        assert len(bases(parent)) == 2

        kill_and_wait(p1)
        serve()
        assert not os.path.exists(base), "a killed agent's directory left when empty"
        assert len(bases(parent)) == 2
        # The agents that reclaimed work as before.
        q, own = start_in_group(b, parent, tmp_path, "three")
        leaders.append(q)
        assert os.path.dirname(os.path.dirname(own)) == parent.dir
    finally:
        for pid in leaders:
            kill_and_wait(pid)
        a.stop()


def test_names_taken_by_earlier_agents_never_leave_one_without_cgroups(agent, parent, kind, tmp_path):
    # Agents before this scheme named their directory after their pid, with
    # ".1" to ".99" after it when taken: as PID 1 in a container, 100 of
    # them killed left the next one no name. Those (pid 1: ours now, and so
    # possibly another namespace's running agent) stay; a directory named as
    # now, locked (a running agent holds it), stays; one unlocked whose
    # maker is not running goes.
    made = ["sandbox-agent-1"] + ["sandbox-agent-1.%d" % i for i in range(1, 100)]
    held, stale = "sandbox-agent-2-1", "sandbox-agent-3-1"
    for n in made + [held, stale]:
        os.mkdir(os.path.join(parent.dir, n))
    fd = os.open(os.path.join(parent.dir, held), os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    a = agent_in(agent, parent, kind, wrap=UNSHARE)
    try:
        s, pid = a.start("/bin/cat", "/proc/self/cgroup")
        msgs, _ = s.collect()
        found = cgroups.agent_group(output(msgs).decode())
        assert found, "the process got no cgroup: %s" % a.stderr()
        own = os.path.dirname(found[1])
        assert os.path.dirname(own) == parent.dir and os.path.basename(own) not in made + [held], own
        assert not os.path.exists(os.path.join(parent.dir, stale)), "a stale directory was left"
        assert os.path.isdir(os.path.join(parent.dir, held)), "a locked directory was taken"
        assert all(os.path.isdir(os.path.join(parent.dir, n)) for n in made)
    finally:
        os.close(fd)
        os.kill(agent_pid(a.proc, True), signal.SIGTERM)  # unshare does not pass it on
        a.proc.wait(WAIT)
        rc, err = a.stop()
    assert rc == 0, err
    assert sorted(bases(parent)) == sorted(made + [held])


def test_a_running_agents_directory_is_never_taken(serve, parent, tmp_path):
    # Two agents in the same group: the second one's start leaves the first
    # one's directory, empty as it is, and both keep making groups.
    a = serve()
    (base_a,) = bases(parent)
    b = serve()
    assert base_a in bases(parent) and len(bases(parent)) == 2
    pa, own_a = start_in_group(a, parent, tmp_path, "a")
    pb, own_b = start_in_group(b, parent, tmp_path, "b")
    try:
        assert os.path.dirname(own_a) == os.path.join(parent.dir, base_a)
        assert os.path.dirname(own_b) != os.path.dirname(own_a)
    finally:
        kill_and_wait(pa)
        kill_and_wait(pb)
