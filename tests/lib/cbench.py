"""What the serve rows measured from C share (bench_serve_proc.py,
bench_serve_fs.py, bench_serve_http.py): the two C tools built beside the
agent (build/bench/hclient: the client, tests/bench/hclient.c; build/bench/floor:
the anchors, tests/bench/floor.c), the anchor servers (nginx, a loopback sshd
with an ssh ControlMaster), strace's syscall counts and the agent's CPU time.

Every process started here is ended by its pid, and every wait is bounded.
A missing tool raises Missing, which the modules turn into a row whose
anchor reads "-" with the reason, never a failed bench.

BENCH_SERVE_ROWS (e.g. "1 2 sys") runs only those rows of every serve module.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from benchlib import children, free_port

HANG = 300  # seconds: a step that takes longer has hung
SHM = "/dev/shm"  # tmpfs: the files of the transfer rows


class Missing(Exception):
    """A tool a row needs is not installed: the reason is the message."""


def wanted(key):
    sel = os.environ.get("BENCH_SERVE_ROWS", "").replace(",", " ").split()
    return not sel or str(key) in sel


def row(what, agent, baseline_name="", baseline=None, unit="", goal=None, note=None):
    """A table row; goal is the least "advantage" (bench.py's ratio, > 1 when
    the agent is better) the issue asks for; note is printed under the table."""
    r = {"what": what, "agent": agent, "baseline_name": baseline_name, "baseline": baseline, "unit": unit}
    if goal is not None:
        r["goal"] = goal
    if note:
        r["note"] = note
    return r


def tool(agent, name):
    """build/bench/NAME beside the agent (make bench builds it)."""
    p = os.path.join(os.path.dirname(agent), "bench", name)
    if not os.access(p, os.X_OK):
        raise Missing("%s not built (make bench builds it)" % p)
    return p


def which(name):
    p = shutil.which(name) or next((d + "/" + name for d in ("/usr/sbin", "/sbin") if os.access(d + "/" + name, os.X_OK)),
                                   None)
    if not p:
        raise Missing("no %s (make pkgs-bench installs it)" % name)
    return p


def run_json(argv, timeout=HANG, ok=(0,)):
    """Run a C tool; its last stdout line as JSON. Raises on a failure."""
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    lines = p.stdout.strip().splitlines()
    if p.returncode not in ok or not lines:
        raise RuntimeError("%s exited %d: %s %s" % (" ".join(argv[:3]), p.returncode, p.stdout[-300:], p.stderr[-500:]))
    r = json.loads(lines[-1])
    r["rc"] = p.returncode
    return r


def cpu_seconds(pid):
    """utime + stime of pid (its own threads, not its children), in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def end_pid(p, sig=signal.SIGTERM, grace=10):
    """End a Popen by its pid: sig, then SIGKILL after grace seconds."""
    if p.poll() is None:
        try:
            p.send_signal(sig)
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=grace)


def kill_pids(pids, comm=None):
    """SIGKILL each pid (when comm is given, only while /proc says it is one)."""
    for pid in pids:
        try:
            if comm and open("/proc/%d/comm" % pid).read().strip() != comm:
                continue
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, FileNotFoundError):
            pass


# ---- strace ------------------------------------------------------------------

def strace_counts(pid, fn, follow):
    """Syscalls made by pid (with follow, by the children it forks too) while
    fn() runs: (total, {name: calls}). strace -c attaches, fn runs, strace
    is interrupted and prints its summary."""
    strace = which("strace")
    out = tempfile.NamedTemporaryFile(prefix="bench-strace-", suffix=".txt", delete=False)
    out.close()
    argv = [strace, "-q", "-c", "-o", out.name] + (["-f"] if follow else []) + ["-p", str(pid)]
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 10
        while _tracer(pid) != p.pid:  # attached: the kernel says so
            if time.monotonic() > end or p.poll() is not None:
                raise RuntimeError("strace did not attach to %d" % pid)
            time.sleep(0.01)
        fn()
    finally:
        end_pid(p, signal.SIGINT, 30)
    try:
        return parse_strace(open(out.name).read())
    finally:
        os.unlink(out.name)


