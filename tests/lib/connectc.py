"""The one Connect-JSON client of the tests: the envd API (Connect RPC with
the JSON codec over HTTP/1.1, plus the REST routes) on a TCP address or a
Unix socket, in two layers over one connection reader (Conn):

The wire, for the black-box tests of `serve` (and of `run`/`session` serving
beside their job): everything on it is the test's choice - unary calls,
server streams read envelope by envelope as they arrive (a test can stop
reading), client streams sent piece by piece - on an agent it starts:

    a = ServeAgent(agent_binary, SANDBOX_AGENT_TOKEN="t")
    r = a.unary("process.Process/List", {})
    s = a.stream("process.Process/Start", {"process": {"cmd": "echo"}})
    events, end = s.collect()

A kept-alive Client, for where the SDK cannot go (the benchmarks: no node
in the timing loop; the container test: a Unix socket in a bind mount):

    c = Client("127.0.0.1:49983")            # or "unix:/run/sa/agent.sock"
    c.unary("/process.Process/List", {})      # -> dict; RpcError on an error
    for msg in c.stream("/process.Process/Start", {"process": {"cmd": "true"}}):
        ...                                   # each message; RpcError at a failed end
    c.get_file(path, sink.write)              # -> byte count
    c.post_file(path, iter_of_bytes)          # -> the JSON answer

Every read has a deadline.
"""
import base64
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import urllib.parse

from testlib import TIMEOUT, clean_env

TOKEN = "t0ken-abc"
PROCESS = "/process.Process/"
FILESYSTEM = "/filesystem.Filesystem/"
RECV = 1 << 18


class RpcError(Exception):
    def __init__(self, code, message, status=None):
        super().__init__("%s: %s" % (code, message))
        self.code, self.message, self.status = code, message, status


def envelope(msg, flags=0):
    data = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
    return struct.pack(">BI", flags, len(data)) + data


def b64(data):
    return base64.b64encode(data if isinstance(data, bytes) else data.encode()).decode()


def unb64(s):
    return base64.b64decode(s)


def head_bytes(method, path, headers, version="HTTP/1.1"):
    lines = ["%s %s %s" % (method, path, version), "Host: agent"]
    lines += ["%s: %s" % kv for kv in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class Reply:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)

    @property
    def code(self):
        return self.json().get("code") if self.status != 200 else None


class Conn:
    """One HTTP/1.1 connection; reads one response at a time."""

    def __init__(self, sock):
        self.s = sock
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def more(self, timeout=TIMEOUT):
        # poll, not select: a test holding 1,000 sockets has fds past FD_SETSIZE.
        p = select.poll()
        p.register(self.s, select.POLLIN)
        if not p.poll(None if timeout is None else timeout * 1000):
            raise TimeoutError("no data from the agent within %s s" % timeout)
        d = self.s.recv(1 << 20)
        if not d:
            raise EOFError("connection closed")
        self.buf += d

    def until(self, sep, timeout=TIMEOUT):
        end = time.monotonic() + timeout
        while sep not in self.buf:
            self.more(max(0.01, end - time.monotonic()))
        i = self.buf.index(sep)
        out, self.buf = self.buf[:i], self.buf[i + len(sep):]
        return out

    def take(self, n, timeout=TIMEOUT):
        end = time.monotonic() + timeout
        while len(self.buf) < n:
            self.more(max(0.01, end - time.monotonic()))
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def some(self, most, timeout=TIMEOUT, eof_ok=False):
        """Up to most bytes, at least one (b"" at EOF when eof_ok)."""
        if not self.buf:
            try:
                self.more(timeout)
            except EOFError:
                if eof_ok:
                    return b""
                raise
        out, self.buf = self.buf[:most], self.buf[most:]
        return out

    def head(self, timeout=TIMEOUT):
        lines = self.until(b"\r\n\r\n", timeout).decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        return status, headers

    def response(self, timeout=TIMEOUT):
        status, headers = self.head(timeout)
        if "content-length" in headers:
            body = self.take(int(headers["content-length"]), timeout)
        elif headers.get("transfer-encoding") == "chunked":
            body = b""
            while True:
                piece = self.chunk(timeout)
                if piece is None:
                    break
                body += piece
        else:
            body = b""
        return Reply(status, headers, body)

    def chunk(self, timeout=TIMEOUT):
        """The next chunk of a chunked body, or None at its end."""
        size = int(self.until(b"\r\n", timeout).split(b";")[0], 16)
        if size == 0:
            self.until(b"\r\n", timeout)
            return None
        data = self.take(size, timeout)
        self.take(2, timeout)
        return data

    def close(self):
        self.s.close()


