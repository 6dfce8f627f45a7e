#!/usr/bin/python3
"""Check that #include lines run one way: agent/main.c -> modes -> services -> core.

  core      agent/core/        includes only the core
  service   agent/files/, inotify/tree/, agent/proc/, agent/forward/ (the
                               port forwarder), and the API's layers
                               the core, its own folder and the services its
                               SERVICE_USES entry names (what several modes
                               use beyond the core: file operations, the watched
                               tree, the process table, the envd API)
            The API in layers: http (HTTP/1.1) <- connect (Connect framing)
            <- process, filesystem, rest (the services it serves; rest may use
            filesystem's entries and watches), ops (the orchestrator's
            routes: /metrics, /init, the token) <- agent/api (configuration,
            start, stop, the routes); asuser (who a request acts as, and
            the defaults /init sets) beside them, used by the services. The
            port forwarder uses the core only; agent/api starts and stops it.
  mode      one folder each    the core, the services and its own folder, never
                               another mode
  dispatch  agent/main.c       the modes' entry headers and the core

Every source folder must be listed below, so a new folder is classified on
purpose. Prints each violation and exits 1 when there is one.
usage: tests/layers.py [ROOT]
"""
import os
import re
import sys

CORE = "agent/core"
API = "agent/api"
HTTP, CONNECT, ASUSER = API + "/http", API + "/connect", API + "/asuser"
PROCESS, FILESYSTEM, REST = API + "/process", API + "/filesystem", API + "/rest"
OPS = API + "/ops"
FORWARD = "agent/forward"
SERVICES = ["agent/files", "inotify/tree", "agent/proc", FORWARD, HTTP, CONNECT, ASUSER, PROCESS, FILESYSTEM, REST,
            OPS, API]
# A service may use another only along these edges (no cycles): the API's
# layers one way, and the services the API speaks for (the process table,
# the file operations, the watched tree).
SERVICE_USES = {
    CONNECT: [HTTP],
    PROCESS: [CONNECT, HTTP, ASUSER, "agent/proc"],
    FILESYSTEM: [CONNECT, HTTP, ASUSER, "agent/files", "inotify/tree"],
    REST: [HTTP, CONNECT, ASUSER, FILESYSTEM, "agent/files"],
    OPS: [HTTP, CONNECT, ASUSER],
    API: [HTTP, CONNECT, ASUSER, PROCESS, FILESYSTEM, REST, OPS, "agent/proc", FORWARD],
}
MODES = ["agent/fs", "agent/mcp", "agent/session", "agent/serve", "runner/run", "runner/exec",
         "inotify/watch"]
DISPATCH = "agent/main.c"
SOURCE_ROOTS = ["agent", "runner", "inotify"]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(path):
    return os.path.dirname(path)


def layer(path):
    d = folder_of(path)
    if path == DISPATCH:
        return "dispatch"
    if d == CORE:
        return "core"
    if d in SERVICES:
        return "service"
    if d in MODES:
        return "mode"
    return None


def allowed(src, dst):
    ls, ld = layer(src), layer(dst)
    if ld is None:
        return False, "includes %s, which is in no known layer" % dst
    if ld == "core":
        return True, ""
    if folder_of(src) == folder_of(dst):
        return True, ""
    if ls == "core":
        return False, "the core includes %s (%s)" % (dst, ld)
    if ls == "service" and ld == "service" and folder_of(dst) in SERVICE_USES.get(folder_of(src), []):
        return True, ""
    if ls == "service":
        return False, "service %s includes %s (%s); a service uses the core and the services listed in SERVICE_USES" % (folder_of(src), dst, ld)
    if ls == "mode" and ld == "mode":
        return False, "mode %s includes another mode's %s" % (folder_of(src), dst)
    if ls == "mode" and ld == "service":
        return True, ""
    if ls == "dispatch" and ld == "mode":
        return True, ""
    return False, "%s includes %s (%s)" % (ls, dst, ld)


def self_test():
    """The checker must refuse what it exists to refuse."""
    cases = [("agent/core/a.c", "agent/session/s.h", False), ("agent/files/f.c", "inotify/tree/t.h", False),
             ("runner/run/r.c", "runner/exec/e.h", False), ("runner/run/r.c", "agent/files/f.h", True),
             ("agent/main.c", "runner/run/run.h", True), ("agent/session/s.c", "agent/session/m.h", True),
             ("agent/core/a.c", "agent/core/b.h", True), ("agent/fs/f.c", "tests/unit/x.h", False),
             ("agent/api/a.c", "agent/proc/p.h", True), ("agent/proc/p.c", "agent/api/a.h", False),
             ("agent/api/http/c.c", "agent/api/connect/r.h", False), ("agent/api/connect/r.c", "agent/api/http/c.h", True),
             ("agent/api/filesystem/f.c", "agent/api/rest/u.h", False), ("agent/api/rest/u.c", "agent/api/filesystem/w.h", True),
             ("agent/api/process/p.c", "agent/files/f.h", False),
             ("agent/api/a.c", "agent/forward/forward.h", True), ("agent/forward/f.c", "agent/api/http/l.h", False)]
    for src, dst, want in cases:
        got = allowed(src, dst)[0]
        if got != want:
            print("layers: self-test: %s -> %s gave %s" % (src, dst, got))
            return 1
    return 0


def main():
    if self_test():
        return 1
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    os.chdir(root)
    bad = []
    files = 0
    for top in SOURCE_ROOTS:
        for dirpath, _, names in os.walk(top):
            for name in sorted(names):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                files += 1
                if layer(path) is None:
                    bad.append("%s: folder %s is in no layer (add it to tests/layers.py)"
                               % (path, folder_of(path)))
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        dst = m.group(1)
                        if "/" not in dst:
                            bad.append("%s:%d: include \"%s\" by its full path from the top"
                                       % (path, lineno, dst))
                            continue
                        ok, why = allowed(path, dst)
                        if not ok:
                            bad.append("%s:%d: %s" % (path, lineno, why))
    for b in bad:
        print("layers: " + b)
    print("layers: %d files checked, %d violations" % (files, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
