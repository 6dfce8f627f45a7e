"""The agent as PID 1 of real containers (podman + runc), built from the
repository's Dockerfile: what a platform sees through `podman run`, `stop`,
`exec` and the container's stdout and exit code.

Requires root and network for the one-time setup (tests/container/setup.sh);
the containers themselves run with --network=none.
"""
import base64
import json
import re
import shlex
import subprocess
import time
import uuid

from podlib import (AGENT_IN_IMAGE, LABEL, PODMAN, RUN_FLAGS, TIMEOUT, Container, fs_payload,
                      one_sentinel, podman, run_job)

IN_CREATE = 0x100
IN_ISDIR = 0x40000000

# A job that says it is up, then waits to be stopped.
READY_THEN_SLEEP = "import time; print('ready', flush=True); time.sleep(600)"


def is_ready(line):
    return line.strip() == b"ready"


# ---- run: sentinel and exit code --------------------------------------------

def test_job_sentinel_and_exit_code(images):
    nonce = "n-" + uuid.uuid4().hex
    code = ("import json, os\n"
            "print('hello from the job')\n"
            "print('no newline', end='', flush=True)\n"
            "json.dump({'answer': 42, 'big': 12345678901234567890}, open(os.environ['SANDBOX_RESULT'], 'w'))\n"
            "raise SystemExit(3)\n")
    rc, out, err = run_job(images.example, ["python3", "-c", code], nonce=nonce)
    assert rc == 3, (out, err)
    assert b"hello from the job\n" in out
    assert b"no newline\n__SANDBOX_RESULT__" in out
    core = one_sentinel(out)
    assert core == {"status": "failed", "exit_code": 3,
                    "result": {"answer": 42, "big": 12345678901234567890}, "nonce": nonce}
    assert list(core) == ["status", "exit_code", "result", "nonce"]


def test_job_success_and_default_result(images):
    rc, out, err = run_job(images.example, ["sh", "-c", "echo ok"], nonce="abc")
    assert rc == 0, (out, err)
    assert one_sentinel(out) == {"status": "succeeded", "exit_code": 0,
                                 "result": {"exit_code": 0}, "nonce": "abc"}


def test_missing_entry_is_a_usage_error(images):
    # The example image's bare `docker run`: no job given.
    p = podman("run", "--rm", "--label", LABEL, *RUN_FLAGS, images.example)
    assert p.returncode == 2
    assert b"SANDBOX_JOB_INNER_ENTRY" in p.stderr
    assert b"__SANDBOX_RESULT__" not in p.stdout


# ---- docker stop ------------------------------------------------------------

def test_stop_reports_143_inside_grace(images, start):
    nonce = uuid.uuid4().hex
    c = start(images.example, env={
        "SANDBOX_JOB_INNER_ENTRY": json.dumps(["python3", "-c", READY_THEN_SLEEP]),
        "SANDBOX_JOB_NONCE": nonce,
        "SANDBOX_AGENT_GRACE_SECONDS": "20",
    })
    c.wait_line(is_ready)
    t0 = time.monotonic()
    stop = podman("stop", "-t", "60", c.name)
    rc, out = c.finish()
    elapsed = time.monotonic() - t0
    assert stop.returncode == 0, stop.stderr
    assert rc == 143, (out, c.err)
    assert one_sentinel(out) == {"status": "failed", "exit_code": 143,
                                 "result": {"exit_code": 143}, "nonce": nonce}
    # The job died of SIGTERM at once: nowhere near the agent's 20 s grace,
    # let alone podman's 60 s before its own SIGKILL.
    assert elapsed < 10, "stop took %.1f s" % elapsed


def test_stop_kills_a_job_ignoring_sigterm_after_grace(images, start):
    grace = 3
    code = ("import signal, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('ready', flush=True)\n"
            "time.sleep(600)\n")
    c = start(images.example, env={
        "SANDBOX_JOB_INNER_ENTRY": json.dumps(["python3", "-c", code]),
        "SANDBOX_JOB_NONCE": "n",
        "SANDBOX_AGENT_GRACE_SECONDS": str(grace),
    })
    c.wait_line(is_ready)
    t0 = time.monotonic()
    podman("stop", "-t", "60", c.name)
    rc, out = c.finish()
    elapsed = time.monotonic() - t0
    assert rc == 137, (out, c.err)
    assert one_sentinel(out) == {"status": "failed", "exit_code": 137,
                                 "result": {"exit_code": 137}, "nonce": "n"}
    # Killed by the agent after its grace, not by podman's SIGKILL at 60 s.
    assert grace * 0.9 <= elapsed < 30, "stop took %.1f s" % elapsed


# ---- docker run -it ----------------------------------------------------------

