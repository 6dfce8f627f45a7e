"""A parent that is a child subreaper and never reaps: runs argv[1:] and
prints its exit code. Orphans of the command become zombies under it that
stay members of their process group."""
import ctypes
import subprocess
import sys

ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)
out = p.stdout.read()
print(p.wait(), out.decode(errors="replace"), flush=True)
