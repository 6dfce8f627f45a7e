"""`sandbox-agent fs` (README "sandbox-agent fs"): mkdir, remove, move, who
may do what, and the usage errors (stat, list, read, write: test_fs.py; the
helpers in tests/lib/fslib.py)."""
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
