// pty.mjs - sbx.pty against sandbox-agent serve (issue 8): create, sendInput,
// resize (seen by `stty size`), kill, reconnect. Usage: node pty.mjs SCENARIO.
import { run, rejection, Collector, WAIT_MS } from './lib.mjs'

const enc = (s) => new TextEncoder().encode(s)

// The "ROWS COLS" line `stty size` prints after a marker, as [rows, cols].
function sizeAfter(text, marker) {
  const i = text.lastIndexOf(marker + '\r\n')
  if (i < 0) return null
  const m = /^(\d+) (\d+)\r?$/m.exec(text.slice(i + marker.length + 2))
  return m ? [Number(m[1]), Number(m[2])] : null
}

async function stty(sbx, h, out, tag) {
  const marker = `@@${tag}@@`
  // The marker is printed by the shell, not echoed: the echo shows "@@"'"..."'.
  await sbx.pty.sendInput(h.pid, enc(`echo "@@""${tag}@@"; stty size\n`))
  return out.until((t) => sizeAfter(t, marker), WAIT_MS, 'stty size ' + tag)
}

run({
  async create({ sbx }) {
    const out = new Collector()
    const h = await sbx.pty.create({ cols: 80, rows: 24, onData: out.pushBytes })
    const size = await stty(sbx, h, out, 'a')
    await sbx.pty.sendInput(h.pid, enc('tty; echo "T=$TERM"; exit\n'))
    const r = await h.wait()
    return { size, exitCode: r.exitCode, hasTty: /\/dev\/pts\/\d+/.test(out.text),
             term: /T=xterm-256color/.test(out.text) }
  },

  async resize({ sbx }) {
    const out = new Collector()
    const h = await sbx.pty.create({ cols: 80, rows: 24, onData: out.pushBytes })
    const before = await stty(sbx, h, out, 'b')
    await sbx.pty.resize(h.pid, { cols: 100, rows: 30 })
    const after = await stty(sbx, h, out, 'c')
    await sbx.pty.sendInput(h.pid, enc('exit\n'))
    await h.wait()
    return { before, after }
  },

  async envs_cwd({ sbx, work }) {
    const out = new Collector()
    const h = await sbx.pty.create({ cols: 80, rows: 24, envs: { X: 'one' }, cwd: work, onData: out.pushBytes })
    await sbx.pty.sendInput(h.pid, enc('echo "=$X=$(pwd)="; exit\n'))
    await h.wait()
    const m = /^=(.*)=(.*)=\r?$/m.exec(out.text)
    return m ? { x: m[1], cwd: m[2] } : out.text
  },

  async kill({ sbx }) {
    const out = new Collector()
    const h = await sbx.pty.create({ cols: 80, rows: 24, onData: out.pushBytes })
    await stty(sbx, h, out, 'k')
    const killed = await sbx.pty.kill(h.pid)
    const err = await rejection(h.wait())
    return { killed, err, again: await sbx.pty.kill(h.pid) }
  },

  async reconnect({ sbx }) {
    const one = new Collector()
    const h = await sbx.pty.create({ cols: 80, rows: 24, onData: one.pushBytes })
    await sbx.pty.sendInput(h.pid, enc('echo "mark""1"\n'))
    await one.until((t) => t.includes('mark1'), WAIT_MS, 'mark1')
    await h.disconnect()
    const two = new Collector()
    const h2 = await sbx.pty.connect(h.pid, { onData: two.pushBytes })
    await sbx.pty.sendInput(h.pid, enc('echo "mark""2"\n'))
    await two.until((t) => t.includes('mark2'), WAIT_MS, 'mark2')
    await sbx.pty.sendInput(h.pid, enc('exit 0\n'))
    const r = await h2.wait()
    return { samePid: h2.pid === h.pid, exitCode: r.exitCode, oneSawMark2: one.text.includes('mark2') }
  },

  async listed({ sbx }) {
    const out = new Collector()
    const h = await sbx.pty.create({ cols: 80, rows: 24, onData: out.pushBytes })
    await stty(sbx, h, out, 'l') // the profile is read: safe to kill
    const mine = (await sbx.commands.list()).find((p) => p.pid === h.pid) || null
    await sbx.pty.kill(h.pid)
    return mine
  },
})
