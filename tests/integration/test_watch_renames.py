"""`sandbox-agent watch` (README "sandbox-agent watch"), black box: directories
that leave, are renamed or replaced, the kernel queue's overflow and the watch
limit, bursts. The client and its waits are tests/lib/watchlib.py's (see
test_watch.py for the lifecycle and what is reported).
"""
import fcntl
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from conftest import PY, TIMEOUT, clean_env, started_agents
from fsclient import Agent
from watchlib import (IN_CLOSE_WRITE, IN_CREATE, IN_DELETE, IN_ISDIR, IN_MODIFY, IN_MOVED_FROM,  # noqa: F401
                      IN_MOVED_TO, IN_Q_OVERFLOW, INOTIFY, READY, SENT, Watcher, j, root, start, userns_limit_missing,
                      userns_limit_pre, watchers)


# ---- directories that leave, are renamed, are replaced ---------------------

def test_directory_moved_out_is_forgotten(agent, root, tmp_path, watchers):
    os.makedirs(j(root, "d", "sub"))
    w = start(watchers, agent, root)
    w.ready()
    os.rename(j(root, "d"), tmp_path / "away")
    open(tmp_path / "away" / "sub" / "ghost", "wb").close()
    open(tmp_path / "away" / "ghost2", "wb").close()
    # The same name, a new directory: its events carry the name, not the old watch.
    os.makedirs(j(root, "d", "sub"))
    open(j(root, "d", "sub", "real"), "wb").close()
    w.barrier(root)
    assert w.has(j(root, "d"), IN_MOVED_FROM | IN_ISDIR)
    assert w.has(j(root, "d", "sub", "real"), IN_CREATE)
    assert not any(b"ghost" in p for p in w.paths())


def test_deleted_and_recreated_directory(agent, root, watchers):
    os.makedirs(j(root, "d", "sub", "subsub"))
    w = start(watchers, agent, root)
    w.ready()
    shutil.rmtree(j(root, "d"))
    os.makedirs(j(root, "d", "other"))
    open(j(root, "d", "other", "f"), "wb").close()
    os.mkdir(j(root, "d", "sub"))
    open(j(root, "d", "sub", "g"), "wb").close()
    w.barrier(root)
    assert w.has(j(root, "d", "sub", "subsub"), IN_DELETE | IN_ISDIR)
    assert w.has(j(root, "d", "other", "f"), IN_CREATE)
    assert w.has(j(root, "d", "sub", "g"), IN_CREATE)
    # Everything after the deletion names what is there now.
    after = w.paths()[w.paths().index(j(root, "d")):]
    for p in after:
        assert os.path.lexists(p) or p.endswith(b"zz-barrier"), p


def test_renamed_directory_events_carry_the_new_path(agent, root, watchers):
    os.makedirs(j(root, "a", "b", "c"))
    w = start(watchers, agent, root)
    w.ready()
    os.rename(j(root, "a"), j(root, "z"))
    open(j(root, "z", "b", "c", "f"), "wb").close()
    # A chain of renames faster than the watcher reads them.
    subprocess.run(["sh", "-c", "mv z y && mv y x && mv x/b x/bb && touch x/bb/c/g"], cwd=root, check=True,
                   timeout=TIMEOUT)
    # A rename across levels: the subtree moves below a sibling.
    os.mkdir(j(root, "p"))
    os.rename(j(root, "x", "bb"), j(root, "p", "q"))
    open(j(root, "p", "q", "c", "h"), "wb").close()
    w.barrier(root)
    assert w.has(j(root, "z", "b", "c", "f"), IN_CREATE)
    assert w.has(j(root, "x", "bb", "c", "g"), IN_CREATE)
    assert w.has(j(root, "p", "q", "c", "h"), IN_CREATE)
    for p in w.paths():
        assert not p.startswith(j(root, "a") + b"/"), p


def test_directory_created_just_before_its_parent_is_renamed(agent, root, watchers):
    # The watcher is stopped while the tree changes, so that when it reads
    # "sub created in a", a is already b: sub's path is stale. It must still
    # end up watched, and what it holds reported, once the rename is read.
    os.mkdir(j(root, "a"))
    w = start(watchers, agent, root)
    w.ready()
    os.kill(w.proc.pid, signal.SIGSTOP)
    try:
        os.makedirs(j(root, "a", "sub", "deeper"))
        os.rename(j(root, "a"), j(root, "b"))
        open(j(root, "b", "sub", "f"), "wb").close()
    finally:
        os.kill(w.proc.pid, signal.SIGCONT)
    w.barrier(root)
    assert w.has(j(root, "a", "sub"), IN_CREATE | IN_ISDIR)   # as queued
    assert w.has(j(root, "b", "sub"), IN_CREATE | IN_ISDIR)   # as listed again
    assert w.has(j(root, "b", "sub", "deeper"), IN_CREATE | IN_ISDIR)
    assert w.has(j(root, "b", "sub", "f"), IN_CREATE)
    open(j(root, "b", "sub", "deeper", "g"), "wb").close()
    w.wait_event(j(root, "b", "sub", "deeper", "g"), IN_CREATE)


