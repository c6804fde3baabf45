import t, { type Test } from 'tap'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import serviceApp from '../../src/app.js'
import { OPERATION_DEADLINE_MS, postgresClient, type ClientOptions, type SqlClient } from '../../src/db/sql-client.js'
import { testConfig } from '../support/app.js'
import { PgQueryCounter } from '../support/pg-queries.js'
import { pgBouncerTarget, startPgBouncer } from '../support/pgbouncer.js'
import { adminClient, freshServerSchema } from '../support/sql-schemas.js'
import { TcpProxy } from '../support/tcp-proxy.js'

// The service through Debian's PgBouncer in transaction mode (its defaults otherwise), prepared statements off: a
// pooler refuses start-up parameters, so the statement timeout goes with each transaction and statement; a
// statement stalled behind the pooler still ends in 503 within 5 s and is cancelled on the server; and the
// direct path keeps its round trips.

const LIMIT_MS = 5000
const serverUrl = pgBouncerTarget(t, 'the PgBouncer tests')

/** A client of `url` (through a proxy that counts the queries, when given one), closed on teardown. */
async function open (t: Test, url: string, options: ClientOptions): Promise<SqlClient> {
  const client = await postgresClient(url, options)
  t.teardown(() => client.close())
  return client
}

const pooled: ClientOptions = { pooled: true, preparedStatements: false }

