"""The port forwarder (README "Port forwarding"): a server in the sandbox
listening on 127.0.0.1 only is reached on the sandbox's outward addresses.

Each test makes two network namespaces joined by a veth pair
(tests/lib/netns.py): the agent and the servers run in the sandbox's
(10.77.0.1, fd77::1), the client's sockets are opened in the other
(10.77.0.2, fd77::2). Needs root and `ip netns`; skipped, saying why,
without them. Every process a test starts is ended by its pid, and the
namespaces are deleted at its end.
"""
import hashlib
import os
import resource
import select
import signal
import socket
import subprocess
import time

import pytest

from conftest import PY, TIMEOUT, clean_env, wait_until
from testlib import proc_status_kib
from connectc import Client, ServeAgent
import netns
from netns import SANDBOX_V4, SANDBOX_V6

WORKLOADS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads")
HOLD = os.path.join(WORKLOADS, "holdserver.py")
API_PORT = 49983          # the sandbox's own namespace: no other agent there
PORT = 8000
TOKEN = "fwd-token"
# A server on the outward address itself: what answers there is not the forward.
OTHER = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(16)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    c.recv(4096)  # the request, read: a close with unread bytes would reset
    c.sendall(b"other\n")
    c.close()
"""


@pytest.fixture
def net():
    why = netns.unavailable()
    if why:
        pytest.skip(why)
    with netns.NetPair() as n:
        yield n


@pytest.fixture
def procs():
    """Start programs in a namespace; each ended by its pid at the end."""
    started = []

    def start(ns, argv, ready, env=None):
        p = subprocess.Popen(netns.NetPair.argv(ns) + argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, env=env)
        started.append(p)
        seen, end = b"", time.monotonic() + TIMEOUT
        while ready.encode() not in seen:
            left = end - time.monotonic()
            assert left > 0 and p.poll() is None, "%s did not say %r: %r" % (argv, ready, seen)
            if select.select([p.stdout], [], [], left)[0]:
                seen += os.read(p.stdout.fileno(), 4096)
        return p

    yield start
    for p in started:
        stop(p)


def stop(p):
    """SIGTERM (an agent running a job passes it on and waits for the job),
    SIGKILL if it is still there after the bound."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
    p.wait(timeout=TIMEOUT)
    if p.stdout:
        p.stdout.close()


@pytest.fixture
def agents(agent, net):
    """The agent serving in the sandbox's namespace: on a Unix socket, or
    on 0.0.0.0:API_PORT with a token (tcp=True), reached from the client."""
    started = []

    def start(tcp=False, local=False, **env):
        env.setdefault("SANDBOX_AGENT_LOG", "debug")
        # The sanitizer build's quarantine would hide what the agent keeps.
        env["ASAN_OPTIONS"] = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "quarantine_size_mb=4"]))
        if tcp:
            env.update(SANDBOX_AGENT_LISTEN="0.0.0.0:%d" % API_PORT, SANDBOX_AGENT_TOKEN=TOKEN)
        if local:  # 127.0.0.1, no token: reached from inside the sandbox only
            env.update(SANDBOX_AGENT_LISTEN="127.0.0.1:%d" % API_PORT, SANDBOX_AGENT_TOKEN=None)
        a = ServeAgent(agent, wrap=netns.NetPair.argv(net.sandbox), wait=False, **env)
        started.append(a)
        if tcp:
            a.sock = lambda timeout=TIMEOUT: connect(net, SANDBOX_V4, API_PORT, timeout)
        if local:
            a.sock = lambda timeout=TIMEOUT: connect_in(net, net.sandbox, "127.0.0.1", API_PORT, timeout)
        a.wait_ready()
        return a

    yield start
    for a in started:
        a.stop()


def connect_in(net, ns, host, port, timeout=5):
    with net.inside(ns):
        return socket.create_connection((host, port), timeout=timeout)


def connect(net, host, port, timeout=5):
    """A connection from the client's namespace."""
    return connect_in(net, net.client, host, port, timeout)


def fetch(net, host, port, path="/index.html"):
    """The body of GET path from the client's side, or None when no server
    answers there (yet)."""
    try:
        s = connect(net, host, port)
    except OSError:
        return None
    with s:
        s.sendall(b"GET %s HTTP/1.0\r\n\r\n" % path.encode())
        data = b""
        while True:
            try:
                more = s.recv(65536)
            except OSError:
                return None
            if not more:
                break
            data += more
    return data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else data


