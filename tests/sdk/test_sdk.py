"""The published E2B JS SDK (npm `e2b`, pinned in tests/sdk/package-lock.json)
driving `sandbox-agent serve`, unchanged, in its debug mode.

Each test starts the agent on a free loopback port (as an ordinary process,
and for the process tests also as PID 1 of a fresh PID namespace), runs one
scenario of a node script (tests/sdk/*.mjs) with E2B_SANDBOX_URL pointing at it
(the SDK's own override of the base URL), and asserts on the one JSON line the
script prints. Every node run and every wait is bounded.

The SDK comes from SANDBOX_AGENT_SDK_DIR (default build/sdk, where `make test`
installs it with `npm ci`). Without node >= 20.18.1 (the SDK's own engines
field) every test is skipped with that reason; with node but no installed SDK
they fail.

Run alone: SANDBOX_AGENT=build/sandbox-agent /usr/bin/python3 -m pytest -q -rs tests/sdk
"""
import os
import re

import pytest

from sdklib import AGENT, SKIP, TOKEN, USER, USER_HOME, Serve, _finish, sdk

pytestmark = pytest.mark.skipif(SKIP is not None, reason="E2B SDK suite skipped: %s" % SKIP)


# ---- commands (issue 8) ------------------------------------------------------

def test_run_foreground(serve):
    r = sdk(serve, "commands.mjs", "foreground")
    assert (r["stdout"], r["stderr"], r["exitCode"]) == ("out\n", "err\n", 0)


def test_run_nonzero_is_command_exit_error(serve):
    r = sdk(serve, "commands.mjs", "nonzero")
    assert r is not None, "a non-zero exit must reject with CommandExitError"
    assert r["isCommandExitError"] is True
    assert (r["exitCode"], r["stdout"], r["stderr"]) == (3, "partial\n", "oops\n")


def test_run_streaming_callbacks(serve):
    r = sdk(serve, "commands.mjs", "streaming_callbacks")
    assert r["out"] == r["stdout"] == "o1\no2\no3\n"
    assert r["err"] == r["stderr"] == "e1\ne2\ne3\n"


def test_run_big_output_utf8(serve):
    r = sdk(serve, "commands.mjs", "big_output")
    assert r["lines"] == 200000 and r["allSame"] is True, r
    assert r["length"] == 200000 * len("é€𝄞 line\n".encode("utf-16-le")) // 2


def test_run_envs(serve):
    assert sdk(serve, "commands.mjs", "envs")["stdout"] == "bar|two words|unset\n"


def test_run_cwd(serve, work):
    r = sdk(serve, "commands.mjs", "cwd", work=work)
    assert r == {"given": work + "\n", "root_default": "/root\n"}


def test_run_user(serve):
    r = sdk(serve, "commands.mjs", "user")
    assert r["root"] == "root\n0\n/root\n"
    assert r["nobody"] == "nobody\n65534\n"
    assert r["dflt"] == USER + "\n"   # SANDBOX_AGENT_USER when none is given


def test_run_without_stdin_reads_eof(serve):
    assert sdk(serve, "commands.mjs", "no_stdin")["stdout"] == "eof\n"


def test_stdin_send_and_close(serve):
    r = sdk(serve, "commands.mjs", "stdin")
    assert (r["stdout"], r["exitCode"]) == ("hello wörld\n [eof]\n", 0)


def test_background_wait(serve):
    r = sdk(serve, "commands.mjs", "background_wait")
    assert r["pidIsNumber"] is True and r["runningExitCode"] == "undefined"
    assert (r["stdout"], r["exitCode"]) == ("started\ngot go\n", 0)


def test_background_kill(serve):
    r = sdk(serve, "commands.mjs", "background_kill")
    assert r["killed"] is True and r["gone"] is True
    assert r["err"]["name"] == "CommandExitError" and r["err"]["exitCode"] == -1, r["err"]
    assert "kill" in r["err"]["message"].lower(), r["err"]   # envd: "signal: killed"
    assert r["killAgain"] is False and r["killUnknown"] is False


