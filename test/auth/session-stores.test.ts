import { createHash, randomBytes, randomUUID } from 'node:crypto'
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import { pgliteClient, postgresClient, type SqlClient } from '../../src/db/sql-client.js'
import { migrate } from '../../src/db/migrations.js'
import { DependencyStatus } from '../../src/dependency-status.js'
import { MemoryDenylist, type Denylist } from '../../src/auth/sessions/denylist.js'
import { MemorySessionStore } from '../../src/auth/sessions/memory-session-store.js'
import { DEFAULT_ENDED_KEEP_MS, type SessionStore } from '../../src/auth/sessions/session-store.js'
import { RedisDenylist } from '../../src/auth/sessions/redis-denylist.js'
import { RedisSessionStore } from '../../src/auth/sessions/redis-session-store.js'
import { SqlDenylist } from '../../src/auth/sessions/sql-denylist.js'
import { SqlSessionStore } from '../../src/auth/sessions/sql-session-store.js'
import { testRedis } from '../support/redis.js'
import { SessionStoreUnavailable } from '../../src/errors.js'
import { closedPort } from '../support/ports.js'
import { logCapture } from '../support/app.js'
import { adminClient, freshSchemaName, freshSchemaOn, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'
import { pgliteCopy } from '../support/pglite-template.js'
import { CAP, NO_LIMIT, recordsAfterRotations, REUSE_WINDOW, sessionRecord as session, simultaneousPresenters, windowedPresenters } from '../support/session-store-races.js'
import { schemaSnapshot, type SchemaReset } from '../support/schema-reset.js'
import { pgBouncerTarget, pooledClientIn } from '../support/pgbouncer.js'
import { clusterClient, clusterKeys, clusterMissing, startRedisCluster } from '../support/redis-cluster.js'
import { userKey } from '../../src/auth/user-key.js'

/**
 * One contract for the denylist and one for the session records, run unchanged
 * against every store: memory, PGlite in process, and the PostgreSQL and Redis
 * servers when TEST_DATABASE_URL / TEST_REDIS_URL are set.
 */

type Open<Store> = (t: Test) => Promise<Store>
const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
const silentLog = Fastify({ logger: false }).log
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
/** Waits until a moment (epoch milliseconds) is 200 ms past, by this process's clock, which the servers share. */
const waitPast = (momentMs: number): Promise<void> => sleep(Math.max(0, momentMs - Date.now()) + 200)

function revocationContract (t: Test, open: Open<Denylist>): void {
  t.test('a revoked jti or sid is denied until its time, others are not', async (t) => {
    const store = await open(t)
    const [jti, sid, other] = [randomUUID(), randomUUID(), randomUUID()]
    t.equal(await store.isRevoked(jti, sid), false)
    await store.revoke(jti, Date.now() + 60_000)
    t.equal(await store.isRevoked(jti, other), true, 'by jti')
    t.equal(await store.isRevoked(other, jti), true, 'by sid')
    t.equal(await store.isRevoked(sid, other), false)
    await store.revoke(sid, Date.now() + 60_000)
    t.equal(await store.isRevoked(other, sid), true)
  })

  t.test('an entry ends when the tokens it denies would have expired; a past time denies nothing', async (t) => {
    const store = await open(t)
    const [soon, past] = [randomUUID(), randomUUID()]
    const soonUntil = Date.now() + 300
    await store.revoke(soon, soonUntil)
    await store.revoke(past, Date.now() - 1000)
    t.equal(await store.isRevoked(soon, soon), true)
    t.equal(await store.isRevoked(past, past), false)
    await waitPast(soonUntil)
    t.equal(await store.isRevoked(soon, soon), false, 'expired')
  })

  t.test('a later revocation of the same id never shortens it', async (t) => {
    const store = await open(t)
    const id = randomUUID()
    await store.revoke(id, Date.now() + 60_000)
    const shorter = Date.now() + 200
    await store.revoke(id, shorter)
    await waitPast(shorter)
    t.equal(await store.isRevoked(id, id), true)
  })
}

/** Opens a store and says how many records (rows, keys, entries) it holds in all. */
type OpenCounted = (t: Test) => Promise<{ store: SessionStore, count: () => Promise<number> }>

function sessionContract (t: Test, open: Open<SessionStore>, openCounted: OpenCounted): void {
  const rotate = (store: SessionStore, id: string, generation: number, now = Date.now()) =>
    store.rotate(id, generation, now, now + 120_000, NO_LIMIT)

  t.test('the current generation rotates once; presenting an older one is a reuse that ends the session', async (t) => {
    const store = await open(t)
    const mine = session({ userId: 'u-7', username: 'ada' })
    t.strictSame(await store.start(mine, CAP), { started: true, ended: [] })
    const now = Date.now()
    const first = await store.rotate(mine.id, 0, now, now + 120_000, NO_LIMIT)
    t.strictSame(first, {
      outcome: 'rotated',
      session: { ...mine, generation: 1, rotatedMs: now, lastUsedMs: now, expiresMs: now + 120_000, windowStartMs: now, windowCount: 1 }
    }, 'the whole record comes back, a string user id kept a string')
    t.match(await rotate(store, mine.id, 1), { outcome: 'rotated', session: { generation: 2 } })
    t.strictSame(await rotate(store, mine.id, 1), { outcome: 'reused' }, 'generation 1 again')
    t.strictSame(await rotate(store, mine.id, 2), { outcome: 'ended' }, 'the session has ended: its current generation no longer works')
    t.strictSame(await rotate(store, mine.id, 1), { outcome: 'ended' }, 'nor does the reused one')
  })

  t.test('unknown sessions, generations never handed out and expired sessions are refused without ending anything', async (t) => {
    const store = await open(t)
    const live = session()
    const soon = session({ expiresMs: Date.now() + 100 })
    await store.start(live, CAP)
    await store.start(soon, CAP)
    t.strictSame(await rotate(store, randomUUID(), 0), { outcome: 'refused' })
    t.strictSame(await rotate(store, live.id, 5), { outcome: 'refused' }, 'a generation from the future')
    t.match(await rotate(store, live.id, 0), { outcome: 'rotated' }, 'the session goes on')
    t.strictSame(await rotate(store, soon.id, 0, Date.now() + 200), { outcome: 'refused' }, 'expired')
  })

  t.test('ending a session refuses every generation of it, and only of it', async (t) => {
    const store = await open(t)
    const [mine, other] = [session(), session()]
    await store.start(mine, CAP)
    await store.start(other, CAP)
    await rotate(store, mine.id, 0)
    await store.endSession(mine.id)
    await store.endSession(mine.id)
    t.strictSame(await rotate(store, mine.id, 1), { outcome: 'ended' })
    t.strictSame(await rotate(store, mine.id, 0), { outcome: 'ended' })
    t.match(await rotate(store, other.id, 0), { outcome: 'rotated' })
  })

  t.test('a user over the cap loses the oldest sessions; other users, and the id 1 as a string, are apart', async (t) => {
    const store = await open(t)
    const base = Date.now()
    const sessions = [0, 1, 2, 3].map((i) => session({ createdMs: base + i, lastUsedMs: base + i }))
    const started = { started: true, ended: [] }
    t.strictSame(await store.start(sessions[0], 2), started)
    t.strictSame(await store.start(session({ userId: '1', createdMs: base - 10 }), 2), started)
    t.strictSame(await store.start(sessions[1], 2), started)
    t.strictSame(await store.start(sessions[2], 2), { started: false, undenied: [sessions[0].id] }, 'the oldest must be denied first')
    t.match(await rotate(store, sessions[0].id, 0), { outcome: 'rotated' }, 'nothing has ended')
    t.strictSame((await store.list(1, base)).map((record) => record.id), [sessions[0].id, sessions[1].id], 'nor started')
    t.strictSame(await store.start(sessions[2], 2, [sessions[0].id]), { started: true, ended: [sessions[0].id] })
    t.strictSame(await store.start(sessions[3], 2, [sessions[0].id]), { started: false, undenied: [sessions[1].id] }, 'denied earlier is not enough')
    t.strictSame(await store.start(sessions[3], 2, [sessions[1].id, randomUUID()]), { started: true, ended: [sessions[1].id] })
    t.strictSame(await rotate(store, sessions[0].id, 1), { outcome: 'ended' })
    t.strictSame(await rotate(store, sessions[1].id, 0), { outcome: 'ended' })
    t.match(await rotate(store, sessions[2].id, 0), { outcome: 'rotated' })
    t.match(await rotate(store, sessions[3].id, 0), { outcome: 'rotated' })
  })

  t.test('a new session never ends itself, whatever its start time; an ended one goes once its access tokens have expired', async (t) => {
    const store = await open(t)
    const now = Date.now()
    const newer = session({ createdMs: now })
    const late = session({ createdMs: now - 5000 })
    await store.start(newer, 1)
    t.strictSame(await store.start(late, 1, [newer.id]), { started: true, ended: [newer.id] }, 'the other session ends, not the one that started')
    t.match(await rotate(store, late.id, 0), { outcome: 'rotated' })
    await store.endSession(late.id)
    t.strictSame(await rotate(store, late.id, 1), { outcome: 'ended' })
    const afterAccessTokens = Date.now() + DEFAULT_ENDED_KEEP_MS + 1000
    t.strictSame(await rotate(store, late.id, 1, afterAccessTokens), { outcome: 'refused' }, 'no longer kept')
  })

  t.test('refreshes are limited per session and window', async (t) => {
    const store = await open(t)
    const mine = session()
    await store.start(mine, CAP)
    const limit = { max: 2, windowMs: 10_000, reuseWindowMs: 0 }
    const now = Date.now()
    t.match(await store.rotate(mine.id, 0, now, now + 60_000, limit), { outcome: 'rotated' })
    t.match(await store.rotate(mine.id, 1, now + 10, now + 60_000, limit), { outcome: 'rotated' })
    t.strictSame(await store.rotate(mine.id, 2, now + 1000, now + 60_000, limit), { outcome: 'limited', retryAfterMs: 9000 })
    t.strictSame(await store.rotate(mine.id, 1, now + 1000, now + 60_000, limit), { outcome: 'reused' }, 'a reuse is detected even at the limit')
    const other = session()
    await store.start(other, CAP)
    t.match(await store.rotate(other.id, 0, now, now + 60_000, limit), { outcome: 'rotated' }, 'other sessions have their own count')
    t.match(await store.rotate(other.id, 1, now, now + 60_000, limit), { outcome: 'rotated' })
    t.match(await store.rotate(other.id, 2, now + 10_000, now + 60_000, limit), { outcome: 'rotated', session: { windowCount: 1 } }, 'a new window')
  })

  // The repetitions of this and of the races below run by the hundred in test/stress/session-stores.stress.ts.
  t.test('a session takes the same space after 20 refreshes as after none', async (t) => {
    const { store, count } = await openCounted(t)
    const { before, after } = await recordsAfterRotations(store, count, 20)
    t.equal(after, before, `${before} records before and after`)
  })

  t.test('within the reuse window the replaced generation gets the current one again; older ones, or later, are reuse', async (t) => {
    const store = await open(t)
    const mine = session()
    await store.start(mine, CAP)
    const now = Date.now()
    const rotated = await store.rotate(mine.id, 0, now, now + 120_000, REUSE_WINDOW)
    t.match(rotated, { outcome: 'rotated', session: { generation: 1, rotatedMs: now } })
    const again = await store.rotate(mine.id, 0, now + 9_999, now + 130_000, REUSE_WINDOW)
    t.strictSame(again, {
      outcome: 'repeated',
      session: { ...mine, generation: 1, rotatedMs: now, lastUsedMs: now + 9_999, expiresMs: now + 120_000, windowStartMs: now, windowCount: 2 }
    }, 'the same generation and expiry, so the same refresh token; the refresh counts against the limit')
    t.match(await store.rotate(mine.id, 1, now + 10_000, now + 140_000, REUSE_WINDOW), { outcome: 'rotated', session: { generation: 2 } },
      'the current generation still rotates')
    t.strictSame(await store.rotate(mine.id, 0, now + 10_001, now + 150_000, REUSE_WINDOW), { outcome: 'reused' }, 'two generations back is reuse')
    t.strictSame(await store.rotate(mine.id, 1, now + 10_002, now + 150_000, REUSE_WINDOW), { outcome: 'ended' }, 'an ended session is never revived')

    const late = session()
    await store.start(late, CAP)
    await store.rotate(late.id, 0, now, now + 120_000, REUSE_WINDOW)
    t.strictSame(await store.rotate(late.id, 0, now + 10_000, now + 130_000, REUSE_WINDOW), { outcome: 'reused' }, 'at the end of the window')

    const limited = session()
    await store.start(limited, CAP)
    await store.rotate(limited.id, 0, now, now + 120_000, { ...REUSE_WINDOW, max: 1 })
    t.match(await store.rotate(limited.id, 0, now + 1, now + 120_000, { ...REUSE_WINDOW, max: 1 }), { outcome: 'limited' }, 'repeats are rate-limited')
  })

  t.test('of many presenters of one generation at once within the reuse window, one rotates and the rest repeat it', async (t) => {
    t.strictSame(await windowedPresenters(await open(t), 5), [], 'in each of 5 trials, and the session went on')
  })

  t.test('a user\'s live sessions are listed oldest first; those named end, and only the user\'s own', async (t) => {
    const store = await open(t)
    const userId = `u-${randomUUID()}`
    const now = Date.now()
    const [first, second, third] = [0, 1, 2].map((index) => session({ userId, createdMs: now + index, lastUsedMs: now + index }))
    const short = session({ userId, createdMs: now + 3, lastUsedMs: now + 3, expiresMs: now + 1000 })
    const stranger = session({ userId: `u-${randomUUID()}` })
    for (const record of [first, second, third, short, stranger]) await store.start(record, CAP)
    t.strictSame(await store.list(userId, now), [first, second, third, short], 'the whole records, oldest first')
    t.strictSame((await store.list(userId, now + 1000)).map((record) => record.id), [first.id, second.id, third.id], 'an expired one is not live')
    t.strictSame(await store.endSessions(userId, [stranger.id, randomUUID()], now), [], 'another user\'s session, an unknown id')
    t.strictSame(await store.endSessions(userId, [], now), [], 'none')
    t.strictSame(await store.endSessions(`u-${randomUUID()}`, [first.id], now), [], 'a user without sessions')
    t.strictSame(await store.endSessions(userId, [second.id], now), [second.id])
    t.strictSame(await store.endSessions(userId, [second.id], now), [], 'ended already')
    t.strictSame(await rotate(store, second.id, 0), { outcome: 'ended' })
    t.strictSame((await store.endSessions(userId, [third.id, short.id, second.id], now)).sort(), [third.id, short.id].sort(), 'the live ones named')
    t.strictSame((await store.list(userId, now)).map((record) => record.id), [first.id])
    t.strictSame(await rotate(store, third.id, 0), { outcome: 'ended' })
    t.match(await rotate(store, first.id, 0), { outcome: 'rotated' }, 'the one not named goes on')
    t.match(await rotate(store, stranger.id, 0), { outcome: 'rotated' }, 'another user\'s session goes on')
  })

  t.test('of many presenters of one generation at once, exactly one rotates and the rest are reuses', async (t) => {
    t.strictSame(await simultaneousPresenters(await open(t), 5), [], 'in each of 5 trials, and the session ended')
  })
}

t.test('memory', async (t) => {
  revocationContract(t, async (t) => {
    const store = new MemoryDenylist()
    t.teardown(() => store.close())
    return store
  })
  const memory = (t: Test): MemorySessionStore => {
    const store = new MemorySessionStore()
    t.teardown(() => store.close())
    return store
  }
  sessionContract(t, async (t) => memory(t), async (t) => {
    const store = memory(t)
    return { store, count: async () => store.size }
  })

  t.test('the denylist answers synchronously and sweeps expired entries on its timer', async (t) => {
    const store = new MemoryDenylist(50)
    t.teardown(() => store.close())
    t.equal(store.isRevoked('a', 'b'), false, 'a boolean, not a promise')
    await store.revoke('a', Date.now() + 100)
    await store.revoke('b', Date.now() + 60_000)
    t.equal(store.size, 2)
    await sleep(400)
    t.equal(store.size, 1, 'the expired entry was swept')
    t.equal(store.isRevoked('a', 'x'), false)
    t.equal(store.isRevoked('x', 'b'), true)
  })

  t.test('sessions are swept on a timer a margin after their last token expires', async (t) => {
    const store = new MemorySessionStore(50)
    t.teardown(() => store.close())
    await store.start(session({ expiresMs: Date.now() - 60_000 }), CAP)
    await store.start(session({ expiresMs: Date.now() - 59_000 }), CAP)
    await store.start(session(), CAP)
    t.equal(store.size, 3)
    await sleep(300)
    t.equal(store.size, 2, 'only the one past the margin went')
    store.sweep(Date.now() + 120_000)
    t.equal(store.size, 0)
  })
})

/**
 * SQL stores on a migrated schema; `count` reads a table's rows, to see the sweeping. The suite migrates one schema
 * (migrating takes longer than most tests) and each test gets it with the stores' tables emptied.
 */
function sqlSuites (t: Test, openSchema: Open<SqlClient>, openSuiteSchema: () => Promise<SqlClient> = () => openSchema(t)): void {
  const status = new DependencyStatus('database', silentLog, async () => {})
  let schema: Promise<{ client: SqlClient, reset: SchemaReset }> | undefined
  const migrated = async (): Promise<SqlClient> => {
    // Migrated once per suite; each test starts from what the migrations left.
    schema ??= openSuiteSchema().then(async (client) => {
      await migrate(client)
      return { client, reset: await schemaSnapshot(client) }
    })
    const { client, reset } = await schema
    await reset(client)
    return client
  }
  revocationContract(t, async () => new SqlDenylist(await migrated(), status))
  sessionContract(t, async () => new SqlSessionStore(await migrated(), status), async () => {
    const client = await migrated()
    return { store: new SqlSessionStore(client, status), count: async () => Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM sessions'))[0].n) }
  })

  t.test('expired rows are deleted as new ones arrive', async (t) => {
    const client = await migrated()
    const count = async (table: string): Promise<number> => Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`))[0].n)
    const denylist = new SqlDenylist(client, status)
    const oldUntil = Date.now() + 100
    await denylist.revoke('old', oldUntil)
    await waitPast(oldUntil)
    await denylist.revoke('new', Date.now() + 60_000)
    t.equal(await count('revoked_tokens'), 1)
    const sessions = new SqlSessionStore(client, status)
    await sessions.start(session({ expiresMs: Date.now() - 61_000 }), CAP)
    await sessions.start(session({ expiresMs: Date.now() - 30_000 }), CAP)
    await sessions.start(session(), CAP)
    t.equal(await count('sessions'), 2, 'the one past the margin went')
    await denylist.close()
    await sessions.close()
  })

  // Last of the suite: on the shared PGlite session, its own schema takes the search path, and its teardown sets
  // that back to public.
  t.test('a session with a refresh token from before session records keeps it, as its generation 0', async (t) => {
    const client = await openSchema(t)
    await migrate(client, '006')
    const token = (): string => randomBytes(32).toString('base64url')
    const hashOf = (value: string): Buffer => createHash('sha256').update(value).digest()
    const [rotatedToken, current, expired] = [token(), token(), token()]
    const insert = 'INSERT INTO refresh_tokens (token_hash, session_id, user_id, username, expires_at, rotated) VALUES ($1, $2, $3, $4, $5, $6)'
    const live = new Date(Date.now() + 86_400_000)
    await client.query(insert, [hashOf(rotatedToken), 'old-session', '"u-1"', 'ada', live, true])
    await client.query(insert, [hashOf(current), 'old-session', '"u-1"', 'ada', live, false])
    await client.query(insert, [hashOf(expired), 'gone-session', '2', 'chris', new Date(Date.now() - 1000), false])
    await migrate(client)
    const store = new SqlSessionStore(client, status)
    t.equal(await store.legacySession(hashOf(current)), 'old-session')
    t.equal(await store.legacySession(hashOf(rotatedToken)), undefined, 'only the current token of a session is kept')
    t.equal(await store.legacySession(hashOf(expired)), undefined, 'an expired one is not')
    const now = Date.now()
    t.match(await store.rotate('old-session', 0, now, now + 60_000, NO_LIMIT), {
      outcome: 'rotated', session: { userId: 'u-1', username: 'ada', generation: 1, expiresMs: now + 60_000 }
    })
    t.strictSame(await store.rotate('old-session', 0, Date.now(), Date.now() + 60_000, NO_LIMIT), { outcome: 'reused' })
  })
}

t.test('PGlite in process', async (t) => {
  // Started here, not alongside the memory tests: opening a PGlite holds the event loop for a second or more,
  // which would stretch the sweeping intervals those tests time. A copy of an initialised empty database:
  // creating one from nothing takes seconds more.
  const shared = await pgliteClient(await pgliteCopy(t))
  let closed = false
  t.teardown(async () => {
    if (!closed) await shared.close()
  })
  sqlSuites(t, async (t) => await freshSchemaOn(t, shared, 'sessions_test'), async () => {
    // The suite's schema is not dropped: the database is a private copy, removed when the suite ends, and its last
    // test closes the shared session before that.
    const schema = freshSchemaName('sessions_test')
    await shared.query(`CREATE SCHEMA ${schema}`)
    await shared.query(`SET search_path TO ${schema}`)
    return shared
  })

  t.test('a database that fails gives SessionStoreUnavailable, and its status hears of it', async (t) => {
    // The shared PGlite, closed: the tests before this one are done with it (another one would take a second to open).
    const client = shared
    closed = true
    await client.close()
    const { stream, text } = logCapture()
    const status = new DependencyStatus('database', Fastify({ logger: { stream } }).log, async () => {})
    const operations: Array<() => Promise<unknown>> = [
      () => new SqlDenylist(client, status).isRevoked('a', 'b'),
      () => new SqlDenylist(client, status).revoke('a', Date.now() + 1000),
      () => new SqlSessionStore(client, status).start(session(), CAP),
      () => new SqlSessionStore(client, status).rotate('s', 0, Date.now(), Date.now(), NO_LIMIT),
      () => new SqlSessionStore(client, status).endSession('s'),
      () => new SqlSessionStore(client, status).legacySession(Buffer.alloc(32))
    ]
    for (const operation of operations) await t.rejects(operation(), SessionStoreUnavailable)
    t.match(text(), /"msg":"database unavailable"/, 'the outage is logged, once')
    t.equal(text().split('database unavailable').length, 2)
  })
})

if (TEST_DATABASE_URL === undefined || TEST_DATABASE_URL === '') {
  t.comment('TEST_DATABASE_URL is not set: the PostgreSQL server run of the session store tests was skipped')
} else {
  const serverUrl = TEST_DATABASE_URL
  t.test('PostgreSQL server at TEST_DATABASE_URL', async (t) => {
    const admin = await adminClient(t, serverUrl)
    sqlSuites(t, async (t) => {
      const schema = await freshServerSchema(t, admin, 'sessions_test')
      const client = await postgresClient(urlWithSchema(serverUrl, schema))
      t.teardown(() => client.close())
      return client
    })
  })
}

// Through Debian's PgBouncer in transaction mode, prepared statements off (its server connections use the schema).
const bouncerServer = pgBouncerTarget(t, 'the session store tests')
if (bouncerServer !== undefined) {
  t.test('PostgreSQL server through PgBouncer in transaction mode', async (t) => {
    const admin = await adminClient(t, bouncerServer)
    sqlSuites(t, async (t) => await pooledClientIn(t, bouncerServer, await freshServerSchema(t, admin, 'sessions_test')))
  })
}

if (TEST_REDIS_URL === undefined || TEST_REDIS_URL === '') {
  t.comment('TEST_REDIS_URL is not set: the Redis run of the denylist tests was skipped')
} else {
  const redisUrl = TEST_REDIS_URL
  t.test('Redis at TEST_REDIS_URL', async (t) => {
    const status = new DependencyStatus('redis', silentLog, async () => {})
    revocationContract(t, async (t) => {
      const { redis, prefix } = testRedis(t, redisUrl)
      return new RedisDenylist(redis, prefix, status)
    })
    sessionContract(t, async (t) => {
      const { redis, prefix } = testRedis(t, redisUrl)
      return new RedisSessionStore(redis, prefix, status)
    }, async (t) => {
      const { redis, prefix } = testRedis(t, redisUrl)
      return { store: new RedisSessionStore(redis, prefix, status), count: async () => (await redis.keys(`${prefix}*`)).length }
    })

    t.test('Redis deletes a session a margin after its last token expires', async (t) => {
      const { redis, prefix } = testRedis(t, redisUrl)
      const store = new RedisSessionStore(redis, prefix, status)
      const mine = session({ expiresMs: Date.now() + 10_000 })
      await store.start(mine, CAP)
      const ttl = await redis.pttl(`${prefix}session:${mine.id}`)
      t.ok(ttl > 69_000 && ttl <= 70_000, `TTL ${ttl} ms`)
      const now = Date.now()
      await store.rotate(mine.id, 0, now, now + 20_000, NO_LIMIT)
      const later = await redis.pttl(`${prefix}session:${mine.id}`)
      t.ok(later > 79_000 && later <= 80_000, `after a rotation, TTL ${later} ms`)
      const userSet = await redis.pttl(`${prefix}user-sessions:1`)
      t.ok(userSet > 79_000 && userSet <= 80_000, `the user's set lives as long as their latest session: ${userSet} ms`)
      await store.endSession(mine.id)
      t.ok(await redis.pttl(`${prefix}session:${mine.id}`) <= 80_000, 'an ended session is not kept longer')
    })
  })
}

