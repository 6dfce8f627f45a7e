"""A job that reports every signal it receives, and has a grandchild in its
process group that does the same. Lines: "ready", "child got N", "grand got N".
With argv[1] == "ignore-term" both ignore SIGTERM and SIGINT."""
import os
import select
import signal
import sys

IGNORE = len(sys.argv) > 1 and sys.argv[1] == "ignore-term"
SKIP = {signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD, signal.SIGPIPE, signal.SIGSEGV, signal.SIGBUS,
        signal.SIGFPE, signal.SIGILL, signal.SIGTRAP, signal.SIGSYS}


def install(who):
    def h(sig, frame):
        os.write(1, ("%s got %d\n" % (who, sig)).encode())
    for s in list(range(1, 32)) + list(range(signal.SIGRTMIN, signal.SIGRTMAX + 1)):
        if s in SKIP:
            continue
        try:
            if IGNORE and s in (signal.SIGTERM, signal.SIGINT):
                signal.signal(s, signal.SIG_IGN)
            else:
                signal.signal(s, h)
        except (OSError, ValueError):
            pass


def waker():
    """The read end of a pipe the C-level handler writes to whenever a
    signal lands (set before anything tells the test it may signal)."""
    wr, ww = os.pipe()
    os.set_blocking(ww, False)
    signal.set_wakeup_fd(ww)
    return wr


def idle(wr):
    """Wait for signals forever, their handlers running as they come. Not
    signal.pause(): a signal that lands after the interpreter's last check
    and before pause() is only handled at the next one, and a test waiting
    for its line would wait forever; the wakeup fd is readable by then."""
    while True:
        select.select([wr], [], [])
        os.read(wr, 512)


r, w = os.pipe()
pid = os.fork()
if pid == 0:
    install("grand")
    wr = waker()
    os.close(r)
    os.write(w, b"x")
    os.write(1, ("grand pid %d\n" % os.getpid()).encode())
    idle(wr)
install("child")
wr = waker()
os.close(w)
os.read(r, 1)  # the grandchild's handlers are in place
os.write(1, b"ready\n")
idle(wr)
