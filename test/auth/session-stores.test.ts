import { createHash, randomBytes, randomUUID } from 'node:crypto'
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import { pgliteClient, postgresClient, type SqlClient } from '../../src/cats/sql-client.js'
import { migrate } from '../../src/cats/sql-migrations.js'
import { DependencyStatus } from '../../src/dependency-status.js'
import { MemoryRevocationStore, type RevocationStore } from '../../src/auth/revocation-store.js'
import { MemoryRefreshTokenStore, type RefreshRecord, type RefreshTokenStore } from '../../src/auth/refresh-token-store.js'
import { RedisRevocationStore } from '../../src/auth/redis-revocation-store.js'
import { SqlRefreshTokenStore, SqlRevocationStore } from '../../src/auth/sql-session-stores.js'
import { testRedis } from '../support/redis.js'
import { SessionStoreUnavailableError } from '../../src/auth/session-errors.js'
import { closedPort } from '../support/ports.js'
import { logCapture } from '../support/app.js'
import { adminClient, freshSchemaOn, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'

/**
 * One contract for the denylist and one for the refresh tokens, run unchanged
 * against every store: memory, PGlite in process, and the PostgreSQL and Redis
 * servers when TEST_DATABASE_URL / TEST_REDIS_URL are set.
 */

type Open<Store> = (t: Test) => Promise<Store>
const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
const silentLog = Fastify({ logger: false }).log
const hash = (): Buffer => createHash('sha256').update(randomBytes(32)).digest()
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
const record = (overrides: Partial<RefreshRecord> = {}): RefreshRecord =>
  ({ sessionId: randomUUID(), userId: 1, username: 'john', expiresAtMs: Date.now() + 60_000, ...overrides })

function revocationContract (t: Test, open: Open<RevocationStore>): void {
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
    await store.revoke(soon, Date.now() + 300)
    await store.revoke(past, Date.now() - 1000)
    t.equal(await store.isRevoked(soon, soon), true)
    t.equal(await store.isRevoked(past, past), false)
    await sleep(1200)
    t.equal(await store.isRevoked(soon, soon), false, 'expired')
  })

  t.test('a later revocation of the same id never shortens it', async (t) => {
    const store = await open(t)
    const id = randomUUID()
    await store.revoke(id, Date.now() + 60_000)
    await store.revoke(id, Date.now() + 200)
    await sleep(1200)
    t.equal(await store.isRevoked(id, id), true)
  })
}

function refreshContract (t: Test, open: Open<RefreshTokenStore>): void {
  t.test('a token rotates once; presenting it again is a reuse naming its session', async (t) => {
    const store = await open(t)
    const [first, second, third] = [hash(), hash(), hash()]
    const issued = record({ userId: 'u-7', username: 'ada' })
    await store.add(first, issued)
    const next = Date.now() + 120_000
    const rotated = await store.rotate(first, second, next)
    t.strictSame(rotated, { outcome: 'rotated', record: { ...issued, expiresAtMs: next } }, 'same session and user, a string id kept a string')
    t.strictSame(await store.rotate(first, hash(), next), { outcome: 'reused', sessionId: issued.sessionId })
    t.match(await store.rotate(second, third, next), { outcome: 'rotated' }, 'the new token works')
  })

  t.test('unknown and expired tokens are invalid, without ending anything', async (t) => {
    const store = await open(t)
    t.strictSame(await store.rotate(hash(), hash(), Date.now() + 1000), { outcome: 'invalid' })
    const expired = hash()
    await store.add(expired, record({ expiresAtMs: Date.now() + 200 }))
    await sleep(1200)
    t.strictSame(await store.rotate(expired, hash(), Date.now() + 1000), { outcome: 'invalid' })
  })

  t.test('revoking a session removes all its tokens, rotated or not, and only them', async (t) => {
    const store = await open(t)
    const mine = record({ userId: 3 })
    const [a, b, other] = [hash(), hash(), hash()]
    await store.add(a, mine)
    await store.rotate(a, b, Date.now() + 60_000)
    await store.add(other, record())
    await store.revokeSession(mine.sessionId)
    t.strictSame(await store.rotate(a, hash(), Date.now() + 1000), { outcome: 'invalid' }, 'the rotated token is gone')
    t.strictSame(await store.rotate(b, hash(), Date.now() + 1000), { outcome: 'invalid' }, 'the current token is gone')
    t.match(await store.rotate(other, hash(), Date.now() + 1000), { outcome: 'rotated' }, 'another session is untouched')
  })
}

