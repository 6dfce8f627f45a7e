"""`sandbox-agent session` (README "sandbox-agent session"): the errors the
agent answers itself, shutdown and PID 1, usage, and hardening (start-up
paths, the nonce, ids, a slow mailbox, a stalled stdout). The mailbox and the
handler: test_session.py; the client: tests/lib/sessionlib.py.
"""
import base64
import fcntl
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import AGENT, PY, TIMEOUT, agent_pid, clean_env, vm_hwm_kib, wait_until, zombies_of
from sessionlib import (HANDLER, HERE, HOSTILE, NONCE, REPLY_RE, UNSHARE, Session, error_code,  # noqa: F401
                        handler_starts, session)


# ---- agent-made errors ---------------------------------------------------------

def test_bad_requests(session):
    s = session(log="warn")
    s.append(b"garbage without id\n")
    s.append(b'{"id": "bad1", "method": "echo", "params": \n')      # not JSON, id readable
    s.append(b'{"id": "bad2", "timeout": -1}\n')                     # bad timeout
    s.append(b'{"id": "bad__3", "method": "echo"}\n')                # invalid id: no reply possible
    s.append(b'["id", "x"]\n')
    s.append(b'{"id": "' + b"a" * 129 + b'"}\n')
    s.append(b"\n   \n")
    s.call("good")
    assert error_code(s.reply("bad1")) == "bad_request"
    assert error_code(s.reply("bad2")) == "bad_request"
    assert set(s.replies) == {"bad1", "bad2", "good"}
    err = s.stderr()
    assert "garbage without id" in err and 'invalid \\"id\\"' not in err
    assert s.bad_lines == []


def test_too_large_line_bounded_memory_next_line_served(session):
    s = session(log="warn")
    s.call("warm")
    base_hwm = vm_hwm_kib(s.p.pid)
    head = b'{"id": "huge", "method": "echo", "params": "'
    chunk = b"z" * (1 << 20)
    fd = os.open(s.mailbox, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, head)
        for _ in range(20):  # 20 MiB, written in pieces like a slow host
            os.write(fd, chunk)
        os.write(fd, b'"}\n{"id": "next", "method": "echo", "params": "n"}\n')
    finally:
        os.close(fd)
    assert error_code(s.reply("huge")) == "too_large"
    assert s.reply("next")["result"]["params"] == "n"
    grew_mib = (vm_hwm_kib(s.p.pid) - base_hwm) / 1024
    # The line is never held whole: at most the 16 MiB bound and a chunk
    # (ASan's quarantine keeps the buffers realloc left behind: more slack).
    with open(AGENT, "rb") as f:
        asan = b"__asan_init" in f.read()
    assert grew_mib < (100 if asan else 24), grew_mib
    print("VmHWM growth for a 20 MiB line: %.1f MiB" % grew_mib)
    assert len(s.replies["huge"]) == 1


def test_timeout(session):
    s = session()
    t0 = time.monotonic()
    s.request("slow", "hold", timeout=0.3)
    r = s.reply("slow")
    assert error_code(r) == "timeout"
    assert time.monotonic() - t0 >= 0.3
    assert s.call("after")["result"]["params"] is None


def test_handler_exited_answers_each_in_flight_request(session):
    s = session(env={"SANDBOX_AGENT_RESTART_BASE_SECONDS": "0.05"})
    pid = s.call("p", "pid")["result"]
    for i in range(3):
        s.request("h%d" % i, "hold")
    s.call("sync")  # the handler has read the three holds (it answers in order)
    os.kill(pid, signal.SIGKILL)
    for i in range(3):
        assert error_code(s.reply("h%d" % i)) == "handler_exited"
    # Restarted: a new process answers.
    assert s.call("p2", "pid")["result"] != pid
    assert all(len(v) == 1 for v in s.replies.values())


def wait_file(pred, what, timeout=TIMEOUT):
    """Poll a file the handler writes (no pipe to wait on)."""
    wait_until(pred, what, timeout)


