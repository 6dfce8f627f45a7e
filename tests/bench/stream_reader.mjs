// stream_reader.mjs - the fast reader of the 1 GiB stream rows of
// bench_serve_proc.py. Python's base64 decoder (~150 MB/s) is slower than the
// agent, and a reader that falls a whole retention ring behind loses bytes
// (README "sandbox-agent serve"), so the timing loop is node's: plain
// node:http, Connect envelopes parsed by hand, base64 decoded by Buffer.
//
//   node stream_reader.mjs start HOST:PORT BYTES   Start `head -c BYTES /dev/zero`
//   node stream_reader.mjs pipe BYTES              `head -c BYTES /dev/zero | cat`
//
// Prints {"bytes": N, "seconds": S, "end": {...}|null}.
import http from 'node:http'
import { spawn } from 'node:child_process'

const [mode, a, b] = process.argv.slice(2)

function done(bytes, t0, end) {
  process.stdout.write(JSON.stringify({ bytes, seconds: Number(process.hrtime.bigint() - t0) / 1e9, end }) + '\n')
}

function viaPipe(total) {
  const t0 = process.hrtime.bigint()
  let n = 0
  const p = spawn('sh', ['-c', `head -c ${total} /dev/zero | cat`], { stdio: ['ignore', 'pipe', 'inherit'] })
  p.stdout.on('data', (d) => { n += d.length })
  p.on('close', () => done(n, t0, null))
}

function viaStart(addr, total) {
  const [host, port] = [addr.slice(0, addr.lastIndexOf(':')), Number(addr.slice(addr.lastIndexOf(':') + 1))]
  const msg = Buffer.from(JSON.stringify({ process: { cmd: '/usr/bin/head', args: ['-c', String(total), '/dev/zero'] } }))
  const env = Buffer.alloc(5)
  env.writeUInt32BE(msg.length, 1)
  const body = Buffer.concat([env, msg])
  const t0 = process.hrtime.bigint()
  let n = 0
  let end = null
  let pending = Buffer.alloc(0)
  const req = http.request({
    host, port, method: 'POST', path: '/process.Process/Start',
    headers: { 'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1', 'Content-Length': body.length },
  }, (res) => {
    if (res.statusCode !== 200) {
      process.stdout.write(JSON.stringify({ status: res.statusCode }) + '\n')
      process.exit(1)
    }
    res.on('data', (chunk) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk
      let off = 0
      while (pending.length - off >= 5) {
        const len = pending.readUInt32BE(off + 1)
        if (pending.length - off < 5 + len) break
        const flags = pending[off]
        const obj = JSON.parse(pending.toString('utf8', off + 5, off + 5 + len))
        off += 5 + len
        if (flags & 2) continue
        const ev = obj.event || {}
        if (ev.data && ev.data.stdout) n += Buffer.byteLength(ev.data.stdout, 'base64')
        if (ev.end) end = ev.end
      }
      pending = pending.subarray(off)
    })
    res.on('end', () => done(n, t0, end))
  })
  req.on('error', (e) => { process.stdout.write(JSON.stringify({ error: String(e) }) + '\n'); process.exit(1) })
  req.end(body)
}

if (mode === 'pipe') viaPipe(Number(a))
else viaStart(a, Number(b))
