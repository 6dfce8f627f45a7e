#!/bin/sh
# Fetch the dependencies as Debian source packages into DIR, check them against
# deps/SHA256SUMS and unpack them. Nothing is vendored in the repository: the
# pinned sums are the whole record of what we build against.
#
# usage: deps/fetch.sh DIR
set -eu
dir=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
cd "$dir"

have_all() {
    for f in $(awk '{print $2}' "$here/SHA256SUMS"); do [ -f "$f" ] || return 1; done
}

if ! have_all; then
    # One apt client at a time (make -j runs the fetch and the installs side by side).
    exec 9>/tmp/sandbox-agent-apt.lock
    flock 9
    # apt-get source needs a deb-src entry; add one for Debian 12 when none exists.
    if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        if [ "$(id -u)" != 0 ]; then
            echo "deps/fetch.sh: no deb-src entry in /etc/apt and not root to add one" >&2
            exit 1
        fi
        cat > /etc/apt/sources.list.d/sandbox-agent-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
        apt-get update -qq >&2
    fi
    # --tar-only: the upstream tarballs only; Debian's packaging is not needed.
    apt-get source --download-only --tar-only libev cjson libb64 http-parser zlib bearssl >&2 || {
        apt-get update -qq >&2
        apt-get source --download-only --tar-only libev cjson libb64 http-parser zlib bearssl >&2
    }
fi

if ! sha256sum --check --strict --quiet "$here/SHA256SUMS"; then
    echo "deps/fetch.sh: a dependency tarball does not match deps/SHA256SUMS; refusing to build" >&2
    exit 1
fi
rm -rf libev cjson libb64 http-parser zlib bearssl
mkdir libev cjson libb64 http-parser zlib bearssl
tar -xzf libev_4.33.orig.tar.gz -C libev --strip-components=1
tar -xzf cjson_1.7.15.orig.tar.gz -C cjson --strip-components=1
tar -xzf libb64_1.2.orig.tar.gz -C libb64 --strip-components=1
tar -xzf http-parser_2.9.4.orig.tar.gz -C http-parser --strip-components=1
# zlib: only its deflate and inflate sources are built (see the Makefile).
# Debian ships zlib as .tar.bz2: bzip2 is in BUILD_PKGS for it.
tar -xjf zlib_1.2.13.dfsg.orig.tar.bz2 -C zlib --strip-components=1
# BearSSL (TLS client, SHA-256): Debian ships it as .tar.xz (xz-utils is in
# BUILD_PKGS); every source is built into one archive (deps/bearssl.mk).
tar -xJf bearssl_0.6+dfsg.1.orig.tar.xz -C bearssl --strip-components=1
