import t from 'tap'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { errorHandler, LOGIN_CHALLENGE, notFoundHandler, type ThrownError } from '../../src/http/error-handler.js'
import {
  CatTooLarge, CollectionFull, IdempotencyKeyInUse, IdempotencyKeyReused, InvalidCredentials, InvalidRequest, LoginLimiterUnavailable, StoreUnavailable,
  TooManyLoginAttempts
} from '../../src/errors.js'
import { invalidRequest } from '../../src/http/validation-issues.js'

/** What the fake request's logger was given. */
interface LogEntry {
  object: unknown
  message: string | undefined
}

/** The part of FastifyRequest the handlers read. */
interface FakeRequest {
  method: string
  url: string
  headers: Record<string, string>
  log: { error: (object: unknown, message?: string) => void }
}

/** The part of FastifyReply the handlers use, recording what they did. */
interface FakeReply {
  status: number | undefined
  payload: unknown
  sentHeaders: Record<string, string>
  contentType: string | undefined
  sends: number
  code: (statusCode: number) => FakeReply
  header: (name: string, value: string) => FakeReply
  getHeader: (name: string) => string | undefined
  type: (contentType: string) => FakeReply
  send: (payload: unknown) => FakeReply
}

interface Outcome {
  reply: FakeReply
  logged: LogEntry[]
}

function fakes (method = 'GET', url = '/'): { request: FakeRequest, reply: FakeReply, logged: LogEntry[] } {
  const logged: LogEntry[] = []
  const request: FakeRequest = {
    method,
    url,
    headers: {},
    log: { error: (object, message) => { logged.push({ object, message }) } }
  }
  const reply: FakeReply = {
    status: undefined,
    payload: undefined,
    sentHeaders: {},
    contentType: undefined,
    sends: 0,
    code (statusCode) {
      this.status = statusCode
      return this
    },
    header (name, value) {
      this.sentHeaders[name] = value
      return this
    },
    getHeader (name) {
      return this.sentHeaders[name]
    },
    type (contentType) {
      this.contentType = contentType
      return this
    },
    send (payload) {
      this.sends++
      this.payload = payload
      return this
    }
  }
  return { request, reply, logged }
}

// The handlers only touch the members modelled above; the real Fastify types are far
// larger, so the fakes are handed over through this one cast.
const asRequest = (request: FakeRequest): FastifyRequest => request as unknown as FastifyRequest
const asReply = (reply: FakeReply): FastifyReply => reply as unknown as FastifyReply

function handle (error: FastifyError | ThrownError): Outcome {
  const { request, reply, logged } = fakes()
  errorHandler(error, asRequest(request), asReply(reply))
  return { reply, logged }
}

/** A Fastify-style error: an Error with a code and maybe a status. */
function fastifyError (message: string, extra: { code?: string, statusCode?: number } = {}): FastifyError {
  return Object.assign(new Error(message), { code: 'ERR_TEST', ...extra })
}

/** A validation error as Fastify raises it, with full Ajv entries. */
function fastifyValidationError (
  statusCode: number,
  validation: FastifyError['validation'],
  validationContext?: FastifyError['validationContext']
): FastifyError {
  const context = validationContext === undefined ? {} : { validationContext }
  return Object.assign(new Error('validation failed'), { code: 'FST_ERR_VALIDATION', statusCode, validation }, context)
}

const INTERNAL = { statusCode: 500, error: 'Internal Server Error', message: 'An internal error occurred', code: 'HTTP_ERR_INTERNAL' }

t.test('notFoundHandler answers 404 naming the route', async (t) => {
  const { request, reply, logged } = fakes('DELETE', '/nowhere?x=1')
  notFoundHandler(asRequest(request), asReply(reply))
  t.equal(reply.status, 404)
  t.strictSame(reply.payload, { statusCode: 404, error: 'Not Found', message: 'Route DELETE /nowhere?x=1 not found', code: 'HTTP_ERR_ROUTE_NOT_FOUND' })
  t.equal(reply.sends, 1)
  t.strictSame(logged, [])
})

