import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import type { AppOptions } from '../../src/app-options.js'
import { loadConfig, type ConfigInput } from '../../src/config.js'
import { serverOptions } from '../../src/http/server-options.js'
import { ClientErrorsUnset, startTracing, type Tracing } from '../../src/tracing/sdk.js'
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node'
import type { TracesSettings } from '../../src/tracing/settings.js'
import { logCapture, testConfig, unencapsulatedApp } from '../support/app.js'
import { cheapDemoUsers } from '../support/cheap-users.js'
import { otlpReceiver, spanTree, type ReceivedSpan } from '../support/otlp-receiver.js'

// The standalone server's SDK, started in this process as src/server.ts starts it, the app served on a real
// socket: request spans, the incoming traceparent continued, ids in the log lines, OTLP over HTTP in JSON and
// protobuf, the console exporter, export failures logged, and the last spans sent at shutdown.

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT_ID = '00f067aa0ba902b7'
const traceparent = `00-${TRACE_ID}-${PARENT_ID}-01`

interface TracedServer {
  base: string
  tracing: Tracing
  logs: () => Array<Record<string, unknown>>
}

/**
 * The app as the standalone server runs it, with tracing started from `settings` and the OTEL_* variables in `env`
 * (the exporters read them when they are made). Closed and its tracing shut down on teardown if the test did not.
 */
async function tracedServer (t: Test, settings: TracesSettings, env: Record<string, string>, config: Partial<ConfigInput> = {},
  options: Pick<AppOptions, 'validateToken'> = {}): Promise<TracedServer> {
  const { stream, text } = logCapture()
  const appConfig = loadConfig({ ...testConfig, LOG_LEVEL: 'info', CATS_AUTH: 'required', ...config })
  const server: FastifyInstance = Fastify(serverOptions(appConfig, stream, { traceIds: true }))
  const saved = Object.fromEntries(Object.keys(env).map((name) => [name, process.env[name]]))
  Object.assign(process.env, env)
  const tracing = startTracing(settings, server.log)
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) Reflect.deleteProperty(process.env, name)
    else process.env[name] = value
  }
  let shutDown = false
  const shutdown = tracing.shutdown
  tracing.shutdown = async () => {
    shutDown = true
    await shutdown()
  }
  t.teardown(async () => {
    await server.close()
    if (!shutDown) await shutdown()
  })
  await server.register(tracing.requestSpans)
  await server.register(unencapsulatedApp, { config: appConfig, users: await cheapDemoUsers(), ...options })
  const base = await server.listen({ host: '127.0.0.1', port: 0 })
  const logs = (): Array<Record<string, unknown>> => text().trim().split('\n').map((line) => JSON.parse(line))
  return { base, tracing, logs }
}

