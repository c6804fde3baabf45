import { mkdtemp, rm } from 'node:fs/promises'
import net, { type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import Fastify from 'fastify'
import serviceApp from '../../src/app.js'
import { build, logCapture, testConfig } from '../support/app.js'
import { closedPort } from '../support/ports.js'
import { TcpProxy } from '../support/tcp-proxy.js'
import { adminClient, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'
import { pgliteCopy } from '../support/pglite-template.js'

/**
 * The app over the SQL stores: the same answers as the memory store, data on
 * disk that survives a restart, a database that goes away (503, then recovery)
 * and one that cannot be reached at start-up.
 */

const json = { 'content-type': 'application/json' }
const post = (payload: unknown): InjectOptions => ({ method: 'POST', url: '/cats', headers: json, payload: JSON.stringify(payload) })
const put = (id: number | string, payload: unknown): InjectOptions => ({ method: 'PUT', url: `/cats/${id}`, headers: json, payload: JSON.stringify(payload) })
const del = (id: number | string): InjectOptions => ({ method: 'DELETE', url: `/cats/${id}` })
const get = (url: string): InjectOptions => ({ method: 'GET', url })

const tom = { name: 'Tom', age: 3, breed: 'Siamese' }
const felix = { name: 'Felix', age: 5, breed: 'Tabby' }
const kit = { name: 'Kit', age: 1, breed: 'Persian' }

const UNAVAILABLE = { statusCode: 503, error: 'Service Unavailable', message: 'The database is unavailable; retry shortly', code: 'CATS_ERR_STORE_UNAVAILABLE' }

// Opening a PGlite takes a second or more: the one served over the wire opens now, alongside the first tests,
// on a copy of an initialised empty database (creating one from nothing takes seconds more).
const served = pgliteCopy(t).then(async (dir) => await PGlite.create(dir))
t.teardown(async () => { await (await served).close() })

/** The PGlite above, served over the PostgreSQL wire protocol on 127.0.0.1 until teardown. */
async function pgliteServer (t: Test): Promise<number> {
  const server = new PGLiteSocketServer({ db: await served, host: '127.0.0.1', port: 0, maxConnections: 100 })
  await server.start()
  t.teardown(() => server.stop())
  return Number(server.getServerConn().split(':')[1])
}

/** The requests of the API comparison: every route, success and failure, ids and duplicates, both limits. */
const apiSequence: InjectOptions[] = [
  get('/cats'),
  post(tom),
  post({ ...felix, id: 77, color: 'dropped' }),
  post({ name: 1, age: '2' }),
  { method: 'POST', url: '/cats', headers: { 'content-type': 'text/plain' }, payload: 'Tom' },
  { method: 'POST', url: '/cats', headers: json, payload: '{"name": ' },
  get('/cats/1'),
  get('/cats/2'),
  get('/cats/3'),
  get('/cats/0'),
  get('/cats/-1'),
  get('/cats/abc'),
  put(1, {
    id: 9,
    name: 'Tommy',
    color: 'black',
    tags: ['lazy', 'fluffy'],
    nested: { b: { z: null, y: true, x: 1.5 }, a: [] },
    'unicodé 🐈': '猫 \u0000 \ud800',
    2: 'an integer-like key'
  }),
  put(9, { x: 1 }),
  put(1, [1, 2]),
  { method: 'PUT', url: '/cats/1', headers: json, payload: '{"__proto__": {"polluted": true}}' },
  put('1.5', { x: 1 }),
  get('/cats'),
  del(1),
  del(1),
  post(kit),
  get('/cats/2'),
  put(2, { owner: 'Ana' }), // merged into Felix, the earliest created cat with id 2
  post(tom),
  post(felix),
  post(kit),
  put(3, { big: 'x'.repeat(5000) }),
  put(3, { bigger: 'y'.repeat(5000) }),
  get('/cats/3'),
  del(2),
  get('/cats/2'),
  del('abc'),
  del(-5),
  get('/cats')
]
const expectedStatuses = [
  200, 201, 201, 400, 415, 400, 200, 200, 200, 200, 200, 400,
  200, 200, 400, 400, 400, 200, 200, 200, 201, 200, 200, 201, 201, 507,
  200, 413, 200, 200, 200, 400, 200, 200
]

interface Answer { statusCode: number, contentType: unknown, body: string }

async function transcript (app: FastifyInstance): Promise<Answer[]> {
  const answers: Answer[] = []
  for (const request of apiSequence) {
    const res = await app.inject(request)
    answers.push({ statusCode: res.statusCode, contentType: res.headers['content-type'], body: res.body })
  }
  return answers
}

const serverUrl = process.env.TEST_DATABASE_URL

t.test('the same API requests get byte-identical answers from memory, PGlite and PostgreSQL', async (t) => {
  const config = { CATS_MAX: 4 }
  const memory = await transcript(await build(t, config))
  t.strictSame(memory.map((answer) => answer.statusCode), expectedStatuses, 'the sequence covers what it means to')
  t.strictSame(JSON.parse(memory.at(-1)?.body ?? ''), [
    { id: 2, name: 'Kit', age: 1, breed: 'Persian' },
    { id: 3, name: 'Tom', age: 3, breed: 'Siamese', big: 'x'.repeat(5000) },
    { id: 4, name: 'Felix', age: 5, breed: 'Tabby' }
  ])

  t.strictSame(await transcript(await build(t, { ...config, DATABASE_URL: 'pglite://memory' })), memory, 'pglite://memory')

  if (serverUrl === undefined || serverUrl === '') {
    t.comment('TEST_DATABASE_URL is not set: the PostgreSQL server run of the API comparison was skipped')
    return
  }
  const schema = await freshServerSchema(t, await adminClient(t, serverUrl), 'cats_test')
  const app = await build(t, { ...config, DATABASE_URL: urlWithSchema(serverUrl, schema) })
  t.strictSame(await transcript(app), memory, 'PostgreSQL at TEST_DATABASE_URL')
})

/**
 * One PGlite directory for the two tests below, in order: the first starts on it empty, the second finds it
 * migrated and without cats (starting PGlite on a new directory takes seconds).
 */
const pgliteDirectory = mkdtemp(join(tmpdir(), 'cats-pglite-'))
t.teardown(async () => rm(await pgliteDirectory, { recursive: true, force: true }))

t.test('start-up logs each migration it applies, and nothing on a database already up to date', async (t) => {
  const dir = await pgliteDirectory
  const startLogged = async (): Promise<string> => {
    const log = logCapture()
    const app = Fastify({ logger: { level: 'info', stream: log.stream }, pluginTimeout: 120_000 })
    await app.register(serviceApp, { config: { ...testConfig, DATABASE_URL: `pglite://${dir}` } })
    await app.ready()
    await app.close()
    return log.text()
  }
  const first = (await startLogged()).split('\n').filter((line) => line.includes('applied database migration'))
  t.equal(first.length, 11)
  t.match(JSON.parse(first[0]), { version: 1, name: 'cats', msg: 'applied database migration' })
  t.match(JSON.parse(first[1]), { version: 2, name: 'idempotency-keys', msg: 'applied database migration' })
  t.match(JSON.parse(first[2]), { version: 3, name: 'sessions', msg: 'applied database migration' })
  t.match(JSON.parse(first[3]), { version: 4, name: 'cats-merge', msg: 'applied database migration' })
  t.match(JSON.parse(first[4]), { version: 5, name: 'cats-merge-many', msg: 'applied database migration' })
  t.match(JSON.parse(first[5]), { version: 6, name: 'cats-create-many', msg: 'applied database migration' })
  t.match(JSON.parse(first[6]), { version: 7, name: 'session-records', msg: 'applied database migration' })
  t.match(JSON.parse(first[7]), { version: 8, name: 'idempotency-key-limits', msg: 'applied database migration' })
  t.match(JSON.parse(first[8]), { version: 9, name: 'session-rotations', msg: 'applied database migration' })
  t.match(JSON.parse(first[9]), { version: 10, name: 'cats-versions', msg: 'applied database migration' })
  t.match(JSON.parse(first[10]), { version: 11, name: 'function-paths', msg: 'applied database migration' })
  t.notMatch(await startLogged(), /applied database migration/)
})

t.test('pglite://<directory>: the cats survive closing the app and opening a new one on the directory', async (t) => {
  // The directory of the test above, migrated and without cats: creating a new one would take seconds.
  const dir = await pgliteDirectory
  const config = { DATABASE_URL: `pglite://${dir}` }

  const first = await build(t, config)
  for (const cat of [tom, felix, kit]) await first.inject(post(cat))
  await first.inject(put(2, { owner: 'Ana', toys: ['ball'] }))
  await first.inject(del(1))
  await first.inject(post(tom))
  const before = await first.inject(get('/cats'))
  t.strictSame(before.json(), [
    { id: 2, name: 'Felix', age: 5, breed: 'Tabby', owner: 'Ana', toys: ['ball'] },
    { id: 3, name: 'Kit', age: 1, breed: 'Persian' },
    { id: 3, name: 'Tom', age: 3, breed: 'Siamese' }
  ])
  await first.close()

  const second = await build(t, config)
  t.equal((await second.inject(get('/cats'))).body, before.body, 'the same cats, byte for byte')
  t.equal((await second.inject(get('/cats/3'))).json().name, 'Kit', 'creation order kept: the earliest created wins')
  t.strictSame((await second.inject(post(kit))).json(), { id: 4, ...kit }, 'the count was kept too')
  await second.close()
})

/** Readiness once it answers `status`, or its answer after 2.5 s: it reuses a probe's answer for a second. */
async function readinessBecomes (app: FastifyInstance, status: number): Promise<LightMyRequestResponse> {
  const deadline = Date.now() + 2500
  let ready = await app.inject(get('/health/ready'))
  while (ready.statusCode !== status && Date.now() < deadline) {
    await sleep(50)
    ready = await app.inject(get('/health/ready'))
  }
  return ready
}

t.test('a database that goes away: 503 at once, readiness says so, then recovery', async (t) => {
  const proxy = new TcpProxy(new URL(`postgres://127.0.0.1:${await pgliteServer(t)}`))
  await proxy.start()
  t.teardown(() => proxy.stop())
  // The socket server gives every connection the same PGlite session, where two connections' named statements would collide.
  const app = await build(t, { DATABASE_URL: `postgres://postgres@127.0.0.1:${proxy.port}/postgres`, DATABASE_PREPARED_STATEMENTS: false })

  t.equal((await app.inject(post(tom))).statusCode, 201)
  t.equal((await app.inject(post(felix))).statusCode, 201)
  t.strictSame((await app.inject(get('/health/ready'))).json(), { ready: true })
  // Several requests at once leave several idle connections in the pool.
  const reads = await Promise.all(Array.from({ length: 6 }, async () => app.inject(get('/cats'))))
  t.ok(reads.every((res) => res.statusCode === 200))
  t.ok(proxy.openSockets > 0, 'the pool holds open connections')

  await t.test('the database goes away: idle connections are cut without crashing the process', async (t) => {
    await proxy.stop()
    t.equal(proxy.openSockets, 0)
    // Give the pool's idle clients time to see the cut and report it (an unhandled 'error' would crash the run).
    await sleep(200)
    t.strictSame((await app.inject(get('/health'))).json(), { status: 'ok' })
  })

  await t.test('every cats route answers 503 in the the documented error shape, with Retry-After, without hanging', async (t) => {
    for (const request of [get('/cats'), get('/cats/1'), post(kit), put(1, { owner: 'Ana' }), del(1)]) {
      const started = Date.now()
      const res = await app.inject(request)
      const label = `${request.method} ${request.url}`
      t.ok(Date.now() - started < 3000, `${label} answers within seconds`)
      t.equal(res.statusCode, 503, label)
      t.strictSame(res.json(), UNAVAILABLE, label)
      t.equal(res.headers['retry-after'], '5', label)
    }
    const ready = await readinessBecomes(app, 503)
    t.equal(ready.statusCode, 503)
    t.strictSame(ready.json(), { ready: false, reason: 'database unavailable' })
    const live = await app.inject(get('/health'))
    t.equal(live.statusCode, 200, 'liveness does not depend on the database')
  })

  await t.test('the database comes back: requests succeed again and the data is still there', async (t) => {
    await proxy.start()
    const ready = await readinessBecomes(app, 200)
    t.equal(ready.statusCode, 200)
    t.strictSame(ready.json(), { ready: true })
    t.strictSame((await app.inject(get('/cats'))).json(), [{ id: 1, ...tom }, { id: 2, ...felix }], 'nothing was written during the outage')
    t.strictSame((await app.inject(post(kit))).json(), { id: 3, ...kit })
  })

  await t.test('a connection cut in the middle of a transaction: 503, rolled back, and the service goes on', async (t) => {
    proxy.cutWhen = (chunk) => chunk.includes('cats_create_many')
    const created = await app.inject(post(tom))
    t.equal(created.statusCode, 503)
    t.strictSame(created.json(), UNAVAILABLE)

    proxy.cutWhen = (chunk) => chunk.includes('cats_merge')
    const updated = await app.inject(put(1, { owner: 'Ana' }))
    t.equal(updated.statusCode, 503)

    proxy.cutWhen = undefined
    t.strictSame((await app.inject(get('/cats'))).json(), [{ id: 1, ...tom }, { id: 2, ...felix }, { id: 3, ...kit }],
      'neither the half-done create nor the half-done update is visible')
    t.strictSame((await app.inject(post(tom))).json(), { id: 4, ...tom }, 'the count was rolled back with the insert')
    t.strictSame((await app.inject(put(1, { owner: 'Ana' }))).json(), { id: 1, ...tom, owner: 'Ana' })
  })
})

t.test('DATABASE_POOL_SIZE bounds the connections an instance opens', async (t) => {
  const proxy = new TcpProxy(new URL(`postgres://127.0.0.1:${await pgliteServer(t)}`))
  await proxy.start()
  t.teardown(() => proxy.stop())
  const app = await build(t, { DATABASE_URL: proxy.url(new URL('postgres://postgres@127.0.0.1/postgres')), DATABASE_POOL_SIZE: 3, DATABASE_PREPARED_STATEMENTS: false })
  // Creates with an Idempotency-Key, a transaction each (concurrent reads, merges and plain creates would share statements).
  const creates = await Promise.all(Array.from({ length: 12 }, async (_, index) => app.inject({ ...post(tom), headers: { ...json, 'idempotency-key': `key-${index}` } })))
  t.strictSame(creates.map((res) => res.statusCode), creates.map(() => 201))
  t.equal(proxy.openSockets, 6, 'three connections, each a client and an upstream socket at the proxy')
})

t.test('a database that cannot be reached at start-up stops the app from starting', async (t) => {
  const message = /^DATABASE_URL: could not prepare the database \(/
  await t.test('connection refused', async (t) => {
    const port = await closedPort()
    await t.rejects(build(t, { DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/postgres` }), { message })
  })

  await t.test('a server that accepts connections but never answers: fails after the connection timeout, no hang', async (t) => {
    const silent = new Set<Socket>()
    const server = net.createServer((socket) => {
      silent.add(socket)
      socket.on('error', () => {})
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.teardown(async () => {
      for (const socket of silent) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    })
    const address = server.address()
    const port = typeof address === 'object' && address !== null ? address.port : 0
    const started = Date.now()
    await t.rejects(build(t, { DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/postgres` }), { message })
    t.ok(Date.now() - started < 10_000, 'gives up within seconds')
  })
})
