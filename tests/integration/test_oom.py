"""Why a process died (README "Why a process died"), for real: a memory
cgroup made for the test (cgroups.MemoryCgroup: v2 or v1, whichever this
machine lets root make; skipped with the reason where neither), the agent
alone put in it (its children inherit it), and a process allocating past
the limit. The kernel's OOM killer ends it: serve's end event says so
(`error` "signal: killed (out of memory)", `"oomKilled": true`), run's
sentinel and webhook carry `"oom_killed": true` after the nonce, exec's
line too; a SIGKILL the agent sends itself (SendSignal, a timeout's or a
stop's grace) never says out of memory, even with the cgroup's count risen
meanwhile; and the agent survives every one of them. Then the agent's own
oom_score_adj (README "The agent and the OOM killer").
"""
import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile

import pytest

from cgroups import MemoryCgroup
from conftest import AGENT, PY, RESULT_SENTINEL, TIMEOUT, clean_env, started_agents
from connectc import ServeAgent, end_of, output
from jobs import Job, run
from reports import Hook, hook, hook_server  # noqa: F401  (fixtures)

LIMIT = 64 << 20
# Past the limit at once: the OOM killer's, never a MemoryError of Python's.
HOG = "b = bytearray(256 << 20)"
SEND_SIGNAL = "process.Process/SendSignal"


@pytest.fixture
def memcg():
    cg = MemoryCgroup(LIMIT)
    if cg.why:
        pytest.skip(cg.why)
    yield cg
    cg.close()


@pytest.fixture
def serve_in(agent, memcg):
    """serve in the test's memory cgroup (its own process only)."""
    yield from started_agents(lambda **env: ServeAgent(agent, wrap=memcg.wrap, **env))


def hog_argv():
    return [PY, "-c", HOG]


def core_text(stdout):
    """The sentinel's core as the agent wrote it (the key order is the contract's)."""
    lines = [l for l in stdout.split(b"\n") if l.startswith(RESULT_SENTINEL.encode())]
    assert len(lines) == 1, stdout
    return base64.b64decode(lines[0][len(RESULT_SENTINEL):]).decode()


# ---- serve ---------------------------------------------------------------------

def test_serve_end_event_says_out_of_memory(serve_in, memcg):
    a = serve_in()
    before = memcg.oom_kills()
    s, pid = a.start(PY, "-c", HOG)
    msgs, last = s.collect()
    assert last == {}
    assert end_of(msgs) == {"exitCode": -1, "exited": False, "status": "signal: killed",
                            "error": "signal: killed (out of memory)", "oomKilled": True}
    assert memcg.oom_kills() > before
    # The agent lived through it, and serves on.
    s, pid = a.start("/bin/sh", "-c", "echo alive")
    msgs, _ = s.collect()
    assert end_of(msgs) == {"exitCode": 0, "exited": True, "status": "exit status 0"}
    assert a.proc.poll() is None


def test_serve_sigkill_of_the_agent_is_not_out_of_memory(serve_in, memcg):
    """A sleeper lives through another process's OOM kill (the cgroup's
    count rises while it lives); then SendSignal SIGKILL ends it: the
    agent's own kill, not the OOM killer's."""
    a = serve_in()
    sleeper, spid = a.start("/bin/sleep", "60")
    s, _ = a.start(PY, "-c", HOG)
    msgs, _ = s.collect()
    assert end_of(msgs).get("oomKilled") is True
    r = a.unary(SEND_SIGNAL, {"process": {"pid": spid}, "signal": "SIGNAL_SIGKILL"})
    assert r.status == 200, r.body
    msgs, _ = sleeper.collect()
    assert end_of(msgs) == {"exitCode": -1, "exited": False, "status": "signal: killed",
                            "error": "signal: killed"}


def test_serve_timeout_kill_is_not_out_of_memory(serve_in, memcg):
    """A process that ignores SIGTERM, killed after the grace of its
    timeout, with an OOM kill counted meanwhile (it runs the hog itself)."""
    a = serve_in(SANDBOX_AGENT_GRACE_SECONDS="0.2")
    script = "trap '' TERM; %s -c '%s'; echo hogged; exec sleep 60" % (PY, HOG)
    s, pid = a.start("/bin/sh", "-c", script, msg={"timeout": 2})
    msgs, _ = s.collect()
    assert b"hogged" in output(msgs)
    assert end_of(msgs) == {"exitCode": -1, "exited": False, "status": "signal: killed",
                            "error": "signal: killed"}


# ---- run -----------------------------------------------------------------------

def test_run_sentinel_and_webhook_say_oom_killed(memcg, tmp_path, hook):
    env = clean_env(SANDBOX_JOB_NONCE="n0nce", SANDBOX_RESULT=str(tmp_path / "r" / "result.json"),
                    SANDBOX_JOB_WEBHOOK=hook, SANDBOX_JOB_ID="job-7")
    r = run(hog_argv(), pid1=False, env=env, wrap=memcg.wrap)
    assert r.returncode == 137, r.stderr
    text = core_text(r.stdout)
    # The key order is the contract's: status, exit_code, result, nonce, then oom_killed.
    assert text == ('{"status": "failed", "exit_code": 137, "result": {"exit_code": 137}, '
                    '"nonce": "n0nce", "oom_killed": true}')
    assert Hook.payloads() == [{"status": "failed", "exit_code": 137, "result": {"exit_code": 137},
                                "nonce": "n0nce", "oom_killed": True, "job_id": "job-7"}]
    assert b"OOM killer" in r.stderr


