import t from 'tap'
import Fastify from 'fastify'
import serviceApp from '../../../src/app.js'
import { build, testConfig } from '../../support/app.js'

interface Operation {
  tags?: string[]
  summary?: string
  security?: unknown
  responses: Record<string, Response>
}

interface Response {
  description: string
  content: Record<string, { examples?: Record<string, { value: { statusCode: number, code: string } }> }>
}

t.test('OpenAPI 3.1 at /docs/json documents every route, status and the bearer scheme', async (t) => {
  const app = await build(t)
  const res = await app.inject('/docs/json')
  t.equal(res.statusCode, 200)
  const doc = res.json()
  t.equal(doc.openapi, '3.1.0')
  t.strictSame(doc.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
  t.strictSame(Object.keys(doc.paths).sort(), ['/.well-known/jwks.json', '/auth/login', '/auth/logout', '/auth/sessions', '/auth/sessions/{id}', '/cats', '/cats/{id}', '/health', '/health/ready', '/profile'])
  const op = (path: string, method: string): Operation => doc.paths[path][method]
  t.strictSame(Object.keys(op('/auth/login', 'post').responses).sort(), ['200', '400', '401', '413', '415', '429', '503'])
  t.strictSame(Object.keys(op('/cats', 'post').responses).sort(), ['201', '400', '409', '413', '415', '422', '503', '507'])
  t.strictSame(Object.keys(op('/cats/{id}', 'get').responses).sort(), ['200', '304', '400', '412', '503'])
  t.strictSame(op('/profile', 'get').security, [{ bearerAuth: [] }], '/profile is marked as guarded')
  t.strictSame(op('/cats', 'get').security, [], 'public cats routes declare that they need no token')
  for (const [path, methods] of Object.entries<Record<string, Operation>>(doc.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      t.ok(operation.tags !== undefined && operation.tags.length > 0, `${method} ${path} has tags`)
      t.ok(operation.summary, `${method} ${path} has a summary`)
    }
  }
  t.strictSame(doc.paths['/cats'].post.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/NewCat' })
  const body = doc.components.schemas.NewCat
  t.strictSame(body.required, ['name', 'age', 'breed'])
  t.equal(body.properties.age.type, 'integer')
  t.equal(body.additionalProperties, undefined, 'extra fields are dropped, not refused, so the document does not forbid them')
  t.equal(doc.components.schemas.LoginRequest.additionalProperties, undefined)
  t.equal(doc.components.schemas.Cat.additionalProperties, false, 'response schemas keep it: the serializer sends nothing else')
})

t.test('OpenAPI marks every cats route as guarded when CATS_AUTH=required', async (t) => {
  const app = await build(t, { CATS_AUTH: 'required' })
  const doc = (await app.inject('/docs/json')).json()
  for (const [path, methods] of Object.entries<Record<string, Operation>>(doc.paths)) {
    if (!path.startsWith('/cats')) continue
    for (const [method, operation] of Object.entries(methods)) {
      t.strictSame(operation.security, [{ bearerAuth: [] }], `${method} ${path}`)
      t.ok('401' in operation.responses, `${method} ${path} documents 401`)
    }
  }
})

t.test('the docs UI is served at /docs', async (t) => {
  const app = await build(t)
  const res = await app.inject('/docs/')
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /text\/html/)
})

t.test('every operation has its stable operationId, and components are named from $id', async (t) => {
  const app = await build(t)
  const doc = (await app.inject('/docs/json')).json()
  const ids = Object.values<Record<string, { operationId: string }>>(doc.paths).flatMap((methods) => Object.values(methods).map((o) => o.operationId))
  t.strictSame(ids.sort(), ['createCat', 'deleteCat', 'endSession', 'getCat', 'getHealth', 'getJwks', 'getProfile', 'getReadiness', 'listCats', 'listSessions', 'login', 'logout', 'patchCat', 'updateCat'])
  t.strictSame(Object.keys(doc.components.schemas).sort(),
    ['Cat', 'DeleteResult', 'Error', 'Identity', 'LoginRequest', 'LoginResponse', 'NewCat', 'ProblemDetails', 'StoredCat', 'ValidationIssue'])
  t.strictSame(doc.components.schemas.StoredCat.required, ['id', 'name', 'age', 'breed'])
  t.equal(doc.components.schemas.StoredCat.additionalProperties, true)
  t.strictSame(doc.servers, [{ url: '/', description: 'This server' }])
  t.strictSame(doc.info.license, { name: 'MIT', identifier: 'MIT' })
})

t.test('the path id is an integer in the document; the wire still takes only decimal digits', async (t) => {
  const app = await build(t)
  const doc = (await app.inject('/docs/json')).json()
  const [id] = doc.paths['/cats/{id}'].get.parameters
  t.equal(id.schema.type, 'integer')
  t.equal(id.schema.pattern, undefined)
  for (const bad of ['1e1', '0x10', '1.5']) t.equal((await app.inject(`/cats/${bad}`)).statusCode, 400, bad)
})

t.test('a missing cat is a text/plain 200 in the document, apart from the cat', async (t) => {
  const app = await build(t)
  const doc = (await app.inject('/docs/json')).json()
  for (const method of ['get', 'put']) {
    const content = doc.paths['/cats/{id}'][method].responses['200'].content
    t.strictSame(Object.keys(content).sort(), ['application/json', 'text/plain'])
    t.equal(content['text/plain'].schema.maxLength, 0)
  }
  const res = await app.inject('/cats/404')
  t.equal(res.headers['content-type'], 'text/plain; charset=utf-8')
  t.equal(res.body, '')
})

t.test('every error response has an example of its own status', async (t) => {
  const app = await build(t, { CATS_AUTH: 'required' })
  const doc = (await app.inject('/docs/json')).json()
  let checked = 0
  for (const methods of Object.values<Record<string, Operation>>(doc.paths)) {
    for (const operation of Object.values(methods)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        t.not(response.description, 'Default Response')
        if (Number(status) < 400 || operation.summary?.startsWith('Readiness') === true) continue
        const examples = Object.values(response.content['application/json'].examples ?? {})
        t.ok(examples.length > 0, `${operation.summary} ${status} has examples`)
        for (const { value } of examples) t.equal(value.statusCode, Number(status), `${value.code} under ${status}`)
        checked++
      }
    }
  }
  t.ok(checked > 20)
})

