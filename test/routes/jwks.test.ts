import { execFile } from 'node:child_process'
import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import fastifyJwt, { type TokenOrHeader } from '@fastify/jwt'
import buildGetJwks from 'get-jwks'
import { catsService, type Identity } from '../../src/app.js'
import type { ConfigInput } from '../../src/config.js'
import { bearer, build, TEST_SECRET, testConfig } from '../support/app.js'
import { cheapDemoUsers } from '../support/cheap-users.js'
import { baseEnv, cheapUsersFile, plainNode, startServer } from '../support/server.js'

const run = promisify(execFile)
const pem = (key: KeyObject, type: 'pkcs8' | 'spki'): string => key.export({ format: 'pem', type }).toString()
const users = await cheapDemoUsers()
const edKey = generateKeyPairSync('ed25519')
const nextKey = generateKeyPairSync('ed25519')

/** Settings that sign with `key`, without JWT_SECRET (testConfig's is taken out). */
const signingWith = (algorithm: string, key: KeyObject, more: Partial<ConfigInput> = {}): Partial<ConfigInput> =>
  ({ JWT_SECRET: undefined, JWT_ALGORITHM: algorithm, JWT_PRIVATE_KEY: pem(key, 'pkcs8'), ...more })

async function login (app: FastifyInstance, url = '/auth/login'): Promise<string> {
  const res = await app.inject({ method: 'POST', url, payload: { username: 'john', password: 'changeme' } })
  return res.json().access_token
}
const headerOf = (token: string): unknown => JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString())
const profile = async (app: FastifyInstance, token: string): Promise<number> => (await app.inject({ url: '/profile', headers: bearer(token) })).statusCode

const pairs = {
  EdDSA: edKey,
  ES256: generateKeyPairSync('ec', { namedCurve: 'P-256' }),
  RS256: generateKeyPairSync('rsa', { modulusLength: 2048 })
}

for (const [algorithm, { privateKey }] of Object.entries(pairs)) {
  t.test(`${algorithm}: tokens name their key, the JWKS publishes it, the service accepts them`, async (t) => {
    const app = await build(t, signingWith(algorithm, privateKey), { users })
    const jwks = await app.inject('/.well-known/jwks.json')
    t.equal(jwks.statusCode, 200)
    t.equal(jwks.headers['cache-control'], 'public, max-age=300')
    const [published] = jwks.json().keys
    t.strictSame(app.catsTokenKeys.published, jwks.json().keys)
    const token = await login(app)
    t.strictSame(headerOf(token), { alg: algorithm, typ: 'JWT', kid: published.kid })
    t.equal(await profile(app, token), 200)
  })
}

t.test('HS256 publishes no key and tokens carry no kid; the JWKS is in the OpenAPI document', async (t) => {
  const app = await build(t, {}, { users })
  t.strictSame((await app.inject('/.well-known/jwks.json')).json(), { keys: [] })
  t.strictSame(headerOf(await login(app)), { alg: 'HS256', typ: 'JWT' })
  const document = app.swagger() as { paths: Record<string, { get?: { operationId?: string } }> }
  t.equal(document.paths['/.well-known/jwks.json'].get?.operationId, 'getJwks')
})

t.test('rotation: the next key is published first, then signs while the previous one still verifies', async (t) => {
  const previous = signingWith('EdDSA', edKey.privateKey)
  // Step 1: every instance publishes the next key before any signs with it.
  const before = await build(t, { ...previous, JWT_VERIFY_KEYS: pem(nextKey.publicKey, 'spki') }, { users })
  const oldToken = await login(before)
  t.equal((await before.inject('/.well-known/jwks.json')).json().keys.length, 2)
  // Step 2: an instance signs with the next key and keeps the previous one as a verify key.
  const after = await build(t, signingWith('EdDSA', nextKey.privateKey, { JWT_VERIFY_KEYS: pem(edKey.publicKey, 'spki') }), { users })
  const newToken = await login(after)
  t.not((headerOf(newToken) as { kid: string }).kid, (headerOf(oldToken) as { kid: string }).kid, 'the new key signs')
  t.strictSame((await after.inject('/.well-known/jwks.json')).json().keys.map((key: { kid: string }) => key.kid),
    [after.catsTokenKeys.kid, before.catsTokenKeys.kid], 'the signing key first')
  t.equal(await profile(after, oldToken), 200, 'an old token is still accepted')
  t.equal(await profile(before, newToken), 200, 'an instance not yet switched accepts the new tokens')
  // Step 3: once the old tokens have expired, the previous key goes; a token of a key nobody lists is a 401.
  const done = await build(t, signingWith('EdDSA', nextKey.privateKey), { users })
  t.equal(await profile(done, newToken), 200)
  t.equal(await profile(done, oldToken), 401)
})

t.test('switching from HS256 logs nobody out while JWT_SECRET stays; without it, HS256 tokens are refused', async (t) => {
  const hs256Token = await login(await build(t, {}, { users }))
  const switched = await build(t, { ...signingWith('EdDSA', edKey.privateKey), JWT_SECRET: TEST_SECRET }, { users })
  t.equal(await profile(switched, hs256Token), 200)
  t.match(headerOf(await login(switched)), { alg: 'EdDSA' }, 'the secret verifies but never signs')
  const secretGone = await build(t, signingWith('EdDSA', edKey.privateKey), { users })
  t.equal(await profile(secretGone, hs256Token), 401)
})

