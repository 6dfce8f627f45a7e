"""`sandbox-agent serve`: the process.Process API, black-box, over a Unix
socket with the raw Connect-JSON client of connectc.py.

Every RPC and its error paths, pty (echo, resize, Ctrl-C), stdin, signals
to the group, timeouts, users, the environment, many processes and
connections, bad requests, a reader that stops reading, SIGTERM mid-stream,
the token, replay from the retention rings, and the API beside `run`.
"""
import json
import os
import pwd
import signal
import socket
import struct
import time

import pytest

from conftest import (TIMEOUT, agent_pid, alive, children, free_port, started_agents, vm_hwm_kib, wait_until,
                      zombies_of)
from connectc import (TOKEN, Conn, ServeAgent, Stream, b64, end_of, envelope, head_bytes,
                      output, unb64)

START = "process.Process/Start"
CONNECT = "process.Process/Connect"
LIST = "process.Process/List"


@pytest.fixture
def serve(agent):
    yield from started_agents(lambda argv=("serve",), **env: ServeAgent(agent, argv=argv, **env))


def read_until(stream, pred, timeout=TIMEOUT, chan="stdout"):
    """Messages until pred(bytes of chan so far) holds: the messages."""
    msgs = []
    end = time.monotonic() + timeout
    while not pred(output(msgs, chan)):
        flags, m = stream.next(max(0.01, end - time.monotonic()))
        assert not flags & 2, "stream ended early: %r after %r" % (m, msgs)
        msgs.append(m)
    return msgs


def running(a, pid):
    return any(p["pid"] == pid for p in a.unary(LIST, {}).json()["processes"])


def stream_error(stream):
    """The code of a stream that ends with an error and no events."""
    assert stream.status == 200
    msgs, end = stream.collect()
    assert msgs == [], msgs
    return end["error"]["code"], end["error"].get("message", "")


# ---- Start -------------------------------------------------------------------

def test_start_output_and_end(serve):
    a = serve()
    s, pid = a.start("/bin/sh", "-c", "echo out; echo err >&2; exit 3")
    assert s.headers["content-type"] == "application/connect+json"
    msgs, last = s.collect()
    assert last == {}
    assert output(msgs) == b"out\n" and output(msgs, "stderr") == b"err\n"
    assert msgs[-1] == {"event": {"end": {"exitCode": 3, "exited": True, "status": "exit status 3",
                                          "error": "exit status 3"}}}
    assert end_of(msgs)  # exactly one
    s, pid = a.start("/bin/true")
    msgs, _ = s.collect()
    assert msgs == [{"event": {"end": {"exitCode": 0, "exited": True, "status": "exit status 0"}}}]


def test_signal_death(serve):
    a = serve()
    s, pid = a.start("/bin/sh", "-c", "kill -KILL $$")
    msgs, _ = s.collect()
    assert end_of(msgs) == {"exitCode": -1, "exited": False, "status": "signal: killed",
                            "error": "signal: killed"}


def test_command_that_cannot_start(serve, tmp_path):
    a = serve()
    s, pid = a.start("no-such-command-here")
    assert pid > 0
    msgs, _ = s.collect()
    e = end_of(msgs)
    assert e["exitCode"] == 127 and "no-such-command-here" in e["error"] and "not found" in e["error"]
    f = tmp_path / "noexec"
    f.write_text("#!/bin/sh\n")
    f.chmod(0o644)
    s, pid = a.start(str(f))
    e = end_of(s.collect()[0])
    assert e["exitCode"] == 126 and str(f) in e["error"] and "ermission denied" in e["error"]


@pytest.mark.parametrize("msg,word", [
    ({}, "process"),
    ({"process": {}}, "cmd"),
    ({"process": {"cmd": ""}}, "cmd"),
    ({"process": {"cmd": 5}}, "cmd"),
    ({"process": {"cmd": "true", "args": "x"}}, "args"),
    ({"process": {"cmd": "true", "args": [1]}}, "args"),
    ({"process": {"cmd": "true", "envs": {"A=B": "c"}}}, "A=B"),
    ({"process": {"cmd": "true", "envs": {"A": 1}}}, "A"),
    ({"process": {"cmd": "true", "envs": []}}, "envs"),
    ({"process": {"cmd": "true", "cwd": "/no/such/dir"}}, "/no/such/dir"),
    ({"process": {"cmd": "true"}, "pty": {"size": {"cols": 70000, "rows": 2}}}, "cols"),
    ({"process": {"cmd": "true"}, "pty": {}}, "size"),
    ({"process": {"cmd": "true"}, "stdin": "yes"}, "stdin"),
    ({"process": {"cmd": "true"}, "timeout": -1}, "timeout"),
    ({"process": {"cmd": "true"}, "tag": 7}, "tag"),
])
def test_start_bad_request(serve, msg, word):
    a = serve()
    code, message = stream_error(a.stream(START, msg))
    assert code == "invalid_argument" and word in message


def test_start_accepts_defaults_and_unknown_fields(serve):
    a = serve()
    msg = {"process": {"cmd": "/bin/echo", "args": ["x"], "envs": None, "cwd": None, "zzz": 1},
           "pty": None, "tag": None, "stdin": None, "unknownField": {"a": [1]}}
    s = a.stream(START, msg)
    msgs, _ = s.collect()
    assert "start" in msgs[0]["event"] and output(msgs) == b"x\n"


# ---- environment, cwd, users -------------------------------------------------

def env_of(a, **kw):
    """The environment a Start gets, as the child itself reads it."""
    s, pid = a.start("/bin/cat", "/proc/self/environ", **kw)
    block = output(s.collect()[0]).decode()
    return dict(e.split("=", 1) for e in block.split("\0") if e)


def test_environment_matches_envs_and_hides_secrets(serve):
    a = serve(SANDBOX_JOB_NONCE="n0nce-xyz", FOO="agent")
    me = pwd.getpwuid(os.geteuid())
    env = env_of(a)
    assert env["HOME"] == me.pw_dir and env["USER"] == me.pw_name == env["LOGNAME"]
    assert env["SHELL"] == (me.pw_shell or "/bin/sh") and env["PWD"] == me.pw_dir
    assert env["FOO"] == "agent" and "/usr/bin" in env["PATH"]
    assert not any(k in env for k in ("SANDBOX_AGENT_TOKEN", "SANDBOX_JOB_NONCE"))
    c = a.conn()
    c.send(head_bytes("GET", "/envs", {"X-Access-Token": TOKEN}))
    assert c.response().json() == env
    # The request's envs come last and win.
    env = env_of(a, envs={"FOO": "req", "HOME": "/h"})
    assert env["FOO"] == "req" and env["HOME"] == "/h"


