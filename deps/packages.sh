#!/bin/sh
# Install the Debian packages named on the command line that are not installed yet.
# The Makefile's explicit pkgs-* targets run it, so that `make`, `make test` and
# `make bench` work on a fresh Debian 12 machine as root. It never upgrades or
# removes anything.
#
#   deps/packages.sh [--check] PACKAGE...
#
# --check installs nothing: it reads dpkg's records only, names what is missing
# on stderr and exits 1 when something is (the build's stamps ask this first).
set -eu
check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi
missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ $check = 1 ]; then
    echo "deps/packages.sh: missing Debian packages:$missing" >&2
    exit 1
fi
if [ "$(id -u)" != 0 ]; then
    echo "deps/packages.sh: missing Debian packages:$missing (run as root, or install them)" >&2
    exit 1
fi
# One apt client at a time (make -j runs the fetch and the installs side by side).
exec 9>/tmp/sandbox-agent-apt.lock
flock 9
echo "deps/packages.sh: installing$missing" >&2
# Package lists may be absent on a fresh machine: update once, then install.
apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >&2