def test_tty_job_gets_the_foreground(images):
    # `podman run -it` under script(1) for a real terminal. The job reads its
    # own stat: field 5 is its process group, field 8 the terminal's
    # foreground group; they match when the agent handed it the terminal.
    job = "read -r s < /proc/$$/stat; set -- $s; echo \"pgrp=$5 tpgid=$8\"; exit 5"
    cmd = shlex.join(PODMAN + ["run", "--rm", "-it", "--label", LABEL] + RUN_FLAGS
                     + [images.example, "sh", "-c", job])
    # stdin stays open until the container is gone: script(1) would otherwise
    # type an EOF character into the terminal.
    p = subprocess.Popen(["script", "-qec", cmd, "/dev/null"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 5, (out, err)
    out = out.replace(b"\r\n", b"\n")
    # (Not anchored: script(1) may type a NUL that the terminal echoes as ^@.)
    m = re.findall(rb"pgrp=(\d+) tpgid=(\d+)", out)
    assert len(m) == 1, out
    pgrp, tpgid = int(m[0][0]), int(m[0][1])
    line = m
    assert pgrp == tpgid and pgrp != 1, line
    assert one_sentinel(out)["exit_code"] == 5


# ---- PID 1 reaps orphans ----------------------------------------------------

ORPHANS = r"""
import json, os, time
r, w = os.pipe()
for _ in range(20):
    p = os.fork()
    if p == 0:
        if os.fork() == 0:          # grandchild: orphaned to PID 1 once p exits
            os.write(w, b"%d\n" % os.getpid())
            os._exit(0)
        os._exit(0)
    os.waitpid(p, 0)
os.close(w)
data = b""
while True:                         # EOF: every orphan has exited
    chunk = os.read(r, 4096)
    if not chunk:
        break
    data += chunk
print("orphans " + json.dumps([int(x) for x in data.split()]), flush=True)
print("ready", flush=True)
time.sleep(600)
"""

SCAN_PROC = r"""
import json, os
states = {}
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            stat = open("/proc/%s/stat" % p).read()
        except OSError:
            continue
        states[int(p)] = stat.rsplit(")", 1)[1].split()[0]
print(json.dumps(states))
"""


def test_no_zombie_after_orphans(images, start):
    c = start(images.example, env={
        "SANDBOX_JOB_INNER_ENTRY": json.dumps(["python3", "-c", ORPHANS]),
    })
    line = c.wait_line(lambda l: l.startswith(b"orphans "))
    orphans = json.loads(line[len(b"orphans "):])
    assert len(orphans) == 20
    c.wait_line(is_ready)
    # Every orphan has exited; PID 1 must reap them. Poll the container's
    # process table until they are gone (a non-reaping init leaves them as
    # zombies forever, so this fails at the deadline).
    deadline = time.monotonic() + 30
    while True:
        p = c.exec("python3", "-c", SCAN_PROC)
        assert p.returncode == 0, p.stderr
        states = {int(k): v for k, v in json.loads(p.stdout).items()}
        left = [pid for pid in orphans if pid in states]
        zombies = {pid: s for pid, s in states.items() if s == "Z"}
        if not left and not zombies:
            break
        assert time.monotonic() < deadline, "not reaped: %r zombies: %r" % (left, zombies)
        time.sleep(0.2)  # re-poll the process table
    assert states.get(1) in ("S", "R"), states
    podman("stop", "-t", "60", c.name)
    rc, out = c.finish()
    assert rc == 143
    assert one_sentinel(out)["exit_code"] == 143


# ---- the nonce ----------------------------------------------------------------

PEEK = r"""
import json, os
seen = {"env": dict(os.environ)}
for f in ("/proc/1/environ", "/proc/1/cmdline", "/proc/self/environ"):
    try:
        seen[f] = open(f, "rb").read().decode("latin-1")
    except OSError as e:
        seen[f] = "error %d" % e.errno
json.dump(seen, open(os.environ["SANDBOX_RESULT"], "w"))
print("ready", flush=True)
import time; time.sleep(600)
"""


def test_nonce_not_readable_inside(images, start):
    nonce = "secret-" + uuid.uuid4().hex
    c = start(images.example, env={
        "SANDBOX_JOB_INNER_ENTRY": json.dumps(["python3", "-c", PEEK]),
        "SANDBOX_JOB_NONCE": nonce,
    })
    c.wait_line(is_ready)
    # A second process inside, as an exec'd shell would be. `podman exec`
    # (like `docker exec`) gives what it starts the container's whole -e
    # environment, nonce included; blank it so the probe's own environ does not
    # count, then read every process's environ: PID 1 and the job must not hold it.
    for f in ("/proc/1/environ", "/proc/1/cmdline"):
        p = c.exec("cat", f, env={"SANDBOX_JOB_NONCE": ""})
        assert nonce.encode() not in p.stdout + p.stderr, f
    p = c.exec("sh", "-c", "for f in /proc/[0-9]*/environ; do echo \"$f\"; cat \"$f\"; echo; done 2>&1",
               env={"SANDBOX_JOB_NONCE": ""})
    assert b"/proc/1/environ" in p.stdout
    assert nonce.encode() not in p.stdout, p.stdout
    podman("stop", "-t", "60", c.name)
    rc, out = c.finish()
    core = one_sentinel(out)
    assert core["nonce"] == nonce          # the agent still had it to report
    seen = core["result"]
    assert set(seen) == {"env", "/proc/1/environ", "/proc/1/cmdline", "/proc/self/environ"}, seen
    assert "SANDBOX_JOB_NONCE" not in seen["env"]
    assert nonce not in json.dumps(seen), seen
    assert "PATH=" in seen["/proc/self/environ"]  # the peeks really read something


# ---- fs and watch through podman exec ----------------------------------------

def test_exec_fs_list_root(images, start):
    c = start(images.example, env={
        "SANDBOX_JOB_INNER_ENTRY": json.dumps(["python3", "-c", READY_THEN_SLEEP])})
    c.wait_line(is_ready)
    p = c.exec("sandbox-agent", "fs", "list", "/")
    assert p.returncode == 0, p.stderr
    doc = fs_payload(p.stdout)
    assert doc["ok"] is True and doc["path"] == "/"
    byname = {e["name"]: e for e in doc["entries"]}
    for d in ("usr", "etc", "tmp", "proc"):
        assert byname[d]["type"] == "dir", byname.get(d)
        assert byname[d]["path"] == "/" + d
    assert byname["tmp"]["mode"] == 0o1777
    for e in doc["entries"]:
        assert {"name", "path", "type", "size", "mode", "mtime", "uid", "gid"} <= set(e), e
    p = c.exec("sandbox-agent", "fs", "stat", "/no/such")
    assert p.returncode == 66
    assert fs_payload(p.stdout)["error"]["code"] == "ENOENT"


KILL_WATCH = r"""
import os, signal
n = 0
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            argv = open("/proc/%s/cmdline" % p, "rb").read().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"sandbox-agent") and argv[1:2] == [b"watch"]:
            os.kill(int(p), signal.SIGTERM)
            n += 1
print(n)
"""


def test_exec_watch(images, start):
    c = start(images.example, env={
        "SANDBOX_JOB_INNER_ENTRY": json.dumps(["python3", "-c", READY_THEN_SLEEP])})
    c.wait_line(is_ready)
    assert c.exec("mkdir", "/tmp/w").returncode == 0
    proc = subprocess.Popen(PODMAN + ["exec", c.name, "sandbox-agent", "watch", "/tmp/w", "1", ""],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    w = Container(c.name + "-watch", proc)
    try:
        w.wait_line(lambda l: l == b"__SBX_WATCH__READY\n")
        assert c.exec("sh", "-c", "mkdir /tmp/w/sub && echo hi > /tmp/w/sub/f.txt").returncode == 0
        events = []

        def record(line):
            assert line.startswith(b"__SBX_WATCH__{"), line
            events.append(json.loads(line[len(b"__SBX_WATCH__"):]))
            return events[-1]["path"] == "/tmp/w/sub/f.txt" and events[-1]["mask"] & IN_CREATE

        w.wait_line(record)
        assert {"mask": IN_CREATE | IN_ISDIR, "path": "/tmp/w/sub"} in events, events
        # Python json.dumps formatting, exactly.
        assert b'__SBX_WATCH__{"mask": %d, "path": "/tmp/w/sub"}\n' % (IN_CREATE | IN_ISDIR) in w.out
        k = c.exec("python3", "-c", KILL_WATCH)
        assert k.stdout.strip() == b"1", k
        w.finish(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ---- session ------------------------------------------------------------------

HANDLER = r"""
import json, os, sys
for line in sys.stdin:
    req = json.loads(line)
    reply = {"id": req["id"], "result": {"method": req["method"], "params": req["params"],
             "nonce_visible": "SANDBOX_JOB_NONCE" in os.environ}}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
"""


def reply_of(line, msg_id, nonce):
    prefix = b"__SANDBOX_REPLY__%s__%s__" % (msg_id.encode(), nonce.encode())
    assert line.startswith(prefix), line
    return json.loads(base64.b64decode(line[len(prefix):].rstrip(b"\n"), validate=True))


def test_session_answers_mailbox_via_exec(images, start):
    nonce = uuid.uuid4().hex
    c = start(images.example, "session", "--", "python3", "-u", "-c", HANDLER,
              entrypoint=AGENT_IN_IMAGE, env={"SANDBOX_JOB_NONCE": nonce})
    c.wait_running()
    for i, params in enumerate([{"x": 1}, ["two", "é"]]):
        msg_id = "req-%d" % i
        req = json.dumps({"id": msg_id, "method": "echo", "params": params}) + "\n"
        p = c.exec("sh", "-c", "cat >> /tmp/sandbox_mailbox.jsonl", input=req.encode())
        assert p.returncode == 0, p.stderr
        line = c.wait_line(lambda l: l.startswith(b"__SANDBOX_REPLY__"))
        assert reply_of(line, msg_id, nonce) == {
            "id": msg_id, "result": {"method": "echo", "params": params, "nonce_visible": False}}
    t0 = time.monotonic()
    podman("stop", "-t", "60", c.name)
    rc, _ = c.finish()
    assert rc == 0, c.err
    assert time.monotonic() - t0 < 30


# ---- images without python or coreutils ------------------------------------

def test_busybox_image_runs_a_job(images):
    rc, out, err = run_job(images.busybox, ["/bin/busybox", "sh", "-c",
                                            'echo from-busybox; echo \'{"via": "busybox"}\' > "$SANDBOX_RESULT"; exit 4'],
                           nonce="bb")
    assert rc == 4, (out, err)
    assert b"from-busybox\n" in out
    assert one_sentinel(out) == {"status": "failed", "exit_code": 4,
                                 "result": {"via": "busybox"}, "nonce": "bb"}
    # No python here: the platform still gets its sentinel and 127.
    rc, out, err = run_job(images.busybox, ["python3", "-c", "1"], nonce="bb")
    assert rc == 127, (out, err)
    assert b"python3" in err
    assert one_sentinel(out)["exit_code"] == 127


def test_busybox_image_fs_ops_via_exec(images, start):
    c = start(images.busybox, env={"SANDBOX_JOB_INNER_ENTRY": '["/bin/busybox", "sleep", "600"]'})
    c.wait_running()
    a = AGENT_IN_IMAGE
    p = c.exec(a, "fs", "write", "/data/a.txt", "--parents", input=b"payload\n")
    assert p.returncode == 0, p.stderr
    assert fs_payload(p.stdout) == {"ok": True, "bytes": 8}
    p = c.exec(a, "fs", "list", "/data")
    assert p.returncode == 0, p.stderr
    entries = fs_payload(p.stdout)["entries"]
    assert [(e["name"], e["type"], e["size"]) for e in entries] == [("a.txt", "file", 8)]
    p = c.exec(a, "fs", "read", "/data/a.txt")
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"payload\n"
    meta = fs_payload(p.stderr)
    assert meta["ok"] is True and meta["size"] == 8 and meta["eof"] is True
    assert c.exec(a, "fs", "move", "/data/a.txt", "/data/b.txt").returncode == 0
    p = c.exec(a, "fs", "stat", "/data/b.txt")
    assert fs_payload(p.stdout)["entry"]["path"] == "/data/b.txt"
    assert c.exec(a, "fs", "remove", "/data", "--recursive").returncode == 0
    p = c.exec(a, "fs", "stat", "/data")
    assert p.returncode == 66 and fs_payload(p.stdout)["ok"] is False
    podman("stop", "-t", "60", c.name)
    rc, out = c.finish()
    assert rc == 143
    assert one_sentinel(out)["exit_code"] == 143


def test_bare_image_runs_a_job(images):
    # Nothing in the image but the agent: the job is the agent itself.
    rc, out, err = run_job(images.bare, [AGENT_IN_IMAGE, "--version"], nonce="bare")
    assert rc == 0, (out, err)
    assert out.startswith(b"sandbox-agent ")
    assert one_sentinel(out) == {"status": "succeeded", "exit_code": 0,
                                 "result": {"exit_code": 0}, "nonce": "bare"}
    rc, out, err = run_job(images.bare, ["sh", "-c", "true"])
    assert rc == 127
    assert one_sentinel(out)["exit_code"] == 127


def test_bare_image_fs_ops(images):
    rc, out, err = run_job(images.bare, [AGENT_IN_IMAGE, "fs", "mkdir", "/made/here", "--parents"])
    assert rc == 0, (out, err)
    assert fs_payload(out) == {"ok": True, "created": True}
    assert one_sentinel(out)["status"] == "succeeded"
    p = podman("run", "--rm", "--label", LABEL, *RUN_FLAGS, "--entrypoint", AGENT_IN_IMAGE,
               images.bare, "fs", "list", "/")
    assert p.returncode == 0, p.stderr
    names = {e["name"] for e in fs_payload(p.stdout)["entries"]}
    assert {"usr", "proc", "dev"} <= names and "bin" not in names, names
