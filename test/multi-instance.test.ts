import t from 'tap'
import { randomBytes } from 'node:crypto'
import { isDeepStrictEqual } from 'node:util'
import { fetchKeepAlive } from './support/server.js'
import { urlWithSchema } from './support/sql-schemas.js'
import {
  asList, call, freshSchema, idOf, isRecord, mapLimit, randomAddress, range, startServer, stopServer, usersFile, type Answer, type Running
} from './support/instances.js'

// Two compiled servers against the same storage: what one process cannot show. PostgreSQL and Redis parts run
// when CI finds those servers (TEST_DATABASE_URL, TEST_REDIS_URL). The durability runs (SIGTERM mid-traffic and
// a restart, a SIGKILL and retries on another instance) are in test/stress/multi-instance.stress.ts.

const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
// Stopped when idle: no keep-alive connection of fetch's holds the drain after SIGTERM.
const idleStop = fetchKeepAlive.none

if (TEST_DATABASE_URL === undefined) {
  t.comment('TEST_DATABASE_URL is not set: the multi-instance PostgreSQL test was skipped')
} else {
  const databaseUrl = TEST_DATABASE_URL
  t.test('two servers on one PostgreSQL database act as one service', async (t) => {
    const { schema, db } = await freshSchema(t, databaseUrl)
    const user = await usersFile(t)
    const env = { DATABASE_URL: urlWithSchema(databaseUrl, schema), USERS_FILE: user.file, ...idleStop }
    const [a, b] = await Promise.all([startServer(t, env), startServer(t, env)])
    t.not(a.base, b.base, 'two processes on two ports')

    // 200 concurrent creates, alternating between the two servers, into an empty table.
    const payloads = range(1, 200).map((n) => ({ name: `cat-${n}`, age: n % 30, breed: n % 2 === 0 ? 'Siamese' : 'Persian' }))
    const started = Date.now()
    const created = await mapLimit(payloads, 200, (payload, index) => call(index % 2 === 0 ? a.base : b.base, 'POST', '/cats', payload))
    t.comment(`200 concurrent creates over two servers took ${Date.now() - started} ms`)
    const refused = created.filter((answer) => answer.status !== 201)
    t.strictSame(refused.map((answer) => answer.status), [], 'every create answers 201')
    if (refused.length > 0) t.comment(`first refusal: ${JSON.stringify(refused[0].body)}`)
    const ids = created.map((answer) => idOf(answer.body))
    const sorted = ids.filter((id) => id !== undefined).sort((x, y) => x - y)
    t.strictSame(sorted, range(1, 200), 'ids are exactly 1..200: none lost, none repeated')
    const mismatched = created.filter((answer, index) => answer.status === 201 && !isDeepStrictEqual(answer.body, { id: ids[index], ...payloads[index] }))
    t.strictSame(mismatched, [], 'each 201 carries the cat that was sent, with its new id')

    const [listA, listB] = await Promise.all([call(a.base, 'GET', '/cats'), call(b.base, 'GET', '/cats')])
    t.equal(listA.status, 200)
    t.strictSame(listA.body, listB.body, 'both servers list the same cats in the same order')
    const listed = asList(listA.body)
    t.strictSame(listed.map(idOf), range(1, 200), 'the list is in creation order, ids 1..200')
    const byId = new Map(created.map((answer) => [idOf(answer.body), answer.body]))
    t.ok(listed.every((cat) => isDeepStrictEqual(cat, byId.get(idOf(cat)))), 'each listed cat is exactly the one its create returned')

    const rows = await db.query<{ id: string }>(`SELECT id FROM ${schema}.cats ORDER BY seq`)
    t.strictSame(rows.rows.map((row) => Number(row.id)), range(1, 200), 'the table holds 200 rows, ids 1..200 in insertion order')
    const counter = await db.query<{ count: string }>(`SELECT count FROM ${schema}.cats_count`)
    t.strictSame(counter.rows.map((row) => Number(row.count)), [200], 'the stored count is 200')

    // One cat's whole life split between the two servers.
    const tom = await call(a.base, 'POST', '/cats', { name: 'Tom', age: 3, breed: 'Manx' })
    t.equal(tom.status, 201)
    t.strictSame(tom.body, { id: 201, name: 'Tom', age: 3, breed: 'Manx' }, 'A creates cat 201')
    t.strictSame((await call(b.base, 'GET', '/cats/201')).body, tom.body, 'B reads it')
    const merged = await call(b.base, 'PUT', '/cats/201', { age: 4, color: 'black', id: 999 })
    t.equal(merged.status, 200)
    t.strictSame(merged.body, { id: 201, name: 'Tom', age: 4, breed: 'Manx', color: 'black' }, 'B merges into it')
    t.strictSame((await call(a.base, 'GET', '/cats/201')).body, merged.body, 'A sees the merge')
    t.strictSame(asList((await call(a.base, 'GET', '/cats')).body).at(-1), merged.body, 'A lists the merged cat last')
    t.strictSame((await call(b.base, 'DELETE', '/cats/201')).body, { deleted: true }, 'B deletes it')
    const gone = await call(a.base, 'GET', '/cats/201')
    t.equal(gone.status, 200)
    t.equal(gone.body, undefined, 'A finds nothing (empty 200)')
    t.equal(asList((await call(a.base, 'GET', '/cats')).body).length, 200, 'A lists 200 cats again')
    const next = await call(b.base, 'POST', '/cats', { name: 'Next', age: 1, breed: 'Any' })
    t.equal(idOf(next.body), 201, 'the next create, through B, gets count + 1 = 201')

    // A token signed by one server opens the other (same JWT_SECRET, same users).
    const login = await call(a.base, 'POST', '/auth/login', { username: user.username, password: user.password })
    t.equal(login.status, 200)
    const token = isRecord(login.body) && typeof login.body.access_token === 'string' ? login.body.access_token : ''
    const profile = await call(b.base, 'GET', '/profile', undefined, { authorization: `Bearer ${token}` })
    t.equal(profile.status, 200, "A's token opens B's /profile")
    t.strictSame(profile.body, { userId: user.id, username: user.username })

    // Conditional writes across the two servers: of two writes with the same If-Match, exactly one wins.
    const etag = (await call(a.base, 'GET', '/cats/1')).headers.get('etag') ?? ''
    t.equal((await call(b.base, 'GET', '/cats/1', undefined, { 'if-none-match': etag })).status, 304, "A's ETag is B's too")
    const losses: string[] = []
    for (let trial = 0; trial < 100; trial++) {
      const path = `/cats/${1 + (trial % 50)}`
      const current = (await call(a.base, 'GET', path)).headers.get('etag') ?? ''
      const write = (base: string, winner: string) => trial % 2 === 0
        ? call(base, 'PUT', path, { winner }, { 'if-match': current })
        : call(base, 'PATCH', path, { winner }, { 'if-match': current, 'content-type': 'application/merge-patch+json' })
      const answers = await Promise.all([write(a.base, 'a'), write(b.base, 'b')])
      const stored = await call(b.base, 'GET', path)
      const won = answers.filter((answer) => answer.status === 200)
      const lost = answers.filter((answer) => answer.status === 412)
      if (won.length !== 1 || lost.length !== 1 || !isDeepStrictEqual(stored.body, won[0].body) ||
        stored.headers.get('etag') !== won[0].headers.get('etag')) losses.push(`${path}: ${answers.map((answer) => answer.status).join(', ')}`)
    }
    t.strictSame(losses, [], '100 races of two conditional writes: one 200, one 412, and the stored cat is the winner\'s')

    const [codeA, codeB] = await Promise.all([stopServer(a), stopServer(b)])
    t.strictSame([codeA, codeB], [0, 0], 'both stop with exit code 0 on SIGTERM')
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

if (TEST_REDIS_URL === undefined) {
  t.comment('TEST_REDIS_URL is not set: the shared failed-login counters test was skipped')
} else {
  const redisUrl = TEST_REDIS_URL
  t.test('with REDIS_URL, two servers share the failed-login counters', async (t) => {
    const env = { ...limitEnv, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `cats-test-${randomBytes(6).toString('hex')}:` }
    const [a, b] = await Promise.all([startServer(t, env), startServer(t, env)])

    // Per pair: one unknown username from one address.
    const account = `nobody-${randomBytes(6).toString('hex')}`
    const address = randomAddress()
    const perPair = await alternateFailedLogins([a, b], 4, () => address, () => account)
    t.strictSame(perPair.map((answer) => answer.status), [401, 401, 401, 429], 'A, B, A fail with 401; the 4th attempt (on B) is refused')
    t.match(perPair[3].body, { statusCode: 429, error: 'Too Many Requests', message: /Too many login attempts/, code: 'AUTH_ERR_TOO_MANY_ATTEMPTS' })
    t.match(perPair[3].headers.get('retry-after'), /^[1-9][0-9]*$/, '429 carries Retry-After')
    const elsewhere = await alternateFailedLogins([a, b], 2, randomAddress, () => account)
    t.strictSame(elsewhere.map((answer) => answer.status), [401, 401], 'the same username from other addresses is not locked')

    // Per client: one address, a new username each time; more than 3 failures refuse it.
    const client = randomAddress()
    const perClient = await alternateFailedLogins([a, b], 5, () => client, (n) => `nobody-${randomBytes(6).toString('hex')}-${n}`)
    t.strictSame(perClient.map((answer) => answer.status), [401, 401, 401, 401, 429], 'the per-address count is shared too')

    const [codeA, codeB] = await Promise.all([stopServer(a), stopServer(b)])
    t.strictSame([codeA, codeB], [0, 0], 'both stop with exit code 0 on SIGTERM')
  })
}

t.test('control: without REDIS_URL each server counts only its own failed logins', async (t) => {
  const [a, b] = await Promise.all([startServer(t, limitEnv), startServer(t, limitEnv)])
  const account = `nobody-${randomBytes(6).toString('hex')}`
  const address = randomAddress()
  const answers = await alternateFailedLogins([a, b], 4, () => address, () => account)
  t.strictSame(answers.map((answer) => answer.status), [401, 401, 401, 401], 'two failures per process stay under the threshold of 3')
  const [codeA, codeB] = await Promise.all([stopServer(a), stopServer(b)])
  t.strictSame([codeA, codeB], [0, 0])
})
