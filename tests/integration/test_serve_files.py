"""`sandbox-agent serve`: filesystem.Filesystem and /files, black-box.

Every RPC (Stat, MakeDir, Move, ListDir, Remove, WatchDir, CreateWatcher,
GetWatcherEvents, RemoveWatcher) and both /files routes, through the small
client in fsclient.py: EntryInfo as envd fills it, hostile names kept byte
for byte, depth listings, watches that miss nothing and report what they
lose, uploads (multipart with many files, octet-stream, gzip, chunked or
sized, metadata as xattrs) that are atomic and survive being cut off,
downloads that refuse what `fs read` refuses, a 2 GB round trip in flat
memory, and users: ownership, permission_denied, unknown users.
"""
import datetime
import gzip
import hashlib
import json
import os
import select
import shutil
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import urllib.parse
import zlib

import pytest

from conftest import TIMEOUT, children, started_agents
from fsclient import Agent, RpcError, bpath, jpath, wait_until

NOBODY = 65534
HOSTILE = [b"new\nline", b"bad\xffutf8\xc3", b"-leading-dash", b"sp ace", b'quo"te', b"back\\slash",
           b"\xe2\x98\x83snow", b"--", b"*", b"tab\tname"]


@pytest.fixture
def serve(agent):
    yield from started_agents(lambda **env: Agent(agent, **env))


@pytest.fixture
def serve_as_nobody(agent_anyone):
    """Agents run as nobody (from a copy of the binary anyone can run)."""
    yield from started_agents(lambda **env: Agent(agent_anyone, preexec=as_nobody, **env))


@pytest.fixture
def fs(serve):
    return serve().client


@pytest.fixture
def pub():
    """A directory anyone may use (the tests' tmp_path is root's only)."""
    d = tempfile.mkdtemp(prefix="sbx-pub-", dir="/tmp")
    os.chmod(d, 0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def rfc3339(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))


def temp_files(d):
    return [n for n in os.listdir(d) if ".sbx-" in n]


# ---- Stat and EntryInfo ----------------------------------------------------------

def test_stat_fills_entry_info_as_envd(fs, tmp_path):
    f = tmp_path / "a.txt"
    f.write_bytes(b"data")
    os.chmod(f, 0o644)
    os.setxattr(f, "user.e2b.color", b"blue")
    os.setxattr(f, "user.other", b"hidden")
    e = fs.call("Stat", {"path": str(f)})["entry"]
    st = os.lstat(f)
    assert e["name"] == "a.txt" and e["type"] == "FILE_TYPE_FILE" and e["path"] == str(f)
    assert e["size"] == "4" and e["mode"] == 0o644 and e["permissions"] == "-rw-r--r--"
    assert e["owner"] == "root" and e["group"] == "root"
    assert abs(rfc3339(e["modifiedTime"]).timestamp() - st.st_mtime) < 1e-3
    assert e["metadata"] == {"color": "blue"}
    assert "symlinkTarget" not in e

    d = fs.call("Stat", {"path": str(tmp_path)})["entry"]
    assert d["type"] == "FILE_TYPE_DIRECTORY" and d["permissions"].startswith("d")

    os.symlink("a.txt", tmp_path / "link")
    ln = fs.call("Stat", {"path": str(tmp_path / "link")})["entry"]
    assert ln["type"] == "FILE_TYPE_FILE" and ln["symlinkTarget"] == str(f)  # its target's type, as envd
    assert ln["permissions"].startswith("L") and ln["mode"] == 0o644

    os.mkfifo(tmp_path / "fifo")
    fi = fs.call("Stat", {"path": str(tmp_path / "fifo")})["entry"]
    assert fi["type"] == "FILE_TYPE_UNSPECIFIED" and fi["permissions"].startswith("p")

    assert fs.code_of("Stat", {"path": str(tmp_path / "missing")}) == "not_found"
    assert fs.code_of("Stat", {"path": 7}) == "invalid_argument"


def test_relative_paths_are_the_users_home(fs):
    home = fs.call("Stat", {"path": "~"})["entry"]
    assert home["path"] == "/root" and home["type"] == "FILE_TYPE_DIRECTORY"
    assert fs.call("Stat", {"path": ""})["entry"]["path"] == "/root"
    assert fs.call("Stat", {"path": "x/../."})["entry"]["path"] == "/root"
    assert fs.code_of("Stat", {"path": "~nobody"}) == "invalid_argument"


# ---- MakeDir, Move, Remove -------------------------------------------------------------

def test_make_dir_with_parents_and_already_exists(fs, tmp_path):
    d = tmp_path / "p" / "q" / "r"
    e = fs.call("MakeDir", {"path": str(d)})["entry"]
    assert d.is_dir() and e["type"] == "FILE_TYPE_DIRECTORY" and e["mode"] == 0o755
    assert fs.code_of("MakeDir", {"path": str(d)}) == "already_exists"
    (tmp_path / "file").write_bytes(b"")
    assert fs.code_of("MakeDir", {"path": str(tmp_path / "file")}) == "invalid_argument"


def test_move_renames_creates_parents_and_reports(fs, tmp_path):
    (tmp_path / "src").write_bytes(b"moved")
    e = fs.call("Move", {"source": str(tmp_path / "src"), "destination": str(tmp_path / "x/y/dst")})["entry"]
    assert e["path"] == str(tmp_path / "x/y/dst") and e["size"] == "5"
    assert (tmp_path / "x/y/dst").read_bytes() == b"moved" and not (tmp_path / "src").exists()
    (tmp_path / "other").write_bytes(b"new")
    fs.call("Move", {"source": str(tmp_path / "other"), "destination": str(tmp_path / "x/y/dst")})
    assert (tmp_path / "x/y/dst").read_bytes() == b"new"
    assert fs.code_of("Move", {"source": str(tmp_path / "nope"), "destination": str(tmp_path / "z")}) == "not_found"
    assert fs.code_of("Move", {"source": str(tmp_path / "x")}) == "invalid_argument"


def test_remove_file_tree_missing_and_never_root(fs, tmp_path):
    (tmp_path / "t/u/v").mkdir(parents=True)
    (tmp_path / "t/u/v/f").write_bytes(b"x")
    (tmp_path / "f").write_bytes(b"x")
    assert fs.call("Remove", {"path": str(tmp_path / "f")}) == {}
    assert fs.call("Remove", {"path": str(tmp_path / "t")}) == {}
    assert not (tmp_path / "t").exists() and not (tmp_path / "f").exists()
    assert fs.call("Remove", {"path": str(tmp_path / "missing")}) == {}
    assert fs.code_of("Remove", {"path": "/"}) != "ok"
    assert os.path.isdir("/etc")
    assert fs.code_of("Remove", {"path": ""}) == "invalid_argument"


# ---- ListDir ------------------------------------------------------------------------

