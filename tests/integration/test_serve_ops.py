"""`serve`'s orchestrator routes (README "sandbox-agent serve": orchestrator
routes), black-box over a Unix socket (or TCP where the address matters):

GET /metrics: envd's Metrics object, every field and its unit, behind the
token; the sandbox's own figures: the memory cgroup's limit as mem_total
inside a cgroup made for the test (and in a container's view of cgroup
v1, the group mounted as the hierarchy's root), the quota of a CPU cgroup as
cpu_count, the CPU used between two calls, the disk of / or of
SANDBOX_AGENT_DISK_PATH.

POST /init: envVars reach later processes (the request's envs win, a
later /init merges), defaultUser and defaultWorkdir apply to requests
naming none, an unknown user or a malformed body is 400 and changes
nothing, the token's rules (set when none; replaced only with the
current one, 401 otherwise; never seen by a process), AWAIT_TOKEN (only
/health and /init answer until one is set: 503), the timestamp's skew
logged when the agent may not set the clock, the unsupported fields
logged once.
"""
import json
import os
import pwd
import shutil
import tempfile
import time

import pytest

from cgroups import MemoryCgroup, CpuCgroup, cgroup_mounts
from conftest import PY, TIMEOUT, free_port, started_agents, wait_until
from connectc import ServeAgent, end_of, head_bytes, output

METRICS_KEYS = ["ts", "cpu_count", "cpu_used_pct", "mem_total", "mem_used", "mem_cache", "mem_total_mib",
                "mem_used_mib", "disk_used", "disk_total"]


@pytest.fixture
def serve(agent):
    yield from started_agents(lambda **env: ServeAgent(agent, **env))


def rest(a, method, path, body=None, token=True, headers=None):
    """One REST request on a fresh connection: the Reply."""
    data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    h = {"Content-Length": str(len(data))}
    if body is not None:
        h["Content-Type"] = "application/json"
    if token is True and a.token:
        h["X-Access-Token"] = a.token
    elif isinstance(token, str):
        h["X-Access-Token"] = token
    h.update(headers or {})
    c = a.conn()
    try:
        c.send(head_bytes(method, path, h) + data)
        return c.response()
    finally:
        c.close()


def init(a, body, token=True):
    return rest(a, "POST", "/init", body, token)


def metrics(a, token=True):
    r = rest(a, "GET", "/metrics", token=token)
    assert r.status == 200, (r.status, r.body)
    return r.json()


def run_out(a, cmd, *args, **kw):
    """Start cmd, wait for its end: (stdout bytes, end event)."""
    s, pid = a.start(cmd, *args, **kw)
    msgs, _ = s.collect()
    return output(msgs), end_of(msgs)


# ---- GET /metrics ------------------------------------------------------------------

def test_metrics_fields_and_units(serve):
    a = serve()
    m = metrics(a)
    assert list(m) == METRICS_KEYS
    for k in METRICS_KEYS:
        assert isinstance(m[k], float if k == "cpu_used_pct" else int), (k, m[k])
    assert abs(m["ts"] - time.time()) < 5
    assert 1 <= m["cpu_count"] <= len(os.sched_getaffinity(a.pid))
    assert 0 <= m["cpu_used_pct"] <= 100 and round(m["cpu_used_pct"], 2) == m["cpu_used_pct"]
    assert 0 < m["mem_used"] <= m["mem_total"]
    assert m["mem_total_mib"] == m["mem_total"] >> 20 and m["mem_used_mib"] == m["mem_used"] >> 20
    with open("/proc/meminfo") as f:
        host = int(f.readline().split()[1]) << 10
    assert m["mem_total"] <= host
    st = os.statvfs("/")
    assert m["disk_total"] == st.f_blocks * st.f_frsize
    assert abs(m["disk_used"] - (st.f_blocks - st.f_bavail) * st.f_frsize) < (256 << 20)
    r = rest(a, "GET", "/metrics", headers={"Connection": "close"})
    assert r.headers["content-type"] == "application/json" and r.headers["cache-control"] == "no-store"


def test_metrics_needs_the_token(serve):
    a = serve()
    r = rest(a, "GET", "/metrics", token=False)
    assert r.status == 401 and r.json()["code"] == "unauthenticated"
    r = rest(a, "GET", "/metrics", token="wrong")
    assert r.status == 401
    assert rest(a, "POST", "/metrics", body={}).status == 405


