import t from 'tap'
import { churnClient, keyedChurn, liveMemory, startQuietServer } from './support/keyed-churn.js'

// The fast version of test/stress/idempotency-memory.stress.ts: the compiled server with a 128 MB heap and
// small idempotency-key limits, 500 keyed create + delete with 28 KB names from 20 clients. Unbounded, the
// keys would all be kept (and all replay); bounded, the process keeps the newest within the limits. The bytes
// are those of 2,000 creates of the stress file's 7 KB names, in a quarter of the requests, so the body
// limit is raised to fit them.

const CREATES = 500
const CLIENTS = 20
const NAME_LENGTH = 28 * 1024
const MiB = 1024 * 1024

t.test('keyed create + delete with 28 KB names: the compiled server keeps its keys within the limits', async (t) => {
  const server = await startQuietServer(128, {
    TRUST_PROXY: '1',
    BODY_LIMIT: String(32 * 1024),
    IDEMPOTENCY_KEYS_MAX_BYTES: String(2 * MiB),
    IDEMPOTENCY_CLIENT_KEYS_MAX_BYTES: String(256 * 1024)
  })
  t.teardown(() => { if (server.child.exitCode === null) server.child.kill('SIGKILL') })
  const before = await liveMemory(server)
  const churn = await keyedChurn(server.base, { creates: CREATES, concurrency: 8, nameLength: NAME_LENGTH, clients: CLIENTS, key: (n) => `key-${n}` })
  t.equal(churn.failure, undefined, 'every request got an answer')
  t.strictSame(churn.statuses, { 200: CREATES, 201: CREATES }, 'every create 201, every delete 200')
  t.equal(server.child.exitCode, null, 'the server is still running')
  // Unbounded, the keys alone would be 500 × 28 KB = 14 MB; each client's 25 keys (700 KB) pass its cap too.
  const growth = (await liveMemory(server)).heapUsed - before.heapUsed
  t.ok(growth < 8 * MiB, `the live heap grew by ${(growth / MiB).toFixed(1)} MB: the keys' cap, 2 MiB, and little else`)

  const repeat = async (n: number): Promise<string | null> => (await fetch(`${server.base}/cats`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `key-${n}`, 'x-forwarded-for': churnClient(n % CLIENTS) },
    body: JSON.stringify({ name: 'n'.repeat(NAME_LENGTH), age: n % 30, breed: 'Churn' })
  })).headers.get('idempotent-replayed')
  t.equal(await repeat(CREATES - 1), 'true', 'the newest key replays')
  // 2 MiB hold about 70 keys of this size: the first of the last 100 keys is gone already.
  t.equal(await repeat(CREATES - 100), null, 'an older key was let go')
  t.equal(await repeat(0), null, 'and so was the first')
})