t.test('refresh tokens work without JWT_SECRET', async (t) => {
  const app = await build(t, signingWith('ES256', pairs.ES256.privateKey, { REFRESH_TOKENS: true }), { users })
  const first = (await app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'john', password: 'changeme' } })).json()
  const refreshed = await app.inject({ method: 'POST', url: '/auth/refresh', payload: { refresh_token: first.refresh_token } })
  t.equal(refreshed.statusCode, 200)
  t.equal(await profile(app, refreshed.json().access_token), 200)
})

t.test('embedded under a prefix, the JWKS and the sessions are too; the host\'s guard verifies with the same keys', async (t) => {
  const config = { ...testConfig, ...signingWith('EdDSA', edKey.privateKey) }
  const host = Fastify()
  t.teardown(() => host.close())
  const service = catsService({ config, users })
  await host.register(service.plugin, { prefix: '/api' })
  host.get('/reports', { onRequest: service.guard }, async (request) => ({ for: service.identity(request).username }))
  const jwks = await host.inject('/api/.well-known/jwks.json')
  t.equal(jwks.statusCode, 200)
  t.equal(jwks.json().keys[0].alg, 'EdDSA')
  const token = await login(host, '/api/auth/login')
  const reports = await host.inject({ url: '/reports', headers: bearer(token) })
  t.strictSame([reports.statusCode, reports.json()], [200, { for: 'john' }])
  const sessions = await host.inject({ url: '/api/auth/sessions', headers: bearer(token) })
  t.match([sessions.statusCode, sessions.json()], [200, [{ current: true }]])
  t.equal((await host.inject({ method: 'POST', url: '/api/auth/logout?scope=global', headers: bearer(token) })).statusCode, 204)
  t.equal((await host.inject({ url: '/api/profile', headers: bearer(token) })).statusCode, 401, 'the service sees the logout')
  t.equal((await host.inject({ url: '/reports', headers: bearer(token) })).statusCode, 401, 'and so does the host\'s guard')
})

// A verifier with nothing but the JWKS's address, as another service would be: jose fetches and caches the set.
const VERIFIER = `
import { createRemoteJWKSet, jwtVerify } from 'jose'
const [jwksUrl, token] = process.argv.slice(-2)
const { payload, protectedHeader } = await jwtVerify(token, createRemoteJWKSet(new URL(jwksUrl)))
console.log(JSON.stringify({ alg: protectedHeader.alg, sub: payload.sub, username: payload.username }))
`

// The host's own @fastify/jwt types its request.user (the package declares nothing of @fastify/jwt's).
declare module '@fastify/jwt' {
  interface FastifyJWT {
    user: Identity
  }
}

/** A host app of its own that guards a route with @fastify/jwt and get-jwks: it knows the service's address only. */
async function jwksOnlyHost (t: Test, serviceBase: string): Promise<FastifyInstance> {
  const host = Fastify()
  t.teardown(() => host.close())
  const jwks = buildGetJwks({ jwksPath: '/.well-known/jwks.json' })
  await host.register(fastifyJwt, {
    decode: { complete: true },
    // get-jwks turns EC and RSA keys into PEM itself; node:crypto reads any JWK, Ed25519 included.
    secret: async (_request: unknown, token: TokenOrHeader): Promise<string> => {
      // decode.complete: the token and its header.
      const { kid, alg } = (token as { header: { kid: string, alg: string } }).header
      return createPublicKey({ key: await jwks.getJwk({ domain: serviceBase, kid, alg }), format: 'jwk' }).export({ format: 'pem', type: 'spki' }).toString()
    },
    verify: { algorithms: ['EdDSA'] }
  })
  host.get('/reports', { onRequest: async (request) => { await request.jwtVerify() } }, async (request) => ({ for: request.user.username }))
  return host
}

t.test('another process verifies the tokens of a running server with its JWKS alone, but does not see logouts', async (t) => {
  const server = await startServer({
    JWT_SECRET: undefined,
    JWT_ALGORITHM: 'EdDSA',
    JWT_PRIVATE_KEY: pem(edKey.privateKey, 'pkcs8'),
    USERS_FILE: await cheapUsersFile(t),
    LOG_LEVEL: 'info'
  })
  t.teardown(() => { server.child.kill('SIGKILL') })
  const res = await fetch(`${server.base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'john', password: 'changeme' }) })
  const { access_token: token } = await res.json() as { access_token: string }
  const verify = async (): Promise<unknown> => {
    const { stdout } = await run(...plainNode('--input-type=module', '-e', VERIFIER, `${server.base}/.well-known/jwks.json`, token), { env: baseEnv, cwd: import.meta.dirname })
    return JSON.parse(stdout)
  }
  t.strictSame(await verify(), { alg: 'EdDSA', sub: 1, username: 'john' })
  const host = await jwksOnlyHost(t, server.base)
  const reports = await host.inject({ url: '/reports', headers: bearer(token) })
  t.strictSame([reports.statusCode, reports.json()], [200, { for: 'john' }], 'a host\'s guard with @fastify/jwt and get-jwks')
  t.equal((await host.inject({ url: '/reports', headers: bearer(`${token.slice(0, -4)}AAAA`) })).statusCode, 401, 'and it checks the signature')

  const logout = await fetch(`${server.base}/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${token}` } })
  t.equal(logout.status, 204)
  t.equal((await fetch(`${server.base}/profile`, { headers: { authorization: `Bearer ${token}` } })).status, 401, 'the service refuses it')
  t.strictSame(await verify(), { alg: 'EdDSA', sub: 1, username: 'john' }, 'a JWKS-only verifier still accepts it until it expires')
  t.notMatch(server.output(), /BEGIN|PRIVATE|eyJ/, 'no key and no token in the logs')
})
