"""`sandbox-agent serve`: what a watch shows a user who is not root.

The watches are the agent's (root's), but a recursive WatchDir or polling
watcher acts for the request's user: a directory below that the user may
not list (read and search) is never watched, listed or looked into, so
nothing inside it is reported, while its own CREATE in a directory the user
may list is (`ls -la` shows it too). A readable directory beside it is
still watched in full (a watch that saw nothing would pass otherwise), a
permission changed later is followed, and root still sees everything. An
entry (includeEntry) holds only what the user could see: the same as Stat
as that user says. What the user may list but the agent cannot watch is
still a hole, never silent; the watched directory itself must be
searchable for the agent to look below it.

Every wait is for an event that must come; that nothing else came is known
from order: the kernel queues a watch's events in the order they happen, so
once the event of a later change has arrived every earlier one would have.
"""
import ctypes
import os
import shutil
import struct
import tempfile

import pytest

from conftest import started_agents
from fsclient import Agent, wait_until

NOBODY = 65534


@pytest.fixture
def serve(agent):
    yield from started_agents(lambda **env: Agent(agent, **env))


@pytest.fixture
def serve_as_nobody(agent_anyone):
    yield from started_agents(lambda **env: Agent(agent_anyone, preexec=as_nobody, **env))


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


@pytest.fixture
def serve_without_dac(agent):
    """Agents run as root but without the capabilities that let root open
    any directory (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH)."""
    if not int(status_field("CapEff"), 16) & (1 << CAP_SETPCAP):
        pytest.skip("cannot drop capabilities here (no CAP_SETPCAP)")
    yield from started_agents(lambda **env: Agent(agent, preexec=without_dac, **env))


CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_SETPCAP = 1, 2, 8
PR_CAPBSET_DROP = 24


def status_field(name):
    with open("/proc/self/status") as f:
        return [line.split()[1] for line in f if line.startswith(name + ":")][0]


def without_dac():
    """Out of the bounding set, so the exec'd agent (root) never has them."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.fixture
def pub():
    """A directory anyone may use (the tests' tmp_path is root's only)."""
    d = tempfile.mkdtemp(prefix="sbx-pub-", dir="/tmp")
    os.chmod(d, 0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def home(pub):
    """nobody's own directory to watch; root makes things in it."""
    d = os.path.join(pub, "w")
    os.mkdir(d, 0o755)
    os.chown(d, NOBODY, NOBODY)
    return d


def write(path, data=b"x", mode=0o644):
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def creates(evs):
    return {e["name"] for e in evs if e["type"] == "EVENT_TYPE_CREATE"}


class Watch:
    """One recursive watch, a WatchDir stream or a polling watcher, read
    the same way: events(until) gathers events until until(all so far)."""

    def __init__(self, fs, kind, path, user, include_entry=False):
        self.fs, self.kind, self.user, self.got = fs, kind, user, []
        msg = {"path": path, "recursive": True, "includeEntry": include_entry}
        if kind == "stream":
            self.s = fs.stream("WatchDir", msg, user=user)
            assert self.s.next() == {"start": {}}
        else:
            self.wid = fs.call("CreateWatcher", msg, user=user)["watcherId"]

    def events(self, until):
        if self.kind == "stream":
            self.got.extend(self.s.events(lambda got: until(self.got + got)))
        else:
            def more():
                evs = self.fs.call("GetWatcherEvents", {"watcherId": self.wid}, user=self.user)["events"]
                assert not any(e["type"] == "EVENT_TYPE_UNSPECIFIED" for e in evs), evs
                self.got.extend(evs)
                return until(self.got)
            wait_until(more, what="the watcher's events; so far %r" % self.got)
        return self.got

    def close(self):
        if self.kind == "stream":
            self.s.close()
        else:
            assert self.fs.call("RemoveWatcher", {"watcherId": self.wid}, user=self.user) == {}


@pytest.fixture(params=["stream", "polling"])
def kind(request):
    return request.param


def inside(evs, d):
    return sorted(e["name"] for e in evs if e["name"].startswith(d + "/"))


