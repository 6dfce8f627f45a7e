"""`run`'s https:// webhook (README "sandbox-agent run" step 7, "Nonce
secrecy"): the agent posts it itself over TLS 1.2 (BearSSL), from a fork of
its own that never execs, the server's chain checked against a CA bundle (the
test's own CA here, tests/lib/pki.py) with SNI and the host name, within the
same 10 s. A good chain is posted intact; another host's certificate, an
expired one, a self-signed one, an IP address, a missing bundle are refused
with a reason, the job's outcome unchanged; a server that stalls the
handshake is abandoned within the budget; the nonce is never where a leftover
of the job (same uid) could read it."""
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import textwrap
import threading
import time

import pytest

from conftest import PY, TIMEOUT, children, one_sentinel, wait_until
from jobs import agent_argv, run
from pki import PKI
from reports import Hook, pki, result_env, tls_hook, tls_serving, tls_stop, tls_url, tmp  # noqa: F401  (fixtures)

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]


@pytest.fixture(scope="module", autouse=True)
def localhost_resolves():
    try:
        addrs = {a[4][0] for a in socket.getaddrinfo("localhost", 443, socket.AF_INET)}
    except OSError as e:
        pytest.skip("localhost does not resolve here (%s): the tests post to https://localhost" % e)
    if "127.0.0.1" not in addrs:
        pytest.skip("localhost is not 127.0.0.1 here (%s)" % sorted(addrs))


def hook_env(tmp, url, ca, **extra):
    return result_env(tmp, SANDBOX_JOB_WEBHOOK=url, SANDBOX_JOB_WEBHOOK_CA_FILE=ca, **extra)


def serving(chain_key):
    return tls_serving(*chain_key)


# ------------------------------------------------------------ posted --------

@pytest.mark.parametrize("key", ["ec", "rsa"])
def test_good_chain_posted_intact(key, pki, tmp):
    # ECDHE-ECDSA and ECDHE-RSA: leaf and intermediate from the server, the
    # root in the bundle; Basic auth from the URL, as over http://.
    srv = serving(pki.server("localhost", key=key))
    try:
        url = "https://user:pw@localhost:%d/hook/path?x=1" % srv.server_address[1]
        env = hook_env(tmp, url, pki.ca_file, SANDBOX_JOB_NONCE="tls-n0nce", SANDBOX_JOB_ID="job-7",
                       SANDBOX_AGENT_LOG="info")
        r = run(["sh", "-c", 'echo \'{"ok": [1, 2]}\' > "$SANDBOX_RESULT"'], True, env)
    finally:
        tls_stop(srv)
    assert r.returncode == 0, r.stderr
    assert len(Hook.received) == 1, r.stderr
    path, ctype, body, auth = Hook.received[0]
    assert path == "/hook/path?x=1"
    assert ctype == "application/json"
    assert auth == "Basic dXNlcjpwdw=="
    assert json.loads(body) == dict(one_sentinel(r.stdout), job_id="job-7")
    assert json.loads(body)["nonce"] == "tls-n0nce"
    assert b"webhook delivered (HTTP 204)" in r.stderr


# The chains public CAs issue (README step 7): RSA roots and intermediates
# signing with PKCS#1 v1.5 and SHA-256 or SHA-384, ECDSA P-384 ones signing
# with SHA-384, an RSA root over a P-384 intermediate (Let's Encrypt's ISRG
# Root X1 -> E5 shape); under each an ECDSA P-256, ECDSA P-384 or RSA leaf.
CHAINS = {"rsa-sha256": dict(root="rsa"), "rsa-sha384": dict(root="rsa", digest="sha384"),
          "p384-sha384": dict(root="p384", digest="sha384"),
          "rsa-over-p384": dict(root="rsa", inter="p384", digest="sha384")}


@pytest.fixture(scope="module", params=sorted(CHAINS))
def ca_kind(request):
    p = PKI(**CHAINS[request.param])
    yield p
    p.close()


@pytest.mark.parametrize("leaf", ["ec", "p384", "rsa"])
def test_public_ca_chains_validate(ca_kind, leaf, tmp):
    srv = serving(ca_kind.server("localhost", key=leaf))
    try:
        r = run(["true"], True, hook_env(tmp, tls_url(srv), ca_kind.ca_file, SANDBOX_AGENT_LOG="info"))
    finally:
        tls_stop(srv)
    assert r.returncode == 0
    assert len(Hook.received) == 1, r.stderr
    assert b"webhook delivered (HTTP 204)" in r.stderr, r.stderr


