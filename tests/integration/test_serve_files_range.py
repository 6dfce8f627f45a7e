"""`sandbox-agent serve`: ranges and conditional requests on GET /files, as
envd answers them (Go's http.ServeContent: RFC 9110 §13-14), black-box, for files the agent
sends itself (disk, tmpfs) and files the helper copies (FUSE).

Every range form (first-last, first-, -suffix, several as
multipart/byteranges, overlapping, past the end, malformed), the 416s and
their Content-Range, If-Modified-Since, If-None-Match, If-Match,
If-Unmodified-Since and If-Range with dates that match and do not, HEAD
(405, as envd's router answers), and a range asked with Accept-Encoding:
gzip (identity, as envd). Requests are written by hand (fsclient's raw) so
repeated and odd headers go as they are.
"""
import email.utils
import os
import re
import shutil
import tempfile

import pytest

from conftest import started_agents
from fsclient import Agent
from fuselib import FuseFile, Unavailable

DATA = bytes(range(256)) * 400  # 102,400 bytes, each offset's byte known


@pytest.fixture
def fs(agent):
    gen = started_agents(lambda **env: Agent(agent, **env))
    start = next(gen)
    yield start().client
    next(gen, None)


@pytest.fixture(params=["disk", "shm", "fuse"])
def data_file(request, tmp_path):
    """DATA in a file on the test's disk or on /dev/shm (tmpfs), both sent
    from the file itself (sendfile), or on FUSE, whose bytes the helper
    copies and frames (tests/lib/fuselib.py)."""
    if request.param == "fuse":
        try:
            with FuseFile(DATA, name="data.bin") as f:
                yield f.path
        except Unavailable as e:
            pytest.skip(str(e))
        return
    d = tempfile.mkdtemp(dir="/dev/shm") if request.param == "shm" else str(tmp_path)
    p = os.path.join(d, "data.bin")
    with open(p, "wb") as f:
        f.write(DATA)
    yield p
    if request.param == "shm":
        shutil.rmtree(d)


def get(fs, path, *headers):
    return fs.raw("GET", fs.query(path), list(headers))


def http_date(t):
    return email.utils.formatdate(t, usegmt=True)


def parts_of(body, ctype):
    """The parts of a multipart/byteranges body: [(Content-Range, data)],
    checking Go's framing exactly (delimiters, the two headers, the close)."""
    m = re.fullmatch(r"multipart/byteranges; boundary=([0-9a-f]{60})", ctype)
    assert m, ctype
    b = m.group(1).encode()
    assert body.startswith(b"--" + b + b"\r\n") and body.endswith(b"\r\n--" + b + b"--\r\n"), body[-80:]
    out = []
    for chunk in body[len(b) + 4:-(len(b) + 8)].split(b"\r\n--" + b + b"\r\n"):
        head, data = chunk.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        assert lines[0].startswith(b"Content-Range: bytes ") and lines[1].startswith(b"Content-Type: "), lines
        out.append((lines[0][len(b"Content-Range: "):].decode(), data))
    return out


def test_every_download_says_accept_ranges_and_last_modified(fs, data_file):
    st, h, body = get(fs, data_file)
    mtime = int(os.stat(data_file).st_mtime)
    assert st == 200 and body == DATA and h["content-length"] == str(len(DATA))
    assert h["accept-ranges"] == "bytes" and h["last-modified"] == http_date(mtime)
    assert h["content-disposition"] == "inline; filename=data.bin" and h["vary"] == "Accept-Encoding"
    st, h, _ = get(fs, data_file, ("Accept-Encoding", "gzip"))
    assert st == 200 and h["content-encoding"] == "gzip"
    assert h["accept-ranges"] == "bytes" and h["last-modified"] == http_date(mtime)


