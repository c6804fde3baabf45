import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { Registry, register as globalRegistry } from 'prom-client'
import serviceApp from '../../src/app.js'
import type { ConfigInput } from '../../src/config.js'
import { metricsEndpoint } from '../../src/metrics/metrics-endpoint.js'
import { loginOutcome, ServiceMetrics } from '../../src/metrics/service-metrics.js'
import { CatTooLarge, CollectionFull, LoginLimiterUnavailable, StoreUnavailable } from '../../src/errors.js'
import { build, testConfig } from '../support/app.js'
import { cheapDemoUsers } from '../support/cheap-users.js'

/** The standalone server's layout: /metrics at the root, beside the service, on a real socket. */
async function standalone (t: Test, config: Partial<ConfigInput> = {}): Promise<{ base: string, server: FastifyInstance }> {
  const server = Fastify({ logger: false })
  const metrics = { registry: new Registry() }
  await server.register(metricsEndpoint, metrics)
  await server.register(serviceApp, { config: { ...testConfig, ...config }, metrics })
  t.teardown(() => server.close())
  const base = await server.listen({ host: '127.0.0.1', port: 0 })
  return { base, server }
}

const post = async (url: string, body: unknown): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

/** The value of one sample of the exposition, e.g. `name{a="b"}`; undefined when absent. */
function sample (text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

const requests = (method: string, route: string, status: number): string =>
  `cats_api_http_request_duration_seconds_count{method="${method}",route="${route}",status_code="${status}"}`

t.test('after a known sequence of requests, /metrics counts each by route pattern and status', async (t) => {
  // One hash at a time, so of two logins sent together the second waits for the first.
  const { base } = await standalone(t, { HASH_CONCURRENCY: 1 })
  const [ok, wrong] = await Promise.all([
    post(`${base}/auth/login`, { username: 'john', password: 'changeme' }),
    post(`${base}/auth/login`, { username: 'john', password: 'wrong' })
  ])
  t.same([ok.status, wrong.status], [200, 401])
  for (const name of ['Tom', 'Kitty', 'Felix']) {
    t.equal((await post(`${base}/cats`, { name, age: 3, breed: 'Siamese' })).status, 201)
  }
  t.equal((await fetch(`${base}/no/such/route`)).status, 404)
  for (let i = 0; i < 2; i++) t.equal((await fetch(`${base}/cats/2`)).status, 200)

  const scrape = await fetch(`${base}/metrics`)
  t.equal(scrape.status, 200)
  t.match(scrape.headers.get('content-type'), /^text\/plain; version=0\.0\.4/)
  const text = await scrape.text()

  t.equal(sample(text, 'cats_api_login_attempts_total{outcome="success"}'), 1)
  t.equal(sample(text, 'cats_api_login_attempts_total{outcome="failure"}'), 1)
  t.equal(sample(text, requests('POST', '/auth/login', 200)), 1)
  t.equal(sample(text, requests('POST', '/auth/login', 401)), 1)
  t.equal(sample(text, requests('POST', '/cats', 201)), 3)
  t.equal(sample(text, requests('GET', '/cats/:id', 200)), 2, 'the route label is the pattern')
  t.equal(sample(text, requests('GET', 'unmatched', 404)), 1, 'unknown routes share one label')
  t.notMatch(text, /route="\/cats\/2"|route="\/no/, 'no raw URL becomes a label')
  t.notMatch(text, /route="\/metrics"/, 'scrapes are not counted as requests')
  t.equal(sample(text, 'cats_api_http_request_duration_seconds_bucket{le="+Inf",method="POST",route="/cats",status_code="201"}'), 3)
  t.equal(sample(text, 'cats_api_cats_stored'), 3, 'the store is counted on scrape')
  t.equal(sample(text, 'cats_api_hash_queue_wait_seconds_count'), 1, 'one login waited for a hash slot')
  t.equal(sample(text, 'cats_api_hash_queue_waiting'), 0)
  t.equal(sample(text, 'cats_api_hash_queue_refused_total'), 0)
  for (const name of ['nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_gc_duration_seconds', 'process_cpu_seconds_total']) {
    t.match(text, new RegExp(`^# TYPE ${name} `, 'm'), `process default ${name}`)
  }

  const openapi = await (await fetch(`${base}/docs/json`)).json() as { paths: Record<string, unknown> }
  t.notOk('/metrics' in openapi.paths, '/metrics is not in the OpenAPI document')
})

t.test('a login refused by the full hash queue counts as unavailable', async (t) => {
  const { base } = await standalone(t, { HASH_CONCURRENCY: 1, HASH_QUEUE_MAX: 0 })
  const statuses = (await Promise.all([1, 2].map(() => post(`${base}/auth/login`, { username: 'john', password: 'changeme' })))).map((r) => r.status)
  t.same(statuses.sort(), [200, 503])
  const text = await (await fetch(`${base}/metrics`)).text()
  t.equal(sample(text, 'cats_api_login_attempts_total{outcome="unavailable"}'), 1)
  t.equal(sample(text, 'cats_api_login_attempts_total{outcome="success"}'), 1)
  t.equal(sample(text, 'cats_api_hash_queue_refused_total'), 1)
})

t.test('sessions started, and ended by reason', async (t) => {
  const users = await cheapDemoUsers()
  const server = Fastify({ logger: false })
  const metrics = { registry: new Registry() }
  await server.register(metricsEndpoint, metrics)
  const config = { ...testConfig, REFRESH_TOKENS: true, REFRESH_REUSE_WINDOW: '0', SESSIONS_PER_USER_MAX: 3 }
  await server.register(serviceApp, { config, metrics, users })
  t.teardown(() => server.close())
  const login = async (username = 'john', password = 'changeme'): Promise<{ access_token: string, refresh_token: string }> =>
    (await server.inject({ method: 'POST', url: '/auth/login', payload: { username, password } })).json()
  const sid = (token: string): string => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).sid
  const auth = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` })

  const [first, second, third] = [await login(), await login(), await login()]
  await login() // the cap ends the first
  await server.inject({ method: 'POST', url: '/auth/logout', headers: auth(second.access_token) })
  const fifth = await login()
  await server.inject({ method: 'DELETE', url: `/auth/sessions/${sid(fifth.access_token)}`, headers: auth(third.access_token) })
  await server.inject({ method: 'POST', url: '/auth/logout?scope=others', headers: auth(third.access_token) })
  const chris = await login('chris', 'secret')
  await server.inject({ method: 'POST', url: '/auth/refresh', payload: { refresh_token: chris.refresh_token } })
  await server.inject({ method: 'POST', url: '/auth/refresh', payload: { refresh_token: chris.refresh_token } })
  t.ok(first.access_token.length > 0)

  const text = (await server.inject('/metrics')).body
  t.equal(sample(text, 'cats_api_sessions_started_total'), 6)
  for (const [reason, count] of [['cap', 1], ['logout', 1], ['owner', 1], ['logout_others', 1], ['reuse', 1]] as const) {
    t.equal(sample(text, `cats_api_sessions_ended_total{reason="${reason}"}`), count, reason)
  }
})

t.test('a full collection is counted as a store error', async (t) => {
  const { base } = await standalone(t, { CATS_MAX: 1 })
  const cat = { name: 'Tom', age: 3, breed: 'Siamese' }
  t.equal((await post(`${base}/cats`, cat)).status, 201)
  t.equal((await post(`${base}/cats`, cat)).status, 507)
  const text = await (await fetch(`${base}/metrics`)).text()
  t.equal(sample(text, 'cats_api_store_errors_total{error="collection_full"}'), 1)
  t.equal(sample(text, requests('POST', '/cats', 507)), 1)
})

t.test('embedded, the host passes its registry; routes keep the prefix and nothing is served under it', async (t) => {
  const host = Fastify({ logger: false })
  const registry = new Registry()
  await host.register(serviceApp, { prefix: '/api', config: testConfig, metrics: { registry } })
  host.get('/metrics', async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()))
  t.teardown(() => host.close())
  t.equal((await host.inject({ method: 'POST', url: '/api/cats', payload: { name: 'Tom', age: 3, breed: 'Siamese' } })).statusCode, 201)
  t.equal((await host.inject('/api/metrics')).statusCode, 404)
  const text = (await host.inject('/metrics')).body
  t.equal(sample(text, requests('POST', '/api/cats', 201)), 1)
  t.notMatch(text, /nodejs_heap_size_used_bytes/, 'the process defaults are the host\'s choice')
})

t.test('metrics off (the default): /metrics is a 404 and no metric exists', async (t) => {
  const app = await build(t)
  t.equal(app.catsMetrics, undefined)
  const response = await app.inject('/metrics')
  t.equal(response.statusCode, 404)
  t.equal(response.json().code, 'HTTP_ERR_ROUTE_NOT_FOUND')
  t.equal((await app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'john', password: 'changeme' } })).statusCode, 200)
  t.equal(globalRegistry.getMetricsAsArray().length, 0, 'nothing was registered, not even on the default registry')
})

t.test('store errors and outages are told apart; other errors are left to the status label', async (t) => {
  const registry = new Registry()
  const metrics = new ServiceMetrics(registry, { countCats: () => 0 })
  metrics.countError(new StoreUnavailable({ cause: new Error('connection refused') }))
  metrics.countError(new CollectionFull(1))
  metrics.countError(new CatTooLarge(10))
  metrics.countError(new LoginLimiterUnavailable())
  metrics.countError(new Error('anything else'))
  const text = await registry.metrics()
  t.equal(sample(text, 'cats_api_store_errors_total{error="unavailable"}'), 1)
  t.equal(sample(text, 'cats_api_store_errors_total{error="collection_full"}'), 1)
  t.equal(sample(text, 'cats_api_store_errors_total{error="cat_too_large"}'), 1)
  t.equal(sample(text, 'cats_api_dependency_errors_total{dependency="database"}'), 1)
  t.equal(sample(text, 'cats_api_dependency_errors_total{dependency="redis"}'), 1)
  t.strictSame([200, 401, 429, 503, 400, 413].map(loginOutcome), ['success', 'failure', 'rate_limited', 'unavailable', 'invalid_request', 'invalid_request'])
})

t.test('a store that fails or does not answer in time reads NaN and counts a database outage; the scrape never hangs', async (t) => {
  for (const countCats of [() => new Promise<number>(() => {}), () => { throw new StoreUnavailable({ cause: new Error('down') }) }]) {
    const registry = new Registry()
    new ServiceMetrics(registry, { countCats, countTimeoutMs: 50 }) // eslint-disable-line no-new -- its metrics live in the registry
    const started = Date.now()
    const text = await registry.metrics()
    t.ok(Date.now() - started < 5000, 'the scrape returned')
    t.ok(Number.isNaN(sample(text, 'cats_api_cats_stored')), 'the gauge reads NaN')
    // A registry collects its metrics side by side, so the outage found by one scrape shows in the next.
    const next = await registry.metrics()
    t.equal(sample(next, 'cats_api_dependency_errors_total{dependency="database"}'), 1, 'the first scrape\'s outage is counted')
  }
})