# The key exchanges and suites of the client (README step 7), each the only
# one the server accepts: ECDHE on P-256 or P-384, AES-128-GCM or AES-256-GCM,
# with an ECDSA or an RSA certificate.
OFFERS = {"p256-ecdsa-aes128": ("ec", "ECDHE-ECDSA-AES128-GCM-SHA256", "prime256v1"),
          "p384-ecdsa-aes256": ("ec", "ECDHE-ECDSA-AES256-GCM-SHA384", "secp384r1"),
          "p256-rsa-aes256": ("rsa", "ECDHE-RSA-AES256-GCM-SHA384", "prime256v1"),
          "p384-rsa-aes128": ("rsa", "ECDHE-RSA-AES128-GCM-SHA256", "secp384r1")}


@pytest.mark.parametrize("offer", sorted(OFFERS))
def test_each_key_exchange_and_suite(offer, pki, tmp):
    key, suite, group = OFFERS[offer]
    srv = tls_serving(*pki.server("localhost", key=key), suites=suite, group=group)
    try:
        r = run(["true"], True, hook_env(tmp, tls_url(srv), pki.ca_file, SANDBOX_AGENT_LOG="info"))
    finally:
        tls_stop(srv)
    assert r.returncode == 0
    assert len(Hook.received) == 1, r.stderr
    assert b"webhook delivered (HTTP 204)" in r.stderr, r.stderr


def test_chacha20_only_server_refused(pki, tmp):
    # What the client leaves out (README step 7): a server that offers only
    # ChaCha20-Poly1305 is refused with a reason.
    srv = tls_serving(*pki.server("localhost"), suites="ECDHE-ECDSA-CHACHA20-POLY1305")
    try:
        r = run(["true"], True, hook_env(tmp, tls_url(srv), pki.ca_file))
    finally:
        tls_stop(srv)
    assert r.returncode == 0
    assert Hook.received == []
    assert b"webhook: not sent: TLS handshake with localhost failed: the server sent TLS alert 40, handshake " \
           b"failure (as when it has no suite or curve in common with this client: ECDHE on P-256, P-384 or " \
           b"P-521 with AES-GCM)" in r.stderr, r.stderr


@pytest.mark.parametrize("pid1", [True, False], ids=["pid1", "child"])
def test_posted_without_curl_on_path(pid1, tmp, tls_hook):
    # Nothing is exec'd: a PATH with no curl (nor anything else) changes nothing.
    srv, ca = tls_hook
    env = hook_env(tmp, tls_url(srv), ca, SANDBOX_JOB_NONCE="n")
    env["PATH"] = str(tmp)
    r = run(["/bin/true"], pid1, env)
    assert r.returncode == 0, r.stderr
    assert len(Hook.received) == 1, r.stderr
    assert json.loads(Hook.received[0][2])["nonce"] == "n"


# ----------------------------------------------------------- refused --------

