import t, { type Test } from 'tap'
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto'
import { promisify } from 'node:util'
import Fastify, { type FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { catsService, type AppOptions, type CatsService, type UserDirectory, type UserRecord } from '../src/app.js'
import { testConfig } from './support/app.js'
import { cheapDemoUsers } from './support/cheap-users.js'
import { adminClient, freshServerSchema, urlWithSchema } from './support/sql-schemas.js'
import { freshKeyPrefix } from './support/redis.js'
import { pgliteMigratedCopy } from './support/pglite-template.js'
import type { ConfigInput } from '../src/config.js'
import { verifyPassword } from '../src/auth/login/password.js'

const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
const users = await cheapDemoUsers()
const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` })

interface HostConfig { HOST_NAME: string }
/** A host shaped like fastify/demo's root: its own config, @fastify/jwt and authenticate, and a guarded route of the service's. */
async function hostWith (t: Test, options: AppOptions): Promise<{ host: FastifyInstance, service: CatsService, hostConfig: HostConfig }> {
  // A long plugin timeout for PGlite, whose start can take seconds on a busy machine.
  const host = Fastify({ pluginTimeout: 120_000 })
  t.teardown(() => host.close())
  const hostConfig: HostConfig = { HOST_NAME: 'demo' }
  host.decorate('config', hostConfig)
  await host.register(fastifyJwt, { secret: 'the host\'s own secret, not the service\'s' })
  host.decorate('authenticate', async function () { return 'the host\'s authenticate' })
  const service = catsService(options)
  await host.register(service.plugin, { prefix: '/api/cats-service' })
  host.get('/reports', { onRequest: service.guard }, async (request) => ({ for: service.identity(request).username }))
  host.get('/host-token', async () => ({ token: host.jwt.sign({ hostUser: 'ada' }) }))
  host.get('/host-only', { onRequest: async (request) => { await request.jwtVerify() } }, async (request) => request.user)
  await host.ready()
  return { host, service, hostConfig }
}

async function login (host: FastifyInstance, username: string, password: string): Promise<{ status: number, token: string, refresh: string, code: string }> {
  const res = await host.inject({ method: 'POST', url: '/api/cats-service/auth/login', payload: { username, password } })
  const body = res.json()
  return { status: res.statusCode, token: body.access_token, refresh: body.refresh_token, code: body.code }
}

t.test('under a host with its own config, @fastify/jwt and authenticate: it starts and touches none of them', async (t) => {
  const { host, hostConfig } = await hostWith(t, { config: testConfig, users })
  t.equal(host.getDecorator('config'), hostConfig, 'the host\'s config is the host\'s')
  t.equal(await host.getDecorator<() => Promise<string>>('authenticate')(), 'the host\'s authenticate')
  const bare = Fastify()
  await bare.register(fastifyJwt, { secret: 'another secret' }).ready()
  t.strictSame(Object.keys(host.jwt).sort(), Object.keys(bare.jwt).sort(), 'no namespace added to the host\'s jwt')
  await bare.close()
  // The host's own tokens and routes work as before.
  const hostToken: string = (await host.inject('/host-token')).json().token
  const hostOnly = await host.inject({ url: '/host-only', headers: bearer(hostToken) })
  t.match([hostOnly.statusCode, hostOnly.json()], [200, { hostUser: 'ada' }])
  // The service's flows under its prefix.
  const { status, token } = await login(host, 'john', 'changeme')
  t.equal(status, 200)
  t.strictSame((await host.inject({ url: '/api/cats-service/profile', headers: bearer(token) })).json(), { userId: 1, username: 'john' })
  t.strictSame((await host.inject({ url: '/reports', headers: bearer(token) })).json(), { for: 'john' })
  t.equal((await host.inject({ url: '/reports', headers: bearer(hostToken) })).statusCode, 401, 'the host\'s tokens are not the service\'s')
  t.equal((await host.inject({ url: '/host-only', headers: bearer(token) })).statusCode, 401, 'nor the service\'s the host\'s')
})

t.test('a host hook on the service\'s routes sees the host\'s decorators, not the service\'s', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  host.decorate('config', { HOST_NAME: 'demo' })
  const seen: unknown[] = []
  host.addHook('onRequest', async (request) => { seen.push(request.server.getDecorator<HostConfig>('config').HOST_NAME) })
  await host.register(catsService({ config: testConfig, users }).plugin, { prefix: '/api' })
  await host.inject('/api/health')
  t.strictSame(seen, ['demo'])
  for (const name of ['users', 'sessions', 'redis', 'database', 'metrics', 'dependencies', 'tokenKeys', 'jwt']) {
    t.equal(host.hasDecorator(name), false, `nothing named ${name} on the host`)
  }
  t.equal(host.hasRequestDecorator('user'), false, 'no request.user on the host')
})

t.test('the guard and identity fail clearly when misused; a service registers once', async (t) => {
  const service = catsService({ config: testConfig, users })
  const early = Fastify()
  t.teardown(() => early.close())
  early.get('/reports', { onRequest: service.guard }, async () => ({ ok: true }))
  const res = await early.inject('/reports')
  t.equal(res.statusCode, 500)
  t.match(res.json().message, /the guard was used before the service was ready/)

  const host = Fastify()
  t.teardown(() => host.close())
  await host.register(service.plugin, { prefix: '/a' })
  host.get('/unguarded', async (request) => service.identity(request))
  await host.ready()
  t.match((await host.inject('/unguarded')).json().message, /the token guard has not accepted this request/)
  const twice = Fastify()
  t.teardown(() => twice.close())
  await t.rejects(async () => { await twice.register(service.plugin, { prefix: '/b' }).ready() }, /registered already/)
})

/** Each store configuration the guard must agree with the service on. */
const stores: Array<{ name: string, config: (t: Test) => Promise<Partial<ConfigInput>> }> = [
  { name: 'memory', config: async () => ({}) },
  { name: 'PGlite', config: async (t) => ({ DATABASE_URL: `pglite://${await pgliteMigratedCopy(t)}` }) }
]
if (TEST_DATABASE_URL === undefined || TEST_DATABASE_URL === '') {
  t.comment('TEST_DATABASE_URL is not set: the guard\'s PostgreSQL runs were skipped')
} else {
  const url = TEST_DATABASE_URL
  stores.push({ name: 'PostgreSQL', config: async (t) => ({ DATABASE_URL: urlWithSchema(url, await freshServerSchema(t, await adminClient(t, url), 'guard')) }) })
}
if (TEST_REDIS_URL === undefined || TEST_REDIS_URL === '') {
  t.comment('TEST_REDIS_URL is not set: the guard\'s Redis run was skipped')
} else {
  const url = TEST_REDIS_URL
  stores.push({ name: 'Redis', config: async (t) => ({ REDIS_URL: url, REDIS_KEY_PREFIX: freshKeyPrefix(t, url) }) })
  if (TEST_DATABASE_URL !== undefined && TEST_DATABASE_URL !== '') {
    const databaseUrl = TEST_DATABASE_URL
    stores.push({
      name: 'PostgreSQL sessions and the Redis denylist',
      config: async (t) => ({
        DATABASE_URL: urlWithSchema(databaseUrl, await freshServerSchema(t, await adminClient(t, databaseUrl), 'guard')),
        REDIS_URL: url,
        REDIS_KEY_PREFIX: freshKeyPrefix(t, url)
      })
    })
  }
}

