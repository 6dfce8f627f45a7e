"""`sandbox-agent fs`: README "sandbox-agent fs", driven as a host SDK drives it:
argv in, one `__SBX_FS__{json}` line out (stderr for `read`), exit status.

Where a Python program could print the same thing (stat, list), the expected
line is built here with os.lstat + json.dumps and compared byte for byte."""
import json
import os
import resource
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

import pytest

from conftest import AGENT, PY, TIMEOUT, clean_env

SENT = b"__SBX_FS__"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
ODD_NAMES = [b"with space", b"quote'\"s", b"new\nline", b"-leading-dash", b"bad\xff\xfeutf8",
             "\u00e9t\u00e9 \U0001f600".encode(), b"back\\slash", b"tab\there", b"\x01ctl"]


def fs(*args, input=b"", user=False, stdin=None, preexec=None, cwd=None):
    cmd = [AGENT, "fs"] + [os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in args]
    if user:
        cmd = NOBODY + cmd
    kw = dict(stdin=stdin) if stdin is not None else dict(input=input)
    return subprocess.run(cmd, capture_output=True, timeout=TIMEOUT, env=clean_env(),
                          preexec_fn=preexec, cwd=cwd, **kw)


def line_of(stream):
    lines = [l for l in stream.split(b"\n") if SENT in l]
    assert len(lines) == 1, "expected one result line in %r" % stream[-500:]
    assert lines[0].startswith(SENT)
    return lines[0]


def res(p, stream=None):
    return json.loads(line_of(p.stdout if stream is None else stream)[len(SENT):])


