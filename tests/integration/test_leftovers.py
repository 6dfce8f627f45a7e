"""What a job leaves behind, before the webhook (README "PID 1 duties": Prompt
report): as PID 1, the leftovers are reaped before the helper is forked, so a
job that kept the process table full cannot make the fork fail; and a fork
that fails for want of a slot is retried within the webhook's budget. (As a
subreaper the leftovers live on, like tini's: that they cannot read the
nonce from the https:// webhook's helper is test_webhook_tls.py's.)"""
import os
import pathlib
import resource
import shutil
import signal
import tempfile
import textwrap
import time

import pytest

from conftest import PY, one_sentinel
from jobs import run
from reports import Hook, hook_server, result_env, tmp  # noqa: F401  (fixtures)

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]


# ------------------------------------------- a full process table ---------

# Forks until the table is full; every process keeps forking into each slot
# that frees up (spinning: the job's own slot is taken again the moment the
# agent reaps it), until `hold` seconds from the start (0: forever). The job
# writes a result of nearly 1 MiB (reading and printing it gives the
# fillers time to take the job's slot before the agent forks), prints "full"
# and exits, leaving them.
FILLER = textwrap.dedent("""
    import errno, os, sys, time
    hold = float(sys.argv[1])
    end = time.monotonic() + hold if hold else None
    def fill():
        while end is None or time.monotonic() < end:
            try:
                if os.fork() == 0:
                    continue
            except BlockingIOError:
                os.sched_yield()
        os._exit(0)
    if os.fork() == 0:
        fill()
    while True:
        try:
            pid = os.fork()
        except BlockingIOError:
            break
        if pid == 0:
            fill()
    with open(os.environ["SANDBOX_RESULT"], "w") as f:
        f.write('{"pad": "%s"}' % ("x" * 1000000))
    print("full", flush=True)
""")


@pytest.fixture
def nobody_tmp():
    """A directory uid 65534 can reach (pytest's tmp_path has 0700 parents)."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="sa-leftovers-"))
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def nproc_limit(extra):
    """RLIMIT_NPROC that leaves `extra` processes to uid 65534 beyond what it runs now."""
    now = sum(1 for d in os.listdir("/proc") if d.isdigit() and os.path.exists("/proc/" + d)
              and os.stat("/proc/" + d).st_uid == 65534)
    n = now + extra
    return lambda: resource.setrlimit(resource.RLIMIT_NPROC, (n, n))


def kill_uid_65534_marked(marker):
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if marker.encode() in open("/proc/%s/cmdline" % d, "rb").read():
                os.kill(int(d), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass


def test_webhook_after_a_job_that_filled_the_process_table_pid1(nobody_tmp, hook_server):
    # As PID 1 the agent SIGKILLs what is left, then forks the webhook
    # helper: unreaped, the killed still hold their slots (EAGAIN).
    env = result_env(nobody_tmp, SANDBOX_JOB_WEBHOOK="http://127.0.0.1:%d/" % hook_server.server_address[1])
    marker = "filler-pid1-%d" % os.getpid()
    try:
        r = run([PY, "-c", FILLER, "0", marker], True, env, wrap=NOBODY, preexec_fn=nproc_limit(12))
        assert r.returncode == 0, r.stderr
        assert b"full" in r.stdout
        assert one_sentinel(r.stdout)["result"]["pad"] == "x" * 1000000, r.stderr
        assert len(Hook.received) == 1, r.stderr
    finally:
        kill_uid_65534_marked(marker)


def test_webhook_fork_retried_while_the_table_is_full(nobody_tmp, hook_server):
    # As a subreaper the leftovers keep the table full for 1.5 s after the
    # job started: the helper's fork is retried until a slot frees.
    env = result_env(nobody_tmp, SANDBOX_JOB_WEBHOOK="http://127.0.0.1:%d/" % hook_server.server_address[1])
    marker = "filler-child-%d" % os.getpid()
    try:
        t0 = time.monotonic()
        r = run([PY, "-c", FILLER, "1.5", marker], False, env, wrap=NOBODY, preexec_fn=nproc_limit(12))
        elapsed = time.monotonic() - t0
        assert r.returncode == 0, r.stderr
        assert b"full" in r.stdout
        assert len(Hook.received) == 1, r.stderr
        assert elapsed < 12, elapsed  # within the webhook's budget
    finally:
        kill_uid_65534_marked(marker)