for (const store of stores) {
  t.test(`${store.name}: the host's guarded route refuses every token the service refuses`, async (t) => {
    // No grace for a repeated refresh: the second use below is a reuse at once.
    const config = { ...testConfig, REFRESH_TOKENS: true, REFRESH_REUSE_WINDOW: '0', ...await store.config(t) }
    const { host } = await hostWith(t, { config, users })
    // Redis connects after start-up: wait until readiness says it answers.
    while ((await host.inject('/api/cats-service/health/ready')).statusCode !== 200) await new Promise((resolve) => setTimeout(resolve, 20))
    const reports = async (token: string): Promise<number> => (await host.inject({ url: '/reports', headers: bearer(token) })).statusCode
    const logout = async (token: string, scope = 'local'): Promise<number> =>
      (await host.inject({ method: 'POST', url: `/api/cats-service/auth/logout?scope=${scope}`, headers: bearer(token) })).statusCode

    const local = await login(host, 'john', 'changeme')
    t.equal(await reports(local.token), 200)
    t.equal(await logout(local.token), 204)
    t.equal(await reports(local.token), 401, 'logged out')

    const [phone, laptop] = [await login(host, 'john', 'changeme'), await login(host, 'john', 'changeme')]
    t.equal(await logout(laptop.token, 'others'), 204)
    t.strictSame([await reports(phone.token), await reports(laptop.token)], [401, 200], 'scope=others ends the other device')
    t.equal(await logout(laptop.token, 'global'), 204)
    t.equal(await reports(laptop.token), 401, 'scope=global')

    const reused = await login(host, 'chris', 'secret')
    const refresh = async (token: string): Promise<number> =>
      (await host.inject({ method: 'POST', url: '/api/cats-service/auth/refresh', payload: { refresh_token: token } })).statusCode
    t.equal(await refresh(reused.refresh), 200)
    t.equal(await refresh(reused.refresh), 401, 'a reused refresh token')
    t.equal(await reports(reused.token), 401, 'ends its session for the host too')

    const ended = await login(host, 'maria', 'guess')
    const other = await login(host, 'maria', 'guess')
    const listed = (await host.inject({ url: '/api/cats-service/auth/sessions', headers: bearer(other.token) })).json()
    const id = listed.find((session: { current: boolean }) => !session.current).id
    t.equal((await host.inject({ method: 'DELETE', url: `/api/cats-service/auth/sessions/${id}`, headers: bearer(other.token) })).statusCode, 204)
    t.equal(await reports(ended.token), 401, 'a session ended by id')
  })
}

