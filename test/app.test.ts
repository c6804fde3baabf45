import t from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify from 'fastify'
import serviceApp from '../src/app.js'
import { build, bearer, logCapture, tokenFor, testConfig } from './support/app.js'

t.test('an unknown route gets 404 in the error shape', async (t) => {
  const app = await build(t)
  const res = await app.inject('/nope')
  t.equal(res.statusCode, 404)
  t.strictSame(res.json(), { statusCode: 404, error: 'Not Found', message: 'Route GET /nope not found', code: 'HTTP_ERR_ROUTE_NOT_FOUND' })
})

t.test('malformed JSON gets 400 in the error shape', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'POST', url: '/cats', payload: '{"name": "Tom",', headers: { 'content-type': 'application/json' } })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { statusCode: 400, error: 'Bad Request', code: 'FST_ERR_CTP_INVALID_JSON_BODY' })
  t.strictSame(Object.keys(res.json()).sort(), ['code', 'error', 'message', 'statusCode'])
})

t.test('a body over BODY_LIMIT gets 413', async (t) => {
  const app = await build(t, { BODY_LIMIT: 1024 })
  const payload = JSON.stringify({ name: 'x'.repeat(2000), age: 1, breed: 'y' })
  for (const [method, url] of [['POST', '/cats'], ['PUT', '/cats/1'], ['POST', '/auth/login']] as const) {
    const res = await app.inject({ method, url, payload, headers: { 'content-type': 'application/json' } })
    t.equal(res.statusCode, 413, `${method} ${url}`)
    t.match(res.json(), { statusCode: 413, error: 'Payload Too Large', code: 'FST_ERR_CTP_BODY_TOO_LARGE' })
  }
})

t.test('a non-JSON body on a JSON route gets 415', async (t) => {
  const app = await build(t)
  for (const [method, url] of [['POST', '/cats'], ['PUT', '/cats/1']] as const) {
    const res = await app.inject({ method, url, payload: 'name=Tom', headers: { 'content-type': 'text/plain' } })
    t.equal(res.statusCode, 415, `${method} ${url}`)
    t.match(res.json(), { statusCode: 415, error: 'Unsupported Media Type' })
  }
})

t.test('an unexpected error is a 500 that says only that, and is logged', async (t) => {
  const { stream, text: logged } = logCapture()
  const app = Fastify({ logger: { level: 'error', stream } })
  await app.register(serviceApp, {
    config: testConfig,
    validateToken: () => { throw new Error('database at /var/secret/path exploded') }
  })
  t.teardown(() => app.close())
  const signer = await build(t)
  const res = await app.inject({ url: '/profile', headers: bearer(tokenFor(signer)) })
  t.equal(res.statusCode, 500)
  t.strictSame(res.json(), { statusCode: 500, error: 'Internal Server Error', message: 'An internal error occurred', code: 'HTTP_ERR_INTERNAL' })
  t.notMatch(res.body, /secret|exploded|at /)
  t.match(logged(), /database at \/var\/secret\/path exploded/, 'the real error is in the log')
})

t.test('invalid plugin options stop the app from starting, naming the setting', async (t) => {
  const app = Fastify()
  await t.rejects(async () => app.register(serviceApp, { config: { JWT_SECRET: 'short' } }).ready(), /JWT_SECRET must NOT have fewer than 32 characters/)
})

t.test('with NODE_ENV=production the app refuses to start without users', async (t) => {
  const app = Fastify()
  await t.rejects(async () => app.register(serviceApp, { config: { ...testConfig, NODE_ENV: 'production' } }).ready(), /USERS_FILE is required/)
})

t.test('the demo users come with a warning in the log', async (t) => {
  const { stream, text: logged } = logCapture()
  const app = Fastify({ logger: { level: 'warn', stream } })
  await app.register(serviceApp, { config: testConfig })
  await app.ready()
  t.teardown(() => app.close())
  t.match(logged(), /USERS_FILE is not set: using the demo users/)
})

t.test('USERS_FILE replaces the demo users', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'users-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'users.json')
  writeFileSync(file, JSON.stringify([{ id: 10, username: 'ada', passwordHash: '$scrypt$ln=10,r=8,p=1$q6oWbA90Lr/l+Y0SOJ83EQ$llvcE2rL78HZcG9bzR6jdAIQ+AyXOg21By5iU+jlmgk' }]))
  const app = await build(t, { USERS_FILE: file, NODE_ENV: 'production' })
  const login = (username: string, password: string) => app.inject({ method: 'POST', url: '/auth/login', payload: { username, password } })
  t.equal((await login('ada', 'lovelace')).statusCode, 200)
  t.equal((await login('john', 'changeme')).statusCode, 401, 'demo users are gone')
})

t.test('a malformed USERS_FILE stops start-up with a clear message', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'users-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'users.json')
  writeFileSync(file, JSON.stringify([{ id: 10, username: 'ada' }]))
  const app = Fastify()
  await t.rejects(async () => app.register(serviceApp, { config: { ...testConfig, USERS_FILE: file } }).ready(), /USERS_FILE .*users\.json/)
})
