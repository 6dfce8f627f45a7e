"""`sandbox-agent serve`: one resolver for a Start's cwd and every filesystem
path, black-box (README "Paths, and a Start's cwd").

The table is the resolver's unit test's (tests/unit/path_table.h): each
input goes through a Start's cwd (the PWD it is given, the directory it
runs in), through Stat and ListDir, and, below a directory, through GET
/files; all must land on the same path, or all refuse it, with and without
POST /init's defaultWorkdir. The directories the table names are made in
the home of the user the agent runs as, under a name of the test's own,
and removed after.
"""
import json
import os
import pwd
import re
import shutil
import tempfile
import urllib.parse

import pytest

from conftest import started_agents
from connectc import ServeAgent, end_of, head_bytes, output

TABLE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "path_table.h")
ROW = re.compile(r'^PATH_ROW\("((?:[^"\\]|\\.)*)", "((?:[^"\\]|\\.)*)"\)')


def table():
    """[(input, resolved)] from path_table.h (C strings: only \\\\ is escaped)."""
    rows = []
    with open(TABLE_FILE, encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line)
            if m:
                rows.append(tuple(s.replace("\\\\", "\\") for s in m.groups()))
    assert len(rows) >= 10, "path_table.h: no rows read"
    return rows


@pytest.fixture
def serve(agent):
    yield from started_agents(lambda **env: ServeAgent(agent, **env))


@pytest.fixture
def tree():
    """$H (the agent's user's home) and $D, a directory of the test's in it
    holding a and b, beside ~$D and \\$D; a file f in each, holding the
    directory's real path."""
    home = pwd.getpwuid(os.geteuid()).pw_dir
    if not os.path.isdir(home) or not os.access(home, os.W_OK):
        pytest.skip("the home of the user the agent runs as (%s) is not writable" % home)
    top = tempfile.mkdtemp(prefix="sa-paths-", dir=home)
    name = os.path.basename(top)
    made = [top, os.path.join(home, "~" + name), os.path.join(home, "\\" + name)]
    try:
        for d in made[1:]:
            os.mkdir(d)
        for d in made + [os.path.join(top, "a"), os.path.join(top, "b")]:
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "f"), "w") as f:
                f.write(os.path.realpath(d))
        yield home, name
    finally:
        for d in made:
            shutil.rmtree(d, ignore_errors=True)


TABLE = table()
IDS = [i or '""' for i, _ in TABLE]


def row(n, home, name, workdir=None):
    """Row n of the table with $H, $W and $D filled in."""
    def fill(s):
        return s.replace("$H", home).replace("$W", workdir or home).replace("$D", name)
    return tuple(fill(s) for s in TABLE[n])


def init(a, body):
    data = json.dumps(body).encode()
    c = a.conn()
    try:
        c.send(head_bytes("POST", "/init", {"X-Access-Token": a.token, "Content-Length": str(len(data)),
                                           "Content-Type": "application/json"}) + data)
        return c.response()
    finally:
        c.close()


def get_file(a, path):
    c = a.conn()
    try:
        c.send(head_bytes("GET", "/files?" + urllib.parse.urlencode({"path": path}), {"X-Access-Token": a.token}))
        return c.response()
    finally:
        c.close()


def start_out(a, cwd, cmd, *args):
    """A Start in cwd: (stdout, None), or (None, error code) when refused."""
    s = a.stream("process.Process/Start", {"process": {"cmd": cmd, "args": list(args), "cwd": cwd}})
    assert s.status == 200
    msgs, end = s.collect()
    if not msgs:
        return None, end["error"]["code"]
    assert end_of(msgs)["exitCode"] == 0, msgs
    return output(msgs).decode(), None


def check_start(a, inp, want):
    """The PWD a Start in inp is given, and where it runs."""
    if want == "!":
        assert start_out(a, inp, "/usr/bin/printenv", "PWD") == (None, "invalid_argument"), inp
        return
    assert start_out(a, inp, "/usr/bin/printenv", "PWD") == (want + "\n", None), inp
    assert start_out(a, inp, "/bin/pwd") == (os.path.realpath(want) + "\n", None), inp


def check_filesystem(a, inp, want, home):
    """Stat and ListDir of inp; GET /files of f below it."""
    r = a.unary("filesystem.Filesystem/Stat", {"path": inp})
    if want == "!":
        assert r.code == "invalid_argument", (inp, r.status, r.body)
        assert a.unary("filesystem.Filesystem/ListDir", {"path": inp}).code == "invalid_argument", inp
        assert get_file(a, inp + "/f").status == 400, inp
        return
    assert r.status == 200, (inp, r.body)
    e = r.json()["entry"]
    assert (e["path"], e["type"]) == (want, "FILE_TYPE_DIRECTORY"), inp
    r = a.unary("filesystem.Filesystem/ListDir", {"path": inp, "depth": 1})
    assert r.status == 200, (inp, r.body)
    entries = r.json()["entries"]
    assert entries and all(x["path"] == want + "/" + x["name"] for x in entries), (inp, entries[:3])
    # Below a directory of the test's (not the home itself): "" and "~"
    # joined to a name are other inputs.
    if inp and want != home:
        below = inp + ("f" if inp.endswith("/") else "/f")
        r = get_file(a, below)
        assert (r.status, r.body) == (200, os.path.realpath(want).encode()), below


@pytest.mark.parametrize("n", range(len(TABLE)), ids=IDS)
def test_start_cwd_resolves_as_the_table(serve, tree, n):
    home, name = tree
    check_start(serve(), *row(n, home, name))


@pytest.mark.parametrize("n", range(len(TABLE)), ids=IDS)
def test_filesystem_paths_resolve_as_the_table(serve, tree, n):
    home, name = tree
    check_filesystem(serve(), *row(n, home, name), home)


@pytest.mark.parametrize("n", range(len(TABLE)), ids=IDS)
def test_both_routes_take_the_default_workdir_for_none(serve, tree, n):
    """With POST /init's defaultWorkdir, "" is it on both routes; "~" and
    relative paths still start from the home."""
    home, name = tree
    a = serve()
    workdir = os.path.join(home, name, "a")
    assert init(a, {"defaultWorkdir": workdir}).status == 204
    inp, want = row(n, home, name, workdir)
    check_start(a, inp, want)
    check_filesystem(a, inp, want, home)


def test_a_missing_cwd_is_refused_before_the_start(serve, tree):
    """As envd: a cwd that is not there (as the agent sees it) or not a
    directory ends the stream with invalid_argument and no event."""
    home, name = tree
    a = serve()
    assert start_out(a, "%s/missing" % name, "/bin/true") == (None, "invalid_argument")
    assert start_out(a, "%s/a/f" % name, "/bin/true") == (None, "invalid_argument")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a process as another user")
def test_a_cwd_the_user_may_not_enter_ends_the_process(serve, tree):
    """Entering it is the child's, after it became the user: the start
    event, then an end with 126 naming the step (envd refuses the Start)."""
    home, name = tree
    a = serve()
    d = os.path.join(home, name, "a")
    os.chmod(os.path.join(home, name), 0o700)
    s, _ = a.start("/bin/pwd", cwd=d, user="nobody")
    end = end_of(s.collect()[0])
    assert end["exitCode"] == 126 and end["error"] == "cannot enter the working directory: Permission denied", end
    s, _ = a.start("/bin/pwd", cwd=d)  # root may
    msgs, _ = s.collect()
    assert output(msgs) == os.path.realpath(d).encode() + b"\n"
