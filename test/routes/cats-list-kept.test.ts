import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { build } from '../support/app.js'
import { adminClient, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'

// A list answer kept under its version (src/cats/list-paging.ts) is never sent after a write it does not show: writes
// and lists at once, on one instance and on two sharing PostgreSQL, then every list read after the last write settled
// must be the store's list.
const TRIALS = 200

async function trials (t: Test, writer: FastifyInstance, reader: FastifyInstance): Promise<void> {
  let stale = 0
  for (let trial = 0; trial < TRIALS; trial++) {
    // A list is kept, then writes race lists of both instances.
    await reader.inject('/cats')
    const created = writer.inject({ method: 'POST', url: '/cats', payload: { name: `cat ${trial}`, age: trial % 30, breed: 'x' } })
    const changed = trial % 3 === 0 ? writer.inject({ method: 'PUT', url: '/cats/1', payload: { age: trial % 30 } }) : undefined
    await Promise.all([created, changed, reader.inject('/cats'), writer.inject('/cats')])
    const after = [(await reader.inject('/cats')).json(), (await writer.inject('/cats')).json()]
    const names = after.map((list: Array<{ name: string }>) => list.map(({ name }) => name))
    if (!names.every((list) => list.length === trial + 1 && list[trial] === `cat ${trial}`)) stale++
    if (JSON.stringify(after[0]) !== JSON.stringify(after[1])) stale++
  }
  t.equal(stale, 0, `${TRIALS} trials: every list after a write shows it, on both instances`)
}

t.test('memory: a kept list answer never outlives a write', async (t) => {
  const app = await build(t)
  await trials(t, app, app)
})

const databaseUrl = process.env.TEST_DATABASE_URL
t.test('PostgreSQL, two instances: a kept list answer never outlives the other instance\'s write', { skip: databaseUrl === undefined ? 'TEST_DATABASE_URL is not set' : false }, async (t) => {
  const admin = await adminClient(t, String(databaseUrl))
  const schema = await freshServerSchema(t, admin, 'kept_list')
  const url = urlWithSchema(String(databaseUrl), schema)
  const first = await build(t, { DATABASE_URL: url })
  const second = await build(t, { DATABASE_URL: url })
  await trials(t, first, second)
})
