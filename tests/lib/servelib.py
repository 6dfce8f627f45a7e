"""What the `serve` bench modules share: one agent on a free loopback port,
the raw Connect client (tests/lib/connectc.py), and the "not served" row for
an RPC the binary under test does not implement yet."""
import os
import signal
import subprocess
import sys
import time


from benchlib import free_port, proc_status_kib
from connectc import FILESYSTEM, PROCESS, Client, RpcError  # noqa: F401

NOT_SERVED = "n/a (not served)"
HANG = 300  # seconds: a bench step that takes longer has hung


class NotServed(Exception):
    pass


def not_served(err):
    """True for the answers of a binary that lacks the RPC or route."""
    return isinstance(err, RpcError) and (err.code in ("unimplemented", "http_501") or err.status in (404, 501))


def served(fn, *a, **kw):
    """fn(*a, **kw), with an unimplemented RPC turned into NotServed."""
    try:
        return fn(*a, **kw)
    except RpcError as e:
        if not_served(e):
            raise NotServed(str(e))
        raise


def row(what, agent, baseline_name="", baseline=None, unit=""):
    return {"what": what, "agent": agent, "baseline_name": baseline_name, "baseline": baseline, "unit": unit}


def na_rows(names):
    """Rows for measures whose RPC is not served: (what, baseline_name, unit)."""
    return [row(w, NOT_SERVED, b, None, u) for w, b, u in names]


class Serve:
    """`sandbox-agent serve` on 127.0.0.1:PORT (no token: loopback)."""

    def __init__(self, agent, **env):
        self.port = free_port()
        self.addr = "127.0.0.1:%d" % self.port
        e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SANDBOX_AGENT_LISTEN": self.addr}
        e.update(env)
        self.p = subprocess.Popen([agent, "serve"], env=e, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 20
        while True:
            try:
                c = Client(self.addr, timeout=5)
                if c.health() == 204:
                    c.close()
                    break
            except OSError:
                pass
            if time.monotonic() > end or self.p.poll() is not None:
                self.stop()
                raise RuntimeError("serve did not answer /health")
            time.sleep(0.02)  # polling the port, bounded

    def client(self, **kw):
        return Client(self.addr, **kw)

    def rss_kib(self, field="VmRSS"):
        return proc_status_kib(self.p.pid, field)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
