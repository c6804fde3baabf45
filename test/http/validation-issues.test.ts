import t from 'tap'
import { invalidRequest, type FieldError } from '../../src/http/validation-issues.js'

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
