"""`sandbox-agent serve`: the memory budget (README "sandbox-agent serve":
the memory budget), black-box over a Unix socket with raw clients.

Many clients at once, each near its own bound (a 15 MiB unary body held by
withholding its last byte; 6 MiB of stdin queued for a stopped process):
with SANDBOX_AGENT_MEMORY_BUDGET=32 MiB some are refused 429
resource_exhausted and the others are served whole, the agent's memory
stays within the budget and a fixed overhead, /health answers, the
processes running are untouched; a live reader of a process loses no
output while the budget is spent (the child waits instead); and every draw
has its give (the budget's own count at the stop, SANDBOX_AGENT_LOG=debug).
"""
import hashlib
import json
import os
import re
import subprocess
import threading

import pytest

from conftest import TIMEOUT, clean_env, started_agents, wait_until
from connectc import ServeAgent, b64, head_bytes, output, unb64

MIB = 1 << 20
BUDGET = 32 * MIB
LIST = "process.Process/List"
SEND_INPUT = "process.Process/SendInput"
SIGNAL = "process.Process/SendSignal"
CLOSE_STDIN = "process.Process/CloseStdin"


def quiet_asan():
    """The sanitizer build keeps freed memory in quarantine: none here, so
    the memory measured is what the agent keeps (ignored by the other build)."""
    return ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "quarantine_size_mb=0"]))


@pytest.fixture
def serve(agent):
    yield from started_agents(lambda **env: ServeAgent(agent, **env))


def budget_agent(serve, **env):
    env.setdefault("SANDBOX_AGENT_MEMORY_BUDGET", str(BUDGET))
    return serve(SANDBOX_AGENT_LOG="debug", ASAN_OPTIONS=quiet_asan(), **env)


def kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(field)


def reset_hwm(pid):
    with open("/proc/%d/clear_refs" % pid, "w") as f:
        f.write("5")


def stop_and_count(a):
    """Stop the agent; the budget's count at the stop: (drawn, most drawn)."""
    rc, err = a.stop()
    assert rc == 0, err
    m = re.search(r"memory budget at the stop: (\d+) bytes drawn, (\d+) at most", err)
    assert m, "no budget line at the stop (is SANDBOX_AGENT_MEMORY_BUDGET served?):\n" + err[-2000:]
    return int(m.group(1)), int(m.group(2))


def held_body(a, method, body):
    """A raw client that sends the head and all of the body but its last
    byte, from a thread (a refused one blocks until the agent lets go).
    Returns (socket, thread, outcome): outcome["sent"] once all went."""
    s = a.sock()
    out = {}
    head = head_bytes("POST", "/" + method, a.headers("application/json", len(body)))

    def send():
        try:
            s.sendall(head + body[:-1])
            out["sent"] = True
        except OSError as e:  # refused at the head: the agent stopped reading, then closed
            out["error"] = e

    t = threading.Thread(target=send, daemon=True)
    t.start()
    return s, t, out


def response(s, timeout=TIMEOUT):
    """Status and body of the one response on raw socket s."""
    s.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        d = s.recv(65536)
        assert d, "closed before a response: %r" % data[:200]
        data += d
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    n = int(next(v for k, _, v in (ln.partition(":") for ln in lines[1:]) if k.lower() == "content-length"))
    while len(rest) < n:
        d = s.recv(65536)
        assert d, "closed inside a response"
        rest += d
    return int(lines[0].split()[1]), rest[:n]


