// watch.mjs - sbx.files.watchDir against sandbox-agent serve (issue 9): events
// for create, write and remove, names relative to the watched directory,
// recursive watches (directories made after the start included), the entry,
// stop, the errors, and files.write seen as a write (issue 10). Usage: node watch.mjs SCENARIO.
import fs from 'node:fs'
import path from 'node:path'
import { run, rejection, WAIT_MS } from './lib.mjs'

// Events as "type name", with a waiter for a set of them.
class Events {
  constructor() {
    this.list = []
    this.waiters = []
    this.on = (e) => {
      this.list.push(e)
      this.waiters = this.waiters.filter((w) => !w())
    }
  }

  seen(type, name) {
    return this.list.some((e) => e.type === type && e.name === name)
  }

  until(wanted, ms = WAIT_MS) {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!wanted.every(([t, n]) => this.seen(t, n))) return false
        clearTimeout(timer)
        resolve()
        return true
      }
      const timer = setTimeout(() => reject(new Error(
        `timed out waiting for ${JSON.stringify(wanted)}; got ${JSON.stringify(this.names())}`)), ms)
      if (!check()) this.waiters.push(check)
    })
  }

  names() {
    return this.list.map((e) => `${e.type} ${e.name}`)
  }
}

run({
  async basic({ sbx, work }) {
    const ev = new Events()
    const h = await sbx.files.watchDir(work, ev.on)
    const f = path.join(work, 'a.txt')
    fs.writeFileSync(f, 'x')
    await ev.until([['create', 'a.txt'], ['write', 'a.txt']])
    fs.rmSync(f)
    await ev.until([['remove', 'a.txt']])
    fs.mkdirSync(path.join(work, 'd'))
    fs.renameSync(path.join(work, 'd'), path.join(work, 'e'))
    await ev.until([['create', 'd'], ['rename', 'd'], ['create', 'e']])
    await h.stop()
    return ev.names()
  },

  async sdk_writes({ sbx, work }) {
    // Events for changes made through the API itself.
    const ev = new Events()
    const h = await sbx.files.watchDir(work, ev.on)
    await sbx.files.write(path.join(work, 'w.txt'), 'data')
    await sbx.files.makeDir(path.join(work, 'made'))
    // Events come in order: once `made` is seen, w.txt's have all come.
    await ev.until([['create', 'made']])
    await sbx.files.remove(path.join(work, 'w.txt'))
    await ev.until([['remove', 'w.txt']])
    await h.stop()
    return ev.names()
  },

  async recursive({ sbx, work }) {
    fs.mkdirSync(path.join(work, 'sub', 'nested'), { recursive: true })
    const ev = new Events()
    const h = await sbx.files.watchDir(work, ev.on, { recursive: true })
    fs.writeFileSync(path.join(work, 'sub', 'nested', 'f.txt'), 'x')
    await ev.until([['create', 'sub/nested/f.txt'], ['write', 'sub/nested/f.txt']])
    // A directory made after the watch started is watched too.
    fs.mkdirSync(path.join(work, 'later'))
    await ev.until([['create', 'later']])
    fs.writeFileSync(path.join(work, 'later', 'g.txt'), 'y')
    await ev.until([['create', 'later/g.txt']])
    fs.rmSync(path.join(work, 'sub'), { recursive: true })
    await ev.until([['remove', 'sub/nested/f.txt'], ['remove', 'sub']])
    await h.stop()
    return ev.names()
  },

  async not_recursive({ sbx, work }) {
    fs.mkdirSync(path.join(work, 'sub'))
    const ev = new Events()
    const h = await sbx.files.watchDir(work, ev.on)
    fs.writeFileSync(path.join(work, 'sub', 'deep.txt'), 'x')
    fs.writeFileSync(path.join(work, 'top.txt'), 'x')
    // top.txt comes after deep.txt: once it is seen, deep.txt had its chance.
    await ev.until([['create', 'top.txt']])
    await h.stop()
    return ev.names()
  },

  async entry({ sbx, work }) {
    const ev = new Events()
    const h = await sbx.files.watchDir(work, ev.on, { includeEntry: true })
    fs.writeFileSync(path.join(work, 'ent.txt'), 'abc')
    await ev.until([['create', 'ent.txt']])
    await h.stop()
    const e = ev.list.find((x) => x.type === 'create' && x.name === 'ent.txt')
    return e.entry ? { name: e.entry.name, path: e.entry.path, type: e.entry.type } : null
  },

  async stop_then_quiet({ sbx, work }) {
    let exited = null
    const ev = new Events()
    const h = await sbx.files.watchDir(work, ev.on, { onExit: (err) => { exited = err ? err.name : 'clean' } })
    fs.writeFileSync(path.join(work, 'before.txt'), 'x')
    await ev.until([['create', 'before.txt'], ['write', 'before.txt']])
    await h.stop()
    const n = ev.list.length
    // A second watch sees the next change; the stopped one must not.
    const ev2 = new Events()
    const h2 = await sbx.files.watchDir(work, ev2.on)
    fs.writeFileSync(path.join(work, 'after.txt'), 'x')
    await ev2.until([['create', 'after.txt']])
    await h2.stop()
    return { stoppedGotMore: ev.list.length !== n, exited }
  },

  async sdk_write_events({ sbx, work }) {
    // files.write of a watched file: what E2B's own watch tests wait for
    // (envd writes in place: create, chmod, write; over a file chmod, write).
    const ev = new Events()
    const h = await sbx.files.watchDir(work, ev.on)
    const p = path.join(work, 'n.txt')
    await sbx.files.write(p, 'first')
    await ev.until([['create', 'n.txt'], ['write', 'n.txt']])
    await sbx.files.write(p, 'second')
    await sbx.files.makeDir(path.join(work, 'fence'))
    await ev.until([['create', 'fence']])
    await h.stop()
    return ev.names()
  },

  async errors({ sbx, work }) {
    const f = path.join(work, 'regular')
    fs.writeFileSync(f, '')
    const missing = await rejection(sbx.files.watchDir(path.join(work, 'missing'), () => {}))
    const file = await rejection(sbx.files.watchDir(f, () => {}))
    return { missing, file }
  },
})
