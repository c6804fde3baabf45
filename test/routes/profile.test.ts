import t from 'tap'
import { createHmac, randomUUID } from 'node:crypto'
import { createSigner } from 'fast-jwt'
import { build, bearer, tokenFor, TEST_SECRET } from '../support/app.js'

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url')
const now = (): number => Math.floor(Date.now() / 1000)

/** Builds a JWT by hand so that any header, claim or signature can be forged. */
function forge (header: Record<string, unknown>, claims: Record<string, unknown>, secret = TEST_SECRET, hmac = 'sha256'): string {
  const unsigned = `${b64url(header)}.${b64url(claims)}`
  return `${unsigned}.${createHmac(hmac, secret).update(unsigned).digest('base64url')}`
}

const validClaims = (): Record<string, unknown> => ({ sub: 1, username: 'john', jti: randomUUID(), sid: randomUUID(), iat: now(), exp: now() + 600 })

t.test('a valid token gets 200 with userId and username', async (t) => {
  const app = await build(t)
  const res = await app.inject({ url: '/profile', headers: bearer(tokenFor(app)) })
  t.equal(res.statusCode, 200)
  t.strictSame(res.json(), { userId: 1, username: 'john' })
})

t.test('a token from login opens /profile', async (t) => {
  const app = await build(t)
  const { access_token: token } = (await app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'maria', password: 'guess' } })).json()
  const res = await app.inject({ url: '/profile', headers: bearer(token) })
  t.strictSame(res.json(), { userId: 3, username: 'maria' })
})

t.test('userId keeps the type of sub', async (t) => {
  const app = await build(t, {}, {
    users: [{ id: 'u-1', username: 'ada', passwordHash: '$scrypt$ln=10,r=8,p=1$q6oWbA90Lr/l+Y0SOJ83EQ$llvcE2rL78HZcG9bzR6jdAIQ+AyXOg21By5iU+jlmgk' }]
  })
  const res = await app.inject({ url: '/profile', headers: bearer(tokenFor(app, 'u-1', 'ada')) })
  t.strictSame(res.json(), { userId: 'u-1', username: 'ada' })
})

t.test('the Bearer scheme name is case-insensitive', async (t) => {
  const app = await build(t)
  const token = tokenFor(app)
  for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
    const res = await app.inject({ url: '/profile', headers: { authorization: `${scheme} ${token}` } })
    t.equal(res.statusCode, 200, scheme)
  }
})

t.test('no token gets 401 with a plain Bearer challenge', async (t) => {
  const app = await build(t)
  const cases: Array<[string, Record<string, string>]> = [
    ['no header', {}],
    ['Basic scheme', { authorization: 'Basic am9objpjaGFuZ2VtZQ==' }],
    ['scheme without token', { authorization: 'Bearer' }]
  ]
  for (const [name, headers] of cases) {
    const res = await app.inject({ url: '/profile', headers })
    t.equal(res.statusCode, 401, name)
    t.equal(res.headers['www-authenticate'], 'Bearer', name)
    t.strictSame(res.json(), { statusCode: 401, error: 'Unauthorized', message: 'Missing bearer token', code: 'AUTH_ERR_MISSING_TOKEN' }, name)
  }
})

t.test('the token is read from the Authorization header only, never the query string', async (t) => {
  const app = await build(t)
  const res = await app.inject({ url: `/profile?access_token=${tokenFor(app)}&token=${tokenFor(app)}` })
  t.equal(res.statusCode, 401)
})

t.test('every broken or forged token gets 401 invalid_token, never a 500', async (t) => {
  const app = await build(t)
  const good = tokenFor(app)
  const [header, payload, signature] = good.split('.')
  const hs = (alg: string, hmac: string) => forge({ alg, typ: 'JWT' }, validClaims(), TEST_SECRET, hmac)
  const without = (claim: string) => {
    const claims = validClaims()
    delete claims[claim]
    return forge({ alg: 'HS256', typ: 'JWT' }, claims)
  }
  const cases: Array<[string, string]> = [
    ['empty bearer', ''],
    ['garbage', 'not-a-jwt'],
    ['two tokens', `${good} ${good}`],
    ['alg none without signature', `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(validClaims())}.`],
    ['alg none without signature part', `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(validClaims())}`],
    ['alg none with a signature', `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(validClaims())}.${signature}`],
    ['HS384', hs('HS384', 'sha384')],
    ['HS512', hs('HS512', 'sha512')],
    ['RS256 header with an HMAC signature', hs('RS256', 'sha256')],
    ['tampered payload', `${header}.${b64url({ ...validClaims(), sub: 2, username: 'chris' })}.${signature}`],
    ['tampered signature', `${header}.${payload}.${signature.slice(0, -2)}AA`],
    ['wrong secret', forge({ alg: 'HS256', typ: 'JWT' }, validClaims(), 'another-secret-that-is-32-characters-long!!')],
    ['expired', forge({ alg: 'HS256', typ: 'JWT' }, { ...validClaims(), iat: now() - 7200, exp: now() - 3600 })],
    ['not yet valid (nbf)', forge({ alg: 'HS256', typ: 'JWT' }, { ...validClaims(), nbf: now() + 3600 })],
    ['no exp', without('exp')],
    ['no iat', without('iat')],
    ['a lifetime longer than JWT_EXPIRES_IN (60m)', forge({ alg: 'HS256', typ: 'JWT' }, { ...validClaims(), exp: now() + 10 * 365 * 86_400 })],
    ['a lifetime one second too long', forge({ alg: 'HS256', typ: 'JWT' }, { ...validClaims(), iat: now() - 10, exp: now() - 10 + 3601 })],
    ['issued more than 60 s in the future', forge({ alg: 'HS256', typ: 'JWT' }, { ...validClaims(), iat: now() + 120, exp: now() + 600 })],
    ['no sub', without('sub')],
    ['no username', without('username')],
    ['sub of the wrong type', forge({ alg: 'HS256', typ: 'JWT' }, { ...validClaims(), sub: { id: 1 } })],
    ['user no longer exists', forge({ alg: 'HS256', typ: 'JWT' }, { ...validClaims(), sub: 99, username: 'ghost' })],
    ['username does not match the user', forge({ alg: 'HS256', typ: 'JWT' }, { ...validClaims(), username: 'chris' })],
    ['sub as a string when the id is a number', forge({ alg: 'HS256', typ: 'JWT' }, { ...validClaims(), sub: '1' })],
    ['100 KB token', 'a'.repeat(100 * 1024)]
  ]
  for (const [name, token] of cases) {
    const res = await app.inject({ url: '/profile', headers: { authorization: `Bearer ${token}` } })
    t.equal(res.statusCode, 401, name)
    t.equal(res.headers['www-authenticate'], 'Bearer error="invalid_token"', name)
    t.strictSame(res.json(), { statusCode: 401, error: 'Unauthorized', message: 'Invalid or expired access token', code: 'AUTH_ERR_INVALID_TOKEN' }, name)
  }
})