def test_token_absent_from_every_child_view(serve):
    a = serve(SANDBOX_JOB_NONCE="n0nce-xyz")
    s, pid = a.start("/bin/sh", "-c", "echo ready; exec sleep 30")
    read_until(s, lambda o: b"ready" in o)
    with open("/proc/%d/environ" % pid, "rb") as f:
        block = f.read()
    assert TOKEN.encode() not in block and b"n0nce-xyz" not in block
    assert b"SANDBOX_AGENT_TOKEN" not in block
    a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    s.collect()


def test_no_path_in_the_agent_gets_a_login_path(agent):
    a = ServeAgent(agent, unset=("PATH",))
    try:
        env = env_of(a)
        assert env["PATH"] == "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    finally:
        assert a.stop()[0] == 0


def test_cwd(serve, tmp_path):
    a = serve()
    s, pid = a.start("/bin/pwd", cwd=str(tmp_path))
    assert output(s.collect()[0]) == str(tmp_path).encode() + b"\n"
    home = pwd.getpwuid(os.geteuid()).pw_dir
    s, pid = a.start("/bin/pwd")
    assert output(s.collect()[0]) == home.encode() + b"\n"


def nobody():
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_users_as_root(serve, tmp_path):
    nb = nobody()
    a = serve()
    d = a.dir + "/shared"  # a directory nobody can reach
    os.mkdir(d)
    os.chmod(d, 0o777)
    s, pid = a.start("/bin/sh", "-c", "id -u; id -g; echo $HOME $USER $LOGNAME; touch made",
                     cwd=str(d), user="nobody")
    out = output(s.collect()[0]).decode().split("\n")
    assert out[0] == str(nb.pw_uid) and out[1] == str(nb.pw_gid)
    assert out[2] == "%s nobody nobody" % nb.pw_dir
    st = os.stat(d + "/made")
    assert (st.st_uid, st.st_gid) == (nb.pw_uid, nb.pw_gid)
    code, msg = stream_error(a.stream(START, {"process": {"cmd": "true"}}, user="no-such-user-x"))
    assert code == "invalid_argument" and "no-such-user-x" in msg
    s, pid = a.start("/usr/bin/id", "-un", user="root")
    assert output(s.collect()[0]) == b"root\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_default_user_variable(serve, tmp_path):
    nb = nobody()
    a = serve(SANDBOX_AGENT_USER="nobody")
    s, pid = a.start("/usr/bin/id", "-u", cwd="/")
    assert output(s.collect()[0]) == b"%d\n" % nb.pw_uid
    c = a.conn()
    c.send(head_bytes("GET", "/envs", {"X-Access-Token": TOKEN}))
    assert c.response().json()["USER"] == "nobody"


def test_unknown_default_user_exits_2(agent):
    a = ServeAgent(agent, wait=False, SANDBOX_AGENT_USER="no-such-user-x")
    a.proc.wait(TIMEOUT)
    rc, err = a.stop()
    assert rc == 2 and "SANDBOX_AGENT_USER" in err and "no-such-user-x" in err


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start an agent as another user")
def test_other_user_without_root_is_permission_denied(agent_anyone):
    nb = nobody()
    a = ServeAgent(agent_anyone, popen={"user": nb.pw_uid, "group": nb.pw_gid, "extra_groups": [],
                                 "cwd": "/"}, HOME="/")
    try:
        code, msg = stream_error(a.stream(START, {"process": {"cmd": "true"}}, user="root"))
        assert code == "permission_denied" and "root" in msg
        s, pid = a.start("/usr/bin/id", "-u", cwd="/", user="nobody")
        assert output(s.collect()[0]) == b"%d\n" % nb.pw_uid
    finally:
        assert a.stop()[0] == 0


# ---- stdin, StreamInput --------------------------------------------------------

def test_stdin(serve):
    a = serve()
    s, pid = a.start("/bin/cat", msg={"stdin": True})
    r = a.unary("process.Process/SendInput", {"process": {"pid": pid}, "input": {"stdin": b64("hel")}})
    assert r.status == 200 and r.json() == {}
    assert a.unary("process.Process/SendInput",
                   {"process": {"pid": pid}, "input": {"stdin": b64("lo\n")}}).status == 200
    read_until(s, lambda o: o == b"hello\n")
    assert a.unary("process.Process/CloseStdin", {"process": {"pid": pid}}).json() == {}
    msgs, _ = s.collect()
    assert end_of(msgs)["exitCode"] == 0
    # stdin false: /dev/null, and no input accepted.
    s, pid = a.start("/bin/sh", "-c", "cat; echo done; sleep 30", msg={"stdin": False})
    read_until(s, lambda o: b"done" in o)
    r = a.unary("process.Process/SendInput", {"process": {"pid": pid}, "input": {"stdin": b64("x")}})
    assert r.status == 400 and r.code == "failed_precondition"
    a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    s.collect()


@pytest.mark.parametrize("msg,code", [
    ({"process": {"pid": 999999}, "input": {"stdin": "eA=="}}, "not_found"),
    ({"process": {}, "input": {"stdin": "eA=="}}, "invalid_argument"),
    ({"input": {"stdin": "eA=="}}, "invalid_argument"),
    ({"process": {"pid": 1}, "input": {"stdin": "!!"}}, "invalid_argument"),
    ({"process": {"pid": 1}, "input": {}}, "invalid_argument"),
    ({"process": {"pid": "x"}, "input": {"stdin": "eA=="}}, "invalid_argument"),
])
def test_send_input_errors(serve, msg, code):
    a = serve()
    r = a.unary("process.Process/SendInput", msg)
    assert r.code == code


def stream_input_conn(a):
    c = a.conn()
    c.send(head_bytes("POST", "/process.Process/StreamInput",
                      {"Content-Type": "application/connect+json", "X-Access-Token": TOKEN,
                       "Transfer-Encoding": "chunked"}))
    return c


def chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


def test_stream_input_acts_on_each_envelope_as_it_arrives(serve):
    a = serve()
    s, pid = a.start("/bin/cat", msg={"stdin": True})
    c = stream_input_conn(a)
    first = envelope({"start": {"process": {"pid": pid}}}) + envelope(
        {"data": {"input": {"stdin": b64("one\n")}}})
    c.send(chunk(first[:7]) + chunk(first[7:]))
    # The body is still open: the input reached cat already.
    read_until(s, lambda o: o == b"one\n")
    c.send(chunk(envelope({"keepalive": {}}) + envelope({"data": {"input": {"stdin": b64("two\n")}}})))
    read_until(s, lambda o: o == b"two\n")
    c.send(b"0\r\n\r\n")
    reply = Stream(c)
    assert reply.status == 200 and reply.headers["content-type"] == "application/connect+json"
    assert reply.collect() == ([{}], {})
    a.unary("process.Process/CloseStdin", {"process": {"pid": pid}})
    assert end_of(s.collect()[0])["exitCode"] == 0