async function login (base: string): Promise<string> {
  const response = await fetch(`${base}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'john', password: 'changeme' })
  })
  const { access_token: token } = await response.json() as { access_token: string }
  return token
}

const child = (spans: ReceivedSpan[], parent: ReceivedSpan | undefined): ReceivedSpan[] => spans.filter(({ parentSpanId }) => parentSpanId === parent?.spanId)

t.test('OTLP/JSON: a span per request, continuing the incoming trace; its children; ids in the log lines', async (t) => {
  const receiver = await otlpReceiver(t)
  const { base, tracing, logs } = await tracedServer(t, { exporters: ['otlp'], protocol: 'http/json' }, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint })
  const token = await login(base)
  const created = await fetch(`${base}/cats`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ name: 'Tom', age: 3, breed: 'Siamese' })
  })
  const { id } = await created.json() as { id: number }
  const put = await fetch(`${base}/cats/${id}?note=not-in-any-span`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, traceparent },
    body: JSON.stringify({ age: 4 })
  })
  t.equal(put.status, 200)
  t.equal((await fetch(`${base}/nowhere`)).status, 404)
  t.equal(receiver.requests.length, 0, 'spans are sent in batches')
  await tracing.shutdown()

  const spans = receiver.spans()
  t.comment(spanTree(spans, ({ name, attributes }) => `${name} ${JSON.stringify(attributes)}`))
  t.ok(receiver.requests.every(({ path, contentType }) => path === '/v1/traces' && contentType === 'application/json'))
  t.ok(spans.every(({ resource }) => resource['service.name'] === 'cats-auth-service'), 'service.name by default')

  const request = spans.find(({ traceId, name }) => traceId === TRACE_ID && name.startsWith('PUT'))
  t.strictSame([request?.name, request?.parentSpanId, request?.kind, request?.scope], ['PUT /cats/:id', PARENT_ID, 2, '@fastify/otel'],
    'the PUT: named for its route, the child of the incoming traceparent, a server span')
  t.match(request?.attributes, { 'http.route': '/cats/:id', 'http.request.method': 'PUT', 'http.response.status_code': 200, 'url.path': `/cats/${id}`, 'enduser.id': '1' },
    'route, status, the user, the path without its query string')
  t.strictSame(child(spans, request).map(({ name }) => name), ['handler - cats'], 'the handler span below it')

  const loginSpan = spans.find(({ name }) => name === 'POST /auth/login')
  const hash = spans.find(({ name }) => name === 'password hash')
  t.ok(hash !== undefined && spans.some(({ spanId, parentSpanId }) => spanId === hash.parentSpanId && parentSpanId === loginSpan?.spanId), 'the password hash inside the login')
  t.notOk('enduser.id' in (loginSpan?.attributes ?? {}), 'no user on a request without a token')

  const notFound = spans.find(({ attributes }) => attributes['http.response.status_code'] === 404)
  t.strictSame([notFound?.name, notFound?.attributes['http.route'], notFound?.attributes['url.path']], ['GET', undefined, '/nowhere'], 'a request no route matched: named for its method')
  t.notOk(JSON.stringify(spans).includes('not-in-any-span'), 'no query string anywhere')

  const completed = logs().find((line) => line.msg === 'request completed' && line.trace_id === TRACE_ID)
  t.equal(completed?.span_id, request?.spanId, 'the PUT\'s "request completed" line carries its trace and span ids')
  t.ok(logs().filter((line) => line.msg === 'request completed').every((line) => typeof line.trace_id === 'string' && typeof line.span_id === 'string'),
    'every request\'s completed line carries ids')
  t.ok(logs().filter((line) => line.msg === 'Server listening at ' + base || line.msg === 'incoming request').every((line) => line.trace_id === undefined),
    'lines written outside a span carry none')
})

t.test('a request answered with a 4xx leaves its span\'s status unset; a 5xx sets it to ERROR', async (t) => {
  const receiver = await otlpReceiver(t)
  const { base, tracing } = await tracedServer(t, { exporters: ['otlp'], protocol: 'http/json' }, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint }, {}, {
    validateToken: (claims) => {
      if (claims.username === 'maria') throw new Error('lookup failed')
      return { userId: claims.sub, username: claims.username }
    }
  })
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}): Promise<number> =>
    (await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })).status
  t.equal(await post('/auth/login', { username: 'john', password: 'wrong' }), 401, 'a wrong password (thrown by the route)')
  t.equal(await post('/cats', { name: 'Tom' }, { authorization: `Bearer ${await login(base)}` }), 400, 'a validation failure')
  t.equal(await post('/cats', {}), 401, 'the guard\'s 401 (answered, not thrown)')
  t.equal((await fetch(`${base}/cats/1`, { method: 'POST' })).status, 405)
  const maria = await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'maria', password: 'guess' }) })
  const { access_token: token } = await maria.json() as { access_token: string }
  t.equal((await fetch(`${base}/profile`, { headers: { authorization: `Bearer ${token}` } })).status, 500, 'a failing token check')
  await tracing.shutdown()
  const statuses = receiver.spans().filter(({ attributes }) => typeof attributes['http.response.status_code'] === 'number')
    .map(({ name, attributes, status }) => `${name} ${String(attributes['http.response.status_code'])} ${String(status.code ?? 0)}`)
  t.strictSame(statuses.sort(), [
    'GET /profile 500 2', 'POST /auth/login 200 0', 'POST /auth/login 200 0', 'POST /auth/login 401 0', 'POST /cats 400 0', 'POST /cats 401 0', 'POST 405 0'
  ], 'status code 0 (unset) for each 4xx, 2 (ERROR) for the 5xx')
})

t.test('ClientErrorsUnset hands flushes and shutdowns on', async (t) => {
  const exporter = new InMemorySpanExporter()
  let flushed = 0
  const inner = new SimpleSpanProcessor(exporter)
  const flush = inner.forceFlush.bind(inner)
  inner.forceFlush = async () => { flushed++; await flush() }
  const processor = new ClientErrorsUnset(inner)
  await processor.forceFlush()
  await processor.shutdown()
  t.equal(flushed, 1)
})

t.test('OTLP/protobuf, the specification\'s default protocol', async (t) => {
  const receiver = await otlpReceiver(t)
  const { base, tracing } = await tracedServer(t, { exporters: ['otlp'], protocol: 'http/protobuf' }, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.endpoint}/v1/traces` })
  t.equal((await fetch(`${base}/health`, { headers: { traceparent } })).status, 200)
  await tracing.shutdown()
  t.equal(receiver.requests.length, 1)
  const [{ path, contentType, body }] = receiver.requests
  t.strictSame([path, contentType], ['/v1/traces', 'application/x-protobuf'])
  t.ok(body.includes(Buffer.from(TRACE_ID, 'hex')) && body.includes(Buffer.from('GET /health')), 'the request\'s span, in the incoming trace')
})

