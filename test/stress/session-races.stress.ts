import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import type { FastifyInstance } from 'fastify'
import { build, createApp } from '../support/app.js'
import { adminClient, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'
import { freshKeyPrefix } from '../support/redis.js'
import { raceTrials } from '../support/session-races.js'

/**
 * The session races of test/routes/sessions.test.ts, with hundreds of trials per
 * store: a thief refreshing a stolen session in a loop on one instance while its
 * owner reuses a rotated token or logs out on the other. No trial may survive.
 */

const TRIALS = Number(process.env.RACE_TRIALS ?? 300)
const REFRESHES = 2000
const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
// The per-session refresh limit is off: the storage test refreshes one session far faster than a client would.
const REFRESH_ON = { REFRESH_TOKENS: true, REFRESH_REUSE_WINDOW: '0', REFRESH_RATE_LIMIT: 1_000_000 }

/** One session refreshed 2,000 times, alternately on each instance, leaves as many records as it started with. */
async function constantStorage (t: Test, a: FastifyInstance, b: FastifyInstance, count: () => Promise<number>): Promise<void> {
  const before = await count()
  const { refreshToken } = await a.sessions.start({ id: 1, username: 'john' }, { address: '127.0.0.1', userAgent: 'storage' })
  const started = await count()
  let token = refreshToken ?? ''
  for (let i = 0; i < REFRESHES; i++) {
    const res = await (i % 2 === 0 ? a : b).inject({ method: 'POST', url: '/auth/refresh', payload: { refresh_token: token } })
    if (res.statusCode !== 200) throw new Error(`refresh ${i}: ${res.statusCode} ${res.body}`)
    token = res.json().refresh_token
  }
  t.comment(`records: ${before} before login, ${started} after, ${await count()} after ${REFRESHES} refreshes`)
  t.equal(await count(), started, `the same records after ${REFRESHES} refreshes`)
}

async function race (t: Test, a: FastifyInstance, b: FastifyInstance): Promise<void> {
  const reuse = await raceTrials(a, b, 'reuse', TRIALS)
  t.comment(`reuse: ${reuse} of ${TRIALS} survived`)
  t.equal(reuse, 0, `survivors of ${TRIALS} reuse races`)
  const logout = await raceTrials(a, b, 'logout', TRIALS)
  t.comment(`logout: ${logout} of ${TRIALS} survived`)
  t.equal(logout, 0, `survivors of ${TRIALS} logout races`)
}

t.test('memory, one instance', async (t) => {
  const app = await build(t, REFRESH_ON)
  await race(t, app, app)
})

t.test('PGlite, one instance', async (t) => {
  const app = await build(t, { ...REFRESH_ON, DATABASE_URL: 'pglite://memory' })
  await race(t, app, app)
})

if (TEST_DATABASE_URL === undefined || TEST_DATABASE_URL === '') {
  t.comment('TEST_DATABASE_URL is not set: the PostgreSQL races were skipped')
} else {
  const url = TEST_DATABASE_URL
  t.test('PostgreSQL, two instances', async (t) => {
    const admin = await adminClient(t, url)
    const schema = await freshServerSchema(t, admin, 'session_races')
    const [a, b] = [await build(t, { ...REFRESH_ON, DATABASE_URL: urlWithSchema(url, schema) }), await build(t, { ...REFRESH_ON, DATABASE_URL: urlWithSchema(url, schema) })]
    await race(t, a, b)
    await constantStorage(t, a, b, async () => Number((await admin.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".sessions`)).rows[0].n))
  })
}

if (TEST_REDIS_URL === undefined || TEST_REDIS_URL === '') {
  t.comment('TEST_REDIS_URL is not set: the Redis races were skipped')
} else {
  const redisUrl = TEST_REDIS_URL
  t.test('Redis without a database, two instances', async (t) => {
    const prefix = freshKeyPrefix(t, redisUrl)
    const config = { ...REFRESH_ON, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: prefix }
    const [a, b] = [await createApp(config), await createApp(config)]
    t.teardown(async () => {
      await a.close()
      await b.close()
    })
    for (let wait = 0; (await a.inject('/health/ready')).statusCode !== 200 || (await b.inject('/health/ready')).statusCode !== 200; wait++) {
      if (wait === 100) throw new Error('the apps did not become ready within 10 s')
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    await race(t, a, b)
    const redis = new Redis(redisUrl)
    t.teardown(() => { redis.disconnect() })
    await constantStorage(t, a, b, async () => (await redis.keys(`${prefix}*`)).length)
  })
}
