"""Helpers and fixtures for the container tests: real images, a real OCI runtime.

(A module of its own rather than conftest.py, so that `pytest tests/` with the
integration suite's conftest alongside still imports the right one;
conftest.py re-exports the fixtures.)

The session fixture `images` runs tests/container/setup.sh once per run
(debootstrap base image, the repository's Dockerfile, two scratch images) and
removes, at the end of the run and whatever happened, every container and
image this run made. It FAILS (never skips) when podman cannot run: a CI that
silently skipped these would test nothing.

Containers are driven only as a platform would drive them: `podman run` with
environment variables, `podman stop`, `podman exec`, stdout and exit codes.
"""
import base64
import json
import os
import queue
import subprocess
import threading
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RESULT_SENTINEL = b"__SANDBOX_RESULT__"
AGENT_IN_IMAGE = "/usr/local/bin/sandbox-agent"
BASE_IMAGE = "docker.io/library/debian:bookworm-slim"

# The runtime, cgroup and rlimit flags these hosts need (docs/DOCKER.md).
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager=cgroupfs"]
RUN_FLAGS = ["--network=none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]

# Hang guards only, sized for a loaded 2-core machine.
SETUP_TIMEOUT = 1800
TIMEOUT = 90

RUN_ID = "%d-%s" % (os.getpid(), uuid.uuid4().hex[:6])
LABEL = "sandbox-agent-test=%s" % RUN_ID


def podman(*args, input=None, timeout=TIMEOUT, check=False):
    """Run one podman command; returns CompletedProcess with bytes output."""
    p = subprocess.run(PODMAN + list(args), input=input, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    if check and p.returncode != 0:
        pytest.fail("podman %s failed (%d): %s" % (" ".join(args[:3]), p.returncode,
                                                   p.stderr.decode(errors="replace")[-2000:]))
    return p


def _image_ids():
    p = podman("images", "-a", "-q", "--no-trunc", check=True)
    return set(p.stdout.decode().split())


def _tag_id(ref):
    p = podman("image", "inspect", "--format", "{{.Id}}", ref)
    return p.stdout.decode().strip() if p.returncode == 0 else None


def _remove_our_containers():
    p = podman("ps", "-a", "-q", "--filter", "label=" + LABEL)
    ids = p.stdout.decode().split()
    if ids:
        podman("rm", "-f", "-t", "0", *ids, timeout=120)


class Images:
    def __init__(self, prefix):
        self.prefix = prefix
        self.example = prefix + "-example"   # the Dockerfile's final image
        self.agent = prefix + "-agent"       # the Dockerfile's scratch stage
        self.busybox = prefix + "-busybox"   # scratch + agent + static busybox
        self.bare = prefix + "-bare"         # scratch + agent


@pytest.fixture(scope="session")
def images(tmp_path_factory):
    try:
        subprocess.run(["podman", "--version"], stdout=subprocess.PIPE, check=True)
    except (OSError, subprocess.CalledProcessError):
        # setup.sh installs it; only the "before" snapshot needs it first.
        subprocess.run([os.path.join(ROOT, "deps", "packages.sh"), "podman", "runc"], check=False)
    try:
        before = _image_ids()
    except Exception as e:  # noqa: BLE001 - any failure here is "podman cannot run"
        pytest.fail("podman cannot run on this machine: %s" % e)
    old_base = _tag_id(BASE_IMAGE)
    imgs = Images("localhost/sa-ctest-" + RUN_ID)
    work = tmp_path_factory.mktemp("container-setup")
    t0 = time.monotonic()
    try:
        p = subprocess.run([os.path.join(HERE, "setup.sh"), imgs.prefix, str(work)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=SETUP_TIMEOUT)
        print("\n" + p.stdout.decode(errors="replace"))
        print("container setup took %.1f s" % (time.monotonic() - t0))
        if p.returncode != 0:
            pytest.fail("tests/container/setup.sh failed (%d):\n%s"
                        % (p.returncode, p.stdout.decode(errors="replace")[-4000:]))
        # The smallest possible container: proves runc, cgroups and the image work.
        v = podman("run", "--rm", *RUN_FLAGS, "--label", LABEL, "--entrypoint", AGENT_IN_IMAGE,
                   imgs.example, "--version")
        if v.returncode != 0 or not v.stdout.startswith(b"sandbox-agent "):
            pytest.fail("podman cannot run a container here (%d): %r %r"
                        % (v.returncode, v.stdout[-500:], v.stderr[-2000:]))
        yield imgs
    finally:
        _remove_our_containers()
        made = _image_ids() - before
        if made:
            # Dependents first: retry until nothing is left or nothing moves.
            for _ in range(5):
                left = [i for i in made if i in _image_ids()]
                if not left:
                    break
                podman("rmi", "-f", *left, timeout=300)
        if old_base and old_base in _image_ids():
            podman("tag", old_base, BASE_IMAGE)


class Container:
    """A container started attached (`podman run --name N ...`), stdout read
    line by line in a thread so tests can wait for a readiness line."""

    def __init__(self, name, proc):
        self.name = name
        self.proc = proc
        self.lines = queue.Queue()
        self.out = bytearray()
        self.err = b""
        self._t = threading.Thread(target=self._pump, daemon=True)
        self._t.start()
        self._te = threading.Thread(target=self._pump_err, daemon=True)
        self._te.start()

    def _pump(self):
        for line in iter(self.proc.stdout.readline, b""):
            self.out += line
            self.lines.put(line)
        self.lines.put(None)

    def _pump_err(self):
        self.err = self.proc.stderr.read()

    def wait_line(self, pred, timeout=TIMEOUT):
        """The first stdout line for which pred(line) is true; fails on EOF or timeout."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail("%s: no matching line within %ss; stdout %r stderr %r"
                            % (self.name, timeout, bytes(self.out[-1000:]), self.err[-1000:]))
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                self._t.join(5)
                pytest.fail("%s: container output ended before a matching line; rc %s stdout %r stderr %r"
                            % (self.name, self.proc.poll(), bytes(self.out[-1000:]), self.err[-2000:]))
            if pred(line):
                return line

    def wait_running(self, timeout=TIMEOUT):
        """Wait until `podman exec` can enter the container (state running)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            p = podman("container", "inspect", "--format", "{{.State.Running}}", self.name)
            if p.stdout.strip() == b"true":
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)  # polling a state, not synchronising on timing
        pytest.fail("%s never reached running; rc %s stderr %r"
                    % (self.name, self.proc.poll(), self.err[-2000:]))

    def finish(self, timeout=TIMEOUT):
        """Wait for `podman run` to return; (exit code, whole stdout)."""
        rc = self.proc.wait(timeout=timeout)
        self._t.join(timeout)
        self._te.join(timeout)
        return rc, bytes(self.out)

    def exec(self, *argv, input=None, env=None, timeout=TIMEOUT):
        """`podman exec` in this container. Note that what podman exec starts
        inherits the container's -e environment (docker exec does the same)."""
        opts = ["-i"] if input is not None else []
        for k, v in (env or {}).items():
            opts += ["-e", "%s=%s" % (k, v)]
        return podman("exec", *opts, self.name, *argv, input=input, timeout=timeout)


@pytest.fixture
def start(images):
    """start(image, *cmd, env={}, entrypoint=None, extra=[]) -> Container.
    Every container is removed at the end of the test, pass or fail."""
    made = []

    def _start(image, *cmd, env=None, entrypoint=None, extra=()):
        name = "sa-ctest-%s-%s" % (RUN_ID, uuid.uuid4().hex[:8])
        argv = PODMAN + ["run", "--name", name, "--label", LABEL] + RUN_FLAGS + list(extra)
        for k, v in (env or {}).items():
            argv += ["-e", "%s=%s" % (k, v)]
        if entrypoint is not None:
            argv += ["--entrypoint", entrypoint]
        argv += [image] + list(cmd)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        c = Container(name, proc)
        made.append(c)
        return c

    yield _start
    for c in made:
        podman("rm", "-f", "-t", "0", c.name, timeout=120)
        if c.proc.poll() is None:
            c.proc.kill()
        c.proc.wait(timeout=30)


def run_job(image, entry, nonce="", env=None, timeout=TIMEOUT):
    """`podman run --rm` one job the documented way; (exit code, stdout, stderr)."""
    argv = ["run", "--rm", "--label", LABEL] + RUN_FLAGS
    argv += ["-e", "SANDBOX_JOB_INNER_ENTRY=" + json.dumps(entry), "-e", "SANDBOX_JOB_NONCE=" + nonce]
    for k, v in (env or {}).items():
        argv += ["-e", "%s=%s" % (k, v)]
    p = podman(*argv, image, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def one_sentinel(stdout):
    """The one __SANDBOX_RESULT__ line, decoded; asserts it starts a line."""
    found = []
    for line in stdout.split(b"\n"):
        if RESULT_SENTINEL in line:
            assert line.startswith(RESULT_SENTINEL), "sentinel not at line start: %r" % line[:120]
            found.append(json.loads(base64.b64decode(line[len(RESULT_SENTINEL):], validate=True)))
    assert len(found) == 1, "expected one sentinel, got %d in %r" % (len(found), stdout[-600:])
    return found[0]


def fs_payload(data):
    """The __SBX_FS__ JSON from a stdout (or, for read, stderr) byte string."""
    lines = [l for l in data.split(b"\n") if l.startswith(b"__SBX_FS__")]
    assert len(lines) == 1, "expected one __SBX_FS__ line in %r" % data[-600:]
    return json.loads(lines[0][len(b"__SBX_FS__"):])
