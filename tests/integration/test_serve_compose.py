"""`sandbox-agent serve`: POST /files/compose, black-box.

envd.yaml's compose: the sources in order into the destination, the
destination's entry in the answer, the sources removed after; atomic as an
upload (a reader in a loop sees the old destination or the whole new one,
never a part); envd's statuses, each leaving the destination, the sources
and no temporary file behind (a missing source 404, a full disk 507 on a
small tmpfs, bad paths 400); as the request's user (another user's
unreadable file is 403, what is made is theirs); a symlink source read
through and removed itself.
"""
import json
import os
import shutil
import subprocess
import tempfile
import threading

import pytest

from conftest import TIMEOUT, children, started_agents
from fsclient import Agent, wait_until
from fuselib import FuseFile, Unavailable


@pytest.fixture
def serve(agent):
    yield from started_agents(lambda **env: Agent(agent, **env))


@pytest.fixture
def fs(agent):
    gen = started_agents(lambda **env: Agent(agent, **env))
    start = next(gen)
    yield start().client
    next(gen, None)


@pytest.fixture
def pub():
    """A directory anyone may use (the tests' tmp_path is root's only)."""
    d = tempfile.mkdtemp(prefix="sbx-pub-", dir="/tmp")
    os.chmod(d, 0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def compose(fs, body):
    st, _, out = fs.raw("POST", "/files/compose", [("Content-Type", "application/json")],
                        body if isinstance(body, bytes) else json.dumps(body).encode())
    return st, json.loads(out) if out else None


def temp_files(d):
    return [n for n in os.listdir(d) if ".sbx-" in n]


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def test_sources_in_order_into_the_destination(fs, tmp_path):
    parts = [os.urandom(n) for n in (1, 3 << 20, 0, 70000)]
    srcs = []
    for i, p in enumerate(parts):
        srcs.append(str(tmp_path / ("part.%d" % i)))
        write(srcs[-1], p)
    dst = tmp_path / "new" / "dir" / "out.bin"
    st, out = compose(fs, {"source_paths": srcs, "destination": str(dst)})
    assert st == 200 and out == {"path": str(dst), "name": "out.bin", "type": "file"}, out
    assert dst.read_bytes() == b"".join(parts)
    assert [os.path.exists(s) for s in srcs] == [False] * 4  # removed after
    assert temp_files(dst.parent) == []


def test_paths_relative_to_the_users_home_and_the_user_given(fs, pub):
    home = os.path.expanduser("~root")
    d = tempfile.mkdtemp(dir=home)
    try:
        write(os.path.join(d, "a"), b"A")
        write(os.path.join(d, "b"), b"B")
        rel = os.path.relpath(d, home)
        st, out = compose(fs, {"source_paths": [rel + "/a", "~/" + rel + "/b"], "destination": rel + "/ab"})
        assert st == 200 and out["path"] == os.path.join(d, "ab"), out
        assert open(os.path.join(d, "ab"), "rb").read() == b"AB"
    finally:
        shutil.rmtree(d)
    # As another user: the file is theirs.
    write(os.path.join(pub, "n1"), b"x")
    os.chmod(os.path.join(pub, "n1"), 0o644)
    st, out = compose(fs, {"source_paths": [os.path.join(pub, "n1")], "destination": os.path.join(pub, "mine"),
                           "username": "nobody"})
    assert st == 200, out
    assert os.stat(os.path.join(pub, "mine")).st_uid == 65534
    # n1 is root's in a sticky directory: nobody cannot remove it, and it stays.
    assert os.path.exists(os.path.join(pub, "n1"))


def test_a_reader_sees_the_old_destination_or_the_whole_new_one(fs, tmp_path):
    dst = tmp_path / "dst"
    contents = [bytes([65 + k]) * (4 << 20) for k in range(6)]
    dst.write_bytes(contents[0])
    stop, seen, bad = threading.Event(), set(), []

    def reader():
        while not stop.is_set():
            with open(dst, "rb") as f:
                data = f.read()
            if data not in contents:
                bad.append((len(data), data[:1], data[-1:]))
                return
            seen.add(data[:1])

    t = threading.Thread(target=reader)
    t.start()
    try:
        for k in range(1, len(contents)):
            half = len(contents[k]) // 2
            write(str(tmp_path / "p1"), contents[k][:half])
            write(str(tmp_path / "p2"), contents[k][half:])
            st, out = compose(fs, {"source_paths": [str(tmp_path / "p1"), str(tmp_path / "p2")],
                                   "destination": str(dst)})
            assert st == 200, out
    finally:
        stop.set()
        t.join(TIMEOUT)
    assert not bad, bad
    assert dst.read_bytes() == contents[-1] and temp_files(tmp_path) == []


def test_a_symlink_source_is_read_through_and_removed_itself(fs, tmp_path):
    write(str(tmp_path / "target"), b"through")
    os.symlink("target", tmp_path / "link")
    st, out = compose(fs, {"source_paths": [str(tmp_path / "link")], "destination": str(tmp_path / "d")})
    assert st == 200, out
    assert (tmp_path / "d").read_bytes() == b"through"
    assert not os.path.lexists(tmp_path / "link") and (tmp_path / "target").read_bytes() == b"through"


def test_refusals_leave_everything_as_it_was(fs, tmp_path):
    write(str(tmp_path / "dst"), b"old")
    write(str(tmp_path / "s"), b"s")
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    dst = str(tmp_path / "dst")
    cases = [
        ({"source_paths": [str(tmp_path / "s"), str(tmp_path / "missing")], "destination": dst}, 404),
        ({"source_paths": [str(tmp_path / "s"), str(tmp_path / "dir")], "destination": dst}, 400),
        ({"source_paths": [str(tmp_path / "s"), str(tmp_path / "fifo")], "destination": dst}, 400),
        ({"source_paths": [str(tmp_path / "s"), dst], "destination": dst}, 400),
        ({"source_paths": [str(tmp_path / "s")], "destination": str(tmp_path / "dir")}, 400),
        ({"source_paths": [], "destination": dst}, 400),
        ({"source_paths": [str(tmp_path / "s")]}, 400),
        ({"source_paths": [str(tmp_path / "s")], "destination": ""}, 400),
        ({"source_paths": [str(tmp_path / "s")], "destination": "~nobody/x"}, 400),
        ({"source_paths": "s", "destination": dst}, 400),
        ({"source_paths": [str(tmp_path / "s")], "destination": dst, "username": "no-such-user"}, 401),
        (b"not json", 400),
        (b"", 400),
    ]
    for body, status in cases:
        st, out = compose(fs, body)
        assert st == status and out["code"] == status, (body, st, out)
        assert (tmp_path / "dst").read_bytes() == b"old" and (tmp_path / "s").read_bytes() == b"s"
        assert temp_files(tmp_path) == []
    st, h, _ = fs.raw("GET", "/files/compose")
    assert st == 405 and h["allow"] == "POST"
    st, _, _ = fs.raw("POST", "/files/compose", [("Content-Type", "application/json")], b" " * (2 << 20 | 1))
    assert st == 413


def test_another_users_unreadable_file_is_403(fs, pub):
    secret = os.path.join(pub, "secret")
    write(secret, b"root only")
    os.chmod(secret, 0o600)
    mine = os.path.join(pub, "mine")
    write(mine, b"mine")
    os.chmod(mine, 0o644)
    st, out = compose(fs, {"source_paths": [mine, secret], "destination": os.path.join(pub, "d"),
                           "username": "nobody"})
    assert st == 403 and "secret" in out["message"], out
    assert not os.path.exists(os.path.join(pub, "d")) and temp_files(pub) == []
    assert open(secret, "rb").read() == b"root only" and open(mine, "rb").read() == b"mine"


def test_a_full_disk_is_507_and_leaves_nothing(fs, tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                      stderr=subprocess.DEVNULL, timeout=TIMEOUT).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (mnt / "f").write_bytes(b"old")
        write(str(tmp_path / "big1"), b"1" * (700 << 10))
        write(str(mnt / "big2"), b"2" * (200 << 10))
        st, out = compose(fs, {"source_paths": [str(tmp_path / "big1"), str(mnt / "big2")],
                               "destination": str(mnt / "f")})
        assert st == 507 and out["code"] == 507, out
        assert (mnt / "f").read_bytes() == b"old" and temp_files(mnt) == []
        assert os.path.getsize(tmp_path / "big1") == 700 << 10 and os.path.getsize(mnt / "big2") == 200 << 10
    finally:
        subprocess.run(["umount", str(mnt)], timeout=TIMEOUT)


def test_composed_file_downloads_whole_and_by_range(fs, tmp_path):
    write(str(tmp_path / "a"), b"0123456789")
    write(str(tmp_path / "b"), b"abcdefghij")
    st, out = compose(fs, {"source_paths": [str(tmp_path / "a"), str(tmp_path / "b")],
                           "destination": str(tmp_path / "ab.txt")})
    assert st == 200
    st, h, body = fs.raw("GET", fs.query(str(tmp_path / "ab.txt")), [("Range", "bytes=8-11")])
    assert st == 206 and body == b"89ab" and h["content-range"] == "bytes 8-11/20"


def test_sources_on_other_filesystems_are_copied_all_the_same(fs, tmp_path):
    # A FUSE source (no copy_file_range across filesystems: read and write)
    # and a tmpfs one, into a file on the test's disk.
    shm = tempfile.mkdtemp(dir="/dev/shm")
    try:
        write(os.path.join(shm, "s"), b"shm;")
        try:
            with FuseFile(b"fuse;" * 1000, name="f") as f:
                st, out = compose(fs, {"source_paths": [os.path.join(shm, "s"), f.path],
                                       "destination": str(tmp_path / "d")})
        except Unavailable as e:
            pytest.skip(str(e))
        # The FUSE file cannot be removed (its filesystem refuses): composed all the same.
        assert st == 200, out
        assert (tmp_path / "d").read_bytes() == b"shm;" + b"fuse;" * 1000
        assert not os.path.exists(os.path.join(shm, "s"))
    finally:
        shutil.rmtree(shm)


def test_a_killed_compose_helper_leaves_no_temp_file(serve, tmp_path):
    """A process of the user may SIGKILL the helper mid-write: its temporary
    file, told to the agent before it was made, is removed by another
    helper; the client gets a 500, the destination and sources stay."""
    a = serve()
    write(str(tmp_path / "dst"), b"old")
    gate = threading.Event()
    try:
        f = FuseFile(b"held" * 1000, name="slow", gate=gate)
    except Unavailable as e:
        pytest.skip(str(e))
    try:
        result = {}
        t = threading.Thread(target=lambda: result.update(r=compose(a.client, {
            "source_paths": [f.path], "destination": str(tmp_path / "dst")})))
        t.start()
        assert f.reads.wait(TIMEOUT), "the helper never read its source"
        assert len(temp_files(tmp_path)) == 1  # the temporary file is there, being filled
        helpers = children(a.proc.pid)
        assert len(helpers) == 1, helpers
        os.kill(helpers[0], 9)
        gate.set()  # the kernel holds a killed reader until its read is answered
        t.join(TIMEOUT)
        st, out = result["r"]
        assert st == 500, out
        wait_until(lambda: temp_files(tmp_path) == [], what="the temporary file removed")
        assert (tmp_path / "dst").read_bytes() == b"old" and os.path.exists(f.path)
    finally:
        f.close()
