import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { hashPassword } from '../../src/auth/login/password.js'
import type { UserRecord } from '../../src/auth/login/users-file.js'
import type { ConfigInput } from '../../src/config.js'
import { build } from '../support/app.js'
import { freshKeyPrefix } from '../support/redis.js'
import { CHEAP_HASH } from '../support/cheap-users.js'

// The login's brute-force protection over HTTP: only failures count, per username
// and client address and per address; the same rules in memory and in Redis.

const login = (app: FastifyInstance, username: string, password: string, remoteAddress = '10.0.0.1'): Promise<LightMyRequestResponse> =>
  app.inject({ method: 'POST', url: '/auth/login', payload: { username, password }, remoteAddress })

async function statuses (app: FastifyInstance, times: number, username: string, password: string, remoteAddress?: string): Promise<number[]> {
  const answers: number[] = []
  for (let i = 0; i < times; i++) answers.push((await login(app, username, password, remoteAddress)).statusCode)
  return answers
}

const repeat = (times: number, status: number): number[] => Array(times).fill(status)

// Cheap hashes keep the many logins here fast; an unknown username still costs the full dummy hash.
const users: UserRecord[] = await Promise.all(['john', 'chris', 'maria', 'a', 'b', 'c', 'd', 'e', 'f'].map(async (username, index) => ({
  id: index + 1, username, passwordHash: await hashPassword(`${username}-password`, CHEAP_HASH)
})))
const password = (username: string): string => `${username}-password`

type AppFactory = (t: Test, config?: Partial<ConfigInput>) => Promise<FastifyInstance>

function protectionSuite (t: Test, open: AppFactory): void {
  t.test('successful logins never lock, however many', async (t) => {
    const app = await open(t)
    t.strictSame(await statuses(app, 30, 'john', password('john')), repeat(30, 200))
  })

  t.test('correct logins fired at once all succeed, however many, and then count for nothing', async (t) => {
    const app = await open(t)
    const answers = await Promise.all(Array.from({ length: 25 }, () => login(app, 'john', password('john'))))
    t.strictSame(answers.map((res) => res.statusCode), repeat(25, 200))
    t.strictSame(await statuses(app, 10, 'john', 'wrong'), repeat(10, 401), 'the pair still has all its failures left')
    t.equal((await login(app, 'john', password('john'))).statusCode, 429)
  })

  t.test('10 failures lock the pair: 429 with Retry-After, even for the right password; other addresses and usernames go on', async (t) => {
    const app = await open(t)
    t.strictSame(await statuses(app, 10, 'john', 'wrong'), repeat(10, 401))
    const locked = await login(app, 'john', password('john'))
    t.equal(locked.statusCode, 429)
    t.equal(locked.headers['retry-after'], '120', 'the first lock is a minute; this refused attempt doubled it')
    t.strictSame(locked.json(), { statusCode: 429, error: 'Too Many Requests', message: 'Too many login attempts; retry in 120 seconds', code: 'AUTH_ERR_TOO_MANY_ATTEMPTS' })
    t.equal((await login(app, 'john', password('john'), '10.0.0.2')).statusCode, 200, 'the owner logs in from another address')
    t.equal((await login(app, 'chris', password('chris'))).statusCode, 200, 'another user logs in from the locked address')
  })

  t.test('an unknown username counts like a wrong password, with the same answer', async (t) => {
    const app = await open(t, { LOGIN_MAX_FAILURES: 3 })
    const wrong = await login(app, 'john', 'wrong', '10.0.0.3')
    const unknown = await login(app, 'nobody', 'wrong', '10.0.0.4')
    const visible = (res: LightMyRequestResponse) => ({
      status: res.statusCode,
      body: res.body,
      headers: Object.keys(res.headers).filter((name) => name !== 'x-request-id').sort()
    })
    t.strictSame(visible(unknown), visible(wrong), 'same status, body and header names')
    t.strictSame(await statuses(app, 2, 'nobody', 'wrong', '10.0.0.4'), repeat(2, 401))
    t.equal((await login(app, 'nobody', 'wrong', '10.0.0.4')).statusCode, 429, 'the unknown username locks like a known one')
  })

  t.test('a success before the threshold resets the pair', async (t) => {
    const app = await open(t)
    t.strictSame(await statuses(app, 9, 'maria', 'wrong'), repeat(9, 401))
    t.equal((await login(app, 'maria', password('maria'))).statusCode, 200)
    t.strictSame(await statuses(app, 10, 'maria', 'wrong'), repeat(10, 401), 'ten failures again before a lock')
    t.equal((await login(app, 'maria', password('maria'))).statusCode, 429)
  })

  t.test('each attempt while locked doubles the lock up to the cap; after the lock the right password gets in', async (t) => {
    const app = await open(t, { LOGIN_MAX_FAILURES: 2, LOGIN_LOCK_DURATION: '1s', LOGIN_LOCK_MAX: '4s' })
    t.strictSame(await statuses(app, 2, 'john', 'wrong'), [401, 401])
    const retries = []
    for (let i = 0; i < 4; i++) retries.push((await login(app, 'john', 'wrong')).headers['retry-after'])
    t.strictSame(retries, ['2', '4', '4', '4'], 'doubled from 1 s, capped at 4 s')
    await sleep(4200)
    t.equal((await login(app, 'john', password('john'))).statusCode, 200, 'the lock ended and the owner logs in')
    t.strictSame(await statuses(app, 2, 'john', 'wrong'), [401, 401], 'the success reset the pair')
  })

  t.test('an address with more failures than LOGIN_CLIENT_MAX_FAILURES is refused for every username', async (t) => {
    const app = await open(t, { LOGIN_CLIENT_MAX_FAILURES: 5 })
    const answers = await Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map((username) => login(app, username, 'wrong', '10.0.0.5')))
    t.strictSame(answers.map((res) => res.statusCode), repeat(6, 401), '6 failures, each username once')
    const refused = await login(app, 'john', password('john'), '10.0.0.5')
    t.equal(refused.statusCode, 429, 'then even a right password is refused from that address')
    t.ok(Number(refused.headers['retry-after']) > 800, 'until the 15-minute window ends')
    t.equal((await login(app, 'john', password('john'), '10.0.0.6')).statusCode, 200, 'other addresses are not affected')
  })

  t.test('successes do not count against the address', async (t) => {
    const app = await open(t, { LOGIN_CLIENT_MAX_FAILURES: 3 })
    t.strictSame(await statuses(app, 10, 'john', password('john'), '10.0.0.7'), repeat(10, 200))
    for (const username of ['a', 'b', 'c', 'd']) t.equal((await login(app, username, 'wrong', '10.0.0.7')).statusCode, 401)
    t.equal((await login(app, 'john', password('john'), '10.0.0.7')).statusCode, 429, 'four failures are more than 3')
  })

  t.test('invalid requests are not counted', async (t) => {
    const app = await open(t, { LOGIN_MAX_FAILURES: 1 })
    for (let i = 0; i < 5; i++) {
      const res = await app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'john' }, remoteAddress: '10.0.0.8' })
      t.equal(res.statusCode, 400)
    }
    t.equal((await login(app, 'john', password('john'), '10.0.0.8')).statusCode, 200)
  })
}

