#!/bin/sh
# Install the pinned E2B JS SDK (tests/sdk/package.json + package-lock.json)
# into DIR with `npm ci`, never into the source tree.
#
#   tests/sdk/install.sh DIR
#
# Only where node >= 20.18.1 (the SDK's own engines field) and npm exist;
# elsewhere it prints why and exits 0, and tests/sdk/test_sdk.py then skips
# every test with the same reason. A failing `npm ci` with a usable node fails.
# Node is never installed here: a bare Debian has no node 20 package.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$1
here=$(cd "$(dirname "$0")" && pwd)

skip() {
    echo "tests/sdk/install.sh: E2B SDK not installed, its tests will be skipped: $*" >&2
    exit 0
}

command -v node >/dev/null 2>&1 || skip "no node on PATH (needs node >= 20.18.1 and npm)"
command -v npm >/dev/null 2>&1 || skip "no npm on PATH"
v=$(node --version 2>/dev/null | sed 's/^v//')
major=${v%%.*}
rest=${v#*.}
minor=${rest%%.*}
case "$major.$minor" in *[!0-9.]*|.*|*.) skip "cannot read node's version ('$v')" ;; esac
if [ "$major" -lt 20 ] || [ "$major" -eq 21 ] || { [ "$major" -eq 20 ] && [ "$minor" -lt 18 ]; }; then
    skip "node $v is older than the E2B SDK needs (>= 20.18.1, not 21)"
fi

mkdir -p "$dir"
cp "$here/package.json" "$here/package-lock.json" "$dir/"
# --ignore-scripts: nothing of the SDK's dependency tree runs at install time.
npm ci --prefix "$dir" --no-audit --no-fund --ignore-scripts --loglevel=error >&2
node -e 'const p = require(process.argv[1]); if (p.version !== "2.51.0") { console.error("e2b " + p.version + " installed, 2.51.0 pinned"); process.exit(1) }' \
    "$(cd "$dir" && pwd)/node_modules/e2b/package.json"
echo "tests/sdk/install.sh: e2b 2.51.0 in $dir/node_modules" >&2
