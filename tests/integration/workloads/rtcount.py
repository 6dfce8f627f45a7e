"""Count real-time signals exactly (Python's own handlers coalesce): block
SIGRTMIN+6 (the burst) and SIGRTMIN+7 (the end marker), print "ready", then
take them one by one with sigwaitinfo until the marker, and print
"count N". The kernel delivers lower real-time numbers first, so every
burst signal queued before the marker is counted before it."""
import os
import signal

BURST, END = signal.SIGRTMIN + 6, signal.SIGRTMIN + 7
signal.pthread_sigmask(signal.SIG_BLOCK, {BURST, END})
os.write(1, b"ready\n")
n = 0
while True:
    si = signal.sigwaitinfo({BURST, END})
    if si.si_signo == END:
        break
    n += 1
os.write(1, ("count %d\n" % n).encode())