def test_run_stop_kill_is_not_oom_killed(memcg, tmp_path):
    """The job lives through its own child's OOM kill, ignores SIGTERM, and
    is SIGKILLed by the agent after the grace: no oom_killed."""
    env = clean_env(SANDBOX_JOB_NONCE="n", SANDBOX_RESULT=str(tmp_path / "r" / "result.json"),
                    SANDBOX_AGENT_GRACE_SECONDS="0.3")
    script = "trap '' TERM; %s -c '%s'; echo hogged; exec sleep 60" % (PY, HOG)
    before = memcg.oom_kills()
    j = Job(["/bin/sh", "-c", script], pid1=False, env=env, wrap=memcg.wrap)
    try:
        j.wait_text("hogged")
        assert memcg.oom_kills() > before
        j.signal(signal.SIGTERM)
        assert j.finish() == 137
    finally:
        if j.p.poll() is None:
            j.kill()
    assert j.sentinel() == {"status": "failed", "exit_code": 137, "result": {"exit_code": 137}, "nonce": "n"}


def test_run_plain_sigkill_is_not_oom_killed(memcg, tmp_path):
    env = clean_env(SANDBOX_JOB_NONCE="n", SANDBOX_RESULT=str(tmp_path / "r" / "result.json"))
    r = run(["/bin/sh", "-c", "kill -KILL $$"], pid1=False, env=env, wrap=memcg.wrap)
    assert r.returncode == 137
    assert core_text(r.stdout) == ('{"status": "failed", "exit_code": 137, "result": {"exit_code": 137}, '
                                   '"nonce": "n"}')


# ---- exec ----------------------------------------------------------------------

def exec_line(memcg, *argv):
    p = subprocess.run(memcg.wrap + [AGENT, "exec"] + list(argv),
                       env=clean_env(), capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr
    line = [l for l in p.stdout.split(b"\n") if l.startswith(b"__SBX_EXEC__")]
    assert len(line) == 1, p.stdout
    return line[0][len(b"__SBX_EXEC__"):].decode(), p


def test_exec_json_says_oom_killed(memcg):
    text, p = exec_line(memcg, "--", PY, "-c", HOG)
    r = json.loads(text)
    assert r["exit_code"] is None and r["signal"] == 9 and r["timed_out"] is False
    assert r["oom_killed"] is True
    assert list(r)[-1] == "oom_killed"  # last: every other key keeps its place
    text, p = exec_line(memcg, "--", "/bin/sh", "-c", "kill -KILL $$")
    assert "oom_killed" not in json.loads(text)


def test_exec_timeout_kill_is_not_oom_killed(memcg):
    script = "trap '' TERM; %s -c '%s'; exec sleep 60" % (PY, HOG)
    before = memcg.oom_kills()
    text, p = exec_line(memcg, "--timeout", "2", "--kill-after", "0.3", "--", "/bin/sh", "-c", script)
    r = json.loads(text)
    assert memcg.oom_kills() > before
    assert r["timed_out"] is True and r["signal"] == 9
    assert "oom_killed" not in r


# ---- the agent's own score ---------------------------------------------------------

def has_cap_sys_resource():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) & (1 << 24))
    return False


def score(pid):
    with open("/proc/%d/oom_score_adj" % pid) as f:
        return int(f.read())


def test_agent_takes_minus_1000_and_its_children_do_not(agent):
    if not has_cap_sys_resource():
        pytest.skip("no CAP_SYS_RESOURCE here (not in the bounding set): the agent cannot take -1000")
    start = score(os.getpid())
    a = ServeAgent(agent)
    try:
        assert score(a.pid) == -1000
        s, pid = a.start("/bin/cat", "/proc/self/oom_score_adj")
        msgs, _ = s.collect()
        assert output(msgs) == b"%d\n" % (start if start != -1000 else 0)
        assert score(a.pid) == -1000  # the child's write was its own
    finally:
        a.stop()


def test_agent_without_the_right_logs_once_and_children_keep_the_start_score(agent_anyone):
    """Where the agent may not take -1000 (no CAP_SYS_RESOURCE, here: a
    user without privilege), it says so once and changes nothing: its
    children get the score it was started with."""
    d = tempfile.mkdtemp(prefix="sa-oom-", dir="/tmp")
    os.chmod(d, 0o777)
    env = clean_env(SANDBOX_JOB_NONCE="n", SANDBOX_AGENT_LOG="info", SANDBOX_RESULT=os.path.join(d, "result.json"))
    wrap = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
            "/bin/sh", "-c", 'echo 300 > /proc/self/oom_score_adj && exec "$@"', "sh"]
    try:
        r = run(["/bin/sh", "-c", "cat /proc/self/oom_score_adj; cat /proc/$PPID/oom_score_adj"], pid1=False,
                env=env, wrap=wrap, agent=agent_anyone)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split(b"\n")[:2] == [b"300", b"300"]
    assert r.stderr.count(b"oom_score_adj") == 1, r.stderr
    assert b"cannot set /proc/self/oom_score_adj to -1000" in r.stderr
