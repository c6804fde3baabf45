import assert from 'node:assert/strict'
import t from 'tap'
import fc from 'fast-check'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { hashPassword } from '../../src/auth/login/password.js'
import { checkModel } from '../support/model-check.js'
import { createApp } from '../support/app.js'
import { CHEAP_HASH } from '../support/cheap-users.js'

/*
 * Model-based test of the token lifecycle, with refresh tokens on and the
 * token guard on the cats routes.
 * fast-check generates random sequences of logins, refreshes (with the
 * current refresh token, with one already exchanged, with garbage), logouts,
 * and uses of access tokens on /profile and /cats; each sequence runs against
 * an app with no cats and no live session (through app.inject) and against the
 * reference model below.
 * At the end of each sequence every access token ever issued is tried again.
 *
 * Reproduce a failure with FC_SEED=<seed from the report>; FC_RUNS=<n> runs longer.
 */

const NUM_RUNS = Number(process.env.FC_RUNS ?? 60)
const MAX_COMMANDS = 50
/** Logins per sequence: commands name a session by its login's place in the sequence, #0 to #3. */
const MAX_SESSIONS = 4
/** The default access token lifetime (60m), as login and refresh report it. */
const EXPIRES_IN = 3600
/** A refresh token: its session, generation, expiry and MAC. */
// The session, generation, expiry, the user's key (tokens before it carry none) and the MAC.
const REFRESH_TOKEN_FORM = /^[0-9a-f-]{36}\.[0-9]+\.[0-9]+\.([A-Za-z0-9_-]+\.)?[A-Za-z0-9_-]{43}$/
/** A longer refresh_token is refused by validation (400) before it is looked at. */
const MAX_REFRESH_TOKEN_LENGTH = 1024

interface User {
  readonly id: number
  readonly username: string
  readonly password: string
}

// Cheap hashes keep the many logins fast; the cost of a login is not what this test is about.
const USERS: readonly User[] = [{ id: 1, username: 'john', password: 'changeme' }, { id: 2, username: 'chris', password: 'secret' }]
const userRecords = await Promise.all(USERS.map(async ({ id, username, password }) => ({ id, username, passwordHash: await hashPassword(password, CHEAP_HASH) })))

// ---------------------------------------------------------------------------
// The reference model.
// ---------------------------------------------------------------------------

/** One login and everything issued through it. */
interface Session {
  readonly user: User
  /** Every access token issued in the session, oldest first. */
  readonly access: string[]
  /** The refresh token issued last: the only one that can be exchanged. */
  current: string
  /** The refresh tokens already exchanged, oldest first. */
  readonly rotated: string[]
  /** Logged out, or a refresh token presented twice: none of its tokens works any more. */
  ended: boolean
}

interface Cat {
  readonly id: number
  readonly name: string
  readonly age: number
  readonly breed: string
}

interface Model {
  readonly sessions: Session[]
  readonly cats: Cat[]
  /** Every token handed out so far: a new one must differ from them all. */
  readonly issued: Set<string>
}

/** `age` 0 is the newest item, 1 the one before, and so on. */
const byAge = <T>(items: readonly T[], age: number): T => items[items.length - 1 - age]
/** Whether the sequence so far has a session `index` with an access token `age` (commands that name none are skipped). */
const hasAccessToken = (model: Readonly<Model>, index: number, age: number): boolean =>
  index < model.sessions.length && age < model.sessions[index].access.length
const describeAge = (age: number): string => age === 0 ? 'newest' : `${age} before the newest`

// ---------------------------------------------------------------------------
// Checks against the real app.
// ---------------------------------------------------------------------------

/** Which behaviours the generated sequences reached, so a weak generator cannot pass silently. */
const reached = new Map<string, number>()
const note = (what: string): void => { reached.set(what, (reached.get(what) ?? 0) + 1) }

interface Request {
  readonly method: 'GET' | 'POST' | 'DELETE'
  readonly url: string
  readonly token?: string
  readonly body?: object
}

