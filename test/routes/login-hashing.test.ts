import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, bearer, tokenFor } from '../support/app.js'

// Password hashing under load: the bounded hash queue keeps other requests answered and refuses logins past it.

const login = (app: FastifyInstance, username: string, password: string, remoteAddress = '127.0.0.1') =>
  app.inject({ method: 'POST', url: '/auth/login', payload: { username, password }, remoteAddress })

t.test('password hashing: /profile keeps answering while many logins are in flight', async (t) => {
  const app = await build(t, { HASH_CONCURRENCY: 1, HASH_QUEUE_MAX: 100 })
  let loginsDone = 0
  // From 12 addresses: more concurrent logins of one username from one address than LOGIN_MAX_FAILURES are refused.
  const logins = Array.from({ length: 12 }, (_, i) => login(app, 'john', 'changeme', `10.1.0.${i}`).then((res) => {
    loginsDone++
    return res.statusCode
  }))
  const profile = await app.inject({ url: '/profile', headers: bearer(tokenFor(app)) })
  t.equal(profile.statusCode, 200)
  t.ok(loginsDone < 12, `profile answered while ${12 - loginsDone} logins were still hashing`)
  t.strictSame(await Promise.all(logins), Array(12).fill(200), 'every queued login completes')
})

t.test('password hashing: past the queue bound a login gets 503 + Retry-After at once', async (t) => {
  const app = await build(t, { HASH_CONCURRENCY: 1, HASH_QUEUE_MAX: 2 })
  const results = await Promise.all(Array.from({ length: 5 }, () => login(app, 'john', 'changeme')))
  const statuses = results.map((res) => res.statusCode).sort()
  t.strictSame(statuses, [200, 200, 200, 503, 503], 'one running + two waiting; the rest refused')
  const refused = results.find((res) => res.statusCode === 503)
  t.equal(refused?.headers['retry-after'], '1')
  t.strictSame(refused?.json(), { statusCode: 503, error: 'Service Unavailable', message: 'Too many logins in progress; retry shortly', code: 'AUTH_ERR_LOGINS_IN_PROGRESS' })
})
