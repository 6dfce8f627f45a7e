"""`sandbox-agent serve`, plain HTTP routes (issue 13, for later), timed
from C (build/bench/hclient), one kept-alive connection:

  9  GET /metrics latency (median of 200) beside GET /health's. /metrics is
     not served yet: while the agent answers 404 the row reads "-" and says
     so, and it lights up once the route lands.

Run alone: /usr/bin/python3 tests/bench/bench.py build/sandbox-agent serve_http
"""
import os
import sys

from cbench import HANG, row, run_json, tool, wanted
from servelib import Serve

RUNS = 200
WHAT = "serve 9: GET /metrics, median"


def _get(hc, addr, target, n):
    return run_json([hc, "-t", str(HANG), "req", "-n", str(n), "-w", "20", addr, target], ok=(0, 2))


def bench(agent):
    if not wanted("9"):
        return []
    hc = tool(agent, "hclient")
    with Serve(agent) as s:
        health = _get(hc, s.addr, "/health", RUNS)
        assert health["status"] == 204, health
        probe = run_json([hc, "-t", str(HANG), "req", s.addr, "/metrics"], ok=(0, 2))
        if probe["status"] == 404:
            return [row(WHAT, "-", "GET /health", health["med_ms"], "ms",
                        note="serve 9: GET /metrics answers 404: not served yet (issue 13); the row reads \"-\" "
                             "until it is")]
        if probe["status"] != 200:
            raise RuntimeError("GET /metrics answered %d" % probe["status"])
        metrics = _get(hc, s.addr, "/metrics", RUNS)
        return [row(WHAT, metrics["med_ms"], "GET /health", health["med_ms"], "ms"),
                row("serve 9: GET /metrics, p90", metrics["p90_ms"], "GET /health", health["p90_ms"], "ms")]


if __name__ == "__main__":
    from bench_serve_proc import show
    show(bench(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/sandbox-agent")))