// demo's password format: scrypt with a random salt, both as hex, "salt.hash".
const scryptAsync = promisify(scrypt) as (password: string, salt: string, keyLength: number) => Promise<Buffer>
async function hexHash (password: string): Promise<string> {
  const salt = randomBytes(16).toString('hex')
  return `${salt}.${(await scryptAsync(password, salt, 32)).toString('hex')}`
}
async function hexVerify (password: string, stored: string): Promise<boolean> {
  const [salt, hash] = stored.split('.')
  return timingSafeEqual(await scryptAsync(password, salt, 32), Buffer.from(hash, 'hex'))
}

/** A host's accounts table, in memory, with its hash format; counts what the service asks of it. */
async function hostAccounts (initial: UserRecord[]): Promise<{ table: Map<string, UserRecord>, directory: UserDirectory, verified: string[], byId: number[] }> {
  const table = new Map(initial.map((user) => [user.username, user]))
  const verified: string[] = []
  const byId: number[] = []
  return {
    table,
    verified,
    byId,
    directory: {
      findByUsername: async (username) => table.get(username),
      findById: async (id) => {
        byId.push(Number(id))
        return [...table.values()].find((user) => user.id === id)
      },
      verifyPassword: async (password, passwordHash) => {
        verified.push(passwordHash)
        return await hexVerify(password, passwordHash)
      },
      dummyPasswordHash: await hexHash('not anyone\'s password')
    }
  }
}