t.test('every 401 the handler sends carries a challenge: the service\'s own Login scheme unless one was set', async (t) => {
  t.equal(handle(new InvalidCredentials()).reply.sentHeaders['www-authenticate'], LOGIN_CHALLENGE)
  t.equal(handle(fastifyError('no', { statusCode: 401 })).reply.sentHeaders['www-authenticate'], LOGIN_CHALLENGE, 'a 401 without a code of its own')
  const { request, reply } = fakes()
  reply.header('www-authenticate', 'Bearer realm="host"')
  errorHandler(new InvalidCredentials(), asRequest(request), asReply(reply))
  t.equal(reply.sentHeaders['www-authenticate'], 'Bearer realm="host"', 'a challenge set before is kept')
  t.equal(handle(new InvalidRequest('x')).reply.sentHeaders['www-authenticate'], undefined, 'no challenge on other statuses')
})

t.test('errorHandler sends a 4xx with its message and code, without logging', async (t) => {
  const { reply, logged } = handle(new InvalidCredentials())
  t.equal(reply.status, 401)
  t.strictSame(reply.payload, {
    statusCode: 401,
    error: 'Unauthorized',
    message: 'Invalid username or password',
    code: 'AUTH_ERR_INVALID_CREDENTIALS'
  })
  t.equal(reply.sends, 1)
  t.strictSame(logged, [], 'client errors are not logged as errors')
})

t.test('errorHandler sends a Fastify 4xx with its message and code', async (t) => {
  const { reply } = handle(fastifyError('Body cannot be empty when content-type is set to \'application/json\'', {
    code: 'FST_ERR_CTP_EMPTY_JSON_BODY',
    statusCode: 400
  }))
  t.strictSame(reply.payload, {
    statusCode: 400,
    error: 'Bad Request',
    message: 'Body cannot be empty when content-type is set to \'application/json\'',
    code: 'FST_ERR_CTP_EMPTY_JSON_BODY'
  })
})

t.test('a 4xx without a code of its own gets the generic request code', async (t) => {
  const { reply } = handle(Object.assign(new Error('odd request'), { statusCode: 400 }))
  t.strictSame(reply.payload, { statusCode: 400, error: 'Bad Request', message: 'odd request', code: 'HTTP_ERR_BAD_REQUEST' })
})

t.test('a 429 without a code of its own (a host\'s rate limit) gets the service\'s 429 code and keeps its message', async (t) => {
  const { reply } = handle(Object.assign(new Error('Rate limit exceeded, retry in 1 minute'), { statusCode: 429 }))
  t.equal(reply.status, 429)
  t.strictSame(reply.payload, { statusCode: 429, error: 'Too Many Requests', message: 'Rate limit exceeded, retry in 1 minute', code: 'HTTP_ERR_TOO_MANY_REQUESTS' })
})

t.test('errors that ask the client to come back later carry Retry-After', async (t) => {
  t.strictSame(handle(new LoginLimiterUnavailable()).reply.sentHeaders, { 'retry-after': '5', vary: 'Accept' })
  const locked = Object.assign(new TooManyLoginAttempts(42), { retryAfter: 42 })
  const { reply } = handle(locked)
  t.equal(reply.status, 429)
  t.strictSame(reply.sentHeaders, { 'retry-after': '42', vary: 'Accept' }, 'an error may give its own wait')
  t.equal((reply.payload as { message: string }).message, 'Too many login attempts; retry in 42 seconds')
})

t.test('errorHandler sets only Vary when the error asks for no header', async (t) => {
  t.strictSame(handle(new IdempotencyKeyReused()).reply.sentHeaders, { vary: 'Accept' })
  t.strictSame(handle(fastifyError('x', { statusCode: 400 })).reply.sentHeaders, { vary: 'Accept' }, 'a Fastify error')
})