def test_list_dir_depth_order_and_symlinks(fs, tmp_path):
    (tmp_path / "b/c/d").mkdir(parents=True)
    (tmp_path / "a.txt").write_bytes(b"1")
    (tmp_path / "b/c/d/deep").write_bytes(b"2")
    (tmp_path / "b/z").write_bytes(b"3")
    os.symlink(str(tmp_path / "b"), tmp_path / "ln")

    def names(depth):
        out = fs.call("ListDir", {"path": str(tmp_path), "depth": depth})["entries"]
        return [os.path.relpath(e["path"], tmp_path) for e in out]

    assert names(1) == ["a.txt", "b", "ln"]
    assert names(2) == ["a.txt", "b", "b/c", "b/z", "ln"]
    assert names(4) == ["a.txt", "b", "b/c", "b/c/d", "b/c/d/deep", "b/z", "ln"]
    assert fs.call("ListDir", {"path": str(tmp_path)})["entries"][0]["name"] == "a.txt"  # depth 0 is 1
    via_link = fs.call("ListDir", {"path": str(tmp_path / "ln"), "depth": 1})["entries"]
    assert [e["path"] for e in via_link] == [str(tmp_path / "ln/c"), str(tmp_path / "ln/z")]
    assert fs.code_of("ListDir", {"path": str(tmp_path / "a.txt")}) == "invalid_argument"
    assert fs.code_of("ListDir", {"path": str(tmp_path / "nope")}) == "not_found"
    assert fs.code_of("ListDir", {"path": str(tmp_path), "depth": "x"}) == "invalid_argument"


def test_list_dir_of_10000_entries_does_not_hold_other_clients(fs, tmp_path):
    big = tmp_path / "big"
    big.mkdir()
    for i in range(10000):
        (big / ("f%05d" % i)).write_bytes(b"")
    out = fs.call("ListDir", {"path": str(big)})["entries"]
    assert len(out) == 10000 and out[0]["name"] == "f00000" and out[-1]["name"] == "f09999"


# ---- hostile names -------------------------------------------------------------------

def test_hostile_names_round_trip_exactly(fs, tmp_path):
    root = os.fsencode(str(tmp_path))
    for name in HOSTILE:
        d = root + b"/d" + name
        e = fs.call("MakeDir", {"path": jpath(d)})["entry"]
        assert bpath(e["path"]) == d and bpath(e["name"]) == b"d" + name
        assert os.path.isdir(d)
        f = d + b"/" + name
        st, out = fs.post_octet(f, b"content of " + name)
        assert st == 200 and bpath(out[0]["path"]) == f, out
        st, _, body = fs.get_file(f)
        assert st == 200 and body == b"content of " + name
        listed = fs.call("ListDir", {"path": jpath(d)})["entries"]
        assert [bpath(x["name"]) for x in listed] == [name]
        assert bpath(fs.call("Stat", {"path": jpath(f)})["entry"]["name"]) == name
        # A multipart part's filename carries the name too (quoted-string).
        g = d + b"/mp" + name
        st, out = fs.post_multipart([(g, b"mp")])
        assert st == 200 and bpath(out[0]["path"]) == g and open(g, "rb").read() == b"mp", out
        assert fs.call("Remove", {"path": jpath(d)}) == {}
        assert not os.path.exists(d)


# ---- GET /files ------------------------------------------------------------------------

def test_download_bytes_length_type_and_errors(fs, tmp_path):
    (tmp_path / "t.txt").write_bytes(b"hello\n")
    st, h, body = fs.get_file(str(tmp_path / "t.txt"))
    assert st == 200 and body == b"hello\n" and h["Content-Length"] == "6"
    assert h["Content-Type"].startswith("text/plain")
    (tmp_path / "empty").write_bytes(b"")
    st, h, body = fs.get_file(str(tmp_path / "empty"))
    assert st == 200 and body == b"" and h["Content-Length"] == "0"
    st, h, body = fs.get_file(str(tmp_path / "missing"))
    assert st == 404 and h["Content-Type"] == "application/json"
    err = __import__("json").loads(body)
    assert err["code"] == 404 and "No such file" in err["message"]
    assert fs.get_file(str(tmp_path))[0] == 400


def test_download_refuses_fifo_device_and_proc(fs, tmp_path):
    os.mkfifo(tmp_path / "fifo")  # no writer ever: a read would hang
    for p in (str(tmp_path / "fifo"), "/dev/zero", "/dev/null", "/proc/self/status"):
        st, _, body = fs.get_file(p)
        assert st == 400, (p, st, body)


