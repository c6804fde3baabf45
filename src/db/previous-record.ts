import type { MigrationFile } from './own-objects.js'
import { quoteIdent } from './own-schema.js'
import type { SqlExecutor } from './sql-client.js'

/** The table the releases before the package's own migrations table recorded their migrations in. */
export const PREVIOUS_TABLE = 'schema_migrations'

/** The lock those releases take before migrating, whatever the schema. */
export const PREVIOUS_MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(hashtext('cats-migration'))"

/** What the schema holds under PREVIOUS_TABLE: nothing, the package's record (to copy), or another's (left alone, and why). */
export type PreviousRecord = { found: false } | { found: true, ours: true, table: string } | { found: true, ours: false, reason: string }

interface RecordRow extends Record<string, unknown> {
  version: string
  name: string | null
  md5: string | null
}

/**
 * Reads the schema's `schema_migrations` and tells whether it is the package's: postgrator's columns, and every
 * row one of this release's migration files by version, name and checksum (postgrator's version 0 aside). A
 * host's table of that name (Rails, another postgrator application), or one whose checksums differ, is not.
 * Reads only.
 */
export async function previousRecord (executor: SqlExecutor, schema: string, files: readonly MigrationFile[]): Promise<PreviousRecord> {
  const table = `${quoteIdent(schema)}.${quoteIdent(PREVIOUS_TABLE)}`
  const [{ columns }] = await executor.query<{ columns: string[] | null }>(
    `SELECT array_agg(a.attname::text) AS columns FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
     JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped`,
    [schema, PREVIOUS_TABLE])
  if (columns === null) return { found: false }
  const missing = ['version', 'name', 'md5', 'run_at'].filter((column) => !columns.includes(column))
  if (missing.length > 0) return { found: true, ours: false, reason: `it has no ${missing.join(', ')} column` }
  const rows = await executor.query<RecordRow>(`SELECT version::text AS version, name, md5 FROM ${table} ORDER BY version`)
  for (const row of rows) {
    if (row.version === '0' && row.name === null) continue
    const file = files.find((candidate) => String(candidate.version) === row.version)
    if (file === undefined || file.name !== row.name) return { found: true, ours: false, reason: `version ${row.version} (${String(row.name)}) is not a migration of this package` }
    if (file.md5 !== row.md5) return { found: true, ours: false, reason: `the checksum of version ${row.version} (${file.name}) is not this release's` }
  }
  return { found: true, ours: true, table }
}
