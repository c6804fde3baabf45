import t, { type Test } from 'tap'
import type pg from 'pg'
import { withObjects } from '../support/cat-objects.js'
import { OPERATION_DEADLINE_MS, pgliteClient, postgresClient, type SqlClient } from '../../src/db/sql-client.js'
import { SqlCatsStore } from '../../src/cats/sql-cats-store.js'
import { migrate, MIGRATION_LOCK, migrationStatus, MIGRATIONS_TABLE } from '../../src/db/migrations.js'
import { adminClient, freshSchemaName, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'
import { pgBouncerTarget, pooledClientIn } from '../support/pgbouncer.js'
import { pgliteCopy } from '../support/pglite-template.js'

/**
 * Versioned migrations on PGlite and on the PostgreSQL server at
 * TEST_DATABASE_URL: adopting a database made by the start-up code that came
 * before them, status, checksums, and instances migrating at the same time.
 */

/** The DDL the service ran at every start before versioned migrations, verbatim: it builds an "existing" database. */
const LEGACY_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS cats (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id bigint NOT NULL,
  data json NOT NULL
)`,
  'CREATE INDEX IF NOT EXISTS cats_id_seq_idx ON cats (id, seq)',
  `CREATE TABLE IF NOT EXISTS cats_count (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  count bigint NOT NULL
)`,
  'INSERT INTO cats_count (singleton, count) VALUES (true, 0) ON CONFLICT DO NOTHING'
]

/** A time zone far from UTC, so a time written in the wrong zone is off by hours. */
const FAR_ZONE = 'Pacific/Kiritimati'

/** A client on a fresh, empty schema whose session time zone is FAR_ZONE. */
type SchemaFactory = (t: Test) => Promise<SqlClient>

const tom = { name: 'Tom', age: 3, breed: 'Siamese' }
const cats = { version: 1, name: 'cats' }
const idempotencyKeys = { version: 2, name: 'idempotency-keys' }
const sessions = { version: 3, name: 'sessions' }
const catsMerge = { version: 4, name: 'cats-merge' }
const catsMergeMany = { version: 5, name: 'cats-merge-many' }
const catsCreateMany = { version: 6, name: 'cats-create-many' }
const sessionRecords = { version: 7, name: 'session-records' }
const idempotencyKeyLimits = { version: 8, name: 'idempotency-key-limits' }
const sessionRotations = { version: 9, name: 'session-rotations' }
const catsVersions = { version: 10, name: 'cats-versions' }
const functionPaths = { version: 11, name: 'function-paths' }
const all = [cats, idempotencyKeys, sessions, catsMerge, catsMergeMany, catsCreateMany, sessionRecords, idempotencyKeyLimits, sessionRotations, catsVersions, functionPaths]
const pending = all.map((migration) => ({ ...migration, appliedAt: undefined, known: true }))

async function tableExists (client: SqlClient, table: string): Promise<boolean> {
  const [row] = await client.query<{ exists: boolean }>('SELECT to_regclass($1) IS NOT NULL AS exists', [table])
  return row.exists
}

/** Checks that a migration ran between `since` and now: the time is read back in UTC whatever the session's zone. */
function ranRecently (t: Test, appliedAt: Date | undefined, since: number): void {
  t.type(appliedAt, Date)
  const time = appliedAt?.getTime() ?? 0
  t.ok(time >= since - 5000 && time <= Date.now() + 5000, `applied at ${appliedAt?.toISOString()}, within the test's time`)
}