def raw_get(fs, path, encoding=b"identity"):
    """A GET /files on a socket of its own, read by hand: (socket, head
    bytes, Content-Length or None, what of the body came with the head)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    s.connect(fs.path)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nAccept-Encoding: %s\r\n\r\n" % (fs.query(path).encode(), encoding))
    got = b""
    while b"\r\n\r\n" not in got:
        piece = s.recv(65536)
        assert piece, got
        got += piece
    head, rest = got.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200"), head
    lengths = [ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")]
    return s, head, int(lengths[0].split(b":")[1]) if lengths else None, rest


def read_to_end(s, have):
    """What the peer sends until it closes."""
    while True:
        piece = s.recv(1 << 20)
        if not piece:
            return have
        have += piece


@pytest.mark.parametrize("where", ["shm", "disk"])
def test_a_download_of_a_file_that_shrinks_ends_early_and_never_hangs(fs, tmp_path, where):
    # The agent sends from the file itself (sendfile): a file cut short
    # meanwhile cannot fill the Content-Length already sent, so the
    # connection ends, at once, with fewer bytes (never a wait for bytes
    # that will not come).
    d = tempfile.mkdtemp(dir="/dev/shm") if where == "shm" else str(tmp_path)
    try:
        # 64 MiB, far more than the socket buffers hold; less where the
        # filesystem is small (a container's /dev/shm is 64 MiB in all).
        st = os.statvfs(d)
        mib = min(64, st.f_bavail * st.f_frsize // 2 >> 20)
        if mib < 16:
            pytest.skip("%s has %d MiB free: 32 needed" % (d, st.f_bavail * st.f_frsize >> 20))
        f = os.path.join(d, "shrinks")
        with open(f, "wb") as out:
            out.write(os.urandom(1 << 20) * mib)
        s, _, length, body = raw_get(fs, f)
        assert length == mib << 20
        body += s.recv(1 << 20)
        os.truncate(f, 1 << 20)
        body = read_to_end(s, body)
        assert 0 < len(body) < length
        s.close()
    finally:
        if where == "shm":
            shutil.rmtree(d)


def test_a_download_of_a_file_that_grows_sends_the_length_it_had(fs, tmp_path):
    f = tmp_path / "grows"
    data = os.urandom(8 << 20)
    f.write_bytes(data)
    s, _, length, body = raw_get(fs, str(f))
    assert length == len(data)
    with open(f, "ab") as out:
        out.write(b"x" * (8 << 20))
    while len(body) < length:
        piece = s.recv(1 << 20)
        assert piece, len(body)
        body += piece
    assert body == data  # exactly its length: the connection goes on
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert s.recv(4096).startswith(b"HTTP/1.1 204")
    s.close()


def test_a_download_not_in_the_page_cache_is_read_ahead_not_waited_for(fs, tmp_path):
    # On a disk filesystem the agent sends only what the page cache holds;
    # the rest is read ahead and waited for by a timer, never in a read of
    # the loop's. The bytes are the file's all the same.
    f = tmp_path / "cold"
    data = os.urandom(1 << 20) * 24
    with open(f, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
        os.posix_fadvise(out.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    st, h, body = fs.get_file(str(f))
    assert st == 200 and int(h["Content-Length"]) == len(data) and body == data


def test_a_gzip_download_whose_helper_is_killed_is_cut_short(serve, tmp_path):
    # The helper deflates; the stream is ended (its last chunk sent) only
    # when the helper ended well, never a whole-looking gzip of part of
    # the file.
    a = serve()
    f = tmp_path / "words.txt"
    f.write_bytes(b"".join(b"%d word %x\n" % (i, i * 7919) for i in range(3000000)))
    s, head, length, body = raw_get(a.client, str(f), b"gzip")
    try:
        assert b"Content-Encoding: gzip" in head and length is None
        helpers = children(a.proc.pid)
        assert len(helpers) == 1, helpers  # it waits for the client to read
        os.kill(helpers[0], signal.SIGKILL)
        body = read_to_end(s, body)
        assert not body.endswith(b"0\r\n\r\n"), body[-64:]
        st, _, whole = a.client.get_file(str(f), gzip=True)
        assert st == 200 and gzip.decompress(whole) == f.read_bytes()
    finally:
        s.close()


def test_a_download_as_another_user_is_theirs_to_read(fs, pub):
    f = os.path.join(pub, "readable")
    with open(f, "wb") as out:
        out.write(b"r" * 100000)
    os.chmod(f, 0o644)
    st, h, body = fs.get_file(f, user="nobody")
    assert st == 200 and body == b"r" * 100000
    os.chmod(f, 0o600)
    assert fs.get_file(f, user="nobody")[0] == 403


def test_download_gzip(fs, tmp_path):
    data = b"".join(b"line %d\n" % i for i in range(50000))
    (tmp_path / "g").write_bytes(data)
    st, h, body = fs.get_file(str(tmp_path / "g"), gzip=True)
    assert st == 200 and h["Content-Encoding"] == "gzip" and gzip.decompress(body) == data
    assert len(body) < len(data) // 4


# ---- POST /files -------------------------------------------------------------------------

def test_upload_octet_sized_chunked_and_parents(fs, tmp_path):
    p = tmp_path / "n/e/w.bin"
    st, out = fs.post_octet(str(p), b"sized")
    assert st == 200 and out == [{"name": "w.bin", "type": "file", "path": str(p)}]
    assert p.read_bytes() == b"sized" and stat.S_IMODE(os.stat(p).st_mode) == 0o644
    st, out = fs.post_octet(str(p), iter([b"chun", b"ked", b""]))
    assert st == 200 and p.read_bytes() == b"chunked"
    st, out = fs.post_octet(str(tmp_path / "e0"), b"")
    assert st == 200 and (tmp_path / "e0").read_bytes() == b""
    assert temp_files(p.parent) == []


def test_upload_refusals(fs, tmp_path):
    assert fs.post(fs.query(None), b"x", "application/octet-stream")[0] == 400  # octet needs ?path=
    assert fs.post(fs.query(str(tmp_path / "x")), b"x", "text/plain")[0] == 400
    assert fs.post(fs.query(str(tmp_path / "x")), b"x", "multipart/form-data")[0] == 400
    st, out = fs.post_octet(str(tmp_path), b"x")  # a directory
    assert st == 400 and out["code"] == 400
    os.mkfifo(tmp_path / "fifo")
    assert fs.post_octet(str(tmp_path / "fifo"), b"x")[0] == 400
    st, out = fs.post_multipart([(str(tmp_path / "same"), b"1"), (str(tmp_path / "same"), b"2")])
    assert st == 400 and "same path" in out["message"]
    st, out = fs.post_multipart([(None, b"no name")])
    assert st == 400
    st, out = fs.post_octet(str(tmp_path / "z"), b"x", headers={"Content-Encoding": "br"})
    assert st == 400


def test_upload_100_files_in_one_multipart_request(fs, tmp_path):
    files = [(str(tmp_path / "m" / ("f%03d" % i)), b"file %d " % i * (i + 1)) for i in range(100)]
    st, out = fs.post_multipart(files)
    assert st == 200 and [o["path"] for o in out] == [f for f, _ in files]
    for f, data in files:
        assert open(f, "rb").read() == data
    assert temp_files(tmp_path / "m") == []


def test_upload_multipart_of_large_files_streams(fs, tmp_path):
    block = os.urandom(1 << 20)
    sums = []

    def data(k):
        h = hashlib.sha256()
        sums.append(h)
        for i in range(40):
            chunk = struct.pack(">QQ", k, i) + block[16:]
            h.update(chunk)
            yield chunk

    files = [(str(tmp_path / ("large%d" % k)), data(k)) for k in range(3)]
    st, out = fs.post_multipart(files)
    assert st == 200 and len(out) == 3, out
    for k in range(3):
        with open(tmp_path / ("large%d" % k), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == sums[k].hexdigest()


def test_upload_multipart_with_path_query_and_other_fields(fs, tmp_path):
    target = tmp_path / "one"
    boundary = "xyz"
    body = (b"preamble\r\n--xyz\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nnot a file\r\n"
            b"--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"ignored\"\r\n\r\n"
            b"the\r\n--xy data\r\n--xyz--\r\nepilogue")
    st, out = fs.post(fs.query(str(target)), body, "multipart/form-data; boundary=" + boundary)
    assert st == 200 and out == [{"name": "one", "type": "file", "path": str(target)}]
    assert target.read_bytes() == b"the\r\n--xy data"


def test_upload_gzip_octet_and_multipart(fs, tmp_path):
    data = os.urandom(300000) + b"z" * 500000
    st, _ = fs.post_octet(str(tmp_path / "g1"), gzip.compress(data), headers={"Content-Encoding": "gzip"})
    assert st == 200 and (tmp_path / "g1").read_bytes() == data
    two = gzip.compress(b"first ") + gzip.compress(b"second")  # members, as gunzip reads them
    assert fs.post_octet(str(tmp_path / "g2"), two, headers={"Content-Encoding": "gzip"})[0] == 200
    assert (tmp_path / "g2").read_bytes() == b"first second"
    files = [(str(tmp_path / "gm1"), b"a" * 70000), (str(tmp_path / "gm2"), data)]
    boundary = "gzb"
    raw = b"".join(b"--gzb\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + f.encode() +
                   b"\"\r\n\r\n" + d + b"\r\n" for f, d in files) + b"--gzb--\r\n"
    st, out = fs.post(fs.query(None), gzip.compress(raw), "multipart/form-data; boundary=gzb",
                      {"Content-Encoding": "gzip"})
    assert st == 200 and len(out) == 2
    assert (tmp_path / "gm2").read_bytes() == data
    # A bomb inflates in fixed buffers: 1 GiB of zeros from a megabyte.
    bomb = zlib.compressobj(9, zlib.DEFLATED, 31)
    gz = b"".join(bomb.compress(b"\0" * (1 << 20)) for _ in range(1024)) + bomb.flush()
    st, _ = fs.post_octet(str(tmp_path / "bomb"), gz, headers={"Content-Encoding": "gzip"})
    assert st == 200 and os.path.getsize(tmp_path / "bomb") == 1 << 30
    os.unlink(tmp_path / "bomb")


def test_upload_bad_gzip_leaves_old_file(fs, tmp_path):
    t = tmp_path / "keep"
    t.write_bytes(b"old")
    bad = gzip.compress(b"new content" * 1000)
    for body in (bad[:len(bad) // 2], bad[:20] + b"garbage" * 10, b"not gzip at all"):
        st, out = fs.post_octet(str(t), body, headers={"Content-Encoding": "gzip"})
        assert st == 400, out
        assert t.read_bytes() == b"old"
        wait_until(lambda: temp_files(tmp_path) == [], what="the temporary file to go")


def test_upload_metadata_round_trip(fs, tmp_path):
    p = tmp_path / "meta"
    st, out = fs.post_octet(str(p), b"m", headers={"X-Metadata-Owner-Team": "Blue Team", "X-Metadata-k": "v"})
    assert st == 200 and out[0]["metadata"] == {"owner-team": "Blue Team", "k": "v"}
    assert os.getxattr(p, "user.e2b.owner-team") == b"Blue Team" and os.getxattr(p, "user.e2b.k") == b"v"
    assert fs.call("Stat", {"path": str(p)})["entry"]["metadata"] == {"owner-team": "Blue Team", "k": "v"}
    # Replacing the file: its metadata is exactly what the new upload says.
    st, _ = fs.post_octet(str(p), b"m2", headers={"X-Metadata-k": "w"})
    assert fs.call("Stat", {"path": str(p)})["entry"]["metadata"] == {"k": "w"}
    listed = fs.call("ListDir", {"path": str(tmp_path)})["entries"]
    assert listed[0]["metadata"]["k"] == "w"


def raw_upload(sock_path, head, pieces):
    """Send a request head and some body pieces, then close: a cut upload."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    s.connect(sock_path)
    s.sendall(head)
    for p in pieces:
        s.sendall(p)
    return s


