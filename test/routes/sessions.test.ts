import { createHash, randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { ConfigInput } from '../../src/config.js'
import type { AppOptions } from '../../src/app-options.js'
import { bearer, build, createApp, TEST_SECRET, tokenFor } from '../support/app.js'
import { encodeRefreshToken, refreshTokenKey } from '../../src/auth/sessions/refresh-token.js'
import { closedPort } from '../support/ports.js'
import { adminClient, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'
import { freshKeyPrefix } from '../support/redis.js'
import { clusterMissing, startRedisCluster } from '../support/redis-cluster.js'
import { concurrentRefreshTrials, raceTrials } from '../support/session-races.js'
import { CHEAP_HASH, cheapDemoUsers } from '../support/cheap-users.js'
import { hashPassword } from '../../src/auth/login/password.js'
import { pgliteMigratedCopy } from '../support/pglite-template.js'

/**
 * Logout and refresh tokens over HTTP, per store: memory, PGlite in process,
 * and the PostgreSQL and Redis servers of TEST_DATABASE_URL / TEST_REDIS_URL,
 * where two apps on one database (or one Redis) stand for two instances.
 */

const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
type Config = Partial<ConfigInput>
/** Opens one more app on the store of this test (the same database or Redis for every call within a test). */
type Instances = (t: Test) => (config?: Config, options?: Omit<AppOptions, 'config'>) => Promise<FastifyInstance>

interface Tokens { access_token: string, refresh_token?: string }
/** Refresh tokens without the reuse window: most tests here are about what a reuse does. */
const REFRESH_ON: Config = { REFRESH_TOKENS: true, REFRESH_REUSE_WINDOW: '0' }
/** Refresh tokens with the default reuse window (10 s). */
const WITH_WINDOW: Config = { REFRESH_TOKENS: true }
/**
 * The demo accounts with cheap hashes (these tests are about sessions), and the users of ownUser; every app takes
 * them unless told otherwise.
 */
const users = [
  ...await cheapDemoUsers(),
  ...await Promise.all(['lister', 'refresher', 'ender', 'leaver'].map(async (username) => ({ id: `u-${username}`, username, passwordHash: await hashPassword('pw', CHEAP_HASH) })))
]

async function login (app: FastifyInstance, username = 'john', password = 'changeme'): Promise<Tokens> {
  const res = await app.inject({ method: 'POST', url: '/auth/login', payload: { username, password } })
  if (res.statusCode !== 200) throw new Error(`login failed: ${res.statusCode} ${res.body}`)
  return res.json()
}
/**
 * A user of a test's own, among the users every app takes: a suite's tests share its store, and a user's sessions
 * are listed together.
 */
function ownUser (name: 'lister' | 'refresher' | 'ender' | 'leaver'): (app: FastifyInstance, userAgent?: string) => Promise<Tokens> {
  return async (app, userAgent = 'tests') => {
    const res = await app.inject({ method: 'POST', url: '/auth/login', headers: { 'user-agent': userAgent }, payload: { username: name, password: 'pw' } })
    if (res.statusCode !== 200) throw new Error(`login failed: ${res.statusCode} ${res.body}`)
    return res.json()
  }
}
const sessionsOf = async (app: FastifyInstance, token: string): Promise<Array<Record<string, unknown>>> =>
  (await app.inject({ url: '/auth/sessions', headers: bearer(token) })).json()
const endSession = (app: FastifyInstance, token: string, id: string): Promise<LightMyRequestResponse> =>
  app.inject({ method: 'DELETE', url: `/auth/sessions/${id}`, headers: bearer(token) })
const profile = (app: FastifyInstance, token: string): Promise<LightMyRequestResponse> =>
  app.inject({ url: '/profile', headers: bearer(token) })
const logout = (app: FastifyInstance, token: string): Promise<LightMyRequestResponse> =>
  app.inject({ method: 'POST', url: '/auth/logout', headers: bearer(token) })
const refresh = (app: FastifyInstance, refreshToken: unknown): Promise<LightMyRequestResponse> =>
  app.inject({ method: 'POST', url: '/auth/refresh', payload: { refresh_token: refreshToken } })
const claimsOf = (token: string): Record<string, unknown> => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString())

/** Waits until the app answers ready (Redis connects after start-up, within milliseconds here), for 10 s at most. */
async function becomesReady (app: FastifyInstance): Promise<void> {
  for (let wait = 0; (await app.inject('/health/ready')).statusCode !== 200; wait++) {
    if (wait === 1000) throw new Error('the app did not become ready within 10 s')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

function refusedToken (t: Test, res: LightMyRequestResponse, name: string): void {
  t.equal(res.statusCode, 401, name)
  t.equal(res.headers['www-authenticate'], 'Bearer error="invalid_token"', name)
  t.equal(res.json().code, 'AUTH_ERR_INVALID_TOKEN', name)
}

function refusedRefresh (t: Test, res: LightMyRequestResponse, name: string): void {
  t.equal(res.statusCode, 401, name)
  t.strictSame(res.json(), {
    statusCode: 401, error: 'Unauthorized', message: 'Invalid, expired or already used refresh token', code: 'AUTH_ERR_INVALID_REFRESH_TOKEN'
  }, name)
}

function sessionSuite (t: Test, instances: Instances): void {
  t.test('logout: 204, then the token is refused; other sessions of the same user go on', async (t) => {
    const app = await instances(t)()
    const mine = await login(app)
    const other = await login(app)
    t.equal((await profile(app, mine.access_token)).statusCode, 200)
    const res = await logout(app, mine.access_token)
    t.equal(res.statusCode, 204)
    t.equal(res.body, '')
    refusedToken(t, await profile(app, mine.access_token), 'the logged-out token on /profile')
    refusedToken(t, await logout(app, mine.access_token), 'a second logout with it')
    t.equal((await profile(app, other.access_token)).statusCode, 200, 'another login of the same user is unaffected')
  })

  t.test('logout needs a valid bearer token', async (t) => {
    const app = await instances(t)()
    const missing = await app.inject({ method: 'POST', url: '/auth/logout' })
    t.equal(missing.statusCode, 401)
    t.equal(missing.json().code, 'AUTH_ERR_MISSING_TOKEN')
    refusedToken(t, await logout(app, 'not.a.token'), 'a malformed token')
  })

  t.test('refresh off (the default): no refresh_token at login, and /auth/refresh does not exist', async (t) => {
    const app = await instances(t)()
    const tokens = await login(app)
    t.strictSame(Object.keys(tokens).sort(), ['access_token', 'expires_in', 'token_type'])
    const res = await refresh(app, randomBytes(32).toString('base64url'))
    t.equal(res.statusCode, 404)
    t.equal(res.json().code, 'HTTP_ERR_ROUTE_NOT_FOUND')
  })

  t.test('refresh rotates: a new access token in the same session and a new refresh token; the old one stops working', async (t) => {
    const app = await instances(t)(REFRESH_ON)
    const first = await login(app)
    t.match(first.refresh_token, new RegExp(`^${String(claimsOf(first.access_token).sid)}\\.0\\.[0-9]+\\.MQ\\.[A-Za-z0-9_-]{43}$`), 'its session, generation 0, expiry, user (1, base64url) and MAC')
    const res = await refresh(app, first.refresh_token)
    t.equal(res.statusCode, 200)
    t.equal(res.headers['cache-control'], 'no-store')
    const second: Tokens = res.json()
    t.strictSame(Object.keys(second).sort(), ['access_token', 'expires_in', 'refresh_token', 'token_type'])
    t.not(second.refresh_token, first.refresh_token)
    const [before, after] = [claimsOf(first.access_token), claimsOf(second.access_token)]
    t.equal(after.sid, before.sid, 'the same session')
    t.not(after.jti, before.jti, 'a token of its own')
    t.strictSame((await profile(app, second.access_token)).json(), { userId: 1, username: 'john' })
    t.equal((await profile(app, first.access_token)).statusCode, 200, 'the earlier access token lives on until it expires')
    const third = await refresh(app, second.refresh_token)
    t.equal(third.statusCode, 200, 'the new refresh token works')
  })

  t.test('reuse of a rotated refresh token: 401, and the whole session ends', async (t) => {
    const app = await instances(t)(REFRESH_ON)
    const first = await login(app)
    const bystander = await login(app)
    const second: Tokens = (await refresh(app, first.refresh_token)).json()
    refusedRefresh(t, await refresh(app, first.refresh_token), 'the rotated token presented again')
    refusedRefresh(t, await refresh(app, second.refresh_token), 'the current refresh token of the session')
    refusedToken(t, await profile(app, second.access_token), 'the access token issued by the refresh')
    refusedToken(t, await profile(app, first.access_token), 'the access token issued at login')
    t.equal((await profile(app, bystander.access_token)).statusCode, 200, 'another session is unaffected')
    t.equal((await refresh(app, bystander.refresh_token)).statusCode, 200)
  })

  // A race: its hundreds of trials are in test/stress/session-races.stress.ts; here a few cover its paths.
  t.test('two tabs refreshing one token at once, on two instances, get the same new tokens and the session goes on', async (t) => {
    const open = instances(t)
    const [a, b] = [await open(WITH_WINDOW), await open(WITH_WINDOW)]
    t.strictSame(await concurrentRefreshTrials(a, b, 3), [], 'in each of 3 trials every tab got the one new refresh token and an access token of its own, and the session went on')
  })

  t.test('with the reuse window, an older token, or the replaced one after the window, is still a reuse', async (t) => {
    const app = await instances(t)(WITH_WINDOW)
    const realNow = Date.now
    t.teardown(() => { Date.now = realNow })
    const twice = await login(app)
    const second: Tokens = (await refresh(app, twice.refresh_token ?? '')).json()
    t.equal((await refresh(app, second.refresh_token ?? '')).statusCode, 200)
    refusedRefresh(t, await refresh(app, twice.refresh_token ?? ''), 'two rotations back')
    refusedToken(t, await profile(app, second.access_token), 'the session ended')

    const late = await login(app)
    const next: Tokens = (await refresh(app, late.refresh_token ?? '')).json()
    Date.now = () => realNow() + 10_000
    refusedRefresh(t, await refresh(app, late.refresh_token ?? ''), 'ten seconds after the rotation')
    refusedRefresh(t, await refresh(app, next.refresh_token ?? ''), 'the session ended, and is not revived')

    Date.now = realNow
    const ended = await login(app)
    const after: Tokens = (await refresh(app, ended.refresh_token ?? '')).json()
    t.equal((await logout(app, after.access_token)).statusCode, 204)
    refusedRefresh(t, await refresh(app, ended.refresh_token ?? ''), 'within the window, after a logout')
  })

  t.test('GET /auth/sessions lists the caller\'s live sessions on every instance, with refresh tokens off', async (t) => {
    const loginOwn = ownUser('lister')
    const open = instances(t)
    const [a, b] = [await open({}), await open({})]
    const before = Date.now()
    const first = await loginOwn(a, 'tab-a')
    const second = await loginOwn(b, 'x'.repeat(300))
    const listed = await sessionsOf(b, first.access_token)
    t.strictSame(listed.map((session) => [session.id, session.current, session.address, session.userAgent]), [
      [claimsOf(first.access_token).sid, true, '127.0.0.1', 'tab-a'],
      [claimsOf(second.access_token).sid, false, '127.0.0.1', 'x'.repeat(256)]
    ], 'oldest first, the asking one marked; the user agent cut at 256 characters')
    for (const session of listed) {
      const [created, lastUsed] = [Date.parse(String(session.created)), Date.parse(String(session.lastUsed))]
      t.ok(created >= before - 1 && created <= Date.now() && lastUsed === created, 'created and last used at the login')
    }
    t.strictSame((await sessionsOf(a, second.access_token)).map((session) => session.current), [false, true])
    const stranger = await sessionsOf(a, (await login(a)).access_token)
    t.notOk(stranger.some((session) => listed.some((own) => own.id === session.id)), 'another user sees only their own')
    t.equal((await logout(a, first.access_token)).statusCode, 204)
    t.strictSame((await sessionsOf(b, second.access_token)).map((session) => session.id), [claimsOf(second.access_token).sid], 'an ended one is gone')
  })

  t.test('a session\'s last use is its latest refresh', async (t) => {
    const loginOwn = ownUser('refresher')
    const app = await instances(t)(REFRESH_ON)
    const first = await loginOwn(app)
    await new Promise((resolve) => setTimeout(resolve, 5))
    const refreshed: Tokens = (await refresh(app, first.refresh_token)).json()
    const [session] = await sessionsOf(app, refreshed.access_token)
    t.ok(Date.parse(String(session.lastUsed)) > Date.parse(String(session.created)), `${String(session.lastUsed)} after ${String(session.created)}`)
  })

  t.test('DELETE /auth/sessions/{id} ends one of the caller\'s sessions on every instance; any other id is the same 404', async (t) => {
    const loginOwn = ownUser('ender')
    const open = instances(t)
    const [a, b] = [await open(REFRESH_ON), await open(REFRESH_ON)]
    const mine = await loginOwn(a)
    const lost = await loginOwn(a)
    const stranger = await login(a, 'chris', 'secret')
    const lostId = String(claimsOf(lost.access_token).sid)
    t.equal((await endSession(b, mine.access_token, lostId)).statusCode, 204)
    refusedToken(t, await profile(a, lost.access_token), 'its access token, on the other instance')
    refusedRefresh(t, await refresh(a, lost.refresh_token), 'its refresh token')
    const notFound = { statusCode: 404, error: 'Not Found', message: 'No live session of yours has this id', code: 'AUTH_ERR_SESSION_NOT_FOUND' }
    for (const [name, id] of [['ended already', lostId], ['another user\'s', String(claimsOf(stranger.access_token).sid)], ['unknown', 'no-such-session']]) {
      const res = await endSession(a, mine.access_token, id)
      t.strictSame([res.statusCode, res.json()], [404, notFound], name)
    }
    t.equal((await profile(b, stranger.access_token)).statusCode, 200, 'the other user\'s session goes on')
    const long = await endSession(a, mine.access_token, 'x'.repeat(65))
    t.strictSame([long.statusCode, long.json().validation], [400, [{ field: 'params.id', message: 'must NOT have more than 64 characters' }]])
    t.equal((await endSession(a, mine.access_token, String(claimsOf(mine.access_token).sid))).statusCode, 204, 'its own session too')
    refusedToken(t, await profile(b, mine.access_token), 'then the token that asked is refused')
  })

  t.test('logout?scope=others ends the user\'s other sessions; scope=global all of them; scope=local only its own', async (t) => {
    const loginOwn = ownUser('leaver')
    const open = instances(t)
    const [a, b] = [await open(REFRESH_ON), await open(REFRESH_ON)]
    const [phone, laptop, tablet] = [await loginOwn(a), await loginOwn(b), await loginOwn(a)]
    const bystander = await login(b)
    const others = await a.inject({ method: 'POST', url: '/auth/logout?scope=others', headers: bearer(phone.access_token) })
    t.equal(others.statusCode, 204)
    for (const [name, tokens] of [['laptop', laptop], ['tablet', tablet]] as const) {
      refusedToken(t, await profile(b, tokens.access_token), `${name}: its access token`)
      refusedRefresh(t, await refresh(b, tokens.refresh_token), `${name}: its refresh token`)
    }
    t.equal((await profile(b, phone.access_token)).statusCode, 200, 'the asking session goes on')
    t.equal((await refresh(b, phone.refresh_token)).statusCode, 200)
    t.equal((await profile(a, bystander.access_token)).statusCode, 200, 'another user is not touched')

    const [desk, kiosk] = [await loginOwn(b), await loginOwn(b)]
    t.equal((await a.inject({ method: 'POST', url: '/auth/logout?scope=local', headers: bearer(kiosk.access_token) })).statusCode, 204)
    refusedToken(t, await profile(b, kiosk.access_token), 'local: its own session')
    t.equal((await profile(b, desk.access_token)).statusCode, 200, 'local: not the others')

    t.equal((await b.inject({ method: 'POST', url: '/auth/logout?scope=global', headers: bearer(desk.access_token) })).statusCode, 204)
    refusedToken(t, await profile(a, desk.access_token), 'global: its own session')
    refusedToken(t, await profile(a, phone.access_token), 'global: the other sessions')
    const bystanders = await sessionsOf(a, bystander.access_token)
    t.ok(bystanders.some((session) => session.id === claimsOf(bystander.access_token).sid), 'another user\'s session is still listed')

    const bad = await a.inject({ method: 'POST', url: '/auth/logout?scope=everyone', headers: bearer(bystander.access_token) })
    t.equal(bad.statusCode, 400)
    t.strictSame(bad.json().validation, [{ field: 'querystring.scope', message: 'must be equal to one of the allowed values' }])
  })

  t.test('logout ends the session: its refresh token and its other access tokens stop working', async (t) => {
    const app = await instances(t)(REFRESH_ON)
    const first = await login(app)
    const second: Tokens = (await refresh(app, first.refresh_token)).json()
    t.equal((await logout(app, first.access_token)).statusCode, 204)
    refusedToken(t, await profile(app, second.access_token), 'a sibling access token')
    refusedRefresh(t, await refresh(app, second.refresh_token), 'the session\'s refresh token')
  })

  t.test('unknown, malformed and expired refresh tokens get 401; a body without one gets 400', async (t) => {
    const app = await instances(t)({ ...REFRESH_ON, REFRESH_TOKEN_TTL: '1s', JWT_EXPIRES_IN: '1s' })
    refusedRefresh(t, await refresh(app, randomBytes(32).toString('base64url')), 'unknown')
    refusedRefresh(t, await refresh(app, 'not a refresh token'), 'malformed')
    refusedRefresh(t, await refresh(app, (await login(app)).access_token), 'an access token')
    const { refresh_token: expiring } = await login(app)
    // 1.5 s later by the service's clock, which reads Date.now, instead of waiting for them to pass.
    const realNow = Date.now
    t.teardown(() => { Date.now = realNow })
    Date.now = () => realNow() + 1500
    refusedRefresh(t, await refresh(app, expiring), 'expired')
    Date.now = realNow
    const bad = await app.inject({ method: 'POST', url: '/auth/refresh', payload: { refresh_token: 42 } })
    t.equal(bad.statusCode, 400)
    t.equal(bad.json().code, 'FST_ERR_VALIDATION')
  })

  t.test('a refresh token altered in any part is refused, and does not end its session', async (t) => {
    const app = await instances(t)(REFRESH_ON)
    const genuine = (await login(app)).refresh_token ?? ''
    const [sid, , exp, user, mac] = genuine.split('.')
    t.equal(Buffer.from(user, 'base64url').toString(), '1', 'the token carries its user\'s key')
    refusedRefresh(t, await refresh(app, `${sid}.1.${exp}.${user}.${mac}`), 'another generation under the same MAC')
    refusedRefresh(t, await refresh(app, `${sid}.0.${Number(exp) + 86_400}.${user}.${mac}`), 'a longer life under the same MAC')
    refusedRefresh(t, await refresh(app, `${sid}.0.${exp}.${Buffer.from('2').toString('base64url')}.${mac}`), 'another user under the same MAC')
    refusedRefresh(t, await refresh(app, `${sid}.0.${exp}.${mac}`), 'without its user, under the same MAC')
    refusedRefresh(t, await refresh(app, `${sid}.0.${exp}.${user}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`), 'another MAC')
    t.equal((await refresh(app, genuine)).statusCode, 200, 'none of them ended the session')
  })

  t.test('a refresh token of the form without the user\'s key (issued before it) still refreshes until it expires', async (t) => {
    const app = await instances(t)(REFRESH_ON)
    const genuine = (await login(app)).refresh_token ?? ''
    const [sessionId, generation, exp] = genuine.split('.')
    const earlier = encodeRefreshToken(refreshTokenKey(TEST_SECRET), { sessionId, generation: Number(generation), exp: Number(exp) })
    t.equal(earlier.split('.').length, 4)
    if (app.catsRedis?.cluster === true) {
      // Sessions in a Redis Cluster were never given a token without the user's key, which a refresh needs to find them.
      refusedRefresh(t, await refresh(app, earlier), 'in a Redis Cluster')
      return
    }
    const res = await refresh(app, earlier)
    t.equal(res.statusCode, 200)
    t.equal(Buffer.from(res.json().refresh_token.split('.')[3], 'base64url').toString(), '1', 'its successor carries the user\'s key')
    refusedRefresh(t, await refresh(app, genuine), 'the two forms are one generation: the other copy is a reuse')
  })

  t.test('two instances: a logout on A is refused on B', async (t) => {
    const open = instances(t)
    const [a, b] = [await open(REFRESH_ON), await open(REFRESH_ON)]
    const { access_token: token } = await login(a)
    t.equal((await profile(b, token)).statusCode, 200)
    t.equal((await logout(a, token)).statusCode, 204)
    refusedToken(t, await profile(b, token), 'on B')
  })

  t.test('a refresh token works until its lifetime is over and not after, and each new one lives as long', async (t) => {
    const app = await instances(t)(REFRESH_ON)
    const [early, late] = [await login(app), await login(app)]
    const realNow = Date.now
    const DAY = 86_400_000
    const at = (offsetMs: number): void => { Date.now = () => realNow() + offsetMs }
    t.teardown(() => { Date.now = realNow })
    at(30 * DAY - 60_000)
    const res = await refresh(app, early.refresh_token ?? '')
    t.equal(res.statusCode, 200, 'a minute before 30 days')
    at(30 * DAY + 1000)
    refusedRefresh(t, await refresh(app, late.refresh_token ?? ''), 'a second after 30 days')
    at(60 * DAY - 120_000)
    t.equal((await refresh(app, res.json().refresh_token)).statusCode, 200, 'the token issued at 30 days lives 30 days more')
  })

  t.test('the session cap ends a user\'s oldest session on a new login', async (t) => {
    const app = await instances(t)({ ...REFRESH_ON, SESSIONS_PER_USER_MAX: 2 })
    const [oldest, second, third] = [await login(app), await login(app), await login(app)]
    refusedToken(t, await profile(app, oldest.access_token), 'the oldest access token')
    refusedRefresh(t, await refresh(app, oldest.refresh_token), 'the oldest refresh token')
    t.equal((await profile(app, second.access_token)).statusCode, 200)
    t.equal((await profile(app, third.access_token)).statusCode, 200)
    t.equal((await profile(app, (await login(app, 'chris', 'secret')).access_token)).statusCode, 200, 'another user has a cap of their own')
  })

  t.test('refreshes are limited per session: 429 with Retry-After past the limit, and the session goes on', async (t) => {
    const app = await instances(t)({ ...REFRESH_ON, REFRESH_RATE_LIMIT: 2 })
    let tokens = await login(app)
    for (let i = 0; i < 2; i++) tokens = (await refresh(app, tokens.refresh_token)).json()
    const limited = await refresh(app, tokens.refresh_token)
    t.equal(limited.statusCode, 429)
    t.equal(limited.json().code, 'AUTH_ERR_TOO_MANY_REFRESHES')
    t.ok(Number(limited.headers['retry-after']) >= 1 && Number(limited.headers['retry-after']) <= 60, `Retry-After ${String(limited.headers['retry-after'])}`)
    t.equal((await profile(app, tokens.access_token)).statusCode, 200, 'the session was not ended')
    t.equal((await refresh(app, (await login(app)).refresh_token)).statusCode, 200, 'another session has its own limit')
  })
}

/**
 * Instances opened once per suite and shared by its tests, closed when the suite ends: the nth app a test opens
 * with a configuration is the suite's nth app of that configuration, so "two instances" are two apps. The tests
 * use sessions of their own, and none of them counts or sweeps the sessions of another.
 */
function sharedInstances (suite: Test, open: (config: Config, options: Omit<AppOptions, 'config'>) => Promise<FastifyInstance>): Instances {
  const apps = new Map<string, Array<Promise<FastifyInstance>>>()
  return () => {
    const opened = new Map<string, number>()
    return async (config = {}, options = {}) => {
      // The options given here are data (users), so their JSON tells configurations apart.
      const key = JSON.stringify([config, options])
      const index = opened.get(key) ?? 0
      opened.set(key, index + 1)
      const list = apps.get(key) ?? []
      apps.set(key, list)
      // Closed on a teardown registered once the app is open, after whatever its opening registered (a schema, a
      // key prefix): teardowns run last first, so the app closes before those go.
      list[index] ??= open(config, options).then((app) => {
        suite.teardown(() => app.close())
        return app
      })
      return await list[index]
    }
  }
}

/** Two instances share refresh tokens only through a database. */
function sharedRefreshSuite (t: Test, instances: Instances): void {
  t.test('two instances: a refresh token rotated on A and reused on B ends the session on both', async (t) => {
    const open = instances(t)
    const [a, b] = [await open(REFRESH_ON), await open(REFRESH_ON)]
    const first = await login(a)
    const second: Tokens = (await refresh(a, first.refresh_token)).json()
    refusedRefresh(t, await refresh(b, first.refresh_token), 'reused on B')
    refusedToken(t, await profile(a, second.access_token), 'the access token A issued, on A')
    refusedToken(t, await profile(b, first.access_token), 'the first access token, on B')
    refusedRefresh(t, await refresh(a, second.refresh_token), 'the current refresh token, on A')
  })

  // A race: its hundreds of trials are in test/stress/session-races.stress.ts; here a few cover its paths.
  t.test('a thief refreshing a stolen session in a loop never outlives the owner\'s reuse or logout on another instance', async (t) => {
    const open = instances(t)
    const [a, b] = [await open(REFRESH_ON), await open(REFRESH_ON)]
    t.equal(await raceTrials(a, b, 'reuse', 5), 0, 'survivors of 5 reuse races')
    t.equal(await raceTrials(a, b, 'logout', 5), 0, 'survivors of 5 logout races')
    t.equal(await raceTrials(a, b, 'delete', 5), 0, 'survivors of 5 races with the owner ending the session from another')
    t.equal(await raceTrials(a, b, 'others', 5), 0, 'survivors of 5 races with the owner logging out the others')
    const [c, d] = [await open(WITH_WINDOW), await open(WITH_WINDOW)]
    t.equal(await raceTrials(c, d, 'logout', 5), 0, 'survivors of 5 logout races, with the reuse window')
  })

  t.test('a refresh for a user who no longer exists is refused and ends the session', async (t) => {
    const open = instances(t)
    const a = await open(REFRESH_ON)
    const { refresh_token: token } = await login(a)
    const b = await open(REFRESH_ON, { users: [] })
    refusedRefresh(t, await refresh(b, token), 'on an instance that no longer has the user')
    refusedRefresh(t, await refresh(a, token), 'the session ended')
  })
}

t.test('memory', async (t) => {
  // One app per configuration, shared by the suite's tests as on the servers below (starting one costs more than
  // most tests). Two apps in memory share nothing: the "two instances" case needs one app seen twice.
  const apps = new Map<string, Promise<FastifyInstance>>()
  sessionSuite(t, () => (config = {}, options = {}) => {
    const key = JSON.stringify([config, options])
    const app = apps.get(key) ?? build(t, config, { users, ...options })
    apps.set(key, app)
    return app
  })

  t.test('a host\'s own revocation check is consulted after the service\'s, with the claims and the request', async (t) => {
    const seen: string[] = []
    const app = await build(t, {}, {
      users,
      isRevoked: async (claims, request) => {
        seen.push(`${claims.username} ${request.url}`)
        return claims.username === 'chris'
      }
    })
    t.equal((await profile(app, tokenFor(app, 1, 'john'))).statusCode, 200)
    refusedToken(t, await profile(app, tokenFor(app, 2, 'chris')), 'refused by the host')
    const { access_token: token } = await login(app)
    await logout(app, token)
    seen.length = 0
    refusedToken(t, await profile(app, token), 'logged out')
    t.strictSame(seen, [], 'a token the service refused never reaches the host\'s check')
    const sync = await build(t, {}, { users, isRevoked: () => true })
    refusedToken(t, await profile(sync, tokenFor(sync)), 'a synchronous check')
  })

  // A race: its hundreds of trials are in test/stress/session-races.stress.ts; here a few cover its paths.
  t.test('a thief refreshing in a loop never outlives the owner\'s reuse or logout', async (t) => {
    const app = await build(t, REFRESH_ON, { users })
    t.equal(await raceTrials(app, app, 'reuse', 5), 0, 'survivors of 5 reuse races')
    t.equal(await raceTrials(app, app, 'logout', 5), 0, 'survivors of 5 logout races')
    const windowed = await build(t, WITH_WINDOW, { users })
    t.equal(await raceTrials(windowed, windowed, 'logout', 5), 0, 'survivors of 5 logout races, with the reuse window')
  })
})

t.test('PGlite in process', async (t) => {
  // Opening a PGlite takes a second or more: the tests share one app (and its database) per configuration,
  // closed at the end. They use sessions of their own, and none of them counts or sweeps the sessions of
  // another. Each database is a copy of an initialised one with the migrations applied (creating one from nothing
  // takes seconds more, migrating it a good part of a second).
  const apps = new Map<string, Promise<FastifyInstance>>()
  const shared = (config: Config): Promise<FastifyInstance> => {
    const key = JSON.stringify(config)
    let app = apps.get(key)
    if (app === undefined) {
      const opened = pgliteMigratedCopy(t).then(async (dir) =>
        await createApp({ DATABASE_URL: `pglite://${dir}`, ...config }, { users }))
      // Registered after the copy's removal, so it runs first: the app closes its database before it goes.
      t.teardown(async () => { await (await opened).close() })
      app = opened
      apps.set(key, app)
    }
    return app
  }

  t.test('a refresh token from before session records refreshes once more, as its session\'s generation 0', async (t) => {
    const app = await shared(REFRESH_ON)
    const legacy = randomBytes(32).toString('base64url')
    const database = app.catsDatabase
    if (database === undefined) throw new Error('no database')
    // The row migration 7 makes of a live refresh token issued before it.
    await database.client.query(
      `INSERT INTO sessions (id, user_id, username, generation, created_at_ms, last_used_at_ms, address, user_agent, expires_at_ms, legacy_token_hash)
       VALUES ('old-session', '1', 'john', 0, $1, $1, '', '', $2, $3)`,
      [Date.now(), Date.now() + 86_400_000, createHash('sha256').update(legacy).digest()]
    )
    const res = await refresh(app, legacy)
    t.equal(res.statusCode, 200)
    const next: Tokens = res.json()
    t.equal(claimsOf(next.access_token).sid, 'old-session', 'the same session')
    refusedRefresh(t, await refresh(app, legacy), 'the old token again is a reuse')
    refusedRefresh(t, await refresh(app, next.refresh_token), 'which ended the session')
    refusedRefresh(t, await refresh(app, randomBytes(32).toString('base64url')), 'an unknown token of the old form')
  })

  sessionSuite(t, () => {
    // A PGlite database belongs to one app: as in memory, the "two instances" are one app.
    let app: Promise<FastifyInstance> | undefined
    return (config = {}) => (app ??= shared(config))
  })
})

if (TEST_DATABASE_URL === undefined || TEST_DATABASE_URL === '') {
  t.comment('TEST_DATABASE_URL is not set: the PostgreSQL server runs of the session tests were skipped')
} else {
  const serverUrl = TEST_DATABASE_URL
  /**
   * Apps on one fresh schema of the PostgreSQL server per suite (migrated once, by its first app), optionally with
   * the denylist in Redis, shared by the suite's tests.
   */
  const onPostgres = (suite: Test, redisUrl?: string): Instances => {
    let created: Promise<string> | undefined
    return sharedInstances(suite, async (config, options) => {
      created ??= (async () => await freshServerSchema(suite, await adminClient(suite, serverUrl), 'sessions_http'))()
      const app = await createApp({ DATABASE_URL: urlWithSchema(serverUrl, await created), ...(redisUrl !== undefined && { REDIS_URL: redisUrl }), ...config }, { users, ...options })
      // Redis connects after start-up, and commands are not queued meanwhile: wait until it is ready.
      await becomesReady(app)
      return app
    })
  }
  t.test('PostgreSQL server: two apps on one schema', async (t) => {
    const instances = onPostgres(t)
    sessionSuite(t, instances)
    sharedRefreshSuite(t, instances)
  })
  if (TEST_REDIS_URL === undefined || TEST_REDIS_URL === '') {
    t.comment('TEST_REDIS_URL is not set: the Redis runs of the session tests were skipped')
  } else {
    const redisUrl = TEST_REDIS_URL
    t.test('PostgreSQL server and Redis: the denylist in Redis, refresh tokens in the database', async (t) => {
      const instances = onPostgres(t, redisUrl)
      sessionSuite(t, instances)
      sharedRefreshSuite(t, instances)
    })
  }
}

if (TEST_REDIS_URL === undefined || TEST_REDIS_URL === '') {
  t.comment('TEST_REDIS_URL is not set: the Redis-only runs of the session tests were skipped')
} else {
  const redisUrl = TEST_REDIS_URL
  /** Apps on one fresh key prefix of the Redis server per suite, without a database (sessions live in Redis), shared by its tests. */
  const onRedis = (suite: Test): Instances => {
    let prefix: string | undefined
    return sharedInstances(suite, async (config, options) => {
      prefix ??= freshKeyPrefix(suite, redisUrl)
      const app = await createApp({ REDIS_URL: redisUrl, REDIS_KEY_PREFIX: prefix, ...config }, { users, ...options })
      await becomesReady(app)
      return app
    })
  }
  t.test('Redis without a database: two apps on one Redis', async (t) => {
    const onRedisSuite = onRedis(t)
    sessionSuite(t, onRedisSuite)
    sharedRefreshSuite(t, onRedisSuite)

    t.test('a logout on B ends the session on A: its refresh token and its refreshed access tokens are refused', async (t) => {
      const open = onRedisSuite(t)
      const [a, b] = [await open(REFRESH_ON), await open(REFRESH_ON)]
      const first = await login(a)
      const second: Tokens = (await refresh(a, first.refresh_token)).json()
      t.equal((await logout(b, first.access_token)).statusCode, 204)
      refusedRefresh(t, await refresh(a, second.refresh_token), 'refresh on A')
      refusedToken(t, await profile(a, second.access_token), 'the refreshed access token on A')
    })
  })
}

const noCluster = clusterMissing()
if (noCluster !== undefined) {
  t.comment(`${noCluster}: the Redis Cluster runs of the session tests were skipped`)
} else {
  t.test('Redis Cluster without a database: two apps on one cluster of 3 masters and 3 replicas', async (t) => {
    const cluster = await startRedisCluster(t)
    let prefix: string | undefined
    const onCluster = sharedInstances(t, async (config, options) => {
      prefix ??= `cats-test-${randomBytes(6).toString('hex')}:`
      const app = await createApp({ REDIS_CLUSTER_NODES: cluster.setting, REDIS_KEY_PREFIX: prefix, ...config }, { users, ...options })
      await becomesReady(app)
      return app
    })
    sessionSuite(t, onCluster)
    sharedRefreshSuite(t, onCluster)
  })
}

t.test('the denylist\'s Redis out of reach: guarded routes answer 503 with a code, never accept the token', async (t) => {
  const app = await build(t, { REDIS_URL: `redis://127.0.0.1:${await closedPort()}` })
  const res = await profile(app, tokenFor(app))
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '5')
  t.equal(res.json().code, 'AUTH_ERR_SESSION_STORE_UNAVAILABLE')
})
