import t from 'tap'
import { MAX_MESSAGE_CHARS } from '../../src/http/error-limits.js'
import { invalidRequest, toIssues, type FieldError } from '../../src/http/validation-issues.js'
import { MAX_FIELD_CHARS, MAX_ISSUE_MESSAGE_CHARS, MAX_ISSUES } from '../../src/http/error-limits.js'

t.test('invalidRequest builds a 400 in the validation shape', async (t) => {
  const errors: FieldError[] = [{ instancePath: '/age', message: 'must be integer' }]
  const error = invalidRequest('body', errors)
  t.ok(error instanceof Error)
  t.equal(error.statusCode, 400)
  t.equal(error.code, 'FST_ERR_VALIDATION')
  t.equal(error.validationContext, 'body')
  t.equal(error.validation, errors)
  t.equal(error.message, 'body.age must be integer')
})

t.test('invalidRequest field names follow instancePath: body.a.b', async (t) => {
  t.equal(invalidRequest('body', [{ instancePath: '/a/b', message: 'must be string' }]).message, 'body.a.b must be string')
  t.equal(invalidRequest('body', [{ instancePath: '/list/0/name', message: 'x' }]).message, 'body.list.0.name x')
  t.equal(invalidRequest('params', [{ instancePath: '/id', message: 'must match pattern' }]).message, 'params.id must match pattern')
  t.equal(invalidRequest('body', [{ instancePath: '', message: 'must be object' }]).message, 'body must be object', 'the whole body')
})

t.test('invalidRequest uses params.missingProperty for a missing field', async (t) => {
  t.equal(invalidRequest('body', [{
    instancePath: '',
    message: 'must have required property \'name\'',
    params: { missingProperty: 'name' }
  }]).message, 'body.name must have required property \'name\'')
  t.equal(invalidRequest('body', [{
    instancePath: '/owner',
    message: 'is required',
    params: { missingProperty: 'email' }
  }]).message, 'body.owner.email is required', 'nested')
  t.equal(invalidRequest('body', [{
    instancePath: '/a',
    message: 'm',
    params: { missingProperty: 7, limit: 3 }
  }]).message, 'body.a m', 'a non-string missingProperty is ignored')
})

t.test('invalidRequest unescapes JSON-pointer ~1 to / and ~0 to ~', async (t) => {
  t.equal(invalidRequest('body', [{ instancePath: '/a~1b/c~0d', message: 'm' }]).message, 'body.a/b.c~d m')
  t.equal(invalidRequest('body', [{ instancePath: '/~01', message: 'm' }]).message, 'body.~1 m', '~01 is a literal ~1, not /')
  t.equal(invalidRequest('body', [{ instancePath: '/~0~1~1~0', message: 'm' }]).message, 'body.~//~ m')
})

t.test('invalidRequest lists every error, not only the first', async (t) => {
  const error = invalidRequest('body', [
    { instancePath: '/name', message: 'must be string' },
    { instancePath: '', message: 'must have required property \'age\'', params: { missingProperty: 'age' } },
    { instancePath: '/breed', message: 'must be string' }
  ])
  t.equal(error.message, 'body.name must be string, body.age must have required property \'age\', body.breed must be string')
  t.equal(error.validation?.length, 3)
})

t.test('invalidRequest with an entry without a message says "is invalid"', async (t) => {
  t.equal(invalidRequest('body', [{ instancePath: '/a' }]).message, 'body.a is invalid')
})

t.test('at most MAX_ISSUES issues are listed, the first ones found', async (t) => {
  t.equal(MAX_ISSUES, 10)
  const errors: FieldError[] = Array.from({ length: 5000 }, (_, index) => ({ instancePath: `/f${index}`, message: 'must be string' }))
  const issues = toIssues('body', errors)
  t.equal(issues.length, MAX_ISSUES)
  t.strictSame(issues.map((issue) => issue.field), Array.from({ length: MAX_ISSUES }, (_, index) => `body.f${index}`))
  t.equal(toIssues('body', errors.slice(0, MAX_ISSUES)).length, MAX_ISSUES, 'exactly the cap: all of them')
})

t.test('field names and messages are shortened to their caps, keeping both ends', async (t) => {
  t.equal(MAX_FIELD_CHARS, 100)
  t.equal(MAX_ISSUE_MESSAGE_CHARS, 100)
  const deepPath = Array.from({ length: 31 }, (_, level) => `/${String(level).padStart(3, '0')}${'k'.repeat(122)}`).join('') + '/7'
  const [issue] = toIssues('body', [{ instancePath: deepPath, message: `must not be ${'very '.repeat(500)}long` }])
  t.equal(issue.field.length, MAX_FIELD_CHARS)
  t.ok(issue.field.startsWith('body.000kkk'), 'the start says where in the body')
  t.ok(issue.field.endsWith('kkk.7'), 'the end names the failing key')
  t.match(issue.field, /…/)
  t.equal(issue.message.length, MAX_ISSUE_MESSAGE_CHARS)
  t.ok(issue.message.startsWith('must not be very') && issue.message.endsWith('very long'))
  const fits = `/${'a'.repeat(MAX_FIELD_CHARS - 'body.'.length)}`
  t.equal(toIssues('body', [{ instancePath: fits, message: 'm' }])[0].field, `body.${'a'.repeat(95)}`, 'a name at the cap is kept whole')
})

t.test('invalidRequest lists in its message as many whole issues as fit, then an ellipsis', async (t) => {
  const long = (index: number): FieldError => ({ instancePath: `/${String(index)}${'x'.repeat(300)}`, message: 'must be string' })
  const error = invalidRequest('body', Array.from({ length: 50 }, (_, index) => long(index)))
  t.ok(error.message.length <= MAX_MESSAGE_CHARS, `${error.message.length} characters`)
  const listed = error.message.split(', ')
  t.equal(listed.at(-1), '…', 'the message says that more follow')
  t.equal(listed.length - 1, 3, 'three whole issues of 115 characters fit in 400')
  t.ok(listed.slice(0, -1).every((entry) => entry.endsWith(' must be string')), 'no issue is cut in the middle')
  t.equal(invalidRequest('body', [long(1)]).message.endsWith('…'), false, 'a single issue always fits whole')
})
