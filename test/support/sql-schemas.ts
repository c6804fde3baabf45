import { randomBytes } from 'node:crypto'
import type { Test } from 'tap'
import type { SqlClient } from '../../src/cats/sql-client.js'

/** A schema name no other test file or run uses. */
export const freshSchemaName = (prefix: string): string => `${prefix}_${randomBytes(6).toString('hex')}`

/**
 * A fresh schema on one shared PGlite session for the length of a test: the
 * session's search_path points at it, and it is dropped on teardown.
 */
export async function freshSchemaOn (t: Test, shared: SqlClient, prefix: string): Promise<SqlClient> {
  const schema = freshSchemaName(prefix)
  await shared.query(`CREATE SCHEMA ${schema}`)
  await shared.query(`SET search_path TO ${schema}`)
  t.teardown(async () => {
    await shared.query('SET search_path TO public')
    await shared.query(`DROP SCHEMA ${schema} CASCADE`)
  })
  return shared
}
