"""`sandbox-agent mcp-status`: README "sandbox-agent mcp-status". The expected output is
computed by `reference()` below, an independent statement of the SDK's
fail-soft reading rules, and compared byte for byte with what the agent
prints (json.dumps formatting)."""
import json
import os
import subprocess

import pytest

from conftest import AGENT, TIMEOUT, clean_env

FIELDS = ["fqn", "gs_error_code", "detail", "last_checked_at"]


def reference(text, name=None):
    """What a workload gets: a list (no NAME) or one object (NAME)."""
    try:
        doc = json.loads(text) if text is not None else None
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        doc = None

    def one(n, raw):
        out = {"name": n, "status": "unknown"}
        ok = isinstance(raw, dict)
        s = raw.get("status") if ok else None
        if s in ("live", "reconnect_required"):
            out["status"] = s
        for f in FIELDS:
            v = raw.get(f) if ok else None
            out[f] = v if isinstance(v, str) and v else None
        return out

    if name is not None:
        return one(name, doc.get(name) if doc else None)
    return [one(k, v) for k, v in (doc or {}).items()]


def mcp(*args):
    p = subprocess.run([AGENT, "mcp-status"] + list(args), capture_output=True, timeout=TIMEOUT,
                       env=clean_env())
    return p


DOC = ('{"github": {"status": "live", "fqn": "DB.SCH.GITHUB", "gs_error_code": "", '
       '"detail": null, "last_checked_at": "2025-01-02T03:04:05Z"}, '
       '"jira": {"status": "reconnect_required", "fqn": "DB.SCH.JIRA", "gs_error_code": "ACCESS_DENIED", '
       '"detail": "grant revoked \\u2014 re-consent", "last_checked_at": "2025-01-02T03:04:05Z", "extra": 1}, '
       '"odd": {"status": "LIVE", "fqn": 5, "detail": ["x"]}, '
       '"notobj": "live", "nul": null, "\\u00e9t\\u00e9": {"status": "live"}, '
       '"dup": {"status": "live"}, "dup": {"status": "reconnect_required"}}')


@pytest.mark.parametrize("name", [None, "github", "jira", "odd", "notobj", "nul", "\u00e9t\u00e9",
                                  "dup", "absent"])
def test_matches_reference(tmp_path, name):
    f = tmp_path / "status.json"
    f.write_text(DOC, encoding="utf-8")
    args = ["--path", str(f)] + ([name] if name is not None else [])
    p = mcp(*args)
    assert p.returncode == 0, p.stderr
    assert p.stdout == json.dumps(reference(DOC, name)).encode() + b"\n"


@pytest.mark.parametrize("text", [None, "", "not json", "[1, 2]", '"s"', "{\"a\": 1", "\ufeff{}",
                                  "{}", '{"a": {"status": "live"}} trailing'])
def test_fail_soft(tmp_path, text):
    f = tmp_path / "status.json"
    if text is not None:
        f.write_text(text, encoding="utf-8")
    for name in (None, "a"):
        p = mcp("--path", str(f), *([name] if name else []))
        assert p.returncode == 0
        assert p.stdout == json.dumps(reference(text, name)).encode() + b"\n"


def test_not_utf8_directory_and_fifo(tmp_path):
    f = tmp_path / "bad"
    f.write_bytes(b'{"a": {"status": "live", "detail": "\xff"}}')
    assert json.loads(mcp("--path", str(f), "a").stdout)["status"] == "unknown"
    assert json.loads(mcp("--path", str(tmp_path)).stdout) == []
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    p = mcp("--path", str(fifo), "a")  # must not block waiting for a writer
    assert json.loads(p.stdout)["status"] == "unknown"


def test_default_path_and_usage():
    p = mcp("some-server")
    assert p.returncode == 0
    got = json.loads(p.stdout)
    want_path = "/snowflake/mcp/status.json"
    text = open(want_path).read() if os.path.exists(want_path) else None
    assert got == reference(text, "some-server")
    assert mcp("a", "b").returncode == 2
    assert mcp("--bogus").returncode == 2
    assert mcp("--path").returncode == 2
    h = mcp("--help")
    assert h.returncode == 0 and b"reconnect_required" in h.stdout


@pytest.mark.parametrize("stdout", ["full", "closed"])
def test_exit_0_even_when_stdout_fails(tmp_path, stdout):
    """README: "Always exits 0 (2 for a usage error)". An answer that cannot be
    written (a full disk, a closed stdout) is said on stderr, not by the status."""
    f = tmp_path / "status.json"
    f.write_text(DOC, encoding="utf-8")
    with open("/dev/full", "wb") as full:
        for args in (["--path", str(f)], ["--path", str(f), "github"]):
            kw = dict(stdout=full) if stdout == "full" else dict(preexec_fn=lambda: os.close(1))
            p = subprocess.run([AGENT, "mcp-status"] + args, stderr=subprocess.PIPE, timeout=TIMEOUT,
                               env=clean_env(), **kw)
            assert p.returncode == 0, p.stderr
            # A closed stdout is /dev/null by the time the answer is written
            # (every mode opens it on a closed 0-2 first): nothing to say then.
            if stdout == "full":
                assert b"cannot write" in p.stderr
