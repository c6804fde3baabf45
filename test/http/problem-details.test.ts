import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify'
import serviceApp, { catsService } from '../../src/app.js'
import { PROBLEM_JSON, prefersProblemDetails, problemDetails, varyByAccept } from '../../src/http/problem-details.js'
import { MAX_INSTANCE_CHARS, PROBLEM_TYPE_PREFIX } from '../../src/http/error-limits.js'
import { bearer, build, testConfig, tokenFor } from '../support/app.js'
import { TcpProxy } from '../support/tcp-proxy.js'
import { adminClient, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'

// A client that prefers application/problem+json gets every error as RFC 9457 Problem Details; any
// other client gets the service's own error body, unchanged. Every response of `build` is also checked
// against the OpenAPI document, which documents both media types for each error.

const PROBLEM = { accept: 'application/problem+json' }
const json = { 'content-type': 'application/json' }

t.test('negotiation: Problem Details only when the client gives them a higher weight than application/json', async (t) => {
  const cases: Array<[accept: string | undefined, problem: boolean, why: string]> = [
    ['application/problem+json', true, 'the type alone'],
    ['application/json;q=0.5, application/problem+json', true, 'a higher weight'],
    ['application/problem+json;q=0.5, application/json', false, 'a lower weight'],
    ['application/problem+json;q=0.5', true, 'any weight when application/json is not acceptable'],
    ['application/problem+json, application/json', false, 'equal weights: a tie keeps the service body'],
    ['application/json, application/problem+json', false, 'equal weights, the other order'],
    ['application/problem+json, */*', false, 'equal weights through */*'],
    ['application/problem+json, */*;q=0.1', true, '*/* weighs less'],
    ['application/problem+json;q=0.9, application/*;q=0.5', true, 'application/* weighs less'],
    ['application/*;q=0.2, application/problem+json;q=0.5, */*;q=0.9', true, 'application/* is more specific than */* for application/json'],
    ['application/problem+json;q=0.5, application/json;q=0.1, application/json;q=0.8', false, 'a type listed twice weighs its highest'],
    ['*/*', false, '*/* alone'],
    ['application/*', false, 'application/* alone'],
    [undefined, false, 'no Accept header'],
    ['', false, 'an empty Accept header'],
    ['application/problem+json;q=0', false, 'q=0: not acceptable'],
    ['application/problem+json;q=0, */*', false, 'refused by name, accepted through */*'],
    ['APPLICATION/Problem+JSON ; Q=1', true, 'types and parameter names are case-insensitive'],
    ['application/problem+json; charset=utf-8', true, 'a parameter other than q'],
    ['text/html;level="1,2";q=0.1, application/problem+json', true, 'a comma inside a quoted parameter'],
    ['application/problem+json;q=abc', false, 'malformed: a weight that is not a number'],
    ['application/problem+json;q=2', false, 'malformed: a weight over 1'],
    ['application/problem+json;q=0.5000', false, 'malformed: more than three decimals'],
    ['problem+json', false, 'malformed: no type'],
    ['application/problem+json/x', false, 'malformed: two slashes'],
    ['*/problem+json', false, 'malformed: a subtype under the wildcard type'],
    [',,;;=, ;q=1, "problem+json', false, 'malformed: no media range at all'],
    ['text/html, application/xhtml+xml, application/xml;q=0.9, */*;q=0.8', false, 'a browser']
  ]
  for (const [accept, problem, why] of cases) t.equal(prefersProblemDetails(accept), problem, `${JSON.stringify(accept)}: ${why}`)
})

t.test('Vary gains Accept and keeps the fields already there', async (t) => {
  t.equal(varyByAccept(undefined), 'Accept')
  t.equal(varyByAccept(''), 'Accept')
  t.equal(varyByAccept('Origin'), 'Origin, Accept')
  t.equal(varyByAccept(['Origin', 'Accept-Encoding']), 'Origin, Accept-Encoding, Accept', 'Accept-Encoding is another field')
  t.equal(varyByAccept('Origin, accept'), 'Origin, accept', 'already named')
  t.equal(varyByAccept('*'), '*', 'every field already')
})

/** RFC 3986's path-abempty / path-absolute characters: what a URI reference's path may hold. */
const URI_PATH = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*$/

t.test('instance is a URI reference, cut for length at a safe boundary, never inside a percent-escape', async (t) => {
  const instance = (path: string): string => problemDetails({ statusCode: 404, error: 'Not Found', message: 'm', code: 'C' }, path).instance
  t.equal(instance('/cats/1'), '/cats/1')
  t.equal(instance('/a%2Fb/%C3%A9'), '/a%2Fb/%C3%A9', 'escapes are kept as sent')
  t.equal(instance('/caf\u00e9 s%zz%'), '/caf%C3%A9%20s%25zz%25', 'what a path may not hold, a stray % included, is encoded')
  t.equal(instance('/\ud800'), '/%EF%BF%BD', 'a lone surrogate as U+FFFD')
  for (let shift = 0; shift < 3; shift++) {
    const path = `/${'x'.repeat(shift)}${'%C3%A9'.repeat(100)}`
    const cut = instance(path)
    t.ok(cut.length <= MAX_INSTANCE_CHARS && cut.length >= MAX_INSTANCE_CHARS - 2, `shift ${shift}: ${cut.length} characters`)
    t.ok(path.startsWith(cut), 'the start of the path')
    t.match(cut, URI_PATH, 'no partial escape, no ellipsis')
  }
  const encoded = instance(`/${'é'.repeat(300)}`)
  t.match(encoded, URI_PATH, 'a path encoded past the bound is cut alike')
  t.equal(encoded.length, 199)
})

t.test('problemDetails: the same facts in RFC 9457 members, the path without its query as instance', async (t) => {
  const validation = [{ field: 'body.age', message: 'must be integer' }]
  t.strictSame(problemDetails({ statusCode: 400, error: 'Bad Request', message: 'body.age must be integer', code: 'FST_ERR_VALIDATION', validation }, '/cats?x=1'), {
    type: `${PROBLEM_TYPE_PREFIX}FST_ERR_VALIDATION`,
    title: 'Bad Request',
    status: 400,
    detail: 'body.age must be integer',
    instance: '/cats',
    code: 'FST_ERR_VALIDATION',
    validation
  })
  const long = problemDetails({ statusCode: 404, error: 'Not Found', message: 'm', code: 'C' }, `/${'a'.repeat(300)}z?${'q'.repeat(10)}`)
  t.equal(long.instance, `/${'a'.repeat(MAX_INSTANCE_CHARS - 1)}`, 'a long path is cut to its start, with no ellipsis')
  t.notOk('validation' in long, 'no validation member without issues')
})

/** Checks the answer is Problem Details of `status` and `code` for `instance`, with the headers every error has; returns its body. */
function expectProblem (t: Test, res: LightMyRequestResponse, status: number, code: string, instance: string): Record<string, unknown> {
  t.equal(res.statusCode, status)
  t.equal(res.headers['content-type'], PROBLEM_JSON)
  t.match(res.headers.vary, /\bAccept\b/)
  const body = res.json<Record<string, unknown>>()
  t.match(body, { type: `${PROBLEM_TYPE_PREFIX}${code}`, title: String, status, detail: String, instance, code })
  t.notOk('statusCode' in body || 'message' in body || 'error' in body, 'none of the service body\'s own members')
  return body
}

t.test('a validation 400 carries validation as an extension member', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'POST', url: '/cats?dry=1', headers: { ...PROBLEM, ...json }, payload: '{"name":"Tom","age":"3"}' })
  const body = expectProblem(t, res, 400, 'FST_ERR_VALIDATION', '/cats')
  t.strictSame(body, {
    type: `${PROBLEM_TYPE_PREFIX}FST_ERR_VALIDATION`,
    title: 'Bad Request',
    status: 400,
    detail: 'body must have required property \'breed\', body/age must be integer',
    instance: '/cats',
    code: 'FST_ERR_VALIDATION',
    validation: [{ field: 'body.breed', message: 'must have required property \'breed\'' }, { field: 'body.age', message: 'must be integer' }]
  })
})

