"""A small Connect-JSON client over raw sockets, for the black-box tests of
`sandbox-agent serve` (and of `run`/`session` serving beside their job).

Everything on the wire is the test's choice: unary calls (application/json),
server streams (application/connect+json, one request envelope, response
envelopes read one by one as they arrive, so a test can stop reading), and
client streams (a chunked body of envelopes sent piece by piece).

    a = ServeAgent(agent_binary, SANDBOX_AGENT_TOKEN="t")
    r = a.unary("process.Process/List", {})
    s = a.stream("process.Process/Start", {"process": {"cmd": "echo"}})
    events, end = s.collect()
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

from conftest import TIMEOUT, clean_env

TOKEN = "t0ken-abc"


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
        r, _, _ = select.select([self.s], [], [], timeout)
        if not r:
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
    """An agent serving the API on a Unix socket in tmp_path: `serve`, or
    another mode (argv) with SANDBOX_AGENT_LISTEN set. stderr goes to a file
    (a pipe nobody reads could fill and block the agent)."""

    def __init__(self, agent, argv=("serve",), wait=True, popen=None, unset=(), wrap=(), **env):
        # A short directory of its own: a Unix socket path has 107 bytes at most.
        self.dir = tempfile.mkdtemp(prefix="sa-", dir="/tmp")
        os.chmod(self.dir, 0o777)  # an agent started as another user makes its socket here
        self.path = os.path.join(self.dir, "agent.sock")
        self.token = env.setdefault("SANDBOX_AGENT_TOKEN", TOKEN)
        env.setdefault("SANDBOX_AGENT_LISTEN", "unix:" + self.path)
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
