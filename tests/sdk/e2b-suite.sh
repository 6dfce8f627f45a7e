#!/bin/sh
# tests/sdk/e2b-suite.sh - run E2B's own JS SDK tests against `sandbox-agent
# serve` (README "Testing": E2B's own JS SDK tests). A check run by hand,
# never by `make test`: their tests are not part of this project and are
# never copied into it; they are read from a copy of E2B's repository.
#
#   tests/sdk/e2b-suite.sh E2B [MODE...]
#
# E2B is E2B's repository (e2b-dev/E2B): a checkout, or a git directory.
# Its packages/js-sdk (the SDK's source with its tests) is copied into a
# temporary directory, its test dependencies installed there with npm, and
# vitest run on the suites that drive envd (E2B_SUITES, default below), one
# file at a time, since they share one sandbox where E2B gives each its own.
#
# MODE (default: debug token):
#   debug  the SDK's debug mode as a user runs it: no token, E2B_DEBUG=true.
#          Tests E2B marks skipIf(isDebug) are skipped.
#   token  E2B's orchestrator played by a setup file of ours: the agent waits
#          for POST /init (SANDBOX_AGENT_AWAIT_TOKEN=1); before each sandbox
#          the setup sends one with the access token, the sandbox's envs and
#          `user` as the default user, and the SDK's sandboxes carry the token
#          (its envdAccessToken), as one the E2B API hands out does. E2B_DEBUG
#          is unset, so the tests skipped in debug mode run too (the ones that
#          need E2B's API then fail, as they would against any local envd).
#
# Each mode gets a new agent as PID 1 of a PID and mount namespace of its own,
# on 127.0.0.1:49983, where the SDK's debug mode looks (E2B_SUITE_PORT picks
# another, given to the SDK as E2B_SANDBOX_URL: E2B's urls test then fails,
# since that variable replaces every sandbox URL the test checks), with a
# fresh `user` (E2B's template's: home /home/user, the commands' default
# user) that exists only there: /etc/passwd and /etc/group are bind-mounted
# copies with `user` added, /home a tmpfs. Nothing on the machine changes.
# Root is needed (unshare, mount), and node >= 20.18.1 with npm.
#
# Environment: SANDBOX_AGENT (default build/sandbox-agent), E2B_SUITES,
# E2B_SUITE_PORT, E2B_SUITE_KEEP=1 keeps the temporary directory (its path
# is printed). Exit status: 0 when every mode's vitest passed, else 1.
set -eu

usage() { echo "usage: $0 E2B_REPO [debug|token]..." >&2; exit 2; }
[ $# -ge 1 ] || usage
src=$1
shift
modes=${*:-debug token}
agent=${SANDBOX_AGENT:-build/sandbox-agent}
port=${E2B_SUITE_PORT:-49983}
suites=${E2B_SUITES:-tests/sandbox/commands tests/sandbox/files tests/sandbox/pty tests/sandbox/git tests/sandbox/rpcHeaders.test.ts tests/sandbox/urls.test.ts tests/sandbox/secure.test.ts tests/sandbox/host.test.ts}

[ "$(id -u)" -eq 0 ] || { echo "$0: needs root (unshare, mount)" >&2; exit 2; }
[ -x "$agent" ] || { echo "$0: no agent at $agent (make, or set SANDBOX_AGENT)" >&2; exit 2; }
for m in $modes; do case $m in debug|token) ;; *) usage ;; esac; done

