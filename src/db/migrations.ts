import { fileURLToPath } from 'node:url'
import type Postgrator from 'postgrator'
import { refuseForeignObjects, type MigrationFile } from './own-objects.js'
import { ownSchema, quoteIdent } from './own-schema.js'
import { previousRecord, PREVIOUS_MIGRATION_LOCK } from './previous-record.js'
import type { SqlClient, SqlTransaction } from './sql-client.js'

/**
 * Versioned schema migrations, run by postgrator from the numbered files in
 * ./migrations (`NNN.do.name.sql`; the build copies them beside the compiled
 * code). The table below records each applied version with its name, the
 * file's checksum and when it ran; a file changed after it ran stops the run.
 */
const MIGRATIONS_DIR = fileURLToPath(new URL('migrations/', import.meta.url))

/**
 * The table, in the package's schema, that records the applied migrations. A name of the package's own: a host's
 * `schema_migrations` (Rails, another postgrator application) is never read as this record nor altered.
 */
export const MIGRATIONS_TABLE = 'cats_service_migrations'

/**
 * Every instance takes this lock (parameter: the schema) before migrating, so instances starting together apply
 * each migration once; deployments in other schemas of the database do not wait for each other.
 */
export const MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(hashtext('cats-migration:' || $1))"

/** A migration file and what the database says of it. */
export interface MigrationStatus {
  version: number
  name: string
  /** When it was applied; undefined while pending. */
  appliedAt: Date | undefined
  /** False for a version the database has applied but this release has no file for (a newer release ran it). */
  known: boolean
}

interface Target {
  migrator: Postgrator
  /** The migrations table, schema-qualified and quoted. */
  table: string
  /** This release's migration files. */
  files: MigrationFile[]
}

/** A postgrator that runs every statement through the transaction, with its table in the schema. */
async function migratorFor (tx: SqlTransaction, schema: string): Promise<Target> {
  // Loaded only when a database is used, like the drivers.
  const { default: Postgrator } = await import('postgrator')
  const [{ database }] = await tx.query<{ database: string }>('SELECT current_database() AS database')
  const migrator = new Postgrator({
    driver: 'pg',
    database,
    // Qualified, so a table of the same name in another schema of the database is not taken for this one.
    schemaTable: `${schema}.${MIGRATIONS_TABLE}`,
    // glob patterns use forward slashes on every platform.
    migrationPattern: `${MIGRATIONS_DIR.replaceAll('\\', '/')}*.sql`,
    // Checksums stay the same when a checkout converts line endings.
    newline: 'LF',
    execQuery: async (sql) => ({ rows: await tx.query(sql) }),
    execSqlScript: (sql) => tx.execScript(sql)
  })
  const files = (await migrator.getMigrations()).filter((migration) => migration.action === 'do')
    .map(({ version, name, md5, getSql }) => ({ version, name, md5, sql: getSql() }))
  return { migrator, table: `${quoteIdent(schema)}.${quoteIdent(MIGRATIONS_TABLE)}`, files }
}

async function tableExists (tx: SqlTransaction, table: string): Promise<boolean> {
  const [{ exists }] = await tx.query<{ exists: boolean }>('SELECT to_regclass($1) IS NOT NULL AS exists', [table])
  return exists
}

/**
 * The migrations table of the schema, made from the previous releases' `schema_migrations` when the package has
 * none yet and that one is the package's (see previousRecord); the old table is only read, as instances of the
 * previous release still read it during a rolling upgrade. Answers the highest version applied (postgrator runs
 * every file above it), and, when a `schema_migrations` was left alone, why.
 */