t.test('OTEL_SERVICE_NAME names the service', async (t) => {
  const receiver = await otlpReceiver(t)
  const { base, tracing } = await tracedServer(t, { exporters: ['otlp'], protocol: 'http/json' }, {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SERVICE_NAME: 'cats-eu', OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging'
  })
  await fetch(`${base}/health`)
  await tracing.shutdown()
  t.match(receiver.spans()[0]?.resource, { 'service.name': 'cats-eu', 'deployment.environment.name': 'staging' })
})

t.test('the console exporter writes each span as it ends', async (t) => {
  const printed: unknown[] = []
  const dir = console.dir
  console.dir = (item: unknown) => { printed.push(item) }
  t.teardown(() => { console.dir = dir })
  const { base, tracing } = await tracedServer(t, { exporters: ['console'], protocol: 'http/protobuf' }, {})
  await fetch(`${base}/health`, { headers: { traceparent } })
  await tracing.shutdown()
  console.dir = dir
  t.match(printed, [{ name: 'handler - health', traceId: TRACE_ID }, { name: 'GET /health', traceId: TRACE_ID }])
})

t.test('a collector that refuses the spans: each failure is logged, the requests are served, the shutdown goes on', async (t) => {
  const receiver = await otlpReceiver(t, 400)
  const { base, tracing, logs } = await tracedServer(t, { exporters: ['otlp'], protocol: 'http/json' }, {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '10'
  })
  t.equal((await fetch(`${base}/health`)).status, 200)
  const deadline = Date.now() + 10_000
  while (!logs().some((line) => String(line.msg).startsWith('traces: ')) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
  const refused = logs().find((line) => String(line.msg).startsWith('traces: '))
  t.match(refused, { level: 40, msg: /Bad Request/ }, 'a batch refused: a warning')
  t.notOk('trace_id' in (refused ?? {}), 'without the ids of the request whose span ended last')
  t.equal((await fetch(`${base}/health`)).status, 200)
  await tracing.shutdown()
  t.match(logs().find((line) => line.msg === 'traces: the last spans could not be sent'), { level: 40, err: { code: 400 } }, 'the last batch refused: a warning')
  t.equal(receiver.requests.length, 2)
})
