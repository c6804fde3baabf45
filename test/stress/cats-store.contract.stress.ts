import t, { type Test } from 'tap'
import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import { SqlCatsStore } from '../../src/cats/sql-cats-store.js'
import { migrate } from '../../src/db/migrations.js'
import { pgliteClient, postgresClient, type SqlClient } from '../../src/db/sql-client.js'
import { conditionalWriteRace } from '../support/conditional-race.js'
import { pgliteCopy } from '../support/pglite-template.js'
import { adminClient, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'

// The race of test/cats/cats-store.contract.test.ts in many trials, on each SQL store: of 8 concurrent
// conditional writes that name one version, exactly one wins and the others get 412.

const TRIALS = 200

async function raced (t: Test, client: SqlClient): Promise<void> {
  await migrate(client)
  const store = new SqlCatsStore(client)
  await store.createJson({ name: 'Tom', age: 3, breed: 'Siamese' })
  t.equal(await conditionalWriteRace(store, TRIALS), 0, 'one winner, seven 412s, and the stored cat is the winner\'s')
}

t.test(`of 8 concurrent conditional writes with one version, exactly one wins (${TRIALS} trials), PGlite in process`, async (t) => {
  const client = await pgliteClient(await pgliteCopy(t))
  t.teardown(() => client.close())
  await raced(t, client)
})

t.test('the same over node-postgres, to a PGlite socket server', async (t) => {
  const db = await PGlite.create(await pgliteCopy(t))
  t.teardown(() => db.close())
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 100 })
  await server.start()
  t.teardown(() => server.stop())
  // Every connection shares the PGlite's one session, where two connections' named statements would collide.
  const client = await postgresClient(`postgres://postgres@${server.getServerConn()}/postgres`, { preparedStatements: false })
  t.teardown(() => client.close())
  await raced(t, client)
})

const serverUrl = process.env.TEST_DATABASE_URL
if (serverUrl === undefined || serverUrl === '') {
  t.comment('TEST_DATABASE_URL is not set: the PostgreSQL server run was skipped')
} else {
  t.test('the same over node-postgres, to the PostgreSQL server at TEST_DATABASE_URL', async (t) => {
    const schema = await freshServerSchema(t, await adminClient(t, serverUrl), 'cats_race')
    const client = await postgresClient(urlWithSchema(serverUrl, schema))
    t.teardown(() => client.close())
    await raced(t, client)
  })
}
