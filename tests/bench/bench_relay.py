"""The job's stdout at volume: a job writes 1 GiB to stdout under the agent
(relayed: tee + splice), under tini (which relays nothing: the job writes to
the pipe itself), and through a bare `cat` between two pipes; the reader is
`dd of=/dev/null` in every case. Also the supervisor's own CPU time per GiB
(utime + stime of the agent alone, read from /proc while it is a zombie, so
the job's time is not counted). Each figure is the median of 3 runs,
interleaved."""
import os
import shutil
import statistics
import subprocess
import time

GIB = 1 << 30
JOB = ["dd", "if=/dev/zero", "bs=1M", "count=1024", "status=none"]
READER = ["dd", "of=/dev/null", "bs=1M", "status=none"]
RUNS = 3


def own_cpu_seconds(pid):
    """utime + stime of pid itself, once it has exited but is not reaped."""
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pipeline(stages, measured, env):
    """Run stages (argvs) as a pipeline into READER; returns (seconds, CPU
    seconds of stage number `measured`, or None)."""
    t0 = time.monotonic()
    procs, prev = [], None
    for argv in stages + [READER]:
        p = subprocess.Popen(argv, stdin=prev if prev is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE if argv is not READER else subprocess.DEVNULL, env=env)
        if prev is not None:
            prev.close()
        prev = p.stdout
        procs.append(p)
    cpu = own_cpu_seconds(procs[measured].pid) if measured is not None else None
    for p in procs:
        if p.wait(timeout=600) != 0:
            raise RuntimeError("%s exited with %d" % (p.args, p.returncode))
    return time.monotonic() - t0, cpu


def bench(agent):
    env = dict(os.environ, SANDBOX_RESULT="/tmp/sa-bench/result.json")
    cases = {  # the stages, and which one is the relay whose CPU time counts
        "sandbox-agent": ([[agent, "run", "--"] + JOB], 0),
        "tini": ([["/usr/bin/tini", "-s", "--"] + JOB], 0),
        "cat": ([JOB, ["cat"]], 1),
        "bare pipe": ([JOB], None),
    }
    secs = {k: [] for k in cases}
    cpu = {k: [] for k in cases}
    for _ in range(RUNS):
        for name, (stages, measured) in cases.items():
            s, c = pipeline(stages, measured, env)
            secs[name].append(s)
            cpu[name].append(c)
    mbps = {k: GIB / 1e6 / statistics.median(v) for k, v in secs.items()}
    rows = []
    for other in ("tini", "cat", "bare pipe"):
        rows.append({"what": "1 GiB job stdout, throughput", "agent": mbps["sandbox-agent"],
                     "baseline_name": other, "baseline": mbps[other], "unit": "MB/s"})
    # tini copies nothing (the job writes to the pipe itself): its figure is
    # the floor; cat copies every byte through user space.
    for other in ("tini", "cat"):
        rows.append({"what": "relay's own CPU per GiB", "agent": statistics.median(cpu["sandbox-agent"]),
                     "baseline_name": other, "baseline": statistics.median(cpu[other]), "unit": "s"})
    shutil.rmtree("/tmp/sa-bench", ignore_errors=True)
    return rows
