"""The port forwarder through the published SDK (README "Port forwarding"):
a server in the sandbox bound to 127.0.0.1 answers a user's program at
`sandbox.getHost(port)`, and stops answering when it exits.

The sandbox is a network namespace of the test's own (tests/lib/netns.py),
the agent serving in it on 0.0.0.0 with a token, as a platform runs it; the
SDK runs in the other namespace, where getHost's debug-mode host
(localhost:PORT) is the test's edge proxy to the sandbox's outward address
(tests/sdk/edgeproxy.py), as E2B's proxy is for PORT-ID.e2b.app. Needs root
and `ip netns`; skipped, saying why, without them.
"""
import os
import select
import signal
import subprocess
import sys
import time

import pytest

import netns
from netns import SANDBOX_V4
from sdklib import SKIP, TOKEN, Serve, _finish, sdk

pytestmark = pytest.mark.skipif(SKIP is not None, reason="E2B SDK suite skipped: %s" % SKIP)

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 8000
TIMEOUT = 60


def start_ready(argv):
    """A program that prints "ready"; ended by the caller, by its pid."""
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    seen, end = b"", time.monotonic() + TIMEOUT
    while b"ready" not in seen:
        left = end - time.monotonic()
        if left <= 0 or p.poll() is not None:
            p.kill()
            p.wait()
            pytest.fail("%s did not say ready: %r" % (argv, seen))
        if select.select([p.stdout], [], [], left)[0]:
            seen += os.read(p.stdout.fileno(), 4096)
    return p


def test_get_host_reaches_a_loopback_server(sdk_dir, tmp_path, work):
    why = netns.unavailable()
    if why:
        pytest.skip(why)
    with netns.NetPair() as net:
        agent = Serve(sdk_dir, tmp_path, False, wrap=net.argv(net.sandbox), listen="0.0.0.0", host=SANDBOX_V4,
                      inside=lambda: net.inside(net.client), SANDBOX_AGENT_TOKEN=TOKEN)
        proxy = None
        try:
            proxy = start_ready(net.argv(net.client) + [sys.executable, os.path.join(HERE, "edgeproxy.py"),
                                                        str(PORT), SANDBOX_V4])
            r = sdk(agent, "forward.mjs", "get_host", work=work, arg=str(PORT), token=TOKEN,
                    wrap=net.argv(net.client))
        finally:
            if proxy is not None:
                proxy.send_signal(signal.SIGKILL)
                proxy.wait()
                proxy.stdout.close()
            _finish([agent])
        assert r == {"host": "localhost:%d" % PORT, "status": 200, "body": "hello from the sandbox\n",
                     "gone": True}, r