def test_restart_backoff_and_reset(session):
    s = session(env={"SANDBOX_AGENT_RESTART_BASE_SECONDS": "0.05"})
    gaps = []
    for k in range(4):
        pid = s.call("pid%d" % k, "pid")["result"]
        n = len(handler_starts(s.starts))
        t_kill = time.monotonic()  # the handler stamps its start with the same clock
        os.kill(pid, signal.SIGKILL)
        s.wait_err("restarting it in", k + 1)
        wait_file(lambda: len(handler_starts(s.starts)) > n, "restart %d" % (k + 1))
        gaps.append(handler_starts(s.starts)[-1][1] - t_kill)
    # base * 1, 4, 16 (0.05, 0.2, 0.8) and capped: each at least its step.
    assert gaps[1] >= 0.2 and gaps[2] >= 0.8 and gaps[3] >= 3.2, gaps
    assert "restarting it in 0.05 s" in s.stderr() and "restarting it in 3.2 s" in s.stderr()
    # After base * 60 = 3 s of healthy running the backoff starts over.
    pid = s.call("pid-h", "pid")["result"]
    time.sleep(3.2)  # the healthy period itself is what is being tested
    os.kill(pid, signal.SIGKILL)
    s.wait_err("restarting it in", 5)
    assert [l for l in s.err if "restarting it in" in l][-1].rstrip().endswith("restarting it in 0.05 s")


def test_requests_queued_while_down_then_delivered(session):
    s = session(env={"SANDBOX_AGENT_RESTART_BASE_SECONDS": "0.5"})
    pid = s.call("p", "pid")["result"]
    os.kill(pid, signal.SIGKILL)
    s.wait_err("restarting it in")
    for i in range(5):
        s.request("q%d" % i, "pid")
    for i in range(5):
        assert s.reply("q%d" % i)["result"] != pid


def test_queue_bounded_while_down(session):
    s = session(env={"SANDBOX_AGENT_RESTART_BASE_SECONDS": "1", "SANDBOX_AGENT_QUEUE_MAX": "2"})
    pid = s.call("p", "pid")["result"]
    os.kill(pid, signal.SIGKILL)
    s.wait_err("restarting it in")
    s.append(b"".join(b'{"id": "q%d", "method": "pid"}\n' % i for i in range(4)))
    assert error_code(s.reply("q2")) == "queue_full"
    assert error_code(s.reply("q3")) == "queue_full"
    assert s.reply("q0")["result"] != pid and s.reply("q1")["result"] != pid
    assert "request queue full" in s.stderr()


def test_burst_of_10000_from_concurrent_writers(session):
    s = session(log="warn")
    s.call("warm")
    writers, per = 4, 2500

    def writer(w):
        fd = os.open(s.mailbox, os.O_WRONLY | os.O_APPEND)
        try:
            for i in range(per):
                line = b'{"id": "b%d-%d", "method": "echo", "params": %d}\n' % (w, i, i)
                assert os.write(fd, line) == len(line)  # one write per line
        finally:
            os.close(fd)
    ts = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    s._wait(lambda: len(s.replies) == writers * per + 1, "10000 replies", timeout=120)
    assert s.stop() == 0
    assert len(s.order) == writers * per + 1  # none twice
    assert s.bad_lines == []
    for w in range(writers):
        assert s.replies["b%d-%d" % (w, per - 1)][0]["result"]["params"] == per - 1


# ---- shutdown, PID 1 -----------------------------------------------------------

def test_sigterm_lets_in_flight_finish_then_shutting_down(session):
    s = session(env={"SANDBOX_AGENT_GRACE_SECONDS": "2"})
    s.request("held", "hold")
    s.call("sync")  # answered in order: "held" has reached the handler
    s.request("slow", "sleep", 0.5)
    s.wait_err("session_handler: sleeping")
    t0 = time.monotonic()
    os.kill(s.agent_pid(), signal.SIGTERM)
    s.wait_err("shutting down")
    s.request("late", "echo")  # after SIGTERM: not read any more
    assert s.reply("slow")["result"] == "slept"
    assert error_code(s.reply("held")) == "shutting_down"
    assert s.wait() == 0
    assert time.monotonic() - t0 >= 1.5
    assert "late" not in s.replies


def test_sigterm_kills_stubborn_handler(session):
    s = session(env={"SANDBOX_AGENT_GRACE_SECONDS": "0.5", "SESSION_HANDLER_IGNORE_TERM": "1"})
    s.call("warm")
    t0 = time.monotonic()
    assert s.stop() == 0
    assert time.monotonic() - t0 < 10
    assert "sending SIGKILL" in s.stderr()