def test_metrics_disk_path(serve):
    a = serve(SANDBOX_AGENT_DISK_PATH="/dev/shm")
    st = os.statvfs("/dev/shm")
    m = metrics(a)
    assert m["disk_total"] == st.f_blocks * st.f_frsize
    b = serve(SANDBOX_AGENT_DISK_PATH="/no/such/dir")
    r = rest(b, "GET", "/metrics")
    assert r.status == 500 and "/no/such/dir" in r.json()["message"]


def test_metrics_cpu_used_between_calls(serve):
    """A busy loop between two calls shows as CPU used; idle before it."""
    a = serve()
    metrics(a)
    s, pid = a.start("/bin/sh", "-c", "while :; do :; done")

    def cpu_seconds():
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    wait_until(lambda: cpu_seconds() >= 0.3, "the busy loop to use 0.3 s of CPU")
    m = metrics(a)
    assert 5 <= m["cpu_used_pct"] <= 100, m
    a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    s.collect()


def test_metrics_report_the_memory_cgroup_limit(agent):
    cg = MemoryCgroup(64 << 20)
    if cg.why:
        pytest.skip(cg.why)
    a = None
    try:
        a = ServeAgent(agent, wrap=cg.wrap)
        m = metrics(a)
        assert m["mem_total"] == 64 << 20 and m["mem_total_mib"] == 64
        assert 0 < m["mem_used"] <= 64 << 20
        # The group's usage grows with what its processes hold.
        s, pid = a.start(PY, "-c", "import sys; b = bytearray(24 << 20); print('held', flush=True); "
                                   "sys.stdin.read()", msg={"stdin": True})
        msgs = []
        while b"held" not in output(msgs):  # each next() is bounded
            msgs.append(s.next()[1])
        assert metrics(a)["mem_used"] >= m["mem_used"] + (16 << 20)
        a.unary("process.Process/CloseStdin", {"process": {"pid": pid}})
        s.collect()
    finally:
        if a:
            a.stop()
        cg.close()


# A container's view of cgroup v1 without a cgroup namespace (runc's, podman's
# and the kubelet's default there): the hierarchy is mounted with the
# container's own group as its root, while /proc/self/cgroup names the full path.
CONTAINER_VIEW = (
    'T=$(mktemp -d) && mount --bind "$0" "$T" && umount -l "$1" && mount --move "$T" "$1" '
    '&& rmdir "$T" && echo 0 > "$1/cgroup.procs" && shift && exec "$@"')


def test_metrics_report_the_limit_in_a_container_view_of_cgroup_v1(agent):
    cg = MemoryCgroup(64 << 20)
    if cg.why:
        pytest.skip(cg.why)
    a = None
    try:
        if cg.kind == "v2":
            pytest.skip("the memory controller is on cgroup v2 here: no v1 container view to make")
        mnt = [m for t, opts, _, m in cgroup_mounts() if t == "cgroup" and "memory" in opts]
        view = ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", CONTAINER_VIEW, cg.dir, mnt[0]]
        a = ServeAgent(agent, wrap=view)
        m = metrics(a)
        assert m["mem_total"] == 64 << 20, (m, a.stderr())
        assert 0 < m["mem_used"] <= 64 << 20
    finally:
        if a:
            a.stop()
        cg.close()


def test_metrics_cpu_count_is_the_quota(agent):
    cg = CpuCgroup(50000, 100000)  # half a CPU: rounded up, one
    if cg.why:
        pytest.skip(cg.why)
    a = None
    try:
        a = ServeAgent(agent, wrap=cg.wrap)
        assert metrics(a)["cpu_count"] == 1
    finally:
        if a:
            a.stop()
        cg.close()


# ---- POST /init: the environment, the user, the directory ------------------------------

def test_init_env_vars_reach_later_processes(serve):
    a = serve()
    r = init(a, {"envVars": {"FROM_INIT": "one", "OTHER": "x"}})
    assert r.status == 204 and r.body == b"" and r.headers.get("cache-control") == "no-store"
    out, end = run_out(a, "/bin/sh", "-c", 'echo "$FROM_INIT $OTHER"')
    assert out == b"one x\n"
    out, _ = run_out(a, "/bin/sh", "-c", 'echo "$FROM_INIT $OTHER"', envs={"OTHER": "mine"})
    assert out == b"one mine\n"  # the request's own envs win
    assert init(a, {"envVars": {"OTHER": "y", "THIRD": "3"}}).status == 204  # merged
    out, _ = run_out(a, "/bin/sh", "-c", 'echo "$FROM_INIT $OTHER $THIRD"')
    assert out == b"one y 3\n"
    envs = rest(a, "GET", "/envs").json()
    assert envs["FROM_INIT"] == "one" and envs["OTHER"] == "y"


