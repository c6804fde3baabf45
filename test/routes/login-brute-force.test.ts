import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import serviceApp from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { serverOptions } from '../../src/http/server-options.js'
import { build, testConfig } from '../support/app.js'

// The login's brute-force protection as a deployment meets it: the lock per username and client, the client
// address behind a proxy, and the shared failure counters out of reach.

const login = (app: FastifyInstance, username: string, password: string, remoteAddress = '127.0.0.1') =>
  app.inject({ method: 'POST', url: '/auth/login', payload: { username, password }, remoteAddress })

t.test('brute force: failures lock one username from one client (429 + Retry-After), not the owner elsewhere', async (t) => {
  const app = await build(t, { LOGIN_MAX_FAILURES: 3 })
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await login(app, 'john', 'wrong')).statusCode)
  t.strictSame(statuses, [401, 401, 401, 429])
  const limited = await login(app, 'john', 'changeme')
  t.equal(limited.statusCode, 429, 'even the right password is refused while locked')
  const retryAfter = Number(limited.headers['retry-after'])
  t.strictSame(limited.json(), { statusCode: 429, error: 'Too Many Requests', message: `Too many login attempts; retry in ${retryAfter} seconds`, code: 'AUTH_ERR_TOO_MANY_ATTEMPTS' })
  t.equal((await login(app, 'john', 'changeme', '10.0.0.9')).statusCode, 200, 'the owner from another client is not affected')
})

t.test('TRUST_PROXY: behind a proxy the client address comes from X-Forwarded-For', async (t) => {
  const config = loadConfig({ ...testConfig, TRUST_PROXY: '1', LOGIN_CLIENT_MAX_FAILURES: 1, LOG_LEVEL: 'silent' })
  const app = Fastify(serverOptions(config))
  await app.register(serviceApp, { config })
  t.teardown(() => app.close())
  const from = (client: string) => app.inject({ method: 'POST', url: '/auth/login', payload: { username: `u-${client}`, password: 'x' }, headers: { 'x-forwarded-for': client } })
  t.equal((await from('203.0.113.1')).statusCode, 401)
  t.equal((await from('203.0.113.1')).statusCode, 401)
  t.equal((await from('203.0.113.1')).statusCode, 429, 'more failures than the cap from that forwarded client')
  t.equal((await from('203.0.113.2')).statusCode, 401, 'a different forwarded client has its own count')
})

t.test('REDIS_URL: when the shared failure counters are unreachable, login answers 503 at once', async (t) => {
  // Port 1 on loopback refuses connections: the limiter fails fast instead of queueing or hanging.
  const app = await build(t, { REDIS_URL: 'redis://127.0.0.1:1' })
  const res = await login(app, 'john', 'changeme')
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '5')
  t.strictSame(res.json(), { statusCode: 503, error: 'Service Unavailable', message: 'Login is unavailable: the rate limit store cannot be reached', code: 'AUTH_ERR_LIMITER_UNAVAILABLE' })
  t.equal((await app.inject('/cats')).statusCode, 200, 'other routes are unaffected')
})