def test_list(serve, work):
    r = sdk(serve, "commands.mjs", "list", work=work)
    m = r["mine"]
    assert m is not None, "a running background command must be listed"
    assert m["cmd"] == "/bin/bash" and m["args"] == ["-l", "-c", "echo ready; exec sleep 30"]
    assert m["cwd"] == work and m["envs"].get("TAG") == "listed"


def test_connect_reattaches(serve):
    r = sdk(serve, "commands.mjs", "connect")
    assert r["samePid"] is True
    assert r["later"] == "second x\n"
    assert r["err"]["name"] == "CommandExitError" and r["err"]["exitCode"] == 7, r["err"]
    assert r["firstAfterDisconnect"] == "first\n"


def test_connect_unknown_pid(serve):
    r = sdk(serve, "commands.mjs", "connect_unknown")
    assert r is not None and r["name"] == "NotFoundError", r


def test_timeout_kills_the_command(serve):
    r = sdk(serve, "commands.mjs", "timeout")
    assert r["err"]["name"] == "TimeoutError", r["err"]
    assert r["gone"] is True


def test_timeout_is_timeout_error_and_takes_what_it_started(serve, work):
    # Connect-Timeout-Ms on Start ends in deadline_exceeded, never an end
    # event: TimeoutError, whoever sees the deadline first; and the command
    # and a daemon it started are stopped (README: what a process started
    # goes with it).
    r = sdk(serve, "commands.mjs", "timeout_gone", work=work)
    assert r["err"] is not None and r["err"]["name"] == "TimeoutError", r["err"]
    assert 1500 <= r["ms"] < 15000, r
    assert r["gone"] is True
    assert r["derr"] is not None and r["derr"]["name"] == "TimeoutError", r["derr"]
    assert r["daemonGone"] is True


def test_concurrent_commands(serve):
    assert sdk(serve, "commands.mjs", "concurrent") == 40


def test_the_sdk_runs_as_an_ordinary_user_with_a_clean_home(serve1, sdk_dir):
    r = sdk(serve1, "commands.mjs", "client")
    assert r["uid"] == sdk_dir.pw.pw_uid != 0
    assert r["home"] == sdk_dir.home and r["homeEntries"] == [], r


def test_pid1_is_the_agent(tmp_path, sdk_dir):
    if os.geteuid() != 0:
        pytest.skip("PID 1 in a fresh PID namespace needs root (unshare --pid)")
    a = Serve(sdk_dir, tmp_path, True)
    try:
        # /proc/1/comm: the agent's file name, cut to 15 bytes by the kernel
        assert sdk(a, "commands.mjs", "pid1")["stdout"] == os.path.basename(AGENT)[:15] + "\n"
    finally:
        _finish([a])


# ---- the token (README "use it from the E2B SDK") ---------------------------

def test_token_plain_debug_sdk_is_refused(tmp_path, sdk_dir):
    a = Serve(sdk_dir, tmp_path, False, SANDBOX_AGENT_TOKEN=TOKEN)
    try:
        r = sdk(a, "commands.mjs", "foreground", expect_ok=False)
        assert r["ok"] is False and r["error"]["name"] == "AuthenticationError", r
    finally:
        _finish([a])


def test_token_subclass_sends_it(tmp_path, sdk_dir, work):
    a = Serve(sdk_dir, tmp_path, False, SANDBOX_AGENT_TOKEN=TOKEN)
    try:
        r = sdk(a, "commands.mjs", "foreground", token=TOKEN)
        assert (r["stdout"], r["exitCode"]) == ("out\n", 0)
        assert sdk(a, "files.mjs", "text", work=work, token=TOKEN)["read"] == "hello wörld\n"
        r = sdk(a, "commands.mjs", "foreground", token=TOKEN + "x", expect_ok=False)
        assert r["error"]["name"] == "AuthenticationError", r
    finally:
        _finish([a])