def test_many_clients_each_near_its_bound(serve):
    a = budget_agent(serve)
    # A process running through it all: cat, answering on its stream.
    s, pid = a.start("/bin/cat", msg={"stdin": True})
    rss0 = kib(a.pid, "VmRSS")
    reset_hwm(a.pid)
    pad = 15 * MIB - len(b'{"pad": ""}')
    body = b'{"pad": "' + b"x" * pad + b'"}'
    clients = [held_body(a, LIST, body) for _ in range(8)]
    for _, t, _ in clients:
        t.join(TIMEOUT)
        assert not t.is_alive(), "a client's body neither went nor was refused"
    held = [c for c in clients if c[2].get("sent")]
    refused = [c for c in clients if not c[2].get("sent")]
    rss_held = kib(a.pid, "VmRSS")
    # Meanwhile the agent answers, and the process is untouched.
    h = a.conn()
    h.send(head_bytes("GET", "/health", {"X-Access-Token": a.token}))
    assert h.response().status == 204
    h.close()
    # The refused ones were told why, at once.
    for c, _, _ in refused:
        st, b = response(c)
        assert st == 429, (st, b[:200])
        err = json.loads(b)
        assert err["code"] == "resource_exhausted" and "budget" in err["message"], err
        c.close()
    # The held ones, completed, are served whole.
    for c, _, _ in held:
        c.sendall(body[-1:])
        st, b = response(c)
        assert st == 200, (st, b[:200])
        assert pid in [p["pid"] for p in json.loads(b)["processes"]]
        c.close()
    hwm = kib(a.pid, "VmHWM")
    print("budget %d MiB, 8 clients with 15 MiB bodies: %d held, %d refused 429; agent RSS %d KiB at the "
          "start, %d KiB with the bodies held (+%d), peak %d KiB (+%d)"
          % (BUDGET >> 20, len(held), len(refused), rss0, rss_held, rss_held - rss0, hwm, hwm - rss0))
    assert refused and held, "held %d, refused %d: the budget refuses some and serves the others" \
        % (len(held), len(refused))
    assert len(held) <= BUDGET // (15 * MIB)
    # Memory: what is held stays within the budget (and a few MiB of the
    # agent's own); the peak adds at most one request's decoding (a copy of
    # its text and cJSON's string of it), as requests are handled one at a time.
    assert rss_held - rss0 <= (BUDGET >> 10) + 8 * 1024, rss_held - rss0
    assert hwm - rss0 <= (BUDGET >> 10) + 2 * 16 * 1024 + 8 * 1024, hwm - rss0
    # The process was never disturbed: it still answers.
    r = a.unary(SEND_INPUT, {"process": {"pid": pid}, "input": {"stdin": b64("ping\n")}})
    assert r.status == 200, r.body
    got = b""
    while b"ping\n" not in got:
        flags, m = s.next()
        assert not flags & 2, m
        got += output([m])
    a.unary(CLOSE_STDIN, {"process": {"pid": pid}})
    msgs, _ = s.collect()
    assert msgs[-1]["event"]["end"]["exitCode"] == 0
    drawn, peak = stop_and_count(a)
    assert drawn == 0, "%d bytes still drawn at the stop: a take without its give" % drawn
    assert peak <= BUDGET + MIB, peak


def test_input_queues_share_the_budget(serve):
    a = budget_agent(serve)
    # Five processes that take no input yet (stopped): what is sent stays
    # queued. Each is stopped once it runs its own program ("up"): a child
    # stopped before its exec would hold the other processes' pipes open.
    procs = []
    for _ in range(5):
        st, pid = a.start("/bin/sh", "-c", "echo up; exec wc -c", msg={"stdin": True})
        got = b""
        while got != b"up\n":
            got += output([st.next()[1]])
        assert a.unary(SIGNAL, {"process": {"pid": pid}, "signal": "SIGNAL_SIGSTOP"}).status == 200
        procs.append((st, pid))
    for st, pid in procs:
        wait_until(lambda: open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] == "T",
                   "process %d to stop" % pid)
    data = os.urandom(6 * MIB)
    codes = []
    for st, pid in procs:
        r = a.unary(SEND_INPUT, {"process": {"pid": pid}, "input": {"stdin": b64(data)}})
        codes.append(r.status if r.status == 200 else (r.status, r.json()["code"]))
    print("6 MiB of stdin to each of 5 stopped processes, budget 32 MiB: %r" % codes)
    # Each queue holds 8 MiB (6 MiB, doubling), each body 8 MiB while it is
    # handled: 8 + 8, 8 + 8 + 8 fit in 32 MiB, 16 + 8 + 8 does not (and a
    # process printing a line costs its ring a few KiB, not a read's MiB).
    refused = (429, "resource_exhausted")
    assert codes == [200, 200, refused, refused, refused], codes
    # Each process gets exactly what was accepted for it: all of it, or none.
    for (st, pid), code in zip(procs, codes):
        a.unary(SIGNAL, {"process": {"pid": pid}, "signal": "SIGNAL_SIGCONT"})
        assert a.unary(CLOSE_STDIN, {"process": {"pid": pid}}).status == 200
        msgs, _ = st.collect()
        assert output(msgs) == b"%d\n" % (len(data) if code == 200 else 0), (code, output(msgs))
    drawn, peak = stop_and_count(a)
    assert drawn == 0 and peak <= BUDGET + MIB, (drawn, peak)


