import t from 'tap'
import { SerializerSelector, type SerializerFactory } from '@fastify/fast-json-stringify-compiler'
import { Type } from '@sinclair/typebox'
import { serializersOnFirstUse } from '../../src/http/serializer-compiler.js'

const route = (schema: unknown): { schema: unknown, method: string, url: string, httpStatus: string } =>
  ({ schema, method: 'GET', url: '/cats/:id', httpStatus: '200' })

t.test('a response serializer compiles when its first reply is sent, once', async (t) => {
  const compiled: unknown[] = []
  const given: unknown[] = []
  const build: SerializerFactory = (externalSchemas, options) => {
    given.push(externalSchemas, options)
    return (definition) => {
      compiled.push(definition.schema)
      return (doc) => JSON.stringify(doc)
    }
  }
  const compile = serializersOnFirstUse(build)({ Shared: {} }, { rounding: 'floor' })
  t.strictSame(given, [{ Shared: {} }, { rounding: 'floor' }], 'the shared schemas and options reach the factory')
  const schema = Type.Object({ id: Type.Integer() })
  const serialize = compile(route(schema))
  t.strictSame(compiled, [], 'nothing is compiled when the route is set up')
  t.equal(serialize({ id: 1 }), '{"id":1}')
  t.equal(serialize({ id: 2 }), '{"id":2}')
  t.strictSame(compiled, [schema], 'compiled once, with its route\'s schema')
})

t.test('with Fastify\'s own factory, the output is fast-json-stringify\'s, shared schemas included', async (t) => {
  const external = { Cat: Type.Object({ name: Type.String() }, { $id: 'Cat' }) }
  const schema = Type.Object({ cat: Type.Unsafe({ $ref: 'Cat#' }), extra: Type.Optional(Type.Never()) })
  const lazy = serializersOnFirstUse(SerializerSelector())(external)(route(schema))
  const eager = SerializerSelector()(external)(route(schema))
  const doc = { cat: { name: 'Tom', age: 3 }, other: true }
  t.equal(lazy(doc), eager(doc))
  t.equal(lazy(doc), '{"cat":{"name":"Tom"}}', 'properties outside the schema are left out')
})
