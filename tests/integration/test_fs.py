"""`sandbox-agent fs`: README "sandbox-agent fs", driven as a host SDK drives it:
argv in, one `__SBX_FS__{json}` line out (stderr for `read`), exit status.
Here stat, list, read and write; mkdir, remove, move, permissions and usage
in test_fs_tree.py; the helpers in tests/lib/fslib.py.

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
from fslib import NOBODY, ODD_NAMES, SENT, expect_error, fs, line_of, py_entry, res, tree  # noqa: F401


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
