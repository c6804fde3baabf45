import t, { type Test } from 'tap'
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { once } from 'node:events'
import { randomBytes, randomInt } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import pg from 'pg'
import { hashPassword } from '../src/auth/password.js'
import { baseEnv, serverFile } from './support/server.js'
import { freshSchemaName, urlWithSchema } from './support/sql-schemas.js'

// Two compiled servers (and restarts of one) against the same storage: what one
// process cannot show. PostgreSQL and Redis parts run when CI finds those servers
// (TEST_DATABASE_URL, TEST_REDIS_URL); the PGlite durability check always runs.

const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
// One secret per run, the same for every server of the run.
const JWT_SECRET = randomBytes(32).toString('hex')
const REQUEST_TIMEOUT_MS = 10_000
const STOP_TIMEOUT_MS = 20_000

interface Running {
  child: ChildProcessWithoutNullStreams
  base: string
  exited: Promise<[number | null, NodeJS.Signals | null]>
}

/** Starts the compiled server on a free port (PORT=0), waits for its listening line, kills it on teardown. */
async function startServer (t: Test, env: Record<string, string> = {}): Promise<Running> {
  const child = spawn(process.execPath, [serverFile], {
    env: { ...baseEnv, JWT_SECRET, PORT: '0', HOST: '127.0.0.1', ...env }
  })
  const exited = once(child, 'exit').then((): [number | null, NodeJS.Signals | null] => [child.exitCode, child.signalCode])
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  let output = ''
  child.stderr.on('data', (chunk) => { output += String(chunk) })
  child.stdout.on('data', (chunk) => { output += String(chunk) })
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`server did not start within 90 s: ${output}`))
    }, 90_000)
    const onData = (): void => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match === null) return
      clearTimeout(timer)
      child.stdout.off('data', onData)
      resolve(match[1])
    }
    child.stdout.on('data', onData)
    exited.then(([code]) => {
      clearTimeout(timer)
      reject(new Error(`server exited with ${code} before listening: ${output}`))
    }, reject)
  })
  return { child, base, exited }
}

/** SIGTERM, then the exit code (null with a SIGKILL if it does not stop in time). */
async function stopServer (server: Running): Promise<number | null> {
  if (server.child.exitCode === null) server.child.kill('SIGTERM')
  return waitForExit(server)
}

/** The exit code; null, after a SIGKILL, if the process is still running after STOP_TIMEOUT_MS. */
async function waitForExit (server: Running): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => {
      server.child.kill('SIGKILL')
      resolve(null)
    }, STOP_TIMEOUT_MS)
  })
  const [code] = await Promise.race([server.exited, timeout.then((): [null, null] => [null, null])])
  clearTimeout(timer)
  return code
}

interface Answer {
  status: number
  headers: Headers
  body: unknown
}

/** One HTTP exchange; the body parsed as JSON (undefined when empty). */
async function call (base: string, method: string, path: string, payload?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: payload === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: payload === undefined ? undefined : JSON.stringify(payload),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
  })
  const text = await response.text()
  const body: unknown = text === '' ? undefined : JSON.parse(text)
  return { status: response.status, headers: response.headers, body }
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function idOf (value: unknown): number | undefined {
  return isRecord(value) && typeof value.id === 'number' ? value.id : undefined
}

function asList (value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, index) => from + index)

/** Runs `work` over `items` with at most `limit` in flight; results in input order. */
async function mapLimit<T, R> (items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length)
  let next = 0
  const runner = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index], index)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, runner))
  return results
}

/** A fresh, uniquely named schema in the test database, dropped on teardown. */
async function freshSchema (t: Test, databaseUrl: string): Promise<{ schema: string, db: pg.Client }> {
  const schema = freshSchemaName('cats_e2e')
  // A bounded wait: the drop must not hang on a lock held by a server that is being killed.
  const db = new pg.Client({ connectionString: databaseUrl, statement_timeout: 15_000 })
  await db.connect()
  await db.query(`CREATE SCHEMA ${schema}`)
  t.teardown(async () => {
    await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await db.end()
  })
  return { schema, db }
}

