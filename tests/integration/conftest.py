"""Shared fixtures for the black-box tests.

The binary under test comes from $SANDBOX_AGENT (tests/run.sh sets it: the
static build, then the sanitizer build). Tests drive it only through argv,
environment, stdin/stdout/stderr and the filesystem, as a host SDK would.
"""
import base64
import json
import os
import socket
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
AGENT = os.path.abspath(os.environ.get("SANDBOX_AGENT", os.path.join(ROOT, "build", "sandbox-agent")))
PY = "/usr/bin/python3"
RESULT_SENTINEL = "__SANDBOX_RESULT__"

# Generous ceilings for a loaded 2-core machine: a test that hits one has hung.
TIMEOUT = 60


@pytest.fixture(scope="session")
def agent():
    if not os.access(AGENT, os.X_OK):
        pytest.fail("no agent binary at %s (run make first)" % AGENT)
    return AGENT


def clean_env(**extra):
    """A minimal environment: nothing from the test runner leaks into a job."""
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
    # Keep the sanitizer's options so the ASan build reports, not aborts oddly.
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def sentinels(stdout: bytes):
    """Every sentinel line of stdout, decoded. Asserts each starts a line."""
    out = []
    for line in stdout.split(b"\n"):
        if RESULT_SENTINEL.encode() in line:
            assert line.startswith(RESULT_SENTINEL.encode()), "sentinel not at line start: %r" % line[:80]
            payload = line[len(RESULT_SENTINEL):]
            out.append(json.loads(base64.b64decode(payload, validate=True)))
    return out


def one_sentinel(stdout: bytes):
    s = sentinels(stdout)
    assert len(s) == 1, "expected exactly one sentinel, got %d in %r" % (len(s), stdout[-400:])
    return s[0]


# ---- processes, as the tests look at them through /proc ----------------------

def children(pid):
    """The pids of pid's children (its main thread's), as strings; [] once it is gone."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return f.read().split()
    except OSError:
        return []


def descendants(pid):
    """Every process below pid (through each one's main thread), as ints."""
    out, todo = [], [pid]
    while todo:
        for k in children(todo.pop()):
            out.append(int(k))
            todo.append(int(k))
    return out


def wait_until(pred, what, timeout=TIMEOUT, interval=0.01):
    """Poll pred() until it is true; for state that has no event to wait on
    (/proc, a file a child writes). Fails naming `what` after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(interval)


def agent_pid(p, pid1):
    """Host pid of the agent started as Popen p: unshare's child when PID 1,
    else the process itself."""
    if not pid1:
        return p.pid
    kids = wait_until(lambda: children(p.pid), "the agent to start under unshare")
    return int(kids[0])


def proc_state(pid):
    """The state letter of /proc/PID/stat ('R', 'S', 'Z', ...), or None when gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def alive(pid):
    """True while pid runs (a zombie counts as gone)."""
    return proc_state(pid) not in (None, "Z")


def zombies_of(pid):
    """The zombies whose parent is pid."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == pid:
            out.append(int(d))
    return out


def vm_hwm_kib(pid):
    """Peak resident memory of pid so far, in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM for %d" % pid)


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
