import type { SqlClient } from '../../src/db/sql-client.js'
import { MIGRATIONS_TABLE } from '../../src/db/migrations.js'

/** Empties the current schema of `client` back to the state it is in now: see `schemaSnapshot`. */
export type SchemaReset = (client: SqlClient) => Promise<void>

const literal = (text: string): string => `'${text.replaceAll("'", "''")}'`

/**
 * The tables and sequences of the client's current schema as they are now, typically just migrated: the reset
 * it returns truncates every table but the migrations' record, puts back the rows they held (such as a count
 * row a migration inserts) and sets every sequence back. A migrated schema reset this way holds what a newly
 * migrated one does, for a fraction of the migrations' cost.
 */
export async function schemaSnapshot (client: SqlClient, schema?: string): Promise<SchemaReset> {
  // Names qualified with `schema` when given (a pooler in front: no search_path chooses it), else the current one's.
  const tables = await client.query<{ name: string, rows: string }>(
    'SELECT quote_ident(schemaname) || \'.\' || quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = coalesce($2, current_schema()) AND tablename <> $1 ORDER BY tablename',
    [MIGRATIONS_TABLE, schema ?? null])
  for (const table of tables) {
    const [{ rows }] = await client.query<{ rows: string }>(`SELECT coalesce(json_agg(t), '[]')::text AS rows FROM ${table.name} t`)
    table.rows = rows
  }
  const sequences = await client.query<{ name: string, value: string, called: boolean }>(`
    SELECT quote_ident(schemaname) || '.' || quote_ident(sequencename) AS name, coalesce(last_value, start_value)::text AS value, last_value IS NOT NULL AS called
    FROM pg_sequences WHERE schemaname = coalesce($1, current_schema()) ORDER BY sequencename`, [schema ?? null])
  const script = [
    `TRUNCATE ${tables.map((table) => table.name).join(', ')}`,
    ...tables.filter((table) => table.rows !== '[]').map((table) =>
      `INSERT INTO ${table.name} OVERRIDING SYSTEM VALUE SELECT * FROM json_populate_recordset(NULL::${table.name}, ${literal(table.rows)})`),
    ...sequences.map((sequence) => `SELECT setval(${literal(sequence.name)}, ${sequence.value}, ${String(sequence.called)})`)
  ].join(';\n')
  return async (target) => { await target.transaction(async (tx) => { await tx.execScript(script) }) }
}