def test_directory_moved_in_and_on_while_unread(agent, root, tmp_path, watchers):
    os.makedirs(tmp_path / "outside" / "x")
    w = start(watchers, agent, root)
    w.ready()
    os.kill(w.proc.pid, signal.SIGSTOP)
    try:
        os.rename(tmp_path / "outside", j(root, "in"))
        os.rename(j(root, "in"), j(root, "on"))
        os.rename(j(root, "on", "x"), tmp_path / "gone")       # and part of it out again
        os.mkdir(j(root, "on", "y"))
    finally:
        os.kill(w.proc.pid, signal.SIGCONT)
    w.barrier(root)
    open(j(root, "on", "y", "f"), "wb").close()
    open(tmp_path / "gone" / "ghost", "wb").close()
    w.wait_event(j(root, "on", "y", "f"), IN_CREATE)
    w.barrier(root, "zz-barrier2")
    assert not any(b"ghost" in p for p in w.paths())


def test_symlinks_to_directories_are_not_followed(agent, root, tmp_path, watchers):
    target = tmp_path / "target"
    target.mkdir()
    os.mkdir(j(root, "real"))
    os.symlink(target, j(root, "out-link"))
    w = start(watchers, agent, root)
    w.ready()
    os.symlink(j(root, "real"), j(root, "in-link"))
    os.symlink(target, j(root, "new-link"))
    open(target / "t", "wb").close()
    open(j(root, "real", "r"), "wb").close()
    w.barrier(root)
    assert w.has(j(root, "new-link"), IN_CREATE)       # no IN_ISDIR: a link
    assert w.has(j(root, "real", "r"), IN_CREATE)
    assert not any(b"link/" in p for p in w.paths())


# mkdir a; mkdir a/x; mv a bN; mkdir a; touch bN/x/f, again and again, faster
# than the watcher reads: when it gets to "a created", the path a already names
# a later directory. Directories must be told apart by inode, not by path:
# every bN keeps its subtree and its events under its own name.
STORM = r"""
import os, sys
root, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
a = os.path.join(root, "a")
for n in range(first, first + count):
    b = os.path.join(root, "b%d" % n)
    os.mkdir(os.path.join(a, "x"))
    os.rename(a, b)
    os.mkdir(a)
    open(os.path.join(b, "x", "f"), "wb").close()
"""


@pytest.mark.parametrize("paced", ["stopped", "free"])
def test_directory_renamed_and_recreated_faster_than_read(agent, root, watchers, paced):
    rounds = 100
    w = start(watchers, agent, root)
    w.ready()
    os.mkdir(j(root, "a"))
    if paced == "stopped":   # groups of 10 rounds while the watcher cannot read
        for g in range(0, rounds, 10):
            os.kill(w.proc.pid, signal.SIGSTOP)
            try:
                subprocess.run([PY, "-c", STORM, root, str(g), "10"], check=True, timeout=TIMEOUT)
            finally:
                os.kill(w.proc.pid, signal.SIGCONT)
    else:
        subprocess.run([PY, "-c", STORM, root, "0", str(rounds)], check=True, timeout=TIMEOUT)
    w.barrier(root)
    # Now that it has caught up, one more file in each x: each watch must
    # be in place, under the right name.
    for n in range(rounds):
        open(j(root, "b%d" % n, "x", "g"), "wb").close()
    open(j(root, "a", "h"), "wb").close()
    w.barrier(root, "zz-barrier2")
    assert not any(e[0] == IN_Q_OVERFLOW for e in w.events), [e for e in w.events if e[0] == IN_Q_OVERFLOW][:3]
    allowed = {j(root, "a"), j(root, "a", "x"), j(root, "a", "h"), j(root, "zz-barrier"), j(root, "zz-barrier2")}
    for n in range(rounds):
        b = "b%d" % n
        allowed |= {j(root, b), j(root, b, "x"), j(root, b, "x", "f"), j(root, b, "x", "g")}
    wrong = [p for p in w.paths() if p not in allowed]
    lost_f = [n for n in range(rounds) if not w.has(j(root, "b%d" % n, "x", "f"), IN_CREATE)]
    lost_g = [n for n in range(rounds) if not w.has(j(root, "b%d" % n, "x", "g"), IN_CREATE)]
    sys.stderr.write("storm (%s): %d lines, %d wrong paths, f lost in %d rounds, g lost in %d\n"
                     % (paced, len(w.events), len(wrong), len(lost_f), len(lost_g)))
    assert not wrong, wrong[:5]
    assert not lost_f, lost_f[:10]
    assert not lost_g, lost_g[:10]
    assert w.has(j(root, "a", "h"), IN_CREATE)
    w.check_format()


