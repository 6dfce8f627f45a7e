"""The README's Kubernetes Pod (tests/container/pod.yaml), played by `podman
kube play` (the nearest Kubernetes on these machines) with the image the
Dockerfile builds, and driven as a platform drives it:

- it becomes ready: GET /health answers 204 through the published port
  without the token, as a kubelet's httpGet probe asks it, and podman's own
  form of the liveness probe (`podman healthcheck run`: curl inside) passes;
  the agent is PID 1 (`run -- sleep infinity`); the token comes from the
  Secret through SANDBOX_AGENT_TOKEN, and every other route needs it;
- the published E2B SDK drives it with the token (commands.run, PID 1,
  files written and read back), and is refused without it;
- /metrics reports the Pod's resource limits: mem_total the memory limit,
  cpu_count the CPU limit;
- stopped as the kubelet stops a Pod (SIGTERM, terminationGracePeriodSeconds,
  SIGKILL), it ends well inside that grace with the job's __SANDBOX_RESULT__
  in the Pod's log: at once (143) for the manifest's job, after the agent's
  own grace (137) for a job that ignores SIGTERM.

The manifest is used as it is, but for what podman needs (README
"Kubernetes", "podman kube play"): a hostPort (127.0.0.1, a free port)
where a cluster has a Service; the Secret made with `podman secret create`
in its JSON form (podman 4.3 stores a `kind: Secret` but its secretKeyRef
reads only that form); the stop made by `podman pod stop -t GRACE`, since
`podman kube down` SIGKILLs at once before podman 5.1 and podman 4.3
ignores terminationGracePeriodSeconds; a containers.conf with
the suite's rlimits (kube play has no --ulimit; podman's defaults may pass
the machine's hard limits). Every Pod is removed at the end, pass or fail.
"""
import base64
import http.client
import json
import os
import re
import subprocess
import time
import uuid

import pytest

from podlib import HERE, PODMAN, RUN_FLAGS, TIMEOUT, Container, one_sentinel, podman
import sdklib
from testlib import free_port

MANIFEST = os.path.join(HERE, "pod.yaml")
with open(MANIFEST) as _f:
    TEXT = _f.read()


def _manifest_value(pattern):
    m = re.search(pattern, TEXT)
    assert m, "tests/container/pod.yaml: no match for %r" % pattern
    return m.group(1)


# What the manifest says, read from it so that the tests check the file as shipped.
POD = _manifest_value(r"\nmetadata:\n  name: (\S+)\n")
CONTAINER = _manifest_value(r"\n    - name: (\S+)\n")
IMAGE = _manifest_value(r"\n      image: (\S+)\n")
SECRET = _manifest_value(r"secretKeyRef:\n\s+name: (\S+)\n")
SECRET_KEY = _manifest_value(r"secretKeyRef:\n\s+name: \S+\n\s+key: (\S+)\n")
K8S_GRACE = int(_manifest_value(r"\n  terminationGracePeriodSeconds: (\d+)\n"))
AGENT_GRACE = int(_manifest_value(r'name: SANDBOX_AGENT_GRACE_SECONDS\n\s+value: "(\d+)"'))
MEM_LIMIT = int(_manifest_value(r"\n        limits:\n          cpu: \"\d+\"\n          memory: (\d+)Mi\n")) << 20
CPU_LIMIT = int(_manifest_value(r"\n        limits:\n          cpu: \"(\d+)\"\n"))
JOB_ARGS = '      args: ["sleep", "infinity"]\n'
PORT_LINE = "          containerPort: 49983\n"

TOKEN = "k8s-" + uuid.uuid4().hex
# A job that ignores SIGTERM (the ignoring survives the exec): the agent
# SIGKILLs it after its own grace.
STUBBORN = ["/bin/sh", "-c", "trap '' TERM; exec sleep infinity"]


