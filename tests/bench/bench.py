"""`make bench`: every tests/bench/bench_*.py module, side by side in one run.

Each module's bench(agent) returns rows
  {"what", "agent", "baseline_name", "baseline", "unit"[, "goal"][, "note"]}
measured in the same run; this prints them as one table with the ratio
baseline / agent (> 1 means the agent is better for "lower is better" units).
A row's goal is the least advantage asked of it (issue 12's "at most 1.10 of
the floor" is goal 1/1.10 = 0.91x): the goal column says whether it is met.
Notes are printed under the table; the load average before and after too.
Usage: bench.py AGENT [MODULE_NAME...]
"""
import importlib
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# The helpers every suite shares (benchlib, servelib, cbench, testlib, connectc).
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))

HIGHER_IS_BETTER = {"req/s", "events", "x", "MB/s", "cmds/s"}


def fmt(v):
    if isinstance(v, str):
        return v
    if v is None:
        return "-"
    if abs(v) >= 100:
        return "%.0f" % v
    if abs(v) >= 1:
        return "%.2f" % v
    return "%.3f" % v


def advantage(row):
    a, b = row.get("agent"), row.get("baseline")
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or not a or not b:
        return None
    unit = row.get("unit", "")
    higher = unit in HIGHER_IS_BETTER or "higher is better" in unit
    return (a / b) if higher else (b / a)


def ratio(row):
    r = advantage(row)
    return "-" if r is None else "%.2fx" % r if r < 10 else "%.1fx" % r


def goal(row):
    g = row.get("goal")
    if g is None:
        return ""
    r = advantage(row)
    return ">=%.2fx %s" % (g, "-" if r is None else "ok" if r >= g else "MISS")


def main():
    agent = os.path.abspath(sys.argv[1])
    wanted = sys.argv[2:]
    mods = sorted(f[:-3] for f in os.listdir(HERE) if f.startswith("bench_") and f.endswith(".py"))
    if wanted:
        mods = [m for m in mods if m in wanted or m[len("bench_"):] in wanted]
    rows, failures = [], []
    load0 = open("/proc/loadavg").read().split()[:3]
    for m in mods:
        t0 = time.monotonic()
        print("== %s" % m, flush=True)
        try:
            mod_rows = importlib.import_module(m).bench(agent)
        except Exception as e:  # a broken module must not hide the others
            failures.append("%s: %s: %s" % (m, type(e).__name__, e))
            print("   FAILED: %s" % failures[-1], flush=True)
            continue
        for r in mod_rows:
            r["module"] = m
        rows.extend(mod_rows)
        print("   %d rows in %.0f s" % (len(mod_rows), time.monotonic() - t0), flush=True)
    w = max([len(r["what"]) for r in rows] + [10])
    b = max([len(r["baseline_name"]) for r in rows] + [8])
    u = max([len(r["unit"]) for r in rows] + [6])
    head = "%-*s | %12s | %-*s | %12s | %-*s | %9s | %s" % (w, "measure", "sandbox-agent", b, "baseline", "baseline",
                                                            u, "unit", "advantage", "goal")
    print()
    print(head)
    print("-" * len(head))
    for r in rows:
        print("%-*s | %12s | %-*s | %12s | %-*s | %9s | %s" % (w, r["what"], fmt(r["agent"]), b, r["baseline_name"],
                                                               fmt(r["baseline"]), u, r["unit"], ratio(r), goal(r)))
    notes = [r["note"] for r in rows if r.get("note")]
    if notes:
        print("\nnotes:\n  " + "\n  ".join(notes))
    print("\nload average (1, 5, 15 min): %s before, %s after; %d CPUs" % (
        " ".join(load0), " ".join(open("/proc/loadavg").read().split()[:3]), os.cpu_count()))
    out = os.path.join(os.path.dirname(agent), "bench.json")
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)
    print("\n(advantage = how many times better the agent is; rows saved to %s)" % out)
    if failures:
        print("bench modules that failed:\n  " + "\n  ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