def py_entry(path: bytes, name: bytes, follow=False):
    st = os.stat(path) if follow else os.lstat(path)
    kinds = [(stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"), (stat.S_ISLNK, "symlink"),
             (stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "char"),
             (stat.S_ISBLK, "block")]
    e = {"name": os.fsdecode(name), "path": os.fsdecode(path),
         "type": next(k for f, k in kinds if f(st.st_mode)), "size": st.st_size,
         "mode": stat.S_IMODE(st.st_mode), "mtime": st.st_mtime, "uid": st.st_uid, "gid": st.st_gid}
    if stat.S_ISLNK(st.st_mode):
        e["target"] = os.fsdecode(os.readlink(path))
    return e


def expect_error(p, status, code, path=None):
    assert p.returncode == status, (p.returncode, p.stdout, p.stderr)
    r = res(p, p.stderr if b"__SBX_FS__" in p.stderr and b"__SBX_FS__" not in p.stdout else None)
    assert r["ok"] is False
    assert r["error"]["code"] == code, r
    assert r["error"]["message"]
    if code != "ENOTREG":
        assert r["error"]["errno"] == getattr(__import__("errno"), code)
    if path is not None:
        assert os.fsencode(r["error"]["path"]) == os.fsencode(path)
    return r


@pytest.fixture
def tree(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    (d / "file").write_bytes(b"hello")
    (d / "dir").mkdir()
    os.symlink("file", d / "link")
    os.symlink("/nonexistent/target", d / "dangling")
    os.mkfifo(d / "fifo")
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(d / "sock"))
    s.close()
    for n in ODD_NAMES:
        with open(os.path.join(os.fsencode(d), n), "wb") as f:
            f.write(n)
    return d


# ------------------------------------------------------------ stat, list ----

@pytest.mark.parametrize("name", ["file", "dir", "link", "dangling", "fifo", "sock"])
def test_stat_is_byte_identical_to_python(tree, name):
    path = os.fsencode(tree / name)
    p = fs("stat", path)
    assert p.returncode == 0, p.stderr
    want = SENT + json.dumps({"ok": True, "entry": py_entry(path, name.encode())}).encode() + b"\n"
    assert p.stdout == want


def test_stat_char_device_and_follow(tree):
    p = fs("stat", "/dev/null")
    assert res(p)["entry"]["type"] == "char"
    p = fs("stat", tree / "link", "--follow")
    e = res(p)["entry"]
    assert e == py_entry(os.fsencode(tree / "link"), b"link", follow=True)
    assert e["type"] == "file" and "target" not in e and e["size"] == 5


def test_stat_missing_and_odd_names(tree):
    expect_error(fs("stat", tree / "nope"), 66, "ENOENT", str(tree / "nope"))
    for n in ODD_NAMES:
        path = os.path.join(os.fsencode(tree), n)
        e = res(fs("stat", "--", path))["entry"]
        assert os.fsencode(e["name"]) == n
        assert os.fsencode(e["path"]) == path


def test_list_is_byte_identical_to_python(tree):
    p = fs("list", tree)
    assert p.returncode == 0, p.stderr
    base = os.fsencode(tree)
    # readdir order: os.listdir reads the same getdents stream.
    entries = [py_entry(os.path.join(base, n), n) for n in os.listdir(base)]
    want = SENT + json.dumps({"ok": True, "path": str(tree), "entries": entries}).encode() + b"\n"
    assert p.stdout == want
    names = {os.fsencode(e["name"]) for e in json.loads(p.stdout[len(SENT):])["entries"]}
    assert names == set(os.listdir(base))
    assert set(ODD_NAMES) <= names


def test_list_trailing_slash_and_empty(tmp_path):
    (tmp_path / "a").write_bytes(b"")
    r = res(fs("list", str(tmp_path) + "/"))
    assert r["entries"][0]["path"] == str(tmp_path) + "/a"
    (tmp_path / "e").mkdir()
    p = fs("list", tmp_path / "e")
    assert p.stdout == SENT + json.dumps({"ok": True, "path": str(tmp_path / "e"), "entries": []}).encode() + b"\n"


def test_list_errors(tree):
    expect_error(fs("list", tree / "missing"), 66, "ENOENT")
    expect_error(fs("list", tree / "file"), 66, "ENOTDIR")


def _peak_rss_kb(cmd, stdout):
    """Peak RSS of cmd, measured in a fresh process so nothing else counts."""
    code = ("import resource, subprocess, sys\n"
            "with open(sys.argv[1], 'wb') as f:\n"
            "    rc = subprocess.run(sys.argv[2:], stdout=f).returncode\n"
            "print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([PY, "-c", code, stdout] + cmd, capture_output=True, timeout=300,
                         env=clean_env(), check=True).stdout.split()
    return int(out[0]), int(out[1])


def test_list_200k_entries_streams_in_bounded_memory(tmp_path):
    big = tmp_path / "big"
    big.mkdir()
    fd = os.open(big, os.O_RDONLY)
    try:
        for i in range(200_000):
            os.close(os.open("entry-%06d" % i, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    small = tmp_path / "small"
    small.mkdir()
    out = str(tmp_path / "out")
    rc, rss_small = _peak_rss_kb([AGENT, "fs", "list", str(small)], out)
    assert rc == 0
    rc, rss_big = _peak_rss_kb([AGENT, "fs", "list", str(big)], out)
    assert rc == 0
    data = open(out, "rb").read()
    assert data.count(b"\n") == 1 and data.startswith(SENT)
    r = json.loads(data[len(SENT):])
    assert len(r["entries"]) == 200_000
    assert len({e["name"] for e in r["entries"]}) == 200_000
    # The output is ~30 MB; holding it would show. Streaming costs < 8 MB more.
    assert len(data) > 20_000_000
    assert rss_big - rss_small < 8 * 1024, (rss_small, rss_big)


# ------------------------------------------------------------------ read ----

def test_read_whole_and_slices(tmp_path):
    data = bytes(range(256)) * 1000
    f = tmp_path / "f"
    f.write_bytes(data)
    p = fs("read", f)
    assert p.returncode == 0 and p.stdout == data
    assert line_of(p.stderr) == SENT + json.dumps(
        {"ok": True, "size": len(data), "offset": 0, "length": len(data), "eof": True}).encode()
    p = fs("read", f, "--offset", "1000", "--max-bytes", str(len(data)))
    assert p.stdout == data[1000:]
    assert res(p, p.stderr) == {"ok": True, "size": len(data), "offset": 1000,
                                "length": len(data) - 1000, "eof": True}
    p = fs("read", f, "--offset", str(len(data) + 5))
    assert p.returncode == 0 and p.stdout == b""
    assert res(p, p.stderr) == {"ok": True, "size": len(data), "offset": len(data) + 5,
                                "length": 0, "eof": True}
    p = fs("read", f, "--max-bytes", str(len(data)))
    assert p.returncode == 0 and p.stdout == data


def test_read_over_max_bytes_reads_nothing(tmp_path):
    f = tmp_path / "huge"
    with open(f, "wb") as h:
        h.truncate(1 << 40)  # sparse 1 TiB: reading it would take forever
    t = time.monotonic()
    p = fs("read", f, "--max-bytes", "10")
    assert time.monotonic() - t < 10
    expect_error(p, 69, "EFBIG", str(f))
    assert p.stdout == b""
    small = tmp_path / "small"
    small.write_bytes(b"12345678901")
    p = fs("read", small, "--max-bytes", "10")
    assert p.returncode == 69 and p.stdout == b""


def _read_res(p):
    assert p.returncode == 0, (p.returncode, p.stderr)
    return res(p, p.stderr)


def test_read_length_slices(tmp_path):
    data = os.urandom(10_000) + bytes(range(256)) * 100
    size = len(data)
    f = tmp_path / "f"
    f.write_bytes(data)
    cases = [  # (offset, length) -> bytes, eof
        ((0, 1000), data[:1000], False),                    # first chunk
        ((5000, 1000), data[5000:6000], False),             # middle
        ((size - 1000, 1000), data[-1000:], True),          # last, exactly to the end
        ((size - 300, 1000), data[-300:], True),            # last, short
        ((size, 1000), b"", True),                          # at the end
        ((size + 7, 1000), b"", True),                      # past the end
        ((0, 0), b"", False),                               # length 0: bytes remain
        ((size - 1, 0), b"", False),
        ((size, 0), b"", True),
        ((0, size), data, True),
        ((0, size + 1), data, True),
    ]
    for (off, length), want, eof in cases:
        p = fs("read", f, "--offset", off, "--length", length)
        assert p.stdout == want, (off, length, len(p.stdout))
        assert line_of(p.stderr) == SENT + json.dumps(
            {"ok": True, "size": size, "offset": off, "length": len(want), "eof": eof}).encode(), (off, length)
    # --length= spelling, and without --offset.
    assert _read_res(fs("read", f, "--length=10"))["length"] == 10


def test_read_length_of_a_sparse_terabyte_is_quick(tmp_path):
    f = tmp_path / "huge"
    with open(f, "wb") as h:
        h.truncate(1 << 40)
    t = time.monotonic()
    p = fs("read", f, "--offset", (1 << 40) - 5, "--length", 1 << 20)
    assert time.monotonic() - t < 10
    assert p.stdout == b"\0" * 5
    assert _read_res(p) == {"ok": True, "size": 1 << 40, "offset": (1 << 40) - 5, "length": 5, "eof": True}
    p = fs("read", f, "--offset", 1 << 30, "--length", 4096)
    assert p.stdout == b"\0" * 4096 and _read_res(p)["eof"] is False


def test_read_over_max_bytes_error_carries_the_size(tmp_path):
    small = tmp_path / "small"
    small.write_bytes(b"12345678901")
    p = fs("read", small, "--max-bytes", "10")
    r = expect_error(p, 69, "EFBIG", str(small))
    assert p.stdout == b""
    assert r["error"]["size"] == 11
    assert list(r["error"]) == ["code", "errno", "message", "path", "size"]
    # From an offset: only what remains counts.
    p = fs("read", small, "--offset", "1", "--max-bytes", "10")
    assert p.stdout == b"2345678901" and _read_res(p)["eof"] is True
    # With --length, --max-bytes still weighs everything that remains from the
    # offset (an exporter's overall cap, refused before the first chunk).
    big = tmp_path / "big"
    big.write_bytes(b"x" * 100)
    p = fs("read", big, "--length", "10", "--max-bytes", "50")
    assert expect_error(p, 69, "EFBIG", str(big))["error"]["size"] == 100
    assert p.stdout == b""
    p = fs("read", big, "--offset", "60", "--length", "10", "--max-bytes", "50")
    assert p.stdout == b"x" * 10
    assert _read_res(p) == {"ok": True, "size": 100, "offset": 60, "length": 10, "eof": False}
    # Other errors carry no size.
    r = expect_error(fs("read", tmp_path / "missing", "--max-bytes", "1"), 66, "ENOENT")
    assert "size" not in r["error"]


def test_read_in_chunks_reassembles_the_file(tmp_path):
    import hashlib
    data = os.urandom(3 * 1024 * 1024 + 12345)
    f = tmp_path / "export"
    f.write_bytes(data)
    chunk, off, parts, calls = 1 << 20, 0, [], 0
    while True:
        p = fs("read", f, "--offset", off, "--length", chunk, "--max-bytes", len(data))
        r = _read_res(p)
        calls += 1
        assert r["length"] == len(p.stdout) and r["offset"] == off and r["size"] == len(data)
        parts.append(p.stdout)
        off += r["length"]
        if r["eof"]:
            break
        assert r["length"] == chunk and calls < 10
    assert calls == 4
    assert hashlib.sha256(b"".join(parts)).hexdigest() == hashlib.sha256(data).hexdigest()


def test_read_refuses_special_files_without_blocking(tree):
    for path in [tree / "fifo", "/dev/zero", "/dev/urandom", "/proc/self/status", "/proc/kmsg"]:
        if not os.path.exists(path):
            continue
        t = time.monotonic()
        p = fs("read", path)
        assert time.monotonic() - t < 10
        expect_error(p, 68, "ENOTREG")
        assert p.stdout == b""
    expect_error(fs("read", tree / "dir"), 67, "EISDIR")
    expect_error(fs("read", tree / "missing"), 66, "ENOENT")
    expect_error(fs("read", tree / "file" / "x"), 66, "ENOTDIR")
    p = fs("read", tree / "link")  # a link to a file reads the file
    assert p.returncode == 0 and p.stdout == b"hello"


def test_read_to_closed_stdout_fails_cleanly(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"x" * (4 << 20))
    p = subprocess.Popen([AGENT, "fs", "read", str(f)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=TIMEOUT) == 1
    assert json.loads(line_of(err)[len(SENT):])["error"]["code"] == "EPIPE"


# ----------------------------------------------------------------- write ----

def test_write_creates_replaces_appends(tmp_path):
    f = tmp_path / "w"
    p = fs("write", f, input=b"one\x00\xff")
    assert p.stdout == SENT + b'{"ok": true, "bytes": 5}\n'
    assert f.read_bytes() == b"one\x00\xff"
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o666 & ~_umask()
    os.chmod(f, 0o640)
    assert res(fs("write", f, input=b"two"))["bytes"] == 3
    assert f.read_bytes() == b"two"
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o640  # replacing keeps the mode
    assert res(fs("write", f, "--append", input=b"+three"))["bytes"] == 6
    assert f.read_bytes() == b"two+three"
    assert res(fs("write", f, "--mode", "0600", input=b""))["bytes"] == 0
    assert f.read_bytes() == b"" and stat.S_IMODE(os.stat(f).st_mode) == 0o600
    deep = tmp_path / "a" / "b" / "c"
    expect_error(fs("write", deep, input=b"x"), 66, "ENOENT")
    assert res(fs("write", deep, "--parents", "--mode", "755", input=b"x"))["ok"]
    assert deep.read_bytes() == b"x" and stat.S_IMODE(os.stat(deep).st_mode) == 0o755
    assert sorted(os.listdir(tmp_path)) == ["a", "w"]  # no temp file left


def test_write_through_symlink_and_refusals(tree):
    assert res(fs("write", tree / "link", input=b"via link"))["ok"]
    assert os.path.islink(tree / "link")
    assert (tree / "file").read_bytes() == b"via link"
    expect_error(fs("write", tree / "dir", input=b"x"), 67, "EISDIR")
    expect_error(fs("write", tree / "fifo", input=b"x"), 68, "ENOTREG")


def _umask():
    m = os.umask(0)
    os.umask(m)
    return m


def _no_temp(d):
    return [n for n in os.listdir(d) if ".sbx-" in n] == []


def test_write_failure_keeps_old_file(tmp_path):
    f = tmp_path / "keep"
    f.write_bytes(b"old")
    # stdin that cannot be read (a directory): the write fails midway.
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        p = fs("write", f, stdin=fd)
    finally:
        os.close(fd)
    assert p.returncode == 67, p.stderr
    assert f.read_bytes() == b"old" and _no_temp(tmp_path)


def test_write_disk_full_keeps_old_file(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)]).returncode:
        pytest.skip("cannot mount a tmpfs")
    try:
        f = mnt / "keep"
        f.write_bytes(b"old")
        p = fs("write", f, input=b"z" * (1 << 20))
        expect_error(p, 1, "ENOSPC")
        assert f.read_bytes() == b"old" and _no_temp(mnt)
    finally:
        subprocess.run(["umount", str(mnt)])


def test_write_killed_by_sigterm_leaves_no_temp(tmp_path):
    f = tmp_path / "keep"
    f.write_bytes(b"old")
    p = subprocess.Popen([AGENT, "fs", "write", str(f)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(b"partial")
    p.stdin.flush()
    deadline = time.monotonic() + TIMEOUT
    while _no_temp(tmp_path):  # the temp file exists once the write is under way
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.01)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=TIMEOUT) == -signal.SIGTERM
    p.stdin.close()
    assert f.read_bytes() == b"old" and _no_temp(tmp_path)


def test_write_is_atomic_for_a_concurrent_reader(tmp_path):
    f = tmp_path / "atomic"
    size = 1 << 20
    versions = [bytes([c]) * size for c in b"ab"]
    f.write_bytes(versions[0])
    stop = threading.Event()
    seen, bad = set(), []

    def reader():
        while not stop.is_set():
            data = f.read_bytes()
            if data not in versions:
                bad.append((len(data), data[:1], data[-1:]))
            else:
                seen.add(data[:1])

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(30):
            assert fs("write", f, input=versions[i % 2]).returncode == 0
    finally:
        stop.set()
        t.join()
    assert not bad, bad[:3]
    assert seen == {b"a", b"b"}


# ------------------------------------------------------------ mkdir ----

def test_mkdir(tmp_path):
    d = tmp_path / "d"
    assert fs("mkdir", d).stdout == SENT + b'{"ok": true, "created": true}\n'
    assert fs("mkdir", d).stdout == SENT + b'{"ok": true, "created": false}\n'
    assert res(fs("mkdir", tmp_path / "m", "--mode", "0700"))["created"]
    assert stat.S_IMODE(os.stat(tmp_path / "m").st_mode) == 0o700
    assert res(fs("mkdir", tmp_path / "s", "--mode=1777"))["created"]
    assert stat.S_IMODE(os.stat(tmp_path / "s").st_mode) == 0o1777
    expect_error(fs("mkdir", tmp_path / "x" / "y"), 66, "ENOENT")
    assert res(fs("mkdir", tmp_path / "x" / "y" / "z", "--parents"))["created"]
    assert os.path.isdir(tmp_path / "x" / "y" / "z")
    (tmp_path / "f").write_bytes(b"")
    expect_error(fs("mkdir", tmp_path / "f"), 1, "EEXIST")


# Parents named by one character, at every level, relative and absolute,
# with trailing and doubled slashes (a one-character parent used to be taken
# for "/" and skipped: ENOENT).
ONE_CHAR_DIRS = ["a/b", "a/b/c/d", "a/b/", "a/b//", "a//b", "a/bb/c", "aa/b/c", "a/b/cc"]


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
@pytest.mark.parametrize("rel", ONE_CHAR_DIRS)
def test_parents_with_one_character_names(tmp_path, rel, absolute):
    base = str(tmp_path) + "/" if absolute else ""
    p = fs("mkdir", base + "m/" + rel, "--parents", cwd=tmp_path)
    assert p.returncode == 0 and res(p) == {"ok": True, "created": True}, p.stdout + p.stderr
    assert os.path.isdir(tmp_path / "m" / rel)
    assert res(fs("mkdir", base + "m/" + rel, "--parents", cwd=tmp_path)) == {"ok": True, "created": False}
    target = base + "w/" + rel.rstrip("/") + "/f"
    p = fs("write", target, "--parents", input=b"x", cwd=tmp_path)
    assert p.returncode == 0 and res(p) == {"ok": True, "bytes": 1}, p.stdout + p.stderr
    assert (tmp_path / "w" / rel.rstrip("/") / "f").read_bytes() == b"x"


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_parents_one_character_directly_below_the_start(tmp_path, absolute):
    base = str(tmp_path) + "/" if absolute else ""
    for path in ["a/f", "b/", "c//d", "e/g/"]:
        p = fs("mkdir", base + path, "--parents", cwd=tmp_path)
        assert p.returncode == 0 and res(p)["created"], (path, p.stdout, p.stderr)
        assert os.path.isdir(os.path.join(tmp_path, path))
    p = fs("write", base + "h/f", "--parents", input=b"z", cwd=tmp_path)
    assert p.returncode == 0 and res(p) == {"ok": True, "bytes": 1}, p.stdout + p.stderr
    assert (tmp_path / "h" / "f").read_bytes() == b"z"


# ---------------------------------------------------------------- remove ----

def test_remove_file_dir_tree(tree, tmp_path):
    assert fs("remove", tree / "file").stdout == SENT + b'{"ok": true}\n'
    assert not os.path.lexists(tree / "file")
    assert res(fs("remove", tree / "dir"))["ok"]
    (tree / "full").mkdir()
    (tree / "full" / "x").write_bytes(b"")
    expect_error(fs("remove", tree / "full"), 1, "ENOTEMPTY", str(tree / "full"))
    assert res(fs("remove", tree, "--recursive"))["ok"]
    assert not os.path.lexists(tree)
    expect_error(fs("remove", tree), 66, "ENOENT")


@pytest.mark.parametrize("path", ["/", "//", "/tmp/..", "/./"])
def test_remove_never_removes_root(path):
    p = fs("remove", path, "--recursive")
    assert p.returncode == 1
    assert res(p)["error"]["code"] == "EBUSY"
    assert os.path.isdir("/bin") or os.path.islink("/bin")


def test_remove_refuses_dot(tmp_path):
    (tmp_path / "x").write_bytes(b"")
    expect_error(fs("remove", ".", "--recursive", cwd=tmp_path), 1, "EINVAL")
    assert (tmp_path / "x").exists()


def test_remove_does_not_follow_symlinks(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_bytes(b"keep")
    t = tmp_path / "t"
    (t / "sub").mkdir(parents=True)
    os.symlink(outside, t / "sub" / "to-outside")
    os.symlink(outside / "precious", t / "file-link")
    assert res(fs("remove", t, "--recursive"))["ok"]
    assert not os.path.lexists(t)
    assert (outside / "precious").read_bytes() == b"keep"
    # A symlink given as the path is removed itself.
    os.symlink(outside, tmp_path / "l")
    assert res(fs("remove", tmp_path / "l", "--recursive"))["ok"]
    assert (outside / "precious").exists()


def test_remove_deep_tree_with_few_fds(tmp_path):
    top = tmp_path / "deep"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    depth = 1500
    for i in range(depth):  # deeper than PATH_MAX allows as a path
        os.mkdir("d%04d" % i, dir_fd=fd)
        open(os.open("f", os.O_CREAT | os.O_WRONLY, dir_fd=fd), "w").close()
        nfd = os.open("d%04d" % i, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    os.close(fd)
    p = fs("remove", top, "--recursive",
           preexec=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)))
    assert p.returncode == 0, p.stdout + p.stderr
    assert not os.path.lexists(top)


@pytest.fixture
def pubdir():
    """A directory that uid 65534 can reach (pytest's tmp_path is 0700 root)."""
    import pathlib, shutil, tempfile
    d = tempfile.mkdtemp(prefix="sbx-fs-", dir="/tmp")
    os.chmod(d, 0o755)
    yield pathlib.Path(d)
    shutil.rmtree(d, ignore_errors=True)


def test_remove_reports_first_failure_with_path(pubdir):
    tmp_path = pubdir
    t = tmp_path / "t"
    (t / "mine").mkdir(parents=True)
    (t / "mine" / "a").write_bytes(b"")
    (t / "roots").mkdir()
    (t / "roots" / "locked").write_bytes(b"")
    os.chmod(tmp_path, 0o777)
    for dp, dns, fns in os.walk(t):
        for n in dns + fns + ["."]:
            os.chown(os.path.join(dp, n), 65534, 65534)
    os.chown(t / "roots", 0, 0)  # nobody cannot delete inside it
    os.chmod(t / "roots", 0o755)
    p = fs("remove", t, "--recursive", user=True)
    r = expect_error(p, 66, "EACCES", str(t / "roots" / "locked"))
    assert "ermission" in r["error"]["message"]
    assert (t / "roots" / "locked").exists()


# ------------------------------------------------------------------ move ----

def test_move_and_overwrite(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"A")
    assert fs("move", a, b).stdout == SENT + b'{"ok": true}\n'
    assert b.read_bytes() == b"A" and not a.exists()
    a.write_bytes(b"new")
    expect_error(fs("move", a, b), 1, "EEXIST", str(b))
    assert a.read_bytes() == b"new" and b.read_bytes() == b"A"
    assert res(fs("move", a, b, "--overwrite"))["ok"]
    assert b.read_bytes() == b"new" and not a.exists()
    expect_error(fs("move", a, b), 66, "ENOENT", str(a))


def _other_fs_dir(tmp_path, request):
    """A directory on a filesystem other than tmp_path's."""
    here = os.stat(tmp_path).st_dev
    for cand in ["/dev/shm", "/run"]:
        if os.path.isdir(cand) and os.stat(cand).st_dev != here and os.access(cand, os.W_OK):
            d = os.path.join(cand, "sbx-fs-test-%d" % os.getpid())
            os.makedirs(d, exist_ok=True)
            request.addfinalizer(lambda: subprocess.run(["rm", "-rf", d]))
            return d
    d = tmp_path / "mnt"
    d.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(d)]).returncode:
        pytest.skip("no second filesystem")
    request.addfinalizer(lambda: subprocess.run(["umount", "-l", str(d)]))
    return str(d)


