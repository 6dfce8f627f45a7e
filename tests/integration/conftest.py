"""Shared fixtures for the black-box tests.

The binary under test comes from $SANDBOX_AGENT (tests/run.sh sets it: the
static build, then the sanitizer build). Tests drive it only through argv,
environment, stdin/stdout/stderr and the filesystem, as a host SDK would.
The helpers every suite shares live in tests/lib (testlib.py and the
clients); this file makes tests/lib importable and re-exports the common
names for the tests of this folder.
"""
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from testlib import (AGENT, PY, RESULT_SENTINEL, ROOT, TIMEOUT, agent_pid, alive, children,  # noqa: F401,E402
                     clean_env, descendants, free_port, one_sentinel, proc_state, proc_stats,
                     sentinels, started_agents, stat_fields, vm_hwm_kib, wait_until, zombies_of)



@pytest.fixture(scope="session")
def agent():
    if not os.access(AGENT, os.X_OK):
        pytest.fail("no agent binary at %s (run make first)" % AGENT)
    return AGENT


@pytest.fixture(scope="session")
def agent_anyone(agent):
    """The agent at a path every user can run: a test that starts it as
    nobody must not depend on where the checkout is (under /root, only root
    can reach it)."""
    d = tempfile.mkdtemp(prefix="sbx-agent-", dir="/tmp")
    os.chmod(d, 0o755)
    p = os.path.join(d, os.path.basename(agent))
    shutil.copy2(agent, p)
    os.chmod(p, 0o755)
    yield p
    shutil.rmtree(d, ignore_errors=True)


