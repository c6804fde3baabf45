import t, { type Test } from 'tap'
import fc from 'fast-check'
import Fastify, { type FastifyInstance, type InjectOptions } from 'fastify'
import serviceApp from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { MAX_MESSAGE_CHARS } from '../../src/http/error-limits.js'
import { serverOptions } from '../../src/http/server-options.js'
import { MAX_FIELD_CHARS, MAX_ISSUE_MESSAGE_CHARS, MAX_ISSUES } from '../../src/http/error-limits.js'
import { build, testConfig } from '../support/app.js'

// No request within the body limit gets more than 16 KiB back in an error, on any route: validation
// lists at most 10 issues, and field names and messages are cut. Every response here is also checked
// against the OpenAPI document by `build` (which caps the lengths and the number of issues too).

const MAX_ERROR_BYTES = 16 * 1024
const MIB = 1_048_576
const json = { 'content-type': 'application/json' }

/** The body of the report: 31 nested 125-character keys, then 1,385 `{}` at level 33; 8,186 bytes. */
function reportedAttack (): string {
  let body = `[${Array.from({ length: 1385 }, () => '{}').join(',')}]`
  for (let level = 30; level >= 0; level--) body = `{"${String(level).padStart(3, '0')}${'k'.repeat(122)}":${body}}`
  return body
}

/** Checks one error answer: a 4xx in the error shape, at most 16 KiB; returns its size. */
function checkBounded (t: Test, res: { statusCode: number, rawPayload: Buffer, body: string }, label: string): number {
  t.ok(res.statusCode >= 400 && res.statusCode < 500, `${label}: ${res.statusCode}`)
  t.ok(res.rawPayload.length <= MAX_ERROR_BYTES, `${label}: ${res.rawPayload.length} bytes`)
  const body: unknown = JSON.parse(res.body)
  t.match(body, { statusCode: res.statusCode, error: String, message: String, code: String }, label)
  return res.rawPayload.length
}