# Ten directories renamed back and forth (mv pN rN; mv rN pN) by one process
# while a writer per directory creates and closes files in it, through a
# directory fd, so that each write lands whatever the name is then. Every
# file's IN_CLOSE_WRITE must be reported, under the name its directory had
# when the event was read: the one the last MOVED_TO line printed for it
# named. The issue: the watcher checked each rename by inode, found the
# directory already back at its old name and kept that (its events reported
# under a name the lines had moved it from), and spent so many system calls
# on it that the kernel's queue overflowed, losing a third of the events.
SHUFFLE_WRITER = r"""
import os, sys
fd, i, files, tick = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for k in range(files):
    f = os.open("f%d-%d" % (i, k), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644, dir_fd=fd)
    os.write(f, b"x")
    os.close(f)
    os.write(tick, b".")   # a file written (the pipe holds them all)
"""
# The renamer: every directory there and back, round after round, as long
# as the writers write ("free", at most `most` rounds), or one round per ten
# files written ("paced", for a client slower than the watcher).
SHUFFLE = r"""
import os, subprocess, sys
root, n, files, paced, most, writer = sys.argv[1:7]
n, files, paced, most = int(n), int(files), paced == "paced", int(most)
tick_r, tick_w = os.pipe()
ws = []
try:
    for i in range(n):
        fd = os.open(os.path.join(root, "p%d" % i), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        ws.append(subprocess.Popen([sys.executable, "-c", writer, str(fd), str(i), str(files), str(tick_w)],
                                   pass_fds=[fd, tick_w]))
        os.close(fd)
    os.close(tick_w)
    rounds = 0
    while rounds < most and (os.read(tick_r, 10) if paced else any(w.poll() is None for w in ws)):
        for i in range(n):
            p, r = os.path.join(root, "p%d" % i), os.path.join(root, "r%d" % i)
            os.rename(p, r)
            os.rename(r, p)
        rounds += 1
except BaseException:
    for w in ws:
        w.kill()
    raise
finally:
    for w in ws:
        w.wait()
assert all(w.returncode == 0 for w in ws), [w.returncode for w in ws]
print(rounds)
"""
SHUFFLE_DIRS, SHUFFLE_FILES, SHUFFLE_MOST = 10, 500, 20000


def shuffle_run(root, files=SHUFFLE_FILES, paced=False):
    """Run the workload on root/p0..p9, `files` files each; returns (rounds
    of renames, the names of the files written)."""
    out = subprocess.run([PY, "-c", SHUFFLE, root, str(SHUFFLE_DIRS), str(files),
                          "paced" if paced else "free", str(SHUFFLE_MOST), SHUFFLE_WRITER],
                         check=True, timeout=TIMEOUT * 2, stdout=subprocess.PIPE).stdout
    written = {b"f%d-%d" % (i, k) for i in range(SHUFFLE_DIRS) for k in range(files)}
    return int(out), written


def shuffle_file(rel):
    """(directory's index, its name in rel, the file's name) for rel
    "rN/fN-K" or "pN/fN-K", else None."""
    parts = rel.split(b"/")
    if len(parts) != 2 or not parts[1].startswith(b"f"):
        return None
    return int(parts[1][1:].split(b"-")[0]), parts[0], parts[1]


class BulkWatcher(Watcher):
    """A Watcher whose thread only copies stdout (through a 1 MiB pipe, in
    chunks of up to 1 MiB) and parses it when asked: a client that keeps up
    with any burst, so that whatever is lost is the watcher's doing."""

    def __init__(self, *a, **kw):
        self.bulk = bytearray()
        super().__init__(*a, **kw)

    def _read(self):
        fd = self.proc.stdout.fileno()
        try:
            fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
        except OSError:
            pass  # pipe-max-size is lower: the default size then
        while True:
            chunk = os.read(fd, 1 << 20)
            with self.cv:
                self.bulk += chunk
                self.eof = not chunk
                self.cv.notify_all()
            if not chunk:
                return

    def wait_for(self, *needles):
        self.wait(lambda: any(n in self.bulk for n in needles), "any of %r" % (needles,))

    def parse(self):
        with self.cv:
            lines = bytes(self.bulk).split(b"\n")
        assert lines[-1] == b"", lines[-1][:200]
        self.raw = lines[:-1]
        self.events = [(o["mask"], os.fsencode(o["path"]), o) for o in
                       (json.loads(x[len(SENT):]) for x in self.raw if x.startswith(SENT) and x != READY)]