t.test('the guard\'s 401s, for a missing and for an invalid token, keep WWW-Authenticate and hold no token', async (t) => {
  const app = await build(t, { CATS_AUTH: 'required' })
  const missing = await app.inject({ url: '/cats/1', headers: PROBLEM })
  t.strictSame(expectProblem(t, missing, 401, 'AUTH_ERR_MISSING_TOKEN', '/cats/1'), {
    type: `${PROBLEM_TYPE_PREFIX}AUTH_ERR_MISSING_TOKEN`, title: 'Unauthorized', status: 401, detail: 'Missing bearer token', instance: '/cats/1', code: 'AUTH_ERR_MISSING_TOKEN'
  })
  t.equal(missing.headers['www-authenticate'], 'Bearer')
  const forged = `${tokenFor(app).slice(0, -4)}AAAA`
  const invalid = await app.inject({ url: '/profile', headers: { ...PROBLEM, ...bearer(forged) } })
  expectProblem(t, invalid, 401, 'AUTH_ERR_INVALID_TOKEN', '/profile')
  t.equal(invalid.headers['www-authenticate'], 'Bearer error="invalid_token"')
  t.notOk(invalid.body.includes(forged.split('.')[1]), 'the token is not quoted')
  const plain = await app.inject({ url: '/profile', headers: bearer(forged) })
  t.equal(plain.headers['content-type'], 'application/json; charset=utf-8', 'without the preference, the service body')
  t.strictSame(plain.json(), { statusCode: 401, error: 'Unauthorized', message: 'Invalid or expired access token', code: 'AUTH_ERR_INVALID_TOKEN' })
  t.equal(plain.headers.vary, 'Accept', 'which varies by Accept too')
})