// The memory and Redis suites share nothing (the Redis one uses fresh key prefixes); each waits out a lock of 4 s: they run at once.
t.jobs = 2

t.test('memory', async (t) => {
  protectionSuite(t, (t, config = {}) => build(t, config, { users }))
})

const { TEST_REDIS_URL } = process.env
if (TEST_REDIS_URL === undefined) {
  t.comment('TEST_REDIS_URL is not set: the login protection in Redis was not tested')
} else {
  const redisUrl = TEST_REDIS_URL
  const freshPrefix = (t: Test): string => freshKeyPrefix(t, redisUrl)

  /** An app on the test Redis, once its client has connected (before that, logins answer 503). */
  const withRedis = async (t: Test, config: Partial<ConfigInput>): Promise<FastifyInstance> => {
    const app = await build(t, { REDIS_URL: redisUrl, ...config }, { users })
    const redis = app.catsRedis?.client
    if (redis === undefined) throw new Error('REDIS_URL gave no Redis client')
    if (redis.status !== 'ready') await once(redis, 'ready')
    return app
  }

  t.test('redis', async (t) => {
    protectionSuite(t, (t, config = {}) => withRedis(t, { REDIS_KEY_PREFIX: freshPrefix(t), ...config }))

    t.test('two instances on one Redis: of 20 failures fired at once on both, exactly 10 get through', async (t) => {
      const config = { REDIS_KEY_PREFIX: freshPrefix(t) }
      const [a, b] = await Promise.all([withRedis(t, config), withRedis(t, config)])
      const answers = await Promise.all(Array.from({ length: 20 }, (_, n) => login(n % 2 === 0 ? a : b, 'john', 'wrong')))
      const count = (status: number) => answers.filter((res) => res.statusCode === status).length
      t.strictSame([count(401), count(429)], [10, 10])
      t.equal((await login(a, 'john', password('john'))).statusCode, 429, 'refused on A')
      t.equal((await login(b, 'john', password('john'))).statusCode, 429, 'refused on B')
      t.equal((await login(b, 'john', password('john'), '10.0.0.2')).statusCode, 200, 'the owner logs in on B from another address')
    })

    t.test('an instance on another key prefix does not share the counters', async (t) => {
      const a = await withRedis(t, { REDIS_KEY_PREFIX: freshPrefix(t), LOGIN_MAX_FAILURES: 1 })
      const b = await withRedis(t, { REDIS_KEY_PREFIX: freshPrefix(t), LOGIN_MAX_FAILURES: 1 })
      t.strictSame([(await login(a, 'john', 'wrong')).statusCode, (await login(a, 'john', 'wrong')).statusCode], [401, 429])
      t.equal((await login(b, 'john', password('john'))).statusCode, 200)
    })
  })
}