def test_move_across_filesystems(tmp_path, request):
    other = _other_fs_dir(tmp_path, request)
    src = tmp_path / "tree"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "f").write_bytes(b"data" * 1000)
    os.chmod(src / "sub" / "f", 0o751)
    os.symlink("sub/f", src / "l")
    os.mkfifo(src / "p")
    os.chmod(src / "sub", 0o700)
    want = {os.path.relpath(os.path.join(dp, n), src): py_entry(os.fsencode(os.path.join(dp, n)), b"")
            for dp, dns, fns in os.walk(src) for n in dns + fns}
    dst = os.path.join(other, "moved")
    p = fs("move", src, dst)
    assert p.returncode == 0, p.stderr
    assert not os.path.lexists(src)
    got = {os.path.relpath(os.path.join(dp, n), dst): py_entry(os.fsencode(os.path.join(dp, n)), b"")
           for dp, dns, fns in os.walk(dst) for n in dns + fns}
    assert got.keys() == want.keys()
    for k in want:
        for field in ("type", "size", "mode", "uid", "gid", "mtime", "target"):
            if not (field == "size" and want[k]["type"] == "dir"):  # fs-specific
                assert got[k].get(field) == want[k].get(field), (k, field)
    assert open(os.path.join(dst, "sub", "f"), "rb").read() == b"data" * 1000
    # A file back, refusing to overwrite, then overwriting.
    f = tmp_path / "back"
    f.write_bytes(b"exists")
    expect_error(fs("move", os.path.join(dst, "sub", "f"), f), 1, "EEXIST")
    assert res(fs("move", os.path.join(dst, "sub", "f"), f, "--overwrite"))["ok"]
    assert f.read_bytes() == b"data" * 1000
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o751
    assert [n for n in os.listdir(tmp_path) if ".sbx-" in n] == []