t.test('a token signed by fast-jwt with the same secret and claims is accepted (control case)', async (t) => {
  const app = await build(t)
  const sign = createSigner({ key: TEST_SECRET, algorithm: 'HS256', expiresIn: 60_000 })
  const res = await app.inject({ url: '/profile', headers: bearer(sign({ sub: 1, username: 'john', jti: randomUUID(), sid: randomUUID() })) })
  t.equal(res.statusCode, 200)
})

t.test('the validation step can be replaced through the plugin options', async (t) => {
  const app = await build(t, {}, {
    validateToken: (claims) => claims.username === 'john' ? { userId: claims.sub, username: 'JOHN' } : undefined
  })
  const john = await app.inject({ url: '/profile', headers: bearer(tokenFor(app, 1, 'john')) })
  t.strictSame(john.json(), { userId: 1, username: 'JOHN' })
  const chris = await app.inject({ url: '/profile', headers: bearer(tokenFor(app, 2, 'chris')) })
  t.equal(chris.statusCode, 401)
})

t.test('an async validation step is awaited', async (t) => {
  const app = await build(t, {}, { validateToken: async (claims) => ({ userId: claims.sub, username: `${claims.username}!` }) })
  const res = await app.inject({ url: '/profile', headers: bearer(tokenFor(app)) })
  t.strictSame(res.json(), { userId: 1, username: 'john!' })
})

t.test('token age: exactly the configured lifetime, and an iat up to 60 s ahead (clock skew), are accepted', async (t) => {
  const app = await build(t)
  const exact = forge({ alg: 'HS256', typ: 'JWT' }, { ...validClaims(), iat: now() - 10, exp: now() - 10 + 3600 })
  const ahead = forge({ alg: 'HS256', typ: 'JWT' }, { ...validClaims(), iat: now() + 50, exp: now() + 50 + 600 })
  for (const [name, token] of [['exact lifetime', exact], ['issued 50 s ahead', ahead]]) {
    const res = await app.inject({ url: '/profile', headers: { authorization: `Bearer ${token}` } })
    t.equal(res.statusCode, 200, name)
  }
})

t.test('the Bearer scheme is matched at the start of the header, with one or more spaces before the token', async (t) => {
  const app = await build(t)
  const token = tokenFor(app)
  const twoSpaces = await app.inject({ url: '/profile', headers: { authorization: `Bearer  ${token}` } })
  t.equal(twoSpaces.statusCode, 200, 'RFC 6750 allows one or more spaces after the scheme')
  const inside = await app.inject({ url: '/profile', headers: { authorization: `Basic bearer ${token}` } })
  t.equal(inside.statusCode, 401, 'a bearer word later in another scheme is not a bearer token')
  t.equal(inside.headers['www-authenticate'], 'Bearer', 'no bearer token was sent')
  const noSpace = await app.inject({ url: '/profile', headers: { authorization: `Bearer${token}` } })
  t.equal(noSpace.statusCode, 401, 'the scheme needs a space after it')
})

t.test('the claims are checked before a custom validateToken sees them', async (t) => {
  const seen: unknown[] = []
  const app = await build(t, {}, {
    validateToken: (claims) => {
      seen.push(claims)
      return { userId: 7, username: 'host-user' }
    }
  })
  const objectSub = forge({ alg: 'HS256', typ: 'JWT' }, { ...validClaims(), sub: { id: 1 } })
  const res = await app.inject({ url: '/profile', headers: { authorization: `Bearer ${objectSub}` } })
  t.equal(res.statusCode, 401)
  const tooLong = forge({ alg: 'HS256', typ: 'JWT' }, { ...validClaims(), exp: now() + 86_400 })
  t.equal((await app.inject({ url: '/profile', headers: { authorization: `Bearer ${tooLong}` } })).statusCode, 401)
  t.strictSame(seen, [], 'the host validator never saw a malformed or over-age token')
  const ok = await app.inject({ url: '/profile', headers: { authorization: `Bearer ${forge({ alg: 'HS256', typ: 'JWT' }, validClaims())}` } })
  t.strictSame(ok.json(), { userId: 7, username: 'host-user' })
  t.equal(seen.length, 1)
})
