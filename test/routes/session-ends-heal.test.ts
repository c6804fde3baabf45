import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { Redis } from 'ioredis'
import type { ConfigInput } from '../../src/config.js'
import { hashPassword } from '../../src/auth/login/password.js'
import { bearer, build } from '../support/app.js'
import { CHEAP_HASH } from '../support/cheap-users.js'
import { pgliteMigratedCopy } from '../support/pglite-template.js'
import { freshKeyPrefix } from '../support/redis.js'
import { adminClient, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'

/**
 * A session end the client was told failed (503) is finished by its retry, or by the session's next request.
 * Each path that ends sessions is made to fail where the denial of access tokens (or the ending of the record) is
 * written, per store configuration: a trigger on the table in PostgreSQL and PGlite, an ACL user that may read
 * every key but write only some in Redis. After the fault is cleared and the client retries, the other device's
 * access token must get 401. (Memory cannot fail: test/auth/sessions.test.ts runs the same paths against a store
 * and a denylist that fail on demand.)
 */

const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
/** Two sessions per user, so that a third login ends the oldest. */
const CONFIG: Partial<ConfigInput> = { REFRESH_TOKENS: true, REFRESH_REUSE_WINDOW: '0', SESSIONS_PER_USER_MAX: 2 }
const USERNAMES = ['others', 'delete', 'global', 'local', 'cap', 'reuse', 'ends'] as const
type Username = typeof USERNAMES[number]
const users = await Promise.all(USERNAMES.map(async (username, index) => ({ id: index + 1, username, passwordHash: await hashPassword('pw', CHEAP_HASH) })))

/** Makes the store of this configuration fail writes on demand. */
interface Faults {
  /** From now on, every denial fails but those of the session ids in `except`. */
  failDenials: (except?: string[]) => Promise<void>
  /** From now on, every ending of a session record fails (its denial does not). */
  failEnds: () => Promise<void>
  clear: () => Promise<void>
}

interface Tokens { access_token: string, refresh_token: string }
interface Device extends Tokens { sid: string }

const sidOf = (accessToken: string): string => JSON.parse(Buffer.from(accessToken.split('.')[1], 'base64url').toString()).sid

async function login (app: FastifyInstance, username: Username): Promise<LightMyRequestResponse> {
  return await app.inject({ method: 'POST', url: '/auth/login', payload: { username, password: 'pw' } })
}
async function device (app: FastifyInstance, username: Username): Promise<Device> {
  const res = await login(app, username)
  if (res.statusCode !== 200) throw new Error(`login failed: ${res.statusCode} ${res.body}`)
  const tokens: Tokens = res.json()
  return { ...tokens, sid: sidOf(tokens.access_token) }
}
const profile = async (app: FastifyInstance, { access_token: token }: Tokens): Promise<number> =>
  (await app.inject({ url: '/profile', headers: bearer(token) })).statusCode
const refresh = async (app: FastifyInstance, token: string): Promise<number> =>
  (await app.inject({ method: 'POST', url: '/auth/refresh', payload: { refresh_token: token } })).statusCode
const logout = (app: FastifyInstance, { access_token: token }: Tokens, scope: string): Promise<LightMyRequestResponse> =>
  app.inject({ method: 'POST', url: `/auth/logout?scope=${scope}`, headers: bearer(token) })
const endSession = (app: FastifyInstance, { access_token: token }: Tokens, id: string): Promise<LightMyRequestResponse> =>
  app.inject({ method: 'DELETE', url: `/auth/sessions/${id}`, headers: bearer(token) })
const listed = async (app: FastifyInstance, { access_token: token }: Tokens): Promise<string[]> =>
  (await app.inject({ url: '/auth/sessions', headers: bearer(token) })).json().map((session: { id: string }) => session.id)

function unavailable (t: Test, res: LightMyRequestResponse, what: string): void {
  t.equal(res.statusCode, 503, `${what}: 503`)
  t.equal(res.json().code, 'AUTH_ERR_SESSION_STORE_UNAVAILABLE')
}

/** Every path that ends sessions, failed and then retried, on one app and its faults. */
function healing (t: Test, open: (t: Test) => Promise<{ app: FastifyInstance, faults: Faults }>): void {
  t.test('logout?scope=others: the retry denies the other device', async (t) => {
    const { app, faults } = await open(t)
    const [other, mine] = [await device(app, 'others'), await device(app, 'others')]
    await faults.failDenials()
    unavailable(t, await logout(app, mine, 'others'), 'the logout whose denial fails')
    await faults.clear()
    t.equal((await logout(app, mine, 'others')).statusCode, 204, 'the retry')
    t.equal(await profile(app, other), 401, 'the other device\'s access token is refused')
    t.equal(await refresh(app, other.refresh_token), 401, 'and its refresh token')
    t.equal(await profile(app, mine), 200, 'the caller goes on')
    t.strictSame(await listed(app, mine), [mine.sid])
  })

  t.test('DELETE /auth/sessions/:id: the retry ends and denies the session', async (t) => {
    const { app, faults } = await open(t)
    const [other, mine] = [await device(app, 'delete'), await device(app, 'delete')]
    await faults.failDenials()
    unavailable(t, await endSession(app, mine, other.sid), 'the end whose denial fails')
    await faults.clear()
    t.equal((await endSession(app, mine, other.sid)).statusCode, 204, 'the retry')
    t.equal(await profile(app, other), 401, 'the other device\'s access token is refused')
    t.equal(await refresh(app, other.refresh_token), 401, 'and its refresh token')
    t.equal((await endSession(app, mine, other.sid)).statusCode, 404, 'ended: a third time is a 404')
    t.strictSame(await listed(app, mine), [mine.sid])
  })

  t.test('logout?scope=global: the caller\'s denial went through, the other\'s failed; the retry ends both', async (t) => {
    const { app, faults } = await open(t)
    const [other, mine] = [await device(app, 'global'), await device(app, 'global')]
    await faults.failDenials([mine.sid])
    unavailable(t, await logout(app, mine, 'global'), 'the logout whose second denial fails')
    await faults.clear()
    t.equal((await logout(app, mine, 'global')).statusCode, 204, 'the retry is still the caller\'s')
    t.equal(await profile(app, other), 401, 'the other device\'s access token is refused')
    t.equal(await profile(app, mine), 401, 'and the caller\'s')
    t.equal(await refresh(app, other.refresh_token), 401)
    t.equal(await refresh(app, mine.refresh_token), 401)
  })

  t.test('logout (local): the retry denies the session', async (t) => {
    const { app, faults } = await open(t)
    const [other, mine] = [await device(app, 'local'), await device(app, 'local')]
    await faults.failDenials()
    unavailable(t, await logout(app, mine, 'local'), 'the logout whose denial fails')
    await faults.clear()
    t.equal((await logout(app, mine, 'local')).statusCode, 204, 'the retry')
    t.equal(await profile(app, mine), 401)
    t.equal(await refresh(app, mine.refresh_token), 401)
    t.strictSame(await listed(app, other), [other.sid], 'the other session goes on')
  })

  t.test('the session cap: the login\'s retry denies the oldest session, which ends', async (t) => {
    const { app, faults } = await open(t)
    const [oldest, newer] = [await device(app, 'cap'), await device(app, 'cap')]
    await faults.failDenials()
    unavailable(t, await login(app, 'cap'), 'the login whose denial of the oldest session fails')
    await faults.clear()
    const third = await device(app, 'cap')
    t.equal(await profile(app, oldest), 401, 'the oldest device\'s access token is refused')
    t.equal(await refresh(app, oldest.refresh_token), 401, 'and its refresh token')
    t.equal(await profile(app, newer), 200, 'the newer session goes on: the failed login ended nothing')
    t.strictSame(await listed(app, third), [newer.sid, third.sid])
  })

  t.test('a reused refresh token: presented again, it denies the session', async (t) => {
    const { app, faults } = await open(t)
    const owner = await device(app, 'reuse')
    const thief: Tokens = (await app.inject({ method: 'POST', url: '/auth/refresh', payload: { refresh_token: owner.refresh_token } })).json()
    await faults.failDenials()
    t.equal(await refresh(app, owner.refresh_token), 503, 'the reuse whose denial fails')
    await faults.clear()
    t.equal(await refresh(app, owner.refresh_token), 401, 'presented again')
    t.equal(await profile(app, thief), 401, 'the thief\'s access token is refused')
    t.equal(await refresh(app, thief.refresh_token), 401, 'and the thief\'s refresh token')
  })

  t.test('an ending that fails after its denial: the session\'s next refresh ends it, and a retry answers 204', async (t) => {
    const { app, faults } = await open(t)
    const [other, mine] = [await device(app, 'ends'), await device(app, 'ends')]
    await faults.failEnds()
    unavailable(t, await logout(app, mine, 'others'), 'the logout whose ending fails')
    await faults.clear()
    t.equal(await profile(app, other), 401, 'the other device\'s access token is refused already')
    t.strictSame(await listed(app, mine), [other.sid, mine.sid], 'its record has not ended yet')
    t.equal(await refresh(app, other.refresh_token), 401, 'its next refresh is refused')
    t.strictSame(await listed(app, mine), [mine.sid], 'and has ended it')
    t.equal((await logout(app, mine, 'others')).statusCode, 204, 'the retry')
    await faults.failEnds()
    unavailable(t, await logout(app, mine, 'local'), 'a logout whose ending fails')
    await faults.clear()
    t.equal(await profile(app, mine), 401, 'the token is refused: the retry would get 401')
    t.equal(await refresh(app, mine.refresh_token), 401, 'its next refresh is refused and ends it')
  })
}

/** Triggers that make the denylist's and the session records' writes fail while the table `heal_faults` says so. */
/** Runs a statement (or, without parameters, several) on the schema the app uses. */
type Execute = (statement: string, params?: unknown[]) => Promise<unknown>

async function sqlFaults (execute: Execute): Promise<Faults> {
  await execute(`
    CREATE TABLE heal_faults (kind text NOT NULL, id text NOT NULL);
    CREATE FUNCTION heal_fault_denials() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      IF EXISTS (SELECT 1 FROM heal_faults WHERE kind = 'deny')
        AND NOT EXISTS (SELECT 1 FROM heal_faults WHERE kind = 'pass' AND id = NEW.id) THEN
        RAISE EXCEPTION 'denial refused by the test';
      END IF;
      RETURN NEW;
    END $$;
    CREATE FUNCTION heal_fault_ends() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      IF NEW.ended AND NOT OLD.ended AND EXISTS (SELECT 1 FROM heal_faults WHERE kind = 'end') THEN
        RAISE EXCEPTION 'ending refused by the test';
      END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER heal_fault_denials BEFORE INSERT OR UPDATE ON revoked_tokens FOR EACH ROW EXECUTE FUNCTION heal_fault_denials();
    CREATE TRIGGER heal_fault_ends BEFORE UPDATE ON sessions FOR EACH ROW EXECUTE FUNCTION heal_fault_ends()`)
  return {
    failDenials: async (except = []) => {
      await execute("INSERT INTO heal_faults VALUES ('deny', '')")
      for (const id of except) await execute("INSERT INTO heal_faults VALUES ('pass', $1)", [id])
    },
    failEnds: async () => { await execute("INSERT INTO heal_faults VALUES ('end', '')") },
    clear: async () => { await execute('DELETE FROM heal_faults') }
  }
}

/**
 * An ACL user of the test's own whose key permissions a fault narrows: it may always read every key and write the
 * login counters; a denial is a write to `revoked:<id>` and an ending a write to `session:<id>`.
 */
async function redisFaults (t: Test, redisUrl: string, prefix: string): Promise<{ url: string, faults: Faults }> {
  const admin = new Redis(redisUrl)
  const [user, password] = [`cats-heal-${randomBytes(6).toString('hex')}`, randomBytes(12).toString('hex')]
  const grant = async (...keys: string[]): Promise<void> => {
    await admin.call('ACL', 'SETUSER', user, 'on', `>${password}`, '+@all', 'resetchannels', 'resetkeys', `%R~${prefix}*`, `%RW~${prefix}login:*`,
      ...keys.map((key) => `%RW~${prefix}${key}`))
  }
  await grant('*')
  t.teardown(async () => {
    await admin.call('ACL', 'DELUSER', user)
    admin.disconnect()
  })
  const url = new URL(redisUrl)
  url.username = user
  url.password = password
  return {
    url: url.href,
    faults: {
      failDenials: async (except = []) => { await grant('session:*', 'user-sessions:*', ...except.map((id) => `revoked:${id}`)) },
      failEnds: async () => { await grant('revoked:*', 'user-sessions:*') },
      clear: async () => { await grant('*') }
    }
  }
}

/** Redis connects after start-up: waits until the app answers ready. */
async function untilReady (app: FastifyInstance): Promise<void> {
  for (let wait = 0; (await app.inject('/health/ready')).statusCode !== 200; wait++) {
    if (wait === 100) throw new Error('the app did not become ready within 10 s')
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

t.test('PGlite: sessions and denylist', async (t) => {
  const dir = await pgliteMigratedCopy(t)
  const app = await build(t, { ...CONFIG, DATABASE_URL: `pglite://${dir}` }, { users })
  const database = app.catsDatabase
  if (database === undefined) throw new Error('no database')
  const faults = await sqlFaults(async (statement, params) => {
    // PGlite takes several statements in one call only without parameters.
    if (params === undefined) await database.client.transaction(async (tx) => { await tx.execScript(statement) })
    else await database.client.query(statement, params)
  })
  healing(t, async () => ({ app, faults }))
})

if (TEST_DATABASE_URL === undefined || TEST_DATABASE_URL === '') {
  t.comment('TEST_DATABASE_URL is not set: the PostgreSQL runs were skipped')
} else {
  const serverUrl = TEST_DATABASE_URL
  const onServer = async (t: Test): Promise<{ url: string, faults: () => Promise<Faults> }> => {
    const admin = await adminClient(t, serverUrl)
    const schema = await freshServerSchema(t, admin, 'heal')
    return {
      url: urlWithSchema(serverUrl, schema),
      faults: async () => {
        await admin.query(`SET search_path TO ${schema}`)
        return await sqlFaults(async (statement, params) => await admin.query(statement, params))
      }
    }
  }

  t.test('PostgreSQL: sessions and denylist', async (t) => {
    const { url, faults } = await onServer(t)
    const app = await build(t, { ...CONFIG, DATABASE_URL: url }, { users })
    const opened = { app, faults: await faults() }
    healing(t, async () => opened)
  })

  if (TEST_REDIS_URL !== undefined && TEST_REDIS_URL !== '') {
    const redisUrl = TEST_REDIS_URL
    t.test('PostgreSQL sessions, the denylist in Redis', async (t) => {
      const { url, faults: sqlSide } = await onServer(t)
      const prefix = freshKeyPrefix(t, redisUrl)
      const redis = await redisFaults(t, redisUrl, prefix)
      const app = await build(t, { ...CONFIG, DATABASE_URL: url, REDIS_URL: redis.url, REDIS_KEY_PREFIX: prefix }, { users })
      await untilReady(app)
      const sql = await sqlSide()
      // Denials fail in Redis, endings in the database.
      const faults: Faults = {
        failDenials: redis.faults.failDenials,
        failEnds: sql.failEnds,
        clear: async () => {
          await redis.faults.clear()
          await sql.clear()
        }
      }
      healing(t, async () => ({ app, faults }))
    })
  }
}

if (TEST_REDIS_URL === undefined || TEST_REDIS_URL === '') {
  t.comment('TEST_REDIS_URL is not set: the Redis run was skipped')
} else {
  const redisUrl = TEST_REDIS_URL
  t.test('Redis: sessions and denylist', async (t) => {
    const prefix = freshKeyPrefix(t, redisUrl)
    const { url, faults } = await redisFaults(t, redisUrl, prefix)
    const app = await build(t, { ...CONFIG, REDIS_URL: url, REDIS_KEY_PREFIX: prefix }, { users })
    await untilReady(app)
    healing(t, async () => ({ app, faults }))
  })
}
