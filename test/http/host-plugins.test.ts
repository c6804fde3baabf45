import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import fastifyMultipart from '@fastify/multipart'
import fastifyRateLimit from '@fastify/rate-limit'
import serviceApp from '../../src/app.js'
import { testConfig } from '../support/app.js'

// The service inside a host whose plugins sit at the host's root, as fastify/demo registers them: what reaches the
// service's routes must still be answered with the service's documented statuses and codes.

const credentials = { username: 'john', password: 'changeme' }

/** A multipart/form-data body of text fields. */
function multipart (fields: Record<string, string>): { payload: string, headers: Record<string, string> } {
  const boundary = '----host-plugins-test'
  const parts = Object.entries(fields).map(([name, value]) => `--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`)
  return { payload: `${parts.join('')}--${boundary}--\r\n`, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}

async function ready (t: Test, host: FastifyInstance): Promise<FastifyInstance> {
  await host.ready()
  t.teardown(() => host.close())
  return host
}

t.test('a host\'s global @fastify/rate-limit: its 429 on the service\'s routes carries the service\'s 429 code', async (t) => {
  const host = Fastify()
  await host.register(fastifyRateLimit, { max: 2, timeWindow: '1 minute' })
  host.get('/hello', async () => ({ hello: true }))
  await host.register(serviceApp, { prefix: '/api', config: testConfig })
  await ready(t, host)

  for (let i = 0; i < 2; i++) t.equal((await host.inject('/api/cats')).statusCode, 200, 'within the host\'s limit')
  const limited = await host.inject('/api/cats')
  t.equal(limited.statusCode, 429, 'the host\'s limit counts the service\'s routes')
  t.strictSame(limited.json(), { statusCode: 429, error: 'Too Many Requests', message: 'Rate limit exceeded, retry in 1 minute', code: 'HTTP_ERR_TOO_MANY_REQUESTS' })
  t.equal(limited.headers['retry-after'], '60', 'the limit\'s own Retry-After is kept')
  t.equal(limited.headers['x-ratelimit-limit'], '2')

  const problem = await host.inject({ url: '/api/cats/1', headers: { accept: 'application/problem+json' } })
  t.equal(problem.statusCode, 429)
  t.match(problem.headers['content-type'], /^application\/problem\+json/)
  t.match(problem.json(), { status: 429, code: 'HTTP_ERR_TOO_MANY_REQUESTS', instance: '/api/cats/1' }, 'as Problem Details on request')

  const own = await host.inject('/hello')
  t.equal(own.statusCode, 429, 'the host\'s own route')
  t.equal(own.json().code, undefined, 'keeps the host\'s own error shape')
})

t.test('a host\'s rate limit that exempts the service\'s login and refresh, as docs/embedding.md says, leaves logins alone', async (t) => {
  const exempt = new Set(['/api/auth/login', '/api/auth/refresh'])
  const host = Fastify()
  await host.register(fastifyRateLimit, { max: 2, timeWindow: '1 minute', allowList: (request) => exempt.has(request.routeOptions.url ?? '') })
  await host.register(serviceApp, { prefix: '/api', config: { ...testConfig, REFRESH_TOKENS: 'true' } })
  await ready(t, host)

  let refreshToken = ''
  for (let i = 0; i < 5; i++) {
    const login = await host.inject({ method: 'POST', url: '/api/auth/login', payload: credentials })
    t.equal(login.statusCode, 200, `login ${i + 1}`)
    refreshToken = login.json().refresh_token
  }
  for (let i = 0; i < 3; i++) {
    const refreshed = await host.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refresh_token: refreshToken } })
    t.equal(refreshed.statusCode, 200, `refresh ${i + 1}`)
    refreshToken = refreshed.json().refresh_token
  }
  await host.inject('/api/cats')
  await host.inject('/api/cats')
  t.equal((await host.inject('/api/cats')).statusCode, 429, 'the other routes still count')
})

