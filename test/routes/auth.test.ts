import t from 'tap'
import { createSigner, createVerifier } from 'fast-jwt'
import { trace } from '@opentelemetry/api'
import { build, TEST_SECRET } from '../support/app.js'
import { recordSpans } from '../support/span-recorder.js'

const login = (username: unknown, password: unknown) => ({ method: 'POST' as const, url: '/auth/login', payload: { username, password } })

function decode (token: string): Record<string, unknown> {
  const [header, payload] = token.split('.').slice(0, 2).map((part) => JSON.parse(Buffer.from(part, 'base64url').toString()))
  return { ...payload, alg: header.alg }
}

t.test('valid credentials get 200 with a bearer token', async (t) => {
  const app = await build(t)
  const res = await app.inject(login('john', 'changeme'))
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.strictSame(Object.keys(body).sort(), ['access_token', 'expires_in', 'token_type'])
  t.equal(body.token_type, 'Bearer')
  t.equal(body.expires_in, 3600)
  t.match(body.access_token, /^[\w-]+\.[\w-]+\.[\w-]+$/)
  t.equal(res.headers['cache-control'], 'no-store', 'RFC 6749: the token response is not cached')
})

t.test('the token is HS256 with sub, username, jti, sid, iat and exp = iat + 60m', async (t) => {
  const app = await build(t)
  const before = Math.floor(Date.now() / 1000)
  const { access_token: token } = (await app.inject(login('chris', 'secret'))).json()
  const claims = decode(token)
  t.equal(claims.alg, 'HS256')
  t.equal(claims.sub, 2)
  t.equal(claims.username, 'chris')
  t.equal(Number(claims.exp) - Number(claims.iat), 3600)
  t.ok(Number(claims.iat) >= before)
  t.strictSame(Object.keys(claims).sort(), ['alg', 'exp', 'iat', 'jti', 'sid', 'sub', 'username'])
  t.match(claims.jti, /^[\w-]{16,}$/, 'a random token id')
  t.match(claims.sid, /^[\w-]{16,}$/, 'a random session id')
  const again = decode((await app.inject(login('chris', 'secret'))).json().access_token)
  t.not(again.jti, claims.jti, 'each token has its own id')
  t.not(again.sid, claims.sid, 'each login starts its own session')
  // Signed with JWT_SECRET: an independent verifier with the same secret accepts it.
  t.doesNotThrow(() => createVerifier({ key: TEST_SECRET, algorithms: ['HS256'] })(token))
})

t.test('the lifetime follows JWT_EXPIRES_IN', async (t) => {
  const app = await build(t, { JWT_EXPIRES_IN: '2d' })
  const res = await app.inject(login('maria', 'guess'))
  const claims = decode(res.json().access_token)
  t.equal(Number(claims.exp) - Number(claims.iat), 2 * 86_400)
  t.equal(res.json().expires_in, 2 * 86_400)
})

t.test('JWT_ISSUER and JWT_AUDIENCE are signed in and required on verify', async (t) => {
  const app = await build(t, { JWT_ISSUER: 'cats-issuer', JWT_AUDIENCE: 'cats-clients' })
  const { access_token: token } = (await app.inject(login('john', 'changeme'))).json()
  const claims = decode(token)
  t.equal(claims.iss, 'cats-issuer')
  t.equal(claims.aud, 'cats-clients')
  const ok = await app.inject({ url: '/profile', headers: { authorization: `Bearer ${token}` } })
  t.equal(ok.statusCode, 200)
  const sign = createSigner({ key: TEST_SECRET, expiresIn: 60_000 })
  for (const [name, extra] of [['no issuer', { aud: 'cats-clients' }], ['wrong audience', { iss: 'cats-issuer', aud: 'other' }]] as const) {
    const res = await app.inject({ url: '/profile', headers: { authorization: `Bearer ${sign({ sub: 1, username: 'john', ...extra })}` } })
    t.equal(res.statusCode, 401, name)
  }
})

