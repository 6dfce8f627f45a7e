"""Signed /files URLs (README "Signed URLs"), black-box: GET and POST
/files pass without X-Access-Token when they carry envd's signature of
their path, user and operation (and, when it is sent, the expiration),
computed here independently (hashlib); each signature grants exactly
that and only on /files; a token sent in the header wins and must be
right; every refusal on /files is envd's {"code": N, "message"}, RPCs
keep Connect's; the token appears in no log line. The route table
(routes.c) gives each route its rule: /health open, /init its own, the
rest the token.
"""
import base64
import hashlib
import json
import os
import shutil
import tempfile
import time
import urllib.parse

import pytest

from conftest import started_agents
from connectc import ServeAgent, head_bytes

TOKEN = "s1gn-t0ken"
PROMPT = 20


@pytest.fixture
def serve(agent):
    yield from started_agents(lambda **env: ServeAgent(agent, **env))


@pytest.fixture
def a(serve):
    return serve(SANDBOX_AGENT_TOKEN=TOKEN, SANDBOX_AGENT_LOG="debug")


def signature(path, op, user="", token=TOKEN, exp=None):
    raw = ":".join([path, op, user, token] + ([str(exp)] if exp is not None else []))
    return "v1_" + base64.b64encode(hashlib.sha256(raw.encode("utf-8", "surrogateescape")).digest()).decode().rstrip("=")


def signed(path, op="read", user=None, exp=None, token=TOKEN, **extra):
    """The query of a signed URL, as the SDK builds it (URLSearchParams)."""
    q = {}
    if user is not None:
        q["username"] = user
    q["path"] = path
    q["signature"] = signature(path, op, user or "", token, exp)
    if exp is not None:
        q["signature_expiration"] = str(exp)
    q.update(extra)
    return urllib.parse.urlencode(q)


class Reply:
    def __init__(self, r):
        self.status, self.headers, self.body = r.status, r.headers, r.body

    def json(self):
        return json.loads(self.body)


def call(a, method, target, body=b"", headers=None, conn=None):
    """One request without the token unless headers carry one."""
    h = {"Content-Length": str(len(body))}
    h.update(headers or {})
    c = conn or a.conn()
    try:
        c.send(head_bytes(method, target, h) + body)
        return Reply(c.response(PROMPT))
    finally:
        if conn is None:
            c.close()


def upload(a, query, data, headers=None):
    return call(a, "POST", "/files?" + query, data,
                dict({"Content-Type": "application/octet-stream"}, **(headers or {})))


def envd_error(r, status, message):
    assert (r.status, r.json()) == (status, {"code": status, "message": message}), (r.status, r.body)


