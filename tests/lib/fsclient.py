"""A small client of `serve`'s filesystem API for the black-box tests.

Speaks HTTP/1.1 over the agent's Unix socket with http.client (so chunked
bodies, keep-alive and streamed responses are the standard library's), and
the Connect protocol on top: unary JSON calls, server streams read envelope
by envelope with a deadline on every read, and /files downloads and uploads
that stream (a 2 GB transfer never sits in memory). Paths are bytes: they go
into JSON as surrogateescape (\\udcXX for a byte that is not UTF-8, the
agent's convention both ways) and into queries percent-encoded.
"""
import base64
import http.client
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import urllib.parse

from connectc import Conn, RpcError  # noqa: F401  (the tests catch it from here)
from testlib import TIMEOUT, clean_env, vm_hwm_kib


def jpath(p):
    """A path (bytes or str) as the JSON string the agent reads."""
    return os.fsdecode(p) if isinstance(p, bytes) else p


def bpath(s):
    """A path from the agent's JSON back to bytes."""
    return os.fsencode(s)


class UnixConn(http.client.HTTPConnection):
    def __init__(self, path, timeout=TIMEOUT):
        super().__init__("agent", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Stream:
    """A server stream: envelopes as they come, each read with a deadline."""

    def __init__(self, conn, sock, resp):
        self.conn, self.sock, self.resp = conn, sock, resp
        self.end = None  # the end-stream message, once read

    def _read(self, n):
        data = b""
        while len(data) < n:
            piece = self.resp.read(n - len(data))
            if not piece:
                raise EOFError("stream ended without an end-stream message")
            data += piece
        return data

    def next(self, timeout=TIMEOUT):
        """The next message (a dict), or None after the end-stream one
        (kept in self.end)."""
        if self.end is not None:
            return None
        self.sock.settimeout(timeout)
        flags, n = struct.unpack(">BI", self._read(5))
        msg = json.loads(self._read(n))
        if flags & 2:
            self.end = msg
            return None
        assert flags == 0, flags
        return msg

    def finish(self, timeout=TIMEOUT):
        """Read to the end of the stream (within timeout, keepalives or not):
        the end-stream message."""
        deadline = time.monotonic() + timeout
        while self.end is None:
            left = deadline - time.monotonic()
            assert left > 0, "the stream did not end"
            self.next(timeout=left)
        return self.end

    def events(self, until, timeout=TIMEOUT):
        """Filesystem events (keepalives skipped) until until(events) holds;
        fails at the deadline or the end of the stream."""
        got = []
        deadline = time.monotonic() + timeout
        while not until(got):
            left = deadline - time.monotonic()
            assert left > 0, "events so far: %r" % got
            m = self.next(timeout=left)
            assert m is not None, "stream ended: %r after %r" % (self.end, got)
            if "filesystem" in m:
                got.append(m["filesystem"])
        return got

    def close(self):
        self.resp.close()
        self.conn.close()
        self.sock.close()


class FsClient:
    def __init__(self, sock_path, token=None):
        self.path, self.token = sock_path, token

    def conn(self, timeout=TIMEOUT):
        return UnixConn(self.path, timeout)

    def headers(self, user=None, extra=None):
        h = {"Connect-Protocol-Version": "1"}
        if self.token:
            h["X-Access-Token"] = self.token
        if user is not None:
            h["Authorization"] = "Basic " + base64.b64encode(user.encode() + b":").decode()
        h.update(extra or {})
        return h

    # ---- RPC ----

    def call(self, method, msg, user=None):
        """A unary call: the reply message, or RpcError."""
        c = self.conn()
        try:
            body = json.dumps(msg).encode()
            h = self.headers(user, {"Content-Type": "application/json"})
            c.request("POST", "/filesystem.Filesystem/" + method, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            assert r.getheader("Content-Type", "").startswith("application/json"), (r.status, data)
            out = json.loads(data)
            if r.status != 200:
                raise RpcError(out.get("code"), out.get("message"), r.status)
            return out
        finally:
            c.close()

    def code_of(self, method, msg, user=None):
        """The error code a call fails with (fails if it succeeds)."""
        try:
            out = self.call(method, msg, user)
        except RpcError as e:
            return e.code
        raise AssertionError("%s succeeded: %r" % (method, out))

    def stream(self, method, msg, user=None, timeout_ms=None):
        c = self.conn()
        body = json.dumps(msg).encode()
        env = struct.pack(">BI", 0, len(body)) + body
        extra = {"Content-Type": "application/connect+json"}
        if timeout_ms is not None:
            extra["Connect-Timeout-Ms"] = str(timeout_ms)
        c.request("POST", "/filesystem.Filesystem/" + method, body=env, headers=self.headers(user, extra))
        sock = c.sock  # getresponse may hand it to the response
        r = c.getresponse()
        assert r.status == 200, (r.status, r.read())
        assert r.getheader("Content-Type") == "application/connect+json"
        return Stream(c, sock, r)

    # ---- /files ----

    @staticmethod
    def query(path=None, user=None):
        q = []
        if path is not None:
            q.append("path=" + urllib.parse.quote(os.fsencode(path), safe=""))
        if user is not None:
            q.append("username=" + urllib.parse.quote(user, safe=""))
        return "/files" + ("?" + "&".join(q) if q else "")

    def get_file(self, path, user=None, gzip=False, sink=None, chunk=1 << 20):
        """GET /files: (status, headers, body). With sink, the body goes to
        sink(piece) as it arrives (and body is None)."""
        c = self.conn()
        try:
            h = self.headers(None, {"Accept-Encoding": "gzip"} if gzip else {"Accept-Encoding": "identity"})
            c.request("GET", self.query(path, user), headers=h)
            r = c.getresponse()
            if sink is None or r.status != 200:
                return r.status, dict(r.getheaders()), r.read()
            while True:
                piece = r.read(chunk)
                if not piece:
                    break
                sink(piece)
            return r.status, dict(r.getheaders()), None
        finally:
            c.close()

    def post(self, query, body, ctype, headers=None):
        """POST /files with body bytes or an iterable of bytes (sent chunked):
        (status, parsed JSON)."""
        c = self.conn()
        try:
            h = self.headers(None, {"Content-Type": ctype})
            h.update(headers or {})
            chunked = not isinstance(body, (bytes, bytearray))
            c.request("POST", query, body=body, headers=h, encode_chunked=chunked)
            r = c.getresponse()
            data = r.read()
            return r.status, json.loads(data) if data else None
        finally:
            c.close()

    def raw(self, method, target, headers=(), body=b""):
        """One request written by hand on a connection of its own: headers
        a list of (name, value) (repeats and any bytes as given), sent as
        they are. Returns (status, headers with lower-case names, body);
        a HEAD's body is not read."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(TIMEOUT)
        s.connect(self.path)
        try:
            h = [("Host", "agent")] + ([("X-Access-Token", self.token)] if self.token else []) + list(headers)
            if body or method == "POST":
                h.append(("Content-Length", str(len(body))))
            head = b"%s %s HTTP/1.1\r\n" % (method.encode(), target.encode()) + b"".join(
                (k.encode("latin-1") if isinstance(k, str) else k) + b": " +
                (v.encode("latin-1") if isinstance(v, str) else v) + b"\r\n" for k, v in h) + b"\r\n"
            c = Conn(s)
            try:
                c.send(head + body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused at its head: the answer is there to read
            if method == "HEAD":
                st, hd = c.head()
                return st, hd, b""
            r = c.response()
            return r.status, r.headers, r.body
        finally:
            s.close()

    def post_octet(self, path, body, user=None, headers=None):
        return self.post(self.query(path, user), body, "application/octet-stream", headers)

    def post_multipart(self, files, path=None, user=None, headers=None, boundary="sbx-boundary-0123456789"):
        """files: [(filename bytes or None, data bytes or iterable)]."""
        def gen():
            for name, data in files:
                disp = b'form-data; name="file"'
                if name is not None:
                    disp += b'; filename="' + os.fsencode(name).replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'
                yield b"--" + boundary.encode() + b"\r\nContent-Disposition: " + disp + \
                    b"\r\nContent-Type: application/octet-stream\r\n\r\n"
                if isinstance(data, (bytes, bytearray)):
                    yield bytes(data)
                else:
                    yield from data
                yield b"\r\n"
            yield b"--" + boundary.encode() + b"--\r\n"
        return self.post(self.query(path, user), gen(), "multipart/form-data; boundary=" + boundary, headers)


class Agent:
    """One `serve` on a Unix socket in a directory of its own (anyone's, so
    an agent run as another user can make it); stop() ends it."""

    def __init__(self, binary, preexec=None, **env):
        self.dir = tempfile.mkdtemp(prefix="sbx-sock-", dir="/tmp")
        os.chmod(self.dir, 0o1777)
        self.sock = os.path.join(self.dir, "agent.sock")
        env.setdefault("SANDBOX_AGENT_LISTEN", "unix:" + self.sock)
        self.proc = subprocess.Popen([binary, "serve"], env=clean_env(**env), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     preexec_fn=preexec)
        self.client = FsClient(self.sock, env.get("SANDBOX_AGENT_TOKEN"))
        self.err = None
        try:
            self.wait_ready()
        except BaseException:
            self.proc.kill()  # never left behind
            self.proc.communicate(timeout=TIMEOUT)
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    def wait_ready(self, deadline=20):
        end = time.monotonic() + deadline
        while True:
            assert self.proc.poll() is None, "agent exited: %r" % (self.proc.communicate()[1],)
            try:
                c = self.client.conn(timeout=2)
                c.request("GET", "/health", headers=self.client.headers())
                status = c.getresponse().status
                c.close()
                if status == 204:
                    return
            except OSError:
                pass
            assert time.monotonic() < end, "agent did not answer /health"
            time.sleep(0.02)  # polling interval, bounded by the deadline

    def vm_hwm_kib(self):
        return vm_hwm_kib(self.proc.pid)

    def reset_hwm(self):
        """Reset the peak RSS counter (clear_refs 5), so a later VmHWM is
        the peak of what happened since."""
        with open("/proc/%d/clear_refs" % self.proc.pid, "w") as f:
            f.write("5")

    def stop(self):
        if self.err is None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
            try:
                _, err = self.proc.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                _, err = self.proc.communicate(timeout=TIMEOUT)
            self.err = err.decode(errors="replace")
            shutil.rmtree(self.dir, ignore_errors=True)
        return self.proc.returncode, self.err


def wait_until(cond, timeout=TIMEOUT, what="condition"):
    """Poll cond() (every 10 ms) until it is true; fail at the deadline."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.01)
