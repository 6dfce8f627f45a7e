#!/usr/bin/python3
"""Check the shape of the source tree, beside tests/layers.py's include
direction (both run by make test):

  names    every function a .c file exports (defines without `static`)
           starts with the file's name: FILE_ or FOLDER_FILE_ (or is FILE,
           FOLDER_FILE), FOLDER being the file's own folder, so a reader finds
           a function's file from its name (agent/api/http/conn.c: conn_*;
           agent/files/write.c: files_write*)
  shares   no folder holds more than MAX_SHARE of the production lines
  circles  no circle of includes between files spans two folders (a circle
           inside one folder is one unit split in files)
  guards   a header's include guard is its path: agent/api/http/conn.h is
           SA_API_HTTP_CONN_H (runner/ and inotify/ keep their top folder)

Prints each violation and exits 1 when there is one.
usage: tests/tree.py [ROOT]
"""
import os
import re
import sys

SOURCE_ROOTS = ["agent", "runner", "inotify"]
MAX_SHARE = 0.20
# main() is the program's, not a file's.
EXEMPT = {"agent/main.c": {"main"}}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# A definition at the left margin: "type name(" with the body's brace on
# this line or the next; declarations end with ';' and are not definitions.
DEF = re.compile(r'^(?!static\b|typedef\b|struct\b[^(]*;|#)[A-Za-z_][\w \*]*?\b([a-z_][a-z0-9_]*)\s*\(')


def sources():
    for top in SOURCE_ROOTS:
        for dirpath, _, names in os.walk(top):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    yield os.path.join(dirpath, name)


def exported(path):
    """(line, name) of every function path defines without static."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    out = []
    for i, line in enumerate(lines):
        m = DEF.match(line)
        if not m or line.rstrip().endswith(";"):
            continue
        # The definition's body: '{' ends this line or starts one below
        # (a prototype split over lines ends with ';' first).
        j = i
        while j < len(lines) and not lines[j].rstrip().endswith((")", "{", ";")):
            j += 1
        tail = lines[j].rstrip() if j < len(lines) else ""
        nxt = lines[j + 1].strip() if j + 1 < len(lines) else ""
        if tail.endswith("{") or (tail.endswith(")") and nxt == "{"):
            out.append((i + 1, m.group(1)))
    return out


def prefixes(path):
    folder = os.path.basename(os.path.dirname(path))
    stem = os.path.splitext(os.path.basename(path))[0]
    return [stem, folder + "_" + stem] if stem != folder else [stem]


def check_names():
    bad = []
    for path in sources():
        if not path.endswith(".c"):
            continue
        ok = prefixes(path)
        for lineno, name in exported(path):
            if name in EXEMPT.get(path, ()):
                continue
            if not any(name == p or name.startswith(p + "_") for p in ok):
                bad.append("%s:%d: exports %s, not named %s" % (path, lineno, name, " or ".join(p + "_*" for p in ok)))
    return bad


def count_lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return sum(1 for _ in f)


def check_shares(report):
    per = {}
    for path in sources():
        d = os.path.dirname(path)
        per[d] = per.get(d, 0) + count_lines(path)
    total = sum(per.values())
    bad = []
    for d, n in sorted(per.items()):
        if report:
            print("tree: %-24s %6d lines %5.1f%%" % (d, n, 100.0 * n / total))
        if n > MAX_SHARE * total:
            bad.append("%s holds %d of %d production lines (%.1f%%, more than %d%%)"
                       % (d, n, total, 100.0 * n / total, MAX_SHARE * 100))
    return bad


def unit(path):
    """A file's unit: its folder and stem (x.c and x.h are one)."""
    return os.path.splitext(path)[0]


def include_graph():
    g = {}
    for path in sources():
        u = unit(path)
        g.setdefault(u, set())
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = INCLUDE.match(line)
                if m and "/" in m.group(1):
                    v = unit(m.group(1))
                    if v != u:
                        g[u].add(v)
    return g


def strongly_connected(g):
    """Tarjan's components of g, iteratively (no recursion limit)."""
    index, low, on, stack, comps, n = {}, {}, set(), [], [], [0]
    for root in g:
        if root in index:
            continue
        work = [(root, iter(g.get(root, ())))]
        index[root] = low[root] = n[0]
        n[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = n[0]
                    n[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(g.get(w, ()))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    comps.append(sorted(comp))
    return comps


def check_circles():
    bad = []
    for comp in strongly_connected(include_graph()):
        folders = sorted({os.path.dirname(u) for u in comp})
        if len(comp) > 1 and len(folders) > 1:
            bad.append("a circle of includes spans %s: %s" % (", ".join(folders), " -> ".join(comp)))
    return bad


def guard_of(path):
    p = path[len("agent/"):] if path.startswith("agent/") else path
    return "SA_" + re.sub(r"[^A-Za-z0-9]", "_", p[:-2]).upper() + "_H"


def check_guards():
    bad = []
    for path in sources():
        if not path.endswith(".h"):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            m = re.search(r"^#ifndef (\w+)\n#define \1\n", f.read(), re.M)
        want = guard_of(path)
        if not m or m.group(1) != want:
            bad.append("%s: include guard %s, not %s" % (path, m.group(1) if m else "missing", want))
    return bad


def self_test():
    g = {"a/x": {"a/y"}, "a/y": {"a/x", "b/z"}, "b/z": {"a/x"}, "c/w": set()}
    comps = [c for c in strongly_connected(g) if len(c) > 1]
    if comps != [["a/x", "a/y", "b/z"]]:
        print("tree: self-test: components %r" % comps)
        return 1
    if prefixes("agent/files/write.c") != ["write", "files_write"] or prefixes("agent/api/api.c") != ["api"]:
        print("tree: self-test: prefixes")
        return 1
    return 0


def main():
    if self_test():
        return 1
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    os.chdir(root)
    report = "-v" in sys.argv
    bad = check_names() + check_shares(report) + check_circles() + check_guards()
    for b in bad:
        print("tree: " + b)
    print("tree: names, folder shares, include circles and guards checked, %d violations" % len(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