def refused(net, host, port):
    """Nothing listens there: the connection is refused (a forward whose
    server went is reset instead, until the poll closes it)."""
    try:
        connect(net, host, port).close()
    except ConnectionRefusedError:
        return True
    except ConnectionResetError:
        pass
    return False


def http_server(procs, net, root, bind="127.0.0.1"):
    return procs(net.sandbox, [PY, "-u", "-m", "http.server", "--bind", bind, "--directory", str(root), str(PORT)],
                 "Serving HTTP")


def line(s, timeout=TIMEOUT):
    s.settimeout(timeout)
    data = b""
    while not data.endswith(b"\n"):
        more = s.recv(64)
        if not more:
            return data
        data += more
    return data


def ping(s):
    s.sendall(b"PING\n")
    return line(s) == b"PONG\n"


# ---- reached, and gone with its server ------------------------------------------

def test_a_loopback_server_is_reached_on_the_outward_addresses(net, procs, agents, tmp_path):
    (tmp_path / "index.html").write_bytes(b"hello from the sandbox\n")
    server = http_server(procs, net, tmp_path)
    # Served outward with a token: forwarding is on without being asked.
    a = agents(tcp=True)
    page = wait_until(lambda: fetch(net, SANDBOX_V4, PORT), "the page at %s:%d" % (SANDBOX_V4, PORT))
    assert page == b"hello from the sandbox\n"
    assert fetch(net, SANDBOX_V6, PORT) == page
    err = a.stderr()
    assert "forward: outward addresses: %s, %s" % (SANDBOX_V4, SANDBOX_V6) in err, err
    assert "forward: %s:%d -> 127.0.0.1" % (SANDBOX_V4, PORT) in err, err
    # The server goes: so does the forward.
    stop(server)
    wait_until(lambda: refused(net, SANDBOX_V4, PORT), "%s:%d refused" % (SANDBOX_V4, PORT))
    assert refused(net, SANDBOX_V6, PORT)
    wait_until(lambda: "%s:%d closed: nothing listens" % (SANDBOX_V4, PORT) in a.stderr(), "the close logged")


def test_run_serving_forwards_its_job(agent, net, procs, tmp_path):
    (tmp_path / "index.html").write_bytes(b"the job's\n")
    # `run` with SANDBOX_AGENT_LISTEN serves the API, and so forwards: here
    # the job itself is the server.
    env = clean_env(SANDBOX_AGENT_LISTEN="0.0.0.0:%d" % API_PORT, SANDBOX_AGENT_TOKEN=TOKEN,
                    SANDBOX_RESULT=str(tmp_path / "result.json"))
    procs(net.sandbox, [agent, "run", "--", PY, "-u", "-m", "http.server", "--bind", "127.0.0.1", "--directory",
                        str(tmp_path), str(PORT)], "Serving HTTP", env=env)
    assert wait_until(lambda: fetch(net, SANDBOX_V4, PORT), "the job's page") == b"the job's\n"


def test_an_ipv6_loopback_server_is_reached_on_both_families(net, procs, agents, tmp_path):
    (tmp_path / "index.html").write_bytes(b"six\n")
    http_server(procs, net, tmp_path, bind="::1")
    a = agents(SANDBOX_AGENT_FORWARD="1", SANDBOX_AGENT_FORWARD_SECONDS="0.05")
    # Listening on ::1 only: the IPv4 address forwards to it too.
    assert wait_until(lambda: fetch(net, SANDBOX_V4, PORT), "the page at %s:%d" % (SANDBOX_V4, PORT)) == b"six\n"
    assert fetch(net, SANDBOX_V6, PORT) == b"six\n"
    assert "forward: %s:%d -> ::1" % (SANDBOX_V4, PORT) in a.stderr()


def test_a_port_held_on_the_outward_address_is_left_alone(net, procs, agents, tmp_path):
    (tmp_path / "index.html").write_bytes(b"forwarded\n")
    procs(net.sandbox, [PY, "-c", OTHER, SANDBOX_V4, str(PORT)], "ready")
    http_server(procs, net, tmp_path)
    a = agents(SANDBOX_AGENT_FORWARD="1")
    # The IPv6 address is free: forwarded there.
    assert wait_until(lambda: fetch(net, SANDBOX_V6, PORT), "the page at [%s]:%d" % (SANDBOX_V6, PORT)) == b"forwarded\n"
    wait_until(lambda: "%s:%d is held by another socket; left alone" % (SANDBOX_V4, PORT) in a.stderr(),
               "the held port logged")
    assert fetch(net, SANDBOX_V4, PORT) == b"other\n"
    assert a.stderr().count("is held by another socket") == 1  # said once, however many polls


