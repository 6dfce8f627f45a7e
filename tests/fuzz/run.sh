#!/bin/sh
# Run each libFuzzer target for SECONDS, starting from its seed corpus
# (tests/fuzz/corpus/NAME) and a scratch copy of what earlier runs found.
#   tests/fuzz/run.sh SECONDS BIN...
set -eu
secs=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
for bin in "$@"; do
    name=$(basename "$bin")
    work=$(dirname "$bin")/corpus-$name
    mkdir -p "$work"
    seeds="$here/corpus/$name"
    [ -d "$seeds" ] || seeds=""
    # -rss_limit_mb bounds memory; -max_len covers inputs past the 64 KiB buffers.
    "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=262144 -print_final_stats=0 \
        -artifact_prefix="$(dirname "$bin")/$name-" "$work" $seeds 2>&1 | tail -n 3
done
