"""`sandbox-agent serve`: the HTTP/1.1 and Connect layer, black-box.

Drives the agent over a Unix socket in tmp_path (or a TCP port found free by
binding port 0) with a small client over raw sockets, so every byte on the
wire is the test's choice: keep-alive, chunked bodies, pipelining, oversize
heads and bodies, garbage, idle and truncated clients, the connection bound,
the token, the Connect error shape, and the stop on SIGTERM.
"""
import base64
import http.client
import json
import os
import resource
import signal
import socket
import struct
import subprocess
import threading
import time

import pytest

from conftest import TIMEOUT, clean_env, free_port, started_agents

TOKEN = "t0ken-abc"
NONCE = "n0nce-xyz"


class Agent:
    """One `serve` process on a Unix socket (or TCP when listen is given)."""

    def __init__(self, agent, tmp_path, **env):
        self.path = str(tmp_path / "agent.sock")
        self.listen = env.setdefault("SANDBOX_AGENT_LISTEN", "unix:" + self.path)
        self.err = None
        self.proc = subprocess.Popen([agent, "serve"], env=clean_env(**env),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.wait_ready()

    def sock(self, timeout=10):
        if self.listen.startswith("unix:"):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(self.path)  # blocking: a full backlog waits, as TCP's would
            s.settimeout(timeout)
        else:
            host, port = self.listen.rsplit(":", 1)
            s = socket.create_connection((host, int(port)), timeout=timeout)
        return s

    def wait_ready(self, deadline=20):
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            assert self.proc.poll() is None, "agent exited: %r" % (self.proc.communicate()[1],)
            try:
                c = Client(self.sock(timeout=2))
                c.send(request("GET", "/health", token=TOKEN))
                if c.response().status in (204, 401):
                    c.close()
                    return
            except OSError:
                pass
            time.sleep(0.02)  # polling interval, bounded by the deadline
        pytest.fail("agent did not answer /health within %d s" % deadline)

    def stop(self):
        if self.err is None:
            self.proc.send_signal(signal.SIGTERM)
            out, err = self.proc.communicate(timeout=TIMEOUT)
            self.err = err.decode(errors="replace")
        return self.proc.returncode, self.err


@pytest.fixture
def serve(agent, tmp_path):
    def make(**env):
        env.setdefault("SANDBOX_AGENT_TOKEN", TOKEN)
        return Agent(agent, tmp_path, **env)

    yield from started_agents(make)


def request(method, path, headers=None, body=b"", token=TOKEN, version="HTTP/1.1"):
    lines = ["%s %s %s" % (method, path, version), "Host: agent"]
    if token is not None:
        lines.append("X-Access-Token: " + token)
    for k, v in (headers or {}).items():
        lines.append("%s: %s" % (k, v))
    if body and not any(k.lower() in ("content-length", "transfer-encoding") for k in (headers or {})):
        lines.append("Content-Length: %d" % len(body))
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def chunked(*pieces):
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


class Response:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)


