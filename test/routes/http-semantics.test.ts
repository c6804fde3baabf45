import t, { type Test } from 'tap'
import Fastify from 'fastify'
import serviceApp from '../../src/app.js'
import { loadConfig, type ConfigInput } from '../../src/config.js'
import { serverOptions } from '../../src/http/server-options.js'
import { testConfig } from '../support/app.js'
import { cheapDemoUsers } from '../support/cheap-users.js'

// The HTTP details of RFC 9110, 5789, 6750 and 9457, seen on the wire (the service served on a real socket, read with fetch): the challenges of
// every 401, Accept-Patch on a PATCH's 415, 405 with Allow for a known path (standalone and under a host's prefix),
// and no-store on every answer that carries tokens or sessions.

const users = await cheapDemoUsers()
const LOGIN_CHALLENGE = 'Login realm="cats-auth-service"'
const PROBLEM = { accept: 'application/problem+json' }
const JSON_TYPE = { 'content-type': 'application/json' }

/** The service as the standalone server runs it, or registered by a bare host under `prefix`; its base URL. */
async function serve (t: Test, settings: Partial<ConfigInput> = {}, prefix?: string): Promise<string> {
  const config = loadConfig({ ...testConfig, REFRESH_TOKENS: 'true', ...settings })
  const app = prefix === undefined ? Fastify(serverOptions(config)) : Fastify()
  await app.register(serviceApp, { config, users, ...(prefix === undefined ? {} : { prefix }) })
  if (prefix !== undefined) app.get('/elsewhere', async () => ({ host: true }))
  t.teardown(() => app.close())
  return await app.listen({ host: '127.0.0.1', port: 0 })
}

const post = async (url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> =>
  await fetch(url, { method: 'POST', headers: { ...JSON_TYPE, ...headers }, body: JSON.stringify(body) })

t.test('every 401 carries a challenge: Bearer from the guard, the service\'s own Login scheme from login and refresh', async (t) => {
  const base = await serve(t)
  const wrong = await post(`${base}/auth/login`, { username: 'john', password: 'wrong' })
  t.equal(wrong.status, 401)
  t.equal(wrong.headers.get('www-authenticate'), LOGIN_CHALLENGE, 'a wrong password')
  const unknown = await post(`${base}/auth/refresh`, { refresh_token: 'not-a-token' })
  t.equal(unknown.status, 401)
  t.equal(unknown.headers.get('www-authenticate'), LOGIN_CHALLENGE, 'a refused refresh token')
  const asProblem = await post(`${base}/auth/login`, { username: 'john', password: 'wrong' }, PROBLEM)
  t.equal(asProblem.headers.get('www-authenticate'), LOGIN_CHALLENGE, 'Problem Details too')
  t.equal(asProblem.headers.get('content-type'), 'application/problem+json; charset=utf-8')
  const missing = await fetch(`${base}/profile`)
  t.strictSame([missing.status, missing.headers.get('www-authenticate')], [401, 'Bearer'], 'the guard stays Bearer (RFC 6750)')
  const invalid = await fetch(`${base}/auth/sessions`, { headers: { authorization: 'Bearer x.y.z' } })
  t.strictSame([invalid.status, invalid.headers.get('www-authenticate')], [401, 'Bearer error="invalid_token"'])
})

t.test('a 415 on PATCH names the patch format it takes (Accept-Patch, RFC 5789); other 415s do not', async (t) => {
  const base = await serve(t)
  t.equal((await post(`${base}/cats`, { name: 'Tom', age: 3, breed: 'Siamese' })).status, 201)
  const patch = await fetch(`${base}/cats/1`, { method: 'PATCH', headers: JSON_TYPE, body: '{"age":4}' })
  t.strictSame([patch.status, patch.headers.get('accept-patch')], [415, 'application/merge-patch+json'])
  const noType = await fetch(`${base}/cats/1`, { method: 'PATCH', body: '{"age":4}' })
  t.strictSame([noType.status, noType.headers.get('accept-patch')], [415, 'application/merge-patch+json'], 'text/plain, as fetch sends a string')
  const put = await fetch(`${base}/cats/1`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: '{}' })
  t.strictSame([put.status, put.headers.get('accept-patch')], [415, null])
  const patched = await fetch(`${base}/cats/1`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: '{"age":4}' })
  t.strictSame([patched.status, patched.headers.get('accept-patch')], [200, null])
})

/** The status, Allow and body code of a request. */
async function methodCheck (url: string, method: string, headers: Record<string, string> = {}): Promise<[number, string | null, unknown]> {
  const response = await fetch(url, { method, headers })
  const text = await response.text()
  const code: unknown = text === '' ? undefined : (JSON.parse(text) as { code?: unknown }).code
  return [response.status, response.headers.get('allow'), code]
}

const NOT_ALLOWED = 'HTTP_ERR_METHOD_NOT_ALLOWED'