class Stream:
    """A server-streaming call: messages read one by one as they arrive."""

    def __init__(self, conn):
        self.c = conn
        self.status, self.headers = conn.head()
        self.body = b""
        self.done = False

    def _fill(self, n, timeout):
        end = time.monotonic() + timeout
        while len(self.body) < n:
            if self.done:
                raise EOFError("stream body ended inside an envelope")
            piece = self.c.chunk(max(0.01, end - time.monotonic()))
            if piece is None:
                self.done = True
            else:
                self.body += piece

    def next(self, timeout=TIMEOUT):
        """(flags, message) of the next envelope."""
        self._fill(5, timeout)
        flags, n = struct.unpack(">BI", self.body[:5])
        self._fill(5 + n, timeout)
        msg = json.loads(self.body[5:5 + n])
        self.body = self.body[5 + n:]
        return flags, msg

    def collect(self, timeout=TIMEOUT, keepalives=False):
        """Every message up to the end-stream one: (messages, end message)."""
        out = []
        end = time.monotonic() + timeout
        while True:
            flags, msg = self.next(max(0.01, end - time.monotonic()))
            if flags & 2:
                return out, msg
            if keepalives or "keepalive" not in msg.get("event", {}):
                out.append(msg)

    def close(self):
        self.c.close()


def output(events, chan="stdout"):
    """The bytes of every data event of chan, joined."""
    return b"".join(unb64(e["event"]["data"][chan]) for e in events
                    if chan in e.get("event", {}).get("data", {}))


def end_of(events):
    ends = [e["event"]["end"] for e in events if "end" in e.get("event", {})]
    assert len(ends) == 1, events
    return ends[0]


class ServeAgent:
    """An agent serving the API on a Unix socket in tmp_path (or on the TCP
    address given as SANDBOX_AGENT_LISTEN, reached through loopback):
    `serve`, or another mode (argv) with SANDBOX_AGENT_LISTEN set. stderr
    goes to a file (a pipe nobody reads could fill and block the agent)."""

    def __init__(self, agent, argv=("serve",), wait=True, popen=None, unset=(), wrap=(), **env):
        # A short directory of its own: a Unix socket path has 107 bytes at most.
        self.dir = tempfile.mkdtemp(prefix="sa-", dir="/tmp")
        os.chmod(self.dir, 0o777)  # an agent started as another user makes its socket here
        self.path = os.path.join(self.dir, "agent.sock")
        self.token = env.setdefault("SANDBOX_AGENT_TOKEN", TOKEN)
        self.listen = env.setdefault("SANDBOX_AGENT_LISTEN", "unix:" + self.path)
        self.errpath = os.path.join(self.dir, "agent.err")
        self.outpath = os.path.join(self.dir, "agent.out")
        self.errf = open(self.errpath, "wb")
        self.outf = open(self.outpath, "wb")
        environ = clean_env(**env)
        for k in unset:
            environ.pop(k, None)
        self.proc = subprocess.Popen(list(wrap) + [agent] + list(argv), env=environ,
                                     stdin=subprocess.DEVNULL, stdout=self.outf,
                                     stderr=self.errf, **(popen or {}))
        self.rc = None
        if wait:
            self.wait_ready()

    @property
    def pid(self):
        return self.proc.pid

    def stdout(self):
        if self.rc is not None:
            return self._out
        with open(self.outpath, "rb") as f:
            return f.read()

    def stderr(self):
        if self.rc is not None:
            return self._err
        with open(self.errpath, "rb") as f:
            return f.read().decode(errors="replace")

    def sock(self, timeout=TIMEOUT):
        if self.listen and not self.listen.startswith("unix:"):
            host, port = self.listen.rsplit(":", 1)
            host = host.strip("[]")
            host = {"0.0.0.0": "127.0.0.1", "::": "::1", "localhost": "127.0.0.1"}.get(host, host)
            return socket.create_connection((host, int(port)), timeout=timeout)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(self.path)
        return s

    def conn(self):
        return Conn(self.sock())

    def wait_ready(self, deadline=20):
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            assert self.proc.poll() is None, "agent exited: %s" % self.stderr()
            try:
                c = self.conn()
                c.send(head_bytes("GET", "/health", {"X-Access-Token": self.token or ""}))
                if c.response(5).status in (204, 401):
                    c.close()
                    return
            except OSError:
                pass
            time.sleep(0.02)  # polling interval, bounded by the deadline
        raise AssertionError("agent did not answer /health within %d s" % deadline)

    def headers(self, ctype, body_len=None, user=None, extra=None, token=True):
        h = {"Content-Type": ctype, "Connect-Protocol-Version": "1"}
        if token and self.token:
            h["X-Access-Token"] = self.token
        if user is not None:
            h["Authorization"] = "Basic " + b64(user + ":")
        if body_len is not None:
            h["Content-Length"] = str(body_len)
        h.update(extra or {})
        return h

    def unary(self, method, msg, user=None, headers=None, conn=None, raw=None):
        body = raw if raw is not None else json.dumps(msg).encode()
        c = conn or self.conn()
        c.send(head_bytes("POST", "/" + method,
                          self.headers("application/json", len(body), user, headers)) + body)
        r = c.response()
        if conn is None:
            c.close()
        return r

    def stream(self, method, msg, user=None, headers=None, raw=None):
        body = raw if raw is not None else envelope(msg)
        c = self.conn()
        c.send(head_bytes("POST", "/" + method,
                          self.headers("application/connect+json", len(body), user, headers)) + body)
        return Stream(c)

    def start(self, cmd, *args, **kw):
        """Start cmd (a Start stream, its start event read): (stream, pid)."""
        msg = {"process": {"cmd": cmd, "args": list(args)}}
        for k in ("envs", "cwd"):
            if k in kw:
                msg["process"][k] = kw.pop(k)
        msg.update(kw.pop("msg", {}))
        s = self.stream("process.Process/Start", msg, **kw)
        assert s.status == 200
        flags, first = s.next()
        assert flags == 0 and "start" in first["event"], first
        return s, first["event"]["start"]["pid"]

    def stop(self, timeout=TIMEOUT):
        if self.rc is None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout)
                raise
            self.errf.close()
            self.outf.close()
            self._out, self._err = self.stdout(), self.stderr()
            self.rc = self.proc.returncode
            self.outf.close()
            shutil.rmtree(self.dir, ignore_errors=True)
        return self.rc, self.stderr()