def make_secret_and_open(home):
    """root's 0700 secret/ with files and a subdirectory, then a readable
    open/ beside it with the same. Returns the names under open/."""
    os.mkdir(os.path.join(home, "secret"), 0o700)
    write(os.path.join(home, "secret", "f1"), b"s3cret")
    os.mkdir(os.path.join(home, "secret", "deep"), 0o755)
    write(os.path.join(home, "secret", "deep", "g"))
    os.mkdir(os.path.join(home, "open"), 0o755)
    write(os.path.join(home, "open", "f"))
    os.mkdir(os.path.join(home, "open", "sub"), 0o755)
    write(os.path.join(home, "open", "sub", "h"))
    return {"open", "open/f", "open/sub", "open/sub/h"}


@pytest.mark.parametrize("include_entry", [False, True])
def test_a_directory_the_user_may_not_list_is_not_watched(serve, home, kind, include_entry):
    fs = serve().client
    w = Watch(fs, kind, home, "nobody", include_entry)
    try:
        want = make_secret_and_open(home)
        evs = w.events(lambda got: want <= creates(got))
        # Changed again inside secret/, then a last change outside it.
        write(os.path.join(home, "secret", "f1"), b"more")
        os.chmod(os.path.join(home, "secret", "f1"), 0o600)
        write(os.path.join(home, "open", "last"))
        evs = w.events(lambda got: "open/last" in creates(got))
        assert "secret" in creates(evs), evs
        assert inside(evs, "secret") == [], evs
        secret = [e for e in evs if e["name"] == "secret"]
        if include_entry:
            # Its own entry, as the user's `ls -la` of the parent shows it.
            e = secret[0]["entry"]
            assert e["type"] == "FILE_TYPE_DIRECTORY" and e["owner"] == "root" and e["mode"] == 0o700
            f = [x for x in evs if x["name"] == "open/sub/h"][0]["entry"]
            assert f["path"] == os.path.join(home, "open/sub/h") and f["type"] == "FILE_TYPE_FILE"
        else:
            assert all("entry" not in e for e in evs)
    finally:
        w.close()


def test_root_still_sees_everything(serve, home, kind):
    fs = serve().client
    w = Watch(fs, kind, home, "root", include_entry=True)
    try:
        want = make_secret_and_open(home) | {"secret", "secret/f1", "secret/deep", "secret/deep/g"}
        evs = w.events(lambda got: want <= creates(got))
        f1 = [e for e in evs if e["name"] == "secret/f1"][0]["entry"]
        assert f1["path"] == os.path.join(home, "secret/f1") and f1["owner"] == "root"
    finally:
        w.close()


def test_the_watched_directory_must_be_searchable_to_look_below_it(serve, pub):
    """Readable but not searchable: its names may be watched, not what is
    below them or their entries."""
    d = os.path.join(pub, "names-only")
    os.mkdir(d)
    os.chmod(d, 0o744)  # root's
    fs = serve().client
    for extra in ({"recursive": True}, {"includeEntry": True}):
        assert fs.code_of("CreateWatcher", dict(path=d, **extra), user="nobody") == "permission_denied"
        s = fs.stream("WatchDir", dict(path=d, **extra), user="nobody")
        assert s.next() is None and s.end["error"]["code"] == "permission_denied", s.end
        s.close()
    wid = fs.call("CreateWatcher", {"path": d}, user="nobody")["watcherId"]
    assert fs.call("RemoveWatcher", {"watcherId": wid}) == {}


def test_an_agent_not_root_leaves_out_what_it_may_not_list(serve_as_nobody, pub, kind):
    """The same rule whoever the agent runs as: a directory its user may not
    list is left out, not a hole that ends the watch."""
    root = os.path.join(pub, "w")
    os.mkdir(root)
    os.chmod(root, 0o777)
    os.mkdir(os.path.join(root, "closed"), 0o700)  # root's
    write(os.path.join(root, "closed", "x"))
    w = Watch(serve_as_nobody().client, kind, root, None)
    try:
        os.mkdir(os.path.join(root, "closed2"), 0o700)
        write(os.path.join(root, "closed2", "y"))
        want = make_secret_and_open(root) | {"closed2"}
        evs = w.events(lambda got: want <= creates(got))
        assert [e for e in evs if e["name"].startswith("closed/") or e["name"].startswith("closed2/")
                or e["name"].startswith("secret/")] == [], evs
    finally:
        w.close()


