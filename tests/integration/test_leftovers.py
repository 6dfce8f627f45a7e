"""What a job leaves behind, before the webhook (README "PID 1 duties": Prompt
report): as a subreaper before an https webhook, every leftover is dead when
curl runs, however deep the tree, and nothing but leftovers is killed; as PID
1, the leftovers are reaped before the helper is forked, so a job that kept
the process table full cannot make the fork fail; and a fork that fails for
want of a slot is retried within the webhook's budget."""
import json
import os
import pathlib
import resource
import shutil
import signal
import subprocess
import tempfile
import textwrap
import time

import pytest

from conftest import AGENT, PY, TIMEOUT, one_sentinel
from jobs import UNSHARE, run
from reports import Hook, hook_server, result_env, tls_hook, tmp  # noqa: F401  (fixtures)

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]


def kill_listed(pids):
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


# ------------------------------------------------- a deep chain, https ----

CHAIN = textwrap.dedent("""
    import os, sys, time
    depth, pids = int(sys.argv[1]), sys.argv[2]
    r, w = os.pipe()
    for level in range(depth):
        pid = os.fork()
        if pid:
            if level == 0:      # the job: exit once the chain is whole
                os.read(r, 1)
                sys.exit(0)
            os.waitpid(pid, 0)  # each link waits for the next
            os._exit(0)
        with open(pids, "a") as f:
            f.write("%d\\n" % os.getpid())
        null = os.open("/dev/null", os.O_RDWR)  # hold no pipe of the test's
        for fd in (0, 1, 2):
            os.dup2(null, fd)
    os.write(w, b"x")
    time.sleep(1000)
""")

# Stands in for curl: counts the chain's processes still alive when the
# agent starts curl, then runs the real one.
FAKE_CURL = textwrap.dedent("""\
    #!/usr/bin/python3
    import os, sys
    alive = 0
    for line in open(os.environ["CHAIN_PIDS"]):
        try:
            st = open("/proc/%d/stat" % int(line)).read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        alive += st != "Z"
    open(os.environ["CURL_SAW"], "w").write("alive %d\\n" % alive)
    os.execv("/usr/bin/curl", ["curl"] + sys.argv[1:])
""")


def test_deep_chain_of_leftovers_dead_before_curl(tmp, tls_hook):
    # 150 processes, each waiting for the next: one level dies per round of
    # killing our own children, and a fixed 100 rounds left 50 alive, able
    # to read /proc/<curl>/fd/0 (the body with the nonce).
    srv, cert = tls_hook
    bindir = tmp / "bin"
    bindir.mkdir()
    (bindir / "curl").write_text(FAKE_CURL)
    os.chmod(bindir / "curl", 0o755)
    pids, saw = tmp / "chain", tmp / "curl-saw"
    env = result_env(tmp, SANDBOX_JOB_WEBHOOK="https://127.0.0.1:%d/h" % srv.server_address[1],
                     SANDBOX_JOB_NONCE="chain-nonce", CURL_CA_BUNDLE=str(cert), CHAIN_PIDS=str(pids),
                     CURL_SAW=str(saw))
    env["PATH"] = "%s:%s" % (bindir, env["PATH"])
    try:
        r = run([PY, "-c", CHAIN, "150", str(pids)], False, env)
        assert r.returncode == 0, r.stderr
        assert len(pids.read_text().split()) == 150
        assert saw.read_text() == "alive 0\n", r.stderr
        assert len(Hook.received) == 1, r.stderr
        assert json.loads(Hook.received[0][2])["nonce"] == "chain-nonce"
    finally:
        if pids.exists():
            kill_listed(int(p) for p in pids.read_text().split())


# ---------------------------------- the children file, past 4 KiB --------

# PID 1 of a fresh PID namespace, so pids are ours to choose
# (ns_last_pid): the agent runs as a subreaper with 800 orphans of its job,
# 6 bytes each in its children file ("1xxxx ", 4800 bytes), and a decoy
# outside its tree whose pid is the number a 4095-byte read of that file
# would end with if the kernel cut a record there.
CUT_HARNESS = textwrap.dedent("""
    import os, signal, subprocess, sys
    agent = sys.argv[1]
    def set_last_pid(n):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(n))
    job = ("for i in $(seq 800); do (sleep 1000 </dev/null >/dev/null 2>&1 &); done; "
           "echo orphans $$; read go; exit 0")
    set_last_pid(9999)
    p = subprocess.Popen([agent, "run", "--", "sh", "-c", job], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=dict(os.environ))
    job_pid = p.stdout.readline().split()[1].decode()
    with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
        kids = f.read().split()
    # What the agent will read once the job is gone: the orphans only.
    text = "".join(k + " " for k in kids if k != job_pid)
    head = text[:4095]
    cut = head.rsplit(" ", 1)[1]
    assert cut and text[4095] != " ", (len(text), head[-20:])
    set_last_pid(int(cut) - 1)
    decoy = os.fork()
    if decoy == 0:
        signal.pause()
        os._exit(0)
    print("decoy", decoy, "cut", cut, flush=True)
    p.stdin.write(b"go\\n")
    p.stdin.close()
    out = p.stdout.read()
    print("agent exit", p.wait(timeout=60), flush=True)
    sleeps = 0
    for d in os.listdir("/proc"):
        try:
            stat = open("/proc/%s/stat" % d).read()
        except OSError:
            continue
        sleeps += "(sleep)" in stat and stat.rsplit(")", 1)[1].split()[0] != "Z"
    print("sleeps left", sleeps, flush=True)
    st = open("/proc/%d/stat" % decoy).read().rsplit(")", 1)[1].split()[0]
    print("decoy", "alive" if st != "Z" else "killed", flush=True)
""")


