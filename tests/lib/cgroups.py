"""What the machine's cgroups look like to the tests (README "sandbox-agent
serve": what a process started goes with it), found on its own, never
through the agent: whether a root process may make a cgroup under its own
(v2, or a v1 freezer or pids hierarchy), and where the group a
/proc/PID/cgroup line names lives as a directory.
"""
import os

AGENT_DIR = "sandbox-agent-"  # the agent's directory under its own group


def _mounts():
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
    for fstype, opts, root, mnt in _mounts():
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


def agent_group(cgroup_text):
    """(line, directory) of the agent's group for a process in the text of
    its /proc/PID/cgroup, or None when it is in none of the agent's."""
    for line in cgroup_text.splitlines():
        if "/" + AGENT_DIR in line:
            return line, dir_of(line)
    return None
