import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { MemoryLoginAttempts, type Admission, type LoginAttemptStore, type LoginPolicy } from '../../src/auth/login-attempts.js'
import { RedisLoginAttempts } from '../../src/auth/redis-login-attempts.js'

/**
 * One contract for the failed-login counters, run unchanged against the
 * in-memory store and, with TEST_REDIS_URL, the Redis store (a key prefix of
 * its own per test, so parallel runs never share a counter).
 */

type StoreFactory = (t: Test, policy: LoginPolicy) => Promise<LoginAttemptStore>

// Short windows (milliseconds) so that expiry shows within a test.
const POLICY: LoginPolicy = { maxFailures: 3, windowMs: 400, lockMs: 200, lockMaxMs: 800, clientMaxFailures: 5, clientWindowMs: 400 }
const LONG: LoginPolicy = { ...POLICY, windowMs: 60_000, lockMs: 60_000, lockMaxMs: 240_000, clientWindowMs: 60_000 }

const ann = { username: 'ann', client: '10.0.0.1' }
const admitted: Admission = { admitted: true }

async function admitMany (store: LoginAttemptStore, attempt: { username: string, client: string }, times: number): Promise<Admission[]> {
  const answers: Admission[] = []
  for (let i = 0; i < times; i++) answers.push(await store.admit(attempt))
  return answers
}

function contractSuite (t: Test, openStore: StoreFactory): void {
  t.test('the pair locks at the threshold: the attempt that reaches it is admitted, the next refused', async (t) => {
    const store = await openStore(t, LONG)
    t.strictSame(await admitMany(store, ann, 3), [admitted, admitted, admitted])
    t.strictSame(await store.admit(ann), { admitted: false, reason: 'locked', retryAfterMs: 120_000 }, 'refused, and the lock doubled')
    t.strictSame(await store.admit({ ...ann, client: '10.0.0.2' }), admitted, 'the same username from another address is admitted')
    t.strictSame(await store.admit({ ...ann, username: 'bob' }), admitted, 'another username from the same address is admitted')
  })

  t.test('each attempt while locked doubles the lock, up to the cap', async (t) => {
    const store = await openStore(t, LONG)
    await admitMany(store, ann, 3)
    const retries = (await admitMany(store, ann, 4)).map((answer) => answer.admitted ? 0 : answer.retryAfterMs)
    t.strictSame(retries, [120_000, 240_000, 240_000, 240_000])
  })

  t.test('a success clears the pair, so its failures start again from zero', async (t) => {
    const store = await openStore(t, LONG)
    await admitMany(store, ann, 2)
    await store.succeeded(ann)
    t.strictSame(await admitMany(store, ann, 3), [admitted, admitted, admitted])
    t.equal((await store.admit(ann)).admitted, false)
    // A success after the lock (the attempt that reached the threshold was the owner's) clears the lock too.
    await store.succeeded(ann)
    t.strictSame(await store.admit(ann), admitted)
  })

  t.test('an address with more failures than its cap is refused for every username; successes give failures back', async (t) => {
    const store = await openStore(t, LONG)
    for (let n = 0; n < 4; n++) await store.admit({ username: `user-${n}`, client: ann.client })
    await store.admit({ username: 'owner', client: ann.client })
    await store.succeeded({ username: 'owner', client: ann.client })
    t.strictSame(await admitMany(store, { username: 'x', client: ann.client }, 2), [admitted, admitted], 'four failures and a success: two more are admitted')
    const refused = await store.admit({ username: 'someone-else', client: ann.client })
    t.match(refused, { admitted: false, reason: 'client' })
    t.ok(!refused.admitted && refused.retryAfterMs > 55_000 && refused.retryAfterMs <= 60_000, 'until the address window ends')
    t.strictSame(await store.admit({ username: 'someone-else', client: '10.0.0.2' }), admitted, 'other addresses are not affected')
  })

  t.test('a success for an address without failures changes nothing', async (t) => {
    const store = await openStore(t, LONG)
    await store.succeeded(ann)
    t.strictSame(await admitMany(store, ann, 3), [admitted, admitted, admitted])
  })

  t.test('failures expire with their window; a pair that was locked re-locks at double length within a window after its lock', async (t) => {
    const store = await openStore(t, POLICY)
    await admitMany(store, ann, 2)
    await sleep(POLICY.windowMs + 100)
    t.strictSame(await admitMany(store, ann, 3), [admitted, admitted, admitted], 'the two old failures no longer count')
    t.match(await store.admit(ann), { admitted: false, retryAfterMs: 400 })
    await sleep(400 + 50)
    t.strictSame(await store.admit(ann), admitted, 'the lock ended: one more attempt is admitted')
    t.match(await store.admit(ann), { admitted: false, retryAfterMs: 800 }, 'it re-locked at double length (capped)')
    const client = '10.0.0.9'
    for (let n = 0; n < 6; n++) await store.admit({ username: `user-${n}`, client })
    t.match(await store.admit({ username: 'c', client }), { admitted: false, reason: 'client' })
    await sleep(POLICY.clientWindowMs + 100)
    t.strictSame(await store.admit({ username: 'c', client }), admitted, 'the address window ended')
  })

  t.test('attempts fired at once are admitted exactly up to the threshold', async (t) => {
    const store = await openStore(t, LONG)
    const answers = await Promise.all(Array.from({ length: 12 }, () => store.admit(ann)))
    t.equal(answers.filter((answer) => answer.admitted).length, 3)
  })
}

