# shellcheck shell=sh disable=SC2034  # P, LIMITS and work are for the caller
# The podman of one run of the container tests, chosen once, and the start
# those scripts share (sourced by tests/container/setup.sh and
# tests/container/nested.sh; POSIX sh).
#
#   pod_choose WORKDIR   chooses the flags and writes them one per line:
#                          WORKDIR/podman.args  global flags of every podman call
#                          WORKDIR/limits.args  --ulimit flags of every build and run
#                        and sets P (podman + its flags) and LIMITS for the caller
#   pod_diagnose         prints what explains, here, that podman cannot run a container
#
# The flags: runc rather than crun, cgroupfs rather than systemd (there is no
# systemd in a container), and a store of the run's own, WORKDIR/store (podman
# --root; --runroot a new /run/sa-podman.XXXXXX), so that a run never sees, tags over or removes another
# run's images. Its storage driver is overlay where the kernel takes it, else
# vfs: inside a container WORKDIR sits on overlayfs, and podman refuses overlay
# over overlayfs unless fuse-overlayfs (and /dev/fuse) is there. vfs copies
# every layer whole: slower, more disk, but it works anywhere. rlimits are
# explicit, and never above the hard limits here (raising one needs
# CAP_SYS_RESOURCE, which a container's root may not have).
#
#   pod_workdir DIR      as root only: makes DIR and sets work to its absolute path
#
# Sourcing the file starts the caller's clock and defines step (a progress
# line on stderr: the script's name and the seconds since) and die (a failure
# line, then exit 1). POD_NOFILE and POD_NPROC cap the rlimits (default 1024
# each: what the images are tested with).

pod_t0=$(date +%s)
pod_self=${0##*/}
step() { echo "$pod_self: [$(( $(date +%s) - pod_t0 ))s] $*" >&2; }
die() { echo "$pod_self: FAILED: $*" >&2; exit 1; }

pod_workdir() { # DIR
    [ "$(id -u)" = 0 ] || die "needs root (podman as root, with runc); uid is $(id -u)"
    mkdir -p "$1"
    work=$(cd "$1" && pwd)
    case $work in *[[:space:]]*) die "WORKDIR must not contain white space: $work" ;; esac
}

pod_choose() { # WORKDIR
    pod_work=$1
    pod_store="$pod_work/store"
    pod_base="--runtime runc --cgroup-manager=cgroupfs"
    # The driver is tried in a throwaway store: a store that once failed with
    # overlay keeps "overlay" in its database and refuses every other driver.
    pod_probe="$pod_work/probe"
    pod_probe_run=$(pod_runroot)
    # shellcheck disable=SC2086
    if podman --root "$pod_probe" --runroot "$pod_probe_run" $pod_base --storage-driver overlay info \
        >"$pod_work/probe.log" 2>&1; then
        pod_driver=overlay
    else
        pod_driver=vfs
        pod_why=$(grep -v '^time=' "$pod_work/probe.log" | tail -n 1)
        step "overlay refused on $(stat -f -c %T "$pod_work"): $pod_why; vfs then, a full copy per layer"
    fi
    rm -rf "$pod_probe" "$pod_probe_run"
    pod_run=$(pod_runroot)
    step "storage: $pod_driver in $pod_store (runroot $pod_run)"
    # shellcheck disable=SC2086
    printf '%s\n' --root "$pod_store" --runroot "$pod_run" --storage-driver "$pod_driver" $pod_base \
        >"$pod_work/podman.args"
    pod_n=$(pod_limit "Max open files" "${POD_NOFILE:-1024}")
    pod_u=$(pod_limit "Max processes" "${POD_NPROC:-1024}")
    printf '%s\n' --ulimit "nofile=$pod_n:$pod_n" --ulimit "nproc=$pod_u:$pod_u" >"$pod_work/limits.args"
    P="podman $(tr '\n' ' ' <"$pod_work/podman.args")"
    LIMITS=$(tr '\n' ' ' <"$pod_work/limits.args")
}

# A new, empty runroot: podman takes one of at most 50 characters, so it
# cannot live in WORKDIR. The caller removes it with the store.
pod_runroot() {
    mktemp -d /run/sa-podman.XXXXXX 2>/dev/null || mktemp -d /tmp/sa-podman.XXXXXX
}

pod_limit() { # "Max open files" | "Max processes", CAP -> CAP, or the hard limit when lower
    awk -v name="$1" -v cap="$2" 'index($0, name) == 1 {
        h = $(NF - 1); print (h == "unlimited" || h + 0 >= cap + 0) ? cap : h }' /proc/self/limits
}

# Facts that explain why podman cannot run a container here, one line each
# (a container started without --privileged is the usual case).
pod_diagnose() {
    if [ -e /run/.containerenv ] || [ -e /.dockerenv ] || tr '\0' '\n' </proc/1/environ 2>/dev/null | grep -q '^container='; then
        echo "podenv: this machine looks like a container (/.dockerenv, /run/.containerenv or \$container): nested podman needs it started with --privileged (all capabilities, writable cgroups, host devices)" >&2
    fi
    pod_cap=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
    [ $(( (0x$pod_cap >> 21) & 1 )) = 1 ] || echo "podenv: no CAP_SYS_ADMIN (CapEff $pod_cap): podman cannot mount or make namespaces" >&2
    awk '$3 ~ /^cgroup2?$/ && $4 ~ /(^|,)ro(,|$)/ { ro = ro " " $2 }
        END { if (ro != "") print "podenv: cgroups mounted read-only (" substr(ro, 2) "): runc cannot make a container'"'"'s cgroup" }' \
        /proc/self/mounts >&2
}