@pytest.mark.parametrize("kind", ["sized", "chunked", "multipart"])
def test_upload_cut_mid_body_leaves_old_file_and_no_temp(serve, tmp_path, kind):
    a = serve()
    t = tmp_path / "keep.txt"
    t.write_bytes(b"old contents")
    q = a.client.query(str(t)).encode()
    if kind == "sized":
        head = b"POST " + q + b" HTTP/1.1\r\nHost: a\r\nContent-Type: application/octet-stream\r\n" \
            b"Content-Length: 100000000\r\n\r\n"
        body = [b"n" * (1 << 20)]
    elif kind == "chunked":
        head = b"POST " + q + b" HTTP/1.1\r\nHost: a\r\nContent-Type: application/octet-stream\r\n" \
            b"Transfer-Encoding: chunked\r\n\r\n"
        body = [b"100000\r\n" + b"n" * 0x100000 + b"\r\n"]
    else:
        head = b"POST /files HTTP/1.1\r\nHost: a\r\nContent-Type: multipart/form-data; boundary=B\r\n" \
            b"Content-Length: 100000000\r\n\r\n"
        body = [b"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + str(t).encode() +
                b"\"\r\n\r\n" + b"n" * (1 << 20)]
    s = raw_upload(a.sock, head, body)
    wait_until(lambda: temp_files(tmp_path) != [], what="the upload's temporary file")
    s.close()
    wait_until(lambda: temp_files(tmp_path) == [], what="the temporary file to be removed")
    assert t.read_bytes() == b"old contents"
    assert a.client.call("Stat", {"path": str(t)})["entry"]["size"] == "12"


def test_the_agent_killed_mid_upload_leaves_no_temp_file(agent, tmp_path):
    a = Agent(agent)
    try:
        t = tmp_path / "keep"
        t.write_bytes(b"old")
        head = b"POST " + a.client.query(str(t)).encode() + b" HTTP/1.1\r\nHost: a\r\n" \
            b"Content-Type: application/octet-stream\r\nContent-Length: 10000000\r\n\r\n"
        s = raw_upload(a.sock, head, [b"n" * 100000])
        wait_until(lambda: temp_files(tmp_path) != [], what="the upload's temporary file")
        a.proc.kill()
        a.proc.wait(timeout=TIMEOUT)
        wait_until(lambda: temp_files(tmp_path) == [], what="the helper to remove its temporary file")
        assert t.read_bytes() == b"old"
        s.close()
    finally:
        a.stop()


def test_a_stuck_upload_holds_no_other_client(serve, tmp_path):
    """A helper that stops (a hung disk, here SIGSTOP) stops its own upload
    only: the loop serves everyone else, and the upload finishes after."""
    a = serve()
    t = tmp_path / "slow.bin"
    head = b"POST " + a.client.query(str(t)).encode() + b" HTTP/1.1\r\nHost: a\r\n" \
        b"Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    s = raw_upload(a.sock, head, [b"1000\r\n" + b"s" * 0x1000 + b"\r\n"])
    wait_until(lambda: temp_files(tmp_path) != [], what="the upload's temporary file")
    helpers = children(a.proc.pid)
    assert len(helpers) == 1
    os.kill(helpers[0], signal.SIGSTOP)
    try:
        data = memoryview((b"100000\r\n" + b"s" * 0x100000 + b"\r\n") * 16)
        off = 0
        s.setblocking(False)
        # Until the agent stops reading (its helper's pipe is full): the
        # socket then stays unwritable.
        while off < len(data) and select.select([], [s], [], 0.5)[1]:
            try:
                off += s.send(data[off:off + 65536])
            except BlockingIOError:
                pass
        assert off < len(data)
        (tmp_path / "other").write_bytes(b"x")
        assert a.client.call("Stat", {"path": str(tmp_path / "other")})["entry"]["size"] == "1"
        assert len(a.client.call("ListDir", {"path": str(tmp_path)})["entries"]) >= 1
        assert a.client.get_file(str(tmp_path / "other"))[2] == b"x"
    finally:
        os.kill(helpers[0], signal.SIGCONT)
    s.settimeout(TIMEOUT)
    s.sendall(data[off:])
    s.sendall(b"0\r\n\r\n")
    reply = b""
    while b"\r\n\r\n" not in reply or not reply.endswith(b"]"):
        piece = s.recv(65536)
        assert piece, reply
        reply += piece
    s.close()
    assert reply.startswith(b"HTTP/1.1 200"), reply
    assert os.path.getsize(t) == 0x1000 + 16 * 0x100000


