"""Running the agent on a terminal, as `docker run -it` or an interactive shell does.

`PtyProc` starts a command as the session leader of a fresh pseudo-terminal
(its stdin, stdout and stderr are the slave; the test holds the master).
Every wait is bounded: output is read with select() up to a deadline, the
exit is waited for through a pidfd (never a blocking waitpid), and close()
SIGKILLs whatever is left in the terminal's session, so a test that fails
half way cannot hang or leave processes behind.
"""
import os
import pty
import select
import signal
import time

from testlib import TIMEOUT, proc_stats


def session_members(sid):
    """Pids whose session is sid (from /proc/PID/stat)."""
    return [p for p, fields in proc_stats() if int(fields[3]) == sid and fields[0] != "Z"]


def clean_signal_state():
    """What a terminal's login or `docker run -it` starts a session with: no
    signal blocked, none ignored. The test runner's own state must not reach
    the job: the agent passes its start-up mask and ignores on to the job (as
    tini does), so a runner started with SIGINT blocked (as a CI supervisor
    may start it) made the job deaf to Ctrl-C; and Python itself ignores
    SIGPIPE, which exec keeps."""
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    for s in signal.valid_signals():
        if s not in (signal.SIGKILL, signal.SIGSTOP):
            try:
                signal.signal(s, signal.SIG_DFL)
            except (OSError, ValueError):
                pass


class PtyProc:
    def __init__(self, argv, env):
        pid, fd = pty.fork()
        if pid == 0:
            try:
                clean_signal_state()
                os.execve(argv[0], argv, env)
            finally:
                os._exit(99)
        self.pid, self.fd = pid, fd
        self.pidfd = os.pidfd_open(pid)
        self.out = bytearray()
        self.eof = False
        self.status = None

    def _pump(self, deadline):
        """Read what is there, waiting at most until deadline; False on timeout."""
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        fds = [self.pidfd] + ([] if self.eof else [self.fd])
        ready = select.select(fds, [], [], left)[0]
        if self.fd in ready:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:  # EIO: every slave fd is closed
                chunk = b""
            if chunk:
                self.out.extend(chunk)
            else:
                self.eof = True
        if self.pidfd in ready and self.status is None:
            p, st = os.waitpid(self.pid, os.WNOHANG)
            if p == self.pid:
                self.status = st
        return True

    def read_until(self, token, timeout=TIMEOUT):
        """Wait until token is in the output; fails naming what was read."""
        deadline = time.monotonic() + timeout
        while token not in self.out:
            assert not (self.eof and self.status is not None), "EOF before %r; output: %r" % (token, bytes(self.out))
            assert self._pump(deadline), "no %r within %ss; output: %r" % (token, timeout, bytes(self.out))
        return bytes(self.out)

    def write(self, data):
        os.write(self.fd, data)

    def wait(self, timeout=TIMEOUT):
        """The exit code of the session leader, reading its output meanwhile
        (until EOF or a short while after the exit); fails after timeout."""
        deadline = time.monotonic() + timeout
        while self.status is None:
            assert self._pump(deadline), "still running after %ss; output: %r" % (timeout, bytes(self.out))
        drain = min(deadline, time.monotonic() + 5)
        while not self.eof and self._pump(drain):
            pass
        return os.waitstatus_to_exitcode(self.status)

    def close(self):
        """SIGKILL everything left in the terminal's session, reap, close."""
        for _ in range(100):
            left = session_members(self.pid)
            if not left:
                break
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if self.status is None:
                self._pump(time.monotonic() + 0.05)
        if self.status is None:
            self._pump(time.monotonic() + 5)
        if self.status is None:
            p, st = os.waitpid(self.pid, os.WNOHANG)
            if p == self.pid:
                self.status = st
        os.close(self.pidfd)
        os.close(self.fd)

    def lines(self):
        return bytes(self.out).replace(b"\r\n", b"\n").split(b"\n")
