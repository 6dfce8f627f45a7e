"""The job's output on its way to the agent's stdout (README "`sandbox-agent
run`": "Prompt report", "stdout back-pressure", "stdout and stderr as one
pipe", "Leftovers keep their output"), and the session handler's stderr under
`2>&1`: a log reader that never reads or reads late, `2>&1` with a job that
reads its fd 2 back, orphans that write after the report, and each kind of
stdout the relay writes to. Each test bounds every wait and cleans up what it
started."""
import base64
import contextlib
import fcntl
import json
import os
import secrets
import select
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import AGENT, PY, RESULT_SENTINEL, TIMEOUT, agent_pid, alive, clean_env, one_sentinel, wait_until
from jobs import agent_argv, py
from reports import Hook, hook, hook_server, result_env, tmp  # noqa: F401  (fixtures)

MODES = [pytest.param(True, id="pid1"), pytest.param(False, id="child")]
F_SETPIPE_SZ = 1031
PIPE_SIZE = 1 << 20


class Reader:
    """Collects everything from a file object or fd on a thread."""

    def __init__(self, f, start=True):
        self.fd = f if isinstance(f, int) else f.fileno()
        self.data = bytearray()
        self.eof = threading.Event()
        self.cond = threading.Condition()
        self.t = threading.Thread(target=self._run, daemon=True)
        if start:
            self.t.start()

    def _run(self):
        while True:
            b = os.read(self.fd, 1 << 16)
            with self.cond:
                if not b:
                    break
                self.data.extend(b)
                self.cond.notify_all()
        self.eof.set()
        with self.cond:
            self.cond.notify_all()

    def wait_for(self, text, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        with self.cond:
            while text not in self.data:
                left = deadline - time.monotonic()
                assert left > 0 and not self.eof.is_set(), "no %r in %r" % (text, bytes(self.data[-2000:]))
                self.cond.wait(left)

    def wait_eof(self, timeout=TIMEOUT):
        assert self.eof.wait(timeout), "no EOF within %ss" % timeout
        return bytes(self.data)


def finish(p, timeout=TIMEOUT):
    """The exit code, or kill the agent (and with it, as PID 1, everything) and fail."""
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise


def full_pipe_write_end(tmp):
    """A FIFO at 1 MiB that is already full, with a reader that never reads:
    returns (write end for the agent's stdout, the idle read end)."""
    path = str(tmp / "stdout.fifo")
    os.mkfifo(path)
    rfd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    wfd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    fcntl.fcntl(wfd, F_SETPIPE_SZ, PIPE_SIZE)  # as large as the agent would make it
    fill_pipe(wfd)
    os.set_blocking(wfd, True)
    return wfd, rfd


@contextlib.contextmanager
def on_full_stdout(tmp, argv, pid1, env):
    """`run` of argv (as PID 1 or not) with its stdout on a full pipe that
    nobody reads (full_pipe_write_end): (the Popen, a Reader of its stderr).
    Killed at the end if it still runs."""
    wfd, rfd = full_pipe_write_end(tmp)
    p = subprocess.Popen(agent_argv(argv, pid1), stdin=subprocess.DEVNULL, stdout=wfd, stderr=subprocess.PIPE,
                         env=env)
    os.close(wfd)
    try:
        yield p, Reader(p.stderr)
    finally:
        os.close(rfd)
        if p.poll() is None:
            p.kill()


def fill_pipe(wfd):
    block = b"p" * 4095 + b"\n"
    while True:
        try:
            os.write(wfd, block)
        except BlockingIOError:
            return


# ------------------------------------------------- a log reader that never reads

WRITE_FOREVER = r"""
import os
os.write(1, b"x" * 65536)
os.write(2, b"ready\n")
while True:
    os.write(1, b"y" * 65536)   # blocks: nobody reads stdout
"""


@pytest.mark.parametrize("pid1", MODES)
def test_stalled_stdout_sigterm_still_posts_the_webhook(pid1, tmp, hook):
    # docker stop with a log reader that never reads: the job ends on
    # SIGTERM, its output and the sentinel cannot go out; after the grace
    # period they are abandoned (logged) and the webhook still goes out.
    env = result_env(tmp, SANDBOX_JOB_WEBHOOK=hook, SANDBOX_AGENT_GRACE_SECONDS="1")
    with on_full_stdout(tmp, py(WRITE_FOREVER), pid1, env) as (p, err):
        err.wait_for(b"ready")
        os.kill(agent_pid(p, pid1), signal.SIGTERM)
        t0 = time.monotonic()
        assert finish(p, timeout=30) == 143
        assert time.monotonic() - t0 < 15
        stderr = err.wait_eof()
        assert b"abandoned" in stderr and b"bytes of the job's output" in stderr, stderr
        assert len(Hook.received) == 1
        assert Hook.payloads()[0]["exit_code"] == 143


def test_stalled_stdout_stop_signal_during_the_report(tmp, hook):
    # The job exits by itself; the report waits on stdout; SIGTERM then
    # abandons it at once (the default bound is 30 s).
    env = result_env(tmp, SANDBOX_JOB_WEBHOOK=hook, SANDBOX_AGENT_LOG="info")
    with on_full_stdout(tmp, ["sh", "-c", "echo hello; exit 4"], True, env) as (p, err):
        err.wait_for(b"job exited with code 4", timeout=20)
        t0 = time.monotonic()
        os.kill(agent_pid(p, True), signal.SIGTERM)
        assert finish(p, timeout=20) == 4
        assert time.monotonic() - t0 < 10
        stderr = err.wait_eof()
        assert b"stop signal during the report" in stderr, stderr
        assert [h["exit_code"] for h in Hook.payloads()] == [4]


@pytest.mark.parametrize("pid1", MODES)
def test_stalled_stdout_report_bound(pid1, tmp, hook):
    # No signal at all: SANDBOX_AGENT_REPORT_SECONDS bounds the wait.
    env = result_env(tmp, SANDBOX_JOB_WEBHOOK=hook, SANDBOX_AGENT_REPORT_SECONDS="1")
    with on_full_stdout(tmp, ["sh", "-c", "echo hello"], pid1, env) as (p, err):
        t0 = time.monotonic()
        assert finish(p, timeout=30) == 0
        assert time.monotonic() - t0 < 15
        stderr = err.wait_eof()
        assert b"no report within 1 s of the job's exit" in stderr, stderr
        assert b"abandoned 6 bytes of the job's output" in stderr, stderr
        assert [h["exit_code"] for h in Hook.payloads()] == [0]


def test_bad_report_seconds(tmp):
    r = subprocess.run([AGENT, "run", "--", "true"], capture_output=True, timeout=TIMEOUT,
                       env=result_env(tmp, SANDBOX_AGENT_REPORT_SECONDS="soon"))
    assert r.returncode == 2
    assert b"SANDBOX_AGENT_REPORT_SECONDS must be a number of seconds" in r.stderr


# ------------------------------------------------------- a log reader that is slow

def test_slow_reader_gets_the_sentinel_and_the_webhook_its_budget(tmp, hook):
    # The log reader is away for 12 s when the job exits (its pipe is full):
    # the sentinel waits for it, and the webhook still gets its whole 10 s
    # budget afterwards instead of a clock that ran out while waiting (the
    # server takes 1 s to answer; a budget already spent kills the POST).
    Hook.delay = 1.0
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, PIPE_SIZE)
    os.set_blocking(w, False)
    fill_pipe(w)
    os.set_blocking(w, True)
    p = subprocess.Popen(agent_argv(["sh", "-c", "echo hello; exit 3"], True), stdin=subprocess.DEVNULL,
                         stdout=w, stderr=subprocess.PIPE, env=result_env(tmp, SANDBOX_JOB_WEBHOOK=hook))
    os.close(w)
    out = Reader(r, start=False)
    timer = threading.Timer(12, out.t.start)  # the stimulus: a reader 12 s late
    timer.start()
    try:
        err = Reader(p.stderr)
        assert finish(p, timeout=60) == 3
        stream = out.wait_eof(timeout=30)
        assert stream.endswith(b"hello\n" + RESULT_SENTINEL.encode() + stream.rsplit(b"__", 1)[1])
        assert one_sentinel(stream)["exit_code"] == 3
        stderr = err.wait_eof()
        assert [h["exit_code"] for h in Hook.payloads()] == [3], stderr
        assert b"webhook" not in stderr, stderr
    finally:
        timer.cancel()
        if p.poll() is None:
            p.kill()