class Client:
    """HTTP/1.1 over one socket; reads exactly one response at a time."""

    def __init__(self, sock):
        self.s = sock
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def _more(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError("connection closed")
        self.buf += d

    def _until(self, sep):
        while sep not in self.buf:
            self._more()
        i = self.buf.index(sep)
        out, self.buf = self.buf[:i], self.buf[i + len(sep):]
        return out

    def _take(self, n):
        while len(self.buf) < n:
            self._more()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def response(self):
        head = self._until(b"\r\n\r\n").decode("latin-1").split("\r\n")
        status = int(head[0].split()[1])
        headers = {}
        for line in head[1:]:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        if status in (100,):
            return self.response()
        if status == 204 or status == 304:
            body = b""
        elif "content-length" in headers:
            body = self._take(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            body = b""
            while True:
                size = int(self._until(b"\r\n").split(b";")[0], 16)
                if size == 0:
                    self._until(b"\r\n")
                    break
                body += self._take(size)
                self._take(2)
        else:
            while True:
                try:
                    self._more()
                except EOFError:
                    break
            body, self.buf = self.buf, b""
        return Response(status, headers, body)

    def closed(self):
        """True when the server closes the connection with nothing more sent."""
        try:
            self._more()
        except EOFError:
            return self.buf == b""
        except ConnectionResetError:
            return True
        return False

    def close(self):
        self.s.close()


def call(agent, *args, **kw):
    c = Client(agent.sock())
    c.send(request(*args, **kw))
    r = c.response()
    c.close()
    return r


# ---- REST routes and the token ----------------------------------------------

def test_health_204(serve):
    a = serve()
    r = call(a, "GET", "/health")
    assert r.status == 204 and r.body == b""
    assert "content-length" not in r.headers


def test_envs_hide_the_secrets(serve):
    a = serve(SANDBOX_JOB_NONCE=NONCE, FOO="bar", ODD="caf\u00e9")
    r = call(a, "GET", "/envs")
    assert r.status == 200
    assert r.headers["content-type"] == "application/json"
    envs = r.json()
    assert envs["FOO"] == "bar" and envs["ODD"] == "caf\u00e9"
    assert "SANDBOX_JOB_NONCE" not in envs and "SANDBOX_AGENT_TOKEN" not in envs
    assert NONCE.encode() not in r.body and TOKEN.encode() not in r.body
    # Wiped from the agent's environment block too, not only from environ.
    try:
        with open("/proc/%d/environ" % a.proc.pid, "rb") as f:
            block = f.read()
    except PermissionError:  # non-dumpable, and we lack CAP_SYS_PTRACE: hidden either way
        return
    assert NONCE.encode() not in block and TOKEN.encode() not in block


@pytest.mark.parametrize("token", [None, "", "t0ken-ab", "t0ken-abcd", "T0KEN-ABC"])
@pytest.mark.parametrize("path", ["/envs", "/metrics", "/process.Process/List", "/nowhere"])
def test_token_required(serve, token, path):
    a = serve()
    r = call(a, "GET", path, token=token)
    assert r.status == 401
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {"code": "unauthenticated", "message": "missing or wrong X-Access-Token"}


@pytest.mark.parametrize("token", [None, "", "wrong"])
def test_health_needs_no_token(serve, token):
    """envd's /health has no security, and a Kubernetes probe cannot send one."""
    a = serve()
    r = call(a, "GET", "/health", token=token)
    assert r.status == 204 and r.body == b""
    assert call(a, "POST", "/health", body=b"x", token=token).status == 405


def test_no_token_needed_without_one(serve):
    a = serve(SANDBOX_AGENT_TOKEN=None)
    assert call(a, "GET", "/health", token=None).status == 204
    assert call(a, "GET", "/health", token="anything").status == 204


def test_routes_and_methods(serve):
    a = serve()
    r = call(a, "POST", "/process.Process/Nope", {"Content-Type": "application/json"}, b"{}")
    assert r.status == 501 and r.json()["code"] == "unimplemented"
    # A wired one answers.
    r = call(a, "POST", "/process.Process/List", {"Content-Type": "application/json"}, b"{}")
    assert r.status == 200 and r.json() == {"processes": []}
    r = call(a, "POST", "/other.Service/Method", {"Content-Type": "application/json"}, b"{}")
    assert r.json()["code"] == "unimplemented"
    r = call(a, "GET", "/nowhere")
    assert r.status == 404 and r.json()["code"] == "not_found"
    r = call(a, "POST", "/health", body=b"x")
    assert r.status == 405 and r.headers["allow"] == "GET"


# ---- connections ------------------------------------------------------------

def test_keep_alive(serve):
    a = serve()
    c = Client(a.sock())
    for _ in range(3):
        c.send(request("GET", "/health"))
        r = c.response()
        assert r.status == 204 and "connection" not in r.headers
    c.send(request("GET", "/envs"))
    assert c.response().status == 200
    c.close()


def test_chunked_request_body(serve):
    a = serve()
    c = Client(a.sock())
    c.send(request("GET", "/health", {"Transfer-Encoding": "chunked"}, chunked(b"hello", b" ", b"world")))
    assert c.response().status == 204
    # The body was read to its end: the connection serves the next request.
    c.send(request("GET", "/health"))
    assert c.response().status == 204
    c.close()


def test_expect_100_continue(serve):
    a = serve()
    c = Client(a.sock())
    c.send(request("GET", "/health", {"Expect": "100-continue", "Content-Length": "5"}))
    head = c._until(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 100 Continue")
    c.send(b"hello")
    assert c.response().status == 204
    c.close()


def test_connection_close_honoured(serve):
    a = serve()
    c = Client(a.sock())
    c.send(request("GET", "/health", {"Connection": "close"}))
    r = c.response()
    assert r.status == 204 and r.headers["connection"] == "close"
    assert c.closed()


def test_http10(serve):
    a = serve()
    c = Client(a.sock())
    c.send(request("GET", "/health", version="HTTP/1.0"))
    assert c.response().status == 204
    assert c.closed()
    c = Client(a.sock())
    c.send(request("GET", "/health", {"Connection": "keep-alive"}, version="HTTP/1.0"))
    r = c.response()
    assert r.status == 204 and r.headers["connection"] == "keep-alive"
    c.send(request("GET", "/health", version="HTTP/1.0"))
    assert c.response().status == 204
    assert c.closed()


def rpc(path, msg, stream=False, headers=None):
    """A Connect request: a unary call, or a server stream's one envelope."""
    data = json.dumps(msg).encode()
    h = {"Content-Type": "application/connect+json" if stream else "application/json",
         "Connect-Protocol-Version": "1"}
    h.update(headers or {})
    return request("POST", path, h, struct.pack(">BI", 0, len(data)) + data if stream else data)


def envelopes(body):
    """The (flags, message) of every envelope of a stream's body."""
    out = []
    while body:
        flags, n = struct.unpack(">BI", body[:5])
        out.append((flags, json.loads(body[5:5 + n])))
        body = body[5 + n:]
    return out


def test_pipelined_requests_are_answered_in_order(serve):
    """Requests sent back to back, before any answer, are each answered, in
    order, on the same connection, which stays open."""
    a = serve(FOO="bar")
    c = Client(a.sock())
    c.send(request("GET", "/health") + request("GET", "/envs") +
           rpc("/process.Process/List", {}) + request("GET", "/health"))
    assert c.response().status == 204
    r = c.response()
    assert r.status == 200 and r.json()["FOO"] == "bar"
    r = c.response()
    assert r.status == 200 and r.json() == {"processes": []}
    assert c.response().status == 204
    c.send(request("GET", "/health"))
    assert c.response().status == 204
    c.close()


def test_a_request_pipelined_after_a_stream_waits_for_its_end(serve):
    a = serve()
    c = Client(a.sock())
    start = rpc("/process.Process/Start", {"process": {"cmd": "/bin/sh", "args": ["-c", "echo hi"]}},
                stream=True)
    c.send(start + request("GET", "/health"))
    r = c.response()
    assert r.status == 200 and r.headers["content-type"] == "application/connect+json"
    msgs = [m for _, m in envelopes(r.body)]
    out = b"".join(base64.b64decode(m["event"]["data"]["stdout"]) for m in msgs
                   if "data" in m.get("event", {}))
    assert out == b"hi\n" and "end" in msgs[-2]["event"] and msgs[-1] == {}
    assert c.response().status == 204
    c.close()


def test_many_pipelined_requests_past_one_read(serve):
    """More pipelined bytes than one read (64 KiB): the agent stops reading
    while it holds some, and answers every request, in order."""
    a = serve()
    c = Client(a.sock())
    n = 3000
    data = b"".join(request("GET", "/health" if i % 2 else "/nowhere") for i in range(n))
    assert len(data) > 2 * 64 * 1024
    # Sent while the answers are read: a client that does not read its
    # answers while it writes can deadlock any HTTP/1.1 server.
    sender = threading.Thread(target=c.send, args=(data,), daemon=True)
    sender.start()
    try:
        assert [c.response().status for _ in range(n)] == [404 if i % 2 == 0 else 204 for i in range(n)]
    finally:
        c.s.shutdown(socket.SHUT_RDWR)  # ends the sender, whatever happened
        sender.join(TIMEOUT)
        c.close()


def test_a_pipelined_request_after_connection_close_is_not_answered(serve):
    a = serve()
    c = Client(a.sock())
    c.send(request("GET", "/health", {"Connection": "close"}) + request("GET", "/envs"))
    r = c.response()
    assert r.status == 204 and r.headers["connection"] == "close"
    assert c.closed()


def half_closed(a, data):
    """A connection that sent data, then shut its writing side."""
    c = Client(a.sock())
    c.send(data)
    c.s.shutdown(socket.SHUT_WR)
    return c


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_half_close_after_a_stream_request_gets_the_whole_stream(serve, transport):
    a = serve(**({"SANDBOX_AGENT_LISTEN": "127.0.0.1:%d" % free_port()} if transport == "tcp" else {}))
    c = half_closed(a, rpc("/process.Process/Start", {"process": {
        "cmd": "/bin/sh", "args": ["-c", "echo one; echo two >&2; echo three"]}}, stream=True))
    r = c.response()
    assert r.status == 200
    msgs = [m for _, m in envelopes(r.body)]
    assert "start" in msgs[0]["event"] and msgs[-1] == {}
    assert msgs[-2]["event"]["end"].get("exitCode", 0) == 0  # proto3 JSON leaves a 0 out
    out = b"".join(base64.b64decode(m["event"]["data"]["stdout"]) for m in msgs
                   if "stdout" in m.get("event", {}).get("data", {}))
    assert out == b"one\nthree\n"
    assert c.closed()  # then the end: no keep-alive after the client's EOF


def test_half_close_after_a_unary_call_and_a_download(serve, tmp_path):
    a = serve()
    c = half_closed(a, rpc("/filesystem.Filesystem/Stat", {"path": str(tmp_path)}))
    r = c.response()
    assert r.status == 200 and r.json()["entry"]["path"] == str(tmp_path)
    assert c.closed()
    data = os.urandom(3 << 20)
    (tmp_path / "f").write_bytes(data)
    c = half_closed(a, request("GET", "/files?path=" + str(tmp_path / "f")))
    r = c.response()
    assert r.status == 200 and r.body == data
    assert c.closed()


def test_half_close_while_idle_or_mid_request_closes(serve):
    a = serve()
    assert half_closed(a, b"").closed()
    assert half_closed(a, b"GET /health HTTP/1.1\r\nHost: x\r\n").closed()
    assert half_closed(a, request("GET", "/health", {"Content-Length": "10"}) + b"abc").closed()
    assert call(a, "GET", "/health").status == 204


def test_oversize_head(serve):
    a = serve()
    c = Client(a.sock())
    c.send(b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * (70 * 1024) + b"\r\n\r\n")
    r = c.response()
    assert r.status == 431 and r.headers["connection"] == "close"
    assert r.json()["code"] == "resource_exhausted"
    assert c.closed()


def test_oversize_body(serve):
    a = serve()
    c = Client(a.sock())
    c.send(request("GET", "/health", {"Content-Length": str(16 * 1024 * 1024 + 1)}))
    r = c.response()
    assert r.status == 413
    assert c.closed()
    # Chunked: found out while reading, past 16 MiB.
    c = Client(a.sock())
    c.send(request("GET", "/health", {"Transfer-Encoding": "chunked"}))
    piece = b"%x\r\n%s\r\n" % (1 << 20, b"x" * (1 << 20))
    try:
        for _ in range(17):
            c.send(piece)
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert c.response().status == 413
    c.close()


@pytest.mark.parametrize("junk", [
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(64),
    b"HELLO\r\n\r\n",
    b"GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
    b"GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
])
def test_garbage_is_400(serve, junk):
    a = serve()
    c = Client(a.sock())
    c.send(junk)
    r = c.response()
    assert r.status == 400 and r.headers["connection"] == "close"
    assert r.json()["code"] == "invalid_argument"
    assert c.closed()
    assert call(a, "GET", "/health").status == 204


@pytest.mark.parametrize("lines,status,code", [
    (["gzip, chunked"], 501, "unimplemented"),
    (["gzip", "chunked"], 501, "unimplemented"),
    (["chunked", "gzip"], 400, "invalid_argument"),
    (["chunked, gzip"], 400, "invalid_argument"),
    (["chunked, chunked"], 400, "invalid_argument"),
    (["gzip"], 400, "invalid_argument"),
])
def test_transfer_codings_other_than_chunked(serve, lines, status, code):
    """RFC 9112 section 6: only a lone, final `chunked` frames a body; a
    coding before it is one this server does not implement (501), anything
    else cannot be framed (400). The body is never read as chunked: the
    request is refused at its head and the connection closes."""
    a = serve()
    c = Client(a.sock())
    head = b"POST /process.Process/List HTTP/1.1\r\nHost: agent\r\nX-Access-Token: %s\r\n" % TOKEN.encode()
    head += b"Content-Type: application/json\r\n"
    head += b"".join(b"Transfer-Encoding: %s\r\n" % v.encode() for v in lines)
    c.send(head + b"\r\n" + chunked(b"{}"))
    r = c.response()
    assert (r.status, r.headers["connection"]) == (status, "close")
    assert r.headers["content-type"] == "application/json"
    assert r.json()["code"] == code
    assert c.closed()


def test_truncated_request_does_not_disturb_others(serve):
    a = serve()
    stuck = Client(a.sock())
    stuck.send(b"POST /process.Process/Start HTTP/1.1\r\nContent-Le")
    gone = Client(a.sock())
    gone.send(request("GET", "/health", {"Content-Length": "100"}, token=TOKEN)[:-2])
    gone.close()
    assert call(a, "GET", "/health").status == 204
    body_half = Client(a.sock())
    body_half.send(request("GET", "/health", {"Content-Length": "10"}) + b"abc")
    assert call(a, "GET", "/health").status == 204
    body_half.close()
    stuck.close()
    assert call(a, "GET", "/health").status == 204


def test_200_idle_connections(serve):
    a = serve()
    idle = [a.sock() for _ in range(200)]
    try:
        assert call(a, "GET", "/health").status == 204
    finally:
        for s in idle:
            s.close()
    assert call(a, "GET", "/health").status == 204


def trusted(a):
    """A keep-alive connection one of whose requests had the token."""
    c = Client(a.sock())
    c.send(request("GET", "/health"))
    assert c.response().status == 204
    return c


def test_connection_bound(serve):
    a = serve(SANDBOX_AGENT_MAX_CONNECTIONS="2")
    held = [trusted(a), trusted(a)]
    # Accepted by the kernel's backlog, but not served while two are open.
    waiting = Client(a.sock())
    waiting.send(request("GET", "/health"))
    waiting.s.settimeout(0.5)
    with pytest.raises(socket.timeout):
        waiting._more()
    held[0].close()
    waiting.s.settimeout(10)
    assert waiting.response().status == 204
    waiting.close()
    held[1].send(request("GET", "/health"))
    assert held[1].response().status == 204
    held[1].close()


def raise_nofile(want):
    """The soft fd limit raised to want (at most the hard limit); the old one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    return soft, hard


def test_idle_strangers_never_keep_out_a_client_with_the_token(serve):
    """1,000 sockets that never send a byte (4 times the default bound) do
    not keep a client with the token out, nor close one it had open: at the
    bound each newcomer displaces the oldest connection none of whose
    requests had the token. The wait is bounded (the agent's default HTTP
    timeout, 60 s, is what it was)."""
    old = raise_nofile(1200)
    port = free_port()
    a = serve(SANDBOX_AGENT_LISTEN="127.0.0.1:%d" % port)
    flood = []
    try:
        keep = trusted(a)
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= 1100, "cannot open 1,000 sockets here"
        for _ in range(1000):
            s = socket.socket()
            s.setblocking(False)
            flood.append(s)
            s.connect_ex(("127.0.0.1", port))
        late = Client(a.sock(timeout=10))
        late.send(request("GET", "/health"))
        assert late.response().status == 204
        late.close()
        keep.send(request("GET", "/health"))
        assert keep.response().status == 204
        keep.close()
    finally:
        for s in flood:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, old)


def test_a_refused_connection_is_displaced_before_a_trusted_one(serve):
    """A connection whose requests were refused for the token (a 401 keeps
    it open) is a stranger's: it is displaced; one with the token is not."""
    a = serve(SANDBOX_AGENT_MAX_CONNECTIONS="2")
    keep = trusted(a)
    stranger = Client(a.sock())
    stranger.send(request("GET", "/envs", token="wrong"))
    assert stranger.response().status == 401
    late = Client(a.sock())
    late.send(request("GET", "/health"))
    assert late.response().status == 204  # the stranger's slot
    stranger.s.settimeout(10)
    assert stranger.closed()
    keep.send(request("GET", "/health"))
    assert keep.response().status == 204
    for c in (keep, late):
        c.close()


def test_health_without_the_token_leaves_the_connection_a_strangers(serve):
    """/health answers without the token (a Kubernetes probe's), but such a
    connection is displaced at the bound like any stranger's."""
    a = serve(SANDBOX_AGENT_MAX_CONNECTIONS="2")
    keep = trusted(a)
    probe = Client(a.sock())
    probe.send(request("GET", "/health", token=None))
    assert probe.response().status == 204
    late = Client(a.sock())
    late.send(request("GET", "/health"))
    assert late.response().status == 204  # the probe's slot
    probe.s.settimeout(10)
    assert probe.closed()
    keep.send(request("GET", "/health"))
    assert keep.response().status == 204
    for c in (keep, late):
        c.close()


def test_a_connection_with_no_request_past_the_token_has_the_first_head_deadline(serve):
    a = serve(SANDBOX_AGENT_FIRST_HEAD_SECONDS="1")
    keep = trusted(a)
    idle = Client(a.sock())
    slow = Client(a.sock())
    slow.send(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    refused = Client(a.sock())
    refused.send(request("GET", "/envs", token=None))
    assert refused.response().status == 401
    probed = Client(a.sock())  # a probe's /health without the token: answered, not trusted
    probed.send(request("GET", "/health", token=None))
    assert probed.response().status == 204
    for c in (idle, slow, refused, probed):
        c.s.settimeout(10)  # the HTTP timeout is 60 s
    assert idle.closed()  # nothing sent: closed without a word
    assert slow.response().status == 408
    assert refused.closed()
    assert probed.closed()
    # The trusted connection, idle longer than that, keeps the HTTP timeout.
    keep.send(request("GET", "/health"))
    assert keep.response().status == 204
    for c in (keep, idle, slow, refused, probed):
        c.close()


def test_idle_and_slow_clients_time_out(serve):
    a = serve(SANDBOX_AGENT_HTTP_TIMEOUT_SECONDS="1")
    idle = Client(a.sock())
    slow = Client(a.sock())
    slow.send(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    start = time.monotonic()
    assert idle.closed()  # nothing sent: closed without a word
    r = slow.response()
    assert r.status == 408
    assert slow.closed()
    assert time.monotonic() - start < 10


def test_tcp(serve):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    a = serve(SANDBOX_AGENT_LISTEN="127.0.0.1:%d" % port)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/health", headers={"X-Access-Token": TOKEN})
    r = conn.getresponse()
    assert r.status == 204
    r.read()
    conn.request("POST", "/filesystem.Filesystem/Stat", body=b'{"path":"/"}',
                 headers={"X-Access-Token": TOKEN, "Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200  # Stat is wired now (it was `unimplemented`)
    assert json.loads(r.read())["entry"]["path"] == "/"
    conn.close()


# ---- configuration and the stop ---------------------------------------------

def run_serve(agent, **env):
    return subprocess.run([agent, "serve"], env=clean_env(**env), stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=TIMEOUT)


def test_public_address_needs_a_token(agent):
    p = run_serve(agent, SANDBOX_AGENT_LISTEN="0.0.0.0:1")
    assert p.returncode == 2
    lines = p.stderr.decode().strip().split("\n")
    assert len(lines) == 1, lines
    assert "SANDBOX_AGENT_LISTEN" in lines[0] and "SANDBOX_AGENT_TOKEN" in lines[0]
    assert lines[0].startswith("sandbox-agent: ")


def test_insecure_serves_with_a_warning(serve, tmp_path):
    s = socket.socket()
    s.bind(("0.0.0.0", 0))
    port = s.getsockname()[1]
    s.close()
    a = serve(SANDBOX_AGENT_TOKEN=None, SANDBOX_AGENT_LISTEN="0.0.0.0:%d" % port,
              SANDBOX_AGENT_INSECURE="1")
    assert call(a, "GET", "/health", token=None).status == 204
    rc, err = a.stop()
    assert rc == 0
    assert "SANDBOX_AGENT_INSECURE" in err


@pytest.mark.parametrize("env", [
    {"SANDBOX_AGENT_LISTEN": "nonsense"},
    {"SANDBOX_AGENT_LISTEN": "127.0.0.1:0"},
    {"SANDBOX_AGENT_LISTEN": "unix:relative.sock"},
    {"SANDBOX_AGENT_MAX_CONNECTIONS": "0"},
    {"SANDBOX_AGENT_MAX_CONNECTIONS": "many"},
    {"SANDBOX_AGENT_HTTP_TIMEOUT_SECONDS": "0"},
    {"SANDBOX_AGENT_FIRST_HEAD_SECONDS": "0"},
    {"SANDBOX_AGENT_FIRST_HEAD_SECONDS": "soon"},
])
def test_bad_configuration_exits_2(agent, tmp_path, env):
    env.setdefault("SANDBOX_AGENT_LISTEN", "unix:" + str(tmp_path / "s.sock"))
    p = run_serve(agent, **env)
    assert p.returncode == 2
    assert len(p.stderr.decode().strip().split("\n")) == 1


def test_help_and_arguments(agent):
    p = subprocess.run([agent, "serve", "--help"], capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 0 and b"SANDBOX_AGENT_LISTEN" in p.stdout
    p = subprocess.run([agent, "serve", "extra"], capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 2
    p = subprocess.run([agent, "--help"], capture_output=True, timeout=TIMEOUT)
    assert b"serve" in p.stdout


def test_sigterm_exits_0(serve):
    a = serve()
    idle = Client(a.sock())
    partial = Client(a.sock())
    partial.send(b"GET /health HTTP/1.1\r\n")
    keep = Client(a.sock())
    keep.send(request("GET", "/health"))
    assert keep.response().status == 204
    start = time.monotonic()
    rc, err = a.stop()
    assert rc == 0, err
    assert time.monotonic() - start < 10
    assert idle.closed() and keep.closed()
    partial.close()
    assert not os.path.exists(a.path)  # the socket file is removed


def test_head_and_connect_methods(serve):
    a = serve()
    c = Client(a.sock())
    c.send(request("HEAD", "/health"))
    head = c._until(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 405") and b"Content-Length: " in head
    # No body follows a response to HEAD: the next response comes right after.
    c.send(request("GET", "/health"))
    assert c.response().status == 204
    c.close()
    r = call(a, "CONNECT", "example.com:443")
    assert r.status == 404
    c = Client(a.sock())
    c.send(request("GET", "/health", {"Upgrade": "h2c", "Connection": "Upgrade, HTTP2-Settings",
                                      "HTTP2-Settings": "AAMAAABkAAQAAP__"}))
    assert c.response().status == 204  # served as HTTP/1.1, the upgrade ignored
    c.close()


def test_token_never_reaches_a_child(agent, tmp_path):
    """The token is protected like the nonce in every mode: a job run by
    `run` finds it neither in its environment nor in the agent's."""
    script = "\n".join([
        "import os",
        "t = %r" % TOKEN.encode(),
        "mine = open('/proc/self/environ', 'rb').read()",
        "try:",
        "    agent = open('/proc/%d/environ' % os.getppid(), 'rb').read()",
        "except OSError:",
        "    agent = b''",
        "print(t in mine, t in agent, 'SANDBOX_AGENT_TOKEN' in os.environ)",
    ])
    p = subprocess.run([agent, "run", "--", "/usr/bin/python3", "-c", script],
                       env=clean_env(SANDBOX_AGENT_TOKEN=TOKEN, SANDBOX_RESULT=str(tmp_path / "r.json")),
                       capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split(b"\n")[0] == b"False False False"
