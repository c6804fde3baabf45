import t, { type Test } from 'tap'
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

const TRIALS = 300
const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
const REFRESH_ON = { REFRESH_TOKENS: true }

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
    const schema = await freshServerSchema(t, await adminClient(t, url), 'session_races')
    const [a, b] = [await build(t, { ...REFRESH_ON, DATABASE_URL: urlWithSchema(url, schema) }), await build(t, { ...REFRESH_ON, DATABASE_URL: urlWithSchema(url, schema) })]
    await race(t, a, b)
  })
}

if (TEST_REDIS_URL === undefined || TEST_REDIS_URL === '') {
  t.comment('TEST_REDIS_URL is not set: the Redis races were skipped')
} else {
  const redisUrl = TEST_REDIS_URL
  t.test('Redis without a database, two instances', async (t) => {
    const config = { ...REFRESH_ON, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: freshKeyPrefix(t, redisUrl) }
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
  })
}
