#!/bin/sh
# `make` then `make test`, as the README says, on a pristine Debian 12 machine
# that is itself a container: proves the suite (the container tests included,
# nested podman and all) passes there as it does on a VM.
#
#   tests/container/nested.sh WORKDIR [REPO]
#
# REPO (default: this repository) is cloned fresh, so only committed work is
# tested. The machine is `debootstrap --variant=minbase bookworm` imported into
# a podman store of its own (tests/container/podenv.sh), run --privileged with
# runc, cgroupfs and the host's network (apt-get inside needs it); the clone
# is copied in and, as root, `make` and `make test` run there, each
# installing the Debian packages it needs. A minbase system has no make, which
# every Debian 12 build machine has: it is the one package installed first.
# The whole log is WORKDIR/nested.log; the last line printed is make test's
# "N passed, M failed". Exit status: make test's. Everything made is removed
# at the end unless KEEP=1 (then the container is left running, to look at).
# Takes long: package installs, the whole suite, a nested debootstrap, and
# with vfs inside, every image layer copied whole.
#
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian), KEEP.
set -eu
if [ $# -lt 1 ] || [ $# -gt 2 ]; then echo "usage: $0 WORKDIR [REPO]" >&2; exit 2; fi
here=$(cd "$(dirname "$0")" && pwd)
repo=${2:-$(cd "$here/../.." && pwd)}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# shellcheck source=tests/container/podenv.sh
. "$here/podenv.sh"

pod_workdir "$1"
"$here/../../deps/packages.sh" podman runc debootstrap git || die "installing podman runc debootstrap git"

# The machine's limits: generous, as a machine's are, within the ones here.
POD_NOFILE=65536
POD_NPROC=16384
pod_choose "$work"
name="sa-nested-$$"
image="localhost/sa-nested-debian12"
# shellcheck disable=SC2317  # run by the trap
cleanup() {
    [ "${KEEP:-0}" = 1 ] && { step "KEEP=1: container $name left running ($P)"; return; }
    $P rm -f -t 0 "$name" >/dev/null 2>&1 || true
    $P rmi -a -f >/dev/null 2>&1 || true
    rm -rf "$work/store" "$pod_run" "$work/rootfs" "$work/src"
}
trap cleanup EXIT

step "debootstrap --variant=minbase bookworm from $mirror"
rm -rf "$work/rootfs"
debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap (log: $work/debootstrap.log)"; }
step "podman import -> $image"
tar -C "$work/rootfs" -c . | $P import --quiet - "$image" >/dev/null || die "podman import"
rm -rf "$work/rootfs"

step "git clone $repo"
rm -rf "$work/src"
git clone -q "$repo" "$work/src" || die "git clone $repo"
step "commit $(git -C "$work/src" log --oneline -1)"

step "podman run --privileged --network=host $name"
# shellcheck disable=SC2086
$P run -d --privileged --network=host $LIMITS --name "$name" "$image" sleep infinity >/dev/null \
    || { pod_diagnose; die "podman run (the outer container)"; }
$P cp "$work/src" "$name:/root/sandbox-agent" || die "podman cp"

step "inside: apt-get install make; make; make test (log: $work/nested.log)"
rc=0
$P exec "$name" sh -c 'set -e
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends make >/dev/null
    cd /root/sandbox-agent
    make
    make test' >"$work/nested.log" 2>&1 || rc=$?
step "make test exited $rc after $(( $(date +%s) - pod_t0 ))s"
grep -E '^[0-9]+ passed, [0-9]+ failed$' "$work/nested.log" | tail -n 1 || tail -n 40 "$work/nested.log"
exit "$rc"