if (serverUrl !== undefined) {
  t.test('through PgBouncer in transaction mode', async (t) => {
    const bouncer = await startPgBouncer(t, serverUrl, 'transaction')
    const admin = await adminClient(t, serverUrl)

    t.test('a client that sends statement_timeout as a start-up parameter is refused (the fault this fixes)', async (t) => {
      const client = await open(t, bouncer.url, { preparedStatements: false })
      await t.rejects(client.query('SELECT 1'), /unsupported startup parameter: statement_timeout/)
    })

    t.test('pooled: every statement and transaction runs with the deadline as its statement_timeout', async (t) => {
      const client = await open(t, bouncer.url, pooled)
      t.strictSame(await client.query('SHOW statement_timeout'), [{ statement_timeout: '3s' }], 'a statement without parameters')
      t.strictSame(await client.query('SELECT current_setting($1) AS value', ['statement_timeout']), [{ value: '3s' }], 'a statement with parameters')
      t.strictSame(await client.query({ name: 'timeout_of', text: 'SELECT current_setting($1) AS value' }, ['statement_timeout']), [{ value: '3s' }], 'a named statement')
      t.strictSame(await client.transaction((tx) => tx.query('SHOW statement_timeout')), [{ statement_timeout: '3s' }], 'a transaction')
      t.strictSame(await client.transaction((tx) => tx.query('SHOW statement_timeout'), 60_000), [{ statement_timeout: '1min' }], 'a longer transaction lifts it for itself')
      await client.ping(1000)
      t.strictSame(await client.query('SELECT $1::int + 1 AS n', [41]), [{ n: 42 }], 'the answer is the statement\'s, not the preface\'s')
      const rows = await client.query<{ n: number }>('SELECT generate_series(1, 3) AS n')
      t.strictSame(rows.map(({ n }) => n), [1, 2, 3])
      await t.rejects(client.query('SELECT * FROM no_such_table WHERE x = $1', [1]), { code: '42P01' }, 'an error is the statement\'s')
      t.strictSame(await client.query('SELECT 1 AS one'), [{ one: 1 }], 'the connection works after an error')
    })

    t.test('nothing outlives its transaction on the shared server session', async (t) => {
      // One server connection behind the pooler: the next client's statements run on the same session.
      const single = await startPgBouncer(t, serverUrl, 'transaction', { default_pool_size: '1' })
      const client = await open(t, single.url, pooled)
      const [{ pid }] = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
      await client.transaction((tx) => tx.query('SELECT 1'), 60_000)
      const other = await adminClient(t, single.url)
      const { rows } = await other.query<{ pid: number, timeout: string }>("SELECT pg_backend_pid() AS pid, current_setting('statement_timeout') AS timeout")
      t.equal(rows[0].pid, pid, 'the same server session')
      t.not(rows[0].timeout, '3s', 'the service\'s setting did not stay on it')
      t.not(rows[0].timeout, '1min')
    })

    t.test('a statement stalled behind the pooler fails at the deadline and is cancelled on the server', async (t) => {
      const client = await open(t, bouncer.url, pooled)
      for (const [label, run] of [
        ['a statement', () => client.query('SELECT pg_sleep($1) AS slept', [30])],
        ['a transaction', () => client.transaction((tx) => tx.query('SELECT pg_sleep(30)'))]
      ] as const) {
        const started = Date.now()
        await t.rejects(run(), label)
        const took = Date.now() - started
        t.ok(took >= OPERATION_DEADLINE_MS - 100 && took < LIMIT_MS, `${label} failed after ${took} ms`)
        const deadline = Date.now() + 1000
        let sleeping = Infinity
        while (Date.now() < deadline) {
          const { rows } = await admin.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE query LIKE '%pg_sleep%30%' AND state = 'active' AND pid <> pg_backend_pid()")
          sleeping = Number(rows[0].n)
          if (sleeping === 0) break
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        t.equal(sleeping, 0, `${label}: no longer running on the server`)
      }
    })

    t.test('round trips: a pooled statement is one, a pooled transaction BEGIN, its statements and COMMIT', async (t) => {
      for (const [label, target, options] of [['pooled, through PgBouncer', bouncer.url, pooled], ['direct', serverUrl, {}]] as const) {
        const proxy = new TcpProxy(new URL(target))
        const counter = new PgQueryCounter()
        proxy.watch = counter.feed
        await proxy.start()
        t.teardown(() => proxy.stop())
        const client = await open(t, proxy.url(new URL(target)), options)
        await client.query('SELECT 1')
        const queries = async (work: () => Promise<unknown>): Promise<number> => {
          const before = counter.count
          await work()
          return counter.count - before
        }
        t.equal(await queries(() => client.query('SELECT $1::int AS n', [1])), 1, `${label}: a statement`)
        t.equal(await queries(() => client.query('SELECT 1')), 1, `${label}: a statement without parameters`)
        t.equal(await queries(() => client.transaction((tx) => tx.query('SELECT 1'))), 3, `${label}: a transaction`)
        t.equal(await queries(() => client.transaction((tx) => tx.query('SELECT 1'), 60_000)), 3, `${label}: a transaction with a longer timeout`)
        t.equal(await queries(() => client.ping(1000)), 1, `${label}: the probe`)
      }
    })

    t.test('the service starts through it, and a stalled request gets 503 within 5 s, cancelled on the server', async (t) => {
      const schema = await freshServerSchema(t, admin, 'cats_pgbouncer')
      const config = { ...testConfig, DATABASE_URL: bouncer.url, DATABASE_SCHEMA: schema, DATABASE_PREPARED_STATEMENTS: false }
      const refused = Fastify({ logger: false, pluginTimeout: 120_000 })
      t.teardown(() => refused.close())
      await t.rejects(async () => { await refused.register(fp(serviceApp), { config: { ...config, DATABASE_POOLER: 'none' } }) }, /DATABASE_URL: could not prepare the database \(error: unsupported startup parameter: statement_timeout\)/, 'DATABASE_POOLER=none: the start is refused, as before')
      const app = Fastify({ logger: false, pluginTimeout: 120_000 })
      await app.register(fp(serviceApp), { config: { ...config, DATABASE_POOLER: 'transaction' } })
      await app.ready()
      t.teardown(() => app.close())
      const created = await app.inject({ method: 'POST', url: '/cats', payload: { name: 'Tom', age: 3, breed: 'Siamese' } })
      t.equal(created.statusCode, 201)
      t.equal((await app.inject({ url: '/health/ready' })).statusCode, 200)

      // Another connection holds the cats table: every statement on it waits behind the lock.
      await admin.query('BEGIN')
      await admin.query(`LOCK TABLE "${schema}".cats IN ACCESS EXCLUSIVE MODE`)
      t.teardown(async () => { await admin.query('ROLLBACK') })
      for (const request of [{ method: 'GET' as const, url: '/cats/1' }, { method: 'POST' as const, url: '/cats', payload: { name: 'Kit', age: 1, breed: 'x' } }, { method: 'DELETE' as const, url: '/cats/1' }]) {
        const started = Date.now()
        const res = await app.inject(request)
        const took = Date.now() - started
        t.equal(res.statusCode, 503, `${request.method} ${request.url}`)
        t.equal(res.headers['retry-after'], '5')
        t.ok(took < LIMIT_MS, `${request.method} ${request.url}: 503 in ${took} ms`)
      }
      const deadline = Date.now() + 1000
      let waiting = Infinity
      while (Date.now() < deadline) {
        const { rows } = await admin.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE state = 'active' AND wait_event_type = 'Lock' AND query LIKE $1", [`%${schema}%`])
        waiting = Number(rows[0].n)
        if (waiting === 0) break
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      t.equal(waiting, 0, 'no statement of the service still waits on the server')
      await admin.query('ROLLBACK')
      await admin.query('BEGIN')
      const found = await app.inject({ url: '/cats/1' })
      t.equal(found.statusCode, 200, 'served again once the lock is gone')
      t.equal(found.json().name, 'Tom')
    })
  })
}
