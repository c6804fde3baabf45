import t from 'tap'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { urlWithSchema } from '../support/sql-schemas.js'
import { fetchKeepAlive } from '../support/server.js'
import { pgBouncerTarget, startPgBouncer } from '../support/pgbouncer.js'
import { call, checkDurability, checkTwoServersAsOne, freshSchema, mapLimit, range, startServer, stopServer } from '../support/instances.js'

// Compiled servers stopped or killed in the middle of traffic, from test/multi-instance.test.ts: every create
// acknowledged before and during a SIGTERM shutdown survives a restart (PGlite always, PostgreSQL when
// TEST_DATABASE_URL is set), and creates retried with their Idempotency-Key on another instance after a SIGKILL
// store every intended cat exactly once. And the one-service check of test/multi-instance.test.ts at full size:
// 200 creates at once through two servers on PostgreSQL, then 100 races of two conditional writes.

const { TEST_DATABASE_URL } = process.env

t.test('durability with PGlite: acknowledged creates survive SIGTERM mid-traffic and a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cats-pglite-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  await checkDurability(t, `pglite://${dir}`)
})

if (TEST_DATABASE_URL === undefined) {
  t.comment('TEST_DATABASE_URL is not set: the PostgreSQL durability test was skipped')
} else {
  const databaseUrl = TEST_DATABASE_URL
  t.test('durability with PostgreSQL: acknowledged creates survive SIGTERM mid-traffic and a restart', async (t) => {
    const { schema } = await freshSchema(t, databaseUrl)
    await checkDurability(t, urlWithSchema(databaseUrl, schema))
  })
}

if (TEST_DATABASE_URL === undefined) {
  t.comment('TEST_DATABASE_URL is not set: the full-size one-service test was skipped')
} else {
  const databaseUrl = TEST_DATABASE_URL
  t.test('two servers on one PostgreSQL database act as one service: 200 creates at once, 100 conditional-write races', async (t) => {
    await checkTwoServersAsOne(t, databaseUrl, { creates: 200, races: 100 }, fetchKeepAlive.none)
  })
}

const bouncerServer = pgBouncerTarget(t, 'the full-size one-service test')
if (bouncerServer !== undefined) {
  t.test('two servers through PgBouncer in transaction mode act as one service: 200 creates at once, 100 conditional-write races', async (t) => {
    const bouncer = await startPgBouncer(t, bouncerServer, 'transaction')
    await checkTwoServersAsOne(t, bouncerServer, { creates: 200, races: 100, pooledUrl: bouncer.url }, fetchKeepAlive.none)
  })
}

if (TEST_DATABASE_URL === undefined) {
  t.comment('TEST_DATABASE_URL is not set: the kill-and-retry test of idempotent creates was skipped')
} else {
  const databaseUrl = TEST_DATABASE_URL
  t.test('creates retried with their Idempotency-Key on another instance after a SIGKILL: every intended cat exactly once', async (t) => {
    const { schema, db } = await freshSchema(t, databaseUrl)
    const env = { DATABASE_URL: urlWithSchema(databaseUrl, schema) }
    const [a, b] = await Promise.all([startServer(t, env), startServer(t, env)])
    const intended = range(1, 400).map((n) => ({ key: `create-${n}-${randomBytes(4).toString('hex')}`, cat: { name: `kill-${n}`, age: n, breed: 'x' } }))
    const killAfter = 100
    let acknowledged = 0
    let killed = false
    // 40 clients create on A; A is killed (SIGKILL) once 100 creates are acknowledged, with others in flight.
    const onA = await mapLimit(intended, 40, async ({ key, cat }): Promise<boolean> => {
      if (killed) return false
      try {
        const answer = await call(a.base, 'POST', '/cats', cat, { 'idempotency-key': key })
        if (answer.status !== 201) return false
        if (++acknowledged === killAfter) {
          killed = true
          a.child.kill('SIGKILL')
        }
        return true
      } catch {
        return false
      }
    })
    t.equal((await a.exited)[1], 'SIGKILL')
    const unanswered = intended.filter((_, index) => !onA[index])
    // Every create A did not answer is retried on B with the same key.
    const retried = await mapLimit(unanswered, 20, async ({ key, cat }) => call(b.base, 'POST', '/cats', cat, { 'idempotency-key': key }))
    t.ok(retried.every((answer) => answer.status === 201), 'every retry is answered with 201')
    const replayed = retried.filter((answer) => answer.headers.get('idempotent-replayed') === 'true').length
    const { rows } = await db.query<{ name: string, n: string }>(`SELECT data->>'name' AS name, count(*) AS n FROM ${schema}.cats GROUP BY 1`)
    const byName = new Map(rows.map((row) => [row.name, Number(row.n)]))
    t.comment(`${intended.length - unanswered.length} creates acknowledged by A before its SIGKILL; ${unanswered.length} unanswered (in flight or not yet sent) retried on B with their keys: ${replayed} replayed (A had committed them), ${unanswered.length - replayed} created; ${rows.length} distinct cats stored`)
    t.equal(byName.size, intended.length, 'every intended cat is stored')
    t.ok(intended.every(({ cat }) => byName.get(cat.name) === 1), 'each exactly once')
    const [{ count }] = (await db.query<{ count: string }>(`SELECT count FROM ${schema}.cats_count`)).rows
    t.equal(Number(count), intended.length, 'the count agrees')
    await stopServer(b)
  })
}
