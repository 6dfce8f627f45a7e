"""`sandbox-agent watch ROOT RECURSIVE01 [TIMEOUT]` (README "sandbox-agent watch"), black box:
the lifecycle, what is reported and how, new directories (renames, overflow
and bursts: test_watch_renames.py).

Every test reads the watcher's stdout line by line on a thread and waits for
READY or for the lines it expects, each wait bounded by a generous deadline
(a hang guard, not a synchronisation). Absence of an event is checked with a
barrier: a file created afterwards in ROOT; inotify delivers one instance's
events in order, so once the barrier's line is out, anything earlier is too.
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
                      IN_MOVED_TO, IN_Q_OVERFLOW, INOTIFY, READY, SENT, Watcher, j, root, start, watchers)


# ---- lifecycle --------------------------------------------------------------

def test_ready_then_timeout_exits_0(agent, root):
    os.makedirs(j(root, "a", "b"))
    w = Watcher(agent, root, timeout="0.5")
    w.ready()
    rc, err = w.finish(sig=None)
    assert rc == 0
    assert w.raw == [READY]
    assert err == b""


def test_zero_and_absent_timeout(agent, root, watchers):
    # A deadline already past: READY, then exit 0 (the Python program's loop).
    w = start(watchers, agent, root, timeout="0")
    w.ready()
    assert w.proc.wait(timeout=TIMEOUT) == 0
    # Absent TIMEOUT: runs until told to stop.
    w = start(watchers, agent, root, argv=[root, "1"])
    w.ready()
    w.barrier(root)
    assert w.proc.poll() is None
    assert w.finish(signal.SIGINT)[0] == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stop_signals_exit_0(agent, root, watchers, sig):
    w = start(watchers, agent, root)
    w.ready()
    with open(j(root, "f"), "wb") as f:
        f.write(b"x")
    w.wait_event(j(root, "f"), IN_CLOSE_WRITE)
    rc, err = w.finish(sig)
    assert rc == 0, err
    w.check_format()


def test_idle_watch_ends_when_stdout_closes(agent, root):
    # No event ever happens: the watcher must notice its reader has gone.
    p = subprocess.Popen([agent, "watch", root, "1", ""], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=clean_env())
    assert p.stdout.readline() == READY + b"\n"
    p.stdout.close()
    assert p.wait(timeout=TIMEOUT) == 0
    assert p.stderr.read() == b""
    p.stderr.close()


def test_busy_watch_ends_on_epipe(agent, root):
    p = subprocess.Popen([agent, "watch", root, "1", ""], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=clean_env())
    assert p.stdout.readline() == READY + b"\n"
    p.stdout.close()
    for i in range(50):
        open(j(root, "f%d" % i), "wb").close()
        if p.poll() is not None:
            break
    assert p.wait(timeout=TIMEOUT) == 0
    assert p.stderr.read() == b""
    p.stderr.close()


def test_missing_root_exits_3(agent, tmp_path):
    missing = str(tmp_path / "nope")
    r = subprocess.run([agent, "watch", missing, "1", "1"], capture_output=True, env=clean_env(), timeout=TIMEOUT)
    assert r.returncode == 3
    assert r.stdout == b""
    assert r.stderr.count(b"\n") == 1 and missing.encode() in r.stderr


def test_unreadable_root_exits_3(agent):
    d = tempfile.mkdtemp()
    try:
        os.chmod(d, 0o700)  # root's, and the watcher runs as nobody
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", agent, "watch", d, "1",
                            "1"], capture_output=True, env=clean_env(), timeout=TIMEOUT)
        assert r.returncode == 3, r.stderr
        assert r.stdout == b""
        assert b"Permission denied" in r.stderr and r.stderr.count(b"\n") == 1
    finally:
        shutil.rmtree(d)


@pytest.mark.parametrize("argv", [[], ["/tmp"], ["/tmp", "2"], ["/tmp", "yes", ""], ["/tmp", "1", "soon"],
                                  ["/tmp", "1", "1", "extra"]])
def test_bad_argv_exits_2(agent, argv):
    r = subprocess.run([agent, "watch"] + argv, capture_output=True, env=clean_env(), timeout=TIMEOUT)
    assert r.returncode == 2
    assert r.stdout == b""
    assert r.stderr.startswith(b"sandbox-agent: ")


def test_help(agent):
    r = subprocess.run([agent, "watch", "--help"], capture_output=True, env=clean_env(), timeout=TIMEOUT)
    assert r.returncode == 0 and b"RECURSIVE01" in r.stdout


def test_root_deleted_exits_3_with_a_line(agent, root, watchers):
    w = start(watchers, agent, root)
    w.ready()
    os.rmdir(root)
    rc, err = w.finish(sig=None)
    assert rc == 3
    assert w.raw[-1] == SENT + json.dumps({"mask": IN_Q_OVERFLOW, "path": root,
                                           "error": "ROOT was deleted"}).encode()
    assert b"ROOT was deleted" in err


def test_root_may_be_a_file(agent, tmp_path, watchers):
    # As with the Python program: a file ROOT reports its own events.
    f = str(tmp_path / "file")
    open(f, "wb").close()
    w = start(watchers, agent, f)
    w.ready()
    with open(f, "ab") as fh:
        fh.write(b"x")
    w.wait_event(f, IN_CLOSE_WRITE)
    assert w.has(f, IN_MODIFY)


# ---- what is reported, and how ----------------------------------------------

def test_ready_only_after_the_whole_tree_is_watched(agent, root, watchers):
    dirs = []
    for i in range(30):
        for k in range(10):
            d = j(root, "w%02d" % i, *["n%d" % x for x in range(k + 1)])
            dirs.append(d)
    for d in dirs:
        os.makedirs(d, exist_ok=True)
    w = start(watchers, agent, root)
    w.ready()
    # No wait at all between READY and the writes: each must be reported.
    for d in dirs:
        open(os.path.join(d, b"f"), "wb").close()
    w.barrier(root)
    got = set(w.paths())
    missing = [d for d in dirs if os.path.join(d, b"f") not in got]
    assert not missing, missing[:5]


def test_lines_match_python_json_dumps(agent, root, watchers):
    names = [b"with space", b'qu"ote', b"back\\slash", b"new\nline", b"tab\there", b"bad\xff\xfebytes",
             "caf\u00e9".encode(), "\U0001F600".encode(), b"ctl\x01\x7f", b"half\xe2\x82"]
    w = start(watchers, agent, root)
    w.ready()
    for n in names:
        with open(j(root, n), "wb") as f:
            f.write(b"1")
    os.mkdir(j(root, b"dir \xff\n"))
    open(j(root, b"dir \xff\n", b"in\xfe"), "wb").close()
    w.wait_event(j(root, b"dir \xff\n", b"in\xfe"), IN_CREATE)
    for n in names:
        p = j(root, n)
        # The client's decoding gives the exact bytes back.
        assert w.has(p, IN_CREATE) and w.has(p, IN_MODIFY) and w.has(p, IN_CLOSE_WRITE), n
        line = SENT + json.dumps({"mask": IN_CREATE, "path": os.fsdecode(p)}).encode()
        assert line in w.raw, line
    assert w.has(j(root, b"dir \xff\n"), IN_CREATE | IN_ISDIR)
    w.check_format()
    assert all(line.isascii() for line in w.raw)


@pytest.mark.parametrize("spell", ["slash", "relative"])
def test_paths_joined_from_root_as_given(agent, tmp_path, watchers, spell):
    os.makedirs(tmp_path / "r" / "sub")
    if spell == "slash":
        given, cwd = str(tmp_path / "r") + "/", None
    else:
        given, cwd = "./r", str(tmp_path)
    w = start(watchers, agent, given, cwd=cwd)
    w.ready()
    open(tmp_path / "r" / "sub" / "f", "wb").close()
    expect = (given + "sub/f") if spell == "slash" else "./r/sub/f"
    w.wait_event(expect, IN_CREATE)
    open(tmp_path / "r" / "g", "wb").close()
    w.wait_event((given + "g") if spell == "slash" else "./r/g", IN_CREATE)


def test_not_recursive_watches_root_alone(agent, root, watchers):
    os.mkdir(j(root, "sub"))
    w = start(watchers, agent, root, recursive=False)
    w.ready()
    open(j(root, "sub", "hidden"), "wb").close()
    os.mkdir(j(root, "new"))
    open(j(root, "new", "hidden2"), "wb").close()
    open(j(root, "top"), "wb").close()
    w.barrier(root)
    assert w.has(j(root, "new"), IN_CREATE | IN_ISDIR)
    assert w.has(j(root, "top"), IN_CREATE)
    assert not any(p.endswith(b"hidden") or p.endswith(b"hidden2") for p in w.paths())


def test_event_kinds_and_masks(agent, root, watchers):
    w = start(watchers, agent, root)
    w.ready()
    with open(j(root, "a"), "wb") as f:
        f.write(b"x")
    os.rename(j(root, "a"), j(root, "b"))
    os.unlink(j(root, "b"))
    os.mkdir(j(root, "d"))
    os.rename(j(root, "d"), j(root, "e"))
    os.rmdir(j(root, "e"))
    w.barrier(root)
    seq = [(m, p) for m, p, _ in w.events]
    expected = [(IN_CREATE, j(root, "a")), (IN_MODIFY, j(root, "a")), (IN_CLOSE_WRITE, j(root, "a")),
                (IN_MOVED_FROM, j(root, "a")), (IN_MOVED_TO, j(root, "b")), (IN_DELETE, j(root, "b")),
                (IN_CREATE | IN_ISDIR, j(root, "d")), (IN_MOVED_FROM | IN_ISDIR, j(root, "d")),
                (IN_MOVED_TO | IN_ISDIR, j(root, "e")), (IN_DELETE | IN_ISDIR, j(root, "e"))]
    assert seq[:len(expected)] == expected


# ---- new directories ---------------------------------------------------------

def test_mkdir_p_then_touch_reports_every_level(agent, root, watchers):
    w = start(watchers, agent, root)
    w.ready()
    # One shell: the directories and the file appear faster than any watch.
    script = " ; ".join('mkdir -p t%d/a/b/c && touch t%d/a/b/c/f' % (i, i) for i in range(25))
    subprocess.run(["sh", "-c", script], cwd=root, check=True, timeout=TIMEOUT)
    w.barrier(root)
    for i in range(25):
        t = "t%d" % i
        for d in (t, t + "/a", t + "/a/b", t + "/a/b/c"):
            assert w.has(j(root, d), IN_CREATE | IN_ISDIR), d
        assert w.has(j(root, t + "/a/b/c/f"), IN_CREATE), t
    w.check_format()


def test_directory_moved_in_reports_move_contents_and_later_writes(agent, root, tmp_path, watchers):
    outside = tmp_path / "outside"
    os.makedirs(outside / "x" / "y")
    (outside / "top.txt").write_bytes(b"1")
    (outside / "x" / "y" / "deep.txt").write_bytes(b"2")
    w = start(watchers, agent, root)
    w.ready()
    os.rename(outside, j(root, "in"))
    with open(j(root, "in", "x", "y", "later.txt"), "wb") as f:
        f.write(b"3")
    os.mkdir(j(root, "in", "x", "y", "z"))
    open(j(root, "in", "x", "y", "z", "last"), "wb").close()
    # Written before or after the watcher got to them: reported as created
    # either way (by the listing of a new directory, or by its watch).
    w.wait_event(j(root, "in", "x", "y", "z", "last"), IN_CREATE)
    assert w.has(j(root, "in"), IN_MOVED_TO | IN_ISDIR)
    assert w.has(j(root, "in", "top.txt"), IN_CREATE)
    assert w.has(j(root, "in", "x"), IN_CREATE | IN_ISDIR)
    assert w.has(j(root, "in", "x", "y"), IN_CREATE | IN_ISDIR)
    assert w.has(j(root, "in", "x", "y", "deep.txt"), IN_CREATE)
    assert w.has(j(root, "in", "x", "y", "later.txt"), IN_CREATE)
    assert w.has(j(root, "in", "x", "y", "z"), IN_CREATE | IN_ISDIR)
    # And now that they are watched, every write.
    with open(j(root, "in", "x", "y", "deep.txt"), "ab") as f:
        f.write(b"4")
    with open(j(root, "in", "x", "y", "z", "last"), "ab") as f:
        f.write(b"5")
    # Not a wait for last's IN_CLOSE_WRITE: when z was watched before last
    # was created, its creating close already reported one, and the wait
    # would return before the writes above were read. The barrier comes
    # after all of them in the one inotify queue.
    w.barrier(root)
    assert w.has(j(root, "in", "x", "y", "deep.txt"), IN_MODIFY)
    assert w.has(j(root, "in", "x", "y", "deep.txt"), IN_CLOSE_WRITE)
    assert w.has(j(root, "in", "x", "y", "z", "last"), IN_MODIFY)
