#!/bin/sh
# Run the test suites named on the command line, keep going past failures, and
# finish with one line "N passed, M failed" (", K skipped" added when K > 0;
# exit 1 when M > 0 or a suite broke). A suite that is skipped says why.
#
#   tests/run.sh [--layers] [--unit BIN...] [--integration AGENT]... [--sdk AGENT SDK_DIR]...
#                [--fuzz SECONDS BIN...] [--container]
set -u
PYTHON=${PYTHON:-/usr/bin/python3}
TEST_TIMEOUT=${TEST_TIMEOUT:-240}   # seconds one pytest test may take
UNIT_TIMEOUT=${UNIT_TIMEOUT:-300}   # seconds one unit-test binary may take (~20x a normal run)
SUITE_TIMEOUT=${SUITE_TIMEOUT:-900}  # seconds one pytest suite may take (~3x a normal run)
# The container tests build their images first (debootstrap, podman build:
# minutes, many more inside a container where every layer is copied whole);
# their set-up bounds itself (tests/container/podlib.py, 2700 s).
CONTAINER_TEST_TIMEOUT=${CONTAINER_TEST_TIMEOUT:-3000}
CONTAINER_SUITE_TIMEOUT=${CONTAINER_SUITE_TIMEOUT:-3600}
here=$(cd "$(dirname "$0")" && pwd)
passed=0
failed=0
skipped=0
broken=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT

count() { # $1=pattern (with one number group) in $log; prints the number or 0
    sed -n "$1" "$log" | tail -n 1 | grep -o '[0-9]\+' | head -n 1 || true
}

run_unit() {
    for bin in "$@"; do
        echo "== unit: $bin"
        timeout -k 10 "$UNIT_TIMEOUT" "$bin" >"$log" 2>&1
        rc=$?
        cat "$log"
        [ $rc = 124 ] && echo "unit: $bin stopped after ${UNIT_TIMEOUT}s"
        p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
        f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
        passed=$((passed + ${p:-0}))
        failed=$((failed + ${f:-0}))
        if [ $rc -ne 0 ] && [ "${f:-0}" = 0 ]; then failed=$((failed + 1)); broken="$broken $bin"; fi
    done
}

run_integration() {
    run_pytest_dir "integration: $1" "$here/integration" SANDBOX_AGENT="$1"
}

run_pytest_dir() { # $1 = label, $2 = directory, rest = env assignments
    run_pytest_bounded "$TEST_TIMEOUT" "$SUITE_TIMEOUT" "$@"
}

run_pytest_bounded() { # $1 = seconds a test, $2 = seconds the suite, then as run_pytest_dir
    test_timeout=$1
    suite_timeout=$2
    label=$3
    dir=$4
    shift 4
    echo "== $label"
    # A test that hangs fails after $test_timeout s with every thread's stack
    # (pytest-timeout); a suite that hangs anyway is killed after
    # $suite_timeout s, so a run always ends with its count. The output is
    # shown as it is written, so a log cut short still says where it stopped.
    env "$@" timeout -k 30 "$suite_timeout" "$PYTHON" -m pytest -q -rs -p no:cacheprovider \
        --timeout="$test_timeout" "$dir" >"$log" 2>&1 &
    pid=$!
    # -rs names each skipped test's reason; the same reason is shown once, below.
    tail -n +1 -f --pid=$pid "$log" | grep -v '^SKIPPED \['
    wait $pid
    rc=$?
    [ $rc = 124 ] && echo "$label: stopped after ${suite_timeout}s"
    if grep -q '^SKIPPED \[' "$log"; then
        echo "skipped, because:"
        sed -n 's/^SKIPPED \[[0-9]*\] [^:]*:[0-9]*: /   /p' "$log" | sort -u
    fi
    last=$(grep -E '[0-9]+ (passed|failed|error|skipped)' "$log" | tail -n 1)
    p=$(printf '%s' "$last" | grep -o '[0-9]\+ passed' | grep -o '[0-9]\+')
    f=$(printf '%s' "$last" | grep -o '[0-9]\+ failed' | grep -o '[0-9]\+')
    e=$(printf '%s' "$last" | grep -o '[0-9]\+ error' | grep -o '[0-9]\+')
    s=$(printf '%s' "$last" | grep -o '[0-9]\+ skipped' | grep -o '[0-9]\+')
    skipped=$((skipped + ${s:-0}))
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0} + ${e:-0}))
    if [ $rc -ne 0 ] && [ $((${f:-0} + ${e:-0})) = 0 ]; then failed=$((failed + 1)); broken="$broken $label"; fi
}

run_sdk() { # $1 = agent, $2 = where tests/sdk/install.sh put the SDK
    run_pytest_dir "sdk (E2B JS SDK): $1" "$here/sdk" SANDBOX_AGENT="$1" SANDBOX_AGENT_SDK_DIR="$2"
}

run_layers() { # the #include direction (tests/layers.py) and the tree's shape (tests/tree.py): two checks
    echo "== layers: #include direction"
    if "$PYTHON" "$here/layers.py" "$here/.."; then passed=$((passed + 1)); else failed=$((failed + 1)); broken="$broken layers"; fi
    echo "== tree: exported names, folder shares, include circles, guards"
    if "$PYTHON" "$here/tree.py" "$here/.."; then passed=$((passed + 1)); else failed=$((failed + 1)); broken="$broken tree"; fi
}

run_fuzz() {
    secs=$1
    shift
    for bin in "$@"; do
        echo "== fuzz: $bin for ${secs}s"
        if "$here/fuzz/run.sh" "$secs" "$bin"; then passed=$((passed + 1)); else failed=$((failed + 1)); broken="$broken $bin"; fi
    done
}

mode=""
while [ $# -gt 0 ]; do
    case "$1" in
    --layers) run_layers; mode=""; shift ;;
    --unit) mode=unit; shift ;;
    --integration) run_integration "$2"; mode=""; shift 2 ;;
    --sdk) run_sdk "$2" "$3"; mode=""; shift 3 ;;
    --fuzz) mode=fuzz; secs=$2; shift 2 ;;
    --container)
        run_pytest_bounded "$CONTAINER_TEST_TIMEOUT" "$CONTAINER_SUITE_TIMEOUT" "container (podman + runc)" "$here/container"
        mode=""; shift ;;
    *)
        case $mode in
        unit) run_unit "$1" ;;
        fuzz) run_fuzz "$secs" "$1" ;;
        *) echo "tests/run.sh: unexpected argument $1" >&2; exit 2 ;;
        esac
        shift ;;
    esac
done

[ -n "$broken" ] && echo "suites that failed to run:$broken"
if [ "$skipped" != 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" = 0 ]
