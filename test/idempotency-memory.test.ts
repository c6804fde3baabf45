import t from 'tap'
import { churnClient, keyedChurn, liveMemory, startQuietServer } from './support/keyed-churn.js'

// The fast version of test/stress/idempotency-memory.stress.ts: the compiled server with a 128 MB heap and
// small idempotency-key limits, 2,000 keyed create + delete with 7 KB names from 20 clients. Unbounded, the
// keys would all be kept (and all replay); bounded, the process keeps the newest within the limits.

const CREATES = 2000
const CLIENTS = 20
const NAME_LENGTH = 7 * 1024
const MiB = 1024 * 1024

t.test('keyed create + delete with 7 KB names: the compiled server keeps its keys within the limits', async (t) => {
  const server = await startQuietServer(128, {
    TRUST_PROXY: '1',
    IDEMPOTENCY_KEYS_MAX_BYTES: String(2 * MiB),
    IDEMPOTENCY_CLIENT_KEYS_MAX_BYTES: String(256 * 1024)
  })
  t.teardown(() => { if (server.child.exitCode === null) server.child.kill('SIGKILL') })
  const before = await liveMemory(server)
  const churn = await keyedChurn(server.base, { creates: CREATES, concurrency: 8, nameLength: NAME_LENGTH, clients: CLIENTS, key: (n) => `key-${n}` })
  t.equal(churn.failure, undefined, 'every request got an answer')
  t.strictSame(churn.statuses, { 200: CREATES, 201: CREATES }, 'every create 201, every delete 200')
  t.equal(server.child.exitCode, null, 'the server is still running')
  // Unbounded, the keys alone would be 2,000 × 7 KB = 15 MB.
  const growth = (await liveMemory(server)).heapUsed - before.heapUsed
  t.ok(growth < 8 * MiB, `the live heap grew by ${(growth / MiB).toFixed(1)} MB: the keys' cap, 2 MiB, and little else`)

  const repeat = async (n: number): Promise<string | null> => (await fetch(`${server.base}/cats`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `key-${n}`, 'x-forwarded-for': churnClient(n % CLIENTS) },
    body: JSON.stringify({ name: 'n'.repeat(NAME_LENGTH), age: n % 30, breed: 'Churn' })
  })).headers.get('idempotent-replayed')
  t.equal(await repeat(CREATES - 1), 'true', 'the newest key replays')
  // 2 MiB hold about 270 keys of this size: the first of the last 300 keys is gone already.
  t.equal(await repeat(CREATES - 300), null, 'an older key was let go')
  t.equal(await repeat(0), null, 'and so was the first')
})
