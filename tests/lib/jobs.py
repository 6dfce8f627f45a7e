"""Running the agent as a host SDK or a container runtime would.

`Job` starts `sandbox-agent run` (as PID 1 of a fresh PID namespace, or as an
ordinary child), reads its stdout line by line on a thread so a test can wait
for a readiness line with a deadline, and finds the agent's host pid so the
test can signal it the way `docker stop` does.
"""
import os
import signal
import subprocess
import threading
import time

from testlib import AGENT, TIMEOUT, agent_pid, clean_env, descendants, one_sentinel

UNSHARE = ["/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]


def agent_argv(argv, pid1=True, wrap=(), agent=None):
    base = list(wrap) + [agent or AGENT, "run"]
    if argv is not None:
        base += ["--"] + list(argv)
    return (UNSHARE if pid1 else []) + base


def run(argv=None, pid1=True, env=None, wrap=(), timeout=TIMEOUT, agent=None, **kw):
    """Run to completion; returns CompletedProcess with bytes stdout/stderr.
    agent: another binary than AGENT (a copy any user can run)."""
    return subprocess.run(agent_argv(argv, pid1, wrap, agent), env=env if env is not None else clean_env(),
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, **kw)


class Job:
    def __init__(self, argv=None, pid1=True, env=None, wrap=(), **kw):
        self.pid1 = pid1
        self.p = subprocess.Popen(agent_argv(argv, pid1, wrap), env=env if env is not None else clean_env(),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
        self.all_lines = []          # every stdout line so far, in order
        self.claimed = set()         # indices already returned by wait_line
        self.closed = False
        self.cond = threading.Condition()
        self.out = bytearray()
        self.err = bytearray()
        self._t_out = threading.Thread(target=self._pump, args=(self.p.stdout, self.out, True), daemon=True)
        self._t_err = threading.Thread(target=self._pump, args=(self.p.stderr, self.err, False), daemon=True)
        self._t_out.start()
        self._t_err.start()

    def _pump(self, f, sink, split):
        for line in iter(f.readline, b""):
            with self.cond:
                sink.extend(line)
                if split:
                    self.all_lines.append(line)
                self.cond.notify_all()
        if split:
            with self.cond:
                self.closed = True
                self.cond.notify_all()

    def wait_line(self, predicate, timeout=TIMEOUT):
        """Wait for a stdout line, in any order relative to others, for which
        predicate(line) is true and that no earlier wait returned; returns it."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for i, line in enumerate(self.all_lines):
                    if i not in self.claimed and predicate(line):
                        self.claimed.add(i)
                        return line
                if self.closed:
                    raise AssertionError("stdout closed before a matching line; stdout: %r stderr: %r"
                                         % (bytes(self.out[-2000:]), bytes(self.err[-2000:])))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("no matching line within %ss; stdout so far: %r stderr: %r"
                                         % (timeout, bytes(self.out[-2000:]), bytes(self.err[-2000:])))
                self.cond.wait(left)

    def wait_text(self, text, timeout=TIMEOUT):
        return self.wait_line(lambda l: text.encode() in l, timeout)

    def agent_pid(self):
        """Host pid of the agent: unshare's child when PID 1, else the process itself."""
        return agent_pid(self.p, self.pid1)

    def signal(self, sig):
        os.kill(self.agent_pid(), sig)

    def finish(self, timeout=TIMEOUT):
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        self._t_out.join(timeout)
        self._t_err.join(timeout)
        return rc

    def sentinel(self):
        return one_sentinel(bytes(self.out))

    def kill(self):
        """Kill the agent and, when it is not PID 1 of a namespace that takes
        everything with it, whatever it left running: a test never leaves a
        process behind."""
        left = [] if self.pid1 else descendants(self.p.pid)
        for pid in [self.p.pid] + left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.p.wait()


def py(code):
    """argv running a Python snippet with the system interpreter."""
    return ["/usr/bin/python3", "-c", code]
