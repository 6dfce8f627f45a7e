"""Where `run` reports to, for its tests (test_run.py, test_relay.py,
test_leftovers.py, test_webhook_tls.py import these fixtures): a result
directory any job user may write (`tmp`, with `result_env`), and a webhook
receiver on 127.0.0.1 over HTTP (`hook_server`, `hook`) or HTTPS
(`tls_serving`, `tls_hook`: a chain from the test's own CA, `pki`, for
https://localhost) that records every POST in Hook.received and answers 204.
"""
import http.server
import json
import os
import ssl
import subprocess
import threading
import time

import pytest

from pki import PKI
from testlib import TIMEOUT, clean_env


@pytest.fixture
def tmp(tmp_path):
    os.chmod(tmp_path, 0o777)
    return tmp_path


def result_env(tmp, **extra):
    return clean_env(SANDBOX_RESULT=str(tmp / "out" / "result.json"), **extra)


class Hook(http.server.BaseHTTPRequestHandler):
    received = []  # (path, Content-Type, body, Authorization) of each POST, in order
    delay = 0.0    # seconds before the answer, like a real server's latency
    arrived = None  # a threading.Event set when a POST's body is in
    hold = None     # a threading.Event the answer waits for (at most TIMEOUT s)

    def do_POST(self):
        n = int(self.headers["Content-Length"])
        Hook.received.append((self.path, self.headers["Content-Type"], self.rfile.read(n),
                              self.headers.get("Authorization")))
        if Hook.arrived is not None:
            Hook.arrived.set()
        if Hook.hold is not None:
            Hook.hold.wait(TIMEOUT)
        time.sleep(Hook.delay)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *a):
        pass

    @staticmethod
    def payloads():
        """The decoded JSON body of each POST, in order."""
        return [json.loads(body) for _, _, body, _ in Hook.received]


def _serving(ctx=None):
    """A fresh Hook server on 127.0.0.1 (TLS with ctx), answering on a thread."""
    Hook.received = []
    Hook.delay = 0.0
    Hook.arrived = Hook.hold = None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    if ctx is not None:
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def _stop(srv):
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def hook_server():
    srv = _serving()
    yield srv
    _stop(srv)


@pytest.fixture
def hook(hook_server):
    """The URL of hook_server, as SANDBOX_JOB_WEBHOOK takes it."""
    return "http://127.0.0.1:%d/hook" % hook_server.server_address[1]


@pytest.fixture(scope="session")
def pki():
    """The test's CA (tests/lib/pki.py), made once."""
    p = PKI()
    yield p
    p.close()


def tls_serving(chain, key, suites=None, group=None):
    """A fresh Hook server on 127.0.0.1 over TLS with the certificate chain
    and key given (files); stop it with tls_stop. suites: the only TLS 1.2
    cipher suites it accepts (OpenSSL names), group: its only ECDHE curve."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(chain, key)
    if suites:
        ctx.set_ciphers(suites)
    if group:
        ctx.set_ecdh_curve(group)
    return _serving(ctx)


tls_stop = _stop


@pytest.fixture
def tls_hook(pki):
    """(server, CA bundle): a Hook server for https://localhost:PORT whose
    chain leads to pki's root, the bundle SANDBOX_JOB_WEBHOOK_CA_FILE names."""
    if not hasattr(pki, "localhost"):
        pki.localhost = pki.server("localhost")
    srv = tls_serving(*pki.localhost)
    yield srv, pki.ca_file
    _stop(srv)


def tls_url(srv, path="/h"):
    return "https://localhost:%d%s" % (srv.server_address[1], path)