t.test('a known path with a method it does not serve: 405 with Allow; an unknown path stays a 404', async (t) => {
  const base = await serve(t)
  t.strictSame(await methodCheck(`${base}/auth/login`, 'DELETE'), [405, 'POST', NOT_ALLOWED])
  t.strictSame(await methodCheck(`${base}/auth/login`, 'GET'), [405, 'POST', NOT_ALLOWED])
  t.strictSame(await methodCheck(`${base}/cats`, 'PUT'), [405, 'GET, HEAD, POST', NOT_ALLOWED])
  t.strictSame(await methodCheck(`${base}/health/`, 'DELETE'), [405, 'GET, HEAD', NOT_ALLOWED], 'a prefix\'s root with its slash')
  t.strictSame(await methodCheck(`${base}/auth/login/`, 'DELETE'), [404, null, 'HTTP_ERR_ROUTE_NOT_FOUND'], 'not served with a slash: no method is')
  t.strictSame(await methodCheck(`${base}/cats/7?x=1`, 'POST'), [405, 'GET, HEAD, PUT, PATCH, DELETE', NOT_ALLOWED], 'a parametric path, a query')
  t.strictSame(await methodCheck(`${base}/auth/sessions/abc`, 'GET'), [405, 'DELETE', NOT_ALLOWED])
  t.strictSame(await methodCheck(`${base}/.well-known/jwks.json`, 'POST'), [405, 'GET, HEAD', NOT_ALLOWED])
  // HEAD is served wherever GET is; elsewhere it is a 405 like any other method, without a body.
  t.strictSame(await methodCheck(`${base}/cats/7`, 'HEAD'), [200, null, undefined])
  t.strictSame(await methodCheck(`${base}/auth/login`, 'HEAD'), [405, 'POST', undefined])
  // OPTIONS is not served without CORS: its 405 lists what is.
  t.strictSame(await methodCheck(`${base}/cats`, 'OPTIONS'), [405, 'GET, HEAD, POST', NOT_ALLOWED])
  t.strictSame(await methodCheck(`${base}/nowhere`, 'POST'), [404, null, 'HTTP_ERR_ROUTE_NOT_FOUND'])
  t.strictSame(await methodCheck(`${base}/cats/7/toys`, 'GET'), [404, null, 'HTTP_ERR_ROUTE_NOT_FOUND'], 'a path below a route is not the route')
  t.strictSame(await methodCheck(`${base}/catsx`, 'PUT'), [404, null, 'HTTP_ERR_ROUTE_NOT_FOUND'])
  const problem = await fetch(`${base}/cats/7`, { method: 'POST', headers: PROBLEM })
  t.match(await problem.json(), { status: 405, title: 'Method Not Allowed', code: NOT_ALLOWED, instance: '/cats/7' })
  t.equal(problem.headers.get('allow'), 'GET, HEAD, PUT, PATCH, DELETE', 'Problem Details keep Allow')
})

t.test('405 under a host\'s prefix; the host\'s own paths stay the host\'s', async (t) => {
  const base = await serve(t, {}, '/api/cats-service')
  t.strictSame(await methodCheck(`${base}/api/cats-service/auth/login`, 'DELETE'), [405, 'POST', NOT_ALLOWED])
  t.strictSame(await methodCheck(`${base}/api/cats-service/cats/1`, 'POST'), [405, 'GET, HEAD, PUT, PATCH, DELETE', NOT_ALLOWED])
  t.strictSame(await methodCheck(`${base}/api/cats-service/nowhere`, 'GET'), [404, null, 'HTTP_ERR_ROUTE_NOT_FOUND'])
  t.strictSame(await methodCheck(`${base}/auth/login`, 'DELETE'), [404, null, undefined], 'the path without the prefix is not the service\'s')
  t.equal((await fetch(`${base}/elsewhere`, { method: 'POST' })).status, 404, 'the host\'s own route: the host\'s 404')
})

t.test('with CORS, OPTIONS is served (preflight) and Allow lists it', async (t) => {
  const base = await serve(t, { CORS_ORIGINS: 'https://cats.example' })
  const preflight = await fetch(`${base}/cats/1`, {
    method: 'OPTIONS', headers: { origin: 'https://cats.example', 'access-control-request-method': 'PATCH' }
  })
  t.equal(preflight.status, 204)
  t.strictSame(await methodCheck(`${base}/cats/1`, 'POST'), [405, 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS', NOT_ALLOWED])
  t.strictSame(await methodCheck(`${base}/nowhere`, 'POST'), [404, null, 'HTTP_ERR_ROUTE_NOT_FOUND'], 'CORS\'s catch-all makes no path known')
})

t.test('every answer that carries tokens or sessions is no-store', async (t) => {
  const base = await serve(t)
  const login = await post(`${base}/auth/login`, { username: 'john', password: 'changeme' })
  t.equal(login.headers.get('cache-control'), 'no-store', 'login')
  const tokens = await login.json() as { access_token: string, refresh_token: string }
  const refreshed = await post(`${base}/auth/refresh`, { refresh_token: tokens.refresh_token })
  t.strictSame([refreshed.status, refreshed.headers.get('cache-control')], [200, 'no-store'], 'refresh')
  const { access_token: token } = await refreshed.json() as { access_token: string }
  const sessions = await fetch(`${base}/auth/sessions`, { headers: { authorization: `Bearer ${token}` } })
  t.strictSame([sessions.status, sessions.headers.get('cache-control')], [200, 'no-store'], 'the session list')
})