# ---- the kept-alive Client ------------------------------------------------------

class Response:
    """Status, headers and a body read on demand (Content-Length, chunked or
    to the close)."""

    def __init__(self, client):
        self.c = client
        head = client._until(b"\r\n\r\n").decode("latin-1").split("\r\n")
        self.status = int(head[0].split()[1])
        self.headers = {}
        for line in head[1:]:
            k, v = line.split(":", 1)
            self.headers[k.strip().lower()] = v.strip()
        self.keep = self.headers.get("connection", "").lower() != "close"
        self.done = False

    def chunks(self):
        """The body, de-chunked, as it arrives."""
        c, h = self.c, self.headers
        if self.status in (204, 304) or self.c.last_method == "HEAD":
            pass
        elif "content-length" in h:
            left = int(h["content-length"])
            while left:
                piece = c._some(left)
                left -= len(piece)
                yield piece
        elif h.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int(c._until(b"\r\n").split(b";")[0], 16)
                if size == 0:
                    while c._until(b"\r\n"):  # trailers, up to the empty line
                        pass
                    break
                while size:
                    piece = c._some(size)
                    size -= len(piece)
                    yield piece
                c._until(b"\r\n")
        else:
            self.keep = False
            while True:
                piece = c._some(RECV, eof_ok=True)
                if not piece:
                    break
                yield piece
        self.done = True
        if not self.keep:
            c.close()

    def body(self):
        return b"".join(self.chunks())

    def json(self):
        return json.loads(self.body() or b"null")


