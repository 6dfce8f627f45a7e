"""`sandbox-agent serve` as PID 1 of the Dockerfile's example image (podman +
runc), the way README "use it from the E2B SDK" runs it.

The containers keep --network=none (no traffic leaves the machine), so the
host reaches the agent through a Unix socket in a bind-mounted directory
(SANDBOX_AGENT_LISTEN=unix:...) with the raw Connect client of tests/sdk;
the documented TCP configuration (0.0.0.0:49983 with a token) is checked from
inside the container's own network namespace with its python3.
"""
import os
import sys
import time

from podlib import AGENT_IN_IMAGE, LABEL, RUN_FLAGS, TIMEOUT, podman

import connectc  # (tests/lib/connectc.py)

TOKEN = "ctr-t0ken"

# From inside the container: GET /health and POST List on 127.0.0.1:49983,
# with the token given as argv[1] (or none); prints the two statuses.
PROBE = r"""
import http.client, sys
h = {"X-Access-Token": sys.argv[1]} if len(sys.argv) > 1 else {}
out = []
for method, path, body in (("GET", "/health", None), ("POST", "/process.Process/List", b"{}")):
    c = http.client.HTTPConnection("127.0.0.1", 49983, timeout=10)
    hh = dict(h, **({"Content-Type": "application/json"} if body else {}))
    c.request(method, path, body=body, headers=hh)
    r = c.getresponse()
    out.append("%d %s" % (r.status, r.read()[:200].decode(errors="replace")))
print("\n".join(out))
"""


def _wait_socket(c, path, timeout=TIMEOUT):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if c.proc.poll() is not None:
            break
        if os.path.exists(path):
            try:
                k = connectc.Client("unix:" + path, timeout=10)
                if k.health() == 204:
                    return k
            except OSError:
                pass
        time.sleep(0.05)  # polling for the socket, bounded
    raise AssertionError("serve never answered on %s; rc %s stderr %r" % (path, c.proc.poll(), c.err[-2000:]))