async function send (app: FastifyInstance, { method, url, token, body }: Request): Promise<LightMyRequestResponse> {
  const headers = token === undefined ? {} : { authorization: `Bearer ${token}` }
  const res = await app.inject({ method, url, headers, ...(body === undefined ? {} : { payload: body }) })
  assert.ok(res.statusCode < 500, `${method} ${url} answered ${res.statusCode}: ${res.body}`)
  return res
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

function readJson (res: LightMyRequestResponse, what: string): unknown {
  assert.match(String(res.headers['content-type']), /^application\/json/, `${what}: content-type`)
  const body: unknown = JSON.parse(res.body)
  return body
}

function expectJson (res: LightMyRequestResponse, status: number, expected: unknown, what: string): void {
  assert.equal(res.statusCode, status, `${what}: status (body ${res.body})`)
  assert.deepStrictEqual(readJson(res, what), expected, `${what}: body`)
}

function expectErrorCode (res: LightMyRequestResponse, status: number, code: string, what: string): void {
  assert.equal(res.statusCode, status, `${what}: status (body ${res.body})`)
  const body = readJson(res, what)
  assert.ok(isObject(body), `${what}: error body is an object`)
  assert.equal(body.code, code, `${what}: code`)
}

/** A guarded route refusing the access token sent. */
function expectTokenRefused (res: LightMyRequestResponse, what: string): void {
  expectErrorCode(res, 401, 'AUTH_ERR_INVALID_TOKEN', what)
  assert.equal(res.headers['www-authenticate'], 'Bearer error="invalid_token"', `${what}: www-authenticate`)
}

/** A guarded route given no access token at all. */
function expectTokenMissing (res: LightMyRequestResponse, what: string): void {
  expectErrorCode(res, 401, 'AUTH_ERR_MISSING_TOKEN', what)
  assert.equal(res.headers['www-authenticate'], 'Bearer', `${what}: www-authenticate`)
}

const expectRefreshRefused = (res: LightMyRequestResponse, what: string): void =>
  expectErrorCode(res, 401, 'AUTH_ERR_INVALID_REFRESH_TOKEN', what)

/**
 * A login or refresh answer: a bearer token and a refresh token, neither seen before.
 * Returns the two tokens, already recorded in the model as issued.
 */
function expectIssued (model: Model, res: LightMyRequestResponse, what: string): { access: string, refresh: string } {
  assert.equal(res.statusCode, 200, `${what}: status (body ${res.body})`)
  assert.equal(res.headers['cache-control'], 'no-store', `${what}: cache-control`)
  const body = readJson(res, what)
  assert.ok(isObject(body), `${what}: body is an object`)
  assert.deepStrictEqual(Object.keys(body).sort(), ['access_token', 'expires_in', 'refresh_token', 'token_type'], `${what}: fields`)
  assert.equal(body.token_type, 'Bearer', `${what}: token_type`)
  assert.equal(body.expires_in, EXPIRES_IN, `${what}: expires_in`)
  const access = body.access_token
  const refresh = body.refresh_token
  assert.ok(typeof access === 'string' && typeof refresh === 'string', `${what}: tokens are strings`)
  // At least 128 random bits, base64url.
  assert.match(refresh, REFRESH_TOKEN_FORM, `${what}: refresh_token form`)
  for (const token of [access, refresh]) {
    assert.ok(!model.issued.has(token), `${what}: a token handed out before was handed out again`)
    model.issued.add(token)
  }
  return { access, refresh }
}

/** What /profile answers for an access token of `session`, per the model. */
async function expectProfile (app: FastifyInstance, session: Session, token: string, what: string): Promise<void> {
  const res = await send(app, { method: 'GET', url: '/profile', token })
  if (session.ended) {
    expectTokenRefused(res, what)
    note('profile 401: session ended')
  } else {
    expectJson(res, 200, { userId: session.user.id, username: session.user.username }, what)
    note('profile 200')
    if (token !== session.access[session.access.length - 1]) note('an access token from before a refresh still works')
  }
}

// ---------------------------------------------------------------------------
// Commands.
// ---------------------------------------------------------------------------

type SessionCommand = fc.AsyncCommand<Model, FastifyInstance>

class LoginCommand implements SessionCommand {
  constructor (readonly user: User) {}
  check (model: Readonly<Model>): boolean { return model.sessions.length < MAX_SESSIONS }

  async run (model: Model, app: FastifyInstance): Promise<void> {
    const what = this.toString()
    const res = await send(app, { method: 'POST', url: '/auth/login', body: { username: this.user.username, password: this.user.password } })
    const { access, refresh } = expectIssued(model, res, what)
    model.sessions.push({ user: this.user, access: [access], current: refresh, rotated: [], ended: false })
    note('login')
  }

  toString (): string { return `login as ${this.user.username}` }
}

/** Refreshes with the session's current refresh token: a new pair, or 401 once the session has ended. */
class RefreshCommand implements SessionCommand {
  constructor (readonly session: number) {}
  check (model: Readonly<Model>): boolean { return this.session < model.sessions.length }

  async run (model: Model, app: FastifyInstance): Promise<void> {
    const what = this.toString()
    const session = model.sessions[this.session]
    const res = await send(app, { method: 'POST', url: '/auth/refresh', body: { refresh_token: session.current } })
    if (session.ended) {
      expectRefreshRefused(res, what)
      note('refresh 401: session ended')
    } else {
      const { access, refresh } = expectIssued(model, res, what)
      session.rotated.push(session.current)
      session.current = refresh
      session.access.push(access)
      note('refresh 200')
    }
  }

  toString (): string { return `refresh with session #${this.session}'s current refresh token` }
}

/** Presents a refresh token that was already exchanged: 401, and the whole session ends. */
class ReuseCommand implements SessionCommand {
  constructor (readonly session: number, readonly age: number) {}
  check (model: Readonly<Model>): boolean { return this.session < model.sessions.length && this.age < model.sessions[this.session].rotated.length }

  async run (model: Model, app: FastifyInstance): Promise<void> {
    const what = this.toString()
    const session = model.sessions[this.session]
    const res = await send(app, { method: 'POST', url: '/auth/refresh', body: { refresh_token: byAge(session.rotated, this.age) } })
    expectRefreshRefused(res, what)
    note(session.ended ? 'reuse 401: session already ended' : 'reuse 401: session ends')
    session.ended = true
  }

  toString (): string { return `refresh with session #${this.session}'s already exchanged refresh token (${describeAge(this.age)})` }
}

/** A refresh token no login handed out: 401 (400 when empty or too long), and no session is touched. */
class RefreshGarbageCommand implements SessionCommand {
  constructor (readonly token: string) {}
  check (): boolean { return true }

  async run (_model: Model, app: FastifyInstance): Promise<void> {
    const what = this.toString()
    const res = await send(app, { method: 'POST', url: '/auth/refresh', body: { refresh_token: this.token } })
    if (this.token === '' || this.token.length > MAX_REFRESH_TOKEN_LENGTH) {
      expectErrorCode(res, 400, 'FST_ERR_VALIDATION', what)
      note(this.token === '' ? 'refresh 400: empty' : 'refresh 400: too long')
    } else {
      expectRefreshRefused(res, what)
      note(REFRESH_TOKEN_FORM.test(this.token) ? 'refresh 401: forged token of the right form' : 'refresh 401: malformed token')
    }
  }

  toString (): string {
    const shown = this.token.length > 60 ? `${JSON.stringify(this.token.slice(0, 20))}… (${this.token.length} characters)` : JSON.stringify(this.token)
    return `refresh with ${shown}`
  }
}

/** Logout with one of the session's access tokens: 204 and the session ends, or 401 when it has already. */
class LogoutCommand implements SessionCommand {
  constructor (readonly session: number, readonly age: number) {}
  check (model: Readonly<Model>): boolean { return hasAccessToken(model, this.session, this.age) }

  async run (model: Model, app: FastifyInstance): Promise<void> {
    const what = this.toString()
    const session = model.sessions[this.session]
    const res = await send(app, { method: 'POST', url: '/auth/logout', token: byAge(session.access, this.age) })
    if (session.ended) {
      expectTokenRefused(res, what)
      note('logout 401: session ended')
    } else {
      assert.equal(res.statusCode, 204, `${what}: status (body ${res.body})`)
      assert.equal(res.body, '', `${what}: body`)
      session.ended = true
      note(session.access.length > 1 ? 'logout 204 in a refreshed session' : 'logout 204')
    }
  }

  toString (): string { return `POST /auth/logout with session #${this.session}'s access token (${describeAge(this.age)})` }
}

class ProfileCommand implements SessionCommand {
  constructor (readonly session: number, readonly age: number) {}
  check (model: Readonly<Model>): boolean { return hasAccessToken(model, this.session, this.age) }

  async run (model: Model, app: FastifyInstance): Promise<void> {
    const session = model.sessions[this.session]
    await expectProfile(app, session, byAge(session.access, this.age), this.toString())
  }

  toString (): string { return `GET /profile with session #${this.session}'s access token (${describeAge(this.age)})` }
}

/** A cat created through the guard: 201 with the next id, or 401 and nothing stored. */
class CreateCatCommand implements SessionCommand {
  constructor (readonly session: number, readonly age: number, readonly cat: Omit<Cat, 'id'>) {}
  check (model: Readonly<Model>): boolean { return hasAccessToken(model, this.session, this.age) }

  async run (model: Model, app: FastifyInstance): Promise<void> {
    const what = this.toString()
    const session = model.sessions[this.session]
    const res = await send(app, { method: 'POST', url: '/cats', token: byAge(session.access, this.age), body: this.cat })
    if (session.ended) {
      expectTokenRefused(res, what)
      note('cats 401: session ended')
    } else {
      const cat = { id: model.cats.length + 1, ...this.cat }
      expectJson(res, 201, cat, what)
      model.cats.push(cat)
      note('create cat 201')
    }
  }

  toString (): string { return `POST /cats ${JSON.stringify(this.cat)} with session #${this.session}'s access token (${describeAge(this.age)})` }
}

/** The list through the guard: every cat created so far, or 401. */
class ListCatsCommand implements SessionCommand {
  constructor (readonly session: number, readonly age: number) {}
  check (model: Readonly<Model>): boolean { return hasAccessToken(model, this.session, this.age) }

  async run (model: Model, app: FastifyInstance): Promise<void> {
    const what = this.toString()
    const session = model.sessions[this.session]
    const res = await send(app, { method: 'GET', url: '/cats', token: byAge(session.access, this.age) })
    if (session.ended) {
      expectTokenRefused(res, what)
      note('cats 401: session ended')
    } else {
      expectJson(res, 200, model.cats, what)
      note('list cats 200')
    }
  }

  toString (): string { return `GET /cats with session #${this.session}'s access token (${describeAge(this.age)})` }
}

/** The guarded routes without a token, or with one the service never signed. */
class NoValidTokenCommand implements SessionCommand {
  constructor (readonly request: Request) {}
  check (): boolean { return true }

  async run (_model: Model, app: FastifyInstance): Promise<void> {
    const what = this.toString()
    const res = await send(app, this.request)
    if (this.request.token === undefined) expectTokenMissing(res, what)
    else expectTokenRefused(res, what)
    note('guarded route without a valid token')
  }

  toString (): string { return `${this.request.method} ${this.request.url} with ${this.request.token === undefined ? 'no token' : JSON.stringify(this.request.token)}` }
}

// ---------------------------------------------------------------------------
// Generators.
// ---------------------------------------------------------------------------

const sessionIndex = fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 1 }) }, { weight: 1, arbitrary: fc.integer({ min: 2, max: MAX_SESSIONS - 1 }) })
/** Mostly the newest token of a session, sometimes an older one. */
const tokenAge = fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.constant(2) })
const base64url = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url')
const garbageRefresh = fc.oneof(
  // The right form with a MAC the service did not make.
  { weight: 3, arbitrary: fc.tuple(fc.uuid(), fc.nat(5), fc.uint8Array({ minLength: 32, maxLength: 32 })).map(([id, generation, mac]) => `${id}.${generation}.${Math.floor(Date.now() / 1000) + 3600}.${base64url(mac)}`) },
  { weight: 2, arbitrary: fc.tuple(fc.uuid(), fc.nat(5), fc.constantFrom(1, 2, 3), fc.uint8Array({ minLength: 32, maxLength: 32 })).map(([id, generation, user, mac]) => `${id}.${generation}.${Math.floor(Date.now() / 1000) + 3600}.${Buffer.from(String(user)).toString('base64url')}.${base64url(mac)}`) },
  { weight: 2, arbitrary: fc.uint8Array({ minLength: 32, maxLength: 32 }).map(base64url) },
  { weight: 2, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 48 }).map(base64url) },
  { weight: 2, arbitrary: fc.string({ minLength: 1, maxLength: 50 }) },
  { weight: 1, arbitrary: fc.constantFrom(' ', 'null', 'eyJhbGciOiJIUzI1NiJ9.e30.x', `${'A'.repeat(43)}=`, `${'+/'.repeat(21)}A`, 'A'.repeat(42), 'A'.repeat(44)) },
  // The bounds of the body's validation.
  { weight: 3, arbitrary: fc.constantFrom('', 'A'.repeat(MAX_REFRESH_TOKEN_LENGTH), 'A'.repeat(MAX_REFRESH_TOKEN_LENGTH + 1)) }
)
const catBody = fc.record({ name: fc.string({ maxLength: 8 }), age: fc.integer({ min: 0, max: 30 }), breed: fc.string({ maxLength: 8 }) })
/** Every guarded route, with a body that is valid so that only the token can be wrong. */
const guardedRoute = fc.constantFrom<Request>(
  { method: 'GET', url: '/profile' },
  { method: 'POST', url: '/auth/logout' },
  { method: 'GET', url: '/cats' },
  { method: 'POST', url: '/cats', body: { name: 'Tom', age: 3, breed: 'x' } }
)
const notAToken = fc.option(fc.constantFrom('not.a.token', 'eyJhbGciOiJub25lIn0.eyJzdWIiOjF9.'), { nil: undefined })

