"""A small raw client of the envd API (README "use it from the E2B SDK"):
Connect RPC with the JSON codec over HTTP/1.1, plus the REST routes, on a TCP
address or a Unix socket. For the places the SDK cannot go: the benchmarks
(tests/bench/bench_serve_*.py: no node in the timing loop) and the container
test (tests/container: a Unix socket in a bind mount, --network=none).

    c = Client("127.0.0.1:49983")            # or "unix:/run/sa/agent.sock"
    c.unary("/process.Process/List", {})      # -> dict; RpcError on an error
    for msg in c.stream("/process.Process/Start", {"process": {"cmd": "true"}}):
        ...                                   # each message; RpcError at a failed end
    c.get_file(path, sink.write)              # -> byte count
    c.post_file(path, iter_of_bytes)          # -> the JSON answer

One request at a time per Client; the connection is kept alive between them
and made again when the server closed it. Every socket has a timeout.
"""
import base64
import json
import socket
import struct
import urllib.parse

PROCESS = "/process.Process/"
FILESYSTEM = "/filesystem.Filesystem/"
RECV = 1 << 18


class RpcError(Exception):
    def __init__(self, code, message, status=None):
        super().__init__("%s: %s" % (code, message))
        self.code, self.message, self.status = code, message, status


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
        self.sock = None
        self.buf = bytearray()
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
        self.sock, self.buf = s, bytearray()

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock = None

    def _fill(self, eof_ok=False):
        d = self.sock.recv(RECV)
        if not d:
            if eof_ok:
                return False
            raise EOFError("the server closed the connection")
        self.buf += d
        return True

    def _until(self, sep):
        start = 0
        while True:
            i = self.buf.find(sep, start)
            if i >= 0:
                out = bytes(self.buf[:i])
                del self.buf[:i + len(sep)]
                return out
            start = max(0, len(self.buf) - len(sep) + 1)
            self._fill()

    def _some(self, most, eof_ok=False):
        if not self.buf and not self._fill(eof_ok):
            return b""
        out = bytes(self.buf[:most])
        del self.buf[:most]
        return out

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
