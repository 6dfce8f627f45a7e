"""The harness of the E2B SDK suite (tests/sdk/test_sdk.py): `serve` on a
free loopback port (as an ordinary process or as PID 1 of a fresh PID
namespace), the node runner of the scenario scripts, and the fixtures
(re-exported by conftest.py). A module of its own rather than conftest.py,
as tests/container/podlib.py is, so that `pytest tests/` still imports the
right helpers.

As a user's program would: the SDK (node) runs as an ordinary user with a
clean home, and the sandbox's commands run as that user too when a scenario
names none (SANDBOX_AGENT_USER), as E2B's template runs them as `user`. So
nothing depends on the machine's own login profiles (root's on these
machines is slow, and a login shell killed inside it can leave a lock that
stalls the next ones). The test user is made once (useradd) and its home is
emptied at every session; the SDK and the scripts are copied where that user
can read them (a checkout under /root is root's only).
"""
import contextlib
import http.client
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sdk")  # the scripts
ROOT = os.path.dirname(os.path.dirname(HERE))
from testlib import children, clean_env, free_port

AGENT = os.path.abspath(os.environ.get("SANDBOX_AGENT", os.path.join(ROOT, "build", "sandbox-agent")))
SDK_DIR = os.path.abspath(os.environ.get("SANDBOX_AGENT_SDK_DIR", os.path.join(ROOT, "build", "sdk")))
NODE_MIN = (20, 18, 1)   # e2b 2.51.0: "engines": {"node": ">=20.18.1 <21 || >=22"}
UNSHARE = ["/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
# Hang guards only, never a budget: a scenario waits for what the agent does
# and ends by itself (lib.mjs: SCENARIO_MS); node is killed after NODE_TIMEOUT.
SCENARIO_MS = 150000
NODE_TIMEOUT = 200
TIMEOUT = 60
TOKEN = "sdk-t0ken"
# Who runs the SDK, and who the sandbox's commands run as by default.
USER = "sa-sdk-user"
USER_HOME = "/home/" + USER


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


def _run(argv):
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        pytest.fail("%s failed (%d): %s" % (" ".join(argv), p.returncode, p.stderr.strip()))


def _test_user():
    """The test user's passwd entry, made when missing; its home emptied."""
    try:
        pw = pwd.getpwnam(USER)
    except KeyError:
        _run(["useradd", "--system", "--user-group", "--shell", "/bin/bash", "--home-dir", USER_HOME,
              "--no-create-home", USER])
        pw = pwd.getpwnam(USER)
    if pw.pw_dir != USER_HOME:
        pytest.fail("user %s exists with home %s, not %s: remove it (userdel %s)"
                    % (USER, pw.pw_dir, USER_HOME, USER))
    shutil.rmtree(USER_HOME, ignore_errors=True)
    os.mkdir(USER_HOME, 0o750)
    os.chown(USER_HOME, pw.pw_uid, pw.pw_gid)
    return pw


class Client:
    """Where and as whom the SDK runs: the scripts and the SDK copied into a
    directory the test user can read, and a clean, empty home for node."""

    def __init__(self, pw):
        self.pw = pw
        self.stage = tempfile.mkdtemp(prefix="sa-sdk-stage-", dir="/tmp")
        self.home = os.path.join(self.stage, "home")
        shutil.copytree(os.path.join(SDK_DIR, "node_modules"), os.path.join(self.stage, "sdk", "node_modules"),
                        symlinks=True)
        shutil.copy(os.path.join(SDK_DIR, "package.json"), os.path.join(self.stage, "sdk"))
        for name in os.listdir(HERE):
            if name.endswith(".mjs"):
                shutil.copy(os.path.join(HERE, name), self.stage)
        for d, dirs, files in os.walk(self.stage):
            os.chmod(d, 0o755)
        os.mkdir(self.home, 0o700)
        os.chown(self.home, pw.pw_uid, pw.pw_gid)

    def close(self):
        shutil.rmtree(self.stage, ignore_errors=True)


def sdk_client():
    """A Client (close it when done); skips where node cannot run the SDK or
    the test user cannot be made, fails where node could but the SDK is not
    installed. For agents of any kind (tests/container/test_kube.py drives a
    Pod's)."""
    if SKIP:
        pytest.skip("E2B SDK: %s" % SKIP)
    if os.geteuid() != 0:
        pytest.skip("the SDK suite runs the SDK and the sandbox's commands as a test user (%s): "
                    "making it needs root" % USER)
    if not os.path.isfile(os.path.join(SDK_DIR, "node_modules", "e2b", "package.json")):
        pytest.fail("the pinned E2B SDK is not installed in %s: `make test` installs it "
                    "(npm ci --prefix %s with tests/sdk/package*.json)" % (SDK_DIR, SDK_DIR))
    return Client(_test_user())


@pytest.fixture(scope="session")
def sdk_dir():
    """The client (see Client) for the agent binary; the name is kept for the fixtures' users."""
    if not os.access(AGENT, os.X_OK):
        pytest.fail("no agent binary at %s (run make first)" % AGENT)
    client = sdk_client()
    yield client
    client.close()


class Serve:
    """One `sandbox-agent serve` on 127.0.0.1:PORT; stderr to a file. In
    another network namespace: wrap is the argv prefix that runs it there,
    listen the address it listens on, host the one clients reach it at, and
    inside() the context in which the test's own sockets reach it."""

    def __init__(self, client, tmp_path, pid1, wrap=(), listen="127.0.0.1", host="127.0.0.1",
                 inside=contextlib.nullcontext, **env):
        self.client = client
        self.port = free_port()
        self.host = host
        self.inside = inside
        self.url = "http://%s:%d" % (host, self.port)
        self.pid1 = pid1
        self.token = env.get("SANDBOX_AGENT_TOKEN")
        self.errpath = str(tmp_path / ("agent-%d.err" % self.port))
        self.errf = open(self.errpath, "wb")
        argv = list(wrap) + (UNSHARE if pid1 else []) + [AGENT, "serve"]
        env.setdefault("SANDBOX_AGENT_USER", USER)
        self.proc = subprocess.Popen(argv, env=clean_env(SANDBOX_AGENT_LISTEN="%s:%d" % (listen, self.port), **env),
                                     stdin=subprocess.DEVNULL, stdout=self.errf, stderr=self.errf)
        self.stopped = None
        self.wait_ready()

    def stderr(self):
        with open(self.errpath, "rb") as f:
            return f.read().decode(errors="replace")

    def health(self):
        with self.inside():
            c = http.client.HTTPConnection(self.host, self.port, timeout=5)
            c.connect()
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
        if not self.pid1:  # ip netns exec execs: its pid is the agent's
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


def _start(client, tmp_path, pid1, **env):
    if pid1 and os.geteuid() != 0:
        pytest.skip("PID 1 in a fresh PID namespace needs root (unshare --pid)")
    return Serve(client, tmp_path, pid1, **env)


def _finish(agents):
    for a in agents:
        rc, err = a.stop()
        assert rc == 0, "agent exit status %r after SIGTERM; stderr:\n%s" % (rc, err[-3000:])
        assert "AddressSanitizer" not in err and "runtime error" not in err, err[-6000:]


@pytest.fixture(params=[False, True], ids=["child", "pid1"])
def serve(request, tmp_path, sdk_dir):
    """The agent as an ordinary process, then as PID 1 (process tests)."""
    a = _start(sdk_dir, tmp_path, request.param)
    yield a
    _finish([a])


@pytest.fixture
def serve1(tmp_path, sdk_dir):
    """The agent as an ordinary process only (file tests)."""
    a = _start(sdk_dir, tmp_path, False)
    yield a
    _finish([a])


@pytest.fixture
def work(sdk_dir):
    """A fresh directory under /tmp, the test user's, that `nobody` can
    traverse (pytest's own tmp_path sits in a 0700 directory)."""
    d = tempfile.mkdtemp(prefix="sa-sdk-", dir="/tmp")
    os.chmod(d, 0o755)
    os.chown(d, sdk_dir.pw.pw_uid, sdk_dir.pw.pw_gid)
    yield os.path.realpath(d)
    shutil.rmtree(d, ignore_errors=True)


def sdk(agent, script, scenario, work="/tmp", arg=None, token=None, expect_ok=True, wrap=()):
    """Run one scenario as the test user; its `result` (or, with
    expect_ok=False, the whole answer). wrap: an argv prefix node runs
    under (as root, e.g. `ip netns exec NS`), the user then taken by setpriv."""
    client = agent.client
    env = clean_env(E2B_SANDBOX_URL=agent.url, SANDBOX_AGENT_SDK_DIR=os.path.join(client.stage, "sdk"),
                    SANDBOX_AGENT_SDK_WORK=work, SANDBOX_AGENT_SDK_TOKEN=token,
                    SANDBOX_AGENT_SDK_USER=USER, SANDBOX_AGENT_SDK_USER_HOME=USER_HOME,
                    SANDBOX_AGENT_SDK_TIMEOUT_MS=str(SCENARIO_MS), HOME=client.home, USER=USER, LOGNAME=USER)
    argv = ["node", os.path.join(client.stage, script), scenario] + ([arg] if arg else [])
    ids = dict(user=client.pw.pw_uid, group=client.pw.pw_gid, extra_groups=[])
    if wrap:
        argv = list(wrap) + ["setpriv", "--reuid=%d" % client.pw.pw_uid, "--regid=%d" % client.pw.pw_gid,
                             "--clear-groups"] + argv
        ids = {}
    try:
        p = subprocess.run(argv, env=env, cwd=client.stage, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=NODE_TIMEOUT, **ids)
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
