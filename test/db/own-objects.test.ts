import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import pg from 'pg'
import Postgrator from 'postgrator'
import type { FastifyInstance } from 'fastify'
import { build } from '../support/app.js'
import { adminClient, freshSchemaName, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'
import { postgresClient } from '../../src/db/sql-client.js'
import { migrate, migrationStatus, MIGRATIONS_TABLE } from '../../src/db/migrations.js'
import { READINESS_CACHE_MS } from '../../src/readiness.js'

/**
 * On the PostgreSQL server at TEST_DATABASE_URL: the package's objects in a schema of their own
 * (DATABASE_SCHEMA), its own migrations table, the previous release's record copied only when it is the package's,
 * no object of a host altered or adopted, and readiness that probes the package's tables.
 */

const serverUrl = process.env.TEST_DATABASE_URL
if (serverUrl === undefined || serverUrl === '') {
  t.comment('TEST_DATABASE_URL is not set: the tests of the package\'s own objects were skipped')
} else {
  suite(serverUrl)
}

const json = { 'content-type': 'application/json' }
const tom = { name: 'Tom', age: 3, breed: 'Siamese' }

/** A Rails application's tables, as the issue found them in the schema of the search_path. */
const RAILS_HOST = [
  'CREATE TABLE schema_migrations (version character varying NOT NULL PRIMARY KEY)',
  "INSERT INTO schema_migrations VALUES ('20240101120000'), ('20240215093000')",
  'CREATE TABLE sessions (id bigserial PRIMARY KEY, session_id character varying NOT NULL, data text)',
  "INSERT INTO sessions (session_id, data) VALUES ('abc', 'rails session')"
]

const migrationsDir = join(import.meta.dirname, '..', '..', 'src', 'db', 'migrations')

function suite (serverUrl: string): void {
  t.test('the PostgreSQL server at TEST_DATABASE_URL', async (t) => {
    const admin = await adminClient(t, serverUrl)

    /** Everything in the schema: each relation and function with its columns, and every table's rows. */
    async function snapshot (schema: string): Promise<unknown> {
      const { rows: objects } = await admin.query<{ name: string, kind: string, columns: string | null }>(`
        SELECT c.relname AS name, c.relkind::text AS kind,
          (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
           FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1
        UNION ALL
        SELECT p.oid::regprocedure::text, 'function', array_to_string(p.proconfig, ',') FROM pg_proc p
        JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1
        ORDER BY 1`, [schema])
      const rows: Record<string, unknown> = {}
      for (const object of objects.filter((object) => object.kind === 'r')) {
        const { rows: [{ all }] } = await admin.query(`SELECT coalesce(json_agg(t ORDER BY t::text), '[]') AS all FROM "${schema}"."${object.name}" t`)
        rows[object.name] = all
      }
      return { objects, rows }
    }

    /** A fresh schema holding the Rails application's tables. */
    async function railsHost (t: Test): Promise<string> {
      const host = await freshServerSchema(t, admin, 'cats_host')
      for (const statement of RAILS_HOST) await admin.query(statement.replace(/(TABLE|INTO) /, `$1 ${host}.`))
      return host
    }

    /** A schema name for DATABASE_SCHEMA that the service creates, dropped on teardown. */
    function ownSchemaName (t: Test): string {
      const schema = freshSchemaName('cats_own')
      t.teardown(async () => { await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`) })
      return schema
    }

    /**
     * The previous release's migrations (files 1 to 10, recorded in schema_migrations) applied to the schema, then
     * `statements` run as that release ran them: on a connection whose search_path is the schema.
     */
    async function migrateAsPreviousRelease (t: Test, schema: string, statements: string[] = []): Promise<void> {
      const files = mkdtempSync(join(tmpdir(), 'cats-previous-'))
      t.teardown(() => rmSync(files, { recursive: true, force: true }))
      for (const name of readdirSync(migrationsDir).filter((name) => Number(name.slice(0, 3)) <= 10)) copyFileSync(join(migrationsDir, name), join(files, name))
      const client = new pg.Client(urlWithSchema(serverUrl, schema))
      await client.connect()
      try {
        await client.query('BEGIN')
        await client.query("SELECT pg_advisory_xact_lock(hashtext('cats-migration'))")
        const { rows: [{ database }] } = await client.query<{ database: string }>('SELECT current_database() AS database')
        const previous = new Postgrator({
          driver: 'pg',
          database,
          schemaTable: `${schema}.schema_migrations`,
          migrationPattern: `${files}/*.sql`,
          newline: 'LF',
          execQuery: (sql) => client.query(sql)
        })
        await previous.migrate()
        await client.query('COMMIT')
        for (const statement of statements) await client.query(statement)
      } finally {
        await client.end()
      }
    }

    /** Logs in, creates, merges, patches, lists and deletes a cat, with an Idempotency-Key and a logout: every table and function. */
    async function flows (t: Test, app: FastifyInstance): Promise<void> {
      const login = await app.inject({ method: 'POST', url: '/auth/login', headers: json, payload: { username: 'john', password: 'changeme' } })
      t.equal(login.statusCode, 200, 'login')
      const auth = { authorization: `Bearer ${String(login.json().access_token)}` }
      t.equal((await app.inject({ method: 'GET', url: '/auth/sessions', headers: auth })).statusCode, 200, 'sessions listed')
      const created = await app.inject({ method: 'POST', url: '/cats', headers: { ...json, 'idempotency-key': 'k1' }, payload: tom })
      t.equal(created.statusCode, 201, 'create with an Idempotency-Key')
      t.equal((await app.inject({ method: 'POST', url: '/cats', headers: json, payload: { ...tom, name: 'Kit' } })).statusCode, 201, 'plain create')
      const merged = await app.inject({ method: 'PUT', url: '/cats/1', headers: json, payload: { toy: 'ball' } })
      t.strictSame(merged.json(), { id: 1, ...tom, toy: 'ball' }, 'merge')
      const etag = String(merged.headers.etag)
      const patched = await app.inject({ method: 'PATCH', url: '/cats/1', headers: { 'content-type': 'application/merge-patch+json', 'if-match': etag }, payload: { age: 4 } })
      t.equal(patched.statusCode, 200, 'conditional patch')
      t.equal((await app.inject({ method: 'GET', url: '/cats' })).json().length, 2, 'list')
      t.equal((await app.inject({ method: 'DELETE', url: '/cats/2' })).statusCode, 200, 'delete')
      t.equal((await app.inject({ method: 'POST', url: '/auth/logout', headers: auth })).statusCode, 204, 'logout')
      t.equal((await app.inject({ method: 'GET', url: '/profile', headers: auth })).statusCode, 401, 'the token is denied after logout')
      t.equal((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200, 'ready')
    }

    t.test('a host\'s schema_migrations and sessions: the start is refused, naming them and the setting; the host\'s tables are unchanged', async (t) => {
      const host = await railsHost(t)
      const before = await snapshot(host)
      await t.rejects(build(t, { DATABASE_URL: urlWithSchema(serverUrl, host) }), {
        message: `DATABASE_URL: could not prepare the database (Error: table "${host}"."sessions" exists and is not this package's: ` +
          `set DATABASE_SCHEMA to a schema of its own ("${host}"."schema_migrations" is not this package's record: it has no name, md5, run_at column))`
      })
      t.strictSame(await snapshot(host), before, 'no column added, no row changed, no table created')
      const client = await postgresClient(urlWithSchema(serverUrl, host))
      t.teardown(() => client.close())
      t.notOk((await migrationStatus(client)).some((migration) => migration.appliedAt !== undefined), 'status: the host\'s versions are not the package\'s')
    })

    t.test('another postgrator application\'s schema_migrations is not the package\'s record either', async (t) => {
      const host = await freshServerSchema(t, admin, 'cats_host')
      await admin.query(`CREATE TABLE ${host}.schema_migrations (version bigint PRIMARY KEY, name text, md5 text, run_at timestamptz)`)
      await admin.query(`CREATE TABLE ${host}.sessions (id text PRIMARY KEY)`)
      const client = await postgresClient(urlWithSchema(serverUrl, host))
      t.teardown(() => client.close())
      const refusal = (reason: string): { message: string } => ({
        message: `table "${host}"."sessions" exists and is not this package's: set DATABASE_SCHEMA to a schema of its own ` +
          `("${host}"."schema_migrations" is not this package's record: ${reason})`
      })
      await admin.query(`INSERT INTO ${host}.schema_migrations VALUES (1, 'create-users', 'x', now())`)
      await t.rejects(migrate(client), refusal('version 1 (create-users) is not a migration of this package'), 'a version of the package with another name')
      await admin.query(`UPDATE ${host}.schema_migrations SET version = 20240101`)
      await t.rejects(migrate(client), refusal('version 20240101 (create-users) is not a migration of this package'), 'a version the package does not have')
      t.equal((await admin.query(`SELECT * FROM ${host}.schema_migrations`)).rowCount, 1, 'left as it was')
    })

    t.test('the same host with DATABASE_SCHEMA: the service starts in its own schema, its flows work, the host\'s tables are untouched', async (t) => {
      const host = await railsHost(t)
      const own = ownSchemaName(t)
      const before = await snapshot(host)
      const app = await build(t, { DATABASE_URL: urlWithSchema(serverUrl, host), DATABASE_SCHEMA: own })
      await flows(t, app)
      t.strictSame(await snapshot(host), before, 'the host\'s schema is as it was')
      const { rows } = await admin.query('SELECT count(*)::integer AS versions FROM ' + `${own}.${MIGRATIONS_TABLE} WHERE version > 0`)
      t.strictSame(rows, [{ versions: 11 }], 'the migrations are recorded in the package\'s own table, in its schema')
    })

    t.test('statements and functions name the schema: a search_path without it (even one naming no schema) changes nothing', async (t) => {
      const own = ownSchemaName(t)
      const url = urlWithSchema(serverUrl, 'no_such_schema')
      const app = await build(t, { DATABASE_URL: url, DATABASE_SCHEMA: own })
      await flows(t, app)
      const { rows } = await admin.query<{ count: number }>('SELECT count(*)::integer AS count FROM pg_tables WHERE schemaname = $1', [own])
      t.ok(rows[0].count >= 7, 'the tables are in DATABASE_SCHEMA')
      // The triggers' and merges' functions found their tables through their own path, not the connection's.
      const { rows: cats } = await admin.query(`SELECT data::text AS data FROM ${own}.cats ORDER BY seq`)
      t.strictSame(cats, [{ data: JSON.stringify({ id: 1, ...tom, age: 4, toy: 'ball' }) }], 'merged, patched and counted in DATABASE_SCHEMA')
      const client = await postgresClient(url)
      t.teardown(() => client.close())
      t.match((await migrationStatus(client, own)).at(-1), { version: 11, name: 'function-paths', appliedAt: Date }, 'status reads the setting\'s schema')
    })

    t.test('a deployment of the previous release: its schema_migrations is copied, nothing is applied again, the old table is intact', async (t) => {
      const schema = await freshServerSchema(t, admin, 'cats_previous')
      await migrateAsPreviousRelease(t, schema, [
        'INSERT INTO cats (id, data) VALUES (1, \'{"id":1,"name":"Tom","age":3,"breed":"Siamese"}\')',
        'UPDATE cats_count SET count = 1'
      ])
      const old = `SELECT version::integer AS version, name, md5, run_at FROM ${schema}.schema_migrations ORDER BY version`
      const { rows: recorded } = await admin.query(old)
      const before = await snapshot(schema)

      const client = await postgresClient(urlWithSchema(serverUrl, schema))
      t.teardown(() => client.close())
      const status = await migrationStatus(client)
      t.strictSame(status.map(({ version, appliedAt }) => [version, appliedAt !== undefined]), [...Array.from({ length: 10 }, (_, i) => [i + 1, true]), [11, false]],
        'status before the first start: the previous record as it would be copied')
      t.strictSame(await migrate(client), [{ version: 11, name: 'function-paths' }], 'only the migration the previous release did not have')
      const { rows: copied } = await admin.query(`SELECT version::integer AS version, name, md5, run_at FROM ${schema}.${MIGRATIONS_TABLE} WHERE version <= 10 ORDER BY version`)
      t.strictSame(copied, recorded, 'every row copied as it was, run_at included')
      t.strictSame((await admin.query(old)).rows, recorded, 'schema_migrations keeps its rows')
      const after = await snapshot(schema) as { objects: Array<{ name: string }>, rows: Record<string, unknown> }
      t.strictSame(after.rows.schema_migrations, (before as typeof after).rows.schema_migrations)
      t.strictSame(after.rows.cats, (before as typeof after).rows.cats, 'the cats are kept')
      t.strictSame(await migrate(client), [], 'a second run applies nothing')

      const app = await build(t, { DATABASE_URL: urlWithSchema(serverUrl, schema) })
      t.strictSame((await app.inject({ method: 'GET', url: '/cats/1' })).json(), { id: 1, ...tom }, 'the service reads them')
    })

    t.test('a schema_migrations whose checksum differs is not copied: the start is refused, saying why, and changes nothing', async (t) => {
      const schema = await freshServerSchema(t, admin, 'cats_edited')
      await migrateAsPreviousRelease(t, schema)
      await admin.query(`UPDATE ${schema}.schema_migrations SET md5 = 'edited' WHERE version = 4`)
      const before = await snapshot(schema)
      const client = await postgresClient(urlWithSchema(serverUrl, schema))
      t.teardown(() => client.close())
      await t.rejects(migrate(client), {
        message: `table "${schema}"."cats" exists and is not this package's: set DATABASE_SCHEMA to a schema of its own ` +
          `("${schema}"."schema_migrations" is not this package's record: the checksum of version 4 (cats-merge) is not this release's)`
      })
      t.strictSame(await snapshot(schema), before, 'no table created, none altered')
    })

    t.test('readiness is 503 while the store fails every request, 200 again once it can serve', async (t) => {
      const own = await freshServerSchema(t, admin, 'cats_ready')
      const app = await build(t, { DATABASE_URL: urlWithSchema(serverUrl, own) })
      t.equal((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200)
      // The database answers SELECT 1, but every session request fails.
      await admin.query(`ALTER TABLE ${own}.sessions RENAME TO sessions_away`)
      const login = await app.inject({ method: 'POST', url: '/auth/login', headers: json, payload: { username: 'john', password: 'changeme' } })
      t.equal(login.statusCode, 503, 'login fails')
      await sleep(READINESS_CACHE_MS + 100)
      const ready = await app.inject({ method: 'GET', url: '/health/ready' })
      t.equal(ready.statusCode, 503)
      t.strictSame(ready.json(), { ready: false, reason: 'database unavailable' })
      await admin.query(`ALTER TABLE ${own}.sessions_away RENAME TO sessions`)
      await sleep(READINESS_CACHE_MS + 100)
      t.equal((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200, 'ready again')
    })

    t.test('a cats table without the package\'s columns is not adopted', async (t) => {
      const schema = await freshServerSchema(t, admin, 'cats_foreign')
      await admin.query(`CREATE TABLE ${schema}.cats (id bigint PRIMARY KEY, name text)`)
      const before = await snapshot(schema)
      const client = await postgresClient(urlWithSchema(serverUrl, schema))
      t.teardown(() => client.close())
      await t.rejects(migrate(client), { message: `table "${schema}"."cats" exists and is not this package's: set DATABASE_SCHEMA to a schema of its own` })
      t.strictSame(await snapshot(schema), before)
    })
  })
}