t.test('the errors the stores throw are answered with their code, status and Retry-After', async (t) => {
  const full = handle(new CollectionFull(3))
  t.equal(full.reply.status, 507)
  t.strictSame(full.reply.payload, {
    statusCode: 507, error: 'Insufficient Storage', message: 'The collection is full (3 cats); delete some first', code: 'CATS_ERR_COLLECTION_FULL'
  })
  const large = handle(new CatTooLarge(256))
  t.strictSame(large.reply.payload, {
    statusCode: 413, error: 'Payload Too Large', message: 'The merged cat would be larger than 256 bytes', code: 'CATS_ERR_CAT_TOO_LARGE'
  })
  const cause = new Error('connect ECONNREFUSED 127.0.0.1:5432')
  const down = handle(new StoreUnavailable({ cause }))
  t.equal(down.reply.status, 503)
  t.strictSame(down.reply.payload, {
    statusCode: 503, error: 'Service Unavailable', message: 'The database is unavailable; retry shortly', code: 'CATS_ERR_STORE_UNAVAILABLE'
  }, 'the cause stays out of the body')
  t.strictSame(down.reply.sentHeaders, { 'retry-after': '5', vary: 'Accept' })
  t.strictSame(down.logged, [], 'a 503 the service chose is not logged per request (the outage is logged where it is tracked)')
  t.equal(new StoreUnavailable({ cause }).cause, cause)
  const inProgress = handle(new IdempotencyKeyInUse())
  t.strictSame(inProgress.reply.payload, {
    statusCode: 409, error: 'Conflict', message: 'A request with this Idempotency-Key is still in progress; retry shortly', code: 'CATS_ERR_IDEMPOTENCY_KEY_IN_USE'
  })
  t.strictSame(inProgress.reply.sentHeaders, { 'retry-after': '1', vary: 'Accept' })
  t.strictSame(handle(new IdempotencyKeyReused()).reply.payload, {
    statusCode: 422, error: 'Unprocessable Entity', message: 'This Idempotency-Key was used with a different request body', code: 'CATS_ERR_IDEMPOTENCY_KEY_REUSED'
  })
})

t.test('a 5xx hides its message and the real error is logged', async (t) => {
  const error = fastifyError('connect ECONNREFUSED /var/run/db.sock', { statusCode: 500, code: 'ECONNREFUSED' })
  const { reply, logged } = handle(error)
  t.equal(reply.status, 500)
  t.strictSame(reply.payload, INTERNAL, 'no message, no foreign code')
  t.equal(logged.length, 1)
  t.strictSame(logged[0], { object: { err: error }, message: 'request failed' })
  t.strictSame(reply.sentHeaders, { vary: 'Accept' })
})

t.test('a 5xx that is not one of the service\'s errors hides its message too', async (t) => {
  const { reply, logged } = handle(fastifyError('upstream at 10.0.0.3 failed', { statusCode: 502, code: 'ERR_UPSTREAM' }))
  t.strictSame(reply.payload, { ...INTERNAL, statusCode: 502, error: 'Bad Gateway' })
  t.equal(logged.length, 1)
})

t.test('the service\'s own 5xx keeps its message and code and sets Retry-After', async (t) => {
  const error = new StoreUnavailable()
  const { reply, logged } = handle(error)
  t.equal(reply.status, 503)
  t.strictSame(reply.payload, {
    statusCode: 503,
    error: 'Service Unavailable',
    message: 'The database is unavailable; retry shortly',
    code: 'CATS_ERR_STORE_UNAVAILABLE'
  })
  t.strictSame(reply.sentHeaders, { 'retry-after': '5', vary: 'Accept' })
  t.strictSame(logged, [], 'a 503 the service chose is not logged per request (the outage is logged where it is tracked)')
})

t.test('an error without statusCode becomes a 500', async (t) => {
  const error = new Error('Cannot read properties of undefined (reading \'id\')')
  const { reply, logged } = handle(Object.assign(error, { code: 'ERR_X' }))
  t.equal(reply.status, 500)
  t.strictSame(reply.payload, INTERNAL)
  t.equal(logged.length, 1)
})

