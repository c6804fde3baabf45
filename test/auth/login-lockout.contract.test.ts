import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import type { Redis } from 'ioredis'
import { MemoryLoginAttempts, type Admission, type LoginAttempt, type LoginAttemptStore, type LoginPolicy } from '../../src/auth/login/login-lockout.js'
import { RedisLoginAttempts } from '../../src/auth/login/redis-login-lockout.js'
import { testRedis } from '../support/redis.js'
import { clusterClient, clusterKeys, clusterMissing, startRedisCluster } from '../support/redis-cluster.js'

/**
 * One contract for the failed-login counters, run unchanged against the
 * in-memory store and, with TEST_REDIS_URL, the Redis store (a key prefix of
 * its own per test, so parallel runs never share a counter).
 */

type StoreFactory = (t: Test, policy: LoginPolicy) => Promise<LoginAttemptStore>

// Short windows (milliseconds) so that expiry shows within a test.
const POLICY: LoginPolicy = { maxFailures: 3, windowMs: 400, lockMs: 200, lockMaxMs: 800, clientMaxFailures: 5, clientWindowMs: 400 }
const LONG: LoginPolicy = { ...POLICY, windowMs: 60_000, lockMs: 60_000, lockMaxMs: 240_000, clientWindowMs: 60_000 }

const ANN = { username: 'ann', client: '10.0.0.1' }
const admitted: Admission = { admitted: true }
const busy: Admission = { admitted: false, reason: 'busy' }

/** A new attempt (an id of its own) by `who`. */
const attempt = (who: { username: string, client: string } = ANN): LoginAttempt => ({ ...who, id: randomUUID() })

/** `times` attempts one after another, each admitted and settled as a failure; the admissions. */
async function fail (store: LoginAttemptStore, who: { username: string, client: string }, times: number): Promise<Admission[]> {
  const answers: Admission[] = []
  for (let i = 0; i < times; i++) {
    const one = attempt(who)
    const answer = await store.admit(one)
    answers.push(answer)
    if (answer.admitted) await store.settle(one, 'failed')
  }
  return answers
}

async function succeed (store: LoginAttemptStore, who: { username: string, client: string }): Promise<Admission> {
  const one = attempt(who)
  const answer = await store.admit(one)
  if (answer.admitted) await store.settle(one, 'succeeded')
  return answer
}

const retryAfter = (answer: Admission): number => answer.admitted || answer.reason === 'busy' ? 0 : answer.retryAfterMs