def test_directories_renamed_back_and_forth_while_written(agent, root, watchers):
    for i in range(SHUFFLE_DIRS):
        os.mkdir(j(root, "p%d" % i))
    w = BulkWatcher(agent, root)
    watchers.append(w)
    w.wait_for(READY + b"\n")
    rounds, written = shuffle_run(root)
    open(j(root, "zz-barrier"), "wb").close()
    barrier = json.dumps({"mask": IN_CREATE, "path": os.path.join(root, "zz-barrier")}).encode()
    w.wait_for(barrier, b'{"mask": %d, ' % IN_Q_OVERFLOW)  # after an overflow it may never come
    w.parse()
    assert w.raw[0] == READY
    name = {i: b"p%d" % i for i in range(SHUFFLE_DIRS)}  # as the MOVED_TO lines so far say
    closed, wrong, other_name, under_r = set(), [], 0, 0
    for mask, path, _ in w.events:
        rel = os.path.relpath(path, os.fsencode(root))
        if mask == IN_MOVED_TO | IN_ISDIR:
            name[int(rel[1:])] = rel
            continue
        f = shuffle_file(rel)
        if f is None:
            continue
        i, d, base = f
        if d not in (b"p%d" % i, b"r%d" % i):
            wrong.append(path)
        elif d != name[i]:
            other_name += 1
        if mask == IN_CLOSE_WRITE:
            closed.add(base)
            under_r += d.startswith(b"r")
    overflow = [e for e in w.events if e[0] == IN_Q_OVERFLOW]
    lost = written - closed
    sys.stderr.write("renamed back and forth: %d rounds, %d files written, %d close-writes reported "
                     "(%d under rN), %d lost, %d under a wrong directory, %d under a name other than "
                     "the one the lines gave it, %d overflows\n"
                     % (rounds, len(written), len(closed & written), under_r, len(lost), len(wrong),
                        other_name, len(overflow)))
    assert not overflow, overflow[:1]
    assert not wrong, wrong[:5]
    assert not lost, sorted(lost)[:10]
    assert other_name == 0
    assert rounds > 0 and under_r > 0  # the renames did overlap the writes
    w.check_format()
    rc, err = w.finish()
    assert rc == 0 and not err, err


@pytest.fixture
def serve(agent):
    yield from started_agents(lambda **env: Agent(agent, **env))


def test_directories_renamed_back_and_forth_while_written_serve(serve, root):
    """The same through serve's WatchDir (the same service): every file's
    CREATE under one of its directory's names, the stream never ended. Less
    of it, paced: the client here is slower than the agent, and one that
    falls 1 MiB behind is cut off (data_loss)."""
    for i in range(SHUFFLE_DIRS):
        os.mkdir(j(root, "p%d" % i))
    s = serve().client.stream("WatchDir", {"path": root, "recursive": True})
    try:
        assert s.next() == {"start": {}}
        got, failed = [], []

        def read():   # as the events come: a reader 1 MiB behind is cut off
            try:
                got.extend(s.events(lambda evs: evs and evs[-1]["name"] == "zz-barrier", timeout=TIMEOUT * 3))
            except BaseException as e:  # noqa: B902 (reported by the test's thread)
                failed.append(e)

        t = threading.Thread(target=read, daemon=True)
        t.start()
        rounds, written = shuffle_run(root, files=200, paced=True)
        open(j(root, "zz-barrier"), "wb").close()
        t.join(timeout=TIMEOUT * 4)
        assert not t.is_alive() and not failed, failed
    finally:
        s.close()
    created, wrong = set(), []
    for e in got:
        f = shuffle_file(os.fsencode(e["name"]))
        if f is None:
            continue
        i, d, base = f
        if d not in (b"p%d" % i, b"r%d" % i):
            wrong.append(e)
        elif e["type"] == "EVENT_TYPE_CREATE":
            created.add(base)
    lost = written - created
    sys.stderr.write("renamed back and forth (serve): %d rounds, %d files written, %d created reported, "
                     "%d lost, %d under a wrong directory\n"
                     % (rounds, len(written), len(created & written), len(lost), len(wrong)))
    assert not wrong, wrong[:5]
    assert not lost, sorted(lost)[:10]


