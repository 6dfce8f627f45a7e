// commands.mjs - sbx.commands against sandbox-agent serve (issue 8): run in
// the foreground and the background, envs, cwd, user, stdin, kill, list,
// connect. Usage: node commands.mjs SCENARIO (see lib.mjs for the output).
import { run, rejection, Collector, eventually, WAIT_MS } from './lib.mjs'

const result = (r) => ({ stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode, error: r.error })

// A background `sleep` that has printed "ready": the SDK runs every command
// through `bash -l`, and a login shell killed while it reads the profile can
// leave that profile's own state behind (pyenv's rehash lock, for one).
async function sleeper(sbx, opts = {}) {
  const out = new Collector()
  const h = await sbx.commands.run('echo ready; exec sleep 30', { background: true, onStdout: out.push, ...opts })
  await out.until((t) => t.includes('ready\n'), WAIT_MS, 'ready')
  return h
}

run({
  async foreground({ sbx }) {
    return result(await sbx.commands.run('echo out; echo err >&2'))
  },

  async nonzero({ sbx, sdk }) {
    let caught = null
    try {
      await sbx.commands.run('echo partial; echo oops >&2; exit 3')
    } catch (e) {
      caught = { isCommandExitError: e instanceof sdk.CommandExitError, ...result(e), message: e.message }
    }
    return caught
  },

  async streaming_callbacks({ sbx }) {
    const out = []
    const err = []
    const r = await sbx.commands.run('for i in 1 2 3; do echo o$i; echo e$i >&2; done', {
      onStdout: (d) => out.push(d),
      onStderr: (d) => err.push(d),
    })
    return { ...result(r), out: out.join(''), err: err.join('') }
  },

  async big_output({ sbx }) {
    // 3 MB of stdout and a multi-byte character on every line.
    const r = await sbx.commands.run("yes 'é€𝄞 line' | head -n 200000")
    return { length: r.stdout.length, lines: r.stdout.split('\n').length - 1, first: r.stdout.slice(0, 20),
             allSame: r.stdout.split('\n').slice(0, -1).every((l) => l === 'é€𝄞 line') }
  },

  async envs({ sbx }) {
    return result(await sbx.commands.run('echo "$FOO|$BAR|${UNSET-unset}"', { envs: { FOO: 'bar', BAR: 'two words' } }))
  },

  async cwd({ sbx, work }) {
    return {
      given: (await sbx.commands.run('pwd', { cwd: work })).stdout,
      root_default: (await sbx.commands.run('pwd', { user: 'root' })).stdout,
    }
  },

  async user({ sbx }) {
    const root = await sbx.commands.run('id -un; id -u; echo "$HOME"', { user: 'root' })
    const nobody = await sbx.commands.run('id -un; id -u', { user: 'nobody', cwd: '/' })
    const dflt = await sbx.commands.run('id -un')
    return { root: root.stdout, nobody: nobody.stdout, dflt: dflt.stdout }
  },

  async no_stdin({ sbx }) {
    // stdin: false (the default): the command reads EOF at once.
    return result(await sbx.commands.run('cat; echo eof'))
  },

  async stdin({ sbx }) {
    const h = await sbx.commands.run('cat; echo " [eof]"', { background: true, stdin: true })
    await h.sendStdin('hello ')
    await sbx.commands.sendStdin(h.pid, new TextEncoder().encode('wörld\n'))
    await h.closeStdin()
    return result(await h.wait())
  },

  async background_wait({ sbx }) {
    const out = new Collector()
    const h = await sbx.commands.run('echo started; read x; echo "got $x"', {
      background: true, stdin: true, onStdout: out.push,
    })
    const pidIsNumber = typeof h.pid === 'number' && h.pid > 0
    await out.until((t) => t.includes('started\n'), WAIT_MS, 'started')
    const runningExitCode = h.exitCode === undefined ? "undefined" : h.exitCode
    await h.sendStdin('go\n')
    const r = await h.wait()
    return { pidIsNumber, runningExitCode, ...result(r) }
  },

  async background_kill({ sbx }) {
    const h = await sleeper(sbx)
    const t0 = Date.now()
    const killed = await h.kill()
    const err = await rejection(h.wait())
    const gone = await eventually(async () => !(await sbx.commands.list()).some((p) => p.pid === h.pid),
                                  WAIT_MS, 'the killed process to leave the list')
    return { killed, err, gone, ms: Date.now() - t0, killAgain: await sbx.commands.kill(h.pid),
             killUnknown: await sbx.commands.kill(999999) }
  },

  async list({ sbx, work }) {
    const h = await sleeper(sbx, { cwd: work, envs: { TAG: 'listed' } })
    const procs = await sbx.commands.list()
    await h.kill()
    const mine = procs.find((p) => p.pid === h.pid) || null
    return { mine, count: procs.length }
  },

  async connect({ sbx }) {
    // Detach from a background command, reattach by pid, get what it prints
    // after the reattach and its exit code.
    const first = new Collector()
    const h = await sbx.commands.run('echo first; read line; echo "second $line"; exit 7', {
      background: true, stdin: true, onStdout: first.push,
    })
    await first.until((t) => t.includes('first\n'), WAIT_MS, 'first')
    await h.disconnect()
    const later = new Collector()
    const h2 = await sbx.commands.connect(h.pid, { onStdout: later.push })
    await sbx.commands.sendStdin(h.pid, 'x\n')
    const err = await rejection(h2.wait())
    return { samePid: h2.pid === h.pid, err, later: later.text, firstAfterDisconnect: first.text }
  },

  async connect_unknown({ sbx }) {
    return rejection(sbx.commands.connect(999999))
  },

  async timeout({ sbx }) {
    // timeoutMs bounds the call; the agent must kill the command too.
    const out = new Collector()
    // Long enough for the login shell's profile on a loaded machine.
    const p = sbx.commands.run('echo $$; exec sleep 30', { timeoutMs: 5000, onStdout: out.push })
    const err = await rejection(p)
    const pid = Number(out.text.trim())
    const gone = await eventually(async () => !(await sbx.commands.list()).some((x) => x.pid === pid),
                                  WAIT_MS, 'the timed-out command to be killed')
    return { err, gone }
  },

  async timeout_gone({ sbx, work }) {
    // commands.run('sleep 30', {timeoutMs}) rejects with the SDK's
    // TimeoutError (deadline_exceeded, whoever sees the deadline first), and
    // the command and what it started are gone afterwards: a daemon (setsid,
    // outside the command's process group) included.
    const listed = async (cmd) => (await sbx.commands.list()).find((p) => p.args[2] === cmd)
    const alive = async (pid) => (await sbx.commands.run(`kill -0 ${pid} 2>/dev/null && echo alive || echo gone`)).stdout.trim()
    const cmd = 'sleep 30'
    const t0 = Date.now()
    const p = rejection(sbx.commands.run(cmd, { timeoutMs: 2000 }))
    const mine = await eventually(() => listed(cmd), 15000, 'the command to be listed')
    const err = await p
    const ms = Date.now() - t0
    const gone = await eventually(async () => !(await listed(cmd)), 15000, 'the timed-out command to be stopped')
    const f = `${work}/daemon.pid`
    const dcmd = `setsid sh -c 'sleep 300 & echo $! > ${f}.tmp; mv ${f}.tmp ${f}; wait' & exec sleep 30`
    const derr = await rejection(sbx.commands.run(dcmd, { timeoutMs: 5000 }))
    const daemon = (await sbx.commands.run(`cat ${f}`)).stdout.trim()
    let daemonGone = false
    try {
      daemonGone = await eventually(async () => (await alive(daemon)) === 'gone', 10000, 'the daemon to be stopped')
    } finally {
      await sbx.commands.run(`kill -9 ${daemon} 2>/dev/null; true`)
    }
    return { err, ms, pid: mine.pid, gone, derr, daemonGone }
  },

  async concurrent({ sbx }) {
    const n = 40
    const rs = await Promise.all(Array.from({ length: n }, (_, i) => sbx.commands.run(`echo ${i}; exit $((${i} % 2))`)
      .then((r) => ({ i, out: r.stdout, code: r.exitCode }))
      .catch((e) => ({ i, out: e.stdout, code: e.exitCode }))))
    return rs.every((r) => r.out === `${r.i}\n` && r.code === r.i % 2) ? n : rs
  },

  async client() {
    // Who the SDK itself runs as (tests/lib/sdklib.py).
    const fs = await import('node:fs')
    return { uid: process.getuid(), home: process.env.HOME, homeEntries: fs.readdirSync(process.env.HOME) }
  },

  async pid1({ sbx }) {
    return result(await sbx.commands.run('cat /proc/1/comm'))
  },
})