t.test('memory', async (t) => {
  contractSuite(t, async (_t, policy) => new MemoryLoginAttempts(policy))

  t.test('expired entries are swept, so the maps hold only recent attempts', async (t) => {
    let now = 0
    const store = new MemoryLoginAttempts(POLICY, () => now)
    for (let n = 0; n < 50; n++) await store.admit({ username: `u${n}`, client: `10.1.0.${n}` })
    t.equal(store.size, 100)
    now = 300
    await store.admit({ username: 'late', client: '10.2.0.1' })
    t.equal(store.size, 102, 'no sweep before a window has passed')
    now = 450
    await store.admit({ username: 'later', client: '10.2.0.2' })
    t.equal(store.size, 4, 'the first 50 pairs and addresses are gone')
    now = 800
    t.strictSame(await store.admit({ username: 'late', client: '10.2.0.1' }), admitted, 'between sweeps an expired entry is dropped when it is read')
    t.equal(store.size, 4)
  })
})

const { TEST_REDIS_URL } = process.env
if (TEST_REDIS_URL === undefined) {
  t.comment('TEST_REDIS_URL is not set: the Redis login counters were not tested')
} else {
  const redisUrl = TEST_REDIS_URL
  t.test('redis', async (t) => {
    contractSuite(t, async (t, policy) => {
      const redis = new Redis(redisUrl)
      const prefix = `cats-test-${randomBytes(6).toString('hex')}:`
      t.teardown(async () => {
        const keys = await redis.keys(`${prefix}*`)
        if (keys.length > 0) await redis.del(...keys)
        redis.disconnect()
      })
      return new RedisLoginAttempts(redis, prefix, policy)
    })

    t.test('the counters live under the key prefix and expire', async (t) => {
      const redis = new Redis(redisUrl)
      const prefix = `cats-test-${randomBytes(6).toString('hex')}:`
      t.teardown(async () => {
        const keys = await redis.keys(`${prefix}*`)
        if (keys.length > 0) await redis.del(...keys)
        redis.disconnect()
      })
      const store = new RedisLoginAttempts(redis, prefix, LONG)
      await store.admit(ann)
      const keys = (await redis.keys(`${prefix}*`)).sort()
      t.strictSame(keys, [`${prefix}login:client:10.0.0.1`, `${prefix}login:pair:10.0.0.1|ann`])
      for (const key of keys) {
        const ttl = await redis.pttl(key)
        t.ok(ttl > 55_000 && ttl <= 60_000, `${key} expires with its window (${ttl} ms)`)
      }
    })
  })
}
