"""`run` on a terminal and under job control (README "PID 1 duties": Terminal,
Job control): a job that sets `stty tostop` or stops the terminal's output
still gets its sentinel; Ctrl-Z under an interactive shell stops the agent
with its job, and `fg` resumes both; SIGTSTP/SIGTTIN/SIGTTOU sent to the
agent stop it after the job, unless it is PID 1.

Every terminal test runs on a fresh pseudo-terminal (ptys.PtyProc), with
every wait bounded."""
import base64
import http.server
import json
import os
import signal
import threading

import pytest

from conftest import AGENT, PY, RESULT_SENTINEL, children, clean_env, descendants, proc_state, wait_until
from jobs import UNSHARE, Job, py
from ptys import PtyProc

HERE = os.path.dirname(os.path.abspath(__file__))
MINISHELL = os.path.join(HERE, "workloads", "minishell.py")
MODES = [pytest.param(True, id="pid1"), pytest.param(False, id="child")]
# How long a step that should take milliseconds may take on a loaded machine.
STEP = 30


@pytest.fixture
def env(tmp_path):
    os.chmod(tmp_path, 0o777)
    return clean_env(SANDBOX_RESULT=str(tmp_path / "result.json"))


def on_pty(argv, pid1, env):
    """The agent running argv as the session leader of a new terminal (as
    PID 1 of a new PID namespace: under unshare, which leads the session)."""
    return PtyProc((UNSHARE if pid1 else []) + [AGENT, "run", "--"] + argv, env)


def the_sentinel(t):
    s = [l for l in t.lines() if RESULT_SENTINEL.encode() in l]
    assert len(s) == 1, t.out
    assert s[0].startswith(RESULT_SENTINEL.encode()), s[0]
    return json.loads(base64.b64decode(s[0][len(RESULT_SENTINEL):]))


def exit_after(argv, mark, pid1, env):
    """Run argv on a terminal until it prints mark, then to its sentinel and
    exit: (the agent's exit status, the sentinel)."""
    t = on_pty(argv, pid1, env)
    try:
        t.read_until(mark)
        t.read_until(RESULT_SENTINEL.encode(), timeout=STEP)
        code = t.wait(timeout=STEP)
    finally:
        t.close()
    return code, the_sentinel(t)


@pytest.mark.parametrize("pid1", MODES)
def test_tostop_job_still_gets_its_sentinel(pid1, env):
    # With tostop, a write from a background group raises SIGTTOU: the agent
    # once looped on it (100% CPU, no sentinel, no exit) or, as PID 1 in an
    # orphaned group, had the write fail with EIO.
    code, sentinel = exit_after(["sh", "-c", "stty tostop && echo tostop-on; exit 3"], b"tostop-on", pid1, env)
    assert code == 3
    assert sentinel["exit_code"] == 3


@pytest.mark.parametrize("pid1", MODES)
def test_output_stopped_by_the_job_is_restarted(pid1, env):
    # tcflow(TCOOFF) stops the terminal's output: every later write blocks
    # until TCOON, the sentinel's too.
    job = ("import sys, termios\n"
           "print('flow-off', flush=True)\n"
           "termios.tcflow(1, termios.TCOOFF)\n"
           "sys.exit(4)\n")
    code, sentinel = exit_after([PY, "-c", job], b"flow-off", pid1, env)
    assert code == 4
    assert sentinel["exit_code"] == 4


def test_terminal_back_to_the_agent_for_the_report(env):
    # The job had the foreground and is gone (a leftover still in its
    # group); the agent takes the terminal back before it reports. Seen from
    # the webhook, which is POSTed after the sentinel while the agent runs.
    seen = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            seen.append(os.tcgetpgrp(t.fd))  # the master reports the slave's foreground
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    env = dict(env, SANDBOX_JOB_WEBHOOK="http://127.0.0.1:%d/" % srv.server_address[1])
    job = "sleep 1000 </dev/null >/dev/null 2>&1 & exit 0"
    t = on_pty(["sh", "-c", job], False, env)
    try:
        t.read_until(RESULT_SENTINEL.encode(), timeout=STEP)
        assert t.wait(timeout=STEP) == 0
    finally:
        t.close()
        srv.shutdown()
        srv.server_close()
    assert seen == [t.pid]  # the agent leads its session and its group


JOB_WAITS_FOR_CONT = ("import os, signal, sys\n"
                      "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCONT})\n"
                      "print('job ready', flush=True)\n"
                      "signal.sigwait({signal.SIGCONT})\n"
                      "print('job continued fg', os.tcgetpgrp(0) == os.getpgrp(), flush=True)\n"
                      "sys.exit(7)\n")


def test_ctrl_z_under_a_shell_stops_the_agent_and_fg_resumes_the_job(env):
    # The shell waits for the agent's group; Ctrl-Z stops the job's (the
    # foreground). Unless the agent stops too, the shell never gets its
    # prompt back.
    t = PtyProc([PY, MINISHELL, AGENT, "run", "--", PY, "-c", JOB_WAITS_FOR_CONT], env)
    try:
        t.read_until(b"job ready")
        t.write(b"\x1a")  # Ctrl-Z
        t.read_until(b"shell: stopped", timeout=STEP)
        t.write(b"fg\n")
        t.read_until(b"job continued fg True", timeout=STEP)
        t.read_until(b"shell: exit 7", timeout=STEP)
        assert t.wait(timeout=STEP) == 0
    finally:
        t.close()
    assert the_sentinel(t)["exit_code"] == 7