def test_sigterm_while_idle_is_quick(session):
    s = session()
    s.call("warm")
    t0 = time.monotonic()
    assert s.stop() == 0
    assert time.monotonic() - t0 < 3


def test_pid1_reaps_orphans_and_exits_zero(session):
    s = session(pid1=True)
    got = s.call("o", "orphans", 5)["result"]
    assert len(got) == 5
    apid = s.agent_pid()
    # The orphans exit 0.2 s after starting; as PID 1 the agent reaps them.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and zombies_of(apid):
        time.sleep(0.05)
    assert zombies_of(apid) == []
    assert s.stop() == 0


# ---- usage ----------------------------------------------------------------------

def test_usage_errors(agent, tmp_path):
    r = subprocess.run([agent, "session"], env=clean_env(), capture_output=True, timeout=TIMEOUT)
    assert r.returncode == 2 and b"no handler command" in r.stderr
    env = clean_env(SANDBOX_MAILBOX=str(tmp_path / "m"), SANDBOX_AGENT_RESTART_BASE_SECONDS="-1")
    r = subprocess.run([agent, "session", "--", "true"], env=env, capture_output=True, timeout=TIMEOUT)
    assert r.returncode == 2 and b"SANDBOX_AGENT_RESTART_BASE_SECONDS" in r.stderr
    env = clean_env(SANDBOX_MAILBOX=str(tmp_path / "m"))
    r = subprocess.run([agent, "session", "--", "/no/such/handler"], env=env, capture_output=True,
                       timeout=TIMEOUT)
    assert r.returncode == 127 and b"command not found" in r.stderr
    r = subprocess.run([agent, "session", "--help"], env=env, capture_output=True, timeout=TIMEOUT)
    assert r.returncode == 0 and b"SANDBOX_MAILBOX" in r.stdout


# ---- hardening: start-up paths, nonce, ids, slow mailbox, stalled stdout ----------

def run_agent(args, timeout=TIMEOUT, **env):
    """The agent run to its exit (the sanitizer build checks for leaks at exit)."""
    e = clean_env(**env)
    e["ASAN_OPTIONS"] = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "detect_leaks=1"]))
    return subprocess.run([AGENT] + args, env=e, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=timeout)


def test_every_early_exit_frees_what_it_made(agent, tmp_path):
    """Each way out before the loop runs: its exit code, and (with the
    sanitizer build) no leak report."""
    mb = str(tmp_path / "m")
    cases = [
        (["session"], {}, 2),
        (["session", "--help"], {}, 0),
        (["session", "--", "true"], {"SANDBOX_AGENT_QUEUE_MAX": "x"}, 2),
        (["session", "--", "/no/such/handler"], {"SANDBOX_MAILBOX": mb}, 127),
        (["session", "--", "cat"], {"SANDBOX_MAILBOX": str(tmp_path) + "/"}, 2),
    ]
    for args, env, code in cases:
        r = run_agent(args, SANDBOX_JOB_NONCE=NONCE, **env)
        assert b"LeakSanitizer" not in r.stderr, (args, env, r.stderr.decode()[-3000:])
        assert r.returncode == code, (args, env, r.returncode, r.stderr)


@pytest.mark.parametrize("nonce", ["a__b", "_ab", "ab_", "_", "a\nb", "a\rb", "a\x7fb", "caf\udcc3\udca9"])
def test_nonce_the_prefix_cannot_carry_is_refused(agent, tmp_path, nonce):
    starts = tmp_path / "starts.txt"
    r = run_agent(["session", "--", PY, HANDLER, str(starts)], timeout=20, SANDBOX_JOB_NONCE=nonce,
                  SANDBOX_MAILBOX=str(tmp_path / "m"))
    assert r.returncode == 2, r
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and b"SANDBOX_JOB_NONCE" in lines[0], r.stderr
    if len(nonce) > 1:
        assert os.fsencode(nonce) not in r.stderr  # the secret is never logged
    assert not starts.exists()  # refused before the handler was started


def test_ids_with_a_leading_or_trailing_underscore_are_refused(session):
    s = session()
    s.request("_lead")
    s.request("trail_")
    s.request("mid_dle")
    s.call("sync")  # read after the others, answered in order
    assert set(s.replies) == {"mid_dle", "sync"}
    assert s.stderr().count('line dropped (invalid "id"') == 2
    assert s.bad_lines == []