def _small_tmpfs(tmp_path, request, size="4m"):
    """A small filesystem of its own: a copy that runs away fills it at once."""
    d = tmp_path / "small-fs"
    d.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", str(d)]).returncode:
        pytest.skip("cannot mount a tmpfs")
    request.addfinalizer(lambda: subprocess.run(["umount", "-l", str(d)]))
    return str(d)


@pytest.mark.parametrize("kind", ["char", "fifo"])
def test_move_across_filesystems_refuses_a_source_swapped_for_a_special_file(tmp_path, request, kind):
    # A racing thread keeps replacing SRC (a regular file at the agent's
    # lstat) by /dev/zero's node or a FIFO (at its open). The copy must check
    # what it opened: a run either moves the file, moves the special node (it
    # was one at lstat), or refuses (68); never copies zeros until the
    # destination fills, never copies an empty file for a FIFO, never hangs,
    # never leaves a temporary file.
    other = _small_tmpfs(tmp_path, request)
    src, orig = tmp_path / "src", tmp_path / "orig"
    data = os.urandom(64 * 1024)
    orig.write_bytes(data)
    stop, counts = threading.Event(), {"ok-file": 0, "ok-node": 0, "refused": 0}

    def racer():
        i = 0
        while not stop.is_set():
            i += 1
            tmp = str(tmp_path / ("swap%d" % (i % 2)))
            try:
                if i % 2:
                    if kind == "char":
                        os.mknod(tmp, stat.S_IFCHR | 0o600, os.makedev(1, 5))
                    else:
                        os.mkfifo(tmp)
                else:
                    os.link(orig, tmp)
                os.rename(tmp, src)
            except FileExistsError:
                os.unlink(tmp)

    for rnd in range(300):
        dst = os.path.join(other, "dst")
        os.link(orig, src)
        t = threading.Thread(target=racer, daemon=True)
        t.start()
        try:
            p = subprocess.run([AGENT, "fs", "move", str(src), dst], capture_output=True, timeout=20,
                               env=clean_env())
        finally:
            stop.set()
            t.join(timeout=TIMEOUT)
            stop.clear()
        assert [n for n in os.listdir(other) if ".sbx-" in n] == [], rnd
        if p.returncode == 68:
            assert res(p)["error"]["code"] == "ENOTREG"
            assert not os.path.lexists(dst)
            counts["refused"] += 1
        else:
            assert p.returncode == 0, (rnd, p.stdout, p.stderr)
            st = os.lstat(dst)
            if stat.S_ISREG(st.st_mode):
                assert st.st_size == len(data), (rnd, st.st_size)
                assert open(dst, "rb").read() == data, rnd
                counts["ok-file"] += 1
            else:
                assert stat.S_ISCHR(st.st_mode) if kind == "char" else stat.S_ISFIFO(st.st_mode)
                counts["ok-node"] += 1
            os.unlink(dst)
        for n in ("src", "swap0", "swap1"):
            if os.path.lexists(tmp_path / n):
                os.unlink(tmp_path / n)
        if counts["refused"] >= 10:
            break
    sys.stderr.write("swap race (%s): %r\n" % (kind, counts))


