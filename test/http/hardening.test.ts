import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import serviceApp from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { serverOptions } from '../../src/http/server-options.js'
import { build, bearer, logCapture, tokenFor, testConfig, TEST_SECRET, unencapsulatedApp } from '../support/app.js'

const login = (app: FastifyInstance, username: string, password: string, remoteAddress = '127.0.0.1') =>
  app.inject({ method: 'POST', url: '/auth/login', payload: { username, password }, remoteAddress })

t.test('brute force: failures lock one username from one client (429 + Retry-After), not the owner elsewhere', async (t) => {
  const app = await build(t, { LOGIN_MAX_FAILURES: 3 })
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await login(app, 'john', 'wrong')).statusCode)
  t.strictSame(statuses, [401, 401, 401, 429])
  const limited = await login(app, 'john', 'changeme')
  t.equal(limited.statusCode, 429, 'even the right password is refused while locked')
  const retryAfter = Number(limited.headers['retry-after'])
  t.strictSame(limited.json(), { statusCode: 429, error: 'Too Many Requests', message: `Too many login attempts; retry in ${retryAfter} seconds`, code: 'AUTH_ERR_TOO_MANY_ATTEMPTS' })
  t.equal((await login(app, 'john', 'changeme', '10.0.0.9')).statusCode, 200, 'the owner from another client is not affected')
})

t.test('TRUST_PROXY: behind a proxy the client address comes from X-Forwarded-For', async (t) => {
  const config = loadConfig({ ...testConfig, TRUST_PROXY: '1', LOGIN_CLIENT_MAX_FAILURES: 1, LOG_LEVEL: 'silent' })
  const app = Fastify(serverOptions(config))
  await app.register(serviceApp, { config })
  t.teardown(() => app.close())
  const from = (client: string) => app.inject({ method: 'POST', url: '/auth/login', payload: { username: `u-${client}`, password: 'x' }, headers: { 'x-forwarded-for': client } })
  t.equal((await from('203.0.113.1')).statusCode, 401)
  t.equal((await from('203.0.113.1')).statusCode, 401)
  t.equal((await from('203.0.113.1')).statusCode, 429, 'more failures than the cap from that forwarded client')
  t.equal((await from('203.0.113.2')).statusCode, 401, 'a different forwarded client has its own count')
})

t.test('password hashing: /profile keeps answering while many logins are in flight', async (t) => {
  const app = await build(t, { HASH_CONCURRENCY: 1, HASH_QUEUE_MAX: 100 })
  let loginsDone = 0
  // From 12 addresses: more concurrent logins of one username from one address than LOGIN_MAX_FAILURES are refused.
  const logins = Array.from({ length: 12 }, (_, i) => login(app, 'john', 'changeme', `10.1.0.${i}`).then((res) => {
    loginsDone++
    return res.statusCode
  }))
  const profile = await app.inject({ url: '/profile', headers: bearer(tokenFor(app)) })
  t.equal(profile.statusCode, 200)
  t.ok(loginsDone < 12, `profile answered while ${12 - loginsDone} logins were still hashing`)
  t.strictSame(await Promise.all(logins), Array(12).fill(200), 'every queued login completes')
})

t.test('password hashing: past the queue bound a login gets 503 + Retry-After at once', async (t) => {
  const app = await build(t, { HASH_CONCURRENCY: 1, HASH_QUEUE_MAX: 2 })
  const results = await Promise.all(Array.from({ length: 5 }, () => login(app, 'john', 'changeme')))
  const statuses = results.map((res) => res.statusCode).sort()
  t.strictSame(statuses, [200, 200, 200, 503, 503], 'one running + two waiting; the rest refused')
  const refused = results.find((res) => res.statusCode === 503)
  t.equal(refused?.headers['retry-after'], '1')
  t.strictSame(refused?.json(), { statusCode: 503, error: 'Service Unavailable', message: 'Too many logins in progress; retry shortly', code: 'AUTH_ERR_LOGINS_IN_PROGRESS' })
})

t.test('CATS_MAX: past the cap a create gets 507 and stores nothing', async (t) => {
  const app = await build(t, { CATS_MAX: 2 })
  const create = () => app.inject({ method: 'POST', url: '/cats', payload: { name: 'Tom', age: 1, breed: 'x' } })
  t.equal((await create()).statusCode, 201)
  t.equal((await create()).statusCode, 201)
  const full = await create()
  t.equal(full.statusCode, 507)
  t.strictSame(full.json(), { statusCode: 507, error: 'Insufficient Storage', message: 'The collection is full (2 cats); delete some first', code: 'CATS_ERR_COLLECTION_FULL' })
  t.equal((await app.inject('/cats')).json().length, 2)
  await app.inject({ method: 'DELETE', url: '/cats/1' })
  t.equal((await create()).statusCode, 201, 'a delete makes room again')
})

