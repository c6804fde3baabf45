import t from 'tap'
import Fastify from 'fastify'
import { FastifyOtelInstrumentation } from '@fastify/otel'
import { context, propagation, trace } from '@opentelemetry/api'
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-node'
import serviceApp from '../src/app.js'
import { testConfig } from './support/app.js'
import { cheapDemoUsers } from './support/cheap-users.js'
import { pgliteCopy } from './support/pglite-template.js'

// Embedded, the plugin makes its spans through @opentelemetry/api and the host owns the SDK: with none registered
// the plugin makes none and works as ever; once the host registers one (here after the plugin was registered),
// the host's request spans get the plugin's children (password hash, SQL) and the user of the token.

const exporter = new InMemorySpanExporter()
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
const host = Fastify({ pluginTimeout: 60_000 })
// The host's own request spans, with @fastify/otel's defaults (a span per hook too).
await host.register(new FastifyOtelInstrumentation().plugin())
await host.register(serviceApp, {
  prefix: '/api',
  config: { ...testConfig, CATS_AUTH: 'required', DATABASE_URL: `pglite://${await pgliteCopy(t)}` },
  users: await cheapDemoUsers()
})
t.teardown(async () => {
  await host.close()
  await provider.shutdown()
  trace.disable()
  context.disable()
  propagation.disable()
})

/** A login, a create and a PUT; the PUT's status. */
async function flow (): Promise<number> {
  const login = await host.inject({ method: 'POST', url: '/api/auth/login', payload: { username: 'john', password: 'changeme' } })
  const headers = { authorization: `Bearer ${login.json().access_token}` }
  const created = await host.inject({ method: 'POST', url: '/api/cats', headers, payload: { name: 'Tom', age: 3, breed: 'x' } })
  const put = await host.inject({ method: 'PUT', url: `/api/cats/${created.json().id}`, headers, payload: { age: 4 } })
  return put.statusCode
}

t.test('no SDK registered: the plugin serves as ever and makes no span', async (t) => {
  t.equal(await flow(), 200)
  t.strictSame(exporter.getFinishedSpans(), [])
})

t.test('the host registers its SDK: the plugin\'s spans join the host\'s request spans', async (t) => {
  provider.register()
  t.equal(await flow(), 200)
  const spans = exporter.getFinishedSpans()
  const parentOf = (span: ReadableSpan): ReadableSpan | undefined => spans.find((other) => other.spanContext().spanId === span.parentSpanContext?.spanId)
  const requestOf = (span: ReadableSpan): ReadableSpan | undefined => {
    const parent = parentOf(span)
    return parent === undefined || parent.name === 'request' ? parent : requestOf(parent)
  }

  const hash = spans.find(({ name }) => name === 'password hash')
  t.equal(hash === undefined ? undefined : requestOf(hash)?.attributes['http.route'], '/api/auth/login', 'the password hash, inside the login')
  const merge = spans.find(({ name }) => name === 'cats_merge_many_versioned')
  const put = merge === undefined ? undefined : requestOf(merge)
  t.equal(put?.attributes['http.route'], '/api/cats/:id', 'the SQL statement (PGlite), inside the PUT')
  t.equal(merge?.attributes['db.system.name'], 'postgresql')
  t.equal(put?.attributes['enduser.id'], '1', 'the user on the request span, not on the guard\'s hook span')
  t.ok(spans.filter(({ attributes }) => 'enduser.id' in attributes).every(({ name }) => name === 'request'))
})

t.test('a host without @fastify/otel (its server span active, as instrumentation-http keeps it): the user on that span', async (t) => {
  const plain = Fastify({ pluginTimeout: 60_000 })
  await plain.register(serviceApp, { prefix: '/api', config: testConfig, users: await cheapDemoUsers() })
  t.teardown(() => plain.close())
  const login = await plain.inject({ method: 'POST', url: '/api/auth/login', payload: { username: 'maria', password: 'guess' } })
  const headers = { authorization: `Bearer ${login.json().access_token}` }
  exporter.reset()
  await trace.getTracer('host-http').startActiveSpan('GET', async (server) => {
    t.equal((await plain.inject({ url: '/api/profile', headers })).statusCode, 200)
    server.end()
  })
  t.match(exporter.getFinishedSpans(), [{ name: 'GET', attributes: { 'enduser.id': '3' } }])
})