def _wait_port(c, timeout=TIMEOUT):
    """Until python3 inside the container gets any HTTP answer on 49983."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        p = c.exec("python3", "-c", PROBE, TOKEN)
        if p.returncode == 0:
            return
        if c.proc.poll() is not None:
            break
        time.sleep(0.1)  # polling for the port, bounded
    raise AssertionError("serve never listened on 49983; rc %s stderr %r" % (c.proc.poll(), c.err[-2000:]))


def _serve_on_socket(images, start, tmp_path):
    d = tmp_path / "sock"
    d.mkdir()
    c = start(images.example, "serve", entrypoint=AGENT_IN_IMAGE,
              env={"SANDBOX_AGENT_LISTEN": "unix:/run/sa/agent.sock"}, extra=["-v", "%s:/run/sa" % d])
    return c, _wait_socket(c, str(d / "agent.sock"))


def _stop_exits_0(c):
    """docker stop: SIGTERM to PID 1, which exits 0."""
    stop = podman("stop", "-t", "30", c.name)
    rc, _ = c.finish()
    assert stop.returncode == 0 and rc == 0, (rc, c.err[-2000:])


def test_serve_pid1_command(images, start, tmp_path):
    c, k = _serve_on_socket(images, start, tmp_path)
    try:
        # PID 1 is the agent; output and exit code come back.
        pid, out, err, end = connectc.run(k, "/bin/sh", ["-c", "echo hi; cat /proc/1/comm; echo oops >&2; exit 3"])
        assert isinstance(pid, int) and pid > 1
        assert (out, err) == (b"hi\nsandbox-agent\n", b"oops\n")
        assert end["exitCode"] == 3, end
        procs = k.unary(connectc.PROCESS + "List", {})
        assert procs.get("processes", []) == [], procs
    finally:
        k.close()
    _stop_exits_0(c)


def test_serve_pid1_file(images, start, tmp_path):
    c, k = _serve_on_socket(images, start, tmp_path)
    try:
        # Uploaded, seen inside, read back, stat'ed, listed.
        data = bytes(range(256)) * 64
        w = k.post_file("/srv/data/blob.bin", [data[:1000], data[1000:]])
        assert [x["path"] for x in w] == ["/srv/data/blob.bin"], w
        inside = c.exec("python3", "-c", "import sys; sys.stdout.buffer.write(open('/srv/data/blob.bin','rb').read())")
        assert inside.stdout == data
        back = bytearray()
        assert k.get_file("/srv/data/blob.bin", back.extend) == len(data) and bytes(back) == data
        st = k.unary(connectc.FILESYSTEM + "Stat", {"path": "/srv/data/blob.bin"})
        assert st["entry"]["type"] == "FILE_TYPE_FILE" and int(st["entry"]["size"]) == len(data), st
        lst = k.unary(connectc.FILESYSTEM + "ListDir", {"path": "/srv/data", "depth": 1})
        assert [e["name"] for e in lst["entries"]] == ["blob.bin"], lst
    finally:
        k.close()
    _stop_exits_0(c)


def test_serve_documented_tcp_with_token(images, start):
    # README: docker run -p 49983:49983 -e SANDBOX_AGENT_TOKEN=... --entrypoint ... serve
    c = start(images.example, "serve", entrypoint=AGENT_IN_IMAGE, env={"SANDBOX_AGENT_TOKEN": TOKEN})
    _wait_port(c)
    ok = c.exec("python3", "-c", PROBE, TOKEN)
    lines = ok.stdout.decode().splitlines()
    assert lines[0].startswith("204"), ok
    assert lines[1].startswith("200") and "processes" in lines[1], ok
    # /health answers without the token (envd's; a Kubernetes probe's), the rest 401.
    bad = c.exec("python3", "-c", PROBE, TOKEN + "x")
    assert [l[:3] for l in bad.stdout.decode().splitlines()] == ["204", "401"], bad
    none = c.exec("python3", "-c", PROBE)
    assert [l[:3] for l in none.stdout.decode().splitlines()] == ["204", "401"], none
    # The token never reaches what the agent starts: not in a podman exec'd
    # process's view of PID 1's environment either.
    env1 = c.exec("python3", "-c", "print(open('/proc/1/environ','rb').read())")
    assert TOKEN.encode() not in env1.stdout


def test_run_serves_beside_its_job(images, start):
    # The example image's own ENTRYPOINT (`sandbox-agent run`) serves the API
    # beside its job when SANDBOX_AGENT_LISTEN is set. (A job `sandbox-agent
    # serve` would not get the token: run hides it from its job.)
    c = start(images.example, "sleep", "600",
              env={"SANDBOX_AGENT_LISTEN": "0.0.0.0:49983", "SANDBOX_AGENT_TOKEN": TOKEN})
    _wait_port(c)
    ok = c.exec("python3", "-c", PROBE, TOKEN)
    lines = ok.stdout.decode().splitlines()
    assert lines[0].startswith("204") and lines[1].startswith("200"), ok
    none = c.exec("python3", "-c", PROBE)
    assert [l[:3] for l in none.stdout.decode().splitlines()] == ["204", "401"], none
    cmd1 = c.exec("cat", "/proc/1/cmdline").stdout.split(b"\0")
    assert cmd1[:2] == [AGENT_IN_IMAGE.encode(), b"run"], cmd1
    stop = podman("stop", "-t", "30", c.name)
    rc, out = c.finish()
    assert stop.returncode == 0 and rc == 143, (rc, out[-500:], c.err[-2000:])
    assert b"__SANDBOX_RESULT__" in out


def test_serve_refuses_public_address_without_token(images):
    p = podman("run", "--rm", "--label", LABEL, *RUN_FLAGS, "--entrypoint", AGENT_IN_IMAGE,
               "-e", "SANDBOX_AGENT_LISTEN=0.0.0.0:49983", images.example, "serve")
    assert p.returncode == 2, p
    assert b"SANDBOX_AGENT_TOKEN" in p.stderr and b"SANDBOX_AGENT_INSECURE" in p.stderr, p.stderr


def test_serve_insecure_opt_in_warns(images, start):
    c = start(images.example, "serve", entrypoint=AGENT_IN_IMAGE,
              env={"SANDBOX_AGENT_LISTEN": "0.0.0.0:49983", "SANDBOX_AGENT_INSECURE": "1"})
    _wait_port(c)
    p = c.exec("python3", "-c", PROBE)
    assert p.stdout.decode().splitlines()[0].startswith("204"), p
    podman("stop", "-t", "30", c.name)
    c.finish()
    assert b"INSECURE" in c.err or b"insecure" in c.err or b"token" in c.err.lower(), c.err[-2000:]