@pytest.fixture
def open_dir():
    """A directory every user may enter (a pytest tmp_path is root's alone)."""
    d = tempfile.mkdtemp(prefix="sa-wd-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_init_default_user_and_workdir(serve, open_dir):
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user")
    a = serve()
    wd = open_dir
    assert init(a, {"defaultUser": "nobody", "defaultWorkdir": str(wd)}).status == 204
    out, end = run_out(a, "/bin/sh", "-c", "id -un; pwd")
    assert out == b"nobody\n%s\n" % wd.encode(), end
    out, _ = run_out(a, "/bin/sh", "-c", "id -un; pwd", cwd="/")
    assert out == b"nobody\n/\n"  # a request naming its cwd keeps it
    out, _ = run_out(a, "/bin/sh", "-c", "id -un", user="root")
    assert out == b"root\n"  # a request naming its user keeps it
    assert rest(a, "GET", "/envs").json()["USER"] == "nobody"


def test_init_unknown_user_is_400_and_changes_nothing(serve):
    a = serve()
    r = init(a, {"envVars": {"SHOULD_NOT": "be"}, "defaultUser": "no-such-user-x", "accessToken": "new-token",
                 "defaultWorkdir": "/"})
    assert r.status == 400 and r.json()["code"] == "invalid_argument" and "no-such-user-x" in r.json()["message"]
    out, _ = run_out(a, "/bin/sh", "-c", 'echo "[$SHOULD_NOT]"; pwd')
    assert out == b"[]\n%s\n" % pwd.getpwuid(os.geteuid()).pw_dir.encode()  # the home, not the workdir
    assert rest(a, "GET", "/envs").status == 200              # the old token still holds
    assert rest(a, "GET", "/envs", token="new-token").status == 401


@pytest.mark.parametrize("body", [
    b"{", b"[]", b'"x"', b'{"envVars": []}', b'{"envVars": {"A": 1}}', b'{"envVars": {"A=B": "x"}}',
    b'{"accessToken": 7}', b'{"accessToken": "with space"}', b'{"defaultWorkdir": "relative"}',
    b'{"timestamp": "yesterday"}', b'{"envVars": {"OK": "1"}, "timestamp": "2024-13-01T00:00:00Z"}',
])
def test_init_malformed_body_is_400_and_changes_nothing(serve, body):
    a = serve()
    r = init(a, body)
    assert r.status == 400 and r.json()["code"] == "invalid_argument", (r.status, r.body)
    out, _ = run_out(a, "/bin/sh", "-c", 'echo "[$OK]"')
    assert out == b"[]\n"
    assert rest(a, "GET", "/health").status == 204


def test_init_bounds_and_methods(serve):
    a = serve()
    many = {"envVars": {"V%d" % i: "x" for i in range(1025)}}
    assert init(a, many).status == 400
    assert init(a, {"envVars": {"V": "x" * (128 << 10)}}).status == 400
    assert init(a, {"envVars": {"V%d" % i: "x" for i in range(1024)}}).status == 204
    assert init(a, {"envVars": {"W": "x"}}).status == 400  # 1025 in all once merged
    assert rest(a, "GET", "/init").status == 405
    assert init(a, b"").status == 204 and init(a, b"null").status == 204  # no body: nothing to change


# ---- POST /init: the token ---------------------------------------------------------------

def test_init_sets_a_token_when_there_is_none(serve):
    a = serve(SANDBOX_AGENT_TOKEN=None)
    assert rest(a, "GET", "/envs", token=False).status == 200
    assert init(a, {"accessToken": "fresh-1"}, token=False).status == 204
    assert rest(a, "GET", "/envs", token=False).status == 401
    assert rest(a, "GET", "/envs", token="fresh-1").status == 200
    assert rest(a, "GET", "/health", token=False).status == 204  # /health never needs it
    assert init(a, {"accessToken": "other"}, token=False).status == 401  # now it takes the current one


def test_init_replaces_the_token_only_with_the_current_one(serve):
    a = serve(SANDBOX_AGENT_TOKEN="t0-current")
    assert init(a, {"accessToken": "t1-new"}, token=False).status == 401
    assert init(a, {"accessToken": "t1-new"}, token="wrong").status == 401
    assert rest(a, "GET", "/envs", token="t1-new").status == 401  # nothing changed
    assert init(a, {"accessToken": "t1-new"}, token="t0-current").status == 204
    assert rest(a, "GET", "/envs", token="t0-current").status == 401
    assert rest(a, "GET", "/envs", token="t1-new").status == 200
    a.token = "t1-new"
    # Never in a process's environment, nor in the agent's.
    out, _ = run_out(a, "/bin/sh", "-c", "cat /proc/self/environ /proc/%d/environ 2>/dev/null; env" % a.pid)
    assert b"t1-new" not in out and b"t0-current" not in out
    assert b"t1-new" not in a.stderr().encode() and b"t0-current" not in a.stderr().encode()


def tcp_agent(agent, port, **env):
    return ServeAgent(agent, wait=False, SANDBOX_AGENT_LISTEN="0.0.0.0:%d" % port, **env)


def test_await_token_refuses_other_routes_until_init(agent):
    port = free_port()
    a = tcp_agent(agent, port, SANDBOX_AGENT_TOKEN=None, SANDBOX_AGENT_AWAIT_TOKEN="1")
    try:
        a.wait_ready()
        assert "whoever reaches it first" in a.stderr()
        assert rest(a, "GET", "/health", token=False).status == 204
        for method, path, code in (("GET", "/envs", "unavailable"), ("GET", "/metrics", "unavailable"),
                                   ("GET", "/files?path=/etc/hostname", 503)):  # /files: envd's numeric code
            r = rest(a, method, path, token=False)
            assert r.status == 503 and r.json()["code"] == code, (path, r.status, r.body)
        r = a.unary("process.Process/List", {})
        assert r.status == 503
        assert init(a, {"accessToken": "orchestrated", "envVars": {"E": "1"}}, token=False).status == 204
        assert rest(a, "GET", "/envs", token=False).status == 401
        a.token = "orchestrated"
        assert rest(a, "GET", "/envs").json()["E"] == "1"
        # The first one won: another /init without it is refused.
        assert init(a, {"accessToken": "late"}, token=False).status == 401
        assert rest(a, "GET", "/envs", token="late").status == 401
    finally:
        rc, err = a.stop()
    assert rc == 0, err


def test_public_address_without_a_token_still_refused(agent):
    a = tcp_agent(agent, free_port(), SANDBOX_AGENT_TOKEN=None)
    assert a.proc.wait(timeout=TIMEOUT) == 2
    rc, err = a.stop()
    assert "SANDBOX_AGENT_AWAIT_TOKEN" in err and "SANDBOX_AGENT_TOKEN" in err
    b = tcp_agent(agent, free_port(), SANDBOX_AGENT_TOKEN=None, SANDBOX_AGENT_AWAIT_TOKEN="yes")
    assert b.proc.wait(timeout=TIMEOUT) == 2
    rc, err = b.stop()
    assert "SANDBOX_AGENT_AWAIT_TOKEN must be 1 or 0" in err


# ---- POST /init: the clock, and what is not supported -------------------------------------

def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)