# ---- signed /files URLs (README "Signed URLs") ---------------------------------

def test_signed_urls_fetched_without_the_token(tmp_path, sdk_dir, work):
    """downloadUrl and uploadUrl of the debug-mode sandbox holding the token,
    fetched with no header as a browser would: each grants its path, user
    and operation only, until its expiration, and on /files only."""
    a = Serve(sdk_dir, tmp_path, False, SANDBOX_AGENT_TOKEN=TOKEN)
    try:
        r = sdk(a, "signed.mjs", "urls", work=work, token=TOKEN)
    finally:
        _finish([a])
    assert "signature=v1_" in r["url"] and TOKEN not in r["url"], r["url"]
    ok = {"status": 200, "body": "signed bytes\n"}
    assert r["read"] == r["readWithExpiration"] == r["asUser"] == ok, r
    assert r["stillThere"] == "signed bytes\n"

    def refused(case, message):
        assert r[case] == {"status": 401, "body": {"code": 401, "message": message}}, (case, r[case])
    refused("expired", "signature is already expired")
    refused("noSignature", "missing signature query parameter")
    for case in ("tampered", "anotherUser", "defaultUserForNamed", "anotherPath", "samePathOtherSpelling",
                 "laterExpiration", "writeSignatureToRead", "readSignatureToWrite", "uploadExpired"):
        refused(case, "invalid signature" if case != "uploadExpired" else "signature is already expired")
    refused("wrongHeaderWins", "access token present in header but does not match")
    assert r["upload"]["status"] == 200 and r["uploaded"] == "uploaded\n", r["upload"]
    assert r["upload"]["body"][0]["path"] == os.path.join(work, "up", "new.txt"), r["upload"]
    assert r["lateExists"] is False
    # Not another route: compose keeps envd's numeric code, an RPC Connect's.
    assert r["compose"]["status"] == 401 and r["compose"]["body"]["code"] == 401, r["compose"]
    assert r["rpc"]["status"] == 401 and r["rpc"]["body"]["code"] == "unauthenticated", r["rpc"]
    assert TOKEN not in a.stderr()


# ---- pty (issue 8) ----------------------------------------------------------

def test_pty_create(serve):
    r = sdk(serve, "pty.mjs", "create")
    assert r["size"] == [24, 80] and r["exitCode"] == 0
    assert r["hasTty"] is True and r["term"] is True


def test_pty_resize(serve):
    r = sdk(serve, "pty.mjs", "resize")
    assert r == {"before": [24, 80], "after": [30, 100]}


def test_pty_envs_cwd(serve, work):
    assert sdk(serve, "pty.mjs", "envs_cwd", work=work) == {"x": "one", "cwd": work}


def test_pty_kill(serve):
    r = sdk(serve, "pty.mjs", "kill")
    assert r["killed"] is True and r["again"] is False
    assert r["err"]["name"] == "CommandExitError" and r["err"]["exitCode"] == -1, r["err"]


def test_pty_reconnect(serve):
    r = sdk(serve, "pty.mjs", "reconnect")
    assert r == {"samePid": True, "exitCode": 0, "oneSawMark2": False}


def test_pty_listed(serve):
    m = sdk(serve, "pty.mjs", "listed")
    assert m is not None and m["cmd"] == "/bin/bash" and m["args"] == ["-i", "-l"]
    assert m["envs"].get("TERM") == "xterm-256color"


# ---- files (issue 9) --------------------------------------------------------

def _entry_ok(e, name, path, kind):
    assert (e["name"], e["path"], e["type"]) == (name, path, kind), e
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", e["modifiedTime"] or ""), e
    assert e["owner"] and e["group"] and e["permissions"], e


def test_files_text(serve1, work):
    r = sdk(serve1, "files.mjs", "text", work=work)
    p = os.path.join(work, "new", "dir", "a.txt")
    assert r["read"] == r["onDisk"] == "hello wörld\n"
    assert r["write"]["path"] == p and r["write"]["name"] == "a.txt" and r["write"]["type"] == "file"