t.test('the reported 8,186-byte PUT gets a small 400, quickly', async (t) => {
  const app = await build(t)
  const payload = reportedAttack()
  t.equal(Buffer.byteLength(payload), 8186)
  const send = async () => app.inject({ method: 'PUT', url: '/cats/1', headers: json, payload })
  const first = await send()
  checkBounded(t, first, 'the attack')
  const body = first.json()
  t.equal(first.statusCode, 400)
  t.equal(body.code, 'FST_ERR_VALIDATION')
  t.equal(body.validation.length, MAX_ISSUES, 'the first ten issues, not 1,385')
  t.strictSame(body.validation.map((issue: { field: string }) => issue.field.split('.').at(-1)), ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'])
  for (const issue of body.validation) {
    t.equal(issue.field.length, MAX_FIELD_CHARS, 'a path of 3,900 characters is cut')
    t.match(issue.field, /^body\.000k+…k+\.\d$/)
    t.equal(issue.message, 'must not be nested deeper than 32 levels')
  }
  t.ok(first.rawPayload.length < 4096, `${first.rawPayload.length} bytes (10,993,389 before)`)
  t.comment(`the reported PUT now gets ${first.rawPayload.length} bytes`)
  // Before, each answer took about 200 ms here (an 11 MB body built and sent).
  const started = performance.now()
  for (let i = 0; i < 10; i++) t.equal((await send()).statusCode, 400)
  const took = performance.now() - started
  t.ok(took < 1000, `ten more answered in ${Math.round(took)} ms`)
})

/** The routes that validate what they are sent, each given a hostile JSON text as the body. */
const bodyRoutes: Array<{ name: string, request: (payload: string) => InjectOptions }> = [
  { name: 'PUT /cats/1', request: (payload) => ({ method: 'PUT', url: '/cats/1', headers: json, payload }) },
  { name: 'POST /cats', request: (payload) => ({ method: 'POST', url: '/cats', headers: json, payload }) },
  { name: 'POST /auth/login', request: (payload) => ({ method: 'POST', url: '/auth/login', headers: json, payload }) },
  { name: 'POST /auth/refresh', request: (payload) => ({ method: 'POST', url: '/auth/refresh', headers: json, payload }) }
]

/** A hostile body: how it is built, from a key of repeated `keyChar` (control characters cost six bytes of JSON each). */
interface Shape {
  kind: 'deep' | 'wide' | 'reserved' | 'wrong types' | 'deep arrays'
  keyChar: string
  keyLength: number
}

/** The JSON text of `shape`, filled up to (never over) `limit` bytes. */
function hostileBody ({ kind, keyChar, keyLength }: Shape, limit: number): string {
  // A key of `keyLength` characters at most, cut so its JSON text takes at most `share` of the limit:
  // two UTF-16 units at a time from its end (whole characters, after the index), to the longest that fits.
  // Its JSON text only grows with its length, so the number of cuts is found by halving.
  const quoted = (index: number, share: number): string => {
    const key = `${index}${keyChar.repeat(keyLength)}`
    const cut = (cuts: number): string => key.slice(0, Math.max(0, key.length - 2 * cuts))
    const fits = (cuts: number): boolean => Buffer.byteLength(JSON.stringify(cut(cuts))) <= limit * share
    if (fits(0)) return JSON.stringify(key)
    let fewest = 1
    let most = Math.ceil(key.length / 2)
    while (fewest < most) {
      const middle = Math.floor((fewest + most) / 2)
      if (fits(middle)) most = middle
      else fewest = middle + 1
    }
    return JSON.stringify(cut(fewest))
  }
  // `item` is the same text every time, or the text of the item at an index; the items are comma-separated.
  const fill = (prefix: string, item: string | ((index: number) => string), suffix: string): string => {
    const size = Buffer.byteLength(prefix) + Buffer.byteLength(suffix)
    if (typeof item === 'string') {
      // As many as fit, counted instead of added one by one (hundreds of thousands of `{}` in a MiB).
      const bytes = Buffer.byteLength(item)
      const count = size + bytes > limit ? 0 : 1 + Math.floor((limit - size - bytes) / (bytes + 1))
      return `${prefix}${Array(count).fill(item).join(',')}${suffix}`
    }
    const items: string[] = []
    let filled = size
    for (let index = 0; ; index++) {
      const next = item(index)
      const added = Buffer.byteLength(next) + (items.length === 0 ? 0 : 1)
      if (filled + added > limit) break
      items.push(next)
      filled += added
    }
    return `${prefix}${items.join(',')}${suffix}`
  }
  switch (kind) {
    case 'deep': {
      // Long keys down to level 32 (each within its share of half the limit), then as many too-deep objects as fit.
      let prefix = ''
      let suffix = ''
      for (let level = 0; level < 31; level++) {
        prefix += `{${quoted(level, 1 / 2 / 31)}:`
        suffix += '}'
      }
      return fill(`${prefix}[`, '{}', `]${suffix}`)
    }
    case 'wide':
      // As many long keys as fit, each with a value that fails somewhere.
      return fill('{', (index) => `${quoted(index, 1 / 8)}:{"constructor":1,"age":"x"}`, '}')
    case 'reserved':
      return fill(`{${quoted(0, 1 / 4)}:[`, '{"constructor":1}', ']}')
    case 'wrong types':
      return fill('{"name":1,"age":"x","breed":null,"username":[],"password":{},"refresh_token":7,"constructor":0,', (index) => `${quoted(index, 1 / 8)}:null`, '}')
    case 'deep arrays':
      return `${'['.repeat(Math.floor(limit / 2) - 1)}${']'.repeat(Math.floor(limit / 2) - 1)}`
  }
}

const shapes = fc.record({
  kind: fc.constantFrom<Shape['kind']>('deep', 'wide', 'reserved', 'wrong types', 'deep arrays'),
  keyChar: fc.constantFrom('k', '\u0001', '"', '\\', '/', '~', 'é', '\u{1F408}', '\u2028'),
  keyLength: fc.integer({ min: 1, max: 2000 })
})

/** The requests without a hostile body: hostile query strings, path ids, headers and URLs instead. */
function otherRequests (urlBytes: number): Array<[string, InjectOptions]> {
  const control = '%01'.repeat(urlBytes / 3)
  return [
    ['?limit= long', { url: `/cats?limit=${'9'.repeat(300)}${'x'.repeat(urlBytes)}` }],
    ['?limit= many', { url: `/cats?${'limit=x&'.repeat(urlBytes / 8)}` }],
    ['?after= long', { url: `/cats?after=${control}` }],
    ['?limit and ?after both bad', { url: `/cats?limit=0&after=${'~'.repeat(urlBytes)}` }],
    ['GET /cats/:id', { url: `/cats/${control}` }],
    ['DELETE /cats/:id', { method: 'DELETE', url: `/cats/${'x'.repeat(urlBytes)}` }],
    ['PUT /cats/:id', { method: 'PUT', url: `/cats/${control}`, headers: json, payload: reportedAttack() }],
    ['an unknown route', { url: `/${control}` }],
    ['a bad escape in a parameter', { url: `/cats/${'%E0%A4%A'.repeat(urlBytes / 8)}` }],
    ['Idempotency-Key', { method: 'POST', url: '/cats', headers: { ...json, 'idempotency-key': ' '.repeat(urlBytes) }, payload: '{"name":"Tom","age":3,"breed":"Manx"}' }],
    ['content type', { method: 'POST', url: '/cats', headers: { 'content-type': `application/${'x'.repeat(urlBytes)}` }, payload: '{}' }],
    ['malformed JSON', { method: 'PUT', url: '/cats/1', headers: json, payload: `{"${'k'.repeat(urlBytes)}": ]` }]
  ]
}

for (const bodyLimit of [8192, MIB]) {
  t.test(`BODY_LIMIT=${bodyLimit}: hostile requests on every validating route get at most 16 KiB`, async (t) => {
    const app: FastifyInstance = await build(t, { BODY_LIMIT: bodyLimit, REFRESH_TOKENS: true })
    let largest = 0
    const seen = new Set<string>()
    const details = await fc.check(fc.asyncProperty(shapes, fc.constantFrom(...bodyRoutes), async (shape, route) => {
      const payload = hostileBody(shape, bodyLimit)
      if (Buffer.byteLength(payload) > bodyLimit) throw new Error('the generator overshot the limit')
      const res = await app.inject(route.request(payload))
      seen.add(`${route.name} ${res.statusCode}`)
      largest = Math.max(largest, res.rawPayload.length)
      if (res.statusCode < 400 || res.statusCode >= 500) throw new Error(`${route.name}: ${res.statusCode}`)
      if (res.rawPayload.length > MAX_ERROR_BYTES) throw new Error(`${route.name}: ${res.rawPayload.length} bytes`)
      const body = res.json()
      if ((body.validation?.length ?? 0) > MAX_ISSUES || body.message.length > MAX_MESSAGE_CHARS) throw new Error('over a cap')
    }), { numRuns: bodyLimit === MIB ? 40 : 150, seed: process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED) })
    if (details.failed) t.fail(`${String(details.errorInstance)}\n${await fc.asyncDefaultReportMessage(details)}\n(rerun with FC_SEED=<seed above> to replay)`)
    else t.pass(`${details.numRuns} hostile bodies, the largest answer ${largest} bytes`)
    t.ok(seen.has('PUT /cats/1 400') && seen.has('POST /cats 400') && seen.has('POST /auth/login 400') && seen.has('POST /auth/refresh 400'),
      `every route answered 400 at least once (${[...seen].join(', ')})`)
  })
}

