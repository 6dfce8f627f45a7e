"""What the machine's cgroups look like to the tests (README "sandbox-agent
serve": what a process started goes with it), found on its own, never
through the agent: whether a root process may make a cgroup under its own
(v2, or a v1 freezer or pids hierarchy), and where the group a
/proc/PID/cgroup line names lives as a directory; and cgroups the tests
make for themselves with a memory limit or a CPU quota (MemoryCgroup,
CpuCgroup), or none, for an agent to make its groups in (AgentCgroup).
Each one's close() kills, by pid, what is left in it and in every group
below it, and removes them all, the deepest first.
"""
import os
import signal
import time

AGENT_DIR = "sandbox-agent-"  # the agent's directory under its own group


def cgroup_mounts():
    """(fstype, superoptions, root, mount point) of every cgroup mount."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            a, b = left.split(), right.split()
            if b[0] in ("cgroup", "cgroup2"):
                dec = lambda s: s.encode().decode("unicode_escape")
                out.append((b[0], b[2].split(","), dec(a[3]), dec(a[4])))
    return out


def dir_of(line):
    """The directory of the group a /proc/PID/cgroup line names, or None
    when no mount reaches it."""
    hid, ctls, path = line.strip().split(":", 2)
    for fstype, opts, root, mnt in cgroup_mounts():
        if hid == "0" and ctls == "" and fstype != "cgroup2":
            continue
        if not (hid == "0" and ctls == "") and (fstype != "cgroup" or not set(ctls.split(",")) & set(opts)):
            continue
        if root != "/" and not (path == root or path.startswith(root + "/")):
            continue
        below = path[len(root):] if root != "/" else path
        return mnt + (below if below != "/" else "")
    return None


def _own_line(kind):
    """This process's line of /proc/self/cgroup for kind: "v2", "freezer", "pids"."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            hid, ctls, _ = line.strip().split(":", 2)
            if kind == "v2" and hid == "0" and ctls == "":
                return line
            if kind != "v2" and kind in ctls.split(","):
                return line
    return None


def why_not(kind):
    """None when this machine lets the tests (root) make a cgroup of kind
    ("v2", or "v1": a freezer or pids hierarchy) under their own, else why
    not: the reason a cgroup test is skipped with."""
    if os.geteuid() != 0:
        return "not root: no cgroup may be made"
    reasons = []
    for k in (["v2"] if kind == "v2" else ["freezer", "pids"]):
        line = _own_line(k)
        own = dir_of(line) if line else None
        if own is None:
            reasons.append("no %s hierarchy reaches our group" % k)
            continue
        probe = os.path.join(own, "sa-test-probe-%d" % os.getpid())
        try:
            os.mkdir(probe)
            os.rmdir(probe)
            return None
        except OSError as e:
            reasons.append("cannot make a cgroup in %s: %s" % (own, e.strerror))
    return "; ".join(reasons)


def mount_of(kind):
    """(root, mount point) of the first mount of kind's hierarchy ("v2",
    or a v1 controller), or None."""
    for fstype, opts, root, mnt in cgroup_mounts():
        if (fstype == "cgroup2") if kind == "v2" else (fstype == "cgroup" and kind in opts):
            return root, mnt
    return None


def agent_group(cgroup_text):
    """(line, directory) of the agent's group for a process in the text of
    its /proc/PID/cgroup, or None when it is in none of the agent's."""
    for line in cgroup_text.splitlines():
        if "/" + AGENT_DIR in line:
            return line, dir_of(line)
    return None


# ---- cgroups of the test's own (test_oom.py, test_serve_ops.py) -------------------