const login = fc.constantFrom(...USERS).map((user) => new LoginCommand(user))
const refresh = sessionIndex.map((session) => new RefreshCommand(session))
const reuse = fc.tuple(sessionIndex, tokenAge).map(([session, age]) => new ReuseCommand(session, age))
const garbage = garbageRefresh.map((token) => new RefreshGarbageCommand(token))
const logout = fc.tuple(sessionIndex, tokenAge).map(([session, age]) => new LogoutCommand(session, age))
const profile = fc.tuple(sessionIndex, tokenAge).map(([session, age]) => new ProfileCommand(session, age))
/** fc.commands picks uniformly among these, so repeating one weights it. */
const allCommands: Array<fc.Arbitrary<SessionCommand>> = [
  login, login,
  refresh, refresh, refresh,
  reuse, reuse,
  garbage, garbage,
  logout, logout,
  profile, profile,
  fc.tuple(sessionIndex, tokenAge, catBody).map(([session, age, cat]) => new CreateCatCommand(session, age, cat)),
  fc.tuple(sessionIndex, tokenAge).map(([session, age]) => new ListCatsCommand(session, age)),
  fc.tuple(guardedRoute, notAToken).map(([route, token]) => new NoValidTokenCommand(token === undefined ? route : { ...route, token }))
]