# ------------------------------------------------- stdout and stderr as one pipe

EAVESDROP = r"""
import os, sys, time
out, pidfile = sys.argv[1], sys.argv[2]
fds = []
for n in (1, 2):
    try:
        fds.append(os.open("/proc/self/fd/%d" % n, os.O_RDONLY | os.O_NONBLOCK))
    except OSError:
        pass
print("job output", flush=True)
os.write(2, b"job stderr\n")
job, agent = os.getpid(), os.getppid()
if os.fork():
    os._exit(0)
open(pidfile, "w").write(str(os.getpid()))
got = bytearray()
def grab():
    for fd in fds:
        while True:
            try:
                b = os.read(fd, 65536)
            except OSError:
                break
            if not b:
                break
            got.extend(b)
deadline = time.monotonic() + 20
while os.getppid() in (job, agent) and time.monotonic() < deadline:  # until the agent exited
    grab()
    time.sleep(0.01)
grab()
open(out + ".tmp", "wb").write(got)
os.rename(out + ".tmp", out)
"""


def kill_pid_in(path):
    try:
        os.kill(int(open(path).read()), signal.SIGKILL)
    except (OSError, ValueError):
        pass


@pytest.mark.parametrize("kind", ["pipe", "file"])
def test_2to1_job_cannot_read_the_sentinel_back(kind, tmp):
    # Under `2>&1` the job's fd 2 was the agent's stdout: reopening
    # /proc/self/fd/2 for reading, a leftover of the job took the sentinel
    # (nonce included) and the agent's diagnostics. Now fd 2 is a pipe of its
    # own: it can read back only what it wrote itself.
    nonce = secrets.token_hex(16)
    findings, pidfile = tmp / "findings", tmp / "pid"
    if kind == "pipe":
        r, w = os.pipe()
    else:
        log = tmp / "log"
        w = os.open(str(log), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    env = result_env(tmp, SANDBOX_JOB_NONCE=nonce, SANDBOX_AGENT_LOG="debug")
    p = subprocess.Popen(agent_argv(py(EAVESDROP) + [str(findings), str(pidfile)], False),
                         stdin=subprocess.DEVNULL, stdout=w, stderr=w, env=env)
    os.close(w)
    try:
        assert finish(p) == 0
        wait_until(findings.exists, "the eavesdropper's findings", timeout=40)
        stream = Reader(r).wait_eof() if kind == "pipe" else log.read_bytes()
    finally:
        kill_pid_in(pidfile)
    got = findings.read_bytes()
    assert nonce.encode() not in got, got
    assert RESULT_SENTINEL.encode() not in got, got
    assert b"sandbox-agent:" not in got, got
    assert one_sentinel(stream)["nonce"] == nonce
    assert b"sandbox-agent: " in stream  # the diagnostics went where they belong


SNOOP_HANDLER = r"""
import base64, json, os, sys, time
fd = os.open("/proc/self/fd/2", os.O_RDONLY | os.O_NONBLOCK)
for line in sys.stdin:
    req = json.loads(line)
    got = b""
    if req["method"] == "snoop":
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and not got:
            try:
                got += os.read(fd, 1 << 20)
            except BlockingIOError:
                time.sleep(0.01)
    print(json.dumps({"id": req["id"], "result": base64.b64encode(got).decode()}), flush=True)
    if req["method"] == "snoop":
        open(sys.argv[1], "w").close()
"""


def test_2to1_session_handler_cannot_read_the_replies(tmp):
    nonce = "n0nce-S3cret"
    mailbox, done = tmp / "mailbox.jsonl", tmp / "snooped"
    r, w = os.pipe()
    env = clean_env(SANDBOX_MAILBOX=str(mailbox), SANDBOX_JOB_NONCE=nonce)
    p = subprocess.Popen([AGENT, "session", "--", PY, "-c", SNOOP_HANDLER, str(done)], stdin=subprocess.DEVNULL,
                         stdout=w, stderr=w, env=env)
    os.close(w)
    try:
        with open(mailbox, "a") as f:
            f.write('{"id": "r1", "method": "echo"}\n{"id": "r2", "method": "snoop"}\n')
        wait_until(done.exists, "the handler to answer r2", timeout=30)
        p.send_signal(signal.SIGTERM)
        assert finish(p) == 0
        stream = Reader(r).wait_eof()
    finally:
        if p.poll() is None:
            p.kill()
    replies = {}
    for line in stream.split(b"\n"):
        if line.startswith(b"__SANDBOX_REPLY__"):
            rid, n, body = line[len(b"__SANDBOX_REPLY__"):].split(b"__", 2)
            assert n == nonce.encode()
            replies[rid.decode()] = json.loads(base64.b64decode(body))
    assert set(replies) == {"r1", "r2"}, stream
    snooped = base64.b64decode(replies["r2"]["result"])
    assert nonce.encode() not in snooped and b"__SANDBOX_REPLY__" not in snooped, snooped


# ----------------------------------------------- leftovers keep their output

LATE = r"""
import os, sys
go, pidfile = sys.argv[1], sys.argv[2]
if os.fork():
    print("job done", flush=True)
    os._exit(0)
open(pidfile, "w").write(str(os.getpid()))
open(go).close()          # until the test says: after the agent has exited
os.write(1, b"late stdout\n")
os.write(2, b"late stderr\n")
"""


@pytest.mark.parametrize("stderr_kind", ["separate", "2>&1"])
def test_orphan_output_after_the_report_reaches_stdout(stderr_kind, tmp):
    # As a subreaper the agent leaves orphans running, like tini; under tini
    # their output still reaches the log, so here too: a drain process keeps
    # copying the relay pipes after the agent has exited with the job's code.
    go, pidfile = str(tmp / "go"), str(tmp / "pid")
    os.mkfifo(go)
    r, w = os.pipe()
    p = subprocess.Popen(agent_argv(py(LATE) + [go, pidfile], False), stdin=subprocess.DEVNULL, stdout=w,
                         stderr=w if stderr_kind == "2>&1" else subprocess.PIPE, env=result_env(tmp))
    os.close(w)
    out = Reader(r)
    try:
        t0 = time.monotonic()
        assert finish(p) == 0
        assert time.monotonic() - t0 < 10
        out.wait_for(RESULT_SENTINEL.encode())
        wait_until(lambda: os.path.exists(pidfile), "the orphan to start")

        def open_go():
            try:
                return os.open(go, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                return None  # ENXIO: the orphan is not in open() yet
        os.close(wait_until(open_go, "the orphan to wait on the fifo"))
        stream = out.wait_eof()
    finally:
        kill_pid_in(pidfile)
    sentinel_at = stream.index(RESULT_SENTINEL.encode())
    assert stream.index(b"late stdout\n") > sentinel_at, stream
    if stderr_kind == "2>&1":
        assert stream.index(b"late stderr\n") > sentinel_at, stream
    assert one_sentinel(stream)["exit_code"] == 0


def test_no_drain_process_without_leftovers(tmp):
    # The common case forks nothing: the agent's only child was the job.
    r = subprocess.run(agent_argv(["sh", "-c", "echo hi"], False) , stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=TIMEOUT, env=result_env(tmp, SANDBOX_AGENT_LOG="debug"))
    assert r.returncode == 0
    assert b"drain process" not in r.stderr, r.stderr


# ----------------------------------------------------- every kind of stdout

PARTIAL = ["sh", "-c", "printf 'a\\nb\\npartial'"]
BIG = py("import sys; sys.stdout.buffer.write(bytes(range(256)) * 12288)")  # 3 MiB


def run_to(kind, argv, tmp):
    """Run the agent with stdout of the given kind; returns (rc, what reached it)."""
    env = result_env(tmp)
    if kind in ("file", "append"):
        path = tmp / "stdout.txt"
        fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (os.O_APPEND if kind == "append" else 0))
        try:
            rc = subprocess.run(agent_argv(argv, True), stdin=subprocess.DEVNULL, stdout=fd,
                                stderr=subprocess.PIPE, env=env, timeout=TIMEOUT).returncode
        finally:
            os.close(fd)
        return rc, path.read_bytes()
    if kind == "socket":
        a, b = socket.socketpair()
        p = subprocess.Popen(agent_argv(argv, True), stdin=subprocess.DEVNULL, stdout=a.fileno(),
                             stderr=subprocess.DEVNULL, env=env)
        a.close()
        data = bytearray()
        while True:
            assert select.select([b], [], [], TIMEOUT)[0], "socket stalled"
            chunk = b.recv(1 << 16)
            if not chunk:
                break
            data.extend(chunk)
        b.close()
        return finish(p), bytes(data)
    p = subprocess.run(agent_argv(argv, True), stdin=subprocess.DEVNULL, capture_output=True, env=env,
                       timeout=TIMEOUT)
    return p.returncode, p.stdout


@pytest.mark.parametrize("kind", ["pipe", "file", "append", "socket"])
def test_every_stdout_kind_keeps_bytes_and_line_start(kind, tmp):
    rc, out = run_to(kind, PARTIAL, tmp)
    assert rc == 0
    assert out.startswith(b"a\nb\npartial\n" + RESULT_SENTINEL.encode()), out
    assert one_sentinel(out)["exit_code"] == 0
    rc, out = run_to(kind, BIG, tmp)
    body, _, rest = out.partition(b"\n" + RESULT_SENTINEL.encode())
    assert rc == 0 and body == bytes(range(256)) * 12288
    assert one_sentinel(RESULT_SENTINEL.encode() + rest)["exit_code"] == 0


def test_many_small_writes_keep_order_and_line_state(tmp):
    # Thousands of tiny writes: every byte in order, and the sentinel after
    # an output that ends without a newline still starts a line.
    code = "import os\nfor i in range(20000):\n    os.write(1, b'%d,' % i)\n"
    r = subprocess.run(agent_argv(py(code), True), stdin=subprocess.DEVNULL, capture_output=True,
                       env=result_env(tmp), timeout=TIMEOUT)
    expect = b"".join(b"%d," % i for i in range(20000))
    assert r.stdout.startswith(expect + b"\n" + RESULT_SENTINEL.encode())


def test_2to1_long_stderr_line_is_cut_and_protocol_line_starts_a_line(tmp):
    # Under 2>&1 stderr comes through line by line; a line longer than
    # 4095 bytes is cut into lines of that size, an unterminated last one is
    # ended, so the sentinel starts a line whatever stderr held.
    code = "import os\nos.write(2, b'E' * 5000 + b'\\n')\nos.write(2, b'tail')\n"
    r, w = os.pipe()
    p = subprocess.Popen(agent_argv(py(code), True), stdin=subprocess.DEVNULL, stdout=w, stderr=w,
                         env=result_env(tmp))
    os.close(w)
    out = Reader(r)
    assert finish(p) == 0
    stream = out.wait_eof()
    lines = stream.split(b"\n")
    assert lines[0] == b"E" * 4095 and lines[1] == b"E" * 905 and lines[2] == b"tail"
    assert lines[3].startswith(RESULT_SENTINEL.encode())
    assert one_sentinel(stream)["exit_code"] == 0
