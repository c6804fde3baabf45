import t from 'tap'
import Fastify from 'fastify'
import serviceApp from '../src/app.js'
import { build, testConfig } from './support/app.js'

t.test('the service registers into a host app under a prefix without leaking', async (t) => {
  const host = Fastify({ pluginTimeout: 60_000 }) // generous: a loaded machine compiles the plugin slowly
  host.get('/health', async () => ({ host: true }))
  host.post('/echo', async (request) => ({ received: request.body }))
  await host.register(serviceApp, { prefix: '/api', config: { ...testConfig, CATS_AUTH: 'required' } })
  await host.ready()
  t.teardown(() => host.close())

  const login = await host.inject({ method: 'POST', url: '/api/auth/login', payload: { username: 'john', password: 'changeme' } })
  t.equal(login.statusCode, 200, 'login works under the prefix')
  const headers = { authorization: `Bearer ${login.json().access_token}` }
  t.strictSame((await host.inject({ url: '/api/profile', headers })).json(), { userId: 1, username: 'john' })
  const created = await host.inject({ method: 'POST', url: '/api/cats', headers, payload: { name: 'Tom', age: 3, breed: 'x' } })
  t.equal(created.statusCode, 201)
  t.equal((await host.inject({ url: '/api/cats/1', headers })).json().name, 'Tom')
  t.equal((await host.inject({ method: 'PUT', url: '/api/cats/1', headers, payload: { age: 4 } })).json().age, 4)
  t.strictSame((await host.inject({ url: '/api/cats', headers })).json(), [{ id: 1, name: 'Tom', age: 4, breed: 'x' }])
  t.strictSame((await host.inject({ method: 'DELETE', url: '/api/cats/1', headers })).json(), { deleted: true })
  t.equal((await host.inject({ url: '/api/cats' })).statusCode, 401, 'the guard protects the prefixed cats routes')
  t.equal((await host.inject({ url: '/api/docs/json' })).statusCode, 200, 'docs are served under the prefix')
  t.equal((await host.inject({ url: '/cats' })).statusCode, 404, 'nothing is served outside the prefix')
  t.equal((await host.inject({ url: '/api/api/cats', headers })).statusCode, 404, 'the prefix is applied once')

  // The host's own routes see none of the service's guard, validator, parsers or error handling.
  t.strictSame((await host.inject({ url: '/health' })).json(), { host: true }, 'host route needs no token')
  const text = await host.inject({ method: 'POST', url: '/echo', payload: 'hello', headers: { 'content-type': 'text/plain' } })
  t.strictSame(text.json(), { received: 'hello' }, 'the host keeps its text/plain parser')
  const notFound = await host.inject({ url: '/missing' })
  t.equal(notFound.statusCode, 404)
  t.equal(notFound.json().message, 'Route GET:/missing not found', 'the host keeps its own 404 handler')
  t.equal(host.hasDecorator('cats'), false, 'decorators stay inside the plugin')
  t.equal(host.hasDecorator('authenticate'), false)
  t.equal(host.hasRequestDecorator('user'), false)
})

t.test('two embedded instances keep separate state', async (t) => {
  const host = Fastify({ pluginTimeout: 60_000 }) // generous: a loaded machine compiles the plugin slowly
  await host.register(serviceApp, { prefix: '/a', config: testConfig })
  await host.register(serviceApp, { prefix: '/b', config: testConfig })
  t.teardown(() => host.close())
  await host.inject({ method: 'POST', url: '/a/cats', payload: { name: 'Tom', age: 3, breed: 'x' } })
  t.equal((await host.inject('/a/cats')).json().length, 1)
  t.strictSame((await host.inject('/b/cats')).json(), [])
})

t.test('building a test app leaves the exported plugin encapsulated, so a later prefix still applies', async (t) => {
  const app = await build(t)
  t.equal((await app.inject('/cats')).statusCode, 200)
  const host = Fastify()
  t.teardown(() => host.close())
  await host.register(serviceApp, { prefix: '/api', config: testConfig })
  t.equal((await host.inject('/api/cats')).statusCode, 200)
  t.equal((await host.inject('/cats')).statusCode, 404)
  t.equal(host.hasDecorator('catsStore'), false)
})