@pytest.mark.parametrize("spec,start,end", [
    ("bytes=0-99", 0, 99), ("bytes=0-0", 0, 0), ("bytes=1000-", 1000, len(DATA) - 1),
    ("bytes=-100", len(DATA) - 100, len(DATA) - 1), ("bytes=-999999", 0, len(DATA) - 1),
    ("bytes=100000-200000", 100000, len(DATA) - 1), ("bytes= 5 - 9 ", 5, 9), ("bytes=,7-8,", 7, 8),
    ("bytes=200000-,3-4", 3, 4),
])
def test_one_range_is_a_206_with_content_range(fs, data_file, spec, start, end):
    st, h, body = get(fs, data_file, ("Range", spec))
    assert st == 206, (st, body[:200])
    assert h["content-range"] == "bytes %d-%d/%d" % (start, end, len(DATA))
    assert body == DATA[start:end + 1] and h["content-length"] == str(end + 1 - start)
    assert h["content-type"] == "application/octet-stream" and h["accept-ranges"] == "bytes"


def test_several_ranges_are_multipart_byteranges(fs, data_file, tmp_path):
    st, h, body = get(fs, data_file, ("Range", "bytes=0-9, 50000-50009,-5"))
    assert st == 206 and "content-range" not in h and int(h["content-length"]) == len(body)
    assert parts_of(body, h["content-type"]) == [
        ("bytes 0-9/102400", DATA[0:10]), ("bytes 50000-50009/102400", DATA[50000:50010]),
        ("bytes 102395-102399/102400", DATA[-5:])]
    # Overlapping ranges are sent as asked, in order (their sum within the file).
    st, h, body = get(fs, data_file, ("Range", "bytes=0-5,3-8"))
    assert st == 206 and parts_of(body, h["content-type"]) == [("bytes 0-5/102400", DATA[0:6]),
                                                               ("bytes 3-8/102400", DATA[3:9])]
    # Each part's Content-Type is the file's.
    t = str(tmp_path / "t.txt")
    with open(t, "wb") as f:
        f.write(b"hello world")
    st, h, body = get(fs, t, ("Range", "bytes=0-1,6-"))
    assert st == 206 and body.count(b"Content-Type: text/plain; charset=utf-8\r\n") == 2
    assert [d for _, d in parts_of(body, h["content-type"])] == [b"he", b"world"]


def test_ranges_adding_up_past_the_file_are_ignored(fs, data_file):
    st, h, body = get(fs, data_file, ("Range", "bytes=0-60000,0-60000"))
    assert st == 200 and body == DATA and "content-range" not in h
    many = "bytes=" + ",".join("%d-%d" % (i, i) for i in range(1025))  # more than the agent answers
    st, h, body = get(fs, data_file, ("Range", many))
    assert st == 200 and body == DATA


def test_unsatisfiable_and_malformed_ranges_are_416(fs, data_file):
    for spec in ("bytes=102400-", "bytes=200000-300000", "bytes=-0", "bytes=102400-x"):
        st, h, body = get(fs, data_file, ("Range", spec))
        assert st == 416 and h["content-range"] == "bytes */102400", (spec, st, h)
        assert "last-modified" not in h and b'"code": 416' in body
    # Malformed, as Go reads it: 416 without a Content-Range.
    for spec in ("bytes=x", "items=0-1", "bytes=5", "bytes=5-3", "bytes=--5", "bytes=0-1,z", "Bytes=0-1"):
        st, h, body = get(fs, data_file, ("Range", spec))
        assert st == 416 and "content-range" not in h, (spec, st, h)
    # An empty set is no range.
    assert get(fs, data_file, ("Range", "bytes="))[0] == 200
    assert get(fs, data_file, ("Range", ""))[0] == 200


