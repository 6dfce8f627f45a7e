"""`sandbox-agent exec`: README "sandbox-agent exec", as a sandbox backend's
run_command drives it: argv in, one `__SBX_EXEC__{json}` line out."""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import AGENT, PY, TIMEOUT, alive, children, clean_env

SENT = b"__SBX_EXEC__"
KEYS = ["exit_code", "signal", "timed_out", "stdout", "stderr", "stdout_truncated",
        "stderr_truncated", "duration_ms"]


def run_exec(*args, timeout=TIMEOUT, **kw):
    p = subprocess.run([AGENT, "exec"] + list(args), capture_output=True, timeout=timeout,
                       env=clean_env(), **kw)
    return p


def result(p):
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(SENT) and p.stdout.endswith(b"\n")
    assert p.stdout.count(b"\n") == 1
    p.stdout.decode("ascii")  # json.dumps style: pure ASCII, so valid UTF-8
    r = json.loads(p.stdout[len(SENT):])
    assert list(r) == KEYS
    return r


def test_exit_code_and_streams():
    p = run_exec("--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert p.stdout == SENT + json.dumps(
        {"exit_code": 3, "signal": None, "timed_out": False, "stdout": "out\n", "stderr": "err\n",
         "stdout_truncated": False, "stderr_truncated": False,
         "duration_ms": json.loads(p.stdout[len(SENT):])["duration_ms"]}).encode() + b"\n"
    assert result(run_exec("true"))["exit_code"] == 0
    assert result(run_exec("--", "false"))["exit_code"] == 1


def test_death_by_signal():
    r = result(run_exec("--", "sh", "-c", "kill -KILL $$"))
    assert r["exit_code"] is None and r["signal"] == 9 and r["timed_out"] is False
    r = result(run_exec("--shell", "--", "kill -USR1 $$"))
    assert r["exit_code"] is None and r["signal"] == signal.SIGUSR1


def test_cwd_and_shell(tmp_path):
    assert result(run_exec("--cwd", str(tmp_path), "--", "pwd"))["stdout"] == str(tmp_path) + "\n"
    r = result(run_exec("--shell", "--cwd", str(tmp_path), "--", "echo $((6*7)) | cat; ls", "-d", "."))
    assert r["stdout"] == "42\n.\n"
    p = run_exec("--cwd", str(tmp_path / "missing"), "--", "pwd")
    assert p.returncode == 2 and p.stdout == b"" and b"missing" in p.stderr


def test_command_not_found_or_not_executable(tmp_path):
    r = result(run_exec("--", "no-such-command-xyz"))
    assert r["exit_code"] == 127 and "no-such-command-xyz" in r["stderr"]
    f = tmp_path / "noexec"
    f.write_bytes(b"#!/bin/sh\n")
    r = result(run_exec("--", str(f)))
    assert r["exit_code"] == 126 and "noexec" in r["stderr"]


def test_timeout_terms_the_whole_group():
    # The shell prints its background child's pid, then waits: both must die.
    t = time.monotonic()
    p = run_exec("--timeout", "0.5", "--shell", "--", "sleep 1000 & echo $!; wait")
    r = result(p)
    assert time.monotonic() - t < 30
    assert r["timed_out"] is True and r["exit_code"] is None and r["signal"] == signal.SIGTERM
    grandchild = int(r["stdout"])
    deadline = time.monotonic() + TIMEOUT
    while alive(grandchild):
        assert time.monotonic() < deadline, "grandchild survived the timeout"
        time.sleep(0.05)


def test_timeout_kills_what_ignores_sigterm():
    t = time.monotonic()
    code = ("trap '' TERM; sh -c \"trap '' TERM; sleep 1000\" & echo $!; "
            "while :; do sleep 0.05; done")
    r = result(run_exec("--timeout", "0.3", "--kill-after", "0.7", "--shell", "--", code))
    took = time.monotonic() - t
    assert r["timed_out"] is True and r["signal"] == signal.SIGKILL
    assert r["duration_ms"] >= 900 and took < 30
    grandchild = int(r["stdout"].split()[0])
    deadline = time.monotonic() + TIMEOUT
    while alive(grandchild):
        assert time.monotonic() < deadline, "SIGTERM-proof grandchild survived"
        time.sleep(0.05)


def test_timeout_waits_for_group_after_leader_dies():
    # The leader exits on SIGTERM; its child ignores SIGTERM and gets SIGKILL.
    code = "sh -c \"trap '' TERM; sleep 1000\" & echo $!; sleep 1000"
    r = result(run_exec("--timeout", "0.3", "--kill-after", "0.5", "--shell", "--", code))
    assert r["timed_out"] and r["signal"] == signal.SIGTERM
    grandchild = int(r["stdout"])
    deadline = time.monotonic() + TIMEOUT
    while alive(grandchild):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_max_output_keeps_the_last_bytes():
    r = result(run_exec("--max-output-bytes", "10", "--", "sh", "-c",
                        "seq 1 100000; printf 'abc' >&2"))
    assert r["stdout"] == "99\n100000\n" and r["stdout_truncated"] is True
    assert r["stderr"] == "abc" and r["stderr_truncated"] is False
    r = result(run_exec("--max-output-bytes", "3", "--", "printf", "abc"))
    assert r["stdout"] == "abc" and r["stdout_truncated"] is False
    r = result(run_exec("--max-output-bytes", "0", "--", "echo", "x"))
    assert r["stdout"] == "" and r["stdout_truncated"] is True