/** A fresh service with refresh tokens on and the cats behind the guard, closed by the caller. */
// No Idempotency-Key is ever sent: a small cap on them spares each app allocating the default 50,000 slots.
const startApp = (): Promise<FastifyInstance> =>
  // No refresh limit: a sequence may refresh one session more often than a client would, and the limit has tests of its own.
  createApp({
    // The reference model has no reuse window: a replaced token presented again is a reuse.
    REFRESH_TOKENS: true, REFRESH_REUSE_WINDOW: '0', REFRESH_RATE_LIMIT: 1_000_000, CATS_AUTH: 'required', IDEMPOTENCY_KEYS_MAX: 100
  }, { users: userRecords })

/** After a sequence, every access token ever issued is accepted or refused as its session says. */
async function expectEveryAccessToken (app: FastifyInstance, model: Model): Promise<void> {
  for (const [index, session] of model.sessions.entries()) {
    for (const [age, token] of [...session.access].reverse().entries()) {
      await expectProfile(app, session, token, `after the sequence, GET /profile with session #${index}'s access token (${describeAge(age)})`)
    }
  }
}

/**
 * Brings a service back to where a fresh one starts: no cats (each listed one deleted through the API, the earliest
 * of a repeated id first, so one DELETE per listing; ids count from the number of cats, so the next one is 1 again)
 * and no live session (each user logs in once more and logs out everywhere).
 */
