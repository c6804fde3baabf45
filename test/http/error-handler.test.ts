import t from 'tap'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import {
  errorHandler,
  httpError,
  notFoundHandler,
  simpleErrorBody,
  validationError,
  type FieldError,
  type HttpError
} from '../../src/http/error-handler.js'

/** What the fake request's logger was given. */
interface LogEntry {
  object: unknown
  message: string | undefined
}

/** The part of FastifyRequest the handlers read. */
interface FakeRequest {
  method: string
  url: string
  log: { error: (object: unknown, message?: string) => void }
}

/** The part of FastifyReply the handlers use, recording what they did. */
interface FakeReply {
  status: number | undefined
  payload: unknown
  sentHeaders: Record<string, string>
  headerCalls: number
  sends: number
  code: (statusCode: number) => FakeReply
  headers: (values: Record<string, string>) => FakeReply
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
    log: { error: (object, message) => { logged.push({ object, message }) } }
  }
  const reply: FakeReply = {
    status: undefined,
    payload: undefined,
    sentHeaders: {},
    headerCalls: 0,
    sends: 0,
    code (statusCode) {
      this.status = statusCode
      return this
    },
    headers (values) {
      this.headerCalls++
      Object.assign(this.sentHeaders, values)
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

function handle (error: FastifyError | HttpError): Outcome {
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

const INTERNAL = 'An internal error occurred'

t.test('httpError sets statusCode and expose', async (t) => {
  const error = httpError(404, 'No such thing')
  t.ok(error instanceof Error)
  t.equal(error.message, 'No such thing')
  t.equal(error.statusCode, 404)
  t.equal(error.expose, true)
  t.equal(error.code, undefined)
  t.equal(error.headers, undefined)
  t.type(error.stack, 'string')
})

t.test('httpError merges extra fields', async (t) => {
  const error = httpError(401, 'Invalid username or password', {
    code: 'INVALID_CREDENTIALS',
    headers: { 'www-authenticate': 'Bearer' }
  })
  t.equal(error.statusCode, 401)
  t.equal(error.code, 'INVALID_CREDENTIALS')
  t.strictSame(error.headers, { 'www-authenticate': 'Bearer' })
  t.equal(httpError(500, 'hidden', { expose: false }).expose, false, 'extra may turn expose off')
})

t.test('D7: validationError builds a 400 in the validation shape', async (t) => {
  const errors: FieldError[] = [{ instancePath: '/age', message: 'must be integer' }]
  const error = validationError('body', errors)
  t.ok(error instanceof Error)
  t.equal(error.statusCode, 400)
  t.equal(error.expose, true)
  t.equal(error.code, 'FST_ERR_VALIDATION')
  t.equal(error.validationContext, 'body')
  t.equal(error.validation, errors)
  t.equal(error.message, 'body.age must be integer')
})

t.test('D7: validationError field names follow instancePath: body.a.b', async (t) => {
  t.equal(validationError('body', [{ instancePath: '/a/b', message: 'must be string' }]).message, 'body.a.b must be string')
  t.equal(validationError('body', [{ instancePath: '/list/0/name', message: 'x' }]).message, 'body.list.0.name x')
  t.equal(validationError('params', [{ instancePath: '/id', message: 'must match pattern' }]).message, 'params.id must match pattern')
  t.equal(validationError('body', [{ instancePath: '', message: 'must be object' }]).message, 'body must be object', 'the whole body')
})

t.test('D7: validationError uses params.missingProperty for a missing field', async (t) => {
  t.equal(validationError('body', [{
    instancePath: '',
    message: 'must have required property \'name\'',
    params: { missingProperty: 'name' }
  }]).message, 'body.name must have required property \'name\'')
  t.equal(validationError('body', [{
    instancePath: '/owner',
    message: 'is required',
    params: { missingProperty: 'email' }
  }]).message, 'body.owner.email is required', 'nested')
  t.equal(validationError('body', [{
    instancePath: '/a',
    message: 'm',
    params: { missingProperty: 7, limit: 3 }
  }]).message, 'body.a m', 'a non-string missingProperty is ignored')
})

t.test('D7: validationError unescapes JSON-pointer ~1 to / and ~0 to ~', async (t) => {
  t.equal(validationError('body', [{ instancePath: '/a~1b/c~0d', message: 'm' }]).message, 'body.a/b.c~d m')
  t.equal(validationError('body', [{ instancePath: '/~01', message: 'm' }]).message, 'body.~1 m', '~01 is a literal ~1, not /')
  t.equal(validationError('body', [{ instancePath: '/~0~1~1~0', message: 'm' }]).message, 'body.~//~ m')
})

t.test('D7: validationError lists every error, not only the first', async (t) => {
  const error = validationError('body', [
    { instancePath: '/name', message: 'must be string' },
    { instancePath: '', message: 'must have required property \'age\'', params: { missingProperty: 'age' } },
    { instancePath: '/breed', message: 'must be string' }
  ])
  t.equal(error.message, 'body.name must be string, body.age must have required property \'age\', body.breed must be string')
  t.equal(error.validation?.length, 3)
})

t.test('D7: validationError with an entry without a message says "is invalid"', async (t) => {
  t.equal(validationError('body', [{ instancePath: '/a' }]).message, 'body.a is invalid')
})

t.test('D7: simpleErrorBody uses the HTTP reason phrase', async (t) => {
  t.strictSame(simpleErrorBody(400, 'bad'), { statusCode: 400, error: 'Bad Request', message: 'bad' })
  t.strictSame(simpleErrorBody(401, 'who'), { statusCode: 401, error: 'Unauthorized', message: 'who' })
  t.strictSame(simpleErrorBody(404, 'gone'), { statusCode: 404, error: 'Not Found', message: 'gone' })
  t.strictSame(simpleErrorBody(413, 'big'), { statusCode: 413, error: 'Payload Too Large', message: 'big' })
  t.strictSame(simpleErrorBody(415, 'type'), { statusCode: 415, error: 'Unsupported Media Type', message: 'type' })
  t.strictSame(simpleErrorBody(500, 'oops'), { statusCode: 500, error: 'Internal Server Error', message: 'oops' })
})

t.test('D7: simpleErrorBody falls back to "Error" for an unknown status code', async (t) => {
  t.strictSame(simpleErrorBody(599, 'odd'), { statusCode: 599, error: 'Error', message: 'odd' })
  t.strictSame(simpleErrorBody(499, 'odd'), { statusCode: 499, error: 'Error', message: 'odd' })
})

t.test('D7: notFoundHandler answers 404 naming the route', async (t) => {
  const { request, reply, logged } = fakes('DELETE', '/nowhere?x=1')
  notFoundHandler(asRequest(request), asReply(reply))
  t.equal(reply.status, 404)
  t.strictSame(reply.payload, { statusCode: 404, error: 'Not Found', message: 'Route DELETE /nowhere?x=1 not found' })
  t.equal(reply.sends, 1)
  t.strictSame(logged, [])
})

t.test('D7: errorHandler sends a 4xx with its message and code, without logging', async (t) => {
  const { reply, logged } = handle(httpError(401, 'Invalid username or password', { code: 'INVALID_CREDENTIALS' }))
  t.equal(reply.status, 401)
  t.strictSame(reply.payload, {
    statusCode: 401,
    error: 'Unauthorized',
    message: 'Invalid username or password',
    code: 'INVALID_CREDENTIALS'
  })
  t.equal(reply.sends, 1)
  t.strictSame(logged, [], 'client errors are not logged as errors')
})

t.test('D7: errorHandler sends a Fastify 4xx (no expose flag) with its message', async (t) => {
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

t.test('D5: errorHandler sets the headers of the error', async (t) => {
  const { reply } = handle(httpError(401, 'Missing token', { headers: { 'www-authenticate': 'Bearer' } }))
  t.strictSame(reply.sentHeaders, { 'www-authenticate': 'Bearer' })
  t.equal(reply.status, 401)
})

t.test('errorHandler sets no headers when the error has none', async (t) => {
  t.equal(handle(httpError(404, 'x')).reply.headerCalls, 0)
  t.equal(handle(httpError(404, 'x', { headers: undefined })).reply.headerCalls, 0, 'headers: undefined')
  t.equal(handle(fastifyError('x', { statusCode: 400 })).reply.headerCalls, 0, 'a Fastify error')
})

t.test('D7: a 5xx hides its message and the real error is logged', async (t) => {
  const error = fastifyError('connect ECONNREFUSED /var/run/db.sock', { statusCode: 500, code: 'ECONNREFUSED' })
  const { reply, logged } = handle(error)
  t.equal(reply.status, 500)
  t.strictSame(reply.payload, { statusCode: 500, error: 'Internal Server Error', message: INTERNAL }, 'no message, no code')
  t.equal(logged.length, 1)
  t.strictSame(logged[0], { object: { err: error }, message: 'request failed' })
  t.equal(reply.headerCalls, 0)
})

t.test('D7: an httpError 5xx that is not exposed hides its message too', async (t) => {
  const { reply, logged } = handle(httpError(502, 'upstream at 10.0.0.3 failed', { expose: false }))
  t.strictSame(reply.payload, { statusCode: 502, error: 'Bad Gateway', message: INTERNAL })
  t.equal(logged.length, 1)
})

t.test('D7: an exposed 5xx (httpError(503, ...)) keeps its message and sets its headers', async (t) => {
  const error = httpError(503, 'Server busy, try again later', { headers: { 'retry-after': '5' }, code: 'BUSY' })
  const { reply, logged } = handle(error)
  t.equal(reply.status, 503)
  t.strictSame(reply.payload, {
    statusCode: 503,
    error: 'Service Unavailable',
    message: 'Server busy, try again later',
    code: 'BUSY'
  }, 'message and code kept')
  t.strictSame(reply.sentHeaders, { 'retry-after': '5' })
  t.strictSame(logged, [], 'a 503 the service chose is not logged per request (its cause is logged where it is tracked)')
})

t.test('D7: an error without statusCode becomes a 500', async (t) => {
  const error = new Error('Cannot read properties of undefined (reading \'id\')')
  const { reply, logged } = handle(Object.assign(error, { code: 'ERR_X' }))
  t.equal(reply.status, 500)
  t.strictSame(reply.payload, { statusCode: 500, error: 'Internal Server Error', message: INTERNAL })
  t.equal(logged.length, 1)
})

t.test('D7: a statusCode outside 400..599 becomes a 500', async (t) => {
  for (const statusCode of [302, 700, 399, 600, 200, 0, -1]) {
    const { reply, logged } = handle(fastifyError('secret detail', { statusCode, code: 'ERR_ODD' }))
    t.equal(reply.status, 500, `statusCode ${statusCode}`)
    t.strictSame(reply.payload, { statusCode: 500, error: 'Internal Server Error', message: INTERNAL }, `statusCode ${statusCode}: body`)
    t.equal(logged.length, 1, `statusCode ${statusCode}: logged`)
  }
  t.equal(handle(httpError(302, 'moved')).reply.status, 500, 'also for an httpError with expose')
  t.strictSame(handle(httpError(700, 'odd')).reply.payload, { statusCode: 500, error: 'Internal Server Error', message: 'odd' },
    'an exposed httpError keeps its message even when its status is replaced')
})

t.test('errorHandler keeps the edges of the range: 400 and 599', async (t) => {
  t.equal(handle(httpError(400, 'x')).reply.status, 400)
  const edge = handle(fastifyError('hidden', { statusCode: 599 }))
  t.equal(edge.reply.status, 599)
  t.strictSame(edge.reply.payload, { statusCode: 599, error: 'Error', message: INTERNAL })
})

t.test('D7: a validation error from validationError gets the full shape', async (t) => {
  const { reply, logged } = handle(validationError('body', [
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

t.test('D7: a Fastify validation error uses its validationContext', async (t) => {
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

t.test('D7: a validation error without validationContext names fields from "request"', async (t) => {
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

t.test('D7: a validation entry without a message says "is invalid"', async (t) => {
  const error = fastifyValidationError(400, [{ keyword: 'custom', instancePath: '/a~1b', schemaPath: '#', params: {} }], 'body')
  t.match(handle(error).reply.payload, { validation: [{ field: 'body.a/b', message: 'is invalid' }] })
})

t.test('D7: a 5xx never carries validation details', async (t) => {
  const error = fastifyValidationError(500, [{ keyword: 'type', instancePath: '/a', schemaPath: '#', params: {}, message: 'internal detail' }], 'body')
  t.strictSame(handle(error).reply.payload, { statusCode: 500, error: 'Internal Server Error', message: INTERNAL })
})
