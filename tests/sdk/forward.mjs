// tests/sdk/forward.mjs - a server in the sandbox that listens on loopback
// only, reached as a user's program reaches any sandbox port: at
// `sandbox.getHost(port)` (README "Port forwarding"). In the SDK's debug
// mode that host is localhost:PORT, where the test's edge proxy stands for
// E2B's (tests/sdk/edgeproxy.py) and carries the connection to the
// sandbox's outward address; the agent's forwarder takes it from there.
import { WAIT_MS, eventually, run } from './lib.mjs'

async function get(url) {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(5000) })
    return { status: r.status, body: await r.text() }
  } catch (e) {
    return { error: String(e && (e.cause?.code || e.name)) }
  }
}

await run({
  async get_host({ sbx, work, arg }) {
    const port = Number(arg)
    await sbx.files.write(`${work}/index.html`, 'hello from the sandbox\n')
    const server = await sbx.commands.run(`exec python3 -m http.server ${port} --bind 127.0.0.1`,
                                          { background: true, cwd: work })
    const host = sbx.getHost(port)
    const url = `http://${host}/index.html`
    const served = await eventually(async () => {
      const r = await get(url)
      return r.status === 200 ? r : false
    }, WAIT_MS, 'the loopback server at getHost(port)')
    await server.kill()
    const gone = await eventually(async () => {
      const r = await get(url)
      return r.error ? r : false
    }, WAIT_MS, 'the forward to end with the server')
    return { host, status: served.status, body: served.body, gone: Boolean(gone.error) }
  },
})
