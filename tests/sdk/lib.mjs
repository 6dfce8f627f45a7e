// lib.mjs - what every SDK scenario script shares (tests/sdk/test_sdk.py runs them).
//
// The published E2B SDK is loaded from SANDBOX_AGENT_SDK_DIR (build/sdk, where
// `make test` installs the pinned copy with `npm ci`), never from the source
// tree. The sandbox is the SDK's debug mode: no E2B account, no network; the
// base URL is E2B_SANDBOX_URL (http://127.0.0.1:PORT of the agent under test).
//
// A script calls run({name: async (ctx) => result, ...}); argv[2] picks the
// scenario. Exactly one JSON line is printed on stdout:
//   {"ok": true, "result": ...}   or   {"ok": false, "error": {name, message, ...}}
// and the process exits by itself within SANDBOX_AGENT_SDK_TIMEOUT_MS.
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import path from 'node:path'

// A hang guard, not a budget (tests/lib/sdklib.py sets it): every wait below
// is for something the agent does, and a scenario ends as soon as it has it.
const TIMEOUT_MS = Number(process.env.SANDBOX_AGENT_SDK_TIMEOUT_MS || 150000)
const WAIT_MS = 60000

export async function loadSdk() {
  const dir = process.env.SANDBOX_AGENT_SDK_DIR
  if (!dir) throw new Error('SANDBOX_AGENT_SDK_DIR is not set')
  const req = createRequire(path.join(path.resolve(dir), 'package.json'))
  const pkg = req('e2b/package.json')
  const entry = path.join(path.dirname(req.resolve('e2b/package.json')), pkg.module)
  return { ...(await import(pathToFileURL(entry).href)), version: pkg.version }
}

// A Sandbox of the SDK's debug mode. With `token`, the subclass hands the SDK
// the envd access token the E2B API would have given it (README "use it from
// the E2B SDK"): every request then carries X-Access-Token.
export function sandboxClass(sdk, token) {
  if (!token) return sdk.Sandbox
  return class TokenSandbox extends sdk.Sandbox {
    constructor(opts) {
      super({ ...opts, envdAccessToken: token })
    }
  }
}

export { WAIT_MS }

export function errInfo(e) {
  if (!(e instanceof Error)) return { name: typeof e, message: String(e) }
  const out = { name: e.name, cls: e.constructor?.name, message: e.message }
  for (const k of ['exitCode', 'stdout', 'stderr', 'error', 'code']) {
    try {
      if (e[k] !== undefined) out[k] = e[k]
    } catch { /* a getter that throws: leave it out */ }
  }
  return out
}

// The error a promise rejects with, as errInfo; null when it resolves.
export async function rejection(p) {
  try {
    await p
    return null
  } catch (e) {
    return errInfo(e)
  }
}

// Text that grows as output arrives; until(pred) resolves when pred(text) is
// true, rejects after ms. Event-driven: no polling.
export class Collector {
  constructor() {
    this.text = ''
    this.waiters = []
    this.push = this.push.bind(this)
    this.pushBytes = this.pushBytes.bind(this)
    this.decoder = new TextDecoder()
  }

  push(s) {
    this.text += s
    this.waiters = this.waiters.filter((w) => !w.check())
  }

  pushBytes(b) {
    this.push(this.decoder.decode(b, { stream: true }))
  }

  until(pred, ms = WAIT_MS, what = 'output') {
    return new Promise((resolve, reject) => {
      const w = {
        check: () => {
          const v = pred(this.text)
          if (!v) return false
          clearTimeout(w.timer)
          resolve(v)
          return true
        },
      }
      if (w.check()) return
      w.timer = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w)
        reject(new Error(`timed out after ${ms} ms waiting for ${what}; got ${JSON.stringify(this.text.slice(-400))}`))
      }, ms)
      this.waiters.push(w)
    })
  }
}

// Poll an async predicate until it is true, for state with no event to wait
// on (the process table after a kill). Fails after ms.
export async function eventually(pred, ms = WAIT_MS, what = 'a condition') {
  const end = Date.now() + ms
  for (;;) {
    const v = await pred()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n')
}

export async function run(scenarios) {
  const name = process.argv[2]
  const guard = setTimeout(() => {
    emit({ ok: false, error: { name: 'ScriptTimeout', message: `scenario ${name} ran past ${TIMEOUT_MS} ms` } })
    process.exit(3)
  }, TIMEOUT_MS)
  let code = 0
  try {
    const fn = scenarios[name]
    if (!fn) throw new Error(`no scenario ${name}; have ${Object.keys(scenarios).join(', ')}`)
    const sdk = await loadSdk()
    const Sandbox = sandboxClass(sdk, process.env.SANDBOX_AGENT_SDK_TOKEN)
    const sbx = await Sandbox.create({ debug: true })
    const ctx = {
      sdk,
      sbx,
      Sandbox,
      work: process.env.SANDBOX_AGENT_SDK_WORK || '/tmp',
      // The sandbox's default user (SANDBOX_AGENT_USER of the agent) and its home.
      user: process.env.SANDBOX_AGENT_SDK_USER,
      userHome: process.env.SANDBOX_AGENT_SDK_USER_HOME,
      arg: process.argv[3],
    }
    emit({ ok: true, result: await fn(ctx) })
  } catch (e) {
    emit({ ok: false, error: errInfo(e), stack: e?.stack })
    code = 1
  }
  clearTimeout(guard)
  // Open streams (a watch, a pty) must not keep node alive past the answer.
  process.exit(code)
}
