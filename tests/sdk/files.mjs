// files.mjs - sbx.files against sandbox-agent serve (issue 9): read and write
// (text, bytes, one file and many, every upload shape the SDK has), list with
// depth, exists, getInfo, makeDir, rename, remove. Every path is under
// SANDBOX_AGENT_SDK_WORK (the test's own directory) unless the scenario says.
// Usage: node files.mjs SCENARIO.
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { run, rejection } from './lib.mjs'

const sha = (b) => createHash('sha256').update(b).digest('hex')
const info = (e) => e && { ...e, modifiedTime: e.modifiedTime ? e.modifiedTime.toISOString() : e.modifiedTime }
const allBytes = () => Uint8Array.from({ length: 256 }, (_, i) => i)

run({
  async text({ sbx, work }) {
    const p = path.join(work, 'new', 'dir', 'a.txt') // parents are made
    const w = await sbx.files.write(p, 'hello wörld\n')
    return { write: w, read: await sbx.files.read(p), onDisk: fs.readFileSync(p, 'utf8') }
  },

  async bytes({ sbx, work }) {
    const small = allBytes()
    const big = randomBytes(3 << 20)
    const p1 = path.join(work, 'bytes.bin')
    const p2 = path.join(work, 'big.bin')
    await sbx.files.write(p1, small.buffer)
    await sbx.files.write(p2, new Blob([big]))
    const r1 = await sbx.files.read(p1, { format: 'bytes' })
    const r2 = await sbx.files.read(p2, { format: 'blob' })
    const r2b = new Uint8Array(await r2.arrayBuffer())
    const chunks = []
    for await (const c of await sbx.files.read(p2, { format: 'stream' })) chunks.push(c)
    return {
      smallSame: Buffer.compare(Buffer.from(r1), Buffer.from(small)) === 0,
      bigSame: sha(r2b) === sha(big) && r2b.length === big.length,
      streamSame: sha(Buffer.concat(chunks)) === sha(big),
      diskSame: sha(fs.readFileSync(p2)) === sha(big),
    }
  },

  async empty({ sbx, work }) {
    const p = path.join(work, 'empty')
    await sbx.files.write(p, '')
    return { text: await sbx.files.read(p), bytes: (await sbx.files.read(p, { format: 'bytes' })).length,
             size: fs.statSync(p).size }
  },

  async many({ sbx, work }) {
    const files = [
      { path: path.join(work, 'm', 'one.txt'), data: 'one' },
      { path: path.join(work, 'm', 'sub', 'two.bin'), data: allBytes().buffer },
      { path: path.join(work, 'm', 'three.txt'), data: new Blob(['three']) },
    ]
    const w = await sbx.files.write(files)
    const back = []
    for (const f of files) back.push(sha(Buffer.from(await sbx.files.read(f.path, { format: 'bytes' }))))
    const want = [sha('one'), sha(Buffer.from(allBytes())), sha('three')]
    return { write: w, same: back.every((h, i) => h === want[i]) }
  },

  async octet_gzip_stream({ sbx, work }) {
    const data = randomBytes(1 << 20)
    const a = path.join(work, 'octet.bin')
    const b = path.join(work, 'gzip.bin')
    const c = path.join(work, 'stream.bin')
    const wa = await sbx.files.write(a, new Blob([data]), { useOctetStream: true })
    const wb = await sbx.files.write(b, new Blob([data]), { gzip: true })
    const body = new ReadableStream({
      start(ctl) {
        for (let i = 0; i < data.length; i += 65536) ctl.enqueue(data.subarray(i, i + 65536))
        ctl.close()
      },
    })
    const wc = await sbx.files.write(c, body)
    const gz = await sbx.files.read(b, { format: 'bytes', gzip: true })
    const same = (p) => sha(fs.readFileSync(p)) === sha(data)
    return { paths: [wa.path, wb.path, wc.path], same: [same(a), same(b), same(c)],
             gzipReadSame: sha(Buffer.from(gz)) === sha(data) }
  },

  async metadata({ sbx, work }) {
    const p = path.join(work, 'meta.txt')
    const w = await sbx.files.write(p, 'm', { metadata: { Owner: 'team-a', purpose: 'test' } })
    return { write: w, info: info(await sbx.files.getInfo(p)) }
  },

  async metadata_cleared({ sbx, work }) {
    // Overwriting without metadata leaves none (issue 10).
    const p = path.join(work, 'meta2.txt')
    const first = await sbx.files.write(p, 'm', { metadata: { Owner: 'team-a' } })
    const second = await sbx.files.write(p, 'n')
    const got = await sbx.files.getInfo(p)
    return { first: first.metadata ?? null, second: second.metadata ?? null, info: got.metadata ?? null }
  },

  async symlink_info({ sbx, work }) {
    // A symlink is its target's type, with symlinkTarget (issue 10).
    const d = path.join(work, 'links')
    fs.mkdirSync(path.join(d, 'sub'), { recursive: true })
    fs.writeFileSync(path.join(d, 'f'), 'data')
    fs.symlinkSync('f', path.join(d, 'lf'))
    fs.symlinkSync(path.join(d, 'sub'), path.join(d, 'ld'))
    fs.symlinkSync('missing', path.join(d, 'dangling'))
    const pick = (e) => ({ type: e.type ?? null, symlinkTarget: e.symlinkTarget ?? null, mode: e.mode })
    return {
      lf: pick(await sbx.files.getInfo(path.join(d, 'lf'))),
      ld: pick(await sbx.files.getInfo(path.join(d, 'ld'))),
      dangling: pick(await sbx.files.getInfo(path.join(d, 'dangling'))),
      listed: (await sbx.files.list(d)).map((e) => `${e.name}:${e.type}`).sort(),
    }
  },

  async relative({ sbx, userHome }) {
    // A relative path is the user's home (the default user's here).
    const name = `sa-sdk-rel-${process.pid}.txt`
    try {
      const w = await sbx.files.write(name, 'rel')
      return { write: w, read: await sbx.files.read(name),
               onDisk: fs.existsSync(path.join(userHome, name)) }
    } finally {
      fs.rmSync(path.join(userHome, name), { force: true })
    }
  },

  async as_user({ sbx, work }) {
    const dir = path.join(work, 'shared')
    fs.mkdirSync(dir, { mode: 0o1777 })
    fs.chmodSync(dir, 0o1777)
    const p = path.join(dir, 'nobody.txt')
    await sbx.files.write(p, 'n', { user: 'nobody' })
    const denied = await rejection(sbx.files.write(path.join(work, 'root-only', 'x.txt'), 'x', { user: 'nobody' }))
    return { owner: (await sbx.files.getInfo(p)).owner, uid: fs.statSync(p).uid, denied }
  },

  async read_missing({ sbx, work }) {
    // The route must be served (a 404 for a route it lacks reads the same).
    fs.writeFileSync(path.join(work, 'there'), 'here')
    return { there: await sbx.files.read(path.join(work, 'there')),
             missing: await rejection(sbx.files.read(path.join(work, 'no-such-file'))) }
  },

  async list({ sbx, work }) {
    const d = path.join(work, 'tree')
    fs.mkdirSync(path.join(d, 'sub', 'deeper'), { recursive: true })
    fs.writeFileSync(path.join(d, 'f1'), '12345')
    fs.writeFileSync(path.join(d, 'sub', 'f2'), '')
    fs.writeFileSync(path.join(d, 'sub', 'deeper', 'f3'), '')
    fs.symlinkSync('f1', path.join(d, 'link'))
    const names = async (depth) => (await sbx.files.list(d, depth ? { depth } : undefined))
      .map((e) => path.relative(d, e.path) + ':' + e.type).sort()
    const one = await sbx.files.list(d)
    return {
      depth1: await names(), depth2: await names(2), depth3: await names(3),
      f1: info(one.find((e) => e.name === 'f1')),
      link: info(one.find((e) => e.name === 'link')),
      missing: await rejection(sbx.files.list(path.join(work, 'nope'))),
      badDepth: await rejection(sbx.files.list(d, { depth: 0 })),
    }
  },

  async exists_info({ sbx, work }) {
    const f = path.join(work, 'e.txt')
    fs.writeFileSync(f, 'four')
    fs.chmodSync(f, 0o640)
    return {
      file: await sbx.files.exists(f),
      dir: await sbx.files.exists(work),
      missing: await sbx.files.exists(path.join(work, 'missing')),
      info: info(await sbx.files.getInfo(f)),
      dirInfo: info(await sbx.files.getInfo(work)),
      infoMissing: await rejection(sbx.files.getInfo(path.join(work, 'missing'))),
    }
  },

  async make_dir({ sbx, work }) {
    const d = path.join(work, 'a', 'b', 'c')
    const first = await sbx.files.makeDir(d)
    const second = await sbx.files.makeDir(d)
    fs.writeFileSync(path.join(work, 'plain'), '')
    const onFile = await rejection(sbx.files.makeDir(path.join(work, 'plain')))
    return { first, second, isDir: fs.statSync(d).isDirectory(), mode: fs.statSync(d).mode & 0o7777, onFile }
  },

  async rename({ sbx, work }) {
    const a = path.join(work, 'old.txt')
    const b = path.join(work, 'moved', 'new.txt')
    fs.writeFileSync(a, 'content')
    fs.mkdirSync(path.dirname(b))
    const e = await sbx.files.rename(a, b)
    return {
      entry: info(e), oldGone: !fs.existsSync(a), content: fs.readFileSync(b, 'utf8'),
      missing: await rejection(sbx.files.rename(a, path.join(work, 'x'))),
    }
  },

  async remove({ sbx, work }) {
    const f = path.join(work, 'gone.txt')
    const d = path.join(work, 'gone-dir')
    fs.writeFileSync(f, 'x')
    fs.mkdirSync(path.join(d, 'sub'), { recursive: true })
    fs.writeFileSync(path.join(d, 'sub', 'f'), 'x')
    await sbx.files.remove(f)
    await sbx.files.remove(d)
    const missing = await rejection(sbx.files.remove(path.join(work, 'never-there')))
    return { file: fs.existsSync(f), dir: fs.existsSync(d), missing }
  },
})
