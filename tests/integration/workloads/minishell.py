"""An interactive shell's job control, in small: run argv[1:] as a foreground
job of the terminal (stdin), report when it stops or exits, and continue it
(`fg`) when a line "fg" is read from the terminal.

Prints "shell: stopped N" (the job's stop signal), "shell: exit N". Like
bash, it ignores SIGTSTP, SIGTTIN and SIGTTOU itself, puts the job in a
process group of its own, gives that group the foreground (in the parent
and the child, so neither order races), and takes the terminal back
whenever waitpid(WUNTRACED) returns.
"""
import os
import signal
import sys

for s in (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
    signal.signal(s, signal.SIG_IGN)

pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.tcsetpgrp(0, os.getpgrp())
    for s in (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
        signal.signal(s, signal.SIG_DFL)
    os.execv(sys.argv[1], sys.argv[1:])
try:
    os.setpgid(pid, pid)
except PermissionError:  # the child has already exec'd, after its own setpgid
    pass
os.tcsetpgrp(0, pid)

while True:
    _, status = os.waitpid(pid, os.WUNTRACED)
    os.tcsetpgrp(0, os.getpgrp())
    if os.WIFSTOPPED(status):
        print("shell: stopped %d" % os.WSTOPSIG(status), flush=True)
        line = sys.stdin.readline()
        if line.strip() != "fg":
            os.killpg(pid, signal.SIGKILL)
            continue
        os.tcsetpgrp(0, pid)
        os.killpg(pid, signal.SIGCONT)
        continue
    print("shell: exit %d" % os.waitstatus_to_exitcode(status), flush=True)
    sys.exit(0)