def test_live_reader_loses_no_output_while_the_budget_is_spent(serve):
    a = budget_agent(serve)
    # The budget nearly spent by two held 15 MiB bodies.
    body = b'{"pad": "' + b"x" * (15 * MIB - 11) + b'"}'
    held = [held_body(a, LIST, body) for _ in range(2)]
    for _, t, out in held:
        t.join(TIMEOUT)
        assert out.get("sent"), out
    # 16 MiB of output (twice the default ring) to a reader that reads it all.
    s, pid = a.start("/bin/sh", "-c", "head -c 16777216 /dev/zero | tr '\\0' 'z'; echo; echo done")
    h = hashlib.sha256()
    n = 0
    while True:
        flags, m = s.next()
        assert not flags & 2, m
        if "data" in m["event"]:
            d = unb64(m["event"]["data"].get("stdout", ""))
            h.update(d)
            n += len(d)
        if "end" in m["event"]:
            assert m["event"]["end"]["exitCode"] == 0
            break
    want = hashlib.sha256(b"z" * 16777216 + b"\ndone\n").hexdigest()
    assert (n, h.hexdigest()) == (16777216 + 6, want), n
    # The ring stayed within what the budget left (less than the 8 MiB a
    # channel keeps by default), and the agent said so.
    assert "the process waits for its readers" in a.stderr(), a.stderr()[-2000:]
    c = a.stream("process.Process/Connect", {"process": {"pid": pid}},
                 headers={"Sandbox-Agent-Replay-From": "0"})
    msgs, _ = c.collect()
    first = next(m["offset"] for m in msgs if "data" in m["event"])
    kept = n - first
    print("16 MiB to a live reader with 2 MiB of budget left: all of it read, %d bytes kept after" % kept)
    assert 0 < kept < 8 * MIB, kept
    for c, _, _ in held:
        c.sendall(body[-1:])
        assert response(c)[0] == 200
        c.close()
    rc_err = a.stderr()
    assert "skips what it misses" not in rc_err
    drawn, peak = stop_and_count(a)
    assert drawn == 0 and peak <= BUDGET + MIB, (drawn, peak)


@pytest.mark.parametrize("value", ["12", "1k", "-1", "2000000000000"])
def test_bad_budget_is_a_usage_error(agent, value, tmp_path):
    p = subprocess.run([agent, "serve"], env=clean_env(SANDBOX_AGENT_LISTEN="unix:%s/s" % tmp_path,
                                                       SANDBOX_AGENT_MEMORY_BUDGET=value),
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 2 and b"SANDBOX_AGENT_MEMORY_BUDGET" in p.stderr, p.stderr


def test_default_budget_is_logged(serve):
    a = serve(SANDBOX_AGENT_LOG="debug")
    wait_until(lambda: "memory budget" in a.stderr(), "the budget's log line")
    m = re.search(r"api: memory budget (\d+) bytes", a.stderr())
    assert m and 64 * MIB <= int(m.group(1)) <= 1024 * MIB, a.stderr()


def get(c, a, path):
    c.send(head_bytes("GET", path, {"X-Access-Token": a.token}))
    return c.response()


def test_a_response_or_a_helper_result_the_budget_cannot_hold(serve, tmp_path):
    a = budget_agent(serve)
    big = {"V%d" % i: "v" * 100000 for i in range(9)}  # each within the kernel's 128 KiB a string
    init = json.dumps({"envVars": big}).encode()
    c = a.conn()
    c.send(head_bytes("POST", "/init", {"Content-Length": str(len(init)), "Content-Type": "application/json",
                                        "X-Access-Token": a.token}) + init)
    assert c.response().status == 204
    d = tmp_path / "many"
    d.mkdir()
    for i in range(6000):
        (d / ("%05d" % i + "n" * 200)).touch()
    # All but some 150 KB of the budget held by two bodies.
    body = b'{"pad": "' + b"x" * (16700000 - 11) + b'"}'
    held = [held_body(a, LIST, body) for _ in range(2)]
    for _, t, out in held:
        t.join(TIMEOUT)
        assert out.get("sent"), out
    # A 900 KB answer: 429 in its stead, and the connection goes on.
    r = get(c, a, "/envs")
    assert r.status == 429 and r.json()["code"] == "resource_exhausted", (r.status, r.body[:200])
    assert get(c, a, "/health").status == 204
    # A listing of 6000 long names (some 3 MiB from its helper): the same.
    r = a.unary("filesystem.Filesystem/ListDir", {"path": str(d), "depth": 1})
    assert r.status == 429 and r.json()["code"] == "resource_exhausted", (r.status, r.body[:200])
    for h, _, _ in held:
        h.sendall(body[-1:])
        assert response(h)[0] == 200
        h.close()
    # With the memory back, both are answered.
    r = get(c, a, "/envs")
    assert r.status == 200 and all(r.json()[k] == v for k, v in big.items())
    c.close()
    r = a.unary("filesystem.Filesystem/ListDir", {"path": str(d), "depth": 1})
    assert r.status == 200 and len(r.json()["entries"]) == 6000
    drawn, peak = stop_and_count(a)
    assert drawn == 0 and peak <= BUDGET + MIB, (drawn, peak)
