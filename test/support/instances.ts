import { once } from 'node:events'
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { randomBytes, randomInt } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import pg from 'pg'
import type { Test } from 'tap'
import { hashPassword } from '../../src/auth/login/password.js'
import { baseEnv, plainNode, serverFile } from './server.js'
import { freshSchemaName, urlWithSchema } from './sql-schemas.js'
import { CHEAP_HASH } from './cheap-users.js'

// Compiled servers as separate instances of one service (test/multi-instance.test.ts and
// test/stress/multi-instance.stress.ts): start, stop, call, and the durability check.

// One secret per run, the same for every server of the run.
export const JWT_SECRET = randomBytes(32).toString('hex')
export const REQUEST_TIMEOUT_MS = 10_000
export const STOP_TIMEOUT_MS = 20_000

export interface Running {
  child: ChildProcessWithoutNullStreams
  base: string
  exited: Promise<[number | null, NodeJS.Signals | null]>
}

/** Starts the compiled server on a free port (PORT=0), waits for its listening line, kills it on teardown. */
export async function startServer (t: Test, env: Record<string, string> = {}): Promise<Running> {
  const child = spawn(...plainNode(serverFile), {
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
export async function stopServer (server: Running): Promise<number | null> {
  if (server.child.exitCode === null) server.child.kill('SIGTERM')
  return waitForExit(server)
}

/** The exit code; null, after a SIGKILL, if the process is still running after STOP_TIMEOUT_MS. */
export async function waitForExit (server: Running): Promise<number | null> {
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

export interface Answer {
  status: number
  headers: Headers
  body: unknown
}

/** One HTTP exchange; the body parsed as JSON (undefined when empty). */
export async function call (base: string, method: string, path: string, payload?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
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

export function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function idOf (value: unknown): number | undefined {
  return isRecord(value) && typeof value.id === 'number' ? value.id : undefined
}

export function asList (value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}

export const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, index) => from + index)

/** Runs `work` over `items` with at most `limit` in flight; results in input order. */
export async function mapLimit<T, R> (items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
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
export async function freshSchema (t: Test, databaseUrl: string): Promise<{ schema: string, db: pg.Client }> {
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

/**
 * A users file with one account of a unique name (per run, so counters shared in Redis never carry over). Its hash is
 * cheap: the tests log in to get a token, and a hash of the default cost takes about half a second of CPU each time.
 */
export async function usersFile (t: Test): Promise<{ file: string, username: string, password: string, id: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'cats-users-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const username = `e2e-${randomBytes(4).toString('hex')}`
  const password = randomBytes(12).toString('hex')
  const id = 4242
  const file = join(dir, 'users.json')
  writeFileSync(file, JSON.stringify([{ id, username, passwordHash: await hashPassword(password, CHEAP_HASH) }]))
  return { file, username, password, id }
}

/** A client address of our own (servers believe one proxy hop: the test acts as the proxy), so no run shares a per-client counter. */
export const randomAddress = (): string => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`

export interface Tally {
  acknowledged: Map<number, unknown>
  before: string[]
  after: string[]
}

/** Loops POST /cats from `workers` clients until SIGTERM makes them fail (bounded), then stops. */
export async function createUntilStopped (t: Test, server: Running, workers: number, signalAfter: number): Promise<Tally> {
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

export function counts (items: string[]): Record<string, number> {
  const result: Record<string, number> = {}
  for (const item of items) result[item] = (result[item] ?? 0) + 1
  return result
}

/** Every create acknowledged with 201 before and during a SIGTERM shutdown survives a restart. */
export async function checkDurability (t: Test, databaseUrl: string): Promise<void> {
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

export interface OneServiceRun {
  /** Concurrent creates into the empty table, alternating between the two servers, all in flight at once. */
  creates: number
  /** Races of two conditional writes with the same If-Match, one through each server. */
  races: number
  /**
   * A pooler's URL of the same database (PgBouncer in transaction mode): the servers reach it through that, with
   * DATABASE_SCHEMA, DATABASE_POOLER=transaction and prepared statements off.
   */
  pooledUrl?: string
}

/**
 * Two compiled servers on one PostgreSQL database act as one service: concurrent creates through both get ids
 * 1..creates, both list the same cats, one cat's life is split between them, a token of one opens the other, and
 * of two conditional writes with the same If-Match exactly one wins. Both stop with exit code 0 on SIGTERM.
 */
export async function checkTwoServersAsOne (t: Test, databaseUrl: string, { creates, races, pooledUrl }: OneServiceRun, env: Record<string, string> = {}): Promise<void> {
  const { schema, db } = await freshSchema(t, databaseUrl)
  const user = await usersFile(t)
  const database: Record<string, string> = pooledUrl === undefined
    ? { DATABASE_URL: urlWithSchema(databaseUrl, schema) }
    : { DATABASE_URL: pooledUrl, DATABASE_SCHEMA: schema, DATABASE_POOLER: 'transaction', DATABASE_PREPARED_STATEMENTS: 'false' }
  const serverEnv = { ...database, USERS_FILE: user.file, ...env }
  const [a, b] = await Promise.all([startServer(t, serverEnv), startServer(t, serverEnv)])
  t.not(a.base, b.base, 'two processes on two ports')

  const payloads = range(1, creates).map((n) => ({ name: `cat-${n}`, age: n % 30, breed: n % 2 === 0 ? 'Siamese' : 'Persian' }))
  const started = Date.now()
  const created = await mapLimit(payloads, creates, (payload, index) => call(index % 2 === 0 ? a.base : b.base, 'POST', '/cats', payload))
  t.comment(`${creates} concurrent creates over two servers took ${Date.now() - started} ms`)
  const refused = created.filter((answer) => answer.status !== 201)
  t.strictSame(refused.map((answer) => answer.status), [], 'every create answers 201')
  if (refused.length > 0) t.comment(`first refusal: ${JSON.stringify(refused[0].body)}`)
  const ids = created.map((answer) => idOf(answer.body))
  const sorted = ids.filter((id) => id !== undefined).sort((x, y) => x - y)
  t.strictSame(sorted, range(1, creates), `ids are exactly 1..${creates}: none lost, none repeated`)
  const mismatched = created.filter((answer, index) => answer.status === 201 && !isDeepStrictEqual(answer.body, { id: ids[index], ...payloads[index] }))
  t.strictSame(mismatched, [], 'each 201 carries the cat that was sent, with its new id')

  const [listA, listB] = await Promise.all([call(a.base, 'GET', '/cats'), call(b.base, 'GET', '/cats')])
  t.equal(listA.status, 200)
  t.strictSame(listA.body, listB.body, 'both servers list the same cats in the same order')
  const listed = asList(listA.body)
  t.strictSame(listed.map(idOf), range(1, creates), `the list is in creation order, ids 1..${creates}`)
  const byId = new Map(created.map((answer) => [idOf(answer.body), answer.body]))
  t.ok(listed.every((cat) => isDeepStrictEqual(cat, byId.get(idOf(cat)))), 'each listed cat is exactly the one its create returned')

  const rows = await db.query<{ id: string }>(`SELECT id FROM ${schema}.cats ORDER BY seq`)
  t.strictSame(rows.rows.map((row) => Number(row.id)), range(1, creates), `the table holds ${creates} rows, ids 1..${creates} in insertion order`)
  const counter = await db.query<{ count: string }>(`SELECT count FROM ${schema}.cats_count`)
  t.strictSame(counter.rows.map((row) => Number(row.count)), [creates], `the stored count is ${creates}`)

  // One cat's whole life split between the two servers.
  const tomId = creates + 1
  const tom = await call(a.base, 'POST', '/cats', { name: 'Tom', age: 3, breed: 'Manx' })
  t.equal(tom.status, 201)
  t.strictSame(tom.body, { id: tomId, name: 'Tom', age: 3, breed: 'Manx' }, `A creates cat ${tomId}`)
  t.strictSame((await call(b.base, 'GET', `/cats/${tomId}`)).body, tom.body, 'B reads it')
  const merged = await call(b.base, 'PUT', `/cats/${tomId}`, { age: 4, color: 'black', id: 999 })
  t.equal(merged.status, 200)
  t.strictSame(merged.body, { id: tomId, name: 'Tom', age: 4, breed: 'Manx', color: 'black' }, 'B merges into it')
  t.strictSame((await call(a.base, 'GET', `/cats/${tomId}`)).body, merged.body, 'A sees the merge')
  t.strictSame(asList((await call(a.base, 'GET', '/cats')).body).at(-1), merged.body, 'A lists the merged cat last')
  t.strictSame((await call(b.base, 'DELETE', `/cats/${tomId}`)).body, { deleted: true }, 'B deletes it')
  const gone = await call(a.base, 'GET', `/cats/${tomId}`)
  t.equal(gone.status, 200)
  t.equal(gone.body, undefined, 'A finds nothing (empty 200)')
  t.equal(asList((await call(a.base, 'GET', '/cats')).body).length, creates, `A lists ${creates} cats again`)
  const next = await call(b.base, 'POST', '/cats', { name: 'Next', age: 1, breed: 'Any' })
  t.equal(idOf(next.body), tomId, `the next create, through B, gets count + 1 = ${tomId}`)

  // A token signed by one server opens the other (same JWT_SECRET, same users).
  const login = await call(a.base, 'POST', '/auth/login', { username: user.username, password: user.password })
  t.equal(login.status, 200)
  const token = isRecord(login.body) && typeof login.body.access_token === 'string' ? login.body.access_token : ''
  const profile = await call(b.base, 'GET', '/profile', undefined, { authorization: `Bearer ${token}` })
  t.equal(profile.status, 200, "A's token opens B's /profile")
  t.strictSame(profile.body, { userId: user.id, username: user.username })

  // Conditional writes across the two servers: of two writes with the same If-Match, exactly one wins.
  const etag = (await call(a.base, 'GET', '/cats/1')).headers.get('etag') ?? ''
  t.equal((await call(b.base, 'GET', '/cats/1', undefined, { 'if-none-match': etag })).status, 304, "A's ETag is B's too")
  const losses: string[] = []
  for (let trial = 0; trial < races; trial++) {
    const path = `/cats/${1 + (trial % Math.min(50, creates))}`
    const current = (await call(a.base, 'GET', path)).headers.get('etag') ?? ''
    const write = (base: string, winner: string): Promise<Answer> => trial % 2 === 0
      ? call(base, 'PUT', path, { winner }, { 'if-match': current })
      : call(base, 'PATCH', path, { winner }, { 'if-match': current, 'content-type': 'application/merge-patch+json' })
    const answers = await Promise.all([write(a.base, 'a'), write(b.base, 'b')])
    const stored = await call(b.base, 'GET', path)
    const won = answers.filter((answer) => answer.status === 200)
    const lost = answers.filter((answer) => answer.status === 412)
    if (won.length !== 1 || lost.length !== 1 || !isDeepStrictEqual(stored.body, won[0].body) ||
      stored.headers.get('etag') !== won[0].headers.get('etag')) losses.push(`${path}: ${answers.map((answer) => answer.status).join(', ')}`)
  }
  t.strictSame(losses, [], `${races} races of two conditional writes: one 200, one 412, and the stored cat is the winner's`)

  const [codeA, codeB] = await Promise.all([stopServer(a), stopServer(b)])
  t.strictSame([codeA, codeB], [0, 0], 'both stop with exit code 0 on SIGTERM')
}

/**
 * A users file of `count` accounts of unique names (per run, like usersFile) with cheap hashes, for failed logins:
 * a wrong password for one of them fails like an unknown username, which would instead verify the service's
 * dummy hash of the default cost (a fifth of a second of CPU each).
 */
export async function accountsFile (t: Test, count: number): Promise<{ file: string, usernames: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'cats-users-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const run = randomBytes(4).toString('hex')
  const usernames = range(1, count).map((n) => `e2e-${run}-${n}`)
  const passwordHash = await hashPassword(randomBytes(12).toString('hex'), CHEAP_HASH)
  const file = join(dir, 'users.json')
  writeFileSync(file, JSON.stringify(usernames.map((username, index) => ({ id: 5000 + index, username, passwordHash }))))
  return { file, usernames }
}