t.test('headers: the API security headers on every response, no X-Powered-By', async (t) => {
  const app = await build(t)
  for (const url of ['/cats', '/nope', '/profile', '/health']) {
    const res = await app.inject(url)
    t.equal(res.headers['content-security-policy'], "default-src 'none';frame-ancestors 'none'", url)
    t.equal(res.headers['x-content-type-options'], 'nosniff', url)
    t.equal(res.headers['x-frame-options'], 'DENY', url)
    t.equal(res.headers['referrer-policy'], 'no-referrer', url)
    t.equal(res.headers['cross-origin-resource-policy'], 'same-origin', url)
    t.match(res.headers['strict-transport-security'], /^max-age=\d+; includeSubDomains$/, url)
    t.equal(res.headers['x-powered-by'], undefined, url)
  }
})

t.test('headers: the /docs UI works under the CSP (only same-origin scripts, no inline code)', async (t) => {
  const app = await build(t)
  const page = await app.inject('/docs/')
  t.equal(page.statusCode, 200)
  const csp = String(page.headers['content-security-policy'])
  t.match(csp, /default-src 'self'/, 'the UI has its own policy')
  t.match(csp, /script-src 'self'/)
  t.equal(page.headers['x-frame-options'], 'DENY', 'the other headers stay')
  const scripts = [...page.body.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)]
  t.ok(scripts.length > 0)
  for (const [, attributes, code] of scripts) {
    t.match(attributes, /src="\.\/[^"]+"/, 'script is loaded from the same origin')
    t.equal(code.trim(), '', 'no inline script for the CSP to block')
  }
  for (const [, src] of page.body.matchAll(/src="\.\/([^"]+)"/g)) {
    t.equal((await app.inject(`/docs/${src}`)).statusCode, 200, src)
  }
})

t.test('CORS: off by default, configured origins only', async (t) => {
  const closed = await build(t)
  const preflight = { method: 'OPTIONS' as const, url: '/cats', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' } }
  t.equal((await closed.inject(preflight)).headers['access-control-allow-origin'], undefined)
  const open = await build(t, { CORS_ORIGINS: 'https://app.example, https://admin.example' })
  const allowed = await open.inject(preflight)
  t.equal(allowed.statusCode, 204)
  t.equal(allowed.headers['access-control-allow-origin'], 'https://app.example')
  const other = await open.inject({ ...preflight, headers: { ...preflight.headers, origin: 'https://evil.example' } })
  t.equal(other.headers['access-control-allow-origin'], undefined)
})

t.test('overload: under pressure requests get 503 + Retry-After; health keeps answering', async (t) => {
  const app = await build(t, { MAX_HEAP_USED_BYTES: 1 })
  // under-pressure samples the heap once a second.
  await new Promise((resolve) => setTimeout(resolve, 1200))
  const shed = await app.inject('/cats')
  t.equal(shed.statusCode, 503)
  t.equal(shed.headers['retry-after'], '10')
  t.strictSame(shed.json(), { statusCode: 503, error: 'Service Unavailable', message: 'The server is overloaded; retry shortly', code: 'HTTP_ERR_OVERLOADED' })
  t.strictSame((await app.inject('/health')).json(), { status: 'ok' })
  const ready = await app.inject('/health/ready')
  t.equal(ready.statusCode, 503)
  t.strictSame(ready.json(), { ready: false, reason: 'overloaded' })
})

t.test('health: liveness and readiness', async (t) => {
  const app = await build(t)
  t.strictSame((await app.inject('/health')).json(), { status: 'ok' })
  const ready = await app.inject('/health/ready')
  t.equal(ready.statusCode, 200)
  t.strictSame(ready.json(), { ready: true })
})

interface Captured {
  app: FastifyInstance
  logs: () => string
}

async function withCapturedLogs (t: Test, extra: Record<string, string | number> = {}): Promise<Captured> {
  const { stream, text: logged } = logCapture()
  const config = loadConfig({ ...testConfig, LOG_LEVEL: 'trace', ...extra })
  const app = Fastify(serverOptions(config, stream))
  await app.register(unencapsulatedApp, {
    config,
    validateToken: (claims) => {
      if (claims.username === 'crash') throw new Error('lookup failed')
      return { userId: claims.sub, username: claims.username }
    }
  })
  await app.ready()
  t.teardown(() => app.close())
  return { app, logs: () => logged() }
}

const CLIENT_REQUEST_ID = '7D3F0C1E-58B2-4C8A-9E61-2F4B7A9C0D13'

t.test('request ids: a client x-request-id that is a UUID is kept, echoed and in every log line of the request', async (t) => {
  const { app, logs } = await withCapturedLogs(t)
  const res = await app.inject({ url: '/cats', headers: { 'x-request-id': CLIENT_REQUEST_ID } })
  t.equal(res.headers['x-request-id'], CLIENT_REQUEST_ID)
  const lines = logs().trim().split('\n').map((line) => JSON.parse(line)).filter((entry) => entry.reqId !== undefined)
  t.ok(lines.length >= 2, 'incoming and completed lines')
  t.ok(lines.every((entry) => entry.reqId === CLIENT_REQUEST_ID))
})

t.test('request ids: any other or missing x-request-id is replaced by a new UUID', async (t) => {
  const { app, logs } = await withCapturedLogs(t)
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
  const others = ['client-abc.123', 'bad id with spaces', 'x'.repeat(200), `${CLIENT_REQUEST_ID}0`]
  for (const headers of [{}, ...others.map((id) => ({ 'x-request-id': id }))]) {
    const res = await app.inject({ url: '/cats', headers })
    t.match(res.headers['x-request-id'], uuid)
  }
  for (const id of others) t.notOk(logs().includes(id), `${id.slice(0, 20)} is not logged`)
})

t.test('errors and logs: a 5xx is logged with its request id and answered generically', async (t) => {
  const { app, logs } = await withCapturedLogs(t)
  const token = tokenFor(app, 1, 'crash')
  const res = await app.inject({ url: '/profile', headers: { ...bearer(token), 'x-request-id': CLIENT_REQUEST_ID } })
  t.equal(res.statusCode, 500)
  t.equal(res.json().message, 'An internal error occurred')
  const errorLine = logs().trim().split('\n').map((line) => JSON.parse(line)).find((entry) => entry.level === 50)
  t.equal(errorLine?.reqId, CLIENT_REQUEST_ID)
  t.equal(errorLine?.err?.message, 'lookup failed')
})

t.test('errors and logs: secrets never appear in the logs', async (t) => {
  const { app, logs } = await withCapturedLogs(t)
  const res = await app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'john', password: 'changeme' } })
  const token: string = res.json().access_token
  await app.inject({ url: '/profile', headers: bearer(token) })
  await app.inject({ url: '/profile', headers: bearer('forged.token.value') })
  await app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'john', password: 'hunter2-wrong' } })
  app.log.info({ body: { password: 'logged-by-mistake' }, user: { access_token: token } }, 'redaction check')
  const text = logs()
  t.ok(text.length > 0)
  for (const secret of [TEST_SECRET, 'changeme', 'hunter2-wrong', 'logged-by-mistake', token, 'forged.token.value']) {
    t.notOk(text.includes(secret), `the log does not contain ${secret.slice(0, 12)}…`)
  }
  t.match(text, /\[redacted\]/, 'redacted fields are marked')
})

