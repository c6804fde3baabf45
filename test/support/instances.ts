import { once } from 'node:events'
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { randomBytes, randomInt } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import pg from 'pg'
import type { Test } from 'tap'
import { hashPassword } from '../../src/auth/password.js'
import { baseEnv, plainNode, serverFile } from './server.js'
import { freshSchemaName } from './sql-schemas.js'
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
