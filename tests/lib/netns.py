"""Two network namespaces joined by a veth pair, for the port forwarder's
tests and bench rows (tests/integration/test_serve_forward.py,
tests/bench/bench_serve_forward.py): a "sandbox" end and a "client" end,
each with addresses of its own (10.77.0.1/24 and fd77::1/64 in the sandbox,
.2 and ::2 in the client), both loopbacks up. Made with iproute2, deleted
by close() (deleting a namespace deletes its end of the pair, and the pair
with it); the host's own network is never touched.

A program runs in a namespace through `ip netns exec` (argv(ns) is the
prefix: it execs, so the pid is the program's); a socket is opened in one
with inside(ns), which moves only the calling thread there (setns) and
back: the socket stays in the namespace it was made in.
"""
import contextlib
import ctypes
import itertools
import os
import subprocess

CLONE_NEWNET = 0x40000000
SANDBOX_V4, CLIENT_V4 = "10.77.0.1", "10.77.0.2"
SANDBOX_V6, CLIENT_V6 = "fd77::1", "fd77::2"
_seq = itertools.count()


def _ip(*args):
    return subprocess.run(["ip"] + list(args), capture_output=True, text=True, timeout=30)


def unavailable():
    """Why namespaces cannot be made here (None when they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    try:
        probe = "sa-probe-%d" % os.getpid()
        r = _ip("netns", "add", probe)
    except FileNotFoundError:
        return "no ip (iproute2)"
    if r.returncode != 0:
        return "ip netns add is not permitted here: %s" % r.stderr.strip()
    _ip("netns", "del", probe)
    return None


class NetPair:
    def __init__(self):
        n = next(_seq)
        self.sandbox = "sa-fwd-%d-%d-s" % (os.getpid(), n)
        self.client = "sa-fwd-%d-%d-c" % (os.getpid(), n)
        self.made = []
        try:
            for ns in (self.sandbox, self.client):
                self._run("netns", "add", ns)
                self.made.append(ns)
                self._run("-n", ns, "link", "set", "lo", "up")
            self._run("link", "add", "fwd0", "netns", self.sandbox, "type", "veth", "peer", "name", "fwd1",
                      "netns", self.client)
            for ns, dev, v4, v6 in ((self.sandbox, "fwd0", SANDBOX_V4, SANDBOX_V6),
                                    (self.client, "fwd1", CLIENT_V4, CLIENT_V6)):
                self._run("-n", ns, "addr", "add", v4 + "/24", "dev", dev)
                self._run("-n", ns, "addr", "add", v6 + "/64", "dev", dev, "nodad")
                self._run("-n", ns, "link", "set", dev, "up")
        except Exception:
            self.close()
            raise

    @staticmethod
    def _run(*args):
        r = _ip(*args)
        if r.returncode != 0:
            raise RuntimeError("ip %s: %s" % (" ".join(args), r.stderr.strip()))

    @staticmethod
    def argv(ns):
        return ["ip", "netns", "exec", ns]

    @contextlib.contextmanager
    def inside(self, ns):
        libc = ctypes.CDLL(None, use_errno=True)
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        target = os.open("/run/netns/" + ns, os.O_RDONLY | os.O_CLOEXEC)
        try:
            if libc.setns(target, CLONE_NEWNET) != 0:
                e = ctypes.get_errno()
                raise OSError(e, "setns %s: %s" % (ns, os.strerror(e)))
            try:
                yield
            finally:
                if libc.setns(own, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns back")
        finally:
            os.close(own)
            os.close(target)

    def close(self):
        for ns in self.made:
            _ip("netns", "del", ns)
        self.made = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
