import type { SqlExecutor } from './sql-client.js'

/** A migration file as this release has it. */
export interface MigrationFile {
  version: number
  name: string
  md5: string
  sql: string
}

/** An object a migration creates by name: a relation (table, index, sequence) or a function. */
interface CreatedObject {
  name: string
  kind: 'relation' | 'function'
  /** Created with IF NOT EXISTS: an existing one is taken as it is (see LEGACY_SHAPES). */
  ifNotExists: boolean
}

const CREATE = /\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:UNIQUE\s+)?(TABLE|INDEX|SEQUENCE|VIEW|FUNCTION)\s+(IF\s+NOT\s+EXISTS\s+)?([a-z_][a-z0-9_]*)/gi

/**
 * The objects a migration creates, read from its statements (comments left out), so that a later migration's are
 * known without a list to keep. Triggers are not among them: they belong to a table of the package.
 */
export function createdObjects (sql: string): CreatedObject[] {
  const statements = sql.replaceAll(/--.*$/gm, '')
  return [...statements.matchAll(CREATE)].map(([, kind, ifNotExists, name]) => ({
    name: name.toLowerCase(),
    kind: kind.toUpperCase() === 'FUNCTION' ? 'function' : 'relation',
    ifNotExists: ifNotExists !== undefined
  }))
}

/**
 * The objects the start-up code before versioned migrations created, as it created them: migration 1 (CREATE …
 * IF NOT EXISTS) adopts these, and only with exactly these columns, as one of its databases. Anything else by
 * these names is someone else's.
 */
const LEGACY_SHAPES: Record<string, string> = {
  cats: 'table (seq bigint, id bigint, data json)',
  cats_count: 'table (singleton boolean, count bigint)',
  cats_id_seq_idx: 'index on cats'
}

interface ExistingRow extends Record<string, unknown> {
  name: string
  kind: string
  shape: string
}

/** The relations and functions of the schema with these names: their kind, and their columns or indexed table. */
const EXISTING = `
SELECT c.relname AS name,
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'table' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence'
    WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' ELSE 'relation' END AS kind,
  CASE WHEN c.relkind = 'i'
    THEN (SELECT 'index on ' || t.relname FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid WHERE x.indexrelid = c.oid)
    ELSE 'table (' || (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
      FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) || ')' END AS shape
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname = ANY ($2::text[])
UNION ALL
SELECT p.proname, 'function', '' FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = $1 AND p.proname = ANY ($3::text[])`

/**
 * Refuses to go on when an object the pending migrations would create is already in the schema: the package's
 * migrations table does not account for it, so it belongs to someone else (a host's `sessions`), and migrating
 * would alter or adopt it. `note` says why no earlier record was taken, when one was found.
 */
export async function refuseForeignObjects (executor: SqlExecutor, schema: string, pending: readonly MigrationFile[], note: string): Promise<void> {
  const created = pending.flatMap((file) => createdObjects(file.sql))
  if (created.length === 0) return
  const names = (kind: CreatedObject['kind']): string[] => created.filter((object) => object.kind === kind).map((object) => object.name)
  const existing = await executor.query<ExistingRow>(EXISTING, [schema, names('relation'), names('function')])
  for (const object of created) {
    const found = existing.find((row) => row.name === object.name && (row.kind === 'function') === (object.kind === 'function'))
    if (found === undefined || (object.ifNotExists && LEGACY_SHAPES[object.name] === found.shape)) continue
    throw new Error(`${found.kind} "${schema}"."${found.name}" exists and is not this package's: ` +
      `set DATABASE_SCHEMA to a schema of its own${note}`)
  }
}