def test_gigabytes_of_output_in_bounded_memory(tmp_path):
    code = ("import resource, subprocess, sys\n"
            "p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE)\n"
            "sys.stdout.buffer.write(p.stdout)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    n = 1 << 20
    p = subprocess.run([PY, "-c", code, AGENT, "exec", "--max-output-bytes", str(n), "--shell", "--",
                        "head -c 2147483648 /dev/zero | tr '\\0' y; echo END; head -c 3000000 /dev/zero >&2"],
                       capture_output=True, timeout=300, env=clean_env())
    line, rss = p.stdout.rsplit(b"\n", 2)[:2]
    r = json.loads(line[len(SENT):])
    assert r["stdout_truncated"] and r["stderr_truncated"]
    assert len(r["stdout"]) == n and r["stdout"].endswith("yyyyEND\n")
    assert r["stderr"] == "\0" * n
    # Two 1 MiB rings and their JSON: far from the 2 GiB that went through.
    assert int(rss) < 64 * 1024, rss


def test_background_process_does_not_hold_the_call():
    t = time.monotonic()
    r = result(run_exec("--shell", "--", "sleep 100 & echo $!"))
    assert time.monotonic() - t < 20
    assert r["exit_code"] == 0
    bg = int(r["stdout"])
    try:
        assert alive(bg), "the background process was killed"
    finally:
        os.kill(bg, signal.SIGKILL)


def test_background_writer_does_not_hold_the_call():
    t = time.monotonic()
    r = result(run_exec("--max-output-bytes", "1000", "--shell", "--",
                        "(trap 'exit 0' PIPE; yes) & echo $! >&2"))
    assert time.monotonic() - t < 20
    bg = int(r["stderr"])
    try:
        os.kill(bg, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_invalid_utf8_becomes_replacement_char():
    r = result(run_exec("--", "printf", "a\\377b\\300\\257c\\342\\202"))
    assert r["stdout"] == "a\ufffdb\ufffd\ufffdc\ufffd"
    r = result(run_exec("--", "printf", "\\342\\202\\254 \\000 \"q\""))
    assert r["stdout"] == "\u20ac \0 \"q\""


def test_sigterm_to_agent_reaches_the_command():
    p = subprocess.Popen([AGENT, "exec", "--shell", "--", "echo ready; exec sleep 1000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
    # The result only comes at the end; wait for the child to be running.
    deadline = time.monotonic() + TIMEOUT
    while not any(open("/proc/%s/cmdline" % c, "rb").read().startswith(b"sleep")
                  for c in children(p.pid)):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=TIMEOUT)
    assert p.returncode == 0
    r = json.loads(out[len(SENT):])
    assert r["signal"] == signal.SIGTERM and r["stdout"] == "ready\n" and not r["timed_out"]


@pytest.mark.parametrize("args", [[], ["--"], ["--timeout", "x", "true"], ["--timeout", "-1", "true"],
                                  ["--timeout", "0", "true"], ["--kill-after", "nan", "true"],
                                  ["--max-output-bytes", "1e3", "true"], ["--bogus", "true"],
                                  ["--timeout"]])
def test_usage_errors(args):
    p = run_exec(*args)
    assert p.returncode == 2 and p.stdout == b""
    assert p.stderr.startswith(b"sandbox-agent: exec: ")
    assert p.stderr.count(b"\n") == 1


def test_help():
    p = run_exec("--help")
    assert p.returncode == 0 and b"--max-output-bytes" in p.stdout


def test_timeout_bounded_with_unreaped_group_zombie():
    # The command ignores SIGTERM and leaves a zombie child in its group that
    # nobody reaps (the parent of the agent is a non-reaping subreaper): the
    # group never becomes empty, yet the call must end after kill-after.
    job = ("import os,signal,time\nsignal.signal(signal.SIGTERM,signal.SIG_IGN)\n"
           "if os.fork()==0: os._exit(0)\ntime.sleep(60)")
    p = subprocess.run([PY, os.path.join(os.path.dirname(__file__), "workloads", "nonreaper.py"), AGENT,
                        "exec", "--timeout", "1", "--kill-after", "1", "--", PY, "-c", job],
                       capture_output=True, timeout=40, env=clean_env())
    rc, _, line = p.stdout.decode().partition(" ")
    assert rc == "0", p.stderr
    res = json.loads(line.strip()[len("__SBX_EXEC__"):])
    assert res["timed_out"] is True and res["signal"] == 9


def test_orphan_zombie_of_a_timed_out_group_does_not_hold_the_call():
    # The command dies of SIGTERM, but its child (which ignores it) exits a
    # moment later, orphaned: without exec being a subreaper its zombie went
    # to a parent that never reaps (a non-reaping subreaper here, as a PID 1
    # may be), the group never emptied and the call waited out --kill-after
    # (21 s). exec reaps it itself and returns right after the timeout.
    job = ("import os,signal,time\nif os.fork()==0:\n"
           "    signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(0.5); os._exit(0)\n"
           "time.sleep(60)")
    t0 = time.monotonic()
    p = subprocess.run([PY, os.path.join(os.path.dirname(__file__), "workloads", "nonreaper.py"), AGENT,
                        "exec", "--timeout", "1", "--kill-after", "20", "--", PY, "-c", job],
                       capture_output=True, timeout=60, env=clean_env())
    elapsed = time.monotonic() - t0
    rc, _, line = p.stdout.decode().partition(" ")
    assert rc == "0", p.stderr
    res = json.loads(line.strip()[len("__SBX_EXEC__"):])
    assert res["timed_out"] is True and res["signal"] == signal.SIGTERM
    # Well below the 21 s the unreaped zombie cost, with room for a loaded machine.
    assert elapsed < 15, elapsed