def test_a_permission_changed_later_is_followed(serve, home, kind):
    """Closed after it was watched: dropped, nothing more from inside.
    Opened again: watched again, what it holds reported as CREATE."""
    later = os.path.join(home, "later")
    os.mkdir(later, 0o755)
    write(os.path.join(later, "a"))
    fs = serve().client
    w = Watch(fs, kind, home, "nobody")
    try:
        write(os.path.join(later, "b"))
        w.events(lambda got: "later/b" in creates(got))
        os.chmod(later, 0o700)
        write(os.path.join(later, "c"))
        write(os.path.join(later, "a"), b"changed")
        write(os.path.join(home, "sync1"))
        evs = w.events(lambda got: "sync1" in creates(got))
        assert set(inside(evs, "later")) == {"later/b"}, evs
        os.chmod(later, 0o750)
        os.chown(later, 0, NOBODY)  # readable again, through the group
        write(os.path.join(later, "d"))
        evs = w.events(lambda got: {"later/a", "later/c", "later/d"} <= creates(got))
        assert "later/b" in creates(evs[evs.index([e for e in evs if e["name"] == "sync1"][0]):])
    finally:
        w.close()


def acl(entries):
    """A system.posix_acl_access value: [(tag, perm, id)]."""
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, i) for t, p, i in entries)


USER_OBJ, USER, GROUP_OBJ, MASK, OTHER = 0x01, 0x02, 0x04, 0x10, 0x20
ANY = 0xFFFFFFFF


def test_posix_acls_are_read_as_the_kernel_reads_them(serve, home, pub, kind):
    """A named-user entry admits nobody to a 0750 root directory; another
    refuses nobody what the others' bits grant."""
    stage = tempfile.mkdtemp(dir=pub)
    made = {}
    for name, entries in (("acl_in", [(USER_OBJ, 7, ANY), (USER, 5, NOBODY), (GROUP_OBJ, 5, ANY), (MASK, 5, ANY),
                                      (OTHER, 0, ANY)]),
                          ("acl_out", [(USER_OBJ, 7, ANY), (USER, 0, NOBODY), (GROUP_OBJ, 5, ANY), (MASK, 5, ANY),
                                       (OTHER, 5, ANY)])):
        d = os.path.join(stage, name)
        os.mkdir(d)
        write(os.path.join(d, "f"))
        try:
            os.setxattr(d, "system.posix_acl_access", acl(entries))
        except OSError as e:
            pytest.skip("no POSIX ACLs here: %s" % e)
        made[name] = d
    fs = serve().client
    w = Watch(fs, kind, home, "nobody")
    try:
        for name, d in made.items():
            os.rename(d, os.path.join(home, name))
        write(os.path.join(home, "sync"))
        evs = w.events(lambda got: {"acl_in", "acl_out", "acl_in/f", "sync"} <= creates(got))
        assert inside(evs, "acl_out") == [], evs
    finally:
        w.close()
    # The kernel agrees: Stat as nobody.
    assert fs.call("Stat", {"path": os.path.join(home, "acl_in/f")}, user="nobody")["entry"]["size"] == "1"
    assert fs.code_of("Stat", {"path": os.path.join(home, "acl_out/f")}, user="nobody") == "permission_denied"