def test_children_file_past_4k_all_killed_nothing_else(tmp):
    # The children file was read once into 4 KiB: a pid cut at its end would
    # be SIGKILLed. (This kernel's seq_file only returns whole records to a
    # 4095-byte read, so the cut never happened; the file is now read whole
    # and only whole numbers are parsed, see test_descendants.c.) Every
    # leftover dies, and the process whose pid is that prefix does not.
    env = result_env(tmp, SANDBOX_JOB_WEBHOOK="https://127.0.0.1:1/")
    r = subprocess.run(UNSHARE + [PY, "-c", CUT_HARNESS, AGENT], env=env, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=TIMEOUT)
    lines = r.stdout.decode().splitlines()
    assert "agent exit 0" in lines, (r.stdout, r.stderr[-2000:])
    decoy, _, cut = lines[0].split()[1:]
    assert decoy == cut, lines
    assert "sleeps left 0" in lines, (lines, r.stderr[-2000:])
    assert lines[-1] == "decoy alive", (lines, r.stderr[-2000:])


# ------------------------------------------- a full process table ---------

# Forks until the table is full; every process keeps forking into each slot
# that frees up (spinning: the job's own slot is taken again the moment the
# agent reaps it), until `hold` seconds from the start (0: forever). The job
# writes a result of nearly 1 MiB (reading and printing it gives the
# fillers time to take the job's slot before the agent forks), prints "full"
# and exits, leaving them.
FILLER = textwrap.dedent("""
    import errno, os, sys, time
    hold = float(sys.argv[1])
    end = time.monotonic() + hold if hold else None
    def fill():
        while end is None or time.monotonic() < end:
            try:
                if os.fork() == 0:
                    continue
            except BlockingIOError:
                os.sched_yield()
        os._exit(0)
    if os.fork() == 0:
        fill()
    while True:
        try:
            pid = os.fork()
        except BlockingIOError:
            break
        if pid == 0:
            fill()
    with open(os.environ["SANDBOX_RESULT"], "w") as f:
        f.write('{"pad": "%s"}' % ("x" * 1000000))
    print("full", flush=True)
""")


@pytest.fixture
def nobody_tmp():
    """A directory uid 65534 can reach (pytest's tmp_path has 0700 parents)."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="sa-leftovers-"))
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def nproc_limit(extra):
    """RLIMIT_NPROC that leaves `extra` processes to uid 65534 beyond what it runs now."""
    now = sum(1 for d in os.listdir("/proc") if d.isdigit() and os.path.exists("/proc/" + d)
              and os.stat("/proc/" + d).st_uid == 65534)
    n = now + extra
    return lambda: resource.setrlimit(resource.RLIMIT_NPROC, (n, n))


def kill_uid_65534_marked(marker):
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if marker.encode() in open("/proc/%s/cmdline" % d, "rb").read():
                os.kill(int(d), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass


def test_webhook_after_a_job_that_filled_the_process_table_pid1(nobody_tmp, hook_server):
    # As PID 1 the agent SIGKILLs what is left, then forks the webhook
    # helper: unreaped, the killed still hold their slots (EAGAIN).
    env = result_env(nobody_tmp, SANDBOX_JOB_WEBHOOK="http://127.0.0.1:%d/" % hook_server.server_address[1])
    marker = "filler-pid1-%d" % os.getpid()
    try:
        r = run([PY, "-c", FILLER, "0", marker], True, env, wrap=NOBODY, preexec_fn=nproc_limit(12))
        assert r.returncode == 0, r.stderr
        assert b"full" in r.stdout
        assert one_sentinel(r.stdout)["result"]["pad"] == "x" * 1000000, r.stderr
        assert len(Hook.received) == 1, r.stderr
    finally:
        kill_uid_65534_marked(marker)


def test_webhook_fork_retried_while_the_table_is_full(nobody_tmp, hook_server):
    # As a subreaper the leftovers keep the table full for 1.5 s after the
    # job started: the helper's fork is retried until a slot frees.
    env = result_env(nobody_tmp, SANDBOX_JOB_WEBHOOK="http://127.0.0.1:%d/" % hook_server.server_address[1])
    marker = "filler-child-%d" % os.getpid()
    try:
        t0 = time.monotonic()
        r = run([PY, "-c", FILLER, "1.5", marker], False, env, wrap=NOBODY, preexec_fn=nproc_limit(12))
        elapsed = time.monotonic() - t0
        assert r.returncode == 0, r.stderr
        assert b"full" in r.stdout
        assert len(Hook.received) == 1, r.stderr
        assert elapsed < 12, elapsed  # within the webhook's budget
    finally:
        kill_uid_65534_marked(marker)
