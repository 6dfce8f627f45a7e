"""Helpers the black-box tests (tests/integration), the SDK suite (tests/sdk)
and the benchmarks (tests/bench) share: the environment a job starts with, a
free loopback port, and what /proc says of a process.

A plain module rather than conftest.py: pytest loads each folder's
conftest.py as a plugin, so tests/sdk and tests/bench import this file
(tests/integration appended to sys.path) and never tests/integration's
conftest.py, which imports from here and re-exports these names.
"""
import os
import socket


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
