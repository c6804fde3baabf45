import t, { type Test } from 'tap'
import Fastify from 'fastify'
import { pgliteClient, postgresClient, type SqlClient } from '../../src/db/sql-client.js'
import { migrate } from '../../src/db/migrations.js'
import { DependencyStatus } from '../../src/dependency-status.js'
import { MemorySessionStore } from '../../src/auth/sessions/memory-session-store.js'
import type { SessionStore } from '../../src/auth/sessions/session-store.js'
import { RedisSessionStore } from '../../src/auth/sessions/redis-session-store.js'
import { SqlSessionStore } from '../../src/auth/sessions/sql-session-store.js'
import { testRedis } from '../support/redis.js'
import { adminClient, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'
import { pgliteCopy } from '../support/pglite-template.js'
import { recordsAfterRotations, simultaneousPresenters, windowedPresenters } from '../support/session-store-races.js'

/**
 * The store races and the long rotation chain of test/auth/session-stores.test.ts,
 * with hundreds of trials per store: presenters of one generation at once, with
 * and without the reuse window, and one session rotated 2,000 times without its
 * records growing.
 */

const TRIALS = Number(process.env.RACE_TRIALS ?? 300)
const ROTATIONS = 2000
const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
const silentLog = Fastify({ logger: false }).log

/** The rotation chain goes first, on an empty store: no other session's records can expire and go meanwhile. */
async function races (t: Test, store: SessionStore, count: () => Promise<number>): Promise<void> {
  const { before, after } = await recordsAfterRotations(store, count, ROTATIONS)
  t.equal(after, before, `${before} records before and after ${ROTATIONS} rotations`)
  t.strictSame(await simultaneousPresenters(store, TRIALS), [], `${TRIALS} trials of presenters at once: one rotates, the session ends`)
  t.strictSame(await windowedPresenters(store, TRIALS), [], `${TRIALS} trials of presenters at once in the reuse window: one rotates, the rest repeat`)
}

const sqlStore = (client: SqlClient): { store: SessionStore, count: () => Promise<number> } => ({
  store: new SqlSessionStore(client, new DependencyStatus('database', silentLog, async () => {})),
  count: async () => Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM sessions'))[0].n)
})

t.test('memory', async (t) => {
  const store = new MemorySessionStore()
  t.teardown(() => store.close())
  await races(t, store, async () => store.size)
})

t.test('PGlite in process', async (t) => {
  const client = await pgliteClient(await pgliteCopy(t))
  t.teardown(() => client.close())
  await migrate(client)
  const { store, count } = sqlStore(client)
  await races(t, store, count)
})

if (TEST_DATABASE_URL === undefined || TEST_DATABASE_URL === '') {
  t.comment('TEST_DATABASE_URL is not set: the PostgreSQL store races were skipped')
} else {
  const serverUrl = TEST_DATABASE_URL
  t.test('PostgreSQL server at TEST_DATABASE_URL', async (t) => {
    const schema = await freshServerSchema(t, await adminClient(t, serverUrl), 'session_store_races')
    const client = await postgresClient(urlWithSchema(serverUrl, schema))
    t.teardown(() => client.close())
    await migrate(client)
    const { store, count } = sqlStore(client)
    await races(t, store, count)
  })
}

if (TEST_REDIS_URL === undefined || TEST_REDIS_URL === '') {
  t.comment('TEST_REDIS_URL is not set: the Redis store races were skipped')
} else {
  const redisUrl = TEST_REDIS_URL
  t.test('Redis at TEST_REDIS_URL', async (t) => {
    const { redis, prefix } = testRedis(t, redisUrl)
    const store = new RedisSessionStore(redis, prefix, new DependencyStatus('redis', silentLog, async () => {}))
    await races(t, store, async () => (await redis.keys(`${prefix}*`)).length)
  })
}