/** A users file with one account of a unique name (per run, so counters shared in Redis never carry over). */
async function usersFile (t: Test): Promise<{ file: string, username: string, password: string, id: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'cats-users-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const username = `e2e-${randomBytes(4).toString('hex')}`
  const password = randomBytes(12).toString('hex')
  const id = 4242
  const file = join(dir, 'users.json')
  writeFileSync(file, JSON.stringify([{ id, username, passwordHash: await hashPassword(password) }]))
  return { file, username, password, id }
}

/** A client address of our own (servers believe one proxy hop: the test acts as the proxy), so no run shares a per-client counter. */
const randomAddress = (): string => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`

if (TEST_DATABASE_URL === undefined) {
  t.comment('TEST_DATABASE_URL is not set: the multi-instance PostgreSQL test was skipped')
} else {
  const databaseUrl = TEST_DATABASE_URL
  t.test('two servers on one PostgreSQL database act as one service', async (t) => {
    const { schema, db } = await freshSchema(t, databaseUrl)
    const user = await usersFile(t)
    const env = { DATABASE_URL: urlWithSchema(databaseUrl, schema), USERS_FILE: user.file }
    const [a, b] = await Promise.all([startServer(t, env), startServer(t, env)])
    t.not(a.base, b.base, 'two processes on two ports')

    // 200 concurrent creates, alternating between the two servers, into an empty table.
    const payloads = range(1, 200).map((n) => ({ name: `cat-${n}`, age: n % 30, breed: n % 2 === 0 ? 'Siamese' : 'Persian' }))
    const started = Date.now()
    const created = await mapLimit(payloads, 200, (payload, index) => call(index % 2 === 0 ? a.base : b.base, 'POST', '/cats', payload))
    t.comment(`200 concurrent creates over two servers took ${Date.now() - started} ms`)
    const refused = created.filter((answer) => answer.status !== 201)
    t.strictSame(refused.map((answer) => answer.status), [], 'every create answers 201')
    if (refused.length > 0) t.comment(`first refusal: ${JSON.stringify(refused[0].body)}`)
    const ids = created.map((answer) => idOf(answer.body))
    const sorted = ids.filter((id) => id !== undefined).sort((x, y) => x - y)
    t.strictSame(sorted, range(1, 200), 'ids are exactly 1..200: none lost, none repeated')
    const mismatched = created.filter((answer, index) => answer.status === 201 && !isDeepStrictEqual(answer.body, { id: ids[index], ...payloads[index] }))
    t.strictSame(mismatched, [], 'each 201 carries the cat that was sent, with its new id')

    const [listA, listB] = await Promise.all([call(a.base, 'GET', '/cats'), call(b.base, 'GET', '/cats')])
    t.equal(listA.status, 200)
    t.strictSame(listA.body, listB.body, 'both servers list the same cats in the same order')
    const listed = asList(listA.body)
    t.strictSame(listed.map(idOf), range(1, 200), 'the list is in creation order, ids 1..200')
    const byId = new Map(created.map((answer) => [idOf(answer.body), answer.body]))
    t.ok(listed.every((cat) => isDeepStrictEqual(cat, byId.get(idOf(cat)))), 'each listed cat is exactly the one its create returned')

    const rows = await db.query<{ id: string }>(`SELECT id FROM ${schema}.cats ORDER BY seq`)
    t.strictSame(rows.rows.map((row) => Number(row.id)), range(1, 200), 'the table holds 200 rows, ids 1..200 in insertion order')
    const counter = await db.query<{ count: string }>(`SELECT count FROM ${schema}.cats_count`)
    t.strictSame(counter.rows.map((row) => Number(row.count)), [200], 'the stored count is 200')

    // One cat's whole life split between the two servers.
    const tom = await call(a.base, 'POST', '/cats', { name: 'Tom', age: 3, breed: 'Manx' })
    t.equal(tom.status, 201)
    t.strictSame(tom.body, { id: 201, name: 'Tom', age: 3, breed: 'Manx' }, 'A creates cat 201')
    t.strictSame((await call(b.base, 'GET', '/cats/201')).body, tom.body, 'B reads it')
    const merged = await call(b.base, 'PUT', '/cats/201', { age: 4, color: 'black', id: 999 })
    t.equal(merged.status, 200)
    t.strictSame(merged.body, { id: 201, name: 'Tom', age: 4, breed: 'Manx', color: 'black' }, 'B merges into it')
    t.strictSame((await call(a.base, 'GET', '/cats/201')).body, merged.body, 'A sees the merge')
    t.strictSame(asList((await call(a.base, 'GET', '/cats')).body).at(-1), merged.body, 'A lists the merged cat last')
    t.strictSame((await call(b.base, 'DELETE', '/cats/201')).body, { deleted: true }, 'B deletes it')
    const gone = await call(a.base, 'GET', '/cats/201')
    t.equal(gone.status, 200)
    t.equal(gone.body, undefined, 'A finds nothing (empty 200)')
    t.equal(asList((await call(a.base, 'GET', '/cats')).body).length, 200, 'A lists 200 cats again')
    const next = await call(b.base, 'POST', '/cats', { name: 'Next', age: 1, breed: 'Any' })
    t.equal(idOf(next.body), 201, 'the next create, through B, gets count + 1 = 201')

    // A token signed by one server opens the other (same JWT_SECRET, same users).
    const login = await call(a.base, 'POST', '/auth/login', { username: user.username, password: user.password })
    t.equal(login.status, 200)
    const token = isRecord(login.body) && typeof login.body.access_token === 'string' ? login.body.access_token : ''
    const profile = await call(b.base, 'GET', '/profile', undefined, { authorization: `Bearer ${token}` })
    t.equal(profile.status, 200, "A's token opens B's /profile")
    t.strictSame(profile.body, { userId: user.id, username: user.username })

    const [codeA, codeB] = await Promise.all([stopServer(a), stopServer(b)])
    t.strictSame([codeA, codeB], [0, 0], 'both stop with exit code 0 on SIGTERM')
  })
}

/** Alternates `times` failed logins between two servers; `address(n)` and `username(n)` vary per attempt. */
async function alternateFailedLogins (servers: Running[], times: number, address: (n: number) => string, username: (n: number) => string): Promise<Answer[]> {
  const answers: Answer[] = []
  for (let n = 0; n < times; n++) {
    answers.push(await call(servers[n % 2].base, 'POST', '/auth/login', { username: username(n), password: 'wrong password' }, { 'x-forwarded-for': address(n) }))
  }
  return answers
}

const limitEnv = { LOGIN_MAX_FAILURES: '3', LOGIN_CLIENT_MAX_FAILURES: '3', TRUST_PROXY: '1' }

if (TEST_REDIS_URL === undefined) {
  t.comment('TEST_REDIS_URL is not set: the shared failed-login counters test was skipped')
} else {
  const redisUrl = TEST_REDIS_URL
  t.test('with REDIS_URL, two servers share the failed-login counters', async (t) => {
    const env = { ...limitEnv, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `cats-test-${randomBytes(6).toString('hex')}:` }
    const [a, b] = await Promise.all([startServer(t, env), startServer(t, env)])

    // Per pair: one unknown username from one address.
    const account = `nobody-${randomBytes(6).toString('hex')}`
    const address = randomAddress()
    const perPair = await alternateFailedLogins([a, b], 4, () => address, () => account)
    t.strictSame(perPair.map((answer) => answer.status), [401, 401, 401, 429], 'A, B, A fail with 401; the 4th attempt (on B) is refused')
    t.match(perPair[3].body, { statusCode: 429, error: 'Too Many Requests', message: /Too many login attempts/, code: 'AUTH_ERR_TOO_MANY_ATTEMPTS' })
    t.match(perPair[3].headers.get('retry-after'), /^[1-9][0-9]*$/, '429 carries Retry-After')
    const elsewhere = await alternateFailedLogins([a, b], 2, randomAddress, () => account)
    t.strictSame(elsewhere.map((answer) => answer.status), [401, 401], 'the same username from other addresses is not locked')

    // Per client: one address, a new username each time; more than 3 failures refuse it.
    const client = randomAddress()
    const perClient = await alternateFailedLogins([a, b], 5, () => client, (n) => `nobody-${randomBytes(6).toString('hex')}-${n}`)
    t.strictSame(perClient.map((answer) => answer.status), [401, 401, 401, 401, 429], 'the per-address count is shared too')

    const [codeA, codeB] = await Promise.all([stopServer(a), stopServer(b)])
    t.strictSame([codeA, codeB], [0, 0], 'both stop with exit code 0 on SIGTERM')
  })
}

t.test('control: without REDIS_URL each server counts only its own failed logins', async (t) => {
  const [a, b] = await Promise.all([startServer(t, limitEnv), startServer(t, limitEnv)])
  const account = `nobody-${randomBytes(6).toString('hex')}`
  const address = randomAddress()
  const answers = await alternateFailedLogins([a, b], 4, () => address, () => account)
  t.strictSame(answers.map((answer) => answer.status), [401, 401, 401, 401], 'two failures per process stay under the threshold of 3')
  const [codeA, codeB] = await Promise.all([stopServer(a), stopServer(b)])
  t.strictSame([codeA, codeB], [0, 0])
})

interface Tally {
  acknowledged: Map<number, unknown>
  before: string[]
  after: string[]
}

/** Loops POST /cats from `workers` clients until SIGTERM makes them fail (bounded), then stops. */
async function createUntilStopped (t: Test, server: Running, workers: number, signalAfter: number): Promise<Tally> {
  const tally: Tally = { acknowledged: new Map(), before: [], after: [] }
  let signalled = false
  const worker = async (w: number): Promise<void> => {
    for (let i = 0; i < 2000; i++) {
      const payload = { name: `w${w}-${i}`, age: i, breed: `worker-${w}` }
      const outcome = await call(server.base, 'POST', '/cats', payload).then(
        (answer) => answer,
        (error: unknown) => error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error)
      )
      const wasSignalled = signalled
      if (typeof outcome !== 'string' && outcome.status === 201) {
        const id = idOf(outcome.body)
        if (id === undefined || tally.acknowledged.has(id) || !isDeepStrictEqual(outcome.body, { id, ...payload })) {
          t.fail(`a 201 with an unexpected body: ${JSON.stringify(outcome.body)}`)
        } else {
          tally.acknowledged.set(id, outcome.body)
        }
        if (wasSignalled) tally.after.push('201')
        if (tally.acknowledged.size >= signalAfter && !signalled) {
          signalled = true
          server.child.kill('SIGTERM')
        }
        continue
      }
      const what = typeof outcome === 'string' ? outcome : String(outcome.status)
      if (wasSignalled) tally.after.push(what)
      else tally.before.push(what)
      // Before SIGTERM a failure is a bug (reported below); after it, this client is done.
      return
    }
  }
  await Promise.all(range(1, workers).map(worker))
  if (!signalled) server.child.kill('SIGTERM')
  return tally
}

function counts (items: string[]): Record<string, number> {
  const result: Record<string, number> = {}
  for (const item of items) result[item] = (result[item] ?? 0) + 1
  return result
}

/** Every create acknowledged with 201 before and during a SIGTERM shutdown survives a restart. */
async function checkDurability (t: Test, databaseUrl: string): Promise<void> {
  const env = { DATABASE_URL: databaseUrl }
  const first = await startServer(t, env)
  const started = Date.now()
  const tally = await createUntilStopped(t, first, 4, 60)
  t.equal(await waitForExit(first), 0, 'the server stopped by SIGTERM in the middle of traffic exits with code 0')
  t.strictSame(tally.before, [], 'no create failed before SIGTERM')
  t.comment(`${tally.acknowledged.size} creates acknowledged in ${Date.now() - started} ms; after SIGTERM: ${JSON.stringify(counts(tally.after))}`)
  t.ok(tally.acknowledged.size >= 60, 'at least 60 creates were acknowledged')

  const second = await startServer(t, env)
  const listed = asList((await call(second.base, 'GET', '/cats')).body)
  const ids = listed.map(idOf)
  t.strictSame(ids, range(1, listed.length), 'after the restart, ids are 1..n in creation order')
  const stored = new Map(listed.map((cat) => [idOf(cat), cat]))
  const missing = [...tally.acknowledged].filter(([id, body]) => !isDeepStrictEqual(stored.get(id), body))
  t.strictSame(missing, [], 'every acknowledged cat is stored with exactly its body')
  t.comment(`${listed.length} stored, ${tally.acknowledged.size} acknowledged (${listed.length - tally.acknowledged.size} committed without a 201 reaching the client)`)
  const next = await call(second.base, 'POST', '/cats', { name: 'After', age: 1, breed: 'Restart' })
  t.equal(next.status, 201)
  t.strictSame(next.body, { id: listed.length + 1, name: 'After', age: 1, breed: 'Restart' }, 'the next create gets count + 1')
  t.equal(await stopServer(second), 0, 'the restarted server also stops with exit code 0')
}

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
