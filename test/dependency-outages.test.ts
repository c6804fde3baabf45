import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { isDeepStrictEqual } from 'node:util'
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance, type InjectOptions } from 'fastify'
import fp from 'fastify-plugin'
import serviceApp from '../src/app.js'
import type { ConfigInput } from '../src/config.js'
import { logCapture, testConfig } from './support/app.js'
import { TcpProxy } from './support/tcp-proxy.js'
import { adminClient, freshServerSchema, urlWithSchema } from './support/sql-schemas.js'

// Every request ends within 5 s with a 503, Retry-After and a code when PostgreSQL or Redis
// refuses connections, drops them or goes silent (a proxy that holds every byte); readiness
// says which dependency is missing; an outage is logged once when it starts and once when it ends.

const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
// The PostgreSQL and Redis tests share nothing and spend their time waiting out deadlines: they run at once.
t.jobs = 2
const LIMIT_MS = 5000
const json = { 'content-type': 'application/json' }

/** The app with its log kept, closed on teardown. */
async function appWithLog (t: Test, config: Partial<ConfigInput>): Promise<{ app: FastifyInstance, log: () => string }> {
  const { stream, text } = logCapture()
  const app = Fastify({ logger: { level: 'info', stream }, pluginTimeout: 120_000 })
  await app.register(fp(serviceApp), { config: { ...testConfig, ...config } })
  await app.ready()
  t.teardown(() => app.close())
  return { app, log: text }
}

const lines = (log: string, message: string): number => log.split('\n').filter((line) => line.includes(`"msg":"${message}"`)).length

/** Sends each request, checks the 503 answer and returns the longest time taken. */
async function expectUnavailable (t: Test, app: FastifyInstance, requests: InjectOptions[], code: string): Promise<number> {
  let longest = 0
  for (const request of requests) {
    const started = Date.now()
    const res = await app.inject(request)
    const took = Date.now() - started
    longest = Math.max(longest, took)
    const label = `${request.method ?? 'GET'} ${request.url as string}`
    t.ok(took < LIMIT_MS, `${label} answered in ${took} ms`)
    t.equal(res.statusCode, 503, label)
    t.match(res.json(), { statusCode: 503, error: 'Service Unavailable', code }, label)
    t.equal(res.headers['retry-after'], '5', label)
  }
  return longest
}

async function readiness (app: FastifyInstance): Promise<{ status: number, body: unknown, took: number }> {
  const started = Date.now()
  const res = await app.inject({ url: '/health/ready' })
  return { status: res.statusCode, body: res.json(), took: Date.now() - started }
}

/** Readiness once it says `expected`, or its answer after 2.5 s: it reuses a probe's answer for a second. */
async function readinessBecomes (app: FastifyInstance, expected: unknown): Promise<unknown> {
  const deadline = Date.now() + 2500
  let body = (await readiness(app)).body
  while (!isDeepStrictEqual(body, expected) && Date.now() < deadline) {
    await sleep(50)
    body = (await readiness(app)).body
  }
  return body
}

const catRoutes: InjectOptions[] = [
  { url: '/cats' },
  { url: '/cats/1' },
  { method: 'POST', url: '/cats', headers: json, payload: '{"name":"Tom","age":3,"breed":"Manx"}' },
  { method: 'PUT', url: '/cats/1', headers: json, payload: '{"age":4}' },
  { method: 'DELETE', url: '/cats/1' }
]