work=$(mktemp -d "${TMPDIR:-/tmp}/sa-e2b-suite.XXXXXX")
agent_pid=
stop_agent() {
    [ -n "$agent_pid" ] || return 0
    # The agent is unshare's child (PID 1 inside); unshare --kill-child ends
    # it with SIGKILL if it is still there when unshare goes.
    child=$(cat "/proc/$agent_pid/task/$agent_pid/children" 2>/dev/null || true)
    if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null || true; fi
    i=0
    while kill -0 "$agent_pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    kill -TERM "$agent_pid" 2>/dev/null || true
    wait "$agent_pid" 2>/dev/null || true
    agent_pid=
}
# shellcheck disable=SC2317  # run by the trap
cleanup() {
    trap - EXIT
    stop_agent
    if [ "${E2B_SUITE_KEEP:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the SDK's source and its test dependencies -------------------------------
if [ -d "$src/packages/js-sdk" ]; then
    mkdir -p "$work/packages"
    cp -a "$src/packages/js-sdk" "$work/packages/"
    rm -rf "$work/packages/js-sdk/node_modules"
    rev=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
elif git --git-dir="$src" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    git --git-dir="$src" archive HEAD packages/js-sdk | tar -x -C "$work"
    rev=$(git --git-dir="$src" rev-parse --short HEAD)
else
    echo "$0: $src is neither a checkout nor a git directory of E2B's repository" >&2
    exit 2
fi
js=$work/packages/js-sdk
[ -d "$js/tests/sandbox" ] || { echo "$0: $src has no packages/js-sdk/tests/sandbox" >&2; exit 2; }
# Their dependencies, and of their devDependencies only what the sandbox
# tests load (vitest, msw, and error-stack-parser-es the source imports).
node -e '
const fs = require("fs"), f = process.argv[1], p = JSON.parse(fs.readFileSync(f, "utf8"))
const keep = ["vitest", "msw", "error-stack-parser-es"], dev = {}
for (const k of keep) if (p.devDependencies && p.devDependencies[k]) dev[k] = p.devDependencies[k]
fs.writeFileSync(f, JSON.stringify({ name: "sa-e2b-suite", private: true, type: p.type,
  dependencies: p.dependencies, devDependencies: dev }, null, 2))
' "$js/package.json"
echo "e2b-suite: E2B $rev, installing the SDK's test dependencies in $js" >&2
npm install --prefix "$js" --no-audit --no-fund --ignore-scripts --loglevel=error >&2

# The runner's own vitest config (theirs also loads browser and Cloudflare
# runners), and the orchestrator's part for the token mode.
cat > "$js/sa-vitest.config.mts" <<'END'
// Written by sandbox-agent's tests/sdk/e2b-suite.sh.
import { defineConfig } from 'vitest/config'
const setup = ['tests/globalFetchFallback.setup.ts']
if (process.env.SA_E2B_TOKEN) setup.push('tests/sa-orchestrator.setup.ts')
export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    isolate: true,
    globals: false,
    testTimeout: 30_000,
    environment: 'node',
    setupFiles: setup,
    deps: { interopDefault: true },
  },
})
END
cat > "$js/tests/sa-orchestrator.setup.ts" <<'END'
// Written by sandbox-agent's tests/sdk/e2b-suite.sh: what E2B's orchestrator
// and API do for a new sandbox, for a debug-mode one. Before each sandbox is
// made, POST /init brings the agent the access token, the sandbox's envs and
// its default user; every sandbox made or connected to carries the token as
// envdAccessToken, as one the E2B API hands out does. The SDK is imported in
// beforeAll, once the test file's own vi.mock calls are in place.
import { beforeAll } from 'vitest'

const token = process.env.SA_E2B_TOKEN as string
const base = process.env.E2B_SANDBOX_URL || 'http://localhost:49983'

async function init(envs: Record<string, string> | undefined) {
  const res = await fetch(`${base}/init`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Access-Token': token },
    body: JSON.stringify({
      accessToken: token,
      envVars: envs ?? {},
      defaultUser: 'user',
      timestamp: new Date().toISOString(),
    }),
  })
  if (res.status !== 204) throw new Error(`POST /init: ${res.status} ${await res.text()}`)
}

beforeAll(async () => {
  const { Sandbox } = await import('../src')
  class WithToken extends Sandbox {
    constructor(opts: any) {
      super({ ...opts, envdAccessToken: token })
    }
  }
  const create = Sandbox.create
  const connect = Sandbox.connect
  Object.assign(Sandbox, {
    async create(this: any, a?: any, b?: any) {
      const opts = typeof a === 'string' ? b : a
      await init(opts?.envs)
      const cls = this === Sandbox ? WithToken : this
      return typeof a === 'string'
        ? create.call(cls, a, { ...b, debug: true })
        : create.call(cls, { ...a, debug: true })
    },
    connect(this: any, id: string, opts?: any) {
      return connect.call(this === Sandbox ? WithToken : this, id, { ...opts, debug: true })
    },
  })
})
END