t.test('bounded memory: repeated merges cannot grow one cat past BODY_LIMIT (413, unchanged)', async (t) => {
  const app = await build(t, { BODY_LIMIT: 1024 })
  await app.inject({ method: 'POST', url: '/cats', payload: { name: 'Tom', age: 1, breed: 'x' } })
  const grow = (key: string) => app.inject({ method: 'PUT', url: '/cats/1', payload: { [key]: 'y'.repeat(400) } })
  t.equal((await grow('a')).statusCode, 200)
  t.equal((await grow('b')).statusCode, 200)
  const tooBig = await grow('c')
  t.equal(tooBig.statusCode, 413)
  t.strictSame(tooBig.json(), { statusCode: 413, error: 'Payload Too Large', message: 'The merged cat would be larger than 1024 bytes', code: 'CATS_ERR_CAT_TOO_LARGE' })
  t.strictSame(Object.keys((await app.inject('/cats/1')).json()), ['id', 'name', 'age', 'breed', 'a', 'b'])
  t.equal((await grow('a')).statusCode, 200, 'replacing a field of the same size still fits')
})

t.test('bounded memory: above WRITE_HEAP_RATIO creates and updates get 507, reads and deletes go on', async (t) => {
  const app = await build(t, { WRITE_HEAP_RATIO: 0.000001 })
  // under-pressure samples the heap once a second.
  await new Promise((resolve) => setTimeout(resolve, 1200))
  const created = await app.inject({ method: 'POST', url: '/cats', payload: { name: 'Tom', age: 1, breed: 'x' } })
  t.equal(created.statusCode, 507)
  t.strictSame(created.json(), { statusCode: 507, error: 'Insufficient Storage', message: 'The server is low on memory; delete some cats first', code: 'CATS_ERR_LOW_MEMORY' })
  t.equal((await app.inject({ method: 'PUT', url: '/cats/1', payload: { age: 2 } })).statusCode, 507)
  t.equal((await app.inject('/cats')).statusCode, 200)
  t.equal((await app.inject({ method: 'DELETE', url: '/cats/1' })).statusCode, 200)
})

t.test('REDIS_URL: when the shared failure counters are unreachable, login answers 503 at once', async (t) => {
  // Port 1 on loopback refuses connections: the limiter fails fast instead of queueing or hanging.
  const app = await build(t, { REDIS_URL: 'redis://127.0.0.1:1' })
  const res = await login(app, 'john', 'changeme')
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '5')
  t.strictSame(res.json(), { statusCode: 503, error: 'Service Unavailable', message: 'Login is unavailable: the rate limit store cannot be reached', code: 'AUTH_ERR_LIMITER_UNAVAILABLE' })
  t.equal((await app.inject('/cats')).statusCode, 200, 'other routes are unaffected')
})
