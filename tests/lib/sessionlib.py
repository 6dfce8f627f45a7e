"""The `session` mode's test client (tests/integration/test_session*.py): a
session agent with its mailbox and stdout, requests appended as a host
appends them, replies parsed from the `__SANDBOX_REPLY__` lines, and the
fixture that starts and ends one.
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

from testlib import AGENT, PY, TIMEOUT, agent_pid, clean_env, vm_hwm_kib, wait_until, zombies_of  # noqa: F401

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration")
HANDLER = os.path.join(HERE, "workloads", "session_handler.py")
HOSTILE = os.path.join(HERE, "workloads", "hostile.py")
UNSHARE = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
NONCE = "n0nce-S3cret-value"
REPLY_RE = re.compile(rb"^__SANDBOX_REPLY__([A-Za-z0-9._:-]+)__(.*)__([A-Za-z0-9+/=]*)$")


class Session:
    def __init__(self, tmp_path, handler=None, env=None, pid1=False, wrap=(), mailbox=None, log="info",
                 reading=True):
        self.mailbox = str(mailbox or tmp_path / "mailbox.jsonl")
        self.starts = str(tmp_path / "starts.txt")
        argv = list(wrap) + [AGENT, "session", "--"] + (handler or [PY, HANDLER, self.starts])
        if pid1:
            argv = UNSHARE + argv
        e = clean_env(SANDBOX_MAILBOX=self.mailbox, SANDBOX_JOB_NONCE=NONCE, SANDBOX_AGENT_LOG=log)
        e.update(env or {})
        self.pid1 = pid1
        self.p = subprocess.Popen(argv, env=e, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        self.cv = threading.Condition()
        self.replies = {}      # id -> [decoded reply, ...]
        self.order = []        # ids in arrival order
        self.bad_lines = []    # stdout lines that are not well-formed replies
        self.err = []
        self.closed = False
        self.reading = threading.Event()  # cleared: stdout is not read (a stalled log reader)
        if reading:
            self.reading.set()
        threading.Thread(target=self._out, daemon=True).start()
        threading.Thread(target=self._err, daemon=True).start()

    def _lines(self):
        while True:
            self.reading.wait()
            line = self.p.stdout.readline()
            if not line:
                return
            yield line

    @staticmethod
    def _decode(line):
        """(id, reply) of a well-formed reply line, else None."""
        m = REPLY_RE.match(line.rstrip(b"\n"))
        if not m or m.group(2) != NONCE.encode() or not line.endswith(b"\n"):
            return None
        try:
            body = json.loads(base64.b64decode(m.group(3), validate=True))
        except ValueError:
            return None
        rid = m.group(1).decode()
        return (rid, body) if isinstance(body, dict) and body.get("id") == rid else None

    def _out(self):
        for line in self._lines():
            got = self._decode(line)
            with self.cv:
                if not got:
                    self.bad_lines.append(line)
                else:
                    self.replies.setdefault(got[0], []).append(got[1])
                    self.order.append(got[0])
                self.cv.notify_all()
        with self.cv:
            self.closed = True
            self.cv.notify_all()

    def _err(self):
        for line in iter(self.p.stderr.readline, b""):
            with self.cv:
                self.err.append(line.decode("utf-8", "replace"))
                self.cv.notify_all()

    def _wait(self, pred, what, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        with self.cv:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("timed out waiting for %s; stderr: %s" % (what, "".join(self.err[-30:])))
                self.cv.wait(left)

    def reply(self, rid, timeout=TIMEOUT):
        self._wait(lambda: rid in self.replies, "the reply to %s" % rid, timeout)
        return self.replies[rid][0]

    def wait_err(self, text, count=1, timeout=TIMEOUT):
        self._wait(lambda: sum(text in l for l in self.err) >= count, "stderr %r" % text, timeout)

    def stderr(self):
        with self.cv:
            return "".join(self.err)

    def append(self, data):
        if isinstance(data, dict):
            data = (json.dumps(data) + "\n").encode()
        fd = os.open(self.mailbox, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            assert os.write(fd, data) == len(data)
        finally:
            os.close(fd)

    def request(self, rid, method="echo", params=None, **extra):
        self.append(dict({"id": rid, "method": method, "params": params}, **extra))

    def call(self, rid, method="echo", params=None, **extra):
        self.request(rid, method, params, **extra)
        return self.reply(rid)

    def agent_pid(self):
        """Host pid of the agent (unshare's child when PID 1)."""
        return agent_pid(self.p, self.pid1)

    def stop(self, sig=signal.SIGTERM, timeout=TIMEOUT):
        os.kill(self.agent_pid(), sig)
        return self.wait(timeout)

    def wait(self, timeout=TIMEOUT):
        rc = self.p.wait(timeout)
        self._wait(lambda: self.closed, "stdout to close")
        return rc

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


@pytest.fixture
def session(tmp_path, agent):
    made = []

    def start(**kw):
        s = Session(tmp_path, **kw)
        made.append(s)
        return s
    yield start
    for s in made:
        s.kill()


def error_code(r):
    assert "error" in r, r
    return r["error"]["code"]


def handler_starts(path):
    with open(path) as f:
        return [(int(l.split()[1]), float(l.split()[2])) for l in f if l.startswith("start")]
