"""Helpers every suite shares (tests/integration, tests/sdk, tests/container,
tests/bench): the binary under test, the environment a job starts with, a free
loopback port, sentinels, the body of a serve fixture, bounded waits, and what
/proc says of a process.

A plain module in tests/lib, which each suite's conftest.py (and bench.py)
puts first on sys.path; nothing here imports a suite's own files.
"""
import base64
import json
import os
import socket
import time


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # the checkout (tests/lib is two below)
AGENT = os.path.abspath(os.environ.get("SANDBOX_AGENT", os.path.join(ROOT, "build", "sandbox-agent")))
PY = "/usr/bin/python3"
RESULT_SENTINEL = "__SANDBOX_RESULT__"

# Generous ceilings for a loaded 2-core machine: a test that hits one has hung.
TIMEOUT = 60


def clean_env(**extra):
    """A minimal environment: nothing from the test runner leaks into a job.
    A None value leaves its variable out."""
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
    # Keep the sanitizer's options so the ASan build reports, not aborts oddly.
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children(pid):
    """The pids of pid's children (its main thread's); [] once it is gone."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def proc_status_kib(pid, field):
    """A size line of /proc/PID/status (VmRSS, VmHWM, ...), in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s for %d" % (field, pid))


def vm_hwm_kib(pid):
    """Peak resident memory of pid so far, in KiB."""
    return proc_status_kib(pid, "VmHWM")


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


def started_agents(make):
    """The body of a `serve` fixture: yields start(*a, **kw), which makes an
    agent with make(*a, **kw) (an object whose stop() ends it and returns
    (exit status, stderr text)) and keeps it; at the end stops every one,
    then checks each exited 0 with no sanitizer report."""
    started = []

    def start(*a, **kw):
        started.append(make(*a, **kw))
        return started[-1]

    yield start
    ended = [a.stop() for a in started]  # every one, before any check
    for rc, err in ended:
        assert rc == 0, err
        assert "AddressSanitizer" not in err and "runtime error" not in err, err


# ---- processes, as the tests look at them through /proc ----------------------

def descendants(pid):
    """Every process below pid (through each one's main thread), as ints."""
    out, todo = [], [pid]
    while todo:
        for k in children(todo.pop()):
            out.append(k)
            todo.append(k)
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
    return kids[0]


def stat_fields(pid):
    """The fields of /proc/PID/stat after the command name (state, ppid,
    pgrp, session, ...), or None when pid is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def proc_stats():
    """(pid, stat_fields(pid)) of every process there is."""
    for d in os.listdir("/proc"):
        if d.isdigit():
            fields = stat_fields(int(d))
            if fields is not None:
                yield int(d), fields


def proc_state(pid):
    """The state letter of /proc/PID/stat ('R', 'S', 'Z', ...), or None when gone."""
    fields = stat_fields(pid)
    return fields[0] if fields else None


def alive(pid):
    """True while pid runs (a zombie counts as gone)."""
    return proc_state(pid) not in (None, "Z")


def zombies_of(pid):
    """The zombies whose parent is pid."""
    return [p for p, fields in proc_stats() if fields[0] == "Z" and int(fields[1]) == pid]
