"""`run` against the inits users would pick instead: tini, dumb-init,
catatonit; and bare `true` for the floor."""
import os
import shutil

from benchlib import hyperfine, supervisor_rss


def bench(agent):
    env = dict(os.environ, SANDBOX_RESULT="/tmp/sa-bench/result.json")
    t = hyperfine([
        ("true", "/bin/true"),
        ("sandbox-agent", "%s run -- /bin/true" % agent),
        ("tini", "/usr/bin/tini -s -- /bin/true"),
        ("dumb-init", "/usr/bin/dumb-init /bin/true"),
        ("catatonit", "/usr/bin/catatonit -- /bin/true"),
    ], env=env)
    bare = t["true"]
    rows = []
    for other in ("tini", "dumb-init", "catatonit"):
        rows.append({"what": "run -- true, wall time", "agent": t["sandbox-agent"], "baseline_name": other,
                     "baseline": t[other], "unit": "ms"})
    for other in ("tini", "dumb-init", "catatonit"):
        rows.append({"what": "overhead over bare true", "agent": t["sandbox-agent"] - bare, "baseline_name": other,
                     "baseline": t[other] - bare, "unit": "ms"})
    rows.append({"what": "bare true (floor)", "agent": bare, "baseline_name": "true", "baseline": bare, "unit": "ms"})
    agent_rss = supervisor_rss([agent, "run", "--", "sleep", "30"], env=env)
    for name, argv in (("tini", ["/usr/bin/tini", "-s", "--", "sleep", "30"]),
                       ("tini-static", ["/usr/bin/tini-static", "-s", "--", "sleep", "30"]),
                       ("dumb-init", ["/usr/bin/dumb-init", "sleep", "30"]),
                       ("catatonit", ["/usr/bin/catatonit", "--", "sleep", "30"])):
        rows.append({"what": "RSS supervising sleep", "agent": agent_rss, "baseline_name": name,
                     "baseline": supervisor_rss(argv), "unit": "KiB"})
    size = os.path.getsize(agent)
    for name, path in (("tini-static", "/usr/bin/tini-static"), ("dumb-init", "/usr/bin/dumb-init"),
                       ("catatonit", "/usr/bin/catatonit")):
        rows.append({"what": "binary size (static agent)", "agent": size / 1024.0, "baseline_name": name,
                     "baseline": os.path.getsize(path) / 1024.0, "unit": "KiB"})
    shutil.rmtree("/tmp/sa-bench", ignore_errors=True)
    return rows
