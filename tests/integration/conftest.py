"""Shared fixtures for the black-box tests.

The binary under test comes from $SANDBOX_AGENT (tests/run.sh sets it: the
static build, then the sanitizer build). Tests drive it only through argv,
environment, stdin/stdout/stderr and the filesystem, as a host SDK would.
"""
import base64
import json
import os
import subprocess
import sys

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