t.test('hostile URLs and headers, up to the default header limit, get at most 16 KiB from the standalone server', async (t) => {
  // The standalone server's own options: a URL its router refuses is answered there, before the app.
  const config = loadConfig({ ...testConfig, LOG_LEVEL: 'silent' })
  const server = Fastify(serverOptions(config))
  await server.register(serviceApp, { config })
  t.teardown(() => server.close())
  for (const [label, request] of otherRequests(config.MAX_HEADER_BYTES - 1000)) checkBounded(t, await server.inject(request), label)
  const tooLong = await server.inject({ url: `/cats/${'1'.repeat(200)}` })
  t.strictSame(tooLong.json(), {
    statusCode: 414, error: 'URI Too Long', message: `'/cats/${'1'.repeat(200)}' is exceeding the max param length`, code: 'FST_ERR_MAX_PARAM_LENGTH'
  }, 'a parameter over the router\'s limit, in the service\'s error shape')
})

t.test('the caps hold in the body: at most 10 issues, each field and message and the message cut to length', async (t) => {
  const app = await build(t, { BODY_LIMIT: MIB })
  // Many reserved keys under keys of control characters: each escapes to six bytes of JSON, the worst case.
  // (A `__proto__` key is refused by Fastify's JSON parser already, so `constructor` it is.)
  const key = '\u0001'.repeat(5000)
  const payload = `{${Array.from({ length: 20 }, (_, index) => `"${index}${key}":{"constructor":1}`).join(',')}}`
  const res = await app.inject({ method: 'PUT', url: '/cats/1', headers: json, payload: payload.replaceAll('\u0001', '\\u0001') })
  checkBounded(t, res, 'control-character keys')
  const body = res.json()
  t.equal(body.validation.length, MAX_ISSUES)
  for (const issue of body.validation) {
    t.ok(issue.field.length <= MAX_FIELD_CHARS && issue.message.length <= MAX_ISSUE_MESSAGE_CHARS)
    t.equal(issue.field.replaceAll('\u0001', '').replace(/\d+/, 'N'), 'body.N….constructor', 'the start and the end of the path, around an ellipsis')
  }
  t.ok(body.message.length <= MAX_MESSAGE_CHARS, `message of ${body.message.length} characters`)
  t.match(body.message, /, …$/, 'the message lists the first issues and says more follow')
  t.comment(`worst-case escaping: ${res.rawPayload.length} bytes`)
})