# ---- the sandbox: passwd and group with `user`, the agent's start -------------
if getent passwd user >/dev/null; then
    cp /etc/passwd "$work/passwd"
    cp /etc/group "$work/group"
    uid=$(id -u user)
    gid=$(id -g user)
else
    uid=1000
    while getent passwd $uid >/dev/null || getent group $uid >/dev/null; do uid=$((uid + 1)); done
    { cat /etc/passwd; echo "user:x:$uid:$uid::/home/user:/bin/bash"; } > "$work/passwd"
    { cat /etc/group; getent group user >/dev/null || echo "user:x:$uid:"; } > "$work/group"
    gid=$(awk -F: '$1 == "user" { print $3 }' "$work/group")
    sed -i "s/^user:x:$uid:$uid:/user:x:$uid:$gid:/" "$work/passwd"
fi
chmod 644 "$work/passwd" "$work/group"
cp "$agent" "$work/sandbox-agent"
mkdir -p "$work/cwd"

# start_agent MODE: the agent as PID 1 of new PID and mount namespaces,
# where /home is a tmpfs holding a fresh /home/user and /etc/passwd and
# /etc/group are the copies with `user`.
# shellcheck disable=SC2016  # expanded by the inner sh
inner='
    set -e
    mount -t tmpfs -o mode=0755 sa-e2b-home /home
    mkdir /home/user
    cp -a /etc/skel/. /home/user/ 2>/dev/null || true
    chown -R "$UID_:$GID_" /home/user
    mount --bind "$W/passwd" /etc/passwd
    mount --bind "$W/group" /etc/group
    cd "$W/cwd"
    a=$W/sandbox-agent
    unset W UID_ GID_
    exec "$a" serve'
start_agent() {
    await=0
    [ "$1" = token ] && await=1
    env W="$work" UID_="$uid" GID_="$gid" SANDBOX_AGENT_LISTEN="127.0.0.1:$port" SANDBOX_AGENT_USER=user \
        SANDBOX_AGENT_AWAIT_TOKEN=$await \
        unshare --mount --pid --fork --mount-proc --kill-child -- sh -c "$inner" \
        > "$work/agent-$1.log" 2>&1 < /dev/null &
    agent_pid=$!
    i=0
    until curl -s -o /dev/null "http://127.0.0.1:$port/health"; do
        i=$((i + 1))
        if [ $i -gt 200 ] || ! kill -0 "$agent_pid" 2>/dev/null; then
            echo "$0: the agent did not answer on 127.0.0.1:$port:" >&2
            cat "$work/agent-$1.log" >&2
            exit 1
        fi
        sleep 0.1
    done
}

# ---- the runs ------------------------------------------------------------------
status=0
summary=
for mode in $modes; do
    if curl -s -o /dev/null "http://127.0.0.1:$port/health"; then
        echo "$0: something answers on 127.0.0.1:$port already (E2B_SUITE_PORT picks another port)" >&2
        exit 1
    fi
    start_agent "$mode"
    echo "e2b-suite: mode $mode, agent $agent on 127.0.0.1:$port" >&2
    if [ "$mode" = token ]; then
        tok=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
        set -- env -u E2B_DEBUG SA_E2B_TOKEN="$tok"
    else
        set -- env E2B_DEBUG=true
    fi
    [ "$port" = 49983 ] || set -- "$@" E2B_SANDBOX_URL="http://127.0.0.1:$port"
    rc=0
    # shellcheck disable=SC2086  # suites is a list
    (cd "$js" && "$@" NO_COLOR=1 npx vitest run --config sa-vitest.config.mts --no-file-parallelism $suites) \
        > "$work/vitest-$mode.log" 2>&1 || rc=$?
    cat "$work/vitest-$mode.log"
    stop_agent
    if [ -s "$work/agent-$mode.log" ]; then
        echo "e2b-suite: the agent's log ($mode):" >&2
        cat "$work/agent-$mode.log" >&2
    fi
    [ $rc -eq 0 ] || status=1
    summary="$summary$mode: $(grep -E '^ +Tests ' "$work/vitest-$mode.log" | sed 's/^ *//')
"
done
printf 'e2b-suite (E2B %s):\n%s' "$rev" "$summary"
exit $status