def test_bulk_bytes_arrive_whole_both_ways(net, procs, agents, tmp_path):
    # A small message first, then a bulk transfer on the same connection:
    # each direction starts copying and goes on splicing.
    body = os.urandom(24 << 20)
    (tmp_path / "big.bin").write_bytes(body)
    http_server(procs, net, tmp_path)
    procs(net.sandbox, [PY, HOLD, "127.0.0.1", str(PORT + 1)], "ready")
    agents(SANDBOX_AGENT_FORWARD="1", SANDBOX_AGENT_FORWARD_SECONDS="0.05")
    got = wait_until(lambda: fetch(net, SANDBOX_V4, PORT, "/big.bin"), "the big file through the forward")
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(body).hexdigest() and len(got) == len(body)
    s = wait_until(lambda: connect_ping(net, PORT + 1), "holdserver through the forward")
    with s:
        s.sendall(b"SUM %d\n" % len(body))
        s.sendall(body)
        assert line(s).strip().decode() == hashlib.sha256(body).hexdigest()
        assert ping(s)


def test_half_closes_pass_through(net, procs, agents):
    procs(net.sandbox, [PY, HOLD, "127.0.0.1", str(PORT)], "ready")
    agents(SANDBOX_AGENT_FORWARD="1", SANDBOX_AGENT_FORWARD_SECONDS="0.05")
    s = wait_until(lambda: connect_ping(net), "a connection through the forward")
    with s:
        # The client's EOF reaches the server after its request: the server
        # answers it, then closes on the EOF, and the client reads both.
        s.sendall(b"PING\n")
        s.shutdown(socket.SHUT_WR)
        s.settimeout(TIMEOUT)
        data = b""
        while True:
            more = s.recv(64)
            if not more:
                break
            data += more
        assert data == b"PONG\n"
    wait_until(lambda: hold_stat(net)[1] == 0, "the server's side closed")


def test_the_apis_own_loopback_port_is_not_forwarded(net, procs, agents, tmp_path):
    (tmp_path / "index.html").write_bytes(b"page\n")
    http_server(procs, net, tmp_path)
    # Forced on with the API on 127.0.0.1 and no token: the API stays local.
    agents(local=True, SANDBOX_AGENT_FORWARD="1", SANDBOX_AGENT_FORWARD_SECONDS="0.05")
    wait_until(lambda: fetch(net, SANDBOX_V4, PORT), "the page forwarded")
    # That poll saw the API's port too (it listened before the first).
    assert refused(net, SANDBOX_V4, API_PORT) and refused(net, SANDBOX_V6, API_PORT)


@pytest.mark.parametrize("how", ["FORWARD=0", "unix socket"])
def test_off(net, procs, agents, tmp_path, how):
    (tmp_path / "index.html").write_bytes(b"x\n")
    http_server(procs, net, tmp_path)
    # Polls every 50 ms if on: the window below is 60 of them.
    if how == "FORWARD=0":
        a = agents(tcp=True, SANDBOX_AGENT_FORWARD="0", SANDBOX_AGENT_FORWARD_SECONDS="0.05")
    else:  # the API on a Unix socket only: not served outward, so off by default
        a = agents(SANDBOX_AGENT_FORWARD_SECONDS="0.05")
    end = time.monotonic() + 3
    while time.monotonic() < end:
        assert refused(net, SANDBOX_V4, PORT) and refused(net, SANDBOX_V6, PORT)
        time.sleep(0.1)  # a window checked, not a wait for anything
    assert "forward:" not in a.stderr()


def test_the_connection_bound_refuses_new_ones(net, procs, agents):
    procs(net.sandbox, [PY, HOLD, "127.0.0.1", str(PORT)], "ready")
    a = agents(SANDBOX_AGENT_FORWARD="1", SANDBOX_AGENT_FORWARD_MAX_CONNECTIONS="3",
               SANDBOX_AGENT_FORWARD_SECONDS="0.05")

    held = [wait_until(lambda: connect_ping(net), "a connection through the forward")]
    held += [connect_ping(net), connect_ping(net)]
    assert all(held)
    assert reset_at_once(net)
    assert "3 connections open, the bound: refusing new ones" in a.stderr()
    held.pop().close()
    s = wait_until(lambda: connect_ping(net), "a slot again once one closed")
    for c in held + [s]:
        assert ping(c)
        c.close()


# ---- 1,000 connections and a reader that never reads ----------------------------

