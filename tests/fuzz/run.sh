#!/bin/sh
# Run each libFuzzer target for SECONDS, starting from its seed corpus
# (tests/fuzz/corpus/NAME, when present) and a scratch corpus of what earlier
# runs found. Exits non-zero when a target finds a crash, leak or hang.
#   tests/fuzz/run.sh SECONDS BIN...
set -u
secs=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
rc=0
for bin in "$@"; do
    name=$(basename "$bin")
    dir=$(cd "$(dirname "$bin")" && pwd)
    work="$dir/corpus-$name"
    mkdir -p "$work"
    seeds="$here/corpus/$name"
    [ -d "$seeds" ] || seeds=""
    out="$dir/$name.log"
    # -rss_limit_mb bounds memory, -timeout flags a hang, -max_len lets inputs
    # grow past the small buffers.
    "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -max_len=262144 \
        -artifact_prefix="$dir/$name-" "$work" $seeds >"$out" 2>&1
    r=$?
    tail -n 2 "$out"
    if [ $r -ne 0 ]; then
        echo "fuzz: $name FAILED (exit $r); log: $out"
        grep -m 20 -E 'ERROR|SUMMARY|artifact' "$out"
        rc=1
    else
        echo "fuzz: $name ok ($secs s)"
    fi
done
exit $rc