# ---- overflow and the watch limit --------------------------------------------

def _sysctl(name, value=None):
    with open(INOTIFY + name, "r+") as f:
        old = f.read().strip()
        if value is not None:
            f.seek(0)
            f.write(str(value))
    return old


def test_queue_overflow_is_one_line_then_watching_resumes(agent, root, watchers):
    os.mkdir(j(root, "sub"))
    old = _sysctl("max_queued_events")
    try:
        _sysctl("max_queued_events", 8)     # read at inotify_init1 time
        w = start(watchers, agent, root)
        w.ready()
    finally:
        _sysctl("max_queued_events", old)
    os.kill(w.proc.pid, signal.SIGSTOP)     # let the queue fill for sure
    try:
        for i in range(100):
            open(j(root, "sub", "f%d" % i), "wb").close()
    finally:
        os.kill(w.proc.pid, signal.SIGCONT)
    line = SENT + json.dumps({"mask": IN_Q_OVERFLOW, "path": root}).encode()
    w.wait(lambda: line in w.raw, "the overflow line")
    # Watches were rebuilt before the line went out: later events are reported.
    open(j(root, "sub", "after"), "wb").close()
    w.wait_event(j(root, "sub", "after"), IN_CREATE)
    w.check_format()


def test_unwatchable_directories_are_reported_with_an_error(agent, tmp_path, watchers):
    userns = userns_limit_missing() is None
    # Without user namespaces the watcher runs as a user of its own, which
    # must be able to reach ROOT.
    root = str(tmp_path / "root") if userns else tempfile.mkdtemp()
    try:
        os.makedirs(root, mode=0o755, exist_ok=True)
        os.chmod(root, 0o755)
        _unwatchable(agent, root, watchers, userns)
    finally:
        if not userns:
            shutil.rmtree(root)


def _unwatchable(agent, root, watchers, userns):
    dirs = [os.path.join(root, "d%02d" % i) for i in range(12)]
    for x in dirs:
        os.mkdir(x)
    # ROOT and two directories fit under a limit of 3 watches. In a user
    # namespace of its own the limit is the namespace's (user.max_inotify_watches),
    # counts this watcher alone and disturbs nothing else on the machine;
    # without user namespaces, a user of its own under the global limit.
    if userns:
        w = start(watchers, agent, root, pre=userns_limit_pre(3))
        w.ready()
    else:
        old = _sysctl("max_user_watches")
        try:
            _sysctl("max_user_watches", 3)
            w = start(watchers, agent, root, pre=["setpriv", "--reuid=4242", "--regid=4242", "--clear-groups"])
            w.ready()
        finally:
            _sysctl("max_user_watches", old)
    w.barrier(root)
    errs = {e[1]: e[2] for e in w.events if "error" in e[2]}
    assert len(errs) == 10, errs
    for p, obj in errs.items():
        assert obj["mask"] == IN_Q_OVERFLOW and "watch limit" in obj["error"], obj
        assert p.decode() in dirs
    w.check_format()
    # Nothing lost silently: each directory either is watched or was named.
    for x in dirs:
        open(os.path.join(x, "f"), "wb").close()
    w.barrier(root, "zz-barrier2")
    for x in dirs:
        assert (x.encode() in errs) != w.has(os.path.join(x, "f"), IN_CREATE), x


# ---- burst --------------------------------------------------------------------

BURST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads", "burst.py")


def test_burst_of_20000_files_in_200_new_directories(agent, root, watchers):
    w = start(watchers, agent, root)
    w.ready()
    subprocess.run([PY, BURST, root], check=True, timeout=TIMEOUT * 2)
    w.barrier(root)
    overflow = any(e[0] == IN_Q_OVERFLOW for e in w.events)
    got = {e[1] for e in w.events if e[0] == IN_CREATE}
    files = []
    for c in range(20):
        d = os.path.join(root, "c%02d" % c)
        for k in range(10):
            d = os.path.join(d, "n%d" % k)
            files += [os.fsencode(os.path.join(d, "f%03d" % i)) for i in range(100)]
    missing = [f for f in files if f not in got]
    assert len(files) == 20000
    # Either every file is reported, or the client was told to re-list.
    sys.stderr.write("burst: %d lines, overflow=%s, missing=%d\n" % (len(w.events), overflow, len(missing)))
    assert overflow or not missing, (len(missing), missing[:3])
    w.check_format()