function contractSuite (t: Test, openStore: StoreFactory): void {
  t.test('the pair locks at the threshold: the failure that reaches it locks, the next attempt is refused', async (t) => {
    const store = await openStore(t, LONG)
    t.strictSame(await fail(store, ANN, 3), [admitted, admitted, admitted])
    t.strictSame(await store.admit(attempt()), { admitted: false, reason: 'locked', retryAfterMs: 120_000 }, 'refused, and the lock doubled')
    t.strictSame(await succeed(store, { ...ANN, client: '10.0.0.2' }), admitted, 'the same username from another address is admitted')
    t.strictSame(await succeed(store, { ...ANN, username: 'bob' }), admitted, 'another username from the same address is admitted')
  })

  t.test('each attempt while locked doubles the lock, up to the cap', async (t) => {
    const store = await openStore(t, LONG)
    await fail(store, ANN, 3)
    const retries = (await fail(store, ANN, 4)).map(retryAfter)
    t.strictSame(retries, [120_000, 240_000, 240_000, 240_000])
  })

  t.test('successes never count, and a success clears the pair, so its failures start again from zero', async (t) => {
    const store = await openStore(t, LONG)
    for (let i = 0; i < 10; i++) t.strictSame(await succeed(store, ANN), admitted)
    await fail(store, ANN, 2)
    await succeed(store, ANN)
    t.strictSame(await fail(store, ANN, 3), [admitted, admitted, admitted])
    t.equal((await store.admit(attempt())).admitted, false)
  })

  t.test('an address with more failures than its cap is refused for every username; successes do not count', async (t) => {
    const store = await openStore(t, LONG)
    for (let n = 0; n < 4; n++) await fail(store, { username: `user-${n}`, client: ANN.client }, 1)
    for (let n = 0; n < 10; n++) await succeed(store, { username: 'owner', client: ANN.client })
    t.strictSame(await fail(store, { username: 'x', client: ANN.client }, 2), [admitted, admitted], 'four failures and ten successes: two more are admitted')
    const refused = await store.admit(attempt({ username: 'someone-else', client: ANN.client }))
    t.match(refused, { admitted: false, reason: 'client' })
    t.ok(retryAfter(refused) > 55_000 && retryAfter(refused) <= 60_000, 'until the address window ends')
    t.strictSame(await succeed(store, { username: 'someone-else', client: '10.0.0.2' }), admitted, 'other addresses are not affected')
  })

  t.test('failures expire with their window; a pair that was locked re-locks at double length within a window after its lock', async (t) => {
    const store = await openStore(t, POLICY)
    await fail(store, ANN, 2)
    await sleep(POLICY.windowMs + 100)
    t.strictSame(await fail(store, ANN, 3), [admitted, admitted, admitted], 'the two old failures no longer count')
    t.match(await store.admit(attempt()), { admitted: false, retryAfterMs: 400 })
    await sleep(400 + 50)
    t.strictSame(await fail(store, ANN, 1), [admitted], 'the lock ended: one more attempt is admitted')
    t.match(await store.admit(attempt()), { admitted: false, retryAfterMs: 800 }, 'its failure re-locked at double length (capped)')
    const client = '10.0.0.9'
    for (let n = 0; n < 6; n++) await fail(store, { username: `user-${n}`, client }, 1)
    t.match(await store.admit(attempt({ username: 'c', client })), { admitted: false, reason: 'client' })
    await sleep(POLICY.clientWindowMs + 100)
    t.strictSame(await succeed(store, { username: 'c', client }), admitted, 'the address window ended')
  })

  t.test('attempts fired at once get as many slots as the pair has failures left; a settled one frees its slot', async (t) => {
    const store = await openStore(t, LONG)
    const attempts = Array.from({ length: 12 }, () => attempt())
    const answers = await Promise.all(attempts.map((one) => store.admit(one)))
    t.equal(answers.filter((answer) => answer.admitted).length, 3)
    t.equal(answers.filter((answer) => !answer.admitted && answer.reason === 'busy').length, 9)
    const held = attempts.filter((_, index) => answers[index]?.admitted === true)
    await store.settle(held[0] ?? attempt(), 'succeeded')
    t.strictSame(await store.admit(attempt()), admitted, 'a success frees its slot and counts nothing')
    t.strictSame(await store.admit(attempt()), busy)
    await store.settle(held[1] ?? attempt(), 'unchecked')
    t.strictSame(await store.admit(attempt()), admitted, 'an attempt never checked frees its slot and counts nothing')
    await store.settle(held[2] ?? attempt(), 'failed')
    t.strictSame(await store.admit(attempt()), busy, 'a failure frees its slot but uses one up: 1 failure + 3 in progress')
  })

  t.test('once a pair has been locked, its attempts are checked one at a time', async (t) => {
    const store = await openStore(t, POLICY)
    await fail(store, ANN, 3)
    await sleep(POLICY.lockMs + 50)
    const first = attempt()
    t.strictSame(await store.admit(first), admitted)
    t.strictSame(await store.admit(attempt()), busy, 'a second attempt waits for the first')
    await store.settle(first, 'succeeded')
    t.strictSame(await succeed(store, ANN), admitted, 'the owner got in: the pair starts afresh')
  })

  t.test('an address gets as many slots at once as it has failures left under its cap', async (t) => {
    const store = await openStore(t, LONG)
    const answers = await Promise.all(Array.from({ length: 8 }, (_, n) => store.admit(attempt({ username: `user-${n}`, client: ANN.client }))))
    t.strictSame(answers.map((answer) => answer.admitted), [true, true, true, true, true, true, false, false])
    t.strictSame(answers[7], busy)
  })
}

