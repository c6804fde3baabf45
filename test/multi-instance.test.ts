import t from 'tap'
import { randomBytes } from 'node:crypto'
import { fetchKeepAlive } from './support/server.js'
import { pgBouncerTarget, startPgBouncer } from './support/pgbouncer.js'
import { accountsFile, call, checkTwoServersAsOne, randomAddress, startServer, stopServer, type Answer, type Running } from './support/instances.js'

// Two compiled servers against the same storage: what one process cannot show. PostgreSQL and Redis parts run
// when CI finds those servers (TEST_DATABASE_URL, TEST_REDIS_URL). The durability runs (SIGTERM mid-traffic and
// a restart, a SIGKILL and retries on another instance) and the heavy runs of the one-service check (200 creates at
// once, 100 races of conditional writes) are in test/stress/multi-instance.stress.ts.

const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
// Stopped when idle: no keep-alive connection of fetch's holds the drain after SIGTERM.
const idleStop = fetchKeepAlive.none

if (TEST_DATABASE_URL === undefined) {
  t.comment('TEST_DATABASE_URL is not set: the multi-instance PostgreSQL test was skipped')
} else {
  const databaseUrl = TEST_DATABASE_URL
  t.test('two servers on one PostgreSQL database act as one service', async (t) => {
    await checkTwoServersAsOne(t, databaseUrl, { creates: 20, races: 10 }, idleStop)
  })
}

const bouncerServer = pgBouncerTarget(t, 'the multi-instance PostgreSQL test')
if (bouncerServer !== undefined) {
  t.test('two servers on one PostgreSQL database through PgBouncer in transaction mode act as one service', async (t) => {
    const bouncer = await startPgBouncer(t, bouncerServer, 'transaction')
    await checkTwoServersAsOne(t, bouncerServer, { creates: 20, races: 10, pooledUrl: bouncer.url }, idleStop)
  })
}

/** Alternates `times` failed logins between two servers; `address(n)` and `username(n)` vary per attempt. */
async function alternateFailedLogins (servers: Running[], times: number, address: (n: number) => string, username: (n: number) => string): Promise<Answer[]> {
  const answers: Answer[] = []
  for (let n = 0; n < times; n++) {
    answers.push(await call(servers[n % 2].base, 'POST', '/auth/login', { username: username(n), password: 'wrong password' }, { 'x-forwarded-for': address(n) }))
  }
  return answers
}

const limitEnv = { LOGIN_MAX_FAILURES: '3', LOGIN_CLIENT_MAX_FAILURES: '3', TRUST_PROXY: '1', ...idleStop }
// Failed logins are wrong passwords for accounts of this run's own (see accountsFile): to the counters a failure is
// a failure, and an unknown username would cost a hash of the default cost each.

if (TEST_REDIS_URL === undefined) {
  t.comment('TEST_REDIS_URL is not set: the shared failed-login counters test was skipped')
} else {
  const redisUrl = TEST_REDIS_URL
  t.test('with REDIS_URL, two servers share the failed-login counters', async (t) => {
    const { file, usernames } = await accountsFile(t, 5)
    const env = { ...limitEnv, USERS_FILE: file, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `cats-test-${randomBytes(6).toString('hex')}:` }
    const [a, b] = await Promise.all([startServer(t, env), startServer(t, env)])

    // Per pair: one username from one address.
    const account = usernames[0]
    const address = randomAddress()
    const perPair = await alternateFailedLogins([a, b], 4, () => address, () => account)
    t.strictSame(perPair.map((answer) => answer.status), [401, 401, 401, 429], 'A, B, A fail with 401; the 4th attempt (on B) is refused')
    t.match(perPair[3].body, { statusCode: 429, error: 'Too Many Requests', message: /Too many login attempts/, code: 'AUTH_ERR_TOO_MANY_ATTEMPTS' })
    t.match(perPair[3].headers.get('retry-after'), /^[1-9][0-9]*$/, '429 carries Retry-After')
    const elsewhere = await alternateFailedLogins([a, b], 2, randomAddress, () => account)
    t.strictSame(elsewhere.map((answer) => answer.status), [401, 401], 'the same username from other addresses is not locked')

    // Per client: one address, a new username each time; more than 3 failures refuse it.
    const client = randomAddress()
    const perClient = await alternateFailedLogins([a, b], 5, () => client, (n) => usernames[n])
    t.strictSame(perClient.map((answer) => answer.status), [401, 401, 401, 401, 429], 'the per-address count is shared too')

    const [codeA, codeB] = await Promise.all([stopServer(a), stopServer(b)])
    t.strictSame([codeA, codeB], [0, 0], 'both stop with exit code 0 on SIGTERM')
  })
}

t.test('control: without REDIS_URL each server counts only its own failed logins', async (t) => {
  const { file, usernames } = await accountsFile(t, 1)
  const env = { ...limitEnv, USERS_FILE: file }
  const [a, b] = await Promise.all([startServer(t, env), startServer(t, env)])
  const account = usernames[0]
  const address = randomAddress()
  const answers = await alternateFailedLogins([a, b], 4, () => address, () => account)
  t.strictSame(answers.map((answer) => answer.status), [401, 401, 401, 401], 'two failures per process stay under the threshold of 3')
  const [codeA, codeB] = await Promise.all([stopServer(a), stopServer(b)])
  t.strictSame([codeA, codeB], [0, 0])
})