REFUSALS = {
    "other-host": (lambda p: p.server("other.example"), b"the server's certificate is not for this host name"),
    "expired": (lambda p: p.server("localhost", expired=True), b"the server's certificate has expired or is not yet valid"),
    "self-signed": (lambda p: p.self_signed("localhost"), b"the server's certificate is not signed by a CA of the bundle"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refused_with_a_reason(case, pki, tmp):
    make, reason = REFUSALS[case]
    srv = serving(make(pki))
    try:
        r = run(["sh", "-c", "exit 3"], True, hook_env(tmp, tls_url(srv), pki.ca_file, SANDBOX_JOB_NONCE="n"))
    finally:
        tls_stop(srv)
    assert r.returncode == 3
    assert one_sentinel(r.stdout)["exit_code"] == 3
    assert Hook.received == []
    assert b"webhook: not sent: TLS handshake with localhost failed: " + reason in r.stderr, r.stderr


def test_system_bundle_by_default(tmp, tls_hook):
    # Without SANDBOX_JOB_WEBHOOK_CA_FILE the system's bundle is the one:
    # the test's CA is not in it.
    bundle = "/etc/ssl/certs/ca-certificates.crt"
    if not os.path.isfile(bundle):
        pytest.skip("no system CA bundle at %s" % bundle)
    srv, _ = tls_hook
    r = run(["true"], True, result_env(tmp, SANDBOX_JOB_WEBHOOK=tls_url(srv)))
    assert r.returncode == 0
    assert Hook.received == []
    assert b"is not signed by a CA of the bundle" in r.stderr, r.stderr


@pytest.mark.parametrize("content,reason", [
    (None, b"cannot read %s: No such file or directory"),
    (b"not a bundle\n", b"%s: no certificate in it"),
    (b"-----BEGIN CERTIFICATE-----\nnot base64 !!\n-----END CERTIFICATE-----\n",
     b"%s: no certificate in it that this client can decode"),
], ids=["missing", "no-pem", "bad-pem"])
def test_unusable_bundle_not_sent(content, reason, tmp, tls_hook):
    srv, _ = tls_hook
    ca = tmp / "bundle.pem"
    if content is not None:
        ca.write_bytes(content)
    r = run(["sh", "-c", "exit 4"], True, hook_env(tmp, tls_url(srv), str(ca)))
    assert r.returncode == 4
    assert one_sentinel(r.stdout)["exit_code"] == 4
    assert Hook.received == []
    assert b"webhook: not sent: no CA bundle to check localhost against: " + reason % str(ca).encode() \
        in r.stderr, r.stderr


@pytest.mark.parametrize("host", ["127.0.0.1", "[::1]"])
def test_ip_address_refused_before_connecting(host, tmp, pki):
    # A certificate's IP entries cannot be checked (BearSSL matches DNS
    # names): refused before any connection is made.
    lst = socket.socket(socket.AF_INET6 if host.startswith("[") else socket.AF_INET)
    try:
        lst.bind((host.strip("[]"), 0))
    except OSError as e:
        lst.close()
        pytest.skip("cannot listen on %s: %s" % (host, e))
    lst.listen(5)
    lst.setblocking(False)
    try:
        url = "https://%s:%d/" % (host, lst.getsockname()[1])
        r = run(["true"], True, hook_env(tmp, url, pki.ca_file))
        with pytest.raises(BlockingIOError):
            lst.accept()
    finally:
        lst.close()
    assert r.returncode == 0
    assert b"is an IP address, and only a DNS name can be checked" in r.stderr, r.stderr


def test_stalled_handshake_abandoned_within_budget(tmp, pki):
    # The kernel completes the TCP handshake (backlog); the ClientHello is
    # never answered.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(5)
    try:
        env = hook_env(tmp, "https://localhost:%d/" % s.getsockname()[1], pki.ca_file)
        t0 = time.monotonic()
        r = run(["true"], True, env, timeout=60)
        elapsed = time.monotonic() - t0
    finally:
        s.close()
    assert r.returncode == 0
    assert (b"TLS handshake with localhost failed: no answer within the time left" in r.stderr
            or b"webhook: no outcome within 10 s" in r.stderr), r.stderr
    # The contract's bound is 10 s; allow scheduling slack on a loaded machine.
    assert 9 <= elapsed < 20, elapsed


# ------------------------------------------------------ nonce secrecy -------

# A leftover of the job (same uid as the agent, out of its session and
# output): once told the helper's pid, it tries every way to read the helper
# (environ, cmdline, memory, fds, ptrace) and writes a verdict per probe and
# whatever bytes it got.
PROBER = textwrap.dedent("""
    import ctypes, json, os, sys, time
    trigger, out = sys.argv[1], sys.argv[2]
    end = time.monotonic() + 60
    while time.monotonic() < end:
        try:
            pid = int(open(trigger).read())
            break
        except (OSError, ValueError):
            time.sleep(0.01)
    found, verdict = bytearray(), {}
    def grab(name, fn):
        try:
            found.extend(fn())
            verdict[name] = "read"
        except Exception as e:
            verdict[name] = "denied: %s" % type(e).__name__
    def read(p):
        with open(p, "rb", buffering=0) as f:
            return f.read(1 << 20)
    def mem():
        data = bytearray()
        with open("/proc/%d/maps" % pid) as m:
            ranges = [l.split()[0] for l in m if l.split()[1].startswith("r")]
        with open("/proc/%d/mem" % pid, "rb", buffering=0) as f:
            for r in ranges:
                lo, hi = (int(x, 16) for x in r.split("-"))
                try:
                    f.seek(lo)
                    data.extend(f.read(min(hi - lo, 64 << 20)))
                except OSError:
                    pass
        if not data:
            raise PermissionError("nothing readable")
        return bytes(data)
    def fds():
        data, opened = bytearray(), 0
        for n in os.listdir("/proc/%d/fd" % pid):
            try:
                fd = os.open("/proc/%d/fd/%s" % (pid, n), os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                continue
            opened += 1
            os.close(fd)
        if not opened:
            raise PermissionError("opened none")
        return bytes(data)
    grab("environ", lambda: read("/proc/%d/environ" % pid))
    grab("cmdline", lambda: read("/proc/%d/cmdline" % pid))
    grab("mem", mem)
    grab("fd", fds)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    if libc.ptrace(16, pid, None, None) == 0:
        verdict["ptrace"] = "attached"
        libc.ptrace(17, pid, None, None)
    else:
        verdict["ptrace"] = "denied: errno %d" % ctypes.get_errno()
    with open(out + ".tmp", "wb") as f:
        f.write(json.dumps(verdict).encode() + b"\\n" + bytes(found))
    os.rename(out + ".tmp", out)
""")


def exe(pid):
    try:
        return os.readlink("/proc/%d/exe" % pid)
    except OSError:
        return None


# The job: starts the prober in a session of its own, holding none of the
# job's fds (Popen returns once it runs), and exits.
START_PROBER = "import subprocess, sys; subprocess.Popen([sys.executable] + sys.argv[1:], " \
               "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, " \
               "start_new_session=True)"


@pytest.fixture
def nobody_dir():
    """A directory uid 65534 can reach (pytest's tmp_path has 0700 parents)."""
    d = tempfile.mkdtemp(prefix="sa-tls-")
    os.chmod(d, 0o777)
    yield pathlib.Path(d)
    shutil.rmtree(d, ignore_errors=True)


def test_nonce_out_of_reach_during_the_post(nobody_dir, tls_hook, agent_anyone):
    # As a subreaper, run as nobody, with a leftover of the job alive: while
    # the server holds the POST, the agent's only other child is a fork of
    # it (the same binary, non-dumpable: its /proc files are root's) whose
    # environment and command line lack the nonce, and the leftover reads
    # nothing of it.
    srv, ca = tls_hook
    d = nobody_dir
    nonce = "secret-%d" % os.getpid()
    prober, trigger, out = d / "prober.py", d / "trigger", d / "findings"
    prober.write_text(PROBER)
    os.chmod(prober, 0o644)
    job = [PY, "-c", START_PROBER, str(prober), str(trigger), str(out)]
    Hook.arrived, Hook.hold = threading.Event(), threading.Event()
    p = subprocess.Popen(agent_argv(job, False, NOBODY, agent=agent_anyone),
                         env=hook_env(d, tls_url(srv), ca, SANDBOX_JOB_NONCE=nonce),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    others = []
    try:
        assert Hook.arrived.wait(TIMEOUT), "no POST arrived"
        kids = children(p.pid)
        helpers = [k for k in kids if exe(k) == agent_anyone]
        others = [k for k in kids if k not in helpers]
        assert len(helpers) == 1, [(k, exe(k)) for k in kids]
        assert [os.path.realpath(exe(k) or "") for k in others] == [os.path.realpath(PY)], \
            [(k, exe(k)) for k in kids]
        helper = helpers[0]
        with open("/proc/%d/status" % helper) as f:
            uid = [line.split()[1] for line in f if line.startswith("Uid:")][0]
        assert uid == "65534"
        assert os.stat("/proc/%d/environ" % helper).st_uid == 0  # non-dumpable
        for name in ("environ", "cmdline"):
            with open("/proc/%d/%s" % (helper, name), "rb") as f:
                assert nonce.encode() not in f.read()
        trigger.write_text(str(helper))
        wait_until(out.exists, "the leftover's findings")
    finally:
        Hook.hold.set()
        try:
            p.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        for pid in others:  # the prober, should it still run
            if os.path.realpath(exe(pid) or "") == os.path.realpath(PY):
                os.kill(pid, signal.SIGKILL)
    stdout, stderr = p.stdout.read(), p.stderr.read()
    assert p.returncode == 0, stderr
    assert one_sentinel(stdout)["nonce"] == nonce
    assert len(Hook.received) == 1 and json.loads(Hook.received[0][2])["nonce"] == nonce
    data = out.read_bytes()
    verdict = json.loads(data.split(b"\n", 1)[0])
    assert nonce.encode() not in data, verdict
    for probe in ("environ", "mem", "fd", "ptrace"):
        assert verdict[probe].startswith("denied"), verdict