t.test('a statusCode outside 400..599 becomes a 500', async (t) => {
  for (const statusCode of [302, 700, 399, 600, 200, 0, -1]) {
    const { reply, logged } = handle(fastifyError('secret detail', { statusCode, code: 'ERR_ODD' }))
    t.equal(reply.status, 500, `statusCode ${statusCode}`)
    t.strictSame(reply.payload, INTERNAL, `statusCode ${statusCode}: body`)
    t.equal(logged.length, 1, `statusCode ${statusCode}: logged`)
  }
})

t.test('errorHandler keeps the edges of the range: 400 and 599', async (t) => {
  t.equal(handle(new InvalidRequest('x')).reply.status, 400)
  const edge = handle(fastifyError('hidden', { statusCode: 599 }))
  t.equal(edge.reply.status, 599)
  t.strictSame(edge.reply.payload, { ...INTERNAL, statusCode: 599, error: 'Error' })
})

t.test('a validation error from invalidRequest gets the full shape', async (t) => {
  const { reply, logged } = handle(invalidRequest('body', [
    { instancePath: '/age', message: 'must be integer' },
    { instancePath: '', message: 'must have required property \'breed\'', params: { missingProperty: 'breed' } }
  ]))
  t.equal(reply.status, 400)
  t.strictSame(reply.payload, {
    statusCode: 400,
    error: 'Bad Request',
    message: 'body.age must be integer, body.breed must have required property \'breed\'',
    code: 'FST_ERR_VALIDATION',
    validation: [
      { field: 'body.age', message: 'must be integer' },
      { field: 'body.breed', message: 'must have required property \'breed\'' }
    ]
  })
  t.strictSame(logged, [])
})

t.test('a Fastify validation error uses its validationContext', async (t) => {
  const error = fastifyValidationError(400, [
    { keyword: 'pattern', instancePath: '/id', schemaPath: '#/properties/id/pattern', params: { pattern: '^-?[0-9]{1,15}$' }, message: 'must match pattern "^-?[0-9]{1,15}$"' }
  ], 'params')
  t.strictSame(handle(error).reply.payload, {
    statusCode: 400,
    error: 'Bad Request',
    message: 'validation failed',
    code: 'FST_ERR_VALIDATION',
    validation: [{ field: 'params.id', message: 'must match pattern "^-?[0-9]{1,15}$"' }]
  })
})

t.test('a validation error without validationContext names fields from "request"', async (t) => {
  const error = fastifyValidationError(400, [
    { keyword: 'type', instancePath: '/age', schemaPath: '#/properties/age/type', params: { type: 'integer' }, message: 'must be integer' },
    { keyword: 'required', instancePath: '', schemaPath: '#/required', params: { missingProperty: 'name' }, message: 'must have required property \'name\'' }
  ])
  t.notOk('validationContext' in error, 'the test error really has no context')
  t.strictSame(handle(error).reply.payload, {
    statusCode: 400,
    error: 'Bad Request',
    message: 'validation failed',
    code: 'FST_ERR_VALIDATION',
    validation: [
      { field: 'request.age', message: 'must be integer' },
      { field: 'request.name', message: 'must have required property \'name\'' }
    ]
  })
})

t.test('a validation entry without a message says "is invalid"', async (t) => {
  const error = fastifyValidationError(400, [{ keyword: 'custom', instancePath: '/a~1b', schemaPath: '#', params: {} }], 'body')
  t.match(handle(error).reply.payload, { validation: [{ field: 'body.a/b', message: 'is invalid' }] })
})

t.test('a 5xx never carries validation details', async (t) => {
  const error = fastifyValidationError(500, [{ keyword: 'type', instancePath: '/a', schemaPath: '#', params: {}, message: 'internal detail' }], 'body')
  t.strictSame(handle(error).reply.payload, INTERNAL)
})

t.test('the service\'s other 5xx (507) are still logged', async (t) => {
  const error = new CollectionFull(3)
  const { reply, logged } = handle(error)
  t.equal(reply.status, 507)
  t.strictSame(logged, [{ object: { err: error }, message: 'request failed' }])
})
