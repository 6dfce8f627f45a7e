"""Helpers and fixtures for the container tests: real images, a real OCI runtime.

(A module of its own rather than conftest.py, so that `pytest tests/` with the
integration suite's conftest alongside still imports the right one;
conftest.py re-exports the fixtures.)

The session fixture `images` runs tests/container/setup.sh once per run
(debootstrap base image, the repository's Dockerfile, two scratch images) in a
podman store of the run's own, and removes that store, whatever happened, at
the end of the run. setup.sh chooses the podman flags once (store, storage
driver: overlay, or vfs inside a container; runc; cgroupfs; rlimits); the
fixture puts them into PODMAN and RUN_FLAGS, which every podman call here and
in test_container.py uses. It FAILS (never skips) when podman cannot run: a CI
that silently skipped these would test nothing.

Containers are driven only as a platform would drive them: `podman run` with
environment variables, `podman stop`, `podman exec`, stdout and exit codes.
"""
import base64
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
import uuid

import pytest

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "container")  # setup.sh
ROOT = os.path.dirname(os.path.dirname(HERE))
RESULT_SENTINEL = b"__SANDBOX_RESULT__"
AGENT_IN_IMAGE = "/usr/local/bin/sandbox-agent"

# Filled in, in place, by the `images` fixture from setup.sh's choice
# (WORKDIR/podman.args and limits.args), before any container test runs:
# podman plus its global flags, and the flags of every `podman run`.
PODMAN = ["podman"]
RUN_FLAGS = ["--network=none"]

# Hang guards only, sized for a loaded 2-core machine (vfs copies every layer).
SETUP_TIMEOUT = 2700
TIMEOUT = 90

RUN_ID = "%d-%s" % (os.getpid(), uuid.uuid4().hex[:6])
LABEL = "sandbox-agent-test=%s" % RUN_ID


def podman(*args, input=None, timeout=TIMEOUT, check=False):
    """Run one podman command; returns CompletedProcess with bytes output."""
    assert len(PODMAN) > 1, "podman called before the images fixture chose its flags"
    p = subprocess.run(PODMAN + list(args), input=input, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    if check and p.returncode != 0:
        pytest.fail("podman %s failed (%d): %s" % (" ".join(args[:3]), p.returncode,
                                                   p.stderr.decode(errors="replace")[-2000:]))
    return p


def _read_args(path):
    with open(path) as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def _unmount_under(path):
    """Unmount whatever is still mounted below path, deepest first."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4].encode().decode("unicode_escape") for line in f]
    for m in sorted((m for m in points if m.startswith(path + "/")), key=len, reverse=True):
        subprocess.run(["umount", "-l", m], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _remove_store():
    """Remove every container and image of this run, then its store and runroot."""
    dirs = [PODMAN[PODMAN.index(flag) + 1] for flag in ("--root", "--runroot")]
    left = []
    if os.path.exists(dirs[0]):
        for args in (["rm", "-a", "-f", "-t", "0"], ["rmi", "-a", "-f"]):
            p = podman(*args, timeout=600)
            if p.returncode != 0:
                left.append("podman %s: %s" % (" ".join(args), p.stderr.decode(errors="replace")[-500:]))
    for d in dirs:
        _unmount_under(d)
        shutil.rmtree(d, ignore_errors=True)
    if any(os.path.exists(d) for d in dirs):
        pytest.fail("could not remove the test store %s: %s" % (" ".join(dirs), "; ".join(left)))


class Images:
    def __init__(self, prefix):
        self.prefix = prefix
        self.example = prefix + "-example"   # the Dockerfile's final image
        self.agent = prefix + "-agent"       # the Dockerfile's scratch stage
        self.busybox = prefix + "-busybox"   # scratch + agent + static busybox
        self.bare = prefix + "-bare"         # scratch + agent


def _run_setup(prefix, work):
    """setup.sh in a process group of its own: on timeout the whole group
    (debootstrap, podman build) is killed, not just the script."""
    proc = subprocess.Popen([os.path.join(HERE, "setup.sh"), prefix, str(work)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=SETUP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # a daemon left holding the pipe
            out = b""
        out += b"\nsetup.sh: killed after %d s" % SETUP_TIMEOUT
        proc.returncode = -signal.SIGKILL
    return subprocess.CompletedProcess(proc.args, proc.returncode, out)


@pytest.fixture(scope="session")
def images(tmp_path_factory):
    imgs = Images("localhost/sa-ctest-" + RUN_ID)
    work = tmp_path_factory.mktemp("container-setup")
    t0 = time.monotonic()
    try:
        p = _run_setup(imgs.prefix, work)
        print("\n" + p.stdout.decode(errors="replace"))
        print("container setup took %.1f s" % (time.monotonic() - t0))
        if os.path.exists(work / "podman.args"):
            PODMAN[1:] = _read_args(work / "podman.args")
        if os.path.exists(work / "limits.args"):
            RUN_FLAGS[1:] = _read_args(work / "limits.args")
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
        if len(PODMAN) > 1:
            _remove_store()


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