function migrationSuite (t: Test, openSchema: SchemaFactory): void {
  t.test('a database created by the earlier start-up code is upgraded in place and keeps its cats', async (t) => {
    const client = await openSchema(t)
    for (const statement of LEGACY_SCHEMA) await client.query(statement)
    const store = withObjects(new SqlCatsStore(client))
    // As the earlier code left them: A, B and C created, B deleted, C merged (the whole text written back).
    await client.query('INSERT INTO cats (id, data) VALUES (1, $1), (3, $2)', [JSON.stringify({ id: 1, ...tom, name: 'A' }), JSON.stringify({ id: 3, ...tom, name: 'C', toy: 'ball' })])
    await client.query('UPDATE cats_count SET count = 2')
    const before = (await store.page(0, 1000)).items

    t.strictSame(await migrationStatus(client), pending, 'pending before')
    const since = Date.now()
    t.strictSame(await migrate(client), all, 'migration 1 is recorded, then the later ones applied')
    const [status] = await migrationStatus(client)
    t.match(status, { ...cats, known: true })
    ranRecently(t, status.appliedAt, since)

    t.equal((await store.page(0, 1000)).items, before, 'every cat is kept, byte for byte')
    t.equal(await store.count(), 2, 'the count row is kept')
    t.strictSame(await store.create({ ...tom, name: 'D' }), { id: 3, ...tom, name: 'D' }, 'ids go on from the kept count')
    t.strictSame(await store.updateCat(3, { toy: 'mouse' }), { id: 3, ...tom, name: 'C', toy: 'mouse' }, 'a kept cat merges')
    t.strictSame(await migrate(client), [], 'a second run applies nothing')
  })

  t.test('an empty schema gets every migration; status before that changes nothing', async (t) => {
    const client = await openSchema(t)
    t.strictSame(await migrationStatus(client), pending)
    t.equal(await tableExists(client, MIGRATIONS_TABLE), false, 'status creates no table')
    const since = Date.now()
    t.strictSame(await migrate(client), all)
    const [status] = await migrationStatus(client)
    ranRecently(t, status.appliedAt, since)
    const store = withObjects(new SqlCatsStore(client))
    t.strictSame(await store.create(tom), { id: 1, ...tom })
    const [{ count }] = await client.query<{ count: string }>(`SELECT count(*) FROM ${MIGRATIONS_TABLE} WHERE version > 0`)
    t.equal(Number(count), all.length)
    t.equal(await tableExists(client, 'revoked_tokens'), true)
    t.equal(await tableExists(client, 'sessions'), true)
    t.equal(await tableExists(client, 'refresh_tokens'), false, 'session records replaced the stored refresh tokens')
  })

  t.test('a migration file changed after it ran stops the run, and the run changes nothing', async (t) => {
    const client = await openSchema(t)
    await migrate(client)
    await client.query(`UPDATE ${MIGRATIONS_TABLE} SET md5 = 'edited' WHERE version = 1`)
    await t.rejects(migrate(client), /MD5 checksum failed for migration \[1\]/)
    t.equal(await tableExists(client, 'cats'), true)
  })

  t.test('a version applied by a newer release shows in the status, and this release still starts', async (t) => {
    const client = await openSchema(t)
    await migrate(client)
    await client.query(`INSERT INTO ${MIGRATIONS_TABLE} (version, name, md5, run_at) VALUES (999, 'later', 'x', now())`)
    const statuses = await migrationStatus(client)
    t.match(statuses, [...all.map((migration) => ({ ...migration, known: true })), { version: 999, name: 'later', known: false }])
    t.equal(statuses.length, all.length + 1)
    t.type(statuses.at(-1)?.appliedAt, Date)
    t.strictSame(await migrate(client), [], 'nothing to apply, nothing undone')
  })
}

// A copy of an initialised empty database (creating one from nothing takes seconds more), opened now.
const inProcess = pgliteCopy(t).then(async (dir) => await pgliteClient(dir))
t.teardown(async () => (await inProcess).close())