def test_init_timestamp_skew_logged_without_cap_sys_time(agent):
    """The agent started without CAP_SYS_TIME (dropped from the bounding
    set): a timestamp 1 s ahead of the guest clock (the guest is behind, as
    after a snapshot's resume) cannot be acted on, and is logged; so is a
    clock 10 s ahead. The machine's clock is never moved."""
    wrap = ["/usr/bin/setpriv", "--bounding-set=-sys_time", "--inh-caps=-sys_time"]
    a = ServeAgent(agent, wrap=wrap)
    try:
        with open("/proc/%d/status" % a.pid) as f:
            eff = [l for l in f if l.startswith("CapEff:")][0]
        assert not int(eff.split()[1], 16) & (1 << 25), eff  # CAP_SYS_TIME is 25
        before = time.time()
        assert init(a, {"timestamp": iso(time.time() + 1.0)}).status == 204
        assert abs(time.time() - before) < 0.9
        assert init(a, {"timestamp": iso(time.time() - 10.0)}).status == 204
    finally:
        rc, err = a.stop()
    assert rc == 0, err
    behind = [l for l in err.splitlines() if "behind" in l]
    assert len(behind) == 1 and "cannot be set" in behind[0], err
    assert float(behind[0].split("is ")[1].split(" s")[0]) > 0.9
    assert len([l for l in err.splitlines() if "ahead" in l and "left alone" in l]) == 1, err


def test_init_unsupported_fields_logged_once(serve):
    a = serve()
    body = {"volumeMounts": [{"nfs_target": "10.0.0.1:/x", "path": "/mnt"}], "hyperloopIP": "10.0.0.2",
            "lifecycleID": "abc", "caBundle": "-----BEGIN CERTIFICATE-----"}
    assert init(a, body).status == 204
    assert init(a, body).status == 204
    rc, err = a.stop()
    for name in ("volumeMounts", "hyperloopIP", "lifecycleID", "caBundle"):
        assert err.count("'%s' is not supported" % name) == 1, err