class Client:
    def __init__(self, addr, token=None, user=None, timeout=60):
        self.addr, self.token, self.user, self.timeout = addr, token, user, timeout
        self.sock = self.conn = None
        self.last_method = None

    # ---- the connection ---------------------------------------------------
    def connect(self):
        if self.addr.startswith("unix:"):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(self.timeout)
            s.connect(self.addr[5:])
        else:
            host, port = self.addr.rsplit(":", 1)
            s = socket.create_connection((host.strip("[]"), int(port)), timeout=self.timeout)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = Conn(s)
        self.sock = s

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock = self.conn = None

    def _until(self, sep):
        return self.conn.until(sep, self.timeout)

    def _some(self, most, eof_ok=False):
        return self.conn.some(most, self.timeout, eof_ok)

    # ---- requests ---------------------------------------------------------
    def request(self, method, target, headers=None, body=b""):
        """Send one request (body: bytes, or an iterable of bytes sent
        chunked); returns the Response, its body not read yet."""
        hdrs = {"Host": "sandbox", "User-Agent": "sandbox-agent-tests/connectc"}
        if self.token:
            hdrs["X-Access-Token"] = self.token
        hdrs.update(headers or {})
        chunked = not isinstance(body, (bytes, bytearray))
        if chunked:
            hdrs["Transfer-Encoding"] = "chunked"
        elif body or method == "POST":
            hdrs["Content-Length"] = str(len(body))
        head = ("%s %s HTTP/1.1\r\n" % (method, target) +
                "".join("%s: %s\r\n" % kv for kv in hdrs.items()) + "\r\n").encode()
        for attempt in (0, 1):
            if self.sock is None:
                self.connect()
            try:
                if chunked:
                    self.sock.sendall(head)
                    try:
                        for piece in body:
                            if piece:
                                self.sock.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
                        self.sock.sendall(b"0\r\n\r\n")
                    except (BrokenPipeError, ConnectionResetError):
                        pass  # refused early: its answer may be there to read
                else:
                    self.sock.sendall(head + bytes(body))
                self.last_method = method
                return Response(self)
            except (BrokenPipeError, ConnectionResetError, EOFError):
                # A kept-alive connection the server had closed: once more, fresh.
                self.close()
                if attempt or chunked:
                    raise

    def _auth(self, user):
        user = user if user is not None else self.user
        if not user:
            return {}
        return {"Authorization": "Basic " + base64.b64encode(user.encode() + b":").decode()}

    def unary(self, method, msg, user=None, headers=None):
        path = method if method.startswith("/") else "/" + method
        h = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
        h.update(self._auth(user))
        h.update(headers or {})
        r = self.request("POST", path, h, json.dumps(msg).encode())
        body = r.body()
        try:
            obj = json.loads(body) if body else {}
        except ValueError:
            obj = None
        if r.status != 200:
            if isinstance(obj, dict) and "code" in obj:
                raise RpcError(obj["code"], obj.get("message", ""), r.status)
            raise RpcError("http_%d" % r.status, body[:200].decode(errors="replace"), r.status)
        return obj

    def stream(self, method, msg, user=None, headers=None, timeout_ms=None):
        """Yield each message of a server stream; raise RpcError when it ends
        with an error (or is refused). Closing the generator early drops the
        connection (the way the SDK's abort does)."""
        path = method if method.startswith("/") else "/" + method
        h = {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"}
        if timeout_ms:
            h["Connect-Timeout-Ms"] = str(timeout_ms)
        h.update(self._auth(user))
        h.update(headers or {})
        payload = json.dumps(msg).encode()
        r = self.request("POST", path, h, struct.pack(">BI", 0, len(payload)) + payload)
        if r.status != 200:
            body = r.body()
            try:
                obj = json.loads(body)
                raise RpcError(obj["code"], obj.get("message", ""), r.status)
            except (ValueError, KeyError, TypeError):
                raise RpcError("http_%d" % r.status, body[:200].decode(errors="replace"), r.status)
        finished = False
        try:
            pending = bytearray()
            for piece in r.chunks():
                pending += piece
                while len(pending) >= 5:
                    flags, n = struct.unpack_from(">BI", pending)
                    if len(pending) < 5 + n:
                        break
                    obj = json.loads(bytes(pending[5:5 + n]))
                    del pending[:5 + n]
                    if flags & 2:
                        finished = True
                        if obj.get("error"):
                            raise RpcError(obj["error"].get("code"), obj["error"].get("message", ""))
                        continue
                    yield obj
            if not finished:
                raise RpcError("missing_end", "the stream ended without an end-stream envelope")
        finally:
            if not r.done:
                self.close()

    # ---- REST ---------------------------------------------------------------
    def _files_target(self, path, user):
        q = {"path": path}
        user = user if user is not None else self.user
        if user:
            q["username"] = user
        return "/files?" + urllib.parse.urlencode(q)

    def health(self):
        r = self.request("GET", "/health")
        r.body()
        return r.status

    def get_file(self, path, sink, user=None):
        """Stream a file to sink(bytes); returns the byte count."""
        r = self.request("GET", self._files_target(path, user))
        if r.status != 200:
            raise RpcError("http_%d" % r.status, r.body()[:200].decode(errors="replace"), r.status)
        n = 0
        for piece in r.chunks():
            n += len(piece)
            sink(piece)
        return n

    def post_file(self, path, data, user=None):
        """Upload bytes or an iterable of bytes (chunked) as octet-stream."""
        r = self.request("POST", self._files_target(path, user),
                         {"Content-Type": "application/octet-stream"}, data)
        body = r.body()
        if r.status != 200:
            raise RpcError("http_%d" % r.status, body[:200].decode(errors="replace"), r.status)
        return json.loads(body)


def run(client, cmd, args=(), **process):
    """Start cmd, wait for its end: (pid, stdout bytes, stderr bytes, end event)."""
    msg = {"process": dict({"cmd": cmd, "args": list(args)}, **process)}
    pid, out, err, end = None, bytearray(), bytearray(), None
    for m in client.stream(PROCESS + "Start", msg):
        ev = m.get("event", {})
        if "start" in ev:
            pid = ev["start"].get("pid")
        elif "data" in ev:
            d = ev["data"]
            out += base64.b64decode(d.get("stdout", ""))
            err += base64.b64decode(d.get("stderr", ""))
        elif "end" in ev:
            end = ev["end"]
    return pid, bytes(out), bytes(err), end
