"""A hostile workload: tries every way the contract names to learn the nonce
and writes whatever bytes it obtained, plus a verdict per probe, to argv[1].
argv[2:] names the probes: env, environ, cmdline, mem, fd, ptrace."""
import ctypes
import json
import os
import sys

out_path = sys.argv[1]
probes = set(sys.argv[2:])
agent = os.getppid()
found = bytearray()
verdict = {}


def grab(name, fn):
    try:
        data = fn()
        found.extend(data)
        verdict[name] = "read %d bytes" % len(data)
    except Exception as e:  # noqa: BLE001 - every failure is a verdict
        verdict[name] = "denied: %s" % type(e).__name__


def read(path, n=1 << 20):
    with open(path, "rb", buffering=0) as f:
        return f.read(n)


if "env" in probes:
    grab("env", lambda: "\n".join("%s=%s" % kv for kv in os.environ.items()).encode())
if "environ" in probes:
    grab("environ_1", lambda: read("/proc/1/environ"))
    grab("environ_agent", lambda: read("/proc/%d/environ" % agent))
if "cmdline" in probes:
    grab("cmdline_1", lambda: read("/proc/1/cmdline"))
    grab("cmdline_agent", lambda: read("/proc/%d/cmdline" % agent))
if "mem" in probes:
    def mem():
        data = bytearray()
        with open("/proc/%d/maps" % agent) as m:
            ranges = [l.split()[0] for l in m if l.split()[1].startswith("r")]
        with open("/proc/%d/mem" % agent, "rb", buffering=0) as f:
            for r in ranges:
                lo, hi = (int(x, 16) for x in r.split("-"))
                try:
                    f.seek(lo)
                    data.extend(f.read(min(hi - lo, 64 << 20)))
                except OSError:
                    pass
        if not data:
            raise PermissionError("nothing readable")
        return bytes(data)
    grab("mem", mem)
if "fd" in probes:
    def fds():
        # Listing the numbers may be allowed (root passes the directory's
        # mode); what counts is whether any fd can be opened through it.
        data = bytearray()
        opened = 0
        names = os.listdir("/proc/%d/fd" % agent)
        for n in names:
            try:
                fd = os.open("/proc/%d/fd/%s" % (agent, n), os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                continue
            opened += 1
            try:
                data.extend(os.read(fd, 1 << 16))
            except OSError:
                pass
            os.close(fd)
        if not opened:
            raise PermissionError("listed %d fds, opened none" % len(names))
        return bytes(data)
    grab("fd", fds)
if "ptrace" in probes:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    r = libc.ptrace(16, agent, None, None)  # PTRACE_ATTACH
    if r == 0:
        verdict["ptrace"] = "attached"
        libc.ptrace(17, agent, None, None)  # PTRACE_DETACH
    else:
        verdict["ptrace"] = "denied: errno %d" % ctypes.get_errno()
with open("/proc/self/status") as f:
    cap = [l.split()[1] for l in f if l.startswith("CapEff")][0]
verdict["uid"] = os.getuid()
verdict["ptrace_cap"] = bool(int(cap, 16) & (1 << 19))
with open(out_path, "wb") as f:
    f.write(json.dumps(verdict).encode() + b"\n" + bytes(found))