def test_upload_to_a_full_disk_is_507(fs, tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                      stderr=subprocess.DEVNULL, timeout=TIMEOUT).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (mnt / "f").write_bytes(b"old")
        st, out = fs.post_octet(str(mnt / "f"), b"x" * (4 << 20))
        assert st == 507 and out["code"] == 507
        assert (mnt / "f").read_bytes() == b"old" and temp_files(mnt) == []
    finally:
        subprocess.run(["umount", str(mnt)], timeout=TIMEOUT)


def test_2gb_upload_and_download_in_flat_memory(serve, tmp_path):
    size = int(os.environ.get("SANDBOX_AGENT_BIG_BYTES", str(2 << 30)))
    # The sanitizer build keeps freed memory in quarantine (256 MiB by
    # default): a small one, so what is measured is the agent's (a build
    # without the sanitizer ignores the variable).
    asan = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "quarantine_size_mb=4"]))
    free = shutil.disk_usage(tmp_path).free
    if free < size + (1 << 30):
        pytest.skip("%d MiB free under %s: the upload needs %d MiB and 1 GiB to spare"
                    % (free >> 20, tmp_path.parent, size >> 20))
    a = serve(ASAN_OPTIONS=asan)
    fs = a.client
    p = tmp_path / "big.bin"
    block = os.urandom(1 << 20)
    n = size // len(block)
    up = hashlib.sha256()

    def gen():
        for i in range(n):
            chunk = struct.pack(">Q", i) + block[8:]
            up.update(chunk)
            yield chunk

    a.reset_hwm()
    base = a.vm_hwm_kib()
    st, out = fs.post_octet(str(p), gen())
    assert st == 200, out
    assert os.path.getsize(p) == n * len(block)
    down = hashlib.sha256()
    st, h, _ = fs.get_file(str(p), sink=down.update)
    assert st == 200 and int(h["Content-Length"]) == n * len(block)
    assert down.hexdigest() == up.hexdigest()
    grew = a.vm_hwm_kib() - base
    os.unlink(p)
    assert grew < 64 * 1024, "the agent's peak RSS grew by %d KiB" % grew


# ---- users -----------------------------------------------------------------------------

def test_files_and_dirs_made_as_nobody_are_nobodys(fs, pub):
    st, out = fs.post_octet(os.path.join(pub, "up/by/nobody.txt"), b"n", user="nobody")
    assert st == 200, out
    for p in ("up", "up/by", "up/by/nobody.txt"):
        assert os.stat(os.path.join(pub, p)).st_uid == NOBODY, p
    e = fs.call("MakeDir", {"path": os.path.join(pub, "d")}, user="nobody")["entry"]
    assert e["owner"] == "nobody" and os.stat(os.path.join(pub, "d")).st_uid == NOBODY
    st, out = fs.post_multipart([(os.path.join(pub, "mp"), b"x")], user="nobody")
    assert st == 200 and os.stat(os.path.join(pub, "mp")).st_uid == NOBODY
    # Replacing root's file as root keeps it root's; as nobody it is refused.
    open(os.path.join(pub, "roots"), "wb").close()
    os.chmod(os.path.join(pub, "roots"), 0o644)
    assert fs.post_octet(os.path.join(pub, "roots"), b"x")[0] == 200
    assert os.stat(os.path.join(pub, "roots")).st_uid == 0


def test_permission_denied_and_unknown_users(fs, tmp_path, pub):
    locked = os.path.join(pub, "locked")
    os.mkdir(locked, 0o700)
    open(os.path.join(locked, "secret"), "w").close()
    assert fs.code_of("ListDir", {"path": locked}, user="nobody") == "permission_denied"
    assert fs.code_of("Stat", {"path": locked + "/secret"}, user="nobody") == "permission_denied"
    assert fs.code_of("MakeDir", {"path": locked + "/x"}, user="nobody") == "permission_denied"
    assert fs.code_of("Remove", {"path": locked + "/secret"}, user="nobody") == "permission_denied"
    assert os.path.exists(os.path.join(locked, "secret"))
    st, out = fs.post_octet(locked + "/up", b"x", user="nobody")
    assert st == 403 and out["code"] == 403
    assert fs.get_file(locked + "/secret", user="nobody")[0] == 403
    assert fs.code_of("Stat", {"path": "/"}, user="no-such-user") == "unauthenticated"
    assert fs.get_file("/etc/hostname", user="no-such-user")[0] == 401
    assert fs.call("Stat", {"path": "/etc/hostname"}, user="nobody")["entry"]["owner"] == "root"


def test_default_user_from_the_environment(serve, pub):
    fs = serve(SANDBOX_AGENT_USER="nobody").client
    st, _ = fs.post_octet(os.path.join(pub, "dflt"), b"x")
    assert st == 200 and os.stat(os.path.join(pub, "dflt")).st_uid == NOBODY
    assert fs.code_of("Stat", {"path": "~"}) == "not_found"  # nobody's home is /nonexistent


def test_an_agent_not_root_cannot_switch_users(serve_as_nobody, pub):
    a = serve_as_nobody()
    assert a.client.code_of("Stat", {"path": "/"}, user="root") == "permission_denied"
    assert a.client.get_file("/etc/hostname", user="root")[0] == 403
    assert a.client.call("Stat", {"path": "/"})["entry"]["path"] == "/"


# ---- WatchDir ----------------------------------------------------------------------------

def creates(evs):
    return {e["name"] for e in evs if e["type"] == "EVENT_TYPE_CREATE"}


def test_watch_sees_mkdir_p_then_touch_in_full(fs, tmp_path):
    root = tmp_path / "w"
    root.mkdir()
    s = fs.stream("WatchDir", {"path": str(root), "recursive": True, "includeEntry": True})
    try:
        assert s.next() == {"start": {}}
        subprocess.run(["sh", "-c", "mkdir -p a/b/c && touch a/b/c/f"], cwd=root, check=True, timeout=TIMEOUT)
        evs = s.events(lambda got: {"a", "a/b", "a/b/c", "a/b/c/f"} <= creates(got))
        by = {e["name"]: e for e in evs if e["type"] == "EVENT_TYPE_CREATE"}
        assert by["a/b/c"]["entry"]["type"] == "FILE_TYPE_DIRECTORY"
        assert by["a/b/c/f"]["entry"]["path"] == str(root / "a/b/c/f")
        (root / "a/b/c/f").write_bytes(b"more")
        os.chmod(root / "a/b/c/f", 0o600)
        os.rename(root / "a/b/c/f", root / "a/g")
        os.unlink(root / "a/g")
        evs = s.events(lambda got: any(e["type"] == "EVENT_TYPE_REMOVE" and e["name"] == "a/g" for e in got))
        kinds = [(e["name"], e["type"]) for e in evs]
        assert ("a/b/c/f", "EVENT_TYPE_WRITE") in kinds and ("a/b/c/f", "EVENT_TYPE_CHMOD") in kinds
        assert ("a/b/c/f", "EVENT_TYPE_RENAME") in kinds and ("a/g", "EVENT_TYPE_CREATE") in kinds
    finally:
        s.close()