async function resetApp (app: FastifyInstance): Promise<void> {
  for (const [index, user] of USERS.entries()) {
    const what = `reset: login as ${user.username}`
    const res = await send(app, { method: 'POST', url: '/auth/login', body: { username: user.username, password: user.password } })
    assert.equal(res.statusCode, 200, `${what}: status (body ${res.body})`)
    const body = readJson(res, what)
    assert.ok(isObject(body) && typeof body.access_token === 'string', `${what}: an access token`)
    const token = body.access_token
    if (index === 0) {
      const listed = readJson(await send(app, { method: 'GET', url: '/cats', token }), 'reset: GET /cats')
      assert.ok(Array.isArray(listed), 'reset: the list is an array')
      for (const cat of listed) {
        assert.ok(isObject(cat), 'reset: a listed cat is an object')
        expectJson(await send(app, { method: 'DELETE', url: `/cats/${String(cat.id)}`, token }), 200, { deleted: true }, `reset: DELETE /cats/${String(cat.id)}`)
      }
      expectJson(await send(app, { method: 'GET', url: '/cats', token }), 200, [], 'reset: GET /cats once emptied')
    }
    const out = await send(app, { method: 'POST', url: '/auth/logout?scope=global', token })
    assert.equal(out.statusCode, 204, `reset: logout everywhere as ${user.username}: status (body ${out.body})`)
  }
}

