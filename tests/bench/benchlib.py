"""Helpers shared by the bench modules: hyperfine runs and RSS readings."""
import json
import os
import subprocess
import tempfile
import time


def hyperfine(commands, runs=200, warmup=20, env=None):
    """Mean wall time in ms of each command (a list of argv strings), all
    measured in one hyperfine run. Returns {name: mean_ms}."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        argv = ["hyperfine", "-N", "--style", "none", "--runs", str(runs), "--warmup", str(warmup),
                "--export-json", out.name]
        names = []
        for name, cmd in commands:
            argv += ["-n", name, cmd]
            names.append(name)
        subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        data = json.load(open(out.name))
    return {r["command"]: r["mean"] * 1000.0 for r in data["results"]}


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS for %d" % pid)


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []


def supervisor_rss(argv, env=None):
    """RSS (KiB) of a supervisor process once its child is running."""
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not children(p.pid):
            if time.monotonic() > deadline:
                raise RuntimeError("no child under %s" % argv)
            time.sleep(0.01)
        time.sleep(0.2)  # let it settle into its wait loop
        return rss_kib(p.pid)
    finally:
        p.kill()
        p.wait()
        for c in children(p.pid):
            try:
                os.kill(c, 9)
            except ProcessLookupError:
                pass