t.test('the host\'s body parsers do not reach the service: any type but JSON is a 415', async (t) => {
  const host = Fastify()
  await host.register(fastifyMultipart)
  host.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))))
  })
  host.post('/upload', async (request) => {
    const fields: Record<string, unknown> = {}
    for await (const part of request.parts()) if (part.type === 'field') fields[part.fieldname] = part.value
    return fields
  })
  host.post('/form', async (request) => request.body)
  await host.register(serviceApp, { prefix: '/api', config: testConfig })
  await ready(t, host)

  const cat = { name: 'Tom', age: '3', breed: 'tabby' }
  const unsupported = { statusCode: 415, error: 'Unsupported Media Type', code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' }
  for (const [method, url] of [['POST', '/api/cats'], ['PUT', '/api/cats/1'], ['POST', '/api/auth/login']] as const) {
    const asMultipart = await host.inject({ method, url, ...multipart(method === 'POST' && url.endsWith('login') ? credentials : cat) })
    t.equal(asMultipart.statusCode, 415, `multipart ${method} ${url}`)
    t.match(asMultipart.json(), unsupported)
    const asForm = await host.inject({ method, url, payload: new URLSearchParams(cat).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    t.equal(asForm.statusCode, 415, `form ${method} ${url}`)
  }
  const patch = await host.inject({ method: 'PATCH', url: '/api/cats/1', ...multipart(cat) })
  t.equal(patch.statusCode, 415, 'multipart PATCH')

  // JSON still works, and the host keeps its parsers.
  t.equal((await host.inject({ method: 'POST', url: '/api/cats', payload: { name: 'Tom', age: 3, breed: 'tabby' } })).statusCode, 201)
  t.equal((await host.inject({ method: 'POST', url: '/api/auth/login', payload: credentials })).statusCode, 200)
  const upload = await host.inject({ method: 'POST', url: '/upload', ...multipart({ note: 'hi' }) })
  t.strictSame([upload.statusCode, upload.json()], [200, { note: 'hi' }], 'the host\'s multipart route')
  const form = await host.inject({ method: 'POST', url: '/form', payload: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.strictSame([form.statusCode, form.json()], [200, { a: '1' }], 'the host\'s form route')
})

t.test('a host\'s catch-all parser does not reach the service either', async (t) => {
  const host = Fastify()
  host.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => { done(null, String(body)) })
  host.post('/anything', async (request) => ({ got: request.body }))
  await host.register(serviceApp, { prefix: '/api', config: testConfig })
  await ready(t, host)
  const res = await host.inject({ method: 'POST', url: '/api/cats', payload: 'name=Tom', headers: { 'content-type': 'application/octet-stream' } })
  t.equal(res.statusCode, 415)
  t.strictSame((await host.inject({ method: 'POST', url: '/anything', payload: 'x', headers: { 'content-type': 'application/octet-stream' } })).json(), { got: 'x' })
})

t.test('JSON is parsed as the host\'s server options say', async (t) => {
  const strict = await ready(t, await registered(Fastify()))
  const body = '{"name":"Tom","age":3,"breed":"tabby","__proto__":{"x":1}}'
  const headers = { 'content-type': 'application/json' }
  t.equal((await strict.inject({ method: 'POST', url: '/api/cats', payload: body, headers })).statusCode, 400, 'Fastify\'s default: __proto__ is an error')
  const lenient = await ready(t, await registered(Fastify({ onProtoPoisoning: 'remove' })))
  const created = await lenient.inject({ method: 'POST', url: '/api/cats', payload: body, headers })
  t.strictSame([created.statusCode, created.json()], [201, { id: 1, name: 'Tom', age: 3, breed: 'tabby' }], 'onProtoPoisoning: remove drops the key')
})

async function registered (host: FastifyInstance): Promise<FastifyInstance> {
  await host.register(serviceApp, { prefix: '/api', config: testConfig })
  return host
}

t.test('a host\'s own 503 on the service\'s routes (its load shedding at the root) is the service\'s documented overload', async (t) => {
  const host = Fastify()
  // As @fastify/under-pressure throws when the host sheds load: a 503 of a code the service does not know.
  host.addHook('onRequest', async (request) => {
    if (request.headers['x-shed'] !== undefined) {
      throw Object.assign(new Error('Service Unavailable'), { statusCode: 503, code: 'FST_UNDER_PRESSURE', retryAfter: request.headers['x-shed'] === 'later' ? 30 : undefined })
    }
  })
  await host.register(serviceApp, { prefix: '/api', config: testConfig })
  await ready(t, host)
  const shed = await host.inject({ url: '/api/cats', headers: { 'x-shed': 'now' } })
  t.strictSame([shed.statusCode, shed.json()], [503, { statusCode: 503, error: 'Service Unavailable', message: 'The server is overloaded; retry shortly', code: 'HTTP_ERR_OVERLOADED' }])
  t.equal(shed.headers['retry-after'], '10', 'with the service\'s Retry-After')
  const later = await host.inject({ url: '/api/cats', headers: { 'x-shed': 'later' } })
  t.equal(later.headers['retry-after'], '30', 'or the host\'s, when it gave one')
  t.equal((await host.inject('/api/cats')).statusCode, 200)
})