t.test('memory', async (t) => {
  contractSuite(t, async (_t, policy) => new MemoryLoginAttempts(policy))

  t.test('expired entries are swept, and settled attempts leave nothing behind', async (t) => {
    let now = 0
    const store = new MemoryLoginAttempts(POLICY, () => now)
    for (let n = 0; n < 50; n++) await fail(store, { username: `u${n}`, client: `10.1.0.${n}` }, 1)
    t.equal(store.size, 100)
    now = 300
    await fail(store, { username: 'late', client: '10.2.0.1' }, 1)
    t.equal(store.size, 102, 'no sweep before a window has passed')
    now = 450
    await fail(store, { username: 'later', client: '10.2.0.2' }, 1)
    t.equal(store.size, 4, 'the first 50 pairs and addresses are gone')
    now = 800
    t.strictSame(await succeed(store, { username: 'late', client: '10.2.0.1' }), admitted, 'between sweeps an expired entry is dropped when it is read')
    t.equal(store.size, 2)
  })
})

const { TEST_REDIS_URL } = process.env
if (TEST_REDIS_URL === undefined) {
  t.comment('TEST_REDIS_URL is not set: the Redis login counters were not tested')
} else {
  const redisUrl = TEST_REDIS_URL
  const openRedis = (t: Test): { redis: Redis, prefix: string } => testRedis(t, redisUrl)

  t.test('redis', async (t) => {
    contractSuite(t, async (t, policy) => {
      const { redis, prefix } = openRedis(t)
      return new RedisLoginAttempts(redis, prefix, policy)
    })

    t.test('the counters live under the key prefix and expire', async (t) => {
      const { redis, prefix } = openRedis(t)
      const store = new RedisLoginAttempts(redis, prefix, LONG)
      const held = attempt()
      await store.admit(held)
      await fail(store, ANN, 1)
      const keys = (await redis.keys(`${prefix}*`)).sort()
      t.strictSame(keys, [
        `${prefix}login:client-in-progress:10.0.0.1`, `${prefix}login:client:10.0.0.1`,
        `${prefix}login:pair-in-progress:10.0.0.1|ann`, `${prefix}login:pair:10.0.0.1|ann`
      ])
      for (const key of keys) {
        const ttl = await redis.pttl(key)
        t.ok(ttl > 55_000 && ttl <= 60_000, `${key} expires (${ttl} ms)`)
      }
      await store.settle(held, 'unchecked')
      t.strictSame((await redis.keys(`${prefix}*`)).sort(), [`${prefix}login:client:10.0.0.1`, `${prefix}login:pair:10.0.0.1|ann`],
        'no attempt in progress is left')
    })

    t.test('a slot held by an instance that died is freed when its lease ends', async (t) => {
      const { redis, prefix } = openRedis(t)
      const store = new RedisLoginAttempts(redis, prefix, LONG, 200)
      t.strictSame(await Promise.all([1, 2, 3].map(() => store.admit(attempt()))), [admitted, admitted, admitted])
      t.strictSame(await store.admit(attempt()), busy)
      await sleep(300)
      t.strictSame(await store.admit(attempt()), admitted, 'the three leases ended unsettled')
    })
  })
}

const noCluster = clusterMissing()
if (noCluster !== undefined) {
  t.comment(`${noCluster}: the Redis Cluster login counters were not tested`)
} else {
  t.test('a Redis Cluster (3 masters, 3 replicas)', async (t) => {
    const cluster = await startRedisCluster(t)
    const prefix = (): string => `cats-test-${randomUUID()}:`
    contractSuite(t, async (t, policy) => new RedisLoginAttempts(clusterClient(t, cluster), prefix(), policy, undefined, true))

    t.test('a client\'s counters and slots are under the client\'s hash tag, in one slot', async (t) => {
      const client = clusterClient(t, cluster)
      const keys = prefix()
      const store = new RedisLoginAttempts(client, keys, LONG, undefined, true)
      const held = attempt()
      await store.admit(held)
      await fail(store, ANN, 1)
      const written = (await clusterKeys(client, `${keys}*`)).sort()
      t.strictSame(written, [
        `${keys}login:{c:10.0.0.1}client-in-progress:10.0.0.1`, `${keys}login:{c:10.0.0.1}client:10.0.0.1`,
        `${keys}login:{c:10.0.0.1}pair-in-progress:10.0.0.1|ann`, `${keys}login:{c:10.0.0.1}pair:10.0.0.1|ann`
      ])
      const slot = await client.cluster('KEYSLOT', 'c:10.0.0.1')
      t.strictSame(await Promise.all(written.map((key) => client.cluster('KEYSLOT', key))), written.map(() => slot))
      await store.settle(held, 'unchecked')
    })
  })
}
