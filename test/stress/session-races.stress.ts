import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import type { FastifyInstance } from 'fastify'
import { build, createApp } from '../support/app.js'
import { adminClient, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'
import { freshKeyPrefix } from '../support/redis.js'
import { concurrentRefreshTrials, raceTrials } from '../support/session-races.js'
import { clusterClient, clusterKeys, clusterMissing, startRedisCluster } from '../support/redis-cluster.js'

/**
 * The session races of test/routes/sessions.test.ts, with hundreds of trials per
 * store: a thief refreshing a stolen session in a loop on one instance while its
 * owner reuses a rotated token or logs out on the other (no trial may survive),
 * and, with the reuse window, tabs refreshing one token at once on both (each
 * gets the same new refresh token, and the session goes on).
 */

const TRIALS = Number(process.env.RACE_TRIALS ?? 300)
const REFRESHES = 2000
const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
// The per-session refresh limit is off: the storage test refreshes one session far faster than a client would.
const REFRESH_ON = { REFRESH_TOKENS: true, REFRESH_REUSE_WINDOW: '0', REFRESH_RATE_LIMIT: 1_000_000 }
/** The default reuse window (10 s). */
const WITH_WINDOW = { REFRESH_TOKENS: true, REFRESH_RATE_LIMIT: 1_000_000 }

/** One session refreshed 2,000 times, alternately on each instance, leaves as many records as it started with. */
async function constantStorage (t: Test, a: FastifyInstance, b: FastifyInstance, count: () => Promise<number>): Promise<void> {
  const before = await count()
  const { refreshToken } = await a.catsSessions.start({ id: 1, username: 'john' }, { address: '127.0.0.1', userAgent: 'storage' })
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

/** Redis connects after start-up, and commands are not queued meanwhile: waits until every app answers ready. */
async function untilReady (...apps: FastifyInstance[]): Promise<void> {
  for (let wait = 0; ; wait++) {
    const statuses = await Promise.all(apps.map(async (app) => (await app.inject('/health/ready')).statusCode))
    if (statuses.every((status) => status === 200)) return
    if (wait === 100) throw new Error('the apps did not become ready within 10 s')
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

async function race (t: Test, a: FastifyInstance, b: FastifyInstance): Promise<void> {
  const reuse = await raceTrials(a, b, 'reuse', TRIALS)
  t.comment(`reuse: ${reuse} of ${TRIALS} survived`)
  t.equal(reuse, 0, `survivors of ${TRIALS} reuse races`)
  for (const owner of ['logout', 'delete', 'others'] as const) {
    const survivors = await raceTrials(a, b, owner, TRIALS)
    t.comment(`${owner}: ${survivors} of ${TRIALS} survived`)
    t.equal(survivors, 0, `survivors of ${TRIALS} ${owner} races`)
  }
}

/** The races that need the reuse window, on apps that have it. */
async function windowedRace (t: Test, a: FastifyInstance, b: FastifyInstance): Promise<void> {
  const logout = await raceTrials(a, b, 'logout', TRIALS)
  t.comment(`logout with the reuse window: ${logout} of ${TRIALS} survived`)
  t.equal(logout, 0, `survivors of ${TRIALS} logout races, with the reuse window`)
  t.strictSame(await concurrentRefreshTrials(a, b, TRIALS), [], `${TRIALS} trials of tabs refreshing one token at once`)
}

t.test('memory, one instance', async (t) => {
  const app = await build(t, REFRESH_ON)
  await race(t, app, app)
  const windowed = await build(t, WITH_WINDOW)
  await windowedRace(t, windowed, windowed)
})

t.test('PGlite, one instance', async (t) => {
  const app = await build(t, { ...REFRESH_ON, DATABASE_URL: 'pglite://memory' })
  await race(t, app, app)
  const windowed = await build(t, { ...WITH_WINDOW, DATABASE_URL: 'pglite://memory' })
  await windowedRace(t, windowed, windowed)
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
    const [c, d] = [await build(t, { ...WITH_WINDOW, DATABASE_URL: urlWithSchema(url, schema) }), await build(t, { ...WITH_WINDOW, DATABASE_URL: urlWithSchema(url, schema) })]
    await windowedRace(t, c, d)
  })

  if (TEST_REDIS_URL !== undefined && TEST_REDIS_URL !== '') {
    const redisUrl = TEST_REDIS_URL
    t.test('PostgreSQL with the denylist in Redis, two instances', async (t) => {
      const admin = await adminClient(t, url)
      const schema = await freshServerSchema(t, admin, 'session_races')
      const prefix = freshKeyPrefix(t, redisUrl)
      const open = async (config: typeof REFRESH_ON | typeof WITH_WINDOW): Promise<FastifyInstance> =>
        await build(t, { ...config, DATABASE_URL: urlWithSchema(url, schema), REDIS_URL: redisUrl, REDIS_KEY_PREFIX: prefix })
      const [a, b] = [await open(REFRESH_ON), await open(REFRESH_ON)]
      const [c, d] = [await open(WITH_WINDOW), await open(WITH_WINDOW)]
      await untilReady(a, b, c, d)
      await race(t, a, b)
      await windowedRace(t, c, d)
    })
  }
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
    const windowed = { ...WITH_WINDOW, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: prefix }
    const [c, d] = [await createApp(windowed), await createApp(windowed)]
    t.teardown(async () => {
      await c.close()
      await d.close()
    })
    await untilReady(a, b, c, d)
    await race(t, a, b)
    const redis = new Redis(redisUrl)
    t.teardown(() => { redis.disconnect() })
    await constantStorage(t, a, b, async () => (await redis.keys(`${prefix}*`)).length)
    await windowedRace(t, c, d)
  })
}

const noCluster = clusterMissing()
if (noCluster !== undefined) {
  t.comment(`${noCluster}: the Redis Cluster races were skipped`)
} else {
  t.test('Redis Cluster (3 masters, 3 replicas) without a database, two instances', async (t) => {
    const cluster = await startRedisCluster(t)
    const config = { ...REFRESH_ON, REDIS_CLUSTER_NODES: cluster.setting }
    const windowed = { ...WITH_WINDOW, REDIS_CLUSTER_NODES: cluster.setting }
    const [a, b, c, d] = [await createApp(config), await createApp(config), await createApp(windowed), await createApp(windowed)]
    t.teardown(async () => {
      for (const app of [a, b, c, d]) await app.close()
    })
    await untilReady(a, b, c, d)
    await race(t, a, b)
    const client = clusterClient(t, cluster)
    await constantStorage(t, a, b, async () => (await clusterKeys(client, 'cats-api:*')).length)
    await windowedRace(t, c, d)
  })
}