t.test('PGlite in process (pglite://<directory>)', async (t) => {
  const shared = await inProcess
  // One PGlite session for the suite; each test gets its own schema on it.
  migrationSuite(t, async (t) => {
    const schema = freshSchemaName('cats_test')
    await shared.query(`CREATE SCHEMA ${schema}`)
    await shared.query(`SET search_path TO ${schema}`)
    await shared.query(`SET TIME ZONE '${FAR_ZONE}'`)
    t.teardown(async () => {
      await shared.query('RESET TIME ZONE')
      await shared.query('SET search_path TO public')
      await shared.query(`DROP SCHEMA ${schema} CASCADE`)
    })
    return shared
  })

  t.test('ping answers while the database is open (readiness probes it)', async (t) => {
    await t.resolves(shared.ping(1000))
  })

  t.test('a search_path naming no existing schema is a clear error', async (t) => {
    await shared.query('SET search_path TO no_such_schema')
    t.teardown(() => shared.query('SET search_path TO public'))
    await t.rejects(migrate(shared), /no schema of the search_path exists to hold the tables: set DATABASE_SCHEMA/)
  })

  t.test('a current schema whose name postgrator cannot take is a clear error', async (t) => {
    await shared.query('CREATE SCHEMA "a.b"')
    await shared.query('SET search_path TO "a.b"')
    t.teardown(async () => {
      await shared.query('SET search_path TO public')
      await shared.query('DROP SCHEMA "a.b"')
    })
    await t.rejects(migrate(shared), /the current schema "a\.b" has a \. or " in its name: set DATABASE_SCHEMA/)
  })

  t.test('DATABASE_SCHEMA beside a host\'s sessions: refused without it, created and used with it, on one PGlite session', async (t) => {
    const host = freshSchemaName('cats_host')
    const own = freshSchemaName('cats_own')
    await shared.query(`CREATE SCHEMA ${host}`)
    await shared.query(`CREATE TABLE ${host}.sessions (id text PRIMARY KEY, data text)`)
    await shared.query(`SET search_path TO ${host}`)
    t.teardown(async () => {
      await shared.query('SET search_path TO public')
      await shared.query(`DROP SCHEMA ${host} CASCADE`)
      await shared.query(`DROP SCHEMA IF EXISTS ${own} CASCADE`)
    })
    await t.rejects(migrate(shared), { message: `table "${host}"."sessions" exists and is not this package's: set DATABASE_SCHEMA to a schema of its own` })
    t.strictSame(await migrationStatus(shared, own), pending, 'status of a schema not created yet: everything pending, nothing created')
    t.strictSame(await migrate(shared, 'max', own), all)
    const store = withObjects(new SqlCatsStore(shared, undefined, { schema: own }))
    t.strictSame(await store.create(tom), { id: 1, ...tom })
    t.strictSame(await store.updateCat(1, { toy: 'ball' }), { id: 1, ...tom, toy: 'ball' })
    const tables = await shared.query<{ name: string }>('SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY 1', [host])
    t.strictSame(tables, [{ name: 'sessions' }], 'the host\'s schema holds its table alone')
  })
})

/**
 * The server runs: `openIn` opens a client (closed on teardown) whose statements run in the schema, in FAR_ZONE.
 */
function serverSuite (t: Test, serverUrl: string, admin: pg.Client, openIn: (t: Test, schema: string) => Promise<SqlClient>): void {
  const freshSchema = async (t: Test): Promise<string> => await freshServerSchema(t, admin, 'cats_test')

  migrationSuite(t, async (t) => openIn(t, await freshSchema(t)))

  t.test('two instances migrating at once apply each migration once', async (t) => {
    // Several rounds, each on a fresh schema, so the two runs really overlap at least once.
    for (let round = 1; round <= 3; round++) {
      const schema = await freshSchema(t)
      const [first, second] = await Promise.all([openIn(t, schema), openIn(t, schema)])
      const results = await Promise.all([migrate(first), migrate(second)])
      t.strictSame(results.map((applied) => applied.length).sort(), [0, all.length], `round ${round}: one instance applied them, the other found them done`)
      const rows = await first.query<{ version: number }>(`SELECT version::integer AS version FROM ${MIGRATIONS_TABLE} WHERE version > 0 ORDER BY version`)
      t.strictSame(rows, all.map(({ version }) => ({ version })), `round ${round}: each recorded once`)
      t.equal(await withObjects(new SqlCatsStore(second)).count(), 0)
    }
  })

  t.test('an instance waits for another one\'s migrations past a request\'s deadline, then starts', async (t) => {
    // Another instance migrating: a transaction holding the migration lock for longer than a request may take.
    const schema = await freshServerSchema(t, admin, 'cats_test')
    const other = await adminClient(t, serverUrl)
    await other.query('BEGIN')
    await other.query(MIGRATION_LOCK, [schema])
    // The lock is the schema's: a deployment in another schema does not wait for it.
    t.strictSame(await migrate(await openIn(t, await freshSchema(t))), all, 'another schema migrates meanwhile')
    const client = await openIn(t, schema)
    const started = Date.now()
    const migrating = migrate(client).then((applied) => ({ applied }), (error: unknown) => ({ error: String(error) }))
    const holdMs = OPERATION_DEADLINE_MS + 1000
    await new Promise((resolve) => setTimeout(resolve, holdMs))
    await other.query('COMMIT')
    t.strictSame(await migrating, { applied: all }, 'every migration applied once the lock was free')
    t.ok(Date.now() - started >= holdMs, 'after waiting for it')
  })
}

const serverUrl = process.env.TEST_DATABASE_URL
if (serverUrl === undefined || serverUrl === '') {
  t.comment('TEST_DATABASE_URL is not set: the PostgreSQL server runs of the migration tests were skipped')
} else {
  t.test('the PostgreSQL server at TEST_DATABASE_URL', async (t) => {
    serverSuite(t, serverUrl, await adminClient(t, serverUrl), async (t, schema) => {
      const client = await postgresClient(urlWithSchema(serverUrl, schema, { timezone: FAR_ZONE }))
      t.teardown(() => client.close())
      return client
    })
  })
}

// Through Debian's PgBouncer in transaction mode, prepared statements off: the search_path and time zone are
// those of its server connections (a pooler passes neither from the client).
const bouncerServer = pgBouncerTarget(t, 'the migration tests')
if (bouncerServer !== undefined) {
  t.test('through PgBouncer in transaction mode to TEST_DATABASE_URL', async (t) => {
    serverSuite(t, bouncerServer, await adminClient(t, bouncerServer), async (t, schema) => await pooledClientIn(t, bouncerServer, schema, `timezone=${FAR_ZONE}`))
  })
}
