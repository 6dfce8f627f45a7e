"""holdserver.py HOST PORT: the loopback server of the port forwarder's
tests (tests/integration/test_serve_forward.py): one thread, every socket
non-blocking; accepts everything (backlog 4096) and holds each connection
open until its client closes it. Each line a client sends is a command:

  PING   answered PONG
  BIG    zero bytes without end, as fast as the connection takes them
  STAT   answered "BYTES OPEN": the bytes written to BIG connections so
         far, and the connections open
  SUM N  the next N bytes are taken whole, answered by their sha256 (hex)

Prints "ready" once listening; runs until killed."""
import hashlib
import selectors
import socket
import sys

CHUNK = b"\0" * (256 << 10)

host, port = sys.argv[1], int(sys.argv[2])
ls = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((host, port))
ls.listen(4096)
ls.setblocking(False)
sel = selectors.DefaultSelector()
sel.register(ls, selectors.EVENT_READ, None)
state = {}  # socket -> [pending input, big, bytes still to sum, the sum]
written = 0
print("ready", flush=True)


def close(s):
    sel.unregister(s)
    del state[s]
    s.close()


def answer(s, line):
    if line == b"PING":
        s.send(b"PONG\n")
    elif line == b"STAT":
        s.send(b"%d %d\n" % (written, len(state)))
    elif line == b"BIG":
        state[s][1] = True
        sel.modify(s, selectors.EVENT_READ | selectors.EVENT_WRITE, None)
    elif line.startswith(b"SUM "):
        state[s][2], state[s][3] = int(line[4:]), hashlib.sha256()


def take(s, st):
    """Bytes of a SUM first, then lines."""
    if st[2]:
        part, st[0] = st[0][:st[2]], st[0][st[2]:]
        st[3].update(part)
        st[2] -= len(part)
        if not st[2]:
            s.sendall(st[3].hexdigest().encode() + b"\n")
        return bool(st[0]) and not st[2]
    if b"\n" not in st[0]:
        return False
    line, st[0] = st[0].split(b"\n", 1)
    answer(s, line.strip())
    return True


while True:
    for key, ev in sel.select():
        s = key.fileobj
        if s is ls:
            for _ in range(64):
                try:
                    c, _ = ls.accept()
                except BlockingIOError:
                    break
                c.setblocking(False)
                state[c] = [b"", False, 0, None]
                sel.register(c, selectors.EVENT_READ, None)
            continue
        if ev & selectors.EVENT_WRITE:
            try:
                written += s.send(CHUNK)
            except BlockingIOError:
                pass
            except OSError:
                close(s)
                continue
        if ev & selectors.EVENT_READ:
            try:
                data = s.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                close(s)
                continue
            st = state[s]
            st[0] += data
            try:
                while take(s, st):
                    pass
            except OSError:
                pass