t.test('under a prefix the servers entry is the prefix', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  await host.register(serviceApp, { prefix: '/api', config: { ...testConfig, DOCS_ENABLED: true } })
  const res = await host.inject('/api/docs/json')
  t.equal(res.statusCode, 200, res.body.slice(0, 200))
  const doc = res.json()
  t.strictSame(doc.servers, [{ url: '/api', description: 'This server' }])
  t.ok('/cats' in doc.paths, 'paths are relative to the server url')
})

t.test('DOCS_ENABLED=false turns off /docs and /docs/json', async (t) => {
  const app = await build(t, { DOCS_ENABLED: false })
  t.equal((await app.inject('/docs/json')).statusCode, 404)
  t.equal((await app.inject('/docs')).statusCode, 404)
  t.equal(typeof app.swagger, 'function', 'the document can still be generated in-process')
})

t.test('under a host prefix, /api/docs links its assets inside the prefix, with and without the trailing slash', async (t) => {
  const host = Fastify()
  await host.register(serviceApp, { prefix: '/api', config: testConfig })
  t.teardown(() => host.close())
  for (const page of ['/api/docs', '/api/docs/']) {
    const html = (await host.inject(page)).body
    const assets = [...html.matchAll(/(?:href|src)="([^"]+)"/g)].map((match) => new URL(match[1], `http://host${page}`).pathname)
    t.equal(assets.length, 7, `${page} links the UI's styles, scripts and icons`)
    for (const asset of assets) {
      t.match(asset, /^\/api\/docs\/static\//, `${page}: ${asset}`)
      t.equal((await host.inject(asset)).statusCode, 200, `${page}: ${asset} is served`)
    }
  }
})

t.test('the session operations: logout always, refresh with refresh tokens on, with their errors and examples', async (t) => {
  const app = await build(t, { REFRESH_TOKENS: true })
  const doc = (await app.inject('/docs/json')).json()
  const logout = doc.paths['/auth/logout'].post
  t.equal(logout.operationId, 'logout')
  t.strictSame(logout.security, [{ bearerAuth: [] }])
  t.strictSame(Object.keys(logout.responses).sort(), ['204', '400', '401', '503'])
  t.match(logout.parameters, [{ in: 'query', name: 'scope', schema: { enum: ['local', 'others', 'global'], default: 'local' } }])
  const sessions = doc.paths['/auth/sessions'].get
  t.equal(sessions.operationId, 'listSessions')
  t.strictSame(sessions.security, [{ bearerAuth: [] }])
  t.strictSame(Object.keys(sessions.responses).sort(), ['200', '401', '503'])
  t.match(sessions.responses['200'].content['application/json'].example, [{ current: true }, { current: false }], 'the list has an example')
  const end = doc.paths['/auth/sessions/{id}'].delete
  t.equal(end.operationId, 'endSession')
  t.strictSame(Object.keys(end.responses).sort(), ['204', '400', '401', '404', '503'])
  t.match(Object.values(end.responses['404'].content['application/json'].examples), [{ value: { code: 'AUTH_ERR_SESSION_NOT_FOUND' } }])
  const refresh = doc.paths['/auth/refresh'].post
  t.equal(refresh.operationId, 'refreshToken')
  t.strictSame(refresh.security, [], 'no bearer token: the refresh token in the body is the credential')
  t.strictSame(Object.keys(refresh.responses).sort(), ['200', '400', '401', '413', '415', '429', '503'])
  t.strictSame(refresh.requestBody.content['application/json'].schema.required, ['refresh_token'])
  t.match(refresh.requestBody.content['application/json'].example, { refresh_token: /^[\w-]{43}$/ })
  t.match(refresh.responses['200'].content['application/json'].schema.required, ['access_token', 'token_type', 'expires_in', 'refresh_token'])
  t.ok(refresh.responses['200'].content['application/json'].example, 'the reply has an example')
  t.strictSame(doc.paths['/auth/login'].post.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/LoginResponse' })
  const login = doc.components.schemas.LoginResponse
  t.notOk(login.required.includes('refresh_token'), 'refresh_token is optional in the login reply')
  t.ok(login.properties.refresh_token)
})

t.test('the login body carries a working example, which Swagger UI pre-fills', async (t) => {
  const app = await build(t)
  const doc = (await app.inject('/docs/json')).json()
  t.strictSame(doc.paths['/auth/login'].post.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/LoginRequest' })
  const [example] = doc.components.schemas.LoginRequest.examples
  t.strictSame(example, { username: 'john', password: 'changeme' })
  t.equal((await app.inject({ method: 'POST', url: '/auth/login', payload: example })).statusCode, 200, 'the example logs in as a demo user')
})