@pytest.mark.parametrize("body,code", [
    (envelope({"data": {"input": {"stdin": "eA=="}}}), "invalid_argument"),
    (envelope({"start": {"process": {"pid": 999999}}}), "not_found"),
    (envelope({"start": {"process": {"pid": 1}}})[:-3], "invalid_argument"),
    (b"", "invalid_argument"),
    (envelope(b"[1]"), "invalid_argument"),
    (envelope({"nothing": {}}), "invalid_argument"),
    (envelope({}, flags=1), "unimplemented"),
])
def test_stream_input_errors(serve, body, code):
    a = serve()
    c = stream_input_conn(a)
    c.send((chunk(body) if body else b"") + b"0\r\n\r\n")
    msgs, end = Stream(c).collect()
    assert msgs == [] and end["error"]["code"] == code


# ---- pty -----------------------------------------------------------------------

def pty_start(a, cmd, *args, cols=80, rows=24, **kw):
    return a.start(cmd, *args, msg={"pty": {"size": {"cols": cols, "rows": rows}}}, **kw)


def test_pty_size_and_resize(serve):
    a = serve()
    s, pid = pty_start(a, "/bin/sh", "-c", "stty size; trap 'stty size' WINCH; "
                       "echo ready; while :; do sleep 0.05; done", cols=91, rows=17)
    read_until(s, lambda o: b"17 91" in o and b"ready" in o, chan="pty")
    r = a.unary("process.Process/Update",
                {"process": {"pid": pid}, "pty": {"size": {"cols": 120, "rows": 40}}})
    assert r.status == 200 and r.json() == {}
    read_until(s, lambda o: b"40 120" in o, chan="pty")
    a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    s.collect()


def test_pty_echo_and_input_errors(serve):
    a = serve()
    s, pid = pty_start(a, "/bin/cat")
    a.unary("process.Process/SendInput", {"process": {"pid": pid}, "input": {"pty": b64("hey\n")}})
    # The terminal's echo, then cat's copy.
    read_until(s, lambda o: o.count(b"hey\r\n") == 2, chan="pty")
    r = a.unary("process.Process/CloseStdin", {"process": {"pid": pid}})
    assert r.code == "invalid_argument"
    r = a.unary("process.Process/SendInput", {"process": {"pid": pid}, "input": {"stdin": b64("x")}})
    assert r.code == "invalid_argument"
    a.unary("process.Process/SendInput", {"process": {"pid": pid}, "input": {"pty": b64("\x04")}})
    assert end_of(s.collect()[0])["exitCode"] == 0


def test_pty_ctrl_c_kills_the_foreground_job(serve):
    a = serve()
    s, pid = pty_start(a, "/bin/bash", "--norc", "--noprofile", "-i", envs={"PS1": "$ "})
    send = lambda t: a.unary("process.Process/SendInput",
                             {"process": {"pid": pid}, "input": {"pty": b64(t)}})
    send("sleep 300; echo slept\n")
    wait_until(lambda: any(_ppid(k) == pid and "sleep" in _cmdline(k)
                           for k in os.listdir("/proc") if k.isdigit()),
               "the sleep to start")
    send("\x03")
    send("echo alive-$((40+2))\n")
    msgs = read_until(s, lambda o: b"alive-42" in o, chan="pty")
    assert b"\nslept" not in output(msgs, "pty")  # echoed, never printed
    send("exit 5\n")
    assert end_of(s.collect()[0])["exitCode"] == 5


def _cmdline(pid):
    try:
        with open("/proc/%s/cmdline" % pid) as f:
            return f.read()
    except OSError:
        return ""


