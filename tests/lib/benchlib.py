"""Helpers shared by the bench modules: hyperfine runs and RSS readings;
children, free_port and proc_status_kib are testlib.py's."""
import json
import os
import subprocess
import sys
import tempfile
import time


from testlib import children, free_port, proc_status_kib  # noqa: F401


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
        return proc_status_kib(p.pid, "VmRSS")
    finally:
        p.kill()
        p.wait()
        for c in children(p.pid):
            try:
                os.kill(c, 9)
            except ProcessLookupError:
                pass