def test_ctrl_z_twice(env):
    job = ("import os, signal, sys\n"
           "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCONT})\n"
           "for i in range(2):\n"
           "    print('job ready', i, flush=True)\n"
           "    signal.sigwait({signal.SIGCONT})\n"
           "print('job done fg', os.tcgetpgrp(0) == os.getpgrp(), flush=True)\n")
    t = PtyProc([PY, MINISHELL, AGENT, "run", "--", PY, "-c", job], env)
    try:
        for i in range(2):
            t.read_until(b"job ready %d" % i)
            t.write(b"\x1a")
            t.read_until(b"shell: stopped", timeout=STEP)
            del t.out[:]
            t.write(b"fg\n")
        t.read_until(b"job done fg True", timeout=STEP)
        t.read_until(b"shell: exit 0", timeout=STEP)
        assert t.wait(timeout=STEP) == 0
    finally:
        t.close()


def stop_signal_job(sig, ack_fd):
    """Blocks sig and SIGCONT, says 'got SIG' on ack_fd once sig came, then
    'got CONT' on stdout. A SIGCONT discards a stop signal still pending, so
    the test sends it only after the 'got' line."""
    return py("import os, signal\n"
              "signal.pthread_sigmask(signal.SIG_BLOCK, {%d, signal.SIGCONT})\n"
              "print('ready', flush=True)\n"
              "signal.sigwait({%d})\n"
              "os.write(%d, b'got %d\\n')\n"
              "signal.sigwait({signal.SIGCONT})\n"
              "print('got CONT', flush=True)\n" % (sig, sig, ack_fd, sig))


SUSPENDS = [pytest.param(s, id=s.name[3:]) for s in (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)]


@pytest.mark.parametrize("sig", SUSPENDS)
def test_terminal_stop_signal_on_a_terminal_reaches_the_job_then_stops_the_agent(sig, env):
    # The job shares the agent's session and terminal: the signal reaches it
    # as it is (it catches it here), then the agent stops itself.
    t = on_pty(stop_signal_job(sig, 1), False, env)
    try:
        t.read_until(b"ready")
        os.kill(t.pid, sig)
        t.read_until(b"got %d" % sig, timeout=STEP)
        wait_until(lambda: proc_state(t.pid) == "T", "the agent to stop itself", timeout=STEP)
        os.kill(t.pid, signal.SIGCONT)
        t.read_until(b"got CONT", timeout=STEP)
        t.read_until(RESULT_SENTINEL.encode(), timeout=STEP)
        assert t.wait(timeout=STEP) == 0
    finally:
        t.close()


@pytest.mark.parametrize("sig", SUSPENDS)
def test_terminal_stop_signal_without_a_terminal_suspends_job_and_agent(sig, env):
    # dumb-init's shell_background test (its setsid mode): the job leads a
    # session of its own, where the kernel ignores a stop signal that is not
    # caught, and this job catches every signal; both must stop all the same,
    # and SIGCONT wakes both, the job seeing it.
    j = Job([PY, os.path.join(HERE, "workloads", "sigreport.py")], pid1=False, env=env, start_new_session=True)
    try:
        grand = int(j.wait_text("grand pid ").split()[2])
        j.wait_text("ready")
        pids = [j.p.pid, children(j.p.pid)[0], grand]
        states = lambda: [proc_state(p) for p in pids]
        j.signal(sig)
        wait_until(lambda: states() == ["T"] * 3, "the agent, the job and its child to stop", timeout=STEP)
        j.signal(signal.SIGCONT)
        j.wait_text("child got %d\n" % signal.SIGCONT)
        j.wait_text("grand got %d\n" % signal.SIGCONT)
        wait_until(lambda: "T" not in states(), "all three to run again", timeout=STEP)
        assert b"got %d\n" % sig not in bytes(j.out), "the job got the stop signal itself, not SIGSTOP"
    finally:
        j.kill()


def test_terminal_stop_signal_suspends_the_job_but_not_pid1(env):
    # PID 1 cannot stop itself (and has no shell to give a prompt back to);
    # its job is suspended all the same, and SIGCONT resumes it.
    j = Job([PY, os.path.join(HERE, "workloads", "sigreport.py")], pid1=True, env=env, start_new_session=True)
    try:
        j.wait_text("ready")
        agent = j.agent_pid()
        job = wait_until(lambda: len(descendants(agent)) == 2 and descendants(agent), "the job and its child")
        j.signal(signal.SIGTSTP)
        wait_until(lambda: [proc_state(p) for p in job] == ["T", "T"], "the job to stop", timeout=STEP)
        assert proc_state(agent) != "T"
        j.signal(signal.SIGCONT)
        j.wait_text("child got %d\n" % signal.SIGCONT)
        assert proc_state(agent) != "T"
    finally:
        j.kill()


# The job's session (README "PID 1 duties": Terminal): with a controlling
# terminal it stays in the agent's session, where the terminal's job control
# is; without one it leads a session of its own.
SESSION_OF = ("import os; s = os.getsid(0); print('session', 'own' if s == os.getpid() else "
              "'agent' if s == os.getsid(os.getppid()) else 'other', flush=True)")


@pytest.mark.parametrize("pid1", MODES)
def test_job_on_a_terminal_stays_in_the_agents_session(pid1, env):
    t = on_pty([PY, "-c", SESSION_OF], pid1, env)
    try:
        t.read_until(RESULT_SENTINEL.encode(), timeout=STEP)
        code = t.wait(timeout=STEP)
    finally:
        t.close()
    assert code == 0 and b"session agent" in t.out, t.out


@pytest.mark.parametrize("pid1", MODES)
def test_job_without_a_terminal_leads_its_own_session(pid1, env):
    # A new session: the agent has no controlling terminal at all, as under
    # `docker run` without -t, even when the tests run on a terminal.
    j = Job(py(SESSION_OF), pid1=pid1, env=env, start_new_session=True)
    try:
        line = j.wait_text("session ")
    finally:
        j.kill()
    assert line == b"session own\n", line
