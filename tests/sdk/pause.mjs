// tests/sdk/pause.mjs - a pause seen through the published SDK (README
// "Pauses"): the orchestrator freezes the workload (POST /freeze) and thaws
// it (POST /unfreeze) while a user's program holds a command's stream, or
// drops it and reattaches by pid. Nothing may be lost, reordered or ended
// by the pause. The routes are called as the orchestrator calls them: plain
// HTTP with the sandbox's token.
import { Collector, WAIT_MS, rejection, run } from './lib.mjs'

// A counter that prints one number a line, as fast as a shell loop goes
// with a short sleep: output is flowing when the pause comes.
const COUNTER = 'i=0; while [ $i -lt 100000 ]; do echo $i; i=$((i+1)); sleep 0.01; done'

async function orchestrator(route, query = '') {
  const url = `${process.env.E2B_SANDBOX_URL}${route}${query}`
  const token = process.env.SANDBOX_AGENT_SDK_TOKEN
  const r = await fetch(url, { method: 'POST', headers: token ? { 'X-Access-Token': token } : {} })
  const body = await r.text()
  return { status: r.status, body: body ? JSON.parse(body) : null }
}

// The numbers of text, complete lines only.
function numbers(text) {
  const lines = text.split('\n')
  lines.pop()
  return lines.map(Number)
}

// 1 when ns counts up by one from its first, with no gap and no repeat.
function consecutive(ns) {
  for (let i = 1; i < ns.length; i++) if (ns[i] !== ns[i - 1] + 1) return false
  return true
}

// The last number printed so far, once it is past n.
const past = (n) => (t) => {
  const ns = numbers(t)
  return ns.length && ns[ns.length - 1] > n ? ns[ns.length - 1] : false
}

await run({
  async stream_and_reconnect({ sbx }) {
    // Two commands: one keeps its stream across the pause, one is dropped
    // during it and reattached by pid after.
    const kept = new Collector()
    const dropped = new Collector()
    const a = await sbx.commands.run(COUNTER, { background: true, onStdout: kept.push })
    const b = await sbx.commands.run(COUNTER, { background: true, onStdout: dropped.push })
    await kept.until(past(20), WAIT_MS, 'the first command counting')
    await dropped.until(past(20), WAIT_MS, 'the second command counting')

    const frozen = await orchestrator('/freeze', '?mode=legacy&maxWaitMs=10000')
    // Frozen: drop the second stream (as a client whose connection died
    // during the pause), and see the table still answers with both.
    await b.disconnect()
    const atFreeze = numbers(kept.text).length
    const lastDropped = numbers(dropped.text).pop()
    const stillFrozen = (await sbx.commands.list()).filter((p) => p.pid === a.pid || p.pid === b.pid).length
    const thawed = await orchestrator('/unfreeze')

    const reattached = new Collector()
    const b2 = await sbx.commands.connect(b.pid, { onStdout: reattached.push })
    await kept.until(past(numbers(kept.text).pop() + 20), WAIT_MS, 'the first command counting after the thaw')
    await reattached.until(past(lastDropped + 20), WAIT_MS, 'the reattached command counting')
    await a.kill()
    await b2.kill()
    const errA = await rejection(a.wait())
    const errB = await rejection(b2.wait())
    const keptNs = numbers(kept.text)
    const laterNs = numbers(reattached.text)
    return {
      freezeStatus: frozen.status,
      frozenCount: frozen.body && frozen.body.frozen,
      unfreezeStatus: thawed.status,
      listedWhileFrozen: stillFrozen,
      keptFrom0: keptNs[0] === 0,
      keptConsecutive: consecutive(keptNs),
      keptPastFreeze: keptNs.length > atFreeze + 20,
      reattachedAfterDrop: laterNs.length > 0 && laterNs[0] > lastDropped,
      reattachedConsecutive: consecutive(laterNs),
      endedByKill: [errA && errA.name, errB && errB.name],
    }
  },
})