def test_files_bytes(serve1, work):
    assert sdk(serve1, "files.mjs", "bytes", work=work) == {
        "smallSame": True, "bigSame": True, "streamSame": True, "diskSame": True}


def test_files_empty(serve1, work):
    assert sdk(serve1, "files.mjs", "empty", work=work) == {"text": "", "bytes": 0, "size": 0}


def test_files_many(serve1, work):
    r = sdk(serve1, "files.mjs", "many", work=work)
    assert [w["path"] for w in r["write"]] == [os.path.join(work, "m", n) for n in
                                               ("one.txt", "sub/two.bin", "three.txt")]
    assert r["same"] is True


def test_files_octet_stream_gzip_readable_stream(serve1, work):
    r = sdk(serve1, "files.mjs", "octet_gzip_stream", work=work)
    assert r["paths"] == [os.path.join(work, n) for n in ("octet.bin", "gzip.bin", "stream.bin")]
    assert r["same"] == [True, True, True] and r["gzipReadSame"] is True


def test_files_metadata(serve1, work):
    r = sdk(serve1, "files.mjs", "metadata", work=work)
    want = {"owner": "team-a", "purpose": "test"}
    assert r["write"]["metadata"] == want and r["info"]["metadata"] == want


def test_files_overwrite_without_metadata_clears_it(serve1, work):
    r = sdk(serve1, "files.mjs", "metadata_cleared", work=work)
    assert r == {"first": {"owner": "team-a"}, "second": None, "info": None}, r


def test_files_symlink_is_its_targets_type(serve1, work):
    r = sdk(serve1, "files.mjs", "symlink_info", work=work)
    d = os.path.join(work, "links")
    assert r["lf"] == {"type": "file", "symlinkTarget": os.path.join(d, "f"), "mode": 0o644}, r
    assert r["ld"]["type"] == "dir" and r["ld"]["symlinkTarget"] == os.path.join(d, "sub"), r
    # What cannot be followed is UNSPECIFIED: no type in the SDK, left out of list().
    assert r["dangling"]["type"] is None and r["dangling"]["mode"] == 0o777, r
    assert r["listed"] == ["f:file", "ld:dir", "lf:file", "sub:dir"], r


def test_files_relative_path_is_home(serve1):
    r = sdk(serve1, "files.mjs", "relative")
    assert r["read"] == "rel" and r["onDisk"] is True
    assert r["write"]["path"].startswith(USER_HOME + "/sa-sdk-rel-")


def test_files_as_user(serve1, work):
    r = sdk(serve1, "files.mjs", "as_user", work=work)
    assert r["owner"] == "nobody" and r["uid"] == 65534
    assert r["denied"] is not None, "nobody must not create a directory in another user's 0755 directory"


def test_files_read_missing(serve1, work):
    r = sdk(serve1, "files.mjs", "read_missing", work=work)
    assert r["there"] == "here"
    assert r["missing"] is not None and r["missing"]["name"] == "FileNotFoundError", r


def test_files_list_depth(serve1, work):
    r = sdk(serve1, "files.mjs", "list", work=work)
    # link -> f1: a symlink is its target's type, as envd reports it.
    assert r["depth1"] == ["f1:file", "link:file", "sub:dir"]
    assert r["depth2"] == ["f1:file", "link:file", "sub/deeper:dir", "sub/f2:file", "sub:dir"]
    assert r["depth3"] == ["f1:file", "link:file", "sub/deeper/f3:file", "sub/deeper:dir",
                           "sub/f2:file", "sub:dir"]
    d = os.path.join(work, "tree")
    _entry_ok(r["f1"], "f1", os.path.join(d, "f1"), "file")
    assert r["f1"]["size"] == 5 and r["f1"]["mode"] == 0o644 and r["f1"]["permissions"] == "-rw-r--r--"
    assert r["link"]["symlinkTarget"] == os.path.join(d, "f1"), r["link"]
    assert r["missing"]["name"] == "FileNotFoundError", r["missing"]
    assert r["badDepth"]["name"] == "InvalidArgumentError"   # refused by the SDK itself


