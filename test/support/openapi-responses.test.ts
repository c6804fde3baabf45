import t from 'tap'
import { openapiResponseChecker } from './openapi-responses.js'

const document = {
  openapi: '3.1.0',
  paths: {
    '/cats/{id}': {
      get: {
        responses: {
          200: {
            content: {
              'application/json': { schema: { $ref: '#/components/schemas/Cat' } },
              'text/plain': { schema: { type: 'string', maxLength: 0 } }
            }
          }
        }
      },
      delete: { responses: { 204: { description: 'No content' } } }
    }
  },
  components: { schemas: { Cat: { type: 'object', required: ['id'], properties: { id: { type: 'integer' } } } } }
}

const response = { method: 'GET', route: '/cats/:id', statusCode: 200, contentType: 'application/json; charset=utf-8', body: '{"id":1}' }

t.test('the response checker accepts what the document describes and names every mismatch', async (t) => {
  const check = openapiResponseChecker(document)
  t.equal(check(response), undefined, 'a documented JSON body, through a $ref')
  t.equal(check({ ...response, contentType: 'text/plain; charset=utf-8', body: '' }), undefined, 'the empty text/plain body')
  t.equal(check({ ...response, route: '/docs/json' }), undefined, 'routes the document does not list are not checked')
  t.equal(check({ ...response, statusCode: 404 }), 'GET /cats/{id} 404: status not documented')
  t.equal(check({ ...response, contentType: 'text/html' }), 'GET /cats/{id} 200: media type "text/html" not documented')
  t.match(check({ ...response, body: '{"id":"1"}' }), /^GET \/cats\/\{id\} 200: data\/id must be integer/)
  t.match(check({ ...response, contentType: 'text/plain', body: 'x' }), /must NOT have more than 0 characters/)
  t.throws(() => check({ ...response, body: 'not json' }), SyntaxError, 'a JSON media type whose body does not parse')
  const noContent = { ...response, method: 'DELETE', statusCode: 204, contentType: 'undefined', body: '' }
  t.equal(check(noContent), undefined, 'a 204 without a body, documented without content')
  t.equal(check({ ...noContent, body: 'x' }), 'DELETE /cats/{id} 204: a body where the document has none')
})
