#!/bin/sh
# Build every image the container tests run, from nothing, with podman + runc,
# in a podman store of this run's own, and choose once the podman flags that
# every later call uses.
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
#   PREFIX-smoke     a static busybox alone: the first container run, to fail fast
#
# The podman flags are chosen once, by tests/container/podenv.sh: a store of
# this run's own (WORKDIR/store), overlay or, inside a container, vfs; runc;
# cgroupfs; rlimits. They are written one per line, for tests/lib/podlib.py:
#
#   WORKDIR/podman.args   global flags of every podman call
#   WORKDIR/limits.args   --ulimit flags of every build and run
#
# Removing the store is the caller's job (tests/lib/podlib.py does, even
# when a test fails). Every step is timed on stderr. Any failure exits non-zero
# with the failing step and, where it can tell, the reason named: the
# container tests must fail, not skip, when podman cannot run here.
#
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian);
# SANDBOX_AGENT_SRC, the tree whose Dockerfile is built (default: this repository).
set -eu
[ $# -eq 2 ] || { echo "usage: $0 PREFIX WORKDIR" >&2; exit 2; }
prefix=$1
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
src=${SANDBOX_AGENT_SRC:-$repo}
# shellcheck source=tests/container/podenv.sh
. "$here/podenv.sh"

pod_workdir "$2"

# catatonit: the init of a Pod's infra container (podman kube play); iptables:
# the port a Pod publishes (test_kube.py). Both only recommended by podman.
step "packages: podman runc debootstrap busybox-static catatonit iptables"
"$repo/deps/packages.sh" podman runc debootstrap busybox-static catatonit iptables \
    || die "installing podman runc debootstrap busybox-static catatonit iptables"

pod_choose "$work"

step "podman can run: $P"
$P info >"$work/info.log" 2>&1 || { tail -n 20 "$work/info.log" >&2; pod_diagnose; die "podman info (podman is installed but cannot run here)"; }

# busybox-static's binary: the scratch images have no libc for a dynamic one.
busybox=/bin/busybox
[ -x "$busybox" ] || die "no $busybox after installing busybox-static"
if ldd "$busybox" >/dev/null 2>&1; then die "$busybox is dynamically linked (busybox-static expected)"; fi

# Fail here, in seconds, when no container can start at all.
step "podman run (the smallest container: a static busybox)"
smoke="$work/smoke"
rm -rf "$smoke"
mkdir -p "$smoke/bin"
cp "$busybox" "$smoke/bin/busybox"
tar -C "$smoke" -c . | $P import --quiet - "$prefix-smoke" >/dev/null || die "podman import (busybox)"
rm -rf "$smoke"
# shellcheck disable=SC2086
$P run --rm --network=none $LIMITS "$prefix-smoke" /bin/busybox true >"$work/run.log" 2>&1 \
    || { tail -n 20 "$work/run.log" >&2; pod_diagnose; die "podman run: no container can start here"; }

rootfs="$work/rootfs"
rm -rf "$rootfs"
step "debootstrap bookworm minbase (+python3, curl) from $mirror"
debootstrap --variant=minbase --include=python3,curl bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 30 "$work/debootstrap.log" >&2; pod_diagnose; die "debootstrap (log: $work/debootstrap.log)"; }

step "podman import -> docker.io/library/debian:bookworm-slim"
tar -C "$rootfs" -c . | $P import --quiet - docker.io/library/debian:bookworm-slim >/dev/null || die "podman import"
rm -rf "$rootfs"

# --force-rm: no build container survives a failed step. Layers are cached
# within this run only (the store goes with it), so the second build reuses
# the first one's build stage instead of compiling again. --network=host: the
# build stage runs apt-get, and a build container of its own network needs
# netavark or CNI set up; the host's network is there everywhere.
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
# way the README ("Baking the agent into your own image") tells users to.
ctx="$work/ctx"
rm -rf "$ctx"
mkdir -p "$ctx"
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