t.test('a host\'s own routes behind the service\'s guard answer 401 as Problem Details too', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  const service = catsService({ config: testConfig })
  await host.register(service.plugin, { prefix: '/api' })
  host.get('/reports', { onRequest: service.guard }, async () => ({ ok: true }))
  const res = await host.inject({ url: '/reports?year=2024', headers: PROBLEM })
  expectProblem(t, res, 401, 'AUTH_ERR_MISSING_TOKEN', '/reports')
  t.equal(res.headers['www-authenticate'], 'Bearer')
})

t.test('an unknown route, a body that is not JSON and a body over the limit', async (t) => {
  const app = await build(t, { BODY_LIMIT: 1024 })
  const notFound = await app.inject({ url: '/nowhere?token=secret', headers: PROBLEM })
  t.match(expectProblem(t, notFound, 404, 'HTTP_ERR_ROUTE_NOT_FOUND', '/nowhere'), { title: 'Not Found', detail: 'Route GET /nowhere?token=secret not found' })
  const text = await app.inject({ method: 'POST', url: '/cats', headers: { ...PROBLEM, 'content-type': 'text/plain' }, payload: 'Tom' })
  t.match(expectProblem(t, text, 415, 'FST_ERR_CTP_INVALID_MEDIA_TYPE', '/cats'), { title: 'Unsupported Media Type' })
  const large = await app.inject({ method: 'PUT', url: '/cats/1', headers: { ...PROBLEM, ...json }, payload: JSON.stringify({ name: 'x'.repeat(2000) }) })
  t.match(expectProblem(t, large, 413, 'FST_ERR_CTP_BODY_TOO_LARGE', '/cats/1'), { title: 'Payload Too Large', detail: 'Request body is too large' })
})

t.test('with */*, or with no Accept, the service body is sent byte for byte as before', async (t) => {
  const app = await build(t)
  const requests = [{ url: '/nowhere' }, { method: 'POST' as const, url: '/cats', headers: json, payload: '{"age":"3"}' }]
  for (const request of requests) {
    const none = await app.inject(request)
    for (const accept of ['*/*', 'application/*', 'application/json', 'application/problem+json, application/json']) {
      const res = await app.inject({ ...request, headers: { ...request.headers, accept } })
      t.equal(res.headers['content-type'], 'application/json; charset=utf-8', `${accept}: content type`)
      t.equal(res.body, none.body, `${accept}: the same bytes`)
    }
    t.match(none.json(), { statusCode: Number, error: String, message: String, code: String })
  }
})

t.test('load shedding answers 503 as Problem Details with its Retry-After', async (t) => {
  const app = await build(t, { MAX_HEAP_USED_BYTES: 1 })
  // under-pressure samples the heap once a second.
  await new Promise((resolve) => setTimeout(resolve, 1200))
  const shed = await app.inject({ url: '/cats/1?x=1', headers: PROBLEM })
  t.match(expectProblem(t, shed, 503, 'HTTP_ERR_OVERLOADED', '/cats/1'), { title: 'Service Unavailable', detail: 'The server is overloaded; retry shortly' })
  t.equal(shed.headers['retry-after'], '10')
  const create = await app.inject({ method: 'POST', url: '/cats', headers: json, payload: '{"name":"Tom","age":3,"breed":"Manx"}' })
  t.equal(create.statusCode, 503)
  t.equal(await app.catsStore.find(1), undefined, 'a shed request never reaches its route')
})