@pytest.mark.parametrize("tail", [b'\n{"id": "last", "method": "echo"}\n', b""])
def test_huge_sparse_mailbox_never_holds_the_loop(session, tmp_path, tail):
    """A mailbox with a 256 GiB hole (one endless line of NUL bytes): the agent
    reads it a slice per loop turn, so a request timeout is answered and
    SIGTERM ends it while the hole is still being read; the line after the
    hole is never reached (reading it all would take minutes)."""
    mb = tmp_path / "mailbox.jsonl"
    first = b'{"id": "first", "method": "hold", "timeout": 0.5}\n'
    with open(mb, "wb") as f:
        f.write(first)
        f.truncate(len(first) + (256 << 30))
        f.seek(0, os.SEEK_END)
        f.write(tail)
    s = session(mailbox=mb)
    # Served by its timer while the reader is deep in the hole.
    assert error_code(s.reply("first", timeout=20)) == "timeout"
    t0 = time.monotonic()
    assert s.stop(timeout=20) == 0
    assert time.monotonic() - t0 < 5
    assert set(s.replies) == {"first"}  # the line after the hole was never reached


BIG = 1 << 20  # a 1 MiB reply: a 1.4 MiB reply line


def big_requests(s, n):
    s.append(b"".join(b'{"id": "big%d", "method": "big", "params": %d}\n' % (i, BIG) for i in range(n)))