t.test('memory', async (t) => {
  revocationContract(t, async (t) => {
    const store = new MemoryRevocationStore()
    t.teardown(() => store.close())
    return store
  })
  refreshContract(t, async (t) => {
    const store = new MemoryRefreshTokenStore()
    t.teardown(() => store.close())
    return store
  })

  t.test('the denylist answers synchronously and sweeps expired entries on its timer', async (t) => {
    const store = new MemoryRevocationStore(50)
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

  t.test('the refresh tokens are swept on a timer, and a session whose tokens all expired is forgotten', async (t) => {
    const store = new MemoryRefreshTokenStore(50)
    t.teardown(() => store.close())
    const session = record({ expiresAtMs: Date.now() + 100 })
    const [a, b, live] = [hash(), hash(), hash()]
    await store.add(a, session)
    await store.rotate(a, b, Date.now() + 100)
    await store.add(live, record())
    t.equal(store.size, 3)
    await sleep(400)
    t.equal(store.size, 1)
    await store.revokeSession(session.sessionId)
    t.match(await store.rotate(live, hash(), Date.now() + 1000), { outcome: 'rotated' })
  })
})

/** SQL stores on a migrated schema; `count` reads a table's rows, to see the sweeping. */
function sqlSuites (t: Test, openSchema: Open<SqlClient>): void {
  const status = new DependencyStatus('database', silentLog, async () => {})
  const migrated = async (t: Test): Promise<SqlClient> => {
    const client = await openSchema(t)
    await migrate(client)
    return client
  }
  revocationContract(t, async (t) => new SqlRevocationStore(await migrated(t), status))
  refreshContract(t, async (t) => new SqlRefreshTokenStore(await migrated(t), status))

  t.test('expired rows are deleted as new ones arrive', async (t) => {
    const client = await migrated(t)
    const count = async (table: string): Promise<number> => Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`))[0].n)
    const revocations = new SqlRevocationStore(client, status)
    await revocations.revoke('old', Date.now() + 100)
    await sleep(1200)
    await revocations.revoke('new', Date.now() + 60_000)
    t.equal(await count('revoked_tokens'), 1)
    const refresh = new SqlRefreshTokenStore(client, status)
    await refresh.add(hash(), record({ expiresAtMs: Date.now() + 100 }))
    await sleep(1200)
    await refresh.add(hash(), record())
    t.equal(await count('refresh_tokens'), 1)
    await revocations.close()
    await refresh.close()
  })

  t.test('only hashes are stored', async (t) => {
    const client = await migrated(t)
    const refresh = new SqlRefreshTokenStore(client, status)
    const token = randomBytes(32).toString('base64url')
    await refresh.add(createHash('sha256').update(token).digest(), record())
    const rows = await client.query<{ token_hash: Uint8Array }>('SELECT token_hash FROM refresh_tokens')
    t.equal(Buffer.from(rows[0].token_hash).toString('hex'), createHash('sha256').update(token).digest('hex'))
  })
}

// Starting a PGlite takes seconds: it starts now.
const inProcess = pgliteClient('memory')
t.teardown(async () => (await inProcess).close())

t.test('PGlite in process', async (t) => {
  const shared = await inProcess
  sqlSuites(t, async (t) => await freshSchemaOn(t, shared, 'sessions_test'))

  t.test('a database that fails gives SessionStoreUnavailableError, and its status hears of it', async (t) => {
    const client = await pgliteClient('memory')
    await client.close()
    const { stream, text } = logCapture()
    const status = new DependencyStatus('database', Fastify({ logger: { stream } }).log, async () => {})
    const operations: Array<() => Promise<unknown>> = [
      () => new SqlRevocationStore(client, status).isRevoked('a', 'b'),
      () => new SqlRevocationStore(client, status).revoke('a', Date.now() + 1000),
      () => new SqlRefreshTokenStore(client, status).add(hash(), record()),
      () => new SqlRefreshTokenStore(client, status).rotate(hash(), hash(), Date.now()),
      () => new SqlRefreshTokenStore(client, status).revokeSession('s')
    ]
    for (const operation of operations) await t.rejects(operation(), SessionStoreUnavailableError)
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

if (TEST_REDIS_URL === undefined || TEST_REDIS_URL === '') {
  t.comment('TEST_REDIS_URL is not set: the Redis run of the denylist tests was skipped')
} else {
  const redisUrl = TEST_REDIS_URL
  t.test('Redis at TEST_REDIS_URL', async (t) => {
    revocationContract(t, async (t) => {
      const { redis, prefix } = testRedis(t, redisUrl)
      return new RedisRevocationStore(redis, prefix, new DependencyStatus('redis', silentLog, async () => {}))
    })
  })
}

t.test('a Redis that cannot be reached gives SessionStoreUnavailableError', async (t) => {
  const redis = new Redis(`redis://127.0.0.1:${await closedPort()}`, { maxRetriesPerRequest: 0, enableOfflineQueue: false, lazyConnect: true })
  redis.on('error', () => {})
  const store = new RedisRevocationStore(redis, 'cats-test:', new DependencyStatus('redis', silentLog, async () => {}))
  t.teardown(async () => {
    await store.close()
    redis.disconnect()
  })
  await t.rejects(store.isRevoked('a', 'b'), SessionStoreUnavailableError)
  await t.rejects(store.revoke('a', Date.now() + 60_000), SessionStoreUnavailableError)
})
