import t from 'tap'
import { pgliteClient } from '../../src/db/sql-client.js'
import { migrate } from '../../src/db/migrations.js'
import { mergesMatchMemory } from '../support/merge-property.js'
import { pgliteCopy } from '../support/pglite-template.js'

// The generated merges of test/cats/sql-round-trips.test.ts in many more cases, on PGlite in process (the
// run that needs no server): the SQL store's JSON text must be the memory store's, byte for byte.

const RUNS = 1000

t.test(`every merge gives the memory store's JSON text, byte for byte, and its refusals (${RUNS} cases, PGlite)`, async (t) => {
  const client = await pgliteClient(await pgliteCopy(t))
  t.teardown(() => client.close())
  await migrate(client)
  await mergesMatchMemory(client, RUNS)
  t.pass(`${RUNS} generated cats, up to 5 merges each`)
})
