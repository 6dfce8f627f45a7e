// signed.mjs - signed /files URLs (README "Signed URLs") as a user's program
// makes them: the sandbox object the SDK's debug mode builds, with the access
// token the E2B API would have handed it (lib.mjs), asks for downloadUrl and
// uploadUrl, and the URLs are fetched as a browser would, with plain fetch()
// and no header: as given, expired, tampered with, or used for another user,
// path, operation or route. Each case answers {status, body}.
// Usage: node signed.mjs SCENARIO (SANDBOX_AGENT_SDK_TOKEN set).
import fs from 'node:fs'
import path from 'node:path'
import { run } from './lib.mjs'

async function answer(res) {
  const text = await res.text()
  let body = text
  try {
    body = JSON.parse(text)
  } catch { /* a file's bytes */ }
  return { status: res.status, body }
}

const get = async (url, headers = {}) => answer(await fetch(url, { headers }))

async function post(url, data, name = 'up.txt') {
  const form = new FormData()
  form.append('file', new Blob([data]), name)
  return answer(await fetch(url, { method: 'POST', body: form }))
}

const readOrNull = (p) => (fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : null)

// url with its query parameter `name` set to value (null: removed).
function withParam(url, name, value) {
  const u = new URL(url)
  if (value === null) u.searchParams.delete(name)
  else u.searchParams.set(name, value)
  return u.toString()
}

run({
  async urls({ sbx, work, user }) {
    // A name that every encoding step touches: a space, '+', '&', '%', non-ASCII.
    const p = path.join(work, 'a b+c&d%20 é.txt')
    const other = path.join(work, 'other.txt')
    fs.writeFileSync(p, 'signed bytes\n')
    fs.writeFileSync(other, 'other bytes\n')
    const read = await sbx.downloadUrl(p)
    const readExp = await sbx.downloadUrl(p, { useSignatureExpiration: 120 })
    const expired = await sbx.downloadUrl(p, { useSignatureExpiration: -60 })
    const asUser = await sbx.downloadUrl(p, { user })
    const write = await sbx.uploadUrl(path.join(work, 'up', 'new.txt'), { useSignatureExpiration: 120 })
    const writeExpired = await sbx.uploadUrl(path.join(work, 'up', 'late.txt'), { useSignatureExpiration: -1 })
    const sig = new URL(read).searchParams.get('signature')
    const tampered = sig.slice(0, 10) + (sig[10] === 'A' ? 'B' : 'A') + sig.slice(11)
    const base = new URL(read)
    return {
      url: read,
      read: await get(read),
      readWithExpiration: await get(readExp),
      expired: await get(expired),
      tampered: await get(withParam(read, 'signature', tampered)),
      noSignature: await get(withParam(read, 'signature', null)),
      asUser: await get(asUser),
      anotherUser: await get(withParam(asUser, 'username', 'root')),
      defaultUserForNamed: await get(withParam(asUser, 'username', null)),
      anotherPath: await get(withParam(read, 'path', other)),
      samePathOtherSpelling: await get(withParam(read, 'path', work + '/./' + path.basename(p))),
      laterExpiration: await get(withParam(readExp, 'signature_expiration',
        String(Number(new URL(readExp).searchParams.get('signature_expiration')) + 3600))),
      writeSignatureToRead: await get(write),
      readSignatureToWrite: await post(read, 'overwritten'),
      upload: await post(write, 'uploaded\n'),
      uploaded: readOrNull(path.join(work, 'up', 'new.txt')),
      uploadExpired: await post(writeExpired, 'late'),
      lateExists: fs.existsSync(path.join(work, 'up', 'late.txt')),
      wrongHeaderWins: await get(read, { 'X-Access-Token': 'not-the-token' }),
      compose: await answer(await fetch(new URL('/files/compose' + base.search, base), {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ source_paths: [other], destination: path.join(work, 'composed') }),
      })),
      rpc: await answer(await fetch(new URL('/filesystem.Filesystem/Stat' + base.search, base), {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ path: p }),
      })),
      stillThere: fs.readFileSync(p, 'utf8'),
    }
  },
})