def test_an_empty_file_is_sent_whole_whatever_the_range(fs, tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    for spec in ("bytes=0-", "bytes=-5", "bytes=10-20"):
        st, h, body = get(fs, str(tmp_path / "empty"), ("Range", spec))
        assert st == 200 and body == b"" and h["content-length"] == "0", spec


def test_the_first_of_repeated_range_headers_counts(fs, data_file):
    st, h, body = get(fs, data_file, ("Range", "bytes=0-1"), ("Range", "bytes=5-9"))
    assert st == 206 and body == DATA[0:2]


def test_if_modified_since(fs, data_file, tmp_path):
    mtime = int(os.stat(data_file).st_mtime)
    for when, status in ((mtime, 304), (mtime + 60, 304), (mtime - 1, 200)):
        st, h, body = get(fs, data_file, ("If-Modified-Since", http_date(when)))
        assert st == status, (when - mtime, st)
        if st == 304:
            assert body == b"" and "content-length" not in h and "content-type" not in h
            assert h["last-modified"] == http_date(mtime) and "accept-ranges" not in h
    # The two obsolete forms of a date, and one that does not parse (ignored).
    assert get(fs, data_file, ("If-Modified-Since", email.utils.formatdate(mtime, usegmt=True)
                               .replace(",", "").replace(" GMT", "")))[0] == 200
    old = str(tmp_path / "old")
    with open(old, "wb") as f:
        f.write(b"1994")
    os.utime(old, (784111777, 784111777))
    assert get(fs, old, ("If-Modified-Since", "Sunday, 06-Nov-94 08:49:37 GMT"))[0] == 304
    assert get(fs, old, ("If-Modified-Since", "Sun Nov  6 08:49:37 1994"))[0] == 304
    assert get(fs, old, ("If-Modified-Since", "Sun Nov  6 08:49:36 1994"))[0] == 200
    assert get(fs, data_file, ("If-Modified-Since", "yesterday"))[0] == 200


def test_if_none_match_and_if_match_without_an_etag(fs, data_file):
    mtime = int(os.stat(data_file).st_mtime)
    st, h, _ = get(fs, data_file)
    assert "etag" not in h  # envd sends none
    assert get(fs, data_file, ("If-None-Match", "*"))[0] == 304
    # A tag never matches, and If-Modified-Since is then not read.
    assert get(fs, data_file, ("If-None-Match", '"abc"'), ("If-Modified-Since", http_date(mtime)))[0] == 200
    assert get(fs, data_file, ("If-Match", "*"))[0] == 200
    st, h, body = get(fs, data_file, ("If-Match", '"abc"'))
    assert st == 412 and b'"code": 412' in body
    assert get(fs, data_file, ("If-Unmodified-Since", http_date(mtime - 1)))[0] == 412
    assert get(fs, data_file, ("If-Unmodified-Since", http_date(mtime)))[0] == 200


def test_if_range(fs, data_file):
    mtime = int(os.stat(data_file).st_mtime)
    st, h, body = get(fs, data_file, ("Range", "bytes=0-9"), ("If-Range", http_date(mtime)))
    assert st == 206 and body == DATA[:10]
    for other in (http_date(mtime - 1), http_date(mtime + 1), '"etag"', "junk"):
        st, h, body = get(fs, data_file, ("Range", "bytes=0-9"), ("If-Range", other))
        assert st == 200 and body == DATA, other


def test_head_is_405_as_envds_router_answers(fs, data_file):
    st, h, _ = fs.raw("HEAD", fs.query(data_file))
    assert st == 405 and h["allow"] == "GET, POST"


def test_a_range_or_a_conditional_with_gzip_is_identity(fs, data_file):
    st, h, body = get(fs, data_file, ("Accept-Encoding", "gzip"), ("Range", "bytes=10-19"))
    assert st == 206 and "content-encoding" not in h and body == DATA[10:20]
    st, h, body = get(fs, data_file, ("Accept-Encoding", "gzip"), ("If-None-Match", '"x"'))
    assert st == 200 and "content-encoding" not in h and body == DATA
    st, h, body = get(fs, data_file, ("Accept-Encoding", "gzip"),
                      ("If-Modified-Since", http_date(int(os.stat(data_file).st_mtime))))
    assert st == 304
    # If-Match is not one of them (envd's gzip path does not read it).
    st, h, body = get(fs, data_file, ("Accept-Encoding", "gzip"), ("If-Match", '"x"'))
    assert st == 200 and h["content-encoding"] == "gzip"


def test_a_range_of_a_file_not_in_the_page_cache(fs, tmp_path):
    # Read ahead and waited for by a timer, as a whole download: the bytes
    # are the file's.
    f = tmp_path / "cold"
    data = os.urandom(1 << 20) * 12
    with open(f, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
        os.posix_fadvise(out.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    st, h, body = get(fs, str(f), ("Range", "bytes=5000000-,100-199"))
    assert st == 206
    assert [d for _, d in parts_of(body, h["content-type"])] == [data[5000000:], data[100:200]]
