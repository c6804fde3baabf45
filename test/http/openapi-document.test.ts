import t from 'tap'
import { Type } from '@sinclair/typebox'
import { documentParams, documentRequiredHeader } from '../../src/http/openapi-document.js'
import { IntegerText } from '../../src/http/schemas.js'

t.test('documentParams shows decimal-digit params as integers and leaves every other param and schema as it is', async (t) => {
  const noParams = { body: Type.Object({}) }
  t.equal(documentParams(noParams), noParams)
  const params = Type.Object({ id: IntegerText('An id'), name: Type.String({ pattern: '^[a-z]+$' }) })
  const documented = documentParams({ params })
  t.strictSame(documented.params, {
    ...params,
    properties: {
      id: { type: 'integer', minimum: -999_999_999_999_999, maximum: 999_999_999_999_999, description: 'An id' },
      name: params.properties.name
    }
  })
  t.equal(params.properties.id.type, 'string', 'the route schema itself is not changed')
})

t.test('documentRequiredHeader adds the header to those required, and leaves a schema without it as it is', async (t) => {
  const ifMatch = { type: 'string' }
  t.strictSame(documentRequiredHeader({ headers: { type: 'object', properties: { 'if-match': ifMatch } } }, 'if-match'),
    { headers: { type: 'object', properties: { 'if-match': ifMatch }, required: ['if-match'] } })
  t.strictSame(documentRequiredHeader({ headers: { type: 'object', properties: { a: ifMatch, 'if-match': ifMatch }, required: ['a'] } }, 'if-match'),
    { headers: { type: 'object', properties: { a: ifMatch, 'if-match': ifMatch }, required: ['a', 'if-match'] } })
  const without = { headers: { type: 'object', properties: { a: ifMatch } } }
  t.equal(documentRequiredHeader(without, 'if-match'), without)
  const none = { body: { type: 'object' } }
  t.equal(documentRequiredHeader(none, 'if-match'), none)
})
