"""Bench: `fs` ops and `exec` against what a platform runs today for the
same job: the `python3 -c` one-liners of the SDK's directory helpers, the
coreutils pipelines of the backend contract (find -printf, stat,
head -c | base64), and `timeout` for a bounded command. Every comparison is
one hyperfine run, side by side, so both sides see the same machine state.
Called by tests/bench/bench.py as bench(agent_path); runnable alone too."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

PY = "/usr/bin/python3"

PY_LIST = ("import json, os, stat, sys\n"
           "p = sys.argv[1]; out = []\n"
           "for n in os.listdir(p):\n"
           "    f = os.path.join(p, n); st = os.lstat(f)\n"
           "    e = {'name': n, 'path': f, 'type': 'dir' if stat.S_ISDIR(st.st_mode) else 'file',\n"
           "         'size': st.st_size, 'mode': stat.S_IMODE(st.st_mode), 'mtime': st.st_mtime,\n"
           "         'uid': st.st_uid, 'gid': st.st_gid}\n"
           "    out.append(e)\n"
           "sys.stdout.write('__SBX_FS__' + json.dumps({'ok': True, 'path': p, 'entries': out}) + '\\n')\n")
PY_STAT = ("import json, os, stat, sys\n"
           "p = sys.argv[1]; st = os.lstat(p)\n"
           "e = {'name': os.path.basename(p), 'path': p, 'type': 'file', 'size': st.st_size,\n"
           "     'mode': stat.S_IMODE(st.st_mode), 'mtime': st.st_mtime, 'uid': st.st_uid, 'gid': st.st_gid}\n"
           "sys.stdout.write('__SBX_FS__' + json.dumps({'ok': True, 'entry': e}) + '\\n')\n")
PY_MKDIR = ("import json, os, sys\n"
            "p = sys.argv[1]; c = not os.path.isdir(p)\n"
            "os.makedirs(p, exist_ok=True)\n"
            "sys.stdout.write('__SBX_FS__' + json.dumps({'ok': True, 'created': c}) + '\\n')\n")
PY_READ = ("import sys\n"
           "with open(sys.argv[1], 'rb') as f: sys.stdout.buffer.write(f.read())\n")


def q(s):
    return "'" + s.replace("'", "'\\''") + "'"


def hyperfine(cmds, runs=30):
    """Mean seconds of each command (shell-less), measured in one run."""
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        subprocess.run(["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--style", "none",
                        "--export-json", out] + cmds, check=True, stdout=subprocess.DEVNULL)
        return [r["mean"] for r in json.load(open(out))["results"]]
    finally:
        os.unlink(out)


def bench(agent):
    rows = []
    work = tempfile.mkdtemp(prefix="bench-fs-")
    try:
        d = os.path.join(work, "dir1000")
        os.mkdir(d)
        for i in range(1000):
            with open(os.path.join(d, "file-%04d" % i), "wb") as f:
                f.write(b"x" * i)
        f4 = os.path.join(work, "four-mib")
        with open(f4, "wb") as f:
            f.write(os.urandom(4 << 20))
        one = os.path.join(d, "file-0500")
        newdir = os.path.join(work, "new", "dir")

        cases = [
            ("fs list (1,000 entries)", [agent, "fs", "list", d],
             [("python3 -c", [PY, "-c", PY_LIST, d]),
              ("find -printf", ["find", d, "-mindepth", "1", "-maxdepth", "1", "-printf", "%y %s %m %T@ %U %G %f\\0"])]),
            ("fs stat", [agent, "fs", "stat", one],
             [("python3 -c", [PY, "-c", PY_STAT, one]), ("stat", ["stat", "-c", "%F %s %a %Y %u %g %n", one])]),
            ("fs mkdir --parents", [agent, "fs", "mkdir", "--parents", newdir],
             [("python3 -c", [PY, "-c", PY_MKDIR, newdir]), ("mkdir -p", ["mkdir", "-p", newdir])]),
            ("fs read (4 MiB)", [agent, "fs", "read", f4],
             [("python3 -c", [PY, "-c", PY_READ, f4]),
              ("head -c | base64", ["sh", "-c", "head -c 4194305 -- %s | base64" % q(f4)])]),
            ("exec -- true", [agent, "exec", "--timeout", "10", "--", "true"],
             [("timeout 10 true", ["timeout", "10", "true"])]),
        ]
        for what, acmd, baselines in cases:
            cmds = [" ".join(q(a) for a in acmd)] + [" ".join(q(a) for a in b) for _, b in baselines]
            means = hyperfine(cmds)
            for (bname, _), bmean in zip(baselines, means[1:]):
                rows.append({"what": what, "agent": means[0] * 1000, "baseline_name": bname,
                             "baseline": bmean * 1000, "unit": "ms"})
        # Memory: fs list of 200,000 entries, peak RSS (streaming keeps it flat).
        big = os.path.join(work, "big")
        os.mkdir(big)
        fd = os.open(big, os.O_RDONLY)
        for i in range(200_000):
            os.close(os.open("e%06d" % i, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        os.close(fd)

        def rss(cmd):
            r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, check=True)
            return float(r.stderr.split()[-1])

        rows.append({"what": "fs list (200,000 entries) peak RSS", "agent": rss([agent, "fs", "list", big]),
                     "baseline_name": "python3 -c", "baseline": rss([PY, "-c", PY_LIST, big]), "unit": "KiB"})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


if __name__ == "__main__":
    agent = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/sandbox-agent")
    for r in bench(agent):
        print("%-38s agent %10.2f %-4s  %-18s %10.2f  (%.1fx)" % (
            r["what"], r["agent"], r["unit"], r["baseline_name"], r["baseline"],
            r["baseline"] / r["agent"] if r["agent"] else 0))
