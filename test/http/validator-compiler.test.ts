import t from 'tap'
import { Ajv, type ValidateFunction } from 'ajv'
import { Type } from '@sinclair/typebox'
import { createValidatorCompiler, validatorOnFirstUse } from '../../src/http/validator-compiler.js'

/** A compile function that counts its calls. */
function counting (compile: () => ValidateFunction): { compile: () => ValidateFunction, calls: () => number } {
  let calls = 0
  return { compile: () => { calls++; return compile() }, calls: () => calls }
}

t.test('a validator compiles its schema when first called, once', async (t) => {
  const ajv = new Ajv({ allErrors: true })
  const schema = Type.Object({ age: Type.Integer() })
  const { compile, calls } = counting(() => ajv.compile(schema))
  const validate = validatorOnFirstUse(compile)
  t.equal(calls(), 0, 'nothing is compiled when the route is set up')
  t.equal(validate({ age: 3 }), true)
  t.equal(validate.errors, null, 'no errors after a valid value')
  t.equal(validate({ age: 'x' }), false)
  t.match(validate.errors, [{ instancePath: '/age', message: 'must be integer' }], 'the errors of the failed call')
  t.equal(calls(), 1, 'compiled once for every call')
})

t.test('a validator passes on the compiled schemaEnv and the parent data, so Ajv can replace a coerced root', async (t) => {
  const ajv = new Ajv({ coerceTypes: true })
  let compiled: ValidateFunction | undefined
  const validate = validatorOnFirstUse(() => (compiled = ajv.compile(Type.Integer())))
  t.ok(Object.getOwnPropertyDescriptor(validate, 'schemaEnv') !== undefined, 'Fastify finds a schemaEnv')
  const schemaEnv: unknown = Reflect.get(validate, 'schemaEnv')
  t.equal(schemaEnv, compiled?.schemaEnv, 'the compiled validator\'s, read when Fastify first asks')
  const parent = { id: '42' }
  t.equal(validate(parent.id, { parentData: parent, parentDataProperty: 'id', instancePath: '', rootData: parent, dynamicAnchors: {} }), true)
  t.strictSame(parent, { id: 42 }, 'the coerced value replaced the string in its parent')
})

t.test('the app\'s validators compile on first use: bodies uncoerced, other parts coerced', async (t) => {
  const compiler = createValidatorCompiler([])
  const schema = Type.Object({ n: Type.Integer() })
  const body = compiler({ schema, method: 'POST', url: '/', httpPart: 'body' })
  const query = compiler({ schema, method: 'GET', url: '/', httpPart: 'querystring' })
  t.equal(body({ n: '3' }), false, 'a body string is not an integer')
  const data = { n: '3' }
  t.equal(query(data), true)
  t.strictSame(data, { n: 3 }, 'a querystring string is coerced')
})