@pytest.fixture
def pub():
    """A directory anyone may search (pytest's tmp_path sits in a 0700 one)."""
    d = tempfile.mkdtemp(prefix="sa-signed-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def f(pub):
    """A file whose name every encoding step touches: ' ', '+', '&', non-ASCII."""
    p = os.path.join(pub, "a b+c&é.txt")
    with open(p, "wb") as fh:
        fh.write(b"signed\n")
    os.chmod(p, 0o644)
    return p


# ---- what a signature grants --------------------------------------------------------

def test_a_read_signature_reads(a, f):
    r = call(a, "GET", "/files?" + signed(f))
    assert (r.status, r.body) == (200, b"signed\n")
    exp = int(time.time()) + 600
    r = call(a, "GET", "/files?" + signed(f, exp=exp))
    assert (r.status, r.body) == (200, b"signed\n")


def test_the_path_signed_is_the_decoded_value_however_it_was_escaped(a, f):
    sig = urllib.parse.quote(signature(f, "read"), safe="")   # its '+' and '/' escaped
    for q in ("path=%s&signature=%s" % (urllib.parse.quote(f), sig),
              "path=%s&signature=%s" % (urllib.parse.quote_plus(f), sig),
              "signature=%s&path=%s" % (sig, "".join("%%%02X" % b for b in f.encode()))):
        r = call(a, "GET", "/files?" + q)
        assert (r.status, r.body) == (200, b"signed\n"), q


def test_a_write_signature_writes(a, tmp_path):
    target = str(tmp_path / "up" / "new.txt")
    r = upload(a, signed(target, "write", exp=int(time.time()) + 600), b"uploaded")
    assert r.status == 200 and r.json()[0]["path"] == target, r.body
    with open(target, "rb") as fh:
        assert fh.read() == b"uploaded"


def test_a_user_signed_is_that_user_only(a, f):
    r = call(a, "GET", "/files?" + signed(f, user="nobody"))
    assert (r.status, r.body) == (200, b"signed\n")
    sig = signature(f, "read", "nobody")
    for q in ({"path": f, "username": "root", "signature": sig},   # another user
              {"path": f, "signature": sig},                        # the default user
              {"path": f, "username": "nobody ", "signature": sig}):
        envd_error(call(a, "GET", "/files?" + urllib.parse.urlencode(q)), 401, "invalid signature")
    # And the default user's signature ("" signed) names no one else.
    sig = signature(f, "read", "")
    envd_error(call(a, "GET", "/files?" + urllib.parse.urlencode({"path": f, "username": "root", "signature": sig})),
               401, "invalid signature")


def test_refusals_as_envd_words_them(a, f, tmp_path):
    envd_error(call(a, "GET", "/files?" + urllib.parse.urlencode({"path": f})), 401,
               "missing signature query parameter")
    past = int(time.time()) - 5
    envd_error(call(a, "GET", "/files?" + signed(f, exp=past)), 401, "signature is already expired")
    sig = signature(f, "read")
    tampered = sig[:-1] + ("A" if sig[-1] != "A" else "B")
    for q in ({"path": f, "signature": tampered},
              {"path": f, "signature": sig + "A"},
              {"path": f, "signature": ""},
              {"path": f, "signature": sig[3:]},                              # without "v1_"
              {"path": f, "signature": sig + "="},
              {"path": f, "signature": signature(f, "read", token=TOKEN + "x")},
              {"path": f.replace("/a b", "/./a b"), "signature": sig},      # resolves the same
              {"path": f, "signature": signature(f, "write")},             # the other operation
              {"path": str(tmp_path), "signature": sig}):                  # another path
        envd_error(call(a, "GET", "/files?" + urllib.parse.urlencode(q)), 401, "invalid signature")
    # A later expiration than the one signed is another signature.
    exp = int(time.time()) + 60
    q = signed(f, exp=exp).replace("signature_expiration=%d" % exp, "signature_expiration=%d" % (exp + 3600))
    envd_error(call(a, "GET", "/files?" + q), 401, "invalid signature")
    # A tampered signature that is also expired: the signature is judged first.
    q = urllib.parse.urlencode({"path": f, "signature": tampered, "signature_expiration": past})
    envd_error(call(a, "GET", "/files?" + q), 401, "invalid signature")


def test_a_read_signature_cannot_write(a, tmp_path, f):
    target = str(tmp_path / "w.txt")
    envd_error(upload(a, signed(target, "read"), b"x"), 401, "invalid signature")
    envd_error(upload(a, signed(f, "read"), b"x"), 401, "invalid signature")
    assert not os.path.exists(target)
    with open(f, "rb") as fh:
        assert fh.read() == b"signed\n"
    envd_error(upload(a, signed(target, "write", exp=int(time.time()) - 1), b"x"), 401,
               "signature is already expired")
    assert not os.path.exists(target)


def test_the_expiration_is_read_as_envd_reads_it(a, f):
    """Go's strconv.ParseInt: a sign, digits, 64 bits; the signature covers
    the number written back in decimal."""
    exp = int(time.time()) + 600
    sig = signature(f, "read", exp=exp)
    for text in ("+%d" % exp, "000%d" % exp):
        r = call(a, "GET", "/files?" + urllib.parse.urlencode({"path": f, "signature": sig, "signature_expiration": text}))
        assert (r.status, r.body) == (200, b"signed\n"), text
    for text in ("", "soon", "1.5", " %d" % exp, "0x10", "9223372036854775808", "1e9", "%d\x00" % exp):
        r = call(a, "GET", "/files?" + urllib.parse.urlencode({"path": f, "signature": sig, "signature_expiration": text}))
        assert r.status == 400 and r.json()["code"] == 400, (text, r.body)
    r = call(a, "GET", "/files?" + urllib.parse.urlencode(
        {"path": f, "signature": signature(f, "read", exp=-9223372036854775808),
         "signature_expiration": "-9223372036854775808"}))
    envd_error(r, 401, "signature is already expired")


def test_repeated_signature_parameters_are_400(a, f):
    sig = signature(f, "read")
    for q in ("path=%s&signature=%s&signature=%s" % (urllib.parse.quote(f), sig, sig),
              "path=%s&signature=%s&signature_expiration=1&signature_expiration=2" % (urllib.parse.quote(f), sig)):
        r = call(a, "GET", "/files?" + q)
        assert r.status == 400 and r.json()["code"] == 400, r.body


# ---- the header ------------------------------------------------------------------------

def test_a_token_sent_wins_and_must_be_right(a, f):
    r = call(a, "GET", "/files?" + signed(f), headers={"X-Access-Token": "wrong"})
    envd_error(r, 401, "access token present in header but does not match")
    r = call(a, "GET", "/files?" + urllib.parse.urlencode({"path": f, "signature": "v1_garbage"}),
             headers={"X-Access-Token": TOKEN})
    assert (r.status, r.body) == (200, b"signed\n")
    # An empty header is none, as Go's Header.Get reads it; a repeated one is sent, and wrong.
    r = call(a, "GET", "/files?" + signed(f), headers={"X-Access-Token": ""})
    assert (r.status, r.body) == (200, b"signed\n")
    c = a.conn()
    try:
        c.send(("GET /files?%s HTTP/1.1\r\nHost: x\r\nX-Access-Token: %s\r\nX-Access-Token: %s\r\n\r\n"
                % (signed(f), TOKEN, TOKEN)).encode())
        r = c.response(PROMPT)
        assert r.status == 401 and json.loads(r.body)["code"] == 401, r.body
    finally:
        c.close()


def test_no_token_set_no_signature_needed(serve, f):
    a = serve(SANDBOX_AGENT_TOKEN=None)
    r = call(a, "GET", "/files?" + urllib.parse.urlencode({"path": f}))
    assert (r.status, r.body) == (200, b"signed\n")
    r = call(a, "GET", "/files?" + urllib.parse.urlencode({"path": f, "signature": "v1_whatever"}))
    assert (r.status, r.body) == (200, b"signed\n")


def test_a_signature_over_a_replaced_token_is_refused(a, f):
    q = signed(f)
    assert call(a, "GET", "/files?" + q).status == 200
    body = json.dumps({"accessToken": "n3w-t0ken"}).encode()
    r = call(a, "POST", "/init", body, {"X-Access-Token": TOKEN, "Content-Type": "application/json"})
    assert r.status == 204, r.body
    envd_error(call(a, "GET", "/files?" + q), 401, "invalid signature")
    r = call(a, "GET", "/files?" + signed(f, token="n3w-t0ken"))
    assert (r.status, r.body) == (200, b"signed\n")


# ---- only /files ----------------------------------------------------------------------

def test_a_signature_grants_no_other_route(a, f, tmp_path):
    sig_q = signed(f)
    r = call(a, "POST", "/files/compose?" + signed(f, "write"),
             json.dumps({"source_paths": [f], "destination": str(tmp_path / "c")}).encode(),
             {"Content-Type": "application/json"})
    assert r.status == 401 and r.json()["code"] == 401, r.body     # /files's shape, the token's rule
    assert not os.path.exists(str(tmp_path / "c"))
    r = call(a, "POST", "/filesystem.Filesystem/Stat?" + sig_q, json.dumps({"path": f}).encode(),
             {"Content-Type": "application/json"})
    assert r.status == 401 and r.json()["code"] == "unauthenticated", r.body   # Connect's
    for path in ("/envs", "/metrics"):
        r = call(a, "GET", path + "?" + sig_q)
        assert r.status == 401 and r.json()["code"] == "unauthenticated", (path, r.body)
    c = a.conn()
    try:
        c.send(head_bytes("HEAD", "/files?" + sig_q, {}))
        status, headers = c.head(PROMPT)
        assert status == 405 and headers.get("allow") == "GET, POST", headers
    finally:
        c.close()
    r = call(a, "GET", "/health")
    assert r.status == 204


def test_a_signed_request_does_not_trust_its_connection(serve, f):
    """A signature holder is no token holder: its keep-alive connection stays
    a stranger's, which a newcomer at the bound displaces."""
    a = serve(SANDBOX_AGENT_TOKEN=TOKEN, SANDBOX_AGENT_MAX_CONNECTIONS="2")
    browser = a.conn()
    assert call(a, "GET", "/files?" + signed(f), conn=browser).status == 200
    owner = a.conn()
    assert call(a, "GET", "/envs", headers={"X-Access-Token": TOKEN}, conn=owner).status == 200
    start = time.monotonic()
    assert call(a, "GET", "/envs", headers={"X-Access-Token": TOKEN}).status == 200
    assert time.monotonic() - start < PROMPT
    browser.s.settimeout(PROMPT)
    try:
        assert browser.s.recv(1) == b""   # closed by the agent for the newcomer
    except ConnectionResetError:
        pass
    owner.send(head_bytes("GET", "/envs", {"X-Access-Token": TOKEN}))
    assert owner.response(PROMPT).status == 200   # the trusted one kept its slot
    browser.close()
    owner.close()


def test_awaiting_the_token_files_is_503_in_envds_shape(serve, f):
    a = serve(SANDBOX_AGENT_TOKEN=None, SANDBOX_AGENT_AWAIT_TOKEN="1")
    r = call(a, "GET", "/files?" + signed(f))
    envd_error(r, 503, "no access token yet: waiting for POST /init")
    r = call(a, "GET", "/envs")
    assert r.status == 503 and r.json()["code"] == "unavailable"


def test_the_token_is_in_no_log_line(a, f, tmp_path):
    for q in (signed(f), signed(f, exp=1), signed(f, token="bad"), urllib.parse.urlencode({"path": f})):
        call(a, "GET", "/files?" + q)
    upload(a, signed(str(tmp_path / "x"), "write"), b"x")
    err = a.stderr()
    assert TOKEN not in err and signature(f, "read") not in err, err[-2000:]
