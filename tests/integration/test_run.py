"""`sandbox-agent run`: README "sandbox-agent run", driven as the host SDK and a
container runtime drive it. Most tests run twice: as PID 1 of a fresh PID
namespace and as an ordinary child (where the agent is a subreaper)."""
import base64
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import termios
import time

import pytest

from conftest import (AGENT, PY, RESULT_SENTINEL, TIMEOUT, alive, children, clean_env, free_port, one_sentinel,
                      proc_state, wait_until)
from jobs import UNSHARE, Job, py, run
from ptys import PtyProc
from reports import Hook, hook_server, result_env, tmp  # noqa: F401  (fixtures)

HERE = os.path.dirname(os.path.abspath(__file__))
WL = os.path.join(HERE, "workloads")
MODES = [pytest.param(True, id="pid1"), pytest.param(False, id="child")]


# ---------------------------------------------------------------- inputs ----

@pytest.mark.parametrize("pid1", MODES)
def test_entry_from_env(pid1, tmp):
    env = result_env(tmp, SANDBOX_JOB_INNER_ENTRY=json.dumps(["sh", "-c", "echo from-env"]))
    r = run(None, pid1, env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(b"from-env\n")
    assert one_sentinel(r.stdout)["status"] == "succeeded"


def test_argv_wins_over_env(tmp):
    env = result_env(tmp, SANDBOX_JOB_INNER_ENTRY=json.dumps(["sh", "-c", "echo from-env"]))
    r = run(["sh", "-c", "echo from-argv"], True, env)
    assert r.stdout.startswith(b"from-argv\n")


@pytest.mark.parametrize("pid1", MODES)
def test_result_dir_created_and_exported(pid1, tmp):
    path = tmp / "a" / "b" / "c" / "result.json"
    r = run(["sh", "-c", 'echo "$SANDBOX_RESULT"; test -d "$(dirname "$SANDBOX_RESULT")"'], pid1,
            clean_env(SANDBOX_RESULT=str(path)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == str(path).encode()


@pytest.mark.parametrize("bad_dir", ["/proc/no-such-dir/x", "/etc/hostname/sub"])
def test_result_fallback_when_dir_cannot_be_made(bad_dir):
    env = clean_env(SANDBOX_RESULT=bad_dir + "/result.json")
    try:
        r = run(["sh", "-c", 'echo "$SANDBOX_RESULT"; echo \'{"via": "fallback"}\' > "$SANDBOX_RESULT"'], True, env)
        assert r.stdout.splitlines()[0] == b"/tmp/_sandbox_result.json"
        assert one_sentinel(r.stdout)["result"] == {"via": "fallback"}
        assert b"using /tmp/_sandbox_result.json" in r.stderr
    finally:
        if os.path.exists("/tmp/_sandbox_result.json"):
            os.unlink("/tmp/_sandbox_result.json")


def test_result_path_in_read_only_place(tmp):
    ro = tmp / "ro"
    ro.mkdir()
    os.chmod(ro, 0o555)
    env = clean_env(SANDBOX_RESULT=str(ro / "sub" / "result.json"))
    # As nobody, the read-only directory cannot take the result directory.
    r = run(["sh", "-c", 'echo "$SANDBOX_RESULT"'], True, env,
            wrap=["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
    try:
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[0] == b"/tmp/_sandbox_result.json"
        assert r.stderr.count(b"\n") == 1 and b"Permission denied" in r.stderr
    finally:
        if os.path.exists("/tmp/_sandbox_result.json"):
            os.unlink("/tmp/_sandbox_result.json")


@pytest.mark.parametrize("pid1", MODES)
def test_child_env_has_no_nonce(pid1, tmp):
    nonce = secrets.token_hex(16)
    r = run(["sh", "-c", "env; echo END"], pid1, result_env(tmp, SANDBOX_JOB_NONCE=nonce, KEEP="yes"))
    body = r.stdout.split(b"END\n")[0]
    assert nonce.encode() not in body
    assert b"SANDBOX_JOB_NONCE" not in body
    assert b"KEEP=yes" in body
    assert one_sentinel(r.stdout)["nonce"] == nonce


def test_no_nonce_means_empty_string(tmp):
    r = run(["true"], True, result_env(tmp))
    assert one_sentinel(r.stdout)["nonce"] == ""


# ------------------------------------------------------------ exit codes ----

@pytest.mark.parametrize("pid1", MODES)
@pytest.mark.parametrize("code", [0, 1, 2, 255])
def test_exit_codes(pid1, code, tmp):
    r = run(["sh", "-c", "exit %d" % code], pid1, result_env(tmp))
    assert r.returncode == code
    s = one_sentinel(r.stdout)
    assert s == {"status": "succeeded" if code == 0 else "failed", "exit_code": code,
                 "result": {"exit_code": code}, "nonce": ""}


@pytest.mark.parametrize("pid1", MODES)
def test_not_found_127(pid1, tmp):
    r = run(["no-such-command-xyz", "a"], pid1, result_env(tmp))
    assert r.returncode == 127
    assert one_sentinel(r.stdout)["exit_code"] == 127
    assert r.stderr.strip() == b"sandbox-agent: cannot run 'no-such-command-xyz': command not found"


@pytest.mark.parametrize("pid1", MODES)
def test_not_executable_126(pid1, tmp):
    f = tmp / "script.sh"
    f.write_text("#!/bin/sh\necho hi\n")
    os.chmod(f, 0o644)
    r = run([str(f)], pid1, result_env(tmp))
    assert r.returncode == 126
    assert one_sentinel(r.stdout)["exit_code"] == 126
    assert b"Permission denied" in r.stderr and str(f).encode() in r.stderr


@pytest.mark.parametrize("pid1", MODES)
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV])
def test_killed_by_signal(pid1, sig, tmp):
    r = run(["sh", "-c", "kill -%d $$" % sig], pid1, result_env(tmp))
    assert r.returncode == 128 + sig
    s = one_sentinel(r.stdout)
    assert s["exit_code"] == 128 + sig and s["status"] == "failed"


# ----------------------------------------------------------- result file ----

_content_seq = [0]


def write_result_job(content: bytes):
    """A job that writes content to $SANDBOX_RESULT (staged in a file: a
    1 MiB argument would exceed the kernel's argument limit)."""
    _content_seq[0] += 1
    src = os.path.join(tempfile.gettempdir(), "sa-content-%d-%d" % (os.getpid(), _content_seq[0]))
    with open(src, "wb") as f:
        f.write(content)
    os.chmod(src, 0o644)
    return ["sh", "-c", 'cat "$0" > "$SANDBOX_RESULT"; rm -f "$0"', src]


@pytest.mark.parametrize("pid1", MODES)
def test_result_carried_byte_exact(pid1, tmp):
    raw = '{"big": 123456789012345678901234567890, "f": 1.10, "z": 1, "a": 2, "t": "h\u00e9 \u6f22 \U0001f600", "e": 1e400}'
    r = run(write_result_job(raw.encode()), pid1, result_env(tmp))
    assert r.returncode == 0, r.stderr
    line = [l for l in r.stdout.split(b"\n") if l.startswith(RESULT_SENTINEL.encode())][0]
    core_text = base64.b64decode(line[len(RESULT_SENTINEL):]).decode("utf-8")
    assert raw in core_text  # the very bytes, not a re-serialisation
    core = json.loads(core_text)
    assert list(core) == ["status", "exit_code", "result", "nonce"]
    assert core["result"]["big"] == 123456789012345678901234567890
    assert list(core["result"]) == ["big", "f", "z", "a", "t", "e"]


REFUSED = {
    "array": (b"[1, 2]", "not a JSON object"),
    "invalid-json": (b'{"a": ', "not valid JSON"),
    "invalid-utf8": (b'{"a": "\xff\xfe"}', "not valid UTF-8"),
    "too-big": (b'{"a": "' + b"x" * (1 << 20) + b'"}', "over the 1048576 byte limit"),
    "nan": (b'{"a": NaN}', "not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_result_refused(case, tmp):
    content, why = REFUSED[case]
    r = run(write_result_job(content) + ["x"], True, result_env(tmp))
    s = one_sentinel(r.stdout)
    assert s["result"] == {"exit_code": 0}
    assert why in s["result_error"]
    assert list(s) == ["status", "exit_code", "result", "nonce", "result_error"]


@pytest.mark.parametrize("kind", ["symlink", "fifo", "dev-zero"])
def test_result_special_files_never_hang(kind, tmp):
    target = tmp / "secret.json"
    target.write_text('{"secret": 1}')
    path = tmp / "out" / "result.json"
    script = {
        "symlink": "ln -s %s \"$SANDBOX_RESULT\"" % target,
        "fifo": "mkfifo \"$SANDBOX_RESULT\"",
        "dev-zero": "true",
    }[kind]
    env = clean_env(SANDBOX_RESULT="/dev/zero" if kind == "dev-zero" else str(path))
    r = run(["sh", "-c", script], True, env, timeout=30)
    s = one_sentinel(r.stdout)
    assert s["result"] == {"exit_code": 0}
    assert s["result_error"] == ("result file is a symbolic link" if kind == "symlink"
                                 else "result file is not a regular file")


def test_result_max_bytes_override(tmp):
    r = run(write_result_job(b'{"a": "0123456789"}'), True, result_env(tmp, SANDBOX_RESULT_MAX_BYTES="10"))
    assert "over the 10 byte limit" in one_sentinel(r.stdout)["result_error"]


# -------------------------------------------------------------- sentinel ----

def test_sentinel_one_line_for_a_1mib_result(tmp):
    value = "x" * ((1 << 20) - 20)
    r = run(write_result_job(json.dumps({"v": value}).encode()), True, result_env(tmp))
    lines = r.stdout.split(b"\n")
    assert r.stdout.endswith(b"\n")
    assert len([l for l in lines if l]) == 1
    assert one_sentinel(r.stdout)["result"]["v"] == value
    assert len(lines[0]) > 1 << 20


@pytest.mark.parametrize("pid1", MODES)
def test_sentinel_starts_a_line_without_final_newline(pid1, tmp):
    r = run(["printf", "partial"], pid1, result_env(tmp))
    assert r.stdout.startswith(b"partial\n" + RESULT_SENTINEL.encode())
    assert r.stdout.count(b"\n") == 2


@pytest.mark.parametrize("pid1", MODES)
def test_sentinel_adds_no_blank_line(pid1, tmp):
    r = run(["printf", "line\\n"], pid1, result_env(tmp))
    assert r.stdout.startswith(b"line\n" + RESULT_SENTINEL.encode())
    r = run(["true"], pid1, result_env(tmp))
    assert r.stdout.startswith(RESULT_SENTINEL.encode())


def test_large_output_relayed_intact(tmp):
    # 8 MiB through the relay, byte for byte, then the sentinel.
    r = run(py("import sys; sys.stdout.buffer.write(bytes(range(256)) * 32768)"), True, result_env(tmp))
    body, _, rest = r.stdout.partition(b"\n" + RESULT_SENTINEL.encode())
    assert body == bytes(range(256)) * 32768
    assert one_sentinel(RESULT_SENTINEL.encode() + rest)["exit_code"] == 0


# --------------------------------------------------------------- webhook ----

@pytest.mark.parametrize("pid1", MODES)
def test_webhook_http(pid1, tmp, hook_server):
    url = "http://user:pw@127.0.0.1:%d/hook/path?x=1" % hook_server.server_address[1]
    env = result_env(tmp, SANDBOX_JOB_WEBHOOK=url, SANDBOX_JOB_ID="job-42", SANDBOX_JOB_NONCE="n0nce")
    r = run(write_result_job(b'{"ok": true}'), pid1, env)
    assert r.returncode == 0, r.stderr
    assert len(Hook.received) == 1
    path, ctype, body, auth = Hook.received[0]
    assert path == "/hook/path?x=1"
    assert ctype == "application/json"
    assert auth == "Basic " + base64.b64encode(b"user:pw").decode()
    payload = json.loads(body)
    core = one_sentinel(r.stdout)
    assert list(payload) == ["status", "exit_code", "result", "nonce", "job_id"]
    assert payload == dict(core, job_id="job-42")


def test_webhook_job_id_defaults_to_empty(tmp, hook_server):
    env = result_env(tmp, SANDBOX_JOB_WEBHOOK="http://127.0.0.1:%d/" % hook_server.server_address[1])
    run(["sh", "-c", "exit 3"], True, env)
    assert json.loads(Hook.received[0][2])["job_id"] == ""


def test_webhook_refused_is_logged_not_fatal(tmp):
    env = result_env(tmp, SANDBOX_JOB_WEBHOOK="http://127.0.0.1:%d/" % free_port())
    r = run(["sh", "-c", "exit 5"], True, env)
    assert r.returncode == 5
    assert one_sentinel(r.stdout)["exit_code"] == 5
    assert b"webhook: cannot connect" in r.stderr


def test_webhook_stalling_server_bounded(tmp):
    # Accepts the connection (backlog) and never answers.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(5)
    try:
        env = result_env(tmp, SANDBOX_JOB_WEBHOOK="http://127.0.0.1:%d/" % s.getsockname()[1])
        t0 = time.monotonic()
        r = run(["true"], True, env, timeout=60)
        elapsed = time.monotonic() - t0
    finally:
        s.close()
    assert r.returncode == 0
    assert b"webhook" in r.stderr
    # The contract's bound is 10 s; allow scheduling slack on a loaded machine.
    assert 9 <= elapsed < 20, elapsed


def test_webhook_bad_url(tmp):
    r = run(["true"], True, result_env(tmp, SANDBOX_JOB_WEBHOOK="ftp://example/"))
    assert r.returncode == 0
    assert b"must start with http:// or https://" in r.stderr


# ------------------------------------------------------------ PID 1 ---------

ZOMBIE_CHECK = r"""
import os, time
agent = os.getppid()
for i in range(20):
    if os.fork() == 0:
        if os.fork() == 0:
            os._exit(0)          # grandchild: orphaned, then exits
        os._exit(0)
# Reap our direct children ourselves; the orphans are the agent's to reap.
for i in range(20):
    os.wait()
deadline = time.time() + 20
while True:
    z = []
    for p in os.listdir('/proc'):
        if p.isdigit():
            try:
                st = open('/proc/%s/stat' % p).read()
            except OSError:
                continue
            state, ppid = st.rsplit(')', 1)[1].split()[:2]
            # Orphans are reparented to the agent (PID 1, or the subreaper):
            # a zombie under it is one it failed to reap. Elsewhere on the
            # host, zombies are none of our business.
            if state == 'Z' and int(ppid) == agent:
                z.append(p)
    if not z or time.time() > deadline:
        break
    time.sleep(0.05)
print('zombies', len(z))
"""


@pytest.mark.parametrize("pid1", MODES)
def test_orphans_reaped(pid1, tmp):
    r = run(py(ZOMBIE_CHECK), pid1, result_env(tmp))
    assert r.returncode == 0, r.stderr
    assert b"zombies 0\n" in r.stdout


def test_subreaper_when_not_pid1(tmp):
    # The orphan prints its parent after its own parent exited: it must be the agent.
    # The job waits until the orphan has printed: had it exited first, the
    # agent would have reported and exited too, and the orphan's parent would
    # no longer be the agent (a race the test lost under load).
    j = Job(py("import os\nr,w=os.pipe()\nr2,w2=os.pipe()\nif os.fork()==0:\n    if os.fork()==0:\n"
               "        os.close(w); os.read(r,1)\n        print('orphan-parent', os.getppid(), flush=True)\n"
               "        os.write(w2,b'y')\n        os._exit(0)\n    os._exit(0)\nos.wait()\nos.close(r)\n"
               "os.write(w,b'x')\nos.close(w)\nos.close(w2)\nos.read(r2,1)\nprint('parent-done', flush=True)\n"),
            pid1=False, env=result_env(tmp))
    line = j.wait_text("orphan-parent")
    assert int(line.split()[1]) == j.p.pid
    j.finish()


SIGNALS = [signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH,
           signal.SIGCONT, signal.SIGABRT, signal.SIGALRM, signal.SIGURG, signal.SIGRTMIN,
           signal.SIGRTMIN + 5, signal.SIGRTMAX, signal.SIGTERM]


@pytest.mark.parametrize("pid1", MODES)
def test_signals_forwarded_to_group(pid1, tmp):
    j = Job([PY, os.path.join(WL, "sigreport.py")], pid1=pid1,
            env=result_env(tmp, SANDBOX_AGENT_GRACE_SECONDS="30"))
    try:
        j.wait_text("ready")
        for sig in SIGNALS:
            if sig in (signal.SIGINT, signal.SIGTERM):
                continue
            j.signal(sig)
            j.wait_text("child got %d\n" % sig)
            j.wait_text("grand got %d\n" % sig)
        j.signal(signal.SIGTERM)
        j.wait_text("child got %d\n" % signal.SIGTERM)
        j.wait_text("grand got %d\n" % signal.SIGTERM)
        # The job handles SIGTERM and keeps running: the grace period ends it.
    finally:
        j.kill()


def test_signal_target_child_only(tmp):
    # Not PID 1, so the grandchild's pid is a host pid the test can signal.
    j = Job([PY, os.path.join(WL, "sigreport.py")], pid1=False,
            env=result_env(tmp, SANDBOX_AGENT_SIGNAL_TARGET="child"))
    try:
        j.wait_text("ready")
        j.signal(signal.SIGUSR1)
        j.wait_text("child got %d\n" % signal.SIGUSR1)
        # A marker through the group that proves the grandchild is listening:
        # SIGUSR2 to the grandchild directly, after which a USR1 would have shown.
        grand = int(j.wait_text("grand pid").split()[2])
        os.kill(grand, signal.SIGUSR2)
        j.wait_text("grand got %d\n" % signal.SIGUSR2)
        assert b"grand got %d\n" % signal.SIGUSR1 not in bytes(j.out)
    finally:
        j.kill()


@pytest.mark.parametrize("pid1", MODES)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stop_signal_graceful(pid1, sig, tmp):
    j = Job(py("import signal,sys\nprint('ready',flush=True)\nsignal.pause()"), pid1=pid1, env=result_env(tmp))
    j.wait_text("ready")
    j.signal(sig)
    rc = j.finish()
    assert rc == 128 + sig
    assert j.sentinel()["exit_code"] == 128 + sig


@pytest.mark.parametrize("pid1", MODES)
def test_stop_signal_grace_then_sigkill(pid1, tmp):
    j = Job([PY, os.path.join(WL, "sigreport.py"), "ignore-term"], pid1=pid1,
            env=result_env(tmp, SANDBOX_AGENT_GRACE_SECONDS="1"))
    j.wait_text("ready")
    grand = int(j.wait_text("grand pid").split()[2])
    t0 = time.monotonic()
    j.signal(signal.SIGTERM)
    rc = j.finish()
    elapsed = time.monotonic() - t0
    assert rc == 137
    assert j.sentinel()["exit_code"] == 137
    assert elapsed >= 1.0  # the grace period was honoured
    assert b"sending SIGKILL" in bytes(j.err)
    # The grandchild, which ignored SIGTERM too, went with the group.
    if not pid1:
        wait_until(lambda: not alive(grand), "the grandchild to die with its group", timeout=10)


@pytest.mark.parametrize("pid1", MODES)
def test_report_while_background_holds_stdout(pid1, tmp):
    # The background sleep keeps the job's stdout (the relay pipe) open for
    # 1000 s; the agent must report and exit when the job itself exits.
    j = Job(["sh", "-c", "sleep 1000 & echo $! ; echo done"], pid1=pid1, env=result_env(tmp))
    try:
        assert j.p.wait(timeout=TIMEOUT) == 0
        j.wait_line(lambda l: l.startswith(RESULT_SENTINEL.encode()))
        assert b"done\n" in bytes(j.out)
    finally:
        if not pid1:  # as a subreaper's orphan it outlives the agent
            os.kill(int(bytes(j.out).split(b"\n")[0]), signal.SIGKILL)
        j.kill()


@pytest.mark.parametrize("pid1", MODES)
def test_no_fd_leaks_into_the_job(pid1, tmp):
    extra = os.open("/dev/null", os.O_RDONLY)  # inherited by the agent, not meant for the job
    try:
        r = run(["sh", "-c", "for i in $(seq 3 200); do [ -e /proc/$$/fd/$i ] && echo open $i; done; true"],
                pid1, result_env(tmp), pass_fds=(extra,))
    finally:
        os.close(extra)
    assert b"open" not in r.stdout, r.stdout


def test_tty_foreground_and_ctrl_c(tmp):
    # Not signal.pause(): a ^C landing between the print and pause() would
    # only be handled at the next signal. The wakeup fd is written whenever
    # it lands, so the select returns.
    code = ("import os,select,signal,sys\n"
            "signal.signal(signal.SIGINT, lambda *a: (os.write(1, b'got SIGINT\\n'), os._exit(42)))\n"
            "r, w = os.pipe(); os.set_blocking(w, False); signal.set_wakeup_fd(w)\n"
            "print('fg', os.tcgetpgrp(0) == os.getpgrp(), 'tty', os.isatty(1), flush=True)\n"
            "while True: select.select([r], [], [])\n")
    t = PtyProc(UNSHARE + [AGENT, "run", "--", PY, "-c", code], result_env(tmp))
    try:
        t.read_until(b"fg ")
        t.read_until(b"\n")
        assert b"fg True tty True" in t.out
        # The terminal turns ^C into SIGINT for its foreground group.
        attrs = termios.tcgetattr(t.fd)
        assert attrs[3] & termios.ISIG and attrs[6][termios.VINTR] == b"\x03"
        t.write(b"\x03")  # Ctrl-C on the terminal
        t.read_until(b"__SANDBOX_RESULT__")
        status = t.wait()
    finally:
        t.close()
    assert b"got SIGINT" in t.out
    assert status == 42
    s = [l for l in t.lines() if l.startswith(b"__SANDBOX_RESULT__")]
    assert len(s) == 1
    assert json.loads(base64.b64decode(s[0][len(b"__SANDBOX_RESULT__"):]))["exit_code"] == 42


# ------------------------------------------------------- nonce secrecy ------

def hostile(tmp, probes, wrap_agent=(), wrap_job=()):
    tmp = __import__("pathlib").Path(tempfile.mkdtemp(prefix="sa-hostile-"))
    os.chmod(tmp, 0o777)
    nonce = secrets.token_hex(20)
    out = tmp / "findings"
    # A copy beside it: a non-root job may not reach the checkout (/root is 0700).
    script = shutil.copy(os.path.join(WL, "hostile.py"), str(tmp / "hostile.py"))
    os.chmod(script, 0o644)
    job = list(wrap_job) + [PY, script, str(out)] + probes
    r = run(job, True, clean_env(SANDBOX_JOB_NONCE=nonce, SANDBOX_RESULT=str(tmp / "r" / "result.json")),
            wrap=wrap_agent)
    assert r.returncode == 0, r.stderr
    assert one_sentinel(r.stdout)["nonce"] == nonce  # the agent itself still has it
    data = out.read_bytes()
    verdict = json.loads(data.split(b"\n", 1)[0])
    assert nonce.encode() not in data, verdict
    return verdict


def test_nonce_hidden_from_root(tmp):
    v = hostile(tmp, ["env", "environ", "cmdline"])
    # Root with CAP_SYS_PTRACE reads environ; what it reads has no nonce.
    assert v["uid"] == 0 and v["ptrace_cap"] is True
    assert v["environ_1"].startswith("read")


def test_nonce_hidden_from_root_without_cap_sys_ptrace(tmp):
    v = hostile(tmp, ["env", "environ", "cmdline", "mem", "fd", "ptrace"],
                wrap_job=["capsh", "--drop=cap_sys_ptrace", "--"] + ["-c", 'exec "$@"', "hostile"])
    assert v["uid"] == 0 and v["ptrace_cap"] is False
    assert v["mem"].startswith("denied"), v
    assert v["fd"].startswith("denied"), v
    assert v["ptrace"].startswith("denied"), v
    # environ itself may be readable here (it is on some kernels); the nonce
    # is not in it, which hostile() asserted.


def test_nonce_hidden_from_same_uid(tmp):
    os.chmod(tmp, 0o777)
    v = hostile(tmp, ["env", "environ", "cmdline", "mem", "fd", "ptrace"],
                wrap_agent=["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
    assert v["uid"] == 65534
    assert v["mem"].startswith("denied"), v
    assert v["fd"].startswith("denied"), v
    assert v["ptrace"].startswith("denied"), v
    assert v["environ_agent"].startswith("denied"), v


# ------------------------------------------------------------ bad input -----

@pytest.mark.parametrize("entry,message", [
    (None, "empty SANDBOX_JOB_INNER_ENTRY"),
    ("", "empty SANDBOX_JOB_INNER_ENTRY"),
    ("[]", "empty SANDBOX_JOB_INNER_ENTRY"),
    ("echo hi", "SANDBOX_JOB_INNER_ENTRY is not valid JSON: unexpected character at byte 0"),
    ('{"argv": ["ls"]}', "SANDBOX_JOB_INNER_ENTRY must be a JSON array of strings, not an object"),
    ('["ls", 3]', "SANDBOX_JOB_INNER_ENTRY[1] is a number, not a string"),
    ('["ls", null]', "SANDBOX_JOB_INNER_ENTRY[1] is null, not a string"),
    ('["a\\u0000b"]', "\\u0000"),
    ('["ls"' + ', "x"' * 20000, "not valid JSON: unterminated container"),
], ids=["unset", "empty", "empty-array", "not-json", "object", "number", "null", "nul", "truncated-100k"])
def test_bad_entry(entry, message, tmp):
    r = run(None, True, result_env(tmp, SANDBOX_JOB_INNER_ENTRY=entry))
    assert r.returncode == 2
    assert r.stdout == b""
    assert r.stderr.count(b"\n") == 1
    assert r.stderr.startswith(b"sandbox-agent: ")
    assert message.encode() in r.stderr


def test_large_entry_runs(tmp):
    args = ["a%05d" % i + "x" * 10 for i in range(6000)]  # ~120 KiB of JSON, just under the kernel cap
    entry = json.dumps(["sh", "-c", 'echo "$#" "$1"', "sh"] + args)
    assert len(entry) < 131072
    r = run(None, True, result_env(tmp, SANDBOX_JOB_INNER_ENTRY=entry))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(b"6000 a00000xxxxxxxxxx\n")


def test_ten_megabyte_entry_cannot_reach_the_agent(tmp):
    # The kernel refuses one environment string over 128 KiB (MAX_ARG_STRLEN):
    # a 10 MB entry never reaches any runner. The decoder's own 16 MiB bound
    # is covered by the unit test test_entry.c:test_ten_megabytes.
    with pytest.raises(OSError) as e:
        run(None, True, result_env(tmp, SANDBOX_JOB_INNER_ENTRY='["' + "x" * 10_000_000 + '"]'))
    assert e.value.errno == 7  # E2BIG


@pytest.mark.parametrize("var,value,message", [
    ("SANDBOX_AGENT_GRACE_SECONDS", "soon", "SANDBOX_AGENT_GRACE_SECONDS must be a number"),
    ("SANDBOX_AGENT_GRACE_SECONDS", "-1", "SANDBOX_AGENT_GRACE_SECONDS must be a number"),
    ("SANDBOX_AGENT_SIGNAL_TARGET", "everyone", "SANDBOX_AGENT_SIGNAL_TARGET must be"),
    ("SANDBOX_AGENT_LOG", "loud", "SANDBOX_AGENT_LOG must be one of"),
    ("SANDBOX_RESULT_MAX_BYTES", "lots", "SANDBOX_RESULT_MAX_BYTES must be"),
])
def test_bad_configuration(var, value, message, tmp):
    r = run(["true"], True, result_env(tmp, **{var: value}))
    assert r.returncode == 2
    assert r.stderr.count(b"\n") == 1 and message.encode() in r.stderr


def test_usage_errors():
    r = subprocess.run([AGENT, "run", "--bogus"], capture_output=True, env=clean_env())
    assert r.returncode == 2 and b"unknown option '--bogus'" in r.stderr
    r = subprocess.run([AGENT, "run", "--"], capture_output=True, env=clean_env())
    assert r.returncode == 2 and b"no command after --" in r.stderr
    r = subprocess.run([AGENT, "frobnicate"], capture_output=True, env=clean_env())
    assert r.returncode == 2 and b"unknown command 'frobnicate'" in r.stderr
    r = subprocess.run([AGENT], capture_output=True, env=clean_env())
    assert r.returncode == 2 and b"usage:" in r.stderr


def test_help_and_version():
    r = subprocess.run([AGENT, "--version"], capture_output=True, env=clean_env())
    assert r.returncode == 0 and r.stdout.startswith(b"sandbox-agent ")
    r = subprocess.run([AGENT, "--help"], capture_output=True, env=clean_env())
    assert r.returncode == 0 and b"run [-- CMD...]" in r.stdout
    r = subprocess.run([AGENT, "run", "--help"], capture_output=True, env=clean_env())
    assert r.returncode == 0
    for var in ("SANDBOX_JOB_INNER_ENTRY", "SANDBOX_JOB_NONCE", "SANDBOX_RESULT", "SANDBOX_JOB_WEBHOOK",
                "SANDBOX_JOB_WEBHOOK_CA_FILE",
                "SANDBOX_AGENT_GRACE_SECONDS", "SANDBOX_AGENT_SIGNAL_TARGET", "SANDBOX_AGENT_LOG"):
        assert var.encode() in r.stdout


def test_closed_stdout_still_exits_with_job_code(tmp):
    # A log reader that went away must not turn the job's code into a crash.
    p = subprocess.Popen([AGENT, "run", "--", "sh", "-c", "echo a; exit 7"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=result_env(tmp))
    p.stdout.close()
    rc = p.wait(timeout=TIMEOUT)
    assert rc == 7


def test_stop_signal_resumes_a_stopped_job(tmp):
    # A stopped job gets SIGCONT with the stop request, so it can exit by itself (143)
    # instead of waiting for SIGKILL at the end of the grace period.
    j = Job(["sh", "-c", "echo ready; kill -STOP $$; exit 0"], pid1=True,
            env=result_env(tmp, SANDBOX_AGENT_GRACE_SECONDS="30"))
    j.wait_text("ready")
    pid = j.agent_pid()
    # Wait until the job is really stopped (state T) before asking it to stop.
    wait_until(lambda: any(proc_state(int(k)) == "T" for k in children(pid)[:1]), "the job to stop")
    j.signal(signal.SIGTERM)
    assert j.finish(timeout=20) == 143
    assert j.sentinel()["exit_code"] == 143