/**
 * A Redis Cluster's store as Sessions uses it: told each session's user (the refresh token's, the access token's
 * `sub`) on every rotation and end, as a cluster needs; a session it never started is of no user it knows.
 */
function toldUsers (store: SessionStore): SessionStore {
  const users = new Map<string, string>()
  return {
    start: async (record, maxPerUser, denied) => {
      users.set(record.id, userKey(record.userId))
      return await store.start(record, maxPerUser, denied)
    },
    rotate: async (id, presented, nowMs, nextExpiresMs, limit) => await store.rotate(id, presented, nowMs, nextExpiresMs, limit, users.get(id) ?? '"nobody"'),
    endSession: async (id) => { await store.endSession(id, users.get(id) ?? '"nobody"') },
    list: async (userId, nowMs) => await store.list(userId, nowMs),
    endSessions: async (userId, ids, nowMs) => await store.endSessions(userId, ids, nowMs),
    close: async () => { await store.close() }
  }
}

const noCluster = clusterMissing()
if (noCluster !== undefined) {
  t.comment(`${noCluster}: the Redis Cluster run of the session store tests was skipped`)
} else {
  t.test('a Redis Cluster (3 masters, 3 replicas)', async (t) => {
    const cluster = await startRedisCluster(t)
    const status = new DependencyStatus('redis', silentLog, async () => {})
    const prefix = (): string => `cats-test-${randomBytes(6).toString('hex')}:`
    revocationContract(t, async (t) => new RedisDenylist(clusterClient(t, cluster), prefix(), status, true))
    const open = (t: Test): { store: SessionStore, count: () => Promise<number> } => {
      const client = clusterClient(t, cluster)
      const keys = prefix()
      return {
        store: toldUsers(new RedisSessionStore(client, keys, status, DEFAULT_ENDED_KEEP_MS, true)),
        count: async () => (await clusterKeys(client, `${keys}*`)).length
      }
    }
    sessionContract(t, async (t) => open(t).store, async (t) => open(t))

    t.test('a user\'s keys are under the user\'s hash tag, on one node; a token without the user refreshes nothing', async (t) => {
      const client = clusterClient(t, cluster)
      const keys = prefix()
      const store = new RedisSessionStore(client, keys, status, DEFAULT_ENDED_KEEP_MS, true)
      const [one, two] = [session({ userId: 'ann' }), session({ userId: 'ann' })]
      await store.start(one, CAP)
      await store.start(two, CAP)
      const written = [`${keys}{u:"ann"}session:${one.id}`, `${keys}{u:"ann"}session:${two.id}`, `${keys}{u:"ann"}user-sessions`]
      t.strictSame((await clusterKeys(client, `${keys}*`)).sort(), [...written].sort())
      const slot = await client.cluster('KEYSLOT', 'u:"ann"')
      t.strictSame(await Promise.all(written.map((key) => client.cluster('KEYSLOT', key))), [slot, slot, slot], 'one slot')
      const now = Date.now()
      t.strictSame(await store.rotate(one.id, 0, now, now + 60_000, NO_LIMIT), { outcome: 'refused' }, 'no user: refused, nothing asked')
      t.match(await store.rotate(one.id, 0, now, now + 60_000, NO_LIMIT, '"ann"'), { outcome: 'rotated' })
      await t.rejects(store.endSession(one.id), /ended with its user's key/)
      await store.endSession(one.id, '"ann"')
      t.strictSame((await store.list('ann', Date.now())).map((record) => record.id), [two.id])
    })

    t.test('the denylist\'s lookup finds a denial by either id, each in its own slot', async (t) => {
      const client = clusterClient(t, cluster)
      const keys = prefix()
      const denylist = new RedisDenylist(client, keys, status, true)
      // Ids whose entries hash to different slots (and so, among three masters, most often to different nodes).
      const [jti, sid] = ['a', 'b']
      t.not(await client.cluster('KEYSLOT', `${keys}revoked:${jti}`), await client.cluster('KEYSLOT', `${keys}revoked:${sid}`))
      await denylist.revoke(sid, Date.now() + 60_000)
      t.equal(await denylist.isRevoked(jti, sid), true)
      t.equal(await denylist.isRevoked(jti, 'c'), false)
    })
  })
}

t.test('a Redis that cannot be reached gives SessionStoreUnavailable', async (t) => {
  const redis = new Redis(`redis://127.0.0.1:${await closedPort()}`, { maxRetriesPerRequest: 0, enableOfflineQueue: false, lazyConnect: true })
  redis.on('error', () => {})
  const store = new RedisDenylist(redis, 'cats-test:', new DependencyStatus('redis', silentLog, async () => {}))
  t.teardown(async () => {
    await store.close()
    redis.disconnect()
  })
  await t.rejects(store.isRevoked('a', 'b'), SessionStoreUnavailable)
  await t.rejects(store.revoke('a', Date.now() + 60_000), SessionStoreUnavailable)
  const sessions = new RedisSessionStore(redis, 'cats-test:', new DependencyStatus('redis', silentLog, async () => {}))
  await t.rejects(sessions.start(session(), CAP), SessionStoreUnavailable)
  await t.rejects(sessions.rotate('s', 0, Date.now(), Date.now(), NO_LIMIT), SessionStoreUnavailable)
  await t.rejects(sessions.endSession('s'), SessionStoreUnavailable)
  await sessions.close()
})
