"""The `fs` mode's test helpers (tests/integration/test_fs*.py): running
`sandbox-agent fs` as a host would, its one `__SBX_FS__` line parsed, the
entry Python's os.lstat gives for comparison, the error checks, and the tree
of every kind of entry the tests list.
"""
import json
import os
import socket
import stat
import subprocess

import pytest

from testlib import AGENT, TIMEOUT, clean_env

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