# ------------------------------------------------------- permissions, usage ----

def test_permission_denied_as_nobody(tmp_path):
    os.chmod(tmp_path, 0o755)
    secret = tmp_path / "secret"
    secret.write_bytes(b"s")
    os.chmod(secret, 0o600)
    for args in (["read", secret], ["write", secret], ["list", "/root"] if os.path.isdir("/root")
                 and not os.stat("/root").st_mode & 0o005 else ["read", secret]):
        p = fs(*args, user=True, input=b"x")
        stream = p.stderr if args[0] == "read" else p.stdout
        assert p.returncode == 66, (args, p.stdout, p.stderr)
        r = json.loads(line_of(stream)[len(SENT):])
        assert r["error"]["code"] == "EACCES" and r["error"]["errno"] == 13
        assert r["error"]["message"] == "Permission denied"
        assert b"sandbox-agent: " in p.stderr
    assert secret.read_bytes() == b"s"


@pytest.mark.parametrize("args", [[], ["frobnicate", "/"], ["list"], ["list", "/", "/"],
                                  ["list", "--follow", "/"], ["mkdir", "/x", "--mode", "999"],
                                  ["mkdir", "/x", "--mode"], ["read", "/x", "--max-bytes", "-1"],
                                  ["read", "/x", "--offset", "1k"], ["move", "/x"],
                                  ["read", "/x", "--length", "-1"], ["read", "/x", "--length"],
                                  ["stat", "/x", "--length", "1"],
                                  ["stat", "-x"]])