def _ppid(pid):
    try:
        with open("/proc/%s/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError):
        return -1


def test_update_errors(serve):
    a = serve()
    s, pid = a.start("/bin/sleep", "30")
    r = a.unary("process.Process/Update", {"process": {"pid": pid}, "pty": {"size": {"cols": 1, "rows": 1}}})
    assert r.code == "failed_precondition"
    assert a.unary("process.Process/Update", {"process": {"pid": pid}}).code == "invalid_argument"
    r = a.unary("process.Process/Update", {"process": {"pid": 999999}, "pty": {"size": {"cols": 1, "rows": 1}}})
    assert r.code == "not_found"
    a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    s.collect()


# ---- signals, timeouts ---------------------------------------------------------

def test_signal_reaches_the_group(serve):
    a = serve()
    s, pid = a.start("/bin/sh", "-c", "sleep 300 & echo $!; wait")
    msgs = read_until(s, lambda o: o.endswith(b"\n"))
    grandchild = int(output(msgs))
    assert alive(grandchild)
    r = a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGTERM"})
    assert r.status == 200 and r.json() == {}
    e = end_of(s.collect()[0])
    assert e["status"] == "signal: terminated"
    wait_until(lambda: not alive(grandchild), "the grandchild to die")
    # Gone: not_found, as the SDK's kill() reads it.
    r = a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    assert r.status == 404 and r.code == "not_found"
    r = a.unary("process.Process/SendSignal", {"process": {"pid": 999999}, "signal": "SIGNAL_SIGKILL"})
    assert r.code == "not_found"
    for bad in ("SIGNAL_UNSPECIFIED", "SIGKILL", 0, 99, None):
        r = a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": bad})
        assert r.code == "invalid_argument", bad


def test_signal_numbers_and_names(serve):
    a = serve()
    s, pid = a.start("/bin/sleep", "300")
    a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": 9})
    assert end_of(s.collect()[0])["status"] == "signal: killed"
    s, pid = a.start("/bin/sleep", "300")
    a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGINT"})
    assert end_of(s.collect()[0])["status"] == "signal: interrupt"


def test_timeout_field(serve):
    a = serve(SANDBOX_AGENT_GRACE_SECONDS="0.5")
    t0 = time.monotonic()
    s, pid = a.start("/bin/sleep", "300", msg={"timeout": 0.3})
    assert end_of(s.collect()[0])["status"] == "signal: terminated"
    assert time.monotonic() - t0 < 10
    # TERM ignored: KILL after the grace, and the end still comes.
    s, pid = a.start("/bin/sh", "-c", "trap '' TERM; echo armed; while :; do sleep 0.05; done",
                     msg={"timeout": 0.3})
    msgs, _ = s.collect()
    assert output(msgs) == b"armed\n" and end_of(msgs)["status"] == "signal: killed"


def test_connect_timeout_ms_on_start_is_deadline_exceeded(serve):
    # The header's deadline is the sooner one: the stream ends with the
    # Connect error deadline_exceeded and no end event (what E2B's SDKs turn
    # into their TimeoutError), and the group is stopped.
    a = serve()
    t0 = time.monotonic()
    s, pid = a.start("/bin/sh", "-c", "sleep 300 & echo $!; wait",
                     headers={"Connect-Timeout-Ms": "2000"}, msg={"timeout": 30})
    msgs, end = s.collect()
    assert end["error"]["code"] == "deadline_exceeded", end
    assert not [m for m in msgs if "end" in m["event"]], msgs
    grandchild = int(output(msgs))
    wait_until(lambda: not alive(pid) and not alive(grandchild), "the group to be stopped")
    assert time.monotonic() - t0 < 10
    # Its record stays, as any finished process's: not running, and its end
    # (the SIGTERM) is there for a Connect.
    wait_ended(a, pid)
    msgs, last = a.stream(CONNECT, {"process": {"pid": pid}}).collect()
    assert last == {} and end_of(msgs)["status"] == "signal: terminated"
    # The client leaving first (an SDK aborts at its own deadline) does not
    # keep the process from being stopped at the deadline.
    s, pid = a.start("/bin/sleep", "300", headers={"Connect-Timeout-Ms": "300"})
    s.close()
    wait_until(lambda: not alive(pid), "the process to be stopped")
    # No header: the request's timeout ends with the end event, as before.
    s, pid = a.start("/bin/sleep", "300", msg={"timeout": 0.3})
    msgs, last = s.collect()
    assert last == {} and end_of(msgs)["status"] == "signal: terminated"
    # The request's timeout sooner than the header's: the end event too.
    s, pid = a.start("/bin/sleep", "300", headers={"Connect-Timeout-Ms": "20000"}, msg={"timeout": 0.3})
    msgs, last = s.collect()
    assert last == {} and end_of(msgs)["status"] == "signal: terminated"


def test_connect_timeout_ms_on_connect_ends_only_the_stream(serve):
    a = serve()
    s, pid = a.start("/bin/sleep", "300")
    c = a.stream(CONNECT, {"process": {"pid": pid}}, headers={"Connect-Timeout-Ms": "300"})
    msgs, end = c.collect()
    assert msgs == [{"event": {"start": {"pid": pid}}}]
    assert end["error"]["code"] == "deadline_exceeded"
    assert running(a, pid)
    a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    s.collect()


def test_keepalive_after_start(serve):
    a = serve()
    s, pid = a.start("/bin/sleep", "2.5", headers={"Keepalive-Ping-Interval": "1"})
    msgs, _ = s.collect(keepalives=True)
    kinds = [list(m["event"])[0] for m in msgs]
    assert kinds.count("keepalive") >= 1 and kinds[-1] == "end"


# ---- Connect, List, replay -----------------------------------------------------

def test_closing_the_stream_never_kills_and_connect_reattaches(serve):
    a = serve()
    s, pid = a.start("/bin/sh", "-c", "echo one; read x; echo two:$x", msg={"stdin": True})
    read_until(s, lambda o: o == b"one\n")
    s.close()
    assert running(a, pid)
    c = a.stream(CONNECT, {"process": {"pid": pid}})
    flags, first = c.next()
    assert first == {"event": {"start": {"pid": pid}}}
    a.unary("process.Process/SendInput", {"process": {"pid": pid}, "input": {"stdin": b64("x\n")}})
    msgs, _ = c.collect()
    # Live output only (not "one"), then the end.
    assert output(msgs) == b"two:x\n" and end_of(msgs)["exitCode"] == 0
    assert "offset" not in msgs[0]


def test_connect_errors_and_tags(serve):
    a = serve()
    assert stream_error(a.stream(CONNECT, {"process": {"pid": 999999}}))[0] == "not_found"
    assert stream_error(a.stream(CONNECT, {}))[0] == "invalid_argument"
    assert stream_error(a.stream(CONNECT, {"process": {"tag": "nope"}}))[0] == "not_found"
    s, pid = a.start("/bin/sleep", "300", msg={"tag": "t1"})
    code, msg = stream_error(a.stream(START, {"process": {"cmd": "true"}, "tag": "t1"}))
    assert code == "already_exists" and "t1" in msg
    c = a.stream(CONNECT, {"process": {"tag": "t1"}})
    assert c.next()[1] == {"event": {"start": {"pid": pid}}}
    procs = a.unary(LIST, {}).json()["processes"]
    assert procs == [{"config": {"cmd": "/bin/sleep", "args": ["300"], "envs": {}}, "pid": pid, "tag": "t1"}]
    a.unary("process.Process/SendSignal", {"process": {"tag": "t1"}, "signal": "SIGNAL_SIGKILL"})
    assert end_of(c.collect()[0])["exitCode"] == -1
    s.collect()
    code = stream_error(a.stream(CONNECT, {"process": {"pid": pid}},
                                 headers={"Sandbox-Agent-Replay-From": "x"}))[0]
    assert code == "invalid_argument"


def test_list(serve, tmp_path):
    a = serve()
    assert a.unary(LIST, {}).json() == {"processes": []}
    s1, p1 = a.start("/bin/sleep", "300", envs={"A": "1"}, cwd=str(tmp_path))
    s2, p2 = a.start("/bin/true")
    s2.collect()
    procs = a.unary(LIST, {}).json()["processes"]
    assert procs == [{"config": {"cmd": "/bin/sleep", "args": ["300"], "envs": {"A": "1"},
                                 "cwd": str(tmp_path)}, "pid": p1}]
    a.unary("process.Process/SendSignal", {"process": {"pid": p1}, "signal": "SIGNAL_SIGKILL"})
    s1.collect()
    assert a.unary(LIST, {}).json() == {"processes": []}


def wait_ended(a, pid):
    wait_until(lambda: not running(a, pid), "process %d to end" % pid)


def start_detached(a, script):
    """Start `sh -c script` once its Start stream is closed: an end that
    went out on a stream is read, and the record may go."""
    s, pid = a.start("/bin/sh", "-c", "read go; " + script, msg={"stdin": True})
    s.close()  # writes to it fail from now on (a Unix socket): nothing of it is read
    a.unary("process.Process/SendInput", {"process": {"pid": pid}, "input": {"stdin": b64("\n")}})
    wait_ended(a, pid)
    return pid


def test_replay_from_offset_0_after_the_end(serve):
    a = serve(SANDBOX_AGENT_KEEP_FINISHED_SECONDS="0")  # 0: gone as soon as an end went out
    s, pid = a.start("/bin/sh", "-c", "read x; echo out-$x; echo err >&2; exit 4", msg={"stdin": True})
    s.close()  # nobody reads its end: it is kept
    a.unary("process.Process/SendInput", {"process": {"pid": pid}, "input": {"stdin": b64("z\n")}})
    wait_ended(a, pid)
    c = a.stream(CONNECT, {"process": {"pid": pid}}, headers={"Sandbox-Agent-Replay-From": "0"})
    msgs, last = c.collect()
    assert last == {} and msgs[0] == {"event": {"start": {"pid": pid}}}
    data = [m for m in msgs if "data" in m["event"]]
    assert {"event": {"data": {"stdout": b64("out-z\n")}}, "offset": 0} in data
    assert {"event": {"data": {"stderr": b64("err\n")}}, "offset": 0} in data
    assert end_of(msgs)["exitCode"] == 4
    # Its end went out: forgotten now.
    assert stream_error(a.stream(CONNECT, {"process": {"pid": pid}}))[0] == "not_found"


def test_replay_from_an_offset_and_a_gap(serve):
    a = serve(SANDBOX_AGENT_RETAIN_BYTES="1000", SANDBOX_AGENT_LOG="info")
    pid = start_detached(a, "/usr/bin/python3 -c \"import sys; "
                         "sys.stdout.write(''.join('%04d\\\\n' % i for i in range(2000)))\"")
    # From 9000: within what is kept (the last 1000 of 10000 bytes).
    c = a.stream(CONNECT, {"process": {"pid": pid}}, headers={"Sandbox-Agent-Replay-From": "9500"})
    msgs, _ = c.collect()
    data = [m for m in msgs if "data" in m["event"]]
    assert data[0]["offset"] == 9500 and output(msgs) == b"".join(b"%04d\n" % i for i in range(1900, 2000))
    assert end_of(msgs)["exitCode"] == 0
    # Another one: from 0, the jump to the oldest kept byte shows.
    pid = start_detached(a, "head -c 10000 /dev/zero | tr '\\0' x")
    c = a.stream(CONNECT, {"process": {"pid": pid}}, headers={"Sandbox-Agent-Replay-From": "0"})
    msgs, _ = c.collect()
    data = [m for m in msgs if "data" in m["event"]]
    assert data[0]["offset"] == 9000 and output(msgs) == b"x" * 1000
    assert "skipped" in a.stderr()


def test_connect_without_replay_to_a_finished_process(serve):
    a = serve()
    pid = start_detached(a, "echo gone; exit 2")
    msgs, _ = a.stream(CONNECT, {"process": {"pid": pid}}).collect()
    assert msgs[0] == {"event": {"start": {"pid": pid}}}
    assert output(msgs) == b"" and end_of(msgs)["exitCode"] == 2


# ---- finished processes kept: the time after their end went out, the count, the bytes ----

def tcp(serve, **env):
    """An agent on TCP: a client that closed its stream is found only when a
    write fails, so the end event goes into the closed connection (sent,
    never delivered)."""
    return serve(SANDBOX_AGENT_LISTEN="127.0.0.1:%d" % free_port(), **env)


def gone(a, pid):
    """The record of pid is dropped (probing it with SendSignal: a kept
    finished process is `not running`, a dropped one `not found`; a probe
    sends no end event, so it does not count the time again)."""
    r = a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    assert r.code == "not_found", (r.status, r.body)
    return "pid %d not found" % pid in r.json()["message"]


def replayed_end(a, pid):
    """Connect to pid from offset 0: its end event, or the error code."""
    msgs, last = a.stream(CONNECT, {"process": {"pid": pid}}, headers={"Sandbox-Agent-Replay-From": "0"}).collect()
    if "error" in last:
        assert msgs == [], msgs
        return last["error"]["code"]
    assert msgs[0] == {"event": {"start": {"pid": pid}}}, msgs
    return end_of(msgs)


def test_an_end_written_into_a_closed_connection_is_kept_to_reconnect(serve):
    a = tcp(serve)
    s, pid = a.start("/bin/sh", "-c", "read x; exit 7", msg={"stdin": True})
    s.close()  # before the process ends
    a.unary("process.Process/SendInput", {"process": {"pid": pid}, "input": {"stdin": b64("\n")}})
    wait_ended(a, pid)  # its end event went into the closed connection
    time.sleep(5)  # the premise: a client reconnecting 5 s after the exit (envd keeps an exit 30 s)
    assert replayed_end(a, pid) == {"exitCode": 7, "exited": True, "status": "exit status 7",
                                    "error": "exit status 7"}


def test_a_finished_process_goes_its_keep_time_after_its_end_went_out(serve):
    a = serve(SANDBOX_AGENT_KEEP_FINISHED_SECONDS="1")
    s, pid = a.start("/bin/sh", "-c", "exit 5")
    assert end_of(s.collect()[0])["exitCode"] == 5  # delivered, even
    e = replayed_end(a, pid)  # still there to reconnect to; the time runs again
    assert e != "not_found" and e["exitCode"] == 5, e
    sent = time.monotonic()
    assert not gone(a, pid)
    wait_until(lambda: gone(a, pid), "process %d to be dropped" % pid)
    assert time.monotonic() - sent >= 0.9  # (the end left the agent a moment before it arrived)


def test_the_last_1024_finished_processes_are_kept(serve):
    """1,100 Starts whose streams closed before their process ended (each
    end went into a closed connection): the first is not_found, the last
    1,024 are there to reconnect to."""
    a = tcp(serve, SANDBOX_AGENT_KEEP_FINISHED_SECONDS="3600")  # the count alone, however slow the machine
    pids = []
    for i in range(1100):
        s, pid = a.start("/bin/cat", msg={"stdin": True})
        s.close()
        assert a.unary("process.Process/CloseStdin", {"process": {"pid": pid}}).status == 200
        pids.append(pid)
    for pid in pids[-20:]:
        wait_ended(a, pid)
    assert replayed_end(a, pids[0]) == "not_found"
    assert replayed_end(a, pids[-1]) == {"exitCode": 0, "exited": True, "status": "exit status 0"}
    found = [pid for pid in pids if replayed_end(a, pid) != "not_found"]
    assert len(found) == 1024 and pids[-1000:] == found[-1000:], len(found)


def test_finished_processes_hold_at_most_the_keep_bytes(serve):
    a = serve(SANDBOX_AGENT_KEEP_FINISHED_BYTES="1000000")
    first = start_detached(a, "head -c 600000 /dev/zero")  # its end never went out
    second = start_detached(a, "head -c 600000 /dev/zero")
    # Both do not fit: the older went (unread), the newer is whole.
    assert replayed_end(a, first) == "not_found"
    msgs, _ = a.stream(CONNECT, {"process": {"pid": second}}, headers={"Sandbox-Agent-Replay-From": "0"}).collect()
    assert output(msgs) == b"\0" * 600000 and end_of(msgs)["exitCode"] == 0


@pytest.mark.parametrize("var,value", [("SANDBOX_AGENT_KEEP_FINISHED_SECONDS", "-1"),
                                       ("SANDBOX_AGENT_KEEP_FINISHED_SECONDS", "soon"),
                                       ("SANDBOX_AGENT_KEEP_FINISHED_BYTES", "0"),
                                       ("SANDBOX_AGENT_KEEP_FINISHED_BYTES", "2TB")])
def test_keep_variables_are_checked(agent, var, value):
    a = ServeAgent(agent, wait=False, **{var: value})
    assert a.proc.wait(timeout=TIMEOUT) == 2
    rc, err = a.stop()
    assert var in err and value in err, err


# ---- many, slow, broken clients -------------------------------------------------

def test_100_concurrent_processes(serve):
    a = serve()
    streams = [a.start("/bin/sh", "-c", "read x; echo $x-%d" % i, msg={"stdin": True}) for i in range(100)]
    assert len(a.unary(LIST, {}).json()["processes"]) == 100
    for i, (s, pid) in enumerate(streams):
        a.unary("process.Process/SendInput", {"process": {"pid": pid}, "input": {"stdin": b64("v\n")}})
    for i, (s, pid) in enumerate(streams):
        msgs, _ = s.collect()
        assert output(msgs) == b"v-%d\n" % i and end_of(msgs)["exitCode"] == 0


def test_200_idle_connections_and_a_stream(serve):
    a = serve()
    idle = [a.sock() for _ in range(200)]
    try:
        s, pid = a.start("/bin/echo", "still")
        assert output(s.collect()[0]) == b"still\n"
    finally:
        for x in idle:
            x.close()


@pytest.mark.parametrize("body", [
    b"",
    b"\x00\x00\x00",
    b"\x00\x00\x00\x00\x05{}",
    envelope(b"not json"),
    envelope(b"[]"),
    envelope({"process": {"cmd": "true"}}) + envelope({}),
    envelope({"process": {"cmd": "true"}}, flags=1),
    b"\xff" * 64,
])
def test_garbage_start_bodies(serve, body):
    a = serve()
    code, _ = stream_error(a.stream(START, None, raw=body))
    assert code in ("invalid_argument", "unimplemented")
    assert a.unary(LIST, {}).json() == {"processes": []}


@pytest.mark.parametrize("body", [b"{", b"[]", b"\"x\"", b"\xff\xfe", b"{\"process\":"])
def test_garbage_unary_bodies(serve, body):
    a = serve()
    r = a.unary("process.Process/SendSignal", None, raw=body)
    assert r.status == 400 and r.code == "invalid_argument"


def test_truncated_and_abandoned_requests(serve):
    a = serve()
    half = a.conn()
    body = envelope({"process": {"cmd": "/bin/echo", "args": ["x"]}})
    half.send(head_bytes("POST", "/" + START, a.headers("application/connect+json", len(body))) + body[:4])
    gone = a.conn()
    gone.send(head_bytes("POST", "/" + START, a.headers("application/connect+json", len(body))) + body[:-1])
    gone.close()
    s, pid = a.start("/bin/echo", "fine")
    assert output(s.collect()[0]) == b"fine\n"
    half.close()
    assert a.unary(LIST, {}).json() == {"processes": []}


def test_wrong_content_types(serve):
    a = serve()
    c = a.conn()
    body = b"{}"
    c.send(head_bytes("POST", "/" + START, a.headers("application/json", len(body))) + body)
    assert c.response().status == 415
    r = a.unary(LIST, {}, headers={"Content-Type": "application/connect+json"})
    assert r.status == 415


def test_a_slower_reader_gets_every_byte(serve):
    # 32 MiB through a 1 MiB ring to a client slower than the child: the
    # child waits for it (README: slow readers), nothing is skipped.
    a = serve(SANDBOX_AGENT_LOG="info", SANDBOX_AGENT_RETAIN_BYTES="1048576")
    s, pid = a.start("/bin/sh", "-c", "head -c 33554432 /dev/zero | tr '\\0' x; echo; echo tail-end")
    s.c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    msgs, _ = s.collect(timeout=120)
    out = output(msgs)
    assert len(out) == (32 << 20) + len(b"\ntail-end\n") and out.count(b"x") == 32 << 20
    assert end_of(msgs)["exitCode"] == 0
    assert "skipped" not in a.stderr()


def test_a_reader_that_stops_reading_a_gigabyte(serve):
    a = serve(SANDBOX_AGENT_LOG="info", SANDBOX_AGENT_STALL_SECONDS="1")
    s, pid = a.start("/bin/sh", "-c", "head -c 1073741824 /dev/zero; echo; echo tail-end")
    s.c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    base = vm_hwm_kib(a.pid)
    # The child waits for this client for the stall time (1 s), then the
    # agent reads the rest into the ring while the client reads nothing;
    # others are served meanwhile.
    deadline = time.monotonic() + 300
    while running(a, pid):
        assert time.monotonic() < deadline, "1 GiB not written in 300 s"
        t0 = time.monotonic()
        assert a.unary(LIST, {}).status == 200
        assert time.monotonic() - t0 < 5
        time.sleep(0.1)  # polling interval
    grown = vm_hwm_kib(a.pid) - base
    assert grown < 48 * 1024, "peak RSS grew %d KiB" % grown
    # Now reading: the rest comes, the end last; the gap is logged.
    msgs, _ = s.collect(timeout=120)
    assert output(msgs).endswith(b"\ntail-end\n") and end_of(msgs)["exitCode"] == 0
    assert len(output(msgs)) < 1 << 30
    assert "read nothing for 1 s while its output waited" in a.stderr()
    assert "skipped" in a.stderr()


# ---- the token, the stop, beside run --------------------------------------------

def test_token_required_on_rpcs(serve):
    a = serve()
    c = a.conn()
    body = envelope({"process": {"cmd": "true"}})
    h = a.headers("application/connect+json", len(body), token=False)
    c.send(head_bytes("POST", "/" + START, h) + body)
    r = c.response()
    assert r.status == 401 and r.json()["code"] == "unauthenticated"
    assert a.unary(LIST, {}, headers={"X-Access-Token": "wrong"}).status == 401


def test_sigterm_mid_stream_ends_every_stream(serve):
    a = serve(SANDBOX_AGENT_GRACE_SECONDS="0.5")
    plain, p1 = a.start("/bin/sh", "-c", "echo up; exec sleep 300")
    stubborn, p2 = a.start("/bin/sh", "-c", "trap '' TERM; echo up; while :; do sleep 0.05; done")
    read_until(plain, lambda o: b"up" in o)
    read_until(stubborn, lambda o: b"up" in o)
    watcher = a.stream(CONNECT, {"process": {"pid": p1}})
    watcher.next()
    t0 = time.monotonic()
    a.proc.send_signal(signal.SIGTERM)
    assert end_of(plain.collect()[0])["status"] == "signal: terminated"
    assert end_of(stubborn.collect()[0])["status"] == "signal: killed"
    assert end_of(watcher.collect()[0])["status"] == "signal: terminated"
    rc, err = a.stop()
    assert rc == 0 and time.monotonic() - t0 < 15
    assert not alive(p1) and not alive(p2)


UNSHARE = ["/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists(UNSHARE[0]), reason="needs root and unshare")
def test_serve_as_pid1_reaps_orphans_and_stops(agent):
    a = ServeAgent(agent, wrap=UNSHARE)
    try:
        host = agent_pid(a.proc, True)
        s, pid = a.start("/bin/sh", "-c", "sleep 0.3 & sleep 0.3 & echo started")
        msgs, _ = s.collect()
        assert output(msgs) == b"started\n" and end_of(msgs)["exitCode"] == 0
        # The two sleeps outlived their shell: PID 1 got them, and reaps them.
        wait_until(lambda: not children(host) and not zombies_of(host), "the orphans to be reaped")
        s, pid = a.start("/bin/sh", "-c", "echo up; exec sleep 300")
        read_until(s, lambda o: b"up" in o)
        os.kill(host, signal.SIGTERM)
        assert end_of(s.collect()[0])["status"] == "signal: terminated"
    finally:
        rc, err = a.stop()
    assert rc == 0, err


def test_serve_beside_run(agent, tmp_path):
    a = ServeAgent(agent, argv=("run", "--", "/bin/sh", "-c",
                                "while [ ! -e %s ]; do sleep 0.05; done; exit 7" % (tmp_path / "go")),
                   SANDBOX_RESULT=str(tmp_path / "r.json"))
    try:
        s, pid = a.start("/bin/sh", "-c", "echo beside; exec sleep 300")
        read_until(s, lambda o: b"beside" in o)
        assert running(a, pid)
        (tmp_path / "go").touch()
        # The job ends: the API stops too, its stream ends with its end event.
        assert end_of(s.collect()[0])["status"] == "signal: terminated"
        a.proc.wait(TIMEOUT)
    finally:
        rc, err = a.stop()
    assert rc == 7, err
    assert b"__SANDBOX_RESULT__" in a.stdout()


def test_serve_beside_session(agent, tmp_path):
    mailbox = tmp_path / "mb.jsonl"
    a = ServeAgent(agent, argv=("session", "--", "/bin/cat"), SANDBOX_MAILBOX=str(mailbox))
    s, pid = a.start("/bin/sh", "-c", "echo beside; exec sleep 300")
    read_until(s, lambda o: b"beside" in o)
    a.proc.send_signal(signal.SIGTERM)
    assert end_of(s.collect()[0])["status"] == "signal: terminated"
    rc, err = a.stop()
    assert rc == 0, err


def test_run_with_a_bad_listen_is_a_usage_error(agent, tmp_path):
    a = ServeAgent(agent, argv=("run", "--", "/bin/true"), wait=False, SANDBOX_AGENT_LISTEN="nonsense")
    a.proc.wait(TIMEOUT)
    rc, err = a.stop()
    assert rc == 2 and "SANDBOX_AGENT_LISTEN" in err


# ---- what a process started goes with it (cgroups, or the /proc tree) -----------

import cgroups  # noqa: E402  (the helpers of this part only)

# Each mode the agent may run its processes in: "auto" (a cgroup of its own
# where the machine allows one, v2 first), "v1" (a v1 freezer or pids
# hierarchy only) and "0" (no cgroups: the leader's descendants in /proc).
MODES = ["auto", "v1", "0"]


def mode_agent(serve, mode, **env):
    if mode != "0":
        why = cgroups.why_not("v1" if mode == "v1" else "v2")
        if mode == "auto" and why:
            why = cgroups.why_not("v1") and why
        if why:
            pytest.skip("cgroups (%s) not available on this machine: %s" % (mode, why))
    # auto is the default: the variable unset.
    return serve(SANDBOX_AGENT_CGROUPS=None if mode == "auto" else mode, SANDBOX_AGENT_GRACE_SECONDS="2", **env)


def read_when_written(path):
    """The text of a file a workload writes to path.tmp and renames."""
    wait_until(lambda: os.path.exists(path), "the workload to write %s" % path)
    with open(path) as f:
        return f.read()


def daemon_cmd(d, parent_lives=True):
    """A shell that starts a daemon (setsid, a new session: outside its
    process group) whose own child is `sleep 300`: d/F gets the sleep's pid,
    d/C the daemon's /proc/self/cgroup, d/G "term" when SIGTERM reaches the
    daemon. parent_lives: the daemon waits for the sleep (else it exits at
    once, and the sleep is an orphan); the leader waits either way."""
    inner = ("trap \"echo term >> {d}/G; exit 0\" TERM; cat /proc/self/cgroup > {d}/C; echo $$ > {d}/D; "
             "sleep 300 & echo $! > {d}/F.tmp; mv {d}/F.tmp {d}/F").format(d=d)
    if parent_lives:
        return "setsid sh -c '%s; wait' & wait" % inner
    return "setsid sh -c '%s'; echo up; exec sleep 300" % inner


@pytest.fixture
def leftovers():
    """Pids a test must not leave behind, whatever the agent did: SIGKILLed
    at the end."""
    pids = []
    yield pids
    for pid in pids:
        kill_if_alive(pid)


def start_daemon(a, d, left, parent_lives=True, **kw):
    """Start daemon_cmd: (stream, pid, the sleep's pid, the daemon's cgroup
    text). Both the sleep and the daemon go into left (host pids only)."""
    s, pid = a.start("/bin/sh", "-c", daemon_cmd(d, parent_lives), **kw)
    sleeper = int(read_when_written(os.path.join(d, "F")))
    cg = read_when_written(os.path.join(d, "C"))
    if left is not None:
        left += [sleeper, int(read_when_written(os.path.join(d, "D")))]
    assert alive(sleeper) or left is None
    return s, pid, sleeper, cg


def check_mode(mode, cg_text):
    """The daemon is in one of the agent's cgroups (of the kind mode asks
    for) or, with cgroups off, in none: the group's directory or None."""
    found = cgroups.agent_group(cg_text)
    if mode == "0":
        assert found is None, cg_text
        return None
    assert found is not None, "the process is in no cgroup of the agent's: %s" % cg_text
    line, directory = found
    if mode == "v1":
        assert not line.startswith("0::"), line
    assert directory and os.path.isdir(directory), found
    return directory


def kill_if_alive(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sig", ["SIGNAL_SIGKILL", "SIGNAL_SIGTERM"])
def test_send_signal_reaches_a_daemon(serve, tmp_path, leftovers, mode, sig):
    a = mode_agent(serve, mode)
    s, pid, sleeper, cg = start_daemon(a, tmp_path, leftovers)
    check_mode(mode, cg)
    r = a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": sig})
    assert r.status == 200, r.body
    e = end_of(s.collect()[0])
    assert e["status"] == ("signal: killed" if sig == "SIGNAL_SIGKILL" else "signal: terminated")
    wait_until(lambda: not alive(sleeper), "the daemon's child to die")
    if sig == "SIGNAL_SIGTERM":
        assert (tmp_path / "G").read_text() == "term\n"


@pytest.mark.parametrize("mode", MODES)
def test_signal_reaches_the_group_once_and_the_daemon_once(serve, tmp_path, leftovers, mode):
    # SendSignal goes to the process group as before, plus the others: none
    # gets it twice (a trapped signal runs its trap once).
    a = mode_agent(serve, mode)
    d = tmp_path
    cmd = ("trap 'echo leader >> {d}/U' USR1; "
           "setsid sh -c 'trap \"echo daemon >> {d}/U\" USR1; echo $$ > {d}/F.tmp; mv {d}/F.tmp {d}/F; "
           "while :; do sleep 0.05; done' & "
           "while :; do sleep 0.05; done").format(d=d)
    s, pid = a.start("/bin/sh", "-c", cmd)
    daemon = int(read_when_written(str(d / "F")))
    leftovers.append(daemon)
    a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGUSR1"})
    wait_until(lambda: os.path.exists(d / "U") and sorted((d / "U").read_text().split()) == ["daemon", "leader"],
               "both traps to run")
    a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    s.collect()
    wait_until(lambda: not alive(daemon), "the daemon to die")
    assert sorted((d / "U").read_text().split()) == ["daemon", "leader"]


@pytest.mark.parametrize("mode", MODES)
def test_timeout_reaches_a_daemon(serve, tmp_path, leftovers, mode):
    a = mode_agent(serve, mode)
    s, pid, sleeper, cg = start_daemon(a, tmp_path, leftovers, msg={"timeout": 3, "stdin": False})
    check_mode(mode, cg)
    assert end_of(s.collect()[0])["status"] == "signal: terminated"
    wait_until(lambda: not alive(sleeper), "the daemon's child to die")
    assert (tmp_path / "G").read_text() == "term\n"


@pytest.mark.parametrize("mode", MODES)
def test_connect_deadline_of_start_reaches_a_daemon(serve, tmp_path, leftovers, mode):
    a = mode_agent(serve, mode)
    s, pid, sleeper, cg = start_daemon(a, tmp_path, leftovers, headers={"Connect-Timeout-Ms": "3000"})
    check_mode(mode, cg)
    msgs, end = s.collect()
    assert end["error"]["code"] == "deadline_exceeded" and not [m for m in msgs if "end" in m["event"]]
    wait_until(lambda: not alive(sleeper), "the daemon's child to die")


@pytest.mark.parametrize("mode", MODES)
def test_agent_stop_reaches_a_daemon(agent, tmp_path, leftovers, mode):
    # A plain child of the test (a subreaper, not PID 1): nothing but the
    # agent's own stop can end the daemon.
    a = mode_agent(lambda **env: ServeAgent(agent, **env), mode)
    try:
        s, pid, sleeper, cg = start_daemon(a, tmp_path, leftovers)
        directory = check_mode(mode, cg)
    finally:
        rc, err = a.stop()
    assert rc == 0, err
    assert not alive(sleeper), "the daemon outlived the agent"
    assert (tmp_path / "G").read_text() == "term\n"
    if directory:
        assert not os.path.exists(os.path.dirname(directory)), "cgroups left behind"


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists(UNSHARE[0]), reason="needs root and unshare")
@pytest.mark.parametrize("mode", MODES)
def test_agent_stop_as_pid1_reaches_a_daemon(agent, tmp_path, mode):
    # As PID 1 the kernel would end the daemon with the agent anyway, by
    # SIGKILL: that the daemon saw SIGTERM first is the agent's doing.
    a = mode_agent(lambda **env: ServeAgent(agent, wrap=UNSHARE, **env), mode)
    host = agent_pid(a.proc, True)
    try:
        s, pid, sleeper, cg = start_daemon(a, tmp_path, None)  # pids of the namespace: it ends them
        directory = check_mode(mode, cg)
    finally:
        os.kill(host, signal.SIGTERM)  # unshare does not pass it on
        a.proc.wait(TIMEOUT)
        rc, err = a.stop()
    assert rc == 0, err
    assert (tmp_path / "G").read_text() == "term\n"
    if directory:
        assert not os.path.exists(os.path.dirname(directory)), "cgroups left behind"


@pytest.mark.parametrize("mode", MODES)
def test_normal_exit_leaves_background_children_running(serve, tmp_path, leftovers, mode):
    # A user's `server &` outlives the command that started it (as with
    # envd); its cgroup goes once it is empty.
    a = mode_agent(serve, mode)
    s, pid = a.start("/bin/sh", "-c", "sleep 300 & echo $!; cat /proc/$!/cgroup")
    msgs, _ = s.collect()
    assert end_of(msgs)["exitCode"] == 0
    lines = output(msgs).decode().split("\n", 1)
    bg = int(lines[0])
    leftovers.append(bg)
    directory = check_mode(mode, lines[1])
    assert alive(bg)
    if directory:
        assert os.path.isdir(directory)
    os.kill(bg, signal.SIGKILL)
    wait_until(lambda: not alive(bg), "the background child to die")
    if directory:
        wait_until(lambda: not os.path.exists(directory), "its empty cgroup to be removed")


@pytest.mark.parametrize("mode", MODES)
def test_an_orphaned_daemon_goes_only_with_a_cgroup(serve, tmp_path, leftovers, mode):
    # The daemon's parent exits at once: its child is the agent's (the
    # subreaper's) from then on. A cgroup still holds it; the /proc walk
    # cannot link it to its origin any more (README: what still escapes).
    a = mode_agent(serve, mode)
    s, pid, sleeper, cg = start_daemon(a, tmp_path, leftovers, parent_lives=False)
    check_mode(mode, cg)
    read_until(s, lambda o: b"up" in o)
    a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    s.collect()
    if mode == "0":
        assert alive(sleeper), "escapes without a cgroup (documented)"
    else:
        wait_until(lambda: not alive(sleeper), "the orphaned daemon to die")


def test_cgroups_variable_is_checked(agent):
    a = ServeAgent(agent, wait=False, SANDBOX_AGENT_CGROUPS="maybe")
    try:
        a.proc.wait(TIMEOUT)
    finally:
        rc, err = a.stop()
    assert rc == 2 and "SANDBOX_AGENT_CGROUPS" in err


@pytest.mark.parametrize("mode", MODES)
def test_agent_stop_ends_what_finished_processes_left_in_cgroups(agent, tmp_path, leftovers, mode):
    # A `server &` of a command that has ended runs on while the agent does;
    # the agent's stop ends it where a cgroup holds it (SIGTERM, SIGKILL at
    # the exit) and removes the cgroup. Without one nothing links it to the
    # agent's processes any more: it runs on (README: what escapes).
    a = mode_agent(lambda **env: ServeAgent(agent, **env), mode)
    try:
        s, pid = a.start("/bin/sh", "-c", "sleep 300 & echo $!; cat /proc/$!/cgroup")
        msgs, _ = s.collect()
        lines = output(msgs).decode().split("\n", 1)
        bg = int(lines[0])
        leftovers.append(bg)
        directory = check_mode(mode, lines[1])
        assert end_of(msgs)["exitCode"] == 0 and alive(bg)
    finally:
        rc, err = a.stop()
    assert rc == 0, err
    if mode == "0":
        assert alive(bg), "runs on without a cgroup (documented)"
    else:
        assert not alive(bg), "what a finished process left in its cgroup outlived the agent"
        assert not os.path.exists(os.path.dirname(directory)), "cgroups left behind"
