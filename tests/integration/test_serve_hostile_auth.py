"""`serve` against a hostile client (README "sandbox-agent serve":
Connections, and "Orchestrator routes": POST /init), black-box over raw
sockets, so a body can be withheld and a slot held:

The token is checked against the token as it is when a request is
applied, not when its head came: a body withheld across a rotation (or,
with SANDBOX_AGENT_AWAIT_TOKEN=1, across the orchestrator's first /init)
is refused, and a body still being applied (an upload) is cut off. Only
a request that proved the current token (or set a new one) makes a
connection trusted: token-less /init calls while the agent awaits its
token, and connections trusted under a token since replaced, never keep
the orchestrator out.

Slots: a stream whose client closed its socket is found as soon as its
EOF comes (over TCP, the client answers the keepalive written then with
a reset), its process runs on; a half-closed stream is a stranger's slot
when the slots are full; so no number of closed streams keeps /health
waiting.
"""
import json
import os
import socket
import time

import pytest

from conftest import free_port, started_agents, wait_until
from connectc import ServeAgent, envelope, head_bytes

START = "process.Process/Start"
LIST = "process.Process/List"
# A wait the agent must answer within, on a loaded machine; what these
# tests guard against took the HTTP timeout (60 s) or a keepalive (50 s).
PROMPT = 20


@pytest.fixture
def serve(agent):
    yield from started_agents(lambda **env: ServeAgent(agent, **env))


def tcp(serve, **env):
    return serve(SANDBOX_AGENT_LISTEN="127.0.0.1:%d" % free_port(), **env)


def request(method, path, body=b"", token=None, headers=None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    h = {"Content-Length": str(len(data)), "Content-Type": "application/json"}
    if token:
        h["X-Access-Token"] = token
    h.update(headers or {})
    return head_bytes(method, path, h) + data


def call(a, method, path, body=b"", token=None, headers=None):
    """One request on a fresh connection (closed after): the Reply."""
    c = a.conn()
    try:
        c.send(request(method, path, body, token, headers))
        return c.response(PROMPT)
    finally:
        c.close()


def withheld(a, method, path, body, token=None, ctype="application/json"):
    """A connection that sent a request's head and not its body, the head
    known to have passed the agent's check (it answered 100 Continue)."""
    c = a.conn()
    h = {"Content-Length": str(len(body)), "Content-Type": ctype, "Expect": "100-continue"}
    if token:
        h["X-Access-Token"] = token
    c.send(head_bytes("POST", path, h))
    assert c.head(PROMPT)[0] == 100
    return c


def closed_by_agent(c, timeout=PROMPT):
    """True once the agent closes c (whatever it sent before), within timeout."""
    c.s.settimeout(timeout)
    try:
        while c.s.recv(1 << 16):
            pass
    except ConnectionResetError:
        pass
    return True


def held(a, token):
    """A keep-alive connection whose GET /envs had token: (conn, status)."""
    c = a.conn()
    c.send(request("GET", "/envs", token=token))
    return c, c.response(PROMPT).status


# ---- 1. a revoked token's withheld body ------------------------------------------

def test_a_body_withheld_across_a_rotation_is_refused(serve):
    a = serve(SANDBOX_AGENT_TOKEN="t0-current", SANDBOX_AGENT_LOG="info")
    evil = json.dumps({"accessToken": "t2-evil"}).encode()
    att = withheld(a, "POST", "/init", evil, token="t0-current")
    assert call(a, "POST", "/init", {"accessToken": "t1-next"}, token="t0-current").status == 204
    assert call(a, "GET", "/envs", token="t0-current").status == 401
    att.send(evil)
    r = att.response(PROMPT)
    assert r.status == 401 and r.json()["code"] == "unauthenticated", (r.status, r.body)
    assert call(a, "GET", "/envs", token="t1-next").status == 200
    assert call(a, "GET", "/envs", token="t2-evil").status == 401
    assert a.stderr().count("access token replaced") == 1, a.stderr()


def test_an_rpc_withheld_across_a_rotation_is_refused(serve, tmp_path):
    a = serve(SANDBOX_AGENT_TOKEN="t0-current")
    mark = tmp_path / "ran"
    body = envelope({"process": {"cmd": "/bin/sh", "args": ["-c", "touch " + str(mark)]}})
    att = withheld(a, "POST", "/" + START, body, token="t0-current", ctype="application/connect+json")
    assert call(a, "POST", "/init", {"accessToken": "t1-next"}, token="t0-current").status == 204
    att.send(body)
    r = att.response(PROMPT)
    assert r.status == 401 and r.json()["code"] == "unauthenticated", (r.status, r.body)
    a.token = "t1-next"
    assert a.unary(LIST, {}).json() == {"processes": []}
    assert not mark.exists()


def test_an_upload_under_way_is_cut_off_by_a_rotation(serve, tmp_path):
    a = serve(SANDBOX_AGENT_TOKEN="t0-current")
    target = tmp_path / "up"
    up = a.conn()
    up.send(head_bytes("POST", "/files?path=" + str(target), {
        "X-Access-Token": "t0-current", "Content-Type": "application/octet-stream",
        "Content-Length": "10"}) + b"abc")
    # The upload is under way once its temporary file is there.
    wait_until(lambda: [n for n in os.listdir(tmp_path) if n != "up"], "the upload's temporary file",
               timeout=PROMPT)
    assert call(a, "POST", "/init", {"accessToken": "t1-next"}, token="t0-current").status == 204
    assert closed_by_agent(up)
    up.close()
    wait_until(lambda: not os.listdir(tmp_path), "the temporary file removed")
    assert not target.exists()


# ---- 2. a stranger's withheld body against the orchestrator's first /init ----------

def test_await_token_a_strangers_withheld_body_loses_to_the_first_init(serve):
    a = serve(SANDBOX_AGENT_TOKEN=None, SANDBOX_AGENT_AWAIT_TOKEN="1")
    evil = json.dumps({"accessToken": "evil", "envVars": {"MINE": "evil"}}).encode()
    stranger = withheld(a, "POST", "/init", evil)
    r = call(a, "POST", "/init", {"accessToken": "orchestrated", "envVars": {"MINE": "1"}})
    assert r.status == 204
    stranger.send(evil)
    r = stranger.response(PROMPT)
    assert r.status == 401 and r.json()["code"] == "unauthenticated", (r.status, r.body)
    assert call(a, "GET", "/envs", token="evil").status == 401
    envs = call(a, "GET", "/envs", token="orchestrated")
    assert envs.status == 200 and envs.json()["MINE"] == "1"


# ---- 3. slots: only the current token's holders keep theirs ------------------------

def test_await_token_strangers_inits_never_hold_the_slots(serve):
    a = serve(SANDBOX_AGENT_TOKEN=None, SANDBOX_AGENT_AWAIT_TOKEN="1", SANDBOX_AGENT_MAX_CONNECTIONS="4")
    strangers = []
    for _ in range(4):
        c = a.conn()
        c.send(request("POST", "/init", {}))
        assert c.response(PROMPT).status == 204
        strangers.append(c)
    start = time.monotonic()
    r = call(a, "POST", "/init", {"accessToken": "orchestrated"})
    assert r.status == 204 and time.monotonic() - start < PROMPT
    assert closed_by_agent(strangers[0])  # the oldest stranger's slot
    for c in strangers:
        c.close()


def test_connections_trusted_under_a_replaced_token_lose_their_slots(serve):
    a = serve(SANDBOX_AGENT_TOKEN="t0-current", SANDBOX_AGENT_MAX_CONNECTIONS="2")
    old, status = held(a, "t0-current")
    assert status == 200
    orch = a.conn()
    orch.send(request("POST", "/init", {"accessToken": "t1-next"}, token="t0-current"))
    assert orch.response(PROMPT).status == 204
    late, status = held(a, "t1-next")  # the slot trusted under t0-current is a stranger's now
    assert status == 200
    assert closed_by_agent(old)
    # The orchestrator's connection, which set the token, kept its trust.
    orch.send(request("GET", "/envs", token="t1-next"))
    assert orch.response(PROMPT).status == 200
    for c in (old, orch, late):
        c.close()


# ---- 9. closed streams free their slots -------------------------------------------

def sockets(pid):
    """The sockets the agent has open: its listener, and a connection each."""
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            n += os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:")
        except FileNotFoundError:
            pass
    return n


def listed(a):
    return sorted(p["pid"] for p in a.unary(LIST, {}).json()["processes"])


def kill_all(a, pids):
    for pid in pids:
        a.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})