def test_usage_errors(args):
    p = fs(*args)
    assert p.returncode == 2
    assert p.stdout == b""
    assert p.stderr.startswith(b"sandbox-agent: ") or p.stderr.startswith(b"usage:")


def test_leading_dash_after_double_dash(tmp_path):
    f = tmp_path / "-x"
    p = fs("write", "--", "-x", input=b"dash", cwd=tmp_path)
    assert p.returncode == 0 and f.read_bytes() == b"dash"
    assert res(fs("stat", "--", "-x", cwd=tmp_path))["entry"]["name"] == "-x"


def test_help():
    p = subprocess.run([AGENT, "fs", "--help"], capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 0 and b"list" in p.stdout and b"66" in p.stdout


# A path ending in '/' makes the kernel follow a final symlink even with
# O_NOFOLLOW; remove and move must still act on the link itself.
def test_remove_trailing_slash_removes_the_link_not_the_target(tmp_path):
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "keep.txt").write_text("x")
    (tmp_path / "t").mkdir()
    os.symlink(victim, tmp_path / "t" / "link")
    p = fs("remove", str(tmp_path / "t" / "link") + "/", "--recursive")
    assert p.returncode == 0, p.stderr
    assert not os.path.lexists(tmp_path / "t" / "link")
    assert sorted(os.listdir(victim)) == ["keep.txt", "sub"]


def test_move_trailing_slash_moves_the_link(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("x")
    os.symlink(victim, tmp_path / "link")
    dst = "/dev/shm/sa-move-%d" % os.getpid()  # another filesystem: the copy path
    try:
        p = fs("move", str(tmp_path / "link") + "/", dst)
        assert p.returncode == 0, p.stderr
        assert os.path.islink(dst) and os.readlink(dst) == str(victim)
        assert os.listdir(victim) == ["keep.txt"]
    finally:
        if os.path.lexists(dst):
            os.unlink(dst)
