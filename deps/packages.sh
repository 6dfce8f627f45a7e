#!/bin/sh
# Install the Debian packages named on the command line that are not installed yet.
# Used by the Makefile so that `make`, `make test` and `make bench` work on a fresh
# Debian 12 machine as root. It never upgrades or removes anything.
set -eu
missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
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