def test_watch_sees_an_upload_as_envd_does(fs, tmp_path):
    """The atomic write's temporary file is the agent's own: the watch shows
    the file written, as envd's in-place write would."""
    root = tmp_path / "up"
    root.mkdir()
    s = fs.stream("WatchDir", {"path": str(root)})
    try:
        assert s.next() == {"start": {}}
        assert fs.post_octet(str(root / "w.txt"), b"x" * 100000)[0] == 200
        assert fs.post_octet(str(root / "w.txt"), b"again")[0] == 200
        fs.call("MakeDir", {"path": str(root / "made")})
        evs = s.events(lambda got: "made" in creates(got))
        assert {e["name"] for e in evs} == {"w.txt", "made"}, evs
    finally:
        s.close()


def test_token_guards_files_too(serve, tmp_path):
    a = serve(SANDBOX_AGENT_TOKEN="s3cret")
    a.client.token = None
    (tmp_path / "f").write_bytes(b"x")
    st, _, body = a.client.get_file(str(tmp_path / "f"))
    assert st == 401
    assert a.client.post_octet(str(tmp_path / "g"), b"x")[0] == 401 and not (tmp_path / "g").exists()
    a.client.token = "s3cret"
    assert a.client.get_file(str(tmp_path / "f"))[2] == b"x"
    assert a.client.call("Stat", {"path": str(tmp_path / "f")})["entry"]["size"] == "1"


def test_watch_not_recursive_and_hostile_names(fs, tmp_path):
    root = tmp_path / "w"
    root.mkdir()
    s = fs.stream("WatchDir", {"path": str(root)})
    try:
        assert s.next() == {"start": {}}
        os.makedirs(root / "sub/deeper")
        (root / "sub/deeper/x").write_bytes(b"")
        for name in HOSTILE:
            open(os.path.join(os.fsencode(str(root)), name), "wb").close()
        evs = s.events(lambda got: {os.fsdecode(n) for n in HOSTILE} <= creates(got))
        assert "sub" in creates(evs) and not any("/" in e["name"] for e in evs)
        assert all("entry" not in e for e in evs)
    finally:
        s.close()


def test_watch_refusals_end_the_stream(fs, tmp_path):
    (tmp_path / "file").write_bytes(b"")
    for path, code in ((str(tmp_path / "file"), "invalid_argument"), (str(tmp_path / "nope"), "not_found")):
        s = fs.stream("WatchDir", {"path": path})
        assert s.next() is None and s.end["error"]["code"] == code, s.end
        s.close()


def test_watch_of_a_deleted_directory_ends_with_not_found(fs, tmp_path):
    root = tmp_path / "gone"
    root.mkdir()
    s = fs.stream("WatchDir", {"path": str(root), "recursive": True})
    try:
        assert s.next() == {"start": {}}
        os.rmdir(root)
        assert s.finish()["error"]["code"] == "not_found"
    finally:
        s.close()