def test_files_exists_get_info(serve1, work):
    r = sdk(serve1, "files.mjs", "exists_info", work=work)
    assert (r["file"], r["dir"], r["missing"]) == (True, True, False)
    _entry_ok(r["info"], "e.txt", os.path.join(work, "e.txt"), "file")
    assert r["info"]["size"] == 4 and r["info"]["mode"] == 0o640
    assert (r["info"]["owner"], r["info"]["group"]) == (USER, USER)   # node made it
    assert r["info"]["permissions"] == "-rw-r-----"
    _entry_ok(r["dirInfo"], os.path.basename(work), work, "dir")
    assert r["dirInfo"]["mode"] == 0o755
    assert r["infoMissing"]["name"] == "FileNotFoundError", r["infoMissing"]


def test_files_make_dir(serve1, work):
    r = sdk(serve1, "files.mjs", "make_dir", work=work)
    assert (r["first"], r["second"], r["isDir"]) == (True, False, True)
    assert r["mode"] == 0o755
    assert r["onFile"] is not None, "makeDir over a regular file must fail"


def test_files_rename(serve1, work):
    r = sdk(serve1, "files.mjs", "rename", work=work)
    _entry_ok(r["entry"], "new.txt", os.path.join(work, "moved", "new.txt"), "file")
    assert r["oldGone"] is True and r["content"] == "content"
    assert r["missing"]["name"] == "FileNotFoundError", r["missing"]


def test_files_remove(serve1, work):
    r = sdk(serve1, "files.mjs", "remove", work=work)
    assert r == {"file": False, "dir": False, "missing": None}


# ---- watchDir (issue 9) -----------------------------------------------------

def test_watch_create_write_remove_rename(serve1, work):
    names = sdk(serve1, "watch.mjs", "basic", work=work)
    assert names.index("create a.txt") < names.index("write a.txt") < names.index("remove a.txt")
    assert names.index("rename d") < names.index("create e")


def test_watch_sees_api_writes(serve1, work):
    names = sdk(serve1, "watch.mjs", "sdk_writes", work=work)
    assert "create w.txt" in names or "write w.txt" in names, names
    assert "create made" in names and "remove w.txt" in names
    # As envd: a write shows as events of the file written, not of a
    # temporary name beside it.
    assert [n for n in names if n.split(" ", 1)[1] not in ("w.txt", "made")] == [], names


def test_watch_sees_sdk_writes_as_writes(serve1, work):
    names = sdk(serve1, "watch.mjs", "sdk_write_events", work=work)
    assert names == ["create n.txt", "chmod n.txt", "write n.txt", "chmod n.txt", "write n.txt",
                     "create fence"], names


def test_watch_recursive(serve1, work):
    names = sdk(serve1, "watch.mjs", "recursive", work=work)
    assert names.index("create sub/nested/f.txt") < names.index("remove sub/nested/f.txt")
    assert "create later/g.txt" in names


def test_watch_not_recursive(serve1, work):
    names = sdk(serve1, "watch.mjs", "not_recursive", work=work)
    assert not [n for n in names if "deep.txt" in n], names


def test_watch_include_entry(serve1, work):
    e = sdk(serve1, "watch.mjs", "entry", work=work)
    assert e == {"name": "ent.txt", "path": os.path.join(work, "ent.txt"), "type": "file"}


def test_watch_stop(serve1, work):
    r = sdk(serve1, "watch.mjs", "stop_then_quiet", work=work)
    assert r["stoppedGotMore"] is False


def test_watch_errors(serve1, work):
    r = sdk(serve1, "watch.mjs", "errors", work=work)
    assert r["missing"]["name"] == "FileNotFoundError", r["missing"]
    assert r["file"] is not None and r["file"]["cls"] != "AuthenticationError", r["file"]