class Pod:
    """One Pod of the manifest, published on 127.0.0.1:port."""

    def __init__(self, work, name=POD, args=None):
        self.name, self.ctr = name, name + "-" + CONTAINER  # podman's name for a Pod's container
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        text = TEXT
        for old, new in ((PORT_LINE, PORT_LINE + "          hostPort: %d\n          hostIP: 127.0.0.1\n" % self.port),
                         ("\n  name: %s\n" % POD, "\n  name: %s\n" % name),
                         (JOB_ARGS, "      args: %s\n" % json.dumps(args) if args else JOB_ARGS)):
            assert text.count(old) == 1, old
            text = text.replace(old, new)
        self.path = str(work / ("%s.yaml" % name))
        with open(self.path, "w") as f:
            f.write(text)
        self.played = False

    def play(self):
        """kube play, then the first 204 of /health without the token (a
        kubelet's readiness probe); returns the seconds between the two."""
        t0 = time.monotonic()
        p = podman("kube", "play", "--log-driver", "k8s-file", self.path)
        self.played = True
        if p.returncode != 0:
            pytest.fail("podman kube play %s failed (%d): %s"
                        % (self.path, p.returncode, p.stderr.decode(errors="replace")[-3000:]))
        end = t0 + TIMEOUT
        while time.monotonic() < end:
            try:
                if self.get("/health")[0] == 204:
                    return time.monotonic() - t0
            except OSError:
                pass
            time.sleep(0.05)  # polling the port, bounded by TIMEOUT
        pytest.fail("the Pod never answered /health on %s; log: %s" % (self.url, self.logs()[-3000:]))

    def get(self, path, token=None, method="GET", body=None):
        """(status, body) of one request on a new connection."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            h = {"X-Access-Token": token} if token else {}
            if body is not None:
                h["Content-Type"] = "application/json"
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def exec(self, *argv):
        return podman("exec", self.ctr, *argv)

    def logs(self):
        p = podman("logs", self.ctr)
        return (p.stdout + p.stderr).decode(errors="replace")

    def stop(self):
        """Stop the Pod as the kubelet does: SIGTERM to each container's PID 1,
        SIGKILL after terminationGracePeriodSeconds (`podman pod stop -t`:
        podman 4.3's `kube down` SIGKILLs at once, podman issue 22397), then
        `podman kube down` removes it. (The seconds the stop took, the
        container's exit code, its stdout as `podman logs -f` read it.)"""
        follow = Container(self.ctr, subprocess.Popen(PODMAN + ["logs", "-f", self.ctr], stdin=subprocess.DEVNULL,
                                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        try:
            t0 = time.monotonic()
            p = podman("pod", "stop", "-t", str(K8S_GRACE), self.name)
            took = time.monotonic() - t0
            _, out = follow.finish()
        finally:
            if follow.proc.poll() is None:
                follow.proc.kill()
                follow.proc.wait(timeout=30)
        assert p.returncode == 0, p.stderr[-2000:]
        code = int(podman("inspect", "--format", "{{.State.ExitCode}}", self.ctr, check=True).stdout)
        podman("kube", "down", self.path, check=True)
        self.played = False
        return took, code, out

    def remove(self):
        if self.played:
            podman("pod", "rm", "-f", "-t", "0", self.name, timeout=120)


@pytest.fixture(scope="module")
def kube(images, tmp_path_factory):
    """The image under the manifest's name, the Secret, and podman's
    rlimits for kube play, in this run's store; a directory for the Pods' files."""
    work = tmp_path_factory.mktemp("kube")
    conf = work / "containers.conf"
    ulimits = [RUN_FLAGS[i + 1] for i, flag in enumerate(RUN_FLAGS) if flag == "--ulimit"]
    conf.write_text("[containers]\ndefault_ulimits = [%s]\n" % ", ".join(json.dumps(u) for u in ulimits))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CONTAINERS_CONF", str(conf))
        podman("tag", images.example, IMAGE, check=True)
        secret = json.dumps({SECRET_KEY: base64.b64encode(TOKEN.encode()).decode()}).encode()
        podman("secret", "create", SECRET, "-", input=secret, check=True)
        try:
            yield work
        finally:
            podman("secret", "rm", SECRET)


@pytest.fixture(scope="module")
def pod(kube):
    p = Pod(kube)
    try:
        p.ready = p.play()
        print("\nPod %s ready (GET /health 204) %.2f s after kube play" % (p.name, p.ready))
        yield p
    finally:
        p.remove()


def test_pod_is_ready_with_the_agent_as_pid_1_and_the_token_from_the_secret(pod):
    # podman's form of the livenessProbe: curl -f http://localhost:49983/health inside.
    hc = podman("healthcheck", "run", pod.ctr)
    assert hc.returncode == 0, (hc.stdout, hc.stderr[-2000:])
    cmd1 = pod.exec("cat", "/proc/1/cmdline").stdout.split(b"\0")
    assert cmd1[:4] == [b"/usr/local/bin/sandbox-agent", b"run", b"--", b"sleep"], cmd1
    # allowPrivilegeEscalation: false, and podman's default seccomp filter (README "Kubernetes").
    status = pod.exec("cat", "/proc/1/status").stdout
    assert b"\nNoNewPrivs:\t1\n" in status and b"\nSeccomp:\t2\n" in status, status
    assert pod.get("/health", token="wrong")[0] == 204
    for path, method, body in (("/envs", "GET", None), ("/metrics", "GET", None),
                               ("/process.Process/List", "POST", b"{}")):
        assert pod.get(path, method=method, body=body)[0] == 401, path
        assert pod.get(path, token=TOKEN + "x", method=method, body=body)[0] == 401, path
        assert pod.get(path, token=TOKEN, method=method, body=body)[0] == 200, path


def test_readme_prints_the_manifest():
    with open(os.path.join(os.path.dirname(os.path.dirname(HERE)), "README.md")) as f:
        readme = f.read()
    assert "\n## Kubernetes\n" in readme
    assert "```yaml\n" + TEXT + "```\n" in readme.split("\n## Kubernetes\n", 1)[1], \
        "README \"Kubernetes\" must print tests/container/pod.yaml as it is"


class PodAgent:
    """What sdklib.sdk() asks of an agent: the client, the URL, its stderr."""

    def __init__(self, client, pod):
        self.client, self.url, self.pod = client, pod.url, pod

    def stderr(self):
        return self.pod.logs()


def test_published_sdk_drives_the_pod(pod):
    client = sdklib.sdk_client()
    try:
        a = PodAgent(client, pod)
        r = sdklib.sdk(a, "commands.mjs", "foreground", token=TOKEN)
        assert (r["stdout"], r["stderr"], r["exitCode"]) == ("out\n", "err\n", 0), r
        assert sdklib.sdk(a, "commands.mjs", "pid1", token=TOKEN)["stdout"] == "sandbox-agent\n"
        # Another user, under the manifest's allowPrivilegeEscalation: false.
        r = sdklib.sdk(a, "commands.mjs", "user", token=TOKEN)
        assert (r["root"], r["nobody"], r["dflt"]) == ("root\n0\n/root\n", "nobody\n65534\n", "root\n"), r
        r = sdklib.sdk(a, "files.mjs", "many", work="/tmp/sdk-in-pod", token=TOKEN)
        assert r["same"] is True and len(r["write"]) == 3, r
        back = pod.exec("cat", "/tmp/sdk-in-pod/m/one.txt")
        assert back.stdout == b"one", back
        r = sdklib.sdk(a, "commands.mjs", "foreground", expect_ok=False)
        assert r["ok"] is False and r["error"]["name"] == "AuthenticationError", r
    finally:
        client.close()


# Inside the container: the memory limit and the CPU quota its cgroup has
# (v2, else v1), and the CPUs it may run on.
APPLIED = r"""
import json, os
def first(*paths):
    for p in paths:
        try:
            return open(p).read().split()
        except OSError:
            pass
    return []
mem = first("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
cpu = first("/sys/fs/cgroup/cpu.max")
if not cpu:
    cpu = first("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") + first("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
print(json.dumps({"mem": mem, "cpu": cpu, "cpus": len(os.sched_getaffinity(0))}))
"""


def test_metrics_report_the_pods_limits(pod):
    p = pod.exec("python3", "-c", APPLIED)
    applied = json.loads(p.stdout)
    if applied["mem"] != [str(MEM_LIMIT)]:
        pytest.skip("the Pod's memory limit (%d) is not applied here: its cgroup says %r" % (MEM_LIMIT, applied["mem"]))
    cpu = applied["cpu"]
    if len(cpu) != 2 or not cpu[0].isdigit() or int(cpu[0]) <= 0 or int(cpu[0]) != CPU_LIMIT * int(cpu[1]):
        pytest.skip("the Pod's CPU limit (%d) is not applied here: its cgroup says %r" % (CPU_LIMIT, cpu))
    status, body = pod.get("/metrics", token=TOKEN)
    assert status == 200, body
    m = json.loads(body)
    print("\n/metrics in the Pod: mem_total %d (limit %d), cpu_count %d (limit %d, %d CPUs here), mem_used %d"
          % (m["mem_total"], MEM_LIMIT, m["cpu_count"], CPU_LIMIT, applied["cpus"], m["mem_used"]))
    assert m["mem_total"] == MEM_LIMIT and m["mem_total_mib"] == MEM_LIMIT >> 20, m
    assert m["cpu_count"] == min(applied["cpus"], CPU_LIMIT), m
    assert 0 < m["mem_used"] <= MEM_LIMIT, m


def test_stop_ends_within_the_grace_with_the_jobs_report(pod):
    took, code, out = pod.stop()
    print("\nPod %s stopped in %.2f s (terminationGracePeriodSeconds %d)" % (pod.name, took, K8S_GRACE))
    core = one_sentinel(out)
    # README "What docker stop does": the job died of the forwarded SIGTERM.
    assert (core["status"], core["exit_code"]) == ("failed", 143), core
    assert code == 143, code
    assert took < K8S_GRACE, took


def test_a_job_ignoring_sigterm_is_killed_after_the_agents_grace_inside_the_pods(kube):
    p = Pod(kube, name=POD + "-stubborn", args=STUBBORN)
    try:
        p.play()
        took, code, out = p.stop()
        print("\nPod %s (a job ignoring SIGTERM) stopped in %.2f s (agent grace %d, terminationGracePeriodSeconds %d)"
              % (p.name, took, AGENT_GRACE, K8S_GRACE))
        core = one_sentinel(out)
        assert (core["status"], core["exit_code"]) == ("failed", 137), core
        assert code == 137, code
        # The agent's grace, then its report, all before the kubelet's SIGKILL.
        assert AGENT_GRACE <= took < K8S_GRACE, took
    finally:
        p.remove()
