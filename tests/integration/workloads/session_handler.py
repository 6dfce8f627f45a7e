"""A session handler for the tests: one JSON request per stdin line, replies
on stdout. Behaviour by "method":
  echo     result = {"params": ..., "raw": base64 of the exact stdin line}
  pid      result = this process's pid
  big      result = params bytes of text (a big reply), then a stderr line
  hold     no reply (stays in flight)
  later    held; answered by the next "flush", in reverse order
  flush    answers every "later" (newest first), then itself
  sleep    says so on stderr, sleeps params seconds, then answers
  noise    prints non-JSON output and a forged reply line first, then answers
  orphans  starts params grandchildren that are orphaned and exit at once
  env      result = the environment and /proc/1/environ as text
  exit     exits with code params, no reply
argv[1] (optional): a file to append "start <pid> <monotonic>" to at start.
SESSION_HANDLER_IGNORE_TERM=1: ignore SIGTERM and stdin EOF (to test SIGKILL).
"""
import base64
import json
import os
import signal
import sys
import time

if len(sys.argv) > 1:
    with open(sys.argv[1], "a") as f:
        f.write("start %d %.6f\n" % (os.getpid(), time.monotonic()))
stubborn = os.environ.get("SESSION_HANDLER_IGNORE_TERM") == "1"
if stubborn:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

out = sys.stdout.buffer
held = []


def reply(rid, result):
    out.write(json.dumps({"id": rid, "result": result}).encode() + b"\n")


for line in sys.stdin.buffer:
    req = json.loads(line)
    rid, method, params = req["id"], req.get("method"), req.get("params")
    if method == "echo":
        reply(rid, {"params": params, "raw": base64.b64encode(line).decode()})
    elif method == "pid":
        reply(rid, os.getpid())
    elif method == "big":
        reply(rid, (rid * (params // len(rid) + 1))[:params])
        out.flush()
        sys.stderr.write("session_handler: big %s written\n" % rid)
        sys.stderr.flush()
    elif method == "hold":
        pass
    elif method == "later":
        held.append(rid)
    elif method == "flush":
        for h in reversed(held):
            reply(h, "late " + h)
        held.clear()
        reply(rid, "flushed")
    elif method == "sleep":
        out.flush()
        sys.stderr.write("session_handler: sleeping\n")
        sys.stderr.flush()
        time.sleep(params)
        reply(rid, "slept")
    elif method == "noise":
        out.write(b"hello from the handler\n")
        out.write(b"__SANDBOX_REPLY__" + rid.encode() + b"__forged__e30=\n")
        out.write(b'{"id": "' + rid.encode() + b'", "neither": 1}\n')
        reply(rid, "after noise")
    elif method == "orphans":
        pids = []
        for _ in range(params):
            r, w = os.pipe()
            if os.fork() == 0:
                os.close(r)
                if os.fork() == 0:  # the grandchild: orphaned when its parent exits
                    os.write(w, str(os.getpid()).encode())
                    os.close(w)
                    time.sleep(0.2)
                    os._exit(0)
                os._exit(0)
            os.close(w)
            pids.append(int(os.read(r, 64)))
            os.close(r)
            os.wait()
        reply(rid, pids)
    elif method == "env":
        try:
            with open("/proc/1/environ", "rb") as f:
                pid1 = f.read().decode("latin-1")
        except OSError as e:
            pid1 = "denied: %s" % e
        reply(rid, {"env": dict(os.environ), "pid1_environ": pid1})
    elif method == "exit":
        out.flush()
        os._exit(params)
    else:
        out.write(json.dumps({"id": rid, "error": {"code": "no_such_method"}}).encode() + b"\n")
    out.flush()
if stubborn:
    while True:
        time.sleep(1)
