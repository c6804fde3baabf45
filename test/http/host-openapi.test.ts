import t from 'tap'
import { forHostDocument, openapiRefResolver, openapiSecuritySchemes } from '../../src/http/host-openapi.js'
import { ownComponentName } from '../../src/http/openapi-document.js'

const bearer = [{ bearerAuth: [] }]

t.test('openapiRefResolver names the service\'s schemas by their $id and leaves the others to the host\'s naming', async (t) => {
  const host = openapiRefResolver({ buildLocalReference: (json, _baseUri, _fragment, i) => `host-${String(json.$id)}-${i}` })
  t.equal(host.buildLocalReference({ $id: 'cats-auth-service.StoredCat' }, {}, '', 3), 'cats-auth-service.StoredCat')
  t.equal(host.buildLocalReference({ $id: 'StoredCat' }, {}, '', 3), 'host-StoredCat-3')
  // Without a host's naming, @fastify/swagger's default: def-N, titled by the $id.
  const plain = openapiRefResolver()
  const json: Record<string, unknown> = { $id: 'Pet' }
  t.equal(plain.buildLocalReference(json, {}, '', 7), 'def-7')
  t.equal(json.title, 'Pet')
  const titled: Record<string, unknown> = { $id: 'Pet', title: 'A pet' }
  plain.buildLocalReference(titled, {}, '', 8)
  t.equal(titled.title, 'A pet', 'a title of its own stays')
  t.equal(plain.buildLocalReference({ type: 'object' }, {}, '', 9), 'def-9')
})

t.test('the service\'s own document drops the namespace; a host\'s schemas get names apart', async (t) => {
  t.equal(ownComponentName({ $id: 'cats-auth-service.Error' }, {}, '', 0), 'Error')
  t.equal(ownComponentName({ $id: 'Error' }, {}, '', 4), 'host-schema-4')
})

t.test('forHostDocument names the service\'s scheme in the security and adds it to an OpenAPI document without it', async (t) => {
  const document = { openapiObject: {} }
  const schema = forHostDocument({ security: bearer, response: { 200: {}, 401: {} } }, document, false)
  t.strictSame(schema.security, [{ 'cats-auth-service.bearerAuth': [] }])
  t.strictSame(schema.response, { 200: {}, 401: {} }, 'a 4xx of its own: no 4XX added')
  t.strictSame(document.openapiObject, { components: { securitySchemes: openapiSecuritySchemes } })

  const hostSchemes = { bearerAuth: { type: 'http', scheme: 'bearer' } }
  const withHost = { openapiObject: { components: { securitySchemes: hostSchemes } } }
  forHostDocument({ security: [{ bearerAuth: [], apiKey: [] }] }, withHost, false)
  t.strictSame(withHost.openapiObject.components.securitySchemes, { ...hostSchemes, ...openapiSecuritySchemes })
  t.strictSame(hostSchemes, { bearerAuth: { type: 'http', scheme: 'bearer' } }, 'the host\'s own object is not changed')

  const passed = { openapiObject: { components: { securitySchemes: { ...openapiSecuritySchemes } } } }
  const before = passed.openapiObject.components.securitySchemes
  forHostDocument({ security: bearer }, passed, false)
  t.equal(passed.openapiObject.components.securitySchemes, before, 'a host that passed the scheme keeps its own')

  const publicRoute = { openapiObject: {} }
  t.strictSame(forHostDocument({ security: [], response: { 200: {} } }, publicRoute, false),
    { security: [], response: { 200: {}, '4XX': { type: 'null', description: 'Never sent by the service for this operation; the host app\'s own hooks (a rate limit, its authentication) may answer one' } } })
  t.strictSame(publicRoute.openapiObject, {}, 'no scheme is needed')
  t.strictSame(forHostDocument({}, publicRoute, false), { security: undefined, response: undefined })
})

t.test('forHostDocument in a Swagger 2 document: the scheme as an Authorization header', async (t) => {
  const document = { swaggerObject: {} }
  t.strictSame(forHostDocument({ security: bearer }, document, false).security, [{ 'cats-auth-service.bearerAuth': [] }])
  t.strictSame(document.swaggerObject, {
    securityDefinitions: { 'cats-auth-service.bearerAuth': { type: 'apiKey', in: 'header', name: 'Authorization', description: 'Bearer <an access token of the cats service>' } }
  })
  const before = (document.swaggerObject as { securityDefinitions: unknown }).securityDefinitions
  forHostDocument({ security: bearer }, document, false)
  t.equal((document.swaggerObject as { securityDefinitions: unknown }).securityDefinitions, before, 'added once')
})

t.test('forHostDocument hides the route and removes the service\'s schemas, by name or by title', async (t) => {
  const schemas = { 'cats-auth-service.Cat': {}, 'def-1': { title: 'cats-auth-service.Error' }, Pet: { title: 'Pet' }, 'def-2': { $ref: '#/x' } }
  const openapi = { openapiObject: { components: { schemas } } }
  t.strictSame(forHostDocument({ security: bearer }, openapi, true), { security: bearer, hide: true })
  t.strictSame(Object.keys(schemas), ['Pet', 'def-2'])
  const swagger2 = { swaggerObject: { definitions: { 'def-0': { title: 'cats-auth-service.Cat' }, Pet: {} } } }
  forHostDocument({}, swagger2, true)
  t.strictSame(Object.keys(swagger2.swaggerObject.definitions), ['Pet'])
  t.strictSame(forHostDocument({}, { openapiObject: {} }, true), { hide: true }, 'a document without components')
})
