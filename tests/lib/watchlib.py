"""The `watch` mode's test client (tests/integration/test_watch*.py): one
`watch` process read line by line on a thread, its events parsed as a
client does, bounded waits and a barrier (a file created in ROOT afterwards:
inotify delivers one instance's events in order, so once the barrier's line
is out, anything earlier is too), and the fixtures that start and end them.
And the inotify watch limit of a user namespace of its own
(user.max_inotify_watches): it counts the one watcher started in it and
disturbs nothing else on the machine.
"""
import ctypes
import fcntl
import json
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from testlib import TIMEOUT, clean_env, proc_state, wait_until

SENT = b"__SBX_WATCH__"
READY = SENT + b"READY"
IN_MODIFY = 0x2
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_Q_OVERFLOW = 0x4000
IN_ISDIR = 0x40000000
INOTIFY = "/proc/sys/fs/inotify/"


class Watcher:
    """One `watch` process and everything it printed, parsed as a client does."""

    def __init__(self, agent, root, recursive=True, timeout="", argv=None, pre=None, cwd=None):
        args = argv if argv is not None else [os.fsencode(root), b"1" if recursive else b"0", timeout]
        self.proc = subprocess.Popen((pre or []) + [agent, "watch"] + list(args), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=clean_env(), cwd=cwd)
        self.raw = []        # every stdout line, bytes, without "\n"
        self.events = []     # (mask, path bytes, parsed object)
        self.eof = False
        self.cv = threading.Condition()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cv:
                assert line.endswith(b"\n")
                line = line[:-1]
                self.raw.append(line)
                if line.startswith(SENT) and line != READY:
                    obj = json.loads(line[len(SENT):])
                    self.events.append((obj["mask"], os.fsencode(obj["path"]), obj))
                self.cv.notify_all()
        with self.cv:
            self.eof = True
            self.cv.notify_all()

    def wait(self, pred, what, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        with self.cv:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0 or (self.eof and not pred()):
                    raise AssertionError("timed out or EOF waiting for %s; last lines: %r" % (what, self.raw[-8:]))
                self.cv.wait(min(left, 1.0))

    def ready(self):
        self.wait(lambda: READY in self.raw, "READY")
        assert self.raw[0] == READY, self.raw[:3]

    def has(self, path, mask=None):
        p = os.fsencode(path)
        return any(e[1] == p and (mask is None or e[0] == mask) for e in self.events)

    def wait_event(self, path, mask=None):
        self.wait(lambda: self.has(path, mask), "event %r mask %r" % (path, mask))

    def barrier(self, root, name="zz-barrier"):
        p = os.path.join(os.fsencode(root), os.fsencode(name))
        with open(p, "wb"):
            pass
        self.wait_event(p, IN_CREATE)

    def paths(self):
        with self.cv:
            return [e[1] for e in self.events]

    def finish(self, sig=signal.SIGTERM):
        if sig is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=TIMEOUT)
        self.t.join(timeout=TIMEOUT)
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return rc, err

    def check_format(self):
        """Every line is exactly what Python's json.dumps prints."""
        for line in self.raw:
            assert line.startswith(SENT), line
            if line == READY:
                continue
            obj = json.loads(line[len(SENT):])
            assert list(obj)[:2] == ["mask", "path"], line
            assert line[len(SENT):] == json.dumps(obj).encode(), line


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "root"
    r.mkdir()
    return str(r)


@pytest.fixture
def watchers():
    made = []
    yield made
    for w in made:
        if w.proc.poll() is None:
            w.proc.kill()
        w.proc.wait()
        w.proc.stdout.close()
        w.proc.stderr.close()


def start(watchers, agent, root, **kw):
    w = Watcher(agent, root, **kw)
    watchers.append(w)
    return w


def j(*parts):
    return os.path.join(*[os.fsencode(p) for p in parts])


def stopped(pid):
    """SIGSTOP pid and wait until it is stopped: nothing it reads after this
    happened before."""
    os.kill(pid, signal.SIGSTOP)
    wait_until(lambda: proc_state(pid) in ("T", "t"), "pid %d to stop" % pid)


# ---- the watch limit of a user namespace of its own -----------------------------

USER_WATCHES = "/proc/sys/user/max_inotify_watches"


def userns_limit_missing():
    """Why a user namespace with a watch limit of its own cannot be had here,
    or None when it can."""
    try:
        r = subprocess.run(["unshare", "--user", "--map-root-user", "true"], capture_output=True, timeout=TIMEOUT)
    except FileNotFoundError:
        return "no unshare(1) here"
    if r.returncode != 0:
        return "no user namespaces here: %s" % r.stderr.decode(errors="replace").strip()
    r = subprocess.run(["unshare", "--user", "--map-root-user", "sh", "-c", "echo 3 > " + USER_WATCHES],
                       capture_output=True, timeout=TIMEOUT)
    if r.returncode != 0:
        return "%s cannot be set in a user namespace here: %s" % (USER_WATCHES,
                                                                  r.stderr.decode(errors="replace").strip())
    return None


def userns_limit_pre(limit):
    """The command prefix that runs a program in a user namespace of its own
    (root mapped to the caller) whose watch limit is `limit`."""
    return ["unshare", "--user", "--map-root-user", "sh", "-c",
            'echo %d > %s && exec "$0" "$@"' % (limit, USER_WATCHES)]


CLONE_NEWUSER = 0x10000000


def userns_limit_preexec(limit):
    """The same for a program started by a helper that takes no prefix
    (serve's Agent), as a Popen preexec_fn: root mapped to the caller with
    setgroups allowed (serve's helpers set a user's groups), so the maps are
    written from outside, as unshare(1) would with newuidmap: the child says
    its pid once in its namespace and waits until a thread of the caller has
    mapped it. The caller must be root."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()

    def mapper():
        try:
            # A child that failed before saying its pid is Popen's error.
            pid = os.read(ready_r, 32).decode() if select.select([ready_r], [], [], TIMEOUT)[0] else ""
            if pid:
                for name in ("uid_map", "gid_map"):
                    with open("/proc/%s/%s" % (pid, name), "w") as f:
                        f.write("0 0 1")
                os.write(go_w, b"1")
        finally:
            for fd in (ready_r, ready_w, go_r, go_w):
                os.close(fd)

    def enter():
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWUSER) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER)")
        os.write(ready_w, str(os.getpid()).encode())
        if os.read(go_r, 1) != b"1":
            raise OSError("not mapped")
        with open(USER_WATCHES, "w") as f:
            f.write(str(limit))

    threading.Thread(target=mapper, daemon=True).start()
    return enter
