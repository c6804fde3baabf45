import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import serviceApp from '../src/app.js'
import tokenGuard from '../src/token-guard-plugin.js'
import { DEMO_USERS } from '../src/auth/demo-users.js'
import { testConfig } from './support/app.js'

t.test('a host guards its own route with the service\'s tokens; the decorator stays in the scope that asked', async (t) => {
  const host = Fastify()
  await host.register(serviceApp, { prefix: '/api', config: testConfig })
  let guarded: FastifyInstance | undefined
  await host.register(async (scope) => {
    await scope.register(tokenGuard, { config: testConfig })
    scope.get('/reports', { onRequest: scope.authenticate }, async (request) => ({ for: request.user.username }))
    guarded = scope
  })
  host.get('/open', async () => ({ open: true }))
  await host.ready()
  t.teardown(() => host.close())

  const login = await host.inject({ method: 'POST', url: '/api/auth/login', payload: { username: 'chris', password: 'secret' } })
  const token: string = login.json().access_token
  const reports = await host.inject({ url: '/reports', headers: { authorization: `Bearer ${token}` } })
  t.strictSame([reports.statusCode, reports.json()], [200, { for: 'chris' }], 'a token from the service opens the host route')

  const missing = await host.inject('/reports')
  t.equal(missing.statusCode, 401)
  t.equal(missing.headers['www-authenticate'], 'Bearer')
  t.equal(missing.json().message, 'Missing bearer token')
  const forged = await host.inject({ url: '/reports', headers: { authorization: `Bearer ${token.slice(0, -2)}xx` } })
  t.equal(forged.statusCode, 401)
  t.equal(forged.headers['www-authenticate'], 'Bearer error="invalid_token"')

  t.strictSame((await host.inject('/open')).json(), { open: true }, 'routes outside the scope need no token')
  t.equal(guarded?.hasDecorator('authenticate'), true, 'the scope that registered the guard has it')
  t.equal(host.hasDecorator('authenticate'), false, 'the rest of the host does not')
  for (const name of ['config', 'jwt', 'users']) t.equal(guarded?.hasDecorator(name), false, `no ${name} decorator leaks into the host`)
})

t.test('the guard checks the same users as the service: a token of a user it does not know is refused', async (t) => {
  const host = Fastify()
  await host.register(serviceApp, { prefix: '/api', config: testConfig })
  await host.register(async (scope) => {
    await scope.register(tokenGuard, { config: testConfig, users: DEMO_USERS.filter((user) => user.username !== 'maria') })
    scope.get('/reports', { onRequest: scope.authenticate }, async (request) => request.user)
  })
  t.teardown(() => host.close())
  const tokenOf = async (username: string, password: string): Promise<string> =>
    (await host.inject({ method: 'POST', url: '/api/auth/login', payload: { username, password } })).json().access_token
  const john = await host.inject({ url: '/reports', headers: { authorization: `Bearer ${await tokenOf('john', 'changeme')}` } })
  t.strictSame(john.json(), { userId: 1, username: 'john' })
  const maria = await host.inject({ url: '/reports', headers: { authorization: `Bearer ${await tokenOf('maria', 'guess')}` } })
  t.equal(maria.statusCode, 401, 'maria is not among the users given to the guard')
})

t.test('awaited from the host\'s own async hook, the guard lets the request through or has answered 401', async (t) => {
  const host = Fastify()
  await host.register(serviceApp, { prefix: '/api', config: testConfig })
  // A host whose revocation check is asynchronous: the guard's promise path, awaited.
  const revokedUsers = new Set(['maria'])
  const answers: string[] = []
  await host.register(async (scope) => {
    await scope.register(tokenGuard, { config: testConfig, isRevoked: async (claims) => revokedUsers.has(claims.username) })
    scope.addHook('preHandler', async (request, reply) => {
      // Like an async hook that answered, the promise settles once the 401 has been sent.
      await scope.authenticate(request, reply)
      answers.push(reply.sent ? `answered ${reply.statusCode}` : 'through')
      if (reply.sent) return reply
    })
    scope.get('/reports', async (request) => ({ for: request.user.username }))
  })
  t.teardown(() => host.close())
  const tokenOf = async (username: string, password: string): Promise<string> =>
    (await host.inject({ method: 'POST', url: '/api/auth/login', payload: { username, password } })).json().access_token
  const chris = await host.inject({ url: '/reports', headers: { authorization: `Bearer ${await tokenOf('chris', 'secret')}` } })
  t.strictSame([chris.statusCode, chris.json()], [200, { for: 'chris' }])
  const maria = await host.inject({ url: '/reports', headers: { authorization: `Bearer ${await tokenOf('maria', 'guess')}` } })
  t.strictSame([maria.statusCode, maria.headers['www-authenticate']], [401, 'Bearer error="invalid_token"'], 'revoked by the host')
  const missing = await host.inject('/reports')
  t.strictSame([missing.statusCode, missing.json().message], [401, 'Missing bearer token'])
  t.strictSame(answers, ['through', 'answered 401', 'answered 401'], 'the host\'s hook goes on only with an accepted token')
})
