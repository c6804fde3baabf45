import type { SqlExecutor } from './sql-client.js'

/** A name as an SQL identifier, quoted, so that any name means itself (case included). */
export const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`

/** `"schema".`, the prefix that names the schema in a statement; empty without a schema (the connection's search_path). */
export const schemaPrefix = (schema: string | undefined): string => schema === undefined ? '' : `${quoteIdent(schema)}.`

/**
 * The schema of the package's objects: DATABASE_SCHEMA when set, else the connection's current schema (where
 * releases before the setting put them, so an existing deployment moves nothing).
 */
export async function ownSchema (executor: SqlExecutor, configured: string | undefined): Promise<string> {
  if (configured !== undefined) return configured
  const [{ schema }] = await executor.query<{ schema: string | null }>('SELECT current_schema() AS schema')
  if (schema === null) throw new Error('no schema of the search_path exists to hold the tables: set DATABASE_SCHEMA')
  // postgrator splits its table's name at the dot and quotes the parts as they are.
  if (/[."]/.test(schema)) throw new Error(`the current schema "${schema}" has a . or " in its name: set DATABASE_SCHEMA`)
  return schema
}