def test_a_closed_streams_connection_ends_at_once_its_process_runs_on(serve):
    """Over TCP a client gone both ways looks like one that shut its side
    until it answers a write; the keepalive written at its EOF is that
    write, so its connection ends now, not at the next keepalive (50 s)."""
    a = tcp(serve)
    wait_until(lambda: sockets(a.pid) == 1, "the listener alone")  # wait_ready's connection gone
    pids = []
    for _ in range(16):
        s, pid = a.start("/bin/sh", "-c", "exec sleep 120")
        s.close()
        pids.append(pid)
    wait_until(lambda: sockets(a.pid) == 1, "the closed streams' connections to end", timeout=PROMPT)
    assert listed(a) == sorted(pids)  # left running, and retained
    kill_all(a, pids)


def test_closed_streams_never_keep_health_waiting(serve):
    """As many closed streams as there are slots: the next Start and a
    /health are answered at once."""
    a = tcp(serve, SANDBOX_AGENT_MAX_CONNECTIONS="32")
    pids = []
    for _ in range(32):
        s, pid = a.start("/bin/sh", "-c", "exec sleep 120")
        s.close()
        pids.append(pid)
    t = time.monotonic()
    s, pid = a.start("/bin/sh", "-c", "exec sleep 120")
    pids.append(pid)
    c = a.conn()
    c.send(request("GET", "/health", token=a.token))
    assert c.response(PROMPT).status == 204
    assert time.monotonic() - t < PROMPT
    c.close()
    s.close()
    kill_all(a, pids)


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_half_closed_streams_are_strangers_slots_when_full(serve, transport):
    """Streams whose clients shut their writing side (alive, reading) hold
    slots until the slots are full; then each newcomer takes the oldest."""
    a = (tcp(serve, SANDBOX_AGENT_MAX_CONNECTIONS="4") if transport == "tcp"
         else serve(SANDBOX_AGENT_MAX_CONNECTIONS="4"))
    streams, pids = [], []
    for _ in range(4):
        s, pid = a.start("/bin/sh", "-c", "exec sleep 120")
        s.c.s.shutdown(socket.SHUT_WR)
        streams.append(s)
        pids.append(pid)
    c, status = held(a, a.token)
    assert status == 200
    assert closed_by_agent(streams[0].c)
    assert listed(a) == sorted(pids)  # its process runs on
    c.close()
    for s in streams:
        s.close()
    kill_all(a, pids)
