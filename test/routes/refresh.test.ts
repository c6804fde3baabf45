import { createHash, randomBytes, randomUUID } from 'node:crypto'
import t from 'tap'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { LegacyTokenHashes } from '../../src/auth/sessions/legacy-refresh-tokens.js'
import { createApp } from '../support/app.js'
import { cheapDemoUsers } from '../support/cheap-users.js'
import { PgQueryCounter } from '../support/pg-queries.js'
import { adminClient, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'
import { TcpProxy } from '../support/tcp-proxy.js'

// POST /auth/refresh with tokens nobody was given: a token of the current form is refused by its MAC, one of the
// form issued before session records (43 base64url characters) by the hashes of those tokens, read once; neither
// asks the database. The queries are counted on the wire, through a proxy in front of PostgreSQL.

const { TEST_DATABASE_URL } = process.env
const users = await cheapDemoUsers()
const refresh = (app: FastifyInstance, token: string): Promise<LightMyRequestResponse> =>
  app.inject({ method: 'POST', url: '/auth/refresh', payload: { refresh_token: token } })
const oldForm = (): string => randomBytes(32).toString('base64url')
const hashOf = (token: string): Buffer => createHash('sha256').update(token).digest()

t.test('LegacyTokenHashes: a hash it was given may be there; any other is not', async (t) => {
  const given = Array.from({ length: 50 }, () => hashOf(oldForm()))
  const hashes = new LegacyTokenHashes(given)
  t.equal(hashes.size, 50)
  t.ok(given.every((hash) => hashes.mayHave(hash)))
  t.ok(given.every((hash) => hashes.mayHave(new Uint8Array(hash))), 'as PGlite gives them')
  t.notOk(Array.from({ length: 1000 }, () => hashOf(oldForm())).some((hash) => hashes.mayHave(hash)))
  t.notOk(new LegacyTokenHashes([]).mayHave(given[0]), 'none at all')
})

if (TEST_DATABASE_URL === undefined || TEST_DATABASE_URL === '') {
  t.comment('TEST_DATABASE_URL is not set: the queries of refreshes with unknown tokens were not counted')
} else {
  const serverUrl = TEST_DATABASE_URL
  t.test('refreshes with tokens nobody was given cost no query; a pre-upgrade token still refreshes', async (t) => {
    const admin = await adminClient(t, serverUrl)
    const schema = await freshServerSchema(t, admin, 'refresh_strangers')
    // A first app migrates the schema; a session migration 7 made of a live pre-upgrade refresh token is added.
    const migrating = await createApp({ DATABASE_URL: urlWithSchema(serverUrl, schema), REFRESH_TOKENS: true }, { users })
    await migrating.close()
    const legacy = oldForm()
    await admin.query(
      `INSERT INTO ${schema}.sessions (id, user_id, username, generation, created_at_ms, last_used_at_ms, address, user_agent, expires_at_ms, legacy_token_hash)
       VALUES ('old-session', '1', 'john', 0, $1, $1, '', '', $2, $3)`,
      [Date.now(), Date.now() + 86_400_000, hashOf(legacy)]
    )

    const proxy = new TcpProxy(new URL(serverUrl))
    const counter = new PgQueryCounter()
    proxy.watch = counter.feed
    await proxy.start()
    t.teardown(() => proxy.stop())
    const app = await createApp({ DATABASE_URL: urlWithSchema(proxy.url(new URL(serverUrl)), schema), REFRESH_TOKENS: true, REFRESH_REUSE_WINDOW: '0' }, { users })
    t.teardown(() => app.close())
    counter.count = 0

    // The first token of the old form reads the hashes of that form, once for the process.
    t.equal((await refresh(app, oldForm())).statusCode, 401)
    t.ok(counter.count <= 1, `the first read the hashes: ${counter.count} query`)
    const before = counter.count
    const strangers = [
      ...Array.from({ length: 100 }, oldForm),
      ...Array.from({ length: 20 }, () => `${randomUUID()}.0.${Math.floor(Date.now() / 1000) + 3600}.${randomBytes(32).toString('base64url')}`),
      'x', 'a'.repeat(1000)
    ]
    for (const token of strangers) t.equal((await refresh(app, token)).statusCode, 401)
    t.equal(counter.count - before, 0, `${strangers.length} refreshes with unknown tokens, queries`)

    const upgraded = await refresh(app, legacy)
    t.equal(upgraded.statusCode, 200, 'a live pre-upgrade refresh token still refreshes (existing sessions survive the upgrade)')
    t.equal((await refresh(app, legacy)).statusCode, 401, 'once: again it is a reuse')
  })
}
