"""`serve`: POST /init's variables and the processes that get them (README
"sandbox-agent serve": orchestrator routes, envVars; process.Process,
List), black-box over a Unix socket.

Bounded by what the kernel lets a process start with: an /init whose
variables, once merged, would leave a Start no room under the kernel's
limit on arguments and environment is refused (400 naming the figures)
and changes nothing, so every Start whose own argv and envs fit in the
quarter kept for them still runs. Stored once: a process's record keeps
its own envs only, so twenty processes after a 917 KB /init cost the
agent no more memory than one, and List shows each process's own envs,
as envd does.

The agent runs with an 8 MiB stack limit (the usual one), so the kernel's
limit is 2 MiB: room for 1.5 MiB of variables, less what every process
gets.
"""
import json
import os
import resource

import pytest

from conftest import started_agents
from connectc import ServeAgent, b64, end_of, head_bytes, output
from testlib import proc_status_kib

LIST = "process.Process/List"
STACK = 8 << 20
ARG_MAX = STACK // 4  # the kernel's limit on argv + envp: a quarter of the stack's
VAR = 128 * 1024 - 1  # "NAME=VALUE" at its longest (the kernel's MAX_ARG_STRLEN less the NUL)


def stack_8mib():
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    resource.setrlimit(resource.RLIMIT_STACK, (STACK if hard == resource.RLIM_INFINITY else min(STACK, hard), hard))


@pytest.fixture
def serve(agent):
    yield from started_agents(lambda **env: ServeAgent(agent, popen={"preexec_fn": stack_8mib}, **env))


def init(a, body):
    data = json.dumps(body).encode()
    c = a.conn()
    try:
        c.send(head_bytes("POST", "/init", {"Content-Length": str(len(data)), "Content-Type": "application/json",
                                            "X-Access-Token": a.token}) + data)
        return c.response()
    finally:
        c.close()


def envs_now(a):
    c = a.conn()
    try:
        c.send(head_bytes("GET", "/envs", {"X-Access-Token": a.token}))
        r = c.response()
        assert r.status == 200, (r.status, r.body)
        return r.json()
    finally:
        c.close()


def big_init(k):
    """Seven variables of VAR bytes each ("NAME=VALUE"): 917,497 bytes, within
    every bound of one request (1,024 variables, 128 KiB each, 1 MiB)."""
    names = ["V%d_%d" % (k, i) for i in range(7)]
    return {"envVars": {n: "x" * (VAR - len(n) - 1) for n in names}}


def test_init_variables_leave_every_start_room_to_run(serve):
    a = serve()
    hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
    if hard != resource.RLIM_INFINITY and hard < STACK:
        pytest.skip("the hard stack limit is below 8 MiB here")
    # 4 x 917 KB: past any room a 2 MiB limit leaves. The first fits (1.5 MiB
    # less what every process gets); the second would not, and is refused.
    answers = []
    for k in range(4):
        r = init(a, big_init(k))
        answers.append(r.status)
        if r.status != 204:
            break
    assert answers == [204, 400], "every /init accepted: %r" % answers
    err = r.json()
    assert err["code"] == "invalid_argument", err
    assert "'envVars'" in err["message"] and "of the kernel's %d for arguments and environment" % ARG_MAX \
        in err["message"], err
    # Nothing of the refused one was applied.
    env = envs_now(a)
    assert "V0_6" in env and not any(k.startswith("V1_") for k in env)
    # A Start runs, with the variables and with its own argv and envs (here
    # 400 KB of the 512 KiB kept for them).
    own = {"E%d" % i: "y" * 100000 for i in range(3)}
    s, pid = a.start("/bin/sh", "-c", 'echo "${#V0_0} ${#E2} $#"', "sh", "z" * 100000, envs=own)
    msgs, _ = s.collect()
    assert end_of(msgs) == {"exitCode": 0, "exited": True, "status": "exit status 0"}, end_of(msgs)
    assert output(msgs) == b"%d 100000 1\n" % (VAR - len("V0_0="))
    # A later /init that replaces variables rather than adding them still fits.
    assert init(a, big_init(0)).status == 204


def test_init_variables_stored_once_and_list_shows_a_process_own_envs(serve):
    # The sanitizer build keeps freed memory in quarantine: none here, so
    # that what is measured is what the agent keeps (a build without the
    # sanitizer ignores the variable).
    a = serve(ASAN_OPTIONS=":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "quarantine_size_mb=0"])))
    assert init(a, {"envVars": {"WARM": "up"}}).status == 204  # the defaults' and the body's buffers exist
    rss0 = proc_status_kib(a.pid, "VmRSS")
    assert init(a, big_init(0)).status == 204
    script = "echo up; read x; echo ${#V0_3} $OWN"
    started = [a.start("/bin/sh", "-c", script, envs={"OWN": str(i)}, msg={"stdin": True}) for i in range(20)]
    for s, pid in started:  # each has exec'd: the agent holds no copy made for its start any more
        assert s.next()[1] == {"event": {"data": {"stdout": b64("up\n")}}}
    r = a.unary(LIST, {})
    assert r.status == 200, (r.status, r.body[:200])
    procs = {p["pid"]: p["config"] for p in r.json()["processes"]}
    assert len(procs) == 20
    for i, (s, pid) in enumerate(started):
        assert procs[pid] == {"cmd": "/bin/sh", "args": ["-c", script], "envs": {"OWN": str(i)}}
    rss1 = proc_status_kib(a.pid, "VmRSS")
    grown = rss1 - rss0
    print("agent RSS: %d KiB before the 917 KB /init, %d KiB after it and 20 Starts (+%d KiB)" % (rss0, rss1, grown))
    # One copy of the variables (and the body it came in), not twenty.
    assert grown < 6 * 1024, "RSS grew %d KiB" % grown
    # Each process got them all the same.
    for i, (s, pid) in enumerate(started):
        a.unary("process.Process/SendInput", {"process": {"pid": pid}, "input": {"stdin": b64("\n")}})
        msgs, _ = s.collect()
        assert output(msgs) == b"%d %d\n" % (VAR - len("V0_3="), i) and end_of(msgs)["exitCode"] == 0
