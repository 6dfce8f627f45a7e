"""Signals through the supervisor (run), beyond forwarding itself
(test_run.py): nothing coalesced that the kernel queues, the signal state
the agent was started with reaching the job, rewriting, and closed std fds."""
import os
import signal
import subprocess

import pytest

from conftest import AGENT, PY, TIMEOUT, clean_env
from jobs import Job, py

HERE = os.path.dirname(os.path.abspath(__file__))
WL = os.path.join(HERE, "workloads")
MODES = [True, False]
LIBC_RESERVED = sum(1 << (s - 1) for s in (32, 33, 34))   # as bits of a /proc mask


@pytest.fixture
def env(tmp_path):
    return lambda **kw: clean_env(SANDBOX_RESULT=str(tmp_path / "result.json"), **kw)


@pytest.mark.parametrize("pid1", MODES)
def test_realtime_burst_not_coalesced(pid1, env):
    j = Job([PY, os.path.join(WL, "rtcount.py")], pid1=pid1, env=env())
    try:
        j.wait_text("ready")
        pid = j.agent_pid()
        for _ in range(500):
            os.kill(pid, signal.SIGRTMIN + 6)
        os.kill(pid, signal.SIGRTMIN + 7)
        line = j.wait_text("count ")
        assert line.strip() == b"count 500"
        assert j.finish() == 0
    finally:
        j.kill()


def _mask_line(text, field):
    for line in text.splitlines():
        if line.startswith(field):
            return int(line.split()[1], 16)
    raise AssertionError("no %s in %r" % (field, text))


def _started_with(hup_ignored, usr2_blocked):
    def pre():
        if hup_ignored:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
        if usr2_blocked:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
    return pre


@pytest.mark.parametrize("pid1", MODES)
def test_job_inherits_start_up_ignores_and_mask(pid1, env):
    # nohup / trap '' HUP in front of the agent must keep protecting the job,
    # as it would without the agent (tini and catatonit pass them on); what
    # the agent itself ignores (SIGPIPE) or blocks (what it catches) must not.
    j = Job(["cat", "/proc/self/status"], pid1=pid1, env=env(), preexec_fn=_started_with(True, True))
    assert j.finish() == 0
    status = bytes(j.out).decode()
    ign, blk = _mask_line(status, "SigIgn:"), _mask_line(status, "SigBlk:")
    bit = lambda s: 1 << (s - 1)
    assert ign & bit(signal.SIGHUP), hex(ign)
    assert not ign & bit(signal.SIGPIPE), hex(ign)
    assert blk & bit(signal.SIGUSR2), hex(blk)
    assert not blk & bit(signal.SIGTERM), hex(blk)
    assert not blk & bit(signal.SIGRTMIN), hex(blk)


def test_job_without_start_up_ignores_gets_defaults(env):
    j = Job(["cat", "/proc/self/status"], pid1=False, env=env())
    assert j.finish() == 0
    status = bytes(j.out).decode()
    # Signals 32 to 34 belong to the C library and no program can set them:
    # glibc's posix_spawn (GNU make's, so under `make test`) starts its child
    # with 32 and 33 ignored, and that survives exec through to the job.
    assert _mask_line(status, "SigIgn:") & ~LIBC_RESERVED == 0
    assert _mask_line(status, "SigBlk:") == 0


@pytest.mark.parametrize("pid1", MODES)
def test_rewrite_term_to_quit_keeps_the_grace(pid1, env):
    # 15:3 is how nginx and gunicorn get a graceful stop from `docker stop`.
    j = Job([PY, os.path.join(WL, "sigreport.py")], pid1=pid1,
            env=env(SANDBOX_AGENT_SIGNAL_REWRITE="15:3, SIGUSR1:0", SANDBOX_AGENT_GRACE_SECONDS="1"))
    try:
        j.wait_text("ready")
        j.signal(signal.SIGUSR1)   # dropped
        j.signal(signal.SIGUSR2)   # passed on as it is
        j.wait_text("child got %d\n" % signal.SIGUSR2)
        j.signal(signal.SIGTERM)
        j.wait_text("child got %d\n" % signal.SIGQUIT)
        j.wait_text("grand got %d\n" % signal.SIGQUIT)
        # sigreport survives SIGQUIT: the grace period still ends it.
        assert j.finish() == 137
        out = bytes(j.out)
        assert b"got %d\n" % signal.SIGUSR1 not in out
        assert b"got %d\n" % signal.SIGTERM not in out
    finally:
        j.kill()


@pytest.mark.parametrize("value", ["15", "15:", "x:3", "9:1", "15:99", "17:1", "1:17", "15:3,,STOP:1"])
def test_rewrite_bad_value_is_a_usage_error(value, env):
    p = subprocess.run([AGENT, "run", "--", "true"], env=env(SANDBOX_AGENT_SIGNAL_REWRITE=value),
                       capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 2
    assert b"SANDBOX_AGENT_SIGNAL_REWRITE" in p.stderr
    assert b"__SANDBOX_RESULT__" not in p.stdout


@pytest.mark.parametrize("pid1", MODES)
@pytest.mark.parametrize("closed", ["0<&-", ">&-", "2>&-", "<&- >&- 2>&-"])
def test_closed_std_fds(pid1, closed, tmp_path):
    # A closed fd 0-2 must not become one of the agent's own fds: before the
    # fix, `run -- echo hi >&-` relayed the job's output into the epoll fd
    # ("Invalid argument"), and as PID 1 died on a libev assertion (139).
    res = tmp_path / "r.json"
    wrap = "unshare --pid --fork --mount-proc " if pid1 else ""
    script = 'SANDBOX_RESULT=%s exec %s"$0" run -- sh -c "echo hi; exit 7" %s' % (res, wrap, closed)
    p = subprocess.run(["sh", "-c", script, AGENT], env=clean_env(), capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 7, p.stderr
    assert b"Invalid argument" not in p.stderr
    if ">&-" not in closed:
        assert p.stdout.startswith(b"hi\n__SANDBOX_RESULT__")
