"""`sandbox-agent session`, the warm session daemon (README "sandbox-agent
session"): the mailbox and the handler here; the errors the agent answers,
shutdown, PID 1, usage and hardening in test_session_errors.py; the client in
tests/lib/sessionlib.py.

Each test starts the agent with a test handler (workloads/session_handler.py),
appends request lines to a mailbox in its own temporary directory the way the
host does, and reads reply lines from the agent's stdout. Synchronisation is
on reply lines and on the agent's stderr lines (SANDBOX_AGENT_LOG=info/debug),
never on sleeps; the few short waits below check that something does NOT
happen.
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


# ---- mailbox -------------------------------------------------------------------

def test_mailbox_created_later_and_line_unchanged(session):
    s = session()
    assert not os.path.exists(s.mailbox)
    s.wait_err("handler started")
    # Odd spacing, escapes and non-ASCII: the handler must see the bytes as written.
    line = '{ "params" : {"k": "caf\u00e9 \\u00e9 \\n"},"id":"r-1.a:b",  "method": "echo" }\n'.encode()
    s.append(line)
    r = s.reply("r-1.a:b")
    assert base64.b64decode(r["result"]["raw"]) == line
    assert r["result"]["params"] == {"k": "caf\u00e9 \u00e9 \n"}
    assert s.stop() == 0
    assert s.bad_lines == []


def test_existing_lines_delivered(session, tmp_path):
    mb = tmp_path / "mailbox.jsonl"
    mb.write_bytes(b"".join((json.dumps({"id": "old%d" % i, "method": "echo", "params": i}) + "\n").encode()
                            for i in range(5)))
    s = session(mailbox=mb)
    for i in range(5):
        assert s.reply("old%d" % i)["result"]["params"] == i
    assert s.stop() == 0


def test_partial_line_waits_for_newline(session):
    s = session()
    s.call("first")
    line = json.dumps({"id": "half", "method": "echo", "params": "x" * 5000}).encode() + b"\n"
    s.append(line[:2000])
    time.sleep(0.3)  # absence check: nothing may be answered for a partial line
    assert "half" not in s.replies
    assert "not valid JSON" not in s.stderr()
    s.append(line[2000:])
    assert base64.b64decode(s.reply("half")["result"]["raw"]) == line


def test_truncation_starts_again_at_zero(session):
    s = session()
    for i in range(3):
        s.call("before%d" % i, params="y" * 200)
    with open(s.mailbox, "wb") as f:  # truncate, then a line shorter than the old offset
        f.write(b'{"id": "after", "method": "echo"}\n')
    assert s.reply("after")["result"]["params"] is None
    assert s.order.count("before0") == 1


def test_truncation_then_refill_past_old_offset(session):
    # Truncated and written past the old offset before the agent looks: the
    # size alone cannot tell; the agent notices the bytes before its offset
    # changed. The agent is stopped meanwhile so it cannot look in between.
    s = session()
    for i in range(3):
        s.call("early%d" % i)
    os.kill(s.p.pid, signal.SIGSTOP)
    try:
        with open(s.mailbox, "r+b") as f:
            f.truncate(0)
            f.write(b"".join(b'{"id": "late%d", "method": "echo", "params": "%s"}\n' % (i, b"z" * 40)
                             for i in range(20)))
    finally:
        os.kill(s.p.pid, signal.SIGCONT)
    for i in range(20):
        assert s.reply("late%d" % i)["result"]["params"] == "z" * 40
    assert s.stop() == 0
    assert not s.bad_lines


def test_replacement_by_rename_starts_again_at_zero(session, tmp_path):
    s = session()
    s.call("one")
    s.append(b'{"id": "two", "method": "echo", "params": 2}\n')
    new = tmp_path / "new.jsonl"
    new.write_bytes(b'{"id": "three", "method": "echo", "params": 3}\n')
    os.rename(str(new), s.mailbox)
    assert s.reply("three")["result"]["params"] == 3
    assert s.reply("two")["result"]["params"] == 2
    s.append(b'{"id": "four", "method": "echo", "params": 4}\n')
    assert s.reply("four")["result"]["params"] == 4
    assert s.stop() == 0
    assert all(len(v) == 1 for v in s.replies.values())


def test_duplicate_id_within_window_not_delivered_twice(session):
    s = session(log="warn")
    s.call("dup", params=1)
    s.append(b'{"id": "dup", "method": "echo", "params": 2}\n')
    # 4095 more ids keep "dup" in the window of 4096; the sentinel after them
    # proves the duplicate has been read (lines are handled in order).
    lines = b"".join(b'{"id": "w%d", "method": "echo"}\n' % i for i in range(4095))
    s.append(lines + b'{"id": "dup", "method": "echo", "params": 3}\n{"id": "mark1", "method": "echo"}\n')
    s.reply("mark1")
    assert len(s.replies["dup"]) == 1 and s.replies["dup"][0]["result"]["params"] == 1
    # One more id pushes "dup" out of the window: now it is new again.
    s.append(b'{"id": "w-last", "method": "echo"}\n{"id": "dup", "method": "echo", "params": 4}\n')
    s._wait(lambda: len(s.replies.get("dup", ())) == 2, "the second delivery of dup")
    assert s.replies["dup"][1]["result"]["params"] == 4


# ---- handler -------------------------------------------------------------------

def test_handler_started_once_and_replies_any_order(session):
    s = session()
    for i in range(3):
        s.request("later%d" % i, "later")
    s.request("flush", "flush")
    assert s.reply("flush")["result"] == "flushed"
    for i in range(3):
        assert s.reply("later%d" % i)["result"] == "late later%d" % i
    assert s.order[-4:] == ["later2", "later1", "later0", "flush"]
    pid = s.call("p1", "pid")["result"]
    assert s.call("p2", "pid")["result"] == pid
    assert len(handler_starts(s.starts)) == 1


def test_handler_output_is_logged_never_a_reply(session):
    s = session(log="warn")
    r = s.call("noisy", "noise")
    assert r["result"] == "after noise"
    assert s.stop() == 0
    err = s.stderr()
    assert "handler output: hello from the handler" in err
    assert "forged" in err and '"neither": 1' in err
    assert s.bad_lines == []
    assert len(s.replies["noisy"]) == 1


def test_nonce_not_in_handler_environment(session):
    s = session()
    r = s.call("e", "env")["result"]
    assert "SANDBOX_JOB_NONCE" not in r["env"]
    assert NONCE not in json.dumps(r)


@pytest.mark.parametrize("who", ["root-without-ptrace", "same-uid-nonroot"])
def test_nonce_hidden_from_hostile_handler(session, who):
    # Outside pytest's 0700 tree, so the non-root agent and handler reach it.
    tmp_path = pathlib.Path(tempfile.mkdtemp(prefix="sa-session-"))
    os.chmod(str(tmp_path), 0o777)
    out = str(tmp_path / "hostile.out")
    if who == "root-without-ptrace":
        wrap = ["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace", "--"]
    else:
        wrap = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    # A copy beside it: the non-root handler may not reach the checkout (/root is 0700).
    script = shutil.copy(HOSTILE, str(tmp_path / "hostile.py"))
    os.chmod(script, 0o644)
    s = session(handler=[PY, script, out, "env", "environ", "cmdline", "mem", "fd", "ptrace"],
                pid1=True, wrap=wrap, env={"SANDBOX_AGENT_RESTART_BASE_SECONDS": "100"},
                mailbox=tmp_path / "mb.jsonl")
    s.wait_err("restarting it in")  # the hostile handler has run and exited
    data = open(out, "rb").read()
    verdict = json.loads(data.split(b"\n", 1)[0])
    assert NONCE.encode() not in data, verdict
    assert not verdict["ptrace_cap"]
    assert verdict["ptrace"].startswith("denied"), verdict
    assert "environ_1" in verdict and "mem" in verdict, verdict  # the probes did run
    assert s.stop() == 0
    shutil.rmtree(str(tmp_path))