def strace_run(argv, follow=True, timeout=HANG):
    """strace -c of a command from its start: (total, {name: calls})."""
    strace = which("strace")
    with tempfile.NamedTemporaryFile(prefix="bench-strace-", suffix=".txt") as out:
        subprocess.run([strace, "-q", "-c", "-o", out.name] + (["-f"] if follow else []) + argv, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
        return parse_strace(open(out.name).read())


def _tracer(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return 0


def parse_strace(text):
    """strace -c's table: % time, seconds, usecs/call, calls, [errors], syscall."""
    counts, total = {}, 0
    for line in text.splitlines():
        t = line.split()
        if len(t) < 5 or not re.match(r"^[\d.]+$", t[0]) or not t[3].isdigit():
            continue
        if t[-1] == "total":
            total = int(t[3])
        else:
            counts[t[-1]] = int(t[3])
    return total or sum(counts.values()), counts


def top(counts, per, n=8):
    """The n most frequent syscalls, each per unit: "read 4.0, write 2.0"."""
    best = sorted(counts.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join("%s %.1f" % (k, v / per) for k, v in best)


# ---- nginx -------------------------------------------------------------------

NGINX_CONF = """daemon off;
master_process off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    client_body_temp_path {body};
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    types {{ text/plain txt; application/octet-stream bin; }}
    default_type application/octet-stream;
    charset utf-8;
    charset_types text/plain;
    gzip on;
    gzip_comp_level 1;
    gzip_types text/plain;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location /dav/ {{
            dav_methods PUT;
            client_max_body_size 0;
            create_full_put_path on;
        }}
    }}
}}
"""


class Nginx:
    """Debian's nginx on a free loopback port, one process (master_process
    off: the agent is one loop too), serving root (a tmpfs directory):
    GET with sendfile, PUT under /dav/ (WebDAV), gzip level 1 for text/plain.
    Its request-body temporary files are on the same tmpfs."""

    def __init__(self, root):
        nginx = which("nginx")
        self.dir = tempfile.mkdtemp(prefix="bench-nginx-", dir="/tmp")
        self.port = free_port()
        self.addr = "127.0.0.1:%d" % self.port
        body = os.path.join(root, ".nginx-body")
        os.makedirs(os.path.join(root, "dav"), exist_ok=True)
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(dir=self.dir, body=body, port=self.port, root=root))
        self.err = open(os.path.join(self.dir, "stderr"), "wb")
        self.p = subprocess.Popen([nginx, "-e", os.path.join(self.dir, "error.log"), "-p", self.dir + "/", "-c", conf],
                                  stdin=subprocess.DEVNULL, stdout=self.err, stderr=self.err)
        end = time.monotonic() + 10
        while not _listening(self.port):
            if time.monotonic() > end or self.p.poll() is not None:
                self.stop()
                raise Missing("nginx did not start: %s" % open(os.path.join(self.dir, "stderr")).read()[-300:])
            time.sleep(0.02)

    def stop(self):
        end_pid(self.p, signal.SIGTERM)
        self.err.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _listening(port):
    import socket
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


# ---- sshd + an ssh ControlMaster ----------------------------------------------

class Ssh:
    """A private sshd on a free loopback port (generated host key; a generated
    client key in its own authorized_keys; root may log in with it) and an
    ssh ControlMaster to it (ControlPersist). argv(cmd) runs cmd through the
    master's socket, as `ssh -S SOCK host CMD`."""

    def __init__(self):
        sshd, ssh, keygen = which("sshd"), which("ssh"), which("ssh-keygen")
        self.dir = tempfile.mkdtemp(prefix="bench-ssh-", dir="/tmp")
        self.sshd = self.master = None
        self.sessions = []
        d = self.dir
        for k in ("host_key", "client_key"):
            subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(d, k)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        shutil.copy(os.path.join(d, "client_key.pub"), os.path.join(d, "authorized_keys"))
        self.port = free_port()
        with open(os.path.join(d, "sshd_config"), "w") as f:
            f.write("Port %d\nListenAddress 127.0.0.1\nHostKey %s/host_key\nPidFile %s/sshd.pid\n"
                    "AuthorizedKeysFile %s/authorized_keys\nPermitRootLogin prohibit-password\n"
                    "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                    "UseDNS no\nPrintMotd no\nPrintLastLog no\nLogLevel ERROR\nMaxSessions 100\n" % (self.port, d, d, d))
        with open(os.path.join(d, "known_hosts"), "w") as f:
            f.write("[127.0.0.1]:%d %s" % (self.port, open(os.path.join(d, "host_key.pub")).read()))
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        self.log = open(os.path.join(d, "sshd.log"), "wb")
        # root's login shell is /bin/sh for this sshd only (a copy of
        # /etc/passwd bound over it in a mount namespace of its own): bash
        # would source root's ~/.bashrc first, the machine's cost, not ssh's.
        # unshare and sh exec, so the pid is sshd's.
        argv = [sshd, "-D", "-e", "-f", os.path.join(d, "sshd_config")]
        self.shell = "root's shell"
        if shutil.which("unshare"):
            with open("/etc/passwd") as f, open(os.path.join(d, "passwd"), "w") as g:
                for line in f:
                    t = line.rstrip("\n").split(":")
                    if len(t) == 7 and t[0] == "root":
                        t[6] = "/bin/sh"
                    g.write(":".join(t) + "\n")
            argv = ["unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
                    'mount --bind "$0" /etc/passwd && exec "$@"', os.path.join(d, "passwd")] + argv
            self.shell = "/bin/sh"
        self.sshd = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        end = time.monotonic() + 10
        while not _listening(self.port):
            if time.monotonic() > end or self.sshd.poll() is not None:
                self.stop()
                raise Missing("sshd did not start: %s" % open(os.path.join(d, "sshd.log")).read()[-300:])
            time.sleep(0.02)
        self.sock = os.path.join(d, "cm")
        self.base = [ssh, "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR", "-S", self.sock,
                     "-p", str(self.port)]
        opts = ["-i", os.path.join(d, "client_key"), "-o", "UserKnownHostsFile=" + os.path.join(d, "known_hosts"),
                "-o", "StrictHostKeyChecking=yes", "-o", "ControlMaster=yes", "-o", "ControlPersist=yes"]
        try:
            # The first session; ControlPersist keeps the master on in the background.
            subprocess.run(self.base + opts + ["root@127.0.0.1", "true"], check=True, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=30)
            chk = subprocess.run(self.base + ["-O", "check", "root@127.0.0.1"], capture_output=True, text=True,
                                 timeout=10)
            m = re.search(r"pid=(\d+)", chk.stderr)
            if not m:
                raise Missing("no ssh ControlMaster: %s" % chk.stderr.strip())
            self.master = int(m.group(1))
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
            self.stop()
            raise Missing("ssh to the loopback sshd failed: %s" % getattr(e, "stderr", b"")[-300:])
        self.sessions = children(self.sshd.pid)  # the master's connection, on the sshd side

    def argv(self, *cmd):
        return self.base + ["root@127.0.0.1"] + list(cmd)

    def stop(self):
        if self.master:
            try:
                subprocess.run(self.base + ["-O", "exit", "root@127.0.0.1"], capture_output=True, timeout=10)
            except subprocess.TimeoutExpired:
                pass
            end = time.monotonic() + 5
            while os.path.exists("/proc/%d" % self.master) and time.monotonic() < end:
                time.sleep(0.02)
            kill_pids([self.master], comm="ssh")
        if self.sshd:
            kill_pids(self.sessions + children(self.sshd.pid))
            end_pid(self.sshd)
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