t.test('a 503 from a store that cannot be reached, with its Retry-After', async (t) => {
  const { TEST_DATABASE_URL } = process.env
  if (TEST_DATABASE_URL === undefined) {
    t.comment('TEST_DATABASE_URL is not set: the store outage was not tried')
    return
  }
  const target = new URL(TEST_DATABASE_URL)
  const schema = await freshServerSchema(t, await adminClient(t, TEST_DATABASE_URL), 'cats_problem')
  const proxy = new TcpProxy(target)
  await proxy.start()
  t.teardown(() => proxy.stop())
  const app = await build(t, { DATABASE_URL: urlWithSchema(proxy.url(target), schema) })
  t.equal((await app.inject({ method: 'POST', url: '/cats', headers: json, payload: '{"name":"Tom","age":3,"breed":"Manx"}' })).statusCode, 201)
  // Dropped and refused: every query fails at once.
  await proxy.stop()
  const down = await app.inject({ url: '/cats/1', headers: PROBLEM })
  t.match(expectProblem(t, down, 503, 'CATS_ERR_STORE_UNAVAILABLE', '/cats/1'), { detail: 'The database is unavailable; retry shortly' })
  t.equal(down.headers['retry-after'], '5')
})

t.test('under a host\'s prefix, instance is the path as the client sent it', async (t) => {
  const host = Fastify({ pluginTimeout: 60_000 })
  t.teardown(() => host.close())
  await host.register(serviceApp, { prefix: '/api', config: { ...testConfig, CATS_AUTH: 'required' } })
  expectProblem(t, await host.inject({ url: '/api/cats?limit=2', headers: PROBLEM }), 401, 'AUTH_ERR_MISSING_TOKEN', '/api/cats')
  expectProblem(t, await host.inject({ url: '/api/nowhere?x=1', headers: PROBLEM }), 404, 'HTTP_ERR_ROUTE_NOT_FOUND', '/api/nowhere')
  const host404 = await host.inject({ url: '/elsewhere', headers: PROBLEM })
  t.equal(host404.headers['content-type'], 'application/json; charset=utf-8', 'the host\'s own errors stay the host\'s')
})

t.test('CORS keeps its Vary: Origin, and the 16 KiB bound holds for the Problem Details shape', async (t) => {
  const app = await build(t, { CORS_ORIGINS: 'https://cats.example', BODY_LIMIT: 65_536 })
  const path = `/${'%C3%A9'.repeat(2000)}`
  const res = await app.inject({ url: path, headers: { ...PROBLEM, origin: 'https://cats.example' } })
  // 199 characters: a 200th would split the escape that starts there.
  expectProblem(t, res, 404, 'HTTP_ERR_ROUTE_NOT_FOUND', path.slice(0, MAX_INSTANCE_CHARS - 1))
  t.equal(res.headers.vary, 'Origin, Accept')
  t.ok(res.rawPayload.length <= 16 * 1024, `${res.rawPayload.length} bytes`)
  // Forty keys of control characters (six bytes of JSON each), each over a body nested too deep: ten issues
  // with long field names, the most a validation answer lists.
  const deep = (level: number): string => level === 0 ? '{}' : `{"k":${deep(level - 1)}}`
  const wide = `{${Array.from({ length: 40 }, (_, i) => `"${String(i).padStart(3, '0')}${'\\u0001'.repeat(120)}":${deep(34)}`).join(',')}}`
  const attack = await app.inject({ method: 'PUT', url: '/cats/1', headers: { ...PROBLEM, ...json }, payload: wide })
  const issues = expectProblem(t, attack, 400, 'FST_ERR_VALIDATION', '/cats/1').validation
  t.equal(Array.isArray(issues) ? issues.length : 0, 10)
  t.ok(attack.rawPayload.length <= 16 * 1024, `${attack.rawPayload.length} bytes`)
})

t.test('the OpenAPI document gives every error response both media types', async (t) => {
  const app: FastifyInstance = await build(t, { CATS_AUTH: 'required' })
  const doc = (await app.inject('/docs/json')).json<{
    paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: { $ref?: string }, examples?: Record<string, { value: Record<string, unknown> }> }> }> }>>
  }>()
  let errors = 0
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, { responses }] of Object.entries(methods)) {
      for (const [status, { content }] of Object.entries(responses)) {
        if (content?.['application/json']?.schema.$ref !== '#/components/schemas/Error') continue
        errors++
        const problem = content['application/problem+json']
        t.equal(problem?.schema.$ref, '#/components/schemas/ProblemDetails', `${method} ${path} ${status}`)
        for (const [code, { value }] of Object.entries(problem?.examples ?? {})) t.match(value, { type: `${PROBLEM_TYPE_PREFIX}${code}`, status: Number(status), code })
      }
    }
  }
  t.ok(errors > 20, `${errors} error responses`)
})
