import t from 'tap'
import { churnClient, keyedChurn, liveMemory, serverMemory, startQuietServer, type ServerMemory } from '../support/keyed-churn.js'

// The compiled server with a 128 MB heap (a common container limit) and the default idempotency-key
// limits: 20,000 keyed create + delete with 7 KB names, from 200 clients (so both the per-client quota
// and the cap on all keys are reached), must leave it alive, its live heap within the cap of the keys
// (32 MiB) of where it started, and recent keys replayable.

const CREATES = 20_000
const CLIENTS = 200
const NAME_LENGTH = 7 * 1024
const MiB = 1024 * 1024

const megabytes = (bytes: number): string => `${(bytes / MiB).toFixed(1)} MB`
const describe = ({ rss, heapUsed }: ServerMemory): string => `RSS ${megabytes(rss)}, live heap ${megabytes(heapUsed)}`

t.test('20,000 keyed create + delete with 7 KB names: a 128 MB heap stays alive and bounded', async (t) => {
  const server = await startQuietServer(128, { TRUST_PROXY: '1' })
  t.teardown(() => { if (server.child.exitCode === null) server.child.kill('SIGKILL') })
  // A short warm-up, so that "before" includes the code the loop runs.
  await keyedChurn(server.base, { creates: 200, concurrency: 8, nameLength: 16, clients: 1, key: (n) => `warm-up-${n}` })
  const before = await liveMemory(server)
  let peakRss = before.rss
  const sampler = setInterval(() => {
    serverMemory(server.base).then((now) => { peakRss = Math.max(peakRss, now.rss) }, () => {})
  }, 500)
  const started = Date.now()
  const churn = await keyedChurn(server.base, { creates: CREATES, concurrency: 16, nameLength: NAME_LENGTH, clients: CLIENTS, key: (n) => `key-${n}` })
  clearInterval(sampler)
  const seconds = (Date.now() - started) / 1000
  t.equal(churn.failure, undefined, 'every request got an answer')
  t.equal(server.child.exitCode, null, 'the server is still running')
  t.strictSame(churn.statuses, { 200: CREATES, 201: CREATES }, 'every create 201 (no 507), every delete 200')

  const after = await liveMemory(server)
  t.comment(`${CREATES} keyed create+delete in ${seconds.toFixed(1)} s; before: ${describe(before)}; after: ${describe(after)}; peak RSS ${megabytes(peakRss)}`)
  t.ok(after.heapUsed - before.heapUsed < 40 * MiB, `the live heap grew by ${megabytes(after.heapUsed - before.heapUsed)}: the keys' cap, 32 MiB, and little else`)
  t.ok(peakRss - before.rss < 128 * MiB, `RSS grew by at most ${megabytes(peakRss - before.rss)}`)

  // The newest key of a client still replays; its oldest keys made way for newer ones.
  const replay = async (n: number): Promise<string | null> => (await fetch(`${server.base}/cats`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `key-${n}`, 'x-forwarded-for': churnClient(n % CLIENTS) },
    body: JSON.stringify({ name: 'n'.repeat(NAME_LENGTH), age: n % 30, breed: 'Churn' })
  })).headers.get('idempotent-replayed')
  t.equal(await replay(CREATES - 1), 'true', 'the newest key replays')
  t.equal(await replay(0), null, 'the oldest key was let go')
  t.equal((await fetch(`${server.base}/health`)).status, 200)
})