if (TEST_DATABASE_URL === undefined) {
  t.comment('TEST_DATABASE_URL is not set: the PostgreSQL outage tests were skipped')
} else {
  const target = new URL(TEST_DATABASE_URL)
  t.test('PostgreSQL silent, dropped or refusing: 503 within 5 s, readiness says so, one log line each way', async (t) => {
    const schema = await freshServerSchema(t, await adminClient(t, TEST_DATABASE_URL), 'cats_outage')
    const proxy = new TcpProxy(target)
    await proxy.start()
    t.teardown(() => proxy.stop())
    const { app, log } = await appWithLog(t, { DATABASE_URL: urlWithSchema(proxy.url(target), schema) })

    t.equal((await app.inject(catRoutes[2])).statusCode, 201)
    t.strictSame((await readiness(app)).body, { ready: true })

    await t.test('silent: every route ends in time, a PUT pays the deadline once, timed-out connections are destroyed', async (t) => {
      proxy.silent = true
      const longest = await expectUnavailable(t, app, catRoutes, 'CATS_ERR_STORE_UNAVAILABLE')
      t.comment(`longest request while PostgreSQL is silent: ${longest} ms`)
      const ready = await readiness(app)
      t.equal(ready.status, 503)
      t.strictSame(ready.body, { ready: false, reason: 'database unavailable' })
      t.ok(ready.took < 2000, `readiness answered in ${ready.took} ms`)
      // Concurrent requests: none waits for another's deadline.
      const started = Date.now()
      const answers = await Promise.all(Array.from({ length: 20 }, async () => app.inject({ url: '/cats' })))
      t.ok(answers.every((res) => res.statusCode === 503), '20 concurrent reads: 503')
      t.ok(Date.now() - started < LIMIT_MS, `20 concurrent reads ended in ${Date.now() - started} ms`)
      // Connection attempts still under way give up after the pool's 2 s connect timeout.
      for (let waited = 0; waited < 5000 && proxy.openSockets > 0; waited += 20) await sleep(20)
      t.equal(proxy.openSockets, 0, 'every connection whose query timed out was destroyed, none kept for reuse')
    })

    await t.test('the database answers again: served, and the recovery is logged once', async (t) => {
      proxy.silent = false
      t.strictSame(await readinessBecomes(app, { ready: true }), { ready: true })
      t.match((await app.inject({ url: '/cats/1' })).json(), { id: 1, name: 'Tom' })
      const put = await app.inject(catRoutes[3])
      t.equal(put.statusCode, 200, 'a transaction works on a fresh connection')
    })

    await t.test('dropped, then refused: 503 at once', async (t) => {
      await proxy.stop()
      const longest = await expectUnavailable(t, app, catRoutes, 'CATS_ERR_STORE_UNAVAILABLE')
      t.comment(`longest request while PostgreSQL refuses connections: ${longest} ms`)
      t.strictSame(await readinessBecomes(app, { ready: false, reason: 'database unavailable' }), { ready: false, reason: 'database unavailable' })
      await proxy.start()
      t.equal((await app.inject({ url: '/cats' })).statusCode, 200)
    })

    t.equal(lines(log(), 'database unavailable'), 2, 'each outage logged once when it started')
    t.equal(lines(log(), 'database available again'), 2, 'and once when it ended')
    t.equal(lines(log(), 'request failed'), 0, 'no error line (stack trace) per request')
  })
}

if (TEST_REDIS_URL === undefined) {
  t.comment('TEST_REDIS_URL is not set: the Redis outage tests were skipped')
} else {
  const target = new URL(TEST_REDIS_URL)
  t.test('Redis silent or refusing: a login gets 503 within 2 s, readiness says so, one log line each way', async (t) => {
    const proxy = new TcpProxy(target)
    await proxy.start()
    t.teardown(() => proxy.stop())
    // A key prefix of its own: the failed logins below never meet another run's counters.
    const { app, log } = await appWithLog(t, { REDIS_URL: proxy.url(target), REDIS_KEY_PREFIX: `cats-test-${randomBytes(6).toString('hex')}:` })
    const login: InjectOptions = { method: 'POST', url: '/auth/login', headers: json, payload: '{"username":"nobody","password":"wrong"}' }
    // The Redis client connects in the background: not ready until it has.
    for (let waited = 0; waited < 5000 && (await readiness(app)).status !== 200; waited += 20) await sleep(20)
    t.strictSame((await readiness(app)).body, { ready: true })
    t.equal((await app.inject(login)).statusCode, 401)

    proxy.silent = true
    const longest = await expectUnavailable(t, app, [login, login, login], 'AUTH_ERR_LIMITER_UNAVAILABLE')
    t.comment(`longest login while Redis is silent: ${longest} ms`)
    t.ok(longest < 2000, 'within 2 s')
    t.equal((await app.inject({ url: '/cats' })).statusCode, 200, 'routes that do not use Redis go on')
    const ready = await readiness(app)
    t.strictSame(ready.body, { ready: false, reason: 'redis unavailable' })
    t.ok(ready.took < 2000, `readiness answered in ${ready.took} ms`)

    proxy.silent = false
    await proxy.stop()
    await expectUnavailable(t, app, [login], 'AUTH_ERR_LIMITER_UNAVAILABLE')
    await proxy.start()
    // ioredis reconnects by itself, with a growing delay.
    let status = 0
    for (let attempt = 0; attempt < 200 && status !== 401; attempt++) {
      await sleep(50)
      status = (await app.inject(login)).statusCode
    }
    t.equal(status, 401, 'logins work again once Redis is back')
    t.strictSame(await readinessBecomes(app, { ready: true }), { ready: true })
    t.equal(lines(log(), 'redis unavailable'), 1, 'the outage is logged once when it started')
    t.equal(lines(log(), 'redis available again'), 1, 'and once when it ended')
    t.equal(lines(log(), 'request failed'), 0, 'no error line (stack trace) per request')
  })
}
