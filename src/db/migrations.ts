import { fileURLToPath } from 'node:url'
import type Postgrator from 'postgrator'
import type { SqlClient, SqlTransaction } from './sql-client.js'

/**
 * Versioned schema migrations, run by postgrator from the numbered files in
 * ./migrations (`NNN.do.name.sql`; the build copies them beside the compiled
 * code). The table below records each applied version with its name, the
 * file's checksum and when it ran; a file changed after it ran stops the run.
 */
const MIGRATIONS_DIR = fileURLToPath(new URL('migrations/', import.meta.url))

/** The table, in the current schema, that records the applied migrations. */
export const MIGRATIONS_TABLE = 'schema_migrations'

/** Every instance takes this lock before migrating, so instances starting together apply each migration once. */
export const MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(hashtext('cats-migration'))"

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
}

/** A postgrator that runs every statement through the transaction, with its table in the current schema. */
async function migratorFor (tx: SqlTransaction): Promise<Target> {
  // Loaded only when a database is used, like the drivers.
  const { default: Postgrator } = await import('postgrator')
  const [{ schema, database }] = await tx.query<{ schema: string | null, database: string }>(
    'SELECT current_schema() AS schema, current_database() AS database'
  )
  if (schema === null) throw new Error('no schema of the search_path exists to hold the tables')
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
  return { migrator, table: `"${schema}"."${MIGRATIONS_TABLE}"` }
}

/**
 * The most the migrations of one start may take, waiting for another instance's included: far more than a request's
 * deadline (a migration may rewrite a table, and instances starting together wait in turn), yet bounded, so a start
 * behind a lock that is never released fails with a clear error instead of hanging.
 */
export const MIGRATION_DEADLINE_MS = 60_000

/**
 * Applies the pending migrations, all in one transaction under an advisory
 * lock: an instance that starts while another migrates waits, then finds
 * nothing left to do; a failing migration leaves the database as it was.
 * Returns the migrations this call applied. `target` stops at that version
 * (the upgrade tests start from an earlier schema).
 */
export async function migrate (client: SqlClient, target = 'max'): Promise<Array<{ version: number, name: string }>> {
  return client.transaction(async (tx) => {
    await tx.query(MIGRATION_LOCK)
    // postgrator writes the time a migration ran as UTC without a zone: read it as UTC.
    await tx.query("SET LOCAL TIME ZONE 'UTC'")
    const { migrator } = await migratorFor(tx)
    const applied = await migrator.migrate(target)
    return applied.map(({ version, name }) => ({ version, name }))
  }, MIGRATION_DEADLINE_MS)
}

/** Every migration this release has, and any the database applied beyond them, in version order. Changes nothing. */
export async function migrationStatus (client: SqlClient): Promise<MigrationStatus[]> {
  return client.transaction(async (tx) => {
    const { migrator, table } = await migratorFor(tx)
    const files = (await migrator.getMigrations()).filter((migration) => migration.action === 'do')
    const [{ exists }] = await tx.query<{ exists: boolean }>('SELECT to_regclass($1) IS NOT NULL AS exists', [table])
    const rows = exists
      ? await tx.query<{ version: number, name: string, run_at: Date }>(
        `SELECT version::integer AS version, name, run_at FROM ${table} WHERE version > 0`
      )
      : []
    const applied = new Map(rows.map((row) => [row.version, row]))
    const known = new Set(files.map((file) => file.version))
    return [
      ...files.map(({ version, name }) => ({ version, name, appliedAt: applied.get(version)?.run_at, known: true })),
      ...rows.filter((row) => !known.has(row.version)).map((row) => ({ version: row.version, name: row.name, appliedAt: row.run_at, known: false }))
    ].sort((a, b) => a.version - b.version)
  })
}
