import { writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import { PGlite } from '@electric-sql/pglite'
import { closedPort } from '../support/ports.js'
import { runCli } from '../support/cli.js'
import { pgliteCopy } from '../support/pglite-template.js'

// Each run of the command opens PGlite in a process of its own (seconds of CPU): the first test's database is used
// by the last one again, so that its run from a .env file is also the run that finds nothing left to apply.
const legacyDir = pgliteCopy(t)

t.test('npm run migrate upgrades a database made by the earlier start-up code, and shows the status', async (t) => {
  // A copy of an initialised empty database: creating one from nothing takes seconds.
  const dir = await legacyDir
  const env = { DATABASE_URL: `pglite://${dir}` }
  // The schema as the start-up code before versioned migrations created it, with two cats.
  const legacy = new PGlite(dir)
  await legacy.exec(`
    CREATE TABLE cats (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id bigint NOT NULL, data json NOT NULL);
    CREATE INDEX cats_id_seq_idx ON cats (id, seq);
    CREATE TABLE cats_count (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), count bigint NOT NULL);
    INSERT INTO cats (id, data) VALUES (1, '{"id":1,"name":"Tom","age":3,"breed":"Siamese"}'), (2, '{"id":2,"name":"Kit","age":1,"breed":"Persian"}');
    INSERT INTO cats_count VALUES (true, 2);
  `)
  await legacy.close()

  const pending = await runCli('migrate.js', ['status'], '', env)
  t.equal(pending.code, 0)
  t.match(pending.stdout, /^version\s+name\s+state\n001\s+cats\s+pending\n002\s+idempotency-keys\s+pending\n003\s+sessions\s+pending\n004\s+cats-merge\s+pending\n005\s+cats-merge-many\s+pending\n006\s+cats-create-many\s+pending\n007\s+session-records\s+pending\n008\s+idempotency-key-limits\s+pending\n009\s+session-rotations\s+pending\n010\s+cats-versions\s+pending\n011\s+function-paths\s+pending\n$/)
  const migrated = await runCli('migrate.js', [], '', env)
  t.equal(migrated.code, 0)
  t.equal(migrated.stdout, 'Applied 001 cats\nApplied 002 idempotency-keys\nApplied 003 sessions\nApplied 004 cats-merge\nApplied 005 cats-merge-many\nApplied 006 cats-create-many\nApplied 007 session-records\nApplied 008 idempotency-key-limits\nApplied 009 session-rotations\nApplied 010 cats-versions\nApplied 011 function-paths\nThe cats schema is up to date\n')
  const applied = await runCli('migrate.js', ['status'], '', env)
  t.match(applied.stdout, /\n001\s+cats\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n002\s+idempotency-keys\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n003\s+sessions\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n004\s+cats-merge\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n005\s+cats-merge-many\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n006\s+cats-create-many\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n007\s+session-records\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n008\s+idempotency-key-limits\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n009\s+session-rotations\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n010\s+cats-versions\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n011\s+function-paths\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n$/)

  // DATABASE_SCHEMA: the same database, another schema, created and migrated from nothing.
  const own = await runCli('migrate.js', [], '', { ...env, DATABASE_SCHEMA: 'cats_own' })
  t.equal(own.code, 0)
  t.match(own.stdout, /^Applied 001 cats\n[^]*Applied 011 function-paths\nThe cats schema is up to date\n$/)

  const upgraded = new PGlite(dir)
  t.teardown(() => upgraded.close())
  const { rows } = await upgraded.query<{ data: unknown }>('SELECT data FROM public.cats ORDER BY seq')
  t.strictSame(rows.map((row) => row.data), [
    { id: 1, name: 'Tom', age: 3, breed: 'Siamese' },
    { id: 2, name: 'Kit', age: 1, breed: 'Persian' }
  ], 'the cats are kept')
  const { rows: [{ count }] } = await upgraded.query<{ count: number }>('SELECT count FROM cats_own.cats_count')
  t.equal(Number(count), 0, 'DATABASE_SCHEMA has a collection of its own')
})

t.test('npm run migrate: usage, no DATABASE_URL, and a database that cannot be reached', async (t) => {
  const usage = await runCli('migrate.js', ['sideways'], '')
  t.equal(usage.code, 1)
  t.match(usage.stderr, /Usage: npm run migrate \[-- status\]/)
  const none = await runCli('migrate.js', [], '')
  t.equal(none.code, 1)
  t.match(none.stderr, /DATABASE_URL is not set/)
  const port = await closedPort()
  const unreachable = await runCli('migrate.js', ['status'], '', { DATABASE_URL: `postgres://cats:hunter2@127.0.0.1:${port}/cats` })
  t.equal(unreachable.code, 1)
  t.match(unreachable.stderr, /^Migration failed: .*ECONNREFUSED/)
  t.notMatch(unreachable.stderr, /hunter2/, 'the password is not printed')
})

t.test('npm run migrate takes DATABASE_URL from a .env file too', async (t) => {
  // A path relative to the working directory, to the database the first test migrated: were it not read, or
  // resolved elsewhere, the run would fail or create a new database and apply every migration to it.
  const data = relative(t.testdir(), await legacyDir)
  writeFileSync(join(t.testdirName, '.env'), `DATABASE_URL=pglite://./${data}\n`)
  const again = await runCli('migrate.js', [], '', {}, t.testdirName)
  t.equal(again.code, 0)
  t.equal(again.stdout, 'The cats schema is up to date\n', 'a second run applies nothing')
})
