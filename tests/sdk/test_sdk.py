"""The published E2B JS SDK (npm `e2b`, pinned in tests/sdk/package-lock.json)
driving `sandbox-agent serve`, unchanged, in its debug mode.

Each test starts the agent on a free loopback port (as an ordinary process,
and for the process tests also as PID 1 of a fresh PID namespace), runs one
scenario of a node script (tests/sdk/*.mjs) with E2B_SANDBOX_URL pointing at it
(the SDK's own override of the base URL), and asserts on the one JSON line the
script prints. Every node run and every wait is bounded.

The SDK comes from SANDBOX_AGENT_SDK_DIR (default build/sdk, where `make test`
installs it with `npm ci`). Without node >= 20.18.1 (the SDK's own engines
field) every test is skipped with that reason; with node but no installed SDK
they fail.

Run alone: SANDBOX_AGENT=build/sandbox-agent /usr/bin/python3 -m pytest -q -rs tests/sdk
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
AGENT = os.path.abspath(os.environ.get("SANDBOX_AGENT", os.path.join(ROOT, "build", "sandbox-agent")))
SDK_DIR = os.path.abspath(os.environ.get("SANDBOX_AGENT_SDK_DIR", os.path.join(ROOT, "build", "sdk")))
NODE_MIN = (20, 18, 1)   # e2b 2.51.0: "engines": {"node": ">=20.18.1 <21 || >=22"}
UNSHARE = ["/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
NODE_TIMEOUT = 90        # a scenario bounds itself at 45 s (lib.mjs); this is the hang guard
TIMEOUT = 60
TOKEN = "sdk-t0ken"


def node_problem():
    """Why the SDK cannot run here, or None."""
    node = shutil.which("node")
    if not node:
        return "no node on PATH (the E2B SDK needs node >= %d.%d.%d)" % NODE_MIN
    try:
        v = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        have = tuple(int(x) for x in v.lstrip("v").split(".")[:3])
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        return "cannot read node's version: %s" % e
    if have < NODE_MIN or have[0] == 21:
        return "node %s is older than the E2B SDK needs (>= %d.%d.%d, not 21)" % ((v,) + NODE_MIN)
    return None


SKIP = node_problem()
pytestmark = pytest.mark.skipif(SKIP is not None, reason="E2B SDK suite skipped: %s" % SKIP)


@pytest.fixture(scope="session")
def sdk_dir():
    if not os.path.isfile(os.path.join(SDK_DIR, "node_modules", "e2b", "package.json")):
        pytest.fail("the pinned E2B SDK is not installed in %s: `make test` installs it "
                    "(npm ci --prefix %s with tests/sdk/package*.json)" % (SDK_DIR, SDK_DIR))
    if not os.access(AGENT, os.X_OK):
        pytest.fail("no agent binary at %s (run make first)" % AGENT)
    return SDK_DIR


def clean_env(**extra):
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


class Serve:
    """One `sandbox-agent serve` on 127.0.0.1:PORT; stderr to a file."""

    def __init__(self, tmp_path, pid1, **env):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.pid1 = pid1
        self.token = env.get("SANDBOX_AGENT_TOKEN")
        self.errpath = str(tmp_path / ("agent-%d.err" % self.port))
        self.errf = open(self.errpath, "wb")
        argv = (UNSHARE if pid1 else []) + [AGENT, "serve"]
        self.proc = subprocess.Popen(argv, env=clean_env(SANDBOX_AGENT_LISTEN="127.0.0.1:%d" % self.port, **env),
                                     stdin=subprocess.DEVNULL, stdout=self.errf, stderr=self.errf)
        self.stopped = None
        self.wait_ready()

    def stderr(self):
        with open(self.errpath, "rb") as f:
            return f.read().decode(errors="replace")

    def health(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            c.request("GET", "/health", headers={"X-Access-Token": self.token} if self.token else {})
            return c.getresponse().status
        finally:
            c.close()

    def wait_ready(self, deadline=20):
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                pytest.fail("agent exited (%s) before serving: %s" % (self.proc.returncode, self.stderr()))
            try:
                if self.health() == 204:
                    return
            except OSError:
                pass
            time.sleep(0.02)  # polling the port, bounded by the deadline
        pytest.fail("agent did not answer /health within %d s: %s" % (deadline, self.stderr()))

    def agent_pid(self):
        if not self.pid1:
            return self.proc.pid
        kids = children(self.proc.pid)
        return kids[0] if kids else self.proc.pid

    def stop(self):
        """SIGTERM, as `docker stop` sends it; (exit status, stderr)."""
        if self.stopped is None:
            if self.proc.poll() is None:
                os.kill(self.agent_pid(), signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = "hung after SIGTERM"
                self.proc.wait(timeout=TIMEOUT)
            self.errf.close()
            self.stopped = (rc, self.stderr())
        return self.stopped


def _start(tmp_path, pid1, **env):
    if pid1 and os.geteuid() != 0:
        pytest.skip("PID 1 in a fresh PID namespace needs root (unshare --pid)")
    return Serve(tmp_path, pid1, **env)


def _finish(agents):
    for a in agents:
        rc, err = a.stop()
        assert rc == 0, "agent exit status %r after SIGTERM; stderr:\n%s" % (rc, err[-3000:])
        assert "AddressSanitizer" not in err and "runtime error" not in err, err[-6000:]


@pytest.fixture(params=[False, True], ids=["child", "pid1"])
def serve(request, tmp_path, sdk_dir):
    """The agent as an ordinary process, then as PID 1 (process tests)."""
    a = _start(tmp_path, request.param)
    yield a
    _finish([a])


@pytest.fixture
def serve1(tmp_path, sdk_dir):
    """The agent as an ordinary process only (file tests)."""
    a = _start(tmp_path, False)
    yield a
    _finish([a])


@pytest.fixture
def work():
    """A fresh directory under /tmp that `nobody` can traverse (pytest's own
    tmp_path sits in a 0700 directory)."""
    d = tempfile.mkdtemp(prefix="sa-sdk-", dir="/tmp")
    os.chmod(d, 0o755)
    yield os.path.realpath(d)
    shutil.rmtree(d, ignore_errors=True)


def sdk(agent, script, scenario, work="/tmp", arg=None, token=None, expect_ok=True):
    """Run one scenario; its `result` (or, with expect_ok=False, the whole answer)."""
    env = clean_env(E2B_SANDBOX_URL=agent.url, SANDBOX_AGENT_SDK_DIR=SDK_DIR, SANDBOX_AGENT_SDK_WORK=work,
                    SANDBOX_AGENT_SDK_TOKEN=token, HOME=os.environ.get("HOME", "/root"))
    argv = ["node", os.path.join(HERE, script), scenario] + ([arg] if arg else [])
    try:
        p = subprocess.run(argv, env=env, cwd=HERE, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=NODE_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail("node %s %s hung past %d s; agent stderr:\n%s"
                    % (script, scenario, NODE_TIMEOUT, agent.stderr()[-3000:]))
    lines = [l for l in p.stdout.decode(errors="replace").splitlines() if l.startswith("{")]
    if not lines:
        pytest.fail("node %s %s printed no answer (exit %d):\nstdout %s\nstderr %s"
                    % (script, scenario, p.returncode, p.stdout[-2000:], p.stderr[-3000:]))
    answer = json.loads(lines[-1])
    if not expect_ok:
        return answer
    if not answer["ok"]:
        pytest.fail("%s %s failed: %s\n%s\nagent stderr:\n%s"
                    % (script, scenario, json.dumps(answer["error"], indent=1)[:4000],
                       answer.get("stack", "")[:2000], agent.stderr()[-3000:]))
    return answer["result"]


# ---- commands (issue 8) ------------------------------------------------------

def test_run_foreground(serve):
    r = sdk(serve, "commands.mjs", "foreground")
    assert (r["stdout"], r["stderr"], r["exitCode"]) == ("out\n", "err\n", 0)


def test_run_nonzero_is_command_exit_error(serve):
    r = sdk(serve, "commands.mjs", "nonzero")
    assert r is not None, "a non-zero exit must reject with CommandExitError"
    assert r["isCommandExitError"] is True
    assert (r["exitCode"], r["stdout"], r["stderr"]) == (3, "partial\n", "oops\n")


def test_run_streaming_callbacks(serve):
    r = sdk(serve, "commands.mjs", "streaming_callbacks")
    assert r["out"] == r["stdout"] == "o1\no2\no3\n"
    assert r["err"] == r["stderr"] == "e1\ne2\ne3\n"


def test_run_big_output_utf8(serve):
    r = sdk(serve, "commands.mjs", "big_output")
    assert r["lines"] == 200000 and r["allSame"] is True, r
    assert r["length"] == 200000 * len("é€𝄞 line\n".encode("utf-16-le")) // 2


def test_run_envs(serve):
    assert sdk(serve, "commands.mjs", "envs")["stdout"] == "bar|two words|unset\n"


def test_run_cwd(serve, work):
    r = sdk(serve, "commands.mjs", "cwd", work=work)
    assert r == {"given": work + "\n", "root_default": "/root\n"}


def test_run_user(serve):
    r = sdk(serve, "commands.mjs", "user")
    assert r["root"] == "root\n0\n/root\n"
    assert r["nobody"] == "nobody\n65534\n"
    assert r["dflt"] == "root\n"   # the agent's own user when none is given


def test_run_without_stdin_reads_eof(serve):
    assert sdk(serve, "commands.mjs", "no_stdin")["stdout"] == "eof\n"


def test_stdin_send_and_close(serve):
    r = sdk(serve, "commands.mjs", "stdin")
    assert (r["stdout"], r["exitCode"]) == ("hello wörld\n [eof]\n", 0)


def test_background_wait(serve):
    r = sdk(serve, "commands.mjs", "background_wait")
    assert r["pidIsNumber"] is True and r["runningExitCode"] == "undefined"
    assert (r["stdout"], r["exitCode"]) == ("started\ngot go\n", 0)


def test_background_kill(serve):
    r = sdk(serve, "commands.mjs", "background_kill")
    assert r["killed"] is True and r["gone"] is True
    assert r["err"]["name"] == "CommandExitError" and r["err"]["exitCode"] == -1, r["err"]
    assert "kill" in r["err"]["message"].lower(), r["err"]   # envd: "signal: killed"
    assert r["ms"] < 20000
    assert r["killAgain"] is False and r["killUnknown"] is False


def test_list(serve, work):
    r = sdk(serve, "commands.mjs", "list", work=work)
    m = r["mine"]
    assert m is not None, "a running background command must be listed"
    assert m["cmd"] == "/bin/bash" and m["args"] == ["-l", "-c", "sleep 30"]
    assert m["cwd"] == work and m["envs"].get("TAG") == "listed"


def test_connect_reattaches(serve):
    r = sdk(serve, "commands.mjs", "connect")
    assert r["samePid"] is True
    assert r["later"] == "second x\n"
    assert r["err"]["name"] == "CommandExitError" and r["err"]["exitCode"] == 7, r["err"]
    assert r["firstAfterDisconnect"] == "first\n"


def test_connect_unknown_pid(serve):
    r = sdk(serve, "commands.mjs", "connect_unknown")
    assert r is not None and r["name"] == "NotFoundError", r


def test_timeout_kills_the_command(serve):
    r = sdk(serve, "commands.mjs", "timeout")
    assert r["err"]["name"] in ("TimeoutError", "CommandExitError"), r["err"]
    assert r["gone"] is True


def test_concurrent_commands(serve):
    assert sdk(serve, "commands.mjs", "concurrent") == 40


def test_pid1_is_the_agent(tmp_path, sdk_dir):
    if os.geteuid() != 0:
        pytest.skip("PID 1 in a fresh PID namespace needs root (unshare --pid)")
    a = Serve(tmp_path, True)
    try:
        # /proc/1/comm: the agent's file name, cut to 15 bytes by the kernel
        assert sdk(a, "commands.mjs", "pid1")["stdout"] == os.path.basename(AGENT)[:15] + "\n"
    finally:
        _finish([a])


# ---- the token (README "use it from the E2B SDK") ---------------------------

def test_token_plain_debug_sdk_is_refused(tmp_path, sdk_dir):
    a = Serve(tmp_path, False, SANDBOX_AGENT_TOKEN=TOKEN)
    try:
        r = sdk(a, "commands.mjs", "foreground", expect_ok=False)
        assert r["ok"] is False and r["error"]["name"] == "AuthenticationError", r
    finally:
        _finish([a])


def test_token_subclass_sends_it(tmp_path, sdk_dir, work):
    a = Serve(tmp_path, False, SANDBOX_AGENT_TOKEN=TOKEN)
    try:
        r = sdk(a, "commands.mjs", "foreground", token=TOKEN)
        assert (r["stdout"], r["exitCode"]) == ("out\n", 0)
        assert sdk(a, "files.mjs", "text", work=work, token=TOKEN)["read"] == "hello wörld\n"
        r = sdk(a, "commands.mjs", "foreground", token=TOKEN + "x", expect_ok=False)
        assert r["error"]["name"] == "AuthenticationError", r
    finally:
        _finish([a])


# ---- pty (issue 8) ----------------------------------------------------------

def test_pty_create(serve):
    r = sdk(serve, "pty.mjs", "create")
    assert r["size"] == [24, 80] and r["exitCode"] == 0
    assert r["hasTty"] is True and r["term"] is True


def test_pty_resize(serve):
    r = sdk(serve, "pty.mjs", "resize")
    assert r == {"before": [24, 80], "after": [30, 100]}


def test_pty_envs_cwd(serve, work):
    assert sdk(serve, "pty.mjs", "envs_cwd", work=work) == {"x": "one", "cwd": work}


def test_pty_kill(serve):
    r = sdk(serve, "pty.mjs", "kill")
    assert r["killed"] is True and r["again"] is False
    assert r["err"]["name"] == "CommandExitError" and r["err"]["exitCode"] == -1, r["err"]


def test_pty_reconnect(serve):
    r = sdk(serve, "pty.mjs", "reconnect")
    assert r == {"samePid": True, "exitCode": 0, "oneSawMark2": False}


def test_pty_listed(serve):
    m = sdk(serve, "pty.mjs", "listed")
    assert m is not None and m["cmd"] == "/bin/bash" and m["args"] == ["-i", "-l"]
    assert m["envs"].get("TERM") == "xterm-256color"


# ---- files (issue 9) --------------------------------------------------------

def _entry_ok(e, name, path, kind):
    assert (e["name"], e["path"], e["type"]) == (name, path, kind), e
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", e["modifiedTime"] or ""), e
    assert e["owner"] and e["group"] and e["permissions"], e


def test_files_text(serve1, work):
    r = sdk(serve1, "files.mjs", "text", work=work)
    p = os.path.join(work, "new", "dir", "a.txt")
    assert r["read"] == r["onDisk"] == "hello wörld\n"
    assert r["write"]["path"] == p and r["write"]["name"] == "a.txt" and r["write"]["type"] == "file"


def test_files_bytes(serve1, work):
    assert sdk(serve1, "files.mjs", "bytes", work=work) == {
        "smallSame": True, "bigSame": True, "streamSame": True, "diskSame": True}


def test_files_empty(serve1, work):
    assert sdk(serve1, "files.mjs", "empty", work=work) == {"text": "", "bytes": 0, "size": 0}


def test_files_many(serve1, work):
    r = sdk(serve1, "files.mjs", "many", work=work)
    assert [w["path"] for w in r["write"]] == [os.path.join(work, "m", n) for n in
                                               ("one.txt", "sub/two.bin", "three.txt")]
    assert r["same"] is True


def test_files_octet_stream_gzip_readable_stream(serve1, work):
    r = sdk(serve1, "files.mjs", "octet_gzip_stream", work=work)
    assert r["paths"] == [os.path.join(work, n) for n in ("octet.bin", "gzip.bin", "stream.bin")]
    assert r["same"] == [True, True, True] and r["gzipReadSame"] is True


def test_files_metadata(serve1, work):
    r = sdk(serve1, "files.mjs", "metadata", work=work)
    want = {"owner": "team-a", "purpose": "test"}
    assert r["write"]["metadata"] == want and r["info"]["metadata"] == want


def test_files_relative_path_is_home(serve1):
    r = sdk(serve1, "files.mjs", "relative")
    assert r["read"] == "rel" and r["onDisk"] is True
    assert r["write"]["path"].startswith("/root/sa-sdk-rel-")


def test_files_as_user(serve1, work):
    r = sdk(serve1, "files.mjs", "as_user", work=work)
    assert r["owner"] == "nobody" and r["uid"] == 65534
    assert r["denied"] is not None, "nobody must not create a directory in a root-only 0755 directory"


def test_files_read_missing(serve1, work):
    r = sdk(serve1, "files.mjs", "read_missing", work=work)
    assert r["there"] == "here"
    assert r["missing"] is not None and r["missing"]["name"] == "FileNotFoundError", r


def test_files_list_depth(serve1, work):
    r = sdk(serve1, "files.mjs", "list", work=work)
    assert r["depth1"] == ["f1:file", "link:symlink", "sub:dir"]
    assert r["depth2"] == ["f1:file", "link:symlink", "sub/deeper:dir", "sub/f2:file", "sub:dir"]
    assert r["depth3"] == ["f1:file", "link:symlink", "sub/deeper/f3:file", "sub/deeper:dir",
                           "sub/f2:file", "sub:dir"]
    d = os.path.join(work, "tree")
    _entry_ok(r["f1"], "f1", os.path.join(d, "f1"), "file")
    assert r["f1"]["size"] == 5 and r["f1"]["mode"] == 0o644 and r["f1"]["permissions"] == "-rw-r--r--"
    assert r["link"]["symlinkTarget"] == os.path.join(d, "f1"), r["link"]
    assert r["missing"]["name"] == "FileNotFoundError", r["missing"]
    assert r["badDepth"]["name"] == "InvalidArgumentError"   # refused by the SDK itself


def test_files_exists_get_info(serve1, work):
    r = sdk(serve1, "files.mjs", "exists_info", work=work)
    assert (r["file"], r["dir"], r["missing"]) == (True, True, False)
    _entry_ok(r["info"], "e.txt", os.path.join(work, "e.txt"), "file")
    assert r["info"]["size"] == 4 and r["info"]["mode"] == 0o640
    assert (r["info"]["owner"], r["info"]["group"]) == ("root", "root")
    assert r["info"]["permissions"] == "-rw-r-----"
    _entry_ok(r["dirInfo"], os.path.basename(work), work, "dir")
    assert r["dirInfo"]["mode"] == 0o755
    assert r["infoMissing"]["name"] == "FileNotFoundError", r["infoMissing"]


def test_files_make_dir(serve1, work):
    r = sdk(serve1, "files.mjs", "make_dir", work=work)
    assert (r["first"], r["second"], r["isDir"]) == (True, False, True)
    assert r["mode"] == 0o755
    assert r["onFile"] is not None, "makeDir over a regular file must fail"


def test_files_rename(serve1, work):
    r = sdk(serve1, "files.mjs", "rename", work=work)
    _entry_ok(r["entry"], "new.txt", os.path.join(work, "moved", "new.txt"), "file")
    assert r["oldGone"] is True and r["content"] == "content"
    assert r["missing"]["name"] == "FileNotFoundError", r["missing"]


def test_files_remove(serve1, work):
    r = sdk(serve1, "files.mjs", "remove", work=work)
    assert r == {"file": False, "dir": False, "missing": None}


# ---- watchDir (issue 9) -----------------------------------------------------

def test_watch_create_write_remove_rename(serve1, work):
    names = sdk(serve1, "watch.mjs", "basic", work=work)
    assert names.index("create a.txt") < names.index("write a.txt") < names.index("remove a.txt")
    assert names.index("rename d") < names.index("create e")


def test_watch_sees_api_writes(serve1, work):
    names = sdk(serve1, "watch.mjs", "sdk_writes", work=work)
    assert "create w.txt" in names or "write w.txt" in names, names
    assert "create made" in names and "remove w.txt" in names
    # As envd: a write shows as events of the file written, not of a
    # temporary name beside it.
    assert [n for n in names if n.split(" ", 1)[1] not in ("w.txt", "made")] == [], names


def test_watch_recursive(serve1, work):
    names = sdk(serve1, "watch.mjs", "recursive", work=work)
    assert names.index("create sub/nested/f.txt") < names.index("remove sub/nested/f.txt")
    assert "create later/g.txt" in names


def test_watch_not_recursive(serve1, work):
    names = sdk(serve1, "watch.mjs", "not_recursive", work=work)
    assert not [n for n in names if "deep.txt" in n], names


def test_watch_include_entry(serve1, work):
    e = sdk(serve1, "watch.mjs", "entry", work=work)
    assert e == {"name": "ent.txt", "path": os.path.join(work, "ent.txt"), "type": "file"}


def test_watch_stop(serve1, work):
    r = sdk(serve1, "watch.mjs", "stop_then_quiet", work=work)
    assert r["stoppedGotMore"] is False


def test_watch_errors(serve1, work):
    r = sdk(serve1, "watch.mjs", "errors", work=work)
    assert r["missing"]["name"] == "FileNotFoundError", r["missing"]
    assert r["file"] is not None and r["file"]["cls"] != "AuthenticationError", r["file"]