def big_result(rid):
    return (rid * (BIG // len(rid) + 1))[:BIG]


def test_stalled_stdout_reader_then_resumed_gets_every_reply(session):
    """Nobody reads stdout: the agent keeps serving (a timeout is answered,
    the handler's output is taken) up to its 64 MiB bound, then pauses the
    handler and the mailbox; when the reader comes back every reply arrives,
    whole and once."""
    s = session(reading=False, log="debug")
    s.request("slow", "hold", timeout=2)
    big_requests(s, 100)  # 140 MiB of reply lines
    s.wait_err("session_handler: big big3 written")  # past any pipe: the agent took them
    s.wait_err("pausing the handler's output")
    s.wait_err("answering slow: timeout")  # the loop runs on while stdout is stalled
    grew_mib = vm_hwm_kib(s.p.pid) / 1024
    with open(AGENT, "rb") as f:
        asan = b"__asan_init" in f.read()
    assert grew_mib < (600 if asan else 250), grew_mib
    print("VmHWM with stdout stalled: %.1f MiB" % grew_mib)
    s.reading.set()
    s._wait(lambda: len(s.replies) == 101, "101 replies", timeout=120)
    assert error_code(s.reply("slow")) == "timeout"
    for i in range(100):
        rid = "big%d" % i
        assert len(s.replies[rid]) == 1 and s.replies[rid][0]["result"] == big_result(rid), rid
    assert s.bad_lines == []
    s.wait_err("stdout caught up")
    assert s.call("after")["result"]["params"] is None
    assert s.stop() == 0
    assert "dropped" not in s.stderr()


def test_stalled_stdout_sigterm_exits_zero_on_time(session):
    """SIGTERM with a stdout nobody reads: the shutdown runs on time and the
    agent exits 0 when the grace is over, logging what it could not write."""
    s = session(reading=False, env={"SANDBOX_AGENT_GRACE_SECONDS": "1"})
    big_requests(s, 100)
    s.wait_err("session_handler: big big3 written")
    s.wait_err("pausing the handler's output")
    t0 = time.monotonic()
    os.kill(s.p.pid, signal.SIGTERM)
    rc = s.p.wait(20)
    took = time.monotonic() - t0
    assert rc == 0
    assert took < 1 + 4, took  # the grace, and a margin for a loaded machine
    s.wait_err("bytes of reply lines could not be written to stdout; dropped")
    print("SIGTERM -> exit with stdout stalled: %.2f s" % took)
    s.reading.set()
    s.wait()
    # What did reach the pipe is whole lines, but for a cut last one.
    cut = [l for l in s.bad_lines if l.endswith(b"\n")]
    assert cut == [] and len(s.bad_lines) <= 1


def fd_flags(pid, fd):
    with open("/proc/%d/fdinfo/%d" % (pid, fd)) as f:
        for line in f:
            if line.startswith("flags:"):
                return int(line.split()[1], 8)
    raise AssertionError("no flags for fd %d of %d" % (fd, pid))


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_with_stdout(tmp_path, stdout, log="debug"):
    env = clean_env(SANDBOX_MAILBOX=str(tmp_path / "mailbox.jsonl"), SANDBOX_JOB_NONCE=NONCE,
                    SANDBOX_AGENT_LOG=log)
    return subprocess.Popen([AGENT, "session", "--", PY, HANDLER], env=env, stdin=subprocess.DEVNULL,
                            stdout=stdout, stderr=subprocess.PIPE)


def reply_lines(data):
    out = {}
    for line in data.replace(b"\r\n", b"\n").split(b"\n"):
        got = Session._decode(line + b"\n")
        if got:
            out[got[0]] = got[1]
    return out


def append_line(tmp_path, data):
    with open(tmp_path / "mailbox.jsonl", "ab") as f:
        f.write(data)


def test_stdout_regular_file_gets_every_reply(agent, tmp_path):
    out = tmp_path / "out.log"
    with open(out, "wb") as f:
        p = start_with_stdout(tmp_path, f)
    try:
        append_line(tmp_path, b'{"id": "b1", "method": "big", "params": %d}\n{"id": "e1", "method": "echo"}\n' % BIG)
        wait_until(lambda: set(reply_lines(out.read_bytes())) == {"b1", "e1"}, "the replies in the file")
        assert reply_lines(out.read_bytes())["b1"]["result"] == big_result("b1")
        os.kill(p.pid, signal.SIGTERM)
        assert p.wait(TIMEOUT) == 0
        assert b"dropped" not in p.stderr.read()
    finally:
        p.kill()
        p.wait()


def test_stdout_devnull_no_busy_loop(agent, tmp_path):
    p = start_with_stdout(tmp_path, subprocess.DEVNULL)
    err = []
    t = threading.Thread(target=lambda: err.extend(iter(p.stderr.readline, b"")), daemon=True)
    t.start()
    try:
        append_line(tmp_path, b'{"id": "b1", "method": "big", "params": %d}\n'
                              b'{"id": "h1", "method": "hold", "timeout": 0.2}\n' % BIG)
        wait_until(lambda: any(b"answering h1: timeout" in l for l in err), "the timeout answer")
        c0 = cpu_seconds(p.pid)
        time.sleep(0.5)  # absence check: an idle agent burns no CPU
        assert cpu_seconds(p.pid) - c0 < 0.25
        os.kill(p.pid, signal.SIGTERM)
        assert p.wait(TIMEOUT) == 0
        t.join(TIMEOUT)
        assert not any(b"dropped" in l or b"cannot write" in l for l in err), err
    finally:
        p.kill()
        p.wait()


def test_stdout_tty_nonblocking_while_running_flags_given_back(agent, tmp_path):
    master, slave = os.openpty()
    got = bytearray()
    done = threading.Event()

    def read_master():
        while True:
            try:
                b = os.read(master, 65536)
            except OSError:  # EIO: every slave end closed
                break
            if not b:
                break
            got.extend(b)
        done.set()
    try:
        p = start_with_stdout(tmp_path, slave)
        t = threading.Thread(target=read_master, daemon=True)
        t.start()
        try:
            append_line(tmp_path, b'{"id": "b1", "method": "big", "params": %d}\n{"id": "e1", "method": "echo"}\n' % BIG)
            wait_until(lambda: set(reply_lines(bytes(got))) == {"b1", "e1"}, "the replies on the terminal")
            assert reply_lines(bytes(got))["b1"]["result"] == big_result("b1")
            assert fd_flags(p.pid, 1) & os.O_NONBLOCK  # its own writes never block...
            os.kill(p.pid, signal.SIGTERM)
            assert p.wait(TIMEOUT) == 0
        finally:
            p.kill()
            p.wait()
        # ...and the terminal (an open file description others share) is given back as it was.
        assert not (fcntl.fcntl(slave, fcntl.F_GETFL) & os.O_NONBLOCK)
    finally:
        os.close(slave)
        done.wait(TIMEOUT)
        os.close(master)


def test_stdout_pipe_nonblocking_while_running(session):
    s = session()
    s.call("warm")
    assert fd_flags(s.p.pid, 1) & os.O_NONBLOCK
    assert s.stop() == 0
