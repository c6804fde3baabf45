import t, { type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import Fastify from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import { Registry } from 'prom-client'
import { createSigner, createVerifier } from 'fast-jwt'
import app from '../../src/app.js'
import { loadConfig, type ConfigInput } from '../../src/config.js'
import { serverOptions } from '../../src/http/server-options.js'
import { createBaselineServer } from '../../bench/baseline-server.js'

// The benchmark compares the service with bench/baseline-server.ts; these tests
// keep the comparison fair: for the benchmarked requests the baseline answers
// exactly what the service answers (status, body bytes, the headers that matter).

const SECRET = 'baseline-test-secret-with-at-least-32-characters'

interface Call {
  method?: string
  url: string
  headers?: Record<string, string>
  body?: string
}

interface Reply {
  status: number
  body: string
  /** Every response header but the connection's own and the date; a request id the server made up shows as NEW_ID. */
  headers: Record<string, string>
}

interface Pair {
  service: (call: Call) => Promise<Reply>
  baseline: (call: Call) => Promise<Reply>
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const NEW_ID = '(a new UUID)'
// Set by the connection (keep-alive over a socket, none with inject) or the clock, not by the route.
const CONNECTION_HEADERS = new Set(['connection', 'keep-alive', 'date', 'transfer-encoding'])

/** The headers to compare, in name order; the echoed request id as sent, a made-up one as NEW_ID. */
function comparable (call: Call, headers: Iterable<[string, string]>): Record<string, string> {
  const sentId = call.headers?.['x-request-id']
  const kept = [...headers].filter(([name]) => !CONNECTION_HEADERS.has(name)).map(([name, value]): [string, string] =>
    name === 'x-request-id' && value !== sentId && UUID.test(value)
      ? [name, NEW_ID]
      // Each store's versions begin with its own random prefix: the change number after it must agree.
      : name === 'etag' ? [name, value.replace(/"[\w-]+\./, '"…')] : [name, value])
  return Object.fromEntries(kept.sort(([a], [b]) => a.localeCompare(b)))
}

/** The service and the baseline with the same settings; with `metrics`, each observes its responses on its registry. */
async function setup (t: Test, settings: Partial<ConfigInput> = {}, metrics?: { service: Registry, baseline: Registry }): Promise<Pair> {
  // The server options of the standalone server, which the benchmark runs: its request-id rule among them.
  const serviceConfig: ConfigInput = { ...settings, JWT_SECRET: SECRET, LOG_LEVEL: 'silent' }
  const config = loadConfig(serviceConfig)
  const service = Fastify(serverOptions(config))
  await service.register(app, { config: serviceConfig, ...(metrics !== undefined && { metrics: { registry: metrics.service } }) })
  await service.ready()
  t.teardown(() => service.close())

  const baseline = createBaselineServer(config, metrics?.baseline)
  await new Promise<void>((resolve) => baseline.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    baseline.closeAllConnections()
    baseline.close()
  })
  const address = baseline.address()
  const origin = address !== null && typeof address === 'object' ? `http://127.0.0.1:${address.port}` : ''

  return {
    async service (call) {
      const res = await service.inject({ method: call.method ?? 'GET', url: call.url, headers: call.headers, payload: call.body })
      return { status: res.statusCode, body: res.body, headers: comparable(call, Object.entries(res.headers).map(([name, value]) => [name, String(value)])) }
    },
    async baseline (call) {
      const res = await fetch(origin + call.url, { method: call.method ?? 'GET', headers: call.headers, body: call.body })
      return { status: res.status, body: await res.text(), headers: comparable(call, res.headers.entries()) }
    }
  }
}

/** Both answer `status` with the same body bytes and headers. */
async function same (t: Test, pair: Pair, call: Call, status: number): Promise<Reply> {
  const service = await pair.service(call)
  const baseline = await pair.baseline(call)
  const what = `${call.method ?? 'GET'} ${call.url}`
  t.equal(service.status, status, `service: ${what}`)
  t.strictSame(baseline, service, `baseline answers as the service: ${what}`)
  return service
}

/** Both answer `status`; 400s carry the same validation entries (messages may be worded differently). */
async function sameStatus (t: Test, pair: Pair, call: Call, status: number): Promise<void> {
  const service = await pair.service(call)
  const baseline = await pair.baseline(call)
  const what = `${call.method ?? 'GET'} ${call.url} ${call.body ?? ''}`
  t.equal(service.status, status, `service: ${what}`)
  t.equal(baseline.status, status, `baseline: ${what}`)
  t.equal(baseline.headers['content-type'], service.headers['content-type'], `content type: ${what}`)
  const fields = (reply: Reply): unknown => {
    const body: unknown = JSON.parse(reply.body)
    const validation = typeof body === 'object' && body !== null && 'validation' in body ? body.validation : undefined
    return Array.isArray(validation) ? validation.map((issue: unknown) => JSON.stringify(issue)).sort() : undefined
  }
  if (status === 400 && !what.includes('/auth/login')) t.strictSame(fields(baseline), fields(service), `validation: ${what}`)
}

const json = { 'content-type': 'application/json' }
// With a token id and a session id, as the service signs them.
const sign = (payload: Record<string, unknown>, key = SECRET): string =>
  createSigner({ key, algorithm: 'HS256', expiresIn: 60_000 })({ jti: randomUUID(), sid: randomUUID(), ...payload })
const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` })

t.test('the benchmarked requests get the same status, body and headers', async (t) => {
  const pair = await setup(t)
  await same(t, pair, { url: '/profile', headers: bearer(sign({ sub: 1, username: 'john' })) }, 200)
  await same(t, pair, { url: '/profile', headers: bearer(sign({ sub: 1, username: 'john' }, 'another-secret-that-is-long-enough-32')) }, 401)
  await same(t, pair, { url: '/profile' }, 401)
  await same(t, pair, { url: '/profile', headers: { authorization: 'Basic am9objpjaGFuZ2VtZQ==' } }, 401)

  const cats = [
    { name: 'Tom', age: 3, breed: 'Siamese' },
    { name: 'Kitty', age: 1, breed: 'Persian', extra: 'dropped' },
    { name: 'Felix', age: 7, breed: 'Bengal' }
  ]
  for (const cat of cats) await same(t, pair, { method: 'POST', url: '/cats', headers: json, body: JSON.stringify(cat) }, 201)
  await same(t, pair, { url: '/cats/2' }, 200)
  t.equal((await same(t, pair, { url: '/cats/99' }, 200)).body, '', 'a missing cat is an empty 200')
  await same(t, pair, { url: '/cats' }, 200)
  await same(t, pair, { url: '/cats?page=1' }, 200)

  const update = { method: 'PUT', headers: json, body: JSON.stringify({ age: 4, name: 'Felix', id: 9 }) }
  await same(t, pair, { ...update, url: '/cats/1' }, 200)
  t.equal((await same(t, pair, { ...update, url: '/cats/99' }, 200)).body, '')
  await same(t, pair, { method: 'DELETE', url: '/cats/3' }, 200)
  await same(t, pair, { method: 'DELETE', url: '/cats/99' }, 200)
  await same(t, pair, { url: '/cats' }, 200)

  const login = (password: string): Call => ({ method: 'POST', url: '/auth/login', headers: json, body: JSON.stringify({ username: 'john', password }) })
  await same(t, pair, login('wrong'), 401)
  const service = await pair.service(login('changeme'))
  const baseline = await pair.baseline(login('changeme'))
  t.equal(baseline.status, service.status)
  t.equal(baseline.headers['content-type'], service.headers['content-type'])
  const verify = createVerifier({ key: SECRET, algorithms: ['HS256'] })
  const tokenClaims = (reply: Reply): unknown => {
    const body: unknown = JSON.parse(reply.body)
    if (typeof body !== 'object' || body === null || !('access_token' in body) || typeof body.access_token !== 'string') return undefined
    const { sub, username, iat, exp }: Record<string, unknown> = verify(body.access_token)
    return { ...body, access_token: { sub, username, lifetime: Number(exp) - Number(iat) } }
  }
  t.strictSame(tokenClaims(baseline), tokenClaims(service))
  t.match(tokenClaims(service), { token_type: 'Bearer', expires_in: 3600, access_token: { sub: 1, username: 'john', lifetime: 3600 } })

  await same(t, pair, { url: '/nowhere?x=1' }, 404)
  const reply = await same(t, pair, { url: '/cats/1', headers: { 'x-request-id': 'not-a-uuid' } }, 200)
  t.equal(reply.headers['x-request-id'], NEW_ID, 'an id that is not a UUID is replaced')
  t.strictSame(Object.keys(reply.headers), [
    'content-length', 'content-security-policy', 'content-type', 'cross-origin-resource-policy', 'etag', 'referrer-policy', 'strict-transport-security',
    'x-content-type-options', 'x-frame-options', 'x-request-id'
  ], 'the security headers are among those compared')
  const id = randomUUID()
  t.equal((await same(t, pair, { url: '/cats/1', headers: { 'x-request-id': id } }, 200)).headers['x-request-id'], id, 'a UUID is echoed')
  await same(t, pair, { method: 'PATCH', url: '/profile' }, 405)
  await same(t, pair, { method: 'POST', url: '/cats/1' }, 405)
})

t.test('a client that prefers Problem Details gets the same ones from both', async (t) => {
  const pair = await setup(t)
  const problem = { accept: 'application/problem+json' }
  await same(t, pair, { url: '/profile', headers: problem }, 401)
  await same(t, pair, { url: '/nowhere?x=1', headers: problem }, 404)
  // Validation messages are worded by each: the content type and the fields are compared.
  await sameStatus(t, pair, { method: 'POST', url: '/cats', headers: { ...problem, ...json }, body: '{"name":"Tom","age":"3"}' }, 400)
  await sameStatus(t, pair, { method: 'PUT', url: '/cats/1', headers: { ...problem, ...json }, body: JSON.stringify({ age: 4, nested: { constructor: 1 } }) }, 400)
})

t.test('tokens the guard refuses get the same 401', async (t) => {
  const pair = await setup(t)
  const refused = [
    sign({ sub: '1', username: 'john' }),
    sign({ sub: 1.5, username: 'john' }),
    sign({ sub: 1, username: 'chris' }),
    sign({ sub: 1, username: '' }),
    sign({ sub: true, username: 'john' }),
    createSigner({ key: SECRET, algorithm: 'HS512' })({ sub: 1, username: 'john', exp: Math.floor(Date.now() / 1000) + 60 }),
    createSigner({ key: SECRET, clockTimestamp: Date.now() - 7_200_000, expiresIn: 60_000 })({ sub: 1, username: 'john' }),
    createSigner({ key: SECRET, expiresIn: 7_200_000 })({ sub: 1, username: 'john', jti: randomUUID(), sid: randomUUID() }),
    createSigner({ key: SECRET, clockTimestamp: Date.now() + 600_000, expiresIn: 60_000 })({ sub: 1, username: 'john', jti: randomUUID(), sid: randomUUID() }),
    createSigner({ key: SECRET, expiresIn: 60_000 })({ sub: 1, username: 'john', sid: randomUUID() }),
    createSigner({ key: SECRET, expiresIn: 60_000 })({ sub: 1, username: 'john', jti: randomUUID(), sid: 'x'.repeat(65) }),
    'not-a-token'
  ]
  for (const token of refused) await same(t, pair, { url: '/profile', headers: bearer(token) }, 401)
})

t.test('a token logged out is refused by both', async (t) => {
  const pair = await setup(t)
  const token = sign({ sub: 1, username: 'john' })
  for (const side of ['service', 'baseline'] as const) {
    const logout = { method: 'POST', url: '/auth/logout', headers: bearer(token) }
    const first = await pair[side](logout)
    t.equal(first.status, 204, side)
    t.strictSame(first, await pair[side === 'service' ? 'baseline' : 'service']({ ...logout, headers: bearer(sign({ sub: 1, username: 'john' })) }),
      'the other answers a logout the same way')
  }
  await same(t, pair, { url: '/profile', headers: bearer(token) }, 401)
  await same(t, pair, { method: 'POST', url: '/auth/logout', headers: bearer(token) }, 401)
  await same(t, pair, { method: 'POST', url: '/auth/logout' }, 401)
})

t.test('bad requests get the same statuses', async (t) => {
  const pair = await setup(t)
  await sameStatus(t, pair, { url: '/cats/abc' }, 400)
  await sameStatus(t, pair, { url: '/cats/' }, 400)
  await sameStatus(t, pair, { method: 'DELETE', url: '/cats/1.5' }, 400)
  const post = (body: string, headers = json): Call => ({ method: 'POST', url: '/cats', headers, body })
  await sameStatus(t, pair, post(JSON.stringify({ name: 1, age: '3' })), 400)
  await sameStatus(t, pair, post(JSON.stringify({ name: 'Tom', age: 3.5, breed: 'x' })), 400)
  await sameStatus(t, pair, post('[]'), 400)
  await sameStatus(t, pair, post('{'), 400)
  await sameStatus(t, pair, post('hello', { 'content-type': 'text/plain' }), 415)
  await sameStatus(t, pair, post(JSON.stringify({ name: 'x'.repeat(20_000), age: 1, breed: 'x' })), 413)
  await sameStatus(t, pair, post(JSON.stringify({ name: 'Tom', age: 3, breed: 'x' })), 201)
  const put = (body: string): Call => ({ method: 'PUT', url: '/cats/1', headers: json, body })
  await sameStatus(t, pair, put('[1]'), 400)
  await sameStatus(t, pair, put(JSON.stringify({ age: 4, nested: { constructor: 1 } })), 400)
  const login = (body: string): Call => ({ method: 'POST', url: '/auth/login', headers: json, body })
  await sameStatus(t, pair, login(JSON.stringify({ username: 'john' })), 400)
  await sameStatus(t, pair, login('"john"'), 400)
})

t.test('limits: a full collection and a full hash queue', async (t) => {
  const pair = await setup(t, { CATS_MAX: 1, HASH_CONCURRENCY: 1, HASH_QUEUE_MAX: 0, JWT_EXPIRES_IN: '1m', BODY_LIMIT: 1024 })
  const cat = { method: 'POST', url: '/cats', headers: json, body: JSON.stringify({ name: 'Tom', age: 3, breed: 'x' }) }
  await same(t, pair, cat, 201)
  await same(t, pair, cat, 507)

  const login: Call = { method: 'POST', url: '/auth/login', headers: json, body: JSON.stringify({ username: 'maria', password: 'guess' }) }
  for (const side of ['service', 'baseline'] as const) {
    const replies = await Promise.all([pair[side](login), pair[side](login)])
    const busy = replies.find((reply) => reply.status === 503)
    const done = replies.find((reply) => reply.status === 200)
    t.ok(busy !== undefined && done !== undefined, `${side}: one login runs, the other is refused`)
    t.match(JSON.parse(String(busy?.body)), { statusCode: 503, error: 'Service Unavailable', message: 'Too many logins in progress; retry shortly', code: 'AUTH_ERR_LOGINS_IN_PROGRESS' })
    t.equal(busy?.headers['retry-after'], '1')
    t.match(JSON.parse(String(done?.body)), { token_type: 'Bearer', expires_in: 60 })
  }
})

t.test('with metrics on, both count every response under the same method, route pattern and status', async (t) => {
  const registries = { service: new Registry(), baseline: new Registry() }
  const pair = await setup(t, {}, registries)
  const calls: Call[] = [
    { url: '/profile', headers: bearer(sign({ sub: 1, username: 'john' })) },
    { url: '/profile' },
    { method: 'POST', url: '/cats', headers: json, body: JSON.stringify({ name: 'Tom', age: 3, breed: 'Siamese' }) },
    { url: '/cats/1' },
    { url: '/cats/1?x=1' },
    { url: '/cats/99' },
    { url: '/cats/abc' },
    { method: 'PUT', url: '/cats/1', headers: json, body: JSON.stringify({ age: 4 }) },
    { method: 'DELETE', url: '/cats/1' },
    { url: '/cats' },
    { url: '/nowhere' },
    { method: 'PATCH', url: '/profile' }
  ]
  for (const call of calls) {
    await pair.service(call)
    await pair.baseline(call)
  }
  const counts = async (registry: Registry): Promise<string[]> =>
    (await registry.metrics()).split('\n').filter((line) => line.startsWith('cats_api_http_request_duration_seconds_count')).sort()
  // The baseline observes a response once it is sent, which may be just after its client has read it.
  for (let waited = 0; waited < 2000 && (await counts(registries.baseline)).length < (await counts(registries.service)).length; waited += 10) await sleep(10)
  const service = await counts(registries.service)
  t.strictSame(await counts(registries.baseline), service)
  t.equal(service.length, 10, 'one series per method, route pattern and status')
  t.ok(service.includes('cats_api_http_request_duration_seconds_count{method="GET",route="/cats/:id",status_code="200"} 3'), service.join('\n'))
  t.ok(service.includes('cats_api_http_request_duration_seconds_count{method="PATCH",route="unmatched",status_code="405"} 1'), 'a known path with another method: unmatched, 405')
})

t.test('given the service\'s settings, the baseline\'s node:http server has the service\'s timeouts and header limit', async (t) => {
  const config = loadConfig({
    JWT_SECRET: SECRET,
    LOG_LEVEL: 'silent',
    CONNECTION_TIMEOUT_MS: '12345',
    KEEP_ALIVE_TIMEOUT_MS: '2345',
    REQUEST_TIMEOUT_MS: '23456',
    HEADERS_TIMEOUT_MS: '3456',
    MAX_HEADER_BYTES: '8000'
  })
  const service = Fastify(serverOptions(config))
  t.teardown(() => service.close())
  const baseline = createBaselineServer(config)
  t.teardown(() => baseline.close())
  const settings = (server: typeof baseline): number[] => [server.timeout, server.keepAliveTimeout, server.requestTimeout, server.headersTimeout]
  t.strictSame(settings(service.server), [12345, 2345, 23456, 3456])
  t.strictSame(settings(baseline), settings(service.server))
})
