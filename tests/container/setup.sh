#!/bin/sh
# Build every image the container tests run, from nothing, with podman + runc.
#
#   tests/container/setup.sh PREFIX WORKDIR
#
# There is no Docker engine on the CI machines and no registry to pull from, so
# the base image debian:bookworm-slim is made here with debootstrap and
# `podman import`; then the repository's Dockerfile is built exactly as a user
# would build it. Images made (PREFIX is a per-run name, e.g. localhost/sa-ct-1234):
#
#   docker.io/library/debian:bookworm-slim   debootstrap minbase + python3, curl
#   PREFIX-agent     the Dockerfile's `agent` stage: FROM scratch + /sandbox-agent
#   PREFIX-example   the Dockerfile's final image (debian + python3, ENTRYPOINT run)
#   PREFIX-busybox   scratch + the agent + a static busybox (no python, no coreutils)
#   PREFIX-bare      scratch + the agent, nothing else
#
# Removing them is the caller's job (tests/container/conftest.py does, even
# when a test fails). Every step is timed on stderr. Any failure exits non-zero
# with the failing step named: the container tests must fail, not skip, when
# podman cannot run here.
#
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian);
# SANDBOX_AGENT_SRC, the tree whose Dockerfile is built (default: this repository).
set -eu
[ $# -eq 2 ] || { echo "usage: $0 PREFIX WORKDIR" >&2; exit 2; }
prefix=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
src=${SANDBOX_AGENT_SRC:-$repo}

# The flags these hosts need (see docs/DOCKER.md): runc rather than crun,
# cgroupfs rather than systemd, and explicit rlimits for the build and runs.
P="podman --runtime runc --cgroup-manager=cgroupfs"
LIMITS="--ulimit nofile=1024:1024 --ulimit nproc=1024:1024"

t0=$(date +%s)
step() { echo "setup.sh: [$(( $(date +%s) - t0 ))s] $*" >&2; }
die() { echo "setup.sh: FAILED: $*" >&2; exit 1; }

step "packages: podman runc debootstrap busybox-static"
"$repo/deps/packages.sh" podman runc debootstrap busybox-static || die "installing podman runc debootstrap busybox-static"

step "podman can run"
$P info >/dev/null || die "podman info (podman is installed but cannot run here)"

mkdir -p "$work"
rootfs="$work/rootfs"
rm -rf "$rootfs"
step "debootstrap bookworm minbase (+python3, curl) from $mirror"
debootstrap --variant=minbase --include=python3,curl bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap (log: $work/debootstrap.log)"; }

step "podman import -> docker.io/library/debian:bookworm-slim"
tar -C "$rootfs" -c . | $P import - docker.io/library/debian:bookworm-slim >/dev/null || die "podman import"
rm -rf "$rootfs"

# --force-rm: no build container survives a failed step. Layers are cached
# within this run only (the caller removes every image made), so the second
# build reuses the first one's build stage instead of compiling again.
build() { # TAG CONTEXT [EXTRA...]
    tag=$1 ctx=$2
    shift 2
    step "podman build $tag"
    # shellcheck disable=SC2086
    $P build --pull=never --network=host $LIMITS --force-rm -t "$tag" "$@" "$ctx" >"$work/build.log" 2>&1 \
        || { tail -n 40 "$work/build.log" >&2; die "podman build $tag"; }
}
build "$prefix-agent" "$src" --target agent
build "$prefix-example" "$src"

# Base images without python or coreutils: the scratch stage is copied in the
# way docs/DOCKER.md tells users to bake the agent into their own images.
ctx="$work/ctx"
rm -rf "$ctx"
mkdir -p "$ctx"
# busybox-static's binary: the scratch image has no libc for a dynamic one.
busybox=/bin/busybox
[ -x "$busybox" ] || die "no $busybox after installing busybox-static"
if ldd "$busybox" >/dev/null 2>&1; then die "$busybox is dynamically linked (busybox-static expected)"; fi
cp "$busybox" "$ctx/busybox"
cat >"$ctx/Containerfile.busybox" <<EOF
FROM $prefix-agent AS agent
FROM scratch
COPY --from=agent /sandbox-agent /usr/local/bin/sandbox-agent
COPY busybox /bin/busybox
ENTRYPOINT ["/usr/local/bin/sandbox-agent", "run"]
EOF
cat >"$ctx/Containerfile.bare" <<EOF
FROM $prefix-agent AS agent
FROM scratch
COPY --from=agent /sandbox-agent /usr/local/bin/sandbox-agent
ENTRYPOINT ["/usr/local/bin/sandbox-agent", "run"]
EOF
build "$prefix-busybox" "$ctx" -f "$ctx/Containerfile.busybox"
build "$prefix-bare" "$ctx" -f "$ctx/Containerfile.bare"
rm -rf "$ctx"

step "done"