class TestCgroup:
    """A cgroup made under the test's own group, v2 where the test's v2
    group offers the controller, else the v1 hierarchy of CONTROLLER, with
    the limit _limit writes. `wrap` is the argv prefix that puts only the
    process it execs (the agent) in it: its children inherit it. `why` says
    why none can be made (skip with it); close() kills what is left in it
    and below it (bounded) and removes it all."""

    seq = 0
    CONTROLLER = None
    V2_FILE = None
    KINDS = None  # the hierarchies tried, in order: ("v2", CONTROLLER) unless set

    def __init__(self):
        self.dir, self.kind, self.why = None, None, None
        if os.geteuid() != 0:
            self.why = "not root: no cgroup may be made"
            return
        reasons = []
        for kind in self.KINDS or ("v2", self.CONTROLLER):
            try:
                self._make(kind)
                return
            except OSError as e:
                reasons.append("%s: %s" % (kind, e))
                self._remove()
                self.dir = None
        self.why = "no %s cgroup can be made here: %s" % (self.CONTROLLER, "; ".join(reasons))

    def _make(self, kind):
        line = _own_line(kind)
        own = dir_of(line) if line else None
        if own is None:
            raise OSError("no such hierarchy reaches our group")
        TestCgroup.seq += 1
        self.dir = os.path.join(own, "sa-test-%s-%d-%d" % (self.CONTROLLER, os.getpid(), TestCgroup.seq))
        os.mkdir(self.dir)
        self.kind = kind
        if kind == "v2" and not os.path.exists(os.path.join(self.dir, self.V2_FILE)):
            raise OSError("the %s controller is not enabled below %s" % (self.CONTROLLER, own))
        self._limit(kind)

    def _write(self, name, value):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write("%s\n" % value)

    def _has(self, name):
        return os.path.exists(os.path.join(self.dir, name))

    @property
    def wrap(self):
        """argv before the agent's: sh joins the group (0: itself), then execs it."""
        return ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', os.path.join(self.dir, "cgroup.procs")]

    def groups(self):
        """Its directory and every group below it, the deepest first."""
        if not self.dir or not os.path.isdir(self.dir):
            return []
        return [d for d, _, _ in os.walk(self.dir, topdown=False)]

    def members(self):
        """The pids of its members and of every group's below it."""
        pids = []
        for d in self.groups():
            try:
                with open(os.path.join(d, "cgroup.procs")) as f:
                    pids += [int(x) for x in f.read().split()]
            except OSError:
                pass
        return pids

    def _thaw(self):
        """Thaw every group a workload froze (a frozen v1 member holds its
        SIGKILL until then)."""
        for d in self.groups():
            for name, value in (("freezer.state", "THAWED"), ("cgroup.freeze", "0")):
                try:
                    self._write_at(d, name, value)
                except OSError:
                    pass

    @staticmethod
    def _write_at(d, name, value):
        with open(os.path.join(d, name), "w") as f:
            f.write("%s\n" % value)

    def _remove(self):
        for d in self.groups():
            try:
                os.rmdir(d)
            except OSError:
                pass

    def close(self, timeout=10):
        """Kill what is left in it and below it (only ever the test's own
        processes), wait until all is empty (bounded), remove every group,
        the deepest first."""
        if not self.dir:
            return
        end = time.monotonic() + timeout
        self._thaw()
        while self.members() and time.monotonic() < end:
            for pid in self.members():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)  # the killed leave the group; bounded by timeout
        self._remove()
        assert not os.path.isdir(self.dir), "cgroup %s could not be removed" % self.dir


class AgentCgroup(TestCgroup):
    """A cgroup without limits for an agent to run in (wrap), of kind "v2" or
    "v1" (a freezer hierarchy, else pids: the one SANDBOX_AGENT_CGROUPS=v1
    picks first), so that the agent makes its groups where no other agent
    does, and whatever its processes leave there is the test's to end.
    `own` is the hierarchy used: "v2", "freezer" or "pids"."""

    V2_FILE = "cgroup.procs"

    def __init__(self, kind):
        self.CONTROLLER = "agent-" + kind
        self.KINDS = ("v2",) if kind == "v2" else ("freezer", "pids")
        super().__init__()

    def _limit(self, kind):
        pass

    def own_dir_sh(self):
        """Shell code that sets $d to the directory of the running shell's
        own group of this hierarchy (as /proc/self/cgroup names it)."""
        root, mnt = mount_of(self.kind)
        root = "" if root == "/" else root
        if self.kind == "v2":
            sel = '$1 == "0" && $2 == ""'
        else:
            sel = 'index("," $2 ",", ",%s,")' % self.kind
        return ("p=$(awk -F: '%s {print $3}' /proc/self/cgroup); d='%s'\"${p#'%s'}\"; "
                'test -d "$d" || exit 99; ' % (sel, mnt, root))

class MemoryCgroup(TestCgroup):
    """A memory cgroup of `limit` bytes and no swap."""

    CONTROLLER, V2_FILE = "memory", "memory.max"

    def __init__(self, limit):
        self.limit = limit
        super().__init__()

    def _limit(self, kind):
        if kind == "v2":
            self._write("memory.max", self.limit)
            if self._has("memory.swap.max"):
                self._write("memory.swap.max", 0)
        else:
            self._write("memory.limit_in_bytes", self.limit)
            if self._has("memory.memsw.limit_in_bytes"):
                self._write("memory.memsw.limit_in_bytes", self.limit)

    def oom_kills(self):
        """The group's OOM-kill count as the kernel keeps it."""
        name = "memory.events" if self.kind == "v2" else "memory.oom_control"
        with open(os.path.join(self.dir, name)) as f:
            for line in f:
                k, v = line.split()
                if k == "oom_kill":
                    return int(v)
        raise AssertionError("no oom_kill in " + name)


class CpuCgroup(TestCgroup):
    """A CPU cgroup with a quota of `quota` microseconds per `period`."""

    CONTROLLER, V2_FILE = "cpu", "cpu.max"

    def __init__(self, quota, period):
        self.quota, self.period = quota, period
        super().__init__()

    def _limit(self, kind):
        if kind == "v2":
            self._write("cpu.max", "%d %d" % (self.quota, self.period))
        else:
            self._write("cpu.cfs_period_us", self.period)
            self._write("cpu.cfs_quota_us", self.quota)