def hold_stat(net):
    with net.inside(net.sandbox):
        s = socket.create_connection(("127.0.0.1", PORT), timeout=TIMEOUT)
    with s:
        s.sendall(b"STAT\n")
        written, open_ = line(s).split()
    return int(written), int(open_) - 1  # not this connection


def test_1000_connections_and_a_client_that_never_reads(agent, net, procs, agents):
    n = 1000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    procs(net.sandbox, [PY, HOLD, "127.0.0.1", str(PORT)], "ready")
    a = agents(tcp=True, SANDBOX_AGENT_LOG="info")
    first = wait_until(lambda: connect_ping(net), "a connection through the forward")
    base = proc_status_kib(a.pid, "VmRSS")
    conns = [first]
    try:
        for _ in range(n - 1):
            conns.append(connect(net, SANDBOX_V4, PORT, TIMEOUT))
        for c in conns:
            c.sendall(b"PING\n")
        assert all(line(c) == b"PONG\n" for c in conns)
        # One more asks for bytes without end and never reads them.
        sink = connect(net, SANDBOX_V4, PORT, TIMEOUT)
        sink.sendall(b"BIG\n")
        conns.append(sink)
        stalled = wait_until(lambda: stalled_at(net), "the endless answer to stall")
        # What a forward holds is the kernel's buffers: the server's writes
        # stop a few MiB in (an agent that buffered would take them all).
        assert stalled < 64 << 20, stalled
        grew = proc_status_kib(a.pid, "VmRSS") - base
        with open(agent, "rb") as f:
            asan = b"__asan_init" in f.read()
        bound = (24 if asan else 8) << 10
        print("agent RSS %d KiB before, grew %d KiB with %d connections; the server wrote %d KiB to the "
              "reader that does not read" % (base, grew, len(conns), stalled >> 10))
        assert grew < bound, "the agent's RSS grew by %d KiB (bound %d KiB)" % (grew, bound)
        assert hold_stat(net)[1] == n + 1
        # The API still answers at once.
        c = Client("%s:%d" % (SANDBOX_V4, API_PORT), token=TOKEN, timeout=TIMEOUT)
        with net.inside(net.client):
            c.connect()
        for _ in range(5):
            t0 = time.monotonic()
            assert c.health() == 204
            assert time.monotonic() - t0 < 1.0
        c.close()
    finally:
        for c in conns:
            c.close()
    # Every client gone: every connection to the server goes too.
    wait_until(lambda: hold_stat(net)[1] == 0, "the server's connections closed")


def connect_ping(net, port=PORT):
    try:
        s = connect(net, SANDBOX_V4, port)
    except OSError:
        return None
    try:
        if ping(s):
            return s
    except OSError:
        pass
    s.close()
    return None


def reset_at_once(net):
    """A connection past the bound is accepted and reset: no answer."""
    try:
        s = connect(net, SANDBOX_V4, PORT)
    except ConnectionResetError:
        return True
    with s:
        try:
            return not ping(s)
        except ConnectionResetError:
            return True


def stalled_at(net):
    """The server's bytes written to the reader once they stop growing."""
    w1, _ = hold_stat(net)
    if w1 < 1 << 20:
        return None
    time.sleep(0.3)  # the interval of a rate measured, not a wait for an event
    w2, _ = hold_stat(net)
    return w2 if w2 == w1 else None


# ---- configuration ----------------------------------------------------------------

@pytest.mark.parametrize("env", [
    {"SANDBOX_AGENT_FORWARD": "yes"},
    {"SANDBOX_AGENT_FORWARD_ADDRS": "127.0.0.1"},
    {"SANDBOX_AGENT_FORWARD_ADDRS": "0.0.0.0"},
    {"SANDBOX_AGENT_FORWARD_ADDRS": "10.0.0.1,"},
    {"SANDBOX_AGENT_FORWARD_ADDRS": "fe80::1"},
    {"SANDBOX_AGENT_FORWARD_MAX_CONNECTIONS": "0"},
    {"SANDBOX_AGENT_FORWARD_SECONDS": "0"},
    {"SANDBOX_AGENT_FORWARD_SECONDS": "soon"},
])
def test_bad_configuration_exits_2(agent, tmp_path, env):
    p = subprocess.run([agent, "serve"], env=clean_env(SANDBOX_AGENT_LISTEN="unix:" + str(tmp_path / "s.sock"), **env),
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 2
    lines = p.stderr.decode().strip().split("\n")
    assert len(lines) == 1 and list(env)[0] in lines[0], lines