@pytest.mark.parametrize("user", ["nobody", "root"])
def test_an_entry_holds_only_what_the_user_could_see(serve, home, pub, user):
    """Metadata of a file the user may not read, a symlink resolved through
    a directory they may not search: left out, as Stat as the user leaves
    them out; root's watch shows them."""
    os.mkdir(os.path.join(home, "secret"), 0o700)
    os.symlink("/etc/hostname", os.path.join(home, "secret", "hop"))
    # Made aside and moved in whole: each entry is complete when its event is read.
    stage = tempfile.mkdtemp(dir=pub)
    for name, mode in (("private", 0o600), ("shared", 0o644)):
        write(os.path.join(stage, name), b"data", mode)
        os.setxattr(os.path.join(stage, name), "user.e2b.k", b"v")
    os.symlink("secret/hop", os.path.join(stage, "peek"))
    os.symlink("shared", os.path.join(stage, "fine"))
    names = ["private", "shared", "peek", "fine"]
    fs = serve().client
    s = fs.stream("WatchDir", {"path": home, "includeEntry": True}, user=user)
    try:
        assert s.next() == {"start": {}}
        for n in names:
            os.rename(os.path.join(stage, n), os.path.join(home, n))
        evs = s.events(lambda got: set(names) <= creates(got))
    finally:
        s.close()
    by = {e["name"]: e["entry"] for e in evs if e["type"] == "EVENT_TYPE_CREATE"}
    for n in names:
        st = fs.call("Stat", {"path": os.path.join(home, n)}, user=user)["entry"]
        for k in ("symlinkTarget", "mode", "metadata"):
            assert by[n].get(k) == st.get(k), (n, k, by[n], st)
    if user == "nobody":
        assert "metadata" not in by["private"] and by["shared"]["metadata"] == {"k": "v"}
        # Out of the user's reach: as a dangling link, its own bits.
        peek = by["peek"]
        assert (peek["symlinkTarget"], peek["type"], peek["mode"]) == (
            os.path.join(home, "secret", "hop"), "FILE_TYPE_UNSPECIFIED", 0o777), peek
        assert by["fine"]["symlinkTarget"] == os.path.join(home, "shared") and by["fine"]["mode"] == 0o644
    else:
        assert by["private"]["metadata"] == {"k": "v"}
        assert by["peek"]["symlinkTarget"] == os.path.realpath("/etc/hostname")


def test_a_directory_the_agent_cannot_open_is_still_a_hole(serve_without_dac, pub, kind):
    """What the user may list but the agent cannot watch is not left out
    silently: the stream ends naming it; a polling watcher keeps a marker
    naming it and goes on."""
    root = os.path.join(pub, "w")
    os.mkdir(root)
    os.chmod(root, 0o777)
    os.mkdir(os.path.join(root, "closed"), 0o700)
    os.chown(os.path.join(root, "closed"), NOBODY, NOBODY)  # root without DAC capabilities cannot open it
    w = Watch(serve_without_dac().client, kind, root, "root")
    try:
        if kind == "stream":
            end = w.s.finish()
            assert end["error"]["code"] == "internal" and "closed" in end["error"]["message"], end
        else:
            evs = w.fs.call("GetWatcherEvents", {"watcherId": w.wid})["events"]
            assert [(e["type"], e["name"]) for e in evs] == [("EVENT_TYPE_UNSPECIFIED", "closed")], evs
            assert "cannot be watched" in evs[0]["error"]
            write(os.path.join(root, "after"))
            w.events(lambda got: "after" in creates(got))
    finally:
        w.close()


# ---- changes made through the API, read at once -----------------------------
# E2B's Python SDK reads a polling watcher right after files.write returns,
# with no wait (its test_watch: exactly CREATE, CHMOD, WRITE); a directory
# MakeDir made must be watched before the next call writes into it. So the
# answer to a change comes after the watches have taken in its events, and
# GetWatcherEvents takes in what the kernel queued before it answers.

def types_of(evs, name):
    return [e["type"][len("EVENT_TYPE_"):] for e in evs if e["name"] == name]


def test_a_change_through_the_api_is_in_the_next_get_watcher_events(serve, pub):
    fs = serve().client
    for i in range(20):  # every round must hold: the old order was a race
        d = os.path.join(pub, "api%d" % i)
        os.mkdir(d)
        wid = fs.call("CreateWatcher", {"path": d, "recursive": True})["watcherId"]
        try:
            assert fs.post_octet(os.path.join(d, "f.txt"), b"data")[0] == 200
            evs = fs.call("GetWatcherEvents", {"watcherId": wid})["events"]
            assert types_of(evs, "f.txt") == ["CREATE", "CHMOD", "WRITE"], (i, evs)
            fs.call("MakeDir", {"path": os.path.join(d, "sub")})
            assert fs.post_octet(os.path.join(d, "sub", "g.txt"), b"more")[0] == 200
            evs = fs.call("GetWatcherEvents", {"watcherId": wid})["events"]
            assert types_of(evs, "sub") == ["CREATE"], (i, evs)
            assert types_of(evs, "sub/g.txt")[-1:] == ["WRITE"], (i, evs)
        finally:
            fs.call("RemoveWatcher", {"watcherId": wid})