async function takeRecord (tx: SqlTransaction, schema: string, { table, files }: Target): Promise<{ version: number, note: string }> {
  if (!(await tableExists(tx, table))) {
    // An instance of the previous release migrating now holds this lock: what it records is read once it is done.
    await tx.query(PREVIOUS_MIGRATION_LOCK)
    const previous = await previousRecord(tx, schema, files)
    if (!previous.found) return { version: 0, note: '' }
    if (!previous.ours) return { version: 0, note: ` ("${schema}"."schema_migrations" is not this package's record: ${previous.reason})` }
    // postgrator's own table, as it creates it.
    await tx.query(`CREATE TABLE ${table} (version bigint PRIMARY KEY, name text, md5 text, run_at timestamp with time zone)`)
    await tx.query(`INSERT INTO ${table} (version, name, md5, run_at) SELECT version, name, md5, run_at FROM ${previous.table}`)
  }
  const [{ version }] = await tx.query<{ version: number }>(`SELECT coalesce(max(version), 0)::integer AS version FROM ${table}`)
  return { version, note: '' }
}

/**
 * The most the migrations of one start may take, waiting for another instance's included: far more than a request's
 * deadline (a migration may rewrite a table, and instances starting together wait in turn), yet bounded, so a start
 * behind a lock that is never released fails with a clear error instead of hanging.
 */
export const MIGRATION_DEADLINE_MS = 60_000

/**
 * Applies the pending migrations to the package's schema (created when missing), all in one transaction under an
 * advisory lock: an instance that starts while another migrates waits, then finds nothing left to do; a failing
 * migration leaves the database as it was. Refuses, changing nothing, when an object a pending migration would
 * create is already there and not the package's. Returns the migrations this call applied. `target` stops at that
 * version (the upgrade tests start from an earlier schema); `configured` is DATABASE_SCHEMA (see ownSchema).
 */
export async function migrate (client: SqlClient, target = 'max', configured?: string): Promise<Array<{ version: number, name: string }>> {
  return client.transaction(async (tx) => {
    const schema = await ownSchema(tx, configured)
    await tx.query(MIGRATION_LOCK, [schema])
    // postgrator writes the time a migration ran as UTC without a zone: read it as UTC.
    await tx.query("SET LOCAL TIME ZONE 'UTC'")
    const [{ exists }] = await tx.query<{ exists: boolean }>('SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS exists', [schema])
    // Only when missing: CREATE SCHEMA IF NOT EXISTS needs the right to create schemas even when there is one.
    if (!exists) await tx.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`)
    // The files name no schema: their objects go to the first one of the path. Until the transaction ends only,
    // never a setting of the connection (a pooler in transaction mode shares it); pg_temp last, so no temporary
    // table stands in for one of them. Migration 11 pins the functions' path to this one.
    await tx.query(`SET LOCAL search_path TO ${quoteIdent(schema)}, pg_temp`)
    const run = await migratorFor(tx, schema)
    const record = await takeRecord(tx, schema, run)
    await refuseForeignObjects(tx, schema, run.files.filter((file) => file.version > record.version), record.note)
    const applied = await run.migrator.migrate(target)
    return applied.map(({ version, name }) => ({ version, name }))
  }, MIGRATION_DEADLINE_MS)
}

/** Every migration this release has, and any the database applied beyond them, in version order. Changes nothing. */
export async function migrationStatus (client: SqlClient, configured?: string): Promise<MigrationStatus[]> {
  return client.transaction(async (tx) => {
    const schema = await ownSchema(tx, configured)
    const { table, files } = await migratorFor(tx, schema)
    // Before the first start of this release, what it would copy from the previous one's record.
    const previous = await tableExists(tx, table) ? undefined : await previousRecord(tx, schema, files)
    const source = previous === undefined ? table : previous.found && previous.ours ? previous.table : undefined
    const rows = source === undefined
      ? []
      : await tx.query<{ version: number, name: string, run_at: Date }>(
        `SELECT version::integer AS version, name, run_at FROM ${source} WHERE version > 0`
      )
    const applied = new Map(rows.map((row) => [row.version, row]))
    const known = new Set(files.map((file) => file.version))
    return [
      ...files.map(({ version, name }) => ({ version, name, appliedAt: applied.get(version)?.run_at, known: true })),
      ...rows.filter((row) => !known.has(row.version)).map((row) => ({ version: row.version, name: row.name, appliedAt: row.run_at, known: false }))
    ].sort((a, b) => a.version - b.version)
  })
}