t.test('random sequences of logins, refreshes, reuses and logouts agree with a reference model of sessions', async (t) => {
  // Starting a service costs more than a run's commands: a run that passed hands its app, reset, to the next one;
  // after a failure (or a failed reset) the app's state is unknown, so it is closed and the next run starts a
  // fresh one.
  let spare: FastifyInstance | undefined
  t.teardown(async () => { await spare?.close() })
  const property = fc.asyncProperty(fc.commands(allCommands, { maxCommands: MAX_COMMANDS, size: 'max' }), async (commands) => {
    const app = spare ?? await startApp()
    spare = undefined
    try {
      const model: Model = { sessions: [], cats: [], issued: new Set() }
      await fc.asyncModelRun(() => ({ model, real: app }), commands)
      await expectEveryAccessToken(app, model)
      await resetApp(app)
      spare = app
    } finally {
      if (spare !== app) await app.close()
    }
  })
  await checkModel(t, property, {
    numRuns: NUM_RUNS,
    runs: `runs of up to ${MAX_COMMANDS} commands, each from no cats and no live session`,
    reached,
    behaviours: [
      'login', 'refresh 200', 'refresh 401: session ended', 'reuse 401: session ends', 'reuse 401: session already ended',
      'refresh 400: empty', 'refresh 400: too long', 'refresh 401: forged token of the right form', 'refresh 401: malformed token',
      'logout 204', 'logout 204 in a refreshed session', 'logout 401: session ended',
      'profile 200', 'profile 401: session ended', 'an access token from before a refresh still works',
      'create cat 201', 'list cats 200', 'cats 401: session ended', 'guarded route without a valid token'
    ]
  })
})