t.test('wrong password and unknown user get the same 401', async (t) => {
  const app = await build(t)
  const wrongPassword = await app.inject(login('john', 'wrong'))
  const unknownUser = await app.inject(login('nobody', 'changeme'))
  for (const res of [wrongPassword, unknownUser]) {
    t.equal(res.statusCode, 401)
    t.strictSame(res.json(), { statusCode: 401, error: 'Unauthorized', message: 'Invalid username or password', code: 'AUTH_ERR_INVALID_CREDENTIALS' })
  }
  t.equal(wrongPassword.body, unknownUser.body)
})

t.test('an unknown user costs a password verification, as a wrong password does', async (t) => {
  // Deterministic: each login waits for one password hash (its span), whether the username exists or not. That the
  // unknown user's dummy hash costs as much as a real one is tested in test/auth/users.test.ts.
  const spans = recordSpans(t)
  const app = await build(t)
  const hashesOf = async (username: string): Promise<number> => {
    spans.reset()
    // The service makes child spans only inside a recorded one, as a request span of the host would be.
    await trace.getTracer('test').startActiveSpan('request', async (span) => {
      await app.inject(login(username, 'wrong'))
      span.end()
    })
    return spans.getFinishedSpans().filter(({ name }) => name === 'password hash').length
  }
  t.equal(await hashesOf('john'), 1, 'a known user with a wrong password')
  t.equal(await hashesOf('nobody'), 1, 'an unknown user')
})

t.test('bad login bodies get 400 in the validation shape', async (t) => {
  const app = await build(t)
  const cases: Array<[string, unknown, string[]]> = [
    ['missing password', { username: 'john' }, ['body.password']],
    ['missing both', {}, ['body.username', 'body.password']],
    ['number username', { username: 1, password: 'x' }, ['body.username']],
    ['empty strings', { username: '', password: '' }, ['body.username', 'body.password']],
    ['username too long', { username: 'a'.repeat(129), password: 'x' }, ['body.username']],
    ['password too long', { username: 'john', password: 'a'.repeat(1025) }, ['body.password']],
    ['array body', ['john', 'changeme'], ['body']],
    ['string body', 'john', ['body']]
  ]
  for (const [name, payload, fields] of cases) {
    const res = await app.inject({ method: 'POST', url: '/auth/login', headers: { 'content-type': 'application/json' }, payload: JSON.stringify(payload) })
    t.equal(res.statusCode, 400, name)
    const body = res.json()
    t.equal(body.error, 'Bad Request', name)
    t.equal(body.code, 'FST_ERR_VALIDATION', name)
    t.strictSame(body.validation.map((issue: { field: string }) => issue.field).sort(), [...fields].sort(), name)
  }
})

t.test('unknown login fields are dropped', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'john', password: 'changeme', admin: true } })
  t.equal(res.statusCode, 200)
})

t.test('a login body that is not JSON gets 415', async (t) => {
  const app = await build(t)
  for (const contentType of ['text/plain', 'application/x-www-form-urlencoded']) {
    const res = await app.inject({ method: 'POST', url: '/auth/login', headers: { 'content-type': contentType }, payload: 'username=john&password=changeme' })
    t.equal(res.statusCode, 415, contentType)
    t.equal(res.json().error, 'Unsupported Media Type')
  }
})

t.test('users passed as plugin options replace the demo users', async (t) => {
  const app = await build(t, {}, {
    users: [{ id: 'u-7', username: 'ada', passwordHash: '$scrypt$ln=10,r=8,p=1$q6oWbA90Lr/l+Y0SOJ83EQ$llvcE2rL78HZcG9bzR6jdAIQ+AyXOg21By5iU+jlmgk' }]
  })
  t.equal((await app.inject(login('john', 'changeme'))).statusCode, 401)
  const res = await app.inject(login('ada', 'lovelace'))
  t.equal(res.statusCode, 200)
  t.equal(decode(res.json().access_token).sub, 'u-7')
})