t.test('the host\'s own accounts: read per login and per guarded request, in the host\'s hash format', async (t) => {
  const accounts = await hostAccounts([{ id: 1, username: 'ada', passwordHash: await hexHash('first') }])
  const { host } = await hostWith(t, { config: { ...testConfig, REFRESH_TOKENS: true }, users: accounts.directory })
  const first = await login(host, 'ada', 'first')
  t.equal(first.status, 200)
  t.equal((await host.inject({ url: '/reports', headers: bearer(first.token) })).statusCode, 200)
  t.ok(accounts.byId.includes(1), 'the guard asked the host for the user by id')

  // The host changes the password in its table: the next login sees it.
  accounts.table.set('ada', { id: 1, username: 'ada', passwordHash: await hexHash('second') })
  t.equal((await login(host, 'ada', 'second')).status, 200, 'the new password')
  t.equal((await login(host, 'ada', 'first')).status, 401, 'not the old one')
  // An account created after start logs in.
  accounts.table.set('bob', { id: 'b-2', username: 'bob', passwordHash: await hexHash('bobs') })
  const bob = await login(host, 'bob', 'bobs')
  t.equal(bob.status, 200)
  t.strictSame((await host.inject({ url: '/api/cats-service/profile', headers: bearer(bob.token) })).json(), { userId: 'b-2', username: 'bob' })

  // Deleted by the host: its tokens stop at the next request, and its refresh token too.
  accounts.table.delete('bob')
  t.equal((await host.inject({ url: '/reports', headers: bearer(bob.token) })).statusCode, 401, 'the guard')
  t.equal((await host.inject({ url: '/api/cats-service/profile', headers: bearer(bob.token) })).statusCode, 401, 'the service')
  const refreshed = await host.inject({ method: 'POST', url: '/api/cats-service/auth/refresh', payload: { refresh_token: bob.refresh } })
  t.equal(refreshed.statusCode, 401, 'refresh')

  // An unknown username is verified once, against the host's dummy: the same work as a known one.
  accounts.verified.length = 0
  t.equal((await login(host, 'nobody', 'first')).status, 401)
  t.strictSame(accounts.verified, [accounts.directory.dummyPasswordHash], 'one verification of the dummy in the host\'s format')
})

t.test('without a dummy of the host\'s, an unknown username is verified against the last account found', async (t) => {
  const verified: string[] = []
  const directory: UserDirectory = {
    findByUsername: (username) => users.find((user) => user.username === username),
    findById: (id) => users.find((user) => user.id === id),
    verifyPassword: async (password, passwordHash) => {
      verified.push(passwordHash)
      return await verifyPassword(password, passwordHash)
    }
  }
  const { host } = await hostWith(t, { config: testConfig, users: directory })
  t.equal((await login(host, 'chris', 'secret')).status, 200)
  t.equal((await login(host, 'nobody', 'secret')).status, 401)
  t.strictSame(verified, [users[1].passwordHash, users[1].passwordHash], 'the known account\'s hash, with its parameters, once each')
})

t.test('a lookup without a password check takes scrypt PHC hashes', async (t) => {
  const directory: UserDirectory = {
    findByUsername: (username) => users.find((user) => user.username === username),
    findById: (id) => users.find((user) => user.id === id)
  }
  const { host } = await hostWith(t, { config: testConfig, users: directory })
  t.equal((await login(host, 'john', 'changeme')).status, 200)
  t.equal((await login(host, 'john', 'wrong')).status, 401)
  t.equal((await login(host, 'nobody', 'changeme')).status, 401)
})

t.test('a host lookup that fails answers 503 AUTH_ERR_ACCOUNTS_UNAVAILABLE, at login and in the guard', async (t) => {
  let down = false
  let checkDown = false
  const fail = (): never => { throw new Error('the host\'s database is down') }
  const directory: UserDirectory = {
    findByUsername: async (username) => down ? fail() : users.find((user) => user.username === username),
    findById: (id) => down ? fail() : users.find((user) => user.id === id),
    verifyPassword: async (password, passwordHash) => checkDown ? fail() : await verifyPassword(password, passwordHash)
  }
  const { host } = await hostWith(t, { config: testConfig, users: directory })
  const { token } = await login(host, 'john', 'changeme')
  down = true
  const refused = await login(host, 'john', 'changeme')
  t.strictSame([refused.status, refused.code], [503, 'AUTH_ERR_ACCOUNTS_UNAVAILABLE'])
  const guarded = await host.inject({ url: '/reports', headers: bearer(token) })
  t.strictSame([guarded.statusCode, guarded.json().code], [503, 'AUTH_ERR_ACCOUNTS_UNAVAILABLE'])
  down = false
  t.equal((await host.inject({ url: '/reports', headers: bearer(token) })).statusCode, 200, 'and recovers with the host')
  checkDown = true
  const unchecked = await login(host, 'john', 'changeme')
  t.strictSame([unchecked.status, unchecked.code], [503, 'AUTH_ERR_ACCOUNTS_UNAVAILABLE'], 'a password check that fails too')
})