def test_watch_overflow_is_reported_not_silent(serve, tmp_path):
    a = serve()
    root = tmp_path / "busy"
    root.mkdir()
    s = a.client.stream("WatchDir", {"path": str(root)})
    try:
        assert s.next() == {"start": {}}
        with open("/proc/sys/fs/inotify/max_queued_events") as f:
            limit = int(f.read())
        a.proc.send_signal(signal.SIGSTOP)
        try:
            for i in range(limit // 2 + 1000):
                os.close(os.open(root / ("f%d" % i), os.O_CREAT | os.O_WRONLY, 0o644))
        finally:
            a.proc.send_signal(signal.SIGCONT)
        assert s.finish()["error"]["code"] == "data_loss", s.end
    finally:
        s.close()


# ---- the polling watchers ------------------------------------------------------------------

def test_polling_watcher_events_overflow_marker_and_remove(fs, tmp_path):
    root = tmp_path / "pw"
    root.mkdir()
    wid = fs.call("CreateWatcher", {"path": str(root), "recursive": True})["watcherId"]
    assert wid.startswith("w")
    os.makedirs(root / "x/y")
    (root / "x/y/z").write_bytes(b"1")
    got = []
    wait_until(lambda: got.extend(fs.call("GetWatcherEvents", {"watcherId": wid}).get("events", [])) or
               {"x", "x/y", "x/y/z"} <= creates(got), what="the watcher's events")
    # Far more than it keeps: the kept ones, then one marker saying so.
    for i in range(20000):
        os.close(os.open(root / ("file-with-a-long-name-%06d" % i), os.O_CREAT | os.O_WRONLY, 0o644))
    wait_until(lambda: len(os.listdir(root)) == 20001)
    evs = []
    wait_until(lambda: evs.extend(fs.call("GetWatcherEvents", {"watcher_id": wid})["events"]) or
               any(e["type"] == "EVENT_TYPE_UNSPECIFIED" for e in evs), what="the lost-events marker")
    marker = [e for e in evs if e["type"] == "EVENT_TYPE_UNSPECIFIED"]
    assert len(marker) == 1 and marker[0]["name"] == "" and "lost" in marker[0]["error"]
    assert evs[-1] is marker[0] and len(evs) > 1000
    assert fs.call("RemoveWatcher", {"watcherId": wid}) == {}
    assert fs.code_of("GetWatcherEvents", {"watcherId": wid}) == "not_found"
    assert fs.code_of("RemoveWatcher", {"watcherId": wid}) == "not_found"
    assert fs.code_of("CreateWatcher", {"path": str(root / "file-with-a-long-name-000000")}) == "invalid_argument"


def test_polling_watcher_end_is_reported_once(fs, tmp_path):
    root = tmp_path / "pe"
    root.mkdir()
    wid = fs.call("CreateWatcher", {"path": str(root)})["watcherId"]
    os.rmdir(root)
    evs = []
    wait_until(lambda: evs.extend(fs.call("GetWatcherEvents", {"watcherId": wid})["events"]) or
               any(e["type"] == "EVENT_TYPE_UNSPECIFIED" for e in evs), what="the end marker")
    assert "gone" in evs[-1]["error"]
    assert fs.code_of("GetWatcherEvents", {"watcherId": wid}) == "failed_precondition"
    assert fs.call("RemoveWatcher", {"watcherId": wid}) == {}


# ---- what E2B's SDKs expect of uploads, metadata and symlinks ------------------------------

def kinds_of(evs, name):
    return [e["type"][len("EVENT_TYPE_"):] for e in evs if e["name"] == name]


def test_an_upload_is_a_write_to_watchers(fs, tmp_path):
    """envd writes in place (O_CREAT, chown, write): a new file is CREATE,
    CHMOD, WRITE and an overwrite CHMOD, WRITE. The agent's atomic rename of
    its temporary file shows the same, never a bare CREATE."""
    root = tmp_path / "w"
    root.mkdir()
    long = "L" * 230  # past the 200 bytes a temporary name keeps of it
    s = fs.stream("WatchDir", {"path": str(root), "includeEntry": True})
    try:
        assert s.next() == {"start": {}}
        assert fs.post_octet(str(root / "n.txt"), b"first")[0] == 200
        assert fs.post_octet(str(root / "n.txt"), b"second")[0] == 200
        assert fs.post_multipart([(str(root / long), b"x")])[0] == 200
        fs.call("MakeDir", {"path": str(root / "fence")})
        evs = s.events(lambda got: "fence" in creates(got))
        assert kinds_of(evs, "n.txt") == ["CREATE", "CHMOD", "WRITE", "CHMOD", "WRITE"], evs
        assert kinds_of(evs, long) == ["CREATE", "CHMOD", "WRITE"], evs
        assert {e["name"] for e in evs} == {"n.txt", long, "fence"}, evs
        assert all(e["entry"]["type"] == "FILE_TYPE_FILE" for e in evs if e["name"] == "n.txt"), evs
    finally:
        s.close()


def test_an_upload_is_a_write_to_recursive_and_polling_watchers(fs, tmp_path):
    """The 3 events the Python SDK's watch test counts, through
    GetWatcherEvents, and in a directory below a recursive watch."""
    root = tmp_path / "pw"
    (root / "a/b").mkdir(parents=True)
    wid = fs.call("CreateWatcher", {"path": str(root), "recursive": True})["watcherId"]
    try:
        assert fs.post_octet(str(root / "a/b/f.txt"), b"content")[0] == 200
        assert fs.post_octet(str(root / "top.txt"), b"content")[0] == 200
        fs.call("MakeDir", {"path": str(root / "fence")})
        evs = []
        wait_until(lambda: evs.extend(fs.call("GetWatcherEvents", {"watcherId": wid}).get("events", [])) or
                   "fence" in creates(evs), what="the watcher's events")
        assert kinds_of(evs, "a/b/f.txt") == ["CREATE", "CHMOD", "WRITE"], evs
        assert kinds_of(evs, "top.txt") == ["CREATE", "CHMOD", "WRITE"], evs
        assert {e["name"] for e in evs} == {"a/b/f.txt", "top.txt", "fence"}, evs
    finally:
        fs.call("RemoveWatcher", {"watcherId": wid})


def test_overwriting_without_metadata_clears_it(fs, tmp_path):
    p = tmp_path / "m.txt"
    st, out = fs.post_octet(str(p), b"one", headers={"X-Metadata-Team": "blue", "X-Metadata-k": "v"})
    assert st == 200 and out[0]["metadata"] == {"team": "blue", "k": "v"}
    st, out = fs.post_octet(str(p), b"two")
    assert st == 200 and "metadata" not in out[0], out
    assert "metadata" not in fs.call("Stat", {"path": str(p)})["entry"]
    assert "metadata" not in fs.call("ListDir", {"path": str(tmp_path)})["entries"][0]
    assert [n for n in os.listxattr(p) if n.startswith("user.e2b.")] == []
    # Multipart too, and a new set replaces the old one whole.
    fs.post_octet(str(p), b"three", headers={"X-Metadata-a": "1"})
    st, out = fs.post_multipart([(str(p), b"four")], headers={"X-Metadata-b": "2"})
    assert st == 200 and fs.call("Stat", {"path": str(p)})["entry"]["metadata"] == {"b": "2"}
    assert p.read_bytes() == b"four"


def test_metadata_a_filesystem_cannot_keep_is_400(fs, tmp_path):
    """Within envd.yaml's bounds, a value the filesystem still refuses
    (ext4 keeps about 4 KiB of attributes per file, fewer with other
    attributes there) is 400 naming it, the old file kept."""
    probe = tmp_path / "probe"
    probe.write_bytes(b"")
    try:
        os.setxattr(probe, "user.e2b.big", b"v" * 4084)
        pytest.skip("this filesystem keeps a 4084-byte attribute")
    except OSError:
        pass
    t = tmp_path / "keep"
    t.write_bytes(b"old")
    # user.e2b. + big + 4,084 bytes: envd's 4,096 exactly, more than ext4 keeps.
    st, out = fs.post_octet(str(t), b"data", headers={"X-Metadata-Big": "v" * 4084})
    assert st == 400 and "big" in out["message"] and "extended attribute" in out["message"], out
    assert t.read_bytes() == b"old" and temp_files(tmp_path) == []


def upload_with(fs, path, *headers):
    """POST /files of b"data" to path with the headers as given (repeats too)."""
    st, _, body = fs.raw("POST", fs.query(path), [("Content-Type", "application/octet-stream")] + list(headers),
                         b"data")
    return st, json.loads(body)


@pytest.fixture
def shm_dir():
    """A directory on /dev/shm: tmpfs keeps 4,096 bytes of attributes per
    file (ext4 keeps less than envd's bound counts), so a test of the
    bounds is not one of the filesystem."""
    d = tempfile.mkdtemp(dir="/dev/shm")
    try:
        os.setxattr(d, "user.e2b.probe", b"v" * 4096)
    except OSError as e:
        shutil.rmtree(d)
        pytest.skip("/dev/shm cannot keep 4 KiB of user attributes: %s" % e)
    yield d
    shutil.rmtree(d)


def test_metadata_bounds_as_envd_yaml_states_them(fs, shm_dir):
    p = os.path.join(shm_dir, "m")
    # A key of 246 bytes is kept, 247 is 400.
    st, out = upload_with(fs, p, ("X-Metadata-" + "k" * 246, "v"))
    assert st == 200 and os.getxattr(p, "user.e2b." + "k" * 246) == b"v", out
    st, out = upload_with(fs, p, ("X-Metadata-" + "k" * 247, "v"))
    assert st == 400 and "246" in out["message"], out
    # All of a file's: "user.e2b." + key + value per key, at most 4,096.
    st, out = upload_with(fs, p, ("X-Metadata-a", "v" * 2038), ("X-Metadata-b", "v" * 2038))
    assert st == 200 and len(os.getxattr(p, "user.e2b.b")) == 2038, out
    st, out = upload_with(fs, p, ("X-Metadata-a", "v" * 2038), ("X-Metadata-b", "v" * 2039))
    assert st == 400 and "4096" in out["message"], out
    # Printable US-ASCII only, in values and keys (a tab, a byte past 0x7e).
    for value in (b"a\tb", b"caf\xc3\xa9", b"\x7f"):
        st, out = upload_with(fs, p, ("X-Metadata-k", value))
        assert st == 400 and "printable" in out["message"], (value, out)
    st, out = upload_with(fs, p, ("X-Metadata-k", " spaces and ~ are fine "))
    assert st == 200 and out[0]["metadata"] == {"k": "spaces and ~ are fine"}, out
    # Keys lowercased; the first of a repeated key (in any case) is used.
    st, out = upload_with(fs, p, ("X-Metadata-Owner", "first"), ("x-metadata-OWNER", "second"),
                          ("X-METADATA-Color", "Blue"))
    assert st == 200 and out[0]["metadata"] == {"owner": "first", "color": "Blue"}, out
    assert fs.call("Stat", {"path": p})["entry"]["metadata"] == {"owner": "first", "color": "Blue"}
    # "X-Metadata-" alone names no key: skipped, as envd does.
    st, out = upload_with(fs, p, ("X-Metadata-", "x"))
    assert st == 200 and "metadata" not in out[0], out
    # Nothing refused was written: the last good upload stands.
    assert open(p, "rb").read() == b"data" and temp_files(shm_dir) == []


def uid_of(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            return next(int(line.split()[1]) for line in f if line.startswith("Uid:"))
    except OSError:
        return None


def test_a_killed_upload_helper_leaves_no_temp_file(serve, pub):
    """A process of the user may SIGKILL the helper that writes their
    upload: the agent has its temporary file removed, the old file stays,
    and the client gets an error."""
    a = serve()
    t = os.path.join(pub, "keep")
    with open(t, "wb") as f:
        f.write(b"old")
    os.chown(t, NOBODY, NOBODY)
    head = b"POST " + a.client.query(t, user="nobody").encode() + b" HTTP/1.1\r\nHost: a\r\n" \
        b"Content-Type: application/octet-stream\r\nContent-Length: 10000000\r\n\r\n"
    s = raw_upload(a.sock, head, [b"n" * 100000])
    try:
        wait_until(lambda: temp_files(pub) != [], what="the upload's temporary file")
        helpers = [p for p in children(a.proc.pid) if uid_of(p) == NOBODY]
        assert len(helpers) == 1, helpers
        os.kill(helpers[0], signal.SIGKILL)
        reply = b""
        while b"\r\n\r\n" not in reply:
            piece = s.recv(65536)
            assert piece, reply
            reply += piece
        assert reply.startswith(b"HTTP/1.1 5"), reply
        wait_until(lambda: temp_files(pub) == [], timeout=15, what="the temporary file to be removed")
        with open(t, "rb") as f:
            assert f.read() == b"old"
        # The agent goes on serving uploads.
        assert a.client.post_octet(t, b"new", user="nobody")[0] == 200
    finally:
        s.close()


def test_a_symlink_is_its_targets_type(fs, tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"data")
    os.chmod(f, 0o640)
    d = tmp_path / "d"
    (d / "inside").mkdir(parents=True)
    os.mkfifo(tmp_path / "fifo")
    for name, to in (("lf", "f"), ("ld", str(d)), ("dangling", "missing"), ("loop", "loop"), ("lfifo", "fifo")):
        os.symlink(to, tmp_path / name)

    def stat(name):
        return fs.call("Stat", {"path": str(tmp_path / name)})["entry"]

    lf = stat("lf")
    assert (lf["type"], lf["symlinkTarget"], lf["mode"]) == ("FILE_TYPE_FILE", str(f), 0o640), lf
    assert lf["permissions"] == "Lrwxrwxrwx" and lf["size"] == "1"  # the link's own
    ld = stat("ld")
    assert (ld["type"], ld["symlinkTarget"], ld["mode"]) == ("FILE_TYPE_DIRECTORY", str(d), 0o755), ld
    # What cannot be followed is UNSPECIFIED (SDKs of any age parse it), the link's own bits.
    for name in ("dangling", "loop"):
        e = stat(name)
        assert (e["type"], e["mode"], e["permissions"]) == ("FILE_TYPE_UNSPECIFIED", 0o777, "Lrwxrwxrwx"), e
    assert stat("dangling")["symlinkTarget"] == str(tmp_path / "missing")
    assert stat("lfifo")["type"] == "FILE_TYPE_UNSPECIFIED"
    # ListDir reports the same and still never walks into a link to a directory.
    listed = fs.call("ListDir", {"path": str(tmp_path), "depth": 3})["entries"]
    types = {os.path.relpath(e["path"], tmp_path): e["type"] for e in listed}
    assert types["lf"] == "FILE_TYPE_FILE" and types["ld"] == "FILE_TYPE_DIRECTORY", types
    assert "d/inside" in types and not any(p.startswith("ld/") for p in types), types
    # A watch's entry too.
    root = tmp_path / "w"
    root.mkdir()
    s = fs.stream("WatchDir", {"path": str(root), "includeEntry": True})
    try:
        assert s.next() == {"start": {}}
        os.symlink(str(f), root / "link")
        evs = s.events(lambda got: "link" in creates(got))
        e = next(e for e in evs if e["name"] == "link")["entry"]
        assert e["type"] == "FILE_TYPE_FILE" and e["symlinkTarget"] == str(f), e
    finally:
        s.close()
# ---- repeated query parameters -----------------------------------------------------------



def files_get_raw(fs, target):
    c = fs.conn()
    try:
        c.request("GET", target, headers=fs.headers())
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


@pytest.mark.parametrize("users", [("root", "nobody"), ("nobody", "root")])
def test_a_repeated_username_is_400_whichever_comes_first(fs, pub, users):
    """Which user a request acts as must not depend on the order of two
    `username` parameters (a gateway that checks one would be bypassed):
    GET and POST are refused before anything is read or written."""
    secret = os.path.join(pub, "secret")
    with open(secret, "w") as f:
        f.write("root only")
    os.chmod(secret, 0o600)
    q = "username=%s&username=%s" % users
    st, body = files_get_raw(fs, "/files?path=%s&%s" % (urllib.parse.quote(secret), q))
    assert st == 400 and json.loads(body)["code"] == 400, body
    target = os.path.join(pub, "up")
    st, out = fs.post("/files?path=%s&%s" % (urllib.parse.quote(target), q), b"x",
                      "application/octet-stream")
    assert st == 400 and out["code"] == 400
    assert not os.path.exists(target)
    assert temp_files(pub) == []


@pytest.mark.parametrize("order", [0, 1])
def test_a_repeated_path_is_400_whichever_comes_first(fs, tmp_path, order):
    (tmp_path / "a").write_bytes(b"a")
    (tmp_path / "b").write_bytes(b"b")
    paths = [str(tmp_path / "a"), str(tmp_path / "b")][::1 if order == 0 else -1]
    q = "&".join("path=" + urllib.parse.quote(p) for p in paths)
    st, body = files_get_raw(fs, "/files?" + q)
    assert st == 400 and json.loads(body)["code"] == 400, body
    st, out = fs.post("/files?" + q, b"new", "application/octet-stream")
    assert st == 400 and out["code"] == 400
    assert (tmp_path / "a").read_bytes() == b"a" and (tmp_path / "b").read_bytes() == b"b"
    # An escaped key is the same name.
    st, body = files_get_raw(fs, "/files?path=%s&%%70ath=%s" % tuple(urllib.parse.quote(p) for p in paths))
    assert st == 400
    assert fs.get_file(paths[0])[0] == 200  # once is fine
