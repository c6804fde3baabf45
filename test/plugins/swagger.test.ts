import t from 'tap'
import Fastify from 'fastify'
import serviceApp from '../../src/app.js'
import { build, testConfig } from '../support/app.js'

interface Operation {
  tags?: string[]
  summary?: string
  security?: unknown
  responses: Record<string, unknown>
}

t.test('OpenAPI 3.1 at /docs/json documents every route, status and the bearer scheme', async (t) => {
  const app = await build(t)
  const res = await app.inject('/docs/json')
  t.equal(res.statusCode, 200)
  const doc = res.json()
  t.equal(doc.openapi, '3.1.0')
  t.strictSame(doc.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
  t.strictSame(Object.keys(doc.paths).sort(), ['/auth/login', '/auth/logout', '/cats', '/cats/{id}', '/health', '/health/ready', '/profile'])
  const op = (path: string, method: string): Operation => doc.paths[path][method]
  t.strictSame(Object.keys(op('/auth/login', 'post').responses).sort(), ['200', '400', '401', '413', '415', '429', '503'])
  t.strictSame(Object.keys(op('/cats', 'post').responses).sort(), ['201', '400', '413', '415', '503', '507'])
  t.strictSame(Object.keys(op('/cats/{id}', 'get').responses).sort(), ['200', '400', '503'])
  t.strictSame(op('/profile', 'get').security, [{ bearerAuth: [] }], '/profile is marked as guarded')
  t.equal(op('/cats', 'get').security, undefined, 'public cats routes carry no security requirement')
  for (const [path, methods] of Object.entries<Record<string, Operation>>(doc.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      t.ok(operation.tags !== undefined && operation.tags.length > 0, `${method} ${path} has tags`)
      t.ok(operation.summary, `${method} ${path} has a summary`)
    }
  }
  const body = doc.paths['/cats'].post.requestBody.content['application/json'].schema
  t.strictSame(body.required, ['name', 'age', 'breed'])
  t.equal(body.properties.age.type, 'integer')
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
  t.strictSame(Object.keys(logout.responses).sort(), ['204', '401', '503'])
  const refresh = doc.paths['/auth/refresh'].post
  t.equal(refresh.operationId, 'refreshToken')
  t.equal(refresh.security, undefined, 'the refresh token is the credential')
  t.strictSame(Object.keys(refresh.responses).sort(), ['200', '400', '401', '413', '415', '503'])
  t.strictSame(refresh.requestBody.content['application/json'].schema.required, ['refresh_token'])
  t.match(refresh.requestBody.content['application/json'].example, { refresh_token: /^[\w-]{43}$/ })
  t.match(refresh.responses['200'].content['application/json'].schema.required, ['access_token', 'token_type', 'expires_in', 'refresh_token'])
  t.ok(refresh.responses['200'].content['application/json'].example, 'the reply has an example')
  const login = doc.paths['/auth/login'].post.responses['200'].content['application/json'].schema
  t.notOk(login.required.includes('refresh_token'), 'refresh_token is optional in the login reply')
  t.ok(login.properties.refresh_token)
})

t.test('the login body carries a working example, which Swagger UI pre-fills', async (t) => {
  const app = await build(t)
  const doc = (await app.inject('/docs/json')).json()
  const example = doc.paths['/auth/login'].post.requestBody.content['application/json'].example
  t.strictSame(example, { username: 'john', password: 'changeme' })
  t.equal((await app.inject({ method: 'POST', url: '/auth/login', payload: example })).statusCode, 200, 'the example logs in as a demo user')
})
